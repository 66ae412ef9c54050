"""The problem protocol: an objective plus what the lab needs around it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _random
from .._errors import ConfigError

Array = jax.Array


class Problem(NamedTuple):
    """A test problem.

    Parameters are a flat ``float32`` vector of length ``dim``. A worker's stochastic
    gradient at its local step ``step`` is the gradient of ``batch_loss`` on the batch
    ``batch(worker, step)``, plus additive Gaussian noise when the run asks for it
    (see :func:`stochastic_gradient`). Analytic problems have an empty batch.

    Attributes:
      name: registry name.
      dim: number of parameters.
      loss: ``loss(params) -> scalar``, the objective the lab records (full data).
      batch_loss: ``batch_loss(params, batch) -> scalar``.
      batch: ``batch(worker, step) -> batch``, jittable, drawn by index.
      start: the fixed starting point, ``(dim,)``.
      box: ``(low, high)``, the box for random initialisation, each ``(dim,)``.
      domain: plotting window ``((xmin, xmax), (ymin, ymax))`` for 2-D problems, else None.
      minima: known local minima, ``(k, dim)`` (first row is the global minimum).
      success_radius: a run succeeds when the centre ends within this distance of the
        global minimum.
    """

    name: str
    dim: int
    loss: Callable[[Array], Array]
    batch_loss: Callable[[Array, Any], Array]
    batch: Callable[[Array, Array], Any]
    start: np.ndarray
    box: tuple[np.ndarray, np.ndarray]
    domain: tuple[tuple[float, float], tuple[float, float]] | None
    minima: np.ndarray
    success_radius: float = 0.1

    @property
    def global_minimum(self) -> np.ndarray:
        return self.minima[0]

    def success(self, params) -> np.ndarray:
        """Whether ``params`` (``(..., dim)``) lie within ``success_radius`` of the minimum."""
        params = np.asarray(params, np.float64)  # a diverged centre overflows float32
        return np.linalg.norm(params - self.global_minimum, axis=-1) < self.success_radius

    def initial_params(self, key: Array | None = None, n: int | None = None) -> Array:
        """The fixed start (``key=None``), or ``n`` points uniform in ``box`` (``(n, dim)``)."""
        if key is None:
            return jnp.asarray(self.start, jnp.float32)
        low, high = (jnp.asarray(b, jnp.float32) for b in self.box)
        shape = (self.dim,) if n is None else (n, self.dim)
        return jax.random.uniform(key, shape, jnp.float32, low, high)


def _no_batch(worker, step):
    del worker, step
    return ()


def analytic(name, f, *, start, box, domain, minima, success_radius=0.1) -> Problem:
    """A problem from a deterministic function ``f(params)``; noise comes from the run."""
    minima = np.atleast_2d(np.asarray(minima, np.float32))
    start = np.asarray(start, np.float32)
    return Problem(
        name=name,
        dim=int(start.shape[0]),
        loss=f,
        batch_loss=lambda params, batch: f(params),
        batch=_no_batch,
        start=start,
        box=(np.broadcast_to(np.asarray(box[0], np.float32), start.shape).copy(),
             np.broadcast_to(np.asarray(box[1], np.float32), start.shape).copy()),
        domain=domain,
        minima=minima,
        success_radius=success_radius,
    )


def check_noise(noise) -> float:
    """``noise`` (the variance σ²) as a finite float >= 0, or a ConfigError."""
    what = "noise (the gradient-noise variance σ²)"
    if isinstance(noise, bool):
        raise ConfigError(f"{what} must be a number, got {noise}")
    try:
        noise = float(noise)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} must be a number, got {noise!r}") from None
    if not np.isfinite(noise) or noise < 0:
        raise ConfigError(f"{what} must be a finite number >= 0, got {noise}")
    return noise


def stochastic_gradient(problem: Problem, noise: float = 0.0):
    """The gradient oracle a worker calls: ``gradient(params, key, worker, step)``.

    .. math:: g = \\nabla \\ell(\\theta; B_{k,s}) + \\sigma \\xi,\\quad \\xi \\sim N(0, I)

    Args:
      problem: the problem.
      noise: the variance σ² of the additive Gaussian gradient noise (the thesis used 10).

    Returns:
      A pure function of ``(params, key, worker, step)``; its attributes ``clean``
      (``(params, worker, step) -> ∇ℓ``) and ``noise_std`` (σ) let local work draw the
      noise of several steps at once (:func:`asynclab.rules.local_work`).
    """
    noise = check_noise(noise)
    grad = jax.grad(problem.batch_loss)
    std = float(np.sqrt(noise))

    def clean(params, worker, step):
        return grad(params, problem.batch(worker, step))

    def gradient(params, key, worker, step):
        g = clean(params, worker, step)
        if std > 0:
            g = g + std * _random.normal(key, g.shape, g.dtype)
        return g

    # Local work may draw a whole window of steps' noise at once (the same numbers):
    # it needs the noiseless part and σ apart.
    gradient.clean = clean
    gradient.noise_std = std
    return gradient
