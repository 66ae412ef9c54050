#!/usr/bin/env python
"""asynclab beside a peer simulator on the peer's own workload: APPFL's virtual-time
asynchronous simulator (``appfl.vsim.AsyncSimDriver``, FedAsync).

    python benchmarks/peers.py                        # asynclab rows; the peer's if importable
    python benchmarks/peers.py --peer-python /path/to/venv/bin/python
    python benchmarks/peers.py --quick                # 20 updates, smoke check
    python benchmarks/peers.py --peer-python PY --seeds 1 --rounds 2   # the README's rows
    python benchmarks/peers.py --peer-python PY --seeds 8 --updates 50 --rounds 2 --no-by-hand

The workload (the peer's asynchronous MNIST example, its stock CNN): 8 clients, a
lognormal(0, 0.5) compute slowdown per client, 200 server updates, each update 10 local
Adam steps (lr 1e-3) at batch 64 on MNIST-shaped 28×28 images; the CNN is 5×5 valid
convolutions with 32 and 64 channels, 2×2 max pools, a dense layer of 512 and 10 logits
(582,026 parameters; in asynclab ``cnn:5x5-32-64:512:maxpool:valid``).

asynclab replays it with ``downpour`` (``local_steps=10``, ``inner="adam"``) on a cluster
of 8 workers whose compute times carry the same kind of lognormal slowdowns. The local
work per update is the same arithmetic (10 Adam steps of the same net on batches of 64
from the centre the worker pulled); the server step differs: FedAsync mixes
θ̃ ← θ̃ + α_t (θᵏ − θ̃), DOWNPOUR adds the worker's accumulated step, and asynclab's Adam
moments survive a pull where the peer makes a new Adam each round — none of which
changes the cost per local step (docs/peers.md has the full comparison of semantics).

The peer needs ``appfl`` and PyTorch (a CPU build), never dependencies of asynclab:
``pip install appfl torch`` in an environment of their own, then pass its interpreter
with ``--peer-python`` (or install them beside asynclab). Without them the peer's rows
are skipped and the script says so.

Columns: local steps per second, all seeds together (wall clock of the whole run,
start-up and, for the JAX rows, compilation included: what a user waits for); the same
for the calls after the first ("compiled"); runs per hour; and the ratios of the first
column and of the compiled one to the peer's row with as many seeds. ``--rounds R``
times each tool R more times after its first call, in turn (the peer, asynclab, plain
JAX, again), and counts the median: the machine's drift then falls on all of them
alike. Both tools use the machine's cores (PyTorch: ``--threads`` threads; XLA: its own
pool); for one core each, run the script under ``taskset -c 0`` with ``--threads 1``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from _results import recorded

CLIENTS = 8
UPDATES = 200
LOCAL_STEPS = 10
BATCH = 64
LEARNING_RATE = 1e-3
SLOWDOWN_SIGMA = 0.5
EXAMPLES = 60_000
MODEL = "cnn:5x5-32-64:512:maxpool:valid"

# ------------------------------------------------------------------------ the peer

_PEER_MODEL = '''
import torch.nn as nn


class CNN(nn.Module):
    """5x5 valid convolutions 32 and 64, ReLU, 2x2 max pools, dense 512, 10 logits."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(64 * 4 * 4, 512)
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc2(self.fc1(x.flatten(1)).relu())
'''

_PEER_DATA = '''
import torch
from torch.utils.data import TensorDataset


