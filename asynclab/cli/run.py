"""``asynclab run``: the simulator, or real devices (``--backend pmap`` / ``threads``)."""

from __future__ import annotations

import argparse
import dataclasses

from .. import _validate
from .._errors import ConfigError
from .._names import LATE
from ._args import (
    _add_data_arguments,
    _add_model_arguments,
    _add_overwrite,
    _availability,
    _check_model,
    _check_outputs,
    _compute,
    _count,
    _given,
    _learning_rate,
    _non_negative,
    _params,
    _positive,
    _problem_options,
    _seeds,
    _server_time,
    _simulation_options,
    _start,
    _time_scale,
)
from ._output import _report
from .trace import _log_cluster


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    _add_model_arguments(p)
    _add_data_arguments(p)
    p.add_argument("--backend", default="sim", choices=("sim", "pmap", "threads"),
                   help="sim: simulated cluster; pmap: one worker per device, "
                   "replaying the simulated schedule; threads: free-running workers")
    p.add_argument("--devices", type=_count(1), default=None,
                   help="devices for --backend pmap/threads (default: --workers); with the "
                   "simulator, the local devices the seeds are split over (default: all)")
    p.add_argument("--runs-per-call", type=_count(1), default=None,
                   help="seeds replayed per compiled call (default: all at once); fewer hold "
                   "less memory at once, with the same numbers")
    p.add_argument("--simulate-devices", action="store_true",
                   help="run on --devices simulated CPU devices, even where a GPU is installed")
    p.add_argument("--checkpoint", default=None, help="pmap: checkpoint file")
    p.add_argument("--checkpoint-every", type=_count(1), default=None,
                   help="pmap: checkpoint every K segments/rounds (default: at the end only)")
    p.add_argument("--resume", action="store_true", help="pmap: continue from --checkpoint")
    _add_semisync_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--save", default=None, help="save the result here (a .npz file)")
    _add_overwrite(p)
    p.add_argument("--plot", default=None,
                   help="draw the run into this file (.png, .pdf, .svg, ...)")


def _add_semisync_arguments(p: argparse.ArgumentParser) -> None:
    """Semi-synchronous rounds (synchronous rules): ``asynclab.cluster.SemiSync``."""
    g = p.add_argument_group("semi-synchronous rounds (synchronous rules)")
    g.add_argument("--quorum", type=_count(1), default=None, metavar="K",
                   help="a round closes at its K-th commit (K of --workers)")
    g.add_argument("--backup", type=_count(0), default=None, metavar="B",
                   help="B of --workers are backups: a round takes the first workers - B")
    g.add_argument("--window", type=_positive, default=None, metavar="T",
                   help="a round closes T seconds after it opened (with --min-count in)")
    g.add_argument("--min-count", type=_count(1), default=None, metavar="M",
                   help="with --window: wait for M commits (default 1)...")
    g.add_argument("--deadline", type=_deadline, default=None, metavar="D",
                   help="with --window: ...but close D seconds after the round opened; with "
                   "--quorum/--backup: close at the K-th commit or at D, whichever is first; "
                   "'adaptive': D = mean + c*std of the last rounds' arrival delays")
    g.add_argument("--deadline-history", type=_count(1), default=None, metavar="H",
                   help="with --deadline adaptive: the last H rounds set D (default 5)")
    g.add_argument("--deadline-spread", type=_non_negative, default=None, metavar="C",
                   help="with --deadline adaptive: D = mean + C*std (default 2)")
    g.add_argument("--late", default=None, choices=LATE,
                   help="the work that misses a round: discard it (default), or let it "
                   "count, stale, in a later round")


_SEMISYNC = {"quorum": "--quorum", "backup": "--backup", "window": "--window",
             "min_count": "--min-count", "deadline": "--deadline", "late": "--late",
             "deadline_history": "--deadline-history", "deadline_spread": "--deadline-spread"}


