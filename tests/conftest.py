"""Strict settings for the whole suite, set before JAX is imported by any test.

Multi-device tests set their own device count in a subprocess (simulated
CPU devices can deadlock, which would abort the whole run), so nothing here asks for
several devices.

Two tiers. ``python -m pytest`` runs the quick tier; tests marked ``slow`` (study-sized:
every figure's quick build and layout, the notebooks, the device executor across every
rule, the README's examples) run with ``--slow`` too. The browser test skips where Debian's
Chromium is missing unless ``ASYNCLAB_REQUIRE_BROWSER=1``. ``.ci/run`` runs everything:
``ASYNCLAB_REQUIRE_BROWSER=1 python -m pytest --slow``.

JAX's persistent compilation cache is on for the session and every child process it
starts (through the environment). The shared folder is ``.pytest_cache/jax`` in the
checkout unless ``JAX_COMPILATION_CACHE_DIR`` is set; ``JAX_COMPILATION_CACHE_DIR=``
(empty) turns it off. JAX writes an entry in place, without a lock, so each test process
(each xdist worker, and its children) works in a folder of its own, started with a hard
link to every entry of the shared folder, and at the end links the entries it added,
checked whole, back into it (``asynclab._cache.process_folder`` / ``merge_folder``): no
process reads an entry another is still writing, and a second run starts warm.
"""

import os
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TQDM_DISABLE", "1")
# processes sharing one GPU (this one and the CLI runs it starts) must not each reserve
# most of its memory
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# one shared compilation cache for this process and the ~50 Python processes the tests
# start, each process working in its own folder (see above); programs that compile in a
# tenth of a second are not worth a disk entry. ASYNCLAB_TEST_CACHE carries the shared
# folder from pytest's main process to its workers.
os.environ.setdefault("ASYNCLAB_TEST_CACHE", os.environ.get(
    "JAX_COMPILATION_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".pytest_cache"
                                     / "jax")))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")
_SHARED_CACHE = os.environ["ASYNCLAB_TEST_CACHE"]
_PROCESS_CACHE = None
if _SHARED_CACHE:
    from asynclab._cache import PROCESS_ENVIRONMENT, process_folder  # noqa: E402 (no JAX)

    for _name, _value in PROCESS_ENVIRONMENT.items():  # keys that name no folder
        os.environ.setdefault(_name, _value)
    _PROCESS_CACHE = process_folder(Path(_SHARED_CACHE),
                                    os.environ.get("PYTEST_XDIST_WORKER", "main"))
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_PROCESS_CACHE)
else:
    os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
    # ... and the CLI's and notebooks' own cache (asynclab._cache) stays off too
    os.environ.setdefault("ASYNCLAB_COMPILE_CACHE", "")

import jax  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="also run the study-sized tests marked slow (as .ci/run does)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: study-sized; runs with --slow (.ci/run does)")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--slow"):
        slow = [item for item in items if item.get_closest_marker("slow")]
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def pytest_sessionfinish(session):
    """This process's new compiled programs, checked whole, join the shared folder."""
    if _PROCESS_CACHE is not None:
        from asynclab._cache import merge_folder

        merge_folder(_PROCESS_CACHE, Path(_SHARED_CACHE))


def pytest_terminal_summary(terminalreporter, config):
    # (with xdist the workers collect, so the line cannot count them)
    if not config.getoption("--slow"):
        terminalreporter.write_line(
            "the slow tier (every figure's quick build and layout, the notebooks, the device "
            "executor across every rule, the README's and docs' examples, the browser) was "
            "not run: `python -m pytest --slow` runs it")
