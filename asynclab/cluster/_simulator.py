"""The SimPy simulator of a parameter-server cluster: timing models in, traces out.

Each worker is a SimPy process (a plain generator function with ``env`` first). A
process only schedules events and records what happened; it never does optimizer
arithmetic. The asynchronous simulator produces a :class:`Trace` (one row per commit),
the synchronous one a :class:`RoundTrace` (one row per round).

Conventions shared by both simulators:

- Randomness. The generator passed in spawns one child generator per worker
  (``rng.spawn(n)``); worker ``k`` draws its local-step times from its own child, in
  blocks of a fixed, budget-independent size schedule. A worker's sequence of step
  times therefore does not depend on the other workers, on the budget, on the network
  or on stragglers, and a shorter run is exactly a prefix of a longer one. A random
  service time (``Cluster.server_time`` a :class:`ComputeTime`) takes one more child,
  ``rng.spawn(n + 1)[n]``; the first n children of ``spawn(n + 1)`` are those of
  ``spawn(n)``, so the workers' step times stay the same. The server draws in blocks
  too, in the order it serves.
- Links have unlimited capacity, so the reply of one exchange, the next compute phase
  and the next commit message are one timeout of ``down + compute + up`` seconds: the
  same times as three separate events, without the extra events.
- Ties. Events at the same simulated time are processed first-in first-out (SimPy's
  rule), and the server queue is FIFO. At time 0 the workers start in index order, so
  when compute times are equal the first commits arrive in worker order 0, 1, ..., n-1,
  and from then on the workers keep the order of their previous commits. With constant,
  equal compute times the trace is thus deterministic: the first n commits have
  staleness 0, 1, ..., n-1 and every later commit has staleness n-1.
- Groups (``Cluster.group_size`` m > 1, a "mixed" cluster). In the asynchronous
  simulator each group of m workers is one process and one committing unit: its phase
  ends when its slowest member finishes, then it all-reduces for
  ``Cluster.intra_group_time`` and exchanges with the server like a single worker.
  Member k still draws from child k, so its step times are those of worker k in the
  same cluster without groups. The synchronous simulator ignores groups: a round
  already waits for every worker.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import simpy

from .. import _validate
from .._errors import ConfigError
from ._activity import Recorder
from ._availability import Failures
from ._rounds import SemiSync, check_semisync, run_until, simulate_rounds
from ._timing import Cluster, as_generator
from ._trace import RoundTrace, Trace

_FIRST_BLOCK = 64
"""Compute phases drawn per worker in the first block; the block doubles up to the max."""
_MAX_BLOCK = 4096
_NO_PHASES = np.empty(0)


class _ComputeStream:
    """A worker's timeouts between two exchanges: reply, compute phase, commit message.

    Step times are drawn in blocks from the worker's own generator, a block being
    ``(block, local_steps)`` steps with ``block`` doubling from 64 to 4096 phases: a
    fixed schedule, so the draws never depend on the budget. :meth:`next_block` hands
    the worker a list of timeout lengths ``down + phase + up`` (the first phase of the
    run has no reply before it). A phase that may hold one of the worker's scheduled
    stragglers is handed out alone, because an ``at_time`` straggler needs the phase's
    start time.
    """

    __slots__ = (
        "_draw",
        "_scale",
        "_local_steps",
        "_up",
        "_down",
        "_block",
        "_steps",
        "_phases",
        "_i",
        "_offset",
        "_first",
        "_at_step",
        "_at_time",
        "_special",
        "_delayed",
    )

    def __init__(self, draw, scale, local_steps, up, down, stragglers):
        self._draw = draw
        self._scale = scale
        self._local_steps = local_steps
        self._up = up
        self._down = down
        self._block = _FIRST_BLOCK
        self._steps = np.empty((0, local_steps))
        self._phases = np.empty(0)
        self._i = 0
        self._offset = 0
        self._first = True
        self._at_step = {}
        at_time = []
        for s in stragglers:
            if s.at_step is not None:
                self._at_step[s.at_step] = self._at_step.get(s.at_step, 0.0) + s.delay
            else:
                at_time.append((s.at_time, s.delay))
        self._at_time = sorted(at_time)
        self._special = bool(self._at_step or self._at_time)
        self._delayed = {}

    def _refill(self):
        self._offset += self._phases.shape[0]
        block = self._block
        self._block = min(2 * block, _MAX_BLOCK)
        steps = self._draw((block, self._local_steps))
        if self._scale != 1.0:
            steps *= self._scale
        self._steps = steps
        self._phases = steps[:, 0] if self._local_steps == 1 else steps.sum(axis=1)
        self._i = 0

    def next_block(self, start: float) -> list[float]:
        """Timeout lengths for the next compute phases, the first starting at ``start``.

        Args:
          start: simulated time at which the next compute phase starts (the reply's
            arrival); only used to place ``at_time`` stragglers.

        Returns:
          A list of floats, one per exchange: ``down + phase + up``, without ``down``
          for the run's very first phase; empty when the worker's timing model has no
          more steps (a log that ends), which ends the run.
        """
        if self._i == self._phases.shape[0]:
            self._refill()
            if not self._phases.shape[0]:
                return []
        up, down = self._up, self._down
        i = self._i
        stop = self._phases.shape[0]
        if self._special:
            # Phases before the next at_step straggler go out as a block; a phase that
            # may hold a straggler goes out alone (an at_time one needs its start).
            if not self._at_time:
                stop = min(stop, min(self._at_step) // self._local_steps - self._offset)
            if self._at_time or stop <= i:
                self._i = i + 1
                phase = float(self._phases[i]) + self._delays(i, start)
                if self._first:
                    self._first = False
                    return [phase + up]
                return [down + phase + up]
        phases = self._phases[i:stop]
        self._i = stop
        lead = down + up
        if self._first:
            self._first = False
            out = (phases + lead).tolist()
            out[0] = float(phases[0]) + up
            return out
        return (phases + lead).tolist()

    def _delays(self, i: int, start: float) -> float:
        """Straggler delays falling into phase ``i`` of the current block."""
        first = (self._offset + i) * self._local_steps
        row = self._steps[i]
        t = start
        total = 0.0
        for j in range(self._local_steps):
            extra = self._at_step.pop(first + j, 0.0)
            while self._at_time and self._at_time[0][0] <= t:
                extra += self._at_time.pop(0)[1]
            total += extra
            t += float(row[j]) + extra
        self._special = bool(self._at_step or self._at_time)
        if total:
            self._delayed[self._offset + i] = total
        return total

    def delays(self) -> dict[int, float]:
        """Straggler delay (seconds) per phase index, for the phases handed out so far
        that hold one."""
        return self._delayed


class _ServiceStream:
    """The server's random service times, drawn in blocks from its own generator.

    A block doubles from 64 to 4096 draws (a fixed schedule, independent of the budget);
    calling the stream returns the next service time, in the order the server serves.
    """

    __slots__ = ("_time", "_rng", "_block", "_times")

    def __init__(self, time, rng: np.random.Generator):
        self._time = time
        self._rng = rng
        self._block = _FIRST_BLOCK
        self._times: list[float] = []

    def __call__(self) -> float:
        if not self._times:
            block = self._block
            self._block = min(2 * block, _MAX_BLOCK)
            self._times = self._time.sample(self._rng, block).tolist()[::-1]
        return self._times.pop()


def _service(cluster: Cluster, server_rng):
    """What the server processes take for ``server_time``: the float itself, or a
    :class:`_ServiceStream` drawing from ``server_rng``."""
    if cluster.random_server:
        return _ServiceStream(cluster.server_time, server_rng)
    return cluster.server_time


class _GroupStream:
    """A compute group's exchanges: its phase ends when its slowest member finishes.

    Each member keeps its own :class:`_ComputeStream` (its own generator, time scale and
    stragglers, built without link times), so a member's step times are exactly those
    the same worker would have in a cluster without groups. The group's phase is the
    elementwise maximum of its members' phases, followed by ``intra`` seconds of
    all-reduce; the commit then travels the link like a single worker's.

    :meth:`next_block` hands out as many phases as every member has ready. A member
    whose next phase may hold an ``at_time`` straggler hands out that phase alone, with
    the group's start time, so the group then hands out one phase too.
    """

    __slots__ = ("_members", "_pending", "_first_lead", "_lead", "_first")

    def __init__(self, members, intra, up, down):
        self._members = members
        self._pending = [_NO_PHASES] * len(members)
        self._first_lead = intra + up
        self._lead = intra + (down + up)
        self._first = True

    def next_block(self, start: float) -> list[float]:
        """Timeout lengths ``down + max(member phases) + intra + up`` for the next phases.

        Args:
          start: simulated time at which the group's next phase starts.

        Returns:
          A non-empty list of floats, one per group commit (no ``down`` before the run's
          very first phase).
        """
        pending = self._pending
        for j, ready in enumerate(pending):
            if not ready.shape[0]:
                pending[j] = np.array(self._members[j].next_block(start), dtype=np.float64)
        k = min(ready.shape[0] for ready in pending)
        if not k:  # a member has no more steps
            return []
        phases = pending[0][:k]
        for j, ready in enumerate(pending):
            if j:
                phases = np.maximum(phases, ready[:k])
            pending[j] = ready[k:]
        out = phases + self._lead
        if self._first:
            self._first = False
            out[0] = phases[0] + self._first_lead
        return out.tolist()

    def delays(self) -> dict[int, float]:
        """The largest member's straggler delay per group phase that holds one."""
        out: dict[int, float] = {}
        for member in self._members:
            for j, d in member.delays().items():
                out[j] = max(out.get(j, 0.0), d)
        return out


