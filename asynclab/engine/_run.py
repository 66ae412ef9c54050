"""The one obvious entry point: problem + rule + cluster + budget + seeds -> Result."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ..cluster import (
    Cluster,
    ComputeTime,
    SemiSync,
    simulate_async,
    simulate_sync,
    simulate_sync_with_warmup,
    simulator_bytes,
)
from ..problems import Problem, get_problem, options_of
from ..problems._problem import check_noise
from ..rules import RULES, Rule, make_rule
from ._core import default_record_every, run_config
from ._layout import replay_devices
from ._replay import check_options, replay
from ._result import Result


def build_rule(rule: str | Rule, *, learning_rate: float, local_steps: int | None = None,
               workers: int | None = None, **hyperparameters) -> Rule:
    """A rule by name with the run-level settings (η, λ, n for rules that need n).

    A rule object passes through unchanged (then no hyperparameters may be given).
    """
    cluster = Cluster(workers=workers or 1)
    return _rule_from(rule, learning_rate, local_steps, hyperparameters, cluster)


def _rule_from(rule, learning_rate, local_steps, hyperparameters, cluster) -> Rule:
    if not isinstance(rule, str):
        if hyperparameters:
            raise ConfigError("hyperparameters go into the rule you built; pass a rule name "
                              "to have run() build it")
        return rule
    if rule not in RULES:
        raise ConfigError(f"unknown rule {rule!r}; available: {', '.join(RULES)}")
    for name in ("learning_rate", "local_steps"):
        if name in hyperparameters:
            raise ConfigError(f"give {name} as run()'s own argument (--{name.replace('_', '-')}"
                              ") rather than as a rule hyperparameter")
    options = dict(hyperparameters)
    options["learning_rate"] = learning_rate
    accepted = RULES[rule].parameters
    if local_steps is None:
        pass
    elif "local_steps" in accepted:
        options["local_steps"] = local_steps
    elif local_steps != 1:
        raise ConfigError(f"rule {rule!r} has no local steps (λ); drop local_steps={local_steps}")
    if "workers" in accepted and "workers" not in options:
        options["workers"] = cluster.groups
    if "speeds" in accepted and options.get("dynamic"):
        speeds = options.get("speeds")
        if speeds is None:
            options["speeds"] = tuple(1.0 / s for s in cluster.scales)  # steps per second
        elif isinstance(speeds, tuple) and len(speeds) != cluster.groups:
            raise ConfigError(f"{rule}: speeds must have one entry per worker "
                              f"({cluster.groups}), got {len(speeds)}")
    return make_rule(rule, **options)


def rule_group_size(rule: str | Rule, hyperparameters: dict, cluster=None) -> int:
    """Workers per group for ``rule``: the one number the rule and the cluster share.

    A built rule says it itself; for a rule name it is the ``group_size`` given, else the
    cluster's (when a cluster is given), else the rule's own default (1 for rules without
    groups).
    """
    if not isinstance(rule, str):
        value = getattr(rule, "group_size", 1)
    elif "group_size" in hyperparameters:
        value = hyperparameters["group_size"]
    elif rule in RULES and "group_size" in RULES[rule].parameters:
        value = (cluster.group_size if isinstance(cluster, Cluster)
                 else RULES[rule].defaults.get("group_size", 1))
    else:
        value = 1
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ConfigError(f"group_size must be an integer >= 1, got {value!r}")
    return int(value)


def _run_memory(rule, problem, cluster, commits, horizon, n_seeds, trace_per_seed,
                record_every, record_paths, points=1, in_flight=None) -> int:
    """Estimated bytes a run holds: the schedules and the simulator's draws, the state of
    the runs computed together (every worker's and the server's arrays, a gradient and a
    copy, and for a data problem what a record's chunk of examples computes), the final
    parameters and the records of every (point, seed).

    ``in_flight``: how many (point, seed) runs are computed together (default: all), or
    ``("bytes", B)`` for as many as fit in B bytes (a sweep's automatic batches).
    """
    if commits is not None:
        events = int(commits)
    else:  # a horizon: events the cluster completes in that time, on average
        per_event = cluster.compute.mean_step() * rule.local_steps
        units = 1 if rule.synchronous else cluster.groups
        events = int(min(horizon / max(per_event, 1e-12) * units, 2**62)) + 1
    runs = n_seeds * points
    costs = problem.recording
    state = _state_bytes(rule, problem, cluster.workers) + 2 * 4 * problem.dim
    # what a record's chunk of examples computes, per run (a data problem's; an upper
    # bound: the sum of the forward pass's values, most of which XLA fuses away)
    evaluation = costs.example_bytes * costs.chunk
    if isinstance(in_flight, tuple):  # as many as a byte budget holds, at least one
        in_flight = max(1, in_flight[1] // (2 * state + evaluation))
    in_flight = runs if in_flight is None else min(int(in_flight), runs)
    paths = problem.dim <= 2 if record_paths is None else bool(record_paths)
    width = problem.dim * (cluster.workers if rule.synchronous else 1)
    every = record_every if isinstance(record_every, int) and record_every >= 1 else \
        default_record_every(rule, problem, max(events, 1), cluster.workers)
    records = events // every + 1
    metrics = len(costs.metrics) if problem.evaluate is not None else 0
    draws = simulator_bytes(cluster, events, rule.local_steps)
    held = (_validate.memory_estimate(
        events, traces=n_seeds if trace_per_seed else 1, seeds=runs, records=records,
        record_bytes=4 * (1 + metrics) + (4 * problem.dim if paths else 0),
        event_bytes=4 * width if paths else 0)
        + draws + in_flight * (2 * state + evaluation) + runs * 4 * problem.dim)
    return int(held)


def _state_bytes(rule, problem, n_workers: int) -> int:
    """Bytes of one run's ``(server, workers)``, from their shapes (nothing is computed)."""
    import jax

    from ._core import initial_state

    # the key is made inside the trace: nothing is computed and the backend is not
    # started (a started backend's garbage-collection hook would then run, and could
    # swallow a Ctrl-C, during the long simulation that follows)
    shapes = jax.eval_shape(
        lambda: initial_state(rule, problem, jax.random.key(0), n_workers))
    return sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))


