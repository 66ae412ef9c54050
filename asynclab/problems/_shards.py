"""Which examples each worker owns, and which mini-batch it reads at each local step.

Shards are built once, in numpy, as a padded ``(workers, longest)`` index array and the
true lengths, so that a batch is one gather under ``jit`` and ``vmap``
(:func:`batch_indices`). A batch depends only on ``(key, worker, step)``: every executor
(replay, devices, threads) reads the same examples for the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _random, _validate
from .._errors import ConfigError

SHARDINGS = ("iid", "class", "dirichlet")


class Shards(NamedTuple):
    """Each worker's examples.

    Attributes:
      index: ``(workers, longest)`` int32; row ``k`` holds worker ``k``'s example indices
        in its first ``lengths[k]`` entries, then repeats them cyclically (padding never
        names another worker's example).
      lengths: ``(workers,)`` int32, each >= 1.
    """

    index: np.ndarray
    lengths: np.ndarray

    def members(self, worker: int) -> np.ndarray:
        """Worker ``worker``'s example indices (without padding)."""
        return self.index[worker, : self.lengths[worker]]


def _pack(parts: list[np.ndarray]) -> Shards:
    longest = max(p.size for p in parts)
    index = np.stack([np.resize(np.sort(p), longest) for p in parts]).astype(np.int32)
    return Shards(index, np.array([p.size for p in parts], np.int32))


@dataclass(frozen=True)
class Sharding:
    """How a data set's training examples are dealt out to the workers.

    - ``Sharding("iid")``: a seeded permutation cut into nearly equal parts;
    - ``Sharding("class")``: each worker owns whole classes (worker k class k mod C,
      the workers sharing a class splitting it);
    - ``Sharding("dirichlet", alpha)``: non-iid by label, each class's examples split
      over the workers in proportions drawn from Dirichlet(α, …, α) (Hsu et al., 2019).

    ``str()`` gives the short form the command line takes (``"dirichlet:0.3"``), and
    :meth:`parse` reads it.

    Attributes:
      kind: ``"iid"``, ``"class"`` or ``"dirichlet"``.
      alpha: the Dirichlet concentration α > 0 (``"dirichlet"`` only; None otherwise).

    Raises:
      ConfigError: an unknown kind, or an α that is missing, not a number or <= 0.
    """

    kind: str = "iid"
    alpha: float | None = None

    def __post_init__(self):
        if self.kind not in SHARDINGS:
            raise ConfigError(f"shards must be iid, class or dirichlet:ALPHA (e.g. "
                              f"dirichlet:0.3), got kind {self.kind!r}")
        if self.kind != "dirichlet":
            if self.alpha is not None:
                raise ConfigError(f"shards: alpha applies to dirichlet shards, not "
                                  f"{self.kind}")
            return
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.number) \
                or not np.isfinite(alpha) or alpha <= 0:
            raise ConfigError(f"shards: the Dirichlet concentration must be a number > 0, "
                              f"got {alpha!r}")
        object.__setattr__(self, "alpha", float(alpha))

    def __str__(self) -> str:
        return self.kind if self.alpha is None else f"{self.kind}:{self.alpha!r}"

    @classmethod
    def parse(cls, spec) -> Sharding:
        """A :class:`Sharding` from itself or from ``"iid"``, ``"class"`` or
        ``"dirichlet:ALPHA"``."""
        if isinstance(spec, Sharding):
            return spec
        kind, alpha = parse_sharding(spec)
        return cls(kind, alpha)


def parse_sharding(spec) -> tuple[str, float | None]:
    """``"iid"``, ``"class"`` or ``"dirichlet:ALPHA"`` (or a :class:`Sharding`) as
    ``(kind, alpha)``."""
    if isinstance(spec, Sharding):
        return spec.kind, spec.alpha
    kind, _, alpha = str(spec).partition(":")
    if kind not in SHARDINGS or (kind == "dirichlet") != bool(alpha):
        raise ConfigError(f"shards must be iid, class or dirichlet:ALPHA (e.g. dirichlet:0.3),"
                          f" got {spec!r}")
    if kind != "dirichlet":
        return kind, None
    try:
        value = float(alpha)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or value <= 0:
        raise ConfigError(f"shards: the Dirichlet concentration must be a number > 0, "
                          f"got {alpha!r}")
    return kind, value


