"""Trace replay: ``lax.scan`` over the events of a trace, ``vmap`` over seeds.

The scan carries the server state and every worker's state stacked on a leading worker
axis. An asynchronous event gathers the committing worker's state, runs its local work
lazily (exact, since a worker's local work depends only on its own state since its last
pull), applies the exchange and scatters the worker back. A synchronous event is a round:
local work and synchronisation for all workers under ``vmap(axis_name="workers")``.

Events are replayed in chunks of equal shape (one compilation), so a long run shows a
progress bar and stops early once every seed has diverged.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .. import _validate
from .._errors import ConfigError
from .._programs import Programs
from .._progress import note, progress_bar
from ..cluster import RoundTrace, Trace
from ..problems import Problem, stochastic_gradient
from ..problems._problem import check_noise
from ..rules import AXIS, RULES, Rule
from ._core import (
    INITS,
    all_finite,
    check_init,
    check_traces,
    compiler_options,
    default_record_every,
    event_arrays,
    initial_state,
    put_row,
    recorded_loss,
    row,
    run_config,
    seed_keys,
    seed_keys_batch,
    select,
)
from ._result import Result


class Carry(NamedTuple):
    """What the scan carries for one seed.

    Attributes:
      server, workers: the rule's states (workers stacked on a leading axis).
      diverged_at: the event at which the centre first became non-finite, -1 if none.
      stopped: whether the run has ended: it diverged, or its trace ran out (the padding
        events after a shorter trace's end). The states run on past that point, where
        nothing reads them.
      center: the centre the run ended with (its last finite one), once ``stopped``;
        :func:`reported_center` reads it.
    """

    server: object
    workers: object
    diverged_at: jax.Array
    stopped: jax.Array
    center: object


def _stepped(carry: Carry, server, workers, active, index) -> tuple[Carry, jax.Array]:
    """An event's result and the divergence guard, for one seed: ``(carry, stop)``.

    A live event (real, and the run not ended) whose centre is not finite marks the run
    as diverged there. ``stop`` is true at the event that ends the run (the first that
    diverges or is padding): the caller then keeps the centre from before it
    (:func:`_keep_centers`). No select over the states: they run on.
    """
    running = ~carry.stopped
    finite = all_finite(server.center)
    stop = running & (~active | ~finite)
    diverged_at = jnp.where(running & active & ~finite, index, carry.diverged_at)
    return carry._replace(server=server, workers=workers, diverged_at=diverged_at,
                          stopped=carry.stopped | stop), stop


def _batched_select(keep, new, old):
    """``new`` where ``keep`` else ``old``, per batch element (leading axis)."""
    def leaf(a, b):
        return jnp.where(keep.reshape(keep.shape + (1,) * (a.ndim - keep.ndim)), a, b)

    return jax.tree.map(leaf, new, old)


def _keep_centers(before: Carry, after: Carry, stop) -> Carry:
    """``after``, keeping ``before``'s centre for the runs that stop at this event.

    On a batch of runs, the select over the centres happens only at an event where one
    of them stops (``lax.cond`` on the whole batch): once per run, not at every event.
    """
    center = jax.lax.cond(jnp.any(stop),
                          lambda: _batched_select(stop, before.server.center, before.center),
                          lambda: before.center)
    return after._replace(center=center)


def reported_center(carry: Carry):
    """The centre a run reports: the server's while it runs, the kept one once ended."""
    return _batched_select(carry.stopped, carry.center, carry.server.center)


def _commit(rule, gradient):
    """One commit of one seed, also returning the exchange's
    :class:`~asynclab.rules.ExchangeInfo`: ``(carry, stop, local params, info)``."""

    def commit(carry: Carry, worker_keys, worker_id, active, index):
        before = row(carry.workers, worker_id)
        worker = rule.local(before, gradient, worker_keys[worker_id], worker_id)
        server, worker_after, info = rule.exchange(carry.server, worker)
        workers = put_row(carry.workers, worker_id, worker_after)
        carry, stop = _stepped(carry, server, workers, active, index)
        return carry, stop, worker.params, info

    return commit


def asynchronous_event(rule, gradient):
    """One commit: local work of the committing worker, then its exchange."""
    commit = _commit(rule, gradient)

    def event(carry: Carry, worker_keys, worker_id, active, index):
        carry, stop, params, _ = commit(carry, worker_keys, worker_id, active, index)
        return carry, stop, params

    return event


def synchronous_event(rule, gradient, n_workers):
    """One round: every worker's local work, then the collective synchronisation."""
    ids = jnp.arange(n_workers, dtype=jnp.int32)

    def one_worker(server, worker, key, worker_id):
        worker = rule.local(worker, gradient, key, worker_id)
        server, worker_after, _ = rule.exchange(server, worker)
        return server, worker_after, worker.params

    all_workers = jax.vmap(one_worker, in_axes=(None, 0, 0, 0), out_axes=(None, 0, 0),
                           axis_name=AXIS)

    def event(carry: Carry, worker_keys, worker_id, active, index):
        del worker_id
        server, workers, local_params = all_workers(carry.server, carry.workers, worker_keys, ids)
        carry, stop = _stepped(carry, server, workers, active, index)
        return carry, stop, local_params

    return event


def chunk_runner(event, loss, record_paths: bool, evaluate=None, unroll: int = 1,
                 shared: bool = True):
    """A function replaying ``(blocks, k)`` events of a batch of runs and recording after
    every block: the central loss, with ``evaluate`` the centre's metrics (a dict), with
    ``record_paths`` the centre and the workers' local parameters.

    ``event(carry, worker_keys, worker_id, active, index, values)`` is one event of one
    run; the loop over events runs outside its ``vmap`` over the batch, so that the
    divergence guard's select happens only where a run stops (:func:`_keep_centers`).
    ``shared``: one event sequence for the batch (else one per batch element, ``(B,
    blocks, k)``). ``unroll``: events per iteration of the compiled loop
    (``lax.scan(unroll=...)``; the same arithmetic per event).
    """
    axis = None if shared else 0
    per_run = jax.vmap(event, in_axes=(0, 0, axis, axis, axis, 0))
    record = jax.vmap(lambda c, d, i: recorded_loss(loss, c, d, i), in_axes=(0, 0, axis))

    def chunk(carry: Carry, worker_keys, events, values):
        if not shared:  # (B, blocks, k) -> (blocks, k, B): the loops slice leading axes
            events = tuple(jnp.moveaxis(a, 0, -1) for a in events)

        def block(carry, block_events):
            def step(carry, e):
                after, stop, path = per_run(carry, worker_keys, *e, values)
                return _keep_centers(carry, after, stop), (path if record_paths else None)

            carry, paths = jax.lax.scan(step, carry, block_events,
                                        unroll=min(unroll, block_events[0].shape[0]))
            center = reported_center(carry)
            value, diverged_at = record(center, carry.diverged_at, block_events[2][-1])
            # a loss that overflows while the centre is finite ends the run here
            fresh = (diverged_at >= 0) & (carry.diverged_at < 0)
            carry = carry._replace(diverged_at=diverged_at, stopped=carry.stopped | fresh,
                                   center=_batched_select(fresh, center, carry.center))
            metrics = None
            if evaluate is not None:
                gone = carry.diverged_at >= 0
                metrics = {k: jnp.where(gone, jnp.nan, v)
                           for k, v in jax.vmap(evaluate)(center).items()}
            if paths is not None:  # (k, B, ...) -> (B, k, ...)
                paths = jnp.moveaxis(paths, 1, 0)
            return carry, (value, center if record_paths else None, paths, metrics)

        carry, out = jax.lax.scan(block, carry, events)
        # records (blocks, B, ...) -> (B, blocks, ...)
        return carry, jax.tree.map(lambda x: jnp.moveaxis(x, 1, 0), out)

    return chunk


def _initial_carry(rule: Rule, problem: Problem, key, n_workers: int, init: str) -> Carry:
    server, workers = initial_state(rule, problem, key, n_workers, init)
    return Carry(server, workers, jnp.asarray(-1, jnp.int32), jnp.asarray(False),
                 server.center)


#: The mesh axis over which a replay's batch (seeds, grid points) is split.
BATCH_AXIS = "runs"


def replay_devices(devices=None) -> tuple:
    """The devices a replay splits its runs over: ``devices`` checked.

    None: every device of JAX's default backend (this process's, or every process's
    after ``asynclab.backends.initialize``); an int k: the first k of them; a sequence of
    ``jax.Device``: those. A bad value is a ``ConfigError`` naming ``devices``.
    """
    local = jax.devices() if jax.process_count() > 1 else jax.local_devices()
    if devices is None:
        return tuple(local)
    if isinstance(devices, bool):
        raise ConfigError(f"devices must be a count or a list of devices, got {devices!r}")
    if isinstance(devices, int | np.integer):
        if not 1 <= devices <= len(local):
            raise ConfigError(f"devices={devices}: this process has {len(local)} local "
                              f"{local[0].platform} device(s); give 1 to {len(local)}")
        return tuple(local[:int(devices)])
    if isinstance(devices, str) or not isinstance(devices, Sequence) or not devices:
        raise ConfigError(f"devices must be a count or a list of devices, got {devices!r}")
    chosen = tuple(devices)
    unknown = [d for d in chosen if d not in local]
    if unknown:
        raise ConfigError(f"devices: {unknown} are not devices of this run "
                          f"({', '.join(map(str, local))})")
    if len(set(chosen)) != len(chosen):
        raise ConfigError(f"devices: a device is named twice in {list(chosen)}")
    return chosen


@functools.cache
def _mesh(devices: tuple) -> Mesh:
    return Mesh(np.asarray(devices, dtype=object), (BATCH_AXIS,))


def _spans_processes(devices: tuple) -> bool:
    return any(d.process_index != jax.process_index() for d in devices)


def _put(x, devices: tuple, split: bool = True):
    """Host data ``x`` as the input of a replay over ``devices``: as it is on one
    process; across processes a global array (every process holds all of ``x``, as every
    process runs the same replay, and gives its own devices their part)."""
    if not _spans_processes(devices):
        return jnp.asarray(x)
    x = np.asarray(x)
    sharding = NamedSharding(_mesh(devices), PartitionSpec(BATCH_AXIS) if split
                             else PartitionSpec())
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def _host(tree):
    """A replay's output on this host: the whole batch, from every process's part."""
    def leaf(x):
        if getattr(x, "is_fully_addressable", True):
            return np.asarray(x)
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))

    return jax.tree.map(leaf, tree)


