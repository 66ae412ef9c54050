"""The explorer driven from code: set a control's ``.value``, check what is plotted."""

import numpy as np
import pytest
from traitlets import TraitError

from asynclab.engine._compiled import TRACE_COUNT
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
    # ... and is marked at the edge of an axis that ends at the 99.5 % quantile of τ
    tau = explorer.result.staleness[explorer.result.trace_index[0]]
    edge = int(np.quantile(tau, 0.995, method="inverted_cdf")) + 1
    assert explorer.axes["staleness"].get_xlim()[1] == edge + 0.5 < tau.max()
    beyond = int(np.count_nonzero(tau > edge))
    assert beyond >= 1
    assert explorer.artists["staleness_outliers"].get_text().startswith(
        f"{beyond} commit(s) with τ > {edge}")


def test_seeds_control_draws_one_loss_curve_per_seed(explorer):
    explorer.controls["seeds"].value = 3
    assert len(explorer.artists["loss_time"]) == 3
    xt = explorer.artists["loss_time"][0].get_xdata()
    np.testing.assert_allclose(xt[1:], explorer.result.time[0][explorer.result.record_events[1:]
                                                                - 1])


@pytest.mark.slow  # 3 s or more of runs behind the widgets; the other controls run quick
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


@pytest.mark.slow  # 3 s or more of runs behind the widgets; the other controls run quick
def test_rule_controls_follow_the_rule_declaration(explorer):
    explorer.controls["rule"].value = "adag"
    assert set(explorer.rule_controls) == {"gamma", "norm", "worker_momentum",
                                           "server_momentum", "inner"}
    assert explorer.rule_controls["gamma"].value == pytest.approx(1e-4)
    inner = explorer.rule_controls["inner"]  # the workers' own optimizer, a drop-down
    assert inner.value == "sgd" and set(inner.options) == {"sgd", "adam"}
    assert explorer.result.config["rule"] == "adag"
    assert set(rule_controls("aeasgd")) == {"elasticity", "worker_momentum", "inner"}
    explorer.controls["rule"].value = "aeasgd"
    assert explorer.controls["local_steps"].value == 32  # the rule's own default λ


def test_a_one_worker_rule_sets_one_worker(explorer):
    explorer.controls["rule"].value = "sequential_sgd"
    assert explorer.controls["workers"].value == 1
    assert explorer.result.config["workers"] == 1
    assert "cannot run" not in explorer.message.value and explorer.error is None


@pytest.mark.slow  # 3 s or more of runs behind the widgets; the other controls run quick
def test_impossible_combination_is_a_message_not_a_traceback(explorer):
    explorer.controls["rule"].value = "sequential_sgd"
    picture = explorer.image.value
    explorer.controls["workers"].value = 4  # sequential SGD runs one worker only
    assert "sequential_sgd runs one worker" in explorer.message.value
    assert explorer.image.value == picture
    explorer.controls["workers"].value = 1  # back to the run drawn before, the same bits
    assert "cannot run" not in explorer.message.value
    assert explorer.image.value == picture


# a new value for every control of the explorer, in an order where each one changes the run
# (the shape only matters for lognormal/gamma, the straggler's worker and time only with a
# delay); the problem control visits every surface and comes back
CONTROL_MOVES = [
    ("problem", "rosenbrock"), ("problem", "booth"), ("problem", "himmelblau"),
    ("problem", "beale"), ("workers", 3), ("learning_rate", 0.002), ("noise", 2.0),
    ("commits", 300), ("seeds", 3), ("distribution", "lognormal"), ("shape", 2.0),
    ("heterogeneity", 0.5), ("straggler_delay", 30.0), ("straggler_worker", 1),
    ("straggler_at", 10.0), ("rule", "model_averaging"), ("local_steps", 4),
    ("rule", "downpour"),
]


