"""The ``asynclab`` command: ``run``, ``sweep``, ``rules``, ``demo``, ``figures``."""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

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


def _params(pairs) -> dict:
    out = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--param takes NAME=VALUE, got {pair!r}")
        out[name.strip().replace("-", "_")] = _value(value.strip())
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
        return [args.seed]
    text = args.seeds.strip()
    try:
        if ":" in text:
            start, stop = (int(x) for x in text.split(":"))
            seeds = list(range(start, stop))
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--seeds takes START:STOP or a comma list, got {text!r}") from None
    if not seeds:
        raise ConfigError(f"--seeds {text!r} gives no seed")
    return seeds


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
        "success": problem.success(result.final_params).tolist(),
    }
    if problem.dim <= 10:
        out["final_params"] = result.final_params.tolist()
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
    success = np.atleast_1d(s["success"])
    print(f"  within {problem.success_radius} of the global minimum: "
          f"{int(success.sum())}/{success.size}", file=out)
    diverged = np.atleast_1d(s["diverged"])
    if diverged.any():
        at = [t for t in np.atleast_1d(s["diverged_at"]) if t is not None]
        print(f"  DIVERGED: {int(diverged.sum())}/{diverged.size} run(s); first at event "
              f"{min(at)}", file=out)
    else:
        print("  diverged: no", file=out)


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--problem", default="beale", help="problem name (default: beale)")
    p.add_argument("--dim", type=int, default=None, help="dimension (quadratic, regression)")
    p.add_argument("--condition", type=float, default=None, help="quadratic condition number")
    p.add_argument("--rule", default="downpour", help="update rule (see `asynclab rules`)")
    p.add_argument("--workers", type=int, default=None, help="number of workers n")
    p.add_argument("--local-steps", type=int, default=None,
                   help="λ, local steps per exchange (default: the rule's)")
    p.add_argument("--learning-rate", type=float, default=1e-3, help="η (default 1e-3)")
    p.add_argument("--noise", type=float, default=0.0, help="σ², gradient-noise variance")
    p.add_argument("--compute", default="exponential",
                   help="compute-time distribution: constant, exponential, lognormal, gamma")
    p.add_argument("--compute-mean", type=float, default=1.0, help="mean seconds per step")
    p.add_argument("--compute-shape", type=float, default=1.0,
                   help="lognormal σ or gamma shape k")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--commits", type=int, default=None,
                        help="budget in commits (rounds for synchronous rules)")
    budget.add_argument("--horizon", type=float, default=None, help="budget in simulated s")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--seeds", default=None, help="several seeds: START:STOP or a,b,c")
    p.add_argument("--trace-per-seed", action="store_true",
                   help="simulate a separate schedule for every seed")
    p.add_argument("--init", default="start", help="start, random or random_per_worker")
    p.add_argument("--start", default=None, help="fixed start point, e.g. 1.0,1.75")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a rule hyperparameter, e.g. --param gamma=1e-4 (repeatable)")
    p.add_argument("--record-every", type=int, default=None, help="loss record interval")
    p.add_argument("--backend", default="sim", choices=("sim", "pmap", "threads"),
                   help="sim: simulated cluster (default); pmap: one worker per device, "
                   "replaying the simulated schedule; threads: free-running workers")
    p.add_argument("--devices", type=int, default=None, help="devices for pmap/threads")
    p.add_argument("--simulate-devices", action="store_true",
                   help="run on --devices simulated CPU devices, even where a GPU is installed")
    p.add_argument("--checkpoint", default=None, help="pmap: checkpoint file")
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="pmap: checkpoint every K segments/rounds")
    p.add_argument("--resume", action="store_true", help="pmap: continue from --checkpoint")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--save", default=None, help="save the result (.npz) here")
    p.add_argument("--plot", default=None, help="write a PNG of the run here")


def _problem_options(args) -> dict:
    options = {}
    if args.dim is not None:
        options["dim"] = args.dim
    if args.condition is not None:
        options["condition"] = args.condition
    return options


def _run(args) -> int:
    if args.backend != "sim":
        return _run_on_devices(args)
    from .cluster import ComputeTime
    from .engine import run
    from .problems import get_problem

    options = _problem_options(args)
    workers = args.workers if args.workers is not None else (
        1 if args.rule == "sequential_sgd" else 4)
    if args.commits is None and args.horizon is None:
        args.commits = 1000
    compute = ComputeTime(args.compute, mean=args.compute_mean, shape=args.compute_shape)
    problem = get_problem(args.problem, **options)
    result = run(
        args.problem, args.rule, workers=workers, compute=compute,
        commits=args.commits, horizon=args.horizon, seeds=_seeds(args),
        learning_rate=args.learning_rate, local_steps=args.local_steps, noise=args.noise,
        init=args.init, trace_per_seed=args.trace_per_seed, record_every=args.record_every,
        progress=False if args.json else None, problem_options=options,
        start=_start(args.start), **_params(args.param),
    )
    _report(args, result, problem)
    return 0


