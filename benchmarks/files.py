#!/usr/bin/env python
"""How fast a large step-time log is read and inspected, through asynclab's one reader.

    python benchmarks/files.py                 # a 200 MB log, 3 repeats (about 2 min)
    python benchmarks/files.py --mb 50 --repeat 5
    python benchmarks/files.py --log my.csv    # a log of your own (not deleted)

Rows, each command in a fresh process, interleaved so that a busy machine slows them
alike (the table gives the median wall time):

(a) asynclab trace inspect example     the shipped log (~25 kB): the fixed cost of a run
                                       (interpreter, imports, the simulated staleness)
(b) asynclab trace inspect LOG         the large log: end to end
(c) read_log(LOG)                      the reader alone, timed inside one process
(d) summarize_log(log)                 what inspect computes from the log, timed inside

``MB/s`` is the log's size over the row's time; for (b) also over (b) - (a), the rate at
which the log itself is read and summarised beyond the fixed cost. Each row is given in
wall time and in CPU time (user + system, every thread). The generated log is
a long CSV (worker, step, start, compute, communication), 8 workers with gamma compute
times, written once into a temporary folder and removed at the end.

The table is printed and written to ``benchmarks/results/DATE-TIME-cpu-files.md``.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

INSIDE = """
import sys, time
from asynclab.cluster import read_log, summarize_log
start, cpu = time.perf_counter(), time.process_time()
log = read_log(sys.argv[1])
read, read_cpu = time.perf_counter() - start, time.process_time() - cpu
start, cpu = time.perf_counter(), time.process_time()
summarize_log(log)
summary, summary_cpu = time.perf_counter() - start, time.process_time() - cpu
print(read, summary, read_cpu, summary_cpu)
"""


def make_log(path: Path, megabytes: float, workers: int = 8, seed: int = 0) -> int:
    """A long CSV log of about ``megabytes`` MB; returns its size in bytes."""
    rng = np.random.default_rng(seed)
    rows = int(megabytes * 1e6 / 45 / workers)  # ~45 bytes a row
    with path.open("wb") as file:
        file.write(b"worker,step,start,compute,communication\n")
        for k in range(workers):
            compute = rng.gamma(4.0, 0.25 * (1 + 0.1 * k), rows)
            communication = rng.exponential(0.05, rows)
            start = np.concatenate([[0.0], np.cumsum(compute + communication)[:-1]])
            block = np.column_stack([np.full(rows, k), np.arange(rows), start, compute,
                                     communication])
            text = io.StringIO()
            np.savetxt(text, block, delimiter=",",
                       fmt=["%d", "%d", "%.9g", "%.9g", "%.9g"])
            file.write(text.getvalue().encode())
    return path.stat().st_size


def timed(command: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, every thread) of ``command``."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0, help="size of the generated log")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--log", default=None, help="inspect this log instead")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as folder:
        if args.log is None:
            log = Path(folder) / "log.csv"
            start = time.perf_counter()
            size = make_log(log, args.mb)
            print(f"wrote {size / 1e6:.1f} MB in {time.perf_counter() - start:.1f} s",
                  file=sys.stderr)
        else:
            log = Path(args.log).resolve()
            size = log.stat().st_size
        cli = [sys.executable, "-m", "asynclab.cli", "trace", "inspect"]
        times: dict[str, list[float]] = {"a": [], "b": [], "c": [], "d": []}
        cpu: dict[str, list[float]] = {"a": [], "b": [], "c": [], "d": []}
        for _ in range(args.repeat):
            for row, target in (("a", "example"), ("b", str(log))):
                wall, used = timed([*cli, target], env)
                times[row].append(wall)
                cpu[row].append(used)
            out = subprocess.run([sys.executable, "-c", INSIDE, str(log)], check=True,
                                 capture_output=True, text=True, env=env, cwd=ROOT).stdout
            read, summary, read_cpu, summary_cpu = (float(v) for v in out.split())
            times["c"].append(read)
            times["d"].append(summary)
            cpu["c"].append(read_cpu)
            cpu["d"].append(summary_cpu)
    median = {k: statistics.median(v) for k, v in times.items()}
    used = {k: statistics.median(v) for k, v in cpu.items()}
    mb = size / 1e6
    marginal = median["b"] - median["a"]
    marginal_cpu = used["b"] - used["a"]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    lines = [
        f"# files.py: a {mb:.0f} MB step-time log read and inspected",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average {load[0]:.1f} / {load[1]:.1f} / "
        f"{load[2]:.1f} (1 / 5 / 15 min) at the end",
        f"- command: `python benchmarks/files.py --mb {args.mb:g} --repeat {args.repeat}`"
        + ("" if args.log is None else f" --log {args.log}"),
        f"- pyarrow: {_version('pyarrow')} (the CSV parser of a numeric log; numpy's "
        "otherwise)",
        "",
        f"| row | median wall time (s) of {args.repeat} | MB/s (wall) | CPU time (s) | "
        "MB/s (CPU) |",
        "|---|---|---|---|---|",
        f"| (a) asynclab trace inspect example | {median['a']:.2f} | — | {used['a']:.2f} | — |",
        f"| (b) asynclab trace inspect LOG ({mb:.0f} MB) | {median['b']:.2f} | "
        f"{mb / median['b']:.0f} end to end; {mb / marginal:.0f} beyond (a) | "
        f"{used['b']:.2f} | {mb / used['b']:.0f} end to end; {mb / marginal_cpu:.0f} "
        "beyond (a) |",
        f"| (c) read_log(LOG), inside one process | {median['c']:.2f} | "
        f"{mb / median['c']:.0f} | {used['c']:.2f} | {mb / used['c']:.0f} |",
        f"| (d) summarize_log(log), inside one process | {median['d']:.2f} | "
        f"{mb / median['d']:.0f} | {used['d']:.2f} | {mb / used['d']:.0f} |",
        "",
        "CPU time is user + system time of every thread: on a shared machine it is what "
        "the work costs, where wall time also holds the waits for a core.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    target = results / f"{time.strftime('%Y-%m-%d-%H%M')}-cpu-files.md"
    target.write_text(text)
    print(f"written to {target.relative_to(ROOT)}", file=sys.stderr)


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except ImportError:
        return "not installed"


if __name__ == "__main__":
    main()
