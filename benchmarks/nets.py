"""Replay of a net problem beside a plain ``jax.jit`` SGD loop on the same batches.

MNIST-5k (4,000 training images), MLP 784-256-10, batch 32, DOWNPOUR with n = 16
workers and λ = 1 over a simulated asynchronous schedule of C commits: C gradient
evaluations per seed. The plain loop is sequential SGD, ``lax.scan`` under ``jax.jit``,
over the same C batches (the ones the replay's workers read, in commit order). Rates
are gradient evaluations per second, compile time excluded (each is called once to
compile, then timed, best of R calls).

    python benchmarks/nets.py            # 2,000 commits, 1 and 32 seeds
    python benchmarks/nets.py --quick    # 200 commits, 1 and 8 seeds
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import asynclab
from asynclab.engine import replay, schedule
from asynclab.engine._core import seed_keys
from asynclab.problems import get_problem
from asynclab.problems._datasets import load_dataset
from asynclab.problems._models import mlp, model_loss
from asynclab.problems._shards import batch_indices, make_shards


def best_of(fn, repeats):
    fn()  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


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

    def run(seeds):
        return replay(rule, problem, trace, seeds=seeds, record_every=commits,
                      progress=False)

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

    t_plain = best_of(lambda: jax.block_until_ready(plain(start, rows)), args.repeats)
    t_one = best_of(lambda: run([0]), args.repeats)
    t_many = best_of(lambda: run(list(range(many))), args.repeats)
    rate_plain = commits / t_plain
    rate_one = commits / t_one
    rate_many = many * commits / t_many
    print(f"MNIST-5k MLP 784-256-10, batch {batch}, DOWNPOUR n={n} λ=1, {commits} commits; "
          f"best of {args.repeats} (the plain loop is sequential: same batches, no staleness)")
    print(f"{'what':<34}{'seconds':>10}{'grads/s':>12}{'ratio':>9}")
    print(f"{'plain jit SGD loop, 1 run':<34}{t_plain:>10.3f}{rate_plain:>12.0f}{1.0:>9.2f}")
    print(f"{'asynclab replay, 1 seed':<34}{t_one:>10.3f}{rate_one:>12.0f}"
          f"{rate_one / rate_plain:>9.2f}")
    print(f"{f'asynclab replay, {many} seeds':<34}{t_many:>10.3f}{rate_many:>12.0f}"
          f"{rate_many / rate_plain:>9.2f}")
    print(f"{many} seeds / 1 seed rate: {rate_many / rate_one:.2f}x "
          f"(targets: 1 seed >= 0.5x plain; {many} seeds >= 8x one seed)")


if __name__ == "__main__":
    main()