def make_shards(labels, workers: int, sharding: str | Sharding = "iid", *, seed: int = 0,
                minimum: int = 1, attempts: int = 100) -> Shards:
    """Deal the examples with ``labels`` out to ``workers`` workers.

    - ``iid``: a seeded permutation cut into ``workers`` nearly equal parts (sizes differ
      by at most one);
    - ``class``: worker ``k`` owns class ``k mod C`` (``C`` classes), the workers that
      share a class splitting its examples evenly; with fewer workers than classes,
      worker ``k`` owns every class ``c`` with ``c mod workers = k``. Each worker then
      sees ``ceil(C / workers)`` classes at most, one when ``workers >= C``;
    - ``dirichlet:α`` (Hsu et al., 2019): for each class, proportions
      ``p ~ Dirichlet(α, …, α)`` over the workers, and the class's shuffled examples are
      cut at ``p``'s cumulative sums. Small α gives each worker few classes; large α
      approaches ``iid``. Draws are repeated (up to ``attempts`` times) until every
      worker has at least ``minimum`` examples.

    Every example goes to exactly one worker.

    Args:
      labels: ``(examples,)`` integer class labels.
      workers: number of workers.
      sharding: ``"iid"``, ``"class"`` or ``"dirichlet:ALPHA"``, or a :class:`Sharding`.
      seed: seeds ``numpy.random.default_rng``.
      minimum: the fewest examples a worker may own.
    """
    labels = np.asarray(labels)
    kind, alpha = parse_sharding(sharding)
    if isinstance(workers, bool) or int(workers) != workers or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
    workers = int(workers)
    if workers * minimum > labels.size:
        raise ConfigError(f"workers: {workers} workers cannot each own {minimum} of "
                          f"{labels.size} examples")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    if kind == "iid":
        parts = np.array_split(rng.permutation(labels.size), workers)
    elif kind == "class":
        parts = [[] for _ in range(workers)]
        for j, c in enumerate(classes):
            members = rng.permutation(np.flatnonzero(labels == c))
            owners = list(range(j % workers, workers, len(classes))) if workers >= len(
                classes) else [j % workers]
            for owner, piece in zip(owners, np.array_split(members, len(owners)),
                                    strict=True):
                parts[owner].append(piece)
        parts = [np.concatenate(p) if p else np.zeros(0, np.int64) for p in parts]
    else:
        for _ in range(attempts):
            parts = [[] for _ in range(workers)]
            for c in classes:
                members = rng.permutation(np.flatnonzero(labels == c))
                p = rng.dirichlet(np.full(workers, alpha))
                cuts = np.round(np.cumsum(p)[:-1] * members.size).astype(int)
                for k, piece in enumerate(np.split(members, cuts)):
                    parts[k].append(piece)
            parts = [np.concatenate(p) for p in parts]
            if min(p.size for p in parts) >= minimum:
                break
        else:
            raise ConfigError(
                f"shards: dirichlet:{alpha} left a worker with fewer than {minimum} "
                f"examples in {attempts} draws; use a larger α or fewer workers")
    if min(p.size for p in parts) < minimum:
        raise ConfigError(f"shards: {sharding} leaves a worker with fewer than {minimum} "
                          f"examples ({workers} workers, {labels.size} examples)")
    return _pack(parts)


def label_histograms(shards: Shards, labels, classes: int) -> np.ndarray:
    """``(workers, classes)`` int64: how many examples of each class each worker owns."""
    labels = np.asarray(labels)
    return np.stack([np.bincount(labels[shards.members(k)], minlength=classes)[:classes]
                     for k in range(shards.lengths.size)]).astype(np.int64)


def _epoch_order(worker_key, epoch, length, longest: int):
    """A seeded permutation of ``range(length)`` (then the padding positions).

    ``length`` may be traced: it is the argsort of ``longest`` uniform draws with the
    entries at positions ``>= length`` pushed to the end.
    """
    u = _random.uniform(_random.fold_in(worker_key, epoch), (longest,))
    return jnp.argsort(jnp.where(jnp.arange(longest) < length, u, 2.0))


def batch_indices(index, lengths, key, worker, step, batch_size: int,
                  replace: bool = False):
    """The example indices worker ``worker`` reads at its local step ``step``.

    Without replacement (the default), worker ``k`` goes through its shard in epochs:
    position ``p = step · B + j`` of its stream is entry ``p mod L`` of a fresh
    permutation of its ``L`` examples for epoch ``p div L``, drawn from
    ``fold_in(fold_in(key, k), epoch)``. Each epoch shows every example once. With
    ``replace=True`` the ``B`` positions are uniform draws from ``fold_in(fold_in(key, k),
    step)``.

    Pure and jittable; ``worker`` and ``step`` may be traced (``vmap`` over workers and
    seeds), ``batch_size`` is static and must not exceed any shard's length
    (:func:`check_batch_size`).

    Args:
      index, lengths: a :class:`Shards`'s arrays (as jax or numpy arrays).
      key: the run's data key (a typed ``jax.random`` key).
      worker, step: int32 scalars.
      batch_size: B.
      replace: sample with replacement instead of by epochs.

    Returns:
      ``(batch_size,)`` int32 indices into the training set.
    """
    index = jnp.asarray(index)
    length = jnp.asarray(lengths)[worker]
    longest = index.shape[1]
    worker_key = _random.fold_in(key, worker)
    if replace:
        positions = jax.random.randint(jax.random.fold_in(worker_key, step), (batch_size,),
                                       0, length)
        return index[worker, positions]
    stream = jnp.asarray(step, jnp.int32) * batch_size + jnp.arange(batch_size, dtype=jnp.int32)
    epoch, offset = stream // length, stream % length
    first = epoch[0]
    # a batch spans at most two epochs when batch_size <= length; the next epoch's order
    # is drawn only when this batch reaches into it
    order = _epoch_order(worker_key, first, length, longest)
    following = jax.lax.cond(epoch[-1] == first, lambda: order,
                             lambda: _epoch_order(worker_key, first + 1, length, longest))
    positions = jnp.where(epoch == first, order[offset], following[offset])
    return index[worker, positions]


def check_batch_size(shards: Shards, batch_size: int) -> int:
    """``batch_size`` as an int, or a ConfigError if it is < 1 or exceeds a shard."""
    batch_size = _validate.count(batch_size, "batch_size")
    smallest = int(shards.lengths.min())
    if batch_size > smallest:
        raise ConfigError(f"batch_size ({batch_size}) exceeds the smallest shard "
                          f"({smallest} examples); use a smaller batch or fewer workers")
    return int(batch_size)
