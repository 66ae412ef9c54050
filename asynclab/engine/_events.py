"""One event of one run, and a chunk of events of a batch of runs: what the replay's
compiled loop does (the scan over events, ``vmap`` over seeds, the divergence guard and
the records)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..problems import Problem
from ..rules import AXIS, Rule
from ..rules.parts import padded_workers, partial_round
from ._core import (
    all_finite,
    divergence_limit,
    initial_state,
    loss_record,
    put_row,
    row,
)

#: The entry of a chunk's traced values that holds each run's divergence bound factor
#: (``diverged_above``; popped by the chunk, which sets the bound at the first record).
DIVERGED_ABOVE_VALUE = "__diverged_above__"


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
      moved: ``(n,)`` float32, how far each worker's commits have moved the centre so
        far: the sum of ‖θ̃_{t+1} − θ̃_t‖₂ over its commits that the run applied
        (:func:`_stepped`); semi-synchronous rounds split each round's movement equally
        among the workers that counted (:func:`round_movement`); None for a plain
        synchronous rule, whose rounds weight every worker equally
        (``Result.center_share`` is then 1/n without counting).
      limit: the run's divergence bound on the size of its recorded loss
        (:func:`~asynclab.engine._core.divergence_limit` of its initial loss), set at its
        first record; infinite before.
    """

    server: object
    workers: object
    diverged_at: jax.Array
    stopped: jax.Array
    center: object
    moved: jax.Array
    limit: jax.Array = None


def _and_sum(x, y):
    return x[0] & y[0], x[1] + y[1]


def finite_and_movement(old, new) -> tuple[jax.Array, jax.Array]:
    """``(finite, step)``: whether every element of the parameter pytree ``new`` is finite
    (:func:`~asynclab.engine._core.all_finite`), and the step ‖new − old‖₂ in float32.

    Both come from one reduction over each leaf (``lax.reduce`` of the pair), which reads
    the centres once: on a CPU it costs less than the finiteness test alone. The step
    overflows to inf where it is larger than √(float32 max) ≈ 1.8e19, which happens
    only on the way to divergence; :func:`_stepped` does not count such a step.
    """
    finite, squares = [], []
    for a, b in zip(jax.tree.leaves(old), jax.tree.leaves(new), strict=True):
        f, s = jax.lax.reduce((jnp.isfinite(b), jnp.square((b - a).astype(jnp.float32))),
                              (True, jnp.float32(0)), _and_sum, tuple(range(b.ndim)))
        finite.append(f)
        squares.append(s)
    return jnp.all(jnp.stack(finite)), jnp.sqrt(sum(squares))


def credit_movement(moved, step, applied, worker_id=None, mask=None) -> jax.Array:
    """``moved`` with an event's movement ``step`` = ‖θ̃⁺ − θ̃‖₂ credited where the run
    ``applied`` it: all of it to the committing ``worker_id`` (one scatter-add), or, for a
    semi-synchronous round (``mask`` of the workers that counted), split among those
    (:func:`round_movement`). The replay and the device executor both count with it, so
    their ``center_share`` is the same bits."""
    if mask is None:
        return moved.at[worker_id].add(jnp.where(applied, step, jnp.float32(0)))
    return moved + jnp.where(applied, round_movement(step, mask, moved.shape[0]),
                             jnp.float32(0))


class Ending(NamedTuple):
    """How an event ends runs, for one run or a batch: ``stop``, it ends the run (the
    first event that diverges or is padding); ``diverges``, its centre is not finite
    (:func:`run_ends`)."""

    stop: jax.Array
    diverges: jax.Array


def _stepped(carry: Carry, server, workers, active,
             worker_id=None, mask=None) -> tuple[Carry, Ending]:
    """An event's result and how it ends runs, for one seed: ``(carry, ending)``.

    The carry takes the event's states and movement; whether the run ends here is in
    ``ending`` (:func:`run_ends`), which :func:`end_runs` applies after the event to the
    batch: the centre kept from before it, ``diverged_at``, ``stopped``. No select over
    the states: they run on.

    Where the carry has ``moved`` (asynchronous rules), an event that the run applies
    (live, with a finite centre and a finite movement) adds its movement to the entry of
    the committing ``worker_id`` (one scatter-add), or (a semi-synchronous round, its
    ``mask`` of the workers that counted) :func:`round_movement`; any other adds 0.
    """
    running = ~carry.stopped
    moved = carry.moved
    if moved is None:
        finite = all_finite(server.center)
    else:
        finite, step = finite_and_movement(carry.server.center, server.center)
        applied = running & active & finite & jnp.isfinite(step)
        moved = credit_movement(moved, step, applied, worker_id, mask)
    return (carry._replace(server=server, workers=workers, moved=moved),
            Ending(*run_ends(running, finite, active)))


