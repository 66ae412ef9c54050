"""Synchronous and semi-synchronous rounds for many seeds at once.

Plain rounds and discard-mode semi-synchronous rounds restart every worker when a round
closes, so a round is one vectorised step over the seeds: every worker's commit
arrives at ``open + delay``, the FIFO server serves the arrivals in time order
(Lindley's recursion), and the round closes at its K-th commit, its window or its
deadline. Stale-mode rounds let late work run on, so they are stepped one count (or one
timer) at a time, like the asynchronous loop. Every float is added as the SimPy
processes add it (a timer at ``open + window``, a deadline at ``open + window +
(deadline - window)``).

Ties. Where two events at the same time could happen in either order in SimPy (two
arrivals whose order decides who counts, a commit at a window or deadline), the seed is
reported (``tied``) and the caller simulates it with SimPy. Stale rounds order arrivals
at the same time as SimPy does: by when they were scheduled.
"""

from __future__ import annotations

import numpy as np

from ._arrays_streams import Phases, Service

_CHUNK_ROUNDS = 256  # rounds drawn ahead


def _expected_rounds(cluster, lam: int, limit, horizon) -> int:
    if np.isfinite(limit):
        return int(limit) + 1
    cycle = cluster.compute.mean_step() * lam * min(cluster.scales) + 2 * cluster.transfer_time
    return int(1.1 * horizon / cycle) + 8


class _Server:
    """The FIFO server of a chunk of seeds: none, a constant or random service time."""

    def __init__(self, cluster, seeds):
        self.random = cluster.random_server
        self.constant = 0.0 if self.random else cluster.server_time
        self.queued = self.random or self.constant != 0.0
        self.draws = Service(cluster, seeds) if self.random else None
        self.used = np.zeros(len(seeds), np.int64)

    def times(self, rows, count: int) -> list:
        """The next ``count`` service times of every seed (not yet marked used)."""
        if not self.random:
            return [self.constant] * count
        draws = self.draws
        if (draws.drawn - self.used).min() < count:
            draws.ensure(self.used + count + _CHUNK_ROUNDS)
        return [draws.values[rows, self.used + j] for j in range(count)]


def _delays(phases: Phases, r: int, start: np.ndarray) -> np.ndarray:
    """Every worker's timeout for its phase ``r``, the phase starting at ``start``."""
    size = len(phases.seeds)
    if phases.drawn.min() <= r:
        phases.ensure(np.full((size, phases.n), r + 1 + _CHUNK_ROUNDS))
    out = phases.delays[:, :, r].copy()
    if phases.timed_workers:
        seeds, workers = np.nonzero(phases.pending)
        if seeds.size:
            out[seeds, workers] = phases.timed(seeds, workers, np.full(seeds.size, r),
                                               start[seeds])
    return out


def _serve(server: _Server, rows, arrivals: np.ndarray):
    """Lindley's recursion over the sorted arrivals of one round (the server is idle
    when a round opens): service starts and ends, ``(S, n)`` each."""
    n = arrivals.shape[1]
    times = server.times(rows, n)
    starts = np.empty_like(arrivals)
    ends = np.empty_like(arrivals)
    free = arrivals[:, 0]
    for j in range(n):
        starts[:, j] = np.maximum(arrivals[:, j], free)
        free = ends[:, j] = starts[:, j] + times[j]
    return starts, ends


def plain(cluster, lam: int, seeds: np.ndarray, limit, horizon):
    """Plain synchronous rounds: ``(time, duration, counts)`` with ``(S, R)`` arrays."""
    size = len(seeds)
    phases = Phases(cluster, (lam,) * cluster.workers, seeds, grouped=False)
    down = phases.down
    server = _Server(cluster, seeds)
    rows = np.arange(size)
    expected = _expected_rounds(cluster, lam, limit, horizon)
    phases.ensure(np.full((size, cluster.workers), expected))
    if not server.queued and not phases.timed_workers:
        # every worker restarts at the close, T_r = T_{r-1} + max_k delay (float
        # addition is monotone, so the max of the sums is the sum with the max)
        while True:
            width = int(phases.drawn.min())
            if np.isfinite(limit) and width < limit:
                phases.ensure(np.full((size, cluster.workers), int(limit)))
                continue
            times = np.cumsum(phases.delays[:, :, :width].max(axis=1), axis=1)
            if np.isfinite(limit) or (times[:, -1] > horizon).all():
                break
            phases.ensure(np.full((size, cluster.workers), 2 * width))
        if np.isfinite(limit):
            times = times[:, :int(limit)]
    else:
        columns = []
        close = np.zeros(size)
        r = 0
        while r < limit and not (r and (close > horizon).all()):
            start = close + down if r else np.zeros(size)
            arrivals = np.sort(close[:, None] + _delays(phases, r, start), axis=1)
            if server.queued:
                _, ends = _serve(server, rows, arrivals)
                close = ends[:, -1]
                server.used += cluster.workers
            else:
                close = arrivals[:, -1]
            columns.append(close)
            r += 1
        times = np.stack(columns, axis=1)
    counts = np.full(size, times.shape[1]) if np.isfinite(limit) else \
        (times <= horizon).sum(axis=1)
    return times, _durations(times, down), counts


