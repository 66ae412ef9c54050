"""A study of one's own as a table: ``asynclab.study`` against the same runs made one by
one with ``asynclab.run``, ``Result.to_frame`` against a result's arrays, the interval of
the mean against ``scipy.stats``, the refusals, and the drawings of a table."""

from __future__ import annotations

import itertools
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402

import asynclab  # noqa: E402
from asynclab import Cluster, ConfigError  # noqa: E402
from asynclab.engine import Result  # noqa: E402
from asynclab.plot import compare, grid  # noqa: E402
from asynclab.studies import mean_interval, summary  # noqa: E402

SEEDS = [0, 1, 2]
CLUSTERS = {"even": Cluster(2), "slow": Cluster(2, time_scale=(1.0, 3.0))}
RULES = ["downpour", ("adag", {"gamma": 1e-3})]
LABELS = {"downpour": ("downpour", {}), "adag (gamma=0.001)": ("adag", {"gamma": 1e-3})}
# on Beale with n = 2, η = 1e-3 converges slowly (some seeds reach the target within the
# budget, some not) and η = 3e-2 diverges within a few commits
LEARNING_RATES = [1e-3, 3e-2]
TARGET = 6.5
# every cell's calls replay the 3 seeds together, as the one-by-one runs below do: one
# compiled program per rule for both paths, so the test compiles twice
COMMON = dict(commits=60, noise=1.0, runs_per_call=3)
COLUMNS = ["rule", "cluster", "learning_rate", "seed", "final_loss", "time_to_target",
           "commits_to_target", "diverged", "diverged_at", "simulated_time",
           "mean_staleness", "events"]


@pytest.fixture(scope="module")
def tables():
    return asynclab.study("beale", rules=RULES, clusters=CLUSTERS,
                          grid={"learning_rate": LEARNING_RATES}, seeds=SEEDS,
                          target=TARGET, records=True, progress=False, **COMMON)


def _one_by_one(label, cluster, learning_rate):
    name, options = LABELS[label]
    return asynclab.run("beale", name, cluster=CLUSTERS[cluster], learning_rate=learning_rate,
                        seeds=SEEDS, record_paths=False, progress=False, **COMMON, **options)


# ----------------------------------------------------------------------------- study


def test_the_table_has_one_row_per_rule_cluster_point_and_seed(tables):
    table, _ = tables
    assert list(table.columns) == COLUMNS  # beale records no accuracy: no final_accuracy
    assert len(table) == 2 * 2 * 2 * 3
    order = list(itertools.product(LABELS, CLUSTERS, LEARNING_RATES, SEEDS))
    assert list(zip(table.rule, table.cluster, table.learning_rate, table.seed,
                    strict=True)) == order
    assert table.diverged.dtype == bool
    assert str(table.diverged_at.dtype) == "Int64"
    assert table.diverged.any() and not table.diverged.all()
    assert np.isinf(table.time_to_target).any() and np.isfinite(table.time_to_target).any()


def test_every_row_is_the_run_made_on_its_own(tables):
    """Row by row, the numbers of the same run made with asynclab.run, and the derived
    columns computed here with numpy from that run's arrays."""
    table, _ = tables
    for (label, cluster, lr), rows in table.groupby(["rule", "cluster", "learning_rate"],
                                                    sort=False):
        one = _one_by_one(label, cluster, lr)
        assert rows.seed.tolist() == SEEDS
        # bit for bit: float32 values, held exactly in float64
        np.testing.assert_array_equal(rows.final_loss.to_numpy(),
                                      one.final_loss.astype(np.float64))
        np.testing.assert_array_equal(rows.diverged.to_numpy(), one.diverged_at >= 0)
        expected_at = [pd.NA if d < 0 else int(d) for d in one.diverged_at]
        assert rows.diverged_at.tolist() == expected_at
        # one schedule for every seed: its last time, its commits, their mean staleness
        assert np.all(rows.simulated_time.to_numpy() == one.time[0, -1])
        assert one.time.shape[1] == COMMON["commits"]
        assert np.all(rows.events.to_numpy() == COMMON["commits"])
        assert np.all(rows.mean_staleness.to_numpy() == np.mean(one.staleness[0]))
        # the first record at which the loss is at most the target, inf if none (seconds
        # in float32, as Result.time_to_target gives them)
        for s, (_, row) in enumerate(rows.iterrows()):
            reached = np.flatnonzero(one.loss[s] <= np.float32(TARGET))
            seconds = np.float32(one.record_time[0, reached[0]]) if reached.size else np.inf
            commits = one.record_events[reached[0]] if reached.size else np.inf
            assert row.time_to_target == seconds
            assert row.commits_to_target == commits


