"""The problem protocol: an objective plus what the lab needs around it."""

from __future__ import annotations

import collections
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from .._errors import ConfigError
from .._oracle import Oracle, additive_noise

Array = jax.Array


#: η for problems that declare none (the analytic surfaces, tuned on Beale).
LEARNING_RATE = 1e-3


class Recording(NamedTuple):
    """What a problem records beside its loss, and what a record costs.

    The engine reads these to space a run's records (a record of a data problem
    evaluates examples; its gradient steps read batches) and to estimate a run's memory
    before any work. A problem whose loss is a closed form (the surfaces) leaves the
    costs at 0.

    Attributes:
      metrics: the names ``Problem.evaluate`` returns (``("validation_loss",
        "accuracy")`` for a classifier), recorded at every record.
      examples: the examples one record evaluates (the training-loss subset and the
        validation set).
      batch_size: the examples one local step's gradient reads.
      example_bytes: bytes of the values one example's forward pass computes.
      chunk: the examples a record evaluates at once.
    """

    metrics: tuple[str, ...] = ()
    examples: int = 0
    batch_size: int = 0
    example_bytes: int = 0
    chunk: int = 0


class WorkerShards(NamedTuple):
    """How a data problem's training examples are dealt out to its workers.

    Worker ``k`` reads shard ``k mod workers``; :meth:`Problem.for_workers` deals them
    out again for another worker count.

    Attributes:
      sharding: the rule that dealt them (a :class:`~asynclab.problems.Sharding`).
      workers: the number of shards.
      lengths: ``(workers,)``, the examples of each shard.
      histograms: ``(workers, classes)``, how many examples of each class each shard
        holds; None where the labels are not classes.
      reshard: ``reshard(n) -> dict``, the problem's fields (``batch``, ``oracle``,
        ``shards``) for ``n`` shards.
    """

    sharding: Any
    workers: int
    lengths: np.ndarray
    histograms: np.ndarray | None
    reshard: Callable[[int], dict]


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

    Build one with :func:`~asynclab.problems.from_loss` (a loss over parameters) or
    :func:`~asynclab.problems.from_model` (a model, its parameters and a data set).

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
        problem's ``batch_size``), used where a run does not give them; see
        :attr:`learning_rate`.
      recording: what a record holds and costs (a :class:`Recording`).
      shards: how the training examples are dealt out to workers (a
        :class:`WorkerShards`), or None for a problem that is not sharded.
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
    recording: Recording = Recording()
    shards: WorkerShards | None = None

    @property
    def learning_rate(self) -> float:
        """η for a run that gives none: the problem's tuned value, else
        ``LEARNING_RATE``."""
        return float((self.defaults or {}).get("learning_rate", LEARNING_RATE))

    @property
    def is_surface(self) -> bool:
        """Whether the problem has a known minimum and a success test."""
        return self.minima is not None and self.success_radius is not None

    @property
    def flat(self) -> bool:
        """Whether the parameters are one vector (paths and ``--start`` need it)."""
        return isinstance(self.start, np.ndarray | jax.Array) and self.start.ndim == 1

    @property
    def global_minimum(self) -> np.ndarray:
        if self.minima is None:
            raise ConfigError(f"problem {self.name!r} has no known minimum")
        return self.minima[0]

    def for_workers(self, workers: int) -> Problem:
        """This problem for a run of ``workers`` workers.

        A sharded problem (``shards`` not None) deals its training examples out to
        ``workers`` shards, with the same rule and seed (the same shards as building it
        for ``workers``); every other field stays as it is. An unsharded problem, or one
        already cut into ``workers`` shards, is returned itself. The same problem and
        count give the same object (the engine caches compilations by problem).

        ``asynclab.run`` and ``asynclab.sweep`` call it with the run's worker count;
        call it yourself before :func:`~asynclab.replay` or a device executor.

        Raises:
          ConfigError: ``workers`` is not an integer >= 1, or the shards do not fit
            (more workers than examples, a shard smaller than a batch).
        """
        workers = _validate.count(workers, "workers")
        if self.shards is None or self.shards.workers == workers:
            return self
        key = (id(self), workers)
        if key in _FOR_WORKERS:
            _FOR_WORKERS.move_to_end(key)
            return _FOR_WORKERS[key][1]
        fields = self.shards.reshard(workers)
        if self.info is not None and "workers" in self.info:
            fields["info"] = {**self.info, "workers": workers}
        problem = self._replace(**fields)
        _FOR_WORKERS[key] = (self, problem)  # ``self`` kept: its id is not reused
        if len(_FOR_WORKERS) > _FOR_WORKERS_KEPT:
            _FOR_WORKERS.popitem(last=False)
        return problem

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
        if self.box is None:
            raise ConfigError(f"init: {self.name} has no box and no init for random starts;"
                              " build it with box= (from_loss) or init= (from_model)")
        low, high = (jnp.asarray(b, jnp.float32) for b in self.box)
        shape = (self.dim,) if n is None else (n, self.dim)
        return jax.random.uniform(key, shape, jnp.float32, low, high)


