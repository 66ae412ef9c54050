"""Notebook 05: the device executor next to the simulator's replay, for the same trace."""

from __future__ import annotations

import time

import jax
import numpy as np

from .._errors import ConfigError
from ..backends import run_pmap
from ..backends._devices import _backends_started
from ..engine import replay


def notebook_devices(n: int) -> list:
    """``n`` devices for the device executor: real accelerators when JAX's default
    platform has ``n`` of them, else ``n`` simulated CPU devices.

    Call it before anything starts JAX (the first array or device query): the count of
    CPU devices can only be set then. Unlike :func:`asynclab.backends.simulate_cpu_devices`
    it does not hide an accelerator, so the replay can still use it.

    Raises:
      ConfigError: ``n`` is not a positive integer, or JAX already started with fewer
        than ``n`` devices of any kind.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"the number of devices must be an integer >= 1, got {n!r}")
    if not _backends_started():
        jax.config.update("jax_num_cpu_devices", n)
    real = jax.devices()
    if real[0].platform != "cpu" and len(real) >= n:
        return real[:n]
    cpu = jax.devices("cpu")
    if len(cpu) < n:
        raise ConfigError(
            f"{n} devices needed but JAX started with {len(real)} {real[0].platform} and "
            f"{len(cpu)} CPU device(s); restart the kernel and call notebook_devices({n}) "
            "before anything else uses JAX")
    return cpu[:n]


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def compare_executors(rule, problem, trace, devices, *, seed: int = 0, noise: float = 0.0,
                      record_every: int = 1) -> dict:
    """Run ``trace`` with ``rule`` on the devices (one worker per device) and through the
    simulator's replay, twice each (the first call compiles).

    Returns:
      A dict: ``device`` and ``replay`` (the two :class:`~asynclab.engine.Result`),
      ``max_difference`` (largest absolute difference of the final parameters and of the
      recorded losses), ``wall`` (seconds: ``{"device": (first, second), "replay": (first,
      second)}``), ``segments`` (device calls the trace was cut into), ``platform``.
    """
    if trace.n_workers != len(devices):
        raise ConfigError(f"devices: the trace has {trace.n_workers} workers, one per "
                          f"device, but {len(devices)} devices were given")
    wall = {"device": [], "replay": []}
    for _ in range(2):
        device, seconds = _timed(lambda: run_pmap(
            rule, problem, trace, seed=seed, noise=noise, devices=devices,
            record_every=record_every, progress=False))
        wall["device"].append(seconds)
        replayed, seconds = _timed(lambda: replay(
            rule, problem, trace, seeds=seed, noise=noise, record_every=record_every,
            progress=False))
        wall["replay"].append(seconds)
    got, want = device.result, replayed
    differences = [np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max()
                   for a, b in zip(jax.tree.leaves(got.final_params),
                                   jax.tree.leaves(want.final_params), strict=True)]
    # a NaN where the other is finite is a difference (inf), not a value to skip
    both_nan = np.isnan(got.loss) & np.isnan(want.loss)
    loss_gap = np.where(both_nan, 0.0, np.abs(got.loss - want.loss))
    differences.append(float(np.max(np.nan_to_num(loss_gap, nan=np.inf))))
    return {
        "device": got,
        "replay": want,
        "max_difference": float(max(differences)),
        "wall": {k: tuple(v) for k, v in wall.items()},
        "segments": device.segments,
        "platform": devices[0].platform,
    }