def run_ends(running, finite, active, padding_ends: bool = True):
    """``(stop, diverges)`` of one event of one run (or element-wise of a batch).

    A live event (the run ``running``, the event ``active``) whose centre is not
    ``finite`` diverges. ``stop`` is true at the event that ends the run: that one, or
    (``padding_ends``, the replay: its shorter traces end in inactive padding) the first
    inactive one.
    """
    live = running & active
    diverges = live & ~finite
    ends = running & ~active if padding_ends else jnp.asarray(False)
    return ends | diverges, diverges


def divergence_guard(running, finite, active, index, diverged_at, padding_ends: bool = True):
    """The divergence guard of one event of one run: ``(stop, diverged_at)``, from
    :func:`run_ends` as the replay's :func:`end_runs`, so that the replay and the device
    executor report the same event and the same centre: a run that diverges is marked
    at ``index``. The caller keeps the centre from before a stop (:func:`keep_center`, a
    select once per run) and lets the states run on.
    """
    stop, diverges = run_ends(running, finite, active, padding_ends)
    return stop, jnp.where(diverges, index, diverged_at)


def keep_center(stop, before, kept):
    """The centre a run keeps: ``before`` (the centre before this event) where it
    ``stop``-s here, else the one it ``kept`` so far, for one run or a batch (a leading
    axis). The select happens only at an event where a run stops (``lax.cond`` on the
    whole batch): once per run, not at every event."""
    return jax.lax.cond(jnp.any(stop), lambda: _batched_select(stop, before, kept),
                        lambda: kept)


def _batched_select(keep, new, old, where=jnp.where):
    """``new`` where ``keep`` else ``old``, per batch element (leading axis); ``where``
    ``np.where`` for host arrays (the replay's reported centre)."""
    def leaf(a, b):
        return where(keep.reshape(keep.shape + (1,) * (a.ndim - keep.ndim)), a, b)

    return jax.tree.map(leaf, new, old)


def end_runs(before: Carry, after: Carry, ending: Ending, index) -> Carry:
    """``after`` (an event's result, :func:`_stepped`) with the runs that ``ending``
    stops ended: their centre the one from ``before`` the event, ``stopped`` set, and
    ``diverged_at`` the event's ``index`` where the run diverges.

    For one run or a batch (a leading axis). All three change only at an event where a
    run stops (``lax.cond`` on the whole batch): once per run, not at every event, where
    they are neither read nor written.
    """
    def end():
        return (_batched_select(ending.stop, before.server.center, before.center),
                jnp.where(ending.diverges, index, before.diverged_at),
                before.stopped | ending.stop)

    center, diverged_at, stopped = jax.lax.cond(
        jnp.any(ending.stop), end, lambda: (before.center, before.diverged_at,
                                            before.stopped))
    return after._replace(center=center, diverged_at=diverged_at, stopped=stopped)


def reported_center(carry: Carry):
    """The centre a run reports: the server's while it runs, the kept one once ended."""
    return _batched_select(carry.stopped, carry.center, carry.server.center)


def _commit(rule, gradient):
    """One commit of one seed, also returning the exchange's
    :class:`~asynclab.rules.ExchangeInfo`: ``(carry, ending, local params, info)``, the
    carry before :func:`end_runs`."""

    def commit(carry: Carry, worker_keys, worker_id, active, index):
        before = row(carry.workers, worker_id)
        worker = rule.local(before, gradient, worker_keys[worker_id], worker_id)
        server, worker_after, info = rule.exchange(carry.server, worker)
        workers = put_row(carry.workers, worker_id, worker_after)
        carry, ending = _stepped(carry, server, workers, active, worker_id)
        return carry, ending, worker.params, info

    return commit


def asynchronous_event(rule, gradient):
    """One commit: local work of the committing worker, then its exchange."""
    commit = _commit(rule, gradient)

    def event(carry: Carry, worker_keys, worker_id, active, index):
        carry, ending, params, _ = commit(carry, worker_keys, worker_id, active, index)
        return carry, ending, params

    return event


