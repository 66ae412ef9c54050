"""The ``asynclab`` command: ``run``, ``sweep``, ``rules``, ``demo``, ``figures``, ``trace``."""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from . import _validate
from ._errors import ConfigError


def _value(text: str):
    """A ``--param`` value: int, float, bool or string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _learning_rate(args, problem) -> float:
    """--learning-rate, else the problem's default."""
    return problem.learning_rate if args.learning_rate is None else args.learning_rate


def _params(pairs) -> dict:
    out = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--param takes NAME=VALUE, got {pair!r}")
        name = name.strip().replace("-", "_")
        if name in out:
            raise ConfigError(f"--param {name} is given twice; give each parameter once")
        out[name] = _value(value.strip())
    import inspect

    from .engine import run

    own = set(inspect.signature(run).parameters) - {"hyperparameters"}
    for name in out:
        if name in own:
            raise ConfigError(f"{name} is not a rule hyperparameter: give it as "
                              f"--{name.replace('_', '-')} rather than --param")
    return out


def _seeds(args) -> list[int]:
    if args.seeds is None:
        return [_validate.seed(0 if args.seed is None else args.seed, "--seed")]
    if args.seed is not None:
        raise ConfigError("give either --seed or --seeds, not both")
    text = args.seeds.strip()
    try:
        if ":" in text:
            start, stop = (int(x) for x in text.split(":"))
            seeds = None
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--seeds takes START:STOP or a comma list, got {text!r}") from None
    if seeds is None:
        if stop <= start:
            raise ConfigError(f"--seeds {text!r} gives no seed")
        if stop - start > _MAX_SEEDS:
            raise ConfigError(f"--seeds {text!r} asks for {stop - start} seeds; at most "
                              f"{_MAX_SEEDS} in one run")
        _validate.seed(start, "--seeds START")
        _validate.seed(stop - 1, "--seeds STOP - 1")
        seeds = range(start, stop)
    if not seeds:
        raise ConfigError(f"--seeds {text!r} gives no seed")
    return _validate.seeds(seeds, "--seeds")


_MAX_SEEDS = 10**7


def _start(text):
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"--start takes comma-separated numbers, got {text!r}") from None


def _finite_list(values):
    return [None if not math.isfinite(v) else float(v) for v in np.ravel(values)]


def summary(result, problem) -> dict:
    """The JSON summary of a result (one value per seed where it varies by seed)."""
    hist = result.staleness_histogram()
    single = result.n_seeds == 1
    out = {
        "problem": result.config.get("problem"),
        "rule": result.config.get("rule"),
        "workers": result.config.get("workers"),
        "hyperparameters": result.config.get("hyperparameters"),
        "events": result.n_events,
        "seeds": result.seeds.tolist(),
        "final_loss": _finite_list(result.final_loss),
        "mean_staleness": float(np.average(np.arange(hist.size), weights=hist)),
        "staleness_histogram": hist.tolist(),
        "simulated_time": [float(t) for t in result.simulated_time],
        "diverged": result.diverged.tolist(),
        "diverged_at": [int(t) if t >= 0 else None for t in result.diverged_at],
    }
    if problem.is_surface:
        out["success"] = problem.success(result.final_params).tolist()
    if problem.flat and problem.dim <= 10:
        out["final_params"] = np.asarray(result.final_params).tolist()
    if result.metrics:
        out["final_accuracy"] = _finite_list(result.final_accuracy)
        out["final_validation_loss"] = _finite_list(result.final_validation_loss)
        out["model"] = dict(problem.info or {})
    if single:
        for key in ("final_loss", "simulated_time", "diverged", "diverged_at", "success",
                    "final_params"):
            if key in out:
                out[key] = out[key][0]
    return out


def _print_summary(result, problem, out=None) -> None:
    out = sys.stdout if out is None else out
    s = summary(result, problem)
    cfg = result.config
    hp = ", ".join(f"{k}={v}" for k, v in (s["hyperparameters"] or {}).items())
    print(f"{s['rule']} on {s['problem']} with {s['workers']} worker(s) ({hp})", file=out)
    if "learning_rate" in cfg.get("defaults_used", ()):
        print(f"  η = {cfg['hyperparameters']['learning_rate']:g}: the default for {s['problem']} "
              "(--learning-rate sets another)", file=out)
    budget = "rounds" if cfg.get("synchronous") else "commits"
    print(f"  {s['events']} {budget}, noise σ² = {cfg.get('noise')}, "
          f"{result.n_seeds} seed(s)", file=out)
    times = np.atleast_1d(s["simulated_time"])
    clock = "wall-clock time" if cfg.get("backend") == "threads" else "simulated time"
    print(f"  {clock}: {np.mean(times):.4g} s", file=out)
    if not cfg.get("synchronous"):
        n = s["workers"]
        print(f"  mean staleness: {s['mean_staleness']:.3f} (closed-loop theory: n − 1 = {n - 1})",
              file=out)
    losses = np.atleast_1d(np.asarray(s["final_loss"], dtype=float))
    print("  final central loss: " + ", ".join(f"{v:.4g}" for v in losses[:8])
          + (" …" if losses.size > 8 else ""), file=out)
    if "final_params" in s and result.n_seeds == 1:
        print(f"  final centre: {np.round(s['final_params'], 4).tolist()}", file=out)
    if "success" in s:
        success = np.atleast_1d(s["success"])
        print(f"  within {problem.success_radius} of the global minimum: "
              f"{int(success.sum())}/{success.size}", file=out)
    if "final_accuracy" in s:
        accuracy = np.asarray(s["final_accuracy"], dtype=float)
        info = s["model"]
        print(f"  {info.get('dataset')}, {info.get('model')} ({info.get('parameters')} "
              f"parameters), batch {info.get('batch_size')}, shards {info.get('shards')}",
              file=out)
        print("  final validation accuracy: " + ", ".join(f"{v:.4f}" for v in accuracy[:8])
              + (" …" if accuracy.size > 8 else ""), file=out)
    diverged = np.atleast_1d(s["diverged"])
    if diverged.any():
        at = [t for t in np.atleast_1d(s["diverged_at"]) if t is not None]
        print(f"  DIVERGED: {int(diverged.sum())}/{diverged.size} run(s); first at event "
              f"{min(at)}", file=out)
    else:
        print("  diverged: no", file=out)


