"""The step log of a cluster: :class:`StepLog`, per-worker step times as plain arrays
sorted by (worker, step), and :func:`build_log`, the one place a log is put in order and
checked across its rows, whatever it was read or made from."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._errors import ConfigError


class StepLog(NamedTuple):
    """Measured step times of a cluster, one entry per step of one worker.

    Rows are sorted by worker, then step. Workers are numbered 0 … n − 1; ``names``
    keeps the labels the file used.

    Attributes:
      worker: int64 ``(R,)``, the worker of each row (0 … n − 1, every one present).
      step: int64 ``(R,)``, the worker's step number, strictly increasing per worker.
      start: float64 ``(R,)``, seconds at which the step started (any common origin).
      compute: float64 ``(R,)``, seconds of computation, finite and >= 0.
      communication: float64 ``(R,)`` seconds of communication after the step (commit,
        waiting for the server, pull), or None when the log has none.
      available: bool ``(R,)``, False for a step the worker spent unavailable (its time
        passed but produced no update), or None when every step was available.
      staleness: int64 ``(R,)``, the measured staleness of the exchange that ended the
        step, or None when the log does not record exchanges.
      local_steps: int, local steps (λ) one row covers: 1 when a row is one step, λ when
        a row is a whole compute phase between two exchanges.
      names: the worker labels of the file, one per worker.
      source: where the log came from (a path or a description), for messages.
    """

    worker: np.ndarray
    step: np.ndarray
    start: np.ndarray
    compute: np.ndarray
    communication: np.ndarray | None
    available: np.ndarray | None
    staleness: np.ndarray | None
    local_steps: int
    names: tuple[str, ...]
    source: str = "log"

    @property
    def n_workers(self) -> int:
        return len(self.names)

    @property
    def n_rows(self) -> int:
        return int(self.worker.shape[0])

    def steps_per_worker(self) -> np.ndarray:
        """``(n,)`` rows per worker."""
        return np.bincount(self.worker, minlength=self.n_workers)

    def rows(self, worker: int) -> slice:
        """The rows of ``worker`` (they are contiguous: rows are sorted by worker)."""
        low, high = np.searchsorted(self.worker, [worker, worker + 1])
        return slice(int(low), int(high))

    def durations(self, worker: int, *, communication: bool = True) -> np.ndarray:
        """The time each available step of ``worker`` took, in order.

        A step's time is its compute seconds, plus its communication seconds when
        ``communication`` is true and the log has them. The time of an unavailable step
        is added to the worker's next available step (the worker was away, then
        computed), so no time is lost and no update is invented.
        """
        rows = self.rows(worker)
        time = self.compute[rows].copy()
        if communication and self.communication is not None:
            time += self.communication[rows]
        if self.available is None:
            return time
        up = self.available[rows]
        # carry each unavailable stretch onto the next available step
        carried = np.cumsum(np.where(up, 0.0, time))
        at_up = carried[up]
        before = np.concatenate([[0.0], at_up[:-1]])
        out = time[up] + (at_up - before)
        return out

    def compute_times(self, worker: int) -> np.ndarray:
        """The compute seconds of ``worker``'s available steps, in order (for fitting)."""
        rows = self.rows(worker)
        if self.available is not None:
            return self.compute[rows][self.available[rows]]
        return self.compute[rows]

    def end(self) -> np.ndarray:
        """``(R,)`` seconds at which each row's exchange ended: start + compute + communication."""
        end = self.start + self.compute
        if self.communication is not None:
            end = end + self.communication
        return end


def build_log(path, *, worker, step, start, compute, communication, available, staleness,
              local_steps, lines, names=None) -> StepLog:
    """Sorts, numbers the workers and checks everything that spans rows."""
    source = str(path)
    if worker.size == 0:
        raise ConfigError(f"{source}: the log has a header but no steps")
    if names is None:
        if np.any(worker < 0):
            i = int(np.flatnonzero(worker < 0)[0])
            raise ConfigError(f"{source}, line {lines[i]}, column 'worker': worker ids must be "
                              f"integers >= 0, got {worker[i]:g}")
        ids = worker.astype(np.int64, copy=False)
        first = int(ids.min())
        count = int(ids.max()) - first + 1
        if count <= ids.size:  # counted in one pass (a sort where ids could be huge)
            present = np.flatnonzero(np.bincount(ids - first, minlength=count)) + first
        else:
            present = np.unique(ids)  # at most one entry per row, whatever the ids claim
        if present.size != count:
            missing = int(present[np.flatnonzero(np.diff(present) > 1)[0]]) + 1
            raise ConfigError(f"{source}: worker {missing} has no steps (the log has workers "
                              f"{first} … {first + count - 1}; renumber them without gaps)")
        names = tuple(str(first + k) for k in range(count))
        worker = ids - first
    step = step.astype(np.int64, copy=False)
    if np.any(step < 0):
        i = int(np.flatnonzero(step < 0)[0])
        raise ConfigError(f"{source}, line {lines[i]}, column 'step': steps must be >= 0, got "
                          f"{step[i]}")
    ordered = bool(np.all((worker[1:] > worker[:-1])
                          | ((worker[1:] == worker[:-1]) & (step[1:] >= step[:-1]))))
    # a log in (worker, step) order, as asynclab writes them, keeps its order (a sort
    # would give the same, at the cost of a sort of every row)
    order = slice(None) if ordered else np.lexsort((step, worker))
    worker, step, lines = worker[order], step[order], np.asarray(lines)[order]
    same = (worker[1:] == worker[:-1]) & (step[1:] == step[:-1])
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise ConfigError(f"{source}, lines {min(lines[i], lines[i + 1])} and "
                          f"{max(lines[i], lines[i + 1])}: worker {names[worker[i]]} has step "
                          f"{step[i]} twice")

    def take(a):
        return None if a is None else a[order]

    start, compute = start[order], compute[order]
    communication, available, staleness = take(communication), take(available), take(staleness)
    back = (worker[1:] == worker[:-1]) & (start[1:] < start[:-1])
    if back.any():
        i = int(np.flatnonzero(back)[0]) + 1
        raise ConfigError(f"{source}, line {lines[i]}, column 'start': worker "
                          f"{names[worker[i]]}'s step {step[i]} starts at {float(start[i])!r}, "
                          f"before its step {step[i - 1]} ({float(start[i - 1])!r})")
    if available is not None:
        up = np.bincount(worker[available], minlength=len(names))
        if (up == 0).any():
            k = int(np.flatnonzero(up == 0)[0])
            raise ConfigError(f"{source}: worker {names[k]} has no available steps")
    if staleness is not None:
        staleness = staleness.astype(np.int64, copy=False)
    return StepLog(worker=worker.astype(np.int64, copy=False), step=step, start=start,
                   compute=compute, communication=communication, available=available,
                   staleness=staleness,
                   local_steps=local_steps, names=tuple(names), source=source)
