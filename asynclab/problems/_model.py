"""A researcher's own model and data as a problem: :func:`from_model`.

A model is ``apply(params, x) -> outputs`` and its parameters (any pytree of float
arrays); the data are arrays held in memory, memory-mapped, or read from ``.npy`` /
``.npz`` files. The problem's gradient oracle draws mini-batches by index: worker ``k``
owns shard ``k mod S`` (``S`` shards, one per worker once the run deals them out with
:meth:`~asynclab.problems.Problem.for_workers`) and at its local step ``s`` reads
:func:`~asynclab.problems._shards.batch_indices` of that shard from its own key, so a
batch depends only on ``(seed, k, s)`` and every executor reads the same examples.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _files, _validate
from .._errors import ConfigError
from ._datasets import stratified_split
from ._measures import LOSSES, _evaluator, _example_bytes, _measure, _metrics, _record_chunk
from ._model_shards import _shard_fields
from ._problem import Problem, Recording, float_params, from_loss, parameter_count
from ._shards import Sharding

#: training examples the recorded training loss is measured on (a fixed subset)
LOSS_EXAMPLES = 1000

# ----------------------------------------------------------------------------- reading


@_files.reads("arrays")
def read_arrays(path, field: str):
    """The arrays of a ``.npy`` file (memory-mapped: rows are read when used) or of a
    ``.npz`` file (a dict of its members, read member by member through the lab's
    ``.npz`` reader, sizes checked against the file and the free memory first); never
    pickles. The one place :func:`from_model` reads a file.

    Raises:
      ConfigError: naming ``field``: no such file, not a regular file, neither a ``.npy``
        nor a ``.npz`` (by its first bytes), or a file numpy cannot read without pickles.
    """
    path = _files.input_file(path, field)
    with _files.open_binary(path, field) as file:
        magic = file.read(6)
    if magic.startswith(b"PK"):
        with _files.Archive(path, field, "a .npz of arrays") as archive:
            return archive.read_all()
    if magic != b"\x93NUMPY":
        raise ConfigError(f"{field}: cannot read {str(path)!r}: not a .npy or .npz file (by "
                          "its first bytes)")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise ConfigError(f"{field}: cannot read {str(path)!r} without pickles: "
                          f"{error}") from None


def _array_like(value, field: str):
    """``value`` as an array-like with a shape and a dtype, not read yet: a path is read
    (:func:`read_arrays`), a numpy array (memory-mapped or not) or any object with
    ``shape``, ``dtype`` and ``__getitem__`` (h5py, zarr) is kept, anything else goes
    through ``numpy.asarray``."""
    if isinstance(value, str | os.PathLike):
        return read_arrays(value, field)
    if isinstance(value, Mapping):
        if not value:
            raise ConfigError(f"{field}: an empty dict of arrays")
        return {str(k): _array_like(v, f"{field}[{k!r}]") for k, v in value.items()}
    if isinstance(value, jax.Array):
        value = np.asarray(value)
    if not all(hasattr(value, a) for a in ("shape", "dtype", "__getitem__")):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{field}: not an array: {error}") from None
    if len(value.shape) < 1:
        raise ConfigError(f"{field}: an array of examples needs a leading example axis, got "
                          f"a scalar")
    if np.dtype(value.dtype).kind not in "biuf":
        raise ConfigError(f"{field}: arrays of numbers only, got dtype {value.dtype}")
    return value


def _leaves(tree, field: str) -> list[tuple[str, Any]]:
    if isinstance(tree, dict):
        return [(f"{field}[{k!r}]", v) for k, v in tree.items()]
    return [(field, tree)]


def _length(tree, field: str) -> int:
    """The common length of the leading axes of ``tree``'s arrays."""
    lengths = {where: int(leaf.shape[0]) for where, leaf in _leaves(tree, field)}
    if len(set(lengths.values())) != 1:
        raise ConfigError(f"{field}: arrays of different lengths: "
                          + ", ".join(f"{k} {v}" for k, v in lengths.items()))
    return next(iter(lengths.values()))


def _rows(tree, index: np.ndarray | None):
    """The rows ``index`` (sorted; None: every row) of each array, read once, in memory;
    float features become float32, integers stay as they are."""

    def take(leaf):
        out = np.asarray(leaf) if index is None else np.asarray(leaf[index])
        return _device_dtype(out)

    return {k: take(v) for k, v in tree.items()} if isinstance(tree, dict) else take(tree)


