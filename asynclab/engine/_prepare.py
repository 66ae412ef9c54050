"""A run prepared once: :func:`prepare` turns what a caller gives (names or objects,
options, cluster, budget, seeds, devices) into one immutable :class:`RunSpec`, with every
default and every check applied. The executors (the replay, a sweep, the device executor
and the threads), the command line, the studies and the notebooks take the spec; nothing
else fills defaults or validates."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ..cluster import (
    SIMULATORS,
    Cluster,
    ComputeTime,
    RoundTrace,
    SemiSync,
    Trace,
    check_simulator,
    hopeless,
)
from ..problems import Problem, get_problem, options_of
from ..problems._problem import check_noise
from ..rules import RULES, Rule, make_rule
from ._budget import check_run_memory
from ._compiled import event_unroll
from ._core import DIVERGED_ABOVE, check_late, check_traces, run_config
from ._layout import replay_devices
from ._replay import check_diverged_above, check_options
from ._spec import BACKENDS, RunSpec
from ._sweep import MEMORY_BUDGET, check_grid

# ----------------------------------------------------------------------------- the rule


def rule_group_size(rule: str | Rule, hyperparameters: Mapping, cluster=None) -> int:
    """Workers per group for ``rule``: the one number the rule and the cluster share.

    A built rule says it itself; for a rule name it is the ``group_size`` given, else the
    cluster's (a :class:`~asynclab.cluster.Cluster`), else the rule's own default (1 for
    rules without groups).
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


