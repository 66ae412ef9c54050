"""What a command prints: the run summary (text or strict JSON) and the saved files."""

from __future__ import annotations

import json
import math
import sys

import numpy as np


def finite_list(values):
    return [None if not math.isfinite(v) else float(v) for v in np.ravel(values)]


#: The settings of a run that the summary repeats from its configuration (None where the
#: run has none: a run on free-running threads has no simulated cluster).
SETTINGS = ("noise", "init", "compute", "time_scale", "stragglers", "network", "server",
            "groups", "failures", "semisync", "trace_per_seed")


def summary(result, problem) -> dict:
    """The JSON summary of a result: the run's settings, then a list with one value per
    seed (one seed: a list of one) for everything a seed's run has of its own, its
    schedule's simulated time and goodput included (seeds that share one schedule repeat
    its values).

    The staleness histogram and mean are the result's (``Result.staleness_histogram``):
    a commit's τ, or for semi-synchronous rounds that of every commit counted in a round.
    """
    hist = result.staleness_histogram()
    config = result.config
    trace = np.asarray(result.trace_index)  # each seed's schedule
    out = {
        "problem": config.get("problem"),
        "rule": config.get("rule"),
        "workers": config.get("workers"),
        "hyperparameters": config.get("hyperparameters"),
        **{key: config.get(key) for key in SETTINGS},
        "events": result.n_events,
        "seeds": result.seeds.tolist(),
        "final_loss": finite_list(result.final_loss),
        "mean_staleness": (float(np.average(np.arange(hist.size), weights=hist))
                           if hist.sum() else 0.0),
        "staleness_histogram": hist.tolist(),
        "simulated_time": [float(t) for t in result.simulated_time[trace]],
        "diverged": result.diverged.tolist(),
        "diverged_at": [int(t) if t >= 0 else None for t in result.diverged_at],
    }
    if result.center_share is not None:
        out["center_share"] = [finite_list(row) for row in result.center_share]
    if result.goodput is not None:  # one per schedule: each seed's
        out["goodput"] = finite_list(np.asarray(result.goodput)[trace])
        out["goodput_per_device_second"] = finite_list(
            np.asarray(result.goodput_per_device_second)[trace])
    if problem.is_surface:
        out["success"] = problem.success(result.final_params).tolist()
    if problem.flat and problem.dim <= 10:
        out["final_params"] = np.asarray(result.final_params).tolist()
    if result.metrics:
        out["final_accuracy"] = finite_list(result.final_accuracy)
        out["final_validation_loss"] = finite_list(result.final_validation_loss)
        out["model"] = dict(problem.info or {})
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
    for line in _settings_lines(cfg):
        print("  " + line, file=out)
    times = np.atleast_1d(s["simulated_time"])
    clock = "wall-clock time" if cfg.get("backend") == "threads" else "simulated time"
    print(f"  {clock}: {np.mean(times):.4g} s", file=out)
    if not cfg.get("synchronous"):
        n = s["workers"]
        print(f"  mean staleness: {s['mean_staleness']:.3f} (closed-loop theory: n − 1 = {n - 1})",
              file=out)
    elif result.round_staleness is not None:
        hist = s["staleness_histogram"]
        late = (cfg.get("semisync") or {}).get("late")
        how = ("a late commit counts in a later round, stale by the rounds it missed"
               if late == "stale" else "late work is discarded: every counted commit is "
               "fresh")
        print(f"  mean staleness of the {sum(hist)} counted commits: "
              f"{s['mean_staleness']:.3f} ({how}); histogram "
              + ", ".join(f"τ={k}: {c}" for k, c in enumerate(hist[:6]) if c)
              + (" …" if len(hist) > 6 else ""), file=out)
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
        print(f"  final centre: {np.round(s['final_params'][0], 4).tolist()}", file=out)
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


def _seconds(value) -> str:
    return f"{value:g} s"


def _distribution(d: dict, unit: str) -> str:
    """A compute or service time of a run's configuration, in words."""
    if "model" in d:
        return f"{d['model']} (per-worker step times)"
    text = f"{d['distribution']}, mean {_seconds(d['mean'])} {unit}"
    if d["distribution"] in ("lognormal", "gamma") and d.get("shape") is not None:
        text += f", shape {d['shape']:g}"
    return text


def _settings_lines(cfg) -> list[str]:
    """The cluster and round settings of a run's configuration, in words: compute, the
    server and failures always; heterogeneity, stragglers, the network and groups where
    they are set; the semi-synchronous rounds where they are used."""
    lines = []
    if cfg.get("compute") is not None:
        parts = ["compute " + _distribution(cfg["compute"], "per local step")]
        if cfg.get("time_scale") is not None:
            parts.append("per-worker time scales "
                         + ", ".join(f"{v:.3g}" for v in cfg["time_scale"][:8])
                         + (" …" if len(cfg["time_scale"]) > 8 else ""))
        for st in cfg.get("stragglers") or ():
            when = (f"at step {st['at_step']}" if st.get("at_step") is not None
                    else f"from {_seconds(st['at_time'])}")
            parts.append(f"straggler: worker {st['worker']} +{_seconds(st['delay'])} {when}")
        network = cfg.get("network") or {}
        if network.get("transfer_time"):
            parts.append(f"network {_seconds(network['transfer_time'])} per message")
        groups = cfg.get("groups") or {}
        if groups.get("group_size", 1) > 1:
            parts.append(f"groups of {groups['group_size']} (all-reduce "
                         f"{_seconds(groups['intra_group_time'])})")
        server = cfg.get("server")
        if server is not None:
            parts.append(f"server {_seconds(server['mean'])} per exchange"
                         if server["distribution"] == "constant"
                         else "server " + _distribution(server, "per exchange"))
        failures = cfg.get("failures")
        if failures is None:
            parts.append("no failures")
        elif "mtbf" in failures:
            parts.append(f"failures: Poisson churn, MTBF {_seconds(failures['mtbf'])}, "
                         f"MTTR {_seconds(failures['mttr'])} per worker")
        else:
            parts.append(f"failures: a schedule of {len(failures['schedule'])} outage(s)")
        lines.append("cluster: " + "; ".join(parts))
    semisync = cfg.get("semisync")
    if semisync is not None:
        if semisync.get("quorum") is not None:
            close = f"quorum K = {semisync['quorum']}"
        elif semisync.get("backup") is not None:
            close = f"{semisync['backup']} backup worker(s)"
        else:
            close = (f"window {_seconds(semisync['window'])}, at least "
                     f"{semisync['min_count']} commit(s)")
        deadline = semisync.get("deadline")
        if deadline == "adaptive":
            close += (f", adaptive deadline (last {semisync['deadline_history']} rounds, "
                      f"mean + {semisync['deadline_spread']:g} std)")
        elif deadline is not None:
            close += f", deadline {_seconds(deadline)}"
        late = ("late work counted stale in a later round" if semisync.get("late") == "stale"
                else "late work discarded")
        lines.append(f"semi-synchronous rounds: {close}; {late}")
    return lines


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


def report(args, result, problem, extra=None) -> None:
    """Save, draw and print a run's result."""
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
