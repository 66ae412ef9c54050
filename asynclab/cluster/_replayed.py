"""A step-time log replayed as a timing model: a worker's k-th step takes its logged
k-th time (:func:`from_log`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .._errors import ConfigError
from ._log_read import read_log
from ._steplog import StepLog
from ._timing import Cluster, TimingModel

ENDS: tuple[str, ...] = ("stop", "wrap")
"""What a replayed log does when a worker has used up its steps."""


#: Bytes one fitted worker costs (its entries in the model's tuples and a simulated
#: worker's process and stream).
_WORKER_BYTES = 4096


class _Steps:
    """A worker's stream of step times from a source of row times (a log's rows).

    A row covers ``per_row`` local steps; it is split into ``per_row`` equal steps. The
    simulator asks for ``(rows, width)`` phases and gets whole phases only. Only the
    steps asked for are built, so a row of many steps costs nothing until it is used.
    """

    __slots__ = ("_rows", "_per_row", "_time", "_left", "_rest")

    def __init__(self, rows, per_row: int):
        self._rows = rows  # rows(count) -> array of at most `count` row times
        self._per_row = per_row
        self._time, self._left = 0.0, 0  # the row in use and its steps not handed out
        self._rest = np.empty(0)  # steps short of a whole phase once the rows ran out

    def __call__(self, shape) -> np.ndarray:
        rows, width = shape
        per = self._per_row
        want = rows * width - self._rest.size
        take = min(self._left, max(want, 0))
        times, counts = [self._time], [take]
        self._left -= take
        if want > take:
            fetched = np.asarray(self._rows(-(-(want - take) // per)), dtype=np.float64)
            if fetched.size:
                spare = max(fetched.size * per - (want - take), 0)  # the last row's rest
                times.extend(fetched)
                counts.extend([per] * (fetched.size - 1) + [per - spare])
                self._time, self._left = float(fetched[-1]), spare
        steps = np.concatenate([self._rest, np.repeat(np.asarray(times) / per, counts)])
        m = min(rows, steps.size // width)
        self._rest = steps[m * width :]
        return steps[: m * width].reshape(m, width)


def _cursor(times: np.ndarray, end: str):
    position = [0]

    def rows(count: int) -> np.ndarray:
        i = position[0]
        if end == "stop":
            out = times[i : i + count]
        else:
            out = times[np.arange(i, i + count) % times.size]
        position[0] = i + out.size
        return out

    return rows


@dataclasses.dataclass(frozen=True, eq=False)
class ReplayedTimes(TimingModel):
    """A log replayed: worker k's j-th step takes its j-th logged time.

    Build it with :func:`from_log`. Attributes:
      times: per worker, the logged time of each row in order (seconds).
      per_row: local steps one row covers (the log's ``local_steps``).
      end: ``"stop"``: the run ends when a worker has used up its log; ``"wrap"``: the
        worker starts its log again from its first step.
      source: where the log came from.
    """

    times: tuple[np.ndarray, ...]
    per_row: int = 1
    end: str = "stop"
    source: str = "log"

    @property
    def workers(self) -> int:
        return len(self.times)

    def stream(self, worker: int, rng: np.random.Generator):
        return _Steps(_cursor(self.times[worker], self.end), self.per_row)

    def __repr__(self) -> str:
        return (f"ReplayedTimes(source={self.source!r}, workers={self.workers}, rows="
                f"{[int(t.size) for t in self.times]}, per_row={self.per_row}, end={self.end!r})")

    def mean_step(self) -> float:
        """Mean logged time of one local step over every worker's rows."""
        return float(np.mean(np.concatenate(self.times))) / self.per_row

    def describe(self) -> dict:
        return {"model": "replayed log", "source": self.source, "workers": self.workers,
                "rows": [int(t.size) for t in self.times], "local_steps_per_row": self.per_row,
                "end": self.end, "mean_step": self.mean_step()}


def _as_log(log, format: str = "auto", job=None) -> StepLog:
    if isinstance(log, StepLog):
        return log
    if isinstance(log, str | Path):
        return read_log(log, format=format, job=job)
    raise ConfigError(f"log must be a StepLog or a path to a log file, got {log!r}")


def _check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def from_log(log, *, end: str = "stop", communication: bool = True, format: str = "auto",
             **cluster_options) -> Cluster:
    """A cluster whose workers replay a log's measured step times in order.

    Worker k's j-th local step takes the j-th logged time of the log's worker k
    (compute, plus communication when ``communication`` and the log has it; the time
    of an unavailable step is added to the next available one). A row that covers λ
    local steps (``local_steps`` column) is split into λ equal steps. Everything else
    of the simulator still applies: network, server queue, stragglers, budget, and
    the trace replays with every rule and backend.

    The logged communication already contains what the real network and server took;
    keep ``network`` and ``server_time`` at 0 then, or replay compute only
    (``communication=False``) and model them.

    Args:
      log: a :class:`~asynclab.cluster.StepLog` or a path (see :func:`read_log`).
      end: what happens when a worker has used up its logged steps before the budget:
        ``"stop"`` ends the run there (the trace then has fewer events than asked;
        nothing is invented), ``"wrap"`` starts that worker's log again.
      communication: add the logged communication seconds to each step.
      format: the file layout, for a path (``"auto"``, ``"long"``, ``"wide"``).
      **cluster_options: other :class:`Cluster` fields (``network``, ``server_time``,
        ``time_scale``, ``stragglers``, ``message_bytes``, ``group_size``...).

    Returns:
      A :class:`Cluster` with one worker per logged worker.

    Example:
      >>> cluster = from_log("my_cluster.csv.gz", end="wrap")
      >>> trace = simulate_async(cluster, commits=50_000)
    """
    log = _as_log(log, format)
    _check_choice("end", end, ENDS)
    if "workers" in cluster_options or "compute" in cluster_options:
        raise ConfigError("from_log takes its workers and compute times from the log")
    times = tuple(log.durations(k, communication=bool(communication))
                  for k in range(log.n_workers))
    model = ReplayedTimes(times=times, per_row=log.local_steps, end=end, source=log.source)
    return Cluster(workers=log.n_workers, compute=model, **cluster_options)