def _count(minimum: int):
    """An argparse type: an integer >= minimum."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, "
                                             f"got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value

    return parse


def _finite(text: str) -> float:
    """An argparse type: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _positive(text: str) -> float:
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows ``(default: X)`` after every option that has a default other than None."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or (
                action.default is argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse with the lab's one error format: ``asynclab: error: ...``, exit 2."""

    def error(self, message):
        self.exit(2, f"asynclab: error: {message}\n(see `{self.prog} --help`)\n")


def _default_rates() -> str:
    from ._names import LEARNING_RATES

    rates: dict[float, list[str]] = {}
    for name, rate in LEARNING_RATES.items():
        rates.setdefault(rate, []).append(name)
    return "; ".join(f"{rate:g} for {', '.join(names)}" for rate, names in rates.items())


def _problems_with(option: str) -> list[str]:
    import inspect

    from .problems import PROBLEMS

    return [name for name, factory in PROBLEMS.items()
            if option in inspect.signature(factory).parameters]


def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    """Problem, rule, cluster, budget, seeds and start: what `run` and `sweep` share."""
    from ._names import DISTRIBUTIONS, INITS, PROBLEMS

    p.add_argument("--problem", default="beale",
                   help=f"problem: {', '.join(PROBLEMS)}")
    p.add_argument("--dim", type=_count(1), default=None,
                   help=f"dimension ({', '.join(_problems_with('dim'))}; default: the "
                   "problem's)")
    p.add_argument("--condition", type=_positive, default=None,
                   help=f"condition number ({', '.join(_problems_with('condition'))}; "
                   "default: the problem's)")
    p.add_argument("--rule", default="downpour", help="update rule (see `asynclab rules`)")
    p.add_argument("--workers", type=_count(1), default=None,
                   help="number of workers n (default: 4; 1 for sequential_sgd; the device "
                   "count with --backend pmap/threads)")
    p.add_argument("--local-steps", type=_count(1), default=None,
                   help="λ, local steps per exchange (default: the rule's)")
    p.add_argument("--learning-rate", type=_positive, default=None,
                   help=f"η (default: the problem's own: {_default_rates()})")
    p.add_argument("--noise", type=_finite, default=0.0,
                   help="σ², variance of the additive Gaussian gradient noise")
    p.add_argument("--compute", default=None, choices=DISTRIBUTIONS, metavar="DISTRIBUTION",
                   help=f"compute time per local step: {', '.join(DISTRIBUTIONS)} "
                   "(default: exponential)")
    p.add_argument("--compute-mean", type=_positive, default=None,
                   help="mean seconds per local step (default: 1.0)")
    p.add_argument("--compute-shape", type=_positive, default=None,
                   help="lognormal σ or gamma shape k (default: 1.0)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--commits", type=_count(1), default=None,
                        help="budget in commits, rounds for synchronous rules (default: 1000)")
    budget.add_argument("--horizon", type=_positive, default=None,
                        help="budget in simulated seconds (simulator only)")
    p.add_argument("--seed", type=int, default=None,
                   help="the seed, an integer in [0, 2**32) (default: 0)")
    p.add_argument("--seeds", default=None,
                   help="several seeds, START:STOP or a,b,c (simulator only); every seed "
                   "replays the schedule simulated with the first seed (the same commit "
                   "order and staleness) with its own gradient noise and random start, "
                   "unless --trace-per-seed")
    p.add_argument("--trace-per-seed", action="store_true",
                   help="simulate a separate schedule for every seed (simulator only)")
    p.add_argument("--init", default="start", choices=INITS,
                   help="start: the problem's fixed start (or --start); random: uniform in "
                   "its box, drawn per seed; random_per_worker: synchronous rules only")
    p.add_argument("--start", default=None,
                   help="fixed start point, e.g. 1.0,1.75 (with --init start; default: the "
                   "problem's)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a rule hyperparameter, e.g. --param gamma=1e-4 (repeatable; see "
                   "`asynclab rules`)")
    p.add_argument("--record-every", type=_count(1), default=None,
                   help="record the central loss every K events (default: about 100 "
                   "records, fewer where a net's records would cost more than a quarter of "
                   "its gradient work; every event with --backend pmap)")


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    _add_model_arguments(p)
    p.add_argument("--model", default=None,
                   help="digits/mnist/collider: mlp, mlp:256-128, cnn, cnn:8-16 "
                        "(default: the data set's own)")
    p.add_argument("--batch-size", type=_count(1), default=None,
                   help="digits/mnist/collider: examples per local step (default 32)")
    p.add_argument("--shards", default=None,
                   help="digits/mnist/collider: iid, class or dirichlet:ALPHA (default iid)")
    p.add_argument("--backend", default="sim", choices=("sim", "pmap", "threads"),
                   help="sim: simulated cluster; pmap: one worker per device, "
                   "replaying the simulated schedule; threads: free-running workers")
    p.add_argument("--devices", type=_count(1), default=None,
                   help="devices for --backend pmap/threads (default: --workers); with the "
                   "simulator, the local devices the seeds are split over (default: all)")
    p.add_argument("--simulate-devices", action="store_true",
                   help="run on --devices simulated CPU devices, even where a GPU is installed")
    p.add_argument("--checkpoint", default=None, help="pmap: checkpoint file")
    p.add_argument("--checkpoint-every", type=_count(1), default=None,
                   help="pmap: checkpoint every K segments/rounds (default: at the end only)")
    p.add_argument("--resume", action="store_true", help="pmap: continue from --checkpoint")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--save", default=None, help="save the result here (a .npz file)")
    _add_overwrite(p)
    p.add_argument("--plot", default=None,
                   help="draw the run into this file (.png, .pdf, .svg, ...)")


