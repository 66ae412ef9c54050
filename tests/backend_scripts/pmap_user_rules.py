"""Child process of tests/test_rules_open.py: a user's own rules (``tests/user_rules.py``)
on the device executor, N simulated CPU devices, against the replay and against the
shipped rule each one reduces to. Prints one line ``REPORT {json}``.

Usage: python pmap_user_rules.py N
"""

import json
import os
import sys
import traceback
from pathlib import Path

N = int(sys.argv[1])
os.environ.setdefault("TQDM_DISABLE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the user's module

from asynclab.backends import simulate_cpu_devices  # noqa: E402

simulate_cpu_devices(N)  # CPU devices even where a GPU is installed

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")

import user_rules  # noqa: E402, F401  (declares the user's rules)

from asynclab.backends import run_pmap  # noqa: E402
from asynclab.cluster import Cluster  # noqa: E402
from asynclab.engine import build_rule, replay, schedule  # noqa: E402
from asynclab.problems import beale  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6
SEED, NOISE = 7, 1.0
#: (user rule, its hyperparameters, the shipped rule it then is, that rule's)
CASES = [
    ("staleness_power", {"power": 1.0}, "dynsgd", {}),
    ("staleness_power", {"power": 0.0}, "downpour", {}),
    ("damped_averaging", {"damping": 1.0}, "model_averaging", {}),
]


def differences(got, want) -> dict:
    return {field: float(np.max(np.abs(np.asarray(getattr(got, field), np.float64)
                                       - getattr(want, field))))
            for field in ("final_params", "loss")}


def close(got, want) -> bool:
    return all(np.allclose(getattr(got, f), getattr(want, f), rtol=RTOL, atol=ATOL)
               for f in ("final_params", "loss"))


def main():
    assert jax.device_count() == N, jax.devices()
    problem = beale()
    cases = []
    for name, options, shipped, shipped_options in CASES:
        entry = {"rule": name, "options": options, "shipped": shipped}
        try:
            rule = build_rule(name, learning_rate=0.002, local_steps=2, workers=N, **options)
            trace = schedule(rule, Cluster(workers=N), commits=24, rng=1)
            ours = run_pmap(rule, problem, trace, seed=SEED, noise=NOISE, record_every=2).result
            want = replay(rule, problem, trace, seeds=SEED, noise=NOISE, record_every=2)
            reference = replay(build_rule(shipped, learning_rate=0.002, local_steps=2,
                                          workers=N, **shipped_options),
                               problem, trace, seeds=SEED, noise=NOISE, record_every=2)
            entry.update(replay_gap=differences(ours, want),
                         shipped_gap=differences(ours, reference),
                         ok=close(ours, want) and close(ours, reference),
                         moved=float(np.linalg.norm(ours.final_params[0]
                                                    - problem.start)))
        except Exception:  # the report carries the failure to the parent
            entry.update(ok=False, error=traceback.format_exc(limit=4)[-3000:])
        cases.append(entry)
    print("REPORT " + json.dumps({"devices": jax.device_count(), "cases": cases}))


if __name__ == "__main__":
    main()
