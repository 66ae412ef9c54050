"""The synchronous simulator: rounds in which every worker computes, commits and waits for
the aggregate; semi-synchronous rounds close earlier (``asynclab.cluster._rounds``)."""

from __future__ import annotations

import math

import numpy as np
import simpy

from .._errors import ConfigError
from ._activity import Recorder
from ._process import NAN, Log, Outage, run_until, served, stuck_cause, worker
from ._rounds import SemiSync, check_semisync, simulate_rounds
from ._simulator import (
    _check_activity,
    _check_budget,
    _check_cluster,
    _check_size,
    _failures,
)
from ._streams import service, streams
from ._timing import Cluster
from ._trace import RoundTrace


class _Round:
    """The barrier of the current synchronous round."""

    __slots__ = ("arrived", "all_in", "result")

    def __init__(self, env):
        self.arrived = 0
        self.all_in = env.event()
        self.result = env.event()


class Barrier:
    """A synchronous round's exchange step of one worker: its commit reaches the server
    (queued and served, where the server takes time), then the worker waits for the
    round's aggregate, which the server applies once every commit of the round is in,
    and pulls it. ``rejoin()``: a worker back from a failure pulls the centre of the open
    round (the one it had) and computes the phase again; it returns the rounds applied
    then. Nothing but a failure cancels a phase (``race()`` is None). ``rows`` (a list,
    or None) receives its exchange times."""

    __slots__ = ("step", "rejoin")

    def __init__(self, env, server, service, workers: int, state: list, log, rows=None):
        timeout = env.timeout

        def step(delay):
            row = None
            if rows is not None:
                row = [env.now, env.now + delay, NAN, NAN, math.inf]
                rows.append(row)
            yield timeout(delay)
            if server is not None:
                req = yield from served(env, server, service, row, wait_granted=True)
                server.release(req)
            elif row is not None:
                row[2] = env.now
            if row is not None:
                row[3] = env.now
            current = state[0]
            current.arrived += 1
            if current.arrived == workers:
                current.all_in.succeed()
            yield current.result
            if row is not None:
                row[4] = env.now
            return False

        self.step, self.rejoin = step, lambda: len(log.time)

    @staticmethod
    def race():
        return None


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
    units, server_rng = streams(cluster, int(local_steps), rng, grouped=False)
    failure_rng = None
    if cluster.availability is not None and cluster.availability.random:
        server_rng, failure_rng = server_rng
    serve = service(cluster, server_rng)
    down = cluster.transfer_time
    if semisync is not None:
        return _semisync_trace(cluster, units, semisync, int(local_steps), limit, horizon,
                               activity, serve, failure_rng)
    env = simpy.Environment()
    log = Log()
    stop = env.event()
    state = [_Round(env)]
    server = None if serve is None else simpy.Resource(env, capacity=1)
    recorder = Recorder(len(units)) if activity else None
    available = cluster.availability
    if available is not None:
        outages = available.intervals(cluster.workers,
                                      failure_rng if available.random else None)
        failed = []
    for k, stream in enumerate(units):
        rows = recorder.rows[k] if activity else None
        outage = None if available is None else Outage(
            k, outages[k], int(local_steps), failed,
            recorder.failed[k] if activity else None, rows)
        env.process(worker(env, stream.next_block, down,
                           Barrier(env, server, serve, cluster.workers, state, log, rows),
                           stop, outage))
    env.process(_sync_server(env, down, log, limit, horizon, state, stop))
    # with failures a worker may go down for good: no round closes again
    run_until(env, stop, may_stall=available is not None, progress=lambda: len(log.time),
              workers=len(units), cause=lambda: stuck_cause(cluster, int(local_steps)))
    trace = RoundTrace(
        time=np.array(log.time, dtype=np.float64),
        duration=np.array(log.duration, dtype=np.float64),
        n_workers=cluster.workers,
        local_steps=int(local_steps),
        failures=None if available is None else _failures(failed),
        simulator="simpy",
    )
    if not activity:
        return trace
    end = float(trace.time[-1]) if trace.n_events else 0.0
    return trace._replace(activity=recorder.activity(
        end=end, down=down, tail=cluster.transfer_time,
        delays=[s.delays() for s in units]))


def _semisync_trace(cluster, units, semisync, local_steps, limit, horizon, activity,
                    serve, failure_rng=None):
    """The round trace of semi-synchronous rounds (:mod:`asynclab.cluster._rounds`);
    with ``cluster.availability`` (discard mode) its ``failures`` too."""
    recorder = Recorder(len(units)) if activity else None
    available = cluster.availability
    failing = None
    if available is not None:
        failing = (available.intervals(cluster.workers, failure_rng), local_steps, [])
    time, duration, counted = simulate_rounds(units, cluster, semisync, limit, horizon,
                                              recorder, serve, failing, local_steps)
    trace = RoundTrace(time=time, duration=duration, n_workers=cluster.workers,
                       local_steps=local_steps, counted=counted, late=semisync.late,
                       failures=None if failing is None else _failures(failing[2]),
                       simulator="simpy")
    if not activity:
        return trace
    end = float(trace.time[-1]) if trace.n_events else 0.0
    return trace._replace(activity=recorder.activity(
        end=end, down=cluster.transfer_time, tail=cluster.transfer_time,
        delays=[s.delays() for s in units]))