_DEVICE_ONLY = {"devices": "--devices", "simulate_devices": "--simulate-devices"}
_PMAP_ONLY = {"checkpoint": "--checkpoint", "checkpoint_every": "--checkpoint-every",
              "resume": "--resume"}
_SIM_ONLY = {"seeds": "--seeds", "trace_per_seed": "--trace-per-seed", "horizon": "--horizon"}
_TIMING = {"compute": "--compute", "compute_mean": "--compute-mean",
           "compute_shape": "--compute-shape"}


def _given(args, flags: dict) -> list[str]:
    return [flag for name, flag in flags.items() if getattr(args, name) not in (None, False)]


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
                    for f in _given(args, _TIMING)]
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


def _check_model(args) -> None:
    """Refuse contradictory model flags and bad seeds before anything is computed."""
    if args.start is not None and args.init != "start":
        raise ConfigError(f"--start sets the fixed start, which --init {args.init} replaces; "
                          "drop one of them")
    if args.compute_shape is not None and (args.compute or "exponential") not in (
            "lognormal", "gamma"):
        raise ConfigError(f"--compute-shape applies to --compute lognormal or gamma, not "
                          f"{args.compute or 'exponential'}")
    for option, flag in (("dim", "--dim"), ("condition", "--condition")):
        if getattr(args, option) is not None and args.problem not in _problems_with(option):
            raise ConfigError(f"{flag} applies to {', '.join(_problems_with(option))}, not "
                              f"--problem {args.problem}")
    _seeds(args)


def _add_overwrite(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true",
                   help="replace output files that exist (only files of the kind this "
                   "command writes); without it an existing file is refused before any work")


def _check_outputs(args) -> None:
    """Every output file, before any work: writable, not an existing file unless
    --overwrite (or --resume for the checkpoint), no two flags naming one file."""
    _validate.distinct_outputs({"--save": args.save, "--plot": args.plot,
                                "--checkpoint": args.checkpoint})
    if args.save is not None:
        _validate.output_path(args.save, "--save", suffixes=(".npz",),
                              overwrite=args.overwrite, kind="result")
    if args.plot is not None:
        _validate.output_path(args.plot, "--plot", suffixes=_validate.plot_formats(),
                              overwrite=args.overwrite)
    if args.checkpoint is not None:
        resuming = args.resume and _exists(args.checkpoint)
        if resuming:
            _validate.input_file(args.checkpoint, "--checkpoint")
        _validate.output_path(args.checkpoint, "--checkpoint",
                              overwrite=args.overwrite or resuming,
                              kind=None if resuming else "checkpoint")


def _exists(path) -> bool:
    from pathlib import Path

    return Path(path).exists()


def _compute(args):
    from .cluster import ComputeTime

    return ComputeTime(args.compute or "exponential",
                       mean=1.0 if args.compute_mean is None else args.compute_mean,
                       shape=1.0 if args.compute_shape is None else args.compute_shape)


