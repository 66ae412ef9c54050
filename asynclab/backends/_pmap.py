"""The pmap backend: an update rule on real devices, one worker per device.

Synchronous rules run one round per call: every device runs ``rule.local`` and then
``rule.synchronize`` with its collectives over the named axis ``"workers"`` — the same
functions the replay runs under ``vmap``. The server state is replicated (``in_axes`` /
``out_axes`` ``None``): every device computes the same aggregate.

Asynchronous rules run a trace cut into *segments* in which each worker appears at most
once (greedily, in trace order). A segment is one call: the devices whose worker commits
in it run ``rule.local`` in parallel (the others skip it), the local results are
all-gathered, and every device applies the segment's exchanges in trace order to its
replica of the server, keeping its own worker's pull (so each device briefly holds every
worker's state: n × one worker's memory). Since a worker's local work depends only on its
own state since its last pull, this is the arithmetic of the replay, event for event:
same rule, same trace, same seed ⇒ the same numbers to float tolerance.

Everything the run needs per call (server, workers, keys, the segment table) stays on
the devices; the host only dispatches, and waits every ``sync_every`` (≤ 16) calls —
simulated CPU devices deadlock when too many collective calls are in flight
(jax-ml/jax#25861) — to collect records and measure wall time.

``_over_devices`` is the one place that names ``jax.pmap``; a ``jax.shard_map`` executor
would replace it (a mesh over the same devices, ``P("workers")`` for axis 0, ``P()``
for ``None``) and leave the per-device programs unchanged.
"""

from __future__ import annotations

import functools
import math
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import ConfigError
from ..cluster import RoundTrace, Trace
from ..engine import INITS, Result, initial_state, seed_keys, structure_key, with_values
from ..problems import Problem, stochastic_gradient
from ..rules import AXIS, AsynchronousRule, Rule, SynchronousRule
from . import _checkpoint

#: The most calls dispatched before the host waits for their results.
MAX_IN_FLIGHT = 16


class BackendRun(NamedTuple):
    """What a run on devices produced.

    Attributes:
      result: an engine :class:`~asynclab.engine.Result` for the one seed, with the fields
        the replay fills (times, workers and staleness from the trace).
      wall_time: ``(segments,)`` real seconds per segment (asynchronous) or round
        (synchronous). The host waits every ``sync_every`` calls; the calls between two
        waits share the measured time equally (``sync_every=1`` times each call alone).
        Segments before a resumed checkpoint carry the times of the run that wrote it.
      segments: number of device calls the trace was cut into (rounds for synchronous
        rules).
    """

    result: Result
    wall_time: np.ndarray
    segments: int


# ----------------------------------------------------------------------------- traces


def trace_from_order(worker: Sequence[int], n_workers: int, *, local_steps: int = 1,
                     time: Sequence[float] | None = None, group_size: int = 1) -> Trace:
    """The :class:`~asynclab.cluster.Trace` of commits by ``worker`` in this order.

    Each worker pulls right after its commit, so commit ``t`` by worker ``k`` has
    ``pulled_clock`` = 1 + the index of ``k``'s previous commit (0 for its first).

    Args:
      worker: the committing worker (or group, for a mixed rule) of each event.
      n_workers: number of workers (groups).
      local_steps: λ, the local steps per commit.
      time: seconds of each commit (default: every worker takes one second per commit
        and the commits are spread evenly, ``(t + 1) / n``).
      group_size: workers per group, for the ``mixed`` rule.
    """
    worker = np.asarray(worker, np.int32)
    if int(n_workers) != n_workers or n_workers < 1:
        raise ConfigError(f"n_workers must be an integer >= 1, got {n_workers!r}")
    if worker.ndim != 1 or np.any(worker < 0) or np.any(worker >= n_workers):
        raise ConfigError(f"worker must be a list of ids in [0, {n_workers})")
    last = np.zeros(n_workers, np.int32)
    pulled = np.empty_like(worker)
    for t, k in enumerate(worker.tolist()):
        pulled[t] = last[k]
        last[k] = t + 1
    if time is None:
        time = np.arange(1, worker.size + 1) / n_workers
    return Trace(time=np.asarray(time, np.float64), worker=worker, pulled_clock=pulled,
                 staleness=(np.arange(worker.size, dtype=np.int32) - pulled),
                 n_workers=int(n_workers), local_steps=int(local_steps),
                 group_size=int(group_size))


