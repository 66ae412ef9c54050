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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .. import _validate
from .._errors import ConfigError  # noqa: E402
from ..plot._common import finish, series_colors  # noqa: E402
from ..plot.model_averaging_mc import probability_bars  # noqa: E402
from ..problems import get_problem  # noqa: E402
from ..studies.model_averaging_mc import Config, replay_cell, wilson  # noqa: E402


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


def plot_running_probability(data: dict, path=None):
    """Left: P(success) against n for each λ with its 95 % Wilson interval, as far as
    the runs have come. Right: every cell's estimate and interval against the number of
    runs, narrowing as they accumulate."""
    workers = data["workers"]
    lams = [int(v) for v in data["local_steps"]]
    fig, (ax, rx) = plt.subplots(1, 2, figsize=(13, 4.6))
    high = np.nan_to_num(data["high"])
    positions = probability_bars(ax, workers, lams, np.nan_to_num(data["probability"]),
                                 np.nan_to_num(data["low"]), high,
                                 [f"λ = {lam}" for lam in lams])
    for i, x in enumerate(positions):
        for k, n in enumerate(x):
            ax.annotate(f"{int(data['runs'][i, k])}", (n, min(high[i, k] + 0.02, 0.95)),
                        ha="center", fontsize=7)
    ax.set_ylabel(f"P(central loss < {data['success_loss']:g} at the end)")
    ax.set_title(f"{100 * data['done']:.0f} % of the runs done (runs per bar above it), "
                 "95 % Wilson intervals", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    cells = list(data["history"])
    line_colors = series_colors(len(cells))
    for (lam, n), color in zip(cells, line_colors, strict=True):
        rows = np.array(data["history"][(lam, n)], float).reshape(-1, 4)
        if rows.size == 0:
            continue
        rx.plot(rows[:, 0], rows[:, 1], "o-", color=color, ms=3, label=f"n = {n}, λ = {lam}")
        rx.fill_between(rows[:, 0], rows[:, 2], rows[:, 3], color=color, alpha=0.15)
    rx.set_ylim(0, 1)
    rx.set_xlabel("runs so far")
    rx.set_ylabel("P(success) and its 95 % interval")
    rx.set_title("the intervals narrow as 1/√runs", fontsize=10)
    rx.legend(fontsize=7, ncol=2, loc="lower right")
    return finish(fig, path, f"Model averaging on Beale, η = {data['learning_rate']:g}, "
                             f"σ² = {data['noise']:g}", fontsize=11)
