"""Writing a step log as a long table: :func:`write_log` (CSV, gzip or not, or Parquet)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import ConfigError
from ._steplog import StepLog


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
