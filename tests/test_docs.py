"""The docs' examples run as written: every code block of docs/*.md that is a program.

What runs (the convention the pages follow):

- every fenced ```python block, verbatim, in a fresh interpreter;
- in every ```bash, ```console and ```sh block, each command line (a ``$ `` prompt
  dropped, backslash continuations joined, ``# comments`` dropped) that starts with
  ``asynclab `` or ``python ``: ``asynclab`` as ``python -m asynclab.cli``, ``python`` as
  this interpreter. Other lines (``voila ...``) are not run.

The blocks of one page run in the order they appear, each in a fresh interpreter, all in
one empty folder of that page: a later block can read what an earlier one wrote, as a
reader following the page would. The environment is the README test's: the checkout on
``PYTHONPATH``, ``JAX_PLATFORMS=cpu``, ``MPLBACKEND=Agg`` and 4 simulated CPU devices.

A python block preceded by ``<!-- continues -->`` continues the python block before it, as
in one Python session (a page that says its blocks run in one session): the two run as one
program. A block that must not run is preceded by an HTML comment, invisible on the
rendered page, that says why::

    <!-- norun: writes into the checkout's asynclab/data -->
    ```console

Keep it for commands that need another machine, an accelerator or hours, or that are not
programs (a plan's pseudo-code); every exclusion must give its reason.

Pages whose blocks take long together run in the slow tier (``SLOW``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from children import example_environment

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHELLS = ("bash", "console", "sh")
# pages whose blocks together take more than ~5 s on the 2-core machine: the slow tier
SLOW = {
    "studies.md": "a study of 2 rules x 2 clusters x 4 learning rates x 8 seeds drawn as a "
                  "grid and as curves (14 s measured here quiet, 22 s with the 2 cores "
                  "shared)",
    "design.md": "20,000-commit simulations of a free and a busy server, and a run with "
                 "failures (7 s measured with the 2 cores shared)",
    "experiment.md": "an Equinox MLP on scikit-learn's data, a rule of one's own checked, "
                     "four rules studied over four seeds and the figure drawn (about 2 "
                     "minutes, most of it compiling)",
    "index.md": "the demo, a 16-worker run from the command line and the same from Python "
                "(32 s, measured here)",
    "nets.md": "the mnist command line (95 s) and three digits runs (22 s), measured here",
    "logs.md": "a log fitted, inspected and replayed from Python and the command line "
               "(runs of 32 workers for 50,000 commits among them), and timelines drawn and "
               "exported",
    "peers.md": "the peer's workload replayed for 20 commits with a 582 k-parameter CNN "
                "(about 30 s, most of it compiling)",
    "own.md": "a loss, a model on arrays, an Equinox and a Flax model, each run in a "
              "fresh interpreter (53 s on the loaded 2-core machine, most of it compiling)",
    "python.md": "a 32-seed run, the two stages, two digits runs compared and drawn, a "
                 "3 x 3 x 32 sweep (89 s measured with the 2 cores shared, load average "
                 "about 10; the digits block 46 s of it)",
    "cli.md": "the command line's runs, a sweep and a rule of one's own, each a fresh "
              "interpreter (57 s measured with the 2 cores shared)",
    "devices.md": "the device executor and threads on 4 simulated devices, from Python "
                  "and the command line (39 s measured with the 2 cores shared)",
    "figures.md": "a quick figure built and drawn again from its data (34 s measured "
                  "with the 2 cores shared, load average about 7)",
    "rules.md": "every rule's example, semi-synchronous rounds, asynchronous DiLoCo, "
                "who moved the centre from Python and the command line, and a rule of "
                "one's own declared, checked and run (53 s measured here with the 2 cores "
                "shared, load average 7; the new rule's block 14 s of it)",
}

_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
_NORUN = re.compile(r"<!--\s*norun:\s*(\S[^\n]*?)\s*-->\s*$")
_CONTINUES = re.compile(r"<!--\s*continues\s*-->\s*$")


class Block(NamedTuple):
    page: str
    line: int           # the opening fence's line, 1-based
    language: str       # the info string's first word
    code: str
    norun: str | None   # the reason it does not run, or None
    continues: bool = False  # a python block that continues the python block before it


def parse(name: str, text: str) -> list[Block]:
    """Every fenced block of the page ``name`` whose Markdown is ``text``, in order."""
    found = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        norun = _NORUN.search(before)
        found.append(Block(name, text.count("\n", 0, match.start()) + 1,
                           (match.group(1).split() or [""])[0], match.group(2),
                           norun.group(1) if norun else None,
                           bool(_CONTINUES.search(before))))
    return found


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    return parse(page.name, page.read_text())


def commands(block: Block) -> list[list[str]]:
    """The command lines of a shell block that are run (see the module's docstring)."""
    found = []
    for line in block.code.replace("\\\n", " ").splitlines():
        line = line.strip()
        line = line[2:] if line.startswith("$ ") else line
        if line.startswith(("asynclab ", "python ")):
            found.append(shlex.split(line, comments=True))
    return found


def runnable(found: list[Block]) -> list[Block]:
    """The blocks that run: python blocks and shell blocks with a command, not excluded."""
    return [b for b in found if b.norun is None
            and (b.language == "python" or (b.language in SHELLS and commands(b)))]


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def _env() -> dict:
    return example_environment(ROOT)


def _argv(command: list[str]) -> list[str]:
    if command[0] == "asynclab":
        return [sys.executable, "-m", "asynclab.cli", *command[1:]]
    return [sys.executable, *command[1:]]


def _run(block: Block, folder: Path) -> list[tuple[str, subprocess.CompletedProcess]]:
    """Runs one block in ``folder``; ``(what ran, its process)`` per program."""
    if block.language == "python":
        programs = [(block.code, [sys.executable, "-c", block.code])]
    else:
        programs = [(shlex.join(c), _argv(c)) for c in commands(block)]
    return [(shown, subprocess.run(argv, cwd=folder, env=_env(), capture_output=True,
                                   text=True, timeout=600))
            for shown, argv in programs]


def _check(block: Block, ran: list[tuple[str, subprocess.CompletedProcess]]) -> None:
    for shown, proc in ran:
        where = f"{block.page}:{block.line} ({block.language})\n{shown}\n---\n"
        assert proc.returncode == 0, where + proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, where + proc.stderr[-3000:]
        assert "Warning" not in proc.stderr, where + proc.stderr[-3000:]


def _page_param(page: Path):
    marks = [pytest.mark.slow] if page.name in SLOW else []
    return pytest.param(page, id=page.name, marks=marks)


def test_the_docs_have_examples_and_every_exclusion_says_why():
    pages = _pages()
    assert {"design.md", "logs.md", "nets.md", "rules.md"} <= {p.name for p in pages}
    assert sum(len(runnable(blocks(p))) for p in pages) >= 8
    assert set(SLOW) <= {p.name for p in pages}
    for page in pages:
        text = page.read_text()
        # a norun comment must sit right before a fence, or it excludes nothing
        comments = len(re.findall(r"^<!--\s*norun:", text, re.M))
        assert comments == sum(b.norun is not None for b in blocks(page)), page
        for block in blocks(page):
            if block.norun is not None:
                assert len(block.norun) > 10, block


def test_the_site_has_a_home_page_that_stands_alone():
    # the site's root is docs/index.md (MkDocs serves it as /), first in the navigation
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    assert re.match(r"\s*- [^:]+: index\.md\n", nav), nav[:80]
    home = (DOCS / "index.md").read_text()
    assert home.startswith("# asynclab\n")
    for section in ("## Install", "## Two commands", "## Where to look"):
        assert f"\n{section}\n" in home, section
    # it says what to type, and every link stays inside the site and resolves
    shells = [b for b in runnable(blocks(DOCS / "index.md")) if b.language in SHELLS]
    assert [c[:2] for b in shells for c in commands(b)] == [["asynclab", "demo"],
                                                           ["asynclab", "run"]]
    links = re.findall(r"\]\(([^)#\s]+)", home)
    assert links and all(not link.startswith(("/", "..", "http")) for link in links), links
    assert all((DOCS / link).is_file() for link in links), links


def test_the_readme_is_short_and_says_what_ci_runs():
    """The README is a front page (at most 250 lines) whose test command is the one
    .ci/run runs; neither it nor a docs page carries a dated measurement (a date outside
    the name of a benchmarks/results file)."""
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 250
    ci = (ROOT / ".ci" / "run").read_text()
    runs = [line.strip() for line in ci.splitlines()
            if line.strip().startswith("pip install") and "pytest" in line]
    assert runs, "no test command in .ci/run"
    assert runs[0] in readme, runs[0]
    assert 'pip install ".[dev]" && python -m pytest -q' in readme
    dated = re.compile(r"(?<![\w/-])20\d\d-\d\d-\d\d(?![\w-]*\.(?:md|txt))")
    for page in [ROOT / "README.md", *_pages()]:
        found = dated.findall(page.read_text())
        assert not found, (page.name, found)


def test_the_block_reader():
    page = (
        "text\n\n```python\nprint(1)\n```\n\n<!-- norun: needs a GPU for hours -->\n"
        "```bash\nasynclab run --problem mnist \\\n    --seeds 0:4  # all\n```\n\n"
        "```console\n$ python x.py --out y\nvoila z.ipynb\n```\n\n```\nasynclab no\n```\n")
    found = parse("page.md", page)
    assert [(b.line, b.language, b.norun) for b in found] == [
        (3, "python", None), (8, "bash", "needs a GPU for hours"), (13, "console", None),
        (18, "", None)]
    assert commands(found[1]) == [["asynclab", "run", "--problem", "mnist", "--seeds",
                                   "0:4"]]
    assert commands(found[2]) == [["python", "x.py", "--out", "y"]]
    assert [b.line for b in runnable(found)] == [3, 13]
    assert not any(b.continues for b in found)
    chained = parse("page.md", "```python\nx = 1\n```\n\n<!-- continues -->\n"
                               "```python\nprint(x)\n```\n\n```python\nprint(2)\n```\n")
    assert [b.continues for b in chained] == [False, True, False]
    assert [(b.line, b.code) for b in sessions(chained)] == [(1, "x = 1\n\nprint(x)\n"),
                                                            (10, "print(2)\n")]


@pytest.mark.parametrize("page", [_page_param(p) for p in _pages() if runnable(blocks(p))])
def test_the_page_runs_as_written(page, tmp_path):
    """Every runnable block of ``page``, in order, in one empty folder; a block that
    continues the one before it runs with it, as one program."""
    for block in sessions(runnable(blocks(page))):
        start = time.perf_counter()
        ran = _run(block, tmp_path)
        print(f"{block.page}:{block.line} {block.language} {time.perf_counter() - start:.1f} s")
        _check(block, ran)


def sessions(found: list[Block]) -> list[Block]:
    """``found`` with every python block that continues the one before it joined to it:
    one block (the first's line) whose code is theirs in order."""
    joined: list[Block] = []
    for block in found:
        if block.continues:
            assert block.language == "python" and joined and joined[-1].language == "python", \
                f"{block.page}:{block.line}: a continued block follows a python block"
            joined[-1] = joined[-1]._replace(code=joined[-1].code + "\n" + block.code)
        else:
            joined.append(block)
    return joined


@pytest.mark.slow  # a run of 16 seeds from the command line
def test_the_readme_commands_run_as_written(tmp_path):
    """README.md's shell command lines that are programs (its python block runs in
    tests/test_readme.py; the install and test commands start with ``pip``), in order, in
    one empty folder."""
    readme = ROOT / "README.md"
    shells = [b for b in runnable(parse(readme.name, readme.read_text()))
              if b.language in SHELLS]
    assert sum(len(commands(b)) for b in shells) >= 1
    for block in shells:
        start = time.perf_counter()
        ran = _run(block, tmp_path)
        print(f"README.md:{block.line} {time.perf_counter() - start:.1f} s")
        _check(block, ran)
