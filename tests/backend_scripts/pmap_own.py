"""Child process of tests/test_problems_own.py: a researcher's own problems (a loss with
from_loss, an MLP on arrays with from_model) on the device executor against the replay,
on N simulated CPU devices. Prints one line ``REPORT {json}``.

Usage: python pmap_own.py N
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
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")

from asynclab.backends import run_pmap  # noqa: E402
from asynclab.cluster import Cluster  # noqa: E402
from asynclab.engine import build_rule, replay, schedule  # noqa: E402
from asynclab.problems import from_loss, from_model  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _mlp_apply(params, x):
    h = jax.nn.relu(jnp.matmul(x, params["w0"], precision="highest") + params["b0"][None])
    return jnp.matmul(h, params["w1"], precision="highest") + params["b1"][None]


def problems():
    bowl = from_loss(lambda p: 0.5 * jnp.sum(p * p), np.ones(3), name="bowl")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 120)
    x = (rng.normal(0, 2, (3, 6))[y] + rng.normal(0, 1, (120, 6))).astype(np.float32)
    params = {"w0": rng.normal(0, 0.5, (6, 5)).astype(np.float32),
              "b0": np.zeros(5, np.float32),
              "w1": rng.normal(0, 0.5, (5, 3)).astype(np.float32),
              "b1": np.zeros(3, np.float32)}
    blobs = from_model(_mlp_apply, params, x, y, batch_size=4, name="blobs").for_workers(N)
    return [(bowl, 0.5), (blobs, 0.0)]


def main():
    assert jax.device_count() == N, jax.devices()
    cases = []
    for problem, noise in problems():
        entry = {"problem": problem.name}
        try:
            rule = build_rule("downpour", learning_rate=0.05, local_steps=2, workers=N)
            trace = schedule(rule, Cluster(N), commits=16, rng=1)
            ours = run_pmap(rule, problem, trace, seed=2, noise=noise, record_every=4).result
            want = replay(rule, problem, trace, seeds=2, noise=noise, record_every=4)
            for a, b in zip(jax.tree.leaves(ours.final_params),
                            jax.tree.leaves(want.final_params), strict=True):
                np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg="final_params")
            np.testing.assert_allclose(ours.loss, want.loss, rtol=RTOL, atol=ATOL,
                                       err_msg="loss")
            for k, v in (want.metrics or {}).items():
                np.testing.assert_allclose(ours.metrics[k], v, rtol=RTOL, atol=ATOL,
                                           err_msg=k)
            entry.update(ok=True)
        except Exception:  # the report carries the failure to the parent
            entry.update(ok=False, error=traceback.format_exc(limit=4)[-3000:])
        cases.append(entry)
    print("REPORT " + json.dumps({"devices": jax.device_count(), "cases": cases}))


if __name__ == "__main__":
    main()
