"""Availability: when workers are down (a fixed schedule, or Poisson churn).

An :class:`Availability` sits on :attr:`Cluster.availability`; both simulators read it.
A worker that goes down loses the work of the compute phase it was in (no commit); when
it comes back up it pulls the current centre and starts a new phase (a synchronous
round waits for it). The trace records every failure the run reached as a
:class:`Failures` table, and :func:`goodput` counts the useful work.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import _files
from .._errors import ConfigError

#: Down/up intervals a worker draws at once under Poisson churn (a fixed block size, so
#: the draws never depend on how long the run is).
_CHURN_BLOCK = 64


def _positive(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{field} must be a number > 0 (seconds), got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{field} must be a finite number > 0 (seconds), got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class Availability:
    """When workers are down: a fixed schedule, or Poisson churn.

    Give either ``schedule`` (a list of ``(worker, down_at, up_at)``; an availability log
    loaded as an ``(m, 3)`` array works as it is), or both ``mtbf`` and ``mttr``: then
    every worker alternates up-times drawn from Exp(mean ``mtbf``) and down-times from
    Exp(mean ``mttr``), starting up at time 0, so in the long run it is up a fraction
    ``mtbf / (mtbf + mttr)`` of the time. Worker k draws from its own generator, a child
    of one generator kept for failures, so the workers' step times (and a random
    server's service times) are those of the same cluster without failures.

    Attributes:
      schedule: ``((worker, down_at, up_at), ...)``: the worker is down from ``down_at``
        to ``up_at`` seconds (``0 <= down_at < up_at``, ``up_at`` may be ``inf``: it
        never comes back). A worker's intervals must not overlap.
      mtbf: mean time between failures (seconds of being up), finite and > 0.
      mttr: mean time to repair (seconds of being down), finite and > 0.

    Example:
      >>> Cluster(workers=4, availability=Availability(mtbf=100.0, mttr=10.0))
      >>> Cluster(workers=2, availability=Availability(schedule=[(1, 2.5, 4.0)]))
    """

    schedule: tuple[tuple[int, float, float], ...] | None = None
    mtbf: float | None = None
    mttr: float | None = None

    def __post_init__(self):
        churn = self.mtbf is not None or self.mttr is not None
        if churn and self.schedule is not None:
            raise ConfigError("Availability: give schedule, or mtbf and mttr, not both")
        if churn:
            if self.mtbf is None or self.mttr is None:
                raise ConfigError("Availability: Poisson churn needs both mtbf and mttr, got "
                                  f"mtbf={self.mtbf!r}, mttr={self.mttr!r}")
            object.__setattr__(self, "mtbf", _positive("Availability.mtbf", self.mtbf))
            object.__setattr__(self, "mttr", _positive("Availability.mttr", self.mttr))
            return
        if self.schedule is None:
            raise ConfigError("Availability: give schedule=[(worker, down_at, up_at), ...], "
                              "or mtbf and mttr")
        object.__setattr__(self, "schedule", _check_schedule(self.schedule))

    @property
    def random(self) -> bool:
        """Whether failures are drawn (Poisson churn) rather than given."""
        return self.schedule is None

    @property
    def up_fraction(self) -> float:
        """The long-run fraction of time a worker is up, ``mtbf / (mtbf + mttr)`` (churn
        only)."""
        if self.random:
            return self.mtbf / (self.mtbf + self.mttr)
        raise ConfigError("Availability.up_fraction is defined for Poisson churn only")

    def check_workers(self, workers: int) -> None:
        """Refuses a schedule that names a worker outside ``[0, workers)``."""
        for i, (k, _, _) in enumerate(self.schedule or ()):
            if k >= workers:
                raise ConfigError(f"Availability.schedule[{i}]: worker must be in "
                                  f"[0, {workers - 1}], got {k}")

    def intervals(self, workers: int, rng: np.random.Generator | None):
        """One iterator of ``(down_at, up_at)`` per worker, in time order.

        Args:
          workers: number of workers.
          rng: the failures' generator (Poisson churn; spawns one child per worker);
            unused for a schedule.
        """
        if not self.random:
            per = [[] for _ in range(workers)]
            for k, down, up in self.schedule:
                per[k].append((down, up))
            return [iter(sorted(p)) for p in per]
        return [_churn(self.mtbf, self.mttr, child) for child in rng.spawn(workers)]


def _churn(mtbf: float, mttr: float, rng: np.random.Generator):
    """Alternating Exp(mtbf) up-times and Exp(mttr) down-times, from time 0 (up)."""
    t = 0.0
    while True:
        up = rng.exponential(mtbf, _CHURN_BLOCK)
        down = rng.exponential(mttr, _CHURN_BLOCK)
        for u, d in zip(up.tolist(), down.tolist(), strict=True):
            start = t + u
            t = start + d
            yield start, t


def _check_schedule(schedule) -> tuple[tuple[int, float, float], ...]:
    if isinstance(schedule, str | bytes) or not isinstance(schedule, Sequence | np.ndarray):
        raise ConfigError("Availability.schedule must be a sequence of (worker, down_at, "
                          f"up_at), got {schedule!r}")
    rows = []
    for i, entry in enumerate(schedule):
        field = f"Availability.schedule[{i}]"
        if isinstance(entry, str | bytes) or not isinstance(entry, Sequence | np.ndarray) \
                or len(entry) != 3:
            raise ConfigError(f"{field} must be (worker, down_at, up_at), got {entry!r}")
        k, down, up = entry
        if isinstance(k, np.floating) and float(k).is_integer():
            k = int(k)  # a row of a float array read from a log
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise ConfigError(f"{field}: worker must be an integer >= 0, got {k!r}")
        for name, v in (("down_at", down), ("up_at", up)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or math.isnan(v):
                raise ConfigError(f"{field}: {name} must be a number of seconds, got {v!r}")
        down, up = float(down), float(up)
        if not (math.isfinite(down) and down >= 0):
            raise ConfigError(f"{field}: down_at must be finite and >= 0, got {down!r}")
        if not up > down:
            raise ConfigError(f"{field}: up_at must be > down_at ({down!r}), got {up!r}")
        rows.append((int(k), down, up))
    if not rows:
        raise ConfigError("Availability.schedule is empty; give at least one "
                          "(worker, down_at, up_at), or no Availability")
    ordered = sorted(rows)
    for (k, _, up), (k2, down2, _) in zip(ordered, ordered[1:], strict=False):
        if k == k2 and down2 < up:
            raise ConfigError(f"Availability.schedule: worker {k}'s down intervals overlap "
                              f"(one ends at {up!r}, the next starts at {down2!r})")
    return tuple(rows)


class Failures(NamedTuple):
    """The failures a simulated run reached, one row each, in the order they happened.

    Attributes:
      worker: int32 ``(F,)``, the worker that went down.
      down: float64 ``(F,)``, seconds at which it went down.
      up: float64 ``(F,)``, seconds at which it came back (may lie past the run's end).
      clock: int32 ``(F,)``, the server clock when it came back and pulled the centre
        (the commits applied before that pull); -1 when the run ended first.
      lost: int32 ``(F,)``, gradient evaluations the failure lost: the local steps of the
        compute phase it cut (0 when the worker went down between phases, its commit
        already at the server).
    """

    worker: np.ndarray
    down: np.ndarray
    up: np.ndarray
    clock: np.ndarray
    lost: np.ndarray

    @property
    def n_failures(self) -> int:
        return int(self.worker.shape[0])


def goodput(trace) -> tuple[float, float]:
    """``(fraction, per device-second)``: the goodput of a simulated run.

    ``fraction`` is the useful gradient evaluations over all the evaluations started:
    useful ones are those of the commits the trace holds (``λ_k`` per commit of worker k,
    times the group size in a mixed cluster) or of the commits that counted in a round
    (``λ`` per counted worker); all ones add the evaluations a failure lost
    (``trace.failures.lost``, a synchronous worker's lost phase included: it computes
    the phase again) and, for semi-synchronous rounds with ``late="discard"``,
    the cancelled work of the workers that did not count (every worker starts ``λ``
    steps every round, but for a worker down at the round's close: down < close < up).
    Work still in flight when the run ends is in neither. 1.0 for a
    run without failures and without discarded work; NaN for an empty trace.

    ``per device-second`` is the useful evaluations over ``devices × duration``: the
    workers (all of them, up or down) times the simulated seconds to the last event;
    NaN for a run of no duration.

    Args:
      trace: a :class:`~asynclab.cluster.Trace` or :class:`~asynclab.cluster.RoundTrace`.
    """
    if hasattr(trace, "pulled_clock"):  # asynchronous
        useful = float(trace.windows[np.asarray(trace.worker, np.int64)].sum()) \
            * trace.group_size
        failures = getattr(trace, "failures", None)
        lost = 0.0 if failures is None else float(np.asarray(failures.lost).sum())
        total = useful + lost
        devices = trace.n_workers * trace.group_size
        duration = trace.duration
    else:
        lam = int(trace.local_steps)
        rounds = trace.n_events
        if trace.counted is None:
            useful = float(rounds * trace.n_workers * lam)
            total = useful
        else:
            useful = float(np.asarray(trace.counted).sum()) * lam
            total = float(rounds * trace.n_workers * lam) if trace.late == "discard" \
                else useful
        failures = getattr(trace, "failures", None)
        if failures is not None and trace.counted is not None and trace.late == "discard":
            # a worker down at a round's close started no phase for it
            times = np.asarray(trace.time, np.float64)[:, None]
            down = ((np.asarray(failures.down)[None, :] < times)
                    & (times < np.asarray(failures.up)[None, :]))
            total -= float(down.sum()) * lam
        if failures is not None:
            total += float(np.asarray(failures.lost).sum())
        devices = trace.n_workers
        duration = float(trace.time[-1]) if rounds else 0.0
    fraction = useful / total if total > 0 else math.nan
    rate = useful / (devices * duration) if duration > 0 else math.nan
    return fraction, rate


#: The most bytes of text an availability log may hold (about two million outages).
AVAILABILITY_BYTES = 64 << 20


@_files.reads("availability")
def read_availability(path) -> Availability:
    """An availability log as an :class:`Availability` schedule.

    The file is CSV, one outage per row: ``worker,down_at,up_at`` (seconds; ``inf`` for a
    worker that never comes back). Blank lines, lines starting with ``#`` and a first
    line that is not numbers (a header) are skipped. It is read as UTF-8 (a byte-order
    mark is dropped; gzip is recognised by its first bytes) and may hold at most 64 MB
    of text.

    Args:
      path: the file.

    Returns:
      ``Availability(schedule=...)``.
    """
    text = _files.read_text(path, "failures", limit=AVAILABILITY_BYTES,
                            what="an availability log (UTF-8 CSV: worker,down_at,up_at)")
    path = _files.local_path(path, "failures")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = [f.strip() for f in text.split(",")]
        try:
            values = [float(f) for f in fields]
        except ValueError:
            if not rows and number == 1:
                continue  # a header
            raise ConfigError(f"failures: {str(path)!r} line {number}: expected numbers "
                              f"worker,down_at,up_at, got {text[:80]!r}") from None
        if len(values) != 3 or not values[0].is_integer():
            raise ConfigError(f"failures: {str(path)!r} line {number}: expected "
                              f"worker,down_at,up_at (an integer worker), got {text[:80]!r}")
        rows.append((int(values[0]), values[1], values[2]))
    if not rows:
        raise ConfigError(f"failures: {str(path)!r} holds no outage (worker,down_at,up_at)")
    return Availability(schedule=rows)
