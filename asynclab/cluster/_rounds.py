"""Semi-synchronous rounds: a round that closes before every worker is in.

Three ways to close a round, all of a :class:`SemiSync` given to
:func:`~asynclab.cluster.simulate_sync`:

- ``quorum=K``: when the K-th commit of the round reaches the server (K of n);
- ``backup=b``: the cluster's n + b workers all start and the first n commits close the
  round (backup workers, Chen et al. 2016) — the same as ``quorum = workers − b``;
- ``window=T`` (with ``min_count=m`` and ``deadline=D``): T seconds after the round
  opened if at least m commits are in, else when the m-th arrives, but no later than D
  seconds after it opened, with whoever is in then (possibly nobody).

A quorum (or backup workers) takes a deadline too: the round closes at its K-th commit
or D seconds after it opened, whichever comes first. ``deadline="adaptive"`` sets D
for each round from the arrival delays of the commits that counted in the last h rounds:
D = mean + c·std (:meth:`SemiSync.adaptive_deadline`).

What happens to the work that misses the round (``late``): ``"discard"`` cancels it (every
worker pulls the new centre and starts the next round from it); ``"stale"`` lets it run
on, and a commit counts in the round that is open when it arrives (with the staleness of
the rounds it missed); only the workers that counted pull.

The simulator processes here schedule and record; they do no optimizer arithmetic. The
round trace records who counted in every round (``RoundTrace.counted``); the replay
averages over those (:mod:`asynclab.engine`). ``RoundTrace.staleness`` follows from who
counted and what became of late work (:func:`round_staleness`).
"""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np
import simpy

from .. import _names, _validate
from .._errors import ConfigError
from ._process import Outage, run_until, served, stuck_cause, worker

#: what becomes of the work that misses a round (:attr:`SemiSync.late`)
LATE = _names.LATE


