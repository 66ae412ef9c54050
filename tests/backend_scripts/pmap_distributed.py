"""Child process of tests/test_backend_pmap.py: one of several processes of a
multi-process run (2 simulated CPU devices each, gloo collectives on localhost).

Usage: python pmap_distributed.py PROCESS_ID NUM_PROCESSES PORT OUT_JSON
Every process runs the same rules (model averaging, synchronous; DOWNPOUR, asynchronous)
on all global devices; each writes what it sees (final parameters, loss curve) to
OUT_JSON.PROCESS_ID.
"""

import json
import os
import sys

PROCESS_ID, NUM_PROCESSES, PORT, OUT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], \
    sys.argv[4]
LOCAL_DEVICES = 2
os.environ.setdefault("TQDM_DISABLE", "1")

from asynclab.backends import initialize  # noqa: E402

initialize(f"127.0.0.1:{PORT}", NUM_PROCESSES, PROCESS_ID, local_devices=LOCAL_DEVICES)

import jax  # noqa: E402
import numpy as np  # noqa: E402

from asynclab.backends import random_order_trace, run_pmap  # noqa: E402
from asynclab.cluster import Cluster, simulate_sync  # noqa: E402
from asynclab.engine import build_rule  # noqa: E402
from asynclab.problems import beale  # noqa: E402


def main():
    n = jax.device_count()
    assert n == NUM_PROCESSES * LOCAL_DEVICES, jax.devices()
    report = {"process": jax.process_index(), "devices": n,
              "local_devices": jax.local_device_count(), "runs": {}}
    for name, trace in (
            ("model_averaging", simulate_sync(Cluster(workers=n), local_steps=2, rounds=20,
                                              rng=1)),
            ("downpour", random_order_trace(n, 10, 3, local_steps=2))):
        rule = build_rule(name, learning_rate=0.002, local_steps=2)
        run = run_pmap(rule, beale(), trace, seed=7, noise=1.0, record_every=2)
        report["runs"][name] = {"final_params": np.asarray(run.result.final_params).tolist(),
                                "loss": np.asarray(run.result.loss).tolist(),
                                "segments": run.segments}
    with open(f"{OUT}.{PROCESS_ID}", "w") as file:
        json.dump(report, file)


if __name__ == "__main__":
    main()
