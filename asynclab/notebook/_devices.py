"""Notebook 05: the device executor next to the simulator's replay, for the same trace."""

from __future__ import annotations

import time

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .._errors import ConfigError  # noqa: E402
from ..backends import run_pmap  # noqa: E402
from ..backends._devices import _backends_started  # noqa: E402
from ..engine import replay  # noqa: E402
from ..plot._common import finish  # noqa: E402


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


def plot_executors(data: dict, path=None):
    """The central loss of both executors against commits, and their wall times."""
    fig, (ax, wx) = plt.subplots(1, 2, figsize=(12, 4.2),
                                 gridspec_kw={"width_ratios": [1.4, 1]})
    device, replayed = data["device"], data["replay"]
    ax.plot(replayed.record_events, replayed.loss[0], "-", lw=3, color="tab:blue", alpha=0.5,
            label="simulator replay")
    ax.plot(device.record_events, device.loss[0], "--", lw=1.2, color="k",
            label="device executor")
    ax.set_yscale("log")
    ax.set_xlabel("commits")
    ax.set_ylabel("central loss")
    ax.set_title(f"same trace, same seed: max |difference| = {data['max_difference']:.2e}",
                 fontsize=10)
    ax.legend(fontsize=9)
    names = ["device executor", "replay"]
    first = [data["wall"]["device"][0], data["wall"]["replay"][0]]
    second = [data["wall"]["device"][1], data["wall"]["replay"][1]]
    x = np.arange(2)
    wx.bar(x - 0.2, first, 0.4, color="tab:orange", label="first call (compiles)")
    wx.bar(x + 0.2, second, 0.4, color="tab:green", label="second call")
    wx.set_xticks(x, names)
    wx.set_ylabel("wall time (s)")
    wx.set_title(f"{data['segments']} device calls on {data['platform']} devices", fontsize=10)
    wx.legend(fontsize=9)
    return finish(fig, path)