def _over_runs(fn, devices: tuple, in_specs, donate=()):
    """``fn`` (over a leading batch axis) jitted, and on several devices a ``shard_map``
    over the batch axis: each device replays its own runs, with no collective between
    them, so a run's numbers do not depend on how many devices share the batch."""
    options = compiler_options(devices[0].platform)
    if len(devices) == 1:
        return jax.jit(fn, donate_argnums=donate, compiler_options=options)
    mesh = _mesh(devices)
    split = PartitionSpec(BATCH_AXIS)
    specs = tuple(split if s else PartitionSpec() for s in in_specs)
    program = jax.shard_map(fn, mesh=mesh, in_specs=specs, out_specs=split, check_vma=False)
    return jax.jit(program, donate_argnums=donate, compiler_options=options)


#: the compiled initial states and chunk replays (studies may replay several
#: configurations from threads at once: each cache builds a key once)
_INITIAL = Programs(32)
_COMPILED = Programs(32)

#: How many times a replay (or its initial state) was traced, by kind; tests read it to
#: prove that new hyperparameter values, seeds or grids do not compile again.
TRACE_COUNT = {"chunk": 0, "initial": 0}


def structure_key(rule: Rule):
    """What a compiled replay of ``rule`` depends on: its declared structure (name and
    static hyperparameters), or the rule object itself for a rule assembled by hand."""
    return ("declared",) + rule.structure if rule.structure is not None else ("object", id(rule))


