"""Notebook 02: the staleness of one simulated cluster and the implicit momentum it adds."""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ..cluster import Cluster, ComputeTime, machine_repairman, simulate_async
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


def server_staleness_data(workers: int, server_time: float, *, commits: int = 20_000,
                          seed: int = 0) -> dict:
    """Staleness of one cluster around a free server and around a busy one.

    ``workers`` workers with exponential compute times of mean 1 s exchange with a server
    that takes no time (row 0) and with one whose service is exponential with mean
    ``server_time`` seconds (row 1): the machine-repairman queue of
    :func:`asynclab.cluster.machine_repairman`. Both runs use ``seed``, so the workers'
    step times are the same in both; only the server differs. The mean staleness stays
    n − 1, but a busy server makes τ = 0 rarer than the geometric law's 1/n.

    Args:
      workers: n, the number of workers, an integer >= 1.
      server_time: the mean service time in seconds, finite and > 0.
      commits: commits simulated per run; the first n (warm-up) are left out.
      seed: seeds both runs.

    Returns:
      The staleness study's rows (ready for
      :func:`asynclab.plot.staleness.plot_staleness`) plus, per row, ``p_zero_theory``
      (1/n, then p0(n − 1)/n), ``utilisation`` (the share of time the server is busy,
      theory: 0, then 1 − p0), ``throughput`` (simulated commits per second) and
      ``throughput_theory``.
    """
    workers = _validate.count(workers, "workers")
    seed = _validate.seed(seed)
    server_time = _validate.number(server_time, "server_time", low=0, low_open=True)
    if isinstance(commits, bool) or not isinstance(commits, int) or commits <= workers:
        raise ConfigError(f"commits must be an integer larger than workers ({workers}), "
                          f"got {commits!r}")
    compute = ComputeTime("exponential", mean=1.0)
    service = ComputeTime("exponential", mean=server_time)
    theory = machine_repairman(workers, 1.0, service)
    traces = [(f"n = {workers}, a free server", simulate_async(
                  Cluster(workers, compute), commits=commits, rng=seed)),
              (f"n = {workers}, exponential service, mean {server_time:g} s (busy "
               f"{1 - theory.idle:.0%})",
               simulate_async(Cluster(workers, compute, server_time=service),
                              commits=commits, rng=seed))]
    data = staleness.histograms(traces)
    data["p_zero_theory"] = np.array([1.0 / workers, theory.stale_zero])
    data["utilisation"] = np.array([0.0, 1.0 - theory.idle])
    data["throughput"] = np.array([t.n_events / t.duration for _, t in traces])
    data["throughput_theory"] = np.array([float(workers), theory.throughput])
    return data


def momentum_data(workers, compute: ComputeTime | str = "exponential", *, quick: bool = False,
                  seeds: int | None = None, commits: int | None = None,
                  server_time: float | ComputeTime = 0.0) -> dict:
    """The implicit-momentum study for the worker counts ``workers`` and one compute-time
    distribution: the momentum fitted from the mean central trajectory beside 1 − 1/n.

    Args:
      workers: the worker counts n (each ≥ 1).
      compute: the compute-time distribution (a name or a ComputeTime).
      quick: the study's quick sizes (fewer commits and seeds).
      seeds: overrides the study's number of seeds.
      commits: overrides the study's number of commits.
      server_time: the server's service time, as ``Cluster.server_time`` takes it
        (seconds, or a ComputeTime); 0 is a server that takes no time.
    """
    if not isinstance(compute, ComputeTime):
        compute = ComputeTime(compute)
    if isinstance(workers, str | bytes) or not hasattr(workers, "__iter__"):
        raise ConfigError(f"workers must be a list of worker counts >= 1, got {workers!r}")
    workers = tuple(_validate.count(n, f"workers[{i}]") for i, n in enumerate(workers))
    if not workers:
        raise ConfigError("workers must be worker counts >= 1, got none")
    base = implicit_momentum.Config.quick() if quick else implicit_momentum.Config()
    sizes = {k: v for k, v in (("seeds", seeds), ("commits", commits)) if v is not None}
    server = Cluster(1, server_time=server_time).server_time  # checked, as a cluster does
    if isinstance(server, ComputeTime):
        sizes.update(server=server.distribution, server_time=server.mean,
                     server_shape=server.shape)
    else:
        sizes.update(server_time=server)
    config = dataclasses.replace(base, workers=workers, compute=compute.distribution,
                                 compute_shape=compute.shape, **sizes)
    return implicit_momentum.run(config, progress=False)
