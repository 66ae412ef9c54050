#!/usr/bin/env python
"""Speed of asynclab's trace replay beside a hand-written numpy event loop, and of the
SimPy simulator beside a bare SimPy loop.

    python benchmarks/replay.py              # full size (a few minutes on 2 cores)
    python benchmarks/replay.py --quick      # smoke check (about a minute)
    python benchmarks/replay.py --mc full    # also time the whole model_averaging_mc figure
    python benchmarks/replay.py --rows fhg --mc full   # only rows (f), (h), (g)

The same command runs on a CPU or a GPU machine; the header names the device, and the
sizes of rows (f) follow it (more seeds on an accelerator).

Measurements (asynchronous SGD = DOWNPOUR with λ = 1, n = 16 workers, exponential
compute times, Gaussian gradient noise of variance σ² = NOISE in every variant):

(a) numpy   a plain event loop: a heap of worker finish times; the popped worker's
            gradient at the centre it pulled, plus noise, is applied to the centre and the
            worker pulls. Noise and compute times are pre-drawn in blocks. Events/s.
(b) replay  ``asynclab.replay`` of a ``simulate_async`` trace of the same cluster, one
            seed, after a warm-up call (compilation excluded, reported apart). Events/s;
            the trace's generation is not included (that is row (d)).
(c) replay  the same with SEEDS_C seeds vmapped; replica-updates/s = seeds × commits / s.
(d) simpy   ``simulate_async`` events/s beside a bare SimPy loop of timeouts.
(e) rng     the replay of (c) (and of λ = 4, and of the Monte-Carlo study's model
            averaging, n = 10) with asynclab's copy of Threefry fused with the gradient
            (its default on a CPU) beside JAX's own ``threefry2x32`` (the same bits; the
            default elsewhere) and ``philox2x32`` through ``jax.random``; each variant in a
            fresh process. Worker-steps/s.
(f) seeds   the replay of (c) (Beale, n = 16) with more and more seeds:
            replica-updates/s against the number of seeds in one launch.
(g) mc      ``asynclab.studies.model_averaging_mc.run`` (the figure's whole study; the
            quick configuration unless ``--mc full``), one call, wall seconds and
            worker-steps/s.
(h) unroll  one cell of that study (model averaging on Beale, n = 10, λ = 1, σ² = 10,
            random starts) replayed with 1, 8 and 16 events per iteration of the compiled
            loop (``replay(..., unroll=k)``): worker-steps/s, compilation apart, and
            whether the numbers are the same bits as with 1.
(i) floors  the workloads of (c) and (h) as hand-fused JAX loops: the same seeds, keys
            and noise stream (``asynclab._random``), Beale's gradient in closed form,
            laid out seeds-last, without the engine's structure (no divergence guard, no
            loss records, no per-event selects). What the engine could reach at best with
            this stream, beside the engine and the numpy loop in the same run:
            replica-updates/s for (c), worker-steps/s for (h) (one call, and two calls at
            once, as the study runs two cells at a time on a CPU), and the whole
            model_averaging_mc figure's time at that rate. A check first: each loop
            ends where the replay ends. Beside the DOWNPOUR floor, the same loop in two
            other forms (the same numbers): its state laid out seeds first, as the
            replay lays it out, and written for one seed and ``vmap``-ed over the seeds,
            as the replay runs a rule: how much of the floor's speed is its layout;
            the vmapped loop again with each seed's vector held as its two coordinates
            (each coordinate one array over the seeds, as in the floor); and the floor
            with the replay's per-event guard (divergence, movement, kept centre): what
            that work costs in the floor's layout.
(j) reduce  the workloads of (c), (h) and a small net replayed as compiled by default
            (``asynclab.engine._core.CPU_COMPILER_OPTIONS``: XLA's own loops for
            reductions) beside XLA's default on a CPU (its YNNPACK library for
            reductions): rates, their ratio, and whether seed 0's run (its final centre)
            is the same bits alone and among the other seeds of the launch. CPU only.

Every rate is the best of 3 repeats (``time.perf_counter``; row (i)'s of
``FLOOR_REPEATS``), the repeats of the rows compared with each other interleaved. Before
timing, the script checks that (a), driven by the trace's worker order instead of its heap
with σ² = 0, ends at the same centre as (b).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import heapq
import json
import os
import platform
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import simpy
from _results import recorded

import asynclab
from asynclab import Cluster, ComputeTime
from asynclab.cluster import simulate_async

N_WORKERS = 16
NOISE = 1.0  # σ², the same in (a), (b) and (c)
SEEDS_C = 1000
REPEATS = 3
#: row (i)'s repeats, more than the other rows': its ratios are the bars, and on a shared
#: machine a best of 3 moves them between runs of one commit
FLOOR_REPEATS = 9
QUAD_DIM = 1000
QUAD_CONDITION = 100.0

# Commit counts per measurement, chosen so that one repeat takes about a second or more
# on 2 cores (and a fraction of that with --quick).
SIZES = {
    "full": {
        "beale": {"a": 300_000, "b": 600_000, "c": 10_000},
        "quadratic": {"a": 100_000, "b": 40_000, "c": 100},
        "simpy": 200_000,
    },
    "quick": {
        "beale": {"a": 20_000, "b": 20_000, "c": 200},
        "quadratic": {"a": 5_000, "b": 2_000, "c": 10},
        "simpy": 20_000,
    },
}

TARGETS = {  # (row, problem) -> (minimum ratio, what the ratio is to)
    ("b", "quadratic"): 15.0,
    ("d", "-"): 0.5,
}
#: rows (c) and (h) against their hand-fused floors of row (i) (the old "(c) >= 100x the
#: numpy loop" lay beyond the floor on a 2-core CPU and is retired)
FLOOR_TARGET = 0.7

#: (f): seeds per launch and commits, by device kind and size
SEEDS_SWEEP = {
    ("cpu", "full"): ((100, 1_000, 10_000), 2_000),
    ("cpu", "quick"): ((100, 1_000), 200),
    ("accelerator", "full"): ((1_000, 10_000, 100_000), 20_000),
    ("accelerator", "quick"): ((1_000, 10_000), 2_000),
}
GENERATORS = ("asynclab", "threefry2x32", "philox2x32")

#: (h): seeds and rounds of the model-averaging cell, by device kind and size
UNROLL_CELL = {
    ("cpu", "full"): (500, 4_000),
    ("cpu", "quick"): (100, 500),
    ("accelerator", "full"): (10_000, 16_000),
    ("accelerator", "quick"): (10_000, 2_000),
}
UNROLLS = (1, 8, 16)
ROWS = "abcdefghij"

#: (i): (seeds, commits) of the DOWNPOUR floor and (seeds, rounds) of the averaging floor
FLOOR_SIZES = {
    ("cpu", "full"): ((1_000, 10_000), (500, 4_000)),
    ("cpu", "quick"): ((100, 500), (100, 500)),
    ("accelerator", "full"): ((10_000, 20_000), (10_000, 16_000)),
    ("accelerator", "quick"): ((1_000, 2_000), (10_000, 2_000)),
}


# ----------------------------------------------------------------------------- numpy (a)


def beale_gradient(p, out):
    """∇ of Beale's function at ``p`` (2,), written into ``out``."""
    x, y = p.tolist()
    y2 = y * y
    y3 = y2 * y
    r1 = 1.5 - x + x * y
    r2 = 2.25 - x + x * y2
    r3 = 2.625 - x + x * y3
    out[0] = 2.0 * (r1 * (y - 1.0) + r2 * (y2 - 1.0) + r3 * (y3 - 1.0))
    out[1] = 2.0 * x * (r1 + 2.0 * r2 * y + 3.0 * r3 * y2)


