"""The exchange's parts: what a worker commits, how the server applies it, how
commits are aggregated, and what a worker pulls."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from .._base import (
    AXIS,
    Params,
    ServerState,
    WorkerState,
)

_ONE = 1.0


def accumulated_step(worker: WorkerState) -> Params:
    """Δ = a = θᵏ − θ̃_pull, the step the worker took since it pulled (DOWNPOUR)."""
    return jax.tree.map(jnp.subtract, worker.params, worker.pulled_center)


def outer_gradient(worker: WorkerState) -> Params:
    """Δ = θ̃_pull − θᵏ, the outer gradient (pseudo-gradient) of DiLoCo: the opposite of
    the step the worker took since it pulled."""
    return jax.tree.map(jnp.subtract, worker.pulled_center, worker.params)


def normalised_step(local_steps: int):
    """Δ = a / λ, the accumulated step normalised by the window (AGN, ADAG)."""

    def commit(worker: WorkerState) -> Params:
        return jax.tree.map(lambda d: d / local_steps, accumulated_step(worker))

    return commit


def parameters(worker: WorkerState) -> Params:
    """Δ = θᵏ: the worker sends its parameters (sequential SGD, elastic rules)."""
    return worker.params


def _scaled_add(center, delta, scale):
    """θ̃ + scale·Δ in the parameters' own dtype."""
    return jax.tree.map(lambda c, d: c + jnp.asarray(scale, c.dtype) * d, center, delta)


def add(server: ServerState, delta, worker, staleness):
    """θ̃ ← θ̃ + Δ."""
    del worker, staleness
    return jax.tree.map(jnp.add, server.center, delta), jnp.float32(_ONE), server.extra


def replace(server: ServerState, params, worker, staleness):
    """θ̃ ← what was committed."""
    del worker, staleness
    return params, jnp.float32(_ONE), server.extra


def staleness_scaled(factor: Callable[[jax.Array], jax.Array]):
    """θ̃ ← θ̃ + factor(τ) · Δ (DynSGD, staleness-aware SGD, delay-adaptive steps)."""

    def apply(server: ServerState, delta, worker, staleness):
        del worker
        scale = factor(staleness.astype(jnp.float32))
        return _scaled_add(server.center, delta, scale), scale, server.extra

    return apply


def distance_scaled(gamma: float, norm: bool = False):
    """ADAG: θ̃ ← θ̃ + Δ ⊙ 1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1), element-wise or with ‖θ̃ − θ̃_pull‖²."""

    def apply(server: ServerState, delta, worker, staleness):
        del staleness
        gap = jax.tree.map(jnp.subtract, server.center, worker.pulled_center)
        if norm:
            squared = sum(jnp.sum(g * g) for g in jax.tree.leaves(gap))
            scale = 1.0 / (squared / gamma + 1.0)
            return _scaled_add(server.center, delta, scale), scale, server.extra
        scales = jax.tree.map(lambda g: 1.0 / (g * g / gamma + 1.0), gap)
        center = jax.tree.map(lambda c, d, s: c + d * s, server.center, delta, scales)
        mean_scale = jnp.mean(jnp.concatenate([jnp.ravel(s) for s in jax.tree.leaves(scales)]))
        return center, mean_scale, server.extra

    return apply


def delay_compensated(kappa: float, learning_rate: float, local_steps: int):
    """DC-ASGD: g ← g + κ g ⊙ g ⊙ (θ̃ − θ̃_pull), with g = −a / (η λ) the mean step gradient.

    With λ = 1 this is Zheng et al.'s compensation of the worker's gradient; for λ > 1 it
    compensates the window's mean gradient and applies it λ times (Δ = −ηλ g).
    """

    def apply(server: ServerState, delta, worker, staleness):
        del staleness
        scale = learning_rate * local_steps

        def leaf(c, d, p):
            g = -d / scale
            return c - scale * (g + kappa * g * g * (c - p))

        center = jax.tree.map(leaf, server.center, delta, worker.pulled_center)
        return center, jnp.float32(_ONE), server.extra

    return apply


