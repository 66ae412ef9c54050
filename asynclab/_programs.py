"""The one cache of compiled programs: least recently used first out, one lock each.

The replay's chunk and initial-state programs and the device executor's programs are
kept here. A key holds ``id(problem)`` (and for a rule assembled by hand ``id(rule)``):
an entry keeps those objects alive, so an identity is never reused while its entry
exists.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any


class Programs:
    """Up to ``size`` programs by key; the least recently used goes first.

    ``get(key, build, keep)`` returns the cached program, or calls ``build()`` (under the
    cache's lock, so two threads asking for one key build it once) and caches it with the
    objects ``keep`` that must outlive the entry.
    """

    def __init__(self, size: int):
        self.size = int(size)
        self._entries: OrderedDict[Hashable, tuple[Any, Callable]] = OrderedDict()
        self._lock = threading.RLock()
        _EVERY.add(self)

    def get(self, key: Hashable, build: Callable[[], Callable], keep: Any = ()) -> Callable:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][1]
            program = build()
            self._entries[key] = (keep, program)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
            return program

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)


#: every cache of programs, so that :func:`forget_every_program` reaches them all
_EVERY: weakref.WeakSet[Programs] = weakref.WeakSet()


def forget_every_program() -> None:
    """Empty every cache of programs: a rule declared again under its name (a notebook
    cell run twice, a module reloaded) may compute something else, and its programs are
    keyed by that name."""
    for programs in list(_EVERY):
        programs.clear()
