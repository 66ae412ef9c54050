"""The explorer driven from code: set a control's ``.value``, check what is plotted."""

import numpy as np
import pytest

from asynclab.engine._replay import TRACE_COUNT
from asynclab.notebook import Explorer, rule_controls

# small runs; every explorer of the same structure reuses one compilation
SMALL = dict(commits=200, seeds=2, noise=0.0, straggler_delay=0.0, dpi=40)


def beale_gradient(x, y):
    """∇ of Beale's function, written out by hand."""
    terms = [(1.5, 1), (2.25, 2), (2.625, 3)]
    gx = sum(2 * (c - x + x * y**k) * (-1 + y**k) for c, k in terms)
    gy = sum(2 * (c - x + x * y**k) * (k * x * y ** (k - 1)) for c, k in terms)
    return np.array([gx, gy])


def center_line(explorer):
    return explorer.artists["center"][0].get_xydata()


def gaps(result, worker):
    """Simulated seconds between consecutive commits of ``worker``."""
    times = result.time[0][result.worker[0] == worker]
    return np.diff(times)


@pytest.fixture
def explorer():
    return Explorer(**SMALL)


def test_first_commit_moves_the_center_by_eta_times_the_gradient(explorer):
    # noise-free DOWNPOUR: the first commit is one plain gradient step from the start
    start = np.array([1.0, 1.75])
    for eta in (0.001, 0.004):
        explorer.controls["learning_rate"].value = eta
        path = center_line(explorer)
        np.testing.assert_allclose(path[0], start, rtol=1e-6)
        np.testing.assert_allclose(path[1], start - eta * beale_gradient(*start), rtol=1e-4)


def test_larger_learning_rate_moves_farther_in_the_first_commits(explorer):
    explorer.controls["learning_rate"].value = 0.001
    near = np.linalg.norm(center_line(explorer)[20] - center_line(explorer)[0])
    explorer.controls["learning_rate"].value = 0.004
    far = np.linalg.norm(center_line(explorer)[20] - center_line(explorer)[0])
    assert far > 2 * near


def test_more_workers_draw_more_worker_paths(explorer):
    assert len(explorer.artists["workers"]) == 4
    explorer.controls["workers"].value = 7
    assert len(explorer.artists["workers"]) == 7
    # every worker's line holds exactly its own commits
    counts = np.bincount(explorer.result.worker[0], minlength=7)
    lengths = [line.get_xydata().shape[0] for line in explorer.artists["workers"]]
    assert lengths == counts.tolist()
    assert explorer.controls["straggler_worker"].max == 6


def test_a_straggler_opens_a_long_gap_in_its_commits(explorer):
    # 200 commits of 4 workers: about 50 s of exponential steps of mean 1 s
    assert gaps(explorer.result, 2).max() < 20
    with explorer.hold():
        explorer.controls["straggler_worker"].value = 2
        explorer.controls["straggler_at"].value = 5.0
        explorer.controls["straggler_delay"].value = 30.0
    assert gaps(explorer.result, 2).max() >= 30.0
    assert gaps(explorer.result, 1).max() < 20
    # the straggler's late commit is stale by the commits the others made meanwhile
    edges = explorer.artists["staleness"].get_data().edges
    assert edges[-1] > 30


def test_seeds_control_draws_one_loss_curve_per_seed(explorer):
    explorer.controls["seeds"].value = 3
    for key in ("loss_time", "loss_commits"):
        assert len(explorer.artists[key]) == 3
    xs = explorer.artists["loss_commits"][0].get_xdata()
    np.testing.assert_array_equal(xs, explorer.result.record_events)
    xt = explorer.artists["loss_time"][0].get_xdata()
    np.testing.assert_allclose(xt[1:], explorer.result.time[0][explorer.result.record_events[1:]
                                                                - 1])


def test_real_valued_controls_do_not_compile_again(explorer):
    before = TRACE_COUNT["chunk"]
    changes = [("learning_rate", 0.002), ("heterogeneity", 0.5), ("straggler_delay", 30.0),
               ("straggler_at", 10.0), ("distribution", "lognormal"), ("shape", 2.0)]
    for name, value in changes:
        old = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.image.value != old, name
    explorer.rule_controls["server_momentum"].value = 0.5
    assert TRACE_COUNT["chunk"] == before


def test_noise_variance_is_a_real_valued_control(explorer):
    explorer.controls["noise"].value = 1.0  # 0 -> noisy: the one compilation it may take
    before = TRACE_COUNT["chunk"]
    spread = []
    for value in (2.0, 8.0):
        old = explorer.image.value
        explorer.controls["noise"].value = value
        assert explorer.image.value != old
        assert explorer.result.config["noise"] == value
        spread.append(np.ptp(explorer.result.final_loss))  # the seeds' losses differ
    assert TRACE_COUNT["chunk"] == before
    assert all(s > 0 for s in spread)


def test_rule_controls_follow_the_rule_declaration(explorer):
    explorer.controls["rule"].value = "adag"
    assert set(explorer.rule_controls) == {"gamma", "norm", "worker_momentum",
                                           "server_momentum", "inner"}
    assert explorer.rule_controls["gamma"].value == pytest.approx(1e-4)
    assert explorer.rule_controls["inner"].value == "sgd"  # the workers' own optimizer
    assert explorer.result.config["rule"] == "adag"
    assert set(rule_controls("aeasgd")) == {"elasticity", "worker_momentum", "inner"}
    explorer.controls["rule"].value = "aeasgd"
    assert explorer.controls["local_steps"].value == 32  # the rule's own default λ


def test_impossible_combination_is_a_message_not_a_traceback(explorer):
    picture = explorer.image.value
    explorer.controls["rule"].value = "sequential_sgd"  # one worker only, n = 4 here
    assert "sequential_sgd runs one worker" in explorer.message.value
    assert explorer.image.value == picture
    explorer.controls["workers"].value = 1
    assert "cannot run" not in explorer.message.value
    assert explorer.image.value != picture


def test_time_slider_cuts_the_paths(explorer):
    whole = center_line(explorer).shape[0]
    explorer.time.value = 100
    records = explorer.result.record_events
    assert center_line(explorer).shape[0] == np.count_nonzero(records <= 100) < whole
    shown = sum(line.get_xydata().shape[0] for line in explorer.artists["workers"])
    assert shown == 100  # one point per commit before the 100th
    assert explorer.artists["loss_commits_now"].get_xdata()[0] == 100


def test_synchronous_rule_draws_every_worker(explorer):
    explorer.controls["rule"].value = "model_averaging"
    assert len(explorer.artists["workers"]) == 4
    assert explorer.artists["workers"][0].get_xydata().shape[0] == explorer.result.n_events
