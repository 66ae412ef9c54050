"""Step-time logs of real clusters: ``asynclab trace inspect``; timelines of simulated
runs: ``asynclab trace show`` (a picture) and ``asynclab trace export`` (Perfetto trace
JSON, JSON lines)."""

from __future__ import annotations

import argparse

from .. import ConfigError
from . import _flags
from ._output import strict_json
from ._types import Help


def _log_path(value: str):
    from ..cluster import example_log_path

    return example_log_path() if value == "example" else value


def add_trace_parser(sub) -> None:
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


def _add_timeline_arguments(q: argparse.ArgumentParser) -> None:
    """The simulated cluster and rule of ``trace show`` / ``trace export``."""
    _flags.add_rule(q, learning_rate=False)
    _flags.add_cluster(q, workers_help="number of workers n (default: 4; a --trace-log's "
                       "own)")
    _flags.add_budget(q, default_commits=40)
    _flags.add_seeds(q, several=False)
    _flags.add_semisync(q)
    q.add_argument("--overwrite", action="store_true",
                   help="replace the output file if it exists (only a file of the kind this "
                   "command writes)")


def _timeline_trace(args):
    """The trace, with its activity, of the cluster and rule the flags describe: the
    schedule of the run ``asynclab.prepare`` makes of them."""
    from ..engine import prepare, schedules

    spec = prepare(**_flags.prepare_options(args))
    (trace,) = schedules(spec, activity=True)
    return trace


def _add_timeline_parsers(commands) -> None:
    q = commands.add_parser(
        "show", help="draw a simulated run's timeline (PNG): per worker, computing, "
        "communicating, waiting; commits coloured by staleness; stragglers marked",
        description="Simulate a cluster for a rule and draw what every worker did when "
        "(asynclab.plot.timeline).", formatter_class=Help)
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
        "(asynclab.cluster.export_trace).", formatter_class=Help)
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
    from ..cluster import EXPORT_FORMATS as FORMATS
    from ..cluster import export_trace

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