def round_robin_trace(n_workers: int, rounds: int, *, local_steps: int = 1,
                      group_size: int = 1) -> Trace:
    """Workers commit in the fixed order 0, 1, …, n−1, ``rounds`` times."""
    return trace_from_order(np.tile(np.arange(n_workers), rounds), n_workers,
                            local_steps=local_steps, group_size=group_size)


def random_order_trace(n_workers: int, rounds: int, rng, *, local_steps: int = 1,
                       group_size: int = 1) -> Trace:
    """Every worker commits once per round, in a fresh random order each round.

    Args:
      rng: a ``numpy.random.Generator`` or a seed.
    """
    rng = np.random.default_rng(rng)
    order = np.concatenate([rng.permutation(n_workers) for _ in range(rounds)])
    return trace_from_order(order, n_workers, local_steps=local_steps,
                            group_size=group_size)


def segment_starts(trace: Trace | RoundTrace) -> np.ndarray:
    """Where each segment begins, with the number of events appended (``(S + 1,)``).

    A :class:`RoundTrace`'s segments are its rounds. A :class:`Trace` is cut greedily in
    trace order: a segment ends just before a worker would appear in it a second time.
    """
    if isinstance(trace, RoundTrace):
        return np.arange(trace.n_events + 1, dtype=np.int64)
    starts, seen = [0], set()
    for t, k in enumerate(np.asarray(trace.worker).tolist()):
        if k in seen:
            starts.append(t)
            seen = set()
        seen.add(k)
    starts.append(trace.n_events)
    return np.asarray(starts, np.int64)


class Plan(NamedTuple):
    """The trace as the devices read it, replicated on every device.

    Attributes:
      start: ``(S,)`` index of each segment's first event.
      order: ``(S, m)`` the committing worker of each slot (``m`` = workers, or 1 for
        rounds).
      active: ``(S, m)`` whether a slot holds an event.
      n_events: number of events.
      record_every: k, the central loss is recorded after every k-th event and the last.
    """

    start: Any
    order: Any
    active: Any
    n_events: Any
    record_every: Any


def _plan(trace, starts: np.ndarray, record_every: int) -> Plan:
    """The plan, its segment axis padded to a power of two (at least 64) so that traces
    of similar length share one compilation."""
    n_segments = starts.size - 1
    rows = max(64, 1 << max(0, n_segments - 1).bit_length())
    width = 1 if isinstance(trace, RoundTrace) else trace.n_workers
    start = np.full(rows, trace.n_events, np.int32)
    start[:n_segments] = starts[:-1]
    order = np.zeros((rows, width), np.int32)
    active = np.zeros((rows, width), bool)
    if isinstance(trace, RoundTrace):
        active[:n_segments] = True
    else:
        for s in range(n_segments):
            members = trace.worker[starts[s]:starts[s + 1]]
            order[s, :members.size] = members
            active[s, :members.size] = True
    return Plan(start=start, order=order, active=active, n_events=np.int32(trace.n_events),
                record_every=np.int32(record_every))


# ----------------------------------------------------------------------------- devices


def _over_devices(fn, devices, in_axes, out_axes):
    """``fn`` once per device, collectives over ``AXIS``: the one place that names pmap."""
    return jax.pmap(fn, axis_name=AXIS, in_axes=in_axes, out_axes=out_axes, devices=devices)


@functools.lru_cache(maxsize=16)
def _placer(devices: tuple | None, kind: str):
    """Small pmapped helpers, one compilation per device set."""
    devices = None if devices is None else list(devices)
    if kind == "replicate":
        return _over_devices(lambda _, x: x, devices, (0, None), None)
    if kind == "shard":
        return _over_devices(lambda x: x, devices, 0, 0)
    return _over_devices(lambda _: jax.lax.axis_index(AXIS), devices, 0, 0)  # "index"


