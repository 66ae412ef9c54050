#!/usr/bin/env python
"""How fast the notebook explorer redraws when a control moves.

    python benchmarks/explorer.py           # n = 4, 8, 16 (about two minutes)
    python benchmarks/explorer.py --quick   # n = 16 only, fewer repeats

The explorer (``asynclab.notebook.Explorer``) is driven as a person would drive it, by
setting ``.value`` on its widgets: DOWNPOUR on Beale, 2,000 commits, 4 seeds, σ² = 10,
exponential compute times, a straggler. After the first build (which compiles the
replay), each real-valued control is moved to a few values in turn and every change is
timed from ``.value = ...`` until the new PNG is in the image widget: the schedule is
simulated again when the control is a cluster setting, the run replayed, the picture
redrawn and encoded. The ``compiles`` column counts the replay's traces during those
changes (``asynclab.engine._compiled.TRACE_COUNT``); it must be 0. The last rows time a
change of σ² (a new value compiles its gradient oracle once; returning to a value seen
before does not) and the time slider (no replay, only a redraw).

Columns: median and worst wall seconds per change over the changes of that row, the
median CPU seconds of this process per change (``time.process_time``: what the change
costs on a core of its own, whatever else the machine is running), and the split of the
median wall time into replay (schedule + replay) and drawing (figure + PNG).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

import numpy as np
from _results import recorded

from asynclab.engine._compiled import TRACE_COUNT
from asynclab.notebook import Explorer

CHANGES = {
    "learning_rate": [0.002, 0.004, 0.003, 0.005],
    "server_momentum": [0.3, -0.2, 0.0, 0.5],
    "heterogeneity": [0.5, 1.0, 0.2, 0.0],
    "straggler_delay": [80.0, 10.0, 120.0, 40.0],
    "straggler_at": [50.0, 100.0, 20.0, 0.0],
}


def _time_changes(explorer: Explorer, name: str, values) -> tuple[list, list, list, int]:
    control = explorer.rule_controls.get(name) or explorer.controls[name]
    totals, cpus, replays, draws = [], [], [], []
    before = TRACE_COUNT["chunk"]
    for value in values:
        start, cpu = time.perf_counter(), time.process_time()
        control.value = value
        totals.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        if explorer.timings:
            replays.append(explorer.timings["replay"])
            draws.append(explorer.timings["draw"])
    return totals, cpus, replays, draws, TRACE_COUNT["chunk"] - before


def _cell(values, width=8):
    return f"{np.median(values):{width}.3f}" if values else " " * width


def _row(n, what, totals, cpus, replays=(), draws=(), compiles=None):
    return (f"| {n:>2} | {what:<28} | {_cell(totals)} | {max(totals):7.3f} | {_cell(cpus)} | "
            f"{_cell(replays)} | {_cell(draws, 6)} | "
            f"{'' if compiles is None else compiles:>8} |")


def main(quick: bool = False) -> None:
    sizes = (16,) if quick else (4, 8, 16)
    repeats = 1 if quick else 2
    print(f"# explorer redraw, {datetime.date.today()}, {platform.processor() or 'cpu'}, "
          f"{os.cpu_count()} cores")
    print("| n  | control changed              | median s | worst s |    cpu s | replay s | "
          "draw s | compiles |")
    print("|----|------------------------------|----------|---------|----------|----------|"
          "--------|----------|")
    for n in sizes:
        start, cpu = time.perf_counter(), time.process_time()
        explorer = Explorer("beale", "downpour", workers=n, commits=2000, seeds=4,
                            learning_rate=3e-3, noise=10.0)
        print(_row(n, "first build (compiles)", [time.perf_counter() - start],
                   [time.process_time() - cpu]))
        every, every_cpu = [], []
        for name, values in CHANGES.items():
            totals, cpus, replays, draws, compiles = _time_changes(explorer, name,
                                                                   values * repeats)
            every += totals
            every_cpu += cpus
            print(_row(n, name, totals, cpus, replays, draws, compiles))
        print(_row(n, "**every real-valued change**", every, every_cpu))
        print(_row(n, "σ² to a new value", *_time_changes(explorer, "noise", [1.0])))
        print(_row(n, "σ² back to a seen value",
                   *_time_changes(explorer, "noise", [10.0, 1.0])))
        explorer.timings = {}
        totals, cpus = [], []
        for commit in (500, 1000, 1500, 2000) * repeats:
            start, cpu = time.perf_counter(), time.process_time()
            explorer.time.value = commit
            totals.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        print(_row(n, "time slider (no replay)", totals, cpus))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 16 only, one repeat")
    quick = parser.parse_args().quick
    with recorded("explorer"):
        main(quick)
