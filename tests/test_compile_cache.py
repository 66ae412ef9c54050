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


@pytest.mark.slow  # two command-line processes; the quick tier keeps the folders' test
def test_a_second_run_compiles_nothing_new(tmp_path):
    folder = tmp_path / "cache"
    env = _env(ASYNCLAB_COMPILE_CACHE=str(folder),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    first = _entries(folder)
    assert first, "the first run wrote no compiled program"
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    assert _entries(folder) == first  # every program was read back, none compiled anew


@pytest.mark.slow  # a second pair of fresh processes; the quick tier runs the first pair
def test_an_empty_setting_turns_the_cache_off(tmp_path):
    env = _env(ASYNCLAB_COMPILE_CACHE="", XDG_CACHE_HOME=str(tmp_path),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    assert not _entries(tmp_path)
    del env["ASYNCLAB_COMPILE_CACHE"]  # unset: the per-user folder under XDG_CACHE_HOME
    subprocess.run(RUN, env=env, check=True, capture_output=True, timeout=300)
    assert _entries(tmp_path / "asynclab" / "jax")


# ---------------------------------------------------------------- processes at once
# JAX writes a cache entry in place, without a lock: each process works in a folder of its
# own, started warm with hard links to the shared entries, and shares back only entries
# that are whole compressed streams (asynclab._cache.process_folder / merge_folder).


def _entry(folder, name, data=b"compiled " * 200):
    import zlib

    (folder / name).write_bytes(zlib.compress(data))


def _names(folder):
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def test_process_folders_start_warm_and_share_only_whole_entries(tmp_path):
    import zlib

    from asynclab._cache import merge_folder, process_folder

    shared = tmp_path / "shared"
    shared.mkdir()
    _entry(shared, "a-cache")
    one, two = process_folder(shared, "gw0"), process_folder(shared, "gw1")
    assert one != two and one.parent == two.parent == shared / ".processes"
    assert (one / "a-cache").samefile(shared / "a-cache")  # a link: warm, nothing copied
    _entry(one, "b-cache")
    torn = zlib.compress(os.urandom(100_000))
    (one / "c-cache").write_bytes(torn[: len(torn) // 2])  # a write another saw half done
    assert merge_folder(one, shared) == 1
    assert _names(shared) == ["a-cache", "b-cache"] and not one.exists()
    assert "b-cache" not in _names(two)  # a running process's folder is its own
    assert "b-cache" in _names(process_folder(shared, "gw2"))  # the next one starts warm


def test_processes_in_folders_of_their_own_read_each_others_programs(tmp_path):
    # a program compiled by one process is found by the next, in a folder of its own: the
    # cache key names no folder (asynclab._cache.PROCESS_ENVIRONMENT)
    from asynclab._cache import PROCESS_ENVIRONMENT, merge_folder, process_folder

    shared = tmp_path / "shared"
    shared.mkdir()
    program = ("import jax, jax.numpy as jnp; "
               "jax.jit(lambda x: jnp.sin(x) @ x.T)(jnp.ones((3, 3))).block_until_ready()")
    added = []
    for name in ("gw0", "gw1"):
        folder = process_folder(shared, name)
        env = _env(JAX_COMPILATION_CACHE_DIR=str(folder),
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", **PROCESS_ENVIRONMENT)
        subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=120)
        added.append(merge_folder(folder, shared))
    assert added[0] >= 1, "the first process wrote no compiled program"
    assert added[1] == 0  # the second read every program back


def test_a_folder_left_by_a_killed_process_is_removed(tmp_path):
    from asynclab._cache import process_folder

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    left = tmp_path / ".processes" / f"gw0-{ended.stdout.strip()}-abc"
    left.mkdir(parents=True)
    process_folder(tmp_path, "gw0")
    assert not left.exists()


def test_a_cache_folder_that_cannot_be_written_warns_once(tmp_path, monkeypatch):
    import warnings

    from asynclab import _cache

    monkeypatch.setattr(_cache, "_WARNED", set())
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    reason = _cache._unwritable(blocker / "jax")
    assert reason
    with pytest.warns(RuntimeWarning, match="cannot be written.*running without it"):
        _cache._warn_once(blocker / "jax", reason)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _cache._warn_once(blocker / "jax", reason)  # once: no second warning
    assert _cache._unwritable(tmp_path / "new" / "jax") is None  # made, and writable
