"""A JSON-able summary of a step-time log: workers, tails, fits, stragglers, staleness."""

from __future__ import annotations

import numpy as np

from ._fit import fit_log
from ._predict import predict_staleness
from ._replayed import _as_log


def _round(x, digits=6):
    return float(f"{float(x):.{digits}g}")


def summarize_log(log, *, threshold: float | None = 3.0, communication: bool = True,
                  commits: int = 20_000, bootstrap: int = 200, seed: int = 0,
                  format: str = "auto", job=None) -> dict:
    """Everything ``asynclab trace inspect`` prints about a log, as a JSON-able dict.

    Args:
      log: a :class:`~asynclab.cluster.StepLog` or a path.
      threshold: straggler labelling factor (see :func:`fit_stragglers`), or None.
      communication: fit and replay compute + communication (True) or compute only.
      commits: commits simulated for the fitted and exponential staleness histograms
        (and the most the replayed log runs for).
      bootstrap: refits in the standard errors' bootstrap.
      seed: the bootstrap's seed.
      format: the file layout, for a path.
      job: the job to read from a wide file with several (its ``jobid``).

    Returns:
      A dict with ``source``, ``workers``, ``rows``, ``local_steps``, ``columns`` (the
      optional columns present), ``per_worker`` (steps, time statistics in seconds,
      fitted family, parameters and standard errors), ``stragglers`` and ``staleness``.
    """
    log = _as_log(log, format, job)
    fitted = fit_log(log, communication=communication, threshold=threshold,
                     bootstrap=bootstrap, seed=seed)
    per_worker = []
    for k in range(log.n_workers):
        t = log.durations(k, communication=communication)
        rows = log.rows(k)
        fit = fitted.normal[k]
        p50, p95, p99 = np.percentile(t, [50, 95, 99])  # one partition for the three
        entry = {
            "worker": log.names[k],
            "steps": rows.stop - rows.start,
            "mean": _round(t.mean()),
            "p50": _round(p50),
            "p95": _round(p95),
            "p99": _round(p99),
            "max": _round(t.max()),
            "mean_compute": _round(log.compute_times(k).mean()),
            "family": fit.family,
            "parameters": {p: _round(v) for p, v in fit.parameters.items()},
            "standard_errors": {p: _round(v) for p, v in (fit.standard_errors or {}).items()},
        }
        if log.communication is not None:
            entry["mean_communication"] = _round(log.communication[rows].mean())
        if log.available is not None:
            entry["unavailable_steps"] = int((~log.available[rows]).sum())
        per_worker.append(entry)
    means = np.array([w["mean"] for w in per_worker])
    s = fitted.stragglers
    stragglers = None
    if s is not None:
        lengths = s.episodes[:, 2] if s.episodes.size else np.zeros(0, int)
        stragglers = {
            "threshold": s.threshold,
            "p_enter": _round(s.p_enter), "p_enter_se": _round(s.p_enter_se),
            "p_leave": _round(s.p_leave), "p_leave_se": _round(s.p_leave_se),
            "fraction": _round(s.fraction),
            "episodes": int(lengths.size),
            "mean_episode_steps": _round(lengths.mean()) if lengths.size else 0.0,
            "longest_episode_steps": int(lengths.max()) if lengths.size else 0,
            "episodes_per_worker": np.bincount(s.episodes[:, 0], minlength=log.n_workers)
            .tolist() if lengths.size else [0] * log.n_workers,
            "slowdown": None if s.slowdown is None else {
                "family": s.slowdown.family,
                "parameters": {p: _round(v) for p, v in s.slowdown.parameters.items()},
                "mean": _round(s.slowdown.mean)},
        }
    prediction = predict_staleness(log, commits=commits, fitted=fitted,
                                   communication=communication, seed=seed)
    staleness = {"reference": prediction["reference"], "identity": prediction["identity"]}
    for name in ("measured", "replayed", "fitted", "exponential"):
        if name in prediction:
            p = prediction[name]
            staleness[name] = {"commits": int(p["commits"]), "mean": _round(p["mean"]),
                               "total_variation": _round(p["total_variation"]),
                               "wasserstein": _round(p["wasserstein"]),
                               "histogram": [_round(x, 4) for x in p["histogram"]]}
    columns = [c for c, v in (("communication", log.communication),
                              ("available", log.available), ("staleness", log.staleness))
               if v is not None]
    return {
        "source": log.source,
        "workers": log.n_workers,
        "rows": log.n_rows,
        "local_steps": log.local_steps,
        "columns": columns,
        "heterogeneity": {"slowest_over_fastest": _round(means.max() / means.min()),
                          "cv_of_means": _round(means.std() / means.mean())},
        "per_worker": per_worker,
        "stragglers": stragglers,
        "staleness": staleness,
    }