def test_the_records_are_each_runs_records(tables):
    table, records = tables
    assert list(records.columns) == ["rule", "cluster", "learning_rate", "seed", "record",
                                     "event", "time", "loss"]
    one = _one_by_one("adag (gamma=0.001)", "slow", 1e-3)
    n_records = one.record_events.size
    assert len(records) == len(table) * n_records
    rows = records[(records.rule == "adag (gamma=0.001)") & (records.cluster == "slow")
                   & (records.learning_rate == 1e-3)]
    np.testing.assert_array_equal(rows.loss.to_numpy().reshape(3, n_records),
                                  one.loss.astype(np.float64))
    np.testing.assert_array_equal(rows.event.to_numpy().reshape(3, n_records),
                                  np.tile(one.record_events, (3, 1)))
    np.testing.assert_array_equal(rows.time.to_numpy().reshape(3, n_records),
                                  np.tile(one.record_time[0], (3, 1)))


def test_a_grid_per_rule_and_the_values_a_rule_ran_with():
    table = asynclab.study("beale", rules=["downpour", "adag"],
                           clusters={"even": CLUSTERS["even"]},
                           grid={"adag": {"gamma": [1e-4, 1e-2]},
                                 "downpour": {"learning_rate": [1e-3]}},
                           seeds=SEEDS, progress=False, **COMMON)
    assert list(table.columns[:5]) == ["rule", "cluster", "learning_rate", "gamma", "seed"]
    downpour = table[table.rule == "downpour"]
    adag = table[table.rule == "adag"]
    assert len(downpour) == 3 and len(adag) == 6
    assert downpour.gamma.isna().all()  # DOWNPOUR has no γ
    assert adag.gamma.tolist() == [1e-4] * 3 + [1e-2] * 3
    assert adag.learning_rate.tolist() == [1e-3] * 6  # Beale's η, which it ran with
    one = asynclab.run("beale", "adag", cluster=CLUSTERS["even"], gamma=1e-2, seeds=SEEDS,
                       record_paths=False, progress=False, **COMMON)
    np.testing.assert_array_equal(adag.final_loss.to_numpy()[3:],
                                  one.final_loss.astype(np.float64))


# ----------------------------------------------------------------------------- refusals


def _study(**changes):
    arguments = dict(rules=RULES, clusters=CLUSTERS, grid={"learning_rate": LEARNING_RATES},
                     seeds=SEEDS, progress=False, **COMMON)
    return asynclab.study("beale", **{**arguments, **changes})


def test_what_a_study_refuses_before_any_run(monkeypatch):
    def no_run(*args, **kwargs):
        raise AssertionError("a run started before every cell was checked")

    monkeypatch.setattr(asynclab.engine, "run", no_run)
    with pytest.raises(ConfigError, match="rules\\[1\\]: unknown rule 'adagio'"):
        _study(rules=["downpour", "adagio"])
    with pytest.raises(ConfigError, match="rule 'downpour' .* no hyperparameter 'gamma'.*per "
                                          "rule"):
        _study(grid={"gamma": [1e-3, 1e-2]})
    with pytest.raises(ConfigError, match="local_steps is a static hyperparameter of rule "
                                          "'downpour'"):
        _study(grid={"local_steps": [1, 2]})
    with pytest.raises(ConfigError, match="'sgd' is neither a rule's label nor"):
        _study(grid={"sgd": {"learning_rate": [1e-3]}})
    # the second rule's cell fails: nothing runs, and the message names the cell
    with pytest.raises(ConfigError, match="rule 'adag \\(gamma=-1\\)' on cluster 'even': "
                                          ".*gamma"):
        _study(rules=["downpour", ("adag", {"gamma": -1.0})])
    with pytest.raises(ConfigError, match="'downpour' names two rules"):
        _study(rules=["downpour", "downpour"])
    with pytest.raises(ConfigError, match="target_metric: beale records no accuracy"):
        _study(target=0.9, target_metric="accuracy")
    with pytest.raises(ConfigError, match="clusters\\['even'\\] must be"):
        _study(clusters={"even": 2})


