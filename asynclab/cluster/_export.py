"""A trace as files other tools open: Chrome / Perfetto trace events and JSON lines.

``ui.perfetto.dev`` (and ``chrome://tracing``) open the Trace Event Format: a JSON
object whose ``traceEvents`` list holds complete events (``"ph": "X"``, ``ts`` and
``dur`` in microseconds), instant events (``"ph": "i"``) and metadata events
(``"ph": "M"``) that name the process and its threads. Simulated seconds become
microseconds, one thread per worker (group) and one for the server.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import ConfigError
from ._activity import KINDS
from ._trace import RoundTrace, Trace, slow_workers

#: The formats of :func:`export_trace` and the file suffix each one takes.
FORMATS = {"perfetto": ".json", "jsonl": ".jsonl"}

#: The format version written in the first key of every file (``"asynclab_format":
#: "trace-events 1"``, ``"trace-records 1"``), which marks it as asynclab's.
FORMAT = 1

#: Microseconds per simulated second (the Trace Event Format counts microseconds).
MICROSECONDS = 1e6
_PID = 1
_SERVER_TID = 0


def _check_trace(trace) -> Trace | RoundTrace:
    if not isinstance(trace, Trace | RoundTrace):
        raise ConfigError(f"give a Trace or a RoundTrace (asynclab.cluster.simulate_async / "
                          f"simulate_sync), got {type(trace).__name__}")
    return trace


def _unit(trace, k: int) -> str:
    m = getattr(trace, "group_size", 1)
    if m > 1:
        return f"group {k} (workers {k * m}–{k * m + m - 1})"
    return f"worker {k}"


def _slow(trace) -> list[int]:
    return slow_workers(trace.worker, trace.n_workers) if isinstance(trace, Trace) else []


def describe(trace) -> dict:
    """What a trace is, in plain JSON types: schedule, workers, λ, groups, events, seconds,
    the interval kinds and the slow workers (:func:`~asynclab.cluster.slow_workers`)."""
    trace = _check_trace(trace)
    synchronous = isinstance(trace, RoundTrace)
    return {
        "schedule": "synchronous" if synchronous else "asynchronous",
        "n_workers": int(trace.n_workers),
        "local_steps": ([int(h) for h in trace.local_steps]  # one window per worker
                        if isinstance(trace.local_steps, tuple) else int(trace.local_steps)),
        "group_size": 1 if synchronous else int(trace.group_size),
        "events": int(trace.n_events),
        "duration": float(trace.time[-1]) if trace.n_events else 0.0,
        "activity": trace.activity is not None,
        "kinds": list(KINDS),
        "slow_workers": _slow(trace),
    }


def _who(trace: RoundTrace, r: int, missed: bool = False) -> dict:
    """``{"counted": [workers]}`` of round ``r`` of a semi-synchronous trace (with
    ``missed``, also the others'); empty for plain rounds, where every worker counts."""
    if trace.counted is None:
        return {}
    who = {"counted": np.flatnonzero(trace.counted[r]).tolist()}
    if missed:
        who["missed"] = np.flatnonzero(~trace.counted[r]).tolist()
    return who


def trace_records(trace) -> list[dict]:
    """The trace as records, one JSON object each (the lines of ``--format jsonl``).

    First ``{"asynclab_format": "trace-records 1", "type": "trace", ...}`` (schedule,
    workers, λ, group size, events, duration, whether it holds activity, the kinds, the
    slow workers; its first key marks the file as asynclab's); then, when the trace holds its
    :class:`~asynclab.cluster.Activity`, one ``{"type": "interval", "worker", "kind",
    "start", "end", "straggler_delay"}`` per interval (seconds; by worker, then start);
    then one ``{"type": "commit", "commit", "time", "worker", "pulled_clock",
    "staleness"}`` per commit of an asynchronous trace, or ``{"type": "round", "round",
    "time", "duration"}`` per round of a synchronous one; a semi-synchronous round's
    record also lists the workers that ``"counted"`` in it.
    """
    trace = _check_trace(trace)
    out = [{_files.MARKER: f"trace-records {FORMAT}", "type": "trace", **describe(trace)}]
    a = trace.activity
    if a is not None:
        names = np.array(KINDS)[a.kind]
        out += [{"type": "interval", "worker": k, "kind": kind, "start": s, "end": e,
                 "straggler_delay": d}
                for k, kind, s, e, d in zip(a.worker.tolist(), names.tolist(),
                                            a.start.tolist(), a.end.tolist(),
                                            a.delay.tolist(), strict=True)]
    if isinstance(trace, RoundTrace):
        out += [{"type": "round", "round": r, "time": t, "duration": d, **_who(trace, r)}
                for r, (t, d) in enumerate(zip(trace.time.tolist(), trace.duration.tolist(),
                                               strict=True))]
    else:
        out += [{"type": "commit", "commit": i, "time": t, "worker": k, "pulled_clock": p,
                 "staleness": s}
                for i, (t, k, p, s) in enumerate(zip(
                    trace.time.tolist(), trace.worker.tolist(), trace.pulled_clock.tolist(),
                    trace.staleness.tolist(), strict=True))]
    return out


def trace_events(trace) -> dict:
    """The trace in the Trace Event Format (Chrome / Perfetto), as a JSON-ready dict.

    Thread 0 is the server, thread k + 1 worker (group) k; slow workers' threads say
    so in their names. Every activity interval is a complete event (``"ph": "X"``) named
    and categorised by its kind (``"compute (straggler)"`` when a scheduled straggler
    delay falls in it, the delay in ``args``). Every commit is an instant event on its
    worker's thread with the commit's index, pulled clock and staleness in ``args``;
    every synchronous round's aggregate one on the server's thread (a semi-synchronous
    round's lists the workers that ``counted`` and those that ``missed`` it in ``args``,
    and each of those who missed it has a ``"missed round"`` instant event on its
    thread). ``otherData`` holds what :func:`trace_records`' first record says of the
    trace; the first key, ``"asynclab_format": "trace-events 1"``, marks the file as
    asynclab's.
    """
    trace = _check_trace(trace)
    info = describe(trace)
    slow = set(info["slow_workers"])
    events = [{"ph": "M", "pid": _PID, "tid": _SERVER_TID, "name": "process_name",
               "args": {"name": f"asynclab: {info['schedule']} cluster"}},
              {"ph": "M", "pid": _PID, "tid": _SERVER_TID, "name": "thread_name",
               "args": {"name": "server"}},
              {"ph": "M", "pid": _PID, "tid": _SERVER_TID, "name": "thread_sort_index",
               "args": {"sort_index": 0}}]
    for k in range(trace.n_workers):
        name = _unit(trace, k) + (" (slow)" if k in slow else "")
        events += [{"ph": "M", "pid": _PID, "tid": k + 1, "name": "thread_name",
                    "args": {"name": name}},
                   {"ph": "M", "pid": _PID, "tid": k + 1, "name": "thread_sort_index",
                    "args": {"sort_index": k + 1}}]
    a = trace.activity
    if a is not None:
        for k, code, s, e, d in zip(a.worker.tolist(), a.kind.tolist(), a.start.tolist(),
                                    a.end.tolist(), a.delay.tolist(), strict=True):
            event = {"ph": "X", "pid": _PID, "tid": k + 1, "cat": KINDS[code],
                     "name": KINDS[code] + (" (straggler)" if d > 0 else ""),
                     "ts": s * MICROSECONDS, "dur": (e - s) * MICROSECONDS}
            if d > 0:
                event["args"] = {"straggler_delay_s": d}
            events.append(event)
    if isinstance(trace, RoundTrace):
        events += [{"ph": "i", "s": "t", "pid": _PID, "tid": _SERVER_TID, "cat": "round",
                    "name": "aggregate", "ts": t * MICROSECONDS,
                    "args": {"round": r, "duration_s": d, **_who(trace, r, missed=True)}}
                   for r, (t, d) in enumerate(zip(trace.time.tolist(),
                                                  trace.duration.tolist(), strict=True))]
        if trace.counted is not None:
            events += [{"ph": "i", "s": "t", "pid": _PID, "tid": int(k) + 1,
                        "cat": "round", "name": "missed round",
                        "ts": float(trace.time[r]) * MICROSECONDS, "args": {"round": int(r)}}
                       for r, k in np.argwhere(~trace.counted)]
    else:
        events += [{"ph": "i", "s": "t", "pid": _PID, "tid": k + 1, "cat": "commit",
                    "name": "commit", "ts": t * MICROSECONDS,
                    "args": {"commit": i, "staleness": s, "pulled_clock": p}}
                   for i, (t, k, p, s) in enumerate(zip(
                       trace.time.tolist(), trace.worker.tolist(),
                       trace.pulled_clock.tolist(), trace.staleness.tolist(), strict=True))]
    return {_files.MARKER: f"trace-events {FORMAT}", "traceEvents": events,
            "displayTimeUnit": "ms", "otherData": info}


@_files.writes("trace-events, trace-records")
def export_trace(trace, path, *, format: str = "perfetto", overwrite: bool = False) -> Path:
    """Write ``trace`` for other tools: ``"perfetto"`` (:func:`trace_events`, a ``.json``
    file that ui.perfetto.dev and chrome://tracing open) or ``"jsonl"``
    (:func:`trace_records`, a ``.jsonl`` file, one JSON object a line). Simulate with
    ``activity=True`` to have the workers' intervals in it, not only the commits.

    The file's first key, ``"asynclab_format"``, marks it as asynclab's. An existing file
    is refused unless ``overwrite``, and then replaced only if it is a timeline asynclab
    wrote (of the same format); the write is atomic. Returns the path written.
    """
    trace = _check_trace(trace)
    if format not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    kind = "trace-events" if format == "perfetto" else "trace-records"
    path = _files.output_path(path, "path", kind=kind, overwrite=overwrite)
    if format == "perfetto":
        text = json.dumps(trace_events(trace), allow_nan=False, separators=(",", ":"))
    else:
        text = "".join(json.dumps(r, allow_nan=False) + "\n" for r in trace_records(trace))
    return _files.write_text(path, text if text.endswith("\n") else text + "\n", "path",
                             kind=kind, overwrite=overwrite)
