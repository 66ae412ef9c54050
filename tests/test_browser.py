"""The explorer notebook served as a web page by Voilà, driven by headless Chromium.

Loads the page, drags the learning-rate slider and picks another surface from the
problem control, checks that the picture changed each time without an error, and
saves a screenshot (to the test's tmp folder; also to docs/explorer.png when
``ASYNCLAB_UPDATE_SCREENSHOT=1``, which is how the picture in docs/notebooks.md is made). Every wait
is bounded and the server is stopped in a ``finally``.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# a kernel, like the notebooks' tests: never two starting at once (see test_notebooks.py)
pytestmark = pytest.mark.xdist_group("kernels")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "notebooks/01_explorer.ipynb"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
INSTALL = ("install Debian's chromium (as root: apt-get update && apt-get install -y "
           "chromium; .ci/run does it) and the dev extra (pip install '.[dev]')")
SERVER_START_S = 90  # Voilà answers once it listens; the notebook runs on page load
PAGE_S = 240  # executing the notebook (first compilation) on a loaded 2-core machine
REDRAW_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"voila exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.5)
    pytest.fail(f"voila did not listen on port {port} within {SERVER_START_S} s:\n"
                f"{log.read_text()[-3000:]}")


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=20)


def _drag_slider(page, css_class: str, dx: float) -> None:
    handle = page.locator(f".{css_class} .noUi-handle").first
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / 2, y, steps=5)
    page.mouse.move(x + dx, y, steps=5)
    page.mouse.up()


def _missing(what: str) -> None:
    """Skip, saying what is missing, unless ``ASYNCLAB_REQUIRE_BROWSER=1`` (``.ci/run`` sets
    it, and so does the README's command for the whole suite): then fail."""
    message = f"{what} is missing: {INSTALL}"
    if os.environ.get("ASYNCLAB_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message + " (ASYNCLAB_REQUIRE_BROWSER=1 makes this a failure)")


@pytest.mark.slow  # a Voilà server, a kernel and a browser
def test_explorer_page_in_headless_chromium(tmp_path):
    if not Path(CHROMIUM).exists():
        _missing(CHROMIUM)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright")
    try:
        import voila  # noqa: F401
    except ImportError:
        _missing("voila")

    port = _free_port()
    log = tmp_path / "voila.log"
    # Voilà's templates are data files beside the Python that installed it: in a virtual
    # environment that sees the system's packages that is the base installation
    jupyter_path = [os.environ.get("JUPYTER_PATH"),
                    os.path.join(sys.base_prefix, "share", "jupyter")]
    env = {**os.environ, "ASYNCLAB_NOTEBOOK_QUICK": "1", "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                       os.environ.get("PYTHONPATH")])),
           "JUPYTER_PATH": os.pathsep.join(filter(None, jupyter_path))}
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "voila", NOTEBOOK, "--no-browser", f"--port={port}",
             "--Voila.ip=127.0.0.1", "--show_tracebacks=True"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_listening(port, server, log)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS,
                                                 headless=True, timeout=60_000)
            try:
                page = browser.new_page(viewport={"width": 1366, "height": 768})
                page.set_default_timeout(PAGE_S * 1000)
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                picture = page.wait_for_selector("img.asynclab-picture[src]",
                                                 timeout=PAGE_S * 1000)
                page.wait_for_selector(".asynclab-learning-rate .noUi-handle")
                assert "Traceback" not in page.content()
                before_src = picture.get_attribute("src")
                before_png = picture.screenshot()

                _drag_slider(page, "asynclab-learning-rate", -25)  # a smaller η
                page.wait_for_function(
                    "old => document.querySelector('img.asynclab-picture').src !== old",
                    arg=before_src, timeout=REDRAW_S * 1000)
                page.wait_for_timeout(500)  # let the new image paint
                after_png = page.locator("img.asynclab-picture").screenshot()
                assert after_png != before_png, "the picture did not change"
                assert "Traceback" not in page.content()

                # another surface from the problem control: a new picture, no error
                before_src = page.locator("img.asynclab-picture").get_attribute("src")
                page.locator(".asynclab-problem select").select_option("himmelblau")
                page.wait_for_function(
                    "old => document.querySelector('img.asynclab-picture').src !== old",
                    arg=before_src, timeout=REDRAW_S * 1000)
                content = page.content()
                assert "Traceback" not in content and "explorer failed" not in content
                assert "cannot run" not in content

                # a control and the picture on one 1366 × 768 screen: the picture's top
                # and the problem control are both inside the viewport
                page.locator(".asynclab-problem").first.scroll_into_view_if_needed()
                control = page.locator(".asynclab-problem").first.bounding_box()
                image = page.locator("img.asynclab-picture").bounding_box()
                assert 0 <= control["y"] < 768 and 0 <= image["y"] < 768 - 200, (control,
                                                                                  image)
                assert image["x"] > control["x"] + control["width"] - 1  # beside, not below
                shot = tmp_path / "explorer.png"
                page.screenshot(path=str(shot))
                assert shot.stat().st_size > 10_000
                if os.environ.get("ASYNCLAB_UPDATE_SCREENSHOT") == "1":
                    page.screenshot(path=str(ROOT / "docs" / "explorer.png"))
            finally:
                browser.close()
    finally:
        _stop(server)
