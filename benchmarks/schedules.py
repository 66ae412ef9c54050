#!/usr/bin/env python
"""Schedules at array speed: the SimPy simulator beside ``simulate_async_many`` /
``simulate_sync_many``, and a Monte-Carlo run over the cluster's own randomness.

    python benchmarks/schedules.py            # full size (a few minutes on 2 cores)
    python benchmarks/schedules.py --quick    # small sizes, a smoke check

(a) async    commits/s of 16 workers with lognormal step times (mean 1, shape 0.5),
             SEEDS seeds x 5,000 commits: SimPy (``simulate_async`` seed by seed) beside
             the array path (``simulate_async_many``, all seeds at once).
(b) server   the same with exponential step times (mean 1) and a busy FIFO server
             (lognormal service, mean 0.05, shape 0.8): the array path's commit-by-commit
             loop (Lindley's recursion) rather than its merge of independent workers.
(c) quorum   rounds/s of 16 workers, exponential step times, semi-synchronous rounds
             that close at the 12th commit (late work discarded), SEEDS seeds x 1,000
             rounds.
(d) run      ``asynclab.run("beale", "downpour", cluster=..., commits=5000,
             seeds=range(SEEDS), noise=1.0)`` with one shared schedule (the default)
             beside the same Monte-Carlo run with one schedule per seed
             (``trace_per_seed=True``, whose schedules the array path draws: the run's
             ``schedules`` then its replay, timed apart): replica-updates/s (seeds x
             commits / s) and their ratio (bar: >= 0.5x); the share of the schedules in
             that call, and the rate of its replay alone (the ceiling if the schedules
             were free). Its draws alone: the step times of every seed's and worker's
             own stream (one numpy generator each, as SimPy's are made, so that the
             traces are SimPy's bit for bit), as many as the schedules draw; the replay
             alone plus these draws is the ceiling of any schedule generator that runs
             before the replay and draws SimPy's streams. For reference, one call of the
             same run with ``simulator="simpy"`` (SimPy, seed by seed). Beside it, what a
             pipeline would gain: one batch's schedules drawn in a second thread while
             another batch (its schedules made before) replays, against the two one after
             the other (the ratio of their wall times: 1x, nothing gained; 0.5x, all of it).

SimPy's rates in (a)-(c) are measured on the first SIMPY_SEEDS seeds (it runs seed by
seed, so its rate does not depend on their number). Before timing, the array traces of
a few seeds are checked against SimPy's (equal arrays). Every rate is the best of 3
repeats (5 for (d)), the repeats of the rows compared with each other interleaved, after
a warm-up call (the replay's compilation is not in (d)'s rates). The table is printed and written
to ``benchmarks/results/<date>-<device>-schedules.txt`` (``--out`` to choose, ``--out -``
to only print).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import threading
import time
from pathlib import Path

import jax
import numpy as np
import simpy
from _results import commit_of, load_average

import asynclab
from asynclab.cluster import (
    Cluster,
    ComputeTime,
    SemiSync,
    simulate_async,
    simulate_async_many,
    simulate_sync,
    simulate_sync_many,
)

# the array path's own first draws (asynclab.cluster._arrays_async.run starts with them)
from asynclab.cluster._arrays_async import _expected_phases
from asynclab.cluster._arrays_streams import Phases

REPEATS = 3
RUN_REPEATS = 5  # (d) moves most with the machine's load
SIZES = {  # seeds, SimPy's seeds, commits, rounds
    "full": (1000, 40, 5000, 1000),
    "quick": (100, 10, 1000, 200),
}
RUN_TARGET = 0.5
LOGNORMAL = Cluster(16, ComputeTime("lognormal", mean=1.0, shape=0.5))
SERVER = Cluster(16, ComputeTime("exponential", mean=1.0),
                 server_time=ComputeTime("lognormal", mean=0.05, shape=0.8))
QUORUM = Cluster(16, ComputeTime("exponential", mean=1.0))
SEMISYNC = SemiSync(quorum=12)


def _best(calls: dict, repeats: int = REPEATS) -> dict:
    """Best wall time of each call, the repeats interleaved."""
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: min(values) for name, values in times.items()}


def _equal(a, b) -> bool:
    """The same schedule: every field but ``simulator``, which names what made it."""
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
               for name, x, y in zip(a._fields, a, b, strict=True) if name != "simulator")


def _check(seeds: int, commits: int, rounds: int) -> None:
    """The array path's traces are SimPy's (a few seeds of every row)."""
    some = [0, seeds - 1]
    for cluster in (LOGNORMAL, SERVER):
        for seed, trace in zip(some, simulate_async_many(cluster, commits=commits,
                                                         seeds=some), strict=True):
            assert _equal(trace, simulate_async(cluster, commits=commits, rng=seed)), seed
    for seed, trace in zip(some, simulate_sync_many(QUORUM, rounds=rounds, seeds=some,
                                                    semisync=SEMISYNC), strict=True):
        assert _equal(trace, simulate_sync(QUORUM, rounds=rounds, rng=seed,
                                           semisync=SEMISYNC)), seed


def _schedule_rows(seeds, simpy_seeds, commits, rounds, out):
    rows = [
        ("(a) async, lognormal", "commits/s", commits,
         lambda s: [simulate_async(LOGNORMAL, commits=commits, rng=i) for i in range(s)],
         lambda s: simulate_async_many(LOGNORMAL, commits=commits, seeds=range(s))),
        ("(b) async, busy server", "commits/s", commits,
         lambda s: [simulate_async(SERVER, commits=commits, rng=i) for i in range(s)],
         lambda s: simulate_async_many(SERVER, commits=commits, seeds=range(s))),
        ("(c) quorum 12 of 16", "rounds/s", rounds,
         lambda s: [simulate_sync(QUORUM, rounds=rounds, rng=i, semisync=SEMISYNC)
                    for i in range(s)],
         lambda s: simulate_sync_many(QUORUM, rounds=rounds, seeds=range(s),
                                      semisync=SEMISYNC)),
    ]
    out(f"    16 workers; SimPy on {simpy_seeds} seeds, the array path on {seeds}")
    out(f"    {'row':26s} {'unit':>10s} {'SimPy':>11s} {'arrays':>11s} {'ratio':>8s}")
    for name, unit, events, slow, fast in rows:
        slow(2), fast(2)  # warm-up
        best = _best({"simpy": lambda slow=slow: slow(simpy_seeds),
                      "arrays": lambda fast=fast: fast(seeds)})
        a = simpy_seeds * events / best["simpy"]
        b = seeds * events / best["arrays"]
        out(f"    {name:26s} {unit:>10s} {a:11.3e} {b:11.3e} {b / a:7.1f}x")


def _run_row(seeds, commits, out):
    seed_list = list(range(seeds))
    spec = asynclab.prepare("beale", "downpour", cluster=LOGNORMAL, commits=commits,
                            seeds=seed_list, noise=1.0, trace_per_seed=True)

    def shared():
        return asynclab.run("beale", "downpour", cluster=LOGNORMAL, commits=commits,
                            seeds=seed_list, noise=1.0, progress=False)

    split = []  # (schedules, replay) seconds of every call
    seed_array = np.array(seed_list)
    steps = (1,) * LOGNORMAL.workers
    need = _expected_phases(LOGNORMAL, steps, commits, math.inf) + 2

    def draws():  # the array path's first draws: every (seed, worker) stream, as it makes them
        phases = Phases(LOGNORMAL, steps, seed_array, grouped=True)
        phases.ensure(np.broadcast_to(need, (seeds, phases.units)))

    def per_seed():  # what run(spec) does, the schedules timed apart
        start = time.perf_counter()
        traces = asynclab.engine.schedules(spec)
        middle = time.perf_counter()
        assert traces[0].simulator == "arrays"
        result = asynclab.replay(spec.rule, spec.problem, traces, seeds=seed_list,
                                 noise=1.0, progress=False, config=dict(spec.config))
        split.append((middle - start, time.perf_counter() - middle))
        return result

    ready = asynclab.engine.schedules(spec)  # another batch's schedules, made already

    def replay_ready():
        asynclab.replay(spec.rule, spec.problem, ready, seeds=seed_list, noise=1.0,
                        progress=False, config=dict(spec.config))  # its arrays on the host

    def beside():  # a pipeline's step: the next batch's schedules while this one replays
        worker = threading.Thread(target=asynclab.engine.schedules, args=(spec,))
        worker.start()
        replay_ready()
        worker.join()

    def after():  # the same two, one after the other
        asynclab.engine.schedules(spec)
        replay_ready()

    a, b = shared(), per_seed()  # warm-up: compiles the replay
    assert np.isfinite(np.asarray(a.final_loss)).all() and np.isfinite(
        np.asarray(b.final_loss)).all()
    best = _best({"shared": shared, "arrays": per_seed, "draws": draws, "beside": beside,
                  "after": after}, RUN_REPEATS)
    updates = seeds * commits
    rate_shared, rate_arrays = updates / best["shared"], updates / best["arrays"]
    start = time.perf_counter()
    asynclab.run("beale", "downpour", cluster=LOGNORMAL, commits=commits, seeds=seed_list,
                 noise=1.0, progress=False, trace_per_seed=True, simulator="simpy")
    rate_simpy = updates / (time.perf_counter() - start)
    ratio = rate_arrays / rate_shared
    met = "met" if ratio >= RUN_TARGET else "MISSED"
    out(f"    DOWNPOUR on Beale, sigma^2 = 1, {seeds} seeds x {commits} commits "
        "(replica-updates/s; ratio to the shared schedule)")
    out(f"    {'one shared schedule':44s} {rate_shared:11.3e}    1x")
    out(f"    {'a schedule per seed (the array path)':44s} {rate_arrays:11.3e} {ratio:5.2f}x"
        f"   (bar >= {RUN_TARGET}x: {met})")
    fastest = min(split[1:], key=sum)  # the best call (the first one compiled)
    replay_alone = updates / min(r for _, r in split[1:])
    out(f"      {'its schedules, share of its best call':42s} {'':11s} "
        f"{fastest[0] / sum(fastest):5.0%}")
    out(f"      {'its replay alone (best)':42s} {replay_alone:11.3e} "
        f"{replay_alone / rate_shared:5.2f}x")
    floor = updates / (updates / replay_alone + best["draws"])
    out(f"      {'its draws alone (per-worker streams), s':42s} {best['draws']:11.3f}")
    out(f"      {'replay alone + draws alone: the ceiling':42s} {floor:11.3e} "
        f"{floor / rate_shared:5.2f}x")
    out(f"      {'schedules beside the replay (2 threads), s':42s} {best['beside']:11.3f} "
        f"{best['beside'] / best['after']:5.2f}x   of one after the other "
        f"({best['after']:.3f} s)")
    out(f"    {'a schedule per seed, simulator=simpy':44s} {rate_simpy:11.3e} "
        f"{rate_simpy / rate_shared:5.2f}x   (one call, compiled)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke check")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds of the array path's rows and of (d) (default: 1,000; "
                        "10,000 on an accelerator host)")
    parser.add_argument("--out", default=None,
                        help="where to write the table ('-': only print)")
    args = parser.parse_args()
    seeds, simpy_seeds, commits, rounds = SIZES["quick" if args.quick else "full"]
    seeds = args.seeds or seeds
    lines: list[str] = []

    def out(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    now = datetime.datetime.now()
    device = jax.devices()[0]
    kind = "cpu" if device.platform == "cpu" else device.device_kind.lower().split()[-1]
    out("asynclab schedules benchmark")
    out(f"date {now.isoformat(timespec='seconds')}  cpus {os.cpu_count()}  "
        f"{platform.machine()}  python {platform.python_version()}  jax {jax.__version__}  "
        f"numpy {np.__version__}  simpy {simpy.__version__}  backend {device.platform}")
    out(f"asynclab from {Path(asynclab.__file__).parent} at "
        f"{commit_of(Path(asynclab.__file__).parent)}")
    out(f"load average before the run (1, 5, 15 min): {load_average()} on {os.cpu_count()} cpus")
    _check(seeds, commits // 5, rounds // 5)
    out("check: the array path's traces equal SimPy's (seeds 0 and the last, every row)")
    out("")
    out("schedules (best of 3; events per second of simulated schedule)")
    _schedule_rows(seeds, simpy_seeds, commits, rounds, out)
    out("")
    out(f"(d) a Monte-Carlo run over the cluster's randomness, end to end (best of "
        f"{RUN_REPEATS})")
    _run_row(seeds, commits, out)
    out(f"load average after the run (1, 5, 15 min): {load_average()}")
    if args.out == "-":
        return
    path = Path(args.out) if args.out else (
        Path(__file__).parent / "results"
        / f"{now.strftime('%Y-%m-%d-%H%M')}-{kind}-schedules{'-quick' if args.quick else ''}.txt")
    path.write_text("$ " + " ".join(["python", *sys.argv]) + "\n" + "\n".join(lines) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