def _durations(times: np.ndarray, down: float) -> np.ndarray:
    """From each round's start (the previous reply's arrival) to its reply's arrival."""
    ends = times + down
    out = np.empty_like(ends)
    if ends.shape[1]:
        out[:, 0] = ends[:, 0] - 0.0
        out[:, 1:] = ends[:, 1:] - ends[:, :-1]
    return out


def _setup(cluster, lam: int, seeds: np.ndarray, semisync, first: int):
    """What both semi-synchronous loops start from: ``(n, seeds' count, quorum, the
    phases (``first`` of them drawn per worker), the reply's link time, the server, the
    seeds' rows)``."""
    n = cluster.workers
    size = len(seeds)
    phases = Phases(cluster, (lam,) * n, seeds, grouped=False)
    phases.ensure(np.full((size, n), first))
    return (n, size, semisync.quorum_of(n), phases, phases.down, _Server(cluster, seeds),
            np.arange(size))


def discard(cluster, lam: int, seeds: np.ndarray, semisync, limit, horizon):
    """Semi-synchronous rounds whose late work is cancelled.

    Returns:
      ``(time, duration, counted, counts, tied)``: ``(S, R)``, ``(S, R)``, bool
      ``(S, R, n)``, the rounds per seed, and the seeds with a tie SimPy may order
      otherwise.
    """
    n, size, quorum, phases, down, server, rows = _setup(
        cluster, lam, seeds, semisync, min(_expected_rounds(cluster, lam, limit, horizon),
                                           _CHUNK_ROUNDS))
    deadline = semisync.deadline
    window = semisync.window
    rank = np.arange(n)
    out_time, out_counted = [], []
    tied = np.zeros(size, bool)
    finished = np.zeros(size, bool)
    close = np.zeros(size)
    r = 0
    while r < limit and not finished.all():
        opened = close
        start = opened + down if r else np.zeros(size)
        arrivals = opened[:, None] + _delays(phases, r, start)
        order = np.argsort(arrivals, axis=1, kind="stable")
        arrivals = np.take_along_axis(arrivals, order, axis=1)
        tie = (arrivals[:, 1:] == arrivals[:, :-1]).any(axis=1)
        if server.queued:
            starts, counts = _serve(server, rows, arrivals)
        else:
            starts, counts = None, arrivals
        timer = np.zeros(size, bool)  # closed by a timer, not by a commit
        if quorum is not None:
            close = counts[:, quorum - 1].copy()
            number = np.full(size, quorum)
            if deadline is not None and np.isfinite(deadline):
                cut = opened + deadline
                timer = cut < close
                tie |= (counts == cut[:, None]).any(axis=1)
                close = np.where(timer, cut, close)
                number = np.where(timer, (counts < cut[:, None]).sum(axis=1), number)
        else:
            m = semisync.min_count
            due = opened + window
            at_window = (counts < due[:, None]).sum(axis=1)
            tie |= (counts == due[:, None]).any(axis=1)
            if deadline is None or not np.isfinite(deadline):
                cut = np.full(size, np.inf)
            else:
                cut = due + (deadline - window)
            mth = counts[:, m - 1]
            early = at_window >= m
            late = ~early & (mth > cut)
            tie |= ~early & (counts == cut[:, None]).any(axis=1)
            close = np.where(early, due, np.where(late, cut, mth))
            number = np.where(early, at_window,
                              np.where(late, (counts < cut[:, None]).sum(axis=1), m))
            timer = early | late
        if starts is not None:
            tie |= timer & (starts == close[:, None]).any(axis=1)
            served = np.where(timer, (starts < close[:, None]).sum(axis=1), number)
            server.used += served
        mask = np.zeros((size, n), bool)
        np.put_along_axis(mask, order, rank[None, :] < number[:, None], axis=1)
        tied |= tie & ~finished
        out_time.append(close)
        out_counted.append(mask)
        r += 1
        finished |= close > horizon
    times = np.stack(out_time, axis=1)
    counts = np.full(size, r) if np.isfinite(limit) else (times <= horizon).sum(axis=1)
    return (times, _durations(times, down), np.stack(out_counted, axis=1), counts, tied)