class _Log:
    """What the server records, appended during the run and converted once at the end."""

    __slots__ = ("time", "worker", "pulled_clock", "clock", "duration")

    def __init__(self):
        self.time = []
        self.worker = []
        self.pulled_clock = []
        self.duration = []
        self.clock = 0


def _streams(cluster: Cluster, local_steps: int | tuple[int, ...], rng,
             grouped: bool = True):
    """One stream per committing unit (per worker, or per group when ``grouped``), and
    the server's generator (None unless the service time is random).

    Worker k always draws from child k of ``rng.spawn(workers)``, grouped or not; a
    random server draws from one more child, ``spawn(workers + 1)[workers]``. Under
    Poisson churn (``cluster.availability``) the failures draw from
    ``spawn(workers + 2)[workers + 1]``, and the second value is the pair ``(server's
    generator or None, failures' generator)``.
    ``local_steps`` is one count for every worker, or a tuple of one count per worker.
    """
    if isinstance(local_steps, tuple):
        steps = local_steps
    else:
        steps = (local_steps,) * cluster.workers
    churn = cluster.availability is not None and cluster.availability.random
    # Poisson churn draws from child n + 1 (child n stays the server's, used or not)
    children = as_generator(rng).spawn(cluster.workers + (2 if churn else
                                                           cluster.random_server))
    server_rng = children[cluster.workers] if cluster.random_server else None
    if churn:
        server_rng = (server_rng, children[cluster.workers + 1])
    scales = cluster.scales
    transfer = cluster.transfer_time
    m = cluster.group_size
    grouped = grouped and m > 1
    link = 0.0 if grouped else transfer  # a group's members do not use the link
    streams = [
        _ComputeStream(
            cluster.compute.stream(k, children[k]),
            scales[k],
            steps[k],
            link,
            link,
            [s for s in cluster.stragglers if s.worker == k],
        )
        for k in range(cluster.workers)
    ]
    if not grouped:
        return streams, server_rng
    intra = cluster.intra_group_time
    return [
        _GroupStream(streams[g * m : (g + 1) * m], intra, transfer, transfer)
        for g in range(cluster.groups)
    ], server_rng


