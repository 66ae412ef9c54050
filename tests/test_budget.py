"""One budget guard and a simulator that always ends: a horizon's events estimated from
the timing model as it is, hopeless failures refused before any work, a run that cannot
progress stopped with its cause, and a long run's time said before it starts."""

import numpy as np
import pytest

import asynclab
from asynclab import Cluster, ComputeTime, ConfigError, SemiSync, _validate
from asynclab.cluster import (
    Availability,
    _process,
    expected_events,
    heterogeneous,
    simulate_async,
    simulate_sync,
)
from asynclab.engine import _budget
from asynclab.rules import ScheduleFacts

ASYNC, SYNC = ScheduleFacts(False, 1), ScheduleFacts(True, 1)


@pytest.mark.parametrize("cluster", [
    Cluster(8),
    Cluster(6, ComputeTime("lognormal", 1.0, 0.5), time_scale=heterogeneous(6, 1.0)),
    Cluster(4, server_time=0.4),
])
def test_a_horizons_estimate_is_about_what_the_simulator_makes(cluster):
    """Closed loop: the commits in a long horizon are the sum of the workers' rates (at
    most one per service time); the estimate errs high, never far below."""
    made = simulate_async(cluster, horizon=3000.0, rng=1).n_events
    estimate = expected_events(cluster, ASYNC, 3000.0)
    assert 0.9 * made <= estimate <= 1.6 * made, (made, estimate)


def test_a_fast_worker_counts_for_its_many_commits():
    """The old estimate took the average worker; one worker 1000 times faster makes most
    of the commits, and the estimate sees them."""
    scale = (1e-3, 1.0, 1.0, 1.0)
    cluster = Cluster(4, ComputeTime("constant"), time_scale=scale)
    made = simulate_async(cluster, horizon=50.0, rng=0).n_events
    assert made > 40_000
    assert expected_events(cluster, ASYNC, 50.0) >= made


def test_rounds_with_a_deadline_are_counted_by_the_deadline():
    cluster = Cluster(4)
    semisync = SemiSync(quorum=2, deadline=0.01)
    made = simulate_sync(cluster, horizon=5.0, rng=0, semisync=semisync).n_events
    estimate = expected_events(cluster, SYNC, 5.0, semisync)
    assert estimate >= made and estimate <= 2 * made + 2, (made, estimate)


def test_a_horizon_too_long_for_the_memory_is_refused_before_any_work():
    """Forty orders of spread in the workers' speeds: some worker steps in 1e-17 s; the
    schedule of 10 s would not fit, and the guard says so at once."""
    cluster = Cluster(8, time_scale=heterogeneous(8, 40.0))
    with pytest.raises(ConfigError, match="horizon: this run would need"):
        asynclab.prepare("beale", "downpour", cluster=cluster, horizon=10.0)


def test_hopeless_failures_are_refused_before_any_work():
    cluster = Cluster(4, availability=Availability(mtbf=1e-9, mttr=1.0))
    with pytest.raises(ConfigError, match="every phase is cut by a failure"):
        asynclab.prepare("beale", "downpour", cluster=cluster, commits=20)


def test_a_run_without_progress_stops_with_its_cause(monkeypatch):
    """Failures every 0.02 s against phases of 1 s: a phase survives with a chance of
    e^-50, above what prepare refuses by formula only when the chance is tiny; the
    simulator stops after its patience of events without a commit, and says why."""
    monkeypatch.setattr(_process, "PATIENCE", 20_000)
    cluster = Cluster(2, ComputeTime("constant"),
                      availability=Availability(mtbf=0.05, mttr=0.01))
    with pytest.raises(ConfigError) as error:
        simulate_async(cluster, commits=5, rng=0)
    text = str(error.value)
    assert "made no progress" in text and "20,000 simulator events" in text
    assert "mtbf" in text


def test_rounds_that_close_empty_for_ever_stop(monkeypatch):
    """A deadline far shorter than any phase: every round closes with nobody in; with a
    horizon the rounds never end on their own."""
    monkeypatch.setattr(_process, "PATIENCE", 20_000)
    cluster = Cluster(4, ComputeTime("constant"))
    with pytest.raises(ConfigError, match="no round anyone counted in.*deadline"):
        simulate_sync(cluster, horizon=1e9, rng=0,
                      semisync=SemiSync(quorum=2, deadline=1e-3))


def test_the_patience_is_stated_and_grows_with_the_workers():
    assert _process.patience(4) == _process.PATIENCE
    assert _process.patience(10**4) == 1000 * 10**4


def test_replay_passes_the_same_memory_guard(monkeypatch):
    """asynclab.replay of given traces (the studies' path) is checked as run is."""
    trace = simulate_async(Cluster(4), commits=2000, rng=0)
    rule = asynclab.rules.make_rule("downpour", learning_rate=1e-3)
    monkeypatch.setattr(_validate, "available_memory", lambda: 10**5)
    with pytest.raises(ConfigError, match="would need about"):
        asynclab.replay(rule, "beale", trace, seeds=range(64))


