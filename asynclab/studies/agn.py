"""Accumulated gradient normalisation (AGN) against an equivalently sized mini-batch
(thesis research question 3), and the "straight line" thought experiment.

Batch size is modelled by gradient noise: a worker's mini-batch of m examples has additive
Gaussian gradient noise of variance σ², so a batch λ× larger has variance σ²/λ and, with
exponential per-batch compute times of mean 1 s, takes the sum of λ of them (a gamma
distribution with shape λ and mean λ s).

Part 1, directions: AGN commits Δ = a/λ, the accumulated local step divided by λ. With λ
local steps and a small η, a/λ = −η · mean of λ noisy gradients along a short local path
≈ −η ∇L(θ̃_pull): the noise averages out and the commit becomes a straight line along the
full-batch gradient at the pulled centre. The study measures the cosine between every
commit and −∇L(θ̃_pull) for several λ at a small and a larger η (where the local path
bends toward the minimum, and the commit points at where the worker ended up instead).

Part 2, loss curves: AGN with n workers and λ local steps per commit, against sequential
SGD whose batch is λ× larger (one step per λ batches' worth of time) and synchronous SGD
with n workers each computing a λ× larger batch, all at the same η, on a noisy quadratic.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, simulate_async, simulate_sync
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import replay, replay_grid


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    workers: int = 4
    # part 1: directions on the 2-D quadratic
    direction_condition: float = 10.0
    pulled: tuple[float, float] = (0.3, 0.1)  # where the workers start (and first pull)
    direction_noise: float = 10.0
    local_steps: tuple[int, ...] = (1, 4, 15, 60, 250, 1000)
    shown_local_steps: tuple[int, ...] = (1, 15, 1000)  # drawn as arrows
    learning_rates: tuple[float, ...] = (1e-5, 1e-3)  # the first is the "small η"
    direction_commits: int = 200
    direction_seeds: int = 64
    # part 2: loss curves on a noisy quadratic
    dim: int = 10
    condition: float = 10.0
    learning_rate: float = 1e-2
    noise: float = 10.0  # σ² for a batch of m examples; a batch of λm has σ²/λ
    window: int = 15  # λ of the AGN run; the big-batch runs use a λ× larger batch
    commits: int = 600
    seeds: int = 64  # seeds 0, 1, …; seed s schedules its own cluster with rng = s
    target: float = 0.05  # fraction of the initial loss for "commits / seconds to target"

    @classmethod
    def quick(cls) -> Config:
        return cls(local_steps=(1, 15, 1000), learning_rates=(1e-5,), direction_commits=100,
                   direction_seeds=32, commits=300, seeds=32)


def _first_hit(curve: np.ndarray, level: float) -> int:
    hit = np.flatnonzero(curve <= level)
    return int(hit[0]) if hit.size else -1


def _directions(config: Config, progress) -> dict:
    base = get_problem("quadratic", dim=2, condition=config.direction_condition)
    problem = base._replace(start=np.asarray(config.pulled, np.float32))
    h = np.geomspace(1.0, config.direction_condition, 2)
    n = config.workers
    seeds = list(range(config.direction_seeds))
    shape = (len(config.learning_rates), len(config.local_steps))
    cosine = np.full(shape, np.nan)
    cosine_first = np.full(shape, np.nan)
    arrows = np.full((len(config.shown_local_steps), len(seeds) * n, 2), np.nan, np.float32)
    cluster = Cluster(n, ComputeTime("exponential"))
    # λ decides the shape of the replay: one sweep over the learning rates per λ
    for j, lam in enumerate(progress_bar(config.local_steps, desc="agn: directions",
                                         unit="λ", progress=progress)):
        traces = [simulate_async(cluster, commits=config.direction_commits, local_steps=lam,
                                 rng=s) for s in seeds]
        rule = make_rule("agn", learning_rate=config.learning_rates[0], local_steps=lam)
        result = replay_grid(rule, problem, traces, seeds=seeds,
                             grid={"learning_rate": list(config.learning_rates)},
                             noise=config.direction_noise, record_every=1, record_paths=True,
                             progress=False)
        for i in range(shape[0]):
            values, first, deltas = [], [], []
            for s, trace in enumerate(traces):
                pulled = result.center_path[i, s, trace.pulled_clock].astype(np.float64)
                delta = (result.worker_path[i, s].astype(np.float64) - pulled) / lam  # a / λ
                descent = -h * pulled  # −∇L(θ̃_pull)
                c = np.sum(delta * descent, axis=1) / (
                    np.linalg.norm(delta, axis=1) * np.linalg.norm(descent, axis=1))
                values.append(c)
                at_start = trace.pulled_clock == 0  # each worker's first commit
                first.append(c[at_start])
                deltas.append(delta[at_start])
            cosine[i, j] = float(np.mean(np.concatenate(values)))
            cosine_first[i, j] = float(np.mean(np.concatenate(first)))
            if i == 0 and lam in config.shown_local_steps:
                d = np.concatenate(deltas)
                k = config.shown_local_steps.index(lam)
                arrows[k, : d.shape[0]] = d / np.linalg.norm(d, axis=1, keepdims=True)
    pulled = np.asarray(config.pulled, np.float64)
    return {
        "direction_local_steps": np.array(config.local_steps),
        "direction_learning_rates": np.array(config.learning_rates),
        "cosine": cosine,              # (η, λ) mean over all commits
        "cosine_first": cosine_first,  # (η, λ) mean over the first commit of every worker
        "arrows": arrows,              # (shown λ, seeds·n, 2) unit directions of Δ at small η
        "shown_local_steps": np.array(config.shown_local_steps),
        "pulled": pulled,
        "descent": -h * pulled / np.linalg.norm(h * pulled),
        "direction_h": h,
    }


def _curves(config: Config, progress) -> dict:
    problem = get_problem("quadratic", dim=config.dim, condition=config.condition)
    n, lam, eta = config.workers, config.window, config.learning_rate
    seeds = list(range(config.seeds))
    big_batch = ComputeTime("gamma", mean=float(lam), shape=float(lam))
    runs = [
        (f"AGN, n = {n}, λ = {lam}, batch m", make_rule("agn", learning_rate=eta,
                                                      local_steps=lam),
         [simulate_async(Cluster(n, ComputeTime("exponential")), commits=config.commits,
                         local_steps=lam, rng=s) for s in seeds], config.noise),
        (f"sequential SGD, batch {lam}m", make_rule("sequential_sgd", learning_rate=eta),
         [simulate_async(Cluster(1, big_batch), commits=config.commits, rng=s)
          for s in seeds], config.noise / lam),
        (f"synchronous SGD, n = {n}, batch {lam}m each",
         make_rule("synchronous_sgd", learning_rate=eta),
         [simulate_sync(Cluster(n, big_batch), rounds=config.commits, rng=s) for s in seeds],
         config.noise / lam),
    ]
    labels, losses, times = [], [], []
    for label, rule, traces, noise in progress_bar(runs, desc="agn: loss curves", unit="run",
                                           progress=progress):
        result = replay(rule, problem, traces, seeds=seeds, noise=noise, record_every=1,
                        record_paths=False)
        labels.append(label)
        losses.append(result.loss.mean(axis=0))
        times.append(result.record_time.mean(axis=0))  # mean simulated seconds per commit
    losses = np.stack(losses)
    times = np.stack(times)
    initial = float(losses[0, 0])
    level = config.target * initial
    hit = np.array([_first_hit(c, level) for c in losses])
    tail = max(1, config.commits // 5)
    return {
        "labels": np.array(labels),
        "mean_loss": losses.astype(np.float32),   # (runs, T + 1)
        "mean_time": times.astype(np.float32),    # (runs, T + 1) seconds
        "commits_to_target": hit,                 # (runs,) −1: not reached
        "seconds_to_target": np.array([times[r, k] if k >= 0 else np.nan
                                       for r, k in enumerate(hit)]),
        "final_loss": losses[:, -tail:].mean(axis=1),
        "target_loss": level,
    }


def run(config: Config = Config(), progress=None) -> dict:
    """Directions of AGN commits vs λ, and loss curves against λ×-batch SGD."""
    data = _directions(config, progress)
    data.update(_curves(config, progress))
    return data
