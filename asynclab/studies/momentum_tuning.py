"""Tuning explicit momentum under asynchrony (Mitliagkas et al. 2016), in simulation.

Asynchrony adds implicit momentum 1 − 1/n, so the explicit momentum that works best
should fall as workers are added, to first order μ*(n) ≈ μ*(1) − (1 − 1/n), even below
zero. The explicit momentum here is heavy ball at the server on the sequence of central
updates (``server_momentum``): θ̃_{t+1} = θ̃_t + Δ + μ (θ̃_t − θ̃_{t−1}).

For every n and every μ of a grid, asynchronous SGD (DOWNPOUR, λ = 1) is replayed on a
noisy diagonal quadratic for many seeds at once, each seed with its own cluster schedule
(the same schedules for every μ of one n: common random numbers). The score of (n, μ) is
the number of commits after which the central loss averaged over the seeds first falls
to ``target`` × its initial value; a run that never gets there scores ∞.

Each μ is a separate rule and so a separate compilation of the replay (hyperparameters
are baked into the compiled program), which is what bounds the size of the grid.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, simulate_async
from ..engine import replay
from ..problems import get_problem
from ..rules import make_rule


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    workers: tuple[int, ...] = (1, 2, 4, 8, 16)
    momenta: tuple[float, ...] = (-0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95)
    dim: int = 10
    condition: float = 100.0
    learning_rate: float = 1e-3
    noise: float = 1.0  # σ² of the additive Gaussian gradient noise
    commits: int = 1500
    seeds: int = 32  # seeds 0, 1, …; seed s schedules its own cluster with rng = s
    target: float = 0.01  # fraction of the initial loss
    store_every: int = 5  # mean loss curves are stored (for drawing) every k commits

    @classmethod
    def quick(cls) -> Config:
        return cls(workers=(1, 4, 16), momenta=(0.0, 0.45, 0.9), commits=800, seeds=16)


def commits_to_target(mean_loss: np.ndarray, record_events: np.ndarray, level: float) -> float:
    """The first recorded commit at which ``mean_loss`` is at or below ``level`` (else ∞)."""
    hit = np.flatnonzero(mean_loss <= level)
    return float(record_events[hit[0]]) if hit.size else float("inf")


def run(config: Config = Config(), progress=None) -> dict:
    """Commits-to-target for every (n, μ), the best μ for every n and the mean curves."""
    problem = get_problem("quadratic", dim=config.dim, condition=config.condition)
    seeds = list(range(config.seeds))
    shape = (len(config.workers), len(config.momenta))
    score = np.full(shape, np.inf)
    final = np.full(shape, np.nan)
    diverged = np.zeros(shape, np.int64)
    curves = np.full(shape + (config.commits + 1,), np.nan, np.float32)
    initial = float(problem.loss(problem.start))
    level = config.target * initial
    pairs = [(i, j) for i in range(shape[0]) for j in range(shape[1])]
    traces = {}
    for i, j in progress_bar(pairs, desc="momentum tuning", unit="run",
                     progress=progress):
        n, mu = config.workers[i], config.momenta[j]
        if n not in traces:
            cluster = Cluster(n, ComputeTime("exponential"))
            traces = {n: [simulate_async(cluster, commits=config.commits, rng=s)
                          for s in seeds]}
        rule = make_rule("downpour", learning_rate=config.learning_rate, server_momentum=mu)
        result = replay(rule, problem, traces[n], seeds=seeds, noise=config.noise,
                        record_every=1, record_paths=False)
        with np.errstate(invalid="ignore"):
            mean = result.loss.mean(axis=0)  # NaN once any seed diverged
        curves[i, j] = mean
        score[i, j] = commits_to_target(mean, result.record_events, level)
        finite = np.isfinite(result.final_loss)
        final[i, j] = float(result.final_loss[finite].mean()) if finite.any() else np.nan
        diverged[i, j] = int(result.diverged.sum())
    best = np.array([config.momenta[int(np.argmin(row))] if np.isfinite(row).any()
                     else np.nan for row in score])
    n = np.array(config.workers, np.float64)
    return {
        "n": np.array(config.workers),
        "momenta": np.array(config.momenta),
        "commits_to_target": score,   # (N, M), inf where the target was not reached
        "best_momentum": best,        # (N,)
        "best_commits": score.min(axis=1),
        # first order: the momentum that is best without asynchrony, minus 1 − 1/n
        "first_order": best[0] - (1.0 - 1.0 / n) if config.workers[0] == 1 else n * np.nan,
        "final_loss": final,
        "diverged": diverged,         # seeds (of config.seeds) that diverged
        # (N, M, R) central loss averaged over seeds after ``commits`` commits
        "commits": np.arange(0, config.commits + 1, config.store_every),
        "mean_loss": curves[:, :, ::config.store_every],
        "initial_loss": initial,
        "target_loss": level,
    }
