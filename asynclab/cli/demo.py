"""``asynclab demo``: one demonstration run, its summary and its picture."""

from __future__ import annotations

from .. import _files
from ._output import _print_summary


def _demo(args) -> int:
    from ..cluster import Cluster, ComputeTime
    from ..engine import run
    from ..plot import plot_run
    from ..problems import beale

    _files.output_path(args.out, "--out", kind="figure", overwrite=args.overwrite)
    print("asynclab demo: asynchronous SGD (DOWNPOUR, λ = 1) with 8 workers on Beale's "
          "function,\nexponential compute times, gradient noise σ² = 10, 8 seeds.\n")
    result = run("beale", "downpour", cluster=Cluster(8, ComputeTime("exponential")),
                 commits=args.commits, seeds=list(range(8)), learning_rate=1e-3, noise=10.0)
    _print_summary(result, beale())
    plot_run(result, beale(), args.out, overwrite=args.overwrite)
    print(f"\n  plot written to {args.out}")
    return 0
