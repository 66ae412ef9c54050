"""The environment, translated once at start-up (``asynclab._environment``): what JAX,
matplotlib and the terminal are told, made into something each of them takes, or one line
saying why not. Each class of environment is tried here; the variables JAX refuses
(``XLA_FLAGS=--bogus``, ``JAX_PLATFORMS=nosuchplatform``) are rows of
``tests/test_bad_inputs.py``."""

from __future__ import annotations

import concurrent.futures
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import asynclab
from asynclab import _environment
from asynclab.cli import main

ROOT = Path(asynclab.__file__).resolve().parents[1]


@pytest.mark.parametrize(("raw", "clean"), [
    ("CPU", "cpu"), ("cpu", "cpu"), (" Cpu , GPU ", "cpu,gpu"), ("cpu,", "cpu"), ("", ""),
    ("  ", ""),
])
def test_jax_platforms_in_any_case_or_empty(raw, clean):
    assert _environment.platforms(raw) == clean


def _ascii_stream():
    buffer = io.BytesIO()
    return buffer, io.TextIOWrapper(buffer, encoding="ascii", newline="\n")


def test_an_ascii_stream_writes_names_for_the_symbols():
    buffer, stream = _ascii_stream()
    _environment.ascii_streams([stream])
    stream.write("λ = 1, σ² = 10, τ ≥ n − 1 …\n")
    stream.flush()
    assert buffer.getvalue() == b"lambda = 1, sigma^2 = 10, tau >= n - 1 ...\n"
    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    _environment.ascii_streams([utf8])
    assert utf8.errors == "strict"  # a stream that can write them is left alone


def _symbols(text: str) -> set[str]:
    return {c for c in text if ord(c) > 127}


def test_every_symbol_the_command_line_prints_has_an_ascii_name():
    # what the commands print comes from the CLI's own text, the rules' catalogue (its
    # descriptions, `asynclab rules`) and the names' tables
    sources = [*(ROOT / "asynclab" / "cli").glob("*.py"), ROOT / "asynclab" / "_names.py",
               *(ROOT / "asynclab" / "rules").rglob("*.py")]
    found = set().union(*(_symbols(p.read_text(encoding="utf-8")) for p in sources))
    assert {c for c in found if _environment.ascii_name(c) == "?"} == set()
    assert _environment.ascii_name("₁") == "1" and _environment.ascii_name("é") == "e"


@pytest.mark.parametrize("argv", [
    ["rules"], ["run", "--help"],
    pytest.param(["run", "--commits", "20", "--noise", "1"], marks=pytest.mark.slow)])
def test_the_command_line_on_an_ascii_terminal(argv, monkeypatch):
    buffer, stream = _ascii_stream()
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        code = main(argv)
    except SystemExit as stop:  # --help
        code = stop.code
    stream.flush()
    text = buffer.getvalue().decode("ascii")
    assert code == 0
    assert "?" not in text.replace("(?)", "")  # every symbol had a name
    assert re.search(r"lambda|sigma\^2|eta", text)


def _child(args: list[str], **env) -> subprocess.CompletedProcess:
    merged = {**os.environ, **env}
    for name, value in env.items():
        if value is None:
            del merged[name]
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=120, env=merged)


_CHILDREN = {
    "JAX_PLATFORMS=CPU": (["-c", "import asynclab, jax; print(jax.devices()[0].platform)"],
                          {"JAX_PLATFORMS": "CPU"}),
    "MPLBACKEND=bogus": (["-c", "import asynclab.plot, matplotlib; "
                          "print(matplotlib.get_backend())"], {"MPLBACKEND": "bogus"}),
    "stdout on a full disk": (["-m", "asynclab.cli", "rules"], {}),
}


@pytest.fixture(scope="module")
def children():
    """Every child of :data:`_CHILDREN`, two at a time (stdout of the last on /dev/full)."""

    def run(name):
        args, env = _CHILDREN[name]
        if name == "stdout on a full disk":
            with open("/dev/full", "w") as full:
                return subprocess.run([sys.executable, *args], stdout=full,
                                      stderr=subprocess.PIPE, text=True, timeout=120)
        return _child(args, **env)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run, name) for name in _CHILDREN}
        return {name: future.result() for name, future in futures.items()}


def test_jax_platforms_in_any_case_start_jax(children):
    done = children["JAX_PLATFORMS=CPU"]
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "cpu"


def test_an_unknown_mplbackend_falls_back_to_agg_with_one_warning(children):
    done = children["MPLBACKEND=bogus"]
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().lower() == "agg"
    assert done.stderr.count("MPLBACKEND='bogus' is not a matplotlib backend") == 1
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_output_to_a_full_disk_is_one_line(children):
    done = children["stdout on a full disk"]
    assert done.returncode == 2
    assert done.stderr == ("asynclab: error: cannot write the output (No space left on "
                           "device)\n")


def test_a_good_xla_flag_beside_a_platform_this_machine_lacks_passes(monkeypatch):
    # an unknown flag is tried in a child on the CPU alone: the missing platform is
    # JAX_PLATFORMS's to name (a row of tests/test_bad_inputs.py), not the flag's
    monkeypatch.setenv("JAX_PLATFORMS", "nosuchplatform")
    for flags, refused in (("--xla_backend_optimization_level=2", False), ("--bogus", True)):
        monkeypatch.setenv("XLA_FLAGS", flags)
        if refused:
            with pytest.raises(asynclab.ConfigError, match="--bogus"):
                _environment._try_in_a_child(flags, flags.split())
        else:
            _environment._try_in_a_child(flags, flags.split())  # no ConfigError


@pytest.mark.slow
def test_the_command_line_runs_in_every_environment_it_translates(tmp_path):
    """Whole runs in fresh processes: an ASCII-only terminal, JAX_PLATFORMS=CPU, an unknown
    MPLBACKEND drawing a plot, a compilation cache folder that cannot be written."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    plot = tmp_path / "run.png"
    rows = {
        "ascii": (["run", "--commits", "20", "--noise", "1"],
                  {"PYTHONIOENCODING": "ascii", "LC_ALL": "C", "PYTHONUTF8": "0"}),
        "platforms": (["run", "--commits", "20", "--json"], {"JAX_PLATFORMS": "CPU"}),
        "backend": (["run", "--commits", "20", "--plot", str(plot)], {"MPLBACKEND": "bogus"}),
        "cache": (["run", "--commits", "20"], {"ASYNCLAB_COMPILE_CACHE": str(blocker / "jax"),
                                               "JAX_COMPILATION_CACHE_DIR": None}),
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        done = {name: pool.submit(_child, ["-m", "asynclab.cli", *args], **env)
                for name, (args, env) in rows.items()}
        done = {name: future.result() for name, future in done.items()}
    for name, proc in done.items():
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, name
    assert "sigma^2" in done["ascii"].stdout and done["ascii"].stdout.isascii()
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert done["backend"].stderr.count("asynclab: warning: MPLBACKEND='bogus'") == 1
    warning = [line for line in done["cache"].stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "cannot be written" in warning[0], done["cache"].stderr
