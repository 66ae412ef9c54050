"""The asynchronous cluster for many seeds at once: one vectorised step per commit.

Every committing unit (a worker, or a group) has one exchange in flight at a time: its
commit arrives at the server at a known time, and it is the earliest arrival that the
FIFO server serves next. So the k-th commit of every seed is found by one ``argmin`` over
the units' pending arrivals, and the server's end of service by Lindley's recursion,
``end = max(arrival, previous end) + service``: the same float operations, in the same
order, as the SimPy processes (a timeout ends at ``now + delay``; a service starts at the
arrival or at the previous service's end, whichever is later).

Ties. SimPy processes events at the same time in the order they were scheduled. A unit's
next arrival is scheduled when its previous commit is applied (at the start, in worker
order), so arrivals at the same time are served in the order of the commits that
scheduled them: the key ``(time, clock of the scheduling commit)``, the start counting
as clocks ``-n … -1``. :func:`run` breaks ties by the lowest index, which is that order
unless two arrivals tie; it reports the seeds where one did, and runs them again with
the full key (``exact=True``).
"""

from __future__ import annotations

import numpy as np

from ._arrays_streams import Phases, Service

_SPARE = 64  # phases (and service times) drawn ahead when a unit runs low...
_LOW = 16  # ...at this many


def mean_delays(cluster, steps: tuple[int, ...]) -> np.ndarray:
    """Mean seconds between two exchanges of every committing unit, without queueing."""
    mean = cluster.compute.mean_step()
    x = cluster.transfer_time
    phase = np.array([mean * s * lam for s, lam in zip(cluster.scales, steps, strict=True)])
    m = cluster.group_size
    if m > 1:
        return phase.reshape(-1, m).max(axis=1) + cluster.intra_group_time + 2 * x
    return phase + 2 * x


def _expected_phases(cluster, steps, limit, horizon) -> np.ndarray:
    """Phases every unit will roughly use: its share of the commits, or the horizon over
    its mean cycle (a generous guess; more are drawn when a unit runs out)."""
    cycle = mean_delays(cluster, steps)
    if np.isfinite(limit):
        rate = 1.0 / cycle
        expected = limit * rate / rate.sum()
    else:
        expected = horizon / cycle
    return np.ceil(1.05 * expected).astype(np.int64) + 16