def _rule(rule, learning_rate, local_steps, hyperparameters, groups: int,
          cluster: Cluster | None) -> Rule:
    """The run's rule: a name built with the run's settings (η, λ, the workers' count and
    speeds, from the cluster, for rules that read them), or a rule object as it is."""
    if not isinstance(rule, str):
        if not isinstance(rule, Rule):
            raise ConfigError(f"rule must be a rule name (see `asynclab rules`) or a rule from "
                              f"asynclab.rules, got {rule!r}")
        if hyperparameters:
            raise ConfigError("hyperparameters go into the rule you built; pass a rule name "
                              "to have it built with them")
        given = [name for name, value in (("learning_rate", learning_rate),
                                          ("local_steps", local_steps)) if value is not None]
        if given:
            raise ConfigError(f"{given[0]}: the rule given is built already (with its own "
                              f"{given[0]}); pass a rule name to have it built with one")
        return rule
    if rule not in RULES:
        raise ConfigError(f"unknown rule {rule!r}; available: {', '.join(RULES)}")
    for name in ("learning_rate", "local_steps"):
        if name in hyperparameters:
            raise ConfigError(f"give {name} as the run's own argument (--{name.replace('_', '-')}"
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
        options["workers"] = groups
    if "speeds" in accepted and options.get("dynamic"):
        speeds = options.get("speeds")
        if speeds is None:
            scales = cluster.scales if cluster is not None else (1.0,) * groups
            options["speeds"] = tuple(1.0 / s for s in scales)  # steps per second
        elif isinstance(speeds, tuple) and len(speeds) != groups:
            raise ConfigError(f"{rule}: speeds must have one entry per worker "
                              f"({groups}), got {len(speeds)}")
    return make_rule(rule, **options)


def build_rule(rule: str | Rule, *, learning_rate: float, local_steps: int | None = None,
               workers: int | None = None, **hyperparameters) -> Rule:
    """A rule by name with the run-level settings (η, λ, n for rules that need n).

    A rule object passes through unchanged (then no hyperparameters may be given).
    """
    return _rule(rule, learning_rate, local_steps, hyperparameters, workers or 1, None)


# ----------------------------------------------------------------------------- the cluster


def _cluster(cluster, workers, compute, group_size: int) -> Cluster:
    """The run's cluster: a :class:`~asynclab.cluster.Cluster` as it is (its groups those of
    the rule), or one built from ``workers``, ``compute`` and a mapping of further fields
    (``cluster={"server_time": 0.1, ...}``) with the rule's groups."""
    if isinstance(cluster, Cluster):
        if workers is not None and workers != cluster.workers:
            raise ConfigError(f"workers={workers} disagrees with the cluster's {cluster.workers}")
        if cluster.group_size != group_size:
            raise ConfigError(f"the rule works on groups of {group_size} but the cluster has "
                              f"group_size={cluster.group_size}")
        return cluster
    fields = {}
    if isinstance(cluster, Mapping):
        known = {f.name for f in dataclasses.fields(Cluster)} - {"group_size"}
        unknown = sorted(set(cluster) - known)
        if unknown:
            raise ConfigError(f"cluster: {', '.join(map(repr, unknown))} "
                              f"{'is' if len(unknown) == 1 else 'are'} not a field of "
                              f"asynclab.cluster.Cluster; its fields: {', '.join(sorted(known))}")
        fields = dict(cluster)
        if workers is not None and fields.setdefault("workers", workers) != workers:
            raise ConfigError(f"workers={workers} disagrees with cluster['workers']="
                              f"{fields['workers']}")
    elif cluster is not None:
        raise ConfigError(f"cluster must be an asynclab.cluster.Cluster (or a dict of its "
                          f"fields), got {cluster!r}")
    if "compute" not in fields:
        fields["compute"] = compute if isinstance(compute, ComputeTime) else ComputeTime(compute)
    fields.setdefault("workers", 1 if workers is None else workers)
    return Cluster(group_size=group_size, **fields)


# ----------------------------------------------------------------------------- the problem


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


def _problem(problem, problem_options, workers: int, start) -> tuple[Problem, dict]:
    """The run's problem (a name built with its options; a sharded one dealt out to the
    run's workers, a group's members being workers g·m + j) and the options as given
    (for the record; a sharded named problem's with its shard count)."""
    if problem_options is not None and not isinstance(problem_options, Mapping):
        raise ConfigError(f"problem_options must be a dict of options (e.g. "
                          f"{{'batch_size': 32}}), got {problem_options!r}")
    given = dict(problem_options or {})
    by_name = isinstance(problem, str)
    if not by_name and not isinstance(problem, Problem):
        raise ConfigError(f"problem must be a problem name or an asynclab.problems.Problem, "
                          f"got {problem!r}")
    if not by_name and given:
        raise ConfigError("problem_options build a problem by name; the problem given is "
                          "built already")
    options = dict(given)
    shards = options.pop("workers", None)
    if shards is not None and by_name and "workers" not in options_of(problem):
        raise ConfigError(f"workers is not an option of problem {problem!r}")
    built = get_problem(problem, workers=workers if shards is None else shards, **options)
    if by_name and built.shards is not None:
        given["workers"] = built.shards.workers
    if start is not None:
        built = with_start(built, start)
    return built, given


# ----------------------------------------------------------------------------- a sweep's grid


def _grid_rule(rule, grid, learning_rate, hyperparameters):
    """``(rule, grid, learning_rate, hyperparameters)`` for a sweep: the grid checked, and
    its first values given to the rule (an option the grid gives is then present)."""
    if isinstance(rule, str):
        if rule not in RULES:
            raise ConfigError(f"unknown rule {rule!r}; available: {', '.join(RULES)}")
        rule_name = rule
    elif isinstance(rule, Rule) and rule.structure is not None:
        rule_name = rule.structure[0]
    else:
        raise ConfigError("sweep needs a declared rule (a name, or one built by a factory "
                          "of asynclab.rules)")
    if "batch_size" in hyperparameters:
        raise ConfigError("batch_size: a net's mini-batch size is problem_options="
                          "{'batch_size': B}; the (point, seed) pairs per compiled call are "
                          "runs_per_call")
    grid = check_grid(grid, rule_name, hyperparameters)
    first = {k: float(v[0]) for k, v in grid.items()}
    if "learning_rate" in first and learning_rate is not None:
        raise ConfigError("sweep: learning_rate and grid['learning_rate'] both set η; give "
                          "one of them")
    if not isinstance(rule, str):  # rebuilt: an option the grid gives becomes present
        return RULES[rule_name].factory(**{**rule.hyperparameters, **first}), grid, \
            learning_rate, hyperparameters
    if "learning_rate" in first:
        learning_rate = first.pop("learning_rate")
    return rule, grid, learning_rate, {**hyperparameters, **first}


# ----------------------------------------------------------------------------- devices


def _device_list(backend: str, devices, workers, group_size: int) -> tuple:
    """The devices of a run: those the seeds are split over (``"sim"``), or one per
    committing unit (``"pmap"``, ``"threads"``: a count, default ``workers / group_size``,
    or a list of devices)."""
    if backend == "sim":
        return replay_devices(devices)
    if devices is None:
        if workers is None:
            raise ConfigError(f"backend {backend!r} runs one worker per device: give devices "
                              "(a count or a list) or workers")
        devices = _validate.count(workers, "workers") // group_size
    if isinstance(devices, bool):
        raise ConfigError(f"devices must be a count or a list of devices, got {devices!r}")
    if isinstance(devices, int | np.integer):
        n = _validate.count(devices, "devices", high=DEVICES_LIMIT)
        import jax

        available = jax.devices()
        if n > len(available):
            raise ConfigError(
                f"devices={n} but JAX sees {len(available)} {available[0].platform} "
                f"device(s); simulate CPU devices with --simulate-devices "
                f"(asynclab.backends.simulate_cpu_devices({n})), or JAX_PLATFORMS=cpu and "
                f"XLA_FLAGS=--xla_force_host_platform_device_count={n} set before JAX starts")
        return tuple(available[:n])
    if isinstance(devices, str) or not isinstance(devices, Sequence) or not devices:
        raise ConfigError(f"devices must be a count or a list of devices, got {devices!r}")
    return tuple(devices)


#: The most devices a run may name (a mesh axis, and simulated CPU devices, are bounded
#: far below what an int32 counts).
DEVICES_LIMIT = 4096


def _check_backend(backend, *, seeds, trace_per_seed, horizon, runs_per_call, grid, traces,
                   semisync) -> None:
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "sim":
        return
    refused = [(name, given) for name, given in (
        ("seeds (one seed: give seeds=s)", len(seeds) != 1),
        ("trace_per_seed", trace_per_seed), ("horizon", horizon is not None),
        ("runs_per_call", runs_per_call is not None), ("grid", grid is not None),
        ("traces", traces is not None),
        ("semisync", semisync is not None and backend == "threads")) if given]
    if refused:
        raise ConfigError(f"{refused[0][0]}: backend {backend!r} runs one seed on "
                          f"{'a simulated schedule' if backend == 'pmap' else 'real threads'}"
                          "; this applies only to the simulator (backend 'sim')")


# ----------------------------------------------------------------------------- prepare


def prepare(
    problem: str | Problem = "beale",
    rule: str | Rule = "downpour",
    *,
    workers: int | None = None,
    cluster: Cluster | Mapping | None = None,
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
    problem_options: Mapping | None = None,
    start: Sequence[float] | None = None,
    devices=None,
    semisync: SemiSync | None = None,
    runs_per_call: int | None = None,
    grid: Mapping[str, Sequence[float]] | None = None,
    traces: Trace | RoundTrace | Sequence | None = None,
    backend: str = "sim",
    diverged_above: float | None = DIVERGED_ABOVE,
    simulator: str = "auto",
    unroll: int | None = None,
    stepwise: bool = False,
    pad_workers: int | None = None,
    **hyperparameters,
) -> RunSpec:
    """Check and complete a run's description, before any work: a :class:`RunSpec`.

    Args:
      problem: a problem name (see ``asynclab.problems.PROBLEMS``) or a Problem.
      rule: a rule name (see ``asynclab rules``) or a rule built from asynclab.rules.
      workers: number of workers (shortcut for ``cluster=Cluster(workers, ...)``).
      cluster: the full timing model, a :class:`~asynclab.cluster.Cluster` (overrides
        ``compute``), or a dict of its fields other than ``group_size`` (the rule's).
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
      problem_options: options for the problem factory, e.g. ``{"dim": 100}``.
      start: a starting point replacing the problem's fixed start (length = dimension).
      devices: the devices the seeds are split over (default: every device of JAX's
        default backend, every process's after ``asynclab.backends.initialize``; a count,
        or a list of ``jax.Device``); a seed's numbers do not depend on it. With
        ``backend="pmap"`` or ``"threads"``: one committing unit per device.
      semisync: semi-synchronous rounds for a synchronous rule, a
        :class:`~asynclab.cluster.SemiSync`: the first K of n (``quorum``), backup
        workers (``backup``) or a time window; late work discarded or stale (``late``).
        The round's aggregate averages the workers that counted.
      runs_per_call: seeds (a sweep's (point, seed) pairs) replayed per compiled call
        (default: all at once; a sweep's as many as fit in about 1 GiB). Fewer hold less
        memory at once, and the memory check counts only those.
      grid: a sweep: ``{name: values}`` of traced hyperparameters (see
        :func:`asynclab.sweep`).
      traces: schedules to replay as they are (one, or one per seed) instead of
        simulating ``cluster``; give no cluster and no budget with them.
      diverged_above: a run whose recorded loss exceeds this many times max(1, |its
        initial loss|) is reported as diverged at that record, as one whose centre or
        loss is not finite (default 1e6; None: only those).
      simulator: what makes the schedules: ``"auto"`` (the array-speed generator where it
        covers the timing model, many seeds at once, SimPy elsewhere: the same traces),
        ``"simpy"`` (the reference simulator) or ``"arrays"`` (refused where it does not
        cover the model). Each trace says which made it (``trace.simulator``).
      unroll: events per iteration of the replay's compiled loop (None: 1), as
        :func:`asynclab.replay` takes it; a speed setting (backend ``"sim"`` only, and
        not in a sweep, as the two below).
      stepwise: replay a synchronous rule that can one local step per compiled event, so
        that every λ shares one compiled program (see :func:`asynclab.replay`).
      pad_workers: replay a synchronous rule on a worker axis of this many workers, so
        that runs of different n share one compiled program (see
        :func:`asynclab.replay`).
      backend: ``"sim"`` (the replay of simulated schedules), ``"pmap"`` (the device
        executor, one worker per device, :func:`asynclab.backends.run_devices`) or
        ``"threads"`` (free-running threads).
      **hyperparameters: the rule's own hyperparameters.

    Returns:
      A :class:`RunSpec`; :func:`asynclab.run` executes it.

    Raises:
      ConfigError: for anything the run could not do, naming the field, before any work.
    """
    seed_list = _validate.seeds(seeds)
    _check_backend(backend, seeds=seed_list, trace_per_seed=trace_per_seed, horizon=horizon,
                   runs_per_call=runs_per_call, grid=grid, traces=traces, semisync=semisync)
    if runs_per_call is not None:
        runs_per_call = _validate.count(runs_per_call, "runs_per_call")
    if grid is not None:
        rule, grid, learning_rate, hyperparameters = _grid_rule(rule, grid, learning_rate,
                                                                hyperparameters)
    if traces is not None:
        traces = _given_traces(traces, len(seed_list))
        if cluster is not None or workers is not None or commits is not None \
                or horizon is not None or trace_per_seed or semisync is not None:
            raise ConfigError("traces: the schedules are given; give no cluster, workers, "
                              "budget (commits, horizon), trace_per_seed or semisync with "
                              "them")
    group_size = rule_group_size(rule, hyperparameters,
                                 cluster if isinstance(cluster, Cluster) else None)
    if isinstance(rule, str) and group_size != 1:
        hyperparameters = {**hyperparameters, "group_size": group_size}
    if backend != "sim" and workers is None and devices is not None:  # one unit each
        if isinstance(devices, int | np.integer) and not isinstance(devices, bool):
            workers = _validate.count(devices, "devices", high=DEVICES_LIMIT) * group_size
        elif isinstance(devices, Sequence) and not isinstance(devices, str):
            workers = len(devices) * group_size
    if traces is not None:
        n_workers, built_cluster = traces[0].n_workers * group_size, None
    elif backend == "threads":
        if cluster is not None:
            raise ConfigError("cluster: free-running threads measure their own times; give "
                              "workers (or devices) instead of a cluster")
        n_workers, built_cluster = _validate.count(workers, "workers"), None
    else:
        built_cluster = _cluster(cluster, workers, compute, group_size)
        n_workers = built_cluster.workers
    device_list = _device_list(backend, devices, n_workers, group_size)
    if backend != "sim" and len(device_list) * group_size != n_workers:
        per = f" (groups of {group_size}, one per device)" if group_size > 1 else ""
        raise ConfigError(f"one {'group' if group_size > 1 else 'worker'} per device: "
                          f"workers={n_workers} != {len(device_list) * group_size}{per}")
    built_problem, given_options = _problem(problem, problem_options, n_workers, start)
    defaulted = learning_rate is None and isinstance(rule, str)
    if defaulted:
        learning_rate = built_problem.learning_rate
    built_rule = _rule(rule, learning_rate, local_steps, hyperparameters,
                       n_workers // group_size, built_cluster)
    if built_rule.name == "sequential_sgd" and n_workers != 1:
        raise ConfigError(f"sequential_sgd runs one worker, got workers={n_workers}")
    if traces is not None:
        check_traces(built_rule, list(traces))
    if semisync is not None:
        _check_semisync(built_rule, semisync, n_workers)
    if built_cluster is not None:
        reason = hopeless(built_cluster, built_rule.schedule_facts)
        if reason is not None:
            raise ConfigError(reason)
        simulator = check_simulator(simulator, built_rule.schedule_facts, built_cluster,
                                    semisync=semisync)
    elif simulator not in SIMULATORS:
        raise ConfigError(f"simulator must be one of {', '.join(SIMULATORS)}, got "
                          f"{simulator!r}")
    if traces is None and backend != "threads" and (commits is None) == (horizon is None):
        raise ConfigError("give exactly one budget: commits (or rounds) or horizon "
                          "(seconds)")
    if backend == "threads" and commits is None:
        raise ConfigError("backend 'threads': give the budget in commits")
    if commits is not None:
        commits = _validate.count(commits, "commits")
    if horizon is not None:
        horizon = _validate.number(horizon, "horizon (seconds)", low=0, low_open=True)
    noise = check_noise(noise)
    diverged_above = check_diverged_above(diverged_above)
    unroll, stepwise, pad_workers = _check_layout(built_rule, backend, grid, semisync, unroll,
                                                  stepwise, pad_workers,
                                                  n_workers // group_size)
    check_options(built_rule, init, record_every)
    if init != "start" and built_problem.init is None and built_problem.box is None:
        raise ConfigError(f"init={init!r}: {built_problem.name} has no box and no init for "
                          "random starts; build it with box= (from_loss) or init= "
                          "(from_model)")
    if record_every is None and backend == "pmap":
        record_every = 1  # the device executor records every event by default
    if record_paths is not None and not isinstance(record_paths, bool | np.bool_):
        raise ConfigError(f"record_paths must be True, False or None, got {record_paths!r}")
    record_paths = None if record_paths is None else bool(record_paths)
    if grid is not None and record_paths is None:
        record_paths = False  # a sweep's paths are rarely wanted
    points = 1 if grid is None else int(np.prod([v.size for v in grid.values()]))
    in_flight = runs_per_call
    if grid is not None and in_flight is None:
        in_flight = ("bytes", MEMORY_BUDGET)
    check_run_memory(built_rule, built_problem, built_cluster, n_workers,
                     commits=commits, horizon=horizon, traces=traces, n_seeds=len(seed_list),
                     trace_per_seed=trace_per_seed, record_every=record_every,
                     record_paths=record_paths, points=points, in_flight=in_flight,
                     semisync=semisync)
    if commits is not None:  # an event's index is an int32 (after the memory check,
        commits = _validate.count(commits, "commits", high=COMMITS_LIMIT)  # which says more)
    problem_name = problem if isinstance(problem, str) else built_problem.name
    config = run_config(
        built_rule, built_problem, workers=n_workers, seeds=seed_list, noise=noise, init=init,
        problem=problem_name,
        problem_options=given_options,
        # every cluster setting that shapes the schedules: compute, heterogeneity,
        # stragglers, network, server, groups, failures (Cluster.describe)
        **({} if built_cluster is None else {**built_cluster.describe(),
                                             "cluster": repr(built_cluster)}),
        commits=commits,
        horizon=horizon,
        start=None if start is None else [float(v) for v in start],
        trace_per_seed=bool(trace_per_seed),
        record_every=record_every,  # None: the replay's default (see defaults_used)
        **({} if semisync is None else {"semisync": dataclasses.asdict(semisync)}),
        **({} if backend == "sim" else {"backend": backend}),
        diverged_above=diverged_above,
        simulator=simulator,
        # a layout that is not the default: stepwise replays of λ > 1 round differently
        # in the last bits, so a result says how it was replayed
        **({} if unroll is None and not stepwise and pad_workers is None else
           {"layout": {"unroll": unroll, "stepwise": stepwise, "pad_workers": pad_workers}}),
        defaults_used=(["learning_rate"] if defaulted else [])
        + (["record_every"] if record_every is None else []),
    )
    return RunSpec(problem=built_problem, rule=built_rule, cluster=built_cluster,
                   commits=commits, horizon=horizon, seeds=tuple(seed_list), noise=noise,
                   init=init, trace_per_seed=bool(trace_per_seed), semisync=semisync,
                   record_every=record_every, record_paths=record_paths, backend=backend,
                   devices=device_list, runs_per_call=runs_per_call,
                   grid=None if grid is None else types.MappingProxyType(grid),
                   traces=traces, diverged_above=diverged_above, simulator=simulator,
                   config=types.MappingProxyType(config), unroll=unroll, stepwise=stepwise,
                   pad_workers=pad_workers)


#: The largest budget in commits or rounds: an event's index is an int32 in the replay.
COMMITS_LIMIT = 2**31 - 2**20


def _given_traces(traces, n_seeds: int) -> tuple:
    if isinstance(traces, Trace | RoundTrace):
        return (traces,)
    if isinstance(traces, str) or not isinstance(traces, Sequence) or not traces or not all(
            isinstance(t, Trace | RoundTrace) for t in traces):
        raise ConfigError(f"traces must be a Trace, a RoundTrace or a list of them, got "
                          f"{type(traces).__name__}")
    if len(traces) not in (1, n_seeds):
        raise ConfigError(f"give one trace, or one per seed ({n_seeds}); got {len(traces)}")
    return tuple(traces)


def _check_layout(rule: Rule, backend: str, grid, semisync, unroll, stepwise, pad_workers,
                  n_workers: int) -> tuple[int | None, bool, int | None]:
    """The replay's layout options (``unroll``, ``stepwise``, ``pad_workers``), for a
    replay that can take them."""
    from ._replay import _check_pad, stepwise_rule

    if not isinstance(stepwise, bool | np.bool_):
        raise ConfigError(f"stepwise must be True or False, got {stepwise!r}")
    if unroll is None and not stepwise and pad_workers is None:
        return None, False, None
    name = ("unroll" if unroll is not None else "stepwise" if stepwise else "pad_workers")
    if backend != "sim" or grid is not None:
        raise ConfigError(f"{name}: a layout of the replay's (backend 'sim', not a sweep)")
    if stepwise:
        if semisync is not None:
            raise ConfigError("stepwise replays plain synchronous rounds, not "
                              "semi-synchronous ones")
        stepwise_rule(rule)  # refuses a rule that cannot be replayed step by step
    unroll = None if unroll is None else event_unroll(unroll)
    return unroll, bool(stepwise), _check_pad(rule, pad_workers, n_workers)


def _check_semisync(rule: Rule, semisync, n_workers: int) -> None:
    """Semi-synchronous rounds the rule can replay, on at most a mask's workers."""
    from ..cluster._schedule import check_semisync
    from ._core import MASK_WORKERS

    check_semisync(rule.schedule_facts, semisync)
    check_late(rule, semisync.late)
    semisync.quorum_of(n_workers)
    if n_workers > MASK_WORKERS:
        raise ConfigError(f"semisync: semi-synchronous rounds replay at most "
                          f"{MASK_WORKERS} workers (who counted is a 32-bit mask per "
                          f"round), got workers={n_workers}")
