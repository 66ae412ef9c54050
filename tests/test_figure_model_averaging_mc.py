"""The model-averaging Monte-Carlo figure builds, and its claims hold in its own data
(quick run) and in the committed full-size data."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from asynclab import studies
from asynclab.figures import load_figure
from asynclab.studies.model_averaging_mc import wilson

COMMITTED = Path(__file__).resolve().parents[1] / "figures" / "data" / "model_averaging_mc.npz"


def _claims(data, max_change):
    p, low, high = data["probability"], data["low"], data["high"]
    workers = list(data["workers"])
    # every probability carries a 95 % interval that contains it
    assert np.all((low <= p) & (p <= high))
    # ... and it is the Wilson score interval of the stored counts (textbook formula)
    runs, z = data["runs"], 1.959964
    assert np.array_equal(p, data["success"] / runs)
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    spread = z * np.sqrt(p * (1 - p) / runs + z * z / (4 * runs**2)) / (1 + z * z / runs)
    np.testing.assert_allclose(low, centre - spread, atol=1e-12)
    np.testing.assert_allclose(high, centre + spread, atol=1e-12)
    half = (high - low) / 2
    normal = 1.96 * np.sqrt(p * (1 - p) / data["runs"])
    np.testing.assert_allclose(half, normal, rtol=0.3, atol=0.01)
    # away from 0 and 1, with hundreds of runs, Wilson is the normal interval to 5 %
    inner = (p > 0.1) & (p < 0.9) & (runs >= 500)
    np.testing.assert_allclose(half[inner], normal[inner], rtol=0.05)
    # more randomly initialised workers reach the global minimum more often: the
    # n = 10 interval lies above the n = 1 interval, for every λ
    one, ten = workers.index(1), workers.index(10)
    assert np.all(low[:, ten] > high[:, one]), (p[:, one], p[:, ten])
    # with η = 1e-4 overflows are rare (measured at full size: at most 0.22 % of a cell,
    # λ = 100 and n = 10: a worker starting near a corner of the box, where ‖∇f‖ ≈ 1e5,
    # overflows during its local steps before the first average; with λ = 1 the
    # first average rescues it for n ≥ 2)
    assert np.all(data["diverged"] <= 0.005 * data["runs"])
    # the answer has converged: doubling the budget moves no cell by more than max_change
    assert data["max_check_change"] <= max_change


@pytest.mark.slow  # the figure's quick study: study-sized
def test_model_averaging_mc_figure_and_its_claims(tmp_path):
    data = load_figure("model_averaging_mc").main(quick=True, out=tmp_path)
    assert (tmp_path / "model_averaging_mc.png").stat().st_size > 20_000
    # 64 runs per bar: the Wilson half-widths are ≤ 0.12, the gap n = 10 vs n = 1 is
    # ≈ 0.35 (full size: 0.57 vs 0.91); the convergence check pairs the same 64 runs at
    # 1× and 2× the budget, where one run that changes its answer moves a cell by 1/64
    _claims(data, max_change=2 / 64)


def test_wilson_interval():
    low, high = wilson(50, 100)
    np.testing.assert_allclose([low, high], [0.4038, 0.5962], atol=1e-3)
    low, high = wilson(0, 100)
    assert low == pytest.approx(0.0, abs=1e-12) and 0.03 < high < 0.04


@pytest.mark.skipif(not COMMITTED.exists(), reason="full-size data not generated")
def test_model_averaging_mc_committed_data():
    data, config = studies.load(COMMITTED)
    assert config["runs"] >= 10_000
    assert np.all(data["runs"][np.isin(data["local_steps"], data["bar_local_steps"])]
                  >= 10_000)
    _claims(data, max_change=0.01)



@pytest.mark.slow  # several seconds; the quick tier keeps its 5-minute budget
def test_launch_layout_does_not_change_the_runs():
    """Seeds replayed in launches of 8 give the counts of one launch of all 24; so does
    one replay over twice the budget that serves the bar and the check at once (the bar
    read at the budget, the check from its first 8 seeds), with 3 events per loop
    iteration; so do the replays a round at a time on 2 workers and one local step at a
    time on an axis padded to 3 (the CPU's default, ``WORKER_GROUPS``)."""
    config = studies.model_averaging_mc.Config(
        workers=(2,), bar_local_steps=(1,), map_local_steps=(1,), budget=300, budget_few=300,
        runs=24, check_runs=8, success_loss=3.0, threads=1, merge_check=False,
        unroll=1)  # compiles faster than the CPU's default for stepwise replays
    one = studies.model_averaging_mc.run(dataclasses.replace(config, launch_seeds=24))
    split = studies.model_averaging_mc.run(dataclasses.replace(config, launch_seeds=8))
    merged = studies.model_averaging_mc.run(dataclasses.replace(config, merge_check=True,
                                                                unroll=3))
    stepwise = dataclasses.replace(config, stepwise=True, worker_groups=((1, 2, 3),))
    padded = studies.model_averaging_mc.run(stepwise)
    plain = studies.model_averaging_mc.run(dataclasses.replace(config, stepwise=False))
    assert studies.model_averaging_mc._pad_workers(stepwise, 2) == 3  # really padded
    assert one["runs"].tolist() == split["runs"].tolist() == merged["runs"].tolist() == [[24]]
    for key in ("success", "diverged", "valley", "check_at_budget", "check_at_double"):
        assert np.array_equal(one[key], split[key]), key
        assert np.array_equal(one[key], merged[key]), key
        assert np.array_equal(one[key], padded[key]), key
        assert np.array_equal(one[key], plain[key]), key
    assert 0 < one["success"][0, 0] < 24  # the threshold splits the runs
    assert 0 < one["valley"][0, 0] < 24  # so does the valley test (centre at the budget)