def _problem_options(args) -> dict:
    from .problems import DATA_PROBLEMS

    options = {}
    data = args.problem in DATA_PROBLEMS
    if args.dim is not None:
        if data:
            raise ConfigError(f"--dim: {args.problem} is a data set; its dimension is the "
                              "model's (choose the model with --model)")
        options["dim"] = args.dim
    if args.condition is not None:
        options["condition"] = args.condition
    for field in ("model", "batch_size", "shards"):
        value = getattr(args, field, None) if hasattr(args, "shards") else None
        if value is None:
            continue
        flag = "--" + field.replace("_", "-")
        if not data:
            raise ConfigError(f"{flag} applies to the data problems "
                              f"({', '.join(DATA_PROBLEMS)}), not to {args.problem!r}")
        options[field] = value
    if data and getattr(args, "start", None) is not None:
        raise ConfigError(f"--start: {args.problem} has a net's parameters; its start is "
                          "the model's seeded initialisation")
    return options


def _simulation_options(args) -> dict:
    """The keyword arguments `run` and `sweep` share, from the model flags, with the CLI's
    defaults: 4 workers (1 for sequential_sgd) and 1,000 commits."""
    workers = args.workers if args.workers is not None else (
        1 if args.rule == "sequential_sgd" else 4)
    if args.commits is None and args.horizon is None:
        args.commits = 1000
    return dict(
        workers=workers, compute=_compute(args), commits=args.commits, horizon=args.horizon,
        seeds=_seeds(args), learning_rate=args.learning_rate, local_steps=args.local_steps,
        noise=args.noise, init=args.init, trace_per_seed=args.trace_per_seed,
        record_every=args.record_every, progress=None,  # stderr: JSON stays alone on stdout
        problem_options=_problem_options(args), start=_start(args.start),
        **_params(args.param),
    )


def _run(args) -> int:
    _check_run(args)
    if args.backend == "threads" and (args.trace_log or args.fit_log):
        raise ConfigError("--trace-log / --fit-log set a simulated schedule; --backend threads "
                          "measures its own (asynclab.cluster.log_from_threads records it)")
    if args.backend != "sim":
        return _run_on_devices(args)
    from .engine import run
    from .problems import DATA_PROBLEMS, get_problem

    options = _simulation_options(args)
    if args.devices is not None:  # the seeds split over that many local devices
        if args.simulate_devices:
            from .backends import simulate_cpu_devices

            simulate_cpu_devices(args.devices)
        options["devices"] = args.devices
    cluster = _log_cluster(args)
    if cluster is not None:  # the log's cluster decides the workers and their times
        options.update(workers=None, cluster=cluster)
    problem_options = dict(options["problem_options"])
    if args.problem in DATA_PROBLEMS:  # one shard per worker, as run() makes them
        problem_options["workers"] = cluster.workers if cluster else options["workers"]
    problem = get_problem(args.problem, **problem_options)
    result = run(args.problem, args.rule, **options)
    _report(args, result, problem)
    return 0