@dataclasses.dataclass(frozen=True)
class SemiSync:
    """How a semi-synchronous round closes, and what becomes of the work that misses it.

    Give exactly one of ``quorum``, ``backup`` or ``window``.

    Attributes:
      quorum: K >= 1: the round's aggregate is applied when its K-th commit arrives
        (K <= the cluster's workers; K = n is the plain synchronous round).
      backup: b >= 0 backup workers: a cluster of n + b workers whose rounds take the
        first n commits (``quorum = workers − b``; b = 0 is the plain round).
      late: ``"discard"`` (default): the late workers' work is cancelled when the round
        closes, and every worker pulls the new centre; ``"stale"``: the late workers
        keep computing from the centre they last pulled, their commit counts in the
        round open when it arrives, and only the workers that counted pull.
      window: T > 0 seconds: the round closes T seconds after it opened (the previous
        round's aggregate; the run's start for the first) if ``min_count`` commits are
        in, else when the ``min_count``-th arrives...
      min_count: m >= 1 (default 1), at most the cluster's workers;
      deadline: ...but at the latest D >= T seconds after it opened (default: no
        deadline), with whoever is in then. A round nobody made leaves the centre as it
        is. With a quorum (or backups): D > 0 seconds, the round closes at its K-th
        commit or D seconds after it opened, whichever comes first; or ``"adaptive"``:
        each round's D is :meth:`adaptive_deadline` of the arrival delays of the commits
        that counted in the last ``deadline_history`` rounds.
      deadline_history: h >= 1 (default 5), with ``deadline="adaptive"``: the rounds
        whose arrival delays set the next deadline.
      deadline_spread: c >= 0 (default 2.0), with ``deadline="adaptive"``: the deadline
        is the delays' mean plus c standard deviations.

    Example:
      >>> trace = simulate_sync(Cluster(workers=8, compute=ComputeTime("exponential")),
      ...                       rounds=100, semisync=SemiSync(quorum=6))
      >>> trace.counted.sum(axis=1)  # six workers counted in every round
      >>> SemiSync(quorum=8, deadline="adaptive", deadline_spread=1.0)  # cut stragglers
    """

    quorum: int | None = None
    backup: int | None = None
    late: str = "discard"
    window: float | None = None
    min_count: int | None = None
    deadline: float | str | None = None
    deadline_history: int | None = None
    deadline_spread: float | None = None

    def __post_init__(self):
        given = [name for name in ("quorum", "backup", "window")
                 if getattr(self, name) is not None]
        if len(given) != 1:
            raise ConfigError("SemiSync: give exactly one of quorum, backup or window, got "
                              + (", ".join(given) if given else "none"))
        if self.quorum is not None:
            object.__setattr__(self, "quorum", _validate.count(self.quorum, "SemiSync.quorum"))
        if self.backup is not None:
            object.__setattr__(self, "backup",
                               _validate.count(self.backup, "SemiSync.backup", low=0))
        if not isinstance(self.late, str) or self.late not in LATE:
            raise ConfigError(f"SemiSync.late must be one of {', '.join(LATE)}, "
                              f"got {self.late!r}")
        self._check_adaptive()
        if self.window is None:
            if self.min_count is not None:
                raise ConfigError("SemiSync.min_count goes with a time window; give window=T "
                                  "too")
            if self.deadline is not None and not self.adaptive:
                object.__setattr__(self, "deadline", _validate.number(
                    self.deadline, "SemiSync.deadline", low=0, low_open=True,
                    allow_inf=True))
            return
        if self.adaptive:
            raise ConfigError("SemiSync.deadline='adaptive' goes with a quorum or backup "
                              "workers; a time window takes a deadline in seconds")
        window = _validate.number(self.window, "SemiSync.window", low=0, low_open=True)
        object.__setattr__(self, "window", window)
        m = 1 if self.min_count is None else _validate.count(self.min_count,
                                                                 "SemiSync.min_count")
        object.__setattr__(self, "min_count", m)
        if self.deadline is not None:
            deadline = _validate.number(self.deadline, "SemiSync.deadline", low=0,
                                        allow_inf=True)
            if deadline < window:
                raise ConfigError(f"SemiSync.deadline ({deadline:g}) must be at least the "
                                  f"window ({window:g})")
            object.__setattr__(self, "deadline", deadline)

    def _check_adaptive(self) -> None:
        """``deadline="adaptive"`` and its two fields (their defaults set), or neither."""
        if isinstance(self.deadline, str) and self.deadline != "adaptive":
            raise ConfigError("SemiSync.deadline must be a number of seconds or 'adaptive', "
                              f"got {self.deadline!r}")
        if not self.adaptive:
            for name in ("deadline_history", "deadline_spread"):
                if getattr(self, name) is not None:
                    raise ConfigError(f"SemiSync.{name} goes with deadline='adaptive'")
            return
        history = 5 if self.deadline_history is None else self.deadline_history
        spread = 2.0 if self.deadline_spread is None else self.deadline_spread
        object.__setattr__(self, "deadline_history",
                           _validate.count(history, "SemiSync.deadline_history"))
        object.__setattr__(self, "deadline_spread",
                           _validate.number(spread, "SemiSync.deadline_spread", low=0))

    @property
    def adaptive(self) -> bool:
        """Whether each round's deadline is set from recent arrivals
        (``deadline="adaptive"``)."""
        return isinstance(self.deadline, str)

    def adaptive_deadline(self, delays) -> float:
        """The adaptive deadline of a round, in seconds after it opens.

        D = mean(d) + c · std(d) over ``delays`` d, the arrival delays (a commit's arrival
        at the server minus the opening of the round it counted in) of the commits that
        counted in the last ``deadline_history`` rounds; std is the population standard
        deviation (ddof = 0) and c is ``deadline_spread``. With no delays (the first
        round, or recent rounds that nobody made) there is no deadline: ``inf``.
        """
        delays = np.asarray(delays, np.float64)
        if delays.size == 0:
            return math.inf
        return float(delays.mean() + self.deadline_spread * delays.std())

    def quorum_of(self, workers: int) -> int | None:
        """The round's quorum K on a cluster of ``workers`` (None for a time window),
        checked against it: a ConfigError naming the field if it does not fit."""
        if self.window is not None:
            if self.min_count > workers:
                raise ConfigError(f"SemiSync.min_count={self.min_count} is more than the "
                                  f"cluster's {workers} workers")
            return None
        if self.backup is not None:
            if self.backup >= workers:
                raise ConfigError(f"SemiSync.backup={self.backup} leaves no worker to wait "
                                  f"for on a cluster of {workers} (workers counts the "
                                  "backups: n + b)")
            return workers - self.backup
        if self.quorum > workers:
            raise ConfigError(f"SemiSync.quorum={self.quorum} is more than the cluster's "
                              f"{workers} workers")
        return self.quorum

    @property
    def stale(self) -> bool:
        """Whether late work counts in a later round (``late="stale"``)."""
        return self.late == "stale"


