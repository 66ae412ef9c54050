"""Replay of a net problem beside a plain ``jax.jit`` SGD loop on the same batches.

MNIST-5k (4,000 training images), MLP 784-256-10, batch 32, DOWNPOUR with n = 16
workers and λ = 1 over a simulated asynchronous schedule of C commits: C gradient
evaluations per seed. The plain loop is sequential SGD, ``lax.scan`` under ``jax.jit``,
over the same C batches (the ones the replay's workers read, in commit order). Rates
are gradient evaluations per second, compile time excluded (each is called once to
compile, then timed, best of R calls). A third row replays a DOWNPOUR assembled from the
same parts without the worker's and the server's momentum buffers (which the declared
rule keeps so that its momenta are traced values): the same numbers, less state per
commit; it shows what those buffers cost.

Beside the rates, the arithmetic: XLA's own FLOP count of one gradient step (its cost
analysis of the plain loop's step), the FLOP rate each row reaches, and the rate of a
large float32 matrix product on the same machine (the most this CPU gives a JAX
program), so a target that would need more than that shows it in numbers.

    python benchmarks/nets.py            # 2,000 commits, 1 and 32 seeds
    python benchmarks/nets.py --quick    # 200 commits, 1 and 8 seeds
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import asynclab
from asynclab.engine import replay, schedule
from asynclab.engine._core import seed_keys
from asynclab.problems import get_problem
from asynclab.problems._datasets import load_dataset
from asynclab.problems._models import mlp, model_loss
from asynclab.problems._shards import batch_indices, make_shards
from asynclab.rules._parts import accumulated_step, add, reset_to_center
from asynclab.rules._parts import asynchronous as asynchronous_rule


def best_of(fn, repeats):
    fn()  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_flops_per_second(size=2048, repeats=5):
    """The float32 rate of a ``size``² matrix product under ``jax.jit`` (best of ``repeats``)."""
    a = jax.random.normal(jax.random.key(0), (size, size), jnp.float32)
    product = jax.jit(lambda x, y: x @ y)
    seconds = best_of(lambda: jax.block_until_ready(product(a, a)), repeats)
    return 2 * size ** 3 / seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    commits, many = (200, 8) if args.quick else (2000, 32)
    n, batch, lr = 16, 32, 0.01

    problem = get_problem("mnist", model="mlp:256", workers=n, batch_size=batch)
    rule = asynclab.rules.make_rule("downpour", learning_rate=lr, local_steps=1)
    trace = schedule(rule, asynclab.cluster.Cluster(n), commits=commits, rng=0)

    def run(seeds, rule=rule):
        return replay(rule, problem, trace, seeds=seeds, record_every=commits,
                      progress=False)

    # DOWNPOUR assembled from the same parts without the two momentum buffers (worker and
    # server) that the declared rule keeps so that its momenta can be traced values: the
    # same numbers with momenta 0, a third less state to read and write per commit
    lean = asynchronous_rule("downpour", inner=optax.sgd(lr), local_steps=1,
                             commit=accumulated_step, apply=add, pull=reset_to_center,
                             hyperparameters={})
    same = [np.array_equal(a, b) for a, b in zip(
        jax.tree.leaves(run([0]).final_params), jax.tree.leaves(run([0], lean).final_params),
        strict=True)]
    if not all(same):
        raise RuntimeError("the DOWNPOUR without momentum buffers replayed other numbers")

    # the plain loop: the batches the replay's workers read (worker k, its step s)
    data = load_dataset("mnist", seed=0)
    shards = make_shards(data.y_train, n, "iid", seed=0)
    _, keys = seed_keys(0, n)
    steps = np.zeros(n, np.int32)
    worker_steps = []
    for k in trace.worker:
        worker_steps.append((k, steps[k]))
        steps[k] += 1
    ks = jnp.asarray([k for k, _ in worker_steps])
    ss = jnp.asarray([s for _, s in worker_steps])
    rows = jax.jit(jax.vmap(lambda k, s: batch_indices(shards.index, shards.lengths, keys[k],
                                                       k, s, batch)))(ks, ss)
    x = jnp.asarray(data.x_train.reshape(len(data.y_train), -1))
    y = jnp.asarray(data.y_train)
    grad = jax.grad(model_loss(mlp(784, (256,), 10)))

    @jax.jit
    def plain(params, rows):
        def step(p, r):
            g = grad(p, x[r], y[r])
            return jax.tree.map(lambda a, b: a - lr * b, p, g), None
        return jax.lax.scan(step, params, rows)[0]

    start = jax.tree.map(jnp.asarray, problem.start)
    step_cost = jax.jit(lambda p, r: jax.tree.map(lambda a, b: a - lr * b, p,
                                                  grad(p, x[r], y[r]))).lower(
        start, rows[0]).compile().cost_analysis()
    step_cost = step_cost[0] if isinstance(step_cost, list) else step_cost
    flops = float(step_cost["flops"])  # one gradient evaluation and its SGD update

    load_before = os.getloadavg()
    peak = matmul_flops_per_second()
    t_plain = best_of(lambda: jax.block_until_ready(plain(start, rows)), args.repeats)
    t_one = best_of(lambda: run([0]), args.repeats)
    t_lean = best_of(lambda: run([0], lean), args.repeats)
    t_many = best_of(lambda: run(list(range(many))), args.repeats)
    rate_plain = commits / t_plain
    rate_one = commits / t_one
    rate_lean = commits / t_lean
    rate_many = many * commits / t_many
    peak_after = matmul_flops_per_second()
    load_after = os.getloadavg()
    print(f"MNIST-5k MLP 784-256-10, batch {batch}, DOWNPOUR n={n} λ=1, {commits} commits; "
          f"best of {args.repeats} (the plain loop is sequential: same batches, no staleness)")
    print(f"asynclab from {os.path.dirname(asynclab.__file__)}")  # the checkout, or a copy
    print(f"load average (1, 5, 15 min): before {_load(load_before)}, after "
          f"{_load(load_after)}; {os.cpu_count()} CPU(s)")
    print(f"{'what':<34}{'seconds':>10}{'grads/s':>12}{'ratio':>9}{'GFLOP/s':>10}")
    for what, seconds, rate in (("plain jit SGD loop, 1 run", t_plain, rate_plain),
                                ("asynclab replay, 1 seed", t_one, rate_one),
                                ("  the same, no momentum buffers", t_lean, rate_lean),
                                (f"asynclab replay, {many} seeds", t_many, rate_many)):
        print(f"{what:<34}{seconds:>10.3f}{rate:>12.0f}{rate / rate_plain:>9.2f}"
              f"{rate * flops / 1e9:>10.1f}")
    print(f"{many} seeds / 1 seed rate: {rate_many / rate_one:.2f}x "
          f"(targets: 1 seed >= 0.5x plain; {many} seeds >= 8x one seed)")
    best = max(peak, peak_after, rate_plain * flops)  # the most this machine showed here
    print(f"one gradient step: {flops / 1e6:.1f} MFLOP (XLA's count); a 2048² float32 "
          f"matmul here: {peak / 1e9:.0f} GFLOP/s before, {peak_after / 1e9:.0f} after")
    need = 8 * max(rate_one, 0.5 * rate_plain) * flops
    print(f"{many} seeds at 8x the rate of one seed that meets its own target (>= 0.5x "
          f"plain) need >= {need / 1e9:.0f} GFLOP/s of gradient arithmetic alone: "
          f"{need / best:.1f}x the best rate measured in this run "
          f"({best / 1e9:.0f} GFLOP/s)")


def _load(values):
    return ", ".join(f"{v:.1f}" for v in values)


if __name__ == "__main__":
    main()