def strict_json(out: dict) -> str:
    """``out`` as strict JSON (RFC 8259 has no NaN or Infinity): a non-finite number
    becomes ``null`` and its field is named in ``"non_finite"`` with what it was, e.g.
    ``{"final_loss[1]": "inf"}``."""
    notes = {}

    def clean(value, where):
        if isinstance(value, dict):
            return {k: clean(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, float | np.floating) and not math.isfinite(value):
            notes[where] = str(float(value))  # "nan", "inf" or "-inf"
            return None
        return value.item() if isinstance(value, np.generic) else value

    cleaned = clean(out, "")
    if notes:
        cleaned["non_finite"] = notes
    return json.dumps(cleaned, allow_nan=False)


def _report(args, result, problem, extra=None) -> None:
    if args.save:
        result.save(args.save)
    if args.plot:
        from .plot import plot_run

        plot_run(result, problem, args.plot)
    if args.json:
        print(strict_json({**summary(result, problem), **(extra or {})}))
        return
    _print_summary(result, problem)
    for key, value in (extra or {}).items():
        if not isinstance(value, list):
            print(f"  {key.replace('_', ' ')}: {value}")
    if args.save:
        print(f"  saved: {args.save}")
    if args.plot:
        print(f"  plot: {args.plot}")


def _devices(args):
    """``(n, devices)``: the devices one worker each runs on. ``--simulate-devices`` selects
    N simulated CPU devices before JAX starts, whatever accelerator is installed."""
    from .backends import cpu_devices, simulate_cpu_devices

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
    import numpy as np

    n, devices = _devices(args)

    from .engine import Result, build_rule, schedule
    from .problems import DATA_PROBLEMS, get_problem

    seed = _seeds(args)[0]
    options = _problem_options(args)
    if args.problem in DATA_PROBLEMS:
        options["workers"] = n  # one shard per worker
    problem = get_problem(args.problem, **options)
    if args.start is not None:
        from .engine._run import with_start

        problem = with_start(problem, _start(args.start))
    rule = build_rule(args.rule, learning_rate=_learning_rate(args, problem),
                      local_steps=args.local_steps, workers=n, **_params(args.param))
    # a device runs one committing unit: a worker, or a group of the mixed rule
    group_size = rule.group_size
    workers = n * group_size
    if args.workers is not None and args.workers != workers:
        per = f" (groups of {group_size}, one per device)" if group_size > 1 else ""
        raise ConfigError(f"one {'group' if group_size > 1 else 'worker'} per device: "
                          f"--workers {args.workers} != {workers}{per}")
    if args.commits is None:
        args.commits = 1000
    record_every = args.record_every or (1 if args.backend == "pmap" else None)
    _check_device_memory(args, problem, rule, workers, record_every)
    config = {"problem": args.problem, "problem_options": options, "rule": rule.name,
              "synchronous": rule.synchronous, "hyperparameters": dict(rule.hyperparameters),
              "workers": workers, "commits": args.commits, "seeds": [seed],
              "noise": args.noise, "init": args.init, "backend": args.backend}
    progress = False if args.json else None
    if args.backend == "threads":
        from .backends import predicted_staleness, run_threads
        from .engine import replay

        real = run_threads(rule, problem, commits=args.commits, workers=n, seed=seed,
                           noise=args.noise, init=args.init, progress=progress,
                           devices=devices)
        # the real schedule replayed by the engine gives the run's numbers and records
        result = replay(rule, problem, real.trace, seeds=[seed], noise=args.noise,
                        init=args.init, record_every=record_every, progress=False,
                        config=config)
        predicted, _ = predicted_staleness(real)
        extra = {"backend": "threads", "wall_time": round(real.wall_time, 4),
                 "commits_per_second": round(real.trace.n_events / real.wall_time, 1),
                 "predicted_mean_staleness": float(np.mean(predicted.staleness)),
                 "predicted_staleness_histogram": np.bincount(predicted.staleness).tolist()}
        _report(args, result, problem, extra)
        return 0
    from .backends import run_pmap
    from .cluster import Cluster

    cluster = (_log_cluster(args, workers)
               or Cluster(workers, _compute(args), group_size=group_size))
    trace = schedule(rule, cluster, commits=args.commits, rng=seed)
    out = run_pmap(rule, problem, trace, seed=seed, noise=args.noise, init=args.init,
                   record_every=record_every, checkpoint=args.checkpoint,
                   checkpoint_every=args.checkpoint_every, resume=args.resume,
                   overwrite=args.overwrite, progress=progress, devices=devices)
    result: Result = out.result
    result.config.update(config)
    wall = np.asarray(out.wall_time)
    wall = wall[np.isfinite(wall)]  # a diverged run stops before its last segments
    extra = {"backend": "pmap", "segments": int(out.segments),
             "segments_run": int(wall.size),
             "wall_time": round(float(wall.sum()), 4),
             "wall_time_per_segment": round(float(wall.mean()), 6) if wall.size else 0.0}
    _report(args, result, problem, extra)
    return 0


def _check_device_memory(args, problem, rule, workers, record_every) -> None:
    """The memory guard for device runs: schedule, per-event records, trajectories."""
    from .engine._core import default_record_every

    events = args.commits
    paths = problem.dim <= 2
    width = problem.dim * (workers if rule.synchronous else 1)
    every = record_every or default_record_every(rule, problem, max(events, 1), workers)
    _validate.check_memory(_validate.memory_estimate(
        events, records=events // every + 1, record_bytes=8 + (8 * problem.dim if paths else 0),
        event_bytes=8 * width if paths else 0), "--commits")


def _rules(args) -> int:
    from .rules import RULES
    from .rules._declaration import STATE_OPTIONS

    width = max(len(name) for name in RULES)
    print("hyperparameters marked * are static (a new value compiles a new replay); the "
          "others are traced\nand can be swept (`asynclab sweep --grid NAME=...`). Those "
          "marked + add state when given\n(None, the default, is none; 0.0 is a buffer "
          "that changes nothing):")
    for name, what in STATE_OPTIONS.items():
        print(f"  +{name}: {what}")
    print()
    for info in RULES.values():
        kind = f"{info.kind:<5}"
        params = ", ".join(
            ("*" if h.static else "+" if h.adds_state else "")
            + (h.name if h.required or h.adds_state else f"{h.name}={h.default}")
            for h in info.hyperparameters if h.name != "learning_rate")
        print(f"{info.name:<{width}}  {kind}  {info.description}")
        print(f"{'':<{width}}         {params}")
        print(f"{'':<{width}}         ref: {info.reference}")
    return 0


def _grid_option(pairs) -> dict:
    grid = {}
    for pair in pairs or ():
        name, sep, values = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise ConfigError(f"--grid takes NAME=V1,V2,..., got {pair!r}")
        if name in grid:
            raise ConfigError(f"--grid {name} is given twice; list all its values in one "
                              f"--grid {name}=V1,V2,...")
        try:
            grid[name] = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise ConfigError(f"--grid {name} takes comma-separated numbers, got "
                              f"{values!r}") from None
        if not grid[name]:
            raise ConfigError(f"--grid {name} gives no value")
    if not grid:
        raise ConfigError("asynclab sweep needs at least one --grid NAME=V1,V2,...")
    return grid


def _sweep(args) -> int:
    from .engine import best_point, scores, sweep
    from .problems import get_problem

    if args.score in ("commits_to_target",) and args.target is None:
        raise ConfigError(f"--score {args.score} needs --target LOSS")
    if args.score == "final_loss" and args.target is not None:
        raise ConfigError("--target applies to --score commits_to_target or success_rate, "
                          "not final_loss (the mean final loss)")
    _check_model(args)
    if args.save is not None:
        _validate.output_path(args.save, "--save", suffixes=(".npz",),
                              overwrite=args.overwrite, kind="result")
    problem = get_problem(args.problem, **_problem_options(args))
    if args.score == "success_rate" and args.target is None and problem.success_radius is None:
        raise ConfigError(f"--score success_rate on {args.problem} needs --target LOSS (a net "
                          "has no success radius)")
    grid = _grid_option(args.grid)
    if "learning_rate" in grid and args.learning_rate is not None:
        raise ConfigError("--learning-rate and --grid learning_rate both set η; drop one")
    both = sorted(set(grid) & set(_params(args.param)))
    if both:
        raise ConfigError(f"--param {both[0]} and --grid {both[0]} both set it; drop one")
    result = sweep(args.problem, args.rule, grid=grid, batch_size=args.batch_size,
                   **_simulation_options(args))
    if args.save:
        result.save(args.save)
    values = scores(result, args.score, target=args.target, problem=problem)
    best = best_point(result, values, args.score)
    points = []
    for index in np.ndindex(values.shape):
        point = {name: float(v[i]) for (name, v), i in zip(result.grid.items(), index,
                                                            strict=True)}
        point["score"] = _finite_list([values[index]])[0]
        point["diverged"] = int(result.diverged[index].sum())
        points.append(point)
    out = {
        "problem": result.config["problem"], "rule": result.config["rule"],
        "workers": result.config["workers"],
        "hyperparameters": result.config["hyperparameters"],
        "grid": {name: v.tolist() for name, v in result.grid.items()},
        "seeds": result.seeds.tolist(), "events": result.n_events,
        "score": args.score, "target": args.target,
        "lower_is_better": args.score != "success_rate",
        "points": points, "best": best,
    }
    if args.json:
        print(strict_json(out))
        return 0
    names = list(result.grid)
    print(f"{out['rule']} on {out['problem']} with {out['workers']} worker(s): "
          f"{values.size} point(s) x {result.n_seeds} seed(s), {result.n_events} events each")
    print("  " + "  ".join(f"{n:>16}" for n in names) + f"  {args.score:>18}  diverged")
    for point in points:
        score = "—" if point["score"] is None else f"{point['score']:.4g}"
        print("  " + "  ".join(f"{point[n]:>16.4g}" for n in names)
              + f"  {score:>18}  {point['diverged']}/{result.n_seeds}")
    if best is None:
        print(f"  best by {args.score}: none (no point has a finite score: every point "
              "diverged or none reached the target)")
    else:
        shown = ", ".join(f"{n}={best[n]:.4g}" for n in names)
        print(f"  best by {args.score}: {shown} (score {best['score']:.4g})")
    if args.save:
        print(f"  saved: {args.save}")
    return 0


def _add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2,...", required=True,
                   help="values of a traced hyperparameter (repeatable: the grid is the "
                   "product), e.g. --grid learning_rate=1e-3,3e-3,1e-2")
    p.add_argument("--score", default="final_loss",
                   choices=("final_loss", "commits_to_target", "success_rate"),
                   help="how to rank the points: mean final loss (lower is better), median "
                   "commits until the loss reaches --target (lower), or the fraction of seeds "
                   "ending at or below --target (higher; without --target: within the "
                   "problem's success radius)")
    p.add_argument("--target", type=_finite, default=None, help="target loss for --score")
    p.add_argument("--batch-size", type=_count(1), default=None,
                   help="(point, seed) pairs per compiled call (default: sized to memory)")
    _add_model_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: grid, per-point scores, best point")
    p.add_argument("--save", default=None, help="save the result (.npz) here")
    _add_overwrite(p)


