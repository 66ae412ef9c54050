"""Staleness distributions (thesis Fig. 2.1): histograms, geometric fit, E[τ] = n − 1.

Homogeneous clusters with exponential compute times for several n, plus a heterogeneous
cluster and one with a 10× slower worker, to show that the mean stays n − 1 (a
closed-loop queue fact) while the shape changes.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..cluster import Cluster, ComputeTime, heterogeneous, simulate_async


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    workers: tuple[int, ...] = (10, 20, 30, 60)
    commits: int = 200_000
    variant_workers: int = 20
    heterogeneity: float = 0.5
    slowdown: float = 10.0
    seed: int = 0

    @classmethod
    def quick(cls) -> Config:
        return cls(commits=20_000)


def geometric_fit(staleness: np.ndarray) -> float:
    """Maximum-likelihood p of a Geometric(p) on {0, 1, …}: p = 1 / (1 + mean)."""
    return 1.0 / (1.0 + float(np.mean(staleness)))


def _histogram(trace, label):
    tau = trace.staleness[trace.n_workers:]  # drop the warm-up commits
    counts = np.bincount(tau)
    return {
        "label": label,
        "n": trace.n_workers,
        "counts": counts,
        "mean": float(tau.mean()),
        "p_fit": geometric_fit(tau),
        "p_zero": float(np.mean(tau == 0)),
        "tail": float(np.mean(tau >= 8 * trace.n_workers)),
        "tail_geometric": float((1.0 - geometric_fit(tau)) ** (8 * trace.n_workers)),
    }


def run(config: Config = Config(), progress=None) -> dict:
    """Simulate every cluster once; returns per-cluster histograms and summary numbers."""
    rng = np.random.default_rng(config.seed)
    clusters = [(f"n = {n}, exponential", Cluster(n, ComputeTime("exponential")))
                for n in config.workers]
    m = config.variant_workers
    clusters.append((f"n = {m}, heterogeneous (lognormal speeds, σ = {config.heterogeneity})",
                     Cluster(m, ComputeTime("exponential"),
                             time_scale=heterogeneous(m, config.heterogeneity, rng))))
    clusters.append((f"n = {m}, one worker {config.slowdown:g}× slower",
                     Cluster(m, ComputeTime("exponential"),
                             time_scale=(config.slowdown,) + (1.0,) * (m - 1))))
    return histograms([(label, simulate_async(c, commits=config.commits, rng=config.seed + i))
                       for i, (label, c) in enumerate(clusters)])


def histograms(labelled_traces) -> dict:
    """The study's data for ``(label, trace)`` pairs of asynchronous traces: one row per
    trace (histogram counts without the first n warm-up commits, mean, geometric fit, …)."""
    rows = [_histogram(trace, label) for label, trace in labelled_traces]
    width = max(r["counts"].size for r in rows)
    return {
        "labels": np.array([r["label"] for r in rows]),
        "n": np.array([r["n"] for r in rows]),
        "counts": np.stack([np.pad(r["counts"], (0, width - r["counts"].size)) for r in rows]),
        "mean": np.array([r["mean"] for r in rows]),
        "p_fit": np.array([r["p_fit"] for r in rows]),
        "p_zero": np.array([r["p_zero"] for r in rows]),
        "tail": np.array([r["tail"] for r in rows]),
        "tail_geometric": np.array([r["tail_geometric"] for r in rows]),
    }
