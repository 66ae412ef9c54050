"""Child process of tests/test_replay_devices.py: one of two processes (2 simulated CPU
devices each, gloo collectives on localhost) that split a replay's seeds and a sweep's
points over all four devices. Writes what it sees to OUT_JSON.PROCESS_ID.

Usage: python replay_hosts.py PROCESS_ID NUM_PROCESSES PORT OUT_JSON
"""

import json
import os
import sys

PROCESS_ID, NUM_PROCESSES, PORT, OUT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], \
    sys.argv[4]
os.environ.setdefault("TQDM_DISABLE", "1")

from asynclab.backends import initialize  # noqa: E402

initialize(f"127.0.0.1:{PORT}", NUM_PROCESSES, PROCESS_ID, local_devices=2)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import asynclab  # noqa: E402
from asynclab.engine import _compiled  # noqa: E402

surface = dict(workers=4, commits=200, noise=2.0, seeds=range(6), record_every=9)
runs = {
    "downpour": asynclab.run("beale", "downpour", learning_rate=0.01, **surface),
    "model_averaging": asynclab.run("beale", "model_averaging", learning_rate=0.01,
                                    local_steps=2, init="random_per_worker", **surface),
    "sweep": asynclab.sweep("quadratic", "dynsgd", grid={"learning_rate": [0.01, 0.03]},
                            workers=3, commits=100, seeds=range(3), noise=1.0),
}
alone = {  # the same on this process's first device alone
    "downpour": asynclab.run("beale", "downpour", learning_rate=0.01,
                             devices=jax.local_devices()[:1], **surface),
    "model_averaging": asynclab.run("beale", "model_averaging", learning_rate=0.01,
                                    local_steps=2, init="random_per_worker",
                                    devices=jax.local_devices()[:1], **surface),
    "sweep": asynclab.sweep("quadratic", "dynsgd", grid={"learning_rate": [0.01, 0.03]},
                            workers=3, commits=100, seeds=range(3), noise=1.0,
                            devices=jax.local_devices()[:1]),
}
report = {"process": jax.process_index(), "devices": jax.device_count(),
          "spanning": sorted({len(key[-1].devices) for key in _compiled._COMPILED}), "runs": {}}
for name, result in runs.items():
    other = alone[name]
    report["runs"][name] = {
        "loss": np.asarray(result.loss).tolist(),
        "same": bool(np.array_equal(result.loss, other.loss, equal_nan=True)
                     and np.array_equal(result.final_params, other.final_params)
                     and np.array_equal(result.diverged_at, other.diverged_at)),
    }
with open(f"{OUT}.{PROCESS_ID}", "w") as file:
    json.dump(report, file)