def _cluster_from(cluster, workers, compute, group_size) -> Cluster:
    if isinstance(cluster, Cluster):
        if workers is not None and workers != cluster.workers:
            raise ConfigError(f"workers={workers} disagrees with the cluster's {cluster.workers}")
        if cluster.group_size != group_size:
            raise ConfigError(f"the rule works on groups of {group_size} but the cluster has "
                              f"group_size={cluster.group_size}")
        return cluster
    if cluster is not None:
        raise ConfigError(f"cluster must be an asynclab.cluster.Cluster, got {cluster!r}")
    if not isinstance(compute, ComputeTime):
        compute = ComputeTime(compute)
    return Cluster(workers=1 if workers is None else workers, compute=compute,
                   group_size=group_size)


def with_start(problem: Problem, start) -> Problem:
    """``problem`` with another fixed starting point, checked against its dimension."""
    if not problem.flat:
        raise ConfigError(f"start: {problem.name} has a net's parameters, not a vector; "
                          "its start is the model's seeded initialisation")
    try:
        point = np.asarray(start, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"start must be a list of numbers, got {start!r}") from None
    if point.shape != (problem.dim,):
        raise ConfigError(
            f"start must have the problem's dimension {problem.dim} ({problem.name}), "
            f"got shape {point.shape}"
        )
    if not np.all(np.isfinite(point)) or not np.all(np.isfinite(point.astype(np.float32))):
        raise ConfigError(f"start must be finite in float32 (the precision the runs compute "
                          f"in), got {point.tolist()}")
    return problem._replace(start=point.astype(np.float32))


def schedule(rule: Rule, cluster: Cluster, *, commits=None, horizon=None, rng=0,
             activity: bool = False, semisync: SemiSync | None = None):
    """The trace a cluster produces for a rule: commits (asynchronous) or rounds.

    Post-local SGD's warm-up rounds take one local step each, so they are scheduled
    with λ = 1 and the rest with λ = H; the two parts are joined in time. With
    ``activity`` the trace also holds what every worker did when (``trace.activity``).
    ``semisync``: semi-synchronous rounds (synchronous rules; see
    :func:`~asynclab.cluster.simulate_sync`).
    """
    check_semisync_rule(rule, semisync)
    if semisync is not None:
        return simulate_sync(cluster, local_steps=rule.local_steps, rounds=commits,
                             horizon=horizon, rng=rng, activity=activity, semisync=semisync)
    warmup = rule.warmup_rounds if rule.synchronous else 0
    if warmup:
        return simulate_sync_with_warmup(cluster, warmup_rounds=warmup,
                                         local_steps=rule.local_steps, rounds=commits,
                                         horizon=horizon, rng=rng, activity=activity)
    if rule.synchronous:
        return simulate_sync(cluster, local_steps=rule.local_steps, rounds=commits,
                             horizon=horizon, rng=rng, activity=activity)
    return simulate_async(cluster, local_steps=rule.schedule_steps, commits=commits,
                          horizon=horizon, rng=rng, activity=activity)


