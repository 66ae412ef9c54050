"""README's examples run as written: its ```python block (a run, prepared and saved), and
its command line (16 seeds of one schedule on a quadratic).

Each block runs verbatim in a fresh interpreter in an empty folder, in the environment of
the docs' examples (the checkout first on ``PYTHONPATH``, 4 simulated CPU devices). The
commands moved out of the README run on their docs pages (tests/test_docs.py).
"""

from __future__ import annotations

import concurrent.futures
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from children import example_environment

# module fixtures that run processes: the whole file on one xdist worker
# the README examples (its python block, the quadratic command) run in the slow tier
pytestmark = [pytest.mark.xdist_group("readme"), pytest.mark.slow]

README = Path(__file__).resolve().parents[1] / "README.md"
ROOT = README.parent


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", README.read_text(), re.M | re.S)


def command(prefix: str) -> list[str]:
    """The README's bash command line starting with ``prefix`` (continuations joined)."""
    text = README.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(prefix)]
    assert len(lines) == 1, lines
    return shlex.split(lines[0].split("#")[0])


def _env() -> dict:
    return example_environment(ROOT)


def _python(code: str, folder: Path) -> subprocess.CompletedProcess:
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=_env(),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Every python block, two at a time, each in its own empty folder."""
    tmp = tmp_path_factory.mktemp("readme")
    blocks = python_blocks()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(_python, code, tmp / f"block{i}") for i, code in
                   enumerate(blocks)]
        return [(code, tmp / f"block{i}", f.result()) for i, (code, f) in
                enumerate(zip(blocks, futures, strict=True))]


def test_readme_has_python_examples():
    assert len(python_blocks()) >= 1
    assert "../shared" not in README.read_text().replace("../shared/ALGORITHMS.md", "")


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_python_block_runs_as_written(index, ran):
    code, folder, proc = ran[index]
    assert proc.returncode == 0, f"{code}\n---\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]


def test_the_python_example_saves_a_result_it_can_load(ran):
    import asynclab

    saved = [folder / "runs" / "beale.npz" for _, folder, _ in ran
             if (folder / "runs" / "beale.npz").exists()]
    assert len(saved) == 1
    result = asynclab.Result.load(saved[0])
    assert result.n_seeds == 32 and result.config["rule"] == "downpour"


def test_the_quadratic_command_shows_seeds_that_differ(tmp_path):
    argv = command("asynclab run --problem quadratic")
    assert "--seeds" in argv and "--noise" in argv
    proc = subprocess.run([sys.executable, "-m", "asynclab.cli", *argv[1:]], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import asynclab

    result = asynclab.Result.load(tmp_path / "q.npz")
    assert result.n_seeds == 16 and (tmp_path / "q.png").stat().st_size > 0
    # one shared schedule, sixteen noise draws: the final losses are not all the same
    assert result.time.shape[0] == 1
    assert np.unique(np.round(result.final_loss, 6)).size == 16
