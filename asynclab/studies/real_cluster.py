"""A real cluster's step times against the textbook exponential assumption.

The log is the one shipped with asynclab (four free-running threads-backend workers
on a 2-core machine; ``asynclab.cluster.example_log_path()``) or any other step-time log.

1. Step times: every worker's measured step times (compute + communication, one row per
   commit of λ local steps) with the family chosen by AIC (gamma, lognormal, shifted
   exponential) fitted to its normal-state steps, the AIC of every family, and the
   two-state straggler chain (steps slower than ``threshold`` × the worker's median).
2. Staleness: the measured histogram (the log records every exchange), the log replayed
   by the simulator, the fitted model, and exponential step times with the log's mean
   step time for every worker (the textbook assumption), with total-variation and
   Wasserstein distances to the measured one and mean τ against n − 1; then the fitted
   model extended to ``big_workers`` workers (worker j modelled on logged worker j mod n)
   against exponential times at that size.
3. Outcome: DOWNPOUR (the recording's λ) on a noisy ill-conditioned quadratic over a
   grid of learning rates, on the replayed log (wrapped to the budget), on the fitted
   model and under the exponential assumption with the same mean step time; then the
   fitted model and the exponential assumption at ``outcome_workers`` workers (with the
   learning rates scaled by n_log / n). Score: the final central loss relative to the
   initial one, per seed; a run "converges" when it is below ``target``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..cluster import (
    FAMILIES,
    Cluster,
    ComputeTime,
    example_log_path,
    fit_log,
    fit_step_times,
    from_log,
    predict_staleness,
    read_log,
    simulate_async,
    staleness_distribution,
    total_variation,
    wasserstein,
)
from ..problems import quadratic
from ..rules import make_rule
from ._replayed import replay_grid

MODELS = ("replayed", "fitted", "exponential")


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study measures and simulates."""

    log: str = ""  # a step-time log; "" is the shipped one
    threshold: float = 3.0  # straggling: slower than threshold × the worker's median
    bootstrap: int = 200  # bootstrap refits for the standard errors
    staleness_commits: int = 100_000  # commits simulated for the fitted/exponential histograms
    big_workers: int = 32
    dim: int = 10  # the quadratic: curvatures log-spaced in [1, condition]
    condition: float = 100.0
    noise: float = 1.0  # σ² of the additive Gaussian gradient noise
    learning_rates: tuple[float, ...] = tuple(float(x) for x in np.geomspace(5e-4, 4e-3, 10))
    commits: int = 1500
    seeds: int = 16  # seeds 0 … seeds − 1; each fitted/exponential seed has its own schedule
    outcome_workers: int = 16  # the second outcome scan (fitted vs exponential); 0: skip
    target: float = 1e-3  # a run converges when final loss / initial loss < target
    seed: int = 0

    @classmethod
    def quick(cls) -> Config:
        return cls(bootstrap=50, staleness_commits=20_000, big_workers=16,
                   learning_rates=(1e-3, 1.6e-3, 4e-3),
                   commits=1000, seeds=8, outcome_workers=0)


def _step_times(log, fitted, threshold) -> dict:
    n = log.n_workers
    times = [log.durations(k) for k in range(n)]
    edges = np.geomspace(min(t.min() for t in times), max(t.max() for t in times), 61)
    grid = np.sqrt(edges[1:] * edges[:-1])
    density = np.stack([np.histogram(t, edges, density=True)[0] for t in times])
    labels = fitted.stragglers.labels
    pdf, aic, chosen = [], [], []
    for k in range(n):
        body = times[k][~labels[k]]
        _, fits = fit_step_times(body, bootstrap=0)
        aic.append([fits[f].aic for f in FAMILIES])
        # the normal-state density, weighted by the share of normal steps
        pdf.append(fitted.normal[k].frozen().pdf(grid) * body.size / times[k].size)
        chosen.append(fitted.normal[k].family)
    s = fitted.stragglers
    first = times[0]
    return {
        "edges": edges, "grid": grid, "density": density, "pdf": np.stack(pdf),
        "aic": np.array(aic), "families": np.array(FAMILIES), "chosen": np.array(chosen),
        "mean_step": np.array([t.mean() for t in times]),
        "p50": np.array([np.percentile(t, 50) for t in times]),
        "p99": np.array([np.percentile(t, 99) for t in times]),
        "steps": np.array([t.size for t in times]),
        "series": first, "series_labels": labels[0],
        "threshold_line": threshold * np.median(first),
        "p_enter": s.p_enter, "p_leave": s.p_leave, "p_enter_se": s.p_enter_se,
        "p_leave_se": s.p_leave_se, "straggling_fraction": s.fraction,
        "episodes": int(s.episodes.shape[0]),
        "mean_episode_steps": float(s.episodes[:, 2].mean()) if s.episodes.size else 0.0,
        "slowdown_family": s.slowdown.family if s.slowdown is not None else "",
        "slowdown_mean": s.slowdown.mean if s.slowdown is not None else 0.0,
        "parameters": [dict(f.parameters) for f in fitted.normal],
        "standard_errors": [dict(f.standard_errors or {}) for f in fitted.normal],
    }


def _stack(histograms):
    width = max(h.size for h in histograms)
    return np.stack([np.pad(h, (0, width - h.size)) for h in histograms])


