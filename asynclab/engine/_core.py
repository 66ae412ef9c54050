"""The executor core: what the replay, the device executor and the threads backend share.

Row gather and scatter on the stacked worker axis, the divergence guard, the loss record,
seeds → keys, the initial state, the checks of a rule against its traces, and the run's
configuration record. Every executor uses these, so the same rule, trace and seed give
the same numbers (and the same errors) everywhere.
"""

from __future__ import annotations

import functools
import math
import types
import warnings
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import _names, _random, _validate
from .._errors import ConfigError
from ..cluster import RoundTrace, Trace
from ..problems import Problem
from ..rules import Rule

#: How a run's starting point is chosen.
INITS = _names.INITS


# ----------------------------------------------------------------------------- pytrees


def row(tree, i):
    """Row ``i`` of every leaf (one worker's state out of the stacked workers)."""
    return jax.tree.map(lambda x: x[i], tree)


def put_row(tree, i, new):
    """``tree`` with row ``i`` of every leaf replaced by ``new``; ``i`` must be a row.

    One dynamic update slice per leaf, also under ``vmap`` over runs that share ``i``
    (:func:`_row_writer`)."""
    return jax.tree.map(lambda x, r: _row_writer(0)(x, i, r), tree, new)


@functools.cache
def _row_writer(axis: int):
    """``(x, i, r) ->`` ``x`` with entry ``i`` of axis ``axis`` replaced by ``r``.

    ``vmap`` of a dynamic update slice is a scatter, which XLA compiles to a select that
    reads the old entry first (it drops an update out of bounds): on a net, one more pass
    over a worker's parameters per event. Where the runs share ``i`` (one schedule for
    the batch), this writes the entry of every run with one dynamic update slice of the
    next axis instead; an ``i`` of its own per run keeps the scatter.
    """

    def plain(x, i, r):
        return jax.lax.dynamic_update_index_in_dim(x, r, i, axis)

    write = jax.custom_batching.custom_vmap(plain)

    @write.def_vmap
    def write_batched(axis_size, in_batched, x, i, r):
        x_batched, i_batched, r_batched = in_batched
        if i_batched:
            return jax.vmap(plain, in_axes=(0 if x_batched else None, 0,
                                            0 if r_batched else None))(x, i, r), True
        if not x_batched:
            x = jnp.broadcast_to(x, (axis_size,) + x.shape)
        if not r_batched:
            r = jnp.broadcast_to(r, (axis_size,) + r.shape)
        return _row_writer(axis + 1)(x, i, r), True

    return write


def select(keep, new, old):
    """``new`` where ``keep`` else ``old``, leaf by leaf."""
    return jax.tree.map(lambda a, b: jnp.where(keep, a, b), new, old)


