"""Step-time logs of real clusters: ``asynclab trace inspect`` and the ``--trace-log`` /
``--fit-log`` clusters of ``asynclab run``; timelines of simulated runs: ``asynclab trace
show`` (a picture) and ``asynclab trace export`` (Perfetto trace JSON, JSON lines)."""

from __future__ import annotations

import argparse

from .._errors import ConfigError
from ._args import _params
from ._output import strict_json


def _add_log_arguments(p: argparse.ArgumentParser) -> None:
    logs = p.add_mutually_exclusive_group()
    logs.add_argument("--trace-log", default=None, metavar="LOG",
                      help="replay a real cluster's step-time log (docs/logs.md; 'example': "
                      "the shipped one): its workers, their measured times in order")
    logs.add_argument("--fit-log", default=None, metavar="LOG",
                      help="simulate a timing model fitted to a step-time log, with "
                      "--workers N workers (default: the log's)")
    p.add_argument("--log-end", default=None, choices=("stop", "wrap"),
                   help="--trace-log shorter than the budget: stop the run there "
                   "(default: stop) or wrap around to the log's start")


def _log_path(value: str):
    from ..cluster import example_log_path

    return example_log_path() if value == "example" else value


def _log_cluster(args, workers: int | None = None):
    """The cluster of ``--trace-log`` / ``--fit-log``, or None without them; its workers
    form groups of the rule's group size (``mixed``: ``--param group_size``, else its
    default)."""
    import dataclasses

    from ..cluster import Cluster, fit_log, from_log
    from ..engine._run import rule_group_size

    workers = workers if workers is not None else args.workers
    group_size = rule_group_size(args.rule, _params(args.param))
    if args.trace_log:
        cluster = from_log(_log_path(args.trace_log), end=args.log_end or "stop")
        if workers is not None and workers != cluster.workers:
            raise ConfigError(f"--trace-log replays the log's {cluster.workers} workers, not "
                              f"{workers}; use --fit-log LOG --workers {workers} to simulate "
                              "another number of workers")
        return dataclasses.replace(cluster, group_size=group_size)
    if args.fit_log:
        fitted = fit_log(_log_path(args.fit_log), bootstrap=0)
        n = workers if workers is not None else fitted.workers
        return Cluster(n, compute=fitted.resize(n), group_size=group_size)
    return None


def _add_trace_parser(sub) -> None:
    p = sub.add_parser("trace", help="step-time logs of real clusters; timelines of "
                       "simulated runs (show, export)")
    commands = p.add_subparsers(dest="trace_command", required=True)
    q = commands.add_parser("inspect", help="summarise a step-time log: workers, tails, "
                            "fitted model, straggler episodes, staleness")
    q.add_argument("log", help="a .csv, .csv.gz or .parquet log ('example': the shipped one)")
    q.add_argument("--format", default="auto", choices=("auto", "long", "wide"))
    q.add_argument("--job", default=None, help="wide logs with a jobid column: the job to read")
    q.add_argument("--threshold", type=float, default=3.0,
                   help="a step straggles above this factor × its worker's median (default 3)")
    q.add_argument("--compute-only", action="store_true",
                   help="fit compute times only (default: compute + communication)")
    q.add_argument("--commits", type=int, default=20_000,
                   help="commits simulated for the predicted staleness (default 20000)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(func=_trace_inspect)
    _add_timeline_parsers(commands)


def _seconds(x: float) -> str:
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.4g} s"


