"""Per-worker step-time logs of real clusters: reading, checking, adapting, writing.

A log is a long table with one row per step of one worker (the format is documented in
``docs/logs.md``)::

    worker,step,start,compute[,communication][,available][,staleness][,local_steps]

Every reader returns a :class:`StepLog`: plain numpy arrays sorted by (worker, step),
checked once. Every problem with a file raises :class:`~asynclab.ConfigError` naming the
file, the line and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import _files, _validate
from .._errors import ConfigError
from ._trace import Trace

REQUIRED = ("worker", "step", "start", "compute")
"""Columns every long log must have."""
OPTIONAL = ("communication", "available", "staleness", "local_steps")
"""Columns a long log may have; any other column is ignored."""
FORMATS = ("long", "wide")
"""The table layouts :func:`read_log` understands (``"auto"`` tells them apart)."""

_WIDE_TOTAL = re.compile(r"^latency_worker_(\d+)$")
_WIDE_COMPUTE = re.compile(r"^compute_latency_worker_(\d+)$")


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


# --------------------------------------------------------------------------- reading

#: Bytes of memory a byte of log text may take: parsed as numbers (8 per cell of ~2
#: bytes, twice while blocks are joined) and as text rows (Python objects, ~60 per cell).
_NUMBERS_PER_BYTE, _TEXT_PER_BYTE = 8, 16

_WHAT = "a step-time log (UTF-8 CSV, gzip or not)"


def _log_file(path) -> Path:
    """``path`` as an existing, non-empty regular file (not a device, a FIFO or a
    folder), looked at without opening it."""
    path = _files.local_path(path, "log")
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"no log file at {path}")
    return _files.input_file(path, "log")


def _text_size(path: Path) -> int:
    """The bytes of text in the log: its size, or for gzip (recognised by its first
    bytes) the length its trailer stores, bounded (see ``_files.gzip_text_size``)."""
    if _files.is_gzip(path, "log"):
        return _files.gzip_text_size(path, "log")
    return _files.input_file(path, "log").stat().st_size


def _text_limit(per_byte: int) -> int:
    """The most bytes of text the memory available lets a reader take at ``per_byte``."""
    return max(int(0.8 * _validate.available_memory()) // per_byte, 1)


def _open(path: Path, per_byte: int):
    return _files.open_text_bytes(
        path, "log", text_limit=_text_limit(per_byte), what=_WHAT,
        limit_reason="what the memory available allows (80 % of free memory)")


def _read_csv(path: Path) -> tuple[list[str], list[list[str]] | np.ndarray]:
    """The header and the rows of a (gzip) CSV log.

    A long log of numbers only is parsed into a float array (by pyarrow's CSV reader
    where it is installed, else by numpy; fast and compact); anything else (words,
    blank cells, a wide log, a malformed row) is read as text rows, so that a problem can
    be reported by line and column. The memory either needs is estimated from the file's
    size and checked before reading, and again as a gzip log expands.
    """
    path = _log_file(path)
    text_bytes = _text_size(path)
    try:
        with _open(path, _NUMBERS_PER_BYTE) as stream:
            line = stream.readline(_files.MAX_LINE + 1).decode("utf-8")
            header = [h.strip() for h in next(csv.reader([line]), [])]
            if header and "worker" in header and "iteration" not in header:
                _validate.check_memory(2 * 8 * (text_bytes // 2 + 1), f"log {str(path)!r}",
                                       what="reading it", advice="split the log")
                body = _parse_numbers(stream, header)
                if body is not None and body.shape[1] in (0, len(header)):
                    return header, body.reshape(-1, len(header))
    except csv.Error as error:
        raise ConfigError(f"{path}: cannot read it as a (gzip) CSV file: {error}") from None
    # text rows: about 60 bytes of Python objects per cell of a few characters
    _validate.check_memory(_TEXT_PER_BYTE * text_bytes, f"log {str(path)!r}",
                           what="reading it as text",
                           advice="split the log, or write its cells as plain numbers")
    try:
        with io.TextIOWrapper(_open(path, _TEXT_PER_BYTE), encoding="utf-8",
                              newline="") as f:
            rows = list(csv.reader(f))
    except csv.Error as error:
        raise ConfigError(f"{path}: cannot read it as a (gzip) CSV file: {error}") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise ConfigError(f"{path}: the file is empty (expected a header line)")
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    for i, row in enumerate(body):
        if len(row) != len(header):
            raise ConfigError(f"{path}, line {i + 2}: {len(row)} cells, but the header has "
                              f"{len(header)} columns")
    return header, body


def _parse_numbers(stream, header: list[str]) -> np.ndarray | None:
    """The rows after the header as a float array, or None when a cell is not a number
    (or a row has another number of cells): the text reader then says where."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        pa = None
    if pa is not None:
        names = [f"c{j}" for j in range(len(header))]
        try:
            table = pacsv.read_csv(
                stream,
                read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 20),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.float64() for n in names}, null_values=[],
                    strings_can_be_null=False, quoted_strings_can_be_null=False))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        # one copy, column by column (the columns are then contiguous for the checks),
        # from each chunk's data buffer (Array.to_numpy would import pandas: 0.5 s)
        out = np.empty((table.num_rows, len(header)), order="F")
        for j in range(len(header)):
            at = 0
            for chunk in table.column(j).chunks:
                if chunk.null_count:
                    return None
                data = np.frombuffer(chunk.buffers()[1], dtype=np.float64)
                out[at:at + len(chunk), j] = data[chunk.offset:chunk.offset + len(chunk)]
                at += len(chunk)
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # no rows: said below
            return np.loadtxt(io.TextIOWrapper(stream, encoding="utf-8", newline=""),
                              delimiter=",", dtype=np.float64, ndmin=2, comments=None)
    except ValueError:
        return None


