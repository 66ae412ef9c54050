"""What the studies of runs to a horizon share: every seed schedules its own cluster and
trains the convex quadratic for a fixed span of simulated seconds, one run per cell of two
axes (rules or modes × a cluster setting), each cell's measures per seed stacked."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._progress import progress_bar
from ..engine import run as run_engine
from ._replayed import STUDY_DIVERGENCE


def quadratic_run(config, rule: str, cluster, **options):
    """The :class:`~asynclab.Result` of ``rule`` on ``cluster`` for every seed: the
    quadratic of ``config.dim`` and ``config.condition`` with gradient noise
    ``config.noise``, ``config.horizon`` simulated seconds, ``config.seeds`` seeds, each
    scheduling its own cluster; ``options`` go to :func:`asynclab.run`."""
    return run_engine("quadratic", rule, cluster=cluster, horizon=config.horizon,
                      seeds=list(range(config.seeds)), trace_per_seed=True,
                      noise=config.noise, progress=False,
                      problem_options={"dim": config.dim, "condition": config.condition},
                      diverged_above=STUDY_DIVERGENCE, **options)


def outcomes(result, target: float) -> dict[str, np.ndarray]:
    """Per seed: the simulated seconds until the central loss first reaches ``target``
    (∞ if never), the central loss at the horizon and whether the run diverged."""
    return {"seconds_to_target": result.time_to_target(target, metric="loss").seconds,
            "final_loss": result.loss[:, -1],
            "diverged": result.diverged}


def over_cells(rows: Sequence, columns: Sequence, one: Callable, measure: Callable, *,
               desc: str, progress=None) -> dict[str, np.ndarray]:
    """``measure(one(row, column))`` (a dict of per-seed arrays) for every cell of ``rows``
    × ``columns``, row by row under one progress bar: each measure stacked into an array
    ``(len(rows), len(columns), ...)``."""
    cells = [(row, column) for row in rows for column in columns]
    measured = [measure(one(row, column))
                for row, column in progress_bar(cells, desc=desc, unit="run",
                                                progress=progress)]
    return {name: np.stack([np.asarray(m[name]) for m in measured])
            .reshape(len(rows), len(columns), *np.shape(measured[0][name]))
            for name in measured[0]}