def round_staleness(counted, late: str | None, rounds: int, workers: int) -> np.ndarray:
    """int32 ``(rounds, workers)``: the staleness of each worker's commit counted in each
    round, the rounds applied between the worker's pull of the centre it computed from and
    the round its commit counts in; -1 where the worker did not count.

    ``counted`` None (plain rounds): every worker counts, stale by 0. ``late="discard"``:
    every worker pulls the new centre after every round and works for the round then open,
    so a counted commit is stale by 0. ``late="stale"``: a worker pulls only after a round
    it counted in, so a commit counted in round r by a worker whose previous counted round
    was p (−1: none, it computed from the initial centre) is stale by r − p − 1, the rounds
    it missed.
    """
    if counted is None:
        return np.zeros((rounds, workers), np.int32)
    counted = np.asarray(counted, bool)
    if late != "stale":
        return np.where(counted, 0, -1).astype(np.int32)
    index = np.arange(counted.shape[0])[:, None]
    mine = np.where(counted, index, -1)  # the round of each counted commit
    before = np.vstack([np.full((1, counted.shape[1]), -1), mine[:-1]])
    previous = np.maximum.accumulate(before, axis=0)  # the last round counted before r
    return np.where(counted, index - previous - 1, -1).astype(np.int32)


def check_semisync(semisync) -> SemiSync | None:
    """``semisync`` if it is None or a :class:`SemiSync`, else a ConfigError."""
    if semisync is not None and not isinstance(semisync, SemiSync):
        raise ConfigError(f"semisync must be an asynclab.cluster.SemiSync, got {semisync!r}")
    return semisync


class _Open:
    """A round being gathered: who counted so far, and the event of its aggregate."""

    __slots__ = ("counted", "arrived", "opened", "closed", "window_over", "result")

    def __init__(self, env):
        self.counted = []
        self.arrived = []
        self.opened = env.now
        self.closed = False
        self.window_over = False
        self.result = env.event()


@dataclasses.dataclass(eq=False)
class _Rounds:
    """The server's side of semi-synchronous rounds: it counts arrivals, closes rounds
    and records them (time, duration, who counted)."""

    env: simpy.Environment
    quorum: int | None  # K; None: a round closes by its window
    min_count: int | None  # m of a window
    down: float  # seconds for the aggregate to reach the workers
    limit: float  # rounds at the most
    horizon: float  # simulated seconds: a round that closes after it ends the run
    stop: simpy.Event  # succeeds when the run ends

    def __post_init__(self):
        self.current = _Open(self.env)
        self.time, self.duration, self.counted = [], [], []
        self.filled = 0  # rounds someone counted in: the run's progress
        self._end = 0.0

    def arrive(self, rnd: _Open, worker: int) -> None:
        """A commit reaches the server in round ``rnd``; it may close the round."""
        rnd.counted.append(worker)
        rnd.arrived.append(self.env.now)
        if self.quorum is not None:
            if len(rnd.counted) == self.quorum:
                self.close(rnd)
        elif rnd.window_over and len(rnd.counted) >= self.min_count:
            self.close(rnd)

    def close(self, rnd: _Open) -> None:
        """Apply round ``rnd``'s aggregate now (or end the run if the budget is spent)."""
        now = self.env.now
        rnd.closed = True
        if len(self.time) >= self.limit or now > self.horizon:
            if not self.stop.triggered:
                self.stop.succeed()
            return
        end = now + self.down
        self.time.append(now)
        self.duration.append(end - self._end)
        self.counted.append(rnd.counted)
        self.filled += bool(rnd.counted)
        self._end = end
        self.current = _Open(self.env)
        rnd.result.succeed()


