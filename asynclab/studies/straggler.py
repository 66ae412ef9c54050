"""A straggler's stale update on Beale's function (thesis Fig. 1.5), and ADAG absorbing it.

Asynchronous SGD (DOWNPOUR, λ = 1) with n workers and exponential compute times; worker 0
straggles on its very first local step (``Straggler(worker=0, delay=D, at_step=0)``), so it
commits −η∇L(θ̃_0), the gradient at the start, long after the others have moved the
centre: a commit of staleness τ ≈ n·D. The same traces and seeds are replayed with ADAG,
which scales a commit by 1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1), i.e. by how far the centre moved
since the worker pulled.

Part 1 (fixed start): every seed has its own schedule (one ``simulate_async`` per seed);
the straggler's commit is the commit of largest staleness. Measured per rule and seed:
the jump of the centre at that commit, the central loss just before and just after it,
and the mean loss over the next ``window`` commits.

Part 2 (basins): does the straggler throw the centre into the other basin, the valley
toward x → −∞ along y ≈ 1? Random starts uniform in Beale's box [−4, 4]², one shared
schedule with and one without the straggler (same noise), DOWNPOUR and ADAG; the final
centre is classified as global minimum / valley / elsewhere / diverged. The first start
where the straggler alone sends DOWNPOUR into the valley while ADAG reaches the minimum
is replayed again with its trajectories recorded.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, Straggler, simulate_async
from ..engine import initial_state, seed_keys
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import replay, replay_grid

#: Final-state classes of the basin scan.
ELSEWHERE, MINIMUM, VALLEY, DIVERGED = 0, 1, 2, 3


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    start: tuple[float, float] = (1.0, 1.75)  # Beale's default start
    workers: int = 4
    learning_rate: float = 5e-3
    noise: float = 10.0  # σ² of the additive Gaussian gradient noise (the thesis's N(0, 10))
    delay: float = 40.0  # simulated seconds added to the straggler's first local step
    gammas: tuple[float, ...] = (1e-2, 1e-4)  # ADAG's γ, one line each
    commits: int = 4000
    seeds: int = 16  # seeds 0, 1, …; seed s schedules its own cluster with rng = s
    window: int = 50  # commits after the straggler's commit averaged for "loss next"
    shown_seed: int = 0  # whose paths are drawn
    basin_seeds: int = 2000  # random starts of the basin scan (0: skip it)
    basin_learning_rate: float = 2.5e-3
    basin_commits: int = 12_000
    basin_trace_seed: int = 0
    minimum_radius: float = 0.5  # "global minimum" = final centre this close to (3, 0.5)
    target: float = 0.1  # central loss for "commits to target" on the mean loss curve

    @classmethod
    def quick(cls) -> Config:
        return cls(seeds=8, commits=2000, basin_seeds=256, basin_commits=6000)


def rule_labels(config: Config) -> list[str]:
    return ["DOWNPOUR"] + [f"ADAG γ = {g:g}" for g in config.gammas]


def _rules(config: Config, learning_rate: float):
    return [make_rule("downpour", learning_rate=learning_rate)] + [
        make_rule("adag", learning_rate=learning_rate, gamma=g) for g in config.gammas]


def _cluster(config: Config, straggler: bool) -> Cluster:
    stragglers = (Straggler(worker=0, delay=config.delay, at_step=0),) if straggler else ()
    return Cluster(config.workers, ComputeTime("exponential"), stragglers=stragglers)


def classify(final: np.ndarray, diverged: np.ndarray, minimum, radius: float) -> np.ndarray:
    """Where each run ended: MINIMUM, VALLEY (x < 0), ELSEWHERE or DIVERGED."""
    final = np.asarray(final, np.float64)
    out = np.full(final.shape[0], ELSEWHERE, np.int8)
    out[np.linalg.norm(final - np.asarray(minimum), axis=1) < radius] = MINIMUM
    out[final[:, 0] < 0] = VALLEY
    out[~np.all(np.isfinite(final), axis=1) | np.asarray(diverged)] = DIVERGED
    return out


def _window(values: np.ndarray, i: int, pre: int, post: int) -> np.ndarray:
    """``values[i − pre : i + post + 1]``, padded with NaN where it runs off either end."""
    out = np.full(pre + post + 1, np.nan)
    lo, hi = max(0, i - pre), min(values.size, i + post + 1)
    out[lo - (i - pre): hi - (i - pre)] = values[lo:hi]
    return out


def _fixed_start_replays(config: Config, problem, traces, seeds, progress):
    """``(center_path, loss, diverged)`` of DOWNPOUR, then of ADAG at every γ (one
    compiled sweep over γ), in the order of :func:`rule_labels`."""
    options = dict(seeds=seeds, noise=config.noise, record_every=1, record_paths=True,
                   progress=progress)
    result = replay(make_rule("downpour", learning_rate=config.learning_rate), problem,
                    traces, **options)
    yield result.center_path, result.loss, result.diverged
    adag = make_rule("adag", learning_rate=config.learning_rate, gamma=config.gammas[0])
    result = replay_grid(adag, problem, traces, grid={"gamma": list(config.gammas)},
                         **options)
    for k in range(len(config.gammas)):
        yield result.center_path[k], result.loss[k], result.diverged[k]


def _fixed_start(config: Config, problem, progress) -> dict:
    seeds = list(range(config.seeds))
    traces = [simulate_async(_cluster(config, True), commits=config.commits, rng=s)
              for s in seeds]
    commit = np.array([int(np.argmax(t.staleness)) for t in traces])
    straggler_worker = np.array([int(t.worker[i]) for t, i in zip(traces, commit, strict=True)])
    rows = np.arange(len(seeds))
    out = {name: [] for name in ("jump", "loss_before", "loss_after", "loss_next", "loss",
                                 "path", "final_loss", "diverged")}
    pre, post = 20, 3 * config.window
    aligned = []
    for center, loss, diverged in _fixed_start_replays(config, problem, traces, seeds,
                                                       progress):
        # index i: after i commits
        out["jump"].append(np.linalg.norm(center[rows, commit + 1] - center[rows, commit],
                                          axis=1))
        out["loss_before"].append(loss[rows, commit])
        out["loss_after"].append(loss[rows, commit + 1])
        out["loss_next"].append(np.array([loss[s, i + 1: i + 1 + config.window].mean()
                                          for s, i in zip(rows, commit, strict=True)]))
        aligned.append(np.stack([_window(loss[s], i, pre, post) for s, i in
                                 zip(rows, commit, strict=True)]))
        out["loss"].append(loss)
        out["path"].append(center[config.shown_seed])
        tail = max(1, config.commits // 10)
        out["final_loss"].append(np.nanmean(loss[:, -tail:], axis=1))
        out["diverged"].append(diverged)
    data = {k: np.stack(v) for k, v in out.items()}
    loss = data.pop("loss")  # (R, S, T + 1)
    data["mean_loss"] = np.nanmean(loss, axis=1)
    data["aligned_loss"] = np.stack(aligned)  # (R, S, pre + post + 1)
    data["aligned_offset"] = np.arange(-pre, post + 1)
    below = data["mean_loss"] <= config.target
    data["commits_to_target"] = np.where(below.any(axis=1), np.argmax(below, axis=1), -1)
    data["straggler_commit"] = commit
    data["straggler_staleness"] = np.array([int(t.staleness[i]) for t, i in
                                            zip(traces, commit, strict=True)])
    data["straggler_time"] = np.array([float(t.time[i]) for t, i in
                                       zip(traces, commit, strict=True)])
    data["straggler_worker"] = straggler_worker
    data["path"] = data["path"].astype(np.float32)
    data["mean_loss"] = data["mean_loss"].astype(np.float32)
    data["aligned_loss"] = data["aligned_loss"].astype(np.float32)
    return data


def _basin_scan(config: Config, base, progress) -> dict:
    n = config.workers
    seeds = np.arange(config.basin_seeds)
    with_straggler = simulate_async(_cluster(config, True), commits=config.basin_commits,
                                    rng=config.basin_trace_seed)
    without = simulate_async(_cluster(config, False), commits=config.basin_commits,
                             rng=config.basin_trace_seed)
    downpour, adag = _rules(config, config.basin_learning_rate)[:2]
    starts = np.asarray(jax.vmap(
        lambda s: initial_state(downpour, base, seed_keys(s, n)[0], n, "random")[0].center
    )(jnp.asarray(seeds, jnp.uint32)))
    runs = [("downpour_straggler", downpour, with_straggler),
            ("downpour_none", downpour, without),
            ("adag_straggler", adag, with_straggler),
            ("adag_none", adag, without)]
    out = {"basin_starts": starts}
    for name, rule, trace in progress_bar(runs, desc="straggler: basins", unit="run",
                                  progress=progress):
        result = replay(rule, base, trace, seeds=seeds, noise=config.noise, init="random",
                        record_every=config.basin_commits, record_paths=False)
        out[f"basin_{name}"] = classify(result.final_params, result.diverged,
                                        base.global_minimum, config.minimum_radius)
    thrown = ((out["basin_downpour_none"] == MINIMUM)
              & (out["basin_downpour_straggler"] == VALLEY))
    out["basin_thrown"] = int(thrown.sum())
    out["basin_rescued"] = int(((out["basin_downpour_none"] == VALLEY)
                                & (out["basin_downpour_straggler"] == MINIMUM)).sum())
    out["basin_adag_thrown"] = int(((out["basin_adag_none"] == MINIMUM)
                                    & (out["basin_adag_straggler"] == VALLEY)).sum())
    out["basin_adag_rescued"] = int(((out["basin_adag_none"] == VALLEY)
                                     & (out["basin_adag_straggler"] == MINIMUM)).sum())
    example = np.flatnonzero(thrown & (out["basin_adag_straggler"] == MINIMUM))
    out["basin_example"] = int(example[0]) if example.size else -1
    if example.size:
        k = [int(example[0])]
        every = max(1, config.basin_commits // 2000)
        paths, classes = [], []
        for _, rule, trace in runs[:3]:
            result = replay(rule, base, trace, seeds=k, noise=config.noise, init="random",
                            record_every=every, record_paths=True)
            paths.append(result.center_path[0].astype(np.float32))
            classes.append(classify(result.final_params, result.diverged,
                                    base.global_minimum, config.minimum_radius)[0])
        out["basin_example_paths"] = np.stack(paths)  # DOWNPOUR ±straggler, ADAG +straggler
        out["basin_example_classes"] = np.array(classes)
        i = int(np.argmax(with_straggler.staleness))
        out["basin_example_commit_record"] = int(i // every)
        out["basin_example_staleness"] = int(with_straggler.staleness[i])
    return out


def run(config: Config = Config(), progress=None) -> dict:
    """Paths and losses around the straggler's commit per rule, and the basin scan."""
    base = get_problem("beale")
    problem = base._replace(start=np.asarray(config.start, np.float32))
    data = _fixed_start(config, problem, progress)
    data["labels"] = np.array(rule_labels(config))
    data["minimum"] = np.asarray(base.global_minimum, np.float64)
    if config.basin_seeds:
        data.update(_basin_scan(config, base, progress))
    return data
