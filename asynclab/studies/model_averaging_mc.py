"""How often model averaging with randomly initialised workers reaches Beale's global
minimum, against the number of workers n and the communication window λ (thesis
Fig. 2.4, which used 1,000 runs per bar and called its result not significant).

Every run: n workers start uniformly in [−4, 4]², the centre is their mean; λ local
SGD steps (η = 1e-4, gradient noise N(0, σ² = 10)) per round, then averaging. All
seeds of one (n, λ) are one vectorised replay.

Success test: the central loss at the end of the budget is below 0.1. The sublevel set
{f < 0.1} of Beale's function is a bounded neighbourhood of the global minimum (3, 0.5)
(it lies within 2.43 < x < 4.46) that holds no other stationary point; Beale's two
unbounded valleys stay above it (toward x → −∞ along y ≈ 1, f → 0.45; toward y → −∞
along x ≈ 2.625/|y|³, f → 7.31). With η = 1e-4 the stationary loss near the minimum is
≈ ησ²/(2n) ≤ 5e-4, so a run below 0.1 has reached the global minimum's basin and stays.
(The radius test "within 0.1 of (3, 0.5)" answers the same question but only after
~10⁵ steps, because the last approach along the soft direction of the minimum,
curvature 0.30, is slow.)

Work per launch: the seeds of a cell are replayed in launches of ``launch_seeds`` (on a
CPU the check's 500, so that a cell's check and bar share one compilation — the CPU gains
nothing from more seeds per launch; on an accelerator all of them, which it needs to be
busy). Seeds are independent, so the launch size does not change any run. With
``merge_check`` (the default on an accelerator) a bar cell is one replay of all its runs
over twice the budget, recording the loss and the centre's x at the budget and at twice
the budget: the bar reads the first record, the convergence check the first
``check_runs`` seeds. That is the same arithmetic for every seed as a bar replay plus a
separate check replay, so the same counts; it costs the doubled budget on every seed (a
CPU pays for that) but takes a third fewer sequential steps than two replays, which is
what a launch-bound accelerator waits on.

Compilations (``stepwise`` and ``worker_groups``, on a CPU by default): each cell is
replayed one local step per compiled event, the averaging applied at the last step of
every round, so the four λ of one n share one compiled program; and the n of one of
``WORKER_GROUPS`` run on a worker axis padded to the group's largest n, the averaging over
the real workers only, so they share one program too. The figure then compiles 6 chunk
programs and one initial state instead of 40 of each (a check and a bar of one cell share
theirs through equal launches). Replayed this way, a bar cell's check runs (its first
``check_runs`` seeds over twice the budget) also serve as the bar's first runs, read at
the budget as with ``merge_check``, and the bar replays only the other seeds; every cell
then records the centre's x (one problem, so one program).

Padding changes no bit; neither does the stepwise replay for λ = 1, while for λ > 1 its
numbers differ from the λ-step replay's in the last bits (that loop is unrolled by 4,
which XLA rounds differently; ``docs/design.md``). The full figure's counts (successes,
overflows, valley runs, the checks) came out the same as with the λ-step replay, on the
2-core CPU of ``benchmarks/README.md``.

Budget: in local steps per worker (λ · rounds), the same for every λ. It is larger for
few workers, whose slowest runs creep along the line x ≈ 0⁺ for a long time. Convergence
check: the doubled budget is replayed on the first ``check_runs`` seeds, recording the
loss at the budget and at twice the budget; the change of every cell is reported.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import jax
import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, simulate_sync
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import STUDY_DIVERGENCE, replay


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates.

    Attributes:
      workers: the numbers of workers n.
      bar_local_steps: λ of the bar chart, with ``runs`` runs per bar.
      map_local_steps: λ of the heatmap; rows not in ``bar_local_steps`` have
        ``check_runs`` runs per cell (taken from the convergence-check replay, as are
        all cells when ``check_runs >= runs``).
      learning_rate: η.
      noise: σ², the variance of the additive Gaussian gradient noise.
      budget: local steps per worker for n > ``few_workers``.
      budget_few: local steps per worker for n ≤ ``few_workers``.
      few_workers: see above.
      runs: runs (seeds 0 … runs − 1) per bar.
      check_runs: runs (seeds 0 … check_runs − 1) replayed with twice the budget.
      success_loss: a run succeeds when its final central loss is below this.
      threads: cells replayed at once (None: 2 on a CPU, where each replay keeps about
        one core busy; on an accelerator one per host core, up to one per cell, so that
        the cells' compilations run in parallel and their launches overlap). The numbers
        do not depend on it.
      launch_seeds: seeds per replay call (None: ``check_runs`` on a CPU, ``runs`` on an
        accelerator).
      merge_check: replay a bar cell's runs over twice the budget in one launch and read
        the convergence check from its first ``check_runs`` seeds (None: on an
        accelerator). The counts do not depend on it.
      unroll: events per iteration of the replay's compiled loop (None: on a CPU 4
        replaying step by step, ``STEPWISE_CPU_UNROLL``, else 1; 8 on an accelerator,
        where every iteration costs kernel launches). The same arithmetic per event (on
        a CPU the same bits).
      stepwise: replay one local step per compiled event, averaging at the end of every
        round (``asynclab.prepare(..., stepwise=True)``), so that the four λ of one n
        share one compiled program (None: on a CPU, where a step costs about as much
        either way; an accelerator pays per event). See "Compilations" above for what it
        changes in the numbers.
      worker_groups: numbers of workers replayed on one padded worker axis, the
        group's largest n (``asynclab.prepare(..., pad_workers=N)``), so that they share
        one compiled program; n in no group is not padded (None: ``WORKER_GROUPS`` when
        replaying step by step, else none). The numbers do not depend on it (on a CPU,
        to the bit).
    """

    workers: tuple[int, ...] = tuple(range(1, 11))
    bar_local_steps: tuple[int, ...] = (1, 100)
    map_local_steps: tuple[int, ...] = (1, 10, 100, 1000)
    learning_rate: float = 1e-4
    noise: float = 10.0
    budget: int = 16_000
    budget_few: int = 32_000
    few_workers: int = 3
    runs: int = 10_000
    check_runs: int = 500
    success_loss: float = 0.1
    threads: int | None = None
    launch_seeds: int | None = None
    merge_check: bool | None = None
    unroll: int | None = None
    stepwise: bool | None = None
    worker_groups: tuple[tuple[int, ...], ...] | None = None

    @classmethod
    def quick(cls) -> Config:
        return cls(workers=(1, 10), map_local_steps=(1, 100), runs=64, check_runs=64)

    def budget_for(self, n: int) -> int:
        return self.budget_few if n <= self.few_workers else self.budget


