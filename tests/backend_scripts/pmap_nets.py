"""Child process of tests/test_backend_pmap.py: a net problem (digits, MLP, mini-batches
drawn from (seed, worker, step)) on the pmap backend against the replay, on N simulated
CPU devices: final parameters, loss and the validation metrics. Prints one line ``REPORT {json}``.

Usage: python pmap_nets.py N
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
from asynclab.cluster import Cluster  # noqa: E402
from asynclab.engine import build_rule, replay, schedule  # noqa: E402
from asynclab.problems import get_problem  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
SEED = 3
CASES = (("downpour", {}), ("agn", {}), ("easgd", {"early_stop": True}),
         ("model_averaging", {}))


def main():
    assert jax.device_count() == N, jax.devices()
    problem = get_problem("digits", model="mlp:16", workers=N, batch_size=8)
    cases = []
    for name, extra in CASES:
        entry = {"rule": name}
        try:
            rule = build_rule(name, learning_rate=0.05, local_steps=3, workers=N, **extra)
            trace = schedule(rule, Cluster(N), commits=12 if rule.synchronous else 24, rng=1)
            ours = run_pmap(rule, problem, trace, seed=SEED, record_every=4).result
            want = replay(rule, problem, trace, seeds=SEED, record_every=4)
            worst = 0.0
            for a, b in zip(jax.tree.leaves(ours.final_params),
                            jax.tree.leaves(want.final_params), strict=True):
                np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg="final_params")
                worst = max(worst, float(np.max(np.abs(a - b))))
            np.testing.assert_allclose(ours.loss, want.loss, rtol=RTOL, atol=ATOL,
                                       err_msg="loss")
            assert ours.metrics is not None and set(ours.metrics) == set(want.metrics)
            for k, v in want.metrics.items():
                assert ours.metrics[k].shape == v.shape, (k, ours.metrics[k].shape, v.shape)
                np.testing.assert_allclose(ours.metrics[k], v, rtol=RTOL, atol=ATOL,
                                           err_msg=k)
            moved = max(float(np.max(np.abs(np.asarray(a)[0] - np.asarray(b))))
                        for a, b in zip(jax.tree.leaves(want.final_params),
                                        jax.tree.leaves(problem.start), strict=True))
            entry.update(ok=True, max_abs_diff=worst, moved=moved)
        except Exception:  # the report carries the failure to the parent
            entry.update(ok=False, error=traceback.format_exc(limit=4)[-3000:])
        cases.append(entry)
    print("REPORT " + json.dumps({"devices": jax.device_count(), "cases": cases}))


if __name__ == "__main__":
    main()
