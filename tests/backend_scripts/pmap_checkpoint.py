"""Child process of tests/test_backend_pmap.py: checkpoints on 2 simulated CPU devices.

Usage:
  python pmap_checkpoint.py write PATH    run with checkpoints, slowly (the parent kills it)
  python pmap_checkpoint.py resume PATH   resume from PATH; compare with an uninterrupted
                                          run; prints one line ``REPORT {json}``
"""

import json
import os
import sys
import time

MODE, PATH = sys.argv[1], sys.argv[2]
os.environ.setdefault("TQDM_DISABLE", "1")

from asynclab.backends import simulate_cpu_devices  # noqa: E402

simulate_cpu_devices(2)  # CPU devices even where a GPU is installed

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")

from asynclab import ConfigError  # noqa: E402
from asynclab.backends import _checkpoint, random_order_trace, run_pmap  # noqa: E402
from asynclab.cluster import Cluster, simulate_sync  # noqa: E402
from asynclab.engine import build_rule  # noqa: E402
from asynclab.problems import beale  # noqa: E402

SEED, NOISE = 3, 1.0
# gap_aware with both momenta: worker inner state, server outer state and extra state.
RULE = build_rule("gap_aware", learning_rate=0.002, local_steps=2, worker_momentum=0.5,
                  server_momentum=0.3)
TRACE = random_order_trace(2, 40, 5, local_steps=2)  # 40 segments
EVERY = 2


def fields(run):
    result = run.result
    return {name: getattr(result, name) for name in (
        "final_params", "loss", "diverged_at", "center_path", "worker_path",
        "center_share")}


def same(a, b) -> list[str]:
    bad = []
    for name in a:
        try:
            np.testing.assert_allclose(a[name], b[name], rtol=1e-6, atol=1e-7,
                                       equal_nan=True)
        except AssertionError as error:
            bad.append(f"{name}: {error}")
    return bad


def write():
    original = _checkpoint.save

    def slow_save(*args, **kwargs):
        path = original(*args, **kwargs)
        time.sleep(0.25)  # leave the parent time to kill us between two checkpoints
        return path

    _checkpoint.save = slow_save
    run_pmap(RULE, beale(), TRACE, seed=SEED, noise=NOISE, record_every=3,
             checkpoint=PATH, checkpoint_every=EVERY, sync_every=EVERY)
    print("FINISHED")  # the parent should have killed us before this


def resume():
    report = {}
    with np.load(PATH, allow_pickle=False) as data:
        report["resumed_at"] = json.loads(str(data["header"]))["position"]
    resumed = run_pmap(RULE, beale(), TRACE, seed=SEED, noise=NOISE, record_every=3,
                       checkpoint=PATH, checkpoint_every=EVERY, resume=True)
    fresh = run_pmap(RULE, beale(), TRACE, seed=SEED, noise=NOISE, record_every=3)
    report["segments"] = resumed.segments
    report["async_mismatch"] = same(fields(resumed), fields(fresh))
    report["wall_time_len"] = int(resumed.wall_time.size)

    # Another seed is another run: refused.
    try:
        run_pmap(RULE, beale(), TRACE, seed=SEED + 1, noise=NOISE, record_every=3,
                 checkpoint=PATH, resume=True)
        report["mismatch_error"] = None
    except ConfigError as error:
        report["mismatch_error"] = str(error)

    # A synchronous rule with optimizer state on both sides, interrupted in-process.
    rule = build_rule("diloco", learning_rate=0.01, local_steps=2)
    trace = simulate_sync(Cluster(workers=2), local_steps=2, rounds=12, rng=0)
    sync_path = PATH + ".diloco.npz"
    original, saves = _checkpoint.save, []

    def crashing_save(*args, **kwargs):
        path = original(*args, **kwargs)
        saves.append(1)
        if len(saves) == 2:
            raise KeyboardInterrupt  # the run dies right after its second checkpoint
        return path

    _checkpoint.save = crashing_save
    try:
        run_pmap(rule, beale(), trace, seed=SEED, noise=NOISE, checkpoint=sync_path,
                 checkpoint_every=3)
    except KeyboardInterrupt:
        pass
    _checkpoint.save = original
    resumed = run_pmap(rule, beale(), trace, seed=SEED, noise=NOISE, checkpoint=sync_path,
                       checkpoint_every=3, resume=True)
    fresh = run_pmap(rule, beale(), trace, seed=SEED, noise=NOISE)
    report["sync_saves_before_crash"] = len(saves)
    report["sync_mismatch"] = same(fields(resumed), fields(fresh))
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    {"write": write, "resume": resume}[MODE]()
