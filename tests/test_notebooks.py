"""Every notebook runs top to bottom in quick mode, and its text and .ipynb agree.

Each notebook executes in its own kernel (nbclient) with ``ASYNCLAB_NOTEBOOK_QUICK=1``,
which its parameters cell reads, within a bounded time. The device notebook sets up
simulated CPU devices in its first code cell, before JAX starts in that kernel.
"""

from __future__ import annotations

import os
import queue
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nbclient import NotebookClient
# jupytext, nbformat and nbclient are imported by the tests that use them: jupytext takes
# seconds to import (its schema validator), which every test process paid at collection

# Jupyter kernels started at the same moment by two xdist workers stall one of them for
# minutes (seen on the 2-core machine): every test that starts a kernel (this file and the
# browser test's Voilà server) runs in one worker, one after another
pytestmark = pytest.mark.xdist_group("kernels")

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
TEXTS = sorted(FOLDER.glob("*.py"))
TIMEOUT = 240  # seconds per cell: a hung kernel fails the test instead of the suite


def test_the_notebooks_are_there():
    names = {p.stem for p in NOTEBOOKS}
    assert {"02_staleness", "03_model_averaging_mc", "04_mnist_rules",
            "05_devices"} <= names


@pytest.mark.parametrize("path", TEXTS, ids=[p.stem for p in TEXTS])
def test_every_text_notebook_has_its_ipynb_in_sync(path):
    import jupytext

    pair = path.with_suffix(".ipynb")
    assert pair.exists(), f"{path.name} has no {pair.name}; run jupytext --sync {path.name}"
    text, notebook = jupytext.read(path), jupytext.read(pair)

    def cells(nb):
        return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ())))
                for c in nb.cells]

    assert cells(text) == cells(notebook), f"{path.name} and {pair.name} differ; run " \
                                           f"jupytext --sync {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs_and_has_a_quick_mode(path):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), \
        f"{path.name} holds outputs; clear them before committing"
    first = code[0]
    assert "parameters" in first.metadata.get("tags", ()), \
        f"{path.name}: the first code cell must be tagged 'parameters'"
    assert 'os.environ.get("ASYNCLAB_NOTEBOOK_QUICK") == "1"' in first.source


def _poll_replies_in_slices(client: NotebookClient, slice_seconds: float = 1.0) -> None:
    """Wait for each cell's execute reply in slices of a second, up to the cell's timeout.

    With both cores busy (the suite's other worker compiling beside the kernel), the
    client's asyncio poll of the shell socket can miss the wake-up of a reply that has
    arrived: notebook 02 then sat after a widget cell until the whole cell timeout had
    passed and found the reply waiting. A poll that ends every second looks again, so a
    missed wake-up costs at most a second.
    """
    channel = client.kc.shell_channel
    get = channel.get_msg

    async def get_msg(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = slice_seconds if deadline is None else min(
                slice_seconds, max(0.0, deadline - time.monotonic()))
            try:
                return await get(timeout=left)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


@pytest.mark.slow  # five kernels, each importing JAX and compiling its studies
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_in_quick_mode(path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("ASYNCLAB_NOTEBOOK_QUICK", "1")
    # the kernel imports this checkout's asynclab
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                            store_widget_state=True,
                            resources={"metadata": {"path": str(FOLDER)}})
    client.on_notebook_start = lambda notebook: _poll_replies_in_slices(client)
    client.execute()  # raises CellExecutionError, with the traceback, on an error
    errors = [o for c in nb.cells for o in c.get("outputs", ()) if o.output_type == "error"]
    assert not errors
    stderr = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", ())
                     if o.output_type == "stream" and o.get("name") == "stderr")
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    images = [o for c in nb.cells for o in c.get("outputs", ())
              if "image/png" in o.get("data", {})]
    widgets = [o for c in nb.cells for o in c.get("outputs", ())
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert images or widgets, f"{path.name} showed nothing"
    # every progress bar ends drawn full (a bar hidden on closing keeps its last text)
    state = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    texts = [w["state"].get("value", "") for w in state.values()
             if w.get("model_name") == "HTMLModel"]
    stale = [t for t in texts if re.search(r"\d+%$", t) and not t.endswith("100%")]
    assert not stale, f"{path.name}: progress bars left unfinished: {stale}"
