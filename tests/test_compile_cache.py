"""The command line keeps JAX's compiled programs in a per-user folder (asynclab._cache)."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.xdist_group("cli_cache")

RUN = [sys.executable, "-m", "asynclab.cli", "run", "--problem", "quadratic", "--rule",
       "downpour", "--workers", "3", "--commits", "50", "--json"]


def _env(**more):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    return {**env, **more}


def _entries(folder):
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


def test_a_second_run_compiles_nothing_new(tmp_path):
    folder = tmp_path / "cache"
    env = _env(ASYNCLAB_COMPILE_CACHE=str(folder),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    first = _entries(folder)
    assert first, "the first run wrote no compiled program"
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    assert _entries(folder) == first  # every program was read back, none compiled anew


def test_an_empty_setting_turns_the_cache_off(tmp_path):
    env = _env(ASYNCLAB_COMPILE_CACHE="", XDG_CACHE_HOME=str(tmp_path),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    assert not _entries(tmp_path)
    del env["ASYNCLAB_COMPILE_CACHE"]  # unset: the per-user folder under XDG_CACHE_HOME
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    assert _entries(tmp_path / "asynclab" / "jax")
