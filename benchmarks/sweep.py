#!/usr/bin/env python
"""A hyperparameter grid replayed by ``asynclab.sweep`` beside a loop of ``asynclab.run``.

    python benchmarks/sweep.py           # 11 x 8 (μ, η) grid x 32 seeds (a few minutes)
    python benchmarks/sweep.py --quick   # smoke check (< 1 minute)

DOWNPOUR (λ = 1) with n = 16 workers, exponential compute times, on
``quadratic(dim=10, condition=10)`` with gradient noise σ² = 1, 3,000 commits per run;
the grid is 11 server momenta μ × 8 learning rates η, 32 seeds per point. Timed end to
end, compilation included, each row once from a cold compilation cache:

(a) loop, compile per point  one ``asynclab.run`` per point, with the replay's compilation
                             cache emptied before each call: what a loop cost when every
                             hyperparameter value was a new rule, hence a new compilation.
(b) loop, traced values      the same loop now: the points share one compiled replay.
(c) sweep                    one ``asynclab.sweep`` over the whole grid.

Compiles counts the traces of the chunk replay (``asynclab.engine._compiled.TRACE_COUNT``).
The script checks that (c) gives the numbers of (b) at every point: the same runs diverge
at the same events, and the recorded losses agree to float32 rounding (XLA on CPU
vectorises a batch of 2,816 replicas differently from one of 32, which moves the last
bit of some results; a sweep and a run with the same batch size agree bit for bit).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

import jax
import numpy as np
from _results import recorded

import asynclab
from asynclab.engine import _compiled

MOMENTA = (-0.5, -0.3, -0.1, 0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9)
RATES = tuple(float(x) for x in np.geomspace(1e-3, 3e-2, 8))
SIZES = {
    "full": dict(momenta=MOMENTA, rates=RATES, seeds=32, commits=3000),
    "quick": dict(momenta=MOMENTA[:3], rates=RATES[:2], seeds=4, commits=300),
}
COMMON = dict(workers=16, noise=1.0, problem_options={"dim": 10, "condition": 10.0},
              progress=False)


def _cold():
    """Forget every compiled replay, as if each call came from a fresh rule."""
    _compiled._COMPILED.clear()
    _compiled._INITIAL.clear()


def loop(size, clear: bool):
    """(a)/(b): a Python loop of run() calls; returns (loss array, seconds, compiles)."""
    _cold()
    before = _compiled.TRACE_COUNT["chunk"]
    start = time.perf_counter()
    losses = []
    for mu in size["momenta"]:
        for eta in size["rates"]:
            if clear:
                _cold()
            r = asynclab.run("quadratic", "downpour", commits=size["commits"],
                             seeds=range(size["seeds"]), learning_rate=eta,
                             server_momentum=mu, **COMMON)
            losses.append(r.loss)
    seconds = time.perf_counter() - start
    shape = (len(size["momenta"]), len(size["rates"]))
    return np.stack(losses).reshape(shape + losses[0].shape), seconds, \
        _compiled.TRACE_COUNT["chunk"] - before


def swept(size):
    """(c): one sweep; returns (loss array, seconds, compiles)."""
    _cold()
    before = _compiled.TRACE_COUNT["chunk"]
    start = time.perf_counter()
    r = asynclab.sweep("quadratic", "downpour", grid={"server_momentum": size["momenta"],
                                                      "learning_rate": size["rates"]},
                       commits=size["commits"], seeds=range(size["seeds"]), **COMMON)
    seconds = time.perf_counter() - start
    return r.loss, seconds, _compiled.TRACE_COUNT["chunk"] - before


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid, smoke check")
    args = parser.parse_args(argv)
    size = SIZES["quick" if args.quick else "full"]
    points = len(size["momenta"]) * len(size["rates"])

    print("asynclab sweep benchmark")
    print(f"date {datetime.datetime.now().isoformat(timespec='seconds')}  cpus {os.cpu_count()}"
          f"  {platform.machine()}  python {platform.python_version()}  jax {jax.__version__}"
          f"  backend {jax.default_backend()}")
    print(f"load average before the run (1, 5, 15 min): "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"DOWNPOUR λ=1, n=16, quadratic d=10 (condition 10), σ²=1, {size['commits']} commits;"
          f" grid {len(size['momenta'])} μ x {len(size['rates'])} η = {points} points x "
          f"{size['seeds']} seeds")

    c_loss, c_time, c_compiles = swept(size)
    b_loss, b_time, b_compiles = loop(size, clear=False)
    same_nan = np.array_equal(np.isnan(c_loss), np.isnan(b_loss))
    finite = np.isfinite(c_loss) & np.isfinite(b_loss)
    worst = float(np.max(np.abs(c_loss - b_loss)[finite] / np.maximum(np.abs(b_loss[finite]),
                                                                      1e-30)))
    flat_c = c_loss.reshape((points,) + c_loss.shape[2:])
    flat_b = b_loss.reshape((points,) + b_loss.shape[2:])
    identical = sum(np.array_equal(c, b, equal_nan=True) for c, b in zip(flat_c, flat_b,
                                                                        strict=True))
    print(f"check: sweep = loop of runs at every point: divergence identical {same_nan}, "
          f"largest relative difference of a recorded loss {worst:.1e}, bit-identical "
          f"points {identical}/{points}")
    if not same_nan or worst > 1e-5:
        raise SystemExit("the sweep and the loop disagree")
    a_loss, a_time, a_compiles = loop(size, clear=True)
    diverged = int(np.isnan(c_loss[..., -1]).sum())
    print(f"diverged runs in the grid: {diverged} of {c_loss[..., -1].size}\n")

    rows = [("(a) loop of run, compile per point", a_time, a_compiles),
            ("(b) loop of run, traced values", b_time, b_compiles),
            ("(c) sweep", c_time, c_compiles)]
    header = f"    {'measurement':<36}{'seconds':>10}{'compiles':>10}{'(a)/row':>10}{'(b)/row':>10}"
    print(header)
    print("-" * len(header))
    for name, seconds, compiles in rows:
        print(f"{name:<40}{seconds:>10.2f}{compiles:>10d}{a_time / seconds:>9.1f}x"
              f"{b_time / seconds:>9.1f}x")
    print("\nend to end, compilation included; compiles: traces of the chunk replay")
    print(f"load average after the run (1, 5, 15 min): "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    with recorded("sweep"):
        main()