def _replicate(tree, devices, n_local: int):
    """``tree`` copied onto every device once, in the layout ``in_axes=None`` reads."""
    return _placer(_key(devices), "replicate")(np.zeros(n_local, np.int32), tree)


def _shard(tree, devices):
    """``tree`` (leading axis = local devices) placed one row per device, once."""
    return _placer(_key(devices), "shard")(tree)


def _axis_indices(devices, n_local: int) -> np.ndarray:
    """Which worker (index on the mapped axis) each local device is."""
    return _rows(_placer(_key(devices), "index")(np.zeros(n_local, np.int32)))


def _key(devices):
    return None if devices is None else tuple(devices)


def _replica(x) -> np.ndarray:
    """A replicated array's value, read from one local device."""
    return np.asarray(x.addressable_shards[0].data)


def _rows(x) -> np.ndarray:
    """A stacked array's local rows, in the order of the mapped axis."""
    if x.is_fully_addressable:
        return np.asarray(x)
    shards = sorted(x.addressable_shards, key=lambda s: s.index[0].start or 0)
    return np.concatenate([np.asarray(s.data) for s in shards])


def _resolve_devices(n_workers: int, devices):
    """``(devices for pmap or None for all, local worker count)``."""
    available = jax.devices()
    if devices is None:
        if n_workers > len(available):
            raise ConfigError(
                f"the trace has {n_workers} workers but only {len(available)} "
                f"{available[0].platform} device(s) are available; the pmap backend runs "
                "one worker per device. On a CPU, simulate devices by setting "
                f"XLA_FLAGS=--xla_force_host_platform_device_count={n_workers} in the "
                "environment before jax is imported."
            )
        devices = available[:n_workers]
    devices = list(devices)
    if len(devices) != n_workers:
        raise ConfigError(f"the trace has {n_workers} workers but {len(devices)} devices "
                          "were given; the pmap backend runs one worker per device")
    if len({d.id for d in devices}) != len(devices):
        raise ConfigError("devices must be distinct")
    if jax.process_count() > 1 and len(devices) != jax.device_count():
        raise ConfigError(
            f"a multi-process run uses every global device ({jax.device_count()}); the "
            f"trace has {n_workers} workers")
    n_local = sum(d.process_index == jax.process_index() for d in devices)
    return (None if devices == available else devices), n_local


# ----------------------------------------------------------------------------- programs


class Shared(NamedTuple):
    """What every device holds the same copy of: the server and the run's position."""

    server: Any
    diverged_at: Any
    step: Any


def _all_finite(tree):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


def _select(keep, new, old):
    return jax.tree.map(lambda a, b: jnp.where(keep, a, b), new, old)


