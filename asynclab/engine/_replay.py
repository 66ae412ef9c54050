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

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import numpy as np

from .. import _validate
from .._errors import ConfigError
from .._progress import note, progress_bar
from ..cluster import COMMITS, ROUNDS, ROUNDS_DISCARD, ROUNDS_STALE, RoundTrace, Trace, goodput
from ..problems import Problem
from ..rules import Rule
from . import _events
from ._budget import check_run_memory
from ._compiled import (
    NOISE_STD,
    WORKERS,
    _compiled_chunk,
    _initial_carry_batch,
    event_unroll,
    hyperparameter_values,
    traced_noise,
)
from ._core import (
    DIVERGED_ABOVE,
    INITS,
    check_init,
    check_traces,
    default_record_every,
    event_arrays,
    run_config,
    seed_key_data,
)
from ._events import DIVERGED_ABOVE_VALUE
from ._kinds import Layout, batch_kind, event_kind
from ._layout import _host, _put, _spans_processes, replay_devices
from ._result import Result


def _final_center(carry):
    """The centre each run reports at the end (``_events.reported_center``), selected on the
    host: the kept one where a run stopped, else the server's."""
    stopped, server = _host(carry.stopped), _host(carry.server.center)
    if not stopped.any():
        return server
    return _events._batched_select(stopped, _host(carry.center), server, where=np.where)


def _bound(diverged_above) -> float:
    """The divergence bound's factor as the chunk reads it: infinite for None."""
    return np.inf if diverged_above is None else float(diverged_above)


def check_diverged_above(value) -> float | None:
    """``diverged_above``: None (only a non-finite loss diverges) or a number > 1."""
    if value is None:
        return None
    return _validate.number(value, "diverged_above (a multiple of the initial loss)",
                            low=1, low_open=True, dtype=np.float32)


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
    #: local steps per compiled event when replayed step by step (``stepwise``), else 0
    stepwise: int = 0
    #: the padded worker axis (``pad_workers``), or None
    pad_workers: int | None = None
    #: the traces' kind of events (:data:`~asynclab.engine._kinds.EVENT_KINDS`)
    kind: str = COMMITS
    #: ``(Tr, 2)`` each trace's goodput: fraction, per device-second
    #: (:func:`asynclab.cluster.goodput`)
    goodput: np.ndarray | None = None
    #: ``(Tr, T, n)`` the staleness of each counted commit of semi-synchronous rounds
    #: (-1 where a worker did not count, and past a trace's end), else None
    round_staleness: np.ndarray | None = None

    @property
    def axis_workers(self) -> int:
        """The length of the compiled replay's worker axis."""
        return self.n_workers if self.pad_workers is None else self.pad_workers


def stepwise_rule(rule):
    """``rule`` with one local step per round: the rule a step-by-step replay runs (the
    same compiled program for every λ). The rule must say it can
    (``rule.capabilities.stepwise``: synchronous, plain local work, and an exchange that
    reads only the workers' parameters and states after their λ steps)."""
    from ..rules import RULES

    if not rule.capabilities.stepwise or rule.structure is None:
        raise ConfigError(f"stepwise replays a declared synchronous rule whose local work "
                          f"is λ plain steps and whose exchange does not read λ "
                          f"(rule.capabilities.stepwise); {rule.name} is not one")
    name, static, absent = rule.structure
    static = tuple((k, 1 if k == "local_steps" else v) for k, v in static)
    return RULES[name].rebuild(static, dict(rule.values), absent)


def _check_pad(rule, pad_workers, n_workers):
    if pad_workers is None:
        return None
    pad = _validate.count(pad_workers, "pad_workers")
    if not rule.synchronous:
        raise ConfigError(f"pad_workers pads a synchronous rule's worker axis; {rule.name} "
                          "is asynchronous")
    if pad < n_workers:
        raise ConfigError(f"pad_workers={pad} is fewer than the trace's {n_workers} workers")
    return pad


