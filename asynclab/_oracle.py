"""Gradient oracles: how a problem makes a worker's stochastic gradients.

A worker's local work asks its oracle for the randomness of a window of ``count``
consecutive local steps at once (``prepare``) and then for the gradient of each step
(``gradient``). The rules never look inside: whether the randomness is additive Gaussian
noise (analytic surfaces) or mini-batches drawn from a shard (data problems) is the
problem's business. Step ``s`` of worker ``k`` depends on ``(key_k, k, s)`` alone, so
every executor (replay, devices, threads) computes the same numbers for the same seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _random

Params = Any
#: ``prepare(params, key, worker, first_step, count) -> window``
Prepare = Callable[[Params, jax.Array, jax.Array, jax.Array, int], Any]
#: ``gradient(params, window, j) -> grads``: step ``first_step + j``, ``0 <= j < count``
Gradient = Callable[[Params, Any, jax.Array], Params]


@dataclass(frozen=True)
class Oracle:
    """A gradient oracle that owns its randomness.

    Attributes:
      prepare: ``(params, key, worker, first_step, count) -> window``, the randomness
        of ``count`` consecutive local steps of one worker (``params`` gives shapes and
        dtypes only); ``key`` is the worker's own key.
      gradient: ``(params, window, j) -> grads``, the stochastic gradient of local step
        ``first_step + j``.
      sample: ``(params, key, worker, step) -> grads``, one step on its own
        (``key`` already folded with ``step``); the form studies and tests call directly.
    """

    prepare: Prepare
    gradient: Gradient
    sample: Callable[[Params, jax.Array, jax.Array, jax.Array], Params]

    def __call__(self, params, key, worker, step):
        return self.sample(params, key, worker, step)


class StepWindow(NamedTuple):
    """The window of a per-step oracle: each step folds its index into the key."""

    key: jax.Array
    worker: jax.Array
    first: jax.Array


def per_step(sample) -> Oracle:
    """An oracle from a plain ``sample(params, key, worker, step)``: step ``s`` calls it
    with ``fold_in(key, s)``."""

    def prepare(params, key, worker, first_step, count):
        del params, count
        return StepWindow(key, worker, first_step)

    def gradient(params, window: StepWindow, j):
        step = window.first + j
        return sample(params, _random.fold_in(window.key, step), window.worker, step)

    return Oracle(prepare, gradient, sample)


def as_oracle(gradient) -> Oracle:
    """``gradient`` if it is an :class:`Oracle`, else a per-step oracle around it."""
    return gradient if isinstance(gradient, Oracle) else per_step(gradient)


#: parameter vectors at least this long draw their noise step by step (see additive_noise)
WINDOW_BELOW = 8


def _noise(key, tree):
    """Standard normal noise shaped like ``tree``; one leaf draws from ``key`` itself,
    several from ``fold_in(key, leaf index)``."""
    leaves, treedef = jax.tree.flatten(tree)
    if len(leaves) == 1:
        return jax.tree.unflatten(treedef, [_random.normal(key, leaves[0].shape,
                                                           leaves[0].dtype)])
    return jax.tree.unflatten(treedef, [
        _random.normal(_random.fold_in(key, i), x.shape, x.dtype) for i, x in enumerate(leaves)
    ])


class NoiseWindow(NamedTuple):
    """Additive noise of a window: per-step keys, or the whole table drawn at once."""

    key: jax.Array
    worker: jax.Array
    first: jax.Array
    table: jax.Array | None


def additive_noise(clean: Callable[[Params, jax.Array, jax.Array], Params],
                   std: float | jax.Array) -> Oracle:
    """``g = clean(params, worker, step) + σ ξ``, ``ξ ~ N(0, I)`` from ``fold_in(key, step)``.

    For a short float32 parameter vector (fewer than ``WINDOW_BELOW`` numbers, more
    than one per window) and a Threefry key, ``prepare`` draws the noise of all steps of
    the window at once with ``asynclab._random.normal_window`` — the same numbers as
    drawing per step, but vectorised over workers and seeds (XLA on CPU vectorises along
    the innermost axis, and a short parameter axis there makes the per-step draw scalar
    code). Otherwise each step draws its own, which vectorises along a long parameter
    axis by itself.

    ``std`` is σ, a number or a traced float32 scalar (then noise is drawn even where
    its value is 0).
    """
    if isinstance(std, int | float | np.integer | np.floating):
        std = float(std)
        noisy = std > 0
    else:  # a traced σ (the replay's, so a new σ needs no new compilation): always draw
        noisy = True

    def sample(params, key, worker, step):
        g = clean(params, worker, step)
        if noisy:
            g = jax.tree.map(lambda a, e: a + std * e, g, _noise(key, g))
        return g

    def prepare(params, key, worker, first_step, count):
        windowed = (
            noisy
            and isinstance(params, jax.Array) and params.dtype == jnp.float32
            and 1 < count * params.size and params.size < WINDOW_BELOW
            and _random._fast(key)
        )
        table = (_random.normal_window(key, first_step, count, params.shape)
                 if windowed else None)
        return NoiseWindow(key, worker, first_step, table)

    def gradient(params, window: NoiseWindow, j):
        step = window.first + j
        if window.table is None:
            return sample(params, _random.fold_in(window.key, step), window.worker, step)
        return clean(params, window.worker, step) + std * window.table[j]

    return Oracle(prepare, gradient, sample)