def _demo(args) -> int:
    from .cluster import Cluster, ComputeTime
    from .engine import run
    from .plot import plot_run
    from .problems import beale

    _validate.output_path(args.out, "--out", suffixes=_validate.plot_formats(),
                          overwrite=args.overwrite)
    print("asynclab demo: asynchronous SGD (DOWNPOUR, λ = 1) with 8 workers on Beale's "
          "function,\nexponential compute times, gradient noise σ² = 10, 8 seeds.\n")
    result = run("beale", "downpour", cluster=Cluster(8, ComputeTime("exponential")),
                 commits=args.commits, seeds=list(range(8)), learning_rate=1e-3, noise=10.0)
    _print_summary(result, beale())
    plot_run(result, beale(), args.out)
    print(f"\n  plot written to {args.out}")
    return 0


def _figures(args) -> int:
    from .figures import build, redraw

    if args.redraw:
        drawn = redraw(args.names, out=args.out)
        print(f"{len(drawn)} figure(s) redrawn from their saved data")
        return 0

    timings = build(args.names, quick=args.quick, out=args.out, overwrite=args.overwrite)
    print(f"{len(timings)} figure(s) in {sum(timings.values()):.1f} s")
    return 0


def _figure_names() -> str:
    from ._names import FIGURES

    return ", ".join(FIGURES)