def with_values(rule: Rule, values) -> Rule:
    """``rule`` rebuilt with traced hyperparameter ``values`` (a dict of arrays or tracers);
    a rule assembled by hand, which has no declaration, is returned as it is."""
    if rule.structure is None or not values:
        return rule
    return RULES[rule.structure[0]].rebuild(rule.structure[1], dict(values), rule.structure[2])


def hyperparameter_values(rule: Rule, batch: int) -> dict:
    """The rule's traced hyperparameters as float32 arrays of shape ``(batch,)``."""
    if rule.structure is None:
        return {}
    return {k: np.full(batch, v, np.float32) for k, v in rule.values.items()}


def _initial_carry_batch(rule, problem, n_workers, init, devices):
    key = (structure_key(rule), id(problem), n_workers, init, devices)

    def build():
        def initial(seed, values):
            TRACE_COUNT["initial"] += 1
            k, worker_keys = seed_keys(seed, n_workers)
            carry = _initial_carry(with_values(rule, values), problem, k, n_workers, init)
            center = carry.center
            metrics = None if problem.evaluate is None else problem.evaluate(center)
            return carry, worker_keys, (problem.loss(center), metrics)

        return _over_runs(jax.vmap(initial), devices, (True, True))

    return _INITIAL.get(key, build, keep=(rule, problem))


