"""Child process of tests/test_backend_pmap.py: every rule on the pmap backend against
the replay, on N simulated CPU devices. Prints one line ``REPORT {json}``.

Usage: python pmap_equivalence.py N
"""

import json
import os
import sys
import time
import traceback

N = int(sys.argv[1])
os.environ.setdefault("TQDM_DISABLE", "1")

from asynclab.backends import simulate_cpu_devices  # noqa: E402

simulate_cpu_devices(N)  # CPU devices even where a GPU is installed

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")

from asynclab.backends import random_order_trace, round_robin_trace, run_pmap  # noqa: E402
from asynclab.cluster import Cluster, ComputeTime  # noqa: E402
from asynclab.engine import build_rule, replay, schedule  # noqa: E402
from asynclab.problems import beale  # noqa: E402
from asynclab.rules import RULES  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6  # the same arithmetic; XLA may fuse it differently (1 ulp)
EVENTS = 48
SEED, NOISE = 7, 1.0
EXTRA = {  # hyperparameters that make a short run exercise the rule
    "post_local_sgd": {"warmup_rounds": 3},
    "easgd": {"early_stop": True},
    "diloco": {"inner": "adamw"},
    "eamsgd": {"momentum": 0.9},
    "mixed": {"group_size": 2, "between": "dynsgd"},
    # per-worker windows on N devices (2 and 1 steps on two; one device: the plain path)
    "async_diloco": {"delay_period": 2, "dynamic": True,
                     "speeds": tuple(1.0 / (k + 1) for k in range(N))},
}


def compare(got, want) -> dict:
    """assert_allclose on every field; paths only up to a divergence (after it, the
    replay's record of the frozen run depends on how it chunked the events)."""
    worst = 0.0
    diverged = int(want.diverged_at[0])
    for field in ("final_params", "loss", "diverged_at", "time", "worker", "staleness",
                  "record_events", "center_path", "worker_path", "center_share"):
        a, b = getattr(got, field), getattr(want, field)
        if (a is None) != (b is None):
            raise AssertionError(f"{field}: one of them is None")
        if a is None:
            continue
        if field in ("center_path", "worker_path") and diverged >= 0:
            stop = diverged + 1 if field == "worker_path" else int(
                np.searchsorted(want.record_events, diverged, side="right"))
            a, b = a[:, :stop], b[:, :stop]
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=field)
        finite = np.isfinite(a) & np.isfinite(b)
        if finite.any():
            worst = max(worst, float(np.max(np.abs(a - b)[finite])))
    return {"max_abs_diff": worst}


def traces_for(rule, n):
    """A simulated trace (exponential compute times) and a random order per round; for
    DOWNPOUR also the fixed round-robin order. ``n`` committing units (groups for mixed)."""
    group_size = rule.group_size
    cluster = Cluster(workers=n * group_size, compute=ComputeTime("exponential"),
                      **({"group_size": group_size} if group_size > 1 else {}))
    if rule.synchronous:
        yield "simulated_rounds", schedule(rule, cluster, commits=EVENTS // 4, rng=1)
        return
    yield "simulate_async_exponential", schedule(rule, cluster, commits=EVENTS, rng=1)
    yield "random_order", random_order_trace(n, EVENTS // n, np.random.default_rng(2),
                                             local_steps=rule.schedule_steps,
                                             group_size=group_size)
    if rule.name == "downpour":
        yield "round_robin", round_robin_trace(n, EVENTS // n, local_steps=rule.local_steps)


def case(name, rule, problem, trace_name, trace, n, **options):
    entry = {"rule": name, "trace": trace_name, "devices": n, "events": trace.n_events}
    try:
        start = time.perf_counter()
        ours = run_pmap(rule, problem, trace, seed=SEED, noise=NOISE, **options)
        entry["pmap_s"] = time.perf_counter() - start
        want = replay(rule, problem, trace, seeds=SEED, noise=NOISE,
                      record_every=options.get("record_every", 1))
        entry.update(compare(ours.result, want))
        entry["group_size"] = int(getattr(trace, "group_size", 1))
        entry["segments"] = ours.segments
        entry["diverged_at"] = int(ours.result.diverged_at[0])
        entry["ok"] = True
    except Exception:  # the report carries the failure to the parent
        entry["ok"] = False
        entry["error"] = traceback.format_exc(limit=4)[-3000:]
    return entry


def main():
    assert jax.device_count() == N, jax.devices()
    problem = beale()
    cases = []
    for name in RULES:
        n = 1 if name == "sequential_sgd" else N
        if name == "sequential_sgd" and N != 2:
            continue  # one device: covered once
        local_steps = 2 if "local_steps" in RULES[name].parameters else 1
        try:
            rule = build_rule(name, learning_rate=0.002, local_steps=local_steps, workers=n,
                              **EXTRA.get(name, {}))
        except Exception:
            cases.append({"rule": name, "ok": False, "error": traceback.format_exc(limit=3)})
            continue
        for trace_name, trace in traces_for(rule, n):
            cases.append(case(name, rule, problem, trace_name, trace, n,
                              record_every=2))
    # A run that diverges: the same event, the same frozen centre.
    rule = build_rule("downpour", learning_rate=0.05)
    cases.append(case("downpour", rule, problem, "diverging",
                      round_robin_trace(N, EVENTS // N), N, record_every=3))
    print("REPORT " + json.dumps({"devices": jax.device_count(), "cases": cases,
                                  "cpu_seconds": time.process_time()}))


if __name__ == "__main__":
    main()
