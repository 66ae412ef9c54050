"""Checks of the rules' hyperparameters (a traced value passes unchecked).

Inside a declared factory a message names the rule and the field (``"adag: gamma must be
> 0, got 0.0"``): the rule's name comes from its declaration, never from the caller.
"""

from __future__ import annotations

import numbers

import jax
import numpy as np

from ... import _validate
from ..._errors import ConfigError
from .._building import label as label


def traced(value) -> bool:
    """True for a value being traced by JAX (inside ``jit``/``vmap``): such values skip
    the concrete checks below and flow into the arithmetic as they are."""
    return isinstance(value, jax.core.Tracer)


def _real(name: str, value, **bounds) -> float:
    """``value`` checked by :func:`asynclab._validate.number` in float32, the precision the
    rules compute in; a concrete 0-d array (a grid's value) is read as its number first.
    A traced value (see :func:`traced`) is returned unchecked, as by every check of a
    real-valued hyperparameter here."""
    if traced(value):
        return value
    if not isinstance(value, numbers.Real) and getattr(value, "ndim", None) == 0 \
            and getattr(getattr(value, "dtype", None), "kind", "") in "fiu":
        value = value.item()
    return _validate.number(value, label(name), dtype=np.float32, **bounds)


def check_positive(name: str, value) -> float:
    """``value`` as a float > 0 (also in float32), or a ConfigError naming the rule and
    the parameter ``name``."""
    return _real(name, value, low=0, low_open=True)


def check_nonnegative(name: str, value) -> float:
    """``value`` as a float >= 0, or a ConfigError naming the rule and the parameter."""
    return _real(name, value, low=0)


def check_momentum(name: str, value) -> float:
    """A momentum in (−1, 1) in float32: negative values compensate the implicit
    momentum."""
    return _real(name, value, low=-1, high=1, low_open=True, high_open=True)


def check_optional_momentum(name: str, value) -> float | None:
    """A momentum in (−1, 1), or None: the option not given (no buffer)."""
    return None if value is None else check_momentum(name, value)


def check_fraction(name: str, value) -> float:
    """A number in (0, 1) in float32."""
    return _real(name, value, low=0, high=1, low_open=True, high_open=True)


#: The largest count a rule takes (λ, a group size, a period): the compiled programs
#: count steps and commits in int32.
COUNT_LIMIT = 2**31 - 1


def check_count(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int in [minimum, 2**31 - 1] (the compiled programs count in int32),
    or a ConfigError naming the rule and the parameter."""
    return _validate.count(value, label(name), low=minimum, high=COUNT_LIMIT)


def check_flag(name: str, value) -> bool:
    """``value`` as a bool (True, False, 1 or 0), or a ConfigError naming the rule and the
    parameter."""
    if not isinstance(value, bool | int) or value not in (0, 1, True, False):
        raise ConfigError(f"{label(name)} must be true or false, got {value!r}")
    return bool(value)
