"""How the studies replay the schedules they make: as prepared runs.

A study makes its own schedules (stragglers placed on purpose, traces shared between
cells) and replays them with :func:`asynclab.prepare` (``traces=``) and
:func:`asynclab.run`, so that its runs are checked and recorded as every other run is (one
description, one budget guard, one config).

A study's run diverges where its centre or loss is no longer finite
(:data:`STUDY_DIVERGENCE`, ``diverged_above=None``), not at the lab's default bound on the
loss: the studies measure growth up to overflow (the momentum and EASGD stability maps),
and their figures were made so.
"""

from __future__ import annotations

from ..engine import prepare, run

#: The studies' divergence: only a centre or a loss that is not finite
#: (``diverged_above=None``; a study may give another).
STUDY_DIVERGENCE = None


def replay(rule, problem, traces, *, progress: bool | None = None, **options):
    """``run(prepare(problem, rule, traces=traces, **options))``: ``traces`` replayed with
    a built ``rule`` (one trace, or one per seed)."""
    options.setdefault("diverged_above", STUDY_DIVERGENCE)
    return run(prepare(problem, rule, traces=traces, **options), progress=progress)


def replay_grid(rule, problem, traces, *, grid, progress: bool | None = None, **options):
    """:func:`replay` over a grid of the rule's traced hyperparameters (a sweep)."""
    return replay(rule, problem, traces, grid=grid, progress=progress, **options)