def _window_server(env, rounds: _Rounds, window: float, deadline: float):
    """Closes each round at its window, or later at its m-th commit or its deadline."""
    while not rounds.stop.triggered:
        rnd = rounds.current
        yield env.timeout(window)
        if len(rnd.counted) >= rounds.min_count:
            rounds.close(rnd)
            continue
        rnd.window_over = True
        if math.isinf(deadline):
            yield rnd.result
            continue
        yield rnd.result | env.timeout(deadline - window)
        if not rnd.closed:
            rounds.close(rnd)


def _deadline_server(env, rounds: _Rounds, semisync: SemiSync):
    """Closes a quorum's round at its deadline if its K-th commit has not closed it: a
    fixed one, or (adaptive) one set from the last rounds' arrival delays."""
    recent = collections.deque(maxlen=semisync.deadline_history or 1)
    while not rounds.stop.triggered:
        rnd = rounds.current
        if semisync.adaptive:
            deadline = semisync.adaptive_deadline(
                [t - r.opened for r in recent for t in r.arrived])
        else:
            deadline = semisync.deadline
        if math.isinf(deadline):
            yield rnd.result
        else:
            yield rnd.result | env.timeout(deadline)
            if not rnd.closed:
                rounds.close(rnd)
        recent.append(rnd)


class _Stale:
    """The exchange step of a worker whose late work counts stale: its commit counts in
    the round open when it reaches the server (queued and served, where the server takes
    time), then it waits for that round's aggregate."""

    __slots__ = ("env", "worker", "server", "service", "rounds", "rows")

    def __init__(self, env, worker, server, service, rounds: _Rounds, rows=None):
        self.env, self.worker, self.server, self.service = env, worker, server, service
        self.rounds, self.rows = rounds, rows

    def race(self):
        return None

    def rejoin(self) -> int:  # failures with late="stale" are refused before any work
        raise AssertionError("a stale-mode worker never fails")

    def step(self, delay: float):
        env, row = self.env, None
        if self.rows is not None:
            row = [env.now, env.now + delay, math.nan, math.nan, math.inf]
            self.rows.append(row)
        yield env.timeout(delay)
        if self.server is not None:
            req = yield from served(env, self.server, self.service, row, wait_granted=True)
            self.server.release(req)
        elif row is not None:
            row[2] = env.now
        yield from _count(env, self.worker, self.rounds.current, self.rounds, row)
        return False


class _Discard:
    """The exchange step of a worker whose late work is discarded: it works for the round
    open when its phase starts, and when that round closes first its work is cancelled
    wherever it is (:func:`_discard_exchange`); it then starts a new phase at once, the
    reply with the new centre travelling first, as after any round. A failure races with
    the round's close (:meth:`race`): a round that closes first cancels the phase rather
    than the failure losing it, and a worker back from a failure pulls the current centre
    and works for the round then open."""

    __slots__ = ("env", "worker", "server", "service", "rounds", "rows")

    def __init__(self, env, worker, server, service, rounds: _Rounds, rows=None):
        self.env, self.worker, self.server, self.service = env, worker, server, service
        self.rounds, self.rows = rounds, rows

    def race(self):
        mine = self.rounds.current
        return mine.result, lambda: mine.closed

    def rejoin(self) -> int:
        return len(self.rounds.time)  # rounds applied when it pulls again

    def step(self, delay: float):
        env, row = self.env, None
        mine = self.rounds.current
        if self.rows is not None:
            row = [env.now, env.now + delay, math.nan, math.nan, math.inf]
            self.rows.append(row)
        yield from _discard_exchange(env, self.worker, delay, mine, self.server,
                                     self.service, self.rounds, row)
        return False