def quadratic_gradient(dim, condition):
    """∇ of ½ Σ hᵢ θᵢ², the same curvatures as ``asynclab.problems.quadratic``."""
    h = np.geomspace(1.0, condition, dim).astype(np.float32)

    def gradient(p, out):
        np.multiply(h, p, out=out)

    return gradient


def numpy_downpour(gradient, start, learning_rate, noise, commits, *, workers=N_WORKERS,
                   seed=0, order=None):
    """Asynchronous SGD as a hand-written numpy event loop; returns the final centre.

    Without ``order`` a heap of finish times decides who commits next (exponential
    compute times, mean 1); with ``order`` (a trace's ``worker`` array) the workers
    commit in that order. float32 throughout, like the replay.
    """
    rng = np.random.default_rng(seed)
    dim = start.shape[0]
    center = np.array(start, np.float32)
    pulled = np.tile(center, (workers, 1))  # the centre each worker last pulled
    g = np.empty(dim, np.float32)
    sigma = np.float32(np.sqrt(noise))
    step = np.float32(-learning_rate)
    block = max(1, (1 << 20) // dim)  # events per pre-drawn block (~4 MB of noise)
    heap = [(t, k) for k, t in enumerate(rng.exponential(1.0, workers).tolist())]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    done = 0
    while done < commits:
        m = min(block, commits - done)
        if noise > 0:
            xi = rng.standard_normal((m, dim), dtype=np.float32)
            xi *= sigma
        if order is None:
            durations = rng.exponential(1.0, m).tolist()
        for j in range(m):
            if order is None:
                t, k = pop(heap)
            else:
                k = order[done + j]
            p = pulled[k]
            gradient(p, g)            # g = ∇f(θ_pull)
            if noise > 0:
                g += xi[j]            # + σ ξ
            g *= step                 # Δ = −η g
            center += g               # θ̃ ← θ̃ + Δ
            p[...] = center           # the worker pulls
            if order is None:
                push(heap, (t + durations[j], k))
        done += m
    return center


# ----------------------------------------------------------------------------- simpy (d)


def bare_simpy(delays):
    """``len(delays)`` processes, each yielding its pre-drawn timeouts in turn."""
    env = simpy.Environment()

    def process(env, mine):
        timeout = env.timeout
        for d in mine:
            yield timeout(d)

    for mine in delays:
        env.process(process(env, mine))
    env.run()
    return env.now


# ----------------------------------------------------------------------------- helpers


def best_of(fns, repeats=REPEATS):
    """Best wall time of each of ``fns`` over ``repeats`` rounds, and its last result.

    The functions are called in turn within each round (interleaved), so that a change
    of load on the machine during the run hits all of them alike.
    """
    best = {name: float("inf") for name in fns}
    out = {}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            out[name] = fn()
            jax.block_until_ready(out[name])
            best[name] = min(best[name], time.perf_counter() - t0)
    return best, out


def trace_of(commits, seed=0):
    return simulate_async(Cluster(N_WORKERS, ComputeTime("exponential")), commits=commits,
                          rng=seed)


def replay_fn(rule, problem, trace, seeds):
    commits = trace.n_events

    def fn():
        return asynclab.replay(rule, problem, trace, seeds=seeds, noise=NOISE,
                               record_paths=False, record_every=commits, progress=False)

    return fn


def check_agreement():
    """(a) with the trace's worker order and σ² = 0 ends where (b) ends (Beale, 200)."""
    lr, commits = 1e-3, 200
    problem = asynclab.problems.beale()
    trace = trace_of(commits, seed=1)
    result = asynclab.replay(asynclab.rules.downpour(lr), problem, trace, seeds=[0],
                             noise=0.0, record_paths=False, record_every=commits,
                             progress=False)
    ours = numpy_downpour(beale_gradient, problem.start, lr, 0.0, commits,
                          order=trace.worker.tolist())
    theirs = result.final_params[0]
    moved = float(np.abs(ours - problem.start).max())
    diff = float(np.abs(ours - theirs).max())
    assert moved > 1e-2, f"the check run barely moved ({moved:.2e}); it tests nothing"
    assert diff < 1e-4, f"numpy loop and replay disagree: {ours} vs {theirs} (|Δ| = {diff:.2e})"
    return diff, moved


# ----------------------------------------------------------------------------- rng (e)


def generator_child(variant: str, quick: bool) -> dict:
    """Worker-steps/s of three replays with one way of drawing the seed's noise.

    ``asynclab``: the default (Threefry-2x32 fused with the gradient, bit for bit
    ``jax.random``); ``threefry2x32``: the same stream through ``jax.random``;
    ``philox2x32``: ``jax.random.key(seed, impl="philox2x32")`` (another stream).
    """
    from asynclab import _random
    from asynclab.cluster import simulate_sync

    if variant == "philox2x32":
        jax.config.update("jax_default_prng_impl", "philox2x32")
    elif variant == "threefry2x32":
        _random.FUSE = False  # every draw through jax.random
    else:
        _random.FUSE = True  # the fused copy, whatever the platform
    seeds = range(100 if quick else 1000)
    commits = 500 if quick else 5000
    problem = asynclab.problems.beale()
    out = {}
    for lam in (1, 4):
        trace = simulate_async(Cluster(N_WORKERS, ComputeTime("exponential")),
                               commits=commits // lam, local_steps=lam, rng=0)
        rule = asynclab.engine.build_rule("downpour", learning_rate=1e-3, local_steps=lam)
        fn = replay_fn(rule, problem, trace, seeds)
        out[f"DOWNPOUR n={N_WORKERS} λ={lam}"] = len(seeds) * trace.n_events * lam / _best(fn)
    rounds = commits // 10
    trace = simulate_sync(Cluster(10), rounds=rounds, rng=0)
    rule = asynclab.engine.build_rule("model_averaging", learning_rate=1e-4, local_steps=1)

    def averaging():
        return asynclab.replay(rule, problem, trace, seeds=seeds, noise=10.0,
                               init="random_per_worker", record_paths=False,
                               record_every=rounds, progress=False)

    out["model averaging n=10 λ=1"] = len(seeds) * rounds * 10 / _best(averaging)
    return out


def _best(fn, repeats=REPEATS):
    fn()  # compile
    best, _ = best_of({"fn": fn}, repeats)
    return best["fn"]


def generator_rows(quick: bool):
    """Row (e): each generator in a fresh process (the choice is process-wide)."""
    rates = {}
    for variant in GENERATORS:
        command = [sys.executable, __file__, "--generator-child", variant]
        if quick:
            command.append("--quick")
        out = subprocess.run(command, capture_output=True, text=True, check=True)
        rates[variant] = json.loads(out.stdout.strip().splitlines()[-1])
    rows = []
    for workload in rates["asynclab"]:
        base = rates["asynclab"][workload]
        for variant in GENERATORS:
            rows.append((workload, variant, rates[variant][workload],
                         rates[variant][workload] / base))
    return rows


# ----------------------------------------------------------------------------- seeds (f)


def device_kind() -> str:
    return "cpu" if jax.default_backend() == "cpu" else "accelerator"


def seeds_sweep(quick: bool):
    counts, commits = SEEDS_SWEEP[(device_kind(), "quick" if quick else "full")]
    problem = asynclab.problems.beale()
    rule = asynclab.rules.downpour(1e-3)
    trace = trace_of(commits)
    rows = []
    for seeds in counts:
        fn = replay_fn(rule, problem, trace, range(seeds))
        t0 = time.perf_counter()
        fn()
        first = time.perf_counter() - t0
        best = _best_no_warmup(fn)
        rows.append((seeds, commits, seeds * commits / best, max(first - best, 0.0)))
    return rows


def _best_no_warmup(fn):
    best, _ = best_of({"fn": fn})
    return best["fn"]


# ----------------------------------------------------------------------------- unroll (h)


def unroll_rows(quick: bool):
    """Row (h): ``(unroll, worker-steps/s, compile s, same bits as unroll 1)``."""
    from asynclab.cluster import simulate_sync

    seeds, rounds = UNROLL_CELL[(device_kind(), "quick" if quick else "full")]
    n = 10
    problem = asynclab.problems.beale()
    rule = asynclab.rules.model_averaging(1e-4)
    trace = simulate_sync(Cluster(n), rounds=rounds)
    fns = {}
    for k in UNROLLS:
        fns[k] = functools.partial(asynclab.replay, rule, problem, trace, seeds=range(seeds),
                                   noise=10.0, init="random_per_worker", record_paths=False,
                                   record_every=rounds, progress=False, unroll=k)
    first = {}
    for k, fn in fns.items():
        t0 = time.perf_counter()
        fn()
        first[k] = time.perf_counter() - t0
    best, out = best_of(fns)
    rows = []
    for k in UNROLLS:
        same = bool(np.array_equal(out[k].loss, out[UNROLLS[0]].loss, equal_nan=True))
        rows.append((k, seeds * n * rounds / best[k], max(first[k] - best[k], 0.0), same))
    return seeds, rounds, rows


# ----------------------------------------------------------------------------- floors (i)


def _seeds_last_noise(k0, k1, step):
    """``normal(fold_in(key, step), (2,))`` for the raw Threefry keys ``(k0, k1)`` of shape
    ``[...]``, as two arrays of that shape: the replay's noise for one worker-step, the
    hash of ``asynclab._random`` called on whole arrays (``fold_in`` is the block of
    ``(0, step)``, component c of ``normal`` the block of ``(0, c)``)."""
    from asynclab._random import _normal_from_bits, threefry2x32

    zero = jnp.zeros(k0.shape, jnp.uint32)
    a0, a1 = threefry2x32(k0, k1, zero, zero + step)
    out = []
    for c in (0, 1):
        y0, y1 = threefry2x32(a0, a1, zero, zero + np.uint32(c))
        out.append(_normal_from_bits(y0 ^ y1))
    return out


def beale_gradient_xy(x, y):
    """∇ of Beale's function, element-wise on coordinate arrays (closed form; about 1.7×
    faster inside the fused loops here than the loss's autodiff gradient, which the
    replay uses, so the floors agree with the replay to float rounding, not bit for bit)."""
    y2 = y * y
    y3 = y2 * y
    r1 = 1.5 - x + x * y
    r2 = 2.25 - x + x * y2
    r3 = 2.625 - x + x * y3
    return (2.0 * (r1 * (y - 1.0) + r2 * (y2 - 1.0) + r3 * (y3 - 1.0)),
            2.0 * x * (r1 + 2.0 * r2 * y + 3.0 * r3 * y2))


#: the floors' XLA options on a CPU: the copy-insertion analysis the executors compile
#: with (it makes the DOWNPOUR floor's in-place row updates 1.6x faster), but not their
#: XLA-own reduction loops (kept by the executors so that a seed's bits do not depend on
#: its batch; the library's reductions make the averaging floor faster, so a floor keeps
#: them)
FLOOR_OPTIONS = {"xla_cpu_copy_insertion_use_region_analysis": True}


def _floor_options() -> dict:
    from asynclab.engine._core import _options_supported

    options = tuple(FLOOR_OPTIONS.items())
    return dict(options) if jax.default_backend() == "cpu" and _options_supported(options) else {}


def _floor_terms(learning_rate, noise):
    """``(gradient, σ, −η)`` of the floors' loops (float32, as the replay computes)."""
    return beale_gradient_xy, np.float32(np.sqrt(noise)), np.float32(-learning_rate)


def _floor_start(start, seeds: int, n_workers: int):
    """The DOWNPOUR floor's state before the first commit: ``(centre, pulled centres,
    step counts)``, each coordinate an array with the seeds last."""
    center = tuple(jnp.full((seeds,), start[i]) for i in (0, 1))
    pulled = tuple(jnp.broadcast_to(c, (n_workers, seeds)) for c in center)
    return center, pulled, jnp.zeros(n_workers, jnp.uint32)


def _floor_commit(terms, worker_keys, state, k):
    """Worker ``k``'s commit in the DOWNPOUR floor: its gradient at the centre it pulled
    plus its step's noise moves the centre by ``(θ − η g) − θ`` (the replay's arithmetic),
    and it pulls the new centre."""
    gradient, sigma, step_size = terms
    k0, k1 = worker_keys
    (cx, cy), (px, py), steps = state
    x, y = px[k], py[k]
    gx, gy = gradient(x, y)
    zx, zy = _seeds_last_noise(k0[k], k1[k], steps[k])
    cx = cx + ((x + step_size * (gx + sigma * zx)) - x)
    cy = cy + ((y + step_size * (gy + sigma * zy)) - y)
    return (cx, cy), (px.at[k].set(cx), py.at[k].set(cy)), steps.at[k].add(1)


def downpour_floor(learning_rate, noise, n_workers):
    """Row (c)'s workload (Beale) hand-fused: ``fn(worker_keys[n, S], start[2], order[T]) ->
    centre[2, S]``. Worker k's step s draws ``normal(fold_in(key, s), (2,))``; the commit
    adds ``(θ − η g) − θ`` to the centre (the replay's arithmetic) and the worker pulls."""
    terms = _floor_terms(learning_rate, noise)

    @functools.partial(jax.jit, compiler_options=_floor_options())
    def run(worker_keys, start, order):
        state = _floor_start(start, worker_keys[0].shape[1], n_workers)

        def event(state, k):
            return _floor_commit(terms, worker_keys, state, k), None

        return jnp.stack(jax.lax.scan(event, state, order)[0][0])

    return run


def downpour_seeds_first(learning_rate, noise, n_workers):
    """:func:`downpour_floor`'s loop with its state laid out as the replay lays it out,
    seeds first: the centre ``(S, 2)``, the pulled centres ``(S, n, 2)`` (the same
    arithmetic, the same numbers): how much of the floor's speed is its layout."""
    gradient, sigma, step_size = _floor_terms(learning_rate, noise)

    @functools.partial(jax.jit, compiler_options=_floor_options())
    def run(worker_keys, start, order):
        k0, k1 = worker_keys  # (n, S) each
        center = jnp.broadcast_to(start, (k0.shape[1], 2))
        pulled = jnp.broadcast_to(center[:, None], (k0.shape[1], n_workers, 2))
        steps = jnp.zeros(n_workers, jnp.uint32)

        def event(carry, k):
            center, pulled, steps = carry
            mine = jax.lax.dynamic_index_in_dim(pulled, k, 1, keepdims=False)
            gx, gy = gradient(mine[:, 0], mine[:, 1])
            zx, zy = _seeds_last_noise(k0[k], k1[k], steps[k])
            g = jnp.stack([gx + sigma * zx, gy + sigma * zy], axis=1)
            center = center + ((mine + step_size * g) - mine)
            return (center, jax.lax.dynamic_update_index_in_dim(pulled, center, k, 1),
                    steps.at[k].add(1)), None

        return jax.lax.scan(event, (center, pulled, steps), order)[0][0].T

    return run


def downpour_vmapped(learning_rate, noise, n_workers):
    """:func:`downpour_floor`'s loop written for one seed (the centre ``(2,)``, the
    pulled centres ``(n, 2)``) and ``vmap``-ed over the seeds inside the loop, as the
    replay runs a rule: the engine's formulation without the engine's structure."""
    gradient, sigma, step_size = _floor_terms(learning_rate, noise)

    def one_seed(center, pulled, k0, k1, step, k):
        mine = pulled[k]
        gx, gy = gradient(mine[0], mine[1])
        zx, zy = _seeds_last_noise(k0[k], k1[k], step)
        g = jnp.stack([gx + sigma * zx, gy + sigma * zy])
        center = center + ((mine + step_size * g) - mine)
        return center, pulled.at[k].set(center)

    seeds = jax.vmap(one_seed, in_axes=(0, 0, 0, 0, None, None))

    @functools.partial(jax.jit, compiler_options=_floor_options())
    def run(worker_keys, start, order):
        k0, k1 = (w.T for w in worker_keys)  # (S, n) each
        center = jnp.broadcast_to(start, (k0.shape[0], 2))
        pulled = jnp.broadcast_to(center[:, None], (k0.shape[0], n_workers, 2))
        steps = jnp.zeros(n_workers, jnp.uint32)

        def event(carry, k):
            center, pulled, steps = carry
            center, pulled = seeds(center, pulled, k0, k1, steps[k], k)
            return (center, pulled, steps.at[k].add(1)), None

        return jax.lax.scan(event, (center, pulled, steps), order)[0][0].T

    return run


def downpour_coordinates(learning_rate, noise, n_workers):
    """:func:`downpour_vmapped` with a seed's vector held as its two coordinates (the
    centre two scalars, the pulled centres two ``(n,)`` arrays): under ``vmap`` each
    coordinate of every seed is one array with the seeds innermost, as in the floor. The
    pulled rows are written with the replay's row writer (``_row_writer``)."""
    from asynclab.engine._core import _row_writer

    gradient, sigma, step_size = _floor_terms(learning_rate, noise)

    def one_seed(center, pulled, k0, k1, step, k):
        x, y = pulled[0][k], pulled[1][k]
        gx, gy = gradient(x, y)
        zx, zy = _seeds_last_noise(k0[k], k1[k], step)
        center = (center[0] + ((x + step_size * (gx + sigma * zx)) - x),
                  center[1] + ((y + step_size * (gy + sigma * zy)) - y))
        return center, tuple(_row_writer(0)(p, k, c) for p, c in zip(pulled, center, strict=True))

    seeds = jax.vmap(one_seed, in_axes=(0, 0, 0, 0, None, None))

    @functools.partial(jax.jit, compiler_options=_floor_options())
    def run(worker_keys, start, order):
        k0, k1 = (w.T for w in worker_keys)  # (S, n) each
        center = tuple(jnp.full((k0.shape[0],), start[i]) for i in (0, 1))
        pulled = tuple(jnp.broadcast_to(c[:, None], k0.shape) for c in center)
        steps = jnp.zeros(n_workers, jnp.uint32)

        def event(carry, k):
            center, pulled, steps = carry
            center, pulled = seeds(center, pulled, k0, k1, steps[k], k)
            return (center, pulled, steps.at[k].add(1)), None

        return jnp.stack(jax.lax.scan(event, (center, pulled, steps), order)[0][0])

    return run


def downpour_guarded(learning_rate, noise, n_workers):
    """:func:`downpour_floor` with what the replay adds at every event: the divergence
    guard (a run whose centre is not finite stops there and keeps the centre before),
    each worker's movement of the centre (``center_share``), and the kept centre (a
    select only at an event where a run stops). The same arithmetic, the floor's layout:
    what the replay's per-event work costs where the layout is the floor's."""
    terms = _floor_terms(learning_rate, noise)

    @functools.partial(jax.jit, compiler_options=_floor_options())
    def run(worker_keys, start, order):
        seeds = worker_keys[0].shape[1]
        state = _floor_start(start, seeds, n_workers)
        moved = jnp.zeros((n_workers, seeds), jnp.float32)
        diverged_at = jnp.full((seeds,), -1, jnp.int32)
        stopped = jnp.zeros((seeds,), bool)

        def event(carry, event):
            k, index = event
            state, moved, diverged_at, stopped, kept = carry
            (cx, cy) = state[0]
            state = _floor_commit(terms, worker_keys, state, k)
            nx, ny = state[0]
            finite = jnp.isfinite(nx) & jnp.isfinite(ny)
            step = jnp.sqrt(jnp.square(nx - cx) + jnp.square(ny - cy))
            running = ~stopped
            applied = running & finite & jnp.isfinite(step)
            moved = moved.at[k].add(jnp.where(applied, step, jnp.float32(0)))
            stop = running & ~finite
            diverged_at = jnp.where(stop, index, diverged_at)
            kept = jax.lax.cond(jnp.any(stop), lambda: (jnp.where(stop, cx, kept[0]),
                                                        jnp.where(stop, cy, kept[1])),
                                lambda: kept)
            return (state, moved, diverged_at, stopped | stop, kept), None

        carry = (state, moved, diverged_at, stopped, state[0])
        events = (order, jnp.arange(order.shape[0], dtype=jnp.int32))
        return jnp.stack(jax.lax.scan(event, carry, events)[0][0][0])

    return run


def averaging_floor(learning_rate, noise, n_workers):
    """Row (h)'s workload (Beale) hand-fused: ``fn(worker_keys[n, S], starts[n, 2, S], rounds) ->
    centre[2, S]``. Round 0 starts every worker at its own start, later rounds at the
    centre; each worker takes one SGD step, the centre is the workers' mean."""
    gradient, sigma, step_size = _floor_terms(learning_rate, noise)

    def average(x, y, t, k0, k1):
        gx, gy = gradient(x, y)
        zx, zy = _seeds_last_noise(k0, k1, t)
        return (jnp.mean(x + step_size * (gx + sigma * zx), axis=0),
                jnp.mean(y + step_size * (gy + sigma * zy), axis=0))

    @functools.partial(jax.jit, static_argnums=2, compiler_options=_floor_options())
    def run(worker_keys, starts, rounds):
        k0, k1 = worker_keys  # (n, S) each
        center = average(starts[:, 0], starts[:, 1], jnp.uint32(0), k0, k1)

        def round_(center, t):
            x, y = (jnp.broadcast_to(c, k0.shape) for c in center)
            return average(x, y, t, k0, k1), None

        return jnp.stack(jax.lax.scan(round_, center,
                                      jnp.arange(1, rounds, dtype=jnp.uint32))[0])

    return run


def _keys_seeds_last(seeds, n_workers):
    """``(init_keys[S], (k0, k1))``: the seeds' keys (``asynclab.engine._core.seed_keys``),
    the workers' raw Threefry key words laid out ``(n, S)``."""
    from asynclab.engine._core import seed_keys_batch

    init_keys, worker_keys = seed_keys_batch(jnp.asarray(seeds, jnp.uint32), n_workers)
    raw = jax.random.key_data(worker_keys)  # (S, n, 2)
    return init_keys, (raw[..., 0].T, raw[..., 1].T)


def floor_rows(quick: bool):
    """Row (i): the hand-fused floors beside the engine (and the numpy loop)."""
    import threading

    from asynclab.cluster import simulate_sync

    (dp_seeds, dp_commits), (ma_seeds, ma_rounds) = FLOOR_SIZES[
        (device_kind(), "quick" if quick else "full")]
    problem = asynclab.problems.beale()
    out = {}

    # DOWNPOUR, (c)'s workload; the check on 8 seeds over 500 commits
    lr = 1e-3
    rule = asynclab.rules.downpour(lr)
    floor = downpour_floor(lr, NOISE, N_WORKERS)
    start = jnp.asarray(problem.start, jnp.float32)
    check_trace = trace_of(500)
    _, keys = _keys_seeds_last(range(8), N_WORKERS)
    mine = np.asarray(floor(keys, start, jnp.asarray(check_trace.worker)))
    theirs = asynclab.replay(rule, problem, check_trace, seeds=range(8), noise=NOISE,
                             record_paths=False, record_every=500, progress=False)
    out["downpour check"] = float(np.max(np.abs(mine.T - theirs.final_params)))
    trace = trace_of(dp_commits)
    _, keys = _keys_seeds_last(range(dp_seeds), N_WORKERS)
    order = jnp.asarray(trace.worker)
    layouts = {"seeds first": downpour_seeds_first(lr, NOISE, N_WORKERS),
               "vmapped": downpour_vmapped(lr, NOISE, N_WORKERS),
               "coordinates": downpour_coordinates(lr, NOISE, N_WORKERS),
               "guarded": downpour_guarded(lr, NOISE, N_WORKERS)}
    _, check_keys = _keys_seeds_last(range(8), N_WORKERS)
    out["layout check"] = max(float(np.max(np.abs(np.asarray(
        variant(check_keys, start, jnp.asarray(check_trace.worker))) - mine)))
        for variant in layouts.values())
    fns = {"floor": lambda: floor(keys, start, order),
           **{name: functools.partial(variant, keys, start, order)
              for name, variant in layouts.items()},
           "engine": replay_fn(rule, problem, trace, range(dp_seeds)),
           "numpy": functools.partial(numpy_downpour, beale_gradient, problem.start, lr,
                                      NOISE, dp_commits)}
    for fn in fns.values():
        jax.block_until_ready(fn())  # compile
    best, _ = best_of(fns, FLOOR_REPEATS)
    out["downpour"] = {k: (dp_seeds if k != "numpy" else 1) * dp_commits / v
                       for k, v in best.items()}
    out["downpour size"] = (dp_seeds, dp_commits)

    # model averaging, (h)'s workload (and the Monte-Carlo study's cells)
    n, lr, noise = 10, 1e-4, 10.0
    rule = asynclab.rules.model_averaging(lr)
    floor = averaging_floor(lr, noise, n)

    def inputs(seeds):
        init_keys, keys = _keys_seeds_last(seeds, n)
        starts = jax.vmap(lambda k: problem.initial_params(k, n))(init_keys)  # (S, n, 2)
        return keys, jnp.transpose(starts, (1, 2, 0))  # (n, 2, S)

    keys, starts = inputs(range(8))
    mine = np.asarray(floor(keys, starts, 200))
    theirs = asynclab.replay(rule, problem, simulate_sync(Cluster(n), rounds=200),
                             seeds=range(8), noise=noise, init="random_per_worker",
                             record_paths=False, record_every=200, progress=False)
    out["averaging check"] = float(np.max(np.abs(mine.T - theirs.final_params)))
    keys, starts = inputs(range(ma_seeds))
    keys2, starts2 = inputs(range(ma_seeds, 2 * ma_seeds))
    trace = simulate_sync(Cluster(n), rounds=ma_rounds)

    def both():  # two calls at once, from two threads (the study's two cells)
        other = threading.Thread(target=lambda: jax.block_until_ready(
            floor(keys2, starts2, ma_rounds)))
        other.start()
        jax.block_until_ready(floor(keys, starts, ma_rounds))
        other.join()

    fns = {"floor": lambda: floor(keys, starts, ma_rounds),
           "floor x2": both,
           "engine": functools.partial(asynclab.replay, rule, problem, trace,
                                       seeds=range(ma_seeds), noise=noise,
                                       init="random_per_worker", record_paths=False,
                                       record_every=ma_rounds, progress=False)}
    for fn in fns.values():
        jax.block_until_ready(fn())
    best, _ = best_of(fns, FLOOR_REPEATS)
    steps = ma_seeds * n * ma_rounds
    out["averaging"] = {k: steps * (2 if k == "floor x2" else 1) / v for k, v in best.items()}
    out["averaging size"] = (ma_seeds, ma_rounds)
    return out


# ----------------------------------------------------------------------------- reduce (j)


def reduction_rows(quick: bool):
    """Row (j): ``(workload, rate as compiled, rate with XLA's default, seed 0's run the
    same alone and in the launch: as compiled, with the default)``."""
    from asynclab.cluster import simulate_sync
    from asynclab.engine import _compiled, _core, schedule

    ours_options = _core.CPU_COMPILER_OPTIONS

    def use(ours):  # the caches do not key on the options: empty them at each switch
        _compiled._COMPILED.clear()
        _compiled._INITIAL.clear()
        _core.CPU_COMPILER_OPTIONS = ours_options if ours else {}

    beale = asynclab.problems.beale()
    seeds, rounds = (200, 500) if quick else (2_000, 2_000)
    averaging = asynclab.rules.model_averaging(1e-4)
    sync_trace = simulate_sync(Cluster(10), rounds=rounds)
    commits = 1_000 if quick else 10_000
    downpour = asynclab.rules.downpour(1e-3)
    async_trace = trace_of(commits)
    net = asynclab.problems.get_problem("digits", model="mlp:32", workers=4, batch_size=16)
    net_rule = asynclab.rules.downpour(0.05)
    net_commits = 200 if quick else 2_000
    net_trace = schedule(net_rule, Cluster(4), commits=net_commits, rng=0)
    workloads = {
        f"model averaging n=10, {seeds} seeds": (
            lambda s: asynclab.replay(averaging, beale, sync_trace, seeds=s, noise=10.0,
                                      init="random_per_worker", record_paths=False,
                                      record_every=rounds, progress=False),
            seeds, seeds * 10 * rounds),
        f"DOWNPOUR n={N_WORKERS}, {SEEDS_C} seeds": (
            lambda s: asynclab.replay(downpour, beale, async_trace, seeds=s, noise=NOISE,
                                      record_paths=False, record_every=commits,
                                      progress=False),
            SEEDS_C, SEEDS_C * commits),
        "digits MLP 64-32-10, 32 seeds": (
            lambda s: asynclab.replay(net_rule, net, net_trace, seeds=s,
                                      record_every=net_commits, progress=False),
            32, 32 * net_commits),
    }
    rows = []
    try:
        for name, (run, count, work) in workloads.items():
            same, fns = {}, {}
            for ours in (True, False):
                use(ours)
                alone, among = run([0]), run(range(count))
                # the run: final centre and divergence (a net's recorded training loss, a
                # mean over the whole data set, may still differ in its last bit)
                same[ours] = all(np.array_equal(a, b[:1], equal_nan=True) for a, b in zip(
                    [alone.diverged_at] + jax.tree.leaves(alone.final_params),
                    [among.diverged_at] + jax.tree.leaves(among.final_params), strict=True))
            for ours in (True, False):
                fns[ours] = functools.partial(_timed_with, use, ours, run, range(count))
            best = {True: float("inf"), False: float("inf")}
            for _ in range(REPEATS):  # interleaved, recompiling at each switch
                for ours in (True, False):
                    best[ours] = min(best[ours], fns[ours]())
            rows.append((name, work / best[True], work / best[False], same[True],
                         same[False]))
    finally:
        use(True)
    return rows


def _timed_with(use, ours, run, seeds):
    """Seconds of ``run(seeds)`` compiled with (``ours``) or without the replay's options,
    compilation excluded."""
    use(ours)
    run(seeds)
    t0 = time.perf_counter()
    run(seeds)
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------- mc (g)


def mc_worker_steps(config) -> int:
    """The worker-steps of a model_averaging_mc configuration (bars and checks)."""
    lams = set(config.map_local_steps) | set(config.bar_local_steps)
    steps = 0
    for n in config.workers:
        budget = config.budget_for(n)
        steps += len(lams) * config.check_runs * 2 * budget * n
        if config.runs > config.check_runs:
            steps += len(config.bar_local_steps) * config.runs * budget * n
    return steps


def mc_timing(which: str, stepwise: str = "auto"):
    """Wall seconds of the model_averaging_mc study, and its worker-steps; ``stepwise``
    ``on``/``off`` forces the study's step-by-step replay on shared programs (its CPU
    default) or the λ-step replay of a program per cell (its accelerator default)."""
    from asynclab.studies import model_averaging_mc as study

    config = study.Config() if which == "full" else study.Config.quick()
    if stepwise != "auto":
        config = dataclasses.replace(config, stepwise=stepwise == "on")
    lams = set(config.map_local_steps) | set(config.bar_local_steps)
    steps = mc_worker_steps(config)
    stepwise = study._stepwise(config)
    settings = (f"launch_seeds {study._launch_seeds(config)}, merge_check "
                f"{study._merge_check(config)}, unroll {study._unroll(config)}, threads "
                f"{study._threads(config, len(lams) * len(config.workers))}, stepwise "
                f"{stepwise}, padded axes "
                f"{[study._pad_workers(config, n) for n in config.workers]}")
    t0 = time.perf_counter()
    study.run(config, progress=False)
    return time.perf_counter() - t0, steps, settings


def print_floors(out):
    from asynclab.studies import model_averaging_mc as study

    seeds, commits = out["downpour size"]
    rates = out["downpour"]
    print()
    print("(i) hand-fused floors: the same stream, closed-form gradient, seeds last, no "
          f"guard, no records; compiled with {_floor_options() or 'the default options'}; "
          f"best of {FLOOR_REPEATS}, interleaved")
    print(f"    check: floor = replay to {out['downpour check']:.1e} (DOWNPOUR, 8 seeds x 500 "
          f"commits), {out['averaging check']:.1e} (model averaging, 8 seeds x 200 rounds)")
    print(f"    DOWNPOUR Beale n={N_WORKERS} λ=1 σ²={NOISE}, {seeds:,} seeds x {commits:,} "
          f"commits (replica-updates/s; ratio to the numpy loop, 1 seed)")
    labels = {"numpy": "numpy event loop (a)", "engine": "asynclab replay (c)",
              "floor": "hand-fused floor", "seeds first": "the floor laid out seeds first",
              "vmapped": "the floor per seed, vmapped",
              "coordinates": "... vmapped, coordinates apart",
              "guarded": "the floor + the replay's guard"}
    for what, label in labels.items():
        ratio = rates[what] / rates["numpy"]
        if what == "engine":
            mark = _floor_mark(rates, "the floor")
        elif what in ("seeds first", "vmapped", "coordinates", "guarded"):
            mark = f"   {rates[what] / rates['floor']:.2f}x the floor"
        else:
            mark = ""
        print(f"      {label:30} {rates[what]:12.4g} {ratio:8.3g}x{mark}")
    print(f"      (the other forms of the floor's loop end where it ends to "
          f"{out['layout check']:.1e}: the same arithmetic)")
    seeds, rounds = out["averaging size"]
    rates = out["averaging"]
    full = mc_worker_steps(study.Config())
    print(f"    model averaging Beale n=10 λ=1 σ²=10, {seeds:,} seeds x {rounds:,} rounds "
          f"(worker-steps/s; the full model_averaging_mc figure, {full:.3g} worker-steps, "
          f"at that rate)")
    for what in ("engine", "floor", "floor x2"):
        label = {"engine": "asynclab replay (h)", "floor": "hand-fused floor, 1 call",
                 "floor x2": "hand-fused floor, 2 at once"}[what]
        mark = _floor_mark(rates, "the 1-call floor") if what == "engine" else ""
        print(f"      {label:30} {rates[what]:12.4g}   figure {full / rates[what]:8.0f} s{mark}")


def _floor_mark(rates, floor: str) -> str:
    share = rates["engine"] / rates["floor"]
    return (f"   {share:.2f}x {floor} (bar >= {FLOOR_TARGET:g}x: "
            f"{'met' if share >= FLOOR_TARGET else 'MISSED'})")


def device_line() -> str:
    device = jax.devices()[0]
    return (f"device {device.device_kind} x{jax.device_count()} "
            f"(platform {device.platform})")


# ----------------------------------------------------------------------------- main


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke check")
    parser.add_argument("--mc", choices=("quick", "full", "none"), default="quick",
                        help="row (g): time the model_averaging_mc study's quick (default) "
                        "or full configuration, or skip it")
    parser.add_argument("--mc-stepwise", choices=("auto", "on", "off"), default="auto",
                        help="row (g): the study's step-by-step replay on shared programs "
                        "(on), a program per cell (off), or the machine's default (auto)")
    parser.add_argument("--rows", default=ROWS,
                        help="the rows to measure, in this order, e.g. 'gfh' (default: "
                        f"'{ROWS}'; any of a-d measures the whole table a-d)")
    parser.add_argument("--generator-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.rows or set(args.rows) - set(ROWS):
        parser.error(f"--rows takes letters of '{ROWS}', got {args.rows!r}")
    if args.generator_child:
        print(json.dumps(generator_child(args.generator_child, args.quick)))
        return
    sizes = SIZES["quick" if args.quick else "full"]

    print(f"asynclab replay benchmark{' (--quick)' if args.quick else ''}")
    print(f"date {datetime.datetime.now().isoformat(timespec='seconds')}  "
          f"cpus {os.cpu_count()}  {platform.processor() or platform.machine()}  "
          f"python {platform.python_version()}  jax {jax.__version__}  "
          f"numpy {np.__version__}  simpy {simpy.__version__}  "
          f"backend {jax.default_backend()}")
    print(device_line())
    print(f"asynclab from {os.path.dirname(asynclab.__file__)}")  # the checkout, or a copy
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before the run (1, 5, 15 min): {load} on {os.cpu_count()} cpus")
    print(f"DOWNPOUR λ=1, n={N_WORKERS} workers, exponential compute times, σ²={NOISE}; "
          f"best of {REPEATS}")

    # rows in the order given (a short lease may want (g) first); a-d are one table
    order = list(dict.fromkeys("a" if r in "abcd" else r for r in args.rows))
    for row in order:
        if row == "a":
            table_rows(sizes)
        elif row == "e":
            print()
            print(f"(e) the seed's generator inside the replay ({100 if args.quick else 1000} "
                  "seeds, Beale; worker-steps/s; ratio to asynclab's fused Threefry)")
            for workload, variant, rate, ratio in generator_rows(args.quick):
                print(f"    {workload:28} {variant:14} {rate:12.4g} {ratio:8.3g}x")
        elif row == "f":
            print()
            print("(f) seeds per launch: DOWNPOUR on Beale, n=16, λ=1 (replica-updates/s)")
            for seeds, commits, rate, compile_s in seeds_sweep(args.quick):
                print(f"    {seeds:>7,} seeds x {commits:,} commits {rate:12.4g} "
                      f"replica-upd/s  compile {compile_s:.1f} s", flush=True)
        elif row == "h":
            seeds, rounds, rows = unroll_rows(args.quick)
            print()
            print(f"(h) events per loop iteration: model averaging on Beale, n=10, λ=1, "
                  f"σ²=10, {seeds:,} seeds x {rounds:,} rounds (worker-steps/s)")
            for k, rate, compile_s, same in rows:
                print(f"    unroll {k:>3} {rate:12.4g} worker-steps/s  compile "
                      f"{compile_s:5.1f} s  same bits as unroll {UNROLLS[0]}: {same}")
        elif row == "j" and jax.default_backend() == "cpu":
            print()
            print("(j) reductions: the replay as compiled (XLA's own loops) beside XLA's "
                  "CPU default (its YNNPACK library); rates per second, best of "
                  f"{REPEATS}; seed 0's run (final centre) the same bits alone and in the "
                  "launch")
            for name, ours, default, same_ours, same_default in reduction_rows(args.quick):
                print(f"    {name:34} as compiled {ours:10.4g}  default {default:10.4g}  "
                      f"ratio {ours / default:5.2f}x  same bits: {same_ours} / "
                      f"{same_default}", flush=True)
        elif row == "i":
            print_floors(floor_rows(args.quick))
        elif row == "g" and args.mc != "none":
            seconds, steps, settings = mc_timing(args.mc, args.mc_stepwise)
            print()
            print(f"(g) model_averaging_mc study ({args.mc} configuration): {seconds:.1f} s, "
                  f"{steps:.3g} worker-steps, {steps / seconds:.3g} worker-steps/s")
            print(f"    {settings}")
        sys.stdout.flush()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average after the run (1, 5, 15 min): {load}")


def table_rows(sizes):
    """Rows (a)-(d), one table: the replay against the numpy loop, the simulator against
    bare SimPy."""
    diff, moved = check_agreement()
    print(f"check: numpy loop (trace order, σ²=0, Beale, 200 commits) = replay to "
          f"{diff:.1e} (centre moved {moved:.2f})")

    problems = {
        "beale": (asynclab.problems.beale(), 1e-3, beale_gradient),
        "quadratic": (asynclab.problems.quadratic(dim=QUAD_DIM, condition=QUAD_CONDITION),
                      1e-4, quadratic_gradient(QUAD_DIM, QUAD_CONDITION)),
    }
    rows = []  # (row, label, problem, d, rate, unit, ratio, compile)
    for name, (problem, lr, gradient) in problems.items():
        n = sizes[name]
        rule = asynclab.rules.downpour(lr)
        fns = {"a": functools.partial(numpy_downpour, gradient, problem.start, lr, NOISE,
                                      n["a"])}
        compile_s = {}
        for row, seeds, commits in (("b", [0], n["b"]), ("c", range(SEEDS_C), n["c"])):
            fns[row] = replay_fn(rule, problem, trace_of(commits), seeds)
            t0 = time.perf_counter()
            fns[row]()  # warm-up: compiles
            compile_s[row] = time.perf_counter() - t0
        best, out = best_of(fns)
        assert np.all(np.isfinite(out["a"])), f"numpy loop diverged on {name}"
        rate_a = n["a"] / best["a"]
        rows.append(("a", "numpy event loop, 1 seed", name, problem.dim, rate_a, "events/s",
                     1.0, None))
        for row in ("b", "c"):
            result = out[row]
            assert np.all(np.isfinite(result.final_params)), f"replay diverged on {name}"
            replicas = len(result.seeds)
            rate = replicas * n[row] / best[row]
            label = ("asynclab replay, 1 seed" if row == "b"
                     else f"asynclab replay, {replicas} seeds")
            unit = "events/s" if row == "b" else "replica-upd/s"
            rows.append((row, label, name, problem.dim, rate, unit, rate / rate_a,
                         max(compile_s[row] - best[row], 0.0)))

    n_sim = sizes["simpy"]
    cluster = Cluster(N_WORKERS, ComputeTime("exponential"))
    per = n_sim // N_WORKERS
    delays = np.random.default_rng(0).exponential(1.0, (N_WORKERS, per)).tolist()
    best, out = best_of({"bare": lambda: bare_simpy(delays),
                         "sim": lambda: simulate_async(cluster, commits=n_sim, rng=0)})
    rate_bare = N_WORKERS * per / best["bare"]
    rate_sim = out["sim"].n_events / best["sim"]
    rows.append(("d0", "bare SimPy timeouts", "-", "-", rate_bare, "events/s", 1.0, None))
    rows.append(("d", "simulate_async -> Trace", "-", "-", rate_sim, "events/s",
                 rate_sim / rate_bare, None))

    header = (f"{'':3} {'measurement':32} {'problem':10} {'d':>5} {'rate':>12} "
              f"{'unit':14} {'ratio':>9} {'target':>8} {'':7} {'compile':>8}")
    print()
    print(header)
    print("-" * len(header))
    for row, label, name, dim, rate, unit, ratio, compile_s in rows:
        target = TARGETS.get((row, name))
        mark = "" if target is None else ("met" if ratio >= target else "MISSED")
        tgt = "" if target is None else f">={target:g}x"
        comp = "" if compile_s is None else f"{compile_s:.1f} s"
        print(f"({row[0]}) {label:32} {name:10} {dim!s:>5} {rate:12.4g} {unit:14} "
              f"{ratio:8.3g}x {tgt:>8} {mark:7} {comp:>8}")
    print()
    print("ratio: to (a) on the same problem; for (d) to the bare SimPy loop. "
          "compile: first call minus best call.")

if __name__ == "__main__":
    # a child measuring one generator prints JSON for its parent: not a table
    with recorded("replay", skip=any(a.startswith("--generator-child") for a in sys.argv)):
        main()
