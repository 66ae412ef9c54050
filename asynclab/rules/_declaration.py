"""A rule is declared once: ``@declare(...)`` on its factory.

The declaration carries the rule's name (the factory's), its kind, a one-line
description, its reference, which hyperparameters are *static* (they decide the shape
of the computation: λ, group size, warm-up rounds, the inner optimizer, a variant
switch) and what the rule can do. Every other hyperparameter is *traced*: a number that
may be a JAX array, so that executors pass it to a compiled replay as an argument and a
new value never recompiles. A traced hyperparameter whose default is None is an *option
that adds state* (optax's convention: ``worker_momentum=None`` means no momentum buffer,
any number, 0.0 included, is a buffer); the declaration says what each one adds
(``state=``), whether it is given is part of the rule's structure, its value stays
traced. Defaults come from the factory's signature. The registry (``RULES``), the
package's exports and ``asynclab rules`` all read the declarations.

A rule declared in a user's own module enters the same registry as the catalogue's, and
runs wherever they run. Its name must be new; declaring the same factory again (its
module run again: a notebook cell, a reload) replaces the declaration.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from .._errors import ConfigError
from .._programs import forget_every_program
from ._base import Capabilities, Rule
from ._building import Building, building

KINDS = ("sync", "async")

#: What a worker momentum (``worker_momentum``, an optax momentum whose buffer survives
#: pulls) adds to a rule's state.
WORKER_MOMENTUM = "a momentum buffer on every worker"

#: What a server momentum (``server_momentum``, heavy ball on the central updates) adds to
#: a rule's state.
SERVER_MOMENTUM = "the previous centre at the server"

#: Both momenta, for ``declare(..., state=MOMENTA)`` on a rule that takes both.
MOMENTA: Mapping[str, str] = MappingProxyType({"worker_momentum": WORKER_MOMENTUM,
                                               "server_momentum": SERVER_MOMENTUM})


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
      factory: the declared factory; the rules it returns carry ``structure``,
        ``values`` and ``capabilities``.
      kind: "sync" or "async".
      description: one line.
      reference: where the rule comes from.
      hyperparameters: the factory's arguments, in signature order.
      stepwise: the declaration says that λ sets only the length of the rule's local
        work, so that it may be replayed one local step per compiled event where its
        parts allow (see :class:`~asynclab.rules.Capabilities`).
    """

    name: str
    factory: Callable[..., Rule]
    kind: str
    description: str
    reference: str
    hyperparameters: tuple[Hyperparameter, ...]
    stepwise: bool = False

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


