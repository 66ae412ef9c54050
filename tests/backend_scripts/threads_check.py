"""Child process: free-running threads on N simulated devices, then replay the real trace.

Usage: python threads_check.py N   (prints one JSON object)
"""

import json
import sys

n = int(sys.argv[1])

import numpy as np  # noqa: E402

from asynclab.backends import (  # noqa: E402
    predicted_staleness,
    run_threads,
    simulate_cpu_devices,
)
from asynclab.engine import replay  # noqa: E402
from asynclab.problems import beale  # noqa: E402
from asynclab.rules import make_rule  # noqa: E402

simulate_cpu_devices(n)  # CPU devices even where a GPU is installed


def _previous_commit_clock(worker):
    """A plain loop oracle: 1 + the index of the worker's previous commit, 0 at first."""
    last, out = {}, []
    for t, k in enumerate(worker.tolist()):
        out.append(last.get(k, 0))
        last[k] = t + 1
    return np.array(out)


report = {}
for name, options in (("downpour", {"local_steps": 2}), ("adag", {"gamma": 1e-2}),
                      ("dynsgd", {}), ("aeasgd", {"local_steps": 4})):
    rule = make_rule(name, learning_rate=1e-3, **options)
    run = run_threads(rule, beale(), commits=300, seed=5, noise=10.0)
    again = replay(rule, beale(), run.trace, seeds=[5], noise=10.0, record_every=1)
    predicted, _ = predicted_staleness(run)
    t = run.trace
    report[name] = {
        "max_path_error": float(np.abs(again.center_path[0, 1:] - run.center_path).max()),
        "final_error": float(np.abs(again.final_params[0] - run.final_params).max()),
        "events": t.n_events,
        "per_worker": np.bincount(t.worker, minlength=n).tolist(),
        "staleness_ok": bool(np.array_equal(t.staleness, np.arange(t.n_events) - t.pulled_clock)),
        # the recorded pulls: each worker pulls inside its commit's exchange, so the clock
        # it pulled is 1 + the index of its previous commit (0 before its first)
        "pulls_ok": bool(np.array_equal(t.pulled_clock, _previous_commit_clock(t.worker))),
        "time_sorted": bool(np.all(np.diff(t.time) >= 0)),
        "mean_staleness": float(t.staleness.mean()),
        "predicted_mean_staleness": float(predicted.staleness.mean()),
    }
print(json.dumps(report))
