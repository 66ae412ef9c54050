"""Small nets on data sets as problems: a model, a data set, shards and a batch size.

The gradient oracle draws mini-batches by index: worker ``k`` owns shard ``k mod S``
(``S`` shards, by default one per worker) and at its local step ``s`` reads
:func:`~asynclab.problems._shards.batch_indices` of that shard from its own key, so a
batch depends only on ``(seed, k, s)`` and every executor reads the same examples.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _names, _validate
from .._errors import ConfigError
from .._oracle import Oracle, _noise
from ._datasets import DATASETS, load_dataset
from ._models import (
    accuracy,
    correct,
    cross_entropy,
    label_log_probabilities,
    parameter_count,
    parse_model,
)
from ._problem import Problem
from ._shards import batch_indices, check_batch_size, make_shards

#: the model each data set gets when none is named
DEFAULT_MODELS = {"digits": "mlp:64", "mnist": "mlp:256", "collider": "mlp:64"}

#: training examples the recorded training loss is measured on (a fixed subset)
LOSS_EXAMPLES = 1000

#: bytes of intermediate values one run's record may hold at once: a record evaluates
#: its examples (the training-loss subset, the validation set) in chunks of as many as
#: fit, so that many seeds of a large net recorded together stay within memory (the
#: unfolded patches of a 5x5 CNN's second convolution take 205 kB per example: 205 MB
#: per seed for the 1,000 training-loss examples, 105 GB for 512 seeds at once)
RECORD_CHUNK_BYTES = 64 * 2**20


def _record_chunk(example_bytes: int, batch_size: int) -> int:
    """Examples a record evaluates at once: whole training batches, as many as
    ``RECORD_CHUNK_BYTES`` holds, and at least one.

    A chunk of the training batch's size gives the record's forward pass the shapes of
    the training step's, and XLA's CPU backend compiles the kernels the two passes share
    once (``benchmarks/results/2026-11-28-cpu-peers-first-call.md`` measures it for the
    CNN of ``benchmarks/peers.py``). Where the budget holds less than a batch, the chunk
    of one batch holds about what the training step's forward pass keeps for its gradient.
    """
    return batch_size * max(1, RECORD_CHUNK_BYTES // (example_bytes * batch_size))


def _example_bytes(net, params, example) -> int:
    """Bytes of the values ``net.apply`` computes for one example (``example``: a batch
    of one), summed over its traced operations: what one example's forward pass may hold."""
    jaxpr = jax.make_jaxpr(net.apply)(params, example)
    return max(1, sum(v.aval.size * v.aval.dtype.itemsize
                      for eqn in jaxpr.eqns for v in eqn.outvars))