def declare(kind: str, description: str, reference: str, static: tuple[str, ...] = (), *,
            state: Mapping[str, str] | None = None, stepwise: bool = False):
    """Declare the decorated factory as a rule, under the factory's name.

    Args:
      kind: "sync" (collectives over the worker axis, one round per event) or "async"
        (one exchange per event).
      description: one line for ``asynclab rules``.
      reference: where the rule comes from.
      static: the hyperparameters that decide the shape of the computation. Every other
        one is traced, and must be a real number; a default that is a bool, an int or a
        string marks a static one, and forgetting to declare it so is an error here.
      state: the options that add state when given, ``name -> what they add``
        (:data:`MOMENTA`, or :data:`WORKER_MOMENTUM` / :data:`SERVER_MOMENTUM` for one
        momentum): exactly the traced hyperparameters whose default is None.
      stepwise: λ sets only the length of the rule's local work (nothing else reads it),
        so a synchronous rule may be replayed one local step per compiled event; a built
        rule answers so only where its parts allow it too
        (:class:`~asynclab.rules.Capabilities`). :func:`asynclab.rules.check` compares
        its step-by-step replay with its plain one.

    While the factory runs, its parts know the rule being built: their checks name it in
    their messages (``"myrule: learning_rate must be > 0"``) and the composers
    (``parts.asynchronous``, ``parts.synchronous``) give the rule its name and
    capabilities, so the body never writes the name.

    The decorated factory validates concrete values (``ConfigError`` naming the rule and
    the field), skips the checks for traced values, and returns a rule whose
    ``structure`` is ``(name, static values, options not given)``, whose ``values`` are
    the traced ones that were given, and whose ``capabilities`` say what it can do.

    Raises:
      ConfigError: for a declaration that contradicts the factory's signature, or a name
        that another factory already declared.
    """
    if kind not in KINDS:
        raise ConfigError(f"declare: kind must be one of {KINDS}, got {kind!r}")
    state = dict(state or {})
    if not all(isinstance(k, str) and isinstance(v, str) and v for k, v in state.items()):
        raise ConfigError(f"declare: state must map option names to what they add (text), "
                          f"got {state!r}")
    if not isinstance(stepwise, bool):
        raise ConfigError(f"declare: stepwise must be true or false, got {stepwise!r}")

    def wrap(factory):
        name = factory.__name__
        if not name.isidentifier():
            raise ConfigError(f"declare: a rule is named by its factory; {name!r} is not a "
                              "name (a def, not a lambda)")
        signature = inspect.signature(factory)
        parameters = signature.parameters
        unknown = set(static) - set(parameters)
        if unknown:
            raise ConfigError(f"rule {name}: static {sorted(unknown)} are not arguments")
        hyperparameters = [_hyperparameter(name, p, p.name in static, state)
                           for p in parameters.values()]
        options = {h.name for h in hyperparameters if h.adds_state}
        if set(state) - options:
            raise ConfigError(f"rule {name}: state {sorted(set(state) - options)} are not "
                              "traced arguments whose default is None")
        if stepwise and kind != "sync":
            raise ConfigError(f"rule {name}: stepwise replays synchronous rules; this one is "
                              f"{kind}")
        if stepwise and "local_steps" in parameters and "local_steps" not in static:
            raise ConfigError(f"rule {name}: stepwise rebuilds the rule with local_steps=1; "
                              "declare local_steps static")
        declaration = Building(name, stepwise)
        described = MappingProxyType({h.name: h.adds_state for h in hyperparameters
                                      if h.adds_state})

        @functools.wraps(factory)
        def build(*args, **kwargs) -> Rule:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            with building(declaration):
                rule = factory(**bound.arguments)
            if not isinstance(rule, Rule):
                raise ConfigError(f"rule {name}: the factory must return an asynclab.rules."
                                  f"Rule, got {type(rule).__name__}")
            if rule.synchronous != (kind == "sync"):
                built = "synchronous" if rule.synchronous else "asynchronous"
                raise ConfigError(f"rule {name}: declared {kind!r} but the factory built an "
                                  f"{built} rule")
            checked = {k: rule.hyperparameters.get(k, v) for k, v in bound.arguments.items()}
            absent = tuple(k for k, v in checked.items() if k not in static and v is None)
            # a rule built by another declared factory (mixed's between) brings that one's
            # claims: keep only what this declaration says too
            capabilities = Capabilities(resets=rule.capabilities.resets,
                                        stepwise=rule.capabilities.stepwise and stepwise,
                                        state=described)
            return rule._replace(
                name=name,
                hyperparameters=checked,
                structure=(name, tuple((k, checked[k]) for k in static), absent),
                values={k: v for k, v in checked.items()
                        if k not in static and k not in absent},
                capabilities=capabilities,
            )

        _register(RuleInfo(name, build, kind, description, reference, tuple(hyperparameters),
                           stepwise))
        return build

    return wrap


def _hyperparameter(rule: str, p: inspect.Parameter, is_static: bool,
                    state: Mapping[str, str]) -> Hyperparameter:
    """The declaration of the factory's argument ``p``, checked."""
    if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
        raise ConfigError(f"rule {rule}: hyperparameters are named arguments, not *{p.name}")
    if not is_static and isinstance(p.default, bool | int | str):
        raise ConfigError(f"rule {rule}: {p.name} has a non-real default {p.default!r}; "
                          "declare it static")
    adds_state = None
    if p.default is None and not is_static:
        if p.name not in state:
            raise ConfigError(f"rule {rule}: {p.name} defaults to None but the declaration "
                              f"does not say what it adds: declare(..., state={{"
                              f"'{p.name}': 'what giving it adds'}}), or declare it static")
        adds_state = state[p.name]
    return Hyperparameter(p.name, p.default, is_static, adds_state)


def _origin(factory) -> str:
    return f"{factory.__module__}.{factory.__qualname__}"


def _register(info: RuleInfo) -> None:
    """Enter ``info`` in :data:`RULES`; the same factory declared again (its module run
    again) replaces its declaration, another factory under a taken name is an error."""
    old = RULES.get(info.name)
    if old is not None:
        if _origin(old.factory) != _origin(info.factory):
            raise ConfigError(f"rule {info.name}: the name is taken by {_origin(old.factory)}; "
                              "name the factory otherwise")
        # programs compiled from the old declaration are keyed by the same name
        forget_every_program()
    RULES[info.name] = info
