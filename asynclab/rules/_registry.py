"""Every rule by name, with a one-line description and its reference."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import NamedTuple

from .._errors import ConfigError
from . import _catalogue as catalogue
from ._base import Rule


class RuleInfo(NamedTuple):
    """A registry entry."""

    name: str
    factory: Callable[..., Rule]
    synchronous: bool
    description: str
    reference: str

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(inspect.signature(self.factory).parameters)


RULES: dict[str, RuleInfo] = {
    info.name: info
    for info in (
        RuleInfo("sequential_sgd", catalogue.sequential_sgd, False,
                 "one worker, plain SGD: the reference every rule reduces to",
                 "Robbins & Monro 1951"),
        RuleInfo("downpour", catalogue.downpour, False,
                 "asynchronous: commit the accumulated step, add it, reset to the centre",
                 "Dean et al., NIPS 2012"),
        RuleInfo("synchronous_sgd", catalogue.synchronous_sgd, True,
                 "synchronous: average the workers' gradients, one SGD step at the centre",
                 "e.g. Goyal et al. 2017"),
        RuleInfo("model_averaging", catalogue.model_averaging, True,
                 "synchronous: λ local SGD steps per worker, then average the parameters",
                 "Zinkevich et al., NIPS 2010; Hermans 2017, ch. 2"),
    )
}


def make_rule(name: str, **hyperparameters) -> Rule:
    """The rule registered as ``name``, built with ``hyperparameters``.

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
    return _built(name, tuple(sorted(hyperparameters.items())))


@functools.lru_cache(maxsize=256)
def _built(name: str, hyperparameters: tuple) -> Rule:
    # One object per (rule, hyperparameters): the engine caches compilations by rule.
    return RULES[name].factory(**dict(hyperparameters))
