"""Schedules at array speed: many seeds' traces at once, equal to SimPy's.

:func:`simulate_async_many` and :func:`simulate_sync_many` return, for every seed, the
very trace :func:`~asynclab.cluster.simulate_async` / :func:`~asynclab.cluster.simulate_sync`
return for ``rng=seed`` (times, workers, pulled clocks, rounds and who counted:
``np.array_equal``, float64 times to the bit). They draw the same random streams (child
k of ``np.random.default_rng(seed).spawn(…)`` for worker k, the next child for a random
server) and add the same floats in the same order, but work on every seed at once with
numpy: workers that never wait for each other (no server) are merged by one sort of
their arrival times; otherwise one vectorised step per commit (asynchronous, stale
rounds) or per round (plain and discard rounds) for all seeds together.

What they cover is said by :func:`array_coverage`; the rest is SimPy's. A seed whose
schedule holds a tie whose order only SimPy's event queue decides (two events at the same
simulated time, e.g. a commit exactly at a window's end) is simulated by SimPy, so every
trace is SimPy's; with random step times such ties do not happen in practice. A cluster
without any randomness (constant step and service times) has one schedule, simulated
once by SimPy and shared, read-only, by every seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .. import _validate
from .._errors import ConfigError
from . import _arrays_async, _arrays_rounds
from ._rounds import SemiSync, check_semisync
from ._simulator import (
    _check_activity,
    _check_budget,
    _check_cluster,
    _worker_steps,
    simulate_async,
)
from ._sync import simulate_sync
from ._timing import Cluster, ComputeTime
from ._trace import RoundTrace, Trace

#: Bytes the array path holds per event of every seed: the trace's arrays and the loop's.
BYTES_PER_EVENT = 32
#: Phases (float64) one chunk of seeds holds at once; more seeds run chunk by chunk. A
#: merge of independent workers gains from chunks that stay in cache; a loop with a
#: step per commit from steps that take many seeds at once.
_CHUNK_VALUES = {"merge": 1 << 21, "loop": 1 << 22}


def array_coverage(cluster: Cluster, *, synchronous: bool,
                   local_steps: int | Sequence[int] = 1, semisync: SemiSync | None = None,
                   activity: bool = False) -> str | None:
    """Whether the array path simulates this configuration, and if not, why.

    Covered: :class:`~asynclab.cluster.ComputeTime` step times (constant, exponential,
    lognormal, gamma), heterogeneous workers (``time_scale``), scheduled stragglers
    (``at_step`` and ``at_time``), link times, λ ≥ 1 and per-worker windows, groups
    (``group_size`` with ``intra_group_time``), a FIFO server with a constant or random
    service time; synchronous rounds; semi-synchronous rounds (a quorum or backup
    workers, a time window with a minimum count, a fixed deadline; ``late="discard"``
    and ``"stale"``); both budgets.

    Args:
      cluster: the cluster's timing model.
      synchronous: rounds (:func:`simulate_sync_many`) rather than commits.
      local_steps: λ, or one count per worker (asynchronous).
      semisync: semi-synchronous rounds, or None.
      activity: whether per-worker activity records are wanted.

    Returns:
      None when :func:`simulate_async_many` / :func:`simulate_sync_many` simulate the
      configuration, else one sentence saying what they do not cover.
    """
    _check_cluster(cluster)
    check_semisync(semisync)
    if activity:
        return ("the array path records no per-worker activity (activity=True); SimPy "
                "does")
    if not isinstance(cluster.compute, ComputeTime):
        return ("the array path draws ComputeTime step times, not those of a TimingModel "
                f"({type(cluster.compute).__name__}: a replayed or fitted log); SimPy "
                "simulates it")
    if cluster.availability is not None:
        return ("the array path does not simulate failures (Cluster.availability): a "
                "rejoin's pull interleaves with the commits in SimPy's event order")
    if semisync is not None:
        if not synchronous:
            return "semi-synchronous rounds are synchronous (synchronous=True)"
        if semisync.adaptive:
            return ("the array path does not simulate an adaptive deadline "
                    "(SemiSync(deadline='adaptive')); SimPy does")
        if cluster.random_server and cluster.compute.distribution == "constant" \
                and not semisync.stale:
            return ("with constant step times and a random service time, every commit of "
                    "a discard-mode round arrives with others at the same time, and who is "
                    "served first (and counts) is decided by SimPy's event queue; SimPy "
                    "simulates it")
    return None


def _seeds(seeds) -> np.ndarray:
    return np.array(_validate.seeds(seeds, "seeds"), np.int64)


def _refuse_uncovered(reason: str | None, field: str) -> None:
    if reason is not None:
        raise ConfigError(f"{field}: {reason}")


def _deterministic(cluster: Cluster) -> bool:
    """No random draw at all: every seed's schedule is the same."""
    return cluster.compute.distribution == "constant" and not cluster.random_server


