"""The one table from a trace's kind of events to what the replay does at each event.

A trace says what it holds (``trace.kind``, :data:`asynclab.cluster.TRACE_KINDS`):
asynchronous commits, commits with rejoin pulls, synchronous rounds, or semi-synchronous
rounds whose late work is discarded or counted stale. Here each kind says how its events
are laid out for the compiled loop (what a synchronous event's otherwise unused worker
entry holds, and any further per-event array) and which event function replays them. A
new kind of schedule is one entry of :data:`EVENT_KINDS` and its event function; the
compiled replay is keyed by the rule's structure, the problem, the kind and the layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from .._errors import ConfigError
from ..cluster import (
    COMMITS,
    REJOINS,
    ROUNDS,
    ROUNDS_DISCARD,
    ROUNDS_STALE,
    rejoin_events,
)
from ._core import check_late, round_masks
from ._events import asynchronous_event, masked_event, rejoining_event, synchronous_event


class Layout(NamedTuple):
    """How a compiled replay lays out its runs and events (what, beside the rule, the
    problem and the kind of events, a compiled replay depends on).

    Attributes:
      workers: the length of the worker axis (a padded one's included).
      shared: one event sequence for the whole batch (else one per run).
      unroll: events per iteration of the compiled loop.
      stepwise: a synchronous round is replayed one local step per event.
      padded: the worker axis is padded; each run's worker count is a traced value.
      devices: the devices the batch is split over.
    """

    workers: int
    shared: bool
    unroll: int = 1
    stepwise: bool = False
    padded: bool = False
    devices: tuple = ()


class EventKind(NamedTuple):
    """What the replay does with the events of one kind of trace.

    Attributes:
      synchronous: replayed by synchronous rules (rounds) or asynchronous ones (commits).
      counts_movement: the run counts how far each worker moved the centre (the
        commits', or the semi-synchronous rounds' split among who counted).
      entries: ``(traces, n_events) -> int32 (Tr, n_events)``, the worker entry of each
        event: the committing worker, or a round's mask of who counted.
      extra: ``(traces, length) -> array (Tr, length, K)``, a further per-event array
        (the rejoin pulls), or None where the kind has none.
      event: ``(rule, gradient, layout) -> event``, the event function of one run.
    """

    synchronous: bool
    counts_movement: bool
    entries: Callable
    extra: Callable
    event: Callable


def _committing_workers(traces, n_events: int) -> np.ndarray:
    out = np.zeros((len(traces), n_events), np.int32)
    for i, t in enumerate(traces):
        out[i, :t.n_events] = t.worker
    return out


def _no_entries(traces, n_events: int) -> np.ndarray:
    return np.zeros((len(traces), n_events), np.int32)


def rejoin_slots(traces, length: int) -> np.ndarray:
    """The rejoin pulls of traces with failures, as event slots: int32 ``(Tr, length,
    K)``, entry ``[i, t, j]`` a worker that pulls the centre right after commit ``t`` of
    trace i (-1: none), K the most rejoins between two commits (at least one)."""
    per_trace = [rejoin_events(t) for t in traces]
    slots = max(1, max((np.bincount(e).max() if len(e) else 0) for e, _ in per_trace))
    out = np.full((len(traces), length, slots), -1, np.int32)
    for i, (events, workers) in enumerate(per_trace):
        order = np.argsort(events, kind="stable")
        events, workers = events[order], workers[order]
        # the j-th rejoin after the same commit takes slot j
        first = np.searchsorted(events, events)
        out[i, events, np.arange(events.shape[0]) - first] = workers
    return out


def _plain_rounds(rule, gradient, layout: Layout):
    return synchronous_event(rule, gradient, layout.workers, layout.stepwise, layout.padded)


#: Every kind of trace the replay knows, and what it does at each event.
EVENT_KINDS: dict[str, EventKind] = {
    COMMITS: EventKind(False, True, _committing_workers, None,
                       lambda rule, gradient, layout: asynchronous_event(rule, gradient)),
    REJOINS: EventKind(False, True, _committing_workers, rejoin_slots,
                       lambda rule, gradient, layout: rejoining_event(rule, gradient)),
    ROUNDS: EventKind(True, False, _no_entries, None, _plain_rounds),
    ROUNDS_DISCARD: EventKind(True, True, round_masks, None,
                              lambda rule, gradient, layout: masked_event(
                                  rule, gradient, layout.workers, stale=False)),
    ROUNDS_STALE: EventKind(True, True, round_masks, None,
                            lambda rule, gradient, layout: masked_event(
                                rule, gradient, layout.workers, stale=True)),
}


def batch_kind(traces: Sequence) -> str:
    """The kind of events of traces replayed together: asynchronous traces replay as
    commits with rejoins where any of them has one; rounds must all be of one kind."""
    kinds = {t.kind for t in traces}
    if kinds <= {COMMITS, REJOINS}:
        return REJOINS if REJOINS in kinds else COMMITS
    if len(kinds) != 1:
        raise ConfigError("traces replayed together must all be plain rounds or all "
                          "semi-synchronous with one late mode, got "
                          + ", ".join(sorted(kinds)))
    return kinds.pop()


def event_kind(kind: str, rule, layout: Layout | None = None) -> EventKind:
    """The :class:`EventKind` of ``kind``, checked against the rule (and the layout)."""
    try:
        found = EVENT_KINDS[kind]
    except KeyError:
        raise ConfigError(f"the replay knows no trace kind {kind!r}; it knows "
                          f"{', '.join(EVENT_KINDS)}") from None
    if found.synchronous != rule.synchronous:
        raise ConfigError(f"{'a synchronous' if rule.synchronous else 'an asynchronous'} rule "
                          f"({rule.name}) cannot replay a trace of {kind}")
    if kind == ROUNDS_STALE:
        check_late(rule, "stale")
    if layout is not None and layout.stepwise and kind != ROUNDS:
        raise ConfigError("stepwise replays plain synchronous rounds, not semi-synchronous "
                          "ones")
    return found
