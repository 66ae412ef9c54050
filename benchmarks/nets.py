"""Replay of a net problem beside hand-written JAX loops on the same batches.

MNIST-5k (4,000 training images), MLP 784-256-10, batch 32, DOWNPOUR with n = 16
workers and λ = 1 over a simulated asynchronous schedule of C commits: C gradient
evaluations per seed. Two floors in plain JAX, ``lax.scan`` under ``jax.jit`` (compiled with
``replay.py``'s ``FLOOR_OPTIONS``):

- sequential SGD over the same C batches (the ones the replay's workers read, in commit
  order): one parameter vector, no staleness;
- DOWNPOUR by hand: the centre and 16 parameter copies, one commit per step (the
  committing worker's gradient at its copy moves the centre, the worker takes the new
  centre), for 1 seed and ``jax.vmap``-ed over M seeds (each its own batches), in two
  forms that do the same work: each commit draws its batch in the loop, as the replay
  does; or the call first draws the batches of all C commits in one vectorised pass and
  the loop reads them. The faster of the two for each seed count is the floor the replay
  is held to (target: the replay >= 0.7x it, for 1 and for M seeds);
- the same loop given the batches drawn beforehand, outside the timed call: it leaves
  out work the replay does (the draws), so it is printed beside the floor, not used as
  one; a floor written this way measures a lower ratio.

Rates are gradient evaluations per second, compile time excluded (each is called once
to compile, then timed, best of R calls). Beside the rates, the arithmetic: XLA's own
FLOP count of one gradient step, the FLOP rate each row reaches, and the rate of a large
float32 matrix product on the same machine.

    python benchmarks/nets.py            # 2,000 commits, 1, 8 and 32 seeds
    python benchmarks/nets.py --quick    # 200 commits, 1 and 8 seeds
    python benchmarks/nets.py --seeds 32,1024   # an accelerator: 1, 32 and 1,024 seeds
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import recorded  # noqa: E402
from replay import _floor_options  # noqa: E402  (the floors' compile options)


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
    parser.add_argument("--seeds", default=None,
                        help="seed counts beside 1, comma-separated (default 8,32; "
                             "8 with --quick)")
    args = parser.parse_args(argv)
    commits, counts = (200, (8,)) if args.quick else (2000, (8, 32))
    if args.seeds:
        counts = tuple(int(c) for c in args.seeds.split(",") if int(c) > 1)
    n, batch, lr = 16, 32, 0.01

    problem = get_problem("mnist", model="mlp:256", workers=n, batch_size=batch)
    rule = asynclab.rules.make_rule("downpour", learning_rate=lr, local_steps=1)
    trace = schedule(rule, asynclab.cluster.Cluster(n), commits=commits, rng=0)

    def run(seeds):
        return replay(rule, problem, trace, seeds=seeds, record_every=commits,
                      progress=False)

    # the batches the replay's workers read: worker k's step s, for seed `seed`
    data = load_dataset("mnist", seed=0)
    shards = make_shards(data.y_train, n, "iid", seed=0)
    steps = np.zeros(n, np.int32)
    order = []
    for k in trace.worker:
        order.append((k, steps[k]))
        steps[k] += 1
    ks = jnp.asarray([k for k, _ in order], jnp.int32)
    ss = jnp.asarray([s for _, s in order], jnp.int32)

    def batch_of(keys, k, s):
        return batch_indices(shards.index, shards.lengths, keys[k], k, s, batch)

    def draw_rows(seed):
        """The batches of every commit of seed ``seed``, drawn in one vectorised pass."""
        _, keys = seed_keys(seed, n)
        return jax.vmap(lambda k, s: batch_of(keys, k, s))(ks, ss)

    rows_of = jax.jit(draw_rows)
    x = jnp.asarray(data.x_train.reshape(len(data.y_train), -1))
    y = jnp.asarray(data.y_train)
    grad = jax.grad(model_loss(mlp(784, (256,), 10)))
    start = jax.tree.map(jnp.asarray, problem.start)

    # the floors compile with the copy analysis the replay compiles with (replay.py's
    # FLOOR_OPTIONS), so that neither copies a stacked array the other updates in place
    floor_jit = functools.partial(jax.jit, compiler_options=_floor_options())

    @floor_jit
    def plain(params, rows):
        def step(p, r):
            g = grad(p, x[r], y[r])
            return jax.tree.map(lambda a, b: a - lr * b, p, g), None
        return jax.lax.scan(step, params, rows)[0]

    def downpour_loop(rows_of_commit, events):
        """16 copies and a centre; ``rows_of_commit(event)``: the commit's batch."""
        copies = jax.tree.map(lambda a: jnp.broadcast_to(a, (n,) + a.shape), start)

        def commit(state, event):
            center, copies = state
            k, r = event[0], rows_of_commit(event)
            mine = jax.tree.map(lambda c: c[k], copies)
            g = grad(mine, x[r], y[r])
            center = jax.tree.map(lambda c, d: c - lr * d, center, g)
            copies = jax.tree.map(lambda c, v: c.at[k].set(v), copies, center)
            return (center, copies), None

        return jax.lax.scan(commit, (start, copies), events)[0][0]

    def downpour_by_hand(seed):
        """Each commit draws its batch in the loop (as the replay does)."""
        _, keys = seed_keys(seed, n)
        return downpour_loop(lambda e: batch_of(keys, e[0], e[1]), (ks, ss))

    def downpour_drawn_first(seed):
        """The batches of all commits drawn in one vectorised pass, then the loop."""
        return downpour_given(seed, draw_rows(seed))

    def downpour_given(seed, rows):
        """The loop alone, reading batches drawn before the call."""
        del seed
        return downpour_loop(lambda e: e[1], (ks, rows))

    forms = {"batches drawn in the loop": downpour_by_hand,
             "batches drawn first": downpour_drawn_first,
             "batches given (draws not timed)": downpour_given}
    hand_one = {name: floor_jit(f) for name, f in forms.items()}
    hand_many = {name: floor_jit(jax.vmap(f)) for name, f in forms.items()}
    rows_many = jax.jit(jax.vmap(draw_rows))

    # the hand loop and the replay compute the same run: the same centre
    rows0 = rows_of(0)
    got = run([0]).final_params
    for want in (hand_one[name](jnp.uint32(0), *extra) for name, extra in
                 (("batches drawn in the loop", ()), ("batches drawn first", ()),
                  ("batches given (draws not timed)", (rows0,)))):
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(a[0], b, rtol=1e-4, atol=1e-6)

    step_cost = jax.jit(lambda p, r: jax.tree.map(lambda a, b: a - lr * b, p,
                                                  grad(p, x[r], y[r]))).lower(
        start, rows0[0]).compile().cost_analysis()
    step_cost = step_cost[0] if isinstance(step_cost, list) else step_cost
    flops = float(step_cost["flops"])  # one gradient evaluation and its SGD update

    load_before = os.getloadavg()
    peak = matmul_flops_per_second()
    table = [("plain jit SGD loop, 1 run", 1,
              best_of(lambda: jax.block_until_ready(plain(start, rows0)), args.repeats))]
    pairs = []
    for m in (1,) + counts:
        hand = hand_one if m == 1 else hand_many
        seeds_m = jnp.uint32(0) if m == 1 else jnp.arange(m, dtype=jnp.uint32)
        given = rows0 if m == 1 else rows_many(seeds_m)
        t_hand = {name: best_of(lambda f=f, s=seeds_m, extra=(given,) if "given" in name
                                else (): jax.block_until_ready(f(s, *extra)), args.repeats)
                  for name, f in hand.items()}
        t_replay = best_of(lambda m=m: run(list(range(m))), args.repeats)
        table += [(f"DOWNPOUR by hand, {name}, {m} seed(s)", m, t)
                  for name, t in t_hand.items()]
        table.append((f"asynclab replay, {m} seed(s)", m, t_replay))
        floor = min(t for name, t in t_hand.items() if "given" not in name)
        pairs.append((m, floor / t_replay, t_hand["batches given (draws not timed)"] / t_replay))
    peak_after = matmul_flops_per_second()
    load_after = os.getloadavg()
    device = jax.devices()[0]
    print(f"device {device.device_kind} x{jax.device_count()} (platform {device.platform}), "
          f"jax {jax.__version__}")
    print(f"MNIST-5k MLP 784-256-10, batch {batch}, DOWNPOUR n={n} λ=1, {commits} commits; "
          f"best of {args.repeats}")
    print(f"asynclab from {os.path.dirname(asynclab.__file__)}")  # the checkout, or a copy
    print(f"load average (1, 5, 15 min): before {_load(load_before)}, after "
          f"{_load(load_after)}; {os.cpu_count()} CPU(s)")
    rate_plain = commits / table[0][2]
    width = max(len(what) for what, _, _ in table) + 2
    print(f"{'what':<{width}}{'seconds':>10}{'grads/s':>12}{'vs plain':>10}{'GFLOP/s':>10}")
    for what, m, seconds in table:
        rate = m * commits / seconds
        print(f"{what:<{width}}{seconds:>10.3f}{rate:>12.0f}{rate / rate_plain:>10.2f}"
              f"{rate * flops / 1e9:>10.1f}")
    for m, ratio, given in pairs:
        print(f"replay / DOWNPOUR by hand (the faster form that draws its batches), {m} "
              f"seed(s): {ratio:.2f}x (target >= 0.7x); against the loop given its "
              f"batches: {given:.2f}x")
    print(f"one gradient step: {flops / 1e6:.1f} MFLOP (XLA's count); a 2048² float32 "
          f"matmul here: {peak / 1e9:.0f} GFLOP/s before, {peak_after / 1e9:.0f} after")

    # what the default recording costs: asynclab.run as a user calls it, against the same
    # run with one record at the end (target: at most 1.5x)
    call = dict(workers=n, commits=commits, learning_rate=lr, progress=False,
                problem_options={"model": "mlp:256", "batch_size": batch})
    t_default = best_of(lambda: asynclab.run("mnist", "downpour", **call), args.repeats)
    t_once = best_of(lambda: asynclab.run("mnist", "downpour", record_every=commits, **call),
                     args.repeats)
    records = asynclab.run("mnist", "downpour", **call).loss.shape[-1]
    print(f"asynclab.run('mnist', 'downpour', workers={n}, commits={commits}): default "
          f"records ({records}) {t_default:.3f} s, one record at the end {t_once:.3f} s: "
          f"{t_default / t_once:.2f}x (target <= 1.5x)")


def _load(values):
    return ", ".join(f"{v:.1f}" for v in values)


if __name__ == "__main__":
    with recorded("nets"):
        main()