def _read_parquet(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(
            f"{path}: reading Parquet needs pyarrow: pip install 'asynclab[parquet]' "
            "(or convert the log to CSV)"
        ) from None
    import pyarrow as pa

    path = _log_file(path)
    with _files.open_binary(path, "log") as file:
        try:
            parquet = pq.ParquetFile(file)
            meta = parquet.metadata
            rows, columns = meta.num_rows, meta.num_columns
        except Exception as error:  # noqa: BLE001 - pyarrow raises many kinds
            raise ConfigError(f"{path}: cannot read it as Parquet: {error}") from None
        _validate.check_memory(2 * 8 * rows * columns, f"log {str(path)!r}", what="reading it",
                               advice="split the log")
        try:
            table = parquet.read()
        except Exception as error:  # noqa: BLE001 - pyarrow raises many kinds
            raise ConfigError(f"{path}: cannot read it as Parquet: {error}") from None
    header = [str(name).strip() for name in table.column_names]
    numeric = all(pa.types.is_integer(c.type) or pa.types.is_floating(c.type)
                  or pa.types.is_boolean(c.type) for c in table.columns)
    if numeric and "worker" in header and "iteration" not in header and all(
            c.null_count == 0 for c in table.columns):  # a long log of numbers: as numpy
        body = np.column_stack([c.to_numpy().astype(np.float64) for c in table.columns])
        return header, body.reshape(-1, len(header))
    # text rows (for messages by line and column): about 60 bytes per cell as objects
    _validate.check_memory(64 * rows * columns, f"log {str(path)!r}", what="reading it",
                           advice="split the log, or store its cells as plain numbers")
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    body = [["" if v is None else str(v) for v in row] for row in zip(*columns, strict=True)]
    return header, body


def _table(path: Path) -> tuple[list[str], list[list[str]]]:
    if _files.local_path(path, "log").suffix == ".parquet":
        return _read_parquet(path)
    path = _log_file(path)
    with _files.open_binary(path, "log") as file:
        parquet = file.read(4) == b"PAR1"  # Parquet by its magic bytes, whatever the name
    return _read_parquet(path) if parquet else _read_csv(path)


def _numbers(path, header, body, name, *, kind=float, blank_ok=False) -> np.ndarray:
    """Column ``name`` as numbers; a bad cell raises naming its line and column."""
    j = header.index(name)
    if isinstance(body, np.ndarray):  # parsed by numpy: only the integer check is left
        out = np.ascontiguousarray(body[:, j])  # a view of a column-major table
        if kind is int:
            with np.errstate(invalid="ignore"):  # NaN and inf: no integer (flagged below)
                whole = out.astype(np.int64)
            bad = whole != out  # NaN, inf, fractions and integers beyond 2**63
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ConfigError(f"{path}, line {i + 2}, column {name!r}: {float(out[i]):g} is "
                                  "not an integer")
            return whole
        return out
    out = np.empty(len(body), dtype=np.float64)
    for i, row in enumerate(body):
        cell = row[j].strip()
        if not cell and blank_ok:
            out[i] = np.nan
            continue
        try:
            value = float(cell)
        except ValueError:
            raise ConfigError(f"{path}, line {i + 2}, column {name!r}: {cell!r} is not a "
                              "number") from None
        if kind is int and not (math.isfinite(value) and value == int(value)):
            raise ConfigError(f"{path}, line {i + 2}, column {name!r}: {cell!r} is not an "
                              "integer")
        out[i] = value
    return out


def _check_times(path, values, name, lines, *, blank_ok=False):
    bad = ~np.isfinite(values) | (values < 0)
    if blank_ok:
        bad &= ~np.isnan(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ConfigError(f"{path}, line {lines[i]}, column {name!r}: times must be finite and "
                          f">= 0 seconds, got {float(values[i])!r}")


def _booleans(path, header, body, name) -> np.ndarray:
    j = header.index(name)
    if isinstance(body, np.ndarray):
        values = body[:, j]
        bad = (values != 0) & (values != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"{path}, line {i + 2}, column {name!r}: {float(values[i]):g} is "
                              "not one of 1/0/true/false")
        return values == 1
    out = np.empty(len(body), dtype=bool)
    for i, row in enumerate(body):
        cell = row[j].strip().lower()
        if cell in ("1", "1.0", "true", "yes"):
            out[i] = True
        elif cell in ("0", "0.0", "false", "no"):
            out[i] = False
        else:
            raise ConfigError(f"{path}, line {i + 2}, column {name!r}: {row[j]!r} is not one of "
                              "1/0/true/false")
    return out


def _build(path, *, worker, step, start, compute, communication, available, staleness,
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


def _long(path, header, body) -> StepLog:
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(map(repr, missing))} (found: "
                          f"{', '.join(header) or 'none'}; a long log needs "
                          f"{', '.join(REQUIRED)})")
    dup = {h for h in header if header.count(h) > 1}
    if dup:
        raise ConfigError(f"{path}: column(s) {', '.join(sorted(dup))} appear more than once")
    lines = np.arange(2, len(body) + 2)
    worker = _numbers(path, header, body, "worker", kind=int)
    step = _numbers(path, header, body, "step", kind=int)
    start = _numbers(path, header, body, "start")
    if not np.all(np.isfinite(start)):
        i = int(np.flatnonzero(~np.isfinite(start))[0])
        raise ConfigError(f"{path}, line {lines[i]}, column 'start': must be finite, got "
                          f"{float(start[i])!r}")
    compute = _numbers(path, header, body, "compute")
    _check_times(path, compute, "compute", lines)
    communication = available = staleness = None
    if "communication" in header:
        communication = _numbers(path, header, body, "communication")
        _check_times(path, communication, "communication", lines)
    if "available" in header:
        available = _booleans(path, header, body, "available")
    if "staleness" in header:
        staleness = _numbers(path, header, body, "staleness", kind=int)
        if np.any(staleness < 0):
            i = int(np.flatnonzero(staleness < 0)[0])
            raise ConfigError(f"{path}, line {lines[i]}, column 'staleness': must be >= 0, got "
                              f"{staleness[i]:g}")
    local_steps = 1
    if "local_steps" in header:
        values = _numbers(path, header, body, "local_steps", kind=int)
        bad = (values != values[0]) | (values < 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"{path}, line {lines[i]}, column 'local_steps': must be one "
                              f"integer >= 1 for the whole log, got {values[i]:g} (line 2 "
                              f"has {values[0]:g})")
        local_steps = int(values[0])
    return _build(path, worker=worker, step=step, start=start, compute=compute,
                  communication=communication, available=available, staleness=staleness,
                  local_steps=local_steps, lines=lines)


def _one_job(path, header, body, job):
    """The rows of one job of a wide file with a ``jobid`` column."""
    if "jobid" not in header:
        if job is not None:
            raise ConfigError(f"{path}: job={job!r} given but the file has no 'jobid' column")
        return body
    j = header.index("jobid")
    jobs = sorted({row[j].strip() for row in body})
    if job is None:
        if len(jobs) > 1:
            raise ConfigError(f"{path}: the file holds {len(jobs)} jobs (jobid "
                              f"{', '.join(jobs[:5])}{', …' if len(jobs) > 5 else ''}); pick "
                              "one with job=")
        return body
    picked = [row for row in body if row[j].strip() == str(job).strip()]
    if not picked:
        raise ConfigError(f"{path}: no rows with jobid {job!r} (jobs: {', '.join(jobs[:5])})")
    return picked


def _wide(path, header, body) -> StepLog:
    """``iteration, latency_worker_<i>, compute_latency_worker_<i>`` (one row per iteration).

    ``latency_worker_<i>`` is worker i's whole time in the iteration and
    ``compute_latency_worker_<i>`` its computation; their difference is its
    communication. A blank cell means the worker has no step in that iteration. Start
    times are not in this format: each worker's steps are laid back to back.
    """
    if "iteration" not in header:
        raise ConfigError(f"{path}: a wide log needs an 'iteration' column (found: "
                          f"{', '.join(header)})")
    total = {int(m.group(1)): name for name in header if (m := _WIDE_TOTAL.match(name))}
    comp = {int(m.group(1)): name for name in header if (m := _WIDE_COMPUTE.match(name))}
    if not total and not comp:
        raise ConfigError(f"{path}: a wide log needs latency_worker_<i> and/or "
                          "compute_latency_worker_<i> columns")
    ids = sorted(set(total) | set(comp))
    iteration = _numbers(path, header, body, "iteration", kind=int)
    lines = np.arange(len(body)) + 2
    rows = []
    for k, ident in enumerate(ids):
        t = (_numbers(path, header, body, total[ident], blank_ok=True) if ident in total
             else None)
        c = (_numbers(path, header, body, comp[ident], blank_ok=True) if ident in comp
             else None)
        if t is not None:
            _check_times(path, t, total[ident], lines, blank_ok=True)
        if c is not None:
            _check_times(path, c, comp[ident], lines, blank_ok=True)
        if t is not None and c is not None:
            half = np.isnan(t) != np.isnan(c)
            if half.any():
                i = int(np.flatnonzero(half)[0])
                raise ConfigError(f"{path}, line {lines[i]}: worker {ident} has only one of "
                                  f"{total[ident]!r} and {comp[ident]!r}")
            over = c > t * (1 + 1e-9) + 1e-12
            if over.any():
                i = int(np.flatnonzero(over)[0])
                raise ConfigError(f"{path}, line {lines[i]}, column {comp[ident]!r}: compute "
                                  f"{float(c[i])!r} exceeds the whole latency {float(t[i])!r} of "
                                  f"{total[ident]!r}")
        present = ~np.isnan(t if t is not None else c)
        if not present.any():
            raise ConfigError(f"{path}: worker {ident} has no steps (every cell of its "
                              "columns is blank)")
        compute = (c if c is not None else t)[present]
        communication = (np.maximum(t - c, 0.0)[present] if (t is not None and c is not None)
                         else None)
        whole = compute + (communication if communication is not None else 0.0)
        start = np.concatenate([[0.0], np.cumsum(whole)[:-1]])
        rows.append((np.full(compute.size, k), iteration[present], start, compute,
                     communication, lines[present]))
    has_comm = all(r[4] is not None for r in rows)
    return _build(
        path,
        worker=np.concatenate([r[0] for r in rows]),
        step=np.concatenate([r[1] for r in rows]),
        start=np.concatenate([r[2] for r in rows]),
        compute=np.concatenate([r[3] for r in rows]),
        communication=np.concatenate([r[4] for r in rows]) if has_comm else None,
        available=None, staleness=None, local_steps=1,
        lines=np.concatenate([r[5] for r in rows]), names=tuple(str(i) for i in ids),
    )


def example_log_path() -> Path:
    """The step-time log shipped with asynclab: 4 worker threads of the threads backend
    on a 2-core machine, 3,000 commits (see ``docs/logs.md``)."""
    return Path(__file__).resolve().parents[1] / "data" / "threads_cluster.csv.gz"


@_files.reads("log")
def read_log(path, *, format: str = "auto", job=None) -> StepLog:
    """Reads and checks a per-worker step-time log.

    Args:
      path: a ``.csv``, ``.csv.gz`` or ``.parquet`` file (Parquet needs the optional
        ``parquet`` extra, i.e. pyarrow). The content decides: gzip and Parquet are
        recognised by their first bytes; text is UTF-8 (a byte-order mark is dropped).
      format: ``"long"`` (one row per worker step: ``worker, step, start, compute`` and
        optional ``communication, available, staleness, local_steps``), ``"wide"`` (one
        row per iteration: ``iteration, latency_worker_<i>, compute_latency_worker_<i>``)
        or ``"auto"`` (wide when there is an ``iteration`` column and no ``worker``).
      job: for a wide file with a ``jobid`` column holding several jobs, the job to read.

    Returns:
      A :class:`StepLog`.

    Raises:
      ConfigError: naming the file, line and column of the first problem found.
    """
    if format not in ("auto", *FORMATS):
        raise ConfigError(f"format must be one of auto, {', '.join(FORMATS)}, got {format!r}")
    path = _files.local_path(path, "log")
    header, body = _table(path)
    if format == "auto":
        format = "wide" if ("iteration" in header and "worker" not in header) else "long"
    if format == "wide":
        return _wide(path, header, _one_job(path, header, body, job))
    if job is not None:
        raise ConfigError("job= selects a job of a wide log; this log is long")
    return _long(path, header, body)


# --------------------------------------------------------------------------- writing


@_files.writes("log")
def write_log(log: StepLog, path, *, digits: int | None = None,
              overwrite: bool = False) -> Path:
    """Writes a log as a long table: CSV (gzip-compressed when ``path`` ends in ``.gz``).

    An existing file is refused unless ``overwrite``, and then replaced only if it is a
    step-time log (its header, or its Parquet columns, say so); the write is atomic.

    Args:
      log: the log.
      path: where to write (``.parquet`` writes Parquet, with the ``parquet`` extra).
      digits: decimal places of the times (``None``: every float written exactly).
      overwrite: replace an existing log at ``path``.

    Returns:
      The path.
    """
    path = _files.output_path(path, "path", kind="log", overwrite=overwrite)

    def fmt(x):
        return repr(float(x)) if digits is None else f"{x:.{digits}f}"

    columns = ["worker", "step", "start", "compute"]
    if log.communication is not None:
        columns.append("communication")
    if log.available is not None:
        columns.append("available")
    if log.staleness is not None:
        columns.append("staleness")
    if log.local_steps != 1:
        columns.append("local_steps")
    if path.suffix == ".parquet":
        return _write_parquet(log, path, columns, overwrite)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for i in range(log.n_rows):
        row = [log.names[log.worker[i]], int(log.step[i]), fmt(log.start[i]),
               fmt(log.compute[i])]
        if log.communication is not None:
            row.append(fmt(log.communication[i]))
        if log.available is not None:
            row.append(int(log.available[i]))
        if log.staleness is not None:
            row.append(int(log.staleness[i]))
        if log.local_steps != 1:
            row.append(log.local_steps)
        writer.writerow(row)
    data = out.getvalue().encode()
    if path.suffix == ".gz":
        # mtime=0: the same log gives the same bytes
        import gzip

        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as f:
            f.write(data)
        data = buffer.getvalue()
    return _files.write_bytes(path, data, "path", kind="log", overwrite=overwrite)


def _write_parquet(log: StepLog, path: Path, columns: list[str], overwrite: bool) -> Path:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(f"{path}: writing Parquet needs pyarrow: pip install "
                          "'asynclab[parquet]' (or write a .csv / .csv.gz)") from None
    values = {"worker": np.array(log.names)[log.worker], "step": log.step, "start": log.start,
              "compute": log.compute, "communication": log.communication,
              "available": log.available, "staleness": log.staleness,
              "local_steps": np.full(log.n_rows, log.local_steps)}
    with _files.atomic(path, "path", kind="log", overwrite=overwrite) as file:
        pq.write_table(pa.table({c: values[c] for c in columns}), file)
    return path


# --------------------------------------------------------------------------- adapters


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
    return _build("threads run", worker=worker, step=step, start=start, compute=compute,
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
