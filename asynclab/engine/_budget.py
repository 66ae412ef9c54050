"""The budget guard: what a run will hold in memory, estimated before any work from the
shapes of its state (nothing is computed), and refused when it would not fit."""

from __future__ import annotations

import math

from .. import _validate
from ..cluster import expected_events, simulator_bytes
from ._core import default_record_every

#: What the memory check advises when it refuses a run.
ADVICE = ("give a smaller budget, fewer seeds, fewer seeds at once (runs_per_call), or "
          "record less (a larger record_every, no trajectories)")


def run_memory(rule, problem, cluster, n_workers: int, *, commits=None, horizon=None,
               traces=None, n_seeds: int = 1, trace_per_seed: bool = False,
               record_every=None, record_paths=None, points: int = 1,
               in_flight=None, semisync=None) -> int:
    """Estimated bytes a run holds: the schedules and the simulator's draws, the state of
    the runs computed together (every worker's and the server's arrays, a gradient and a
    copy, and for a data problem what a record's chunk of examples computes), the final
    parameters and the records of every (point, seed).

    ``in_flight``: how many (point, seed) runs are computed together (default: all), or
    ``("bytes", B)`` for as many as fit in B bytes (a sweep's automatic batches).
    ``traces``: the schedules when they are given (then no simulator runs). A horizon's
    events are :func:`~asynclab.cluster.expected_events` of the timing model as it is
    (every worker's own speed, the server, a semi-synchronous round's ``semisync``).
    """
    if traces is not None:
        events = max(t.n_events for t in traces)
    elif commits is not None:
        events = int(commits)
    else:  # a horizon: the events the cluster makes in it, from its timing model
        events = expected_events(cluster, rule.schedule_facts, horizon, semisync)
    runs = n_seeds * points
    costs = problem.recording
    state = state_bytes(rule, problem, n_workers) + 2 * 4 * problem.dim
    # what a record's chunk of examples computes, per run (a data problem's; an upper
    # bound: the sum of the forward pass's values, most of which XLA fuses away)
    evaluation = costs.example_bytes * costs.chunk
    if isinstance(in_flight, tuple):  # as many as a byte budget holds, at least one
        in_flight = max(1, in_flight[1] // (2 * state + evaluation))
    in_flight = runs if in_flight is None else min(int(in_flight), runs)
    paths = problem.dim <= 2 if record_paths is None else bool(record_paths)
    width = problem.dim * (n_workers if rule.synchronous else 1)
    every = record_every if isinstance(record_every, int) and record_every >= 1 else \
        default_record_every(rule, problem, max(events, 1), n_workers)
    records = events // every + 1
    metrics = len(costs.metrics) if problem.evaluate is not None else 0
    n_traces = len(traces) if traces is not None else (n_seeds if trace_per_seed else 1)
    draws = 0 if cluster is None or traces is not None else simulator_bytes(
        cluster, events, rule.local_steps)
    held = (_validate.memory_estimate(
        events, traces=n_traces, seeds=runs, records=records,
        record_bytes=4 * (1 + metrics) + (4 * problem.dim if paths else 0),
        event_bytes=4 * width if paths else 0)
        + draws + in_flight * (2 * state + evaluation) + runs * 4 * problem.dim)
    return int(held)


def check_run_memory(rule, problem, cluster, n_workers: int, **run) -> None:
    """Refuse, before any work, a run whose :func:`run_memory` would not fit."""
    field = "horizon" if run.get("horizon") is not None else "commits"
    _validate.check_memory(run_memory(rule, problem, cluster, n_workers, **run), field,
                           advice=ADVICE)


def state_bytes(rule, problem, n_workers: int) -> int:
    """Bytes of one run's ``(server, workers)``, from their shapes (nothing is computed)."""
    import jax

    from ._core import initial_state

    # the key is made inside the trace: nothing is computed and the backend is not
    # started (a started backend's garbage-collection hook would then run, and could
    # swallow a Ctrl-C, during the long simulation that follows)
    shapes = jax.eval_shape(
        lambda: initial_state(rule, problem, jax.random.key(0), n_workers))
    return sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))


#: Simulator events a second the time estimate assumes (one core; the schedules' row of
#: ``benchmarks/replay.py`` measures the simulator).
SIMULATOR_EVENTS = 2e5

#: Floating-point operations a second the time estimate assumes for the replay on one CPU
#: (an accelerator: ``ACCELERATOR_SPEEDUP`` times more).
REPLAY_FLOPS = 2e9
ACCELERATOR_SPEEDUP = 100.0

#: A run estimated to take longer than this many seconds says so before it starts.
ANNOUNCE_SECONDS = 60.0


def run_seconds(rule, problem, n_workers: int, events: int, *, simulated: int, runs: int,
                platform: str = "cpu") -> float:
    """A rough estimate of a run's seconds: ``simulated`` schedules of ``events`` events at
    :data:`SIMULATOR_EVENTS`, and ``runs`` replays of them at :data:`REPLAY_FLOPS`, an
    event costing its workers' λ gradients (a net's: about six operations per parameter
    and example of a batch; a surface's: twenty per parameter) and their updates. An
    order of magnitude, to warn before hours of work, not a measurement."""
    costs = problem.recording
    gradient = 6 * costs.batch_size * problem.dim if costs.batch_size else 20 * problem.dim
    units = n_workers if rule.synchronous else rule.group_size
    per_event = units * (rule.local_steps * (gradient + 4 * problem.dim) + 4 * problem.dim)
    rate = REPLAY_FLOPS * (ACCELERATOR_SPEEDUP if platform != "cpu" else 1.0)
    return simulated * events / SIMULATOR_EVENTS + runs * events * per_event / rate


def announce(seconds: float, progress) -> None:
    """Say before a long run starts how long it is estimated to take (on stderr, where
    progress is shown: not with ``progress=False``)."""
    if seconds < ANNOUNCE_SECONDS or progress is False:
        return
    import sys

    print(f"asynclab: this run is estimated to take about {_duration(seconds)} (a rough "
          "model of the simulator's and the replay's speed); Ctrl-C stops it",
          file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.2g} {unit}"
    return f"{seconds:.2g} s"