def _row(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def _record(loss, center, diverged_at, index, live, plan: Plan):
    """The central loss if event ``index`` closes a record block, else NaN.

    As in the replay: a non-finite loss marks the run diverged at the block's last event,
    and a diverged run records NaN.
    """
    every = plan.record_every
    due = live & (((index + 1) % every == 0) | (index == plan.n_events - 1))

    def measure(diverged_at):
        value = loss(center).astype(jnp.float32)
        fresh = (diverged_at < 0) & ~jnp.isfinite(value)
        diverged_at = jnp.where(fresh, (index // every + 1) * every - 1, diverged_at)
        return jnp.where(diverged_at >= 0, jnp.float32(jnp.nan), value), diverged_at

    def skip(diverged_at):
        return jnp.float32(jnp.nan), diverged_at

    return jax.lax.cond(due, measure, skip, diverged_at)


def round_program(rule: SynchronousRule, gradient, loss, record_paths: bool):
    """One synchronous round on one device: local work, collective synchronisation."""

    def round_(shared: Shared, worker, key, plan: Plan):
        me = jax.lax.axis_index(AXIS)
        index = plan.start[shared.step]
        local = rule.local(worker, gradient, key, me)
        server, after, _ = rule.synchronize(shared.server, local)
        live = shared.diverged_at < 0
        bad = ~_all_finite(server.center)
        keep = live & ~bad
        server = _select(keep, server, shared.server)
        worker = _select(keep, after, worker)
        diverged_at = jnp.where(live & bad, index, shared.diverged_at)
        value, diverged_at = _record(loss, server.center, diverged_at, index, True, plan)
        center = server.center[None] if record_paths else ()
        local_params = local.params if record_paths else ()
        return Shared(server, diverged_at, shared.step + 1), worker, (value[None], center,
                                                                      local_params)

    return round_


def segment_program(rule: AsynchronousRule, gradient, loss, record_paths: bool):
    """One segment on one device: local work if this worker commits, then every exchange
    of the segment in trace order on this device's replica of the server."""

    def segment(shared: Shared, worker, key, plan: Plan):
        me = jax.lax.axis_index(AXIS)
        order, active = plan.order[shared.step], plan.active[shared.step]
        start = plan.start[shared.step]
        involved = jnp.any((order == me) & active)
        local = jax.lax.cond(involved, lambda w: rule.local(w, gradient, key, me),
                             lambda w: w, worker)
        gathered = jax.lax.all_gather(local, AXIS)

        def slot(state, j):
            server, mine, diverged_at = state
            committer, index, live_slot = order[j], start + j, active[j]
            new_server, new_worker, _ = rule.exchange(server, _row(gathered, committer))
            live = live_slot & (diverged_at < 0)
            bad = ~_all_finite(new_server.center)
            keep = live & ~bad
            server = _select(keep, new_server, server)
            mine = _select(keep & (committer == me), new_worker, mine)
            diverged_at = jnp.where(live & bad, index, diverged_at)
            value, diverged_at = _record(loss, server.center, diverged_at, index, live_slot,
                                         plan)
            return (server, mine, diverged_at), (value, server.center if record_paths else ())

        slots = jnp.arange(order.shape[0], dtype=jnp.int32)
        (server, worker, diverged_at), (values, centers) = jax.lax.scan(
            slot, (shared.server, worker, shared.diverged_at), slots)
        local_params = local.params if record_paths else ()
        return Shared(server, diverged_at, shared.step + 1), worker, (values, centers,
                                                                      local_params)

    return segment


_PROGRAMS: OrderedDict = OrderedDict()


def _program(rule: Rule, problem: Problem, noise: float, record_paths: bool, devices):
    """The pmapped round or segment, cached by the rule's structure, problem and devices;
    the rule's traced hyperparameters are its last (replicated) argument, as in the
    replay, so both compute with the same values the same way."""
    key = (structure_key(rule), id(problem), noise, record_paths,
           None if devices is None else tuple(d.id for d in devices))
    if key in _PROGRAMS:
        _PROGRAMS.move_to_end(key)
        return _PROGRAMS[key][-1]
    gradient = stochastic_gradient(problem, noise)
    build = round_program if rule.synchronous else segment_program

    def program(shared, worker, key, plan, values):
        step = build(with_values(rule, values), gradient, problem.loss, record_paths)
        return step(shared, worker, key, plan)

    fn = _over_devices(program, devices, in_axes=(None, 0, 0, None, None),
                       out_axes=(None, 0, (None, None, 0)))
    _PROGRAMS[key] = (rule, problem, fn)
    while len(_PROGRAMS) > 16:
        _PROGRAMS.popitem(last=False)
    return fn


def _initial(rule: Rule, problem: Problem, n_workers: int, init: str):
    """The jitted ``init_key -> (server, workers, loss of the centre)``, cached."""
    key = ("initial", structure_key(rule), id(problem), n_workers, init)
    if key not in _PROGRAMS:
        def initial(init_key, values):
            server, workers = initial_state(with_values(rule, values), problem, init_key,
                                            n_workers, init)
            return server, workers, problem.loss(server.center)

        _PROGRAMS[key] = (rule, problem, jax.jit(initial))
        while len(_PROGRAMS) > 16:
            _PROGRAMS.popitem(last=False)
    return _PROGRAMS[key][-1]


# ----------------------------------------------------------------------------- checks


def _check(rule, problem: Problem, trace, init: str, record_every, sync_every, checkpoint,
           checkpoint_every, resume) -> None:
    if not isinstance(rule, AsynchronousRule | SynchronousRule):
        raise ConfigError(f"the pmap backend runs rules from asynclab.rules, got {rule!r}")
    if not isinstance(problem, Problem):
        raise ConfigError(f"problem must be an asynclab.problems.Problem, got {problem!r}")
    kind = RoundTrace if rule.synchronous else Trace
    if not isinstance(trace, kind):
        raise ConfigError(
            f"the pmap backend runs the {'synchronous' if rule.synchronous else 'asynchronous'}"
            f" rule {rule.name} on a {kind.__name__}, got {type(trace).__name__}")
    if trace.n_events == 0:
        raise ConfigError("the trace has no events; give a positive budget")
    if trace.local_steps != rule.local_steps:
        raise ConfigError(
            f"the trace was scheduled for local_steps={trace.local_steps} but the rule "
            f"{rule.name} takes local_steps={rule.local_steps}")
    group_size = rule.group_size
    if getattr(trace, "group_size", 1) != group_size:
        raise ConfigError(
            f"the trace was scheduled for groups of {getattr(trace, 'group_size', 1)} but the "
            f"rule {rule.name} takes group_size={group_size}")
    if init not in INITS:
        raise ConfigError(f"unknown init {init!r}; choose one of {', '.join(INITS)}")
    if init == "random_per_worker" and not rule.synchronous:
        raise ConfigError(f"init='random_per_worker' needs a synchronous rule; {rule.name} "
                          "workers start by pulling the centre")
    counts = [("record_every", record_every, None), ("sync_every", sync_every, MAX_IN_FLIGHT)]
    if checkpoint_every is not None:
        counts.append(("checkpoint_every", checkpoint_every, None))
    for name, value, top in counts:
        if isinstance(value, bool) or int(value) != value or value < 1 or (
                top is not None and value > top):
            bound = f" and <= {top}" if top else ""
            raise ConfigError(f"{name} must be an integer >= 1{bound}, got {value!r}")
    if (checkpoint_every is not None or resume) and checkpoint is None:
        raise ConfigError("checkpoint_every and resume need a checkpoint path")


# ----------------------------------------------------------------------------- run


def run_pmap(
    rule: Rule,
    problem: Problem,
    trace: Trace | RoundTrace,
    *,
    seed: int = 0,
    noise: float = 0.0,
    init: str = "start",
    devices: Sequence | None = None,
    record_every: int = 1,
    record_paths: bool | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    sync_every: int = MAX_IN_FLIGHT,
    config: dict | None = None,
) -> BackendRun:
    """Run ``rule`` on ``trace`` with one worker per device.

    Same rule, trace, seed, noise and init as :func:`asynclab.engine.replay` ⇒ the same
    final parameters and loss curve, to float tolerance.

    Args:
      rule: a rule from :mod:`asynclab.rules` (synchronous or asynchronous).
      problem: the problem.
      trace: a :class:`~asynclab.cluster.RoundTrace` (synchronous rules) or
        :class:`~asynclab.cluster.Trace` (asynchronous); its ``n_workers`` is the number
        of devices used.
      seed: keys and initial state come from ``asynclab.engine.seed_keys(seed, n)`` and
        ``initial_state``, as in the replay.
      noise: σ², the gradient-noise variance.
      init: "start", "random" or "random_per_worker" (synchronous rules).
      devices: the devices, one per worker (default: the first n of ``jax.devices()``;
        in a multi-process run, every global device).
      record_every: record the central loss every k events (and after the last).
      record_paths: record central and worker trajectories (default: for d ≤ 2; never
        across processes).
      checkpoint: a file to write checkpoints to (and resume from); written at the end
        (and when the run diverges) at least.
      checkpoint_every: also write it every this many segments (rounds).
      resume: continue from ``checkpoint`` if it exists (a checkpoint of another run
        configuration is a ConfigError); start from the beginning if it does not.
      sync_every: wait for the devices every this many calls (1 to 16).
      config: stored in the result (the run's own settings are added).

    Returns:
      A :class:`BackendRun`.

    Raises:
      ConfigError: more workers than devices (with how to simulate devices on a CPU), a
        trace of the wrong kind or λ, or a checkpoint of another run.

    Example:
      >>> rule = asynclab.rules.make_rule("downpour", learning_rate=0.01)
      >>> trace = round_robin_trace(jax.device_count(), rounds=10)
      >>> run = run_pmap(rule, asynclab.problems.beale(), trace, noise=1.0)
    """
    _check(rule, problem, trace, init, record_every, sync_every, checkpoint, checkpoint_every,
           resume)
    record_every, sync_every = int(record_every), int(sync_every)
    n = trace.n_workers
    pmap_devices, n_local = _resolve_devices(n, devices)
    if record_paths is None:
        record_paths = problem.flat and problem.dim <= 2
    record_paths = bool(record_paths) and jax.process_count() == 1
    noise = float(noise)
    starts = segment_starts(trace)
    n_segments, n_events = starts.size - 1, trace.n_events
    program = _program(rule, problem, noise, record_paths, pmap_devices)

    # Which global worker each local device is (its index on the mapped axis).
    ids = _axis_indices(pmap_devices, n_local)
    init_key, worker_keys = seed_keys(seed, n)
    values = {k: jnp.asarray(v, jnp.float32) for k, v in
              (rule.values if rule.structure is not None else {}).items()}
    server, workers, first_loss = _initial(rule, problem, n, init)(init_key, values)
    first_loss = float(first_loss)
    first_center = np.asarray(server.center) if record_paths else None
    server = jax.tree.map(np.asarray, server)
    workers = jax.tree.map(lambda x: np.asarray(x)[ids], workers)  # this process's rows
    template = (server, workers)

    fingerprint = _checkpoint.fingerprint(rule, problem, trace, seed=seed, noise=noise,
                                          init=init, record_every=record_every,
                                          record_paths=record_paths)
    records = _Records(record_paths, record_every, n_events, problem.dim)
    position, diverged_at = 0, -1
    path = None if checkpoint is None else _checkpoint.process_path(checkpoint)
    if resume and path.exists():
        saved = _checkpoint.load(path, fingerprint, template)
        server, workers = saved.state
        position, diverged_at = saved.position, saved.diverged_at
        records.restore(saved.records)

    plan = _replicate(_plan(trace, starts, record_every), pmap_devices, n_local)
    shared = Shared(server, jnp.asarray(diverged_at, jnp.int32), jnp.asarray(position,
                                                                            jnp.int32))
    shared = _replicate(shared, pmap_devices, n_local)
    workers = _shard(workers, pmap_devices)
    keys = _shard(worker_keys[ids], pmap_devices)

    pending: list = []
    clock = time.perf_counter()
    step = position
    while step < n_segments and diverged_at < 0:
        shared, workers, out = program(shared, workers, keys, plan, values)
        pending.append(out)
        step += 1
        save_now = checkpoint is not None and (step == n_segments or (
            checkpoint_every is not None and step % checkpoint_every == 0))
        if len(pending) == sync_every or step == n_segments or save_now:
            jax.block_until_ready((shared, workers))
            now = time.perf_counter()
            records.add(pending, now - clock, step - len(pending), starts, trace)
            pending, clock = [], now
            diverged_at = int(_replica(shared.diverged_at))
            if save_now or (checkpoint is not None and diverged_at >= 0):
                state = (jax.tree.map(_replica, shared.server), jax.tree.map(_rows, workers))
                _checkpoint.save(path, fingerprint, state, step, diverged_at, records.state())

    events_done = int(starts[step])
    worker_tail = (n, problem.dim) if rule.synchronous else (problem.dim,)
    loss, center_path, worker_path = records.arrays(first_loss, first_center, worker_tail,
                                                    events_done)
    time_, worker, staleness = _event_arrays(trace, rule.synchronous)
    result = Result(
        config={**dict(config or {}), "backend": "pmap", "rule": rule.name,
                "synchronous": rule.synchronous,
                "hyperparameters": dict(rule.hyperparameters), "problem": problem.name,
                "dim": problem.dim, "workers": n, "seeds": [int(seed)], "noise": noise,
                "init": init, "record_every": record_every},
        seeds=np.asarray([seed], np.int64),
        time=time_,
        worker=worker,
        staleness=staleness,
        record_events=np.minimum(np.arange(math.ceil(n_events / record_every) + 1)
                                 * record_every, n_events),
        loss=loss,
        final_params=jax.tree.map(lambda x: _replica(x)[None], shared.server.center),
        diverged_at=np.asarray([diverged_at], np.int64),
        center_path=center_path,
        worker_path=worker_path,
    )
    return BackendRun(result=result, wall_time=records.wall_time(n_segments),
                      segments=n_segments)


def _event_arrays(trace, synchronous: bool):
    time_ = np.asarray(trace.time, np.float64)[None]
    if synchronous:
        return (time_, np.full_like(time_, -1, dtype=np.int32),
                np.zeros_like(time_, dtype=np.int32))
    return (time_, np.asarray(trace.worker, np.int32)[None],
            np.asarray(trace.staleness, np.int32)[None])


class _Records:
    """Loss, paths and wall time, gathered on the host at each wait."""

    def __init__(self, record_paths: bool, record_every: int, n_events: int, dim: int):
        self.record_paths = record_paths
        self.record_every, self.n_events, self.dim = record_every, n_events, dim
        self.loss: list[np.ndarray] = []
        self.centers: list[np.ndarray] = []
        self.paths: list[np.ndarray] = []
        self.times: list[np.ndarray] = []

    def add(self, pending, seconds: float, first_step: int, starts, trace) -> None:
        self.times.append(np.full(len(pending), seconds / len(pending)))
        for offset, (values, centers, local_params) in enumerate(pending):
            s = first_step + offset
            size = int(starts[s + 1] - starts[s])
            index = np.arange(starts[s], starts[s] + size)
            due = ((index + 1) % self.record_every == 0) | (index == self.n_events - 1)
            if due.any():  # else there is nothing to read back from the devices
                self.loss.append(_replica(values)[:size][due])
                if self.record_paths:
                    self.centers.append(_replica(centers)[:size][due])
            if self.record_paths:
                local_params = _rows(local_params)
                if isinstance(trace, RoundTrace):
                    self.paths.append(local_params[None])
                else:
                    self.paths.append(local_params[trace.worker[starts[s]:starts[s + 1]]])

    def state(self) -> dict:
        """The records so far, for a checkpoint."""
        state = {"loss": _cat(self.loss, (0,)), "wall_time": _cat(self.times, (0,))}
        if self.record_paths:
            state["center_path"] = _cat(self.centers, (0, self.dim))
            state["worker_path"] = _cat(self.paths, (0, self.dim))
        return state

    def restore(self, saved: dict) -> None:
        self.loss, self.times = [saved["loss"]], [saved["wall_time"]]
        if self.record_paths:
            self.centers = [saved["center_path"]]
            self.paths = [saved["worker_path"]] if saved["worker_path"].size else []

    def wall_time(self, n_segments: int) -> np.ndarray:
        seconds = _cat(self.times, (0,))
        return np.concatenate([seconds, np.full(n_segments - seconds.size, np.nan)])

    def arrays(self, first_loss, first_center, worker_tail, events_done):
        """``(loss, center_path, worker_path)`` with a leading seed axis; NaN for what a
        diverged run did not record."""
        n_records = math.ceil(self.n_events / self.record_every)
        loss = np.full(n_records + 1, np.nan)
        done = _cat(self.loss, (0,))
        loss[0] = first_loss
        loss[1:1 + done.size] = done
        if not self.record_paths:
            return loss[None], None, None
        center_path = np.full((n_records + 1, self.dim), np.nan)
        center_path[0] = first_center
        centers = _cat(self.centers, (0, self.dim))
        center_path[1:1 + len(centers)] = centers
        worker_path = np.full((self.n_events,) + worker_tail, np.nan)
        if self.paths:
            worker_path[:events_done] = np.concatenate(self.paths)[:events_done]
        return loss[None], center_path[None], worker_path[None]


def _cat(parts: list[np.ndarray], empty: tuple) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(empty)
