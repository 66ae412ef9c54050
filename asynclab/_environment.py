"""The environment variables that decide how JAX starts, checked before it starts.

JAX and XLA read ``JAX_PLATFORMS`` and ``XLA_FLAGS`` once, when the first computation
needs a backend; a bad value then ends in an ``AssertionError`` from deep inside JAX or
in XLA aborting the process with a long dump. The command line calls :func:`check` first,
so a bad value is one line naming the variable.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ._errors import ConfigError

#: XLA flags asynclab's own docs and tests set; any other flag is tried in a child
#: process first, because XLA aborts the process on a flag it does not know.
KNOWN_XLA_FLAGS = ("--xla_force_host_platform_device_count",)

_checked: set[tuple[str, str]] = set()


def check() -> None:
    """Refuse a ``XLA_FLAGS`` or ``JAX_PLATFORMS`` that JAX cannot start with.

    Raises:
      ConfigError: one line naming the variable and its value.
    """
    flags = os.environ.get("XLA_FLAGS", "").strip()
    platforms = os.environ.get("JAX_PLATFORMS", "").strip()
    if (flags, platforms) in _checked:
        return
    for token in flags.split():
        name, _, value = token.partition("=")
        if name == "--xla_force_host_platform_device_count" and not (
                value.isdigit() and int(value) >= 1):
            raise ConfigError(f"XLA_FLAGS={flags!r}: {name} takes a count >= 1, got "
                              f"{value!r}")
    unknown = [token for token in flags.split() if token.split("=")[0] not in KNOWN_XLA_FLAGS]
    if unknown:
        _try_in_a_child(flags, unknown)
    if platforms and set(platforms.lower().split(",")) - {"cpu", ""}:
        # cpu always starts, and starting it here would fix its device count before
        # --simulate-devices can set it; any other platform is tried now
        _try_platforms(platforms)
    _checked.add((flags, platforms))


def _try_in_a_child(flags: str, unknown: list[str]) -> None:
    probe = "import jax; jax.devices()"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return  # cannot tell; JAX will say what it says
    if done.returncode == 0:
        return
    lines = [line for line in done.stderr.splitlines() if "XLA_FLAGS" in line]
    reason = lines[0].split("]")[-1].strip() if lines else "XLA refuses to start with it"
    raise ConfigError(f"XLA_FLAGS={flags!r}: {reason}; remove {' '.join(unknown)} or unset "
                      "XLA_FLAGS")


def import_jax() -> None:
    """Import JAX, turning its refusal of an environment variable (``JAX_ENABLE_X64=maybe``
    is a ValueError naming it) into a ConfigError."""
    try:
        import jax  # noqa: F401
    except ValueError as error:
        raise ConfigError(f"JAX refuses the environment: {error}") from None


def _try_platforms(platforms: str) -> None:
    import jax

    try:
        jax.devices()
    except (RuntimeError, AssertionError, ValueError) as error:
        first = (str(error).strip().splitlines() or [""])[0] or "no backend of that name"
        raise ConfigError(f"JAX_PLATFORMS={platforms!r}: JAX cannot start that platform on "
                          f"this machine ({first or type(error).__name__}); unset it or name "
                          "one this machine has (cpu always works)") from None