#: (id(problem), workers) -> (problem, the problem for that many workers), most recent last
_FOR_WORKERS: collections.OrderedDict = collections.OrderedDict()
_FOR_WORKERS_KEPT = 64


def _no_batch(worker, step):
    del worker, step
    return ()


# ----------------------------------------------------------------------------- checks


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def float_params(params, field: str):
    """``params`` as host ``float32`` arrays: a flat vector (a list or tuple of numbers,
    or a 1-D float array) or any pytree of float arrays, its structure kept.

    Raises:
      ConfigError: no leaves, or a leaf that is not a float array or a number.
    """
    if isinstance(params, list | tuple) and params and all(
            _is_number(v) or (isinstance(v, np.ndarray | np.number) and np.ndim(v) == 0
                              and np.asarray(v).dtype.kind in "fiu") for v in params):
        params = np.asarray(params, np.float64)
    leaves = jax.tree_util.tree_leaves_with_path(params)
    if not leaves:
        raise ConfigError(f"{field}: the parameters have no arrays; give a float array or a "
                          "pytree (dict, list, module) of float arrays")
    for path, leaf in leaves:
        where = f"{field}{jax.tree_util.keystr(path)}"
        if _is_number(leaf):
            continue
        kind = getattr(getattr(leaf, "dtype", None), "kind", None)
        if not hasattr(leaf, "shape") or kind != "f":
            what = f"dtype {leaf.dtype}" if kind is not None else type(leaf).__name__
            raise ConfigError(f"{where}: parameters must be float arrays, got {what}")
        if not np.all(np.isfinite(np.asarray(leaf, np.float32))):
            raise ConfigError(f"{where}: parameters must be finite in float32")
    return jax.tree.map(lambda leaf: np.asarray(leaf, np.float32), params)


def parameter_count(params) -> int:
    """The number of scalars in a params pytree."""
    return int(sum(np.size(leaf) for leaf in jax.tree.leaves(params)))


def check_scalar(function, args, field: str, what: str) -> None:
    """``function(*args)`` (traced, nothing computed) is a float scalar, or a ConfigError
    naming ``field``."""
    try:
        out = jax.eval_shape(function, *args)
    except ConfigError:
        raise
    except Exception as error:  # the user's function: whatever it raises, name it
        raise ConfigError(f"{field}: calling it on {what} raised {type(error).__name__}: "
                          f"{error}") from None
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if shape != () or getattr(dtype, "kind", None) != "f":
        raise ConfigError(f"{field}: must return a float scalar, got "
                          f"{_describe(out)} on {what}")


def _describe(out) -> str:
    if hasattr(out, "shape") and hasattr(out, "dtype"):
        return f"shape {tuple(out.shape)} of {out.dtype}"
    return f"a {type(out).__name__}"


def _box(box, start, field: str = "box"):
    """``(low, high)`` broadcast to a flat ``start``'s shape (float32), low < high."""
    try:
        low, high = box
        low, high = (np.broadcast_to(np.asarray(b, np.float32), start.shape).copy()
                     for b in (low, high))
    except (TypeError, ValueError):
        raise ConfigError(f"{field} must be (low, high), numbers or arrays of the start's "
                          f"shape {start.shape}, got {box!r}") from None
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(low < high)):
        raise ConfigError(f"{field}: low must be below high, both finite, got {box!r}")
    return low, high


def _uniform_init(low: float, high: float):
    """``init(key)`` of a pytree start: each leaf uniform in ``[low, high)`` from its own
    ``fold_in(key, leaf index)``."""

    def init(key, like):
        leaves, treedef = jax.tree.flatten(like)
        return jax.tree.unflatten(treedef, [
            jax.random.uniform(jax.random.fold_in(key, i), np.shape(leaf), jnp.float32,
                               low, high) for i, leaf in enumerate(leaves)])

    return init


