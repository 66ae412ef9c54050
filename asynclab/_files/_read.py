"""The reader: every file asynclab reads is opened, bounded and decoded here.

- A path is looked at with ``os.stat`` first: what is not a regular file (a folder, a
  FIFO, a device, a socket) is refused without being opened, so nothing blocks; an empty
  file and a file larger than the reader's bound are refused before a byte is read.
- A file is opened with ``O_NONBLOCK`` and checked again on its descriptor (a FIFO put in
  its place in between cannot block either).
- Text is decoded one way: gzip is recognised by its magic bytes (not by the name),
  UTF-8 with or without a byte-order mark; anything else (latin-1 bytes, NUL bytes, a
  line longer than the reader takes, more bytes than the bound after decompression) is a
  one-line :class:`~asynclab.ConfigError` naming the file and the byte offset.
- JSON is parsed only after its nesting depth is measured (``json`` recurses once per
  level, so a header nested 200,000 deep would end in a RecursionError).
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import os
import re
import zlib
from pathlib import Path

import numpy as np

from .._errors import ConfigError
from ._paths import local_path, size, special, status

#: The gzip magic bytes.
GZIP_MAGIC = b"\x1f\x8b"

#: UTF-8's byte-order mark (some editors and spreadsheet programs write it).
BOM = codecs.BOM_UTF8

#: The longest line a text reader takes (a CSV row, an outage); longer is not a log.
MAX_LINE = 1 << 20

#: The deepest nesting a JSON header may have (asynclab writes at most ~6 levels).
MAX_JSON_DEPTH = 100


def input_file(path, field: str, *, limit: int | None = None) -> Path:
    """An existing, non-empty regular file of at most ``limit`` bytes, looked at with
    ``os.stat`` only (nothing is opened).

    Raises:
      ConfigError: naming ``field``: no such file, a folder, a FIFO, a device, an empty
        file, or one larger than ``limit``.
    """
    path = local_path(path, field)
    st = status(path, field)
    if st is None:
        raise ConfigError(f"{field}: no such file {str(path)!r}")
    what = special(st.st_mode)
    if what is not None:
        raise ConfigError(f"{field}: {str(path)!r} is not a regular file (it is {what})")
    if st.st_size == 0:
        raise ConfigError(f"{field}: {str(path)!r} is empty")
    if limit is not None and st.st_size > limit:
        raise ConfigError(f"{field}: {str(path)!r} holds {size(st.st_size)}, more than the "
                          f"{size(limit)} this reader takes; nothing was read")
    return path


def open_binary(path, field: str, *, limit: int | None = None) -> io.BufferedReader:
    """``path`` opened for reading bytes, after :func:`input_file`'s checks; the descriptor
    is checked again (a regular file) before it is used, and the open never blocks."""
    path = input_file(path, field, limit=limit)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise ConfigError(f"{field}: cannot open {str(path)!r} "
                          f"({error.strerror or type(error).__name__})") from None
    try:
        what = special(os.fstat(fd).st_mode)
        if what is not None:
            raise ConfigError(f"{field}: {str(path)!r} is not a regular file (it is {what})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path, field: str, *, limit: int) -> bytes:
    """The bytes of ``path`` (at most ``limit``; a file that grew past it is refused)."""
    with open_binary(path, field, limit=limit) as file:
        try:
            data = file.read(limit + 1)
        except OSError as error:
            raise ConfigError(f"{field}: cannot read {str(path)!r} "
                              f"({error.strerror or type(error).__name__})") from None
    if len(data) > limit:
        raise ConfigError(f"{field}: {str(path)!r} holds more than the {size(limit)} this "
                          "reader takes; nothing was read")
    return data


class _Checked(io.RawIOBase):
    """Decoded-text checks on a byte stream, chunk by chunk: at most ``limit`` bytes, no
    NUL byte, no line longer than :data:`MAX_LINE`, valid UTF-8 (a leading byte-order
    mark is dropped). Every refusal names the file and the byte offset."""

    def __init__(self, raw, path: Path, field: str, limit: int | None, what: str,
                 limit_reason: str, file=None):
        self._raw, self._path, self._field = raw, path, field
        self._file = file  # the file under a decompressing ``raw`` (closed with it)
        self._limit, self._what, self._limit_reason = limit, what, limit_reason
        self._offset = 0          # bytes handed out (after the byte-order mark)
        self._line = 0            # bytes since the last newline
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._started = False

    def readable(self) -> bool:
        return True

    def _fail(self, reason: str) -> ConfigError:
        return ConfigError(f"{self._field}: {str(self._path)!r} is not {self._what} "
                           f"({reason})")

    def readinto(self, buffer) -> int:
        if self._limit is not None:  # never more than one byte past the bound at once
            buffer = memoryview(buffer)[:max(self._limit - self._offset + 1, 1)]
        try:
            n = self._raw.readinto(buffer)
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise self._fail(f"a damaged or truncated gzip stream: {error}") from None
        except OSError as error:
            raise ConfigError(f"{self._field}: cannot read {str(self._path)!r} "
                              f"({error.strerror or error})") from None
        if not n:
            try:
                self._decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                raise self._fail(f"the file ends inside a UTF-8 character, at byte "
                                 f"{self._offset}") from None
            return 0
        chunk = bytes(memoryview(buffer)[:n])
        if not self._started:
            self._started = True
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
                memoryview(buffer)[:len(chunk)] = chunk
                n = len(chunk)
                if not n:  # only the mark in this read: read on
                    return self.readinto(buffer)
        self._check(chunk)
        self._offset += n
        return n

    def _check(self, chunk: bytes) -> None:
        start = self._offset
        if self._limit is not None and start + len(chunk) > self._limit:
            raise self._fail(f"more than {size(self._limit)} of text, "
                             f"{self._limit_reason}")
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise self._fail(f"a NUL byte at byte {start + nul}: not text")
        first = chunk.find(b"\n")
        if first < 0:
            self._line += len(chunk)
        else:
            self._line += first
            if self._line > MAX_LINE:
                raise self._fail(f"a line longer than {size(MAX_LINE)} ending at byte "
                                 f"{start + first}")
            self._line = len(chunk) - chunk.rfind(b"\n") - 1
        if self._line > MAX_LINE:
            raise self._fail(f"a line longer than {size(MAX_LINE)} at byte {start}")
        if not chunk.isascii():
            pending = len(self._decoder.getstate()[0])
            try:
                self._decoder.decode(chunk)
            except UnicodeDecodeError as error:
                at = start - pending + error.start
                bad = error.object[error.start]
                raise self._fail(f"byte {at} (0x{bad:02x}) is not UTF-8; save the file as "
                                 "UTF-8") from None
        elif self._decoder.getstate()[0]:  # a character split over two reads, never ended
            raise self._fail(f"byte {start - 1} begins a UTF-8 character that does not "
                             "end")

    def close(self) -> None:
        try:
            self._raw.close()
            if self._file is not None:
                self._file.close()
        finally:
            super().close()


def is_gzip(path, field: str) -> bool:
    """Whether ``path`` starts with gzip's magic bytes (read without blocking)."""
    with open_binary(path, field) as file:
        return file.read(2) == GZIP_MAGIC