def all_finite(tree) -> jax.Array:
    """Whether every element of every leaf is finite."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


# ----------------------------------------------------------------------------- compiling

#: XLA options for the executors' compiled programs on a CPU. By default XLA's CPU
#: backend hands reductions (a mean over the workers, a sum over a mini-batch) to its
#: YNNPACK library, whose sums came out differently with the number of rows, i.e. with
#: how many seeds (or sweep points) share a launch: a seed's numbers changed in the last
#: bits with the batch it was replayed in. XLA's own reduction loops keep a seed's run the
#: same in the tested workloads (``tests/test_launch_size.py``) and were also the faster
#: here (``benchmarks/replay.py``, row (j)). Matrix products stay with the library
#: (``INDIVIDUAL_DOT``, the other default type). Read-only: the compiled programs' caches
#: do not key on it.
CPU_COMPILER_OPTIONS = types.MappingProxyType(
    {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"})


@functools.cache
def _options_supported(options: tuple) -> bool:
    """Whether this XLA accepts ``options`` (an experimental flag may go away): False, with
    a warning, when it refuses them as an invalid argument; any other failure is raised."""
    try:
        jax.jit(lambda x: x + 1, compiler_options=dict(options)).lower(
            np.float32(0)).compile()
    except jax.errors.JaxRuntimeError as error:
        if "INVALID_ARGUMENT" not in str(error):
            raise
        warnings.warn(f"this XLA refuses the compile options {dict(options)} ({error}); "
                      "compiling without them, so a seed's numbers may depend on how many "
                      "seeds share its replay", RuntimeWarning, stacklevel=2)
        return False
    return True


def compiler_options(platform: str | None = None) -> dict:
    """The options every executor compiles with for ``platform`` (default: JAX's default
    backend): :data:`CPU_COMPILER_OPTIONS` on a CPU where this XLA accepts them, else none."""
    platform = jax.default_backend() if platform is None else platform
    if platform != "cpu" or not CPU_COMPILER_OPTIONS:
        return {}
    options = tuple(sorted(CPU_COMPILER_OPTIONS.items()))
    return dict(options) if _options_supported(options) else {}


# ----------------------------------------------------------------------------- divergence


def recorded_loss(loss, center, diverged_at, last_index, limit=None):
    """``(value, diverged_at)``: the central loss recorded at the end of a block.

    A loss that is not finite, or whose size exceeds ``limit`` (a run's divergence bound,
    :func:`divergence_limit`), marks the run as diverged at the block's last event; a
    diverged run records NaN.
    """
    return loss_record(loss(center), diverged_at, last_index, limit)


#: The default divergence bound: a run whose recorded loss exceeds this many times
#: max(1, |its initial loss|) is reported as diverged (``diverged_above``).
DIVERGED_ABOVE = 1e6


def divergence_limit(initial_loss, diverged_above):
    """A run's divergence bound: ``diverged_above × max(1, |initial loss|)``, in float32;
    infinite where ``diverged_above`` is (only a non-finite loss then diverges) or where
    the initial loss is not finite."""
    initial = jnp.abs(jnp.asarray(initial_loss, jnp.float32))
    limit = jnp.asarray(diverged_above, jnp.float32) * jnp.maximum(jnp.float32(1), initial)
    return jnp.where(jnp.isfinite(initial), limit, jnp.float32(jnp.inf))


def loss_record(value, diverged_at, last_index, limit=None):
    """:func:`recorded_loss` from the loss ``value`` already computed."""
    bad = ~jnp.isfinite(value)
    if limit is not None:
        bad = bad | (jnp.abs(value) > limit)
    fresh = (diverged_at < 0) & bad
    diverged_at = jnp.where(fresh, last_index, diverged_at)
    return jnp.where(diverged_at >= 0, jnp.nan, value).astype(value.dtype), diverged_at


# ----------------------------------------------------------------------------- records

#: The most records a run makes by default (its initial state's included).
RECORDS = 100

#: The share of a run's gradient work that its records may cost at most, by default.
RECORD_SHARE = 0.25


def default_record_every(rule: Rule, problem: Problem, n_events: int, n_workers: int) -> int:
    """Events between two records when a run does not say: about :data:`RECORDS`
    records, and fewer where each record is dear next to the run's gradient work.

    A data problem's record evaluates ``problem.recording.examples`` examples (the
    training-loss subset and the validation set); an event costs about three passes
    (forward and backward) over λ mini-batches of ``recording.batch_size`` for each
    worker it runs. The records then cost at most :data:`RECORD_SHARE` of the gradient
    work (``benchmarks/nets.py`` measures the default against one record at the end).
    """
    records = RECORDS
    costs = problem.recording
    if costs.examples and costs.batch_size:
        workers = n_workers if rule.synchronous else rule.group_size
        per_event = 3 * costs.batch_size * rule.local_steps * workers
        affordable = RECORD_SHARE * n_events * per_event / costs.examples
        records = max(2, min(records, int(affordable) + 1))
    return max(1, math.ceil(n_events / (records - 1)))


# ----------------------------------------------------------------------------- seeds, state


def seed_keys(seed, n_workers: int):
    """The keys of one seed: ``(init_key, worker_keys)``, ``worker_keys`` of shape ``(n,)``.

    Worker k's step s draws its noise from ``fold_in(worker_keys[k], s)`` (see
    ``asynclab.rules.parts.local_work``). Every executor derives its keys here, so the
    same seed gives the same numbers on every backend.
    """
    key = jax.random.key(seed)
    if _random._fast(key):
        # split(key) is [fold_in(key, 0), fold_in(key, 1)] for partitionable Threefry;
        # the fused hash compiles in a fraction of the time of jax.random's rolled loop
        init_key, noise_key = _random.fold_in(key, 0), _random.fold_in(key, 1)
        fold = _random.fold_in
    else:
        init_key, noise_key = jax.random.split(key)
        fold = jax.random.fold_in
    workers = jax.vmap(lambda w: fold(noise_key, w))(jnp.arange(n_workers))
    return init_key, workers


@functools.partial(jax.jit, static_argnums=1)
def seed_keys_batch(seeds, n_workers: int):
    """:func:`seed_keys` of every seed in ``seeds`` (``uint32[S]``), compiled once per
    ``(S, n_workers)``: ``(init_keys[S], worker_keys[S, n])``."""
    return jax.vmap(lambda s: seed_keys(s, n_workers))(seeds)


def seed_key_data(seeds, n_workers: int):
    """The key data of :func:`seed_keys` for every seed of ``seeds``: NumPy arrays
    ``(init[S, k], workers[S, n, k])`` (``k`` 2 for Threefry), which a compiled program
    wraps back into keys (``jax.random.wrap_key_data``).

    For JAX's default keys (partitionable Threefry-2x32) they are hashed on the host, the
    same bits (tested), so that a program that takes them compiles no hash; for any other
    key they come from :func:`seed_keys_batch`.
    """
    seeds = np.asarray(seeds, np.uint32).reshape(-1)
    if (jax.config.jax_default_prng_impl == "threefry2x32"
            and jax.config.jax_threefry_partitionable):
        # key(s) is [0, s]; split(key) is [fold_in(key, 0), fold_in(key, 1)]
        key = np.stack([np.zeros_like(seeds), seeds], axis=-1)
        init, noise = _random.fold_in_host(key, 0), _random.fold_in_host(key, 1)
        workers = _random.fold_in_host(noise[:, None, :], np.arange(n_workers)[None, :])
        return init, workers
    init, workers = seed_keys_batch(jnp.asarray(seeds), n_workers)
    return np.asarray(jax.random.key_data(init)), np.asarray(jax.random.key_data(workers))


def _broadcast(tree, n: int):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), tree)


def initial_state(rule: Rule, problem: Problem, init_key, n_workers: int, init: str = "start",
                  count=None):
    """``(server, workers)`` at the start of a run; workers stacked on a leading axis.

    ``count``: the run's number of workers where ``n_workers`` is a padded worker axis
    (a traced integer; None: all ``n_workers``). Per-worker starts are drawn for the
    whole axis, of which the first ``count`` rows are the run's own (a draw of shape
    ``(n, d)`` is the first rows of one of shape ``(N, d)``), and the centre is their
    mean (the padding's rows replaced by zeros in the sum: the same bits).
    """
    if init == "start":
        center = problem.initial_params()
        starts = _broadcast(center, n_workers)
    elif init == "random":
        center = problem.initial_params(init_key)
        starts = _broadcast(center, n_workers)
    else:  # random_per_worker
        starts = problem.initial_params(init_key, n_workers)
        if count is None:
            center = jax.tree.map(lambda x: jnp.mean(x, axis=0), starts)
        else:
            def mean(x):
                real = (jnp.arange(n_workers) < count).reshape((-1,) + (1,) * (x.ndim - 1))
                total = jnp.sum(jnp.where(real, x, jnp.zeros_like(x)), axis=0)
                return total / jnp.asarray(count, total.dtype)

            center = jax.tree.map(mean, starts)
    server = rule.init_server(center)
    workers = jax.vmap(rule.init_worker, in_axes=(0, None))(starts, server)
    return server, workers


# ----------------------------------------------------------------------------- traces


def event_arrays(traces: Sequence[Trace | RoundTrace], synchronous: bool):
    """``(time, worker, staleness)``, each ``(Tr, T)``, from checked traces of possibly
    different lengths, padded to the longest: padding repeats the last time and has
    staleness -1; a synchronous event has worker -1 (every worker) and staleness 0."""
    length = max(t.n_events for t in traces)
    time = np.zeros((len(traces), length))
    worker = np.full((len(traces), length), -1, np.int32)
    staleness = np.full((len(traces), length), -1, np.int32)
    for i, t in enumerate(traces):
        m = t.n_events
        time[i, :m] = t.time
        time[i, m:] = t.time[-1] if m else 0.0
        if not synchronous:
            worker[i, :m] = t.worker
            staleness[i, :m] = t.staleness
        else:
            staleness[i, :m] = 0
    return time, worker, staleness


# ----------------------------------------------------------------------------- checks


def check_rule(rule, problem, executor: str) -> None:
    """A rule from :mod:`asynclab.rules` and a :class:`~asynclab.problems.Problem`."""
    if not isinstance(rule, Rule):
        raise ConfigError(f"{executor} runs rules from asynclab.rules, got {rule!r}")
    if not isinstance(problem, Problem):
        raise ConfigError(f"problem must be an asynclab.problems.Problem, got {problem!r}")


def check_init(rule: Rule, init: str) -> None:
    """``init`` is one of :data:`INITS`, and per-worker starts need a synchronous rule."""
    if init not in INITS:
        raise ConfigError(f"unknown init {init!r}; choose one of {', '.join(INITS)}")
    if init == "random_per_worker" and not rule.synchronous:
        raise ConfigError(
            f"init='random_per_worker' needs a synchronous rule; {rule.name} workers "
            "start by pulling the centre"
        )


def check_traces(rule: Rule, traces: Sequence[Trace | RoundTrace]) -> int:
    """The traces fit the rule (kind, λ, group size, events, one worker count).

    Returns:
      The traces' number of workers.
    """
    kind = RoundTrace if rule.synchronous else Trace
    for trace in traces:
        if not isinstance(trace, kind):
            raise ConfigError(
                f"a {'synchronous' if rule.synchronous else 'asynchronous'} rule "
                f"({rule.name}) replays a {kind.__name__}, got {type(trace).__name__}"
            )
    if any(t.n_events == 0 for t in traces):
        raise ConfigError("the trace has no events; give a positive budget")
    group_size = rule.group_size
    for trace in traces:
        if trace.local_steps != rule.schedule_steps:
            raise ConfigError(
                f"the trace was scheduled for local_steps={trace.local_steps} but the rule "
                f"{rule.name} takes local_steps={rule.schedule_steps}"
            )
        if getattr(trace, "group_size", 1) != group_size:  # RoundTraces have no groups
            raise ConfigError(
                f"the trace was scheduled for groups of {getattr(trace, 'group_size', 1)} "
                f"but the rule {rule.name} takes group_size={group_size}"
            )
    n_workers = {t.n_workers for t in traces}
    if len(n_workers) != 1:
        raise ConfigError(f"traces replayed together must have one worker count, got {n_workers}")
    n = n_workers.pop()
    if rule.synchronous:
        _check_rounds(rule, traces, n)
    return n


#: the most workers a semi-synchronous round can hold: who counted travels as one bit per
#: worker in the (otherwise unused) worker entry of a round's event, an int32
MASK_WORKERS = 32



def _check_rounds(rule: Rule, traces: Sequence[RoundTrace], n_workers: int) -> None:
    """Round traces replayed together are all plain or all semi-synchronous with one
    ``late``; a semi-synchronous one fits the mask and the rule."""
    for t in traces:
        if t.counted is not None and t.late not in ("discard", "stale"):
            raise ConfigError(f"a semi-synchronous trace (with counted) must say what became "
                              f"of late work: late='discard' or 'stale', got {t.late!r}")
    modes = {t.late if t.counted is not None else None for t in traces}
    if len(modes) != 1:
        raise ConfigError("traces replayed together must all be plain rounds or all "
                          "semi-synchronous with one late mode, got "
                          + ", ".join(sorted(str(m) for m in modes)))
    late = modes.pop()
    if late is None:
        return
    for t in traces:
        counted = np.asarray(t.counted)
        if counted.dtype != bool or counted.shape != (t.n_events, t.n_workers):
            raise ConfigError(f"a semi-synchronous trace's counted must be bool (rounds, "
                              f"workers) = {(t.n_events, t.n_workers)}, got "
                              f"{counted.dtype} {counted.shape}")
    if n_workers > MASK_WORKERS:
        raise ConfigError(f"semi-synchronous rounds replay at most {MASK_WORKERS} workers "
                          f"(who counted is a 32-bit mask per round), got {n_workers}")
    if rule.warmup_rounds:
        raise ConfigError(f"{rule.name}'s warm-up rounds do not combine with "
                          "semi-synchronous rounds")
    check_late(rule, late)


def check_late(rule: Rule, late: str | None) -> None:
    """Late work that counts stale (``late="stale"``) needs a rule whose workers reset to
    the centre at a pull (``rule.capabilities.resets``), so that a late commit is an
    update θᵏ − θ̃_pull that can be added to a newer centre."""
    if late == "stale" and not rule.capabilities.resets:
        raise ConfigError(f"late='stale' needs a rule whose workers reset to the centre at a "
                          f"pull (a late commit is then an update θᵏ − θ̃_pull); {rule.name}'s "
                          "do not")


def round_masks(traces: Sequence[RoundTrace], length: int) -> np.ndarray:
    """int32 ``(Tr, length)``: per round, bit k set where worker k counted (0 past a
    trace's end); a plain round has every worker's bit."""
    out = np.zeros((len(traces), length), np.uint32)
    for i, t in enumerate(traces):
        counted = np.asarray(t.counted, bool)
        bits = np.left_shift(np.uint32(1), np.arange(t.n_workers, dtype=np.uint32))
        out[i, :t.n_events] = np.bitwise_or.reduce(np.where(counted, bits, np.uint32(0)),
                                                   axis=1)
    return out.view(np.int32)


def check_count(name: str, value, top: int | None = None) -> int:
    """``value`` as an int, which must be an integer >= 1 (and <= ``top``)."""
    return _validate.count(value, name, high=top)


# ----------------------------------------------------------------------------- config


def run_config(rule: Rule, problem: Problem, /, *, workers: int, seeds, noise: float,
               init: str, **more) -> dict:
    """The configuration a result records: rule, problem, workers, seeds, noise, init, and
    whatever the executor adds or overrides (``more``)."""
    return {"rule": rule.name, "synchronous": rule.synchronous,
            "hyperparameters": dict(rule.hyperparameters), "problem": problem.name,
            "dim": problem.dim, "workers": int(workers),
            "seeds": [int(s) for s in seeds], "noise": float(noise), "init": init, **more}
