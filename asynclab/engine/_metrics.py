"""Measurements of a training run, as pure functions of params and recorded series.

Series are arrays whose last axis is the record index (one entry every k commits), so
every function here works on one run or, with leading axes, on many seeds at once.

References:
  Hermans, *On the Convergence of Distributed Optimization*, 2017 (temporal efficiency).
  Hadjis et al., *Omnivore: An Optimizer for Multi-device Deep Learning on CPUs and GPUs*,
  2016 (statistical and hardware efficiency).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .._errors import ConfigError

Array = jax.Array


class Evaluation(NamedTuple):
    """Loss and accuracy on a data set (one value per seed when vmapped)."""

    loss: Array
    accuracy: Array


def evaluate(apply: Callable[[Any, Array], Array], params, x: Array, labels: Array,
             *, seeds_axis: bool = True, chunk: int | None = None) -> Evaluation:
    """Mean softmax cross-entropy and accuracy of ``params`` on ``(x, labels)``.

    Args:
      apply: ``apply(params, x) -> logits`` of a model.
      params: a params pytree; with ``seeds_axis`` every leaf has a leading seed axis
        and the evaluation is vmapped over it.
      x, labels: the validation set, ``(n, *example_shape)`` and ``(n,)`` int.
      seeds_axis: whether ``params`` carries a leading seed axis.
      chunk: evaluate the examples ``chunk`` at a time (``lax.map``) to bound memory;
        ``None`` evaluates them at once. ``n`` must be a multiple of ``chunk``.

    Returns:
      :class:`Evaluation` of scalars, or of ``(seeds,)`` arrays.
    """
    x, labels = jnp.asarray(x), jnp.asarray(labels)
    if chunk is not None and (int(chunk) != chunk or chunk < 1 or x.shape[0] % chunk):
        raise ConfigError(f"chunk ({chunk}) must be a positive divisor of the number of "
                          f"examples ({x.shape[0]})")

    def one(p):
        if chunk is None:
            logits = apply(p, x)
        else:
            pieces = x.reshape(-1, chunk, *x.shape[1:])
            logits = jax.lax.map(lambda xb: apply(p, xb), pieces).reshape(x.shape[0], -1)
        log_p = jax.nn.log_softmax(logits, axis=-1)
        loss = -jnp.mean(jnp.take_along_axis(log_p, labels[:, None], axis=-1))
        hits = jnp.mean((jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32))
        return Evaluation(loss, hits)

    return jax.vmap(one)(params) if seeds_axis else one(params)


def first_reached(values: Array, target, at: Array, *, higher_is_better: bool = True
                  ) -> Array:
    """``at`` at the first record where ``values`` reaches ``target``; ``inf`` if never.

    Args:
      values: ``(..., T)`` the recorded metric (e.g. validation accuracy).
      target: the target value (broadcast against the leading axes).
      at: ``(..., T)`` or ``(T,)``: what to report (simulated seconds, commits).
      higher_is_better: reached means ``values >= target`` (accuracy); else
        ``values <= target`` (loss).
    """
    values = jnp.asarray(values)
    target = jnp.broadcast_to(jnp.asarray(target, values.dtype), values.shape[:-1])[..., None]
    reached = values >= target if higher_is_better else values <= target
    at = jnp.broadcast_to(jnp.asarray(at, jnp.float32), values.shape)
    first = jnp.argmax(reached, axis=-1)
    found = jnp.take_along_axis(at, first[..., None], axis=-1)[..., 0]
    return jnp.where(jnp.any(reached, axis=-1), found, jnp.inf)


class TimeToTarget(NamedTuple):
    """When a run first reaches its target: simulated seconds and commits (``inf``: never)."""

    seconds: Array
    commits: Array


def time_to_target(times: Array, commits: Array, values: Array, target, *,
                   higher_is_better: bool = True) -> TimeToTarget:
    """Simulated seconds and commits at the first record reaching ``target``.

    Args:
      times: ``(..., T)`` simulated time of each record.
      commits: ``(..., T)`` or ``(T,)`` the commit count of each record.
      values: ``(..., T)`` the metric recorded.
      target: e.g. a validation accuracy of 0.9.
    """
    return TimeToTarget(
        first_reached(values, target, times, higher_is_better=higher_is_better),
        first_reached(values, target, commits, higher_is_better=higher_is_better))


def _integral_until(times, values, start, end):
    # ∫ of the piecewise-linear series over [start, end] (trapezoids on clipped times)
    clipped = jnp.clip(times, start[..., None], end[..., None])
    interpolated = jax.vmap(jnp.interp)(
        clipped.reshape(-1, clipped.shape[-1]), times.reshape(-1, times.shape[-1]),
        values.reshape(-1, values.shape[-1])).reshape(values.shape)
    return jnp.sum(0.5 * (interpolated[..., 1:] + interpolated[..., :-1])
                   * jnp.diff(clipped, axis=-1), axis=-1)


def temporal_efficiency(times_a: Array, values_a: Array, times_b: Array, values_b: Array
                        ) -> Array:
    """Temporal efficiency ``E(a, b) = ∫ f_a dt / ∫ f_b dt`` over the shorter run.

    .. math:: E(a, b) = \\frac{\\int_{t_0}^{T} f_a(t)\\,dt}{\\int_{t_0}^{T} f_b(t)\\,dt},
              \\quad T = \\min(t_a^{end}, t_b^{end}),\\ t_0 = \\max(t_a^{0}, t_b^{0})

    with ``f`` the recorded series (e.g. training loss) interpolated linearly between
    records. For a loss, ``E < 1`` means ``a`` reached lower values sooner than ``b``.

    Args:
      times_a, values_a: ``(..., T_a)`` run a (increasing times).
      times_b, values_b: ``(..., T_b)`` run b; leading axes broadcast with a's.
    """
    times_a, values_a, times_b, values_b = (jnp.asarray(v, jnp.float32) for v in (
        times_a, values_a, times_b, values_b))
    lead = jnp.broadcast_shapes(times_a.shape[:-1], times_b.shape[:-1])
    times_a, values_a = (jnp.broadcast_to(v, (*lead, v.shape[-1])) for v in (times_a, values_a))
    times_b, values_b = (jnp.broadcast_to(v, (*lead, v.shape[-1])) for v in (times_b, values_b))
    start = jnp.maximum(times_a[..., 0], times_b[..., 0])
    end = jnp.minimum(times_a[..., -1], times_b[..., -1])
    return (_integral_until(times_a, values_a, start, end)
            / _integral_until(times_b, values_b, start, end))


def statistical_efficiency(commits_to_target: Array, reference_commits: Array) -> Array:
    """Commits to target relative to a reference (one worker): ``C_n / C_1``.

    Omnivore's convention: 1 means asynchrony costs nothing per update; 2 means twice as
    many commits are needed to reach the target. ``inf`` when the run never reached it.
    """
    return jnp.asarray(commits_to_target, jnp.float32) / jnp.asarray(reference_commits,
                                                                      jnp.float32)


def hardware_efficiency(times: Array, commits: Array) -> Array:
    """Simulated seconds per commit over a run: ``(t_end − t_0) / (c_end − c_0)``.

    Args:
      times: ``(..., T)`` simulated time of each record.
      commits: ``(..., T)`` or ``(T,)`` commit count of each record.
    """
    times = jnp.asarray(times, jnp.float32)
    commits = jnp.broadcast_to(jnp.asarray(commits, jnp.float32), times.shape)
    return (times[..., -1] - times[..., 0]) / (commits[..., -1] - commits[..., 0])
