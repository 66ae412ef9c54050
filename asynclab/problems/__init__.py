"""Test problems: analytic surfaces, small data sets, and a researcher's own.

Every problem is built with one of two public constructors: :func:`from_loss` (a loss
over a pytree of parameters; the surfaces and the regression) and :func:`from_model` (a
model's apply function, its parameters and a data set; the nets on digits, MNIST and the
synthetic collider data). ``PROBLEMS`` names the shipped ones for the command line and
:func:`get_problem`.
"""

import functools
import inspect

from .._errors import ConfigError
from .._oracle import Oracle as Oracle
from .._oracle import additive_noise as additive_noise
from .._oracle import per_step as per_step
from ._adapters import from_equinox as from_equinox
from ._adapters import from_flax as from_flax
from ._analytic import beale as beale
from ._analytic import booth as booth
from ._analytic import himmelblau as himmelblau
from ._analytic import quadratic as quadratic
from ._analytic import rosenbrock as rosenbrock
from ._data import linear_regression as linear_regression
from ._data import regression_data as regression_data
from ._model import from_model as from_model
from ._nets import DEFAULT_MODELS as DEFAULT_MODELS
from ._nets import collider as collider
from ._nets import data_problem as data_problem
from ._nets import digits as digits
from ._nets import mnist as mnist
from ._problem import LEARNING_RATE as LEARNING_RATE
from ._problem import Problem as Problem
from ._problem import Recording as Recording
from ._problem import WorkerShards as WorkerShards
from ._problem import from_loss as from_loss
from ._problem import stochastic_gradient as stochastic_gradient
from ._shards import Sharding as Sharding

#: The shipped problems by name: the one place a new one is added. Each factory's
#: keyword arguments are its options (``get_problem(name, **options)``, the command
#: line's ``--dim``, ``--model``, ...); a factory whose problems take another η than
#: 1e-3 by default says so in a ``learning_rate`` attribute, which the command line's
#: help lists without building the problem.
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


def options_of(name: str) -> tuple[str, ...]:
    """The options the problem registered as ``name`` takes (its factory's keyword
    arguments); ``()`` for an unknown name."""
    if name not in PROBLEMS:
        return ()
    return tuple(inspect.signature(PROBLEMS[name]).parameters)


def get_problem(name: str | Problem, *, workers: int | None = None, **options) -> Problem:
    """The problem registered as ``name``, built with ``options`` (e.g. ``dim=100``).

    ``workers``: the run's worker count. A sharded problem (a data problem) is dealt out
    to that many workers (:meth:`Problem.for_workers`); the others ignore it. A
    :class:`Problem` given instead of a name passes through (resharded for ``workers``).
    The same arguments give the same object (the engine caches compilations by problem).

    Raises:
      ConfigError: an unknown name or option, or options the problem refuses.
    """
    if isinstance(name, Problem):
        return name if workers is None else name.for_workers(workers)
    if not isinstance(name, str) or name not in PROBLEMS:
        raise ConfigError(
            f"unknown problem {name!r}; available: {', '.join(sorted(PROBLEMS))}"
        )
    accepted = options_of(name)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        takers = [other for other in PROBLEMS if unknown[0] in options_of(other)]
        where = f"; it is an option of {', '.join(takers)}" if takers else ""
        raise ConfigError(f"{unknown[0]} is not an option of problem {name!r} (its options: "
                          f"{', '.join(accepted) or 'none'}){where}")
    if workers is not None and "workers" in accepted:
        options = {**options, "workers": workers}
    problem = _built(name, tuple(sorted(options.items())))
    return problem if workers is None else problem.for_workers(workers)


@functools.lru_cache(maxsize=64)
def _built(name: str, options: tuple) -> Problem:
    # One object per (problem, options): the engine caches compilations by problem.
    try:
        return PROBLEMS[name](**dict(options))
    except TypeError as error:
        raise ConfigError(f"problem {name!r}: {error}") from None


__all__ = [
    "LEARNING_RATE",
    "DEFAULT_MODELS",
    "PROBLEMS",
    "Oracle",
    "Problem",
    "Recording",
    "Sharding",
    "WorkerShards",
    "additive_noise",
    "beale",
    "booth",
    "collider",
    "data_problem",
    "digits",
    "from_equinox",
    "from_flax",
    "from_loss",
    "from_model",
    "get_problem",
    "himmelblau",
    "linear_regression",
    "mnist",
    "options_of",
    "per_step",
    "quadratic",
    "regression_data",
    "rosenbrock",
    "stochastic_gradient",
]
