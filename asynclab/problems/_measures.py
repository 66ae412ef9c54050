"""What a data problem measures: its loss and metrics, by name or a function of the
model's outputs and the labels (:func:`_measure`, :func:`_metrics`), and a record's
evaluation of them over many examples, in chunks that fit (:func:`_evaluator`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import ConfigError
from ._models import accuracy, correct, cross_entropy, label_log_probabilities

#: bytes of intermediate values one run's record may hold at once: a record evaluates
#: its examples (the training-loss subset, the validation set) in chunks of as many as
#: fit, so that many seeds of a large net recorded together stay within memory (the
#: unfolded patches of a 5x5 CNN's second convolution take 205 kB per example: 205 MB
#: per seed for the 1,000 training-loss examples, 105 GB for 512 seeds at once)
RECORD_CHUNK_BYTES = 64 * 2**20

#: the losses :func:`from_model` knows by name
LOSSES = ("cross_entropy", "mse")

#: the metrics :func:`from_model` knows by name
METRICS = ("accuracy",)


# ----------------------------------------------------------------------------- measures


class _Measure(NamedTuple):
    """A per-example quantity of a batch: its mean, and its sum weighted per example
    (a record's padded chunks weight their padding 0)."""

    mean: Callable[[Any, Any], jax.Array]
    total: Callable[[Any, Any, jax.Array], jax.Array]


def _squared_error(outputs, labels):
    error = outputs - labels.reshape(outputs.shape)
    return jnp.mean(error * error, axis=tuple(range(1, error.ndim)))


_BUILT_IN = {
    "cross_entropy": _Measure(
        cross_entropy, lambda o, y, w: -jnp.sum(w * label_log_probabilities(o, y))),
    "mse": _Measure(lambda o, y: jnp.mean(_squared_error(o, y)),
                    lambda o, y, w: jnp.sum(w * _squared_error(o, y))),
    "accuracy": _Measure(accuracy, lambda o, y, w: jnp.sum(w * correct(o, y))),
}


def _custom(function, per_example: bool) -> _Measure:
    """A measure from a callable ``(outputs, labels)`` returning per-example values
    (``(batch,)``) or their mean (a scalar, then applied to each example alone to weigh
    a record's examples)."""
    if per_example:
        return _Measure(lambda o, y: jnp.mean(function(o, y)),
                        lambda o, y, w: jnp.sum(w * function(o, y)))

    def each(outputs, labels):
        return jax.vmap(lambda o, y: function(*jax.tree.map(lambda a: a[None], (o, y))))(
            outputs, labels)

    return _Measure(function, lambda o, y, w: jnp.sum(w * each(o, y)))


def _measure(spec, field: str, outputs, labels) -> _Measure:
    """A measure from a built-in name or a callable, its form checked on ``outputs`` and
    ``labels`` of two examples (shape structs)."""
    if isinstance(spec, str):
        if spec not in _BUILT_IN:
            known = LOSSES if field == "loss" else METRICS
            raise ConfigError(f"{field}: unknown {spec!r}; give one of {', '.join(known)} "
                              "or a function (outputs, labels) -> per-example values or "
                              "their mean")
        return _BUILT_IN[spec]
    if not callable(spec):
        raise ConfigError(f"{field} must be a name or a function (outputs, labels) -> "
                          f"per-example values or their mean, got {spec!r}")
    try:
        out = jax.eval_shape(spec, outputs, labels)
    except Exception as error:  # the user's function: whatever it raises, name it
        raise ConfigError(f"{field}: calling it on a batch of two examples' outputs and "
                          f"labels raised {type(error).__name__}: {error}") from None
    shape = getattr(out, "shape", None)
    if getattr(getattr(out, "dtype", None), "kind", None) != "f" or shape not in ((), (2,)):
        raise ConfigError(f"{field}: must return per-example values (shape (batch,)) or "
                          f"their mean (a scalar) as floats; on two examples it returned "
                          f"{getattr(out, 'shape', type(out).__name__)}")
    return _custom(spec, shape == (2,))


# ----------------------------------------------------------------------------- records


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


def _example_bytes(apply, params, example) -> int:
    """Bytes of the values ``apply`` computes for one example (``example``: a batch of
    one), summed over its traced operations: what one example's forward pass may hold."""
    jaxpr = jax.make_jaxpr(apply)(params, example)
    return max(1, sum(v.aval.size * v.aval.dtype.itemsize
                      for eqn in jaxpr.eqns for v in eqn.outvars))


def _evaluator(apply, measures, x, y, chunk: int):
    """``f(params) -> tuple``: each measure's mean over the examples ``x, y`` under
    ``apply``: one pass when ``chunk`` examples cover them, else a loop over chunks of
    ``chunk`` examples (the last padded, its padding weighted 0), which holds one chunk's
    intermediates at a time.

    The examples pass an optimization barrier: they are constants of the compiled program,
    and XLA would otherwise fold what depends on them alone (a convolution's unfolded
    patches) into constants while compiling, which on a CNN costs seconds of every first
    call and tens of megabytes of program.
    """
    measures = tuple(measures)
    n = int(jax.tree.leaves(y)[0].shape[0])
    if chunk >= n:
        x, y = jax.device_put(jax.tree.map(np.asarray, (x, y)))

        def whole(params):
            outputs = apply(params, jax.lax.optimization_barrier(x))
            return tuple(m.mean(outputs, y) for m in measures)

        return whole
    count = -(-n // chunk)
    pad = count * chunk - n

    def chunks(a):
        a = np.asarray(a)
        a = np.concatenate([a, np.zeros((pad, *a.shape[1:]), a.dtype)])
        return a.reshape(count, chunk, *a.shape[1:])

    xs, ys = jax.device_put(jax.tree.map(chunks, (x, y)))
    weights = jax.device_put((np.arange(count * chunk) < n).astype(np.float32)
                             .reshape(count, chunk))

    def chunked(params):
        def sums(part):
            x_part, y_part, weight = part
            outputs = apply(params, x_part)
            return tuple(m.total(outputs, y_part, weight) for m in measures)

        totals = jax.lax.map(sums, jax.lax.optimization_barrier((xs, ys, weights)))
        return tuple(jnp.sum(t) / n for t in totals)

    return chunked


def _metrics(metrics, loss, classes, outputs, labels) -> dict[str, _Measure]:
    """The measures of ``metrics`` (names or a dict of name to a function), checked on
    two examples' ``outputs`` and ``labels``; by default accuracy for cross-entropy."""
    entropy = isinstance(loss, str) and loss == "cross_entropy"
    if metrics is None:
        metrics = ("accuracy",) if entropy else ()
    if isinstance(metrics, str):
        metrics = (metrics,)
    if not isinstance(metrics, Mapping):
        try:
            metrics = {m: m for m in metrics}
        except TypeError:
            raise ConfigError(f"metrics must be names or a dict of name to function, got "
                              f"{metrics!r}") from None
    measures = {}
    for metric, spec in metrics.items():
        if not isinstance(metric, str) or metric == "validation_loss":
            raise ConfigError(f"metrics: {metric!r} is not a name a record can take "
                              "(validation_loss is the loss's)")
        if isinstance(spec, str) and spec == "accuracy" and (
                classes is None or len(outputs.shape) != 2):
            raise ConfigError("metrics: accuracy needs integer class labels and outputs "
                              "(batch, classes)")
        measures[metric] = _measure(spec, f"metrics[{metric!r}]", outputs, labels)
    return measures
