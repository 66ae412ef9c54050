"""A trace cut into the device executor's calls: segments in which each worker commits at
most once (asynchronous), or rounds (synchronous), and where the records fall."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..cluster import RoundTrace, Trace
from ..engine._core import round_masks


def segment_starts(trace: Trace | RoundTrace) -> np.ndarray:
    """Where each segment begins, with the number of events appended (``(S + 1,)``).

    A :class:`RoundTrace`'s segments are its rounds. A :class:`Trace` is cut greedily in
    trace order: a segment ends just before a worker would appear in it a second time.
    """
    if isinstance(trace, RoundTrace):
        return np.arange(trace.n_events + 1, dtype=np.int64)
    starts, seen = [0], set()
    for t, k in enumerate(np.asarray(trace.worker).tolist()):
        if k in seen:
            starts.append(t)
            seen = set()
        seen.add(k)
    starts.append(trace.n_events)
    return np.asarray(starts, np.int64)


class Plan(NamedTuple):
    """The trace as the devices read it, replicated on every device.

    Attributes:
      start: ``(S,)`` index of each segment's first event.
      order: ``(S, m)`` the committing worker of each slot (``m`` = workers, or 1 for
        rounds: a semi-synchronous round's slot holds the bit mask of the workers that
        counted, bit k for worker k).
      active: ``(S, m)`` whether a slot holds an event.
      n_events: number of events.
      record_every: k, the central loss is recorded after every k-th event and the last.
    """

    start: Any
    order: Any
    active: Any
    n_events: Any
    record_every: Any


def _plan(trace, starts: np.ndarray, record_every: int) -> Plan:
    """The plan, its segment axis padded to a power of two (at least 64) so that traces
    of similar length share one compilation."""
    n_segments = starts.size - 1
    rows = max(64, 1 << max(0, n_segments - 1).bit_length())
    width = 1 if isinstance(trace, RoundTrace) else trace.n_workers
    start = np.full(rows, trace.n_events, np.int32)
    start[:n_segments] = starts[:-1]
    order = np.zeros((rows, width), np.int32)
    active = np.zeros((rows, width), bool)
    if isinstance(trace, RoundTrace):
        active[:n_segments] = True
        if trace.counted is not None:  # who counted in each semi-synchronous round
            order[:n_segments, 0] = round_masks([trace], trace.n_events)[0]
    else:
        for s in range(n_segments):
            members = trace.worker[starts[s]:starts[s + 1]]
            order[s, :members.size] = members
            active[s, :members.size] = True
    return Plan(start=start, order=order, active=active, n_events=np.int32(trace.n_events),
                record_every=np.int32(record_every))
