"""Test problems: analytic surfaces and small data sets."""

import functools

from .._errors import ConfigError
from ._analytic import beale as beale
from ._analytic import booth as booth
from ._analytic import himmelblau as himmelblau
from ._analytic import quadratic as quadratic
from ._analytic import rosenbrock as rosenbrock
from ._data import linear_regression as linear_regression
from ._data import regression_data as regression_data
from ._problem import Problem as Problem
from ._problem import stochastic_gradient as stochastic_gradient

PROBLEMS = {
    "beale": beale,
    "rosenbrock": rosenbrock,
    "booth": booth,
    "himmelblau": himmelblau,
    "quadratic": quadratic,
    "linear_regression": linear_regression,
}


def get_problem(name: str, **options) -> Problem:
    """The problem registered as ``name``, built with ``options`` (e.g. ``dim=100``)."""
    if isinstance(name, Problem):
        return name
    if name not in PROBLEMS:
        raise ConfigError(
            f"unknown problem {name!r}; available: {', '.join(sorted(PROBLEMS))}"
        )
    return _built(name, tuple(sorted(options.items())))


@functools.lru_cache(maxsize=64)
def _built(name: str, options: tuple) -> Problem:
    # One object per (problem, options): the engine caches compilations by problem.
    try:
        return PROBLEMS[name](**dict(options))
    except TypeError as error:
        raise ConfigError(f"problem {name!r}: {error}") from None


__all__ = [
    "PROBLEMS",
    "Problem",
    "beale",
    "booth",
    "get_problem",
    "himmelblau",
    "linear_regression",
    "quadratic",
    "regression_data",
    "rosenbrock",
    "stochastic_gradient",
]
