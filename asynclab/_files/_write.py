"""The writer: every file asynclab writes goes through one output policy.

- An existing path is refused unless overwrite is asked; with overwrite, only a file
  recognised, by its content, as one of the kind being written is replaced (see
  :data:`KINDS`). A FIFO, a device or a folder is never replaced: it is recognised with
  ``os.stat``, without being opened.
- The parent folder is made, or the error names it; a ``~user`` that names no user, a
  name too long, a full disk (ENOSPC) or any other ``OSError`` is a one-line
  :class:`~asynclab.ConfigError`.
- The write is atomic: a temporary file in the same folder, flushed and ``fsync``-ed,
  then ``os.replace``-d onto the path; a write that fails leaves the previous file whole
  and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from .._errors import ConfigError
from ._npz import FORMAT_MEMBER, READ_WITH, Archive, format_member
from ._paths import local_path, special, status
from ._read import GZIP_MAGIC, open_binary

#: The key (JSON) or member (``.npz``) that marks a file asynclab wrote, with its kind and
#: format version: ``"KIND VERSION"``.
MARKER = FORMAT_MEMBER

#: The first bytes of the image formats matplotlib writes (``.raw`` and ``.rgba`` have
#: none, so an existing one is never replaced).
MAGIC = {".png": (b"\x89PNG\r\n\x1a\n",), ".pdf": (b"%PDF",), ".jpg": (b"\xff\xd8\xff",),
         ".jpeg": (b"\xff\xd8\xff",), ".eps": (b"%!PS", b"\xc5\xd0\xd3\xc6"),
         ".ps": (b"%!PS",), ".gif": (b"GIF8",), ".tif": (b"II*\0", b"MM\0*"),
         ".tiff": (b"II*\0", b"MM\0*"), ".webp": (b"RIFF",)}

#: The columns every step-time log asynclab writes begins with.
LOG_COLUMNS = ("worker", "step", "start", "compute")


class Kind(NamedTuple):
    """A kind of file asynclab writes, and how an existing one is recognised."""

    name: str
    what: str
    recognised_by: str


#: Every kind of file asynclab writes: its description and how an existing file of the
#: kind is recognised (by content) before ``overwrite`` replaces it.
KINDS = {
    "result": Kind("result", "an asynclab result (an .npz written by Result.save)",
                   "an .npz whose asynclab_format member says 'result'"),
    "study": Kind("study", "an asynclab study's data (an .npz written by a figure or a "
                  "study)", "an .npz whose asynclab_format member says 'study'"),
    "checkpoint": Kind("checkpoint", "an asynclab checkpoint (written by a run on devices "
                       "with --checkpoint)",
                       "an .npz whose asynclab_format member says 'checkpoint'"),
    "figure": Kind("figure", "a picture of the kind its name says",
                   "the image format's magic bytes (SVG: an <svg tag near the start)"),
    "trace-events": Kind("trace-events", "a timeline written by asynclab (Trace Event "
                         "Format JSON)", 'its first key, "asynclab_format": '
                         '"trace-events VERSION"'),
    "trace-records": Kind("trace-records", "a timeline written by asynclab (JSON lines)",
                          'its first line\'s first key, "asynclab_format": '
                          '"trace-records VERSION"'),
    "log": Kind("log", "a step-time log written by asynclab (write_log)",
                "its header: worker,step,start,compute first (CSV, gzip CSV), or those "
                "columns first (Parquet)"),
}

#: What is read of an existing file to recognise it.
_HEAD = 1 << 16


def plot_formats() -> tuple[str, ...]:
    """File extensions matplotlib can write (``.png``, ``.pdf``, ``.svg``, ...) without a
    LaTeX installation (``.pgf`` needs one to lay out its text, so it is not offered)."""
    from .. import _environment

    _environment.prepare_matplotlib()  # an unknown MPLBACKEND must not fail the import
    from matplotlib.backend_bases import FigureCanvasBase

    return tuple(f".{ext}" for ext in sorted(FigureCanvasBase.get_supported_filetypes())
                 if ext != "pgf")


def _suffixes(kind: str) -> tuple[str, ...] | None:
    if kind == "figure":
        return plot_formats()
    return {"trace-events": (".json",), "trace-records": (".jsonl",)}.get(kind)


def output_path(path, field: str, *, kind: str, overwrite: bool = False,
                suffixes: Iterable[str] | None = None) -> Path:
    """Check, before any work, that a file of ``kind`` (one of :data:`KINDS`) can be
    written at ``path``; returns the path (``~`` expanded).

    The parent folder is made if missing and must accept a new file (probed by making
    and removing a temporary one). ``suffixes`` (lower case, with the dot) restricts the
    name's extension (default: the kind's own, e.g. matplotlib's formats for a figure).
    An existing file is refused unless ``overwrite``, and then also unless its content
    says it is a file of ``kind``; a folder, a FIFO or a device is always refused.

    Raises:
      ConfigError: one line naming ``field`` and saying that nothing was written.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind of file {kind!r}")
    path = local_path(path, field)
    suffixes = tuple(suffixes) if suffixes is not None else _suffixes(kind)
    st = status(path, field)
    if st is not None and special(st.st_mode) == "a folder":
        raise ConfigError(f"{field} {str(path)!r} is a folder; give a file name")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise ConfigError(
            f"{field} {str(path)!r}: unsupported file type {path.suffix or '(none)'!r}; "
            f"use one of {', '.join(suffixes)}")
    if st is not None:
        what = special(st.st_mode)
        if what is not None:
            raise ConfigError(f"{field} {str(path)!r} is {what}, not a file asynclab "
                              "writes; nothing was written: choose another name")
        if not overwrite:
            raise ConfigError(f"{field} {str(path)!r} already exists; nothing was written: "
                              "give --overwrite (overwrite=True in Python) to replace it, "
                              "or choose another name")
        reason = recognise(path, kind, field)
        if reason is not None:
            raise ConfigError(f"{field} {str(path)!r} exists and is not {KINDS[kind].what} "
                              f"({reason}); --overwrite replaces only a file of the kind "
                              "written, so nothing was written: choose another name")
    writable_folder(path.parent, field, for_file=path)
    return path