def _report(args, result, problem, extra=None) -> None:
    if args.save:
        result.save(args.save)
    if args.plot:
        from .plot import plot_run

        plot_run(result, problem, args.plot)
    if args.json:
        print(json.dumps({**summary(result, problem), **(extra or {})}))
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
    from .problems import get_problem

    if args.workers is not None and args.workers != n:
        raise ConfigError(f"one worker per device: --workers {args.workers} != --devices {n}")
    if args.seeds is not None:
        raise ConfigError(f"--backend {args.backend} runs one seed (--seed)")
    options = _problem_options(args)
    problem = get_problem(args.problem, **options)
    if args.start is not None:
        from .engine._run import with_start

        problem = with_start(problem, _start(args.start))
    rule = build_rule(args.rule, learning_rate=args.learning_rate, local_steps=args.local_steps,
                      workers=n, **_params(args.param))
    if args.commits is None:
        if args.horizon is not None:
            raise ConfigError(f"--backend {args.backend} takes a budget in --commits")
        args.commits = 1000
    config = {"problem": args.problem, "problem_options": options, "rule": rule.name,
              "synchronous": rule.synchronous, "hyperparameters": dict(rule.hyperparameters),
              "workers": n, "commits": args.commits, "seeds": [args.seed],
              "noise": args.noise, "init": args.init, "backend": args.backend}
    if args.backend == "threads":
        from .backends import predicted_staleness, run_threads
        from .engine import replay

        real = run_threads(rule, problem, commits=args.commits, workers=n, seed=args.seed,
                           noise=args.noise, init=args.init, devices=devices)
        # the real schedule replayed by the engine gives the run's numbers and records
        result = replay(rule, problem, real.trace, seeds=[args.seed], noise=args.noise,
                        init=args.init, record_every=args.record_every, progress=False,
                        config=config)
        predicted, _ = predicted_staleness(real)
        extra = {"backend": "threads", "wall_time": round(real.wall_time, 4),
                 "commits_per_second": round(real.trace.n_events / real.wall_time, 1),
                 "predicted_mean_staleness": float(np.mean(predicted.staleness)),
                 "predicted_staleness_histogram": np.bincount(predicted.staleness).tolist()}
        _report(args, result, problem, extra)
        return 0
    from .backends import run_pmap
    from .cluster import Cluster, ComputeTime

    compute = ComputeTime(args.compute, mean=args.compute_mean, shape=args.compute_shape)
    trace = schedule(rule, Cluster(n, compute), commits=args.commits, rng=args.seed)
    out = run_pmap(rule, problem, trace, seed=args.seed, noise=args.noise, init=args.init,
                   devices=devices,
                   record_every=args.record_every or 1, checkpoint=args.checkpoint,
                   checkpoint_every=args.checkpoint_every, resume=args.resume)
    result: Result = out.result
    result.config.update(config)
    wall = np.asarray(out.wall_time)
    extra = {"backend": "pmap", "segments": int(out.segments),
             "wall_time": round(float(wall.sum()), 4),
             "wall_time_per_segment": round(float(wall.mean()), 6) if wall.size else 0.0}
    _report(args, result, problem, extra)
    return 0