def outer_sgd(optimizer: optax.GradientTransformation):
    """An optax outer optimizer at the server, one step per commit of an outer gradient
    Δ (asynchronous DiLoCo, naive): ``updates, s ← optimizer.update(Δ, s)``,
    θ̃ ← θ̃ + updates. Its state is the server's ``extra``.

    Returns:
      ``(init_extra, apply)``.
    """

    def apply(server: ServerState, delta, worker, staleness):
        del worker, staleness
        updates, state = optimizer.update(delta, server.extra, server.center)
        return optax.apply_updates(server.center, updates), jnp.float32(_ONE), state

    return optimizer.init, apply


class DelayedNesterovState(NamedTuple):
    """Delayed Nesterov's server state: the outer momentum m and the sum of the outer
    gradients committed since m was last updated."""

    momentum: Params
    buffer: Params


def delayed_nesterov(learning_rate, momentum, period: int):
    """Delayed Nesterov (Liu et al. 2024, Algorithm 3 with c = 0) at the server, for
    outer gradients Δ committed one at a time; ``period`` is N.

    Every commit adds Δ to the buffer b and moves the centre by a plain step
    θ̃ ← θ̃ − ε Δ / N. On every N-th commit (server clock c + 1 a multiple of N) the
    momentum is updated with the buffer's mean, m ← β m + b / N, its Nesterov term is
    applied as well, θ̃ ← θ̃ − ε (Δ / N + β m), and b ← 0. Over N commits the centre moves
    by −ε (mean Δ + β m): one Nesterov step on the mean of the N outer gradients. With
    N = 1 this is optax's Nesterov SGD (``optax.sgd(ε, β, nesterov=True)``) on each Δ, in
    the same arithmetic.

    Returns:
      ``(init_extra, apply)``; the state is a :class:`DelayedNesterovState`.
    """

    def init(center) -> DelayedNesterovState:
        return DelayedNesterovState(jax.tree.map(jnp.zeros_like, center),
                                    jax.tree.map(jnp.zeros_like, center))

    def apply(server: ServerState, delta, worker, staleness):
        del worker, staleness
        state: DelayedNesterovState = server.extra
        due = (server.clock + 1) % period == 0
        buffer = jax.tree.map(jnp.add, state.buffer, delta)
        # the order of optax's trace (g + β t) and its Nesterov look-ahead, so that
        # N = 1 gives optax's numbers bit for bit
        new_momentum = jax.tree.map(lambda b, m: b / period + momentum * m, buffer,
                                    state.momentum)

        def leaf(c, d, m):
            share = d / period
            step = jnp.where(due, share + momentum * m, share)
            return jnp.asarray(c + jnp.asarray(-1 * learning_rate, c.dtype) * step).astype(
                c.dtype)

        center = jax.tree.map(leaf, server.center, delta, new_momentum)
        kept = DelayedNesterovState(
            jax.tree.map(lambda new, old: jnp.where(due, new, old), new_momentum,
                         state.momentum),
            jax.tree.map(lambda b: jnp.where(due, jnp.zeros_like(b), b), buffer))
        return center, jnp.float32(_ONE), kept

    return init, apply


class GapState(NamedTuple):
    """Gap-aware's server state: EMA of squared gradients and its count."""

    second_moment: Params
    count: jax.Array


def gap_scaled(learning_rate: float, local_steps: int, decay: float = 0.999,
               eps: float = 1e-8):
    """Gap-aware: Δ ← Δ / G per element, G = 1 + |θ̃ − θ̃_pull| / C, C = η (√v̂ + ε).

    v is an EMA (``decay``) of g², with g = −Δ / (η λ) the commit's mean gradient, and v̂
    its bias-corrected value, both updated with the commit before G is computed.
    """

    def init(center) -> GapState:
        return GapState(jax.tree.map(jnp.zeros_like, center), jnp.zeros((), jnp.int32))

    def apply(server: ServerState, delta, worker, staleness):
        del staleness
        state: GapState = server.extra
        count = state.count + 1
        correction = 1.0 - decay ** count.astype(jnp.float32)
        v = jax.tree.map(lambda m, d: decay * m + (1 - decay) * (d / (learning_rate * local_steps))
                         ** 2, state.second_moment, delta)

        def leaf(c, d, p, m):
            threshold = learning_rate * (jnp.sqrt(m / correction) + eps)
            return c + (d / (1.0 + jnp.abs(c - p) / threshold)).astype(c.dtype)

        center = jax.tree.map(leaf, server.center, delta, worker.pulled_center, v)
        return center, jnp.float32(_ONE), GapState(v, count)

    return init, apply