def _worker_steps(cluster: Cluster, local_steps) -> tuple[int, ...] | None:
    """``local_steps`` given as one count per worker, checked (a tuple); None for one
    count for every worker (checked by :func:`_check_budget`)."""
    if isinstance(local_steps, str | bytes) or not isinstance(local_steps,
                                                              Sequence | np.ndarray):
        return None
    if cluster.group_size > 1:
        raise ConfigError("local_steps: one count per worker needs a cluster without groups "
                          f"(group_size 1), got group_size={cluster.group_size}")
    if len(local_steps) != cluster.workers:
        raise ConfigError(f"local_steps must have one entry per worker ({cluster.workers}), "
                          f"got {len(local_steps)} entries")
    steps = []
    for k, h in enumerate(local_steps):
        if not isinstance(h, numbers.Integral) or isinstance(h, bool):
            raise ConfigError(f"local_steps[{k}] must be an integer >= 1, got {h!r}")
        steps.append(_validate.count(h, f"local_steps[{k}]"))
    return tuple(steps)


def _check_budget(name: str, count, horizon, local_steps) -> tuple[int | float, float]:
    if not isinstance(local_steps, numbers.Integral):  # a whole float is not a step count
        raise ConfigError(f"local_steps must be an integer >= 1, got {local_steps!r}")
    _validate.count(local_steps, "local_steps")
    if (count is None) == (horizon is None):
        raise ConfigError(
            f"give exactly one of {name} / horizon, got {name}={count!r}, horizon={horizon!r}"
        )
    if count is not None:
        if not isinstance(count, numbers.Integral):
            raise ConfigError(f"{name} must be an integer >= 1, got {count!r}")
        return _validate.count(count, name), math.inf
    return math.inf, _validate.number(horizon, "horizon", low=0, low_open=True)


#: Bytes a simulated worker holds beside its draws (a SimPy process, its stream).
BYTES_PER_WORKER = 2048


def simulator_bytes(cluster, events, local_steps: int) -> int:
    """Bytes the simulator holds beside the schedule: every worker's process and its
    block of drawn steps (up to 4,096 phases of ``local_steps`` steps; ``events`` may be
    ``inf`` for a horizon, which draws full blocks), and a random server's block of
    service times."""
    blocks = min(events, _MAX_BLOCK)
    server = 8 * blocks if cluster.random_server else 0
    return int(cluster.workers * (BYTES_PER_WORKER + 8 * blocks * int(local_steps)) + server)


