"""Step logs to and from the lab's runs: the log of a threads-backend run
(:func:`log_from_threads`) and the schedule a log recorded (:func:`measured_trace`)."""

from __future__ import annotations

import numpy as np

from .._errors import ConfigError
from ._steplog import StepLog, build_log
from ._trace import Trace


def log_from_threads(run) -> StepLog:
    """The step log of a free-running threads-backend run (``asynclab.backends.run_threads``).

    Each commit is one row: the worker's local work (``local_steps`` steps, measured) is
    its ``compute``; everything from the end of that work to the end of its exchange
    (waiting for the server lock, the commit-and-pull, transfers) is its
    ``communication``; it started where the worker's previous exchange ended (0 for the
    first). The measured staleness of every commit is kept, so the log records exchanges.

    Args:
      run: a ``ThreadsRun`` (``trace``, ``local_time``).

    Returns:
      A :class:`StepLog` with ``local_steps`` = the run's λ.
    """
    trace = run.trace
    if isinstance(trace.local_steps, tuple):
        raise ConfigError("log_from_threads: a step log has one λ for every row; this run "
                          f"gave its workers windows of their own, {trace.local_steps}")
    n = trace.n_workers
    worker = np.asarray(trace.worker, dtype=np.int64)
    end = np.asarray(trace.time, dtype=np.float64)
    compute = np.asarray(run.local_time, dtype=np.float64)
    start = np.zeros_like(end)
    step = np.zeros(worker.size, dtype=np.int64)
    for k in range(n):
        rows = np.flatnonzero(worker == k)
        step[rows] = np.arange(rows.size)
        start[rows[1:]] = end[rows[:-1]]
    communication = np.maximum(end - start - compute, 0.0)
    return build_log("threads run", worker=worker, step=step, start=start, compute=compute,
                  communication=communication, available=None,
                  staleness=np.asarray(trace.staleness, dtype=np.int64),
                  local_steps=int(trace.local_steps), lines=np.arange(worker.size) + 2,
                  names=tuple(str(k) for k in range(n)))


def measured_trace(log: StepLog) -> Trace:
    """The schedule a log recorded, as a replayable :class:`~asynclab.cluster.Trace`.

    Needs a log that records exchanges (a ``staleness`` column): each available row is
    one commit, applied when the row's exchange ended (start + compute +
    communication); commits are ordered by that time.

    Raises:
      ConfigError: when the log has no staleness column.
    """
    if log.staleness is None:
        raise ConfigError(f"{log.source}: the log records no exchanges (no 'staleness' "
                          "column), so it has no measured schedule")
    rows = np.ones(log.n_rows, bool) if log.available is None else log.available
    end = log.end()[rows]
    order = np.argsort(end, kind="stable")
    staleness = log.staleness[rows][order]
    clock = np.arange(staleness.size)
    if np.any(staleness > clock):
        t = int(np.flatnonzero(staleness > clock)[0])
        raise ConfigError(f"{log.source}: commit {t} (in the order of exchange ends) has "
                          f"staleness {int(staleness[t])}, more than the {t} commits before it")
    return Trace(time=end[order], worker=log.worker[rows][order].astype(np.int32),
                 pulled_clock=(clock - staleness).astype(np.int32),
                 staleness=staleness.astype(np.int32), n_workers=log.n_workers,
                 local_steps=log.local_steps)