#: the entry of a chunk's traced values that holds σ (see :func:`traced_noise`)
NOISE_STD = "__noise_std__"


def event_unroll(unroll=None) -> int:
    """Events per iteration of the replay's compiled loop (``lax.scan(unroll=...)``):
    ``unroll``, checked, or 1 for None.

    On a CPU unrolling gains nothing and compiles longer (``benchmarks/replay.py``, row
    (h)); on an accelerator, where every loop iteration costs kernel launches, a caller
    with a long loop of small steps may want more.
    """
    if unroll is None:
        return 1
    if isinstance(unroll, bool) or not isinstance(unroll, int | np.integer) or unroll < 1:
        raise ConfigError(f"unroll must be an integer >= 1, got {unroll!r}")
    return int(unroll)


def _compiled_chunk(rule, problem, noise, record_paths, n_workers, shared, unroll=1,
                    devices=None):
    """The jitted, batch-vmapped chunk replay, cached so new seeds and new values of the
    traced hyperparameters reuse the compilation.

    Keyed by the rule's structure (:func:`structure_key`) and the identity of the problem
    (kept alive in the cache, so an identity is never reused while its entry exists;
    ``asynclab.problems.get_problem`` returns the same object for the same arguments).
    The traced hyperparameters are the function's last argument, one value per batch
    element.
    """
    devices = replay_devices(devices) if not isinstance(devices, tuple) else devices
    traced = traced_noise(problem, noise)
    key = (structure_key(rule), id(problem), "σ traced" if traced else noise, record_paths,
           n_workers, shared, unroll, devices)
    return _COMPILED.get(key, lambda: _build_chunk(rule, problem, noise, traced, record_paths,
                                                   n_workers, shared, unroll, devices),
                         keep=(rule, problem))


def traced_noise(problem, noise) -> bool:
    """Whether the replay passes σ as a traced value (problems without an oracle of their
    own, σ > 0), so that another σ reuses the compilation. ``noise`` is checked first."""
    return problem.oracle is None and check_noise(noise) > 0


def _build_chunk(rule, problem, noise, traced, record_paths, n_workers, shared, unroll,
                 devices):
    fixed = None if traced else stochastic_gradient(problem, noise)

    def event(carry, worker_keys, worker_id, active, index, values):
        values = dict(values)
        std = values.pop(NOISE_STD, None)
        gradient = stochastic_gradient(problem, std=std) if traced else fixed
        built = with_values(rule, values)
        if built.synchronous:
            one = synchronous_event(built, gradient, n_workers)
        else:
            one = asynchronous_event(built, gradient)
        return one(carry, worker_keys, worker_id, active, index)

    runner = chunk_runner(event, problem.loss, record_paths, problem.evaluate, unroll, shared)

    def chunk(carry, worker_keys, events, values):
        TRACE_COUNT["chunk"] += 1
        return runner(carry, worker_keys, events, values)

    return _over_runs(chunk, devices, (True, True, not shared, True), donate=(0,))


