"""The workers' inner optimizers and the server's outer optimizers (optax)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from ..._errors import ConfigError
from .._base import (
    Params,
)
from .._building import label
from ._checks import traced


def worker_sgd(learning_rate: float, momentum: float | None = None,
               nesterov: bool = False) -> optax.GradientTransformation:
    """The inner optimizer: optax SGD, with per-worker momentum whose buffer survives pulls.

    ``momentum=None`` is plain SGD, with no buffer; any number (0.0 included) keeps a
    buffer per worker and may be a traced value (with 0 the buffer adds 0·m to each
    gradient, which leaves it unchanged).
    """
    return optax.sgd(learning_rate, momentum=momentum, nesterov=nesterov)


#: the inner optimizers the asynchronous rules take by name (``inner=``)
INNER_OPTIMIZERS = ("sgd", "adam")


def worker_optimizer(inner: str, learning_rate, momentum=None,
                     nesterov: bool = False) -> optax.GradientTransformation:
    """The inner optimizer named ``inner``: ``"sgd"`` (:func:`worker_sgd`, with the worker
    momentum) or ``"adam"`` (``optax.adam(learning_rate)``, Kingma & Ba's defaults β₁ = 0.9,
    β₂ = 0.999, ε = 1e-8). Its state belongs to the worker and survives pulls.

    Adam keeps its own moments, so a worker momentum is refused with it (a concrete 0
    is accepted and adds nothing).
    """
    if inner == "sgd":
        return worker_sgd(learning_rate, momentum, nesterov)
    if inner == "adam":
        if momentum is not None and not traced(momentum) and momentum:
            raise ConfigError(f"{label('worker_momentum')} needs inner='sgd' (Adam keeps "
                              f"its own moments), got worker_momentum={momentum!r}")
        return optax.adam(learning_rate)
    raise ConfigError(f"{label('inner')} must be one of {', '.join(INNER_OPTIMIZERS)}, "
                      f"got {inner!r}")


class Outer(NamedTuple):
    """A server-side update of the centre: ``init(center) -> state`` and
    ``step(center, proposed, state) -> (new centre, state)``."""

    init: Callable[[Params], Any]
    step: Callable[[Params, Params, Any], tuple[Params, Any]]


def server_momentum(momentum) -> Outer | None:
    """Heavy ball at the server on the sequence of central updates (Mitliagkas et al.).

    θ̃_{t+1} = θ̃_t + Δ + μ (θ̃_t − θ̃_{t−1}), written as ``proposed + μ v`` with
    ``proposed = θ̃_t + Δ`` the rule's own update and ``v = θ̃_t − θ̃_{t−1}`` the state, so
    μ = 0 gives exactly the rule without momentum and μ may be a traced value.
    ``momentum=None`` is no outer step at all (None), and no state.
    """
    if momentum is None:
        return None

    def init(center):
        return jax.tree.map(jnp.zeros_like, center)

    def step(center, proposed, velocity):
        new = jax.tree.map(lambda p, v: p + jnp.asarray(momentum, v.dtype) * v, proposed,
                           velocity)
        return new, jax.tree.map(jnp.subtract, new, center)

    return Outer(init, step)


def outer_optimizer(optimizer: optax.GradientTransformation) -> Outer:
    """An optax optimizer at the server on the outer gradient θ̃ − proposed (DiLoCo)."""

    def step(center, proposed, state):
        outer_gradient = jax.tree.map(jnp.subtract, center, proposed)
        updates, state = optimizer.update(outer_gradient, state, center)
        return optax.apply_updates(center, updates), state

    return Outer(optimizer.init, step)
