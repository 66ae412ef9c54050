"""The description of a run that :func:`~asynclab.prepare` makes and every executor reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..cluster import Cluster, SemiSync
from ..problems import Problem
from ..rules import Rule

#: How a spec's run is executed: the simulator's replay, one worker per device, or
#: free-running threads.
BACKENDS = ("sim", "pmap", "threads")


@dataclasses.dataclass(frozen=True, eq=False)
class RunSpec:
    """An immutable description of a run: what :func:`prepare` made of its arguments.

    Every field is checked and every default filled; an executor reads the fields and
    decides nothing of its own. Make one with :func:`prepare`, never by hand.

    Attributes:
      problem: the :class:`~asynclab.problems.Problem` (a data problem sharded for the
        run's workers, with the run's fixed start).
      rule: the built :class:`~asynclab.rules.Rule` (its learning rate, λ and groups).
      cluster: the :class:`~asynclab.cluster.Cluster` the schedules are simulated on, or
        None when the schedules are given (``traces``) or measured (``backend="threads"``).
      commits, horizon: the budget, one of them None (both None with ``traces``).
      seeds: the seeds, integers in [0, 2³²).
      noise: σ², the variance of the additive Gaussian gradient noise.
      init: ``"start"``, ``"random"`` or ``"random_per_worker"``.
      trace_per_seed: one schedule per seed (else the first seed's for every seed).
      semisync: semi-synchronous rounds (:class:`~asynclab.cluster.SemiSync`), or None.
      record_every: events between two records, or None for the replay's default.
      record_paths: record trajectories (None: for problems of dimension <= 2).
      backend: ``"sim"`` (the replay), ``"pmap"`` (one worker per device) or
        ``"threads"`` (free-running threads).
      devices: the devices: those the seeds are split over (``"sim"``), or one per
        committing unit (``"pmap"``, ``"threads"``).
      runs_per_call: seeds (or (point, seed) pairs) replayed per compiled call, or None.
      grid: a sweep's grid, ``{name: float64 array}``, or None for a plain run.
      traces: the schedules given to replay, or None (simulated from ``cluster``).
      diverged_above: the divergence bound (a multiple of max(1, |initial loss|)), or
        None for only non-finite losses.
      simulator: what makes the schedules: ``"auto"``, ``"simpy"`` or ``"arrays"``
        (:data:`~asynclab.cluster.SIMULATORS`).
      unroll: events per iteration of the replay's compiled loop, or None (1).
      stepwise: a synchronous rule's rounds are replayed one local step per event.
      pad_workers: the length of a synchronous replay's padded worker axis, or None.
      config: what the result records of the configuration (read-only).
    """

    problem: Problem
    rule: Rule
    cluster: Cluster | None
    commits: int | None
    horizon: float | None
    seeds: tuple[int, ...]
    noise: float
    init: str
    trace_per_seed: bool
    semisync: SemiSync | None
    record_every: int | None
    record_paths: bool | None
    backend: str
    devices: tuple
    runs_per_call: int | None
    grid: Mapping[str, np.ndarray] | None
    traces: tuple | None
    diverged_above: float | None
    simulator: str
    config: Mapping
    unroll: int | None = None
    stepwise: bool = False
    pad_workers: int | None = None

    @property
    def workers(self) -> int:
        """The run's number of workers."""
        return int(self.config["workers"])

    @property
    def points(self) -> int:
        """The grid's number of points (1 for a plain run)."""
        return 1 if self.grid is None else int(np.prod([v.size for v in self.grid.values()]))