def synthetic_mnist(num_clients, client_id, examples, seed):
    """MNIST-shaped data: uniform pixels in [0, 1], labels 0-9, one shard per client."""
    g = torch.Generator().manual_seed(seed * 1000 + client_id)
    n = examples // num_clients
    x = torch.rand(n, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    return TensorDataset(x, y), TensorDataset(x[:256], y[:256])


def accuracy(y_true, y_pred):
    return float((y_pred.argmax(axis=1) == y_true).mean()) if y_pred.ndim > 1 else 0.0
'''


def _peer_configs(folder: str, seed: int, updates: int):
    from omegaconf import OmegaConf

    server = OmegaConf.create({
        "client_configs": {
            "train_configs": {
                "trainer": "VanillaTrainer", "mode": "step",
                "num_local_steps": LOCAL_STEPS, "optim": "Adam",
                "optim_args": {"lr": LEARNING_RATE}, "loss_fn": "CrossEntropyLoss",
                "metric_path": os.path.join(folder, "peer_data.py"),
                "metric_name": "accuracy", "do_validation": False,
                "do_pre_validation": False, "use_dp": False,
                "send_gradient": False, "train_batch_size": BATCH, "val_batch_size": BATCH,
                "train_data_shuffle": True, "val_data_shuffle": False,
                "optimize_memory": False,
            },
            "model_configs": {"model_path": os.path.join(folder, "peer_model.py"),
                              "model_name": "CNN"},
            "comm_configs": {"compressor_configs": {"enable_compression": False}},
        },
        "server_configs": {
            "num_clients": CLIENTS, "scheduler": "AsyncScheduler",
            "scheduler_kwargs": {"same_init_model": True, "optimize_memory": False},
            "aggregator": "FedAsyncAggregator",
            "aggregator_kwargs": {"client_weights_mode": "equal", "staleness_fn": "polynomial",
                                  "staleness_fn_kwargs": {"a": 0.5}, "alpha": 0.9,
                                  "optimize_memory": False},
            "device": "cpu", "num_global_epochs": updates, "optimize_memory": False,
            "logging_output_dirname": os.path.join(folder, "output"),
            "logging_output_filename": "result",
        },
    })
    clients = []
    for i in range(CLIENTS):
        clients.append(OmegaConf.create({
            "client_id": f"Client{i + 1}", "optimize_memory": False,
            "train_configs": {"device": "cpu", "logging_output_dirname":
                              os.path.join(folder, "output"),
                              "logging_output_filename": "result"},
            "data_configs": {"dataset_path": os.path.join(folder, "peer_data.py"),
                             "dataset_name": "synthetic_mnist",
                             "dataset_kwargs": {"num_clients": CLIENTS, "client_id": i,
                                                "examples": EXAMPLES, "seed": seed}},
        }))
    return server, clients


def _without_torchvision() -> None:
    """appfl imports ``piq`` (image-quality metrics for its data-readiness reports) when
    it starts; piq needs torchvision, and PyPI's torchvision wheels need PyPI's CUDA
    build of torch. With a CPU build of torch and no torchvision, appfl gets an empty
    ``piq`` module, which its simulator never calls."""
    import importlib.util
    import types

    if importlib.util.find_spec("torchvision") is None:
        sys.modules.setdefault("piq", types.ModuleType("piq"))


def _peer_once(seed: int, updates: int) -> float:
    """Wall seconds of one peer run (agents built, then the driver run)."""
    import logging
    import random

    _without_torchvision()

    from appfl.agent import ClientAgent, ServerAgent
    from appfl.vsim import AsyncSimDriver, ClientProfile

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for name, text in (("peer_model.py", _PEER_MODEL), ("peer_data.py", _PEER_DATA)):
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)
        server_config, client_configs = _peer_configs(folder, seed, updates)
        server = ServerAgent(server_agent_config=server_config)
        clients = [ClientAgent(client_agent_config=c) for c in client_configs]
        shared = server.get_client_configs()
        for client in clients:
            client.load_config(shared)
        rng = random.Random(seed)
        profiles = {c.get_id(): ClientProfile(compute_factor=rng.lognormvariate(
            0.0, SLOWDOWN_SIGMA)) for c in clients}
        logger = logging.getLogger("peer")
        logger.setLevel(logging.WARNING)
        from appfl.vsim import VsimLogger

        driver = AsyncSimDriver(server_agent=server, client_agents=clients,
                                profiles=profiles, max_in_flight=CLIENTS,
                                logger=VsimLogger(logger), seed=seed)
        driver.run()
        done = server.scheduler.get_num_global_epochs()
        if done != updates:
            raise RuntimeError(f"the peer ran {done} updates, not {updates}")
    return time.perf_counter() - start


def run_peer(seeds: int, updates: int, threads: int) -> dict:
    """The peer's seeds one after another: wall seconds of each."""
    import torch

    torch.set_num_threads(threads)
    return {"tool": "peer", "threads": threads, "torch": torch.__version__,
            "seconds": [_peer_once(seed, updates) for seed in range(seeds)]}


# ------------------------------------------------------------------------ asynclab


def _cluster():
    """The workload's cluster: lognormal(0, σ) slowdowns per client, scaled to mean 1 (a
    common factor moves no commit)."""
    from asynclab.cluster import Cluster, ComputeTime, heterogeneous

    return Cluster(CLIENTS, compute=ComputeTime("constant", mean=1.0),
                   time_scale=heterogeneous(CLIENTS, SLOWDOWN_SIGMA, 0))


def _asynclab_once(seeds: int, updates: int, runs_per_call: int | None = None) -> float:
    import numpy as np

    import asynclab

    cluster = _cluster()
    start = time.perf_counter()
    result = asynclab.run("mnist", "downpour", cluster=cluster, commits=updates,
                          seeds=list(range(seeds)), learning_rate=LEARNING_RATE,
                          local_steps=LOCAL_STEPS, inner="adam", record_every=updates,
                          progress=False, runs_per_call=runs_per_call,
                          problem_options={"model": MODEL,
                                                           "batch_size": BATCH})
    seconds = time.perf_counter() - start
    if result.loss.shape[0] != seeds or not np.all(np.isfinite(result.loss[:, -1])):
        raise RuntimeError("asynclab's runs did not finish with a finite loss")
    return seconds


# ------------------------------------------------------------------------ plain JAX


@functools.cache
def _local_step():
    """``(model, loss, adam, local)`` of the plain-JAX rows: the net, its loss on the
    first batch of the shipped MNIST, ``optax.adam`` and ``local((params, state), key)``,
    one Adam step on a batch of 64 drawn with ``jax.random.randint`` (a ``lax.scan``
    body)."""
    import jax
    import jax.numpy as jnp
    import optax

    from asynclab.problems._datasets import load_dataset
    from asynclab.problems._models import model_loss, parse_model

    data = load_dataset("mnist", seed=0)
    x, y = jnp.asarray(data.x_train), jnp.asarray(data.y_train)
    model = parse_model(MODEL, x.shape[1:], 10)
    grad = jax.grad(model_loss(model))
    adam = optax.adam(LEARNING_RATE)

    def local(carry, key):
        params, state = carry
        rows = jax.random.randint(key, (BATCH,), 0, x.shape[0])
        step, state = adam.update(grad(params, x[rows], y[rows]), state, params)
        return (optax.apply_updates(params, step), state), None

    def loss(params):
        return model_loss(model)(params, x[:BATCH], y[:BATCH])

    return model, loss, adam, local


@functools.cache
def _by_hand(seeds: int, updates: int):
    """The plain-JAX runs of :func:`_by_hand_once` as one call that returns each seed's
    final loss on a batch (built once, so that a second call is compiled)."""
    import jax
    import jax.numpy as jnp

    from asynclab.cluster import simulate_async

    model, loss, adam, local = _local_step()
    workers = jnp.asarray(simulate_async(_cluster(), commits=updates, rng=0).worker)

    def run(key):
        center = model.init(key)
        copies = jax.tree.map(lambda a: jnp.broadcast_to(a, (CLIENTS,) + a.shape), center)
        moments = jax.vmap(adam.init)(copies)

        def commit(carry, event):
            center, copies, moments = carry
            k, key = event
            pulled = jax.tree.map(lambda a: a[k], copies)
            mine = jax.tree.map(lambda a: a[k], moments)
            (params, mine), _ = jax.lax.scan(local, (pulled, mine),
                                             jax.random.split(key, LOCAL_STEPS))
            center = jax.tree.map(lambda c, p, q: c + (p - q), center, params, pulled)
            copies = jax.tree.map(lambda a, c: a.at[k].set(c), copies, center)
            moments = jax.tree.map(lambda a, m: a.at[k].set(m), moments, mine)
            return (center, copies, moments), None

        keys = jax.random.split(jax.random.fold_in(key, 1), updates)
        center = jax.lax.scan(commit, (center, copies, moments), (workers, keys))[0][0]
        return loss(center)

    keys = jax.random.split(jax.random.key(0), seeds)
    fn = jax.jit(jax.vmap(run)) if seeds > 1 else jax.jit(lambda k: run(k[0])[None])
    return lambda: fn(keys)


def _by_hand_once(seeds: int, updates: int) -> float:
    """The same local work in plain JAX without asynclab's engine: what JAX itself does
    with this net on this machine, the ceiling of asynclab's rows.

    A hand-written DOWNPOUR loop (``lax.scan`` over the updates, ``vmap`` over the seeds):
    the committing worker (the same order as asynclab's schedule) takes 10 Adam steps
    (``optax.adam``, its moments kept per worker) from the centre it pulled, on batches
    of 64 drawn with ``jax.random.randint`` from the shipped MNIST; the centre adds its
    step and the worker pulls. The net is asynclab's model of the same spec (its im2col
    convolution, the fastest JAX formulation in ``benchmarks/convolutions.py``). No
    server state, no records, no divergence guard, no schedule-driven batch draw. A
    first call includes compiling; the script's first plain-JAX call also loads the data
    (once per process, as asynclab's problem is built once per process).
    """
    import numpy as np

    start = time.perf_counter()
    loss = np.asarray(_by_hand(seeds, updates)())
    seconds = time.perf_counter() - start
    if loss.shape != (seeds,) or not np.all(np.isfinite(loss)):
        raise RuntimeError("the plain JAX loop did not end with a finite loss")
    return seconds


@functools.cache
def _steps_alone(steps: int):
    """The local steps of one seed alone, as one call (built once, so that a second call
    is compiled): ``steps`` Adam steps of the net in one ``lax.scan`` on batches of 64
    drawn with ``jax.random.randint``, with no workers, no server, no pulls or commits."""
    import jax

    model, loss, adam, local = _local_step()

    def run(key):
        params = model.init(key)
        params = jax.lax.scan(local, (params, adam.init(params)),
                              jax.random.split(key, steps))[0][0]
        return loss(params)

    fn = jax.jit(run)
    return lambda: fn(jax.random.key(0))


def _steps_alone_once(steps: int) -> float:
    """Wall seconds of one call of :func:`_steps_alone`: what the net's arithmetic alone
    runs at in JAX on this machine, the ceiling of every JAX row; beside it, what the
    asynchronous structure (pulls, commits, moments per worker) and asynclab's engine
    cost."""
    import numpy as np

    start = time.perf_counter()
    loss = float(np.asarray(_steps_alone(steps)()))
    seconds = time.perf_counter() - start
    if not np.isfinite(loss):
        raise RuntimeError("the local steps alone did not end with a finite loss")
    return seconds


# ------------------------------------------------------------------------ the table


def _peer_rows(args, seeds: int) -> dict | None:
    """The peer's ``seeds`` runs one after another, in this interpreter or in
    ``--peer-python``'s; None if it is missing."""
    if args.peer_python:
        command = [args.peer_python, os.path.abspath(__file__), "--peer-only",
                   "--updates", str(args.updates), "--threads", str(args.threads),
                   "--seeds", str(seeds)]
        out = subprocess.run(command, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"the peer's run failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    try:
        import appfl  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return None
    return run_peer(seeds, args.updates, args.threads)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 updates, 1 and 2 seeds")
    parser.add_argument("--updates", type=int, default=None, help="server updates per run")
    parser.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")],
                        default=None, help="asynclab's seed counts, e.g. 1,8 (the peer "
                        "runs the largest one after another)")
    parser.add_argument("--threads", type=int, default=2, help="PyTorch's threads")
    parser.add_argument("--runs-per-call", type=int, default=None,
                        help="asynclab's seeds per compiled call (default: all at once); "
                        "many seeds of this CNN need ~106 MB each at once")
    parser.add_argument("--peer-python", default=None, metavar="PYTHON",
                        help="an interpreter with appfl and torch, for the peer's rows")
    parser.add_argument("--no-by-hand", dest="by_hand", action="store_false",
                        help="skip the plain-JAX rows (the same local work written by hand "
                        "without asynclab: the ceiling of asynclab's rows; and for one "
                        "seed the local steps alone, without asynchrony)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="timed calls of each tool after its first, taken in turn "
                        "(the peer, asynclab, plain JAX, again), of which the median counts")
    parser.add_argument("--peer-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    args.updates = args.updates or (20 if args.quick else UPDATES)
    args.seeds = args.seeds or ([1, 2] if args.quick else [1, 8])
    if args.peer_only:
        print(json.dumps(run_peer(args.seeds[-1], args.updates, args.threads)))
        return
    steps = args.updates * LOCAL_STEPS
    print(f"# {datetime.datetime.now():%Y-%m-%d %H:%M}, {platform.machine()}, "
          f"{os.cpu_count()} cores; {CLIENTS} clients, {args.updates} updates x "
          f"{LOCAL_STEPS} local Adam steps, batch {BATCH}, {MODEL}")
    print(f"{'':62s} {'steps/s':>8s} {'compiled':>8s} {'runs/hour':>9s} {'vs peer':>7s} "
          f"{'compiled':>8s}", flush=True)
    import jax

    def row(name, seeds, first, warm=(), base=None):
        """A row from wall seconds: the first call's and the compiled calls' (median)."""
        rate = steps * seeds / first
        ratios = f"{rate / base:7.2f}" if base else f"{'':>7s}"
        warm_rate = steps * seeds / statistics.median(warm) if warm else None
        ratios += f" {warm_rate / base:8.2f}" if base and warm else f" {'':>8s}"
        warm_text = f"{warm_rate:8.1f}" if warm else f"{'-':>8s}"
        print(f"{name:62s} {rate:8.1f} {warm_text} {3600 * rate / steps:9.1f} {ratios}",
              flush=True)
        return rate

    said_skip = False
    for seeds in args.seeds:
        calls = args.runs_per_call if args.runs_per_call and args.runs_per_call < seeds else None
        tools = {"asynclab": lambda n=seeds, c=calls: _asynclab_once(n, args.updates, c)}
        if args.by_hand:
            tools["hand"] = lambda n=seeds: _by_hand_once(n, args.updates)
            if seeds == 1:
                tools["alone"] = lambda: _steps_alone_once(steps)
        first = {name: call() for name, call in tools.items()}  # compilation included
        peer, warm = [], {name: [] for name in tools}
        for _ in range(args.rounds):  # the tools in turn, so that the machine's drift
            runs = _peer_rows(args, seeds)  # falls on all of them alike
            if runs is not None:
                peer.append(runs)
            for name, call in tools.items():
                warm[name].append(call())
        base = None
        if peer:
            label = f"peer (appfl, torch {peer[0]['torch']}, {peer[0]['threads']} threads)"
            one = statistics.median(sum(runs["seconds"]) for runs in peer)
            kind = "1 seed" if seeds == 1 else f"{seeds} seeds one after another"
            base = row(f"{label}, {kind}", seeds, one)
        elif not said_skip:
            said_skip = True
            print("# the peer's rows skipped: appfl and torch are not importable here; "
                  "pass --peer-python (see this script's docstring)")
        at_once = f"{calls} at a time" if calls else "at once"
        row(f"asynclab (jax {jax.__version__}), {seeds} seed(s) {at_once}", seeds,
            first["asynclab"], warm["asynclab"], base)
        if args.by_hand:
            row(f"plain JAX by hand (no asynclab), {seeds} seed(s) at once", seeds,
                first["hand"], warm["hand"], base)
        if "alone" in tools:
            row("plain JAX, the local steps alone (no asynchrony), 1 seed", 1,
                first["alone"], warm["alone"], base)
    print("steps/s: local steps applied per second of wall clock, all seeds together "
          "(start-up and compilation included); compiled: the median of the calls after "
          f"the first ({args.rounds} round(s), the tools in turn, the peer's median among "
          "them); vs peer: the first column, then the compiled one, against the peer's row")


if __name__ == "__main__":
    # the peer's own process prints JSON for its parent: not a table
    with recorded("peers", skip="--peer-only" in sys.argv):
        main()
