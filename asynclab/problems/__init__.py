"""Test problems: analytic surfaces and small data sets."""

import functools

from .._errors import ConfigError
from .._oracle import Oracle as Oracle
from .._oracle import additive_noise as additive_noise
from .._oracle import per_step as per_step
from ._analytic import beale as beale
from ._analytic import booth as booth
from ._analytic import himmelblau as himmelblau
from ._analytic import quadratic as quadratic
from ._analytic import rosenbrock as rosenbrock
from ._data import linear_regression as linear_regression
from ._data import regression_data as regression_data
from ._nets import DEFAULT_MODELS as DEFAULT_MODELS
from ._nets import collider as collider
from ._nets import data_problem as data_problem
from ._nets import digits as digits
from ._nets import mnist as mnist
from ._problem import Problem as Problem
from ._problem import stochastic_gradient as stochastic_gradient

PROBLEMS = {
    "beale": beale,
    "rosenbrock": rosenbrock,
    "booth": booth,
    "himmelblau": himmelblau,
    "quadratic": quadratic,
    "linear_regression": linear_regression,
    "digits": digits,
    "mnist": mnist,
    "collider": collider,
}

#: the problems over data sets with a net (``model``, ``batch_size``, ``shards`` options)
DATA_PROBLEMS = ("digits", "mnist", "collider")


def get_problem(name: str, **options) -> Problem:
    """The problem registered as ``name``, built with ``options`` (e.g. ``dim=100``)."""
    if isinstance(name, Problem):
        return name
    if name not in PROBLEMS:
        raise ConfigError(
            f"unknown problem {name!r}; available: {', '.join(sorted(PROBLEMS))}"
        )
    if name not in DATA_PROBLEMS:
        for field in ("model", "batch_size", "shards"):
            if field in options:
                raise ConfigError(f"{field} applies to the data problems "
                                  f"({', '.join(DATA_PROBLEMS)}), not to {name!r}")
    return _built(name, tuple(sorted(options.items())))


@functools.lru_cache(maxsize=64)
def _built(name: str, options: tuple) -> Problem:
    # One object per (problem, options): the engine caches compilations by problem.
    try:
        return PROBLEMS[name](**dict(options))
    except TypeError as error:
        raise ConfigError(f"problem {name!r}: {error}") from None


__all__ = [
    "DATA_PROBLEMS",
    "DEFAULT_MODELS",
    "PROBLEMS",
    "Oracle",
    "Problem",
    "additive_noise",
    "beale",
    "booth",
    "collider",
    "data_problem",
    "digits",
    "get_problem",
    "himmelblau",
    "linear_regression",
    "mnist",
    "per_step",
    "quadratic",
    "regression_data",
    "rosenbrock",
    "stochastic_gradient",
]