def from_loss(loss: Callable, start, *, box=None, minima=None,
              success_radius: float | None = None, domain=None, name: str | None = None,
              learning_rate: float | None = None) -> Problem:
    """A problem from a loss over parameters: ``loss(params) -> scalar``.

    The gradient oracle is the loss's exact gradient plus additive Gaussian noise of the
    variance σ² each run gives (``noise=``), drawn from the run's seed, the worker and
    the step (:func:`~asynclab.problems.additive_noise`).

    Args:
      loss: a JAX function of the parameters returning a float scalar.
      start: the fixed starting point: a flat vector (a list of numbers or a 1-D float
        array) or any pytree of float arrays (a dict of layers, an Equinox module's
        arrays); float32 from here on.
      box: ``(low, high)`` for random starts (``init="random"``): numbers or arrays of
        the start's shape for a flat vector, numbers for a pytree (every leaf uniform in
        ``[low, high)``). None: the problem has only its fixed start.
      minima: known minima, ``(k, dim)`` (flat vectors only); the first is the one the
        success test measures from.
      success_radius: a run succeeds when its centre ends within this distance of the
        first minimum (needs ``minima``); None: no success test.
      domain: the plotting window ``((xmin, xmax), (ymin, ymax))`` of a 2-D problem.
      name: the problem's name (default: the loss function's name).
      learning_rate: η for runs that give none (default: 1e-3).

    Returns:
      A :class:`Problem` (not sharded, nothing recorded beside the loss).

    Raises:
      ConfigError: the loss does not return a float scalar on ``start``, ``start`` is
        not a pytree of float arrays, or an option does not fit it.

    Example:
      >>> import jax.numpy as jnp
      >>> from asynclab.problems import from_loss
      >>> bowl = from_loss(lambda p: jnp.sum((p - 1.0) ** 2), [0.0, 0.0],
      ...                  box=(-2.0, 2.0), minima=[[1.0, 1.0]], success_radius=0.1,
      ...                  name="bowl")
      >>> bowl.dim
      2
    """
    if not callable(loss):
        raise ConfigError(f"loss must be a function params -> scalar, got {loss!r}")
    start = float_params(start, "start")
    flat = isinstance(start, np.ndarray) and start.ndim == 1
    check_scalar(loss, (start,), "loss", "the start")
    dim = parameter_count(start)
    init = None
    if box is not None:
        if flat:
            box = _box(box, start)
        else:
            if not (isinstance(box, tuple | list) and len(box) == 2
                    and all(_is_number(b) for b in box)):
                raise ConfigError(f"box: a pytree start takes (low, high) numbers, got "
                                  f"{box!r}")
            low, high = (float(b) for b in box)
            if not (np.isfinite(low) and np.isfinite(high) and low < high):
                raise ConfigError(f"box: low must be below high, both finite, got {box!r}")
            uniform = _uniform_init(low, high)
            init = lambda key: uniform(key, start)  # noqa: E731
            box = None
    if minima is not None:
        if not flat:
            raise ConfigError("minima: known minima need a flat vector of parameters")
        try:
            minima = np.atleast_2d(np.asarray(minima, np.float32))
        except (TypeError, ValueError):
            raise ConfigError(f"minima must be numbers, (k, {dim}), got {minima!r}") from None
        if minima.ndim != 2 or minima.shape[1] != dim:
            raise ConfigError(f"minima must have shape (k, {dim}), got {minima.shape}")
    if success_radius is not None:
        if minima is None:
            raise ConfigError("success_radius: a success test needs the known minima "
                              "(minima=)")
        success_radius = _validate.number(success_radius, "success_radius", low=0,
                                          low_open=True)
    if domain is not None:
        if not flat or dim != 2:
            raise ConfigError(f"domain: a plotting window is for 2-D parameters, these "
                              f"have {dim}")
        try:
            (x0, x1), (y0, y1) = domain
            ok = all(np.isfinite(v) for v in (x0, x1, y0, y1)) and x0 < x1 and y0 < y1
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ConfigError(f"domain must be ((xmin, xmax), (ymin, ymax)), finite and "
                              f"increasing, got {domain!r}")
    if name is None:
        name = getattr(loss, "__name__", "loss")
        name = "loss" if name == "<lambda>" else name
    if not isinstance(name, str) or not name:
        raise ConfigError(f"name must be a non-empty string, got {name!r}")
    defaults = None
    if learning_rate is not None:
        defaults = {"learning_rate": _validate.number(learning_rate, "learning_rate", low=0,
                                                      low_open=True)}
    return Problem(
        name=name,
        dim=dim,
        loss=loss,
        batch_loss=lambda params, batch: loss(params),
        batch=_no_batch,
        start=start,
        box=box,
        domain=domain,
        minima=minima,
        success_radius=success_radius,
        init=init,
        defaults=defaults,
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
