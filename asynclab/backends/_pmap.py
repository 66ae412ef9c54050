"""The device executor (``--backend pmap``): an update rule on real devices, one worker
per device.

The executor is a ``jax.shard_map`` program over a one-axis mesh ``"workers"``: worker
state and keys are laid out ``P("workers")`` (one row per device), the server state and
the trace's segment table ``P()`` (the same on every device), placed once with
``NamedSharding``. The per-device programs are the rules' own functions.

Synchronous rules run one round per call: every device runs ``rule.local`` and then
``rule.exchange`` with its collectives over the named axis ``"workers"`` — the same
functions the replay runs under ``vmap``. Every device computes the same aggregate.

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
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from .. import _validate
from .._errors import ConfigError
from .._programs import Programs
from .._progress import progress_bar
from ..cluster import RoundTrace, Trace
from ..engine import Result, structure_key, with_values
from ..engine._core import (
    check_count,
    check_init,
    check_rule,
    check_traces,
    compiler_options,
    event_arrays,
    guard,
    initial_state,
    recorded_loss,
    row,
    run_config,
    seed_keys,
    select,
)
from ..problems import Problem, stochastic_gradient
from ..rules import AXIS, Rule
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
    """

    result: Result
    wall_time: np.ndarray

    @property
    def segments(self) -> int:
        """Number of device calls the trace was cut into (rounds for synchronous rules)."""
        return int(self.wall_time.shape[0])


# ----------------------------------------------------------------------------- traces


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


def _mesh(devices) -> Mesh:
    """A one-axis mesh ``"workers"`` over the run's devices, worker k on ``devices[k]``."""
    return Mesh(np.asarray(devices, dtype=object), (AXIS,))


def _spec(axes):
    """The partition specs of ``in_axes``/``out_axes``-style axes (nested tuples of 0/None)."""
    if isinstance(axes, tuple):
        return tuple(_spec(a) for a in axes)
    return P(AXIS) if axes == 0 else P()


def _over_devices(fn, mesh: Mesh, in_axes, out_axes):
    """``fn`` once per device as a jitted ``shard_map`` program over the mesh axis.

    ``fn`` is written per device: an argument or result with axis ``0`` is one worker's
    row (laid out ``P("workers")`` across the mesh), one with ``None`` is the same on
    every device (``P()``). Collectives inside ``fn`` name ``AXIS``.
    """

    def per_device(*args):
        args = [jax.tree.map(lambda x: x[0], a) if axis == 0 else a
                for a, axis in zip(args, in_axes, strict=True)]
        return _add_rows(fn(*args), out_axes)

    program = jax.shard_map(per_device, mesh=mesh, in_specs=_spec(tuple(in_axes)),
                            out_specs=_spec(out_axes), check_vma=False)
    return jax.jit(program, compiler_options=compiler_options(mesh.devices.flat[0].platform))


def _add_rows(out, axes):
    if isinstance(axes, tuple):
        return tuple(_add_rows(o, a) for o, a in zip(out, axes, strict=True))
    return jax.tree.map(lambda x: x[None], out) if axes == 0 else out


def _replicate(tree, mesh: Mesh):
    """``tree`` (host values, the same in every process) copied onto every device."""
    sharding = NamedSharding(mesh, P())

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda _: x)

    return jax.tree.map(put, tree)


def _shard(rows, ids, mesh: Mesh):
    """``rows`` (leading axis: this process's workers ``ids``) placed one per device."""
    sharding = NamedSharding(mesh, P(AXIS))
    n = mesh.devices.size
    where = {int(g): i for i, g in enumerate(ids)}

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(
            (n,) + x.shape[1:], sharding, lambda index: x[where[index[0].start or 0]][None])

    return jax.tree.map(put, rows)


def _replica(x) -> np.ndarray:
    """A replicated array's value, read from one local device."""
    return np.asarray(x.addressable_shards[0].data)


def _rows(x) -> np.ndarray:
    """A stacked array's local rows, in the order of the mesh axis."""
    if x.is_fully_addressable:
        return np.asarray(x)
    shards = sorted(x.addressable_shards, key=lambda s: s.index[0].start or 0)
    return np.concatenate([np.asarray(s.data) for s in shards])


