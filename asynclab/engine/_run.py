"""The one obvious entry point: a prepared run (or what prepares one) in, a Result out."""

from __future__ import annotations

from .._errors import ConfigError
from ..cluster import expected_events
from ..cluster import schedule as cluster_schedule
from ..cluster import schedules as cluster_schedules
from ._budget import announce, run_seconds
from ._prepare import prepare
from ._replay import replay
from ._result import Result
from ._spec import RunSpec
from ._sweep import replay_grid


def schedule(rule, cluster, *, commits=None, horizon=None, rng=0, activity: bool = False,
             semisync=None):
    """The trace a cluster produces for a rule: :func:`asynclab.cluster.schedule` of the
    rule's schedule facts (``rule.schedule_facts``)."""
    return cluster_schedule(rule, cluster, commits=commits, horizon=horizon, rng=rng,
                            activity=activity, semisync=semisync)


def schedules(spec: RunSpec, *, activity: bool = False) -> list:
    """The schedules a prepared run replays: the given traces, or one simulated for the
    first seed (every seed replays it), or one per seed (``trace_per_seed``), made by the
    spec's simulator (:func:`asynclab.cluster.schedules`)."""
    if not isinstance(spec, RunSpec):
        raise ConfigError(f"schedules takes a RunSpec (asynclab.prepare), got {spec!r}")
    if spec.traces is not None:
        return list(spec.traces)
    if spec.cluster is None:
        raise ConfigError("this run measures its schedule on real threads; it has none to "
                          "simulate")
    seeds = spec.seeds if spec.trace_per_seed else spec.seeds[:1]
    return cluster_schedules(spec.rule, spec.cluster, seeds=seeds, commits=spec.commits,
                             horizon=spec.horizon, semisync=spec.semisync,
                             activity=activity, simulator=spec.simulator)


def estimated_seconds(spec: RunSpec) -> float:
    """A rough estimate of the seconds a prepared run takes: its schedules at the
    simulator's typical event rate and its replays at a typical rate of floating-point
    operations (higher on an accelerator), an event costing its workers' λ gradients and
    updates. An order of magnitude, not a measurement: :func:`asynclab.run` says it
    before a run estimated to take more than a minute (unless ``progress=False``)."""
    if spec.traces is not None:
        events, simulated = max(t.n_events for t in spec.traces), 0
    else:
        events = spec.commits if spec.commits is not None else expected_events(
            spec.cluster, spec.rule.schedule_facts, spec.horizon, spec.semisync)
        simulated = len(spec.seeds) if spec.trace_per_seed else 1
    return run_seconds(spec.rule, spec.problem, spec.workers, events, simulated=simulated,
                       runs=len(spec.seeds) * spec.points,
                       platform=spec.devices[0].platform)


def run(problem="beale", rule="downpour", *, progress: bool | None = None,
        **options) -> Result:
    """Simulate a cluster, replay its schedule with a rule, for every seed.

    Args:
      problem: a prepared run (a :class:`~asynclab.engine.RunSpec` from
        :func:`asynclab.prepare`, then nothing else but ``progress`` is given), or a
        problem name or :class:`~asynclab.problems.Problem`.
      rule: a rule name (see ``asynclab rules``) or a rule built from asynclab.rules.
      progress: progress bar (None: only on a terminal or in a notebook).
      **options: those of :func:`asynclab.prepare` (the cluster or ``workers``, the
        budget ``commits`` or ``horizon``, ``seeds``, ``learning_rate``, ``noise``, the
        rule's hyperparameters, ...).

    Returns:
      A :class:`~asynclab.engine.Result` holding the configuration that made it; for a
      sweep (``grid=``) its arrays have the grid's axes in front (see
      :func:`asynclab.sweep`).

    Example:
      >>> import asynclab
      >>> result = asynclab.run("beale", "downpour", workers=8, commits=2000, noise=10.0)
      >>> result.final_loss.shape
      (1,)
    """
    if isinstance(problem, RunSpec):
        if options or rule != "downpour":
            raise ConfigError("run(spec): the prepared run holds every option; give only "
                              "progress beside it")
        spec = problem
    else:
        spec = prepare(problem, rule, **options)
    return execute(spec, progress=progress)


def execute(spec: RunSpec, *, progress: bool | None = None) -> Result:
    """Replay a prepared run's schedules for every seed (and every grid point)."""
    if spec.backend != "sim":
        raise ConfigError(f"this run is prepared for backend {spec.backend!r}; run it with "
                          "asynclab.backends.run_devices(spec)")
    announce(estimated_seconds(spec), progress)
    traces = schedules(spec)
    if spec.grid is not None:
        return replay_grid(spec.rule, spec.problem, traces, grid=dict(spec.grid),
                           seeds=list(spec.seeds), noise=spec.noise, init=spec.init,
                           record_every=spec.record_every,
                           record_paths=bool(spec.record_paths), progress=progress,
                           runs_per_call=spec.runs_per_call, config=dict(spec.config),
                           devices=spec.devices, diverged_above=spec.diverged_above)
    return replay(spec.rule, spec.problem, traces, seeds=list(spec.seeds), noise=spec.noise,
                  init=spec.init, record_every=spec.record_every,
                  record_paths=spec.record_paths, progress=progress,
                  config=dict(spec.config), devices=spec.devices,
                  runs_per_call=spec.runs_per_call, diverged_above=spec.diverged_above,
                  unroll=spec.unroll, stepwise=spec.stepwise, pad_workers=spec.pad_workers)


def sweep(problem="beale", rule="downpour", *, grid, progress: bool | None = None,
          **options) -> Result:
    """Replay every point of ``grid`` × every seed, as :func:`asynclab.run` would each.

    The grid's keys are traced hyperparameters of the rule (``asynclab rules`` lists which;
    ``learning_rate`` is one, and a grid over it replaces the ``learning_rate`` argument).
    Static ones (λ, workers, group size, warm-up, variant switches) decide the shape of the
    compiled replay and are refused: loop over them with one sweep each. Every point
    replays the same schedule (or the same one per seed with ``trace_per_seed``), since
    timing does not depend on the numbers. ``sweep(..., grid=g, **options)`` is
    ``run(prepare(..., grid=g, **options))``.

    Args:
      grid: ``{name: values}``; the points are the product of the value lists, in order.
      progress: progress bar (None: only on a terminal or in a notebook).
      **options: those of :func:`asynclab.prepare`. For a sweep, ``runs_per_call`` is
        the (point, seed) pairs replayed per compiled call, by default as many as fit in
        about 1 GiB of states and records (every call has this size, the last one
        padded, so there is one compilation), and ``record_paths`` defaults to False.

    Returns:
      A :class:`~asynclab.engine.Result` whose per-seed arrays have the grid's axes in
      front: ``loss`` is ``(len(grid[k1]), ..., len(grid[kK]), S, R)``, ``final_params``
      ``(..., S, d)``, ``diverged_at`` ``(..., S)``; ``config["grid"]`` records the grid
      (``result.grid`` reads it back). The events (``time``, ``staleness``, ...) are
      shared by every point.

    Example:
      >>> import asynclab
      >>> result = asynclab.sweep("quadratic", "downpour", workers=4, commits=500,
      ...                         seeds=range(8), grid={"learning_rate": [0.01, 0.02],
      ...                                               "server_momentum": [-0.3, 0.0, 0.5]})
      >>> result.loss.shape[:3]
      (2, 3, 8)
    """
    return execute(prepare(problem, rule, grid=grid, **options), progress=progress)