def _check_size(cluster, events, local_steps: int, field: str) -> None:
    """Refuse, before any work, a simulation that cannot fit in memory: the schedule's
    events and :func:`simulator_bytes`."""
    estimate = simulator_bytes(cluster, events, local_steps)
    if math.isfinite(events):
        estimate += events * _validate.BYTES_PER_EVENT
    _validate.check_memory(int(estimate), field)


def _check_cluster(cluster) -> None:
    if not isinstance(cluster, Cluster):
        raise ConfigError(f"cluster must be a Cluster, got {cluster!r}")


def _check_activity(activity) -> None:
    if not isinstance(activity, bool | np.bool_):
        raise ConfigError(f"activity must be True or False, got {activity!r}")


# --------------------------------------------------------------------------- async


def _async_worker(env, worker, next_block, down, server, server_time, log, limit, horizon,
                  stop, rows=None):
    """One asynchronous worker (or group): compute phase, commit message, exchange.

    With a ``server`` (``simpy.Resource``, capacity 1, FIFO) the exchange queues there and
    is served for ``server_time`` seconds (a float, or a callable that draws the next
    service time, :class:`_ServiceStream`); the commit is applied, and the worker pulls, when its
    service ends: one atomic critical section. With ``server=None`` (a server that takes
    no time, so nothing ever queues) each exchange is one timeout (reply, compute phase,
    commit message) followed by the atomic commit-and-pull, recorded at the moment the
    commit reaches the server. The pull reply then travels back over the link.

    ``rows`` (a list, or None) receives the worker's exchange times (see
    :class:`~asynclab.cluster._activity.Recorder`); recording adds no SimPy event.
    """
    timeout = env.timeout
    queued = server is not None
    draw = None if isinstance(server_time, float) else server_time
    request = server.request if queued else None
    release = server.release if queued else None
    append_time = log.time.append
    append_worker = log.worker.append
    append_pulled = log.pulled_clock.append
    pulled = 0
    req = None
    delays = next_block(0.0)
    nan = math.nan
    while delays:
        for delay in delays:
            if rows is not None:
                row = [env.now, env.now + delay, nan, nan, nan]
                rows.append(row)
            yield timeout(delay)
            if queued:
                req = request()
                if not req.triggered:  # granted at once when the server is idle: no resume
                    yield req
                if rows is not None:
                    row[2] = env.now
                yield timeout(server_time if draw is None else draw())
            elif rows is not None:
                row[2] = env.now
            now = env.now
            clock = log.clock
            if clock >= limit or now > horizon:
                if queued:
                    release(req)
                if not stop.triggered:
                    stop.succeed()
                return
            append_time(now)
            append_worker(worker)
            append_pulled(pulled)
            if rows is not None:
                row[3] = now
            pulled = log.clock = clock + 1
            if queued:
                release(req)
        delays = next_block(now + down)
    if not stop.triggered:  # the worker's timing model ran out of steps
        stop.succeed()


def _failing_worker(env, worker, next_block, down, server, server_time, log, limit, horizon,
                    stop, rows, outages, steps, failed, downtime):
    """One asynchronous worker that goes down and comes back (:class:`Availability`).

    The same loop as :func:`_async_worker`, with one test per exchange: when the worker's
    next outage starts before its commit reaches the server, the phase's work is lost (no
    commit; its ``steps`` gradient evaluations count as lost when the phase had begun).
    The worker is down until the outage ends (``outages`` yields ``(down_at, up_at)``
    in time order), then pulls the current centre (the server clock is recorded in the
    failure's row of ``failed``) and starts a new phase with the reply's ``down`` link
    time. A commit that has reached the server is applied even if its worker goes down
    while it queues. ``downtime`` (a list, or None) receives the ``(down, up)``
    intervals for the activity record. A worker whose outage never ends stops.
    """
    timeout = env.timeout
    queued = server is not None
    draw = None if isinstance(server_time, float) else server_time
    nan = math.nan
    pulled = 0
    req = None
    outage = next(outages, None)
    delays = next_block(0.0)
    while delays:
        for delay in delays:
            start = env.now
            if outage is not None and outage[0] < start + delay:
                down_at, up_at = outage
                cut = max(down_at, start)
                if rows is not None:
                    rows.append([start, start + delay, nan, nan, nan, cut])
                if cut > start:
                    yield timeout(cut - start)
                entry = [worker, cut, max(up_at, cut), -1, steps if down_at >= start else 0]
                failed.append(entry)
                if downtime is not None:
                    downtime.append((cut, entry[2]))
                if math.isinf(up_at):
                    return
                if up_at > env.now:
                    yield timeout(up_at - env.now)
                entry[3] = pulled = log.clock  # the rejoin pull
                outage = next(outages, None)
                continue
            if rows is not None:
                row = [start, start + delay, nan, nan, nan]
                rows.append(row)
            yield timeout(delay)
            if queued:
                req = server.request()
                if not req.triggered:
                    yield req
                if rows is not None:
                    row[2] = env.now
                yield timeout(server_time if draw is None else draw())
            elif rows is not None:
                row[2] = env.now
            now = env.now
            clock = log.clock
            if clock >= limit or now > horizon:
                if queued:
                    server.release(req)
                if not stop.triggered:
                    stop.succeed()
                return
            log.time.append(now)
            log.worker.append(worker)
            log.pulled_clock.append(pulled)
            if rows is not None:
                row[3] = now
            pulled = log.clock = clock + 1
            if queued:
                server.release(req)
        delays = next_block(env.now + down)
    if not stop.triggered:
        stop.succeed()