def _rules(args) -> int:
    from .rules import RULES

    width = max(len(name) for name in RULES)
    print("hyperparameters marked * are static (a new value compiles a new replay); the "
          "others are traced\nand can be swept (`asynclab sweep --grid NAME=...`)\n")
    for info in RULES.values():
        kind = f"{info.kind:<5}"
        params = ", ".join(
            ("*" if h.static else "") + (h.name if h.required else f"{h.name}={h.default}")
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
    from .cluster import ComputeTime
    from .engine import best_point, scores, sweep
    from .problems import get_problem

    if args.score in ("commits_to_target",) and args.target is None:
        raise ConfigError(f"--score {args.score} needs --target LOSS")
    options = _problem_options(args)
    workers = args.workers if args.workers is not None else (
        1 if args.rule == "sequential_sgd" else 4)
    if args.commits is None and args.horizon is None:
        args.commits = 1000
    compute = ComputeTime(args.compute, mean=args.compute_mean, shape=args.compute_shape)
    problem = get_problem(args.problem, **options)
    grid = _grid_option(args.grid)
    result = sweep(
        args.problem, args.rule, grid=grid, workers=workers, compute=compute,
        commits=args.commits, horizon=args.horizon, seeds=_seeds(args),
        learning_rate=args.learning_rate, local_steps=args.local_steps, noise=args.noise,
        init=args.init, trace_per_seed=args.trace_per_seed, record_every=args.record_every,
        progress=False if args.json else None, problem_options=options,
        start=_start(args.start), batch_size=args.batch_size, **_params(args.param),
    )
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
        print(json.dumps(out))
        return 0
    names = list(result.grid)
    print(f"{out['rule']} on {out['problem']} with {out['workers']} worker(s): "
          f"{values.size} point(s) x {result.n_seeds} seed(s), {result.n_events} events each")
    print("  " + "  ".join(f"{n:>16}" for n in names) + f"  {args.score:>18}  diverged")
    for point in points:
        score = "—" if point["score"] is None else f"{point['score']:.4g}"
        print("  " + "  ".join(f"{point[n]:>16.4g}" for n in names)
              + f"  {score:>18}  {point['diverged']}/{result.n_seeds}")
    shown = ", ".join(f"{n}={best[n]:.4g}" for n in names)
    print(f"  best by {args.score}: {shown} (score {best['score']})")
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
    p.add_argument("--target", type=float, default=None, help="target loss for --score")
    p.add_argument("--batch-size", type=int, default=None,
                   help="(point, seed) pairs per compiled call (default: sized to memory)")
    p.add_argument("--problem", default="beale", help="problem name (default: beale)")
    p.add_argument("--dim", type=int, default=None, help="dimension (quadratic, regression)")
    p.add_argument("--condition", type=float, default=None, help="quadratic condition number")
    p.add_argument("--rule", default="downpour", help="update rule (see `asynclab rules`)")
    p.add_argument("--workers", type=int, default=None, help="number of workers n")
    p.add_argument("--local-steps", type=int, default=None,
                   help="λ, local steps per exchange (default: the rule's)")
    p.add_argument("--learning-rate", type=float, default=1e-3,
                   help="η when it is not in the grid (default 1e-3)")
    p.add_argument("--noise", type=float, default=0.0, help="σ², gradient-noise variance")
    p.add_argument("--compute", default="exponential",
                   help="compute-time distribution: constant, exponential, lognormal, gamma")
    p.add_argument("--compute-mean", type=float, default=1.0, help="mean seconds per step")
    p.add_argument("--compute-shape", type=float, default=1.0,
                   help="lognormal σ or gamma shape k")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--commits", type=int, default=None,
                        help="budget in commits (rounds for synchronous rules)")
    budget.add_argument("--horizon", type=float, default=None, help="budget in simulated s")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--seeds", default=None, help="several seeds: START:STOP or a,b,c")
    p.add_argument("--trace-per-seed", action="store_true",
                   help="simulate a separate schedule for every seed")
    p.add_argument("--init", default="start", help="start, random or random_per_worker")
    p.add_argument("--start", default=None, help="fixed start point, e.g. 1.0,1.75")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a fixed rule hyperparameter, e.g. --param gamma=1e-4 (repeatable)")
    p.add_argument("--record-every", type=int, default=None, help="loss record interval")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: grid, per-point scores, best point")
    p.add_argument("--save", default=None, help="save the result (.npz) here")


def _demo(args) -> int:
    from .cluster import Cluster, ComputeTime
    from .engine import run
    from .plot import plot_run
    from .problems import beale

    print("asynclab demo: asynchronous SGD (DOWNPOUR, λ = 1) with 8 workers on Beale's "
          "function,\nexponential compute times, gradient noise σ² = 10, 8 seeds.\n")
    result = run("beale", "downpour", cluster=Cluster(8, ComputeTime("exponential")),
                 commits=args.commits, seeds=list(range(8)), learning_rate=1e-3, noise=10.0)
    _print_summary(result, beale())
    plot_run(result, beale(), args.out)
    print(f"\n  plot written to {args.out}")
    return 0


def _figures(args) -> int:
    from .figures import build

    timings = build(args.names, quick=args.quick, out=args.out)
    print(f"{len(timings)} figure(s) in {sum(timings.values()):.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asynclab", description="A laboratory for data-parallel optimizer dynamics.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="simulate a cluster and replay it with a rule")
    _add_run_arguments(p)
    p.set_defaults(func=_run)
    p = sub.add_parser("sweep", help="replay a grid of hyperparameter values x seeds in one "
                       "compiled call and report the best point")
    _add_sweep_arguments(p)
    p.set_defaults(func=_sweep)
    p = sub.add_parser("rules", help="list the update rules")
    p.set_defaults(func=_rules)
    p = sub.add_parser("demo", help="a demonstration run: summary + plot")
    p.add_argument("--out", default="asynclab-demo.png", help="where to write the plot")
    p.add_argument("--commits", type=int, default=20000)
    p.set_defaults(func=_demo)
    p = sub.add_parser("figures", help="regenerate figures (all, or the ones named)")
    p.add_argument("names", nargs="*", help="figure names (default: all in figures/)")
    p.add_argument("--quick", action="store_true", help="small, fast versions")
    p.add_argument("--out", default=None, help="output folder (default: figures/)")
    p.set_defaults(func=_figures)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as error:
        print(f"asynclab: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `asynclab rules | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