def test_without_pandas_every_table_function_says_what_to_install(monkeypatch):
    result = Result(config={}, seeds=np.arange(1), time=np.ones((1, 1)),
                    worker=np.zeros((1, 1), np.int32), staleness=np.zeros((1, 1), np.int32),
                    record_events=np.arange(2), loss=np.ones((1, 2), np.float32),
                    final_params=np.zeros((1, 2), np.float32), diverged_at=np.array([-1]))
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` fails
    install = 'pip install "asynclab\\[pandas\\]"'
    for call in (_study, result.to_frame, lambda: summary(None, "final_loss"),
                 lambda: grid(None, x="learning_rate", y="final_loss")):
        with pytest.raises(ConfigError, match=install):
            call()


def test_importing_asynclab_does_not_need_pandas():
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import asynclab, asynclab.studies\n"
            "assert asynclab.study is asynclab.studies.study\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


# ----------------------------------------------------------------------------- to_frame


def test_to_frame_of_a_run_is_its_arrays_in_long_form():
    loss = np.array([[4.0, 2.0, 1.0], [4.0, 3.0, np.nan]], np.float32)
    accuracy = np.array([[0.1, 0.5, 0.7], [0.1, 0.4, np.nan]], np.float32)
    # a schedule per seed: seed 0's records at 0, 1, 3 s; seed 1's at 0, 2, 5 s
    result = Result(config={}, seeds=np.array([7, 9]), time=np.array([[1.0, 3.0], [2.0, 5.0]]),
                    worker=np.zeros((2, 2), np.int32), staleness=np.zeros((2, 2), np.int32),
                    record_events=np.array([0, 1, 2]), loss=loss,
                    final_params=np.zeros((2, 2), np.float32), diverged_at=np.array([-1, 2]),
                    metrics={"accuracy": accuracy})
    frame = result.to_frame()
    assert list(frame.columns) == ["seed", "record", "event", "time", "loss", "accuracy"]
    assert frame.seed.tolist() == [7, 7, 7, 9, 9, 9]
    assert frame.record.tolist() == [0, 1, 2] * 2
    assert frame.event.tolist() == [0, 1, 2] * 2
    assert frame.time.tolist() == [0.0, 1.0, 3.0, 0.0, 2.0, 5.0]
    np.testing.assert_array_equal(frame.loss, loss.ravel().astype(np.float64))
    np.testing.assert_array_equal(frame.accuracy, accuracy.ravel().astype(np.float64))


def test_to_frame_of_a_sweep_has_the_grid_in_front():
    rng = np.random.default_rng(0)
    loss = rng.random((2, 3, 2, 4)).astype(np.float32)  # (η, γ, seeds, records)
    grid = [["learning_rate", [0.1, 0.2]], ["gamma", [1.0, 2.0, 3.0]]]
    result = Result(config={"grid": grid}, seeds=np.array([0, 1]), time=np.array([[1.0, 2, 3]]),
                    worker=np.zeros((1, 3), np.int32), staleness=np.zeros((1, 3), np.int32),
                    record_events=np.array([0, 1, 2, 3]), loss=loss,
                    final_params=np.zeros((2, 3, 2, 2), np.float32),
                    diverged_at=np.full((2, 3, 2), -1))
    frame = result.to_frame()
    assert list(frame.columns[:3]) == ["learning_rate", "gamma", "seed"]
    assert len(frame) == 2 * 3 * 2 * 4
    for i, j, s, r in itertools.product(range(2), range(3), range(2), range(4)):
        row = frame[(frame.learning_rate == grid[0][1][i]) & (frame.gamma == grid[1][1][j])
                    & (frame.seed == s) & (frame.record == r)]
        assert len(row) == 1
        assert row.loss.item() == float(loss[i, j, s, r])
        assert row.time.item() == [0.0, 1.0, 2.0, 3.0][r]


# ----------------------------------------------------------------------------- intervals


def test_the_interval_of_the_mean_is_scipys_t_interval():
    values = np.array([1.0, 2.0, 4.0, 8.0, np.nan, np.inf])  # the last two left out
    finite = values[:4]
    mean, low, high, n = mean_interval(values, 0.9)
    want = stats.t.interval(0.9, 3, loc=finite.mean(), scale=stats.sem(finite))
    assert n == 4 and mean == pytest.approx(3.75)
    np.testing.assert_allclose([low, high], want, rtol=1e-12)
    # one value: no interval; equal values: the mean itself
    assert np.isnan(mean_interval([3.0])[1:3]).all()
    assert mean_interval([2.0, 2.0, 2.0])[1:3] == (2.0, 2.0)

    table = pd.DataFrame({"rule": ["a"] * 4 + ["b"] * 3, "seed": [0, 1, 2, 3, 0, 1, 2],
                          "final_loss": [1.0, 2.0, 4.0, 8.0, 5.0, np.nan, 7.0]})
    summarised = summary(table, "final_loss")
    assert summarised.rule.tolist() == ["a", "b"]
    assert summarised.n.tolist() == [4, 2] and summarised.excluded.tolist() == [0, 1]
    b = stats.t.interval(0.95, 1, loc=6.0, scale=stats.sem([5.0, 7.0]))
    np.testing.assert_allclose(summarised[["low", "high"]].to_numpy()[1], b, rtol=1e-12)


# ----------------------------------------------------------------------------- drawings


def _runs_table():
    """2 rules × 2 clusters × 3 η × 4 seeds of known numbers; one run diverged."""
    rows = []
    for r, rule in enumerate(["downpour", "adag"]):
        for c, cluster in enumerate(["even", "slow"]):
            for lr in (1e-3, 1e-2, 1e-1):
                for seed in range(4):
                    rows.append((rule, cluster, lr, seed, (r + 1) * lr * 10 + c + seed * 0.1))
    table = pd.DataFrame(rows, columns=["rule", "cluster", "learning_rate", "seed",
                                        "final_loss"])
    table.loc[3, "final_loss"] = np.nan
    return table


def test_grid_draws_one_line_and_band_per_rule_in_each_panel():
    table = _runs_table()
    fig = grid(table, x="learning_rate", y="final_loss", col="cluster")
    panels = [ax for ax in fig.axes if ax.has_data()]
    assert len(panels) == 2
    for ax, cluster in zip(panels, ["even", "slow"], strict=True):
        assert ax.get_title() == f"cluster = {cluster}"
        lines = ax.get_lines()
        assert len(lines) == 2 and len(ax.collections) == 2  # a line and a band per rule
        for line, rule in zip(lines, ["downpour", "adag"], strict=True):
            rows = table[(table.rule == rule) & (table.cluster == cluster)]
            means = rows.groupby("learning_rate").final_loss.mean()  # NaN skipped
            np.testing.assert_allclose(line.get_xdata(), means.index)
            np.testing.assert_allclose(line.get_ydata(), means.to_numpy())
    legend = fig.axes[1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["downpour", "adag"]
    assert "4 seeds" in fig.get_suptitle()
    assert "1 of 48 runs" in fig.get_suptitle()
    with pytest.raises(ConfigError, match="cluster varies"):
        grid(table, x="learning_rate", y="final_loss")
    with pytest.raises(ConfigError, match="no column 'gamma'"):
        grid(table, x="gamma", y="final_loss")
    plt.close("all")


def test_grid_of_a_categorical_x_draws_error_bars_of_the_t_interval():
    table = _runs_table()
    fig = grid(table, x="cluster", y="final_loss", col="learning_rate")
    panels = [ax for ax in fig.axes if ax.has_data()]
    assert len(panels) == 3
    ax = panels[1]  # η = 1e-2
    assert len(ax.containers) == 2  # one set of error bars per rule
    for container, rule in zip(ax.containers, ["downpour", "adag"], strict=True):
        segments = container.lines[2][0].get_segments()  # one vertical bar per cluster
        for segment, cluster in zip(segments, ["even", "slow"], strict=True):
            values = table[(table.rule == rule) & (table.cluster == cluster)
                           & (table.learning_rate == 1e-2)].final_loss.to_numpy()
            want = stats.t.interval(0.95, values.size - 1, loc=values.mean(),
                                    scale=stats.sem(values))
            np.testing.assert_allclose(sorted(segment[:, 1]), want, rtol=1e-9)
    plt.close("all")


def _records_table():
    """2 rules × 3 seeds × 5 records on one schedule per rule."""
    rows = []
    for r, rule in enumerate(["downpour", "adag"]):
        for seed in range(3):
            for record in range(5):
                rows.append((rule, 1e-3, seed, record, 10 * record, 2.0 * record,
                             (r + 1) * (5 - record) + seed))
    return pd.DataFrame(rows, columns=["rule", "learning_rate", "seed", "record", "event",
                                       "time", "loss"])


def test_compare_draws_a_table_of_records_with_its_intervals():
    records = _records_table()
    ax = compare(records, against="commits")
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["downpour", "adag"]
    assert len(ax.collections) == 2
    for line, rule in zip(lines, ["downpour", "adag"], strict=True):
        values = records[records.rule == rule].pivot(index="seed", columns="record",
                                                      values="loss").to_numpy()
        np.testing.assert_allclose(line.get_xdata(), [0, 10, 20, 30, 40])
        np.testing.assert_allclose(line.get_ydata(), values.mean(axis=0))
    assert "3 seeds" in ax.get_title() and "95% t interval" in ax.get_title()
    with pytest.raises(ConfigError, match="band"):
        compare(records, band=(0.1, 0.9))
    with pytest.raises(ConfigError, match="table of records"):
        compare(_runs_table())
    plt.close("all")