def check_options(rule, init, record_every) -> None:
    """Refuse an unknown ``init`` or a ``record_every`` that is not a positive integer."""
    if not isinstance(init, str) or init not in INITS:
        raise ConfigError(f"unknown init {init!r}; choose one of {', '.join(INITS)}")
    if init == "random_per_worker" and not rule.synchronous:
        raise ConfigError(
            f"init='random_per_worker' needs a synchronous rule; {rule.name} workers "
            "start by pulling the centre"
        )
    if record_every is not None and (isinstance(record_every, bool) or not isinstance(
            record_every, int | np.integer) or record_every < 1):
        raise ConfigError(f"record_every must be an integer >= 1, got {record_every!r}")


def _checked_inputs(rule, problem, traces):
    """``(rule, problem, traces)`` of the right types: a problem may be given by name."""
    from ..problems import get_problem

    if isinstance(rule, str):
        raise ConfigError(
            f"replay takes a built rule, got the name {rule!r}; build it with "
            f"asynclab.rules.make_rule({rule!r}, learning_rate=...) (or use asynclab.run)")
    if not isinstance(rule, Rule):
        raise ConfigError(f"rule must be a rule from asynclab.rules, got {rule!r}")
    if isinstance(problem, str):
        problem = get_problem(problem)
    elif not isinstance(problem, Problem):
        raise ConfigError(f"problem must be a problem name or an asynclab.problems.Problem, "
                          f"got {problem!r}")
    if traces is None:
        raise ConfigError("traces is None; give a trace from asynclab.cluster.simulate_async "
                          "/ simulate_sync (or asynclab.engine.schedule), or a list of them")
    if not isinstance(traces, Trace | RoundTrace) and not (
            isinstance(traces, Sequence) and not isinstance(traces, str)
            and all(isinstance(t, Trace | RoundTrace) for t in traces)):
        raise ConfigError(f"traces must be a Trace, a RoundTrace or a list of them, got "
                          f"{type(traces).__name__}")
    return rule, problem, traces


def _check_seeds(seeds) -> np.ndarray:
    return np.asarray(_validate.seeds(seeds), np.int64)


class _Plan(NamedTuple):
    """The events of a replay laid out as ``(traces, chunks, blocks, k)``."""

    time: np.ndarray
    worker: np.ndarray
    staleness: np.ndarray
    n_workers: int
    n_events: int
    record_every: int
    record_paths: bool
    n_blocks: int
    blocks_per_chunk: int
    n_chunks: int
    events: tuple


def _plan(rule, problem, traces, n_seeds, init, record_every, record_paths) -> _Plan:
    check_init(rule, init)
    if isinstance(traces, Trace | RoundTrace):
        traces = [traces]
    traces = list(traces)
    if len(traces) not in (1, n_seeds):
        raise ConfigError(f"give one trace, or one per seed ({n_seeds}); got {len(traces)}")
    n_workers = check_traces(rule, traces)
    time, worker, staleness = event_arrays(traces, rule.synchronous)
    n_events = time.shape[1]
    if record_every is None:
        record_every = default_record_every(rule, problem, n_events, n_workers)
    # a block longer than the run is the run: records at the start and the end
    record_every = min(_validate.count(record_every, "record_every"), max(n_events, 1))
    if record_paths is None:
        record_paths = problem.flat and problem.dim <= 2
    if record_paths and not problem.flat:
        raise ConfigError(f"record_paths needs one parameter vector; {problem.name} has a "
                          "pytree of parameters")

    # Lay the events out as (chunks, blocks, k), padding with inactive events.
    n_blocks = math.ceil(n_events / record_every)
    blocks_per_chunk = max(1, math.ceil(n_blocks / 20))
    n_chunks = math.ceil(n_blocks / blocks_per_chunk)
    padded = n_chunks * blocks_per_chunk * record_every
    shape = (len(traces), n_chunks, blocks_per_chunk, record_every)
    ev_worker = np.zeros((len(traces), padded), np.int32)
    ev_worker[:, :n_events] = np.maximum(worker, 0)
    ev_active = np.zeros((len(traces), padded), bool)
    ev_active[:, :n_events] = staleness >= 0
    ev_index = np.broadcast_to(np.arange(padded, dtype=np.int32), (len(traces), padded))
    events = tuple(a.reshape(shape) for a in (ev_worker, ev_active, ev_index))
    return _Plan(time, worker, staleness, n_workers, n_events, record_every, bool(record_paths),
                 n_blocks, blocks_per_chunk, n_chunks, events)


