"""Which public functions read and write files, and the kind of file each one handles.

A function is entered with a decorator where it is defined (``@reads("result")``,
``@writes("figure")``); the decorator returns the function unchanged. The tests walk
both tables: every reader is given a FIFO, a folder, a device, an empty and a foreign
file, every writer an existing foreign file, a FIFO and a full disk, so a new entry
point is tried as soon as it is entered, and the package is searched for file calls
outside this package, so one that is not entered fails a test.
"""

from __future__ import annotations

#: ``"module.qualname" -> kind`` of every public function that reads a file.
READERS: dict[str, str] = {}

#: ``"module.qualname" -> kind`` of every public function that writes a file.
WRITERS: dict[str, str] = {}


def _name(function) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def reads(kind: str):
    """Enter the decorated function in :data:`READERS` as a reader of ``kind``."""

    def enter(function):
        READERS[_name(function)] = kind
        return function

    return enter


def writes(kind: str):
    """Enter the decorated function in :data:`WRITERS` as a writer of ``kind``."""

    def enter(function):
        WRITERS[_name(function)] = kind
        return function

    return enter