def elastic_center(alpha: float):
    """Asynchronous EASGD at the server: θ̃ ← θ̃ + α (θᵏ − θ̃), with Δ = θᵏ."""

    def apply(server: ServerState, params, worker, staleness):
        del worker, staleness
        center = jax.tree.map(lambda c, p: c + alpha * (p - c), server.center, params)
        return center, jnp.asarray(alpha, jnp.float32), server.extra

    return apply


#: ``(this worker is real, number of real workers)`` while an executor traces a
#: synchronous exchange on a padded worker axis (:func:`padded_workers`), else None
_PADDING: contextvars.ContextVar = contextvars.ContextVar("asynclab_padding", default=None)


@contextlib.contextmanager
def padded_workers(real, count):
    """Trace the exchanges inside on a worker axis padded beyond the run's ``count``
    workers: ``real`` says whether this worker is one of them (a boolean under the named
    axis). :func:`worker_mean` and :func:`worker_count` then cover the real workers only,
    so a replay of n workers on a padded axis (``asynclab.replay(..., pad_workers=N)``)
    computes the numbers of n workers."""
    token = _PADDING.set((real, count))
    try:
        yield
    finally:
        _PADDING.reset(token)


def worker_mean(tree):
    """mean_k of every leaf over the named worker axis (``pmean``); on a padded axis the
    sum of the real workers' values (the padding's replaced by zeros, which adds nothing:
    the same bits on a CPU, where XLA sums the axis in order) divided by their number."""
    padding = _PADDING.get()
    if padding is None:
        return jax.lax.pmean(tree, AXIS)
    real, count = padding

    def leaf(x):
        total = jax.lax.psum(jnp.where(real, x, jnp.zeros_like(x)), AXIS)
        return total / jnp.asarray(count, total.dtype)

    return jax.tree.map(leaf, tree)


def worker_count():
    """n, the number of workers under the named axis (the real ones on a padded axis)."""
    padding = _PADDING.get()
    return jax.lax.psum(1, AXIS) if padding is None else padding[1]


def average_params(server: ServerState, worker: WorkerState):
    """θ̃ ← mean_k θᵏ, an all-reduce over the named worker axis."""
    del server
    return worker_mean(worker.params), jnp.float32(_ONE)


def elastic_average(beta: float):
    """Synchronous EASGD: θ̃ ← θ̃ + α Σ_k (θᵏ − θ̃) = (1 − β) θ̃ + β mean_k θᵏ, β = nα."""

    def aggregate(server: ServerState, worker: WorkerState):
        diff = worker_mean(jax.tree.map(jnp.subtract, worker.params, server.center))
        return _scaled_add(server.center, diff, beta), jnp.asarray(beta, jnp.float32)

    return aggregate


def elastic_sum(alpha):
    """Synchronous EASGD's aggregate: θ̃ ← θ̃ + α Σ_k (θᵏ − θ̃), that is
    :func:`elastic_average` with β = nα, n read from the named axis
    (:func:`worker_count`), so one rule serves every number of workers."""

    def aggregate(server: ServerState, worker: WorkerState):
        return elastic_average(alpha * worker_count())(server, worker)

    return aggregate


def reset_to_center(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
    """θᵏ ← θ̃: the worker continues from the centre it pulls (its inner state is kept)."""
    del old
    return worker._replace(params=server.center, pulled_center=server.center,
                           pulled_clock=server.clock)


def keep_params(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
    """The worker keeps its parameters and only notes the centre it saw."""
    del old
    return worker._replace(pulled_center=server.center, pulled_clock=server.clock)


def elastic_pull(alpha: float):
    """θᵏ ← θᵏ − α (θᵏ − θ̃), with θ̃ the centre before this exchange's update."""

    def pull(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
        params = jax.tree.map(lambda p, c: p - alpha * (p - c), worker.params, old.center)
        return worker._replace(params=params, pulled_center=server.center,
                               pulled_clock=server.clock)

    return pull