def wilson(successes, runs, z: float = 1.959964):
    """The Wilson score interval ``(low, high)`` of a binomial proportion (95 % default)."""
    successes = np.asarray(successes, float)
    runs = np.asarray(runs, float)
    p = successes / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * np.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return centre - half, centre + half


@functools.lru_cache(maxsize=1)
def _beale_recording_x():
    """Beale, also recording the centre's x at every record (the merged replay's valley
    test needs it at the budget, where the run does not end)."""
    return get_problem("beale")._replace(evaluate=lambda center: {"x": center[0]})


def replay_cell(config, problem, n, lam, steps, seeds, records):
    """The runs of one cell, (n, λ), ``steps`` local steps per worker, ``records`` + 1
    loss records (one launch; ``_replay_seeds`` splits the seeds into launches)."""
    rule = make_rule("model_averaging", learning_rate=config.learning_rate, local_steps=lam)
    rounds = steps // lam
    trace = simulate_sync(Cluster(workers=n), local_steps=lam, rounds=rounds)
    return replay(rule, problem, trace, seeds=seeds, init="random_per_worker",
                  noise=config.noise, record_paths=False, record_every=rounds // records,
                  progress=False,  # cells run several at a time: one bar for the study
                  unroll=_unroll(config), stepwise=_stepwise(config),
                  pad_workers=_pad_workers(config, n), diverged_above=STUDY_DIVERGENCE)


#: the numbers of workers that share a padded worker axis when the study replays step by
#: step, each group one compiled program (n ≤ 3 and n > 3 have different budgets, so
#: different programs anyway); every padded replay shares one compiled initial state
#: (``asynclab.engine._replay.INITIAL_AXIS``). Padding costs the padded workers' steps,
#: a few per cent more worker-steps for the whole figure with these groups.
WORKER_GROUPS = ((1,), (2,), (3,), (4, 5), (6, 7), (8, 9, 10))