def recognise(path: Path, kind: str, field: str) -> str | None:
    """None when the existing regular file ``path`` is a file of ``kind`` written by
    asynclab, else what it is instead (for messages)."""
    if kind in ("result", "study", "checkpoint"):
        try:
            with Archive(path, field, KINDS[kind].what) as archive:
                found = archive.kind()
                names = sorted(archive)[:6]
        except ConfigError as error:
            return getattr(error, "reason", None) or str(error).rsplit(": ", 1)[-1]
        if found == kind:
            return None
        return READ_WITH.get(found) or f"an .npz of other arrays ({', '.join(names)})"
    try:
        with open_binary(path, field) as file:
            head = file.read(_HEAD)
    except ConfigError as error:
        return str(error).split(": ", 1)[-1]
    if kind == "figure":
        return _figure(path, head)
    if kind == "trace-events":
        ok = head.startswith(b'{"' + MARKER.encode() + b'":"trace-events ')
        return None if ok else "its first bytes are not asynclab's trace events"
    if kind == "trace-records":
        ok = head.startswith(b'{"' + MARKER.encode() + b'": "trace-records ')
        return None if ok else "its first line is not asynclab's trace record"
    return _log(path, head, field)


def _figure(path: Path, head: bytes) -> str | None:
    suffix = path.suffix.lower()
    if suffix in (".svg", ".svgz"):
        if head.startswith(GZIP_MAGIC):
            import zlib

            try:
                head = zlib.decompressobj(31).decompress(head, _HEAD)
            except zlib.error:
                return "a damaged gzip stream"
        return None if b"<svg" in head else "no <svg tag near its start"
    if suffix not in MAGIC:
        return f"a {suffix or 'nameless'} file cannot be recognised by its content"
    return None if head.startswith(MAGIC[suffix]) else (
        f"its first bytes say it is not a {suffix} file")


def _log(path: Path, head: bytes, field: str) -> str | None:
    if head.startswith(b"PAR1"):
        try:
            import pyarrow.parquet as pq

            with open_binary(path, field) as file:
                names = pq.ParquetFile(file).schema_arrow.names
        except Exception:  # noqa: BLE001 - pyarrow raises many kinds; any is "not ours"
            return "a Parquet file that cannot be read"
        ok = tuple(names[:len(LOG_COLUMNS)]) == LOG_COLUMNS
        return None if ok else "a Parquet file without the log's columns"
    if head.startswith(GZIP_MAGIC):
        import zlib

        try:
            head = zlib.decompressobj(31).decompress(head, _HEAD)
        except zlib.error:
            return "a damaged gzip stream"
    first = head.split(b"\n", 1)[0].removeprefix(b"\xef\xbb\xbf").strip()
    ok = first.startswith(",".join(LOG_COLUMNS).encode())
    return None if ok else "its first line is not a step-time log's header"