def _device_dtype(values: np.ndarray) -> np.ndarray:
    """Float arrays as float32, 64-bit integers as int32 (what JAX holds by default)."""
    if values.dtype.kind == "f":
        return values.astype(np.float32, copy=False)
    if values.dtype.kind in "iu" and values.dtype.itemsize > 4:
        if values.size and (values.max() > np.iinfo(np.int32).max
                            or values.min() < np.iinfo(np.int32).min):
            raise ConfigError("x or y: integers beyond int32 (the integers JAX holds)")
        return values.astype(np.int32)
    return values


def _nbytes(tree) -> int:
    return sum(math.prod(leaf.shape) * max(4, np.dtype(leaf.dtype).itemsize)
               for _, leaf in _leaves(tree, ""))


def _take(tree, rows):
    """``tree``'s examples ``rows`` (device arrays, traced rows)."""
    return jax.tree.map(lambda leaf: leaf[rows], tree)


# ----------------------------------------------------------------------------- the problem


def _check_size(params, workers: int) -> None:
    """Refuse parameters too large to hold for a run: the fixed start, every worker's
    parameters and the server's, in float32."""
    sizes = [math.prod(np.shape(leaf)) for leaf in jax.tree.leaves(params)]
    if max(sizes) >= 2**31:
        raise ConfigError(f"params: a leaf of {max(sizes):,} numbers is more than one array "
                          "can index (2**31)")
    _validate.check_memory(4 * sum(sizes) * (workers + 3), f"params ({sum(sizes):,} numbers)",
                           what="this model", advice="use a smaller model")


def _split(n: int, labels, classes: bool, validation: float, seed: int):
    """Sorted ``(train, valid)`` positions: stratified by class for class labels (as the
    shipped data sets are), else a seeded permutation's first ``round(validation · n)``."""
    if classes:
        return stratified_split(labels, validation, seed)
    order = np.random.default_rng(seed).permutation(n)
    k = int(round(validation * n))
    return np.sort(order[k:]), np.sort(order[:k])


class _Data(NamedTuple):
    """A data set read and split: host arrays (a dict of arrays for dict features); the
    labels None where the features are the targets."""

    x_train: Any
    y_train: np.ndarray | None
    x_valid: Any
    y_valid: np.ndarray | None
    integer: bool   # labels: one integer per example
    classes: bool   # ... and >= 0: class indices (stratified splits, class shards)


def _read_data(x, y, validation, examples, seed) -> _Data:
    """The training and validation arrays of :func:`from_model`'s ``x``, ``y``,
    ``validation`` and ``examples``: each row that is used read once, nothing else."""
    x = _array_like(x, "x")
    if isinstance(y, str) and isinstance(x, dict):
        if y not in x:
            raise ConfigError(f"y: {y!r} is not an entry of x ({', '.join(x)})")
        x = dict(x)
        y = x.pop(y)
        if not x:
            raise ConfigError("y: taking the labels out of x leaves no features")
        if len(x) == 1:
            (x,) = x.values()
    elif y is not None:
        y = _array_like(y, "y")
        if isinstance(y, dict):
            raise ConfigError("y: the labels are one array, not a dict")
    n = _length(x, "x")
    if y is not None and int(y.shape[0]) != n:
        raise ConfigError(f"y: {int(y.shape[0])} labels for {n} examples of x; give one "
                          "label per example")
    labels = None if y is None else _device_dtype(np.asarray(y))
    integer = labels is not None and labels.dtype.kind in "iu" and labels.ndim == 1
    is_class = integer and (labels.size == 0 or labels.min() >= 0)

    keep = None
    if examples is not None:
        examples = _validate.count(examples, "examples", low=2)
        if examples > n:
            raise ConfigError(f"examples: {examples} exceeds the {n} available")
        keep = np.sort(np.random.default_rng(seed).permutation(n)[:examples])
        labels = None if labels is None else labels[keep]
        n = examples

    if isinstance(validation, tuple | list):
        if len(validation) != 2:
            raise ConfigError("validation: give a fraction in (0, 1) or (x_valid, y_valid)")
        x_valid = _array_like(validation[0], "validation[0]")
        if isinstance(x_valid, dict) != isinstance(x, dict):
            raise ConfigError("validation[0]: the validation features must have the "
                              "training features' form (an array, or a dict of arrays)")
        n_valid = _length(x_valid, "validation[0]")
        if (validation[1] is None) != (y is None):
            raise ConfigError("validation[1]: give validation labels exactly when y is given")
        y_valid = None
        if validation[1] is not None:
            y_valid = np.asarray(_array_like(validation[1], "validation[1]"))
            if y_valid.shape[0] != n_valid:
                raise ConfigError(f"validation[1]: {y_valid.shape[0]} labels for {n_valid} "
                                  "validation examples")
            y_valid = _device_dtype(y_valid)
        _validate.check_memory(2 * (_nbytes(x) + _nbytes(x_valid)), "x",
                               what="this data set", advice="give fewer examples")
        return _Data(_rows(x, keep), labels, _rows(x_valid, None), y_valid, integer,
                     is_class)
    if isinstance(validation, bool) or not isinstance(validation, int | float) \
            or not 0 < validation < 1:
        raise ConfigError(f"validation must be a fraction in (0, 1) or (x_valid, y_valid),"
                          f" got {validation!r}")
    train, valid = _split(n, labels if is_class else None, is_class, float(validation), seed)
    if train.size == 0 or valid.size == 0:
        raise ConfigError(f"validation={validation} leaves an empty part of {n} examples")
    _validate.check_memory(2 * _nbytes(x) * n // _length(x, "x"), "x",
                           what="this data set", advice="give fewer examples")
    rows_train = train if keep is None else keep[train]
    rows_valid = valid if keep is None else keep[valid]
    return _Data(_rows(x, rows_train), None if labels is None else labels[train],
                 _rows(x, rows_valid), None if labels is None else labels[valid],
                 integer, is_class)