def check_semisync_rule(rule: Rule, semisync) -> None:
    """``semisync`` is None or a :class:`~asynclab.cluster.SemiSync` the rule can run:
    a synchronous rule without warm-up rounds, and for ``late="stale"`` one of
    :data:`~asynclab.engine._core.STALE_RULES`."""
    from ._core import STALE_RULES

    if semisync is None:
        return
    if not isinstance(semisync, SemiSync):
        raise ConfigError(f"semisync must be an asynclab.cluster.SemiSync, got {semisync!r}")
    if not rule.synchronous:
        raise ConfigError(f"semisync: semi-synchronous rounds need a synchronous rule; "
                          f"{rule.name} is asynchronous")
    if rule.warmup_rounds:
        raise ConfigError(f"semisync: {rule.name}'s warm-up rounds do not combine with "
                          "semi-synchronous rounds")
    if semisync.stale and (rule.structure is None or rule.structure[0] not in STALE_RULES):
        raise ConfigError(f"semisync: late='stale' needs a rule whose workers reset to the "
                          f"centre ({', '.join(STALE_RULES)}), got {rule.name}")


def run(
    problem: str | Problem = "beale",
    rule: str | Rule = "downpour",
    *,
    workers: int | None = None,
    cluster: Cluster | None = None,
    compute: str | ComputeTime = "exponential",
    commits: int | None = None,
    horizon: float | None = None,
    seeds: int | Sequence[int] = 0,
    learning_rate: float | None = None,
    local_steps: int | None = None,
    noise: float = 0.0,
    init: str = "start",
    trace_per_seed: bool = False,
    record_every: int | None = None,
    record_paths: bool | None = None,
    progress: bool | None = None,
    problem_options: dict | None = None,
    start: Sequence[float] | None = None,
    devices=None,
    semisync: SemiSync | None = None,
    runs_per_call: int | None = None,
    **hyperparameters,
) -> Result:
    """Simulate a cluster, replay its schedule with a rule, for every seed.

    Args:
      problem: a problem name (see ``asynclab.problems.PROBLEMS``) or a Problem (a
        sharded one is dealt out to the run's workers, ``Problem.for_workers``).
      rule: a rule name (see ``asynclab rules``) or a rule built from asynclab.rules.
      workers: number of workers (shortcut for ``cluster=Cluster(workers, ...)``).
      cluster: the full timing model; overrides ``compute``.
      compute: compute-time distribution per local step (name or ComputeTime).
      commits: budget in commits (asynchronous) or rounds (synchronous)...
      horizon: ...or in simulated seconds. Give exactly one.
      seeds: an int or a list; each seed draws its own gradient noise and random start.
      learning_rate: η, the workers' learning rate (default: the problem's,
        ``problem.learning_rate``: 1e-3 for the surfaces, tuned values for the nets).
      local_steps: λ, local steps between two exchanges (default: the rule's own).
      noise: σ², the variance of the additive Gaussian gradient noise.
      init: "start", "random" or "random_per_worker" (synchronous rules).
      trace_per_seed: simulate a separate cluster schedule for every seed (seeded by it);
        by default all seeds replay the schedule of the first seed.
      record_every: record the central loss every k events.
      record_paths: record trajectories (default for problems of dimension <= 2).
      progress: progress bar (None: automatic).
      problem_options: options for the problem factory, e.g. ``{"dim": 100}``.
      start: a starting point replacing the problem's fixed start (length = dimension).
      devices: the devices the seeds are split over (default: every device of JAX's
        default backend, every process's after ``asynclab.backends.initialize``; a count,
        or a list of ``jax.Device``); a seed's numbers do not depend on it.
      semisync: semi-synchronous rounds for a synchronous rule, a
        :class:`~asynclab.cluster.SemiSync`: the first K of n (``quorum``), backup
        workers (``backup``) or a time window; late work discarded or stale (``late``).
        The round's aggregate averages the workers that counted.
      runs_per_call: seeds replayed per compiled call (default: all at once). Fewer
        hold less memory at once, and the memory check counts only those: many seeds of
        a large net then run in turns, with the same numbers (a net's to float rounding).
      **hyperparameters: the rule's own hyperparameters.

    Returns:
      A :class:`~asynclab.engine.Result` holding the configuration that made it.

    Example:
      >>> import asynclab
      >>> result = asynclab.run("beale", "downpour", workers=8, commits=2000, noise=10.0)
      >>> result.final_loss.shape
      (1,)
    """
    devices = replay_devices(devices)  # refused before any work
    if runs_per_call is not None:
        runs_per_call = _validate.count(runs_per_call, "runs_per_call")
    problem, rule, traces, seed_list, config = _prepare(
        problem, rule, workers=workers, cluster=cluster, compute=compute, commits=commits,
        horizon=horizon, seeds=seeds, learning_rate=learning_rate, local_steps=local_steps,
        noise=noise, init=init, trace_per_seed=trace_per_seed,
        problem_options=problem_options, start=start, hyperparameters=hyperparameters,
        record_every=record_every, record_paths=record_paths, semisync=semisync,
        in_flight=runs_per_call)
    return replay(rule, problem, traces, seeds=seed_list, noise=noise, init=init,
                  record_every=record_every, record_paths=record_paths, progress=progress,
                  config=config, devices=devices, runs_per_call=runs_per_call)