def _failures(failed) -> Failures:
    """The failure rows of a run as a :class:`Failures` table, in the order of ``down``."""
    failed = sorted(failed, key=lambda e: (e[1], e[0]))
    cols = list(zip(*failed, strict=True)) if failed else [()] * 5
    return Failures(worker=np.array(cols[0], np.int32), down=np.array(cols[1], np.float64),
                    up=np.array(cols[2], np.float64), clock=np.array(cols[3], np.int32),
                    lost=np.array(cols[4], np.int32))


def simulate_async(
    cluster: Cluster,
    *,
    local_steps: int | Sequence[int] = 1,
    commits: int | None = None,
    horizon: float | None = None,
    rng: np.random.Generator | int | None = None,
    activity: bool = False,
) -> Trace:
    """Simulates an asynchronous parameter server and returns its commit trace.

    Every worker loops: it computes ``local_steps`` local steps (each takes
    ``compute.sample * time_scale[k]``, plus a scheduled straggler's delay), sends its
    commit over the link, queues at the server (FIFO, one exchange at a time) and is
    served for ``server_time``. At that moment the commit is applied with the current
    clock, the clock advances by one, and the worker pulls the new centre (commit and
    pull are one atomic critical section), so its pulled clock becomes the new clock.
    The pull reply travels back over the link and the worker starts again.

    When ``server_time == 0`` the server never queues, and the workers skip the
    ``simpy.Resource`` altogether (one SimPy event per commit); the trace is the same.
    A random ``server_time`` (a :class:`ComputeTime`) draws each service from the
    server's own generator; with exponential compute times (``local_steps = 1``, no link
    time) and an exponential server this is the machine-repairman model, a closed
    M/M/1//n queue (see the docs' cluster page for its throughput and response time).
    The mean staleness over a long run is ``n - 1`` for any timing model (a closed-loop
    queue fact); with exponential compute times staleness is Geometric(1/n).

    Mixed clusters (``cluster.group_size`` m > 1): group g (workers g·m … g·m + m − 1)
    loops as one unit. Every member computes ``local_steps`` steps with its own compute
    times, time scale and stragglers; the group's phase ends when its slowest member
    finishes; the group all-reduces for ``cluster.intra_group_time`` seconds; then it
    commits, queues, is served and pulls exactly like a single worker. The trace has
    one row per group commit, ``worker`` holds the group index, ``n_workers`` the
    number of groups (so the mean staleness is ``groups - 1``) and ``group_size`` m.
    With m = 1 the run is the plain one, bit for bit.

    Per-worker windows (``local_steps`` a sequence, one count H_k per worker, a
    cluster without groups): worker k computes H_k steps per exchange, so its phase is
    the sum of its own H_k step times (asynchronous DiLoCo's dynamic local updates). It
    draws its steps in blocks of H_k from its own generator, so with every H_k equal to
    H the trace is the one of ``local_steps=H``, bit for bit; the trace's
    ``local_steps`` is then the tuple.

    Failures (``cluster.availability``, an :class:`Availability`; no groups): a worker
    whose outage starts before its commit reaches the server loses that phase (no
    commit; its λ evaluations count as lost if the phase had begun); when the outage
    ends it pulls the current centre (a read: no queue, no clock tick) and starts a new
    phase, the reply's link time first. ``trace.failures`` (:class:`Failures`) lists
    the outages the run reached with the clock at each rejoin pull, which the replay
    applies as a pull without a commit. A run whose failures all come after its end is
    the plain run, bit for bit (the failures draw from their own generator).

    Args:
      cluster: the cluster's timing model.
      local_steps: local steps (λ, the communication window) per exchange, >= 1; or a
        sequence of one count per worker.
      commits: stop after exactly this many commits (>= 1).
      horizon: or: stop at the first commit after this many simulated seconds; the
        trace holds the commits with ``time <= horizon``. Give exactly one of the two.
      rng: a ``numpy.random.Generator``, an integer seed, or ``None`` (seed 0). A
        generator passed in spawns one child per worker, so passing the same generator
        object twice gives two different traces; pass an int to repeat a run.
      activity: also record what every worker (group) did when, as the trace's
        :class:`~asynclab.cluster.Activity` (``trace.activity``; None without it). The
        trace's other fields are the same either way, bit for bit.

    Returns:
      A :class:`Trace`. Runs with the same seed agree on their common prefix: the
      trace with ``commits=1000`` is the first 1000 rows of the one with
      ``commits=2000``.

    Example:
      >>> cluster = Cluster(workers=8, compute=ComputeTime("exponential", mean=1.0))
      >>> trace = simulate_async(cluster, commits=10_000, rng=0)
      >>> trace.staleness.mean()  # close to n - 1 = 7
    """
    _check_cluster(cluster)
    _check_activity(activity)
    per_worker = _worker_steps(cluster, local_steps)
    widest = local_steps if per_worker is None else max(per_worker)
    limit, horizon = _check_budget("commits", commits, horizon, widest)
    _check_size(cluster, limit, widest, "commits" if commits is not None else "horizon")
    streams, server_rng = _streams(
        cluster, int(local_steps) if per_worker is None else per_worker, rng)
    available = cluster.availability
    if available is not None:
        server_rng, failure_rng = server_rng if available.random else (server_rng, None)
        outages = available.intervals(cluster.workers, failure_rng)
        steps = per_worker or (int(local_steps),) * cluster.workers
        failed = []
    service = _service(cluster, server_rng)
    down = cluster.transfer_time
    env = simpy.Environment()
    log = _Log()
    stop = env.event()
    # a server that takes no time never queues: the workers skip the Resource altogether
    server = None if service == 0.0 else simpy.Resource(env, capacity=1)
    recorder = Recorder(len(streams)) if activity else None
    for k, stream in enumerate(streams):
        rows = recorder.rows[k] if activity else None
        if available is None:
            env.process(_async_worker(env, k, stream.next_block, down, server, service,
                                      log, limit, horizon, stop, rows))
        else:
            env.process(_failing_worker(env, k, stream.next_block, down, server, service,
                                        log, limit, horizon, stop, rows, outages[k],
                                        steps[k], failed,
                                        recorder.failed[k] if activity else None))
    # with failures every worker may go down for good: the run ends there
    run_until(env, stop, may_stall=available is not None)
    pulled = np.array(log.pulled_clock, dtype=np.int32)
    trace = Trace(
        time=np.array(log.time, dtype=np.float64),
        worker=np.array(log.worker, dtype=np.int32),
        pulled_clock=pulled,
        staleness=np.arange(pulled.shape[0], dtype=np.int32) - pulled,
        n_workers=cluster.groups,
        local_steps=int(local_steps) if per_worker is None else per_worker,
        group_size=cluster.group_size,
        failures=None if available is None else _failures(failed),
    )
    if not activity:
        return trace
    grouped = cluster.group_size > 1
    tail = cluster.transfer_time + (cluster.intra_group_time if grouped else 0.0)
    return trace._replace(activity=recorder.activity(
        end=trace.duration, down=down, tail=tail, delays=[s.delays() for s in streams]))


