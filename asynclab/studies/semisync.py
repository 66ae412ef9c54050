"""Slow and stale: synchronous, K-of-n, backup and asynchronous SGD against n.

The error–runtime trade-off of Dutta et al. ("Slow and Stale Gradients Can Win the Race",
AISTATS 2018), asked of the simulator. Clusters of n workers with exponential step times
(mean 1 s) train a convex quadratic (``dim``, ``condition``) with additive gradient noise
σ², every method with the same step size η per update, in five modes:

- ``synchronous``: synchronous SGD; a round waits for all n workers and averages their
  n gradients (a round lasts the slowest of n: H_n seconds on average);
- ``K-of-n``: a round closes at its K-th commit (K = ⌈n·``quorum_share``⌉) and averages
  those K gradients; the rest's work is cancelled (``SemiSync(quorum=K)``);
- ``K-async``: the same rounds, but the late workers keep computing and their gradient
  counts, stale, in the round in which it arrives (``late="stale"``, Dutta's K-async);
- ``backup``: n + b workers, b = ⌈n·``backup_share``⌉ of them backups; a round takes the
  first n commits (Chen et al. 2016; ``SemiSync(backup=b)``);
- ``asynchronous``: DOWNPOUR (λ = 1): every gradient is applied alone as soon as it
  arrives, τ ≈ n − 1 commits stale.

Every run lasts ``horizon`` simulated seconds. Measured per (mode, n, seed): the
simulated seconds until the central loss first reaches ``target`` (∞ if never), the
central loss at the horizon (the final error), the number of updates, and the seed's
loss interpolated onto a common grid of times (for the curves). Every seed schedules
its own cluster (``rng = seed``) and draws its own noise.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._errors import ConfigError
from ..cluster import Cluster, ComputeTime, SemiSync
from ._horizon import outcomes, over_cells, quadratic_run

MODES = ("synchronous", "K-of-n", "K-async", "backup", "asynchronous")


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    workers: tuple[int, ...] = (2, 4, 8, 16, 24)
    dim: int = 10
    condition: float = 10.0
    learning_rate: float = 0.01  # η per update, every mode
    noise: float = 1.0  # σ² of the additive Gaussian gradient noise
    horizon: float = 400.0  # simulated seconds per run
    quorum_share: float = 0.5  # K = ⌈n · share⌉
    backup_share: float = 0.125  # b = ⌈n · share⌉ backups beside the n workers
    target: float = 0.2  # central loss (the start's is 20.4)
    seeds: int = 16
    grid: int = 101  # points of the loss curves over [0, horizon]
    shown: int = 16  # the n whose curves are drawn

    @classmethod
    def quick(cls) -> Config:
        return cls(workers=(2, 8), horizon=200.0, seeds=4, shown=8)


def quorum(config: Config, n: int) -> int:
    """K for n workers."""
    return max(1, math.ceil(n * config.quorum_share))


def backups(config: Config, n: int) -> int:
    """b, the backups beside n workers."""
    return max(1, math.ceil(n * config.backup_share))


def setting(config: Config, mode: str, n: int) -> tuple[str, Cluster, SemiSync | None]:
    """``(rule, cluster, semisync)`` of one mode with n workers."""
    compute = ComputeTime("exponential", mean=1.0)
    if mode == "asynchronous":
        return "downpour", Cluster(n, compute), None
    if mode == "synchronous":
        return "synchronous_sgd", Cluster(n, compute), None
    if mode == "backup":
        b = backups(config, n)
        return "synchronous_sgd", Cluster(n + b, compute), SemiSync(backup=b)
    late = "stale" if mode == "K-async" else "discard"
    return "synchronous_sgd", Cluster(n, compute), SemiSync(quorum=quorum(config, n),
                                                            late=late)


def one(config: Config, mode: str, n: int):
    """The :class:`~asynclab.Result` of one (mode, n) for every seed."""
    rule, cluster, semisync = setting(config, mode, n)
    return quadratic_run(config, rule, cluster, learning_rate=config.learning_rate,
                         semisync=semisync)


def _check(config: Config) -> None:
    if config.shown not in config.workers:
        raise ConfigError(f"shown={config.shown} must be one of workers={config.workers}")
    if not 0 < config.quorum_share <= 1 or not 0 < config.backup_share:
        raise ConfigError("quorum_share must be in (0, 1] and backup_share > 0")


def run(config: Config = Config(), progress=None) -> dict:
    """Time to target, final loss, updates and loss curves per (mode, n, seed)."""
    _check(config)
    grid = np.linspace(0.0, config.horizon, config.grid)

    def measure(result):
        times = result.record_time[result.trace_index]
        return {**outcomes(result, config.target),
                "updates": np.sum(result.staleness >= 0, axis=1)[result.trace_index],
                "curves": np.mean([np.interp(grid, t, loss) for t, loss in
                                   zip(times, result.loss, strict=True)], axis=0)}

    measured = over_cells(MODES, config.workers, lambda mode, n: one(config, mode, n),
                          measure, desc="semisync", progress=progress)
    return {
        "modes": np.array(MODES),
        "workers": np.asarray(config.workers),
        "quorum": np.array([quorum(config, n) for n in config.workers]),
        "backups": np.array([backups(config, n) for n in config.workers]),
        "seconds_to_target": measured["seconds_to_target"].astype(np.float64),
        "final_loss": measured["final_loss"].astype(np.float32),
        "updates": measured["updates"].astype(np.int64),
        "diverged": measured["diverged"],
        "grid": grid,
        "curves": measured["curves"].astype(np.float32),
    }
