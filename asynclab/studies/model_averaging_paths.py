"""Model averaging with identical and random initialisation (thesis Figs. 2.2, 2.3).

n workers run model averaging on Beale's function with gradient noise N(0, σ² = 10)
and η = 1e-4, for several communication windows λ and the same number of local steps
per worker. With *identical* initialisation every worker starts at the problem's start;
with *random* initialisation each worker starts uniformly in the box [−4, 4]² and the
centre is their mean. The reference is sequential SGD (one worker, the same start, the
noise stream of worker 0).

The thesis's reading: with identical starts the workers follow the same first-order
path, so the centre progresses like sequential SGD while using n times the resources;
random starts cost one averaging ("warm-up"), after which the run is again an
identical-start run from the first average. The study measures both: the distance
between the centre and sequential SGD, and the spread of the workers' end points
(mean distance from their mean) in every round.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, simulate_sync
from ..engine import initial_state, seed_keys
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import replay

INITS = ("start", "random_per_worker")


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates.

    Attributes:
      workers: n.
      local_steps: the communication windows λ compared.
      learning_rate: η.
      noise: σ², the variance of the additive Gaussian gradient noise.
      steps: local steps per worker (λ · rounds), the same for every λ.
      seeds: the seeds whose runs give the statistics; the first one is drawn.
      drawn_rounds: at most this many rounds of a path are kept for drawing.
    """

    workers: int = 4
    local_steps: tuple[int, ...] = (1, 5, 100, 1000)
    learning_rate: float = 1e-4
    noise: float = 10.0
    steps: int = 40_000
    seeds: tuple[int, ...] = tuple(range(32))
    drawn_rounds: int = 400

    @classmethod
    def quick(cls) -> Config:
        return cls(steps=4_000, seeds=tuple(range(4)))


def spread(points: np.ndarray) -> np.ndarray:
    """Mean distance of the workers' points from their mean: ``(..., n, d) -> (...)``."""
    return np.linalg.norm(points - points.mean(axis=-2, keepdims=True), axis=-1).mean(axis=-1)


def _stride(rounds: int, keep: int) -> int:
    return max(1, -(-rounds // keep))


def run(config: Config = Config(), progress=None) -> dict:
    """Replay every (initialisation, λ) for all seeds; returns paths of the first seed,
    per-round spreads and centre losses, and the distance to sequential SGD."""
    problem = get_problem("beale")
    seeds = list(config.seeds)
    lams = list(config.local_steps)
    for lam in lams:
        if config.steps % lam:
            raise ValueError(f"steps={config.steps} is not a multiple of λ={lam}")
    n = config.workers

    # Sequential SGD: one worker from the fixed start, recorded every local step.
    sgd_rule = make_rule("model_averaging", learning_rate=config.learning_rate, local_steps=1)
    sgd = replay(sgd_rule, problem, simulate_sync(Cluster(workers=1), rounds=config.steps),
                 seeds=seeds, noise=config.noise, init="start", record_every=1,
                 record_paths=True)
    sgd_center = sgd.center_path  # (S, steps + 1, 2)

    keep = config.drawn_rounds
    data: dict = {}
    grid = [(init, lam) for init in INITS for lam in lams]
    bar = progress_bar(grid, desc="model averaging paths",
               progress=progress)
    distance = np.zeros((len(INITS), len(lams)))
    final_loss = np.zeros((len(INITS), len(lams), len(seeds)))
    first_spread = np.zeros((len(INITS), len(lams), len(seeds)))
    later_spread = np.zeros((len(INITS), len(lams), len(seeds)))
    for init, lam in bar:
        i, j = INITS.index(init), lams.index(lam)
        rounds = config.steps // lam
        rule = make_rule("model_averaging", learning_rate=config.learning_rate,
                         local_steps=lam)
        trace = simulate_sync(Cluster(workers=n), local_steps=lam, rounds=rounds)
        result = replay(rule, problem, trace, seeds=seeds, noise=config.noise, init=init,
                        record_every=1, record_paths=True)
        center = result.center_path        # (S, rounds + 1, 2), centre before round r
        ends = result.worker_path          # (S, rounds, n, 2), after round r's local work
        per_round = spread(ends)           # (S, rounds)
        first_spread[i, j] = per_round[:, 0]
        later_spread[i, j] = per_round[:, 1:].mean(axis=1) if rounds > 1 else np.nan
        final_loss[i, j] = result.final_loss
        # the centre after r rounds against sequential SGD after r·λ local steps
        if init == "start":
            gap = np.linalg.norm(center - sgd_center[:, ::lam], axis=-1)
            distance[i, j] = float(np.max(gap))
        s = _stride(rounds, keep)
        key = f"{init}_{lam}"
        _, workers = initial_state(rule, problem, seed_keys(seeds[0], n)[0], n, init)
        data[f"starts_{key}"] = np.asarray(workers.params)
        data[f"center_{key}"] = center[0, ::s]
        data[f"center_round_{key}"] = np.arange(rounds + 1)[::s]
        data[f"ends_{key}"] = ends[0, ::s]
        data[f"ends_round_{key}"] = np.arange(rounds)[::s]
        data[f"spread_{key}"] = per_round.mean(axis=0)[::s]
        data[f"loss_{key}"] = np.median(result.loss, axis=0)[::s]
        data[f"loss_step_{key}"] = (result.record_events * lam)[::s]
    s = _stride(config.steps, keep * 4)
    data.update({
        "inits": np.array(INITS),
        "local_steps": np.array(lams),
        "workers": n,
        "learning_rate": config.learning_rate,
        "noise": config.noise,
        "steps": config.steps,
        "seeds": np.array(seeds),
        "start": problem.start.astype(float),
        "sgd_center": sgd_center[0, ::s],
        "sgd_loss": np.median(sgd.loss, axis=0)[::s],
        "sgd_step": sgd.record_events[::s],
        "sgd_final_loss": sgd.final_loss,
        # max over records and seeds of |centre − sequential SGD| (identical starts)
        "distance_to_sgd": distance[0],
        "final_loss": final_loss,
        "first_spread": first_spread,
        "later_spread": later_spread,
        # noise accumulated over λ free local steps, no curvature: per coordinate
        # std ησ√λ; mean distance from the mean of n such points (2-D, Rayleigh)
        "noise_spread": np.array([config.learning_rate * np.sqrt(config.noise * lam)
                                  * np.sqrt((n - 1) / n) * np.sqrt(np.pi / 2)
                                  for lam in lams]),
    })
    return data