def _plan(rule, problem, traces, n_seeds, init, record_every, record_paths,
          stepwise=False, pad_workers=None) -> _Plan:
    check_init(rule, init)
    if isinstance(traces, Trace | RoundTrace):
        traces = [traces]
    traces = list(traces)
    if len(traces) not in (1, n_seeds):
        raise ConfigError(f"give one trace, or one per seed ({n_seeds}); got {len(traces)}")
    n_workers = check_traces(rule, traces)
    kind = batch_kind(traces)
    events_of = event_kind(kind, rule)
    if stepwise and kind != ROUNDS:
        raise ConfigError("stepwise replays plain synchronous rounds, not semi-synchronous "
                          "ones")
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

    # Lay the events out as (chunks, blocks, k), padding with inactive events. Step by
    # step, every round is λ events (local steps), the last of which synchronises: its
    # ``worker`` entry is 1 (a synchronous event's worker is otherwise unused).
    lam = rule.local_steps if stepwise else 1
    if stepwise:
        stepwise_rule(rule)  # refuses a rule that cannot be replayed step by step
    pad_workers = _check_pad(rule, pad_workers, n_workers)
    n_blocks = math.ceil(n_events / record_every)
    blocks_per_chunk = max(1, math.ceil(n_blocks / 20))
    n_chunks = math.ceil(n_blocks / blocks_per_chunk)
    padded = n_chunks * blocks_per_chunk * record_every * lam
    shape = (len(traces), n_chunks, blocks_per_chunk, record_every * lam)
    ev_worker = np.zeros((len(traces), padded), np.int32)
    ev_active = np.zeros((len(traces), padded), bool)
    if stepwise:
        ends = (np.arange(n_events * lam) % lam) == lam - 1
        ev_worker[:, :n_events * lam] = ends
        ev_active[:, :n_events * lam] = np.repeat(staleness >= 0, lam, axis=1)
    else:
        # the kind says what an event's worker entry holds: the committing worker, or
        # (semi-synchronous rounds) who counted, one bit per worker
        ev_worker[:, :n_events] = events_of.entries(traces, n_events)
        ev_active[:, :n_events] = staleness >= 0
    ev_index = np.broadcast_to(np.arange(padded, dtype=np.int32), (len(traces), padded))
    events = tuple(a.reshape(shape) for a in (ev_worker, ev_active, ev_index))
    if events_of.extra is not None:
        extra = events_of.extra(traces, padded)
        events += (extra.reshape(shape + extra.shape[-1:]),)
    round_staleness = None
    if kind in (ROUNDS_DISCARD, ROUNDS_STALE):
        round_staleness = np.full((len(traces), n_events, n_workers), -1, np.int32)
        for i, t in enumerate(traces):
            round_staleness[i, :t.n_events] = t.staleness
    return _Plan(time, worker, staleness, n_workers, n_events, record_every, bool(record_paths),
                 n_blocks, blocks_per_chunk, n_chunks, events, lam if stepwise else 0,
                 pad_workers, kind,
                 np.array([goodput(t) for t in traces], np.float64).reshape(-1, 2),
                 round_staleness)


class _Replayed(NamedTuple):
    loss: np.ndarray
    final_params: object
    diverged_at: np.ndarray
    center_path: np.ndarray | None
    worker_path: np.ndarray | None
    metrics: dict | None = None
    center_share: np.ndarray | None = None


def center_shares(moved, group_size: int = 1) -> np.ndarray:
    """Each worker's share of the centre's total movement, ``(..., n)``, from how far each
    committing unit's commits moved it (``moved``, ``(..., units)``): ``moved / Σ moved``
    in float64, NaN for a run whose centre never moved. A unit of a mixed cluster is a
    synchronous group of ``group_size`` workers, whose share its members split equally.
    """
    moved = np.asarray(moved, np.float64)
    total = moved.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, moved / np.where(total > 0, total, 1.0), np.nan)
    if group_size > 1:
        share = np.repeat(share / group_size, group_size, axis=-1)
    return share


def _replay_batch(rule, problem, plan: _Plan, seeds, rows, values, *, noise, init, bar,
                  unroll=None, devices=None, diverged_above=DIVERGED_ABOVE):
    """Replay batch element ``b`` = (seed ``seeds[b]``, trace row ``rows[b]``, traced
    hyperparameters ``values[name][b]``) for every b, in one compiled call per chunk,
    the batch split over ``devices`` (see :func:`replay_devices`; padded to a multiple
    of their number, and trimmed)."""
    devices = replay_devices(devices) if not isinstance(devices, tuple) else devices
    size = len(seeds)
    extra = -size % len(devices)
    if size + extra == len(devices) and problem.dim < _events.ALONE_MIN_PARAMETERS:
        # XLA compiles a batch of one per device as an unbatched program, whose matrix
        # products it may lay out otherwise (on some CPUs a seed alone then differed in
        # its last bits from the same seed among others): two rows keep the program the
        # batched one of any size. A larger problem runs one seed without vmap on purpose
        # (:data:`~asynclab.engine._events.ALONE_MIN_PARAMETERS`), for speed.
        extra += len(devices)
    if extra:  # pad with copies of the last element: every device gets as many runs
        def pad(a):
            return np.concatenate([np.asarray(a), np.repeat(np.asarray(a)[-1:], extra, 0)])

        seeds, rows = pad(seeds), pad(rows)
        values = {k: pad(v) for k, v in values.items()}
    out = _replay_padded(rule, problem, plan, seeds, rows, values, noise=noise, init=init,
                         diverged_above=diverged_above,
                         bar=_Partial(bar, size / len(seeds)), unroll=unroll, devices=devices)
    if not extra:
        return out
    return _Replayed(*(None if a is None else jax.tree.map(lambda x: x[:size], a)
                       for a in out))


