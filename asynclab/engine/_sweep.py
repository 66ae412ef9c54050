"""A grid of hyperparameter values × seeds, replayed in one compiled call.

The traced hyperparameters of a rule (learning rate, momenta, γ, elasticity, ...) are
arguments of the compiled replay, so the grid's points are one more batch axis beside
the seeds: the whole product is vmapped and replayed in chunks sized to memory, every
chunk through the same compilation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import jax
import numpy as np

from .. import _names, _validate
from .._errors import ConfigError
from .._progress import progress_bar
from ..cluster import RoundTrace, Trace
from ..problems import Problem
from ..rules import RULES, Rule
from ._budget import check_run_memory
from ._compiled import structure_key
from ._core import DIVERGED_ABOVE, run_config
from ._layout import replay_devices
from ._metrics import first_reached
from ._replay import (
    _check_seeds,
    _plan,
    _replay_in_calls,
    _Replayed,
    _result,
    check_diverged_above,
)
from ._result import Result

SCORES = _names.SCORES
#: the scores where a higher value is better (the others: lower)
HIGHER_IS_BETTER = ("success_rate", "final_accuracy")

#: Default bytes a chunk of the batch may hold (states and records), see ``runs_per_call``.
MEMORY_BUDGET = 1 << 30


def check_grid(grid, rule_name: str, hyperparameters: Mapping) -> dict[str, np.ndarray]:
    """A sweep's grid: traced hyperparameters of the rule, each a non-empty list of
    numbers, as float64 arrays."""
    info = RULES[rule_name]
    if not isinstance(grid, Mapping) or not grid:
        raise ConfigError("grid must be a non-empty dict: hyperparameter name -> list of values")
    out = {}
    for name, values in grid.items():
        if name in info.static:
            raise ConfigError(
                f"sweep: {name} is a static hyperparameter of {rule_name} (it decides the "
                f"shape of the compiled replay); sweep one value at a time in a loop. "
                f"Traced ones: {', '.join(info.traced)}")
        if name not in info.parameters:
            raise ConfigError(f"sweep: rule {rule_name!r} has no hyperparameter {name!r}; "
                              f"traced ones: {', '.join(info.traced)}")
        if name in hyperparameters:
            raise ConfigError(f"sweep: {name} is both in the grid and given as a value")
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError(f"sweep: grid[{name!r}] must be a list of numbers, "
                              f"got {values!r}") from None
        if array.ndim != 1 or array.size == 0:
            raise ConfigError(f"sweep: grid[{name!r}] must be a non-empty list of numbers, "
                              f"got {values!r}")
        out[name] = array
    return out


def _per_element_bytes(plan, problem: Problem, n_workers: int) -> int:
    """A rough upper bound of what one (point, seed) costs in memory during a replay."""
    d = problem.dim
    state = 4 * d * (4 * n_workers + 4)  # worker params, inner state, pulled centre; server
    records = 4 * (plan.n_blocks + 1)
    if plan.record_paths:
        records += 4 * d * (plan.n_blocks + 1 + plan.n_events * n_workers)
    events = 0 if plan.time.shape[0] == 1 else 12 * plan.n_events
    return 2 * state + records + events


def replay_grid(
    rule: Rule,
    problem: Problem,
    traces,
    *,
    grid: Mapping[str, Sequence[float]],
    seeds: int | Sequence[int] = 0,
    noise: float = 0.0,
    init: str = "start",
    record_every: int | None = None,
    record_paths: bool = False,
    progress: bool | None = None,
    runs_per_call: int | None = None,
    config: dict | None = None,
    devices=None,
    diverged_above: float | None = DIVERGED_ABOVE,
) -> Result:
    """:func:`asynclab.replay` over a grid of traced hyperparameters: the sweep of given
    traces (one for all seeds, or one per seed, shared by every point).

    ``rule`` is a declared rule (built by a factory of :mod:`asynclab.rules`); its values
    of the grid's hyperparameters are replaced by the grid's. The other arguments are
    those of :func:`asynclab.replay` and :func:`sweep`; the result is that of
    :func:`sweep`.
    """
    if rule.structure is None:
        raise ConfigError("a grid needs a declared rule (built by a factory of "
                          "asynclab.rules)")
    info = RULES[rule.structure[0]]
    devices = replay_devices(devices)
    if not (isinstance(grid, Mapping) and all(isinstance(v, np.ndarray) for v in
                                               grid.values())):
        grid = check_grid(grid, rule.structure[0], {})
    seeds = _check_seeds(seeds)
    base = dict(rule.hyperparameters)
    for name, values in grid.items():  # concrete checks, as run() would make them
        for value in values:
            info.factory(**{**base, name: float(value)})
    # the grid's options (a momentum not given to the rule, say) are present in every point
    rule = info.factory(**{**base, **{name: float(v[0]) for name, v in grid.items()}})
    plan = _plan(rule, problem, traces, len(seeds), init, record_every, record_paths)

    # (point, seed) pairs, point-major
    shape = tuple(v.size for v in grid.values())
    points = list(itertools.product(*grid.values()))
    n_points, n_seeds = len(points), len(seeds)
    total = n_points * n_seeds
    values = {k: np.full(total, v, np.float32) for k, v in rule.values.items()}
    for j, name in enumerate(grid):
        values[name] = np.repeat(np.asarray([p[j] for p in points], np.float32), n_seeds)
    seed_of = np.tile(seeds, n_points)
    row_of = np.tile(np.arange(n_seeds) if plan.time.shape[0] > 1 else np.zeros(n_seeds, int),
                     n_points)

    if runs_per_call is None:
        per = _per_element_bytes(plan, problem, plan.n_workers)
        runs_per_call = max(1, min(total, MEMORY_BUDGET // per))
    runs_per_call = min(_validate.count(runs_per_call, "runs_per_call"), total)
    check_run_memory(rule, problem, None, plan.n_workers,
                     traces=[traces] if isinstance(traces, Trace | RoundTrace) else traces,
                     n_seeds=n_seeds, record_every=plan.record_every,
                     record_paths=plan.record_paths, points=n_points,
                     in_flight=runs_per_call)

    bar = progress_bar(total=plan.n_events * total, progress=progress,
                       desc=f"{rule.name} sweep {'x'.join(map(str, shape))}x{n_seeds}",
                       unit="event", unit_scale=True, leave=False)
    with bar:
        flat = _replay_in_calls(rule, problem, plan, seed_of, row_of, values, runs_per_call,
                                noise=noise, init=init, bar=bar, devices=devices,
                                diverged_above=check_diverged_above(diverged_above))
    # (point, seed) pairs -> grid axes, seeds; a net's parameters and metrics are dicts
    out = _Replayed(*(None if a is None else jax.tree.map(
        lambda x: x.reshape(shape + (n_seeds,) + x.shape[1:]), a) for a in flat))
    config = dict(config or run_config(rule, problem, workers=plan.n_workers, seeds=seeds,
                                       noise=noise, init=init))
    config["hyperparameters"] = {k: v for k, v in config.get("hyperparameters", {}).items()
                                 if k not in grid}
    config["grid"] = [[name, [float(x) for x in v]] for name, v in grid.items()]
    config["structure"] = list(structure_key(rule))
    return _result(plan, seeds, out, config)


# ----------------------------------------------------------------------------- scores


def scores(result: Result, score: str = "final_loss", *, target: float | None = None,
           problem: Problem | None = None) -> np.ndarray:
    """One number per grid point (shape ``result.grid_shape``) from a sweep's seeds.

    Args:
      score: ``"final_loss"``: mean final central loss over the seeds (inf if any seed
        diverged), lower is better; ``"commits_to_target"``: median over the seeds of the
        events (commits or rounds) until the recorded loss first reaches ``target`` (inf
        when it never does), lower is better; ``"success_rate"``: the fraction of seeds
        whose final loss is at most ``target`` (or, without a target, whose final centre
        passes ``problem.success``), higher is better.
        A net's scores, from its validation accuracy: ``"final_accuracy"``: the mean
        over the seeds of the centre's validation accuracy at the last record (a
        diverged seed counts 0), higher is better; ``"time_to_accuracy"``: the median
        over the seeds of the simulated seconds until the recorded accuracy first
        reaches ``target`` (inf when it never does), lower is better.
      target: the loss threshold of ``commits_to_target`` and ``success_rate``; the
        accuracy (in [0, 1]) of ``time_to_accuracy``.
      problem: for ``success_rate`` without a target.
    """
    if score not in SCORES:
        raise ConfigError(f"unknown score {score!r}; choose one of {', '.join(SCORES)}")
    if not isinstance(result, Result):
        raise ConfigError(f"scores: give a Result (of a sweep, or of a run: one point), got "
                          f"{type(result).__name__}")
    if score in ("final_accuracy", "time_to_accuracy") and result.final_accuracy is None:
        raise ConfigError(f"score {score}: this result records no validation accuracy (a "
                          "net problem's does: digits, mnist, collider)")
    if target is not None:
        accuracy = {"low": 0, "high": 1} if score == "time_to_accuracy" else {}
        target = _validate.number(target, "target", dtype=np.float32, **accuracy)
        if score in ("final_loss", "final_accuracy"):
            raise ConfigError(f"target: the score {score} takes no target (it is a mean "
                              "over the seeds); use commits_to_target, success_rate or "
                              "time_to_accuracy")
    if score == "final_accuracy":
        accuracy = np.where(result.diverged, 0.0, np.nan_to_num(result.final_accuracy, nan=0.0))
        return accuracy.mean(axis=-1)
    if score == "time_to_accuracy":
        if target is None:
            raise ConfigError("score time_to_accuracy needs a target accuracy in [0, 1]")
        seconds = result.time_to_target(target, "accuracy").seconds
        return np.median(np.asarray(seconds, np.float64), axis=-1)
    final = np.where(result.diverged, np.inf, np.nan_to_num(result.final_loss, nan=np.inf))
    if score == "final_loss":
        return final.mean(axis=-1)
    if score == "commits_to_target":
        if target is None:
            raise ConfigError("score commits_to_target needs a target loss")
        events = first_reached(result.loss, target, result.record_events,
                               higher_is_better=False)
        return np.median(np.asarray(events, np.float64), axis=-1)
    if target is not None:
        return (final <= target).mean(axis=-1)
    if problem is None:
        raise ConfigError("score success_rate needs a target loss or the problem")
    return problem.success(result.final_params).mean(axis=-1)


def best_point(result: Result, values: np.ndarray, score: str) -> dict | None:
    """The grid point with the best score: ``{name: value, ..., "score": s}``; None when
    no point has a finite score (every point diverged, or none reached the target).
    ``score`` (one of :data:`SCORES`) says which way is better."""
    if score not in SCORES:
        raise ConfigError(f"best_point: unknown score {score!r}; choose one of "
                          f"{', '.join(SCORES)}")
    if not isinstance(result, Result) or result.grid is None:
        raise ConfigError("best_point: give the result of a sweep (asynclab.sweep); a plain "
                          "run has no grid points")
    values = np.asarray(values)
    if values.shape != result.grid_shape:
        raise ConfigError(f"best_point: values of shape {values.shape} for a grid of shape "
                          f"{result.grid_shape}; give scores(result, ...)")
    higher = score in HIGHER_IS_BETTER
    if not np.isfinite(values).any():
        return None
    flat = np.where(np.isnan(values), -np.inf if higher else np.inf, values).ravel()
    index = int(np.argmax(flat) if higher else np.argmin(flat))
    where = np.unravel_index(index, values.shape)
    point = {name: float(v[i]) for (name, v), i in zip(result.grid.items(), where, strict=True)}
    score_value = float(values[where])
    return {**point, "score": score_value if math.isfinite(score_value) else None}
