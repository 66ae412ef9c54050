"""asynclab's ``.npz`` archives: a format version, read member by member, written atomically.

Results, study data and checkpoints are ``.npz`` archives (a zip of ``.npy`` arrays). Each
one written now holds a member ``asynclab_format``, the text ``"KIND VERSION"`` (e.g.
``"result 1"``); files written before it existed are read as version 1, whose layout is
the same. Reading never trusts the file: an :class:`Archive` reads each member's ``.npy``
header first, checks that the array it declares could be held by the bytes the file
really has (a deflated member expands at most ~1032-fold) and fits in memory, and only
then reads it. Pickled (object) arrays are never loaded.
"""

from __future__ import annotations

import math
import zipfile
import zlib

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ._paths import size
from ._read import input_file, loads_json, open_binary

#: The member that names the kind of file and its format version.
FORMAT_MEMBER = "asynclab_format"

#: The most a deflated stream can expand (deflate's limit is 1032:1), with a margin.
MAX_EXPANSION = 1100

#: Array kinds a file may hold: booleans, integers, floats, and text (JSON headers).
_KINDS = "biufU"


def format_member(kind: str, version: int) -> np.ndarray:
    """The ``asynclab_format`` member for a file of ``kind`` at ``version``."""
    return np.array(f"{kind} {version}")


