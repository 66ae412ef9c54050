"""A rule is declared once: ``@declare(...)`` on its factory.

The declaration carries the rule's name (the factory's), its kind, a one-line
description, its reference and which hyperparameters are *static* (they decide the shape
of the computation: λ, group size, warm-up rounds, the inner optimizer, a variant
switch). Every other hyperparameter is *traced*: a number that may be a JAX array, so
that executors pass it to a compiled replay as an argument and a new value never
recompiles. A traced hyperparameter whose default is None is an *option that adds state*
(optax's convention: ``worker_momentum=None`` means no momentum buffer, any number, 0.0
included, is a buffer); whether it is given is part of the rule's structure, its value
stays traced. Defaults come from the factory's signature. The registry (``RULES``), the
package's exports and ``asynclab rules`` all read the declarations.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

from ._base import Rule

KINDS = ("sync", "async")


class Hyperparameter(NamedTuple):
    """One hyperparameter of a declared rule.

    Attributes:
      name: the factory's argument name.
      default: its default value, or ``inspect.Parameter.empty`` when it has none.
      static: True when it decides the shape of the computation (a new value compiles
        a new replay); False for a traced real number.
      adds_state: for an option whose default is None, what giving it adds to the
        rule's state (None for the other hyperparameters).
    """

    name: str
    default: Any
    static: bool
    adds_state: str | None = None

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


class RuleInfo(NamedTuple):
    """The declaration of a rule: what the registry, the exports and the CLI read.

    Attributes:
      name: registry name (the factory's name).
      factory: the declared factory; the rules it returns carry ``structure`` and
        ``values``.
      kind: "sync" or "async".
      description: one line.
      reference: where the rule comes from.
      hyperparameters: the factory's arguments, in signature order.
    """

    name: str
    factory: Callable[..., Rule]
    kind: str
    description: str
    reference: str
    hyperparameters: tuple[Hyperparameter, ...]

    @property
    def synchronous(self) -> bool:
        return self.kind == "sync"

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.hyperparameters)

    @property
    def static(self) -> tuple[str, ...]:
        """Names of the static hyperparameters (shape-deciding)."""
        return tuple(h.name for h in self.hyperparameters if h.static)

    @property
    def traced(self) -> tuple[str, ...]:
        """Names of the traced hyperparameters (real numbers, may be JAX arrays)."""
        return tuple(h.name for h in self.hyperparameters if not h.static)

    @property
    def state_options(self) -> dict[str, str]:
        """The options that add state when given: ``name -> what they add``."""
        return {h.name: h.adds_state for h in self.hyperparameters if h.adds_state}

    @property
    def defaults(self) -> dict:
        """Default values of the hyperparameters that have one."""
        return {h.name: h.default for h in self.hyperparameters if not h.required}

    def rebuild(self, static: tuple, values: dict, absent: tuple = ()) -> Rule:
        """The rule with static hyperparameters ``static`` (``(name, value)`` pairs, as in
        ``rule.structure[1]``), traced ``values`` (tracers inside a compiled replay) and
        the options ``absent`` (``rule.structure[2]``) not given."""
        return self.factory(**dict(static), **dict.fromkeys(absent), **values)


#: Every declared rule by name, in declaration order.
RULES: dict[str, RuleInfo] = {}


#: What each option that adds state adds, by name (a rule's option with default None
#: must be named here).
STATE_OPTIONS = {
    "worker_momentum": "a momentum buffer on every worker",
    "server_momentum": "the previous centre at the server",
}


def declare(kind: str, description: str, reference: str, static: tuple[str, ...] = ()):
    """Declare the decorated factory as a rule.

    Args:
      kind: "sync" (collectives over the worker axis, one round per event) or "async"
        (one exchange per event).
      description: one line for ``asynclab rules``.
      reference: where the rule comes from.
      static: the hyperparameters that decide the shape of the computation. Every other
        one is traced, and must be a real number; a default that is a bool, an int or a
        string marks a static one, and forgetting to declare it so is an error here. A
        default of None marks an option that adds state (``STATE_OPTIONS``).

    The decorated factory validates concrete values (``ConfigError`` naming the rule and
    the field), skips the checks for traced values, and returns a rule whose
    ``structure`` is ``(name, static values, options not given)`` and whose ``values`` are
    the traced ones that were given.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def wrap(factory):
        name = factory.__name__
        signature = inspect.signature(factory)
        unknown = set(static) - set(signature.parameters)
        if unknown:
            raise ValueError(f"rule {name}: static {sorted(unknown)} are not arguments")
        hyperparameters = []
        for p in signature.parameters.values():
            is_static = p.name in static
            if not is_static and isinstance(p.default, bool | int | str):
                raise ValueError(f"rule {name}: {p.name} has a non-real default "
                                 f"{p.default!r}; declare it static")
            adds_state = None
            if p.default is None and not is_static:
                if p.name not in STATE_OPTIONS:
                    raise ValueError(f"rule {name}: {p.name} defaults to None but is not an "
                                     "option that adds state (STATE_OPTIONS)")
                adds_state = STATE_OPTIONS[p.name]
            hyperparameters.append(Hyperparameter(p.name, p.default, is_static, adds_state))

        @functools.wraps(factory)
        def build(*args, **kwargs) -> Rule:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            rule = factory(**bound.arguments)
            checked = {k: rule.hyperparameters.get(k, v) for k, v in bound.arguments.items()}
            absent = tuple(k for k, v in checked.items() if k not in static and v is None)
            return rule._replace(
                name=name,
                hyperparameters=checked,
                structure=(name, tuple((k, checked[k]) for k in static), absent),
                values={k: v for k, v in checked.items()
                        if k not in static and k not in absent},
            )

        if name in RULES:
            raise ValueError(f"rule {name} is declared twice")
        RULES[name] = RuleInfo(name, build, kind, description, reference,
                               tuple(hyperparameters))
        return build

    return wrap
