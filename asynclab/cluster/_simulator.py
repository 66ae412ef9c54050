"""The SimPy simulator of a parameter-server cluster: timing models in, traces out.

Each worker is one SimPy process (``asynclab.cluster._process.worker``, a plain generator
function with ``env`` first) whose exchange step is the schedule's own: here the
asynchronous commit-and-pull (:class:`Commit`), in ``_sync`` a synchronous round's
barrier, in ``_rounds`` a semi-synchronous round's count. A process only schedules events
and records what happened; it never does optimizer arithmetic. The asynchronous simulator
produces a :class:`Trace` (one row per commit), the synchronous one a :class:`RoundTrace`
(one row per round).

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
from ._process import NAN, Log, Outage, run_until, served, stuck_cause, worker
from ._streams import service, simulator_bytes, streams
from ._timing import Cluster
from ._trace import Trace


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


def _failures(failed) -> Failures:
    """The failure rows of a run as a :class:`Failures` table, in the order of ``down``."""
    failed = sorted(failed, key=lambda e: (e[1], e[0]))
    cols = list(zip(*failed, strict=True)) if failed else [()] * 5
    return Failures(worker=np.array(cols[0], np.int32), down=np.array(cols[1], np.float64),
                    up=np.array(cols[2], np.float64), clock=np.array(cols[3], np.int32),
                    lost=np.array(cols[4], np.int32))


class Commit:
    """The asynchronous exchange step of one worker (or group): its commit reaches the
    server, queues there and is served (:func:`~asynclab.cluster._process.served`, where
    the server takes time), is applied with the current clock, and the worker pulls the
    new centre: one atomic critical section. With a server that takes no time nothing
    ever queues, and the commit is applied the moment it reaches the server. The pull
    reply then travels back over the link.

    ``step(delay)`` is the phase (``delay``: reply, compute, commit message) and the
    exchange, True when the budget is reached; ``rejoin()`` the pull of a worker back
    from a failure (a read: no queue, no clock tick), which returns the clock it pulls
    at; nothing but a failure cancels a phase (``race()`` is None). ``rows`` (a list, or
    None) receives the worker's exchange times (see
    :class:`~asynclab.cluster._activity.Recorder`); recording adds no SimPy event.
    """

    __slots__ = ("step", "rejoin")

    def __init__(self, env, unit: int, server, service, log: Log, limit, horizon, stop,
                 rows=None):
        timeout = env.timeout
        append_time, append_worker = log.time.append, log.worker.append
        append_pulled = log.pulled_clock.append
        release = None if server is None else server.release
        pulled = 0

        def step(delay):
            nonlocal pulled
            row = None
            if rows is not None:
                row = [env.now, env.now + delay, NAN, NAN, NAN]
                rows.append(row)
            yield timeout(delay)
            req = None
            if release is not None:
                req = yield from served(env, server, service, row)
            elif row is not None:
                row[2] = env.now
            now = env.now
            clock = log.clock
            if clock >= limit or now > horizon:
                if req is not None:
                    release(req)
                if not stop.triggered:
                    stop.succeed()
                return True
            append_time(now)
            append_worker(unit)
            append_pulled(pulled)
            if row is not None:
                row[3] = now
            pulled = log.clock = clock + 1
            if req is not None:
                release(req)
            return False

        def rejoin():
            nonlocal pulled
            pulled = log.clock
            return pulled

        self.step, self.rejoin = step, rejoin

    @staticmethod
    def race():
        return None


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
    units, server_rng = streams(
        cluster, int(local_steps) if per_worker is None else per_worker, rng)
    available = cluster.availability
    if available is not None:
        server_rng, failure_rng = server_rng if available.random else (server_rng, None)
        outages = available.intervals(cluster.workers, failure_rng)
        steps = per_worker or (int(local_steps),) * cluster.workers
        failed = []
    serve = service(cluster, server_rng)
    down = cluster.transfer_time
    env = simpy.Environment()
    log = Log()
    stop = env.event()
    # a server that takes no time never queues: the workers skip the Resource altogether
    server = None if serve is None else simpy.Resource(env, capacity=1)
    recorder = Recorder(len(units)) if activity else None
    for k, stream in enumerate(units):
        rows = recorder.rows[k] if activity else None
        outage = None if available is None else Outage(
            k, outages[k], steps[k], failed, recorder.failed[k] if activity else None, rows)
        env.process(worker(env, stream.next_block, down,
                           Commit(env, k, server, serve, log, limit, horizon, stop, rows),
                           stop, outage))
    # with failures every worker may go down for good: the run ends there
    run_until(env, stop, may_stall=available is not None, progress=lambda: log.clock,
              workers=len(units), cause=lambda: stuck_cause(cluster, widest))
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
        simulator="simpy",
    )
    if not activity:
        return trace
    grouped = cluster.group_size > 1
    tail = cluster.transfer_time + (cluster.intra_group_time if grouped else 0.0)
    return trace._replace(activity=recorder.activity(
        end=trace.duration, down=down, tail=tail, delays=[s.delays() for s in units]))