def run(cluster, steps: tuple[int, ...], seeds: np.ndarray, limit, horizon,
        exact: bool = False):
    """Simulate the asynchronous cluster for every seed of ``seeds``.

    Args:
      cluster: a :class:`~asynclab.cluster.Cluster` the array path covers.
      steps: λ per worker.
      seeds: ``(S,)`` integer seeds.
      limit: commits (``inf`` with a horizon).
      horizon: seconds (``inf`` with a commit budget).
      exact: break ties between equal arrival times by the full SimPy key (slower).

    Returns:
      ``(time, worker, pulled, counts, tied)``: ``(S, N)`` float64, int32, int32 arrays
      whose first ``counts[s]`` entries of row s are seed s's commits, and a bool
      ``(S,)``, the seeds where two arrivals tied (always False with ``exact``).
    """
    size = len(seeds)
    phases = Phases(cluster, steps, seeds, grouped=True)
    units = phases.units
    expected = _expected_phases(cluster, steps, limit, horizon)
    phases.ensure(np.broadcast_to(expected + 2, (size, units)))
    random_server = cluster.random_server
    server_time = 0.0 if random_server else cluster.server_time
    queued = random_server or server_time != 0.0
    service = Service(cluster, seeds) if random_server else None
    if service is not None:
        service.ensure(np.full(size, min(limit, int(expected.sum())) + 1))
    down = phases.down
    rows = np.arange(size)
    base = rows * units
    used = np.zeros((size, units), np.int64)
    arrival = phases.delays[:, :, 0].copy()  # 0.0 + delay: the first timeouts
    timed = bool(phases.timed_workers)
    if timed:
        for u in np.flatnonzero(phases.pending.any(axis=0)).tolist():
            who = np.flatnonzero(phases.pending[:, u])
            arrival[who, u] = phases.timed(who, np.full(who.size, u), np.zeros(who.size, int),
                                           np.zeros(who.size))
    key = np.broadcast_to(np.arange(units) - units, (size, units)).copy()
    pulled = np.zeros((size, units), np.int64)
    free = np.zeros(size)
    budget = int(limit) if np.isfinite(limit) else int(expected.sum()) + 1
    cap = budget if np.isfinite(limit) else max(64, budget)
    out_time = np.empty((cap, size))
    out_worker = np.empty((cap, size), np.int32)
    out_pulled = np.empty((cap, size), np.int32)
    out_arrival = np.empty((cap, size)) if queued else out_time
    i = 0
    finished = np.zeros(size, bool)
    flat_arrival, flat_used = arrival.reshape(-1), used.reshape(-1)
    flat_pulled, flat_key = pulled.reshape(-1), key.reshape(-1)
    while True:
        if np.isfinite(limit):
            todo = int(limit) - i
        elif finished.all():
            break
        else:
            todo = 1 << 30
        if todo <= 0:
            break
        drawn = phases.unit_drawn()
        if (drawn - used).min() <= _LOW:
            phases.ensure(np.where(drawn - used <= _LOW, used + _SPARE, 0))
            drawn = phases.unit_drawn()
        todo = min(todo, int((drawn - used).min()) - 1)
        if service is not None:
            if (service.drawn - i).min() <= _LOW:
                service.ensure(np.full(size, i + _SPARE))
            todo = min(todo, int((service.drawn - i).min()))
        if i + todo > cap:
            cap = max(i + todo, cap * 2) if np.isfinite(limit) else max(cap * 2, i + 1024)
            todo = min(todo, cap - i)
            out_time, out_worker, out_pulled = (
                _grow(out_time, cap), _grow(out_worker, cap), _grow(out_pulled, cap))
            out_arrival = _grow(out_arrival, cap) if queued else out_time
        if not np.isfinite(limit):
            todo = min(todo, 256)  # look at the horizon now and then
        width = phases.delays.shape[2]
        flat_delays = phases.delays.reshape(-1)
        service_times = None if service is None else service.values
        for _ in range(todo):
            if exact:
                first = arrival == arrival.min(axis=1)[:, None]
                k = np.where(first, key, np.iinfo(np.int64).max).argmin(axis=1)
            else:
                k = arrival.argmin(axis=1)
            f = base + k
            a = flat_arrival[f]
            if queued:
                out_arrival[i] = a
                end = np.maximum(a, free)
                end += service_times[:, i] if service is not None else server_time
                free = end
            else:
                end = a
            out_time[i] = end
            out_worker[i] = k
            out_pulled[i] = flat_pulled[f]
            flat_pulled[f] = i + 1
            j = flat_used[f] + 1
            flat_used[f] = j
            delay = flat_delays[f * width + j]
            if timed:
                late = np.flatnonzero(phases.pending[rows, k])
                if late.size:
                    delay[late] = phases.timed(late, k[late], j[late], end[late] + down)
            flat_arrival[f] = end + delay
            if exact:
                flat_key[f] = i
            i += 1
        if not np.isfinite(limit):
            finished |= out_time[i - 1] > horizon
    if np.isfinite(limit):
        counts = np.full(size, i)
    else:
        counts = (out_time[:i] <= horizon).sum(axis=0)
    tied = np.zeros(size, bool)
    if not exact:
        seen = out_arrival[:i]
        same = seen[1:] == seen[:-1]
        if np.isfinite(limit):
            tied = same.any(axis=0) | (arrival.min(axis=1) == seen[-1])
        else:
            # ties matter up to the first commit past the horizon
            within = np.arange(1, i)[:, None] <= counts[None, :]
            tied = (same & within).any(axis=0)
    return (out_time[:i].T, out_worker[:i].T, out_pulled[:i].T, counts, tied)


def _grow(array: np.ndarray, cap: int) -> np.ndarray:
    out = np.empty((cap,) + array.shape[1:], array.dtype)
    out[:array.shape[0]] = array
    return out
