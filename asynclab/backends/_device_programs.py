"""The device executor's per-call programs: one synchronous round, or one asynchronous
segment, as ``jax.shard_map`` programs of the rules' own functions (cached)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .._programs import Programs
from ..engine import structure_key, with_values
from ..engine._core import (
    compiler_options,
    initial_state,
    recorded_loss,
    row,
)
from ..engine._events import (
    counted_of,
    credit_movement,
    divergence_guard,
    finite_and_movement,
    keep_center,
)
from ..problems import Problem, stochastic_gradient
from ..rules import AXIS, Rule
from ..rules.parts import partial_round
from ._device_mesh import _mesh, _over_devices
from ._segments import Plan


class Shared(NamedTuple):
    """What every device holds the same copy of: the server, the run's position, the
    centre it keeps once diverged (the replay's ``Carry.center``; the states run on past
    it), and (asynchronous rules, semi-synchronous rounds) how far each worker's commits
    moved the centre, as the replay's ``Carry.moved``."""

    server: Any
    diverged_at: Any
    step: Any
    center: Any
    moved: Any = None


def _guarded(shared_center, diverged_at, old_center, new_center, live, index):
    """The replay's divergence guard of one event on the devices: ``(finite, step,
    diverged_at, kept centre)`` (:func:`~asynclab.engine._events.divergence_guard`; a
    device run ends at its trace's end, not at padding)."""
    finite, step = finite_and_movement(old_center, new_center)
    stop, diverged_at = divergence_guard(diverged_at < 0, finite, live, index, diverged_at,
                                         padding_ends=False)
    return finite, step, diverged_at, keep_center(stop, old_center, shared_center)


def _record(loss, evaluate, center, diverged_at, kept, index, live, plan: Plan, limit=None):
    """``(loss, metrics, diverged_at, kept centre)``: the central loss and the problem's
    metrics of the centre (a dict, empty without ``evaluate``) if event ``index`` closes a
    record block, else NaN.

    As in the replay: a loss that is not finite or leaves the bound ``limit`` marks the
    run diverged at the block's last event, and the run keeps that event's centre (its
    states run on); a diverged run records NaN.
    """
    value, metrics, after = _measured(loss, evaluate, center, diverged_at, index, live, plan,
                                      limit)
    return value, metrics, after, keep_center((diverged_at < 0) & (after >= 0), center, kept)


