#!/usr/bin/env python
"""Overhead of the pmap backend beside a hand-written ``jax.pmap`` training loop.

    python benchmarks/backend.py           # 4 simulated CPU devices, d = 100,000
    python benchmarks/backend.py --quick   # smoke check

Synchronous SGD (η = 0.01, Gaussian gradient noise σ² = 1) on
``asynclab.problems.quadratic(dim=100_000)`` with one worker per device:

(hand)      a hand-written loop: one ``jax.pmap`` call per round computing, on every
            device, the gradient plus noise drawn from the worker's key folded with the
            step, ``pmean`` of the SGD-stepped parameters, parameters replicated
            (``in_axes=None``/``out_axes=None``); the host waits every 16 rounds
            (simulated CPU devices deadlock otherwise).
(asynclab)  ``run_pmap(synchronous_sgd, ...)`` on a ``RoundTrace`` of the same length,
            end to end (initial state, placing, dispatch, records, result), with the
            loss recorded only at the end (``record_every=rounds``) and, in a second
            row, after every round (the default ``record_every=1``).

Both are compiled before timing (a warm-up run). The variants alternate, REPEATS times
each; the table shows the best and the median wall milliseconds per round, the best
CPU milliseconds per round (this process, all threads: the work done, which other
processes on a shared machine disturb far less than wall time), and the ratios to
(hand). The best wall time is the measure (as in benchmarks/replay.py): other processes
only ever add time. Before timing, the script checks
that both end at the same parameters. Target: asynclab ≤ 1.15 × hand.
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

from asynclab.backends import run_pmap, simulate_cpu_devices
from asynclab.cluster import RoundTrace
from asynclab.engine import seed_keys
from asynclab.problems import quadratic
from asynclab.rules import AXIS, make_rule

DEVICES = 4
simulate_cpu_devices(DEVICES)  # CPU devices, also where a GPU is installed

LEARNING_RATE = 0.01
NOISE = 1.0
SEED = 0
TARGET = 1.15


def hand_written(problem, n, learning_rate, noise):
    """A plain pmap SGD loop: ``loop(rounds) -> final parameters``."""
    grad = jax.grad(problem.batch_loss)
    std = float(np.sqrt(noise))
    _, keys = seed_keys(SEED, n)
    keys = jax.pmap(lambda k: k)(keys)  # one key per device, placed once

    def step(params, key, i):
        g = grad(params, ()) + std * jax.random.normal(jax.random.fold_in(key, i),
                                                       params.shape, params.dtype)
        return jax.lax.pmean(params - learning_rate * g, AXIS), i + 1

    round_ = jax.pmap(step, axis_name=AXIS, in_axes=(None, 0, None), out_axes=(None, None))

    def loop(rounds):
        params = jax.numpy.asarray(problem.start)
        i = jax.numpy.zeros((), jax.numpy.int32)
        for r in range(rounds):
            params, i = round_(params, keys, i)
            if (r + 1) % 16 == 0:
                params.block_until_ready()
        return np.asarray(params)

    return loop


def main(quick: bool = False, repeats: int | None = None):
    rounds = 64 if quick else 160
    repeats = repeats or (2 if quick else 15)
    dim = 100_000
    problem = quadratic(dim=dim)
    rule = make_rule("synchronous_sgd", learning_rate=LEARNING_RATE)
    trace = RoundTrace(time=np.arange(1.0, rounds + 1), duration=np.ones(rounds),
                       n_workers=DEVICES, local_steps=1)
    hand = hand_written(problem, DEVICES, LEARNING_RATE, NOISE)

    def ours(record_every):
        return run_pmap(rule, problem, trace, seed=SEED, noise=NOISE,
                        record_every=record_every).result.final_params[0]

    variants = {
        "hand-written jax.pmap loop": lambda: hand(rounds),
        "asynclab run_pmap, loss at the end": lambda: ours(rounds),
        "asynclab run_pmap, loss every round": lambda: ours(1),
    }
    finals = {name: fn() for name, fn in variants.items()}  # warm-up: compile everything
    reference = finals["hand-written jax.pmap loop"]
    for name, final in finals.items():
        np.testing.assert_allclose(final, reference, rtol=1e-5, atol=1e-6, err_msg=name)

    seconds = {name: [] for name in variants}
    cpu = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            seconds[name].append((time.perf_counter() - start) / rounds)
            cpu[name].append((time.process_time() - start_cpu) / rounds)
    best = {name: np.min(values) * 1e3 for name, values in seconds.items()}
    median = {name: np.median(values) * 1e3 for name, values in seconds.items()}
    cpu_best = {name: np.min(values) * 1e3 for name, values in cpu.items()}
    hand_name = "hand-written jax.pmap loop"

    print(f"# pmap backend overhead — {datetime.date.today()}, {platform.machine()}, "
          f"{os.cpu_count()} CPU cores, jax {jax.__version__}")
    print(f"# synchronous SGD, {DEVICES} simulated CPU devices, quadratic d = {dim:,}, "
          f"{rounds} rounds per repeat, {repeats} alternating repeats")
    print()
    print("| variant | best ms / round | ratio | median ms / round | ratio "
          "| CPU ms / round (best) | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in variants:
        print(f"| {name} | {best[name]:.3f} | {best[name] / best[hand_name]:.2f} "
              f"| {median[name]:.3f} | {median[name] / median[hand_name]:.2f} "
              f"| {cpu_best[name]:.3f} | {cpu_best[name] / cpu_best[hand_name]:.2f} |")
    ratio = best["asynclab run_pmap, loss at the end"] / best[hand_name]
    print()
    print(f"target: asynclab ≤ {TARGET} × hand (best) — "
          f"{'met' if ratio <= TARGET else 'MISSED'} ({ratio:.2f})")
    return seconds


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke check")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    with recorded("backend"):
        main(quick=args.quick, repeats=args.repeats)
