"""Checks of the rules' hyperparameters (a traced value passes unchecked)."""

from __future__ import annotations

import numbers

import jax
import numpy as np

from ... import _validate
from ..._errors import ConfigError


def traced(value) -> bool:
    """True for a value being traced by JAX (inside ``jit``/``vmap``): such values skip
    the concrete checks below and flow into the arithmetic as they are."""
    return isinstance(value, jax.core.Tracer)


def _real(rule: str, name: str, value, **bounds) -> float:
    """``value`` checked by :func:`asynclab._validate.number` in float32, the precision the
    rules compute in; a concrete 0-d array (a grid's value) is read as its number first.
    A traced value (see :func:`traced`) is returned unchecked, as by every check of a
    real-valued hyperparameter here."""
    if traced(value):
        return value
    if not isinstance(value, numbers.Real) and getattr(value, "ndim", None) == 0 \
            and getattr(getattr(value, "dtype", None), "kind", "") in "fiu":
        value = value.item()
    return _validate.number(value, f"{rule}: {name}", dtype=np.float32, **bounds)


def check_positive(rule: str, name: str, value) -> float:
    """``value`` as a float > 0 (also in float32), or a ConfigError naming the rule and
    the parameter."""
    return _real(rule, name, value, low=0, low_open=True)


def check_nonnegative(rule: str, name: str, value) -> float:
    """``value`` as a float >= 0, or a ConfigError naming the rule and the parameter."""
    return _real(rule, name, value, low=0)


def check_momentum(rule: str, name: str, value) -> float:
    """A momentum in (−1, 1) in float32: negative values compensate the implicit
    momentum."""
    return _real(rule, name, value, low=-1, high=1, low_open=True, high_open=True)


def check_fraction(rule: str, name: str, value) -> float:
    """A number in (0, 1) in float32."""
    return _real(rule, name, value, low=0, high=1, low_open=True, high_open=True)


def check_count(rule: str, name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= minimum, or a ConfigError naming the rule and the parameter."""
    return _validate.count(value, f"{rule}: {name}", low=minimum)


def check_flag(rule: str, name: str, value) -> bool:
    if not isinstance(value, bool | int) or value not in (0, 1, True, False):
        raise ConfigError(f"{rule}: {name} must be true or false, got {value!r}")
    return bool(value)