def _stepwise(config) -> bool:
    if config.stepwise is not None:
        return bool(config.stepwise)
    return jax.default_backend() == "cpu"


def _pad_workers(config, n: int) -> int | None:
    groups = config.worker_groups
    if groups is None:
        groups = WORKER_GROUPS if _stepwise(config) else ()
    for group in groups:
        if n in group:  # padded even to n itself: one initial program for all
            return max(group)
    return None


class _Runs(NamedTuple):
    """What the study keeps of a cell's runs."""

    loss: np.ndarray  # (S, records + 1)
    final_params: np.ndarray  # (S, 2)
    diverged_at: np.ndarray  # (S,)
    x: np.ndarray  # (S, records + 1): the centre's x at every record (NaN if not recorded)

    @property
    def n_seeds(self) -> int:
        return self.loss.shape[0]


class _Cell(NamedTuple):
    """A cell's answer: the check's successes at 1× and 2× the budget, and every run's
    final loss, overflow and valley flag (``valley`` None where the final centre is not
    known)."""

    check_ok: np.ndarray  # (check_runs, 2) bool
    final: np.ndarray  # (S,)
    diverged: np.ndarray  # (S,) bool
    valley: np.ndarray | None  # (S,) bool


def _launch_seeds(config) -> int:
    if config.launch_seeds is not None:
        return int(config.launch_seeds)
    return config.check_runs if jax.default_backend() == "cpu" else config.runs


def _replay_seeds(config, problem, n, lam, steps, seeds, records) -> _Runs:
    """:func:`replay_cell` over ``seeds`` in launches of ``_launch_seeds(config)``."""
    seeds = list(seeds)
    size = _launch_seeds(config)
    parts = []
    for i in range(0, len(seeds), size):
        r = replay_cell(config, problem, n, lam, steps, seeds[i:i + size], records)
        x = r.metrics["x"] if r.metrics else np.full_like(r.loss, np.nan)
        parts.append(_Runs(r.loss, r.final_params, r.diverged_at, x))
    return _Runs(*(np.concatenate([getattr(r, f) for r in parts]) for f in _Runs._fields))


def _threads(config, cells: int) -> int:
    if config.threads is not None:
        return int(config.threads)
    if jax.default_backend() == "cpu":
        return 2
    return max(1, min(cells, os.cpu_count() or 1))


def _unroll(config) -> int:
    if config.unroll is not None:
        return int(config.unroll)
    if jax.default_backend() != "cpu":
        return ACCELERATOR_UNROLL
    return STEPWISE_CPU_UNROLL if _stepwise(config) else 1


#: events per loop iteration on an accelerator (``benchmarks/replay.py``, row (h))
ACCELERATOR_UNROLL = 8

#: events per loop iteration on a CPU replaying step by step, where an event is one local
#: step: 4 ran the cells faster than 1, with the same bits; a round-at-a-time event gains
#: nothing from it (``benchmarks/replay.py``, row (h))
STEPWISE_CPU_UNROLL = 4


def _merge_check(config) -> bool:
    if config.merge_check is not None:
        return bool(config.merge_check)
    return jax.default_backend() != "cpu"


