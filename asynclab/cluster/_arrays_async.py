"""The asynchronous cluster for many seeds at once.

Every committing unit (a worker, or a group) has one exchange in flight at a time, and
the FIFO server serves the earliest arrival next. Without a server (and without a pending
``at_time`` straggler, whose delay needs its phase's start) the units never wait for each
other: a unit's arrivals are the running sums of its timeouts, and a seed's trace is the
merge of its units' arrivals in time order, one sort (:func:`_merge`). Otherwise
:func:`run` takes one vectorised step per commit: the next commit of every seed is one
``argmin`` over the units' pending arrivals, and the end of its service is Lindley's
recursion, ``end = max(arrival, previous end) + service``. Either way the floats are
those of the SimPy processes, added in their order (a timeout ends at ``now + delay``; a
service starts at its arrival or at the previous service's end, whichever is later).

Ties. SimPy processes events at the same time in the order they were scheduled. A unit's
next arrival is scheduled when its previous commit is applied (at the start, in worker
order), so arrivals at the same time are served in the order of the commits that
scheduled them: the key ``(time, clock of the scheduling commit)``, the start counting
as clocks ``-n … -1``. The merge and the plain loop order ties by the lowest unit index,
which is that order unless two arrivals tie; they report the seeds where arrivals tied,
which run again through the loop with the full key (``exact=True``).
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
    return np.ceil(1.1 * expected).astype(np.int64) + 16


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
    if not queued and not phases.timed_workers and not exact:
        return _merge(phases, mean_delays(cluster, steps), limit, horizon)
    service = Service(cluster, seeds) if random_server else None
    if service is not None:
        service.ensure(np.full(size, min(limit, int(expected.sum())) + 1))
    down = phases.down
    rows = np.arange(size)
    base = rows * units
    arrival = phases.delays[:, :, 0].copy()  # 0.0 + delay: the first timeouts
    timed = bool(phases.timed_workers)
    if timed:
        for u in np.flatnonzero(phases.pending.any(axis=0)).tolist():
            who = np.flatnonzero(phases.pending[:, u])
            arrival[who, u] = phases.timed(who, np.full(who.size, u), np.zeros(who.size, int),
                                           np.zeros(who.size))
    flat_arrival = arrival.reshape(-1)
    pulled = np.zeros(size * units, np.int32)
    phase = np.zeros(size * units, np.int64)  # the phase in flight
    key = np.broadcast_to(np.arange(units) - units, (size, units)).copy()
    flat_key = key.reshape(-1)
    free = np.zeros(size)
    finite = np.isfinite(limit)
    cap = int(limit) if finite else int(expected.sum()) + _BLOCK
    out = _Out(size, cap, queued)
    i = 0
    finished = np.zeros(size, bool)
    biggest = np.iinfo(np.int64).max
    while i < limit and not finished.all():
        used = phase.reshape(size, units)
        drawn = phases.unit_drawn()
        if (drawn - used).min() <= _LOW:
            phases.ensure(np.where(drawn - used <= _LOW, used + _SPARE, 0))
            drawn = phases.unit_drawn()
        todo = min(int(limit) - i if finite else _BLOCK, int((drawn - used).min()) - 1,
                   _BLOCK)
        if service is not None:
            if (service.drawn - i).min() <= _LOW:
                service.ensure(np.full(size, i + _SPARE))
            todo = min(todo, int((service.drawn - i).min()))
        out.room(i + todo)
        width = phases.delays.shape[2]
        values = phases.delays.reshape(-1)
        start = np.arange(size * units) * width
        pointer = start + phase  # into values: the phase in flight of every unit
        service_times = None if service is None else service.values
        stage_time, stage_worker, stage_pulled, stage_arrival = out.stage()
        for b in range(todo):
            if exact:
                first = arrival == arrival.min(axis=1)[:, None]
                k = np.where(first, key, biggest).argmin(axis=1)
            else:
                k = arrival.argmin(axis=1)
            f = base + k
            a = flat_arrival[f]
            if queued:
                stage_arrival[b] = a
                end = np.maximum(a, free)
                end += service_times[:, i] if service is not None else server_time
                free = end
            else:
                end = a
            stage_time[b] = end
            stage_worker[b] = k
            stage_pulled[b] = pulled[f]
            pulled[f] = i + 1
            p = pointer[f] + 1
            pointer[f] = p
            delay = values[p]
            if timed:
                late = np.flatnonzero(phases.pending[rows, k])
                if late.size:
                    delay[late] = phases.timed(late, k[late], p[late] - start[f[late]],
                                               end[late] + down)
            flat_arrival[f] = end + delay
            if exact:
                flat_key[f] = i
            i += 1
        phase = pointer - start
        out.flush(i - todo, todo)
        if not finite:
            finished |= out.time[:, i - 1] > horizon
    time, worker, pulled, seen = out.arrays(i)
    counts = np.full(size, i) if finite else (time <= horizon).sum(axis=1)
    tied = np.zeros(size, bool)
    if not exact:
        same = seen[:, 1:] == seen[:, :-1]
        if finite:
            tied = same.any(axis=1) | (arrival.min(axis=1) == seen[:, -1])
        else:
            # ties matter up to the first commit past the horizon
            within = np.arange(1, i)[None, :] <= counts[:, None]
            tied = (same & within).any(axis=1)
    return time, worker, pulled, counts, tied


def _merge(phases: Phases, cycle: np.ndarray, limit, horizon):
    """The traces of a cluster whose units do not wait for each other (no server, no
    pending ``at_time`` straggler): a unit's arrivals are the running sums of its
    timeouts (``np.cumsum`` adds them in SimPy's order), and a seed's trace is the merge
    of its units' arrivals in time order, one sort. Returns as :func:`run`; ``tied``
    marks the seeds whose arrivals are not all distinct, or that the sort's keys could
    not tell apart (two arrivals within a few units in the last place): the caller runs
    them again with the loop's full key. A seed whose budget needs more arrivals than
    were drawn draws more and is merged again."""
    size = phases.delays.shape[0]
    rows = np.arange(size)
    parts = []
    while rows.size:
        done, short, reach = _merge_rows(phases, rows, limit, horizon)
        if done is not None:
            parts.append(done)
        if not short.any():
            break
        rows = rows[short]
        drawn = phases.unit_drawn()[rows]
        last = _last_arrivals(phases, rows, drawn)
        grow = last < reach[:, None]
        more = np.ceil((reach[:, None] - last) / cycle[None, :]).astype(np.int64)
        need = np.zeros(phases.drawn.shape[:1] + (phases.units,), np.int64)
        need[rows] = np.where(grow, drawn + np.maximum(more, 0) + _SPARE, 0)
        phases.ensure(need)
    width = max(part[1].shape[1] for part in parts)
    time = np.zeros((size, width))
    worker = np.zeros((size, width), np.int32)
    pulled = np.zeros((size, width), np.int32)
    counts = np.zeros(size, np.int64)
    tied = np.zeros(size, bool)
    for which, t, w, p, c, tie in parts:
        time[which, :t.shape[1]], worker[which, :t.shape[1]] = t, w
        pulled[which, :t.shape[1]], counts[which], tied[which] = p, c, tie
    return time, worker, pulled, counts, tied


def _last_arrivals(phases: Phases, rows: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """Every unit's last drawn arrival, ``(len(rows), U)``."""
    cum = np.cumsum(phases.delays[rows, :, :drawn.max()], axis=2)
    return cum[np.arange(rows.size)[:, None], np.arange(phases.units)[None, :], drawn - 1]


def _merge_rows(phases: Phases, rows: np.ndarray, limit, horizon):
    """:func:`_merge` for the seeds ``rows``: ``(done, short, reach)``, ``done`` the
    traces of the seeds that held enough arrivals (None if none did) as ``(rows, time,
    worker, pulled, counts, tied)``; ``short`` which of ``rows`` did not, and ``reach``
    how far (in seconds) they should draw."""
    units = phases.units
    finite = np.isfinite(limit)
    need = int(limit) + 1 if finite else 0  # one past the last shows a tie at the end
    drawn = phases.unit_drawn()[rows]
    every = rows.size == phases.delays.shape[0]  # all seeds (a slice, not a copy)
    cum = np.cumsum(phases.delays[slice(None) if every else rows, :, :drawn.max()],
                    axis=2)  # NaN past the draws
    size = rows.size
    index = np.arange(size)
    frontier = cum[index[:, None], np.arange(units)[None, :], drawn - 1].min(axis=1)
    if not finite:
        short = frontier <= horizon  # every arrival before the frontier has been drawn
        reach = np.full(short.sum(), 1.1 * horizon)
        if short.all():
            return None, short, reach
        rows, cum = rows[~short], cum[~short]
        size, index = rows.size, index[:rows.size]
    bits = (units - 1).bit_length()
    low = np.int64((1 << bits) - 1)
    # non-negative floats sort as their bits do; the low bits carry the unit
    keys = cum.view(np.int64) & ~low
    keys |= np.arange(units, dtype=np.int64)[None, :, None]
    keys = keys.reshape(size, -1)
    if finite and keys.shape[1] < need:  # fewer arrivals drawn than the budget
        return None, np.ones(size, bool), 1.1 * frontier * need / keys.shape[1]
    keys.sort(axis=1)
    if finite:
        # the last arrival needed must come before the first one not drawn
        short = keys[:, need - 1] >= (frontier.view(np.int64) & ~low)
        reach = 1.1 * (keys[short, need - 1] & ~low).view(np.float64)
        if short.all():
            return None, short, reach
        rows, cum, keys = rows[~short], cum[~short], keys[~short]
        size, index = rows.size, index[:rows.size]
        counts = np.full(size, int(limit))
    else:
        counts = (cum <= horizon).sum(axis=(1, 2))
    width = need if finite else int(counts.max()) + 1
    unit = keys[:, :width].astype(np.int16 if units < 2**15 else np.int32)
    unit &= unit.dtype.type(low)
    del keys
    # the phase of each arrival is its rank among its unit's arrivals: group the row by
    # unit (a stable sort keeps the time order within a unit)
    order = np.argsort(unit, axis=1, kind="stable")
    # grouped, row s holds counts[s, u] arrivals of unit u, from flat place starts[s, u]
    counts_of = np.bincount((unit + (index * units)[:, None]).reshape(-1),
                            minlength=size * units)
    starts = np.cumsum(counts_of) - counts_of
    grouped = np.repeat(np.tile(np.arange(units, dtype=unit.dtype), size), counts_of)
    rank = (np.arange(size * width) - np.repeat(starts, counts_of)).reshape(size, width)
    first = np.zeros(size * width, bool)
    first[starts[counts_of > 0]] = True
    first = first.reshape(size, width)
    grouped = grouped.reshape(size, width)
    # a commit's pulled clock: the place of its unit's previous commit, plus one
    before = np.empty(order.shape, np.int32)
    before[:, 0] = 0
    before[:, 1:] = order[:, :-1]
    before[:, 1:] += 1
    before[first] = 0
    place = np.arange(width)
    # where the arrival of each (unit, rank) is in cum, then in the time order
    where = grouped.astype(np.int64)
    where += (index * units)[:, None]
    where *= cum.shape[2]
    where += rank
    order += (index * width)[:, None]
    flat = order.reshape(-1)
    time = np.empty(size * width)
    time[flat] = cum.reshape(-1)[where.reshape(-1)]
    time = time.reshape(size, width)
    pulled = np.empty(size * width, np.int32)
    pulled[flat] = before.reshape(-1)
    pulled = pulled.reshape(size, width)
    rising = time[:, 1:] > time[:, :-1]
    if finite:
        tied = ~rising.all(axis=1)
    else:
        tied = (~rising & (place[None, 1:] < counts[:, None])).any(axis=1)
    return ((rows, time, unit.astype(np.int32), pulled, counts, tied),
            short, reach)


_BLOCK = 128  # commits staged (one row per commit) before they go to the seeds' rows


class _Out:
    """The commits of every seed, ``(S, N)`` per field; a block of commits is staged
    commit-major, as the loop writes it, and copied over in one transposition."""

    def __init__(self, size: int, cap: int, queued: bool):
        self.queued = queued
        self.time = np.empty((size, cap))
        self.worker = np.empty((size, cap), np.int32)
        self.pulled = np.empty((size, cap), np.int32)
        self.arrival = np.empty((size, cap)) if queued else self.time
        self._stage = (np.empty((_BLOCK, size)), np.empty((_BLOCK, size), np.int32),
                       np.empty((_BLOCK, size), np.int32),
                       np.empty((_BLOCK, size)) if queued else None)

    def room(self, count: int) -> None:
        cap = self.time.shape[1]
        if count <= cap:
            return
        cap = max(count, 2 * cap)
        self.time, self.worker, self.pulled = (_grow(self.time, cap), _grow(self.worker, cap),
                                               _grow(self.pulled, cap))
        self.arrival = _grow(self.arrival, cap) if self.queued else self.time

    def stage(self):
        return self._stage

    def flush(self, start: int, count: int) -> None:
        stop = start + count
        time, worker, pulled, arrival = self._stage
        self.time[:, start:stop] = time[:count].T
        self.worker[:, start:stop] = worker[:count].T
        self.pulled[:, start:stop] = pulled[:count].T
        if self.queued:
            self.arrival[:, start:stop] = arrival[:count].T

    def arrays(self, count: int):
        return (self.time[:, :count], self.worker[:, :count], self.pulled[:, :count],
                self.arrival[:, :count])


def _grow(array: np.ndarray, cap: int) -> np.ndarray:
    out = np.empty((array.shape[0], cap), array.dtype)
    out[:, :array.shape[1]] = array
    return out