# ---------------------------------------------------------------------------- sync


class _Round:
    """The barrier of the current synchronous round."""

    __slots__ = ("arrived", "all_in", "result")

    def __init__(self, env):
        self.arrived = 0
        self.all_in = env.event()
        self.result = env.event()


def _sync_worker(env, next_block, down, server, server_time, workers, state, stop,
                 rows=None, failing=None):
    """A worker of a synchronous cluster: compute, commit, wait for the aggregate, pull.
    ``server_time`` is a float or a callable, and ``rows`` (a list, or None) receives
    its exchange times, as in :func:`_async_worker`.

    ``failing`` (:class:`Availability`): ``(worker, outages, steps, failed, downtime, log)``
    as for :func:`_failing_worker`. A worker whose outage starts before its commit reaches
    the server loses that phase, waits until it is back, pulls the centre of the open
    round (the one it had) and computes the phase again; the round waits for it."""
    timeout = env.timeout
    draw = None if isinstance(server_time, float) else server_time
    outage = None
    if failing is not None:
        worker, outages, steps, failed, downtime, log = failing
        outage = next(outages, None)
    delays = next_block(0.0)
    while delays:
        for delay in delays:
            if outage is not None and outage[0] < env.now + delay:
                start = env.now
                down_at, up_at = outage
                cut = max(down_at, start)
                if rows is not None:
                    rows.append([start, start + delay, math.nan, math.nan, math.nan, cut])
                if cut > start:
                    yield timeout(cut - start)
                entry = [worker, cut, max(up_at, cut), -1, steps if down_at >= start else 0]
                failed.append(entry)
                if downtime is not None:
                    downtime.append((cut, entry[2]))
                if math.isinf(up_at):
                    return  # the round never closes: the run ends when nothing is left
                if up_at > env.now:
                    yield timeout(up_at - env.now)
                entry[3] = len(log.time)  # rounds applied when it pulls again
                outage = next(outages, None)
                continue
            if rows is not None:
                row = [env.now, env.now + delay, math.nan, math.nan, math.inf]
                rows.append(row)
            yield timeout(delay)
            if server is not None:
                req = server.request()
                yield req
                if rows is not None:
                    row[2] = env.now
                yield timeout(server_time if draw is None else draw())
                server.release(req)
            elif rows is not None:
                row[2] = env.now
            if rows is not None:
                row[3] = env.now
            current = state[0]
            current.arrived += 1
            if current.arrived == workers:
                current.all_in.succeed()
            yield current.result
            if rows is not None:
                row[4] = env.now
        delays = next_block(env.now + down)
    if not stop.triggered:  # the worker's timing model ran out of steps
        stop.succeed()


