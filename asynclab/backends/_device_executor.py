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
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _files, _validate
from .._errors import ConfigError
from .._progress import progress_bar
from ..cluster import COMMITS, ROUNDS, ROUNDS_DISCARD, ROUNDS_STALE, RoundTrace, Trace, goodput
from ..engine import Result
from ..engine._core import (
    DIVERGED_ABOVE,
    check_count,
    check_init,
    check_rule,
    check_traces,
    divergence_limit,
    event_arrays,
    run_config,
    seed_keys,
)
from ..engine._replay import center_shares, check_diverged_above
from ..problems import Problem
from ..rules import Rule
from . import _checkpoint
from ._device_mesh import _mesh, _replica, _replicate, _resolve_devices, _rows, _shard
from ._device_programs import DIVERGENCE_LIMIT, Shared, _initial, _program
from ._device_records import _Records
from ._segments import _plan, segment_starts

#: The kinds of traces the device executor replays (``trace.kind``).
DEVICE_KINDS = (COMMITS, ROUNDS, ROUNDS_DISCARD, ROUNDS_STALE)

#: What became of late work in a semi-synchronous round, by the trace's kind.
LATE = {ROUNDS_DISCARD: "discard", ROUNDS_STALE: "stale"}

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


def _check(rule, problem: Problem, trace, init: str, record_every, sync_every, checkpoint,
           checkpoint_every, resume) -> None:
    check_rule(rule, problem, "the pmap backend")
    check_traces(rule, [trace])
    if trace.kind not in DEVICE_KINDS:
        raise ConfigError(f"trace: the pmap backend replays traces of "
                          f"{', '.join(DEVICE_KINDS)}, not of {trace.kind} (rejoin pulls after "
                          "failures); replay it with the simulator's replay")
    check_init(rule, init)
    check_count("record_every", record_every)
    check_count("sync_every", sync_every, MAX_IN_FLIGHT)
    if checkpoint_every is not None:
        check_count("checkpoint_every", checkpoint_every)
    if (checkpoint_every is not None or resume) and checkpoint is None:
        raise ConfigError("checkpoint_every and resume need a checkpoint path")


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
    diverged_above: float | None = DIVERGED_ABOVE,
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
      diverged_above: the divergence bound, as for :func:`asynclab.replay`.

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
    diverged_above = check_diverged_above(diverged_above)
    if checkpoint is not None:
        path = _checkpoint.process_path(checkpoint)
        resuming = resume and path.exists()  # read and checked below, before any work
        if resuming:
            _files.input_file(path, "checkpoint")
            _files.writable_folder(path.parent, "checkpoint", for_file=path)
        else:
            _files.output_path(path, "checkpoint", kind="checkpoint", overwrite=overwrite)
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
    late = LATE.get(trace.kind)
    program = _program(rule, problem, noise, record_paths, devices, worker_keys.dtype, late)

    values = {k: jnp.asarray(v, jnp.float32) for k, v in
              (rule.values if rule.structure is not None else {}).items()}
    server, workers, first_loss, first_metrics = _initial(rule, problem, n, init)(init_key,
                                                                                   values)
    first_loss = float(first_loss)
    limit = np.float32(divergence_limit(first_loss, np.inf if diverged_above is None
                                        else diverged_above))
    first_center = np.asarray(server.center) if record_paths else None
    server = jax.tree.map(np.asarray, server)
    workers = jax.tree.map(lambda x: np.asarray(x)[ids], workers)  # this process's rows
    template = (server, workers)

    records = _Records(record_paths, record_every, n_events, problem.dim,
                       () if first_metrics is None else tuple(first_metrics))
    position, diverged_at = 0, -1
    # how far each worker's commits moved the centre (asynchronous rules, semi-synchronous
    # rounds; the replay's Carry.moved); None where a resumed checkpoint predates it
    moved = None if rule.synchronous and late is None else np.zeros(n, np.float32)
    if saved is not None:
        if saved.position > n_segments:
            raise ConfigError(f"the checkpoint {path} is at segment {saved.position} of a run "
                              f"of {n_segments}: it is damaged")
        saved = _checkpoint.restore(saved, path, template)
        server, workers = saved.state
        position, diverged_at = saved.position, saved.diverged_at
        records.restore(saved.records, int(starts[saved.position]), saved.position)
        if moved is not None:
            kept = saved.records.get("moved")
            moved = (np.asarray(kept, np.float32) if kept is not None and kept.shape == (n,)
                     else None)

    mesh = _mesh(devices)
    plan = _replicate(_plan(trace, starts, record_every), mesh)
    counted = moved is not None
    shared = _replicate(Shared(server, np.int32(diverged_at), np.int32(position),
                               server.center, moved if counted else None), mesh)
    workers = _shard(workers, ids, mesh)
    keys = _shard(jax.random.key_data(worker_keys)[ids], ids, mesh)
    placed_values = _replicate({**values, DIVERGENCE_LIMIT: limit}, mesh)

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
                    state = (jax.tree.map(_replica, _reported(shared)),
                             jax.tree.map(_rows, workers))
                    kept = records.state()
                    if counted:
                        kept["moved"] = np.asarray(_replica(shared.moved))
                    _checkpoint.save(path, fingerprint, state, step, diverged_at, kept,
                                     overwrite=True)  # consent: checked before the run
    finally:
        bar.close()
    events_done = int(starts[step])
    worker_tail = (n, problem.dim) if rule.synchronous else (problem.dim,)
    loss, center_path, worker_path = records.arrays(first_loss, first_center, worker_tail,
                                                    events_done)
    metrics = None if first_metrics is None else records.metric_arrays(first_metrics)
    time_, worker, staleness = event_arrays([trace], rule.synchronous)
    useful = goodput(trace)
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
        final_params=jax.tree.map(lambda x: _replica(x)[None], _reported(shared).center),
        diverged_at=np.asarray([diverged_at], np.int64),
        center_path=center_path,
        worker_path=worker_path,
        metrics=metrics,
        center_share=_center_share(rule, n, shared.moved if counted else None, late),
        # the schedule's goodput, as the replay reports it (computed from the trace)
        goodput=np.asarray([useful[0]], np.float64),
        goodput_per_device_second=np.asarray([useful[1]], np.float64),
        round_staleness=(np.asarray(trace.staleness, np.int32)[None] if late is not None
                         else None),
    )
    return BackendRun(result=result, wall_time=records.wall_time(n_segments))


def _reported(shared: Shared):
    """The server a run reports and checkpoints: the one it runs with, or once diverged
    holding the last finite centre it kept (the states ran on past it)."""
    if int(_replica(shared.diverged_at)) < 0:
        return shared.server
    return shared.server._replace(center=shared.center)


def _center_share(rule, n: int, moved, late=None):
    """``Result.center_share`` as the replay computes it: from the devices' ``moved``
    (asynchronous, semi-synchronous), 1/n (synchronous), or None (a resumed checkpoint
    without it)."""
    if rule.synchronous and late is None:
        return center_shares(np.ones((1, n), np.float32))
    if moved is None:
        return None
    return center_shares(np.asarray(_replica(moved))[None], rule.group_size)
