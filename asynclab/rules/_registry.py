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

    @property
    def defaults(self) -> dict:
        """Default values of the hyperparameters that have one."""
        return {name: p.default for name, p in inspect.signature(self.factory).parameters.items()
                if p.default is not inspect.Parameter.empty}


RULES: dict[str, RuleInfo] = {
    info.name: info
    for info in (
        RuleInfo("sequential_sgd", catalogue.sequential_sgd, False,
                 "one worker, plain SGD: the reference every rule reduces to",
                 "Robbins & Monro 1951"),
        RuleInfo("downpour", catalogue.downpour, False,
                 "commit the accumulated step, add it, reset to the centre",
                 "Dean et al., NIPS 2012"),
        RuleInfo("dynsgd", catalogue.dynsgd, False,
                 "DOWNPOUR with the commit scaled by 1/(τ+1)",
                 "Jiang et al., SIGMOD 2017"),
        RuleInfo("agn", catalogue.agn, False,
                 "accumulated gradient normalisation: commit a/λ",
                 "Hermans, ACML 2017"),
        RuleInfo("adag", catalogue.adag, False,
                 "AGN scaled per weight by 1/(γ⁻¹(θ̃−θ̃_pull)²+1)",
                 "Hermans 2017 (thesis), ch. 4"),
        RuleInfo("staleness_aware", catalogue.staleness_aware, False,
                 "step η/τ (η when τ = 0)",
                 "Zhang, Gupta, Lian, Liu, IJCAI 2016"),
        RuleInfo("delay_adaptive", catalogue.delay_adaptive, False,
                 "step η·n/max(n, τ)",
                 "Mishchenko et al., NeurIPS 2022"),
        RuleInfo("dc_asgd", catalogue.dc_asgd, False,
                 "delay compensation g + κ g⊙g⊙(θ̃−θ̃_pull)",
                 "Zheng et al., ICML 2017"),
        RuleInfo("gap_aware", catalogue.gap_aware, False,
                 "divide the commit by the gap 1 + |θ̃−θ̃_pull|/(η(√v̂+ε))",
                 "Barkai, Hakimi, Schuster, ICLR 2020"),
        RuleInfo("aeasgd", catalogue.aeasgd, False,
                 "asynchronous EASGD: elastic exchange α(θᵏ−θ̃), no reset",
                 "Zhang, Choromanska, LeCun, NIPS 2015"),
        RuleInfo("eamsgd", catalogue.eamsgd, False,
                 "asynchronous EASGD with Nesterov momentum on the workers",
                 "Zhang, Choromanska, LeCun, NIPS 2015"),
        RuleInfo("mixed", catalogue.mixed, False,
                 "synchronous groups (averaging), asynchronous between groups",
                 "Hadjis et al. (Omnivore) 2016; Mitliagkas et al. 2016"),
        RuleInfo("synchronous_sgd", catalogue.synchronous_sgd, True,
                 "average the workers' gradient steps: one SGD step with an n× batch",
                 "e.g. Goyal et al. 2017"),
        RuleInfo("model_averaging", catalogue.model_averaging, True,
                 "λ local SGD steps per worker, then average the parameters",
                 "Zinkevich et al., NIPS 2010; Hermans 2017, ch. 2"),
        RuleInfo("local_sgd", catalogue.local_sgd, True,
                 "model averaging every H steps",
                 "Stich, ICLR 2019"),
        RuleInfo("post_local_sgd", catalogue.post_local_sgd, True,
                 "H = 1 for a warm-up, then local SGD with H = λ",
                 "Lin et al., ICLR 2020"),
        RuleInfo("easgd", catalogue.easgd, True,
                 "synchronous elastic averaging, optional equilibrium early stop",
                 "Zhang, Choromanska, LeCun, NIPS 2015"),
        RuleInfo("diloco", catalogue.diloco, True,
                 "H inner AdamW steps, outer Nesterov SGD on θ̃ − mean θᵏ",
                 "Douillard et al. 2023"),
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
    required = [p.name for p in inspect.signature(info.factory).parameters.values()
                if p.default is inspect.Parameter.empty and p.name not in hyperparameters]
    if required:
        raise ConfigError(f"rule {name!r} needs {', '.join(required)} (e.g. "
                          f"make_rule({name!r}, {required[0]}=...))")
    return _built(name, tuple(sorted(hyperparameters.items())))


@functools.lru_cache(maxsize=256)
def _built(name: str, hyperparameters: tuple) -> Rule:
    # One object per (rule, hyperparameters): the engine caches compilations by rule.
    return RULES[name].factory(**dict(hyperparameters))