def _sync_server(env, down, log, limit, horizon, state, stop):
    """The server of a synchronous cluster: aggregates once every commit of a round is in."""
    start = 0.0
    while True:
        current = state[0]
        yield current.all_in
        now = env.now
        if len(log.time) >= limit or now > horizon:
            stop.succeed()
            return
        end = now + down
        log.time.append(now)
        log.duration.append(end - start)
        start = end
        state[0] = _Round(env)
        current.result.succeed()


def simulate_sync(
    cluster: Cluster,
    *,
    local_steps: int = 1,
    rounds: int | None = None,
    horizon: float | None = None,
    rng: np.random.Generator | int | None = None,
    activity: bool = False,
    semisync: SemiSync | None = None,
) -> RoundTrace:
    """Simulates a synchronous parameter server and returns its round trace.

    In a round every worker computes ``local_steps`` local steps, sends its commit over
    the link, and is served by the server for ``server_time``, one commit after
    another (FIFO). When all n commits are in, the server applies the aggregate (the
    row's ``time``); the result travels back over the link and the next round starts
    when it arrives. A round's ``duration`` is from its start to that arrival, so with
    constant compute time ``c``, transfer time ``x`` and equal workers it is
    ``local_steps * c + 2 x + n * server_time`` (with a random ``server_time``, the sum
    of the round's n service times, drawn from the server's own generator).

    Groups (``cluster.group_size``) and ``cluster.intra_group_time`` make no
    difference here: a fully synchronous round already waits for every worker, so the
    trace is the one of the same cluster without groups.

    Semi-synchronous rounds (``semisync``, a :class:`~asynclab.cluster.SemiSync`): a
    round closes at its K-th commit (``quorum=K``; ``backup=b`` is ``quorum = workers −
    b``), or at a time window with a minimum count and a deadline; its aggregate
    averages the commits that counted (``trace.counted``, bool ``(R, n)``). With
    ``late="discard"`` the other workers' work is cancelled where it is (computing, on
    the link, queued or served) and every worker starts the next round from the new
    centre, like the counted ones, when the reply arrives; with ``late="stale"`` it runs
    on, and a commit counts in the round open when it reaches the server (served, if
    the server takes time); only the counted workers pull. A time window is measured on
    the server from the previous round's aggregate (from 0 for the first round).
    ``quorum = workers`` is the plain synchronous trace, bit for bit (and
    ``counted`` all true). With exponential compute times of mean 1/μ and λ = 1, a
    discard round lasts on average ``E[X_(K:n)] + 2 x = (1/μ) Σ_{i=n−K+1}^{n} 1/i + 2 x``
    (the K-th fastest of n, Dutta et al., AISTATS 2018) plus the server's service times.

    Args:
      cluster: the cluster's timing model.
      local_steps: local steps (λ) per worker per round, >= 1.
      rounds: stop after exactly this many rounds (>= 1).
      horizon: or: stop at the first aggregate after this many simulated seconds; the
        trace holds the rounds with ``time <= horizon``. Give exactly one of the two.
      rng: a ``numpy.random.Generator``, an integer seed, or ``None`` (seed 0).
      activity: also record what every worker did when, as the trace's
        :class:`~asynclab.cluster.Activity` (``trace.activity``): compute, communicate,
        wait in the server's queue and for the round's slowest worker. The aggregate
        itself takes no simulated time. The other fields are the same either way.
        Semi-synchronous work cancelled by its round's close shows as what it was doing,
        cut short at the close.
      semisync: how a round closes before every worker is in (None: when all are).

    Failures (``cluster.availability``): a round waits for a worker that is down (the
    stall of a lock-step job). The worker's phase is lost; when it is back it computes
    the phase again from the centre it had, so the replay is the plain rounds' one and
    ``trace.failures`` (:class:`~asynclab.cluster.Failures`) records what was lost.
    With ``semisync`` (``late="discard"`` only) a worker that goes down loses its phase,
    counts in no round while down, and when back pulls the current centre and starts a
    phase for the round then open; rounds close by quorum, window or deadline with
    whoever is in (a quorum without a deadline stalls if fewer than K workers are left).
    ``late="stale"`` with failures is refused.

    Returns:
      A :class:`RoundTrace` (``n_workers`` is the number of workers, not of groups).
    """
    _check_cluster(cluster)
    _check_activity(activity)
    check_semisync(semisync)
    if cluster.availability is not None and semisync is not None and semisync.stale:
        raise ConfigError("Cluster.availability: semi-synchronous rounds with failures need "
                          "SemiSync.late='discard'; with 'stale' a worker back from a crash "
                          "would pull a centre that the round trace (who counted) cannot "
                          "carry")
    if semisync is not None:
        semisync.quorum_of(cluster.workers)  # refused before any work
    limit, horizon = _check_budget("rounds", rounds, horizon, local_steps)
    _check_size(cluster, limit, local_steps, "rounds" if rounds is not None else "horizon")
    streams, server_rng = _streams(cluster, int(local_steps), rng, grouped=False)
    failure_rng = None
    if cluster.availability is not None and cluster.availability.random:
        server_rng, failure_rng = server_rng
    service = _service(cluster, server_rng)
    down = cluster.transfer_time
    if semisync is not None:
        return _semisync_trace(cluster, streams, semisync, int(local_steps), limit, horizon,
                               activity, service, failure_rng)
    env = simpy.Environment()
    log = _Log()
    stop = env.event()
    state = [_Round(env)]
    server = None if service == 0.0 else simpy.Resource(env, capacity=1)
    recorder = Recorder(len(streams)) if activity else None
    available = cluster.availability
    if available is not None:
        outages = available.intervals(cluster.workers,
                                      failure_rng if available.random else None)
        failed = []
    for k, stream in enumerate(streams):
        env.process(
            _sync_worker(
                env,
                stream.next_block,
                down,
                server,
                service,
                cluster.workers,
                state,
                stop,
                recorder.rows[k] if activity else None,
                None if available is None else (
                    k, outages[k], int(local_steps), failed,
                    recorder.failed[k] if activity else None, log),
            )
        )
    env.process(_sync_server(env, down, log, limit, horizon, state, stop))
    # with failures a worker may go down for good: no round closes again
    run_until(env, stop, may_stall=available is not None)
    trace = RoundTrace(
        time=np.array(log.time, dtype=np.float64),
        duration=np.array(log.duration, dtype=np.float64),
        n_workers=cluster.workers,
        local_steps=int(local_steps),
        failures=None if available is None else _failures(failed),
    )
    if not activity:
        return trace
    end = float(trace.time[-1]) if trace.n_events else 0.0
    return trace._replace(activity=recorder.activity(
        end=end, down=down, tail=cluster.transfer_time,
        delays=[s.delays() for s in streams]))


def _semisync_trace(cluster, streams, semisync, local_steps, limit, horizon, activity,
                    service, failure_rng=None):
    """The round trace of semi-synchronous rounds (:mod:`asynclab.cluster._rounds`);
    with ``cluster.availability`` (discard mode) its ``failures`` too."""
    recorder = Recorder(len(streams)) if activity else None
    available = cluster.availability
    failing = None
    if available is not None:
        failing = (available.intervals(cluster.workers, failure_rng), local_steps, [])
    time, duration, counted = simulate_rounds(streams, cluster, semisync, limit, horizon,
                                              recorder, service, failing)
    trace = RoundTrace(time=time, duration=duration, n_workers=cluster.workers,
                       local_steps=local_steps, counted=counted, late=semisync.late,
                       failures=None if failing is None else _failures(failing[2]))
    if not activity:
        return trace
    end = float(trace.time[-1]) if trace.n_events else 0.0
    return trace._replace(activity=recorder.activity(
        end=end, down=cluster.transfer_time, tail=cluster.transfer_time,
        delays=[s.delays() for s in streams]))
