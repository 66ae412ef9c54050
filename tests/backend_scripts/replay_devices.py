"""Child process of tests/test_replay_devices.py: replays, sweeps and studies with their
runs split over 4 simulated CPU devices against the same on 1. Prints ``REPORT {json}``.
"""

import json
import os

os.environ.setdefault("TQDM_DISABLE", "1")

from asynclab.backends import simulate_cpu_devices  # noqa: E402

simulate_cpu_devices(4)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import asynclab  # noqa: E402
from asynclab import ConfigError  # noqa: E402


def same(a, b) -> bool:
    """Bit for bit: every array of two results (NaN where NaN)."""
    fields = ("loss", "diverged_at", "center_path", "metrics")
    for field in fields:
        x, y = getattr(a, field), getattr(b, field)
        if (x is None) != (y is None):
            return False
        if isinstance(x, dict):
            if not all(np.array_equal(x[k], y[k], equal_nan=True) for k in x):
                return False
        elif x is not None and not np.array_equal(x, y, equal_nan=True):
            return False
    return all(np.array_equal(p, q, equal_nan=True) for p, q in zip(
        jax.tree.leaves(a.final_params), jax.tree.leaves(b.final_params), strict=True))


cases = {}
surface = dict(workers=4, commits=300, noise=2.0, seeds=range(6), record_every=7)
for name, kwargs in {
    "downpour, 6 seeds": dict(rule="downpour", learning_rate=0.01, **surface),
    "downpour, a schedule per seed": dict(rule="downpour", learning_rate=0.01,
                                          trace_per_seed=True, **surface),
    "model averaging, random starts": dict(rule="model_averaging", learning_rate=0.01,
                                           local_steps=3, init="random_per_worker",
                                           **surface),
    "diverging adag": dict(rule="adag", learning_rate=0.5, **surface),
}.items():
    rule = kwargs.pop("rule")
    four = asynclab.run("beale", rule, devices=4, **kwargs)
    one = asynclab.run("beale", rule, devices=1, **kwargs)
    cases[name] = {"same": same(four, one), "seeds": len(four.seeds),
                   "diverged": int(np.sum(four.diverged_at >= 0))}

net = dict(workers=4, commits=60, seeds=range(3), learning_rate=0.03,
           problem_options={"model": "mlp:32", "batch_size": 16})
cases["digits net, 3 seeds"] = {"same": same(asynclab.run("digits", "downpour", **net),
                                              asynclab.run("digits", "downpour", devices=1,
                                                           **net)), "seeds": 3, "diverged": 0}

grid = dict(grid={"learning_rate": [0.01, 0.02, 0.04]}, workers=4, commits=200,
            seeds=range(3), noise=1.0)
cases["sweep 3 x 3, 4 per call"] = {
    "same": same(asynclab.sweep("quadratic", "dynsgd", runs_per_call=4, **grid),
                 asynclab.sweep("quadratic", "dynsgd", runs_per_call=4, devices=1, **grid)),
    "seeds": 9, "diverged": 0}

errors = {}
for bad in (5, 0, "cpu", [jax.devices()[0], jax.devices()[0]], True):
    try:
        asynclab.run("beale", "downpour", workers=2, commits=10, devices=bad)
        errors[repr(bad)] = "accepted"
    except ConfigError as error:
        errors[repr(bad)] = str(error)

from asynclab.engine import _compiled  # noqa: E402

# the runs were split: compiled programs over 4 devices exist beside those over 1
split = sorted({len(key[-1].devices) for key in _compiled._COMPILED})
# and the comparison can fail: other seeds are other numbers
control = same(asynclab.run("beale", "downpour", **{**surface, "seeds": range(6)}),
               asynclab.run("beale", "downpour", **{**surface, "seeds": range(1, 7)}))
print("REPORT " + json.dumps({"devices": jax.device_count(), "cases": cases,
                              "errors": errors, "split": split, "control": control}))