def _trace_inspect(args) -> int:
    from ..cluster import summarize_log

    if args.commits < 1:
        raise ConfigError(f"--commits must be >= 1, got {args.commits}")
    s = summarize_log(_log_path(args.log), threshold=args.threshold, format=args.format,
                      job=args.job,
                      communication=not args.compute_only, commits=args.commits)
    if args.json:
        print(strict_json(s))
        return 0
    print(f"{s['source']}: {s['workers']} workers, {s['rows']} steps "
          f"(λ = {s['local_steps']} local steps per row); optional columns: "
          f"{', '.join(s['columns']) or 'none'}")
    what = "compute" if args.compute_only else "compute + communication"
    print(f"step times ({what}) and the family fitted by AIC to each worker's normal steps:")
    print(f"  {'worker':>6} {'steps':>6} {'mean':>9} {'p50':>9} {'p95':>9} {'p99':>9} "
          f"{'max':>9}  fit (± bootstrap s.e.)")
    for w in s["per_worker"]:
        params = ", ".join(f"{k} = {v:.4g} ± {w['standard_errors'].get(k, float('nan')):.2g}"
                           for k, v in w["parameters"].items())
        print(f"  {w['worker']:>6} {w['steps']:>6} " + " ".join(
            f"{_seconds(w[k]):>9}" for k in ("mean", "p50", "p95", "p99", "max"))
            + f"  {w['family']}: {params}")
    h = s["heterogeneity"]
    print(f"heterogeneity: slowest / fastest mean {h['slowest_over_fastest']:.3g}, "
          f"CV of the means {h['cv_of_means']:.3g}")
    g = s["stragglers"]
    if g is not None:
        print(f"stragglers (> {g['threshold']:g}× the worker's median): {g['episodes']} "
              f"episodes over {g['fraction']:.2%} of the steps, mean {g['mean_episode_steps']:.3g}"
              f" steps, longest {g['longest_episode_steps']}; per worker "
              f"{g['episodes_per_worker']}")
        print(f"  Markov chain: P(enter) = {g['p_enter']:.4g} ± {g['p_enter_se']:.2g}, "
              f"P(leave) = {g['p_leave']:.4g} ± {g['p_leave_se']:.2g}"
              + (f"; a straggling step takes {g['slowdown']['mean']:.3g}× the median "
                 f"({g['slowdown']['family']})" if g["slowdown"] else ""))
    t = s["staleness"]
    print(f"staleness (closed-loop identity: mean τ = n − 1 = {t['identity']}; distances to "
          f"the {t['reference']} histogram):")
    for name in ("measured", "replayed", "fitted", "exponential"):
        if name in t:
            e = t[name]
            print(f"  {name:<12} mean τ {e['mean']:.4g} over {e['commits']} commits, "
                  f"TV {e['total_variation']:.3g}, Wasserstein {e['wasserstein']:.3g}")
    return 0


# ----------------------------------------------------------------- timelines


def _straggler(text: str):
    """``--straggler WORKER:AT:DELAY``: worker index, from when (s), extra seconds."""
    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        worker, at, delay = int(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"takes WORKER:AT:DELAY (e.g. 2:10:30: worker 2's first local step from 10 s "
            f"on takes 30 s longer), got {text!r}") from None
    return worker, at, delay


def _add_timeline_arguments(q: argparse.ArgumentParser) -> None:
    """The simulated cluster of ``trace show`` / ``trace export``."""
    from ._args import (
        _count,
        _finite,
        _positive,
        add_availability_arguments,
        add_compute_arguments,
        add_server_arguments,
    )

    q.add_argument("--rule", default="downpour",
                   help="update rule whose schedule is simulated: asynchronous commits or "
                   "synchronous rounds, its λ and groups (see `asynclab rules`)")
    q.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a rule hyperparameter that shapes the schedule, e.g. --param "
                   "group_size=2 for mixed (repeatable)")
    q.add_argument("--workers", type=_count(1), default=None,
                   help="number of workers n (default: 4; a --trace-log's own)")
    q.add_argument("--local-steps", type=_count(1), default=None,
                   help="λ, local steps per exchange (default: the rule's)")
    add_compute_arguments(q)
    q.add_argument("--transfer-time", type=_finite, default=0.0, metavar="SECONDS",
                   help="seconds every message spends on the link (commit up, reply down)")
    add_server_arguments(q)
    q.add_argument("--straggler", action="append", type=_straggler, default=None,
                   metavar="WORKER:AT:DELAY",
                   help="the first local step worker WORKER starts at or after AT seconds "
                   "takes DELAY seconds longer (repeatable)")
    add_availability_arguments(q)
    budget = q.add_mutually_exclusive_group()
    budget.add_argument("--commits", type=_count(1), default=None,
                        help="budget in commits, rounds for synchronous rules (default: 40)")
    budget.add_argument("--horizon", type=_positive, default=None,
                        help="budget in simulated seconds")
    q.add_argument("--seed", type=int, default=0,
                   help="the cluster's seed, an integer in [0, 2**32)")
    _add_log_arguments(q)
    from .run import _add_semisync_arguments

    _add_semisync_arguments(q)
    q.add_argument("--overwrite", action="store_true",
                   help="replace the output file if it exists (only a file of the kind this "
                   "command writes)")


