"""Free-running asynchronous mode: one thread per device, a parameter server on the host.

Each worker thread runs its jitted local work on its own device as fast as the device
allows, then takes the server lock for one atomic exchange (commit and pull). The order
in which threads win the lock is the real schedule: it is recorded as a ``Trace``
(who exchanged when, at which pulled clock), so replaying it with
``asynclab.engine.replay`` reproduces the run's numbers exactly — a worker's local work
depends only on its own state since its last pull.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

import jax
import numpy as np

from .. import _validate
from .._errors import ConfigError
from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, Trace, simulate_async
from ..engine._core import (
    check_count,
    check_init,
    check_rule,
    compiler_options,
    initial_state,
    row,
    seed_keys,
)
from ..problems import Problem, stochastic_gradient
from ..rules import Rule


class ThreadsRun(NamedTuple):
    """What a free-running run produced.

    Attributes:
      trace: the real schedule (times in wall-clock seconds since the start).
      final_params: the final centre.
      center_path: the centre after every commit, ``(T, d)`` (problems with d <= 10),
        else None.
      local_time: ``(T,)`` wall seconds the committing worker spent in its local work.
      wall_time: total wall seconds.
    """

    trace: Trace
    final_params: np.ndarray
    center_path: np.ndarray | None
    local_time: np.ndarray
    wall_time: float

    def staleness_histogram(self) -> np.ndarray:
        return np.bincount(self.trace.staleness, minlength=1)


def run_threads(
    rule: Rule,
    problem: Problem,
    *,
    commits: int,
    workers: int | None = None,
    seed: int = 0,
    noise: float = 0.0,
    init: str = "start",
    devices=None,
    progress: bool | None = None,
) -> ThreadsRun:
    """Run an asynchronous rule with one free-running thread per device.

    Args:
      rule: an asynchronous rule (synchronous rules need the pmap backend).
      problem: the problem.
      commits: number of commits to apply, then every thread stops.
      workers: number of workers (default: all devices); one device each.
      seed: the seed; keys and initial state come from ``asynclab.engine.seed_keys`` and
        ``initial_state``, as in the simulator's replay.
      noise: gradient-noise variance σ².
      init: "start" or "random".
      devices: the devices to use (default ``jax.devices()``).
      progress: show a progress bar over the commits (None: only on a terminal or in a
        notebook).

    Returns:
      A :class:`ThreadsRun` whose ``trace`` replays to the same numbers.
    """
    check_rule(rule, problem, "the threads backend")
    if rule.synchronous:
        raise ConfigError(f"{rule.name} is synchronous; the threads backend runs asynchronous "
                          "rules (use --backend pmap for synchronous ones)")
    commits = check_count("commits", commits)
    seed = _validate.seed(seed)
    check_init(rule, init)
    if rule.group_size != 1:
        raise ConfigError(f"{rule.name} with groups needs the simulator (--backend sim)")
    devices = list(jax.devices() if devices is None else devices)
    if workers is not None and (isinstance(workers, bool) or not isinstance(
            workers, int | np.integer) or workers < 1):
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
    n = len(devices) if workers is None else int(workers)
    if n > len(devices):
        raise ConfigError(
            f"{n} workers need {n} devices but only {len(devices)} are available; on a CPU "
            f"simulate devices with XLA_FLAGS=--xla_force_host_platform_device_count={n} "
            "(set before JAX is imported)"
        )
    devices = devices[:n]
    gradient = stochastic_gradient(problem, noise)
    init_key, worker_keys = seed_keys(seed, n)
    server, stacked = initial_state(rule, problem, init_key, n, init)
    host = devices[0]
    server = jax.device_put(server, host)
    states = [jax.device_put(row(stacked, k), devices[k]) for k in range(n)]
    keys = [jax.device_put(worker_keys[k], devices[k]) for k in range(n)]
    options = compiler_options(devices[0].platform)
    local = jax.jit(lambda w, key, k: rule.local(w, gradient, key, k), compiler_options=options)
    exchange = jax.jit(rule.exchange, compiler_options=options)
    # compile on every device before the clock starts
    worked = [jax.block_until_ready(local(states[k], keys[k], k)) for k in range(n)]
    jax.block_until_ready(exchange(server, jax.device_put(worked[0], host)))

    lock = threading.Lock()
    record: list[tuple[float, int, int, float]] = []
    centers: list[np.ndarray] = []
    keep_path = problem.flat and problem.dim <= 10
    shared = {"server": server, "clock": 0, "stop": False}
    errors: list[BaseException] = []
    start = time.perf_counter()
    # every worker begins together: on a fast machine the first thread started could
    # otherwise make all the commits before the last one has started
    ready = threading.Barrier(n)

    def work(k: int) -> None:
        state = states[k]
        try:
            ready.wait()
            while True:
                began = time.perf_counter()
                state = jax.block_until_ready(local(state, keys[k], k))
                spent = time.perf_counter() - began
                with lock:
                    if shared["clock"] >= commits or shared["stop"]:
                        return
                    pulled = int(state.pulled_clock)
                    new_server, new_state, _ = exchange(shared["server"],
                                                        jax.device_put(state, host))
                    jax.block_until_ready(new_server)
                    shared["server"] = new_server
                    shared["clock"] += 1
                    record.append((time.perf_counter() - start, k, pulled, spent))
                    bar.update(1)
                    if keep_path:
                        centers.append(np.asarray(new_server.center))
                state = jax.device_put(new_state, devices[k])
        except threading.BrokenBarrierError:  # stopped before every worker had begun
            return
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(n)]
    bar = progress_bar(total=commits, progress=progress, desc=f"{rule.name} on {n} thread(s)",
                       unit="commit", leave=False)
    with bar:
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():  # a timed join lets Ctrl-C through to the main thread
                    t.join(0.1)
        finally:  # on Ctrl-C, the workers stop at their next exchange
            shared["stop"] = True
            ready.abort()
            for t in threads:
                t.join(10.0)
    if errors:
        raise errors[0]
    wall = time.perf_counter() - start
    times, who, pulled, spent = (np.array(c) for c in zip(*record, strict=True))
    clock = np.arange(len(record))
    trace = Trace(time=times.astype(np.float64), worker=who.astype(np.int32),
                  pulled_clock=pulled.astype(np.int32),
                  staleness=(clock - pulled).astype(np.int32), n_workers=n,
                  local_steps=rule.schedule_steps)
    return ThreadsRun(
        trace=trace,
        final_params=jax.tree.map(np.asarray, shared["server"].center),
        center_path=np.stack(centers) if keep_path else None,
        local_time=spent.astype(np.float64),
        wall_time=wall,
    )


def predicted_staleness(run: ThreadsRun, *, commits: int | None = None, seed: int = 0):
    """The simulator's staleness prediction for the compute times a real run measured.

    Each worker's mean local-work time becomes its ``time_scale``; a step's time is
    lognormal with the coefficient of variation measured over all local work
    (σ² = log(1 + CV²) for the underlying normal). The prediction simulates
    ``commits`` commits (default: max(20,000, the run's)) so its histogram is smooth.

    Returns:
      ``(trace, cluster)``: a simulated trace and the cluster model fitted to the run.
    """
    seed = _validate.seed(seed)
    n = run.trace.n_workers
    counts = np.bincount(run.trace.worker, minlength=n)
    if not counts.all():
        idle = np.flatnonzero(counts == 0).tolist()
        raise ConfigError(f"run: worker(s) {idle} never committed, so their compute times "
                          "were not measured; give the run more commits")
    means = np.array([run.local_time[run.trace.worker == k].mean() for k in range(n)])
    cv = float(np.std(run.local_time) / np.mean(run.local_time))
    sigma = max(float(np.sqrt(np.log1p(cv * cv))), 1e-3)
    compute = ComputeTime("lognormal", mean=float(means.mean()), shape=sigma)
    cluster = Cluster(n, compute, time_scale=tuple(means / means.mean()))
    trace = simulate_async(cluster, local_steps=run.trace.local_steps,
                           commits=commits or max(20_000, run.trace.n_events), rng=seed)
    return trace, cluster
