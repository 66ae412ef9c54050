"""Child processes of the tests: simulated devices are CPU devices on every machine.

Each child gets ``JAX_PLATFORMS=cpu`` and its own CPU device count before JAX starts, and
does not preallocate GPU memory, so the suite behaves the same where a GPU is installed.
"""

from __future__ import annotations

import subprocess
import sys

from asynclab.backends import child_environment


def environment(devices: int = 1) -> dict:
    env = child_environment(devices)
    env["TQDM_DISABLE"] = "1"
    return env


def start(*args, devices: int = 1) -> subprocess.Popen:
    """``python ARGS...`` in the background, with ``devices`` simulated CPU devices."""
    return subprocess.Popen([sys.executable, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment(devices))


def run(*args, devices: int = 1, timeout: float = 240) -> subprocess.CompletedProcess:
    """``python ARGS...`` to completion, with ``devices`` simulated CPU devices."""
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=environment(devices))


def example_environment(root) -> dict:
    """What a documented example runs with (README.md and docs/): this checkout first on
    ``PYTHONPATH``, 4 simulated CPU devices (the device examples need them), no display."""
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    env["JAX_PLATFORMS"] = "cpu"
    env["MPLBACKEND"] = "Agg"
    return env