def rejoining_event(rule, gradient):
    """One commit, then the rejoin pulls that follow it (a trace with failures).

    The event's ``rejoin`` holds ``K`` worker ids (-1 for none): the workers that come
    back up after this commit, before the next. Each starts again as a worker starts a
    run, from the current centre (``rule.init_worker``: its parameters and pulled
    centre the centre, its pulled clock the clock, a fresh inner optimizer), keeping
    its count of local steps; the server does not change. A branch per slot (a select
    when each run has its own schedule), so this is a program of its own: the plain path
    (:func:`asynchronous_event`) has none.
    """
    commit = _commit(rule, gradient)

    def event(carry: Carry, worker_keys, worker_id, active, index, rejoin):
        carry, ending, params, _ = commit(carry, worker_keys, worker_id, active, index)
        server = carry.server

        def pull(workers, k):
            fresh = rule.init_worker(server.center, server)
            return put_row(workers, k, fresh._replace(steps=row(workers, k).steps))

        workers = carry.workers
        for j in range(rejoin.shape[-1]):
            w = rejoin[j]
            # one schedule for the batch: w is not batched and this is a real branch,
            # taken only at a rejoin; one schedule per run: a select
            workers = jax.lax.cond(w >= 0, pull, lambda ws, k: ws, workers,
                                   jnp.maximum(w, 0))
        return carry._replace(workers=workers), ending, params

    return event


def counted_of(mask, worker_id):
    """Whether worker ``worker_id`` counted in a semi-synchronous round whose event holds
    ``mask``, bit k for worker k (:func:`~asynclab.engine._core.round_masks`)."""
    return (jnp.right_shift(mask, worker_id) & 1) == 1


def round_movement(step, mask, n_workers: int) -> jax.Array:
    """A semi-synchronous round's movement of the centre, ``step`` = ‖θ̃⁺ − θ̃‖₂, split
    equally among the K workers that counted (``mask``, bit k for worker k): ``(n,)``
    float32, step / K for each of them and 0 for the others (all 0 when K = 0)."""
    counted = counted_of(mask, jnp.arange(n_workers, dtype=jnp.int32))
    k = jnp.maximum(jnp.sum(counted, dtype=jnp.int32), 1).astype(jnp.float32)
    return jnp.where(counted, step / k, jnp.float32(0))


def masked_event(rule, gradient, n_workers, stale: bool):
    """One semi-synchronous round: every worker's local work, then the synchronisation
    over the workers that counted; the event's ``worker_id`` holds the round's bit mask
    of them (:func:`asynclab.rules.parts.partial_round`). ``stale``: late work counts in
    a later round (else it is discarded)."""
    ids = jnp.arange(n_workers, dtype=jnp.int32)

    def one_counted(server, worker, key, worker_id, mask):
        local = rule.local(worker, gradient, key, worker_id)
        server, after = partial_round(rule.exchange, server, worker, local,
                                      counted_of(mask, worker_id), stale)
        return server, after, local.params

    rounds = jax.vmap(one_counted, in_axes=(None, 0, 0, 0, None), out_axes=(None, 0, 0),
                      axis_name=AXIS)

    def masked(carry: Carry, worker_keys, worker_id, active, index, count=None):
        del count  # the mask holds real workers only
        server, workers, local_params = rounds(carry.server, carry.workers, worker_keys,
                                               ids, worker_id)
        carry, ending = _stepped(carry, server, workers, active, mask=worker_id)
        return carry, ending, local_params

    return masked