class Archive:
    """An ``.npz`` file opened for checked reading (use as a context manager).

    Opening checks that ``path`` is an existing, non-empty zip of ``.npy`` members and
    reads every member's header (shape and dtype) without reading any data; a member
    whose declared size exceeds what the file can hold, or whose dtype is not plain
    numbers or text, is refused here. The total of the declared sizes is checked against
    the memory available.

    Args:
      path: the file.
      field: what the message names (``"Result.load"``, ``"--checkpoint"``).
      what: what the file should be, for messages (``"an asynclab result"``).
    """

    def __init__(self, path, field: str, what: str):
        self.path = input_file(path, field)
        self.field, self.what = field, what
        self._file = open_binary(self.path, field)
        try:
            self._zip = zipfile.ZipFile(self._file)
        except (OSError, zipfile.BadZipFile, EOFError, ValueError):
            reason = self._not_npz_reason()
            self._file.close()
            raise self.error(reason) from None
        try:
            infos = {info.filename[:-4]: info for info in self._zip.infolist()
                     if info.filename.endswith(".npy")}
            if not infos:
                raise self.error("a zip file without .npy arrays")
            self._infos = infos
            self.headers = {name: self._header(name) for name in infos}
            total = sum(_nbytes(shape, dtype) for shape, dtype in self.headers.values())
            _validate.check_memory(2 * total, f"{field} {str(self.path)!r}",
                                   what="its arrays",
                                   advice="read it on a machine with more memory")
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ opening
    def _not_npz_reason(self) -> str:
        self._file.seek(0)
        magic = self._file.read(6)
        if magic == b"\x93NUMPY":
            return "a single .npy array, not an .npz archive"
        return "not an .npz archive, or a truncated one"

    def error(self, reason: str) -> ConfigError:
        error = ConfigError(f"{self.field}: {str(self.path)!r} is not {self.what} ({reason})")
        error.reason = reason  # what the file is instead, for the writer's refusals
        return error

    def _header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        info = self._infos[name]
        try:
            with self._zip.open(info) as file:
                version = np.lib.format.read_magic(file)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(file)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(file)
                else:
                    raise ValueError(f"npy format {version}")
                offset = file.tell()
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            raise self.error(f"member {name!r} is damaged: {error}") from None
        if dtype.hasobject or dtype.kind not in _KINDS or dtype.fields is not None:
            raise self.error(f"member {name!r} holds {dtype} values, not numbers or text")
        need = _nbytes(shape, dtype)
        stored = info.compress_size * (MAX_EXPANSION if info.compress_type else 1)
        if offset + need > info.file_size or need > stored:
            raise self.error(
                f"member {name!r} declares shape {shape} of {dtype} ({size(need)}), "
                f"more than the file holds ({size(info.compress_size)} stored): "
                "it is damaged or was not written by asynclab")
        return tuple(int(n) for n in shape), dtype

    # ------------------------------------------------------------------ reading
    def __contains__(self, name: str) -> bool:
        return name in self.headers

    def __iter__(self):
        return iter(self.headers)

    def __getitem__(self, name: str) -> np.ndarray:
        """Member ``name``'s array (its header was checked on opening)."""
        try:
            with self._zip.open(self._infos[name]) as file:
                return np.lib.format.read_array(file, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            raise self.error(f"member {name!r} is damaged: {error}") from None

    def read_all(self) -> dict[str, np.ndarray]:
        return {name: self[name] for name in self.headers}

    def text(self, name: str) -> str:
        """A member holding one string (a JSON header)."""
        shape, dtype = self.headers[name]
        if shape != () or dtype.kind != "U":
            raise self.error(f"member {name!r} should hold one text, it holds {dtype} "
                             f"of shape {shape}")
        return str(self[name])

    def json(self, name: str):
        """A member holding one JSON text, parsed after its nesting depth is checked."""
        try:
            return loads_json(self.text(name), f"member {name!r}")
        except ConfigError as error:
            raise self.error(str(error)) from None

    def kind(self) -> str | None:
        """The kind of asynclab file this is (stored, or told by a member only that kind
        has), or None for another program's arrays."""
        if FORMAT_MEMBER in self:
            return self.text(FORMAT_MEMBER).split(" ")[0]
        return next((kind for kind, mark in _LEGACY_MARK.items() if mark in self), None)

    def require(self, kind: str, newest: int) -> int:
        """Check that this is a file of ``kind`` of a format up to ``newest``; returns
        its version.

        Raises:
          ConfigError: saying what the file is instead (and what reads it), or that a
            newer asynclab wrote it.
        """
        found = self.kind()
        if found != kind:
            other = (READ_WITH.get(found) or
                     f"an .npz of other arrays ({', '.join(sorted(self)[:6]) or 'none'})")
            raise ConfigError(f"{self.field}: {str(self.path)!r} is not {self.what}: it is "
                              f"{other}")
        return self.version(kind, newest)

    def version(self, kind: str, newest: int) -> int:
        """The file's format version for a file of ``kind`` (1 where none is stored).

        Raises:
          ConfigError: the file says it is another kind, or a version newer than
            ``newest`` (written by a newer asynclab).
        """
        if FORMAT_MEMBER not in self:
            return 1
        stored = self.text(FORMAT_MEMBER).split()
        if len(stored) != 2 or not stored[1].isdigit():
            raise self.error(f"its format {' '.join(stored)!r} is not 'KIND VERSION'")
        if stored[0] != kind:
            raise self.error(f"it is an asynclab {stored[0]} file, not a {kind} file")
        version = int(stored[1])
        if not 1 <= version <= newest:
            who = "a newer asynclab wrote it" if version > newest else "no asynclab writes it"
            raise self.error(f"it has {kind} format {version}; this asynclab reads formats "
                             f"1 to {newest} ({who})")
        return version

    def close(self) -> None:
        try:
            if hasattr(self, "_zip"):
                self._zip.close()
        finally:
            self._file.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: The member that marks each kind of file written before format versions were stored.
_LEGACY_MARK = {"result": "config_json", "study": "__meta__", "checkpoint": "header"}

#: What each kind of file is, and what reads it, for messages.
READ_WITH = {
    "result": "a saved result (read it with asynclab.Result.load)",
    "study": "a study's data (read it with asynclab.studies.load)",
    "checkpoint": "a checkpoint of a run on devices (give it to --resume / run_pmap)",
}


def _nbytes(shape, dtype: np.dtype) -> int:
    return math.prod(int(n) for n in shape) * dtype.itemsize