@pytest.mark.slow  # ~20 s: 22 runs and redraws; the quick tests move each kind of control
def test_every_control_changes_the_picture_without_an_error(explorer):
    moved = {name for name, _ in CONTROL_MOVES}
    assert moved == set(explorer.controls), "a control the test does not move"
    for name, value in CONTROL_MOVES:
        picture = explorer.image.value
        explorer.controls[name].value = value
        assert explorer.error is None, (name, explorer.error)
        assert "cannot run" not in explorer.message.value, (name, explorer.message.value)
        assert explorer.image.value != picture, name
        assert explorer.result.config["workers"] == explorer.controls["workers"].value
    assert explorer.result.config["problem"] == "beale"
    # DOWNPOUR's own controls: Adam first (momenta apply to the SGD inner optimizer)
    for name, value in [("inner", "adam"), ("inner", "sgd"), ("worker_momentum", 0.3),
                        ("server_momentum", 0.3)]:
        picture = explorer.image.value
        explorer.rule_controls[name].value = value
        assert explorer.error is None and "cannot run" not in explorer.message.value, name
        assert explorer.image.value != picture, name
    assert set(explorer.rule_controls) == {"inner", "worker_momentum", "server_momentum"}


@pytest.mark.slow  # 3 s or more of runs behind the widgets; the other controls run quick
def test_the_problem_control_redraws_the_surface(explorer):
    explorer.controls["problem"].value = "himmelblau"
    assert explorer.result.config["problem"] == "himmelblau"
    # the centre starts at Himmelblau's start, and the contour axes show its domain
    from asynclab.problems import himmelblau
    np.testing.assert_allclose(center_line(explorer)[0], np.asarray(himmelblau().start))
    (x0, x1), (y0, y1) = explorer.axes["paths"].get_xlim(), explorer.axes["paths"].get_ylim()
    (dx0, dx1), (dy0, dy1) = himmelblau().domain
    assert (x0, x1, y0, y1) == pytest.approx((dx0, dx1, dy0, dy1))


