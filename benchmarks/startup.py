#!/usr/bin/env python
"""How long the command line takes to start, each row in a fresh process.

    python benchmarks/startup.py            # 5 repeats of each row (about 20 s)
    python benchmarks/startup.py --repeat 9

(a) python -c pass                   the interpreter alone (the floor)
(b) asynclab --help                  every parser built; no simulator, optimizer or drawing
(c) asynclab run --help              the same, through a subcommand
(d) python -c "import asynclab"      the package: its names are imported when first used
(e) python -c "import asynclab.engine"   what a run needs: JAX, SimPy, optax, the rules
(f) asynclab run --workers 4 --commits 50 --seeds 0:2, the compilation cache off: a small
    run's first call, nearly all of it tracing and compiling the replay

Each row is run interleaved with the others (a, b, c, d, e, f, a, b, ...) so that a busy
machine slows them alike; the table gives the median wall time of each.

    python benchmarks/startup.py --against ../old    # the same rows with another checkout

``--against DIR`` runs every row a second time, interleaved with the first, with ``DIR``
(another checkout of this repository, e.g. a ``git worktree`` of an older commit) first on
``PYTHONPATH``, and prints both medians and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from _results import commit_of, recorded

ROWS = {
    "(a) python -c pass": [sys.executable, "-c", "pass"],
    "(b) asynclab --help": [sys.executable, "-m", "asynclab.cli", "--help"],
    "(c) asynclab run --help": [sys.executable, "-m", "asynclab.cli", "run", "--help"],
    "(d) import asynclab": [sys.executable, "-c", "import asynclab"],
    "(e) import asynclab.engine": [sys.executable, "-c", "import asynclab.engine"],
    "(f) a small run, cache off": [sys.executable, "-m", "asynclab.cli", "run", "--workers",
                                   "4", "--commits", "50", "--seeds", "0:2"],
}

#: the environment of every row: no compilation cache, so that (f) compiles each time
ENVIRONMENT = {"ASYNCLAB_COMPILE_CACHE": "", "TQDM_DISABLE": "1"}


def environment(checkout: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env.update(ENVIRONMENT)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.abspath(checkout)] + [p for p in env.get("PYTHONPATH", "").split(
                os.pathsep) if p])
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", metavar="DIR",
                        help="another checkout: every row again with it on PYTHONPATH")
    args = parser.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkouts = {"this": here} | ({"against": args.against} if args.against else {})
    envs = {label: environment(path) for label, path in checkouts.items()}
    times = {(name, label): [] for name in ROWS for label in checkouts}
    for _ in range(args.repeat):
        for name, command in ROWS.items():
            for label in checkouts:
                start = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True, env=envs[label])
                times[name, label].append(time.perf_counter() - start)
    if args.against:
        print(f"this: {here} at {commit_of(here)}; against: {os.path.abspath(args.against)} "
              f"at {commit_of(args.against)}")
        print(f"| row | this, median wall time (s) of {args.repeat} | against | this / against |")
        print("|---|---|---|---|")
        for name in ROWS:
            this = statistics.median(times[name, "this"])
            other = statistics.median(times[name, "against"])
            print(f"| {name} | {this:.2f} | {other:.2f} | {this / other:.2f} |")
        return
    print(f"| row | median wall time (s) of {args.repeat} |")
    print("|---|---|")
    for name in ROWS:
        print(f"| {name} | {statistics.median(times[name, 'this']):.2f} |")


if __name__ == "__main__":
    with recorded("startup"):
        main()
