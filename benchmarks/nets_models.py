#!/usr/bin/env python
"""Plain JAX beside Equinox and Flax for the lab's small nets: compile time and step speed.

    python benchmarks/nets_models.py           # full size (a few minutes on 2 cores)
    python benchmarks/nets_models.py --quick   # smoke check

Equinox and Flax are not dependencies of asynclab; install them to compare
(``pip install equinox flax``); a library that is missing is reported and skipped.

Every candidate builds the same two networks with the same shapes:

- ``mlp``: 784-256-10, ReLU;
- ``cnn``: 28×28×1 images, [3×3 conv, ReLU, 2×2 average pool] with 8 then 16 channels,
  then a dense layer to 10 logits (asynclab's ``cnn()``).

and is timed in the setting of the replay engine: a ``lax.scan`` of STEPS plain-SGD
steps on softmax cross-entropy (batch 32) for WORKERS workers at once (``vmap`` over a
leading worker axis of the parameters and of the batches), all in one ``jax.jit``.
Columns:

- ``arrays``: whether every leaf of the params pytree is a ``jax.Array`` (what rules need
  to average, scale and subtract with ``jax.tree.map``). For Equinox the module is split
  with ``eqx.partition(model, eqx.is_array)`` and the static part closed over; for Flax
  NNX with ``nnx.split``; Flax Linen's params are a dict already.
- ``import s``: time to import the library in a fresh interpreter (best of 3).
- ``compile s``: ``jit(...).lower(...).compile()`` of the scanned step (tracing included).
- ``step µs``: wall time per SGD step of all workers: the best of REPEATS calls divided
  by the steps per call. The candidates' calls alternate (one call of each, then the
  next round), so a change in machine load affects them alike.
- ``ratio``: step time relative to plain JAX on the same network.

The row ``plain conv`` is asynclab's CNN with ``lax.conv_general_dilated`` instead of its
im2col matrix product: the same framework, the library-style convolution.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from _results import recorded

from asynclab.problems._models import cnn, cross_entropy, mlp

BATCH = 32
LEARNING_RATE = 0.01


def _sgd_scan(apply, steps: int):
    """jit of: for each worker, ``steps`` SGD steps on its batch (vmapped over workers)."""

    def loss(params, x, y):
        return cross_entropy(apply(params, x), y)

    def one_worker(params, x, y):
        def step(p, _):
            g = jax.grad(loss)(p, x, y)
            return jax.tree.map(lambda a, b: a - LEARNING_RATE * b, p, g), None

        return jax.lax.scan(step, params, None, length=steps)[0]

    return jax.jit(jax.vmap(one_worker))


# ------------------------------------------------------------------------- candidates


def plain(kind):
    model = mlp(784, (256,), 10) if kind == "mlp" else cnn((28, 28, 1), (8, 16), 10)
    return model.init, model.apply


def plain_lax_conv(kind):
    """asynclab's CNN with ``lax.conv_general_dilated`` in place of the im2col product."""
    if kind != "cnn":
        return None
    model = cnn((28, 28, 1), (8, 16), 10)

    def apply(params, x):
        z = x.reshape(x.shape[0], 28, 28, 1)
        for i in range(2):
            layer = params[f"conv{i}"]
            z = jax.lax.conv_general_dilated(z, layer["w"], (1, 1), "SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
            z = jax.nn.relu(z + layer["b"][None, None, None, :])
            n, h, w, c = z.shape
            z = z.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))
        return z.reshape(z.shape[0], -1) @ params["dense"]["w"] + params["dense"]["b"][None, :]

    return model.init, apply


def equinox(kind):
    import equinox as eqx

    class MLP(eqx.Module):
        hidden: eqx.nn.Linear
        out: eqx.nn.Linear

        def __init__(self, key):
            k1, k2 = jax.random.split(key)
            self.hidden = eqx.nn.Linear(784, 256, key=k1)
            self.out = eqx.nn.Linear(256, 10, key=k2)

        def __call__(self, x):  # one example
            return self.out(jax.nn.relu(self.hidden(x)))

    class CNN(eqx.Module):
        conv0: eqx.nn.Conv2d
        conv1: eqx.nn.Conv2d
        pool: eqx.nn.AvgPool2d
        dense: eqx.nn.Linear

        def __init__(self, key):
            k0, k1, k2 = jax.random.split(key, 3)
            self.conv0 = eqx.nn.Conv2d(1, 8, 3, padding=1, key=k0)
            self.conv1 = eqx.nn.Conv2d(8, 16, 3, padding=1, key=k1)
            self.pool = eqx.nn.AvgPool2d(2, 2)
            self.dense = eqx.nn.Linear(7 * 7 * 16, 10, key=k2)

        def __call__(self, x):  # one example, flat
            z = x.reshape(1, 28, 28)
            z = self.pool(jax.nn.relu(self.conv0(z)))
            z = self.pool(jax.nn.relu(self.conv1(z)))
            return self.dense(z.reshape(-1))

    cls = MLP if kind == "mlp" else CNN
    _, static = eqx.partition(cls(jax.random.key(0)), eqx.is_array)

    def init(key):
        return eqx.partition(cls(key), eqx.is_array)[0]

    def apply(params, x):
        return jax.vmap(eqx.combine(params, static))(x)

    return init, apply


