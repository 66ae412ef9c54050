"""What a command prints: the run summary (text or strict JSON) and the saved files."""

from __future__ import annotations

import json
import math
import sys

import numpy as np


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
    if result.center_share is not None:
        out["center_share"] = [_finite_list(row) for row in result.center_share]
    if result.goodput is not None:  # one per trace
        out["goodput"] = _finite_list(result.goodput)
        out["goodput_per_device_second"] = _finite_list(result.goodput_per_device_second)
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
                    "final_params", "center_share"):
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
    records = np.asarray(result.record_events)
    if records.size > 1:
        every = int(records[1] - records[0])
        how = (f"the default for {s['problem']} (about 100; fewer where records would cost "
               "more than a quarter of a net's gradient work)"
               if "record_every" in cfg.get("defaults_used", ()) else "--record-every")
        print(f"  {records.size} records, every {every} {budget}: {how}", file=out)
    times = np.atleast_1d(s["simulated_time"])
    clock = "wall-clock time" if cfg.get("backend") == "threads" else "simulated time"
    print(f"  {clock}: {np.mean(times):.4g} s", file=out)
    if not cfg.get("synchronous"):
        n = s["workers"]
        print(f"  mean staleness: {s['mean_staleness']:.3f} (closed-loop theory: n − 1 = {n - 1})",
              file=out)
    if result.center_share is not None and (not cfg.get("synchronous")
                                            or cfg.get("semisync") is not None):
        _print_shares(result.center_share, out)
    if result.goodput is not None and np.any(np.asarray(result.goodput) < 1):
        print(f"  goodput: {np.mean(result.goodput):.4g} of the gradient evaluations were "
              f"useful; {np.mean(result.goodput_per_device_second):.4g} useful per "
              "device-second", file=out)
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


def _print_shares(share, out) -> None:
    """Who moved the centre: each worker's share of its movement (mean over the seeds)."""
    share = np.asarray(share, np.float64)
    moved = np.isfinite(share).all(axis=-1)
    if not moved.any():
        print("  centre moved by: nobody (the centre did not move)", file=out)
        return
    mean = share[moved].mean(axis=0)
    how = "" if share.shape[0] == 1 else f", mean over {int(moved.sum())} seeds"
    print(f"  share of the centre's movement by worker{how}: "
          + ", ".join(f"{v:.3f}" for v in mean[:8]) + (" …" if mean.size > 8 else ""),
          file=out)


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
        result.save(args.save, overwrite=args.overwrite)
    if args.plot:
        from ..plot import plot_run

        plot_run(result, problem, args.plot, overwrite=args.overwrite)
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
