"""Who moved the centre: each worker's share of the centre's movement, per rule, on one
heterogeneous cluster.

n workers with exponential compute times whose means differ by worker (lognormal
factors from ``asynclab.cluster.heterogeneous``, sorted so that worker 0 is the fastest)
run asynchronous rules on Beale's function from its fixed start, with Gaussian gradient
noise. Every seed schedules its own cluster (``simulate_async(..., rng=seed)``) and
replays it with every rule; ``Result.center_share`` gives each worker's share of the
centre's total movement Σ‖θ̃_{t+1} − θ̃_t‖ (``docs/rules.md``, "Who moved the centre").
Beside it, each worker's share of the commits: what every rule would give it if all
commits moved the centre equally far. A rule that damps stale commits (DynSGD's
1/(τ + 1), staleness-aware SGD's 1/τ, ADAG's distance factor) moves share from the
slow workers, whose commits are stale, to the fast ones.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, heterogeneous, simulate_async
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import replay


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    workers: int = 8
    spread: float = 0.8  # σ of the log of the workers' compute-time factors
    cluster_seed: int = 0  # draws the factors
    rules: tuple[str, ...] = ("downpour", "dynsgd", "staleness_aware", "adag")
    learning_rate: float = 1e-3
    gamma: float = 1e-4  # ADAG's γ (the thesis's value)
    noise: float = 10.0  # σ² of the gradient noise (the thesis's N(0, 10))
    commits: int = 4000
    seeds: int = 16  # seeds 0, 1, …; seed s schedules its own cluster with rng = s

    @classmethod
    def quick(cls) -> Config:
        return cls(commits=1000, seeds=4)


def slowdowns(config: Config) -> np.ndarray:
    """The workers' compute-time factors (mean 1), fastest first."""
    return np.sort(heterogeneous(config.workers, config.spread, config.cluster_seed))


def cluster(config: Config) -> Cluster:
    return Cluster(config.workers, ComputeTime("exponential"),
                   time_scale=tuple(float(f) for f in slowdowns(config)))


def rule(config: Config, name: str):
    extra = {"gamma": config.gamma} if name == "adag" else {}
    return make_rule(name, learning_rate=config.learning_rate, **extra)


def run(config: Config = Config(), progress=None) -> dict:
    """Per rule and seed, each worker's share of the centre's movement; per seed and
    worker, its share of the commits and its mean staleness."""
    seeds = list(range(config.seeds))
    traces = [simulate_async(cluster(config), commits=config.commits, rng=s) for s in seeds]
    n = config.workers
    commit_share = np.stack([np.bincount(t.worker, minlength=n) / t.n_events for t in traces])
    staleness = np.stack([np.bincount(t.worker, weights=t.staleness, minlength=n)
                          / np.maximum(np.bincount(t.worker, minlength=n), 1) for t in traces])
    problem = get_problem("beale")
    shares, diverged = [], []
    for name in progress_bar(config.rules, desc="movers", unit="rule", progress=progress):
        result = replay(rule(config, name), problem, traces, seeds=seeds, noise=config.noise,
                        record_every=config.commits, record_paths=False, progress=False)
        shares.append(result.center_share)
        diverged.append(result.diverged)
    return {"labels": np.array(config.rules), "slowdown": slowdowns(config),
            "center_share": np.stack(shares),        # (rules, seeds, workers)
            "diverged": np.stack(diverged),          # (rules, seeds)
            "commit_share": commit_share,            # (seeds, workers)
            "staleness": staleness}                  # (seeds, workers)
