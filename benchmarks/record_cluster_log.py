"""Re-records the step-time log shipped in ``asynclab/data/`` with the threads backend.

Four free-running worker threads, one per simulated CPU device, run DOWNPOUR (λ = 4
local steps per commit) on a least-squares problem and exchange with a parameter server
behind a lock; every commit's measured local-work time, exchange time and staleness go
into a long CSV log (``asynclab.cluster.log_from_threads``). The times are real
measurements of this machine, so a new recording differs from the shipped one.

Run from the repository root:

    python benchmarks/record_cluster_log.py            # writes asynclab/data/threads_cluster.csv.gz
    python benchmarks/record_cluster_log.py --out x.csv.gz --commits 1000
"""

import argparse
import os
import sys
import time
from pathlib import Path

WORKERS = 4

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "asynclab"
                                             / "data" / "threads_cluster.csv.gz"))
    parser.add_argument("--commits", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=WORKERS)
    args = parser.parse_args()
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.workers}"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

    from asynclab.backends import run_threads
    from asynclab.cluster import log_from_threads, write_log
    from asynclab.problems import linear_regression
    from asynclab.rules import make_rule

    problem = linear_regression(examples=16384, dim=256, batch_size=2048, shards=args.workers)
    rule = make_rule("downpour", learning_rate=1e-4, local_steps=4)
    began = time.time()
    run = run_threads(rule, problem, commits=args.commits, seed=0)
    log = log_from_threads(run)
    # its purpose is to re-record the shipped log: replacing a step-time log is asked for
    path = write_log(log, args.out, digits=7, overwrite=True)
    print(f"{log.n_rows} steps of {log.n_workers} workers in {run.wall_time:.1f} s "
          f"(recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(began))}, "
          f"load {os.getloadavg()[0]:.1f}) -> {path} ({path.stat().st_size / 1000:.0f} kB)")
