"""Notebook 03: the model-averaging Monte Carlo on Beale, run live.

The study (:mod:`asynclab.studies.model_averaging_mc`) replays every cell's seeds and
reports at the end; here the seeds of every cell are replayed in batches, round-robin
over the cells, and the success probabilities with their Wilson intervals are handed
back after every batch, so a notebook can redraw them as the runs accumulate. Each
seed's run is set up as in the study (rule, random starts, noise, budget and success
test); seeds are independent, so the batching changes no run.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ..problems import get_problem
from ..studies.model_averaging_mc import Config, replay_cell, wilson


def cell_success(config: Config, workers: int, local_steps: int, seeds) -> np.ndarray:
    """``(S,)`` whether each seed's run of one cell ends with the central loss below
    ``config.success_loss`` (a run whose centre overflowed fails)."""
    workers = _validate.count(workers, "workers")
    local_steps = _validate.count(local_steps, "local_steps")
    steps = config.budget_for(workers)
    if steps % local_steps:
        raise ConfigError(f"local_steps: the budget {steps} is not a multiple of "
                          f"λ = {local_steps}")
    result = replay_cell(config, get_problem("beale"), workers, local_steps, steps,
                         list(seeds), records=1)
    final = result.final_loss
    return np.isfinite(final) & (final < config.success_loss)


def accumulate(config: Config, *, batch: int = 100) -> Iterator[dict]:
    """Replay ``config.runs`` seeds of every (λ, n) cell of the bar chart
    (``config.bar_local_steps`` × ``config.workers``) in batches of ``batch`` seeds,
    round-robin over the cells; yields the running data after every cell's batch.

    Yields:
      dicts with ``workers``, ``local_steps``, ``runs`` and ``success`` (``(L, N)``
      counts so far), ``probability``, ``low``, ``high`` (95 % Wilson interval; NaN for
      a cell without runs yet), ``history`` (per cell a list of ``(runs, p, low, high)``
      after each of its batches), ``done`` (runs so far / runs planned) and the run
      settings (``learning_rate``, ``noise``, ``success_loss``).
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"batch must be an integer >= 1, got {batch!r}")
    workers = [int(n) for n in config.workers]
    lams = [int(v) for v in config.bar_local_steps]
    shape = (len(lams), len(workers))
    success = np.zeros(shape, np.int64)
    runs = np.zeros(shape, np.int64)
    history = {(lam, n): [] for lam in lams for n in workers}
    total = config.runs * len(lams) * len(workers)
    for start in range(0, config.runs, batch):
        seeds = range(start, min(start + batch, config.runs))
        for i, lam in enumerate(lams):
            for j, n in enumerate(workers):
                ok = cell_success(config, n, lam, seeds)
                success[i, j] += int(ok.sum())
                runs[i, j] += ok.size
                p = success[i, j] / runs[i, j]
                low, high = wilson(success[i, j], runs[i, j])
                history[(lam, n)].append((int(runs[i, j]), p, float(low), float(high)))
                yield _snapshot(config, workers, lams, success, runs, history, total)


def _snapshot(config, workers, lams, success, runs, history, total) -> dict:
    with np.errstate(invalid="ignore", divide="ignore"):
        probability = np.where(runs > 0, success / np.maximum(runs, 1), np.nan)
        low, high = wilson(success, np.maximum(runs, 1))
    empty = runs == 0
    return {
        "workers": np.array(workers),
        "local_steps": np.array(lams),
        "runs": runs.copy(),
        "success": success.copy(),
        "probability": probability,
        "low": np.where(empty, np.nan, low),
        "high": np.where(empty, np.nan, high),
        "history": {cell: list(rows) for cell, rows in history.items()},
        "done": float(runs.sum()) / total,
        "learning_rate": config.learning_rate,
        "noise": config.noise,
        "success_loss": config.success_loss,
    }