def synchronous_event(rule, gradient, n_workers, stepwise: bool = False,
                      padded: bool = False):
    """One round: every worker's local work, then the collective synchronisation.

    ``stepwise``: the event is one local step of every worker (``rule`` does one step per
    round), and the synchronisation happens only where the event's ``worker_id`` is
    positive: the last step of a round of the original rule (see
    ``asynclab.engine.replay(..., stepwise=True)``). ``padded``: ``n_workers`` is a padded
    worker axis; the event's ``count`` says how many of its workers are real, and the
    exchange averages over those (:func:`asynclab.rules.parts.padded_workers`).
    Semi-synchronous rounds are :func:`masked_event`'s.
    """
    ids = jnp.arange(n_workers, dtype=jnp.int32)

    def exchange(server, worker, worker_id, count):
        if not padded:
            return rule.exchange(server, worker)
        with padded_workers(worker_id < count, count):
            return rule.exchange(server, worker)

    if not stepwise:
        def one_worker(server, worker, key, worker_id, count):
            worker = rule.local(worker, gradient, key, worker_id)
            server, worker_after, _ = exchange(server, worker, worker_id, count)
            return server, worker_after, worker.params

        all_workers = jax.vmap(one_worker, in_axes=(None, 0, 0, 0, None),
                               out_axes=(None, 0, 0), axis_name=AXIS)

        def event(carry: Carry, worker_keys, worker_id, active, index, count=None):
            del worker_id
            server, workers, local_params = all_workers(carry.server, carry.workers,
                                                        worker_keys, ids, count)
            carry, ending = _stepped(carry, server, workers, active)
            return carry, ending, local_params

        return event

    local_all = jax.vmap(lambda worker, key, i: rule.local(worker, gradient, key, i))

    def exchange_one(server, worker, worker_id, count):
        server, worker_after, _ = exchange(server, worker, worker_id, count)
        return server, worker_after

    exchange_all = jax.vmap(exchange_one, in_axes=(None, 0, 0, None), out_axes=(None, 0),
                            axis_name=AXIS)

    def stepped(carry: Carry, worker_keys, worker_id, active, index, count=None):
        workers = local_all(carry.workers, worker_keys, ids)
        # between synchronisations a worker keeps the centre it last pulled (its local
        # work may hand its starting point to the exchange, which stores what it keeps)
        server, after = jax.lax.cond(
            worker_id > 0, lambda: exchange_all(carry.server, workers, ids, count),
            lambda: (carry.server, workers._replace(pulled_center=carry.workers.pulled_center)))
        carry, ending = _stepped(carry, server, after, active)
        return carry, ending, workers.params

    return stepped


