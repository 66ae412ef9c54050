"""asynclab.plot's comparison of results and the one-run picture, against hand-computed
medians, stragglers and divergence times."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import asynclab  # noqa: E402
from asynclab import ConfigError  # noqa: E402
from asynclab.cluster import Cluster  # noqa: E402
from asynclab.engine import Result  # noqa: E402
from asynclab.plot import compare, plot_run, stragglers  # noqa: E402
from asynclab.plot._compare import series  # noqa: E402
from asynclab.problems import get_problem  # noqa: E402


def _result(loss, time, diverged_at, worker=None, config=None, metrics=None):
    loss = np.asarray(loss, np.float32)
    time = np.asarray(time, float)
    seeds, records = loss.shape
    return Result(config={"rule": "downpour", "workers": 2, **(config or {})},
                  seeds=np.arange(seeds), time=time,
                  worker=np.zeros(time.shape, np.int32) if worker is None else np.asarray(worker),
                  staleness=np.zeros(time.shape, np.int32),
                  record_events=np.arange(records), loss=loss,
                  final_params=np.zeros((seeds, 2), np.float32),
                  diverged_at=np.asarray(diverged_at), metrics=metrics)


def test_series_on_one_schedule_are_the_records_with_diverged_runs_worst():
    # 3 seeds, records after 0..3 events at times 0, 1, 3, 6; seed 2 diverged at event 2
    r = _result([[4, 2, 1, 0.5], [4, 3, 2, 1], [4, 1, np.nan, np.nan]],
                [[1.0, 3.0, 6.0]], [-1, -1, 2],
                metrics={"accuracy": np.array([[.1, .5, .7, .8], [.1, .4, .6, .9],
                                               [.1, .6, np.nan, np.nan]], np.float32)})
    x, values = series(r, "loss", "time")
    np.testing.assert_array_equal(x, [0, 1, 3, 6])
    np.testing.assert_array_equal(values[2], [4, 1, np.inf, np.inf])
    x, values = series(r, "accuracy", "commits")
    np.testing.assert_array_equal(x, [0, 1, 2, 3])
    np.testing.assert_allclose(values[2], [.1, .6, 0, 0])
    ax = compare([r], labels=["A"], metric="loss")
    (line,) = ax.get_lines()
    # the median over the three seeds, by hand: (4,4,4) (2,3,1) (1,2,inf) (0.5,1,inf)
    np.testing.assert_allclose(line.get_ydata(), [4, 2, 2, 1])
    assert "1/3 diverged" in ax.get_legend().get_texts()[0].get_text()
    plt.close("all")


def test_series_with_a_schedule_per_seed_hold_each_seeds_last_record():
    # seed 0's records at times 0, 2, 4; seed 1's at 0, 1, 8
    r = _result([[8, 4, 2], [8, 6, 1]], [[2.0, 4.0], [1.0, 8.0]], [-1, -1])
    x, values = series(r, "loss", "time", points=5)  # times 0, 2, 4, 6, 8
    np.testing.assert_array_equal(x, [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(values, [[8, 4, 2, 2, 2], [8, 6, 6, 6, 1]])


def test_compare_refuses_what_it_cannot_draw():
    r = _result([[1, 0.5]], [[1.0]], [-1])
    with pytest.raises(ConfigError, match="metric"):
        compare([r], metric="accuracy")
    with pytest.raises(ConfigError, match="metric must be"):
        compare([r], metric="gradient")
    with pytest.raises(ConfigError, match="against"):
        compare([r], against="seconds")
    with pytest.raises(ConfigError, match="labels"):
        compare([r, r], labels=["only one"])
    with pytest.raises(ConfigError, match="band"):
        compare([r], band=(0.9, 0.1))
    swept = _result([[1, 0.5]], [[1.0]], [-1], config={"grid": [["learning_rate", [0.1]]]})
    with pytest.raises(ConfigError, match="sweep"):
        compare([swept])
    plt.close("all")


def test_stragglers_are_the_workers_far_below_the_median_commit_count():
    worker = [[0, 1, 2, 0, 1, 2, 0, 1, 2, 3]]  # worker 3 commits once, the others 3 times
    r = _result([[1, 1]], [np.arange(1.0, 11.0)], [-1], worker=worker,
                config={"workers": 4})
    assert stragglers(r) == [3]
    assert stragglers(_result([[1, 1]], [np.arange(1.0, 11.0)], [-1],
                              worker=[[0, 1, 2, 3] * 2 + [0, 1]], config={"workers": 4})) == []


@pytest.mark.slow  # several seconds; the quick tier keeps its 5-minute budget
def test_plot_run_of_a_net_shows_accuracy_stragglers_and_divergence(tmp_path):
    problem = get_problem("digits", workers=4, model="mlp:16")
    slow = Cluster(4, time_scale=(1, 1, 1, 8))
    r = asynclab.run(problem, "downpour", cluster=slow, commits=120, seeds=[0, 1],
                     progress=False)
    fig = plot_run(r, problem, tmp_path / "net.png")
    titles = [ax.get_title() for ax in fig.axes]
    assert "validation accuracy of the centre" in titles
    assert stragglers(r) == [3]
    marks = [line for line in fig.axes[0].get_lines() if line.get_marker() == "|"]
    commits_of_3 = np.flatnonzero(r.worker[0] == 3)
    np.testing.assert_array_equal(marks[0].get_xdata(), r.time[0][commits_of_3])
    assert "σ" not in fig._suptitle.get_text() and "sigma" not in fig._suptitle.get_text()
    plt.close(fig)
    gone = asynclab.run("beale", "downpour", workers=4, commits=300, seeds=[0, 1],
                        learning_rate=0.05, progress=False)
    assert gone.diverged.all()
    fig = plot_run(gone, get_problem("beale"))
    lines = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == ":"]
    want = gone.time[0][gone.diverged_at]
    np.testing.assert_allclose([line.get_xdata()[0] for line in lines], want)
    plt.close(fig)
