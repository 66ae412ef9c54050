"""Child process: a threads run -> its step log on disk -> replayed by the simulator.

Usage: python threads_log_roundtrip.py N PATH   (prints one JSON object)
"""

import json
import os
import sys

n = int(sys.argv[1])
path = sys.argv[2]
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"

import numpy as np  # noqa: E402

from asynclab.backends import run_threads  # noqa: E402
from asynclab.cluster import (  # noqa: E402
    from_log,
    log_from_threads,
    measured_trace,
    read_log,
    simulate_async,
    write_log,
)
from asynclab.engine import replay  # noqa: E402
from asynclab.problems import beale  # noqa: E402
from asynclab.rules import make_rule  # noqa: E402

commits = 240
rule = make_rule("downpour", learning_rate=1e-3, local_steps=2)
run = run_threads(rule, beale(), commits=commits, seed=3, noise=10.0)
write_log(log_from_threads(run), path)
log = read_log(path)
replayed = simulate_async(from_log(log, end="stop"), local_steps=rule.local_steps,
                          commits=commits)
m = replayed.n_events
again = replay(rule, beale(), replayed, seeds=[3], noise=10.0, record_every=1)
measured = measured_trace(log)
whole = replay(rule, beale(), measured, seeds=[3], noise=10.0)
print(json.dumps({
    "commits": commits,
    "replayed_events": m,
    # "stop" ends the run when the first worker has used up its log: at the earliest of
    # the workers' last commits
    "expected_events": int(np.sum(run.trace.time <= min(
        run.trace.time[run.trace.worker == k].max() for k in range(n)))),
    "same_workers": bool(np.array_equal(replayed.worker, run.trace.worker[:m])),
    "same_pulls": bool(np.array_equal(replayed.pulled_clock, run.trace.pulled_clock[:m])),
    "max_time_error": float(np.abs(replayed.time - run.trace.time[:m]).max()),
    "max_path_error": float(np.abs(again.center_path[0, 1:] - run.center_path[:m]).max()),
    "measured_same": bool(np.array_equal(measured.worker, run.trace.worker)
                          and np.array_equal(measured.staleness, run.trace.staleness)),
    "measured_final_error": float(np.abs(whole.final_params[0] - run.final_params).max()),
}))
