"""Reading per-worker step-time logs of real clusters: :func:`read_log`.

A log is a long table with one row per step of one worker (the format is documented in
``docs/logs.md``)::

    worker,step,start,compute[,communication][,available][,staleness][,local_steps]

or a wide one with a row per iteration. Every layout becomes a :class:`StepLog`, checked
once (:func:`~asynclab.cluster._steplog.build_log`). Every problem with a file raises
:class:`~asynclab.ConfigError` naming the file, the line and the column.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import ConfigError
from ._log_table import read_table
from ._steplog import StepLog, build_log

REQUIRED = ("worker", "step", "start", "compute")
"""Columns every long log must have."""
OPTIONAL = ("communication", "available", "staleness", "local_steps")
"""Columns a long log may have; any other column is ignored."""
FORMATS = ("long", "wide")
"""The table layouts :func:`read_log` understands (``"auto"`` tells them apart)."""

_WIDE_TOTAL = re.compile(r"^latency_worker_(\d+)$")
_WIDE_COMPUTE = re.compile(r"^compute_latency_worker_(\d+)$")


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
    return build_log(path, worker=worker, step=step, start=start, compute=compute,
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
    return build_log(
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
    header, body = read_table(path)
    if format == "auto":
        format = "wide" if ("iteration" in header and "worker" not in header) else "long"
    if format == "wide":
        return _wide(path, header, _one_job(path, header, body, job))
    if job is not None:
        raise ConfigError("job= selects a job of a wide log; this log is long")
    return _long(path, header, body)