def chunk_runner(event, loss, record_paths: bool, evaluate=None, unroll: int = 1,
                 shared: bool = True, arrays: int = 3):
    """A function replaying ``(blocks, k)`` events of a batch of runs and recording after
    every block: the central loss, with ``evaluate`` the centre's metrics (a dict), with
    ``record_paths`` the centre and the workers' local parameters.

    ``chunk(carry, worker_keys, events, values, first)`` returns the carry and the
    records of ``blocks + 1`` states: the one it was given, then the one after each block.
    The first is measured only where ``first`` (a run's first chunk: its initial record)
    and is NaN otherwise; the loss and the metrics are measured at one place of the
    program, so that a net's forward pass compiles once (the initial state's program
    measures nothing). The first state's loss is recorded as it is (no divergence is
    marked before the first event); the workers' paths are those of the blocks.

    ``event(carry, worker_keys, worker_id, active, index, values)`` is one event of one
    run, returning ``(carry, ending, local params)``; the loop over events runs outside
    its ``vmap`` over the batch and applies the endings there (:func:`end_runs`), so that
    the divergence guard's select happens only where a run stops.
    ``shared``: one event sequence for the batch (else one per batch element, ``(B,
    blocks, k)``). ``arrays``: event arrays per event (3: worker, active, index; 4 with
    the rejoins of a trace with failures, :func:`rejoining_event`). ``unroll``: events
    per iteration of the compiled loop (``lax.scan(unroll=...)``; the same arithmetic
    per event).
    """
    axis = None if shared else 0
    batched = jax.vmap(event, in_axes=(0, 0) + (axis,) * arrays + (0,))
    batched_loss = jax.vmap(loss)
    batched_evaluate = evaluate and jax.vmap(evaluate)

    def chunk(carry: Carry, worker_keys, events, values, first):
        values = dict(values)
        diverged_above = values.pop(DIVERGED_ABOVE_VALUE)
        batch = carry.diverged_at.shape[0]
        size = sum(leaf.size for leaf in jax.tree.leaves(carry.center)) // batch
        if shared and batch == 1 and size >= ALONE_MIN_PARAMETERS:
            # one run: no vmap (see _one_run); the batch axis goes, and comes back
            carry, worker_keys, values, diverged_above = _one_run(
                (carry, worker_keys, values, diverged_above))
            carry, out = replay(event, loss, evaluate, True, carry, worker_keys, events,
                                values, diverged_above, first)
            return jax.tree.map(lambda x: x[None], (carry, out))  # (1, blocks + 1, ...)
        if shared:
            held, one = _shared_counts(event, carry, arrays)
            try:  # the event is traced once, with the counts held once ...
                carry_held, out = replay(held, batched_loss, batched_evaluate, False, one,
                                         worker_keys, events, values, diverged_above, first)
            except ValueError:  # ... unless vmap finds them batched: then they are per run
                pass
            else:  # back to counts per run
                return _per_run_counts(carry_held, batch), out
        else:  # (B, blocks, k, ...) -> (blocks, k, B, ...): loops slice leading axes
            events = tuple(jnp.moveaxis(a, 0, 2) for a in events)
        return replay(batched, batched_loss, batched_evaluate, False, carry, worker_keys,
                      events, values, diverged_above, first)

    def replay(per_run, loss_of, evaluate_of, alone: bool, carry, worker_keys, events, values,
               diverged_above, first):
        """The chunk's events with ``per_run`` (the event of a run, or of a batch), and its
        records: ``(carry, (value, center, paths, metrics))``, records batch first unless
        ``alone``."""
        # the output shapes of the block and of the measurement, from their own traces:
        # lax.cond traces its true branch first, so the false one (no_block, unmeasured)
        # finds them at hand; were they not, it traces the true branch for its shapes
        traced, measured = [], []

        def run_block(carry, block_events):
            def step(carry, e):
                after, ending, path = per_run(carry, worker_keys, *e, values)
                return end_runs(carry, after, ending, e[2]), (path if record_paths else None)

            out = jax.lax.scan(step, carry, block_events,
                               unroll=min(unroll, block_events[0].shape[0]))
            traced.append(_shapes(out[1]))
            return out

        def no_block(carry, block_events):
            if not record_paths:  # nothing to shape
                return carry, None
            shapes = traced[0] if traced else jax.eval_shape(run_block, carry, block_events)[1]
            return carry, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        def measure(center):
            out = loss_of(center), (None if evaluate is None else evaluate_of(center))
            measured.append(_shapes(out))
            return out

        def unmeasured(center):
            shapes = measured[0] if measured else jax.eval_shape(measure, center)
            return jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), shapes)

        def iteration(carry, i):
            # i = 0: the state given; i > 0: block i - 1's events, then the state after
            later = i > 0
            block_events = tuple(a[jnp.maximum(i - 1, 0)] for a in events)
            carry, paths = jax.lax.cond(later, run_block, no_block, carry, block_events)
            center = reported_center(carry)
            value, metrics = jax.lax.cond(later | first, measure, unmeasured, center)
            # the bound is set at a run's first record, from its initial loss
            limit = jnp.where(first & ~later, divergence_limit(value, diverged_above),
                              carry.limit)
            carry = carry._replace(limit=limit)
            recorded, diverged_at = loss_record(value, carry.diverged_at, block_events[2][-1],
                                                limit)
            # a loss that overflows or leaves the bound while the centre is finite ends the
            # run here
            fresh = later & (diverged_at >= 0) & (carry.diverged_at < 0)
            diverged_at = jnp.where(later, diverged_at, carry.diverged_at)
            carry = carry._replace(diverged_at=diverged_at, stopped=carry.stopped | fresh,
                                   center=_batched_select(fresh, center, carry.center))
            value = jnp.where(later, recorded, value)
            if metrics is not None:
                gone = carry.diverged_at >= 0
                metrics = {k: jnp.where(gone, jnp.nan, v) for k, v in metrics.items()}
            if paths is not None and not alone:  # (k, B, ...) -> (B, k, ...)
                paths = jnp.moveaxis(paths, 1, 0)
            return carry, (value, center if record_paths else None, paths, metrics)

        carry, out = jax.lax.scan(iteration, carry, jnp.arange(events[0].shape[0] + 1))
        value, center, paths, metrics = out
        paths = None if paths is None else paths[1:]  # iteration 0 ran no events
        out = (value, center, paths, metrics)
        if alone:
            return carry, out
        # records (blocks + 1, B, ...) -> (B, blocks + 1, ...)
        return carry, jax.tree.map(lambda x: jnp.moveaxis(x, 1, 0), out)

    return chunk


