"""A data problem's fields that depend on its shards: the batches, the gradient oracle
and the shards themselves, for any number of workers (:func:`_shard_fields`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from .._errors import ConfigError
from .._oracle import Oracle, _noise
from ._problem import WorkerShards
from ._shards import batch_indices, check_batch_size, label_histograms, make_shards


def _shard_fields(*, sharding, labels, classes, seed, batch_size, batch_loss):
    """``reshard(n) -> dict``: the fields of a data problem that depend on its shards
    (``batch``, ``oracle``, ``shards``) for ``n`` workers."""
    n_train = int(labels.shape[0])
    grad = jax.grad(batch_loss)

    def reshard(workers: int) -> dict:
        workers = _validate.count(workers, "workers")
        if workers > n_train:
            raise ConfigError(f"workers: {workers} workers for {n_train} training examples; "
                              "use fewer workers")
        parts = make_shards(labels, workers, sharding, seed=seed)
        check_batch_size(parts, batch_size)
        index, lengths = jax.device_put(parts.index), jax.device_put(parts.lengths)
        n_shards = int(parts.lengths.size)

        def rows_of(key, worker, step):
            return batch_indices(index, lengths, key, jnp.asarray(worker) % n_shards, step,
                                 batch_size)

        def oracle(noise: float) -> Oracle:
            std = float(np.sqrt(noise))

            def add_noise(g, key):
                return jax.tree.map(lambda a, e: a + std * e, g, _noise(key, g)) if std else g

            def sample(params, key, worker, step):
                # ``key`` is already folded with the step; the batch comes from it as well
                return add_noise(grad(params, rows_of(key, worker, 0)), key)

            def prepare(params, key, worker, first_step, count):
                del params
                # The draw reaches into the next epoch's order only at an epoch's end: a
                # branch, which vmap over the steps would turn into computing both orders
                # every step. One step draws alone; on a CPU several draw in a loop (5-14 %
                # faster for λ = 8 on MNIST than vmap); an accelerator draws them at once.
                steps = first_step + jnp.arange(count, dtype=jnp.int32)
                if count == 1:
                    rows = rows_of(key, worker, first_step)[None]
                elif jax.default_backend() == "cpu":
                    rows = jax.lax.map(lambda s: rows_of(key, worker, s), steps)
                else:  # an accelerator: the vmap (its speed against the loop is unmeasured)
                    rows = jax.vmap(lambda s: rows_of(key, worker, s))(steps)
                return key, first_step, rows

            def gradient(params, window, j):
                key, first_step, rows = window
                g = grad(params, rows[j])
                return add_noise(g, jax.random.fold_in(key, first_step + j)) if std else g

            return Oracle(prepare, gradient, sample)

        histograms = None if classes is None else label_histograms(parts, labels, classes)
        return {
            "batch": lambda worker, step: rows_of(jax.random.key(seed), worker, step),
            "oracle": oracle,
            "shards": WorkerShards(sharding, workers, parts.lengths.copy(), histograms,
                                   reshard),
        }

    return reshard