def test_an_error_in_a_callback_is_shown_on_the_page(explorer, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(explorer, "_draw", broken)
    explorer.controls["learning_rate"].value = 0.002
    assert isinstance(explorer.error, RuntimeError)
    assert "RuntimeError: boom" in explorer.message.value
    monkeypatch.undo()
    explorer.controls["learning_rate"].value = 0.003
    assert explorer.error is None


def test_time_slider_cuts_the_paths(explorer):
    whole = center_line(explorer).shape[0]
    explorer.time.value = 100
    records = explorer.result.record_events
    assert center_line(explorer).shape[0] == np.count_nonzero(records <= 100) < whole
    shown = sum(line.get_xydata().shape[0] for line in explorer.artists["workers"])
    assert shown == 100  # one point per commit before the 100th
    when = explorer.result.time[0][99]  # the 100th commit's simulated time
    assert explorer.artists["loss_time_now"].get_xdata()[0] == when
    assert explorer.artists["timeline_now"].get_xdata()[0] == when


def test_timeline_marks_every_commit_of_every_worker(explorer):
    # asynchronous: one mark per commit, at its time, on its worker's row, coloured by its
    # staleness, over the intervals of the same schedule simulated with its activity
    result = explorer.result
    marks = explorer.artists["timeline"]
    np.testing.assert_array_equal(marks.get_offsets()[:, 0], result.time[0])
    np.testing.assert_array_equal(marks.get_offsets()[:, 1], result.worker[0])
    np.testing.assert_array_equal(marks.get_array(), result.staleness[0])
    np.testing.assert_array_equal(explorer.trace.time, result.time[0])
    activity = explorer.trace.activity
    assert activity.seconds().sum() == pytest.approx(result.time[0][-1] * 4)
    kinds = {c.get_label() for c in explorer.axes["timeline"].collections}
    assert "compute" in kinds
    # synchronous: every worker at the end of each round
    explorer.controls["rule"].value = "model_averaging"
    result = explorer.result
    marks = explorer.artists["timeline"].get_offsets()
    assert marks.shape == (4 * result.n_events, 2)
    np.testing.assert_array_equal(np.unique(marks[:, 1]), np.arange(4))
    np.testing.assert_array_equal(np.unique(marks[:, 0]), np.unique(result.time[0]))
    np.testing.assert_array_equal(explorer.trace.time, result.time[0])


def test_the_picture_is_rendered_at_twice_its_shown_size(explorer):
    from io import BytesIO

    from PIL import Image

    width, height = Image.open(BytesIO(explorer.image.value)).size
    assert (width, height) == (2 * 11 * SMALL["dpi"], 2 * 8 * SMALL["dpi"])
    assert explorer.image.layout.width == f"{11 * SMALL['dpi']}px"


def test_synchronous_rule_draws_every_worker(explorer):
    explorer.controls["rule"].value = "model_averaging"
    assert len(explorer.artists["workers"]) == 4
    assert explorer.artists["workers"][0].get_xydata().shape[0] == explorer.result.n_events


def refused(message):
    """Whether the page says a run could not be made (a summary says nothing of it)."""
    return "cannot run" in message or "the explorer failed" in message


def watch_runs(explorer, monkeypatch):
    """Every message the page shows and every run, from now on."""
    messages, runs = [], []
    explorer.message.observe(lambda change: messages.append(change["new"]), names="value")
    update = explorer.update

    def counted():
        runs.append(explorer.controls["rule"].value)
        update()

    monkeypatch.setattr(explorer, "update", counted)
    return messages, runs


def test_a_rule_switch_rebuilds_its_controls_then_runs_once(explorer, monkeypatch):
    # DOWNPOUR's controls (inner, momenta) are not mixed's: a run with the new rule and the
    # old controls would flash "rule 'mixed' has no hyperparameter 'inner'" on the page
    messages, runs = watch_runs(explorer, monkeypatch)
    explorer.controls["rule"].value = "mixed"
    assert messages and not any(map(refused, messages)), messages
    assert runs == ["mixed"]
    assert explorer.error is None
    assert explorer.result.config["rule"] == "mixed"
    assert explorer.result.config["hyperparameters"]["group_size"] == 2


def test_mixed_group_size_and_between_are_drop_downs():
    controls = rule_controls("mixed", workers=6)
    group, between = controls["group_size"], controls["between"]
    assert tuple(group.options) == (1, 2, 3, 6) and group.value == 2
    # the rules mixed's docstring names as those it runs between groups
    assert set(between.options) == {"downpour", "agn", "dynsgd", "adag", "staleness_aware",
                                    "dc_asgd", "gap_aware"}
    assert between.value == "downpour"
    for control, bad in ((group, 4), (between, "model_averaging")):
        with pytest.raises(TraitError):
            control.value = bad
    # a group size that does not divide n starts at the largest divisor below it
    assert rule_controls("mixed", workers=7)["group_size"].options == (1, 7)
    assert rule_controls("mixed", workers=7)["group_size"].value == 1


@pytest.mark.slow  # ~10 s: mixed compiled for three structures
def test_a_worker_count_change_keeps_mixed_groups_valid_and_runs_once(explorer, monkeypatch):
    explorer.controls["rule"].value = "mixed"
    messages, runs = watch_runs(explorer, monkeypatch)
    explorer.controls["workers"].value = 6
    group = explorer.rule_controls["group_size"]
    assert tuple(group.options) == (1, 2, 3, 6) and group.value == 2
    assert runs == ["mixed"] and not any(map(refused, messages)), messages
    assert explorer.result.config["workers"] == 6
    assert explorer.controls["straggler_worker"].max == 5
    explorer.controls["workers"].value = 5  # 2 does not divide 5: one group per worker
    assert tuple(group.options) == (1, 5) and group.value == 1
    assert explorer.result.config["hyperparameters"]["group_size"] == 1
    explorer.rule_controls["between"].value = "adag"
    assert explorer.result.config["hyperparameters"]["between"] == "adag"
    assert runs == ["mixed"] * 3 and explorer.error is None
    assert not any(map(refused, messages)), messages