def _deadline(text: str):
    """An argparse type: a number of seconds > 0, or ``adaptive``."""
    if text == "adaptive":
        return text
    try:
        return _positive(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (or 'adaptive')") from None


def _semisync(args):
    """The :class:`~asynclab.cluster.SemiSync` of the flags, or None without them."""
    given = _given(args, _SEMISYNC)
    if not given:
        return None
    if not any(f in given for f in ("--quorum", "--backup", "--window")):
        raise ConfigError(f"{given[0]} shapes semi-synchronous rounds; give --quorum K, "
                          "--backup B or --window T")
    from ..cluster import SemiSync

    return SemiSync(quorum=args.quorum, backup=args.backup, window=args.window,
                    min_count=args.min_count, deadline=args.deadline,
                    deadline_history=args.deadline_history,
                    deadline_spread=args.deadline_spread, late=args.late or "discard")


_DEVICE_ONLY = {"devices": "--devices", "simulate_devices": "--simulate-devices"}


_PMAP_ONLY = {"checkpoint": "--checkpoint", "checkpoint_every": "--checkpoint-every",
              "resume": "--resume"}


_SIM_ONLY = {"seeds": "--seeds", "trace_per_seed": "--trace-per-seed", "horizon": "--horizon",
             "mtbf": "--mtbf", "mttr": "--mttr", "failures": "--failures"}


_TIMING = {"compute": "--compute", "compute_mean": "--compute-mean",
           "compute_shape": "--compute-shape", "time_scale": "--time-scale",
           "heterogeneous": "--heterogeneous"}
_SERVER = {"server_time": "--server-time", "server_distribution": "--server-distribution",
           "server_shape": "--server-shape"}


def _check_run(args) -> None:
    """Refuse flags that this configuration would ignore, and unwritable outputs, before
    anything is computed."""
    backend = args.backend
    refused = []
    if backend == "sim" and args.simulate_devices and args.devices is None:
        refused += [("--simulate-devices", "--devices N")]
    if backend != "pmap":
        refused += [(f, "--backend pmap") for f in _given(args, _PMAP_ONLY)]
    if backend != "sim":
        refused += [(f, "the simulator (--backend sim)") for f in _given(args, _SIM_ONLY)]
    if backend == "threads":
        refused += [(f, "the simulated schedules (threads measure real compute times)")
                    for f in _given(args, {**_TIMING, **_SERVER})]
        refused += [(f, "the simulated schedules (free-running threads keep no rounds)")
                    for f in _given(args, _SEMISYNC)]
    log = "--trace-log" if args.trace_log else "--fit-log" if args.fit_log else None
    if log is not None:
        refused += [(f, f"the distributions asynclab draws (the log's times replace them, "
                     f"so not with {log})") for f in _given(args, _TIMING)]
    if args.log_end is not None and not args.trace_log:
        refused += [("--log-end", "--trace-log")]
    if refused:
        flag, where = refused[0]
        if flag == "--seeds":
            raise ConfigError(f"--backend {backend} runs one seed (--seed); --seeds applies "
                              "only to the simulator (--backend sim)")
        backend_bound = where.startswith(("--backend", "the simulator", "the simulated"))
        raise ConfigError(f"{flag} applies only to {where}; drop it"
                          + (f" with --backend {backend}" if backend_bound else ""))
    if args.resume and args.checkpoint is None:
        raise ConfigError("--resume continues from --checkpoint FILE; give the file")
    if args.checkpoint_every is not None and args.checkpoint is None:
        raise ConfigError("--checkpoint-every needs --checkpoint FILE")
    _check_model(args)
    _check_outputs(args)


def _run(args) -> int:
    _check_run(args)
    if args.backend == "threads" and (args.trace_log or args.fit_log):
        raise ConfigError("--trace-log / --fit-log set a simulated schedule; --backend threads "
                          "measures its own (asynclab.cluster.log_from_threads records it)")
    if args.backend != "sim":
        if args.runs_per_call is not None:
            raise ConfigError("--runs-per-call: the seeds of --backend sim are replayed in "
                              "turns; --backend pmap and threads run one seed")
        return _run_on_devices(args)
    from ..engine import run
    from ..problems import get_problem

    options = _simulation_options(args)
    if args.devices is not None:  # the seeds split over that many local devices
        if args.simulate_devices:
            from ..backends import simulate_cpu_devices

            simulate_cpu_devices(args.devices)
        options["devices"] = args.devices
    if args.runs_per_call is not None:
        options["runs_per_call"] = args.runs_per_call
    cluster = _log_cluster(args)
    if cluster is not None:  # the log's cluster decides the workers and their times
        cluster = dataclasses.replace(cluster, server_time=_server_time(args),
                                      availability=_availability(args))
        options.update(workers=None, cluster=cluster)
    # a sharded problem gets one shard per worker, as run() deals them out
    problem = get_problem(args.problem, workers=cluster.workers if cluster else
                          options["workers"], **options["problem_options"])
    semisync = _semisync(args)
    if semisync is not None:
        options["semisync"] = semisync
    result = run(args.problem, args.rule, **options)
    _report(args, result, problem)
    return 0


def _devices(args):
    """``(n, devices)``: the devices one worker each runs on. ``--simulate-devices`` selects
    N simulated CPU devices before JAX starts, whatever accelerator is installed."""
    from ..backends import cpu_devices, simulate_cpu_devices

    n = args.devices if args.devices is not None else args.workers
    if n is None:
        raise ConfigError(f"--backend {args.backend} needs --devices N")
    if args.simulate_devices:
        simulate_cpu_devices(n)
        return n, cpu_devices(n)
    import jax

    available = jax.devices()
    if n > len(available):
        raise ConfigError(
            f"--devices {n} but JAX sees {len(available)} {available[0].platform} device(s); "
            "simulate CPU devices with --simulate-devices, or JAX_PLATFORMS=cpu and "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} set before JAX starts"
        )
    return n, available[:n]


