"""Notebook 02: the staleness of one simulated cluster and the implicit momentum it adds."""

from __future__ import annotations

import dataclasses

from .. import _validate
from .._errors import ConfigError
from ..cluster import Cluster, ComputeTime, simulate_async
from ..studies import implicit_momentum, staleness


def staleness_data(workers: int, compute: ComputeTime | str = "exponential", *,
                   commits: int = 20_000, seed: int = 0) -> dict:
    """The staleness histogram of ``workers`` homogeneous workers, in the staleness
    study's format (one row: ``counts``, ``mean``, ``p_fit`` of the geometric fit, …),
    ready for :func:`asynclab.plot.staleness.plot_staleness`.

    Args:
      workers: n, the number of workers.
      compute: the compute-time distribution of one local step (a name or a ComputeTime).
      commits: commits simulated; the first n (warm-up) are left out of the histogram.
      seed: seeds the cluster's schedule.
    """
    workers = _validate.count(workers, "workers")
    seed = _validate.seed(seed)
    if not isinstance(compute, ComputeTime):
        compute = ComputeTime(compute)
    if isinstance(commits, bool) or not isinstance(commits, int) or commits <= workers:
        raise ConfigError(f"commits must be an integer larger than workers ({workers}), "
                          f"got {commits!r}")
    trace = simulate_async(Cluster(workers, compute), commits=commits, rng=seed)
    shape = f", shape {compute.shape:g}" if compute.distribution in ("lognormal", "gamma") else ""
    return staleness.histograms([(f"n = {workers}, {compute.distribution}{shape}", trace)])


def momentum_data(workers, compute: ComputeTime | str = "exponential", *, quick: bool = False,
                  seeds: int | None = None, commits: int | None = None) -> dict:
    """The implicit-momentum study for the worker counts ``workers`` and one compute-time
    distribution: the momentum fitted from the mean central trajectory beside 1 − 1/n.

    Args:
      workers: the worker counts n (each ≥ 1).
      compute: the compute-time distribution (a name or a ComputeTime).
      quick: the study's quick sizes (fewer commits and seeds).
      seeds: overrides the study's number of seeds.
      commits: overrides the study's number of commits.
    """
    if not isinstance(compute, ComputeTime):
        compute = ComputeTime(compute)
    workers = tuple(int(n) for n in workers)
    if not workers or min(workers) < 1:
        raise ConfigError(f"workers must be worker counts >= 1, got {workers!r}")
    base = implicit_momentum.Config.quick() if quick else implicit_momentum.Config()
    sizes = {k: v for k, v in (("seeds", seeds), ("commits", commits)) if v is not None}
    config = dataclasses.replace(base, workers=workers, compute=compute.distribution,
                                 compute_shape=compute.shape, **sizes)
    return implicit_momentum.run(config, progress=False)