def _replay_in_calls(rule, problem, plan: _Plan, seeds, rows, values, runs_per_call: int,
                     *, noise, init, bar, unroll=None, devices=None,
                     diverged_above=DIVERGED_ABOVE) -> _Replayed:
    """:func:`_replay_batch` ``runs_per_call`` elements at a time, joined along the batch
    axis. The last call is padded with copies of the last element, so that every call is
    one compiled program; a batch element's numbers do not depend on its call."""
    seeds, rows = np.asarray(seeds), np.asarray(rows)
    total = len(seeds)
    runs_per_call = min(int(runs_per_call), total)
    parts = []
    for call in range(math.ceil(total / runs_per_call)):
        index = np.arange(call * runs_per_call, (call + 1) * runs_per_call)
        live = index < total
        index = np.minimum(index, total - 1)
        out = _replay_batch(rule, problem, plan, seeds[index], rows[index],
                            {k: np.asarray(v)[index] for k, v in values.items()},
                            noise=noise, init=init, bar=_Partial(bar, live.mean()),
                            diverged_above=diverged_above,
                            unroll=unroll, devices=devices)
        parts.append(_Replayed(*(None if a is None else jax.tree.map(
            lambda x, live=live: np.asarray(x)[live], a) for a in out)))

    def joined(field):
        arrays = [getattr(part, field) for part in parts]
        if arrays[0] is None:
            return None
        return jax.tree.map(lambda *leaves: np.concatenate(leaves, axis=0), *arrays)

    return _Replayed(*(joined(field) for field in _Replayed._fields))


class _Partial:
    """A progress bar that counts only a fraction of what it is told (padding)."""

    def __init__(self, bar, fraction):
        self.bar, self.fraction = bar, float(fraction)

    def update(self, n):
        self.bar.update(int(round(n * self.fraction)))


#: a padded replay draws its initial states on a worker axis of a multiple of this many
#: workers and keeps the first rows (the same numbers): padded replays of up to this many
#: workers share one compiled initial state
INITIAL_AXIS = 16


def _initial_axis(axis: int, devices) -> int:
    if _spans_processes(devices):  # a global array: no slicing on the host's side
        return axis
    return INITIAL_AXIS * math.ceil(axis / INITIAL_AXIS)