def _staleness(log, fitted, mean, config) -> dict:
    out = predict_staleness(log, commits=config.staleness_commits, fitted=fitted,
                            seed=config.seed)
    names = [m for m in ("measured", "replayed", "fitted", "exponential") if m in out]
    m = config.big_workers
    big_fit = simulate_async(Cluster(m, compute=fitted.resize(m)), local_steps=log.local_steps,
                             commits=config.staleness_commits, rng=config.seed)
    big_exp = simulate_async(Cluster(m, ComputeTime("exponential", mean=mean)),
                             local_steps=log.local_steps, commits=config.staleness_commits,
                             rng=config.seed)
    fit_h, exp_h = staleness_distribution(big_fit), staleness_distribution(big_exp)
    return {
        "staleness_names": np.array(names),
        "staleness": _stack([out[k]["histogram"] for k in names]),
        "staleness_mean": np.array([out[k]["mean"] for k in names]),
        "staleness_tv": np.array([out[k]["total_variation"] for k in names]),
        "staleness_wasserstein": np.array([out[k]["wasserstein"] for k in names]),
        "staleness_reference": out["reference"],
        "big_workers": m,
        "big_staleness": _stack([fit_h, exp_h]),
        "big_mean": np.array([np.dot(np.arange(fit_h.size), fit_h),
                              np.dot(np.arange(exp_h.size), exp_h)]),
        "big_tv": total_variation(fit_h, exp_h),
        "big_wasserstein": wasserstein(fit_h, exp_h),
    }


def _scan(traces_by_model, learning_rates, local_steps, problem, config, progress, desc):
    """Final loss / initial loss per (model, learning rate, seed): one compiled sweep."""
    names = list(traces_by_model)
    traces = [t for name in names for t in traces_by_model[name]]
    # every model replays the same gradient-noise seeds (paired comparison)
    seeds = [config.seed + i % config.seeds for i in range(len(traces))]
    initial = float(problem.loss(problem.start))
    rule = make_rule("downpour", learning_rate=float(learning_rates[0]),
                     local_steps=local_steps)
    result = replay_grid(rule, problem, traces, grid={"learning_rate": list(learning_rates)},
                         seeds=seeds, noise=config.noise, record_every=traces[0].n_events,
                         progress=progress)
    loss = np.where(result.diverged, np.inf, result.final_loss) / initial  # (η, trace)
    return loss.reshape(len(learning_rates), len(names), config.seeds).transpose(1, 0, 2)


def _outcome(log, fitted, mean, config, progress) -> dict:
    n, lam, commits = log.n_workers, log.local_steps, config.commits
    problem = quadratic(config.dim, config.condition)
    seeds = range(config.seed, config.seed + config.seeds)
    replayed = simulate_async(from_log(log, end="wrap"), local_steps=lam, commits=commits)
    traces = {
        "replayed": [replayed] * config.seeds,
        "fitted": [simulate_async(Cluster(n, compute=fitted), local_steps=lam,
                                  commits=commits, rng=s) for s in seeds],
        "exponential": [simulate_async(Cluster(n, ComputeTime("exponential", mean=mean)),
                                       local_steps=lam, commits=commits, rng=s)
                        for s in seeds],
    }
    rates = np.array(config.learning_rates)
    out = {"learning_rates": rates,
           "loss": _scan(traces, rates, lam, problem, config, progress, "real_cluster: n_log")}
    m = config.outcome_workers
    if m:
        big = fitted.resize(m)
        traces = {
            "fitted": [simulate_async(Cluster(m, compute=big), local_steps=lam,
                                      commits=commits * m // n, rng=s) for s in seeds],
            "exponential": [simulate_async(Cluster(m, ComputeTime("exponential", mean=mean)),
                                           local_steps=lam, commits=commits * m // n, rng=s)
                            for s in seeds],
        }
        out["outcome_workers"] = m
        out["big_learning_rates"] = rates * n / m
        out["big_loss"] = _scan(traces, rates * n / m, lam, problem, config, progress,
                                "real_cluster: n_big")
    return out


def largest_stable(loss: np.ndarray, rates: np.ndarray, target: float) -> float:
    """The largest learning rate below which every run of every smaller rate converged
    (final loss / initial < target); 0 when even the smallest fails."""
    ok = np.all(loss < target, axis=-1)
    bad = np.flatnonzero(~ok)
    last = (bad[0] if bad.size else ok.size) - 1
    return float(rates[last]) if last >= 0 else 0.0


def run(config: Config = Config(), progress=None) -> dict:
    """Fit, compare staleness, and scan DOWNPOUR's learning rate on the logged cluster."""
    log = read_log(config.log or example_log_path())
    fitted = fit_log(log, threshold=config.threshold, bootstrap=config.bootstrap,
                     seed=config.seed)
    times = np.concatenate([log.durations(k) for k in range(log.n_workers)])
    mean = float(times.mean()) / log.local_steps
    data = {"workers": log.n_workers, "local_steps": log.local_steps, "rows": log.n_rows,
            "mean_step": mean, "models": np.array(MODELS)}
    data.update(_step_times(log, fitted, config.threshold))
    data.update(_staleness(log, fitted, mean, config))
    data.update(_outcome(log, fitted, mean, config, progress))
    data["stable"] = np.array([largest_stable(x, data["learning_rates"], config.target)
                               for x in data["loss"]])
    if "big_loss" in data:
        data["big_stable"] = np.array([largest_stable(x, data["big_learning_rates"],
                                                      config.target) for x in data["big_loss"]])
    return data
