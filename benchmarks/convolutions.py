#!/usr/bin/env python
"""Convolution formulations on this machine, in the replay's setting.

    python benchmarks/convolutions.py            # kernels 3 and 5, 1 and 8 seeds
    python benchmarks/convolutions.py --quick    # smoke check

Every formulation trains the same net, ``cnn:KxK-32-64:512:maxpool`` on 28×28×1 images
(valid padding for k = 5, as the classic federated MNIST CNN; same padding for k = 3),
batch 64, with a ``lax.scan`` of STEPS plain-SGD steps ``vmap``-ed over SEEDS seeds with
their own parameters — the shape of the replay's local work. Only the convolution
differs:

- ``im2col concat`` (the lab's ``asynclab.problems._models._conv``): the k² shifted
  copies stacked on the channel axis, one matrix product;
- ``xla conv``: ``lax.conv_general_dilated`` (NHWC, HWIO); under ``vmap`` with a kernel
  per seed XLA makes it a grouped convolution;
- ``xla patches``: ``lax.conv_general_dilated_patches``, then one matrix product;
- ``kernel rows``: the k column shifts stacked, one product per kernel row, summed.

Columns: local steps per second per seed (best of REPEATS calls; the candidates' calls
alternate, so load changes touch them alike), and the ratio to the lab's formulation.
Every formulation's parameters after the steps are checked against the lab's first
(to float rounding).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
from _results import recorded

from asynclab.problems import _models
from asynclab.problems._models import PRECISION, cnn, cross_entropy

BATCH = 64
LEARNING_RATE = 0.01


def xla_conv(z, w, padding="same"):
    return jax.lax.conv_general_dilated(z, w, (1, 1), padding.upper(),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        precision=PRECISION)


def xla_patches(z, w, padding="same"):
    k, depth = w.shape[0], z.shape[-1]
    patches = jax.lax.conv_general_dilated_patches(
        z, (k, k), (1, 1), padding.upper(), dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision=PRECISION)
    # the patches' features are ordered (input channel, row, column)
    kernel = jnp.transpose(w, (2, 0, 1, 3)).reshape(depth * k * k, -1)
    return jnp.matmul(patches, kernel, precision=PRECISION)


def kernel_rows(z, w, padding="same"):
    k = w.shape[0]
    if padding == "same":
        before = (k - 1) // 2
        z = jnp.pad(z, ((0, 0), (before, k - 1 - before), (before, k - 1 - before), (0, 0)))
    _, height, width, depth = z.shape
    out_h, out_w = height - k + 1, width - k + 1
    columns = jnp.concatenate([z[:, :, j:j + out_w, :] for j in range(k)], axis=-1)
    out = 0
    for i in range(k):
        out = out + jnp.matmul(columns[:, i:i + out_h], w[i].reshape(k * depth, -1),
                               precision=PRECISION)
    return out


FORMULATIONS = {"im2col concat": _models._conv, "xla conv": xla_conv,
                "xla patches": xla_patches, "kernel rows": kernel_rows}


def _program(model, steps):
    def loss(params, x, y):
        return cross_entropy(model.apply(params, x), y)

    def one_seed(params, xs, ys):
        def step(p, xy):
            g = jax.grad(loss)(p, *xy)
            return jax.tree.map(lambda a, b: a - LEARNING_RATE * b, p, g), None

        return jax.lax.scan(step, params, (xs, ys))[0]

    return jax.jit(jax.vmap(one_seed))


def measure(kernel: int, seeds: int, steps: int, repeats: int) -> list[tuple]:
    padding = "valid" if kernel >= 5 else "same"
    keys = jax.random.split(jax.random.key(0), 3)
    xs = jax.random.uniform(keys[0], (seeds, steps, BATCH, 28, 28, 1))
    ys = jax.random.randint(keys[1], (seeds, steps, BATCH), 0, 10)
    programs, outputs = {}, {}
    for name, conv in FORMULATIONS.items():
        _models._conv = conv  # the model looks its convolution up when traced
        try:
            model = cnn((28, 28, 1), (32, 64), 10, kernel=kernel, padding=padding, pool="max",
                        hidden=(512,))
            params = jax.vmap(model.init)(jax.random.split(keys[2], seeds))
            programs[name] = _program(model, steps)
            outputs[name] = jax.block_until_ready(programs[name](params, xs, ys))
        finally:
            _models._conv = FORMULATIONS["im2col concat"]
    reference = outputs["im2col concat"]
    for name, out in outputs.items():
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(reference), strict=True):
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4, err_msg=name)
    best = dict.fromkeys(programs, float("inf"))
    for _ in range(repeats):
        for name, program in programs.items():
            start = time.perf_counter()
            jax.block_until_ready(program(params, xs, ys))
            best[name] = min(best[name], time.perf_counter() - start)
    rate = {name: steps / seconds for name, seconds in best.items()}
    base = rate["im2col concat"]
    return [(kernel, padding, seeds, name, r, r / base) for name, r in rate.items()]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke check)")
    args = parser.parse_args(argv)
    steps, repeats = (2, 1) if args.quick else (5, 2)
    seed_counts = (1, 2) if args.quick else (1, 8)
    print(f"# {datetime.datetime.now():%Y-%m-%d %H:%M}, {platform.machine()}, "
          f"jax {jax.__version__}, {jax.devices()[0].platform}, batch {BATCH}, "
          f"{steps} SGD steps per call, best of {repeats}")
    print(f"{'kernel':>6s} {'padding':>7s} {'seeds':>5s}  {'formulation':14s} "
          f"{'steps/s/seed':>12s} {'ratio':>6s}")
    for kernel in (3, 5):
        for seeds in seed_counts:
            for k, padding, s, name, r, ratio in measure(kernel, seeds, steps, repeats):
                print(f"{k:>4d}x{k:<1d} {padding:>7s} {s:>5d}  {name:14s} {r:12.1f} "
                      f"{ratio:6.2f}", flush=True)


if __name__ == "__main__":
    with recorded("convolutions"):
        main()
