"""Checks shared by every entry point: seeds, output paths, memory budgets.

Each check either returns the value in its canonical form or raises
:class:`~asynclab.ConfigError` with a message that names the field and says how to fix it.
The command line and the Python API call the same functions, so a value means the same
thing everywhere.
"""

from __future__ import annotations

import math
import numbers
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

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


# ----------------------------------------------------------------------------- files


def output_path(path, field: str, *, suffixes: Iterable[str] | None = None,
                overwrite: bool = False, kind: str | None = None) -> Path:
    """Check, before any work, that a file can be written at ``path``.

    Missing folders are created; the folder must accept a new file (probed by creating
    and removing a temporary one), and ``path`` must not be a folder. ``suffixes``
    restricts the file's extension (lower case, with the dot). An existing file is
    refused unless ``overwrite`` is true, and then also unless it is an asynclab file of
    ``kind`` (``"result"``, ``"study"``, ``"checkpoint"``; None: the suffix says the kind).
    """
    path = Path(path).expanduser()
    if str(path) in ("", "."):
        raise ConfigError(f"{field} needs a file name, got {str(path)!r}")
    check_name(path, field)
    if path.is_dir():
        raise ConfigError(f"{field} {str(path)!r} is a folder; give a file name")
    if suffixes is not None:
        suffixes = tuple(suffixes)
        if path.suffix.lower() not in suffixes:
            raise ConfigError(
                f"{field} {str(path)!r}: unsupported file type {path.suffix or '(none)'!r}; "
                f"use one of {', '.join(suffixes)}")
    if path.exists():
        if not overwrite:
            raise ConfigError(f"{field} {str(path)!r} already exists; nothing was written: "
                              "give --overwrite (overwrite=True in Python) to replace it, or "
                              "choose another name")
        if kind is not None:
            from . import _archive

            _archive.check_kind(path, kind, field)
        elif not _looks_like(path):
            raise ConfigError(f"{field} {str(path)!r} exists and is not a {path.suffix} file "
                              "(its first bytes say otherwise); --overwrite replaces only a "
                              "file of the kind written, so nothing was written: choose "
                              "another name")
    writable_folder(path.parent, field, for_file=path)
    return path


#: The first bytes of the image formats asynclab writes (others are taken by suffix).
_MAGIC = {".png": (b"\x89PNG",), ".pdf": (b"%PDF",), ".jpg": (b"\xff\xd8",),
          ".jpeg": (b"\xff\xd8",), ".eps": (b"%!PS", b"\xc5\xd0\xd3\xc6"),
          ".ps": (b"%!PS",), ".gif": (b"GIF8",), ".tif": (b"II*", b"MM\0*"),
          ".tiff": (b"II*", b"MM\0*"), ".webp": (b"RIFF",)}


def _looks_like(path: Path) -> bool:
    """Whether an existing file's content fits its suffix (images by their first bytes,
    SVG by an ``<svg`` tag near the start)."""
    with open(path, "rb") as file:
        head = file.read(4096)
    suffix = path.suffix.lower()
    if suffix in (".svg", ".svgz"):
        return b"<svg" in head or head.startswith(b"\x1f\x8b")
    return suffix not in _MAGIC or head.startswith(_MAGIC[suffix])


def distinct_outputs(paths: dict[str, object]) -> None:
    """Refuse two output flags naming one file (``{"--save": path, ...}``, None skipped)."""
    seen: dict[Path, str] = {}
    for flag, path in paths.items():
        if path is None:
            continue
        resolved = Path(path).expanduser().resolve()
        if resolved in seen:
            raise ConfigError(f"{seen[resolved]} and {flag} both name {str(path)!r}; give "
                              "each its own file")
        seen[resolved] = flag


#: The longest file name (one path component, in bytes) common file systems take.
NAME_MAX = 255


#: The longest path the system takes (PATH_MAX on Linux).
PATH_MAX = 4096


def check_name(path: Path, field: str) -> None:
    """Refuse a path, or a component of it, longer than file systems allow (before it is
    looked up)."""
    length = len(os.fsencode(str(path.absolute())))
    if length >= PATH_MAX:
        raise ConfigError(f"{field}: the path {str(path)[:40]}… is {length} bytes long; the "
                          f"system takes at most {PATH_MAX - 1}")
    for part in path.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise ConfigError(f"{field}: the name {part[:40]}… is {len(os.fsencode(part))} "
                              f"bytes long; file systems take at most {NAME_MAX}")


def writable_folder(folder, field: str, *, for_file: Path | None = None) -> Path:
    """Create ``folder`` if needed and check that files can be written into it."""
    folder = Path(folder).expanduser()
    check_name(folder, field)
    what = f"{field} {str(for_file if for_file is not None else folder)!r}"
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{what}: {str(folder)!r} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConfigError(f"{what}: cannot write into the folder {str(folder)!r} "
                          f"({reason})") from None
    return folder


def plot_formats() -> tuple[str, ...]:
    """File extensions matplotlib can write (``.png``, ``.pdf``, ``.svg``, ...) without a
    LaTeX installation (``.pgf`` needs one to lay out its text, so it is not offered)."""
    from matplotlib.backend_bases import FigureCanvasBase

    return tuple(f".{ext}" for ext in sorted(FigureCanvasBase.get_supported_filetypes())
                 if ext != "pgf")


def input_file(path, field: str) -> Path:
    """An existing, non-empty regular file, or a ConfigError naming the field."""
    path = Path(path).expanduser()
    check_name(path, field)
    if not path.exists():
        raise ConfigError(f"{field}: no such file {str(path)!r}")
    if not path.is_file():
        raise ConfigError(f"{field}: {str(path)!r} is not a regular file")
    if path.stat().st_size == 0:
        raise ConfigError(f"{field}: {str(path)!r} is empty")
    return path


# ----------------------------------------------------------------------------- memory

#: Bytes the simulator and the trace arrays hold per scheduled event (measured: about
#: 110 for the SimPy schedule, plus the trace's and the replay's event arrays).
BYTES_PER_EVENT = 160


def available_memory() -> int:
    """Bytes of memory this process may still use: ``MemAvailable`` where the system
    reports it, else the physical memory."""
    try:
        with open("/proc/meminfo") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 2**40


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
