"""Problems over a data set: each worker owns a shard and reads batches by index."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._errors import ConfigError
from ._problem import Problem, from_loss


def linear_regression(
    examples: int = 512, dim: int = 5, batch_size: int = 8, shards: int = 4, seed: int = 0
) -> Problem:
    """Least squares on a synthetic data set, ``loss = mean((X θ − y)²) / 2``.

    The data (``X`` standard normal, ``y = X θ* + 0.1 ε``) are generated from ``seed``.
    The examples are cut into ``shards`` contiguous shards; worker ``k`` owns shard
    ``k mod shards`` and at its local step ``s`` reads the ``batch_size`` examples at
    positions ``s·batch_size, …`` of its shard, cyclically. Batches are thus fixed by
    ``(worker, step)``, with no randomness, which makes identities such as "synchronous
    SGD with n workers ≡ SGD with an n× batch" checkable example by example.

    It is built with :func:`~asynclab.problems.from_loss` (the full-data loss, the start,
    box and minimum) and its own ``batch`` and ``batch_loss`` in place of the loss's
    (which reads no batch). The arrays are reachable through :func:`regression_data`.
    """
    for name, value, low in (("examples", examples, 1), ("dim", dim, 1),
                             ("batch_size", batch_size, 1), ("shards", shards, 1)):
        if int(value) != value or value < low:
            raise ConfigError(f"linear_regression: {name} must be an integer >= {low}, got {value}")
    if examples % shards:
        raise ConfigError(
            f"linear_regression: examples ({examples}) must divide into {shards} shards"
        )
    x, y, theta_star = regression_data(examples, dim, seed)
    shard_size = examples // shards
    xs, ys = jnp.asarray(x), jnp.asarray(y)

    def batch(worker, step):
        shard = jnp.asarray(worker) % shards
        positions = (jnp.asarray(step) * batch_size + jnp.arange(batch_size)) % shard_size
        return shard * shard_size + positions

    def batch_loss(params, index):
        residual = xs[index] @ params - ys[index]
        return 0.5 * jnp.mean(residual * residual)

    def loss(params):
        residual = xs @ params - ys
        return 0.5 * jnp.mean(residual * residual)

    minimum = np.linalg.lstsq(x.astype(np.float64), y.astype(np.float64), rcond=None)[0]
    problem = from_loss(loss, np.zeros(dim, np.float32), box=(-2.0, 2.0),
                        domain=((-2.0, 2.0), (-2.0, 2.0)) if dim == 2 else None,
                        minima=minimum[None].astype(np.float32), success_radius=0.05,
                        name="linear_regression")
    return problem._replace(batch_loss=batch_loss, batch=batch)


def regression_data(examples: int, dim: int, seed: int = 0):
    """The synthetic ``(X, y, θ*)`` behind :func:`linear_regression` (float32)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, dim)).astype(np.float32)
    theta_star = rng.uniform(-1.0, 1.0, dim).astype(np.float32)
    y = (x @ theta_star + 0.1 * rng.standard_normal(examples)).astype(np.float32)
    return x, y, theta_star