class _Replayed(NamedTuple):
    loss: np.ndarray
    final_params: object
    diverged_at: np.ndarray
    center_path: np.ndarray | None
    worker_path: np.ndarray | None
    metrics: dict | None = None


def _replay_batch(rule, problem, plan: _Plan, seeds, rows, values, *, noise, init, bar,
                  unroll=None, devices=None):
    """Replay batch element ``b`` = (seed ``seeds[b]``, trace row ``rows[b]``, traced
    hyperparameters ``values[name][b]``) for every b, in one compiled call per chunk,
    the batch split over ``devices`` (see :func:`replay_devices`; padded to a multiple
    of their number, and trimmed)."""
    devices = replay_devices(devices) if not isinstance(devices, tuple) else devices
    size = len(seeds)
    extra = -size % len(devices)
    if extra:  # pad with copies of the last element: every device gets as many runs
        def pad(a):
            return np.concatenate([np.asarray(a), np.repeat(np.asarray(a)[-1:], extra, 0)])

        seeds, rows = pad(seeds), pad(rows)
        values = {k: pad(v) for k, v in values.items()}
    out = _replay_padded(rule, problem, plan, seeds, rows, values, noise=noise, init=init,
                         bar=_Partial(bar, size / len(seeds)), unroll=unroll, devices=devices)
    if not extra:
        return out
    return _Replayed(*(None if a is None else jax.tree.map(lambda x: x[:size], a)
                       for a in out))


class _Partial:
    """A progress bar that counts only a fraction of what it is told (padding)."""

    def __init__(self, bar, fraction):
        self.bar, self.fraction = bar, float(fraction)

    def update(self, n):
        self.bar.update(int(round(n * self.fraction)))


def _replay_padded(rule, problem, plan: _Plan, seeds, rows, values, *, noise, init, bar,
                   unroll, devices):
    n_workers, shared = plan.n_workers, plan.time.shape[0] == 1
    batch = len(seeds)
    run_chunk = _compiled_chunk(rule, problem, float(noise), plan.record_paths, n_workers,
                                shared, event_unroll(unroll), devices)
    values = {k: _put(np.asarray(v, np.float32), devices) for k, v in values.items()}
    carry, worker_keys, (first_loss, first_metrics) = _initial_carry_batch(
        rule, problem, n_workers, init, devices)(_put(np.asarray(seeds, np.uint32), devices),
                                                 values)
    first_loss = _host(first_loss)
    first_metrics = _host(first_metrics)
    first_center = _host(carry.center) if plan.record_paths else None
    chunk_values = values
    if traced_noise(problem, float(noise)):  # σ as float32, the constant it replaces
        chunk_values = {**values, NOISE_STD: _put(np.full(batch, np.float32(np.sqrt(noise))),
                                                  devices)}

    losses, centers, paths, metrics = [], [], [], []
    step = plan.blocks_per_chunk * plan.record_every
    done_compiling = (note(bar, "compiling…")
                      if getattr(run_chunk, "_cache_size", lambda: 1)() == 0 else None)
    for c in range(plan.n_chunks):
        chunk_events = tuple(
            _put(a[0, c], devices, split=False) if shared else _put(a[rows, c], devices)
            for a in plan.events)
        carry, (value, center, path, metric) = run_chunk(carry, worker_keys, chunk_events,
                                                         chunk_values)
        losses.append(_host(value))
        if metric is not None:
            metrics.append(_host(metric))
        if plan.record_paths:
            centers.append(_host(center))
            paths.append(_host(path))
        if done_compiling is not None and c == 0:
            done_compiling()
        bar.update(batch * (min(step * (c + 1), plan.n_events) - min(step * c, plan.n_events)))
        if c + 1 < plan.n_chunks and np.all(_host(carry.diverged_at) >= 0):
            remaining = plan.n_chunks - c - 1
            losses.append(np.full((batch, remaining * plan.blocks_per_chunk), np.nan))
            if metrics:
                metrics.append({k: np.full((batch, remaining * plan.blocks_per_chunk), np.nan)
                                for k in metrics[0]})
            if plan.record_paths:
                centers.append(np.full((batch, remaining * plan.blocks_per_chunk,
                                        problem.dim), np.nan))
                tail = paths[-1].shape[3:]
                filler = (batch, remaining * step) + tail
                paths.append(np.full(filler, np.nan))
            bar.update(batch * (plan.n_events - min(step * (c + 1), plan.n_events)))
            break

    loss = np.concatenate([first_loss[:, None]] + [v.reshape(batch, -1) for v in losses],
                          axis=1)[:, : plan.n_blocks + 1]
    center_path = worker_path = None
    if plan.record_paths:
        center_path = np.concatenate(
            [first_center[:, None]] + [c.reshape(batch, -1, problem.dim) for c in centers],
            axis=1)[:, : plan.n_blocks + 1]
        tail = (n_workers, problem.dim) if rule.synchronous else (problem.dim,)
        worker_path = np.concatenate(
            [p.reshape((batch, -1) + tail) for p in paths], axis=1)[:, :plan.n_events]
    recorded = None
    if first_metrics is not None:
        recorded = {
            k: np.concatenate([np.asarray(first)[:, None]]
                              + [m[k].reshape(batch, -1) for m in metrics],
                              axis=1)[:, : plan.n_blocks + 1]
            for k, first in first_metrics.items()
        }
    final = _host(reported_center(carry))
    return _Replayed(loss, final, _host(carry.diverged_at), center_path, worker_path,
                     recorded)


