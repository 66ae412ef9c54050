"""The declared rule being built, so that its parts need not be told its name.

While a declared factory runs (``@declare`` in ``_declaration.py``), its name and what
its declaration claims are the *current declaration*: the checks of
``asynclab.rules.parts`` name the rule in their messages from it, and the composers
(``parts.asynchronous``, ``parts.synchronous``) name the rule and read its claims from it.
A factory that calls another declared factory (``mixed`` builds its ``between`` rule)
sees the inner one's declaration inside that call and its own again after it.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import NamedTuple


class Building(NamedTuple):
    """The declaration of the rule a declared factory is building.

    Attributes:
      name: the rule's name.
      stepwise: whether the declaration says the rule may be replayed step by step
        (``declare(..., stepwise=True)``).
    """

    name: str
    stepwise: bool = False


_CURRENT: contextvars.ContextVar[Building | None] = contextvars.ContextVar(
    "asynclab_rule_building", default=None)


@contextlib.contextmanager
def building(declaration: Building):
    """Run the body with ``declaration`` as the current declaration."""
    token = _CURRENT.set(declaration)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Building | None:
    """The declaration of the rule being built, or None outside a declared factory."""
    return _CURRENT.get()


def label(field: str) -> str:
    """``"rule: field"`` inside a declared factory, ``field`` outside one: how a message
    names a hyperparameter."""
    declaration = current()
    return field if declaration is None else f"{declaration.name}: {field}"