def stale(cluster, lam: int, seeds: np.ndarray, semisync, limit, horizon):
    """Semi-synchronous rounds whose late work counts in the round open when it
    arrives, stepped one commit (or one timer) at a time; returns as :func:`discard`."""
    n, size, quorum, phases, down, server, rows = _setup(cluster, lam, seeds, semisync,
                                                         _CHUNK_ROUNDS)
    deadline = semisync.deadline
    has_deadline = deadline is not None and np.isfinite(deadline)
    window = semisync.window
    inf = np.inf
    used = np.zeros((size, n), np.int64)
    arrival = _delays(phases, 0, np.zeros(size))
    key = np.broadcast_to(np.arange(n), (size, n)).copy()
    sequence = np.full(size, n)
    order = np.zeros((size, n), np.int64)  # who counted when, in the open round
    waiting = np.zeros((size, n), bool)
    number = np.zeros(size, np.int64)
    opened = np.zeros(size)
    free = np.zeros(size)
    over = np.zeros(size, bool)  # a window's time is past
    timer = _first_timer(semisync, opened)
    rounds = np.zeros(size, np.int64)
    cap = int(limit) if np.isfinite(limit) else _expected_rounds(cluster, lam, limit, horizon)
    out_time = np.zeros((size, cap))
    out_counted = np.zeros((size, cap, n), bool)
    tied = np.zeros(size, bool)
    finished = np.zeros(size, bool)
    biggest = np.iinfo(np.int64).max
    while not finished.all():
        first = arrival == arrival.min(axis=1)[:, None]
        k = np.where(first, key, biggest).argmin(axis=1)
        a = arrival[rows, k]
        if server.queued:
            service = server.times(rows, 1)[0]
            count_at = np.maximum(a, free) + service
        else:
            count_at = a
        tied |= (count_at == timer) & ~finished  # SimPy decides; the count goes first here
        counts_now = (count_at <= timer) & ~finished
        fires = (timer < count_at) & ~finished
        # a commit counts in the open round
        c = np.flatnonzero(counts_now)
        if c.size:
            kc = k[c]
            if server.queued:
                free[c] = count_at[c]
                server.used[c] += 1
            order[c, kc] = number[c]
            number[c] += 1
            waiting[c, kc] = True
            arrival[c, kc] = inf
            if quorum is not None:
                full = c[number[c] == quorum]
            else:
                full = c[over[c] & (number[c] >= semisync.min_count)]
        else:
            full = c
        # a timer: a quorum's deadline, a window's time or its deadline
        t = np.flatnonzero(fires)
        closing = [(full, count_at[full])]
        if t.size:
            if quorum is not None:
                closing.append((t, timer[t]))
            else:
                enough = (number[t] >= semisync.min_count) | over[t]
                closing.append((t[enough], timer[t[enough]]))
                wait = t[~enough]
                over[wait] = True
                timer[wait] = timer[wait] + (deadline - window) if has_deadline else inf
        for who, at in closing:
            if not who.size:
                continue
            keep = ~(at > horizon)
            record = who[keep]
            slot = rounds[record]
            out_time, out_counted = _room(out_time, out_counted, int(slot.max(initial=-1)) + 1)
            out_time[record, slot] = at[keep]
            out_counted[record, slot] = waiting[record]
            rounds[record] += 1
            finished[who[~keep]] = True
            finished[record[rounds[record] >= limit]] = True
            _release(phases, who, at, waiting, order, number, used, arrival, key, sequence,
                     down)
            opened[who] = at
            over[who] = False
            timer[who] = _first_timer(semisync, at)
    times = out_time
    width = int(rounds.max()) if rounds.size else 0
    return (times[:, :width], _durations(times[:, :width], down),
            out_counted[:, :width], rounds, tied)


def _first_timer(semisync, opened: np.ndarray) -> np.ndarray:
    """The first timer of a round opened at ``opened``: its window, a quorum's fixed
    deadline, or none (``inf``)."""
    if semisync.window is not None:
        return opened + semisync.window
    deadline = semisync.deadline
    if deadline is not None and np.isfinite(deadline):
        return opened + deadline
    return np.full(opened.shape, np.inf)


def _release(phases, who, at, waiting, order, number, used, arrival, key, sequence, down):
    """The workers that counted in the rounds of seeds ``who``, closed at ``at``, pull
    and start their next phase, in the order they counted (SimPy resumes them so)."""
    seeds, workers = np.nonzero(waiting[who])
    if seeds.size:
        rows = who[seeds]
        phase = used[rows, workers] + 1
        used[rows, workers] = phase
        need = int(phase.max()) + 1
        if need > phases.drawn.min():
            phases.ensure(np.maximum(phases.drawn, need + _CHUNK_ROUNDS))
        delay = phases.delays[rows, workers, phase]
        if phases.timed_workers:
            late = np.flatnonzero(phases.pending[rows, workers])
            if late.size:
                delay[late] = phases.timed(rows[late], workers[late], phase[late],
                                           at[seeds[late]] + down)
        arrival[rows, workers] = at[seeds] + delay
        key[rows, workers] = sequence[rows] + order[rows, workers]
    sequence[who] += number[who]
    waiting[who] = False
    number[who] = 0


def _room(times, counted, width):
    if width <= times.shape[1]:
        return times, counted
    width = max(width, 2 * times.shape[1])
    grown_t = np.zeros((times.shape[0], width))
    grown_t[:, :times.shape[1]] = times
    grown_c = np.zeros((counted.shape[0], width, counted.shape[2]), bool)
    grown_c[:, :counted.shape[1]] = counted
    return grown_t, grown_c