class ExchangeRecord(NamedTuple):
    """What :func:`record_exchanges` keeps of every commit of a trace, per seed.

    Attributes:
      scale: ``(S, T)`` the factor the server applied to each commit
        (:class:`~asynclab.rules.ExchangeInfo`; ADAG: the mean over the weights of
        1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1), 1 for plain addition); NaN from the commit at which
        the run diverged on.
      staleness: ``(S, T)`` each commit's staleness τ as the rule counted it.
      final_params: the centre after the last commit, a leading seed axis on every leaf.
      diverged_at: ``(S,)`` the commit whose centre turned non-finite, -1 if none did
        (:func:`replay` may mark a run earlier, when a recorded loss overflows while the
        centre is still finite).
    """

    scale: np.ndarray
    staleness: np.ndarray
    final_params: object
    diverged_at: np.ndarray


def record_exchanges(rule: Rule, problem: Problem | str, trace: Trace, *,
                     seeds: int | Sequence[int] = 0, noise: float = 0.0) -> ExchangeRecord:
    """Replay one asynchronous trace for every seed, recording each commit's
    :class:`~asynclab.rules.ExchangeInfo` (which :func:`replay` does not keep).

    The events are :func:`replay`'s (same initial state, keys, gradient oracle and
    divergence guard), in one compiled scan without loss records or chunks, so the final
    centres equal :func:`replay`'s for the same seeds (a diverged run's may not: replay
    also stops at a recorded loss that overflows).
    """
    rule, problem, trace = _checked_inputs(rule, problem, trace)
    if rule.synchronous or not isinstance(trace, Trace):
        raise ConfigError(f"record_exchanges takes an asynchronous rule and its Trace; got "
                          f"{rule.name} with a {type(trace).__name__}")
    seeds = _check_seeds(seeds)
    n = check_traces(rule, [trace])
    commit = _commit(rule, stochastic_gradient(problem, noise))
    order = jnp.asarray(trace.worker, jnp.int32)
    index = jnp.arange(trace.n_events, dtype=jnp.int32)

    def one(init_key, worker_keys):
        carry = _initial_carry(rule, problem, init_key, n, "start")

        def step(carry, event):
            after, stop, _, info = commit(carry, worker_keys, event[0], jnp.bool_(True),
                                          event[1])
            return after._replace(center=select(stop, carry.server.center, carry.center)), info

        carry, info = jax.lax.scan(step, carry, (order, index))
        return select(carry.stopped, carry.center, carry.server.center), carry.diverged_at, info

    init_keys, worker_keys = seed_keys_batch(jnp.asarray(seeds, jnp.uint32), n)
    center, diverged_at, info = jax.jit(jax.vmap(one), compiler_options=compiler_options())(
        init_keys, worker_keys)
    diverged_at = np.asarray(diverged_at)
    after = (diverged_at[:, None] >= 0) & (np.arange(trace.n_events) >= diverged_at[:, None])
    scale = np.where(after, np.nan, np.asarray(info.scale, np.float64))
    return ExchangeRecord(scale, np.asarray(info.staleness, np.int64),
                          jax.tree.map(np.asarray, center), diverged_at)