def test_a_long_run_says_its_estimated_time_before_it_starts(capsys):
    spec = asynclab.prepare("quadratic", "downpour", workers=16, commits=10**6,
                            seeds=range(1000), problem_options={"dim": 1000},
                            record_every=10**6)
    seconds = asynclab.engine.estimated_seconds(spec)
    # the model: one schedule simulated, 1000 replays of 16 λ-step events a commit
    flops = 1000 * 10**6 * (20 * 1000 + 4 * 1000 + 4 * 1000)
    assert seconds == pytest.approx(10**6 / _budget.SIMULATOR_EVENTS
                                    + flops / _budget.REPLAY_FLOPS)
    _budget.announce(seconds, None)
    assert "estimated to take about" in capsys.readouterr().err
    _budget.announce(seconds, False)  # no progress asked: nothing said
    _budget.announce(1.0, None)  # a short run: nothing said
    assert capsys.readouterr().err == ""


def test_counts_are_bounded_where_they_reach_an_int32():
    with pytest.raises(ConfigError, match="commits"):
        asynclab.prepare("beale", "downpour", commits=2**40)
    with pytest.raises(ConfigError, match="devices"):
        asynclab.prepare("beale", "downpour", commits=10, backend="pmap", devices=10**6)
    assert np.iinfo(np.int32).max > 4096


def _tiny_memory(monkeypatch):
    monkeypatch.setattr(_validate, "available_memory", lambda: 10**5)


SIM = dict(workers=4, commits=5000, seeds=range(32))


@pytest.mark.parametrize("entry", [
    "run", "sweep", "replay", "replay_grid", "study", "run_devices",
    "cli run", "cli sweep", "cli trace show", "cli trace export", "cli trace inspect",
])
def test_every_simulating_entry_point_passes_the_budget_guard(entry, monkeypatch, tmp_path,
                                                             capsys):
    """Each way of simulating or replaying refuses, before any work, what would not fit:
    a new one that skips the guard fails here."""
    from asynclab.cli import main

    trace = simulate_async(Cluster(4), commits=5000, rng=0)
    rule = asynclab.rules.make_rule("downpour", learning_rate=1e-3)
    monkeypatch.chdir(tmp_path)
    _tiny_memory(monkeypatch)
    calls = {
        "run": lambda: asynclab.run("beale", "downpour", **SIM),
        "sweep": lambda: asynclab.sweep("beale", "downpour", grid={"learning_rate": [1e-3]},
                                        **SIM),
        "replay": lambda: asynclab.replay(rule, "beale", trace, seeds=range(32)),
        "replay_grid": lambda: asynclab.engine.replay_grid(
            rule, asynclab.problems.get_problem("beale"), trace,
            grid={"learning_rate": [1e-3, 2e-3]}, seeds=range(32)),
        "study": lambda: asynclab.study("beale", rules=["downpour"], **SIM),
        "run_devices": lambda: asynclab.backends.run_devices(asynclab.prepare(
            "beale", "downpour", workers=1, commits=5000, backend="pmap")),
    }
    argv = {
        "cli run": ["run", "--commits", "5000", "--seeds", "0:32"],
        "cli sweep": ["sweep", "--grid", "learning_rate=1e-3", "--commits", "5000",
                      "--seeds", "0:32"],
        "cli trace show": ["trace", "show", "--commits", "200000"],
        "cli trace export": ["trace", "export", "--commits", "200000"],
        # the log itself fits only in the real memory: its simulation of 10^12 commits not
        "cli trace inspect": ["trace", "inspect", "example", "--commits", str(10**12)],
    }
    if entry == "cli trace inspect":
        monkeypatch.undo()
        monkeypatch.chdir(tmp_path)
    if entry in calls:
        with pytest.raises(ConfigError, match="would need about"):
            calls[entry]()
        return
    assert main(argv[entry]) == 2
    assert "would need about" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_extreme_values_are_refused_or_run_sensibly():
    """Values that passed one check and broke deeper: a score name with a typo, worker
    counts that are not integers, speeds a thousand orders apart."""
    from asynclab.engine import best_point, scores
    from asynclab.notebook import momentum_data

    result = asynclab.sweep("beale", "downpour", workers=2, commits=10,
                            grid={"learning_rate": [1e-3, 2e-3]}, progress=False)
    with pytest.raises(ConfigError, match="unknown score 'final_acuracy'"):
        best_point(result, scores(result, "final_loss"), "final_acuracy")
    with pytest.raises(ConfigError, match=r"workers\[0\] must be an integer"):
        momentum_data([2.5])
    rule = asynclab.rules.make_rule("async_diloco", learning_rate=1e-3, local_steps=4,
                                    dynamic=True, speeds=(1e308, 1e-308, 1.0, 1.0))
    assert rule.worker_steps == (4, 1, 1, 1)  # the fastest takes H, the others one step