def _timeline_trace(args):
    """The trace, with its activity, of the cluster and rule the flags describe."""
    import dataclasses

    from .. import _validate
    from ..cluster import Cluster, Link, Straggler
    from ..engine import schedule
    from ..engine._run import _rule_from, rule_group_size
    from ._args import _availability, _compute, _server_time, _time_scale

    params = _params(args.param)
    seed = _validate.seed(args.seed, "--seed")
    if args.transfer_time < 0:
        raise ConfigError(f"--transfer-time must be >= 0 seconds, got {args.transfer_time:g}")
    if args.compute_shape is not None and (args.compute or "exponential") not in (
            "lognormal", "gamma"):
        raise ConfigError(f"--compute-shape applies to --compute lognormal or gamma, not "
                          f"{args.compute or 'exponential'}")
    stragglers = tuple(Straggler(worker=w, delay=d, at_time=at)
                       for w, at, d in args.straggler or ())
    extra = dict(network=Link(latency=args.transfer_time), server_time=_server_time(args),
                 stragglers=stragglers, availability=_availability(args))
    cluster = _log_cluster(args)
    if cluster is not None:
        given = [f for f, v in (("--compute", args.compute), ("--compute-mean",
                 args.compute_mean), ("--compute-shape", args.compute_shape),
                 ("--time-scale", args.time_scale), ("--heterogeneous", args.heterogeneous))
                 if v is not None]
        if given:
            raise ConfigError(f"{', '.join(given)}: the log gives the compute times; drop "
                              f"{'them' if len(given) > 1 else 'it'} or the log")
        cluster = dataclasses.replace(cluster, **extra)
    else:
        workers = args.workers if args.workers is not None else (
            1 if args.rule == "sequential_sgd" else 4)
        cluster = Cluster(workers, _compute(args), time_scale=_time_scale(args, workers),
                          group_size=rule_group_size(args.rule, params), **extra)
    rule = _rule_from(args.rule, 1e-3, args.local_steps, params, cluster)
    commits = args.commits if args.commits is not None or args.horizon is not None else 40
    from .run import _semisync

    semisync = _semisync(args)
    return schedule(rule, cluster, commits=commits, horizon=args.horizon, rng=seed,
                    activity=True, **({} if semisync is None else {"semisync": semisync}))


def _add_timeline_parsers(commands) -> None:
    from ._args import _Help

    q = commands.add_parser(
        "show", help="draw a simulated run's timeline (PNG): per worker, computing, "
        "communicating, waiting; commits coloured by staleness; stragglers marked",
        description="Simulate a cluster for a rule and draw what every worker did when "
        "(asynclab.plot.timeline).", formatter_class=_Help)
    _add_timeline_arguments(q)
    q.add_argument("--out", default="asynclab-timeline.png",
                   help="the picture (.png, .pdf, .svg, ...)")
    q.set_defaults(func=_trace_show)
    q = commands.add_parser(
        "export", help="write a simulated run's timeline for ui.perfetto.dev (Chrome trace "
        "JSON) or as JSON lines",
        description="Simulate a cluster for a rule and write its timeline: --format "
        "perfetto, the Trace Event Format JSON that ui.perfetto.dev and chrome://tracing "
        "open; --format jsonl, one JSON object per interval and commit "
        "(asynclab.cluster.export_trace).", formatter_class=_Help)
    _add_timeline_arguments(q)
    q.add_argument("--format", default="perfetto", choices=("perfetto", "jsonl"),
                   help="perfetto: Trace Event Format JSON; jsonl: JSON lines")
    q.add_argument("--out", default=None,
                   help="the file (default: asynclab-trace.json, or .jsonl for jsonl)")
    q.set_defaults(func=_trace_export)


def _trace_show(args) -> int:
    from .. import _files

    path = _files.output_path(args.out, "--out", kind="figure", overwrite=args.overwrite)
    trace = _timeline_trace(args)
    from ..plot import timeline

    timeline(trace, path, overwrite=args.overwrite)
    print(f"wrote {path}: {trace.n_events} {_events(trace)} of {trace.n_workers} "
          f"{_units(trace)} over {_seconds(_end(trace))} of simulated time")
    return 0


def _trace_export(args) -> int:
    from .. import _files
    from ..cluster import export_trace
    from ..cluster._export import FORMATS

    suffix = FORMATS[args.format]
    out = args.out if args.out is not None else "asynclab-trace" + suffix
    kind = "trace-events" if args.format == "perfetto" else "trace-records"
    path = _files.output_path(out, "--out", kind=kind, overwrite=args.overwrite)
    trace = _timeline_trace(args)
    export_trace(trace, path, format=args.format, overwrite=args.overwrite)
    opened = " (open it in ui.perfetto.dev)" if args.format == "perfetto" else ""
    print(f"wrote {path}: {trace.activity.n_intervals} intervals and {trace.n_events} "
          f"{_events(trace)} of {trace.n_workers} {_units(trace)}{opened}")
    return 0


def _events(trace) -> str:
    return "commits" if hasattr(trace, "worker") else "rounds"


def _units(trace) -> str:
    return "groups" if getattr(trace, "group_size", 1) > 1 else "workers"


def _end(trace) -> float:
    return float(trace.time[-1]) if trace.n_events else 0.0
