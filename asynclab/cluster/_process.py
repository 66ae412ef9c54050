"""The one SimPy worker process of every simulator, its pluggable steps, and the run loop
that always ends.

A worker (or a compute group) is one process, :func:`worker`: it takes its compute phases
from its stream, and after each phase delegates to its schedule's *exchange step* (SimPy's
idiom: a sub-generator the process ``yield from``-s): an asynchronous commit-and-pull
(``asynclab.cluster._simulator``), a synchronous round's barrier (``_sync``), a
semi-synchronous round's count (``_rounds``). Before a phase, an optional *outage step*
(:class:`Outage`) takes the worker down when a failure cuts the phase. The server's queue
and service are a step of their own (:func:`served`). A process only schedules events and
records; it never does optimizer arithmetic.

:func:`run_until` runs the simulation and stops it with a :class:`~asynclab.ConfigError`
naming the cause when it cannot progress: no event left before the budget is reached
(every worker down for good), simulated time standing still, or no progress (a commit, or
a round someone counted in) within :func:`patience` simulator events.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from simpy.core import EmptySchedule, StopSimulation

from .._errors import ConfigError

NAN = math.nan


class Log:
    """What the server records, appended during the run and converted once at the end."""

    __slots__ = ("time", "worker", "pulled_clock", "clock", "duration")

    def __init__(self):
        self.time = []
        self.worker = []
        self.pulled_clock = []
        self.duration = []
        self.clock = 0


def worker(env, next_block, down, exchange, stop, outage=None):
    """One worker (or compute group) of every simulator.

    Its compute phases come from ``next_block`` (the timeouts of a block of phases, each
    with its links, see ``asynclab.cluster._streams``); after each phase it delegates to
    ``exchange.step(delay)`` (a sub-generator; True when the run has ended for this
    worker), and before one, where the worker's next failure cuts it, to
    ``outage.down(...)`` (:class:`Outage`). When the stream has no more steps (a log that
    ends) the run ends (``stop``). ``down``: the reply's link time before a block's first
    phase.
    """
    step = exchange.step
    delays = next_block(0.0)
    while delays:
        for delay in delays:
            if outage is not None and outage.at < env.now + delay:
                if (yield from outage.down(env, delay, exchange)):
                    continue
                return  # down for good
            if (yield from step(delay)):
                return
        delays = next_block(env.now + down)
    if not stop.triggered:  # the worker's timing model ran out of steps
        stop.succeed()


def served(env, server, service, row, wait_granted: bool = False):
    """The server's step: the commit queues at ``server`` (a ``simpy.Resource`` of
    capacity 1, first come first served) and is served for ``service()`` seconds; returns
    the request, which the caller releases once the commit is applied.

    ``wait_granted``: wait for a request granted at once too (a synchronous round's
    worker does); otherwise a granted request goes on without a resume. ``row`` (or None)
    receives the time service starts.
    """
    req = server.request()
    if wait_granted or not req.triggered:
        yield req
    if row is not None:
        row[2] = env.now
    yield env.timeout(service())
    return req


class Outage:
    """A worker's failures (:class:`~asynclab.cluster.Availability`): the outage step of
    its process.

    ``intervals`` yields the worker's ``(down_at, up_at)`` in time order. When the next
    outage starts before the worker's commit reaches the server, the phase's work is lost
    (its ``steps`` gradient evaluations count as lost when the phase had begun): a row of
    ``failed`` ``[worker, down, up, clock at the rejoin pull, lost]``. The worker is down
    until the outage ends, then pulls the centre (``exchange.rejoin()`` says the clock it
    pulls at) and starts a new phase. A worker whose outage never ends stops.
    ``downtime`` (a list, or None) receives the ``(down, up)`` intervals and ``rows`` (or
    None) the cut phase, for the activity record.
    """

    __slots__ = ("worker", "_intervals", "steps", "failed", "downtime", "rows", "at", "_up")

    def __init__(self, worker: int, intervals, steps: int, failed: list, downtime=None,
                 rows=None):
        self.worker, self._intervals, self.steps = worker, intervals, steps
        self.failed, self.downtime, self.rows = failed, downtime, rows
        self._next()

    def _next(self) -> None:
        following = next(self._intervals, None)
        self.at, self._up = (math.inf, math.inf) if following is None else following

    def down(self, env, delay: float, exchange):
        """The worker goes down in its next phase (``delay`` seconds): True when it is
        back (or, where ``exchange.race()`` gives the round that closes first, when the
        phase was cancelled before the failure), False when it is down for good."""
        start = env.now
        down_at, up_at = self.at, self._up
        cut = max(down_at, start)
        race = exchange.race()
        rows = self.rows
        if race is None:
            if rows is not None:
                rows.append([start, start + delay, NAN, NAN, NAN, cut])
            if cut > start:
                yield env.timeout(cut - start)
        else:  # a semi-synchronous round may close before the failure: cancelled, not lost
            closes, closed = race
            if cut > start:
                yield env.timeout(cut - start) | closes
            if closed():
                if rows is not None:
                    rows.append([start, start + delay, NAN, NAN, math.inf, env.now])
                return True
            if rows is not None:
                rows.append([start, start + delay, NAN, NAN, NAN, cut])
        entry = [self.worker, cut, max(up_at, cut), -1, self.steps if down_at >= start else 0]
        self.failed.append(entry)
        if self.downtime is not None:
            self.downtime.append((cut, entry[2]))
        if math.isinf(up_at):
            return False
        if up_at > env.now:
            yield env.timeout(up_at - env.now)
        entry[3] = exchange.rejoin()  # the rejoin pull
        self._next()
        return True


def stuck_cause(cluster, local_steps: int, deadline: float | None = None) -> str:
    """What in a timing model keeps a run from progressing, where it is plain: failures
    that come faster than a phase, or a round's deadline shorter than any phase."""
    phase = local_steps * cluster.compute.mean_step() * min(cluster.scales)
    available = cluster.availability
    if available is not None and available.random and available.mtbf < phase:
        return (f"each worker fails every {available.mtbf:.3g} s on average (mtbf), before "
                f"a phase of λ × mean step time ≈ {phase:.3g} s can end")
    if deadline is not None and deadline < phase:
        return (f"the rounds' deadline {deadline:.3g} s is shorter than the fastest "
                f"worker's phase ≈ {phase:.3g} s, so they close with nobody in")
    return ""