def _chunks(size: int, per_seed: int, kind: str):
    """Slices of at most as many seeds as ``_CHUNK_VALUES[kind]`` values hold."""
    step = max(1, min(size, _CHUNK_VALUES[kind] // max(per_seed, 1)))
    return [slice(a, min(a + step, size)) for a in range(0, size, step)]


def _in_chunks(traces, seeds: np.ndarray, per_seed: int, kind: str) -> list:
    """``traces(chunk)`` for every chunk of ``seeds`` (:func:`_chunks`), joined in order.
    The chunks run one after the other: on two cores two threads are no faster, since
    the draws' and the rounds' Python steps hold the interpreter."""
    return [trace for part in _chunks(len(seeds), per_seed, kind)
            for trace in traces(seeds[part])]


def _check_events(size: int, events: float, field: str, extra: int = 0) -> None:
    """Refuse, before any work, traces that cannot fit in memory (``extra``: bytes more
    per event, e.g. who counted in a round)."""
    if math.isfinite(events):
        _validate.check_memory(int(size * events * (BYTES_PER_EVENT + extra)), field)


def _shared(trace):
    """A trace whose arrays cannot be written: one object shared by every seed."""
    for value in trace:
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return trace


def simulate_async_many(cluster: Cluster, *, seeds, local_steps: int | Sequence[int] = 1,
                        commits: int | None = None, horizon: float | None = None
                        ) -> list[Trace]:
    """Simulates the asynchronous cluster for every seed at once.

    The same model as :func:`~asynclab.cluster.simulate_async` (its docstring says
    what a worker, a group, a straggler, a link and the server do), for many seeds:
    the trace of seed ``s`` equals ``simulate_async(cluster, local_steps=…,
    commits=…, horizon=…, rng=s)``, array for array.

    Args:
      cluster: the cluster's timing model; :func:`array_coverage` must cover it
        (else a ConfigError naming ``cluster``).
      local_steps: λ, or one count per worker.
      commits: stop after exactly this many commits (>= 1)...
      horizon: ...or after this many simulated seconds. Give exactly one.
      seeds: a seed or a sequence of seeds, integers in ``[0, 2**32)``.

    Returns:
      A list with one :class:`Trace` per seed, in the order of ``seeds``.

    Example:
      >>> cluster = Cluster(workers=16, compute=ComputeTime("lognormal", 1.0, 0.5))
      >>> traces = simulate_async_many(cluster, commits=5000, seeds=range(1000))
    """
    _check_cluster(cluster)
    per_worker = _worker_steps(cluster, local_steps)
    widest = local_steps if per_worker is None else max(per_worker)
    field = "commits" if commits is not None else "horizon"
    limit, horizon = _check_budget("commits", commits, horizon, widest)
    _refuse_uncovered(array_coverage(cluster, synchronous=False, local_steps=local_steps),
                      "cluster")
    seeds = _seeds(seeds)
    steps = per_worker or (int(local_steps),) * cluster.workers
    trace_steps = int(local_steps) if per_worker is None else per_worker
    cycles = _arrays_async.mean_delays(cluster, steps)
    events = limit if math.isfinite(limit) else horizon * (1.0 / cycles).sum()
    _check_events(len(seeds), events, field)
    if _deterministic(cluster):
        trace = _shared(simulate_async(cluster, local_steps=local_steps, commits=commits,
                                       horizon=horizon if commits is None else None,
                                       rng=int(seeds[0])))
        return [trace] * len(seeds)
    exact = cluster.compute.distribution == "constant"  # every first arrival ties
    per_seed = int(2 * cluster.workers * max(64, events / cluster.groups * 1.2))
    merged = not (cluster.random_server or cluster.server_time != 0.0) and not any(
        s.at_time is not None for s in cluster.stragglers)

    def traces(chunk: np.ndarray) -> list[Trace]:
        time, worker, pulled, counts, tied = _arrays_async.run(cluster, steps, chunk, limit,
                                                               horizon, exact=exact)
        if tied.any():  # ties that the lowest index may break wrongly: the full key
            again = np.flatnonzero(tied)
            redo = _arrays_async.run(cluster, steps, chunk[again], limit, horizon,
                                     exact=True)
            redo = {int(s): (redo[0][i], redo[1][i], redo[2][i], redo[3][i])
                    for i, s in enumerate(again.tolist())}
        else:
            redo = {}
        out = []
        for i in range(len(chunk)):
            t, w, p, c = redo.get(i, (time[i], worker[i], pulled[i], counts[i]))
            c = int(c)
            p = p[:c]
            out.append(Trace(time=t[:c], worker=w[:c], pulled_clock=p,
                             staleness=np.arange(c, dtype=np.int32) - p,
                             n_workers=cluster.groups, local_steps=trace_steps,
                             group_size=cluster.group_size, simulator="arrays"))
        return out

    return _in_chunks(traces, seeds, per_seed, "merge" if merged else "loop")


def simulate_sync_many(
    cluster: Cluster,
    *,
    local_steps: int = 1,
    rounds: int | None = None,
    horizon: float | None = None,
    seeds,
    semisync: SemiSync | None = None,
) -> list[RoundTrace]:
    """Simulates synchronous (or semi-synchronous) rounds for every seed at once.

    The same model as :func:`~asynclab.cluster.simulate_sync`, for many seeds: the
    trace of seed ``s`` equals ``simulate_sync(cluster, local_steps=…, rounds=…,
    horizon=…, rng=s, semisync=…)``, array for array (``counted`` included).

    Args:
      cluster: the cluster's timing model; :func:`array_coverage` must cover it
        (else a ConfigError naming ``cluster``).
      local_steps: λ, local steps per worker per round.
      rounds: stop after exactly this many rounds (>= 1)...
      horizon: ...or after this many simulated seconds. Give exactly one.
      seeds: a seed or a sequence of seeds, integers in ``[0, 2**32)``.
      semisync: how a round closes before every worker is in (None: when all are).

    Returns:
      A list with one :class:`RoundTrace` per seed, in the order of ``seeds``.
    """
    _check_cluster(cluster)
    check_semisync(semisync)
    if semisync is not None:
        semisync.quorum_of(cluster.workers)  # refused before any work
    limit, horizon = _check_budget("rounds", rounds, horizon, local_steps)
    _check_activity(False)
    _refuse_uncovered(array_coverage(cluster, synchronous=True, local_steps=local_steps,
                                     semisync=semisync), "cluster")
    seeds = _seeds(seeds)
    lam = int(local_steps)
    field = "rounds" if rounds is not None else "horizon"
    cycle = cluster.compute.mean_step() * lam * min(cluster.scales) \
        + 2 * cluster.transfer_time
    events = limit if math.isfinite(limit) else horizon / cycle
    _check_events(len(seeds), events, field,
                  extra=0 if semisync is None else cluster.workers)
    if _deterministic(cluster):
        trace = _shared(simulate_sync(cluster, local_steps=lam, rounds=rounds,
                                      horizon=horizon if rounds is None else None,
                                      rng=int(seeds[0]), semisync=semisync))
        return [trace] * len(seeds)
    per_seed = int(2 * cluster.workers * max(64, min(events, 4096) * 1.2))

    def traces(chunk: np.ndarray) -> list[RoundTrace]:
        if semisync is None:
            time, duration, counts = _arrays_rounds.plain(cluster, lam, chunk, limit, horizon)
            counted, tied = None, np.zeros(len(chunk), bool)
        else:
            run = _arrays_rounds.stale if semisync.stale else _arrays_rounds.discard
            time, duration, counted, counts, tied = run(cluster, lam, chunk, semisync, limit,
                                                        horizon)
        out = []
        for i, seed in enumerate(chunk.tolist()):
            if tied[i]:  # a tie SimPy's event queue decides: SimPy simulates the seed
                out.append(simulate_sync(cluster, local_steps=lam, rounds=rounds,
                                         horizon=horizon if rounds is None else None,
                                         rng=seed, semisync=semisync))
                continue
            c = int(counts[i])
            out.append(RoundTrace(
                time=time[i, :c].copy(), duration=duration[i, :c].copy(),
                n_workers=cluster.workers, local_steps=lam,
                counted=None if counted is None else counted[i, :c].copy(),
                late=None if semisync is None else semisync.late, simulator="arrays"))
        return out

    return _in_chunks(traces, seeds, per_seed, "loop")