# ---------------------------------------------------------------- step-time logs


def _add_log_arguments(p: argparse.ArgumentParser) -> None:
    logs = p.add_mutually_exclusive_group()
    logs.add_argument("--trace-log", default=None, metavar="LOG",
                      help="replay a real cluster's step-time log (docs/logs.md; 'example': "
                      "the shipped one): its workers, their measured times in order")
    logs.add_argument("--fit-log", default=None, metavar="LOG",
                      help="simulate a timing model fitted to a step-time log, with "
                      "--workers N workers (default: the log's)")
    p.add_argument("--log-end", default=None, choices=("stop", "wrap"),
                   help="--trace-log shorter than the budget: stop the run there "
                   "(default: stop) or wrap around to the log's start")


def _log_path(value: str):
    from .cluster import example_log_path

    return example_log_path() if value == "example" else value


def _log_cluster(args, workers: int | None = None):
    """The cluster of ``--trace-log`` / ``--fit-log``, or None without them; its workers
    form groups of the rule's group size (``mixed``: ``--param group_size``, else its
    default)."""
    import dataclasses

    from .cluster import Cluster, fit_log, from_log
    from .engine._run import rule_group_size

    workers = workers if workers is not None else args.workers
    group_size = rule_group_size(args.rule, _params(args.param))
    if args.trace_log:
        cluster = from_log(_log_path(args.trace_log), end=args.log_end or "stop")
        if workers is not None and workers != cluster.workers:
            raise ConfigError(f"--trace-log replays the log's {cluster.workers} workers, not "
                              f"{workers}; use --fit-log LOG --workers {workers} to simulate "
                              "another number of workers")
        return dataclasses.replace(cluster, group_size=group_size)
    if args.fit_log:
        fitted = fit_log(_log_path(args.fit_log), bootstrap=0)
        n = workers if workers is not None else fitted.workers
        return Cluster(n, compute=fitted.resize(n), group_size=group_size)
    return None


def _add_trace_parser(sub) -> None:
    p = sub.add_parser("trace", help="step-time logs of real clusters")
    commands = p.add_subparsers(dest="trace_command", required=True)
    q = commands.add_parser("inspect", help="summarise a step-time log: workers, tails, "
                            "fitted model, straggler episodes, staleness")
    q.add_argument("log", help="a .csv, .csv.gz or .parquet log ('example': the shipped one)")
    q.add_argument("--format", default="auto", choices=("auto", "long", "wide"))
    q.add_argument("--job", default=None, help="wide logs with a jobid column: the job to read")
    q.add_argument("--threshold", type=float, default=3.0,
                   help="a step straggles above this factor × its worker's median (default 3)")
    q.add_argument("--compute-only", action="store_true",
                   help="fit compute times only (default: compute + communication)")
    q.add_argument("--commits", type=int, default=20_000,
                   help="commits simulated for the predicted staleness (default 20000)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(func=_trace_inspect)


def _seconds(x: float) -> str:
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.4g} s"


