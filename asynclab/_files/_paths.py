"""Path names as the user gave them: expanded, measured and looked at without opening."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .._errors import ConfigError
from .._validate import size as size  # ``n`` bytes for a message, one writer of it

#: The longest file name (one path component, in bytes) common file systems take.
NAME_MAX = 255

#: The longest path the system takes (PATH_MAX on Linux).
PATH_MAX = 4096


def local_path(path, field: str, *, folder: bool = False) -> Path:
    """``path`` (a string, bytes or ``os.PathLike``) as a :class:`~pathlib.Path`, with
    ``~`` and ``~user`` expanded and its length checked, before anything looks it up.

    Raises:
      ConfigError: naming ``field``: not a path, an empty path, a NUL character, a
        ``~user`` that names no user, or a name longer than file systems take.
    """
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str | os.PathLike):
        raise ConfigError(f"{field} must be a file path, got {type(path).__name__}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not folder and text.strip() in ("", "."):
        raise ConfigError(f"{field} needs a file name, got {text!r}")
    if "\0" in text:
        raise ConfigError(f"{field}: the path {text[:40]!r} holds a NUL character")
    try:
        expanded = Path(text).expanduser()
    except RuntimeError:  # ~user of no such user, or no home folder at all
        user = text.split(os.sep, 1)[0]
        raise ConfigError(f"{field} {text!r}: cannot expand {user!r} (no such user, or no "
                          "home folder); give the path without it") from None
    check_name(expanded, field)
    return expanded


def check_name(path: Path, field: str) -> None:
    """Refuse a path, or a component of it, longer than file systems allow (before it is
    looked up)."""
    try:
        whole = path.absolute()
    except OSError:  # the working folder is gone: measure the path as given
        whole = path
    length = len(os.fsencode(str(whole)))
    if length >= PATH_MAX:
        raise ConfigError(f"{field}: the path {str(path)[:40]}… is {length} bytes long; the "
                          f"system takes at most {PATH_MAX - 1}")
    for part in path.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise ConfigError(f"{field}: the name {part[:40]}… is {len(os.fsencode(part))} "
                              f"bytes long; file systems take at most {NAME_MAX}")


def status(path: Path, field: str) -> os.stat_result | None:
    """``os.stat(path)`` (symbolic links followed) without opening anything, or None when
    nothing is there.

    Raises:
      ConfigError: the path cannot be looked at (a component that is a file, no
        permission, a loop of links), naming ``field``.
    """
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        parent = next((p for p in reversed(path.parents) if p.is_file()), path.parent)
        raise ConfigError(f"{field} {str(path)!r}: {str(parent)!r} is a file, not a "
                          "folder") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            reason = "a loop of symbolic links"
        else:
            reason = error.strerror or type(error).__name__
        raise ConfigError(f"{field} {str(path)!r}: cannot look at it ({reason})") from None


def special(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (``"a folder"``, ``"a
    FIFO"``, ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
