"""How the studies replay the schedules they make: as prepared runs.

A study makes its own schedules (stragglers placed on purpose, traces shared between
cells) and replays them with :func:`asynclab.prepare` (``traces=``) and
:func:`asynclab.run`, so that its runs are checked and recorded as every other run is (one
description, one budget guard, one config).
"""

from __future__ import annotations

from ..engine import prepare, run


def replay(rule, problem, traces, *, progress: bool | None = None, **options):
    """``run(prepare(problem, rule, traces=traces, **options))``: ``traces`` replayed with
    a built ``rule`` (one trace, or one per seed)."""
    return run(prepare(problem, rule, traces=traces, **options), progress=progress)


def replay_grid(rule, problem, traces, *, grid, progress: bool | None = None, **options):
    """:func:`replay` over a grid of the rule's traced hyperparameters (a sweep)."""
    return replay(rule, problem, traces, grid=grid, progress=progress, **options)
