"""The problem protocol: an objective plus what the lab needs around it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _names, _validate
from .._errors import ConfigError
from .._oracle import Oracle, additive_noise

Array = jax.Array


#: η for problems that declare none (the analytic surfaces, tuned on Beale).
LEARNING_RATE = _names.LEARNING_RATES["beale"]


class Problem(NamedTuple):
    """A test problem.

    Parameters are any pytree of float arrays: a flat ``float32`` vector of length
    ``dim`` for the analytic surfaces and the regression, a dict of layers for the nets.
    A worker's stochastic gradients come from the problem's gradient oracle
    (:func:`stochastic_gradient`), which owns its randomness: by default the gradient of
    ``batch_loss`` on the batch ``batch(worker, step)`` plus additive Gaussian noise when
    the run asks for it (analytic problems have an empty batch); a data problem may
    give its own ``oracle`` (mini-batches drawn from the seed, the worker and the step).

    The surface's extras (``box``, ``domain``, ``minima``, ``success_radius``) are
    optional: a net has none of them (``None``).

    Attributes:
      name: registry name.
      dim: number of parameters (all leaves together).
      loss: ``loss(params) -> scalar``, the objective the lab records.
      batch_loss: ``batch_loss(params, batch) -> scalar``.
      batch: ``batch(worker, step) -> batch``, jittable, drawn by index.
      start: the fixed starting point (a ``(dim,)`` array, or a pytree).
      box: ``(low, high)``, the box for random initialisation, each ``(dim,)``; or None.
      domain: plotting window ``((xmin, xmax), (ymin, ymax))`` for 2-D problems, else None.
      minima: known local minima, ``(k, dim)`` (first row is the global minimum), or None.
      success_radius: a run succeeds when the centre ends within this distance of the
        global minimum.
      init: ``init(key) -> params``, the seeded random initialisation; None: uniform in
        ``box``.
      oracle: ``oracle(noise) -> Oracle``; None: :func:`stochastic_gradient`'s default.
      evaluate: ``evaluate(params) -> {name: scalar}``, what a run records beside the
        loss (a net's validation loss and accuracy); None for the surfaces.
      info: free-form facts for reports (data set, model, sharding, batch size).
      defaults: the settings the problem was tuned for (``learning_rate``; a data
        problem's ``batch_size`` and ``records``, the records a default run aims at),
        used where a run does not give them; see :attr:`learning_rate`.
    """

    name: str
    dim: int
    loss: Callable[[Array], Array]
    batch_loss: Callable[[Array, Any], Array]
    batch: Callable[[Array, Array], Any]
    start: np.ndarray
    box: tuple[np.ndarray, np.ndarray]
    domain: tuple[tuple[float, float], tuple[float, float]] | None
    minima: np.ndarray | None
    success_radius: float | None = 0.1
    init: Callable[[Array], Any] | None = None
    oracle: Callable[[float], Oracle] | None = None
    evaluate: Callable[[Any], dict] | None = None
    info: dict | None = None
    defaults: dict | None = None

    @property
    def learning_rate(self) -> float:
        """η for a run that gives none: the problem's tuned value, else
        ``LEARNING_RATE``."""
        return float((self.defaults or {}).get("learning_rate", LEARNING_RATE))

    @property
    def is_surface(self) -> bool:
        """Whether the problem has a known minimum (and a success test)."""
        return self.minima is not None

    @property
    def flat(self) -> bool:
        """Whether the parameters are one vector (paths and ``--start`` need it)."""
        return isinstance(self.start, np.ndarray | jax.Array)

    @property
    def global_minimum(self) -> np.ndarray:
        if self.minima is None:
            raise ConfigError(f"problem {self.name!r} has no known minimum")
        return self.minima[0]

    def success(self, params) -> np.ndarray:
        """Whether ``params`` (``(..., dim)``) lie within ``success_radius`` of the minimum.

        Raises:
          ConfigError: the problem has no known minimum or no success radius (a net).
        """
        if self.minima is None or self.success_radius is None:
            raise ConfigError(f"problem {self.name!r} has no known minimum and success "
                              "radius, so no success test; give a target loss instead")
        params = np.asarray(params, np.float64)  # a diverged centre overflows float32
        return np.linalg.norm(params - self.global_minimum, axis=-1) < self.success_radius

    def initial_params(self, key: Array | None = None, n: int | None = None):
        """The fixed start (``key=None``), or a seeded random initialisation: uniform in
        ``box`` or ``init(key)``; with ``n``, ``n`` of them stacked on a leading axis."""
        if key is None:
            return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), self.start)
        if self.init is not None:
            return self.init(key) if n is None else jax.vmap(self.init)(
                jax.random.split(key, n))
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
    if not isinstance(noise, bool) and getattr(noise, "ndim", None) == 0 \
            and getattr(getattr(noise, "dtype", None), "kind", "") in "fiu":
        noise = noise.item()  # a concrete 0-d array
    return _validate.number(noise, what, low=0, dtype=np.float32)


def stochastic_gradient(problem: Problem, noise: float = 0.0, *, std=None) -> Oracle:
    """The gradient oracle of a run on ``problem``.

    .. math:: g = \\nabla \\ell(\\theta; B_{k,s}) + \\sigma \\xi,\\quad \\xi \\sim N(0, I)

    Args:
      problem: the problem.
      noise: the variance σ² of the additive Gaussian gradient noise (the thesis used 10).

      std: instead of ``noise``, σ as a traced float32 scalar, for a problem without
        its own oracle (the replay passes it so that a new σ needs no new compilation).

    Returns:
      The problem's own oracle (``problem.oracle(noise)``), or by default
      :func:`asynclab.problems.additive_noise` around ``∇ batch_loss(params,
      batch(worker, step))``. An :class:`Oracle` is also callable as
      ``gradient(params, key, worker, step)`` (one step, ``key`` already folded).
    """
    if std is None:
        noise = check_noise(noise)
        if problem.oracle is not None:
            return problem.oracle(noise)
        std = float(np.sqrt(noise))
    elif problem.oracle is not None:
        raise ConfigError(f"{problem.name} makes its own gradient noise: give noise, not std")
    grad = jax.grad(problem.batch_loss)

    def clean(params, worker, step):
        return grad(params, problem.batch(worker, step))

    return additive_noise(clean, std)
