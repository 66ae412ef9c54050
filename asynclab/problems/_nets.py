"""Small nets on the shipped data sets as problems: a model, a data set, shards and a
batch size, built with :func:`~asynclab.problems.from_model`.

The gradient oracle draws mini-batches by index: worker ``k`` owns shard ``k mod S``
(``S`` shards, by default one per worker) and at its local step ``s`` reads
:func:`~asynclab.problems._shards.batch_indices` of that shard from its own key, so a
batch depends only on ``(seed, k, s)`` and every executor reads the same examples.
"""

from __future__ import annotations

import inspect
import math

import jax

from .. import _validate
from .._errors import ConfigError
from ._datasets import DATASETS, load_dataset
from ._model import from_model
from ._models import parse_model
from ._problem import Problem

#: the model each data set gets when none is named
DEFAULT_MODELS = {"digits": "mlp:64", "mnist": "mlp:256", "collider": "mlp:64"}

#: η the nets were tuned for: they learn with 0.03 for 4 to 32 workers of DOWNPOUR
#: (docs/nets.md: what each reaches in 1,000 commits); 1e-3, the surfaces' η, leaves them
#: far from it (digits: 72 % against 94 % validation accuracy).
LEARNING_RATE = 0.03


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
    and accuracy (``Result.metrics``). Its parameters are the model's dict of arrays;
    its fixed start is ``init(key(seed))``.
    """
    if dataset not in DATASETS:
        raise ConfigError(f"unknown data set {dataset!r}; available: {', '.join(DATASETS)}")
    workers = _positive_int("workers", workers)
    data = load_dataset(dataset, validation=validation, seed=seed, examples=examples)
    spec = DEFAULT_MODELS[dataset] if model is None else model
    net = parse_model(spec, data.example_shape, data.classes)
    _check_model_size(net, spec, workers)
    start = jax.jit(net.init)(jax.random.key(seed))  # one program, not one per operation
    problem = from_model(net.apply, start, data.x_train, data.y_train,
                         validation=(data.x_valid, data.y_valid), batch_size=batch_size,
                         shards=shards, workers=workers, init=net.init,
                         name=f"{dataset}/{spec}", learning_rate=LEARNING_RATE, seed=seed)
    return problem._replace(info={"dataset": data.name, "model": spec, **problem.info,
                                  "synthetic": data.synthetic})


def _factory(dataset):
    def build(**options):
        return data_problem(dataset, **options)

    build.__name__ = dataset
    build.learning_rate = LEARNING_RATE  # read by the command line's help
    build.__doc__ = f"The {dataset} data set with a small net (see :func:`data_problem`)."
    signature = inspect.signature(data_problem)
    build.__signature__ = signature.replace(parameters=[
        p for p in signature.parameters.values() if p.name != "dataset"])
    return build


digits = _factory("digits")
mnist = _factory("mnist")
collider = _factory("collider")
