"""What the cluster simulator decides: the order and timing of server interactions.

A trace carries no optimizer arithmetic. The replay engine reads it and applies a rule.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._activity import Activity
from ._availability import Failures


class Trace(NamedTuple):
    """An asynchronous schedule: one row per commit, in the order the server applied them.

    Commit ``t`` (0-based) is applied when the server clock reads ``t``. The worker that
    commits pulled the centre last when the clock read ``pulled_clock[t]``, so the
    staleness ``staleness[t] = t - pulled_clock[t]`` counts the commits by other workers
    since that pull.

    Attributes:
      time: float64 ``(T,)``, simulated seconds at which the server applied each commit.
      worker: int32 ``(T,)``, the committing worker (its group in a mixed cluster).
      pulled_clock: int32 ``(T,)``, server clock at that worker's previous pull.
      staleness: int32 ``(T,)``, ``arange(T) - pulled_clock``.
      n_workers: number of committing units: workers, or groups in a mixed cluster.
      local_steps: local steps (λ) each worker computed between two exchanges, or a
        tuple of one count per worker (per-worker windows, ``simulate_async``).
      group_size: workers per group in a mixed cluster (``worker`` then holds the group
        index), 1 otherwise.
      activity: what every worker (group) did when, an :class:`Activity`, when the
        simulator was asked to record it (``simulate_async(..., activity=True)``); None
        otherwise. Nothing in the replay reads it.
      failures: the failures the run reached (:class:`~asynclab.cluster.Failures`:
        who went down when, the server clock at its rejoin pull, the evaluations lost),
        for a cluster with :attr:`~asynclab.cluster.Cluster.availability`; None
        otherwise. The replay makes each rejoin a pull of the centre without a commit.
    """

    time: np.ndarray
    worker: np.ndarray
    pulled_clock: np.ndarray
    staleness: np.ndarray
    n_workers: int
    local_steps: int | tuple[int, ...]
    group_size: int = 1
    failures: Failures | None = None
    activity: Activity | None = None

    @property
    def n_events(self) -> int:
        return int(self.worker.shape[0])

    @property
    def duration(self) -> float:
        return float(self.time[-1]) if self.n_events else 0.0

    @property
    def windows(self) -> np.ndarray:
        """λ of each worker, ``(n_workers,)`` int64, whether one for all or one each."""
        steps = self.local_steps
        if isinstance(steps, tuple):
            return np.asarray(steps, np.int64)
        return np.full(self.n_workers, int(steps), np.int64)


class RoundTrace(NamedTuple):
    """A synchronous schedule: one row per round (all workers compute, then aggregate).

    Attributes:
      time: float64 ``(R,)``, simulated seconds at which each round's aggregate was applied.
      duration: float64 ``(R,)``, length of each round (slowest worker + communication).
      n_workers: number of workers.
      local_steps: local steps (λ) per worker per round.
      counted: bool ``(R, n)``, who counted in each semi-synchronous round
        (``simulate_sync(..., semisync=SemiSync(...))``): the workers whose commit the
        round's aggregate averages. None (the default): every worker, every round.
      late: with ``counted``, what became of the work that missed a round: ``"discard"``
        (cancelled; every worker pulled the new centre) or ``"stale"`` (it ran on and
        counted in a later round; only the workers that counted pulled). None otherwise.
      activity: what every worker did when, an :class:`Activity`
        (``simulate_sync(..., activity=True)``); None otherwise.
      failures: the failures the run reached (:class:`~asynclab.cluster.Failures`), for
        a cluster with :attr:`~asynclab.cluster.Cluster.availability`; None otherwise.
        A round waits for a worker that is down; the worker redoes its lost phase from
        the centre it had, so the replay is that of the plain rounds. Semi-synchronous
        rounds (``late="discard"``) close without it; back, it pulls the current centre,
        so the replay is that of the masked rounds (``counted``).
    """

    time: np.ndarray
    duration: np.ndarray
    n_workers: int
    local_steps: int
    counted: np.ndarray | None = None
    late: str | None = None
    failures: Failures | None = None
    activity: Activity | None = None

    @property
    def n_events(self) -> int:
        return int(self.time.shape[0])


def slow_workers(worker, n_workers: int, share: float = 0.5) -> list[int]:
    """The workers of an asynchronous trace whose commits number less than ``share`` of
    the median worker's: its stragglers, as the schedule shows them. ``worker`` is the
    trace's committing worker per event (entries < 0, synchronous rounds or padding, are
    not commits of one worker)."""
    worker = np.asarray(worker)
    worker = worker[worker >= 0]
    if worker.size == 0:
        return []
    counts = np.bincount(worker, minlength=int(n_workers))
    return [int(k) for k in np.flatnonzero(counts < share * float(np.median(counts)))]