def _result(plan: _Plan, seeds, out: _Replayed, config) -> Result:
    return Result(
        config=dict(config or {}),
        seeds=np.asarray(seeds),
        time=plan.time,
        worker=plan.worker,
        staleness=plan.staleness,
        record_events=np.minimum(np.arange(plan.n_blocks + 1) * plan.record_every,
                                 plan.n_events),
        loss=out.loss,
        final_params=out.final_params,
        diverged_at=out.diverged_at,
        center_path=out.center_path,
        worker_path=out.worker_path,
        metrics=out.metrics,
    )


def replay(
    rule: Rule,
    problem: Problem | str,
    traces: Trace | RoundTrace | Sequence[Trace | RoundTrace],
    *,
    seeds: int | Sequence[int] = 0,
    noise: float = 0.0,
    init: str = "start",
    record_every: int | None = None,
    record_paths: bool | None = None,
    progress: bool | None = None,
    config: dict | None = None,
    unroll: int | None = None,
    devices=None,
) -> Result:
    """Replay one trace (or one per seed) with ``rule`` on ``problem`` for every seed.

    The compiled replay depends on the rule's structure only: a rule built with other
    values of its traced hyperparameters (learning rate, momenta, ...) reuses it.

    Args:
      rule: an asynchronous or synchronous rule from :mod:`asynclab.rules`.
      problem: a :class:`~asynclab.problems.Problem` or a problem name.
      traces: one trace replayed by every seed, or a sequence with one trace per seed.
      seeds: a seed or a sequence of seeds (integers in [0, 2**32)); seed ``s`` draws the
        gradient noise and random starts from ``jax.random.key(s)``.
      noise: variance σ² of the additive Gaussian gradient noise.
      init: ``"start"`` (the problem's fixed start), ``"random"`` (uniform in its box) or
        ``"random_per_worker"`` (synchronous rules only: each worker its own start, the
        centre their mean).
      record_every: record the central loss every k events (default: about 100 records,
        fewer where a record costs much next to the run's gradient work; see
        ``asynclab.engine._core.default_record_every``).
      record_paths: record central and worker trajectories (default: for d ≤ 2).
      progress: show a progress bar (None: only on a terminal or in a notebook).
      config: stored with the result.
      unroll: events per iteration of the compiled loop (default 1); a speed setting:
        every event does the same arithmetic (on a CPU the same bits; an accelerator may
        fuse unrolled events differently, to float rounding).
      devices: the devices the seeds are split over: None (every device of JAX's
        default backend: this process's, or every process's after
        ``asynclab.backends.initialize``), a count (the first k) or a list of
        ``jax.Device``. A seed's numbers do not depend on it (on a CPU, to the bit).

    Returns:
      A :class:`Result`.
    """
    rule, problem, traces = _checked_inputs(rule, problem, traces)
    unroll = event_unroll(unroll)
    devices = replay_devices(devices)
    seeds = _check_seeds(seeds)
    check_options(rule, init, record_every)
    plan = _plan(rule, problem, traces, len(seeds), init, record_every, record_paths)
    rows = np.arange(len(seeds)) if plan.time.shape[0] > 1 else np.zeros(len(seeds), int)
    bar = progress_bar(total=plan.n_events * len(seeds), progress=progress,
                       desc=f"{rule.name} x{len(seeds)}", unit="event", leave=False,
                       unit_scale=True)
    with bar:
        out = _replay_batch(rule, problem, plan, seeds, rows,
                            hyperparameter_values(rule, len(seeds)), noise=noise, init=init,
                            bar=bar, unroll=unroll, devices=devices)
    if config is None:  # what replay itself knows: rule, problem, workers, seeds, noise
        config = run_config(rule, problem, workers=plan.n_workers,
                            seeds=np.asarray(seeds).tolist(), noise=float(noise), init=init)
    return _result(plan, seeds, out, config)
