"""A step-time log file as a table: its header and its rows, read within the memory
available (CSV, gzip or not, told apart by its first bytes; Parquet, by its name or its
first bytes).

A long log of numbers comes back as a float array (parsed by pyarrow where it is
installed, else by numpy); anything else as rows of text cells, so that the layout's
reader (:mod:`asynclab.cluster._log_read`) can name the line and column of a problem.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path

import numpy as np

from .. import _files, _validate
from .._errors import ConfigError

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


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of a log file (CSV, gzip or not, or Parquet)."""
    if _files.local_path(path, "log").suffix == ".parquet":
        return _read_parquet(path)
    path = _log_file(path)
    with _files.open_binary(path, "log") as file:
        parquet = file.read(4) == b"PAR1"  # Parquet by its magic bytes, whatever the name
    return _read_parquet(path) if parquet else _read_csv(path)