def _trace_inspect(args) -> int:
    from .cluster import summarize_log

    if args.commits < 1:
        raise ConfigError(f"--commits must be >= 1, got {args.commits}")
    s = summarize_log(_log_path(args.log), threshold=args.threshold, format=args.format,
                      job=args.job,
                      communication=not args.compute_only, commits=args.commits)
    if args.json:
        print(strict_json(s))
        return 0
    print(f"{s['source']}: {s['workers']} workers, {s['rows']} steps "
          f"(λ = {s['local_steps']} local steps per row); optional columns: "
          f"{', '.join(s['columns']) or 'none'}")
    what = "compute" if args.compute_only else "compute + communication"
    print(f"step times ({what}) and the family fitted by AIC to each worker's normal steps:")
    print(f"  {'worker':>6} {'steps':>6} {'mean':>9} {'p50':>9} {'p95':>9} {'p99':>9} "
          f"{'max':>9}  fit (± bootstrap s.e.)")
    for w in s["per_worker"]:
        params = ", ".join(f"{k} = {v:.4g} ± {w['standard_errors'].get(k, float('nan')):.2g}"
                           for k, v in w["parameters"].items())
        print(f"  {w['worker']:>6} {w['steps']:>6} " + " ".join(
            f"{_seconds(w[k]):>9}" for k in ("mean", "p50", "p95", "p99", "max"))
            + f"  {w['family']}: {params}")
    h = s["heterogeneity"]
    print(f"heterogeneity: slowest / fastest mean {h['slowest_over_fastest']:.3g}, "
          f"CV of the means {h['cv_of_means']:.3g}")
    g = s["stragglers"]
    if g is not None:
        print(f"stragglers (> {g['threshold']:g}× the worker's median): {g['episodes']} "
              f"episodes over {g['fraction']:.2%} of the steps, mean {g['mean_episode_steps']:.3g}"
              f" steps, longest {g['longest_episode_steps']}; per worker "
              f"{g['episodes_per_worker']}")
        print(f"  Markov chain: P(enter) = {g['p_enter']:.4g} ± {g['p_enter_se']:.2g}, "
              f"P(leave) = {g['p_leave']:.4g} ± {g['p_leave_se']:.2g}"
              + (f"; a straggling step takes {g['slowdown']['mean']:.3g}× the median "
                 f"({g['slowdown']['family']})" if g["slowdown"] else ""))
    t = s["staleness"]
    print(f"staleness (closed-loop identity: mean τ = n − 1 = {t['identity']}; distances to "
          f"the {t['reference']} histogram):")
    for name in ("measured", "replayed", "fitted", "exponential"):
        if name in t:
            e = t[name]
            print(f"  {name:<12} mean τ {e['mean']:.4g} over {e['commits']} commits, "
                  f"TV {e['total_variation']:.3g}, Wasserstein {e['wasserstein']:.3g}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="asynclab", description="A laboratory for data-parallel optimizer dynamics.",
        formatter_class=_Help)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="simulate a cluster and replay it with a rule",
                       description="Simulate a cluster and replay its schedule with an update "
                       "rule, for one or several seeds; print a summary.",
                       formatter_class=_Help)
    _add_run_arguments(p)
    _add_log_arguments(p)
    p.set_defaults(func=_run)
    p = sub.add_parser("sweep", help="replay a grid of hyperparameter values x seeds in one "
                       "compiled call and report the best point", formatter_class=_Help)
    _add_sweep_arguments(p)
    p.set_defaults(func=_sweep)
    _add_trace_parser(sub)
    p = sub.add_parser("rules", help="list the update rules", formatter_class=_Help)
    p.set_defaults(func=_rules)
    p = sub.add_parser("demo", help="a demonstration run: summary + plot",
                       formatter_class=_Help)
    p.add_argument("--out", default="asynclab-demo.png",
                   help="where to write the plot (.png, .pdf, .svg, ...)")
    p.add_argument("--commits", type=_count(1), default=20000, help="commits per seed")
    _add_overwrite(p)
    p.set_defaults(func=_demo)
    p = sub.add_parser("figures", help="regenerate figures (all, or the ones named)",
                       formatter_class=_Help,
                       epilog=f"figures: {_figure_names()}")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="figure names (default: every figure, listed below)")
    p.add_argument("--quick", action="store_true", help="small, fast versions")
    p.add_argument("--redraw", action="store_true",
                   help="no simulation: draw the PNGs again from OUT/data/NAME.npz "
                        "(replaces the PNGs)")
    p.add_argument("--out", default=None,
                   help="output folder (default: ./figures if it exists, else the current "
                        "folder); data go to OUT/data/")
    _add_overwrite(p)
    p.set_defaults(func=_figures)
    return parser


#: The exit status after Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


def _interrupted(args) -> str:
    """The one line printed on Ctrl-C: what was lost and how to continue."""
    checkpoint = getattr(args, "checkpoint", None)
    if checkpoint is None:
        return "asynclab: interrupted"
    if _exists(checkpoint):
        return (f"asynclab: interrupted; {checkpoint} holds the run up to its last "
                "checkpoint: rerun the same command with --resume to continue")
    return ("asynclab: interrupted before the first checkpoint was written (nothing to "
            "resume; --checkpoint-every K saves every K segments)")


def main(argv=None) -> int:
    import warnings

    from . import _environment

    try:
        _environment.import_jax()  # the parser's problem list imports JAX
    except ConfigError as error:
        print(f"asynclab: error: {error}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    try:
        if args.func in (_run, _sweep, _demo, _figures):  # the commands that compile
            from ._cache import enable_compile_cache

            _environment.check()
            enable_compile_cache()
        with warnings.catch_warnings():
            # a diverging run overflows on purpose; it is reported as DIVERGED instead
            warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
            warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
            return args.func(args)
    except ConfigError as error:
        print(f"asynclab: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{_interrupted(args)}", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # e.g. `asynclab rules | head`
        sys.stderr.close()
        return 0


def _interrupt_outside_callbacks() -> None:
    """Ctrl-C raises KeyboardInterrupt, but never inside a garbage-collection callback.

    Python drops an exception raised in a ``gc`` callback ("Exception ignored in ..."),
    and JAX runs one at every collection: a Ctrl-C that lands there was lost and the run
    went on. The handler raises it again 10 ms later instead, outside the callback.
    """
    import signal

    if not hasattr(signal, "setitimer") or signal.getsignal(signal.SIGINT) not in (
            signal.default_int_handler, signal.SIG_DFL):
        return

    def interrupt(signum, frame):
        if frame is not None and frame.f_code.co_name.endswith("gc_callback"):
            signal.signal(signal.SIGALRM, interrupt)
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)


def console() -> None:
    """The ``asynclab`` executable: :func:`main`, then exit with its status.

    After Ctrl-C the process ends at once (``os._exit``) instead of tearing down JAX:
    XLA aborts when its runtime is destroyed while device computations or worker threads
    are still in flight. Checkpoints and saved results are written atomically, so
    nothing on disk is left half-written.
    """
    import os

    _interrupt_outside_callbacks()
    code = main()
    if code == INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    console()
