"""What the cluster simulator decides: the order and timing of server interactions.

A trace carries no optimizer arithmetic. The replay engine reads it and applies a rule.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._activity import Activity
from ._availability import Failures
from ._rounds import round_staleness

#: The kinds of events a trace holds (``trace.kind``): what an executor must do at each.
#: Asynchronous commits, one worker each (windows one for all or one per worker):
COMMITS = "commits"
#: ...with rejoin pulls between them (workers back from a failure pull the centre):
REJOINS = "commits+rejoins"
#: Synchronous rounds in which every worker counts:
ROUNDS = "rounds"
#: Semi-synchronous rounds, who counted per round; late work discarded:
ROUNDS_DISCARD = "rounds+discard"
#: ...late work counted, stale, in a later round:
ROUNDS_STALE = "rounds+stale"
#: Every kind, in that order.
TRACE_KINDS = (COMMITS, REJOINS, ROUNDS, ROUNDS_DISCARD, ROUNDS_STALE)


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
      simulator: what made the schedule: ``"simpy"`` (the reference simulator),
        ``"arrays"`` (the array-speed generator, the same trace for the same seed), or
        None (made otherwise: an order, a log).
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
    simulator: str | None = None

    @property
    def n_events(self) -> int:
        return int(self.worker.shape[0])

    @property
    def kind(self) -> str:
        """:data:`REJOINS` where a worker comes back from a failure and pulls the centre
        between two commits, else :data:`COMMITS` (a rejoin at clock 0 is the worker's
        initial state, one after the last commit changes no commit)."""
        return REJOINS if rejoin_events(self)[0].size else COMMITS

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
      staleness: (a property, from ``counted`` and ``late``) int32 ``(R, n)``, the
        staleness of each worker's counted commit per round, -1 where it did not count.
      failures: the failures the run reached (:class:`~asynclab.cluster.Failures`), for
        a cluster with :attr:`~asynclab.cluster.Cluster.availability`; None otherwise.
        A round waits for a worker that is down; the worker redoes its lost phase from
        the centre it had, so the replay is that of the plain rounds. Semi-synchronous
        rounds (``late="discard"``) close without it; back, it pulls the current centre,
        so the replay is that of the masked rounds (``counted``).
      simulator: what made the schedule, as :attr:`Trace.simulator`.
    """

    time: np.ndarray
    duration: np.ndarray
    n_workers: int
    local_steps: int
    counted: np.ndarray | None = None
    late: str | None = None
    failures: Failures | None = None
    activity: Activity | None = None
    simulator: str | None = None

    @property
    def n_events(self) -> int:
        return int(self.time.shape[0])

    @property
    def kind(self) -> str:
        """:data:`ROUNDS`, or for semi-synchronous rounds (``counted``)
        :data:`ROUNDS_DISCARD` or :data:`ROUNDS_STALE` by what became of late work."""
        if self.counted is None:
            return ROUNDS
        return ROUNDS_STALE if self.late == "stale" else ROUNDS_DISCARD

    @property
    def staleness(self) -> np.ndarray:
        """int32 ``(R, n)``: the staleness of each worker's commit counted in each round,
        the rounds applied since the worker pulled the centre it computed from; -1 where
        it did not count. 0 wherever counted for plain rounds and ``late="discard"``;
        with ``late="stale"`` a late commit is stale by the rounds it missed. Follows
        from ``counted`` and ``late`` ;
        the replay reads ``counted``, not this."""
        return round_staleness(self.counted, self.late, self.n_events, self.n_workers)


def rejoin_events(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """``(after, worker)``: the rejoin pulls an executor replays, each right after commit
    ``after`` (0-based) by ``worker``; empty where the trace has none."""
    f = trace.failures
    if f is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keep = (f.clock >= 1) & (f.clock < trace.n_events)
    return np.asarray(f.clock[keep] - 1, np.int64), np.asarray(f.worker[keep], np.int64)


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
