"""Checks shared by every entry point: seeds, numbers, memory budgets (files: ``_files``).

Each check either returns the value in its canonical form or raises
:class:`~asynclab.ConfigError` with a message that names the field and says how to fix it.
The command line and the Python API call the same functions, so a value means the same
thing everywhere.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable

from ._errors import ConfigError

#: Seeds are unsigned 32-bit integers: ``jax.random.key`` and the simulator's
#: ``numpy.random.default_rng`` read them without wrapping.
SEED_LIMIT = 2**32


def seed(value, field: str = "seed") -> int:
    """``value`` as a seed: an integer with ``0 <= value < 2**32``.

    Booleans, floats (even whole ones) and strings are refused rather than rounded,
    and values of 2**32 or more are refused rather than wrapped onto smaller seeds.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{field} must be an integer in [0, 2**32), got {value!r}")
    value = int(value)
    if not 0 <= value < SEED_LIMIT:
        raise ConfigError(f"{field} must be an integer in [0, 2**32), got {value}")
    return value


def seeds(value, field: str = "seeds") -> list[int]:
    """One seed or a non-empty sequence of seeds (list, tuple, range, integer array)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [seed(value, field)]
    if isinstance(value, str | bytes | dict | set) or not isinstance(value, Iterable):
        raise ConfigError(f"{field} must be an integer seed or a list of them, got {value!r}")
    fast = _seed_range(value, field)
    if fast is not None:
        return fast
    out = [seed(v, f"{field}[{i}]") for i, v in enumerate(_flat(value, field))]
    if not out:
        raise ConfigError(f"{field} is empty; give at least one seed")
    return out


def _seed_range(value, field: str) -> list[int] | None:
    """A range or an integer array of seeds checked at once (millions in milliseconds);
    None for other sequences, which are checked one by one."""
    import numpy as np

    if isinstance(value, range):
        if len(value) == 0:
            raise ConfigError(f"{field} is empty; give at least one seed")
        low, high = min(value[0], value[-1]), max(value[0], value[-1])
        if low < 0 or high >= SEED_LIMIT:
            bad = low if low < 0 else high
            raise ConfigError(f"{field} must be integers in [0, 2**32), got {bad}")
        return list(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.ndim == 1 \
            and value.size:
        outside = (value < 0) | (value >= SEED_LIMIT)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise ConfigError(f"{field}[{i}] must be an integer in [0, 2**32), got "
                              f"{int(value[i])}")
        return value.astype(np.int64).tolist()
    if isinstance(value, list | tuple) and value and all(type(v) is int for v in value):
        low, high = min(value), max(value)
        if low < 0 or high >= SEED_LIMIT:
            i = next(i for i, v in enumerate(value) if not 0 <= v < SEED_LIMIT)
            raise ConfigError(f"{field}[{i}] must be an integer in [0, 2**32), got {value[i]}")
        return list(value)
    return None


def _flat(value, field: str) -> list:
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ConfigError(f"{field} must be one-dimensional, got shape {value.shape}")
        return value.tolist() if value.dtype.kind in "iu" else list(value)
    return list(value)


# ----------------------------------------------------------------------------- numbers


def count(value, field: str, *, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int with ``low <= value <= high``.

    Integers of any kind (numpy's too) and whole, finite floats are accepted; booleans,
    strings, NaN, infinities and fractions are refused with a message naming ``field``.
    """
    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(value) and value == int(value))
    if not ok or value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ConfigError(f"{field} must be an integer {bound}, got {value!r}")
    return int(value)


def number(value, field: str, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False, dtype=None,
           allow_inf: bool = False) -> float:
    """``value`` as a finite float in the given range, checked in ``dtype`` (e.g.
    ``numpy.float32``, the precision a run computes in) when given: a value that rounds
    onto a bound there is refused as the bound itself would be, and the message says
    what it rounds to. ``allow_inf``: +inf and -inf pass (where the range allows them).

    Every real-valued check of the lab comes here: the rules' hyperparameters, the
    cluster's times and rates, the run's options.
    """
    import numpy as np

    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and (
        math.isfinite(value) or (allow_inf and not math.isnan(value)))
    x = float(value) if ok else math.nan
    if ok and dtype is not None and math.isfinite(x):
        with np.errstate(over="ignore"):
            x = float(np.asarray(value, dtype=dtype))
        ok = math.isfinite(x)
    ok = ok and (low is None or (x > low if low_open else x >= low)) and (
        high is None or (x < high if high_open else x <= high))
    if not ok:
        left = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        right = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
        where = " and ".join(w for w in (left, right) if w)
        precision = f" in {np.dtype(dtype).name}" if dtype is not None else ""
        rounded = ""
        if dtype is not None and ok is False and math.isfinite(x) and x != float(value):
            rounded = f" ({np.dtype(dtype).name}: {x!r})"
        kind = "a number" if allow_inf else "a finite number"
        raise ConfigError(f"{field} must be {kind}{' ' + where if where else ''}"
                          f"{precision}, got {value!r}{rounded}")
    return float(value)


# ----------------------------------------------------------------------------- memory

#: Bytes the simulator and the trace arrays hold per scheduled event (measured: about
#: 110 for the SimPy schedule, plus the trace's and the replay's event arrays).
BYTES_PER_EVENT = 160


def available_memory() -> int:
    """Bytes of memory this process may still use: ``MemAvailable`` where the system
    reports it, else the physical memory."""
    for line in _meminfo().splitlines():
        if line.startswith("MemAvailable:"):
            try:
                return int(line.split()[1]) * 1024
            except (IndexError, ValueError):
                break
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 2**40


def _meminfo() -> str:
    """The text of ``/proc/meminfo`` (a system pseudo-file, not a user's: read here, at
    most 64 KB, never blocking), or ``""`` where there is none."""
    try:
        fd = os.open("/proc/meminfo", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        return os.read(fd, 1 << 16).decode("ascii", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def memory_estimate(events: int, *, traces: int = 1, seeds: int = 1, records: int = 0,
                    record_bytes: int = 8, event_bytes: int = 0) -> int:
    """Bytes a run will hold: the schedules, the per-seed per-event recordings
    (``event_bytes``, e.g. trajectories) and the loss records, with a factor two on the
    recordings for the copy made while they are joined."""
    schedules = traces * events * BYTES_PER_EVENT
    recordings = 2 * seeds * (events * event_bytes + records * record_bytes)
    return int(schedules + recordings)


def check_memory(estimate: int, field: str, *, limit: int | None = None,
                 advice: str = "give a smaller budget, fewer seeds, or record less (a larger "
                 "record_every, no trajectories)", what: str = "this run") -> None:
    """Refuse work whose estimated memory exceeds 80 % of the available memory."""
    limit = int(0.8 * available_memory()) if limit is None else int(limit)
    if estimate > limit:
        raise ConfigError(
            f"{field}: {what} would need about {size(estimate)} of memory, more than "
            f"the {size(limit)} available (80 % of free memory); {advice}")


def size(n: float) -> str:
    """``n`` bytes for a message: ``'7.3 GB'``."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"