def _run_on_devices(args) -> int:

    n, devices = _devices(args)

    from ..engine import build_rule
    from ..problems import get_problem

    seed = _seeds(args)[0]
    options = _problem_options(args)
    problem = get_problem(args.problem, workers=n, **options)  # a shard per worker
    if problem.shards is not None:
        options["workers"] = n
    if args.start is not None:
        from ..engine._run import with_start

        problem = with_start(problem, _start(args.start))
    params = _params(args.param)
    from ..engine._run import rule_group_size

    scale = _time_scale(args, n * rule_group_size(args.rule, params))
    if scale is not None and params.get("dynamic") and params.get("speeds") is None:
        params["speeds"] = tuple(1.0 / s for s in scale)  # as asynclab.run fills them
    rule = build_rule(args.rule, learning_rate=_learning_rate(args, problem),
                      local_steps=args.local_steps, workers=n, **params)
    # a device runs one committing unit: a worker, or a group of the mixed rule
    group_size = rule.group_size
    workers = n * group_size
    if args.workers is not None and args.workers != workers:
        per = f" (groups of {group_size}, one per device)" if group_size > 1 else ""
        raise ConfigError(f"one {'group' if group_size > 1 else 'worker'} per device: "
                          f"--workers {args.workers} != {workers}{per}")
    if args.commits is None:
        args.commits = 1000
    semisync = _semisync(args)
    record_every = args.record_every or (1 if args.backend == "pmap" else None)
    _check_device_memory(args, problem, rule, workers, record_every)
    config = {"problem": args.problem, "problem_options": options, "rule": rule.name,
              "synchronous": rule.synchronous, "hyperparameters": dict(rule.hyperparameters),
              "workers": workers, "commits": args.commits, "seeds": [seed],
              "noise": args.noise, "init": args.init, "backend": args.backend}
    progress = False if args.json else None
    cluster = None
    if args.backend == "pmap":
        from ..cluster import Cluster

        cluster = dataclasses.replace(
            _log_cluster(args, workers) or Cluster(workers, _compute(args),
                                                   group_size=group_size, time_scale=scale),
            server_time=_server_time(args))
    from ..backends import run_devices

    result, extra = run_devices(
        rule, problem, backend=args.backend, devices=devices, commits=args.commits,
        seed=seed, noise=args.noise, init=args.init, record_every=record_every,
        cluster=cluster, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
        resume=args.resume, overwrite=args.overwrite, progress=progress, config=config,
        **({} if semisync is None else {"semisync": semisync}))
    _report(args, result, problem, extra)
    return 0


def _check_device_memory(args, problem, rule, workers, record_every) -> None:
    """The memory guard for device runs: schedule, per-event records, trajectories."""
    from ..engine._core import default_record_every

    events = args.commits
    paths = problem.dim <= 2
    width = problem.dim * (workers if rule.synchronous else 1)
    every = record_every or default_record_every(rule, problem, max(events, 1), workers)
    _validate.check_memory(_validate.memory_estimate(
        events, records=events // every + 1, record_bytes=8 + (8 * problem.dim if paths else 0),
        event_bytes=8 * width if paths else 0), "--commits")