def _replay_padded(rule, problem, plan: _Plan, seeds, rows, values, *, noise, init, bar,
                   unroll, devices, diverged_above=DIVERGED_ABOVE):
    n_workers, shared = plan.n_workers, plan.time.shape[0] == 1
    axis, padded = plan.axis_workers, plan.pad_workers is not None
    batch = len(seeds)
    lam = max(plan.stepwise, 1)  # compiled events per event of the plan's traces
    if plan.stepwise:
        rule = stepwise_rule(rule)
    layout = Layout(axis, shared, event_unroll(unroll), bool(plan.stepwise), padded, devices)
    run_chunk = _compiled_chunk(rule, problem, float(noise), plan.record_paths, plan.kind,
                                layout)
    if padded:
        values = {**values, WORKERS: np.full(batch, n_workers, np.float32)}
    values = {k: _put(np.asarray(v, np.float32), devices) for k, v in values.items()}
    drawn = _initial_axis(axis, devices) if padded else axis
    init_data, worker_data = seed_key_data(seeds, drawn)
    carry, worker_keys = _initial_carry_batch(rule, problem, plan.kind, layout, drawn, init)(
        _put(init_data, devices), _put(worker_data, devices), values)
    if drawn > axis:  # the first rows of a longer draw are the draw (worker keys, starts)
        carry = carry._replace(workers=jax.tree.map(lambda x: x[:, :axis], carry.workers))
        worker_keys = worker_keys[:, :axis]
    if shared and batch > 1:  # the batch holds its counters once, from its first run
        unequal = _events.unequal_counts(carry, _host)
        if unequal:
            raise ConfigError(
                f"rule {rule.name}: its counters {', '.join(unequal)} start at different "
                "values in different runs; a rule's step counts and clocks must start alike "
                "in every run (at 0, as asynclab.rules.parts starts them)")
    chunk_values = {**values, DIVERGED_ABOVE_VALUE: _put(
        np.full(batch, _bound(diverged_above), np.float32), devices)}
    if traced_noise(problem, float(noise)):  # σ as float32, the constant it replaces
        chunk_values = {**chunk_values, NOISE_STD: _put(np.full(batch, np.float32(np.sqrt(noise))),
                                                  devices)}

    losses, centers, paths, metrics = [], [], [], []
    step = plan.blocks_per_chunk * plan.record_every  # the plan's events per chunk
    done_compiling = (note(bar, "compiling…")
                      if getattr(run_chunk, "_cache_size", lambda: 1)() == 0 else None)
    for c in range(plan.n_chunks):
        chunk_events = tuple(
            _put(a[0, c], devices, split=False) if shared else _put(a[rows, c], devices)
            for a in plan.events)
        carry, (value, center, path, metric) = run_chunk(carry, worker_keys, chunk_events,
                                                         chunk_values, np.asarray(c == 0))
        if done_compiling is not None and c == 0:  # compiled; the chunk runs on (async)
            done_compiling()
        # records of the state given and after each block; the first only in the first
        kept = slice(0 if c == 0 else 1, None)
        losses.append(_host(value)[:, kept])
        if metric is not None:
            metrics.append({k: v[:, kept] for k, v in _host(metric).items()})
        if plan.record_paths:
            centers.append(_host(center)[:, kept])
            paths.append(_host(path))
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
                filler = (batch, remaining * step * lam) + tail
                paths.append(np.full(filler, np.nan))
            bar.update(batch * (plan.n_events - min(step * (c + 1), plan.n_events)))
            break

    loss = np.concatenate([v.reshape(batch, -1) for v in losses],
                          axis=1)[:, : plan.n_blocks + 1]
    center_path = worker_path = None
    if plan.record_paths:
        center_path = np.concatenate(
            [c.reshape(batch, -1, problem.dim) for c in centers],
            axis=1)[:, : plan.n_blocks + 1]
        tail = (axis, problem.dim) if rule.synchronous else (problem.dim,)
        # step by step, a round's local parameters are those after its last step
        worker_path = np.concatenate(
            [p.reshape((batch, -1) + tail) for p in paths], axis=1)[:, lam - 1::lam]
        worker_path = worker_path[:, :plan.n_events]
        if padded:
            worker_path = worker_path[:, :, :n_workers]
    recorded = None
    if metrics:
        recorded = {k: np.concatenate([m[k].reshape(batch, -1) for m in metrics],
                                      axis=1)[:, : plan.n_blocks + 1]
                    for k in metrics[0]}
    final = _final_center(carry)
    diverged_at = _host(carry.diverged_at)
    # a synchronous round weights its workers equally: 1/n each, nothing counted (a
    # semi-synchronous one counts: its movement goes to the workers that counted)
    share = (center_shares(_host(carry.moved), rule.group_size) if carry.moved is not None
             else center_shares(np.ones((batch, n_workers))))
    if lam > 1:  # the step at which a run diverged -> its round
        diverged_at = np.where(diverged_at >= 0, diverged_at // lam, diverged_at)
    if plan.record_paths:  # NaN once diverged, like the loss (see _nan_once_diverged)
        center_path, worker_path = _nan_once_diverged(loss, diverged_at, center_path,
                                                      worker_path)
    return _Replayed(loss, final, diverged_at, center_path, worker_path, recorded, share)


def _nan_once_diverged(loss, diverged_at, center_path, worker_path):
    """A diverged run's recorded path: the centre NaN at the records whose loss is NaN,
    the workers' parameters NaN at the events after ``diverged_at``. The loop goes on
    holding the last finite state while a run beside it has not diverged, and stops (the
    rest NaN) once every run of its call has: this makes a run's path the same either way,
    so that it does not depend on the runs replayed with it."""
    center_path = np.where(np.isnan(loss)[:, :, None], np.nan, center_path)
    if not (diverged_at >= 0).any():  # nothing to mark: no copy of every event's path
        return center_path, worker_path
    events = np.arange(worker_path.shape[1])
    after = (diverged_at[:, None] >= 0) & (events[None, :] > diverged_at[:, None])
    after = after.reshape(after.shape + (1,) * (worker_path.ndim - 2))
    return center_path, np.where(after, np.nan, worker_path)


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
        center_share=out.center_share,
        goodput=None if plan.goodput is None else plan.goodput[:, 0],
        goodput_per_device_second=None if plan.goodput is None else plan.goodput[:, 1],
        round_staleness=plan.round_staleness,
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
    stepwise: bool = False,
    pad_workers: int | None = None,
    runs_per_call: int | None = None,
    diverged_above: float | None = DIVERGED_ABOVE,
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
      stepwise: replay a synchronous rule that can (``rule.capabilities.stepwise``:
        synchronous SGD, model averaging, local SGD, DiLoCo, EASGD without its early
        stop, a user's rule declared so) one local step per compiled event, the
        synchronisation applied at the last step of every round: every λ then shares
        one compiled program, which a study of several λ compiles once. The same
        result (records, centres, ``diverged_at`` in rounds) to float rounding: for
        λ = 1 the same bits on a CPU, for λ > 1 not (the λ-step loop is unrolled by 4,
        which XLA rounds differently in the last bits; ``docs/design.md``). A CPU runs a
        round of λ steps about as fast either way; an accelerator, which pays per event,
        runs it λ times slower.
      pad_workers: replay a synchronous rule on a worker axis of this many workers
        (at least the trace's n), of which the first n are the run's: the
        synchronisation averages over those (:func:`asynclab.rules.parts.worker_mean`),
        and the random starts of ``init="random_per_worker"`` are the first n rows of
        the padded draw, which are the n-worker draw. Runs of different n then share one
        compiled program, at the cost of the padding's work. The same result (on a CPU
        the same bits, ``tests/test_engine.py``).
      diverged_above: the divergence bound: a run whose recorded loss exceeds this many
        times max(1, |its initial loss|) is reported as diverged at that record, as one
        whose centre or loss is not finite (None: only those). A traced value: another
        bound compiles nothing.
      runs_per_call: seeds replayed per compiled call (default: all of them in one):
        fewer hold less memory at once (a many-seed net on an accelerator) and give the
        same numbers (a net's to float rounding where XLA compiles its matrix products for
        another batch size otherwise); the last call is padded, so every call is one
        compiled program.

    Returns:
      A :class:`Result`.
    """
    rule, problem, traces = _checked_inputs(rule, problem, traces)
    unroll = event_unroll(unroll)
    devices = replay_devices(devices)
    seeds = _check_seeds(seeds)
    check_options(rule, init, record_every)
    diverged_above = check_diverged_above(diverged_above)
    if runs_per_call is not None:
        runs_per_call = _validate.count(runs_per_call, "runs_per_call")
    plan = _plan(rule, problem, traces, len(seeds), init, record_every, record_paths,
                 bool(stepwise), pad_workers)
    check_run_memory(rule, problem, None, plan.n_workers,
                     traces=[traces] if isinstance(traces, Trace | RoundTrace) else traces,
                     n_seeds=len(seeds), record_every=plan.record_every,
                     record_paths=plan.record_paths, in_flight=runs_per_call)
    rows = np.arange(len(seeds)) if plan.time.shape[0] > 1 else np.zeros(len(seeds), int)
    bar = progress_bar(total=plan.n_events * len(seeds), progress=progress,
                       desc=f"{rule.name} x{len(seeds)}", unit="event", leave=False,
                       unit_scale=True)
    values = hyperparameter_values(rule, len(seeds))
    with bar:
        if runs_per_call is None or runs_per_call >= len(seeds):
            out = _replay_batch(rule, problem, plan, seeds, rows, values, noise=noise,
                                init=init, bar=bar, unroll=unroll, devices=devices,
                                diverged_above=diverged_above)
        else:
            out = _replay_in_calls(rule, problem, plan, seeds, rows, values, runs_per_call,
                                   noise=noise, init=init, bar=bar, unroll=unroll,
                                   devices=devices, diverged_above=diverged_above)
    if config is None:  # what replay itself knows: rule, problem, workers, seeds, noise
        config = run_config(rule, problem, workers=plan.n_workers,
                            seeds=np.asarray(seeds).tolist(), noise=float(noise), init=init)
    return _result(plan, seeds, out, config)
