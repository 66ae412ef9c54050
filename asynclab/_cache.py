"""JAX's persistent compilation cache for the command line, the figures and the notebooks.

A compiled replay is written to a per-user folder and read back by the next process that
compiles the same program, so a second ``asynclab figures --quick`` (or a notebook run
again) does not compile what the first one compiled. Library users decide for
themselves: ``import asynclab`` alone changes no JAX setting.

The folder is ``$ASYNCLAB_COMPILE_CACHE`` if set (an empty value turns the cache off),
else ``$XDG_CACHE_HOME/asynclab/jax`` (``~/.cache/asynclab/jax``). A cache folder that
JAX was already given (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``) is left as it is.
A folder that cannot be written turns the cache off, with one warning.

Processes running at once (the test suite's workers) each get a folder of their own
(:func:`process_folder`): JAX writes an entry in place, without a lock (unless the
optional ``filelock`` package and a size limit are set), so a process reading a shared
folder can read an entry another is still writing. A process folder starts with a hard
link to every entry of the shared folder, and at the end (:func:`merge_folder`) links
each entry it added, once checked whole, back into the shared folder. Such processes
also turn off the XLA caches JAX keeps beside its own (:data:`PROCESS_ENVIRONMENT`):
their folder's path enters every compiled program's cache key, so in a folder per
process no key would ever be found again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import warnings
import zlib
from pathlib import Path

#: The environment variable that moves the cache (a folder) or turns it off (empty).
ENVIRONMENT = "ASYNCLAB_COMPILE_CACHE"

#: Programs that compile faster than this are not written (JAX's own default is 1 s).
MIN_COMPILE_SECONDS = 0.2

#: Where the process folders of a shared folder live (inside it).
PROCESSES = ".processes"

#: The environment of a process working in a :func:`process_folder`. When the persistent
#: cache is on, JAX also points XLA's GPU autotuning cache at a folder inside it
#: (``jax_persistent_cache_enable_xla_caches``), and that path is part of the options a
#: program's cache key is computed from: in a folder of each process's own, every key
#: would be new, and a second run would compile everything again. "none" names no XLA
#: cache, so the key is the program's alone.
PROCESS_ENVIRONMENT = {"JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none"}

_WARNED: set[str] = set()


def cache_folder() -> Path | None:
    """The folder the cache lives in, or None when it is turned off."""
    if ENVIRONMENT in os.environ:
        value = os.environ[ENVIRONMENT].strip()
        return Path(value).expanduser() if value else None
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "asynclab" / "jax"


def _unwritable(folder: Path) -> str | None:
    """None when files can be made in ``folder`` (made if missing), else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except (OSError, RuntimeError) as error:  # RuntimeError: ~user of no such user
        return getattr(error, "strerror", None) or str(error) or type(error).__name__
    return None


def _warn_once(folder: Path, reason: str) -> None:
    if str(folder) in _WARNED:
        return
    _WARNED.add(str(folder))
    warnings.warn(f"the compilation cache folder {str(folder)!r} cannot be written "
                  f"({reason}); running without it (every run compiles its programs)",
                  RuntimeWarning, stacklevel=3)


def enable_compile_cache() -> Path | None:
    """Turn JAX's persistent compilation cache on in :func:`cache_folder`; returns the
    folder in use (JAX's own when it was given one), or None when off or unwritable
    (then with one warning, once per folder)."""
    import jax

    given = jax.config.jax_compilation_cache_dir
    if given:
        reason = _unwritable(Path(given))
        if reason is None:
            return Path(given)
        _warn_once(Path(given), reason)
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    folder = cache_folder()
    if folder is None:
        return None
    reason = _unwritable(folder)
    if reason is not None:  # a read-only home: run without the cache rather than fail
        _warn_once(folder, reason)
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return folder


# ----------------------------------------------------------------------------- processes


def _entries(folder: Path) -> dict[str, Path]:
    """The cache entries in ``folder``: its regular files not starting with a dot."""
    out = {}
    with contextlib.suppress(OSError), os.scandir(folder) as found:
        for entry in found:
            if not entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
                out[entry.name] = Path(entry.path)
    return out


def _link(source: Path, target: Path) -> None:
    """``target`` made the same file as ``source`` at once (a hard link, or a copy
    renamed into place where links are not possible); an existing target is kept."""
    try:
        os.link(source, target)
    except FileExistsError:
        pass
    except OSError:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".copy-")
        os.close(fd)
        try:
            shutil.copyfile(source, tmp)
            if not target.exists():
                os.replace(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def whole(entry: Path) -> bool:
    """Whether a cache entry is a complete compressed stream (zlib, or zstandard where a
    module reads it): a file another process was still writing, or one cut short, is
    not."""
    try:
        with entry.open("rb") as file:
            head = file.read(4)
            file.seek(0)
            if head == b"\x28\xb5\x2f\xfd":  # zstandard's magic
                return _whole_zstd(file)
            stream = zlib.decompressobj()
            while chunk := file.read(1 << 20):
                stream.decompress(chunk, 1 << 16)
                while stream.unconsumed_tail:
                    stream.decompress(stream.unconsumed_tail, 1 << 16)
            return stream.eof and not stream.unused_data
    except (OSError, zlib.error):
        return False


def _whole_zstd(file) -> bool:
    try:
        import zstandard
    except ImportError:
        return False  # cannot tell: not shared
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(file, read_across_frames=False)
        while reader.read(1 << 20):
            pass
        return True
    except zstandard.ZstdError:
        return False


def process_folder(shared: Path, name: str) -> Path:
    """A cache folder for this process alone, inside ``shared``: a hard link to every
    entry of ``shared`` (so it starts warm), folders left by processes that have ended
    removed first."""
    shared = Path(shared)
    root = shared / PROCESSES
    root.mkdir(parents=True, exist_ok=True)
    for old in root.iterdir():
        pid = old.name.split("-")[-2] if old.name.count("-") >= 2 else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-{os.getpid()}-", dir=root))
    for entry_name, entry in _entries(shared).items():
        with contextlib.suppress(OSError):
            _link(entry, folder / entry_name)
    return folder


def merge_folder(folder: Path, shared: Path) -> int:
    """Link every entry ``folder`` added, if whole (:func:`whole`), into ``shared``;
    then remove ``folder``. Returns the number of entries shared."""
    folder, shared = Path(folder), Path(shared)
    have = _entries(shared)
    added = 0
    for entry_name, entry in _entries(folder).items():
        if entry_name in have or not whole(entry):
            continue
        with contextlib.suppress(OSError):
            _link(entry, shared / entry_name)
            added += 1
    shutil.rmtree(folder, ignore_errors=True)
    return added


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: alive
        return True
    return True