def _count(env, worker, mine, rounds: _Rounds, row):
    """A commit reaches the server and counts in round ``mine``; the worker waits for the
    round's result (``row``: its activity row, or None)."""
    if row is not None:
        row[3] = env.now
    rounds.arrive(mine, worker)
    yield mine.result
    if row is not None:
        row[4] = env.now


def _discard_exchange(env, worker, delay, mine, server, service, rounds: _Rounds, row):
    """One exchange of a discard-mode worker for round ``mine``: ``delay`` seconds of
    compute and link, the server's queue and service (``service()`` seconds), then
    :func:`_count` — unless the round closes first, which cancels the work wherever it is
    (the activity ``row`` then gets a sixth entry, the time it was cut)."""
    timeout = env.timeout
    yield timeout(delay) | mine.result
    if not mine.closed and server is not None:
        req = server.request()
        yield req | mine.result
        if mine.closed:
            if req.triggered:
                server.release(req)
            else:
                req.cancel()
        else:
            if row is not None:
                row[2] = env.now
            yield timeout(service()) | mine.result
            server.release(req)
    elif not mine.closed and row is not None:
        row[2] = env.now
    if mine.closed:  # the round closed first: this work is cancelled
        if row is not None:
            row.append(env.now)
        return
    yield from _count(env, worker, mine, rounds, row)


def simulate_rounds(streams, cluster, semisync: SemiSync, limit, horizon, recorder=None,
                    service=None, failing=None, local_steps: int = 1):
    """Run the semi-synchronous simulation of ``streams`` (one per worker) until ``limit``
    rounds or the first aggregate after ``horizon``; ``recorder`` (an activity
    :class:`~asynclab.cluster._activity.Recorder`, or None) receives every exchange.
    ``service``: a callable giving the server's next service time, or None for a server
    that takes no time (``asynclab.cluster._streams.service``). ``failing``: None, or
    ``(outages, steps, failed)`` for a discard-mode run with failures: one outage
    iterator per worker (:meth:`~asynclab.cluster.Availability.intervals`), the local
    steps of a phase (``local_steps``, also for the message of a run that cannot progress)
    and a list that receives the failure rows (an
    :class:`~asynclab.cluster._process.Outage` step per worker).

    Returns:
      ``(time, duration, counted)``: float64 ``(R,)``, float64 ``(R,)``, bool ``(R, n)``.
    """
    n = cluster.workers
    quorum = semisync.quorum_of(n)
    env = simpy.Environment()
    stop = env.event()
    rounds = _Rounds(env, quorum, semisync.min_count, cluster.transfer_time, limit, horizon,
                     stop)
    server = None if service is None else simpy.Resource(env, capacity=1)
    step = _Stale if semisync.stale else _Discard
    for k, stream in enumerate(streams):
        rows = None if recorder is None else recorder.rows[k]
        outage = None
        if failing is not None:
            outages, steps, failed = failing
            outage = Outage(k, outages[k], steps, failed,
                            None if recorder is None else recorder.failed[k], rows)
        env.process(worker(env, stream.next_block, cluster.transfer_time,
                           step(env, k, server, service, rounds, rows), stop, outage))
    if quorum is None:
        deadline = math.inf if semisync.deadline is None else semisync.deadline
        env.process(_window_server(env, rounds, semisync.window, deadline))
    elif semisync.deadline is not None and not (
            not semisync.adaptive and math.isinf(semisync.deadline)):
        env.process(_deadline_server(env, rounds, semisync))
    # with failures too many workers may go down for good: no round closes again
    fixed = semisync.deadline if isinstance(semisync.deadline, float) else None
    run_until(env, stop, may_stall=failing is not None, progress=lambda: rounds.filled,
              workers=n, cause=lambda: stuck_cause(cluster, local_steps, fixed))
    counted = np.zeros((len(rounds.time), n), bool)
    for r, members in enumerate(rounds.counted):
        counted[r, members] = True
    return (np.array(rounds.time, dtype=np.float64), np.array(rounds.duration, np.float64),
            counted)
