"""Every declared rule by name (``RULES``), and ``make_rule`` to build one by name."""

from __future__ import annotations

import functools

from .._errors import ConfigError
from . import _catalogue  # noqa: F401  (its declarations fill RULES)
from ._base import Rule
from ._declaration import RULES, RuleInfo

__all__ = ["RULES", "RuleInfo", "make_rule"]


def make_rule(name: str, **hyperparameters) -> Rule:
    """The rule registered as ``name``, built with ``hyperparameters``.

    Real-valued hyperparameters may be JAX arrays; inside ``jit`` they are traced and
    skip the concrete checks.

    Raises:
      ConfigError: for an unknown rule, a hyperparameter the rule does not have, or a
        value outside its domain; the message names the rule and the parameter.
    """
    try:
        info = RULES[name]
    except KeyError:
        raise ConfigError(f"unknown rule {name!r}; available: {', '.join(RULES)}") from None
    accepted = info.parameters
    for key, value in hyperparameters.items():
        if isinstance(value, list | dict):
            raise ConfigError(f"rule {name!r}: {key} must be a single value, got {value!r}")
        if key not in accepted:
            raise ConfigError(
                f"rule {name!r} has no hyperparameter {key!r}; it takes: {', '.join(accepted)}"
            )
    missing = [h.name for h in info.hyperparameters if h.required and h.name not in
               hyperparameters]
    if missing:
        raise ConfigError(f"rule {name!r} needs {', '.join(missing)}")
    items = tuple(sorted(hyperparameters.items()))
    try:
        hash(items)
    except TypeError:  # arrays: build afresh
        return info.factory(**hyperparameters)
    return _built(info.factory, items)


@functools.lru_cache(maxsize=256)
def _built(factory, hyperparameters: tuple) -> Rule:
    # One object per (declared factory, hyperparameters), for executors that cache by rule
    # object (the device backends); the replay caches by the rule's structure instead. A
    # rule declared again has a new factory, and so new objects.
    return factory(**dict(hyperparameters))
