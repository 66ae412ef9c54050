"""Child process of tests/test_semisync.py: semi-synchronous rounds on the pmap backend
against the replay, on N simulated CPU devices. Prints one line ``REPORT {json}``.

Usage: python pmap_semisync.py N
"""

import json
import os
import sys
import traceback

N = int(sys.argv[1])
os.environ.setdefault("TQDM_DISABLE", "1")

from asynclab.backends import simulate_cpu_devices  # noqa: E402

simulate_cpu_devices(N)  # CPU devices even where a GPU is installed

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")

from asynclab.backends import run_pmap  # noqa: E402
from asynclab.cluster import Cluster, ComputeTime, SemiSync, simulate_sync  # noqa: E402
from asynclab.engine import build_rule, replay  # noqa: E402
from asynclab.problems import beale  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6  # the same arithmetic; XLA may fuse it differently (1 ulp)
ROUNDS, SEED, NOISE = 12, 7, 1.0
CASES = (  # rule, λ, the round's close
    ("model_averaging", 2, SemiSync(quorum=N - 1)),
    ("model_averaging", 2, SemiSync(quorum=N - 1, late="stale")),
    ("synchronous_sgd", 1, SemiSync(window=1.0, min_count=1, deadline=1.5, late="stale")),
    ("easgd", 1, SemiSync(backup=1)),
)


def main():
    assert jax.device_count() == N, jax.devices()
    problem = beale()
    cases = []
    for name, lam, semisync in CASES:
        entry = {"rule": name, "semisync": repr(semisync)}
        try:
            rule = build_rule(name, learning_rate=0.002, local_steps=lam, workers=N)
            trace = simulate_sync(Cluster(workers=N, compute=ComputeTime("exponential")),
                                  local_steps=lam, rounds=ROUNDS, rng=1, semisync=semisync)
            entry["partial_rounds"] = int((~trace.counted.all(axis=1)).sum())
            ours = run_pmap(rule, problem, trace, seed=SEED, noise=NOISE, record_every=1)
            want = replay(rule, problem, trace, seeds=SEED, noise=NOISE, record_every=1)
            for field in ("final_params", "loss", "worker_path", "center_share", "goodput",
                          "goodput_per_device_second"):
                np.testing.assert_allclose(getattr(ours.result, field), getattr(want, field),
                                           rtol=RTOL, atol=ATOL, err_msg=field)
            entry["ok"] = True
        except Exception:  # the report carries the failure to the parent
            entry["ok"] = False
            entry["error"] = traceback.format_exc(limit=4)[-3000:]
        cases.append(entry)
    print("REPORT " + json.dumps({"devices": jax.device_count(), "cases": cases}))


if __name__ == "__main__":
    main()
