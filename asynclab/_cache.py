"""JAX's persistent compilation cache for the command line, the figures and the notebooks.

A compiled replay is written to a per-user folder and read back by the next process that
compiles the same program, so a second ``asynclab figures --quick`` (or a notebook run
again) does not compile what the first one compiled. Library users decide for
themselves: ``import asynclab`` alone changes no JAX setting.

The folder is ``$ASYNCLAB_COMPILE_CACHE`` if set (an empty value turns the cache off),
else ``$XDG_CACHE_HOME/asynclab/jax`` (``~/.cache/asynclab/jax``). A cache folder that
JAX was already given (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``) is left as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable that moves the cache (a folder) or turns it off (empty).
ENVIRONMENT = "ASYNCLAB_COMPILE_CACHE"

#: Programs that compile faster than this are not written (JAX's own default is 1 s).
MIN_COMPILE_SECONDS = 0.2


def cache_folder() -> Path | None:
    """The folder the cache lives in, or None when it is turned off."""
    if ENVIRONMENT in os.environ:
        value = os.environ[ENVIRONMENT].strip()
        return Path(value).expanduser() if value else None
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "asynclab" / "jax"


def enable_compile_cache() -> Path | None:
    """Turn JAX's persistent compilation cache on in :func:`cache_folder`; returns the
    folder in use (JAX's own when it was given one), or None when off or unwritable."""
    import jax

    given = jax.config.jax_compilation_cache_dir
    if given:
        return Path(given)
    folder = cache_folder()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: run without the cache rather than fail
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return folder