def _shapes(tree):
    """``tree``'s shapes and dtypes (``jax.ShapeDtypeStruct``s), tracers or not."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


#: A replay of one run with at least this many parameters runs its events as written,
#: without ``vmap`` (:func:`_one_run`). Batched with a leading axis of one, a net compiled
#: differently on a CPU: XLA copied each convolution's input patches before stacking them
#: and fused the max pool's gradient apart from its consumers, and the unbatched form was
#: the faster for large nets (``benchmarks/nets.py``, ``benchmarks/peers.py``). Below
#: this size the two forms went either way by run, so small problems keep the vmap (and
#: the replay gives a lone seed a second row: see ``engine._replay._replay_batch``).
ALONE_MIN_PARAMETERS = 100_000


def _one_run(tree):
    """A batch of one run without its batch axis: the axis goes once per chunk, outside
    the loop (so that the loop still updates its state in place), and comes back after
    it. The run does the arithmetic it does in a batch of many: its numbers are its row
    of a batch bit for bit for Beale and an MLP (``tests/test_engine_rows.py``); a small
    CNN with Adam differs in the last bits alone and in a batch, with or without vmap."""
    return jax.tree.map(lambda a: a[0], tree)


#: The integer counters of a rule's states that a batch sharing one event sequence holds
#: once (:func:`_shared_counts`): ``(state, field)``, the carry's ``workers`` or ``server``.
COUNTS = (("workers", "steps"), ("workers", "pulled_clock"), ("server", "clock"))


def _counts(carry: Carry):
    """``(state, field, value)`` for each of :data:`COUNTS` that ``carry`` has."""
    for state, field in COUNTS:
        value = getattr(getattr(carry, state), field, None)
        if value is not None:
            yield state, field, value


def _map_counts(carry: Carry, fn) -> Carry:
    """``carry`` with ``fn`` applied to every leaf of its :data:`COUNTS` (those it has)."""
    states = {"workers": carry.workers, "server": carry.server}
    for state, field, value in _counts(carry):
        states[state] = states[state]._replace(**{field: jax.tree.map(fn, value)})
    return carry._replace(**states)


def _shared_counts(event, carry: Carry, arrays: int):
    """``(held, one)``: the event ``vmap``-ed over a batch that shares one event sequence,
    with the rule's integer counters (:data:`COUNTS`: the workers' local step counts and
    pulled clocks, the server's clock) held once for the batch (their first run's, the
    same in every run: they start at 0 and advance with the shared events), and
    ``carry`` with its counters held so.

    The step counts select each step's mini-batch; held per run, they make every
    data-dependent branch of the batch draw (``batch_indices``: a second epoch's
    permutation only where a batch reaches into it) a select that computes both sides
    for every run at every event. Held once, the branch stays a branch, and the clocks'
    updates are one number each instead of one per run. Where a rule's counters do
    depend on the run (a traced hyperparameter deciding how many steps a worker takes),
    tracing ``held`` raises vmap's ValueError and the chunk keeps them per run
    (:func:`chunk_runner`), with the same numbers.
    """
    one = _map_counts(carry, lambda value: value[0])
    axes = _map_counts(jax.tree.map(lambda _: 0, carry), lambda _: None)
    held = jax.vmap(event, in_axes=(axes, 0) + (None,) * arrays + (0,),
                    out_axes=(axes, 0, 0))
    return held, one


def unequal_counts(carry: Carry, host) -> list[str]:
    """The :data:`COUNTS` (``"state.field"``) whose values differ between the runs of a
    batch's ``carry`` (read with ``host``, a device array to NumPy): a batch that shares
    one schedule holds its counters once, from its first run (:func:`_shared_counts`),
    which is right only where every run starts them alike."""
    return [f"{state}.{field}" for state, field, value in _counts(carry)
            if not all((leaf == leaf[:1]).all()
                       for leaf in map(host, jax.tree.leaves(value)))]


def _per_run_counts(carry: Carry, batch: int) -> Carry:
    """``carry`` (counters held once, :func:`_shared_counts`) with a copy for each of the
    ``batch`` runs."""
    return _map_counts(carry, lambda value: jnp.broadcast_to(value, (batch,) + value.shape))


def _initial_carry(rule: Rule, problem: Problem, key, n_workers: int, init: str,
                   count=None, counts: bool = True) -> Carry:
    """The carry before the first event; ``counts``: it counts the centre's movement
    (``moved``; the trace's kind says whether, see ``EventKind.counts_movement``)."""
    server, workers = initial_state(rule, problem, key, n_workers, init, count)
    return Carry(server, workers, jnp.asarray(-1, jnp.int32), jnp.asarray(False),
                 server.center, jnp.zeros(n_workers, jnp.float32) if counts else None,
                 jnp.asarray(jnp.inf, jnp.float32))