def flax_linen(kind):
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(10)(nn.relu(nn.Dense(256)(x)))

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            z = x.reshape(x.shape[0], 28, 28, 1)
            for c in (8, 16):
                z = nn.avg_pool(nn.relu(nn.Conv(c, (3, 3), padding="SAME")(z)), (2, 2), (2, 2))
            return nn.Dense(10)(z.reshape(z.shape[0], -1))

    net = MLP() if kind == "mlp" else CNN()

    def init(key):
        return net.init(key, jnp.zeros((1, 784), jnp.float32))["params"]

    def apply(params, x):
        return net.apply({"params": params}, x)

    return init, apply


def flax_nnx(kind):
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.hidden = nnx.Linear(784, 256, rngs=rngs)
            self.out = nnx.Linear(256, 10, rngs=rngs)

        def __call__(self, x):
            return self.out(nnx.relu(self.hidden(x)))

    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.conv0 = nnx.Conv(1, 8, (3, 3), padding="SAME", rngs=rngs)
            self.conv1 = nnx.Conv(8, 16, (3, 3), padding="SAME", rngs=rngs)
            self.dense = nnx.Linear(7 * 7 * 16, 10, rngs=rngs)

        def __call__(self, x):
            z = x.reshape(x.shape[0], 28, 28, 1)
            z = nnx.avg_pool(nnx.relu(self.conv0(z)), (2, 2), (2, 2))
            z = nnx.avg_pool(nnx.relu(self.conv1(z)), (2, 2), (2, 2))
            return self.dense(z.reshape(z.shape[0], -1))

    cls = MLP if kind == "mlp" else CNN
    graph, _ = nnx.split(cls(nnx.Rngs(0)))

    def init(key):
        return nnx.split(cls(nnx.Rngs(params=key)))[1]

    def apply(params, x):
        return nnx.merge(graph, params)(x)

    return init, apply


CANDIDATES = {
    "plain JAX": (None, plain),
    "plain conv": (None, plain_lax_conv),
    "Equinox": ("equinox", equinox),
    "Flax Linen": ("flax", flax_linen),
    "Flax NNX": ("flax", flax_nnx),
}


def import_seconds(module: str | None, repeats: int = 3) -> float:
    if module is None:
        return 0.0
    best = np.inf
    for _ in range(repeats):
        code = f"import time, jax; t = time.perf_counter(); import {module}; " \
               "print(time.perf_counter() - t)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        best = min(best, float(out.stdout.strip()))
    return best


def prepare(build, kind, workers, steps):
    """The compiled step of one candidate, its inputs, and what the table reports of it."""
    init, apply = build(kind)
    keys = jax.random.split(jax.random.key(0), workers)
    params = jax.vmap(init)(keys)
    arrays = all(isinstance(leaf, jax.Array) for leaf in jax.tree.leaves(params))
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((workers, BATCH, 784)), jnp.float32)
    y = jnp.asarray(rng.integers(0, 10, (workers, BATCH)), jnp.int32)
    run = _sgd_scan(apply, steps)
    start = time.perf_counter()
    compiled = run.lower(params, x, y).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(params, x, y))  # warm-up

    def call():
        start = time.perf_counter()
        jax.block_until_ready(compiled(params, x, y))
        return time.perf_counter() - start

    return arrays, compile_s, call


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    workers, mlp_steps, cnn_steps, repeats = (4, 10, 2, 2) if args.quick else (16, 20, 4, 5)

    print(f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, jax {jax.__version__}; "
          f"{workers} workers; SGD steps per call: mlp {mlp_steps}, cnn {cnn_steps}; "
          f"batch {BATCH}, float32; best of {repeats} calls, interleaved")
    versions = []
    for module in ("equinox", "flax"):
        if importlib.util.find_spec(module):
            versions.append(f"{module} {__import__(module).__version__}")
    print("versions: " + (", ".join(versions) or "no candidate library installed"))
    print("load average before (1, 5, 15 min): " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    print(f"{'network':8} {'library':11} {'arrays':6} {'import s':>8} {'compile s':>9} "
          f"{'step µs':>9} {'ratio':>6}")
    imports = {}
    for kind in ("mlp", "cnn"):
        rows = []
        for label, (module, build) in CANDIDATES.items():
            if module is not None and importlib.util.find_spec(module) is None:
                print(f"{kind:8} {label:11} (not installed: pip install {module})")
                continue
            if module not in imports:
                imports[module] = import_seconds(module, 1 if args.quick else 3)
            if build(kind) is None:
                continue
            steps = mlp_steps if kind == "mlp" else cnn_steps
            rows.append((label, module, steps, *prepare(build, kind, workers, steps)))
        # the candidates' repeats interleave, so a change in machine load hits them alike
        best = {label: np.inf for label, *_ in rows}
        for _ in range(repeats):
            for label, _module, steps, _arrays, _compile_s, call in rows:
                best[label] = min(best[label], call() / steps)
        reference = best[rows[0][0]]
        for label, module, _steps, arrays, compile_s, _call in rows:
            step_us = best[label] * 1e6
            print(f"{kind:8} {label:11} {str(arrays):6} {imports[module]:8.2f} "
                  f"{compile_s:9.2f} {step_us:9.0f} {step_us / 1e6 / reference:6.2f}")
    print("load average after (1, 5, 15 min): " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))


if __name__ == "__main__":
    with recorded("nets_models"):
        main()
