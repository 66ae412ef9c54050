"""``asynclab sweep``: a grid of traced hyperparameters x seeds, ranked by a score."""

from __future__ import annotations

import argparse

import numpy as np

from .. import ConfigError, _validate
from .._names import SCORES
from . import _flags, _types
from ._output import finite_list, strict_json
from .run import check_outputs


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


def sweep_command(args) -> int:
    from ..engine import HIGHER_IS_BETTER, best_point, prepare, run, scores

    if args.score in ("commits_to_target", "time_to_accuracy") and args.target is None:
        what = "ACCURACY" if args.score == "time_to_accuracy" else "LOSS"
        raise ConfigError(f"--score {args.score} needs --target {what}")
    if args.score in ("final_loss", "final_accuracy") and args.target is not None:
        raise ConfigError("--target applies to --score commits_to_target, success_rate or "
                          f"time_to_accuracy, not {args.score} (a mean over the seeds)")
    check_outputs(args)
    grid = _grid_option(args.grid)
    if "learning_rate" in grid and args.learning_rate is not None:
        raise ConfigError("--learning-rate and --grid learning_rate both set η; drop one")
    options = _flags.prepare_options(args)
    both = sorted(set(grid) & set(_flags.params(args.param)))
    if both:
        raise ConfigError(f"--param {both[0]} and --grid {both[0]} both set it; drop one")
    spec = prepare(**options, grid=grid, runs_per_call=args.runs_per_call)
    problem = spec.problem
    if args.score == "success_rate" and args.target is None and problem.success_radius is None:
        raise ConfigError(f"--score success_rate on {args.problem} needs --target LOSS (a net "
                          "has no success radius)")
    if args.score == "time_to_accuracy":
        _validate.number(args.target, "--target (an accuracy)", low=0, high=1)
    if args.score in ("final_accuracy", "time_to_accuracy") and problem.evaluate is None:
        raise ConfigError(f"--score {args.score} ranks by validation accuracy, which only a "
                          f"net problem records (digits, mnist, collider), not {args.problem}")
    result = run(spec)
    if args.save:
        result.save(args.save, overwrite=args.overwrite)
    values = scores(result, args.score, target=args.target, problem=problem)
    best = best_point(result, values, args.score)
    points = []
    for index in np.ndindex(values.shape):
        point = {name: float(v[i]) for (name, v), i in zip(result.grid.items(), index,
                                                            strict=True)}
        point["score"] = finite_list([values[index]])[0]
        point["diverged"] = int(result.diverged[index].sum())
        points.append(point)
    out = {
        "problem": result.config["problem"], "rule": result.config["rule"],
        "workers": result.config["workers"],
        "hyperparameters": result.config["hyperparameters"],
        "grid": {name: v.tolist() for name, v in result.grid.items()},
        "seeds": result.seeds.tolist(), "events": result.n_events,
        "score": args.score, "target": args.target,
        "lower_is_better": args.score not in HIGHER_IS_BETTER,
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


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2,...", required=True,
                   help="values of a traced hyperparameter (repeatable: the grid is the "
                   "product), e.g. --grid learning_rate=1e-3,3e-3,1e-2")
    p.add_argument("--score", default="final_loss", choices=SCORES,
                   help="how to rank the points: mean final loss (lower is better), median "
                   "commits until the loss reaches --target (lower), the fraction of seeds "
                   "ending at or below --target (higher; without --target: within the "
                   "problem's success radius); for a net also the mean final validation "
                   "accuracy (higher) or the median simulated seconds until the accuracy "
                   "reaches --target (lower)")
    p.add_argument("--target", type=_types.finite, default=None,
                   help="target loss for --score, or target accuracy for time_to_accuracy")
    p.add_argument("--runs-per-call", type=_types.count(1), default=None,
                   help="(point, seed) pairs replayed per compiled call (default: as many as "
                   "fit in about 1 GiB)")
    _flags.add_run(p)
    _flags.add_semisync(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: grid, per-point scores, best point")
    p.add_argument("--save", default=None, help="save the result (.npz) here")
    _flags.add_overwrite(p)
