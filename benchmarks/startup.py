#!/usr/bin/env python
"""How long the command line takes to start, each row in a fresh process.

    python benchmarks/startup.py            # 5 repeats of each row (about 20 s)
    python benchmarks/startup.py --repeat 9

(a) python -c pass                   the interpreter alone (the floor)
(b) asynclab --help                  every parser built; no simulator, optimizer or drawing
(c) asynclab run --help              the same, through a subcommand
(d) python -c "import asynclab"      the package: its names are imported when first used
(e) python -c "import asynclab.engine"   what a run needs: JAX, SimPy, optax, the rules

Each row is run interleaved with the others (a, b, c, d, e, a, b, ...) so that a busy
machine slows them alike; the table gives the median wall time of each.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from _results import recorded

ROWS = {
    "(a) python -c pass": [sys.executable, "-c", "pass"],
    "(b) asynclab --help": [sys.executable, "-m", "asynclab.cli", "--help"],
    "(c) asynclab run --help": [sys.executable, "-m", "asynclab.cli", "run", "--help"],
    "(d) import asynclab": [sys.executable, "-c", "import asynclab"],
    "(e) import asynclab.engine": [sys.executable, "-c", "import asynclab.engine"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in ROWS}
    for _ in range(args.repeat):
        for name, command in ROWS.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times[name].append(time.perf_counter() - start)
    print(f"| row | median wall time (s) of {args.repeat} |")
    print("|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    with recorded("startup"):
        main()