def _measured(loss, evaluate, center, diverged_at, index, live, plan: Plan, limit):
    """:func:`_record`'s ``(loss, metrics, diverged_at)``, without the kept centre."""
    every = plan.record_every
    due = live & (((index + 1) % every == 0) | (index == plan.n_events - 1))

    def measure(diverged_at):
        value, diverged_at = recorded_loss(loss, center, diverged_at,
                                           (index // every + 1) * every - 1, limit)
        metrics = {} if evaluate is None else {
            k: jnp.where(diverged_at >= 0, jnp.nan, v).astype(jnp.float32)
            for k, v in evaluate(center).items()}
        return value.astype(jnp.float32), metrics, diverged_at

    def skip(diverged_at):
        metrics = {} if evaluate is None else {
            k: jnp.float32(jnp.nan) for k in jax.eval_shape(evaluate, center)}
        return jnp.float32(jnp.nan), metrics, diverged_at

    return jax.lax.cond(due, measure, skip, diverged_at)


def round_program(rule: Rule, gradient, loss, evaluate, record_paths: bool, late=None,
                  limit=None):
    """One synchronous round on one device: local work, collective synchronisation.

    ``late`` ("discard", "stale"): semi-synchronous rounds; the plan's slot holds the
    round's mask of the workers that counted, and the exchange averages over those
    (:func:`asynclab.rules.parts.partial_round`, the replay's function), and the round's
    movement of the centre is split among those (the replay's
    :func:`~asynclab.engine._events.round_movement`)."""

    def round_(shared: Shared, worker, key, plan: Plan):
        me = jax.lax.axis_index(AXIS)
        index = plan.start[shared.step]
        local = rule.local(worker, gradient, key, me)
        if late is None:
            server, after, _ = rule.exchange(shared.server, local)
        else:
            counted = counted_of(plan.order[shared.step, 0], me.astype(jnp.int32))
            server, after = partial_round(rule.exchange, shared.server, worker, local,
                                          counted, late == "stale")
        running = shared.diverged_at < 0
        finite, step, diverged_at, kept = _guarded(shared.center, shared.diverged_at,
                                                   shared.server.center, server.center, True,
                                                   index)
        moved = shared.moved
        if late is not None and moved is not None:
            moved = credit_movement(moved, step, running & finite & jnp.isfinite(step),
                                    mask=plan.order[shared.step, 0])
        worker = after
        value, metrics, diverged_at, kept = _record(loss, evaluate, server.center,
                                                    diverged_at, kept, index, True, plan, limit)
        center = server.center[None] if record_paths else ()
        local_params = local.params if record_paths else ()
        metrics = {k: v[None] for k, v in metrics.items()}
        return Shared(server, diverged_at, shared.step + 1, kept, moved), worker, (
            value[None], center, local_params, metrics)

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


def segment_program(rule: Rule, gradient, loss, evaluate, record_paths: bool, limit=None):
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
            server, mine, diverged_at, kept, moved = state
            committer, index, live_slot = order[j], start + j, active[j]

            def apply(server):
                new_server, new_worker, _ = rule.exchange(server, row(gathered, committer))
                return new_server, new_worker

            # a padding slot is skipped (a branch); a diverged run's states run on
            new_server, new_worker = jax.lax.cond(live_slot, apply,
                                                  lambda server: (server, mine), server)
            running = diverged_at < 0
            finite, step, diverged_at, kept = _guarded(kept, diverged_at, server.center,
                                                       new_server.center, live_slot, index)
            if moved is not None:  # the replay's count (asynclab.engine._events._stepped)
                moved = credit_movement(moved, step,
                                        running & live_slot & finite & jnp.isfinite(step),
                                        committer)
            mine = jax.lax.cond(live_slot & (committer == me), lambda: new_worker,
                                lambda: mine)
            server = new_server
            value, metrics, diverged_at, kept = _record(loss, evaluate, server.center,
                                                        diverged_at, kept, index, live_slot,
                                                        plan, limit)
            return (server, mine, diverged_at, kept, moved), (
                value, server.center if record_paths else (), metrics)

        slots = jnp.arange(order.shape[0], dtype=jnp.int32)
        (server, worker, diverged_at, kept, moved), (values, centers, metrics) = jax.lax.scan(
            slot, (shared.server, worker, shared.diverged_at, shared.center, shared.moved),
            slots)
        local_params = local.params if record_paths else ()
        return Shared(server, diverged_at, shared.step + 1, kept, moved), worker, (
            values, centers, local_params, metrics)

    return segment


#: The entry of a device program's traced values that holds the run's divergence bound
#: (:func:`~asynclab.engine._core.divergence_limit` of its initial loss).
DIVERGENCE_LIMIT = "__divergence_limit__"

#: the compiled rounds, segments and initial states
_PROGRAMS = Programs(16)


def _program(rule: Rule, problem: Problem, noise: float, record_paths: bool, devices,
             key_dtype, late=None):
    """The round or segment as a ``shard_map`` program, cached by the rule's structure,
    problem and devices; the rule's traced hyperparameters are its last (replicated)
    argument, as in the replay, so both compute with the same values the same way.

    Keys travel as their raw data (``uint32``) and are wrapped on the devices."""
    key = (structure_key(rule), id(problem), noise, record_paths, tuple(d.id for d in devices),
           key_dtype, late)

    def build():
        gradient = stochastic_gradient(problem, noise)
        make = round_program if rule.synchronous else segment_program

        def program(shared, worker, key_data, plan, values):
            values = dict(values)
            limit = values.pop(DIVERGENCE_LIMIT)
            extra = (late,) if rule.synchronous else ()
            step = make(with_values(rule, values), gradient, problem.loss, problem.evaluate,
                        record_paths, *extra, limit=limit)
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