def _check_model(apply, params, data: _Data, loss, sharding) -> tuple[int | None, Any]:
    """``(classes, outputs)``: the classes the labels index (None where they are not
    classes) and ``apply``'s outputs for two examples (shapes only: nothing is computed),
    after checking the model's outputs against the loss and the labels."""
    first = jax.tree.map(lambda a: a[:1], data.x_train)
    try:
        out_one = jax.eval_shape(apply, params, first)
    except Exception as error:  # the user's function: whatever it raises, name it
        raise ConfigError(f"apply: calling it on params and a batch of one example of x "
                          f"raised {type(error).__name__}: {error}") from None
    if not hasattr(out_one, "shape") or len(out_one.shape) < 1 or out_one.shape[0] != 1:
        raise ConfigError(f"apply: must return outputs with a leading batch axis; on a "
                          f"batch of one it returned {_shape_of(out_one)}")
    classes = None
    y_train, y_valid = data.y_train, data.y_valid
    if isinstance(loss, str) and loss == "cross_entropy":
        if y_train is None or not data.integer:
            raise ConfigError("y: cross-entropy needs integer class labels, one per example"
                              + ("" if y_train is None else f"; got dtype {y_train.dtype} "
                                 f"and shape {y_train.shape}"))
        if len(out_one.shape) != 2:
            raise ConfigError(f"apply: cross-entropy needs outputs (batch, classes), got "
                              f"{_shape_of(out_one)} for one example")
        classes = int(out_one.shape[1])
        for field, values in (("y", y_train), ("validation[1]", y_valid)):
            if values is not None and values.size and (
                    values.min() < 0 or values.max() >= classes):
                bad = values.min() if values.min() < 0 else values.max()
                raise ConfigError(f"{field}: labels must be classes in [0, {classes}) for "
                                  f"the model's {classes} outputs, found {bad}")
    if isinstance(loss, str) and loss == "mse":
        per_example = math.prod(out_one.shape[1:])
        targets = y_train if y_train is not None else data.x_train
        leaves = jax.tree.leaves(targets)
        if len(leaves) != 1 or math.prod(leaves[0].shape[1:]) != per_example:
            raise ConfigError(f"{'y' if y_train is not None else 'x'}: mse needs targets of "
                              f"the outputs' size per example ({per_example}), got "
                              f"{[tuple(a.shape[1:]) for a in leaves]}")
    if data.classes and classes is None:  # class labels under another loss: those present
        classes = int(max(y_train.max(initial=0),
                          0 if y_valid is None else y_valid.max(initial=0))) + 1
    if sharding.kind != "iid" and not data.classes:
        raise ConfigError(f"shards: {sharding} shards deal out classes and need integer "
                          "class labels (y); use iid")
    outputs = jax.eval_shape(apply, params, jax.tree.map(lambda a: a[:2], data.x_train))
    return (classes if data.classes else None), outputs


