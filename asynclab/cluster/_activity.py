"""What every worker did when: the intervals of a simulated run, beside its trace.

The simulator records them only when asked (``activity=True``); a trace without them is
the same trace, bit for bit. They are drawn by :func:`asynclab.plot.timeline` and
exported by :func:`asynclab.cluster.export_trace`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

#: The kinds of interval, in the order of :attr:`Activity.kind`'s codes. ``compute``:
#: local steps (a group's: until its slowest member ends); ``communicate``: link
#: transfers (commit up, reply down), a group's all-reduce, and the exchange being served
#: by the parameter server; ``wait``: queued at the server, or (synchronous rounds)
#: waiting for the round's slowest worker; ``failed``: down (``Cluster.availability``).
KINDS = ("compute", "communicate", "wait", "failed")
COMPUTE, COMMUNICATE, WAIT, FAILED = range(len(KINDS))


class Activity(NamedTuple):
    """Intervals ``[start, end)`` of simulated seconds, one row each, sorted by worker
    then start; they tile each worker's time from 0 to the trace's last event (the work
    in flight then is cut there).

    Attributes:
      worker: int32 ``(I,)``, the worker (the group in a mixed cluster; the trace's
        ``worker`` numbering).
      kind: int8 ``(I,)``, an index into :data:`KINDS`.
      start: float64 ``(I,)``, seconds.
      end: float64 ``(I,)``, seconds.
      delay: float64 ``(I,)``, seconds of scheduled straggler delay
        (:class:`~asynclab.cluster.Straggler`) inside a compute interval; 0 elsewhere.
      n_workers: workers (groups) that have rows.
    """

    worker: np.ndarray
    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray
    delay: np.ndarray
    n_workers: int

    @property
    def n_intervals(self) -> int:
        return int(self.worker.shape[0])

    def seconds(self) -> np.ndarray:
        """Seconds per worker and kind: float64 ``(n_workers, len(KINDS))``."""
        out = np.zeros((self.n_workers, len(KINDS)))
        np.add.at(out, (self.worker, self.kind.astype(np.intp)), self.end - self.start)
        return out

    def shifted(self, seconds: float) -> Activity:
        """The same intervals ``seconds`` later (a part of a run joined after another)."""
        return self._replace(start=self.start + seconds, end=self.end + seconds)


def join(parts, n_workers: int) -> Activity:
    """Activities of consecutive parts of one run (already shifted), as one."""
    parts = list(parts)
    rows = [np.concatenate([getattr(p, f) for p in parts]) for f in Activity._fields[:5]]
    order = np.lexsort((rows[2], rows[0]))
    return Activity(*(r[order] for r in rows), n_workers=int(n_workers))


def _cancelled(add, k, row, lead, tail, cut, delay):
    """The intervals of an exchange cancelled at ``cut`` (its round closed first): what
    it did until then (compute, the commit message, queued or served), cut there."""
    s, arrival, granted = row[:3]

    def cut_add(code, a, b, d=0.0):
        add(k, code, a, min(b, cut), d)

    cut_add(COMMUNICATE, s, s + lead)
    cut_add(COMPUTE, s + lead, arrival - tail, delay)
    cut_add(COMMUNICATE, max(arrival - tail, s + lead), arrival)
    if cut > arrival:
        cut_add(WAIT, arrival, cut if math.isnan(granted) else granted)
        if not math.isnan(granted):
            cut_add(COMMUNICATE, granted, cut)


class Recorder:
    """The times of every exchange, appended by the simulator's processes.

    Per unit (worker or group), one row per exchange: ``[start, arrival, granted, served,
    released]``: the exchange's timeout starts (reply, compute, commit message), the
    commit reaches the server, the server takes it, the server is done with it and
    (synchronous rounds) the round's aggregate is applied: NaN where the run ended first,
    except ``released``: NaN without rounds, infinite while a worker waits for its round.
    An exchange cancelled because its semi-synchronous round closed first has a sixth
    entry, the time it was cancelled: its intervals stop there (compute, or the commit
    message, or the wait in the server's queue, cut short), and the worker's next row
    starts then.
    """

    __slots__ = ("rows", "failed")

    def __init__(self, units: int):
        self.rows = [[] for _ in range(units)]
        #: per unit, its ``(down, up)`` intervals (failures), recorded as ``failed``
        self.failed = [[] for _ in range(units)]

    def activity(self, *, end: float, down: float, tail: float, delays) -> Activity:
        """The intervals up to ``end``: ``down`` seconds of reply before each compute phase
        but the first, ``tail`` seconds of communication after it (all-reduce, commit
        message); ``delays[k]`` maps unit k's phase index to its straggler delay."""
        worker, kind, start, stop, delay = [], [], [], [], []

        def add(k, code, a, b, d=0.0):
            b = min(b, end)
            if b > a:
                worker.append(k)
                kind.append(code)
                start.append(a)
                stop.append(b)
                delay.append(d)

        for k, rows in enumerate(self.rows):
            for j, row in enumerate(rows):
                s, arrival, granted, served, released = row[:5]
                if s >= end:
                    break
                lead = down if j else 0.0
                if len(row) > 5:  # work cancelled at row[5] (a semi-synchronous round)
                    _cancelled(add, k, row, lead, tail, min(end, row[5]),
                               delays[k].get(j, 0.0))
                    continue
                add(k, COMMUNICATE, s, s + lead)
                add(k, COMPUTE, s + lead, arrival - tail, delays[k].get(j, 0.0))
                add(k, COMMUNICATE, max(arrival - tail, s + lead), arrival)
                if math.isnan(granted):
                    continue
                add(k, WAIT, arrival, granted)
                add(k, COMMUNICATE, granted, end if math.isnan(served) else served)
                if not (math.isnan(served) or math.isnan(released)):
                    add(k, WAIT, served, released)  # inf: still waiting at the end
        if any(self.failed):
            for k, intervals in enumerate(self.failed):
                for a, b in intervals:
                    add(k, FAILED, a, b)
            order = np.lexsort((start, worker))
            worker, kind, start, stop, delay = ([x[i] for i in order]
                                                for x in (worker, kind, start, stop, delay))
        return Activity(np.array(worker, np.int32), np.array(kind, np.int8),
                        np.array(start, np.float64), np.array(stop, np.float64),
                        np.array(delay, np.float64), n_workers=len(self.rows))