def distinct_outputs(paths: dict[str, object]) -> None:
    """Refuse two output flags naming one file (``{"--save": path, ...}``, None skipped)."""
    seen: dict[Path, str] = {}
    for flag, path in paths.items():
        if path is None:
            continue
        resolved = local_path(path, flag).resolve()
        if resolved in seen:
            raise ConfigError(f"{seen[resolved]} and {flag} both name {str(path)!r}; give "
                              "each its own file")
        seen[resolved] = flag


def writable_folder(folder, field: str, *, for_file: Path | None = None) -> Path:
    """Create ``folder`` if needed and check that files can be written into it."""
    folder = local_path(folder, field, folder=True)
    what = f"{field} {str(for_file if for_file is not None else folder)!r}"
    st = status(folder, field)
    if st is not None and special(st.st_mode) != "a folder":
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


_UMASK: list[int] = []


def _mode() -> int:
    """The permissions a new file gets here (0o666 less the umask), read once."""
    if not _UMASK:
        mask = os.umask(0)
        os.umask(mask)
        _UMASK.append(mask)
    return 0o666 & ~_UMASK[0]


@contextlib.contextmanager
def atomic(path, field: str, *, kind: str, overwrite: bool = False,
           suffixes: Iterable[str] | None = None):
    """Write a file of ``kind`` at ``path`` through the output policy (see
    :func:`output_path`): yields a binary file to write into, a temporary file in the same
    folder that replaces ``path`` (``fsync``, ``os.replace``) only when the block ends
    without an exception; the temporary file is removed otherwise.

    Raises:
      ConfigError: the policy refuses the path, or the system does (a full disk, no
        permission: any ``OSError``), in one line naming ``field``; nothing is written.
    """
    path = output_path(path, field, kind=kind, overwrite=overwrite, suffixes=suffixes)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".asynclab-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), _mode())
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
        tmp = None
        _sync_folder(path.parent)
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise ConfigError(f"{field} {str(path)!r}: cannot write it ({reason}); nothing was "
                          "written") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _sync_folder(folder: Path) -> None:
    """Make the rename durable (where the system lets a folder be synced)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes(path, data: bytes, field: str, *, kind: str, overwrite: bool = False,
                suffixes: Iterable[str] | None = None) -> Path:
    """``data`` written to ``path`` through :func:`atomic`; returns the path."""
    path = local_path(path, field)
    with atomic(path, field, kind=kind, overwrite=overwrite, suffixes=suffixes) as file:
        file.write(data)
    return path


def write_text(path, text: str, field: str, *, kind: str, overwrite: bool = False,
               suffixes: Iterable[str] | None = None) -> Path:
    """``text`` written as UTF-8 through :func:`atomic`; returns the path."""
    return write_bytes(path, text.encode("utf-8"), field, kind=kind, overwrite=overwrite,
                       suffixes=suffixes)


def write_npz(path, arrays: dict, field: str, *, kind: str, version: int,
              overwrite: bool = False, compressed: bool = True) -> Path:
    """``arrays`` and the format member (``"KIND VERSION"``) as an ``.npz`` written through
    :func:`atomic`; returns the path."""
    import numpy as np

    path = local_path(path, field)
    arrays = {**arrays, MARKER: format_member(kind, version)}
    with atomic(path, field, kind=kind, overwrite=overwrite) as file:
        try:
            (np.savez_compressed if compressed else np.savez)(file, **arrays)
        except zipfile.LargeZipFile as error:  # an array too large for the archive
            raise OSError(str(error)) from None
    return path


def save_figure(fig, path, field: str = "path", *, overwrite: bool = False,
                **options) -> Path:
    """A matplotlib figure written to ``path`` (format from the extension) through
    :func:`atomic`; ``options`` go to ``Figure.savefig``. Returns the path."""
    path = local_path(path, field)
    with atomic(path, field, kind="figure", overwrite=overwrite) as file:
        fig.savefig(file, format=path.suffix[1:].lower(), **options)
    return path


def figure_bytes(fig, **options) -> bytes:
    """A matplotlib figure rendered in memory (``options`` go to ``Figure.savefig``; give
    ``format=``): nothing touches the disk."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, **options)
    return buffer.getvalue()