def _check_init(init, params) -> None:
    """``init(key)`` returns parameters of ``params``' structure and shapes."""
    if init is None:
        return
    if not callable(init):
        raise ConfigError(f"init must be a function key -> params, got {init!r}")
    try:
        # the key is made inside the trace: nothing is compiled
        shapes = jax.eval_shape(lambda: init(jax.random.key(0)))
    except Exception as error:  # the user's function: whatever it raises, name it
        raise ConfigError(f"init: calling it on a key raised {type(error).__name__}: "
                          f"{error}") from None
    if jax.tree.structure(shapes) != jax.tree.structure(params) or any(
            tuple(a.shape) != np.shape(b) for a, b in
            zip(jax.tree.leaves(shapes), jax.tree.leaves(params), strict=True)):
        raise ConfigError("init: returns parameters of another structure or shape than "
                          "params")


def from_model(apply: Callable, params, x, y=None, *, loss="cross_entropy", metrics=None,
               batch_size: int = 32, validation=0.2, shards="iid", workers: int = 1,
               init: Callable | None = None, name: str | None = None,
               learning_rate: float | None = None, seed: int = 0,
               examples: int | None = None, loss_examples: int = LOSS_EXAMPLES) -> Problem:
    """A data problem: a model ``apply(params, x) -> outputs`` trained on arrays, each
    worker reading mini-batches from its own shard of the training examples.

    The problem records the training loss on a fixed subset of at most
    ``loss_examples`` training examples, and at every record evaluates the centre's
    validation loss and ``metrics`` (``Result.metrics``). Runs may add Gaussian noise to
    the mini-batch gradients (``noise=``).

    Args:
      apply: ``apply(params, x) -> outputs``: ``x`` is a batch (the features' arrays with
        a leading batch axis), the outputs have the same leading axis.
      params: the initial parameters (the fixed start): any pytree of float arrays
        (float32 from here on).
      x: the features: an array (numpy, memory-mapped, or any array-like with ``shape``,
        ``dtype`` and indexing, e.g. h5py or zarr), a ``.npy`` / ``.npz`` path, or a dict
        of arrays with a common length (``apply`` then receives a dict of batches).
        Float features are used as float32, integer features as they are.
      y: the labels (an array or ``.npy`` path of the same length), or the key of a dict
        ``x``'s entry that holds them (taken out of the features; a dict left with one
        entry gives ``apply`` that array). None: the features are the targets (an
        autoencoder; ``loss="mse"`` or a function).
      loss: ``"cross_entropy"`` (integer class labels in ``[0, C)`` for outputs
        ``(batch, C)``: the mean softmax cross-entropy), ``"mse"`` (the mean over
        examples of the mean squared difference between outputs and labels of the same
        size per example), or a function ``(outputs, labels)`` that returns per-example
        losses ``(batch,)`` or their mean (a scalar; a record then applies it to each
        example alone).
      metrics: what a record evaluates on the validation set beside the loss: names
        (``"accuracy"``, the fraction of examples whose largest output is the label's)
        or a dict of name to a function like ``loss``'s. Default: accuracy for
        cross-entropy, nothing else for the others.
      batch_size: B, examples per local step; at most a shard's size.
      validation: the held-out fraction in (0, 1) (stratified by class for class
        labels, else a seeded permutation), or ``(x_valid, y_valid)`` arrays (``y_valid``
        None when ``y`` is).
      shards: ``"iid"``, ``"class"``, ``"dirichlet:ALPHA"`` or a
        :class:`~asynclab.problems.Sharding` (class and Dirichlet shards need integer
        labels). The label histograms are ``problem.shards.histograms``.
      workers: the shards to start with; a run deals the examples out to its own
        worker count (:meth:`~asynclab.problems.Problem.for_workers`).
      init: ``init(key) -> params`` for seeded random starts (``init="random"``), of
        the structure and shapes of ``params``. None: only the fixed start.
      name: the problem's name (default: ``"model"``).
      learning_rate: η for runs that give none (default: 1e-3).
      seed: seeds the split, the subset of ``examples``, the shards and the
        training-loss subset; the runs' seeds draw the batches.
      examples: use a seeded subset of this many examples (only those rows are read).
      loss_examples: the training examples the recorded training loss averages.

    Returns:
      A sharded :class:`~asynclab.problems.Problem` whose ``recording`` declares the
      metrics and a record's costs.

    Raises:
      ConfigError: naming the argument, before any work: parameters that are not float
        arrays, features and labels of different lengths, labels outside the classes, a
        loss or metric of the wrong form, a validation fraction outside (0, 1), a
        Dirichlet α <= 0, a shard with no examples, a batch larger than a shard.
    """
    if not callable(apply):
        raise ConfigError(f"apply must be a function (params, x) -> outputs, got {apply!r}")
    params = float_params(params, "params")
    workers = _validate.count(workers, "workers")
    batch_size = _validate.count(batch_size, "batch_size")
    seed = _validate.seed(seed, "seed")
    loss_examples = _validate.count(loss_examples, "loss_examples")
    sharding = Sharding.parse(shards)
    if (isinstance(loss, str) and loss not in LOSSES) or not (isinstance(loss, str)
                                                               or callable(loss)):
        raise ConfigError(f"loss: give one of {', '.join(LOSSES)} or a function (outputs, "
                          f"labels) -> per-example losses or their mean, got {loss!r}")
    if name is None:
        name = "model"
    if not isinstance(name, str) or not name:
        raise ConfigError(f"name must be a non-empty string, got {name!r}")
    if learning_rate is not None:
        learning_rate = _validate.number(learning_rate, "learning_rate", low=0, low_open=True)
    _check_size(params, workers)

    data = _read_data(x, y, validation, examples, seed)
    x_train, y_train, x_valid, y_valid = data.x_train, data.y_train, data.x_valid, data.y_valid
    n_train = int(jax.tree.leaves(x_train)[0].shape[0])
    targets_train = y_train if y_train is not None else x_train
    targets_valid = y_valid if y_valid is not None else x_valid
    classes, outputs = _check_model(apply, params, data, loss, sharding)
    labels_two = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a[:2].shape, a.dtype),
                              targets_train)
    loss_measure = _measure(loss, "loss", outputs, labels_two)
    measures = _metrics(metrics, loss, classes, outputs, labels_two)
    _check_init(init, params)

    # the set-up's arrays are cut on the host and put on the device as they are: each
    # eager JAX operation (``jnp.asarray`` included) compiles a program of its own, tens
    # of milliseconds each on a CPU, in every new process
    x_device = jax.device_put(x_train)
    y_device = x_device if y_train is None else jax.device_put(y_train)
    subset = np.sort(np.random.default_rng(seed).permutation(n_train)[:loss_examples])
    x_loss = jax.tree.map(lambda a: a[subset], x_train)
    y_loss = jax.tree.map(lambda a: a[subset], targets_train)

    def batch_loss(params, batch):
        rows = jnp.asarray(batch)
        return loss_measure.mean(apply(params, _take(x_device, rows)), _take(y_device, rows))

    example_bytes = _example_bytes(apply, params, jax.tree.map(lambda a: a[:1], x_loss))
    chunk = _record_chunk(example_bytes, batch_size)
    all_measures = (loss_measure, *measures.values())
    loss_and_metrics = _evaluator(apply, all_measures, x_loss, y_loss, chunk)
    on_validation = _evaluator(apply, all_measures, x_valid, targets_valid, chunk)
    names = ("validation_loss", *measures)

    def training_loss(params):
        return loss_and_metrics(params)[0]

    def evaluate(params):
        return dict(zip(names, on_validation(params), strict=True))

    reshard = _shard_fields(sharding=sharding,
                            labels=y_train if classes else np.zeros(n_train, np.int32),
                            classes=classes, seed=seed, batch_size=batch_size,
                            batch_loss=batch_loss)
    fields = reshard(workers)
    n_valid = int(jax.tree.leaves(x_valid)[0].shape[0])
    n_loss = int(subset.size)
    # a loss over the parameters like any other (the training loss on its subset), with
    # the data's batches, oracle, records and random starts
    return from_loss(training_loss, params, name=name)._replace(
        batch_loss=batch_loss,
        init=init,
        evaluate=evaluate,
        info={"batch_size": batch_size, "shards": str(sharding), "workers": workers,
              "train": n_train, "validation": n_valid, "parameters": parameter_count(params)},
        defaults={**({} if learning_rate is None else {"learning_rate": learning_rate}),
                  "batch_size": batch_size},
        recording=Recording(metrics=names, examples=n_loss + n_valid, batch_size=batch_size,
                            example_bytes=example_bytes,
                            chunk=int(min(chunk, max(n_loss, n_valid)))),
        **fields,
    )


def _shape_of(out) -> str:
    return f"shape {tuple(out.shape)}" if hasattr(out, "shape") else type(out).__name__