def _resolve_devices(n_workers: int, devices):
    """``(devices, ids)``: one device per worker, and the workers this process feeds."""
    available = jax.devices()
    if devices is None:
        if n_workers > len(available):
            raise ConfigError(
                f"the trace has {n_workers} workers but only {len(available)} "
                f"{available[0].platform} device(s) are available; the pmap backend runs "
                "one worker per device. Simulate CPU devices with "
                f"asynclab.backends.simulate_cpu_devices({n_workers}), or JAX_PLATFORMS=cpu "
                f"and XLA_FLAGS=--xla_force_host_platform_device_count={n_workers} in the "
                "environment before JAX starts."
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
    ids = np.asarray([k for k, d in enumerate(devices)
                      if d.process_index == jax.process_index()], np.int64)
    return devices, ids


# ----------------------------------------------------------------------------- programs


class Shared(NamedTuple):
    """What every device holds the same copy of: the server and the run's position."""

    server: Any
    diverged_at: Any
    step: Any


def _record(loss, evaluate, center, diverged_at, index, live, plan: Plan):
    """``(loss, metrics, diverged_at)``: the central loss and the problem's metrics of the
    centre (a dict, empty without ``evaluate``) if event ``index`` closes a record block,
    else NaN.

    As in the replay: a non-finite loss marks the run diverged at the block's last event,
    and a diverged run records NaN.
    """
    every = plan.record_every
    due = live & (((index + 1) % every == 0) | (index == plan.n_events - 1))

    def measure(diverged_at):
        value, diverged_at = recorded_loss(loss, center, diverged_at,
                                           (index // every + 1) * every - 1)
        metrics = {} if evaluate is None else {
            k: jnp.where(diverged_at >= 0, jnp.nan, v).astype(jnp.float32)
            for k, v in evaluate(center).items()}
        return value.astype(jnp.float32), metrics, diverged_at

    def skip(diverged_at):
        metrics = {} if evaluate is None else {
            k: jnp.float32(jnp.nan) for k in jax.eval_shape(evaluate, center)}
        return jnp.float32(jnp.nan), metrics, diverged_at

    return jax.lax.cond(due, measure, skip, diverged_at)


def round_program(rule: Rule, gradient, loss, evaluate, record_paths: bool):
    """One synchronous round on one device: local work, collective synchronisation."""

    def round_(shared: Shared, worker, key, plan: Plan):
        me = jax.lax.axis_index(AXIS)
        index = plan.start[shared.step]
        local = rule.local(worker, gradient, key, me)
        server, after, _ = rule.exchange(shared.server, local)
        keep, diverged_at = guard(server.center, shared.diverged_at, True, index)
        server = select(keep, server, shared.server)
        worker = select(keep, after, worker)
        value, metrics, diverged_at = _record(loss, evaluate, server.center, diverged_at,
                                              index, True, plan)
        center = server.center[None] if record_paths else ()
        local_params = local.params if record_paths else ()
        metrics = {k: v[None] for k, v in metrics.items()}
        return Shared(server, diverged_at, shared.step + 1), worker, (value[None], center,
                                                                      local_params, metrics)

    return round_


def _idle(work, worker):
    """The branch of a worker that does not commit in a segment: its state as it is, in
    the form its local work returns. A worker that resets to the centre stores no pulled
    centre, and its local work hands its starting parameters on as that centre
    (``asynclab.rules.parts.remember_pull``); the idle branch does the same."""
    done = jax.eval_shape(work, worker)
    if done.pulled_center is not None and worker.pulled_center is None:
        return lambda w: w._replace(pulled_center=w.params)
    return lambda w: w


def segment_program(rule: Rule, gradient, loss, evaluate, record_paths: bool):
    """One segment on one device: local work if this worker commits, then every exchange
    of the segment in trace order on this device's replica of the server."""

    def segment(shared: Shared, worker, key, plan: Plan):
        me = jax.lax.axis_index(AXIS)
        order, active = plan.order[shared.step], plan.active[shared.step]
        start = plan.start[shared.step]
        involved = jnp.any((order == me) & active)
        def work(w):
            return rule.local(w, gradient, key, me)

        local = jax.lax.cond(involved, work, _idle(work, worker), worker)
        gathered = jax.lax.all_gather(local, AXIS)

        def slot(state, j):
            server, mine, diverged_at = state
            committer, index, live_slot = order[j], start + j, active[j]
            new_server, new_worker, _ = rule.exchange(server, row(gathered, committer))
            keep, diverged_at = guard(new_server.center, diverged_at, live_slot, index)
            server = select(keep, new_server, server)
            mine = select(keep & (committer == me), new_worker, mine)
            value, metrics, diverged_at = _record(loss, evaluate, server.center, diverged_at,
                                                  index, live_slot, plan)
            return (server, mine, diverged_at), (value, server.center if record_paths else (),
                                                 metrics)

        slots = jnp.arange(order.shape[0], dtype=jnp.int32)
        (server, worker, diverged_at), (values, centers, metrics) = jax.lax.scan(
            slot, (shared.server, worker, shared.diverged_at), slots)
        local_params = local.params if record_paths else ()
        return Shared(server, diverged_at, shared.step + 1), worker, (values, centers,
                                                                      local_params, metrics)

    return segment


#: the compiled rounds, segments and initial states
_PROGRAMS = Programs(16)


def _program(rule: Rule, problem: Problem, noise: float, record_paths: bool, devices,
             key_dtype):
    """The round or segment as a ``shard_map`` program, cached by the rule's structure,
    problem and devices; the rule's traced hyperparameters are its last (replicated)
    argument, as in the replay, so both compute with the same values the same way.

    Keys travel as their raw data (``uint32``) and are wrapped on the devices."""
    key = (structure_key(rule), id(problem), noise, record_paths, tuple(d.id for d in devices),
           key_dtype)

    def build():
        gradient = stochastic_gradient(problem, noise)
        make = round_program if rule.synchronous else segment_program

        def program(shared, worker, key_data, plan, values):
            step = make(with_values(rule, values), gradient, problem.loss, problem.evaluate,
                        record_paths)
            return step(shared, worker, jax.random.wrap_key_data(key_data, dtype=key_dtype),
                        plan)

        return _over_devices(program, _mesh(devices), in_axes=(None, 0, 0, None, None),
                             out_axes=(None, 0, (None, None, 0, None)))

    return _PROGRAMS.get(key, build, keep=(rule, problem))


def _initial(rule: Rule, problem: Problem, n_workers: int, init: str):
    """The jitted ``init_key -> (server, workers, loss of the centre, its metrics)``,
    cached (the metrics are None for a problem without ``evaluate``)."""
    key = ("initial", structure_key(rule), id(problem), n_workers, init)

    def initial(init_key, values):
        server, workers = initial_state(with_values(rule, values), problem, init_key,
                                        n_workers, init)
        metrics = None if problem.evaluate is None else problem.evaluate(server.center)
        return server, workers, problem.loss(server.center), metrics

    return _PROGRAMS.get(key, lambda: jax.jit(initial, compiler_options=compiler_options()),
                         keep=(rule, problem))


# ----------------------------------------------------------------------------- checks


def _check(rule, problem: Problem, trace, init: str, record_every, sync_every, checkpoint,
           checkpoint_every, resume) -> None:
    check_rule(rule, problem, "the pmap backend")
    check_traces(rule, [trace])
    check_init(rule, init)
    check_count("record_every", record_every)
    check_count("sync_every", sync_every, MAX_IN_FLIGHT)
    if checkpoint_every is not None:
        check_count("checkpoint_every", checkpoint_every)
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
    overwrite: bool = False,
    sync_every: int = MAX_IN_FLIGHT,
    config: dict | None = None,
    progress: bool | None = None,
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
      overwrite: without ``resume``, replace an existing ``checkpoint`` (only an asynclab
        checkpoint is replaced; without it an existing file is a ConfigError).
      sync_every: wait for the devices every this many calls (1 to 16).
      config: stored in the result (the run's own settings are added).
      progress: show a progress bar over the events (None: only on a terminal or in a
        notebook).

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
    seed = _validate.seed(seed)
    if checkpoint is not None:
        path = _checkpoint.process_path(checkpoint)
        resuming = resume and path.exists()  # read and checked below, before any work
        _validate.output_path(path, "checkpoint", overwrite=overwrite or resuming,
                              kind=None if resuming else "checkpoint")
    n = trace.n_workers
    devices, ids = _resolve_devices(n, devices)
    if record_paths is None:
        record_paths = problem.flat and problem.dim <= 2
    record_paths = bool(record_paths) and jax.process_count() == 1
    noise = float(noise)
    fingerprint = _checkpoint.fingerprint(rule, problem, trace, seed=seed, noise=noise,
                                          init=init, record_every=record_every,
                                          record_paths=record_paths)
    path = None if checkpoint is None else _checkpoint.process_path(checkpoint)
    # read a checkpoint before compiling anything: a damaged or foreign one fails fast
    saved = _checkpoint.read(path, fingerprint) if resume and path.exists() else None
    starts = segment_starts(trace)
    n_segments, n_events = starts.size - 1, trace.n_events
    init_key, worker_keys = seed_keys(seed, n)
    program = _program(rule, problem, noise, record_paths, devices, worker_keys.dtype)

    values = {k: jnp.asarray(v, jnp.float32) for k, v in
              (rule.values if rule.structure is not None else {}).items()}
    server, workers, first_loss, first_metrics = _initial(rule, problem, n, init)(init_key,
                                                                                   values)
    first_loss = float(first_loss)
    first_center = np.asarray(server.center) if record_paths else None
    server = jax.tree.map(np.asarray, server)
    workers = jax.tree.map(lambda x: np.asarray(x)[ids], workers)  # this process's rows
    template = (server, workers)

    records = _Records(record_paths, record_every, n_events, problem.dim,
                       () if first_metrics is None else tuple(first_metrics))
    position, diverged_at = 0, -1
    if saved is not None:
        if saved.position > n_segments:
            raise ConfigError(f"the checkpoint {path} is at segment {saved.position} of a run "
                              f"of {n_segments}: it is damaged")
        saved = _checkpoint.restore(saved, path, template)
        server, workers = saved.state
        position, diverged_at = saved.position, saved.diverged_at
        records.restore(saved.records, int(starts[saved.position]), saved.position)

    mesh = _mesh(devices)
    plan = _replicate(_plan(trace, starts, record_every), mesh)
    shared = _replicate(Shared(server, np.int32(diverged_at), np.int32(position)), mesh)
    workers = _shard(workers, ids, mesh)
    keys = _shard(jax.random.key_data(worker_keys)[ids], ids, mesh)
    placed_values = _replicate(values, mesh)

    pending: list = []
    clock = time.perf_counter()
    step = position
    bar = progress_bar(total=n_events, initial=int(starts[position]), progress=progress,
                       desc=f"{rule.name} on {n} device(s)", unit="event", leave=False)
    try:
        while step < n_segments and diverged_at < 0:
            shared, workers, out = program(shared, workers, keys, plan, placed_values)
            pending.append(out)
            step += 1
            save_now = checkpoint is not None and (step == n_segments or (
                checkpoint_every is not None and step % checkpoint_every == 0))
            if len(pending) == sync_every or step == n_segments or save_now:
                jax.block_until_ready((shared, workers))
                now = time.perf_counter()
                records.add(pending, now - clock, step - len(pending), starts, trace)
                pending, clock = [], now
                bar.update(int(starts[step]) - bar.n)
                diverged_at = int(_replica(shared.diverged_at))
                if save_now or (checkpoint is not None and diverged_at >= 0):
                    state = (jax.tree.map(_replica, shared.server), jax.tree.map(_rows, workers))
                    _checkpoint.save(path, fingerprint, state, step, diverged_at,
                                     records.state())
    finally:
        bar.close()
    events_done = int(starts[step])
    worker_tail = (n, problem.dim) if rule.synchronous else (problem.dim,)
    loss, center_path, worker_path = records.arrays(first_loss, first_center, worker_tail,
                                                    events_done)
    metrics = None if first_metrics is None else records.metric_arrays(first_metrics)
    time_, worker, staleness = event_arrays([trace], rule.synchronous)
    result = Result(
        config={**dict(config or {}),
                **run_config(rule, problem, workers=n, seeds=[seed], noise=noise, init=init,
                             backend="pmap", record_every=record_every)},
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
        metrics=metrics,
    )
    return BackendRun(result=result, wall_time=records.wall_time(n_segments))


class _Records:
    """Loss, metrics, paths and wall time, gathered on the host at each wait."""

    def __init__(self, record_paths: bool, record_every: int, n_events: int, dim: int,
                 metric_names: tuple = ()):
        self.record_paths = record_paths
        self.metrics: dict[str, list[np.ndarray]] = {k: [] for k in metric_names}
        self.record_every, self.n_events, self.dim = record_every, n_events, dim
        self.loss: list[np.ndarray] = []
        self.centers: list[np.ndarray] = []
        self.paths: list[np.ndarray] = []
        self.times: list[np.ndarray] = []

    def add(self, pending, seconds: float, first_step: int, starts, trace) -> None:
        self.times.append(np.full(len(pending), seconds / len(pending)))
        for offset, (values, centers, local_params, metrics) in enumerate(pending):
            s = first_step + offset
            size = int(starts[s + 1] - starts[s])
            index = np.arange(starts[s], starts[s] + size)
            due = ((index + 1) % self.record_every == 0) | (index == self.n_events - 1)
            if due.any():  # else there is nothing to read back from the devices
                self.loss.append(_replica(values)[:size][due])
                for k, v in metrics.items():
                    self.metrics[k].append(_replica(v)[:size][due])
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
        state.update({f"metric_{k}": _cat(v, (0,)) for k, v in self.metrics.items()})
        if self.record_paths:
            state["center_path"] = _cat(self.centers, (0, self.dim))
            state["worker_path"] = _cat(self.paths, (0, self.dim))
        return state

    def restore(self, saved: dict, events_done: int, segments_done: int) -> None:
        """The records of a checkpoint taken after ``segments_done`` segments
        (``events_done`` events), checked against what those segments record."""
        need = {"loss", "wall_time"} | ({"center_path", "worker_path"} if self.record_paths
                                       else set())
        if need - set(saved):
            raise ConfigError(f"the checkpoint lacks the records {sorted(need - set(saved))}")
        records = events_done // self.record_every + int(
            events_done == self.n_events and self.n_events % self.record_every != 0)
        shapes = {"loss": (records,), "wall_time": (segments_done,),
                  **{f"metric_{k}": (records,) for k in self.metrics if f"metric_{k}" in saved}}
        if self.record_paths:
            shapes["center_path"] = (records, self.dim)
        for name, shape in shapes.items():
            value = saved[name]
            if value.shape != shape or value.dtype.kind != "f":
                raise ConfigError(f"the checkpoint's record {name!r} holds {value.dtype} of "
                                  f"shape {value.shape}, not the floats of shape {shape} that "
                                  f"{segments_done} segments record: it is damaged")
        self.loss, self.times = [saved["loss"]], [saved["wall_time"]]
        self.metrics = {k: [saved.get(f"metric_{k}", np.full(saved["loss"].shape, np.nan))]
                        for k in self.metrics}
        if self.record_paths:
            self.centers = [saved["center_path"]]
            self.paths = [saved["worker_path"]] if saved["worker_path"].size else []

    def wall_time(self, n_segments: int) -> np.ndarray:
        seconds = _cat(self.times, (0,))
        return np.concatenate([seconds, np.full(n_segments - seconds.size, np.nan)])

    def metric_arrays(self, first: dict) -> dict:
        """``name -> (1, records + 1)``, as the replay records them: the start's value,
        then one per record block; NaN for what a diverged run did not record."""
        n_records = math.ceil(self.n_events / self.record_every)
        out = {}
        for k, v in self.metrics.items():
            series = np.full(n_records + 1, np.nan, np.float32)
            series[0] = np.asarray(first[k])
            done = _cat(v, (0,))
            series[1:1 + done.size] = done
            out[k] = series[None]
        return out

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
