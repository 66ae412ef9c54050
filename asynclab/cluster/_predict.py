"""Staleness predicted from a log: measured, replayed and fitted histograms side by side."""

from __future__ import annotations

import numpy as np

from .._errors import ConfigError
from ._arrays import simulate_async_many
from ._fit import FittedTimes, fit_log
from ._log_adapters import measured_trace
from ._replayed import _as_log, from_log
from ._simulator import simulate_async
from ._steplog import StepLog
from ._timing import Cluster, ComputeTime
from ._trace import Trace


def staleness_distribution(trace: Trace, *, warmup: int | None = None) -> np.ndarray:
    """The staleness histogram of a trace as probabilities (index = τ).

    Args:
      trace: an asynchronous trace.
      warmup: commits dropped at the start (default: the number of workers, whose
        first commits cannot yet be as stale as later ones).
    """
    skip = trace.n_workers if warmup is None else int(warmup)
    tau = np.asarray(trace.staleness[skip:], dtype=np.int64)
    if tau.size == 0:
        raise ConfigError(f"the trace has {trace.n_events} commits, none left after dropping "
                          f"{skip} for warm-up")
    return np.bincount(tau) / tau.size


def _pad(*histograms):
    width = max(h.size for h in histograms)
    return [np.pad(h, (0, width - h.size)) for h in histograms]


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance ½ Σ |p − q| between two histograms on τ = 0, 1, …"""
    p, q = _pad(p, q)
    return 0.5 * float(np.abs(p - q).sum())


def wasserstein(p: np.ndarray, q: np.ndarray) -> float:
    """Earth mover's (Wasserstein-1) distance between two histograms on τ = 0, 1, …, in
    commits: Σ_τ |P(τ) − Q(τ)| over the cumulative distributions, as
    ``scipy.stats.wasserstein_distance`` computes it for a support of unit steps."""
    p, q = _pad(p, q)
    gap = np.cumsum(p) / np.sum(p) - np.cumsum(q) / np.sum(q)
    return float(np.sum(np.abs(gap[:-1])))


def _mean(p: np.ndarray) -> float:
    return float(np.dot(np.arange(p.size), p))


def predict_staleness(log, *, commits: int = 50_000, fitted: FittedTimes | None = None,
                      communication: bool = True, exponential: bool = True, seed: int = 0,
                      format: str = "auto") -> dict:
    """Staleness of a logged cluster: measured, replayed and predicted by the fitted model.

    - ``measured``: the log's own staleness column (only when the log records
      exchanges);
    - ``replayed``: the simulator replaying the log once (:func:`from_log`, ``end="stop"``),
      up to its end or its first ``commits`` commits, whichever comes first;
    - ``fitted``: the fitted model (:func:`fit_log`) simulated for ``commits`` commits;
    - ``exponential``: the textbook assumption, exponential step times with the log's
      mean step time, the same for every worker, for ``commits`` commits.

    Every histogram drops the first n commits (warm-up). Each entry carries the mean
    staleness beside the closed-loop identity mean τ = n − 1, and the total-variation
    and Wasserstein distances to the reference (the measured histogram when there is
    one, else the replayed one).

    Returns:
      A dict: ``workers``, ``reference`` (its name), and per model name a dict with
      ``histogram`` (probabilities), ``commits``, ``mean``, ``total_variation``,
      ``wasserstein``.
    """
    log = _as_log(log, format)
    if not isinstance(log, StepLog):
        raise ConfigError(f"log must be a StepLog or a path, got {log!r}")
    n = log.n_workers
    traces = {}
    if log.staleness is not None:
        traces["measured"] = measured_trace(log)
    traces["replayed"] = simulate_async(
        from_log(log, end="stop", communication=communication), local_steps=log.local_steps,
        commits=min(10 * log.n_rows, commits))
    fitted = fitted if fitted is not None else fit_log(log, communication=communication,
                                                       seed=seed)
    if fitted.workers != n:
        raise ConfigError(f"the fitted model has {fitted.workers} workers, the log {n}")
    traces["fitted"] = simulate_async(Cluster(n, compute=fitted), local_steps=log.local_steps,
                                      commits=commits, rng=seed)
    if exponential:
        mean = float(np.mean(np.concatenate([log.durations(k, communication=communication)
                                             for k in range(n)]))) / log.local_steps
        # the array path: SimPy's trace for this seed, bit for bit, many times faster
        traces["exponential"] = simulate_async_many(
            Cluster(n, ComputeTime("exponential", mean=mean)), local_steps=log.local_steps,
            commits=commits, seeds=[seed])[0]
    reference = "measured" if "measured" in traces else "replayed"
    histograms = {name: staleness_distribution(t) for name, t in traces.items()}
    ref = histograms[reference]
    out = {"workers": n, "reference": reference, "identity": n - 1}
    for name, h in histograms.items():
        out[name] = {"histogram": h, "commits": traces[name].n_events, "mean": _mean(h),
                     "total_variation": total_variation(h, ref),
                     "wasserstein": wasserstein(h, ref)}
    return out