#: Simulator events without progress after which a run is stopped, at the least.
PATIENCE = 10**6

#: Events processed between two checks of the run's progress.
_CHECK = 4096


def patience(workers: int) -> int:
    """Simulator events a run may process without progress (a commit, or a round that
    someone counted in) before it is stopped as one that cannot progress:
    ``max(PATIENCE, 1000 × workers)``. A worker takes two to four events per phase, so
    this is hundreds of thousands of phases without a commit."""
    return max(PATIENCE, 1000 * int(workers))


def run_until(env, stop, *, may_stall: bool, progress: Callable[[], int] | None = None,
              workers: int = 1, cause: Callable[[], str] | None = None) -> None:
    """``env.run(until=stop)``, stopped with a :class:`~asynclab.ConfigError` when the run
    cannot progress.

    ``may_stall``: a run whose processes all wait for good before ``stop`` (SimPy's "no
    scheduled events left": every worker down for good) ends there instead of raising.
    ``progress``: a count that grows with the run's progress (commits or rounds that
    someone counted in); when it stands still for :func:`patience` events, or simulated
    time stands still that long, the run stops with an error saying so, and ``cause()``
    (what in the timing model prevents progress) where given. Any other error, an
    exception raised inside a process included, is raised.
    """
    if stop.callbacks is None:  # already processed
        return
    stop.callbacks.append(StopSimulation.callback)
    step = env.step
    limit = patience(workers)
    count = None if progress is None else progress()
    now, without_progress, standing = env.now, 0, 0
    try:
        while True:
            for _ in range(_CHECK):
                step()
            if progress is not None:
                done = progress()
                without_progress = without_progress + _CHECK if done == count else 0
                count = done
            standing = standing + _CHECK if env.now == now else 0
            now = env.now
            if without_progress >= limit or standing >= limit:
                raise ConfigError(_stuck(env, count, limit, standing >= limit, cause))
    except StopSimulation:
        return
    except EmptySchedule:
        if not may_stall:
            raise RuntimeError(f'No scheduled events left but "until" event was not '
                               f'triggered: {stop}') from None


def _stuck(env, count, limit: int, standing: bool, cause) -> str:
    what = (f"stands still at {env.now:.6g} s of simulated time for {limit:,} simulator "
            "events (its steps are too short to advance the clock)" if standing else
            f"made no progress (no commit, or no round anyone counted in) in {limit:,} "
            f"simulator events, at {env.now:.6g} s of simulated time")
    reason = cause() if cause is not None else ""
    done = "" if count is None else f" after {count:,} events of its schedule"
    return (f"the simulated cluster {what}{done}: it cannot reach its budget"
            + (f"; {reason}" if reason else ""))