def _replay_cell(config, problem, lam, n) -> _Cell:
    """One (λ, n) cell: the convergence check on the first ``check_runs`` seeds and, for
    a bar λ, the bar's ``runs`` seeds (see the module's docstring)."""
    steps = config.budget_for(n)
    has_bar = lam in config.bar_local_steps and config.runs > config.check_runs
    if has_bar and _merge_check(config):
        # every run over twice the budget, recorded at 1× and 2×; the bar reads 1×
        both = _replay_seeds(config, _beale_recording_x(), n, lam, 2 * steps,
                             range(config.runs), 2)
        final = both.loss[:, 1]
        # overflowed by the budget: at one of its first steps // lam rounds (the first
        # record's own finiteness test marks the block's last round)
        diverged = (both.diverged_at >= 0) & (both.diverged_at < steps // lam)
        return _Cell(both.loss[:config.check_runs, 1:] < config.success_loss, final,
                     diverged, np.isfinite(final) & (both.x[:, 1] < 0))
    if _stepwise(config):  # every cell's launches share one program: one problem
        problem = _beale_recording_x()
    # twice the budget on the first check_runs seeds, loss recorded at 1× and 2×
    check = _replay_seeds(config, problem, n, lam, 2 * steps, range(config.check_runs), 2)
    check_ok = check.loss[:, 1:] < config.success_loss
    if has_bar and _stepwise(config):
        # the check's runs are the bar's first, read at the budget as merge_check reads
        # them; the bar replays only the others (same launches, same program)
        rest = _replay_seeds(config, problem, n, lam, steps,
                             range(config.check_runs, config.runs), 1)
        final = np.concatenate([check.loss[:, 1], rest.loss[:, 1]])
        diverged = np.concatenate([(check.diverged_at >= 0)
                                   & (check.diverged_at < steps // lam),
                                   rest.diverged_at >= 0])
        x = np.concatenate([check.x[:, 1], rest.x[:, 1]])
        return _Cell(check_ok, final, diverged, np.isfinite(final) & (x < 0))
    if not has_bar:
        final = check.loss[:, 1]
        return _Cell(check_ok, final, ~np.isfinite(final), None)
    bar = _replay_seeds(config, problem, n, lam, steps, range(config.runs), 1)
    final = bar.loss[:, -1]
    return _Cell(check_ok, final, bar.diverged_at >= 0,
                 np.isfinite(final) & (bar.final_params[:, 0] < 0))


def run(config: Config = Config(), progress=None) -> dict:
    """Replay every (λ, n) cell; returns success probabilities with Wilson intervals,
    the convergence check and divergence counts."""
    problem = get_problem("beale")
    workers = list(config.workers)
    lams = list(dict.fromkeys(list(config.map_local_steps) + list(config.bar_local_steps)))
    for n in workers:
        for lam in lams:
            if config.budget_for(n) % lam:
                raise ValueError(f"budget {config.budget_for(n)} is not a multiple of λ={lam}")
    shape = (len(lams), len(workers))
    success = np.zeros(shape, np.int64)
    runs = np.zeros(shape, np.int64)
    diverged = np.zeros(shape, np.int64)
    valley = np.zeros(shape, np.int64)
    check_at_budget = np.zeros(shape)
    check_at_double = np.zeros(shape)
    cells = [(lam, n) for lam in lams for n in workers]

    def replay_cell(cell):
        lam, n = cell
        return _replay_cell(config, problem, lam, n)

    # Several cells at a time (two on a CPU: XLA keeps both cores busy only for the large
    # cells); the cells are independent (each seed's numbers do not depend on what else
    # runs).
    with ThreadPoolExecutor(max_workers=_threads(config, len(cells))) as pool, progress_bar(
            total=len(cells), desc="model averaging Monte Carlo",
            progress=progress) as bar_:
        futures = [pool.submit(replay_cell, cell) for cell in cells]
        for (lam, n), future in zip(cells, futures, strict=True):
            cell = future.result()
            bar_.update()
            i, j = lams.index(lam), workers.index(n)
            check_at_budget[i, j], check_at_double[i, j] = cell.check_ok.mean(axis=0)
            runs[i, j] = cell.final.shape[0]
            success[i, j] = int(np.sum(cell.final < config.success_loss))
            diverged[i, j] = int(np.sum(cell.diverged))
            valley[i, j] = -1 if cell.valley is None else int(np.sum(cell.valley))
    probability = success / runs
    low, high = wilson(success, runs)
    change = check_at_double - check_at_budget
    return {
        "workers": np.array(workers),
        "local_steps": np.array(lams),
        "bar_local_steps": np.array(config.bar_local_steps),
        "budget": np.array([config.budget_for(n) for n in workers]),
        "runs": runs,
        "success": success,
        "probability": probability,
        "low": low,
        "high": high,
        "diverged": diverged,
        "valley": valley,
        "check_runs": config.check_runs,
        "check_at_budget": check_at_budget,
        "check_at_double": check_at_double,
        "check_change": change,
        "max_check_change": float(np.max(np.abs(change))),
        "learning_rate": config.learning_rate,
        "noise": config.noise,
        "success_loss": config.success_loss,
    }
