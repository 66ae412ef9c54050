"""The package helpers behind notebooks 02-05, against theory and plain numpy."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from children import run as run_child

from asynclab import ConfigError
from asynclab.cluster import (
    Cluster,
    ComputeTime,
    round_robin_trace,
    simulate_async,
    simulate_sync,
)
from asynclab.engine import build_rule, replay
from asynclab.notebook import (
    accumulate,
    cell_success,
    compare_rules,
    exchange_record,
    figure_png,
    momentum_data,
    notebook_devices,
    plot_running_probability,
    server_staleness_data,
    staleness_data,
)
from asynclab.problems import get_problem, quadratic
from asynclab.studies.model_averaging_mc import Config

# ----------------------------------------------------------------------------- 02


def test_staleness_of_one_cluster_has_the_closed_loop_mean_and_the_geometric_fit():
    n, commits = 6, 30_000
    data = staleness_data(n, "exponential", commits=commits, seed=3)
    tau = simulate_async(Cluster(n, ComputeTime("exponential")), commits=commits,
                         rng=3).staleness[n:]
    assert data["counts"][0].tolist() == np.bincount(tau).tolist()
    assert data["mean"][0] == pytest.approx(n - 1, abs=0.1)  # E[τ] = n − 1
    assert data["p_fit"][0] == pytest.approx(1 / (1 + tau.mean()))
    # theory, independent of the helper: with exponential compute times each commit is
    # any given worker's with probability 1/n, so τ is geometric with p = 1/n
    assert data["p_fit"][0] == pytest.approx(1 / n, abs=0.01)
    share = data["counts"][0][:6] / data["counts"][0].sum()
    np.testing.assert_allclose(share, (1 / n) * (1 - 1 / n) ** np.arange(6), atol=0.01)


def test_constant_compute_times_give_every_commit_the_staleness_n_minus_one():
    data = staleness_data(5, "constant", commits=200)
    counts = data["counts"][0]
    assert counts[4] == counts.sum() and counts.sum() == 195


def test_staleness_needs_more_commits_than_workers():
    with pytest.raises(ConfigError, match="commits"):
        staleness_data(8, commits=8)
    with pytest.raises(ConfigError, match="distribution"):
        staleness_data(8, "uniform")


def test_busy_server_staleness_rows():
    """Row 0 is the free server's run, row 1 the exponential server's, the same seed (the
    histograms by hand with numpy); the theory columns are the closed M/M/1//n forms
    written out here: p0(m) = 1 / Σ_k m!/(m−k)! ρ^k."""
    import math

    n, s, commits = 5, 0.2, 3000
    data = server_staleness_data(n, s, commits=commits, seed=4)
    free = simulate_async(Cluster(n, ComputeTime("exponential")), commits=commits, rng=4)
    busy = simulate_async(Cluster(n, ComputeTime("exponential"),
                                  server_time=ComputeTime("exponential", s)),
                          commits=commits, rng=4)
    for row, trace in enumerate((free, busy)):
        counts = np.bincount(trace.staleness[n:])
        assert data["counts"][row][:counts.size].tolist() == counts.tolist()
        assert data["throughput"][row] == commits / trace.time[-1]

    def p0(m):
        return 1 / sum(math.factorial(m) / math.factorial(m - k) * s**k for k in range(m + 1))

    np.testing.assert_allclose(data["p_zero_theory"], [1 / n, p0(n - 1) / n], rtol=1e-12)
    np.testing.assert_allclose(data["utilisation"], [0.0, 1 - p0(n)], rtol=1e-12)
    np.testing.assert_allclose(data["throughput_theory"], [n, (1 - p0(n)) / s], rtol=1e-12)
    for bad, field in (({"workers": 0}, "workers"), ({"server_time": 0.0}, "server_time"),
                       ({"commits": 5}, "commits")):
        with pytest.raises(ConfigError, match=field):
            server_staleness_data(**{"workers": n, "server_time": s, **bad})


def test_momentum_fit_uses_the_chosen_compute_times():
    # without gradient noise the seeds differ only by their schedules: with constant
    # compute times every seed has the same one, so the bootstrap over seeds is flat
    sizes = {"seeds": 8, "commits": 120}
    constant = momentum_data((2,), "constant", quick=True, **sizes)
    exponential = momentum_data((2,), "exponential", quick=True, **sizes)
    assert constant["fitted_momentum_error"][0] < 1e-9
    assert exponential["fitted_momentum_error"][0] > 1e-4
    with pytest.raises(ConfigError, match="workers"):
        momentum_data((0, 2))



def test_momentum_fit_uses_the_chosen_server():
    # a free server (0 s) is the default, bit for bit; a busy one changes every seed's
    # schedule, hence the mean trajectory
    sizes = {"seeds": 8, "commits": 120}
    default = momentum_data((3,), "exponential", quick=True, **sizes)
    free = momentum_data((3,), "exponential", quick=True, server_time=0.0, **sizes)
    busy = momentum_data((3,), "exponential", quick=True,
                         server_time=ComputeTime("exponential", 0.3), **sizes)
    np.testing.assert_array_equal(default["mean_path"], free["mean_path"])
    assert not np.array_equal(free["mean_path"], busy["mean_path"])
    with pytest.raises(ConfigError, match="server_time"):
        momentum_data((2,), server_time=-1.0)


# ----------------------------------------------------------------------------- 03


def _wilson(k, m, z=1.959964):
    p = k / m
    centre = (p + z * z / (2 * m)) / (1 + z * z / m)
    half = z / (1 + z * z / m) * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
    return centre - half, centre + half


@pytest.mark.slow  # several seconds; the quick tier keeps its 5-minute budget
def test_accumulated_counts_are_the_cells_runs_in_batches_with_wilson_intervals():
    config = Config(workers=(2,), bar_local_steps=(10,), runs=12, budget=300, budget_few=300,
                    noise=10.0, learning_rate=1e-2, success_loss=3.0)
    snapshots = list(accumulate(config, batch=6))
    assert [int(s["runs"].sum()) for s in snapshots] == [6, 12]
    last = snapshots[-1]
    want = cell_success(config, 2, 10, range(12))  # all seeds in one replay
    assert last["success"][0, 0] == want.sum() and 0 < want.sum() < 12
    # success itself, from a replay written out here: 300 local steps in rounds of λ = 10
    rule = build_rule("model_averaging", learning_rate=1e-2, local_steps=10)
    direct = replay(rule, get_problem("beale"),
                    simulate_sync(Cluster(workers=2), local_steps=10, rounds=30),
                    seeds=range(12), init="random_per_worker", noise=10.0).final_loss
    np.testing.assert_array_equal(want, np.isfinite(direct) & (direct < 3.0))
    low, high = _wilson(want.sum(), 12)
    assert last["low"][0, 0] == pytest.approx(low) and last["high"][0, 0] == pytest.approx(high)
    assert [row[0] for row in last["history"][(10, 2)]] == [6, 12]
    assert last["done"] == 1.0
    png = figure_png(plot_running_probability(snapshots[0]))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000


def test_a_window_that_does_not_divide_the_budget_is_refused():
    config = Config(workers=(2,), bar_local_steps=(7,), runs=4, budget=300, budget_few=300)
    with pytest.raises(ConfigError, match="local_steps"):
        next(accumulate(config))
    with pytest.raises(ConfigError, match="batch"):
        next(accumulate(config, batch=0))


# ----------------------------------------------------------------------------- 04


def _adag_numpy(start, h, trace, learning_rate, gamma, local_steps):
    """ADAG by hand: λ SGD steps from the pulled centre, Δ = a / λ, scaled per weight."""
    center = np.array(start, np.float64)
    pulled = [center.copy() for _ in range(trace.n_workers)]
    scales = []
    for k in trace.worker:
        theta = pulled[k].copy()
        for _ in range(local_steps):
            theta -= learning_rate * h * theta
        delta = (theta - pulled[k]) / local_steps
        scale = 1.0 / ((center - pulled[k]) ** 2 / gamma + 1.0)
        center = center + delta * scale
        scales.append(scale.mean())
        pulled[k] = center.copy()
    return np.array(scales), center


def test_adag_scale_factors_match_a_numpy_adag():
    problem = quadratic(dim=3, condition=10.0)
    h = np.geomspace(1.0, 10.0, 3)
    trace = simulate_async(Cluster(3), local_steps=2, commits=40, rng=2)
    rule = build_rule("adag", learning_rate=0.05, local_steps=2, gamma=1e-3)
    record = exchange_record(rule, problem, trace)
    scales, center = _adag_numpy(problem.start, h, trace, 0.05, 1e-3, 2)
    assert scales.min() < 0.9  # the test exercises the scaling
    np.testing.assert_allclose(record.scale, scales, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(record.final_params, center, rtol=1e-4, atol=1e-6)
    assert record.staleness.tolist() == trace.staleness.tolist()
    want = replay(rule, problem, trace, seeds=0, noise=0.0).final_params[0]
    np.testing.assert_allclose(record.final_params, want, rtol=1e-6, atol=1e-7)


def test_one_worker_and_plain_addition_apply_every_commit_in_full():
    problem = quadratic(dim=2)
    adag = build_rule("adag", learning_rate=0.1)
    assert np.all(exchange_record(adag, problem, round_robin_trace(1, 20)).scale == 1.0)
    downpour = build_rule("downpour", learning_rate=0.1)
    assert np.all(exchange_record(downpour, problem, round_robin_trace(3, 10),
                                  noise=1.0).scale == 1.0)
    with pytest.raises(ConfigError, match="asynchronous"):
        exchange_record(build_rule("model_averaging", learning_rate=0.1), problem,
                        round_robin_trace(2, 3))


@pytest.mark.slow  # the notebooks (the slow tier) compare rules with it end to end
def test_rules_are_compared_on_one_schedule():
    results = compare_rules(["downpour", "dynsgd"], problem="beale", workers=3, commits=60,
                            learning_rate=1e-3, progress=False)
    assert list(results) == ["downpour", "dynsgd"]
    a, b = results.values()
    assert np.array_equal(a.time, b.time) and np.array_equal(a.worker, b.worker)
    assert not np.allclose(a.loss, b.loss)  # DynSGD scales stale commits down
    # with one worker nothing is stale: DynSGD's factor 1/(τ + 1) is 1, DOWNPOUR exactly
    one = compare_rules(["downpour", "dynsgd"], problem="beale", workers=1, commits=60,
                        learning_rate=1e-3, progress=False)
    np.testing.assert_array_equal(one["downpour"].loss, one["dynsgd"].loss)
    with pytest.raises(ConfigError, match="rules"):
        compare_rules([])


# ----------------------------------------------------------------------------- 05

_DEVICES_SCRIPT = """
import asynclab.notebook as nb
devices = nb.notebook_devices(2)
from asynclab.cluster import Cluster, simulate_async
from asynclab.engine import build_rule
from asynclab.problems import beale
rule = build_rule("downpour", learning_rate=0.01, local_steps=2)
trace = simulate_async(Cluster(2), local_steps=2, commits=24, rng=1)
data = nb.compare_executors(rule, beale(), trace, devices, seed=3, noise=1.0)
print("RESULT", len(devices), devices[0].platform, data["max_difference"], data["segments"])
"""


@pytest.mark.slow  # 8 s; notebook 05 and the executor's own tests cover it
def test_device_executor_agrees_with_the_replay_on_simulated_devices():
    child = run_child("-c", _DEVICES_SCRIPT, devices=1, timeout=240)
    assert child.returncode == 0, child.stderr[-3000:]
    line = [x for x in child.stdout.splitlines() if x.startswith("RESULT")][-1].split()
    assert line[1:3] == ["2", "cpu"]
    assert float(line[3]) < 1e-5 and int(line[4]) >= 12  # 24 commits, ≤ 2 per segment


def test_devices_after_jax_started_are_refused_with_how_to_fix_it():
    jax.devices()  # JAX runs in this process
    with pytest.raises(ConfigError, match="restart the kernel"):
        notebook_devices(len(jax.devices("cpu")) + 1)
    with pytest.raises(ConfigError, match="integer"):
        notebook_devices(0)