def _prepare(problem, rule, *, workers, cluster, compute, commits, horizon, seeds,
             learning_rate, local_steps, noise, init, trace_per_seed, problem_options, start,
             hyperparameters, record_every=None, record_paths=None, points=1,
             in_flight=None, semisync=None):
    """The checked problem, rule, traces, seeds and config of a run (see :func:`run`)."""
    problem_name = problem if isinstance(problem, str) else problem.name
    group_size = rule_group_size(rule, hyperparameters, cluster)
    if isinstance(rule, str) and group_size != 1:
        hyperparameters = {**hyperparameters, "group_size": group_size}
    cluster = _cluster_from(cluster, workers, compute, group_size)
    if problem_options is not None and not isinstance(problem_options, Mapping):
        raise ConfigError(f"problem_options must be a dict of options (e.g. "
                          f"{{'batch_size': 32}}), got {problem_options!r}")
    problem_options = dict(problem_options or {})
    # a sharded problem gets one shard per worker (a group's members are workers g·m + j)
    by_name, shards = isinstance(problem, str), problem_options.pop("workers", None)
    if shards is not None and by_name and "workers" not in options_of(problem):
        raise ConfigError(f"workers is not an option of problem {problem!r}")
    problem = get_problem(problem, workers=cluster.workers if shards is None else shards,
                          **problem_options)
    if by_name and problem.shards is not None:
        problem_options["workers"] = problem.shards.workers
    if start is not None:
        problem = with_start(problem, start)
    defaulted = learning_rate is None and isinstance(rule, str)
    if learning_rate is None:
        learning_rate = problem.learning_rate
    rule = _rule_from(rule, learning_rate, local_steps, hyperparameters, cluster)
    if rule.name == "sequential_sgd" and cluster.workers != 1:
        raise ConfigError(f"sequential_sgd runs one worker, got workers={cluster.workers}")
    check_semisync_rule(rule, semisync)
    if semisync is not None:
        from ._core import MASK_WORKERS

        semisync.quorum_of(cluster.workers)
        if cluster.workers > MASK_WORKERS:
            raise ConfigError(f"semisync: semi-synchronous rounds replay at most "
                              f"{MASK_WORKERS} workers (who counted is a 32-bit mask per "
                              f"round), got workers={cluster.workers}")
    if (commits is None) == (horizon is None):
        raise ConfigError("give exactly one budget: commits (or rounds) or horizon (seconds)")
    if commits is not None:
        commits = _validate.count(commits, "commits")
    if horizon is not None:
        horizon = _validate.number(horizon, "horizon (seconds)", low=0, low_open=True)
    seed_list = _validate.seeds(seeds)
    noise = check_noise(noise)
    check_options(rule, init, record_every)
    if init != "start" and problem.init is None and problem.box is None:
        raise ConfigError(f"init={init!r}: {problem.name} has no box and no init for random "
                          "starts; build it with box= (from_loss) or init= (from_model)")
    _validate.check_memory(_run_memory(rule, problem, cluster, commits, horizon, len(seed_list),
                                       trace_per_seed, record_every, record_paths, points,
                                       in_flight),
                           "commits" if commits is not None else "horizon",
                           advice="give a smaller budget, fewer seeds, fewer seeds at once "
                           "(runs_per_call), or record less (a larger record_every, no "
                           "trajectories)")
    trace_seeds = seed_list if trace_per_seed else seed_list[:1]
    traces = [schedule(rule, cluster, commits=commits, horizon=horizon, rng=s,
                       semisync=semisync) for s in trace_seeds]
    config = run_config(
        rule, problem, workers=cluster.workers, seeds=seed_list, noise=noise, init=init,
        problem=problem_name,
        problem_options=dict(problem_options or {}),
        compute=cluster.compute.describe(),
        cluster=repr(cluster),
        commits=commits,
        horizon=horizon,
        start=None if start is None else [float(v) for v in start],
        trace_per_seed=bool(trace_per_seed),
        **({} if semisync is None else {"semisync": dataclasses.asdict(semisync)}),
        defaults_used=(["learning_rate"] if defaulted else [])
        + (["record_every"] if record_every is None else []),
    )
    return problem, rule, traces, seed_list, config