def _evaluator(net, x, y, chunk: int):
    """``f(params) -> (mean cross-entropy, accuracy)`` of ``net`` on ``x, y``: one pass
    when ``chunk`` examples cover them, else a loop over chunks of ``chunk`` examples (the
    last padded, its padding weighted 0), which holds one chunk's intermediates at a time.

    The examples pass an optimization barrier: they are constants of the compiled program,
    and XLA would otherwise fold what depends on them alone (a convolution's unfolded
    patches) into constants while compiling, which on a CNN costs seconds of every first
    call and tens of megabytes of program.
    """
    n = int(y.shape[0])
    if chunk >= n:
        x, y = jax.device_put(np.asarray(x)), jax.device_put(np.asarray(y))

        def whole(params):
            logits = net.apply(params, jax.lax.optimization_barrier(x))
            return cross_entropy(logits, y), accuracy(logits, y)

        return whole
    count = -(-n // chunk)
    pad = count * chunk - n
    x, y = np.asarray(x), np.asarray(y)
    xs = np.concatenate([x, np.zeros((pad, *x.shape[1:]), x.dtype)])
    xs = jax.device_put(xs.reshape(count, chunk, *x.shape[1:]))
    ys = jax.device_put(np.concatenate([y, np.zeros((pad,), y.dtype)]).reshape(count, chunk))
    weights = jax.device_put((np.arange(count * chunk) < n).astype(np.float32)
                             .reshape(count, chunk))

    def chunked(params):
        def sums(part):
            x_part, y_part, weight = part
            logits = net.apply(params, x_part)
            return (-jnp.sum(weight * label_log_probabilities(logits, y_part)),
                    jnp.sum(weight * correct(logits, y_part)))

        losses, hits = jax.lax.map(sums, jax.lax.optimization_barrier((xs, ys, weights)))
        return jnp.sum(losses) / n, jnp.sum(hits) / n

    return chunked


def _positive_int(field: str, value) -> int:
    return _validate.count(value, field)


def _check_model_size(net, spec, workers: int) -> None:
    """Refuse a model too large to hold, from its shapes alone (nothing is allocated):
    the fixed start, every worker's parameters and the server's, in float32."""
    shapes = jax.tree.leaves(jax.eval_shape(lambda: net.init(jax.random.key(0))))
    largest = max(math.prod(leaf.shape) for leaf in shapes)
    if largest >= 2**31:
        raise ConfigError(f"--model {spec!r}: a layer of {largest:,} parameters is more than "
                          "one array can index (2**31); use smaller layers")
    count = sum(math.prod(leaf.shape) for leaf in shapes)
    _validate.check_memory(4 * count * (workers + 3), f"--model {spec!r} ({count:,} parameters)",
                           what="this model", advice="use a smaller model")


def data_problem(dataset: str, *, model: str | None = None, workers: int = 16,
                 batch_size: int = 32, shards: str = "iid", validation: float = 0.2,
                 examples: int | None = None, seed: int = 0) -> Problem:
    """A net trained on a data set, with each worker reading mini-batches from its shard.

    Args:
      dataset: ``digits``, ``mnist`` or ``collider`` (synthetic).
      model: ``mlp``, ``mlp:SIZES``, ``cnn``, ``cnn:CHANNELS`` or the full cnn form
        ``cnn:KxK-CHANNELS:HIDDEN:maxpool:valid`` (see ``parse_model``; default:
        :data:`DEFAULT_MODELS`).
      workers: how many shards the training set is cut into; worker ``k`` reads shard
        ``k mod workers`` (give the run's worker count, or for groups its member count).
      batch_size: B, examples per local step.
      shards: ``iid``, ``class`` or ``dirichlet:ALPHA``.
      validation: the held-out fraction the recorded accuracy is measured on.
      examples: a seeded subset of the data set (collider: how many to generate).
      seed: seeds the split, the shards and the fixed start (``init(key(seed))``);
        the runs' seeds draw the batches and random initialisations.

    The problem records the training loss on a fixed subset of at most
    ``LOSS_EXAMPLES`` training examples, and evaluates the centre's validation loss
    and accuracy (``Result.metrics``). Its parameters are the model's dict of arrays.
    """
    if dataset not in DATASETS:
        raise ConfigError(f"unknown data set {dataset!r}; available: {', '.join(DATASETS)}")
    workers = _positive_int("workers", workers)
    data = load_dataset(dataset, validation=validation, seed=seed, examples=examples)
    spec = DEFAULT_MODELS[dataset] if model is None else model
    net = parse_model(spec, data.example_shape, data.classes)
    _check_model_size(net, spec, workers)
    if workers > data.y_train.size:
        raise ConfigError(f"workers: {workers} workers for {data.y_train.size} training "
                          f"examples of {data.name}; use fewer workers")
    parts = make_shards(data.y_train, workers, shards, seed=seed)
    batch_size = check_batch_size(parts, batch_size)

    # the set-up's arrays are cut on the host and put on the device as they are: each
    # eager JAX operation (``jnp.asarray`` included) compiles a program of its own, tens
    # of milliseconds each on a CPU, in every new process
    x_train, y_train = jax.device_put(data.x_train), jax.device_put(data.y_train)
    subset = np.sort(np.random.default_rng(seed).permutation(data.y_train.size)[:LOSS_EXAMPLES])
    x_loss, y_loss = data.x_train[subset], data.y_train[subset]
    index, lengths = jax.device_put(parts.index), jax.device_put(parts.lengths)
    n_shards = int(parts.lengths.size)

    def batch_loss(params, batch):
        rows = jnp.asarray(batch)
        return cross_entropy(net.apply(params, x_train[rows]), y_train[rows])

    start = jax.jit(net.init)(jax.random.key(seed))  # one program, not one per operation
    example_bytes = _example_bytes(net, start, x_loss[:1])
    chunk = _record_chunk(example_bytes, batch_size)
    loss_and_hits = _evaluator(net, x_loss, y_loss, chunk)
    validation = _evaluator(net, data.x_valid, data.y_valid, chunk)

    def loss(params):
        return loss_and_hits(params)[0]

    def evaluate(params):
        validation_loss, hits = validation(params)
        return {"validation_loss": validation_loss, "accuracy": hits}

    grad = jax.grad(batch_loss)

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

    return Problem(
        name=f"{dataset}/{spec}",
        dim=parameter_count(start),
        loss=loss,
        batch_loss=batch_loss,
        batch=lambda worker, step: rows_of(jax.random.key(seed), worker, step),
        start=jax.tree.map(np.asarray, start),
        box=None,
        domain=None,
        minima=None,
        success_radius=None,
        init=net.init,
        oracle=oracle,
        evaluate=evaluate,
        info={"dataset": data.name, "model": spec, "batch_size": batch_size,
              "shards": shards, "workers": workers, "train": int(data.y_train.size),
              "validation": int(data.y_valid.size), "synthetic": data.synthetic,
              "parameters": parameter_count(start),
              # examples one record evaluates: the training-loss subset, the validation set
              "record_examples": int(y_loss.size + data.y_valid.size),
              # what one run's forward pass holds per example, and the examples a
              # record evaluates at once (the engine's memory estimate reads both)
              "example_bytes": example_bytes,
              "record_chunk": int(min(chunk, max(y_loss.size, data.y_valid.size)))},
        defaults={"learning_rate": _names.LEARNING_RATES[dataset], "batch_size": batch_size,
                  # fewer where they would cost more than a quarter of the gradient work
                  "records": 100},
    )


def _factory(dataset):
    def build(**options):
        return data_problem(dataset, **options)

    build.__name__ = dataset
    build.__doc__ = f"The {dataset} data set with a small net (see :func:`data_problem`)."
    return build


digits = _factory("digits")
mnist = _factory("mnist")
collider = _factory("collider")