def open_text_bytes(path, field: str, *, limit: int | None = None,
                    text_limit: int | None = None, what: str = "UTF-8 text",
                    limit_reason: str = "the most this reader takes",
                    buffer: int = 1 << 20) -> io.BufferedReader:
    """The bytes of a text file, checked as they are read (see :class:`_Checked`): gzip
    decompressed where the file starts with its magic bytes, the byte-order mark dropped.

    Args:
      path: the file.
      field: what messages name (``"log"``, ``"failures"``).
      limit: the most bytes the file may hold on disk.
      text_limit: the most bytes of text it may hold (after decompression).
      what: what the file should be, for messages.
      limit_reason: why ``text_limit`` is what it is, for messages.
    """
    file = open_binary(path, field, limit=limit)
    path = local_path(path, field)
    try:
        raw = file
        if file.peek(2)[:2] == GZIP_MAGIC:
            raw = gzip.GzipFile(fileobj=file, mode="rb")
        checked = _Checked(raw, path, field, text_limit, what, limit_reason,
                           file=None if raw is file else file)
        return io.BufferedReader(checked, buffer)
    except BaseException:
        file.close()
        raise


def open_text(path, field: str, *, limit: int | None = None, text_limit: int | None = None,
              what: str = "UTF-8 text") -> io.TextIOWrapper:
    """:func:`open_text_bytes` decoded (UTF-8, newlines kept as they are)."""
    return io.TextIOWrapper(open_text_bytes(path, field, limit=limit, text_limit=text_limit,
                                            what=what), encoding="utf-8", newline="")


def read_text(path, field: str, *, limit: int, what: str = "UTF-8 text") -> str:
    """The whole text of a (gzip) UTF-8 file of at most ``limit`` bytes of text."""
    with open_text(path, field, limit=limit, text_limit=limit, what=what) as file:
        return file.read()


def gzip_text_size(path, field: str) -> int:
    """The bytes of text a gzip file holds, by its trailer: the stored length is modulo
    4 GiB (and can be forged), so it is bounded below by the compressed size and above
    by deflate's largest expansion (1,032:1)."""
    with open_binary(path, field) as file:
        stored_size = os.fstat(file.fileno()).st_size
        if stored_size < 4:
            return stored_size
        file.seek(-4, 2)
        stored = int.from_bytes(file.read(4), "little")
    return max(min(stored, 1032 * stored_size), stored_size)


# ----------------------------------------------------------------------------- JSON

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text: str) -> int:
    """How deep ``text``'s arrays and objects nest (brackets inside strings not counted),
    measured without parsing."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def loads_json(text: str, field: str, *, max_depth: int = MAX_JSON_DEPTH):
    """``json.loads(text)`` of text read from a file, after its depth is measured.

    Raises:
      ConfigError: naming ``field``: nested deeper than ``max_depth``, or not JSON.
    """
    depth = json_depth(text)
    if depth > max_depth:
        raise ConfigError(f"{field}: its JSON nests {depth} levels deep; asynclab writes "
                          f"and reads at most {max_depth}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ConfigError(f"{field}: not JSON ({str(error).splitlines()[0][:80]})") from None
