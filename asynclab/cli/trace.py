"""Step-time logs of real clusters: ``asynclab trace inspect`` and the ``--trace-log`` /
``--fit-log`` clusters of ``asynclab run``."""

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
    p = sub.add_parser("trace", help="step-time logs of real clusters")
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
