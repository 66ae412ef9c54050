"""Availability, failures and goodput: the simulator's lost work and rejoin pulls, the
replay's rejoin events, goodput on every Result, and the refusals."""

import math

import numpy as np
import pytest

from asynclab import run
from asynclab._errors import ConfigError
from asynclab.cluster import (
    KINDS,
    Availability,
    Cluster,
    ComputeTime,
    SemiSync,
    goodput,
    read_availability,
    simulate_async,
    simulate_sync,
)
from asynclab.engine import Result, replay
from asynclab.problems import quadratic
from asynclab.rules import downpour

CONSTANT = ComputeTime("constant", mean=1.0)
FAILED = KINDS.index("failed")


def _same_trace(a, b):
    for field in ("time", "worker", "pulled_clock", "staleness"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


# ------------------------------------------------------------------ no failures: the plain run


# the quick tier: a distributed server time; the slow tier no server and a constant one
@pytest.mark.parametrize("server_time", [pytest.param(0.0, marks=pytest.mark.slow),
                                         pytest.param(0.3, marks=pytest.mark.slow),
                                         ComputeTime("exponential", mean=0.2)])
def test_no_failure_in_the_run_is_the_plain_run_bit_for_bit(server_time):
    """Churn whose first failure comes long after the run, and a schedule whose only
    outage does too: the trace is the plain one (workers' and the server's draws are
    untouched by the failures' own generator), and so is the replay."""
    plain = Cluster(4, ComputeTime("exponential"), server_time=server_time)
    churn = Cluster(4, ComputeTime("exponential"), server_time=server_time,
                    availability=Availability(mtbf=1e12, mttr=1.0))
    late = Cluster(4, ComputeTime("exponential"), server_time=server_time,
                   availability=Availability(schedule=[(2, 1e9, 2e9)]))
    a = simulate_async(plain, local_steps=2, commits=300, rng=7)
    for cluster in (churn, late):
        b = simulate_async(cluster, local_steps=2, commits=300, rng=7)
        _same_trace(a, b)
        assert b.failures.n_failures == 0
    # synchronous rounds too
    a_sync = simulate_sync(plain, local_steps=2, rounds=100, rng=7)
    for cluster in (churn, late):
        b_sync = simulate_sync(cluster, local_steps=2, rounds=100, rng=7)
        np.testing.assert_array_equal(a_sync.time, b_sync.time)
        np.testing.assert_array_equal(a_sync.duration, b_sync.duration)
        assert b_sync.failures.n_failures == 0
    problem = quadratic(dim=4, condition=10.0)
    ra = replay(downpour(0.05, 2), problem, a, seeds=[0, 1], noise=1.0, record_every=10)
    rb = replay(downpour(0.05, 2), problem, b, seeds=[0, 1], noise=1.0, record_every=10)
    np.testing.assert_array_equal(ra.loss, rb.loss)
    np.testing.assert_array_equal(ra.final_params, rb.final_params)
    assert ra.goodput.tolist() == rb.goodput.tolist() == [1.0]


def test_goodput_is_one_without_failures_or_discarded_work():
    cluster = Cluster(3, ComputeTime("exponential"))
    assert goodput(simulate_async(cluster, commits=50, rng=0))[0] == 1.0
    assert goodput(simulate_sync(cluster, rounds=20, rng=0))[0] == 1.0
    stale = simulate_sync(cluster, rounds=20, rng=0, semisync=SemiSync(quorum=2, late="stale"))
    assert goodput(stale)[0] == 1.0
    # discarded semi-synchronous work: every worker starts λ steps per round
    discard = simulate_sync(cluster, local_steps=2, rounds=20, rng=0,
                            semisync=SemiSync(quorum=2))
    assert goodput(discard)[0] == pytest.approx(2 * 20 * 2 / (3 * 20 * 2))
    result = run("quadratic", "downpour", workers=3, commits=40, seeds=[0, 1])
    assert result.goodput.tolist() == [1.0]
    # useful evaluations per device-second: λ = 1 per commit, over n × duration
    assert result.goodput_per_device_second[0] == pytest.approx(
        40 / (3 * result.time[0, -1]))


# ------------------------------------------------------------ a hand-made schedule, by hand


def test_hand_made_schedule_trace_lost_work_and_rejoin_pull_by_hand():
    """Two workers, 1 s per step, worker 1 down from 2.5 s to 4 s.

    Commits (time, worker): (1, 0), (1, 1), (2, 0), (2, 1), (3, 0); worker 1's phase
    [2, 3) is cut at 2.5 (lost: one evaluation); it comes back at 4 and pulls the centre
    before worker 0's commit at 4 (SimPy runs the rejoin, scheduled at 2.5, first), so
    at clock 5; then (4, 0), (5, 1) with pulled clock 5, (5, 0).
    """
    cluster = Cluster(2, CONSTANT, availability=Availability(schedule=[(1, 2.5, 4.0)]))
    trace = simulate_async(cluster, commits=8, rng=0, activity=True)
    np.testing.assert_array_equal(trace.time, [1, 1, 2, 2, 3, 4, 5, 5])
    np.testing.assert_array_equal(trace.worker, [0, 1, 0, 1, 0, 0, 1, 0])
    np.testing.assert_array_equal(trace.pulled_clock, [0, 0, 1, 2, 3, 5, 5, 6])
    f = trace.failures
    assert (f.worker.tolist(), f.down.tolist(), f.up.tolist(), f.clock.tolist(),
            f.lost.tolist()) == ([1], [2.5], [4.0], [5], [1])
    # 8 useful evaluations of 9 started; 8 over 2 devices × 5 s
    assert goodput(trace) == (8 / 9, 8 / 10)
    # the activity: worker 1 computes [2, 2.5), is down [2.5, 4), computes again from 4
    a = trace.activity
    mine = a.worker == 1
    rows = list(zip(a.kind[mine].tolist(), a.start[mine].tolist(), a.end[mine].tolist(),
                    strict=True))
    assert rows == [(0, 0.0, 1.0), (0, 1.0, 2.0), (0, 2.0, 2.5), (FAILED, 2.5, 4.0),
                    (0, 4.0, 5.0)]
    assert a.seconds()[1].sum() == pytest.approx(5.0)  # the intervals tile [0, 5]


def test_synchronous_round_waits_for_a_worker_that_is_down_by_hand():
    """Two workers, 1 s per step, worker 1 down from 1.5 s to 3 s: round 2's phase of
    worker 1 is cut at 1.5 (one evaluation lost) and computed again from 3, so round 2
    closes at 4 and round 3 at 5. The replay is that of the plain rounds, bit for bit."""
    cluster = Cluster(2, CONSTANT, availability=Availability(schedule=[(1, 1.5, 3.0)]))
    trace = simulate_sync(cluster, rounds=3, rng=0, activity=True)
    np.testing.assert_array_equal(trace.time, [1, 4, 5])
    np.testing.assert_array_equal(trace.duration, [1, 3, 1])
    f = trace.failures
    assert (f.worker.tolist(), f.down.tolist(), f.up.tolist(), f.clock.tolist(),
            f.lost.tolist()) == ([1], [1.5], [3.0], [1], [1])
    assert goodput(trace) == (6 / 7, 6 / 10)
    a = trace.activity
    assert a.seconds()[1, FAILED] == 1.5
    assert a.seconds()[0, KINDS.index("wait")] == 2.0  # worker 0 waits [2, 4) in round 2
    problem = quadratic(dim=4, condition=10.0)
    from asynclab.rules import synchronous_sgd

    rule = synchronous_sgd(0.05)
    with_failures = replay(rule, problem, trace, seeds=[0], noise=1.0, record_every=1)
    plain = replay(rule, problem, trace._replace(failures=None, activity=None), seeds=[0],
                   noise=1.0, record_every=1)
    np.testing.assert_array_equal(with_failures.loss, plain.loss)
    assert with_failures.goodput.tolist() == [6 / 7]


def _one_worker_oracle(phase, outages, commits):
    """One worker, phases of ``phase`` seconds back to back: an outage cuts the phase it
    starts in (its work lost), and the worker starts again when it ends."""
    t, times, lost = 0.0, [], 0
    outages = list(outages)
    while len(times) < commits:
        if outages and outages[0][0] < t + phase:
            down, up = outages.pop(0)
            lost += down >= t
            t = up
            continue
        t += phase
        times.append(t)
    return np.array(times), lost


def test_one_worker_lost_work_matches_a_numpy_loop():
    outages = [(0.5, 1.25), (3.9, 4.0), (4.1, 6.0), (6.5, 7.5)]
    cluster = Cluster(1, ComputeTime("constant", mean=0.5),
                      availability=Availability(schedule=[(0, d, u) for d, u in outages]))
    trace = simulate_async(cluster, local_steps=2, commits=6, rng=0)
    times, lost = _one_worker_oracle(1.0, outages, 6)
    np.testing.assert_allclose(trace.time, times)
    assert int(trace.failures.lost.sum()) == 2 * lost
    assert goodput(trace)[0] == pytest.approx(12 / (12 + 2 * lost))


# --------------------------------------------------------------- the replay of rejoin pulls


def _downpour_with_rejoins(trace, h, start, lr, local_steps):
    """DOWNPOUR with SGD by hand; a rejoin resets the worker's pulled centre to the
    centre of that clock."""
    center = np.array(start, np.float64)
    pulled = [center.copy() for _ in range(trace.n_workers)]
    rejoin = {}
    for w, c in zip(trace.failures.worker, trace.failures.clock, strict=True):
        rejoin.setdefault(int(c), []).append(int(w))
    path = []
    for t, w in enumerate(trace.worker):
        for k in rejoin.get(t, []):
            pulled[k] = center.copy()
        p = pulled[w].copy()
        for _ in range(local_steps):
            p = p - lr * h * p
        center = center + (p - pulled[w])
        pulled[w] = center.copy()
        path.append(center.copy())
    return np.array(path)


def test_replay_with_rejoins_matches_numpy_downpour():
    """Three workers, two of them back at the same moment (two rejoin slots after one
    commit), one back twice; DOWNPOUR with SGD on a quadratic against a numpy loop."""
    schedule = [(1, 2.5, 4.0), (2, 2.5, 4.0), (1, 6.2, 7.0), (0, 9.5, 9.7)]
    cluster = Cluster(3, CONSTANT, availability=Availability(schedule=schedule))
    trace = simulate_async(cluster, local_steps=2, commits=30, rng=0)
    assert trace.failures.n_failures == 4
    assert np.bincount(trace.failures.clock).max() == 2
    problem = quadratic(dim=4, condition=10.0)
    h = np.geomspace(1.0, 10.0, 4)
    result = replay(downpour(0.02, 2), problem, trace, record_every=1, record_paths=True)
    expected = _downpour_with_rejoins(trace, h, np.ones(4), 0.02, 2)
    np.testing.assert_allclose(result.center_path[0, 1:], expected, rtol=1e-5, atol=1e-7)
    # without the rejoin pulls the numbers differ: the rejoins do change the replay
    plain = replay(downpour(0.02, 2), problem, trace._replace(failures=None), record_every=1,
                   record_paths=True)
    assert not np.allclose(plain.center_path, result.center_path, rtol=1e-5, atol=1e-7)
    assert result.goodput[0] == pytest.approx(goodput(trace)[0])


def test_replay_of_several_traces_with_failures():
    """One trace per seed, with different rejoins: each seed follows its own trace."""
    cluster = Cluster(3, ComputeTime("exponential"), availability=Availability(mtbf=8.0,
                                                                                mttr=2.0))
    traces = [simulate_async(cluster, commits=60, rng=s) for s in (1, 2)]
    problem = quadratic(dim=4, condition=10.0)
    h = np.geomspace(1.0, 10.0, 4)
    both = replay(downpour(0.05), problem, traces, seeds=[1, 2], record_every=60)
    for i, trace in enumerate(traces):
        assert trace.failures.n_failures > 0
        expected = _downpour_with_rejoins(trace, h, np.ones(4), 0.05, 1)
        np.testing.assert_allclose(both.final_params[i], expected[-1], rtol=1e-5, atol=1e-7)
        assert both.goodput[i] == goodput(trace)[0] < 1.0


# ---------------------------------------------------------------------------- Poisson churn


def test_poisson_churn_up_fraction_is_mtbf_over_mtbf_plus_mttr():
    """Up-times Exp(mtbf), down-times Exp(mttr): the time-average of being up over T
    seconds has mean p = mtbf/(mtbf+mttr) and, for T ≫ mtbf + mttr, variance
    2 (mtbf·mttr)² / ((mtbf+mttr)³ T) per worker (a two-state Markov chain)."""
    mtbf, mttr, n = 6.0, 3.0, 8
    cluster = Cluster(n, ComputeTime("exponential"),
                      availability=Availability(mtbf=mtbf, mttr=mttr))
    trace = simulate_async(cluster, commits=40_000, rng=3, activity=True)
    end = trace.duration
    f = trace.failures
    down = np.minimum(f.up, end) - np.minimum(f.down, end)
    up_fraction = 1 - down.sum() / (n * end)
    p = mtbf / (mtbf + mttr)
    sd = math.sqrt(2 * (mtbf * mttr) ** 2 / ((mtbf + mttr) ** 3 * end) / n)
    assert abs(up_fraction - p) < 5 * sd, (up_fraction, p, sd)
    # the activity records the same seconds down
    assert trace.activity.seconds()[:, FAILED].sum() == pytest.approx(down.sum())


# ------------------------------------------------------------------------ results on disk


def test_goodput_is_saved_and_loaded_and_old_archives_load(tmp_path):
    cluster = Cluster(2, CONSTANT, availability=Availability(schedule=[(1, 2.5, 4.0)]))
    result = run("quadratic", "downpour", cluster=cluster, commits=8, seeds=[0])
    assert result.goodput.tolist() == [8 / 9]
    result.save(tmp_path / "r.npz")
    back = Result.load(tmp_path / "r.npz")
    assert back.goodput.tolist() == [8 / 9]
    assert back.goodput_per_device_second.tolist() == [0.8]
    result.goodput = result.goodput_per_device_second = None  # as an older archive
    result.save(tmp_path / "old.npz")
    assert Result.load(tmp_path / "old.npz").goodput is None


def test_read_availability_log(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("worker,down_at,up_at\n# a comment\n1,2.5,4\n0,3,inf\n")
    assert read_availability(path).schedule == ((1, 2.5, 4.0), (0, 3.0, math.inf))
    path.write_text("1,2.5\n")
    with pytest.raises(ConfigError, match="line 1"):
        read_availability(path)


def test_a_worker_that_never_comes_back():
    cluster = Cluster(2, CONSTANT, availability=Availability(schedule=[(1, 1.5, math.inf)]))
    trace = simulate_async(cluster, commits=6, rng=0)
    np.testing.assert_array_equal(trace.worker, [0, 1, 0, 0, 0, 0])
    assert trace.failures.clock.tolist() == [-1]
    every = Availability(schedule=[(0, 1.5, math.inf), (1, 1.5, math.inf)])
    trace = simulate_async(Cluster(2, CONSTANT, availability=every), commits=6, rng=0)
    assert trace.n_events == 2  # every worker gone: the run ends


# -------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("kwargs, match", [
    (dict(mtbf=-1.0, mttr=1.0), "Availability.mtbf"),
    (dict(mtbf=1.0, mttr=0.0), "Availability.mttr"),
    (dict(mtbf=math.inf, mttr=1.0), "Availability.mtbf"),
    (dict(mtbf=1.0), "both mtbf and mttr"),
    (dict(schedule=[(0, 1.0, 2.0)], mtbf=1.0, mttr=1.0), "not both"),
    (dict(), "give schedule"),
    (dict(schedule=[]), "empty"),
    (dict(schedule=[(0, 2.0, 1.0)]), "up_at must be > down_at"),
    (dict(schedule=[(0, -1.0, 1.0)]), "down_at must be finite and >= 0"),
    (dict(schedule=[(-1, 1.0, 2.0)]), "worker must be an integer >= 0"),
    (dict(schedule=[(0, 1.0)]), r"schedule\[0\] must be"),
    (dict(schedule=[(0, 1.0, 3.0), (0, 2.0, 4.0)]), "overlap"),
])
def test_bad_availability_is_refused(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Availability(**kwargs)


def test_availability_refusals_on_the_cluster_and_the_simulators():
    with pytest.raises(ConfigError, match=r"schedule\[0\]: worker must be in \[0, 1\]"):
        Cluster(2, availability=Availability(schedule=[(2, 1.0, 2.0)]))
    with pytest.raises(ConfigError, match="Cluster.availability must be"):
        Cluster(2, availability=(1.0, 2.0))
    with pytest.raises(ConfigError, match="without groups"):
        Cluster(4, group_size=2, availability=Availability(mtbf=1.0, mttr=1.0))
    failing = Cluster(4, availability=Availability(mtbf=1.0, mttr=1.0))
    with pytest.raises(ConfigError, match="semi-synchronous rounds with failures need"):
        simulate_sync(failing, rounds=5, semisync=SemiSync(quorum=3, late="stale"))
    with pytest.raises(ConfigError, match="warm-up rounds"):
        run("quadratic", "post_local_sgd", cluster=failing, commits=5, warmup_rounds=2)


# ---------------------------------------------------------------------------- command line


@pytest.mark.slow  # the command line's twin of the API's failures tests above
def test_cli_failures_file_and_churn(tmp_path, capsys):
    import json

    from asynclab.cli import main

    log = tmp_path / "failures.csv"
    log.write_text("worker,down_at,up_at\n1,2.5,4\n")
    base = ["run", "--problem", "quadratic", "--rule", "downpour", "--workers", "2",
            "--compute", "constant", "--commits", "8", "--json"]
    assert main([*base, "--failures", str(log)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["goodput"] == [8 / 9] and out["goodput_per_device_second"] == [0.8]
    assert main(["run", "--problem", "quadratic", "--mtbf", "20", "--mttr", "5",
                 "--commits", "200"]) == 0
    assert "goodput:" in capsys.readouterr().out
    assert main(["run", "--problem", "quadratic", "--mtbf", "20", "--commits", "5"]) == 2
    assert "needs both --mtbf and --mttr" in capsys.readouterr().err
    assert main(["run", "--problem", "quadratic", "--mtbf", "20", "--mttr", "5",
                 "--failures", str(log), "--commits", "5"]) == 2
    assert "--failures gives a schedule" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # argparse refuses the number itself
        main(["run", "--problem", "quadratic", "--mtbf", "-1", "--mttr", "5"])
    assert exit_.value.code == 2
    assert "--mtbf: must be a finite number > 0" in capsys.readouterr().err


def test_cli_trace_export_shows_the_outage(tmp_path):
    import json

    from asynclab.cli import main

    log = tmp_path / "failures.csv"
    log.write_text("1,2.5,4\n")
    out = tmp_path / "t.jsonl"
    assert main(["trace", "export", "--failures", str(log), "--workers", "2", "--compute",
                 "constant", "--commits", "8", "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    failed = [(r["worker"], r["start"], r["end"]) for r in rows
              if r["type"] == "interval" and r["kind"] == "failed"]
    assert failed == [(1, 2.5, 4.0)]


def test_a_run_with_failures_ends_where_it_stalls_but_raises_a_process_error():
    """A run with failures ends where every process waits for good (SimPy's "no scheduled
    events left"); an error raised inside a process (a subclass of RuntimeError
    included) is still raised, as without failures."""
    import simpy

    from asynclab.cluster._rounds import run_until

    def waits(env):
        yield env.event()  # never triggered: the run stalls

    def fails(env):
        yield env.timeout(1.0)
        raise NotImplementedError("a timing model's draw")

    env = simpy.Environment()
    env.process(waits(env))
    run_until(env, env.event(), may_stall=True)  # ends, no error
    env = simpy.Environment()
    env.process(waits(env))
    with pytest.raises(RuntimeError, match="No scheduled events left"):
        run_until(env, env.event(), may_stall=False)
    env = simpy.Environment()
    env.process(fails(env))
    with pytest.raises(NotImplementedError, match="draw"):
        run_until(env, env.event(), may_stall=True)
