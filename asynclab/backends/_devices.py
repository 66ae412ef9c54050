"""Which devices a run uses: real ones, or simulated CPU devices.

On a machine with a GPU, JAX's default platform is the GPU, and
``--xla_force_host_platform_device_count`` multiplies CPU devices only: ``jax.devices()``
still returns the one GPU. Simulated devices therefore select the CPU platform
explicitly, before JAX starts its backends, and are then taken from
``jax.devices("cpu")``. Child processes get the same settings through their
environment, plus ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` so that several processes
sharing one GPU do not each reserve most of its memory.
"""

from __future__ import annotations

import os
import re

import jax

from .._errors import ConfigError

_COUNT_FLAG = re.compile(r"--xla_force_host_platform_device_count=\S*")


def _backends_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def simulate_cpu_devices(n: int) -> None:
    """Select the CPU platform with ``n`` simulated devices for this process.

    Must run before JAX starts its backends (the first device query or array); importing
    asynclab does not start them. If they already run on ``n`` or more CPU devices this
    does nothing.

    Raises:
      ConfigError: ``n`` is not a positive integer, or JAX already runs on other devices.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ConfigError(f"the number of simulated devices must be an integer >= 1, got {n!r}")
    n = int(n)
    if _backends_started():
        have = jax.devices()
        if have[0].platform == "cpu" and len(have) >= n:
            return
        raise ConfigError(
            f"{n} simulated CPU devices must be set up before JAX starts; it already runs on "
            f"{len(have)} {have[0].platform} device(s)")
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", n)
    os.environ.update(child_environment(n, os.environ))  # for processes this one starts


def child_environment(n: int, base=None) -> dict:
    """The environment of a child process that should see ``n`` simulated CPU devices.

    ``JAX_PLATFORMS=cpu``, the device count in ``XLA_FLAGS`` (replacing any other count)
    and ``XLA_PYTHON_CLIENT_PREALLOCATE=false``, on top of ``base`` (default: this
    process's environment).
    """
    env = dict(os.environ if base is None else base)
    flags = _COUNT_FLAG.sub("", env.get("XLA_FLAGS", "")).strip()
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={int(n)}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return env


def cpu_devices(n: int) -> list:
    """The first ``n`` CPU devices (simulated ones on a machine with an accelerator).

    Raises:
      ConfigError: fewer than ``n`` CPU devices exist, with how to simulate them.
    """
    have = jax.devices("cpu")
    if len(have) < n:
        raise ConfigError(
            f"{n} CPU devices needed but JAX sees {len(have)}; simulate them with "
            f"asynclab.backends.simulate_cpu_devices({n}) (or JAX_PLATFORMS=cpu and "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n}) before JAX starts")
    return have[:n]
