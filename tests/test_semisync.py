"""Semi-synchronous rounds: K of n, backup workers, time windows (cluster and replay).

Timing is checked against the order statistics of exponential compute times and against
schedules worked out by hand; the replay against a few-line numpy transcription of the
masked rounds; K = n against the plain synchronous run, bit for bit.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from children import run as run_child
from oracles import beale_gradient

import asynclab
from asynclab import ConfigError
from asynclab.cluster import (
    KINDS,
    Availability,
    Cluster,
    ComputeTime,
    Link,
    RoundTrace,
    SemiSync,
    goodput,
    simulate_sync,
)
from asynclab.engine import initial_state, replay, seed_keys
from asynclab.problems import beale
from asynclab.rules import make_rule

EXPONENTIAL = ComputeTime("exponential", mean=1.0)


def _constant(scales, latency=0.0):
    """Constant step times 1 × ``scales[k]``: every schedule can be worked out by hand."""
    return Cluster(workers=len(scales), compute=ComputeTime("constant", mean=1.0),
                   time_scale=tuple(float(s) for s in scales), network=Link(latency=latency))


# ------------------------------------------------------------------------------ timing


@pytest.mark.parametrize("quorum", [1, 3, 8])
def test_mean_round_time_is_the_kth_order_statistic(quorum):
    # K-th fastest of n exponentials (rate μ): E = (1/μ) Σ_{i=n−K+1}^{n} 1/i and
    # Var = (1/μ²) Σ 1/i². Discarded work restarts from scratch, so rounds are i.i.d.;
    # each also pays the commit message and the reply, 2x.
    n, rounds, mean, x = 8, 3000, 0.5, 0.05
    cluster = Cluster(workers=n, compute=ComputeTime("exponential", mean=mean),
                      network=Link(latency=x))
    trace = simulate_sync(cluster, rounds=rounds, rng=11, semisync=SemiSync(quorum=quorum))
    i = np.arange(n - quorum + 1, n + 1)
    expected = mean * np.sum(1.0 / i) + 2 * x
    sd = mean * math.sqrt(np.sum(1.0 / i**2))
    assert abs(trace.duration.mean() - expected) < 4.5 * sd / math.sqrt(rounds)
    assert (trace.counted.sum(axis=1) == quorum).all()
    # durations tile the run: each round ends (reply received) where the next starts
    np.testing.assert_allclose(np.cumsum(trace.duration), trace.time + x)


def test_the_fastest_quorum_counts_and_the_rest_is_cancelled():
    # step times 3, 1, 4, 2 and a link of 0.5 s: the first two commits are workers 1
    # (1 + 0.5) and 3 (2 + 0.5): the round closes at 2.5, every worker restarts when the
    # reply arrives at 3.0, and every round is the same: 0.5 + 2 + 0.5 = 3 s
    cluster = _constant([3, 1, 4, 2], latency=0.5)
    trace = simulate_sync(cluster, rounds=4, semisync=SemiSync(quorum=2), activity=True)
    assert trace.late == "discard"
    np.testing.assert_array_equal(trace.counted, [[False, True, False, True]] * 4)
    np.testing.assert_allclose(trace.time, [2.5, 5.5, 8.5, 11.5])
    np.testing.assert_allclose(trace.duration, [3.0] * 4)
    # worker 2's cancelled work shows as compute up to the close, then the reply
    act = trace.activity
    mine = act.worker == 2
    kinds = [asynclab.cluster.KINDS[k] for k in act.kind[mine]]
    assert kinds[:3] == ["compute", "communicate", "compute"]
    np.testing.assert_allclose(act.start[mine][:3], [0.0, 2.5, 3.0])
    np.testing.assert_allclose(act.end[mine][:3], [2.5, 3.0, 5.5])
    # every worker's time is tiled up to the last aggregate
    np.testing.assert_allclose(act.seconds().sum(axis=1), [trace.time[-1]] * 4)


def test_stale_commits_count_in_the_round_in_which_they_arrive():
    # step times 1, 3, 2, 5, no link, quorum 2. Round 1: workers 0 (t=1), 2 (t=2). Round
    # 2: 0 (pulled at 2, in at 3) and 1 (in at 3, from its start). Round 3: 0 (4), 2 (4).
    # Round 4: 0 (5) and 3 (in at 5, from its start).
    trace = simulate_sync(_constant([1, 3, 2, 5]), rounds=4,
                          semisync=SemiSync(quorum=2, late="stale"))
    assert trace.late == "stale"
    np.testing.assert_array_equal(trace.counted, [[1, 0, 1, 0], [1, 1, 0, 0], [1, 0, 1, 0],
                                                  [1, 0, 0, 1]])
    np.testing.assert_allclose(trace.time, [2, 3, 4, 5])


def test_stale_commits_are_stale_by_the_rounds_they_missed():
    # the schedule above, worked out by hand: a worker pulls after each round it counts
    # in. Worker 1 counts in round 2 from its start (missed round 1): τ = 1; worker 2
    # pulled after round 1 and counts in round 3: τ = 1; worker 3 counts in round 4 from
    # its start: τ = 3. -1: did not count.
    trace = simulate_sync(_constant([1, 3, 2, 5]), rounds=4,
                          semisync=SemiSync(quorum=2, late="stale"))
    np.testing.assert_array_equal(trace.staleness, [[0, -1, 0, -1], [0, 1, -1, -1],
                                                    [0, -1, 1, -1], [0, -1, -1, 3]])
    assert trace.staleness.dtype == np.int32
    # discarded late work: every worker pulls every round, a counted commit is fresh
    discard = simulate_sync(_constant([1, 3, 2, 5]), rounds=4, semisync=SemiSync(quorum=2))
    np.testing.assert_array_equal(discard.staleness, np.where(discard.counted, 0, -1))
    # plain rounds: everyone counts, fresh
    plain = simulate_sync(_constant([1, 3, 2, 5]), rounds=3)
    np.testing.assert_array_equal(plain.staleness, np.zeros((3, 4)))


def test_one_of_n_stale_rounds_have_the_staleness_of_asynchronous_commits():
    # K = 1 with late work counting later is asynchronous SGD on the same schedule
    # (test_one_of_n_with_stale_work_is_asynchronous_sgd): each round's one counted
    # commit is stale by what the asynchronous simulator counts, t − pulled_clock
    cluster = Cluster(workers=5, compute=EXPONENTIAL, network=Link(latency=0.1))
    rounds = simulate_sync(cluster, rounds=400, rng=3,
                           semisync=SemiSync(quorum=1, late="stale"))
    commits = asynclab.cluster.simulate_async(cluster, commits=400, rng=3)
    np.testing.assert_array_equal(rounds.staleness.max(axis=1), commits.staleness)
    assert ((rounds.staleness >= 0).sum(axis=1) == 1).all()


@pytest.mark.parametrize("workers,quorum", [(8, 2), (6, 3)])
def test_mean_staleness_of_stale_k_of_n_rounds_is_n_over_k_minus_one(workers, quorum):
    # n always-busy workers, K commits per round: a worker's commits counted in rounds
    # r₁ < r₂ < … are stale by r_i − r_{i−1} − 1, which sums over all commits to
    # n·R − K·R up to each worker's last few rounds: the mean is n/K − 1 for any
    # compute-time distribution (K = 1: the asynchronous n − 1)
    for compute in (EXPONENTIAL, ComputeTime("lognormal", mean=1.0, shape=1.0)):
        trace = simulate_sync(Cluster(workers=workers, compute=compute), rounds=3000,
                              rng=1, semisync=SemiSync(quorum=quorum, late="stale"))
        tau = trace.staleness[trace.staleness >= 0]
        assert tau.size == quorum * 3000
        assert abs(tau.mean() - (workers / quorum - 1)) < 0.02


def test_time_windows_close_at_the_window_the_mth_commit_or_the_deadline():
    scales = [1, 2, 3, 4]
    # the window: at 2.5 workers 0 and 1 are in
    at_window = simulate_sync(_constant(scales), rounds=2, semisync=SemiSync(window=2.5))
    np.testing.assert_array_equal(at_window.counted, [[1, 1, 0, 0]] * 2)
    np.testing.assert_allclose(at_window.time, [2.5, 5.0])
    # nobody before the window ends at 0.5: the round waits for the 2nd commit (t = 2)
    count = simulate_sync(_constant(scales), rounds=2,
                          semisync=SemiSync(window=0.5, min_count=2))
    np.testing.assert_array_equal(count.counted, [[1, 1, 0, 0]] * 2)
    np.testing.assert_allclose(count.time, [2.0, 4.0])
    # ... but no later than the deadline, with whoever is in (two of the three wanted)
    cut = simulate_sync(_constant(scales), rounds=2,
                        semisync=SemiSync(window=0.5, min_count=3, deadline=2.5))
    np.testing.assert_array_equal(cut.counted, [[1, 1, 0, 0]] * 2)
    np.testing.assert_allclose(cut.time, [2.5, 5.0])
    # a deadline before anyone is in: empty rounds
    empty = simulate_sync(_constant(scales), rounds=3,
                          semisync=SemiSync(window=0.5, deadline=0.75))
    assert not empty.counted.any()
    np.testing.assert_allclose(empty.time, [0.75, 1.5, 2.25])


def test_a_quorum_with_a_deadline_closes_at_whichever_comes_first():
    # step times 1, 2, 3, 4, quorum 3: the third commit is in at 3; a deadline of 2.5
    # comes first and closes with workers 0 and 1, one of 3.5 does not
    cut = simulate_sync(_constant([1, 2, 3, 4]), rounds=3,
                        semisync=SemiSync(quorum=3, deadline=2.5))
    np.testing.assert_array_equal(cut.counted, [[1, 1, 0, 0]] * 3)
    np.testing.assert_allclose(cut.time, [2.5, 5.0, 7.5])
    quorum = simulate_sync(_constant([1, 2, 3, 4]), rounds=3,
                           semisync=SemiSync(quorum=3, deadline=3.5))
    np.testing.assert_array_equal(quorum.counted, [[1, 1, 1, 0]] * 3)
    np.testing.assert_allclose(quorum.time, [3.0, 6.0, 9.0])


def test_an_adaptive_deadline_cuts_the_straggler_once_it_has_adapted():
    # step times 1, 1.5, 2, 6, quorum 4. Round 1 has no history: no deadline, all four
    # are in at 6. Its delays have mean 2.625 and std √3.921875 = 1.98037...
    d = np.array([1.0, 1.5, 2.0, 6.0])
    mean, std = 2.625, math.sqrt(3.921875)
    # c = 2: D = 6.586 > 6: the straggler makes every deadline, every round takes 6 s
    wide = simulate_sync(_constant(d), rounds=4, semisync=SemiSync(
        quorum=4, deadline="adaptive", deadline_spread=2.0, deadline_history=1))
    assert wide.counted.all()
    np.testing.assert_allclose(wide.time, [6, 12, 18, 24])
    # c = 1: D = 4.605 cuts worker 3 in round 2, and its delay is never seen again. In
    # rounds 2-6 the history (five rounds) still holds round 1's 6: D lies between 2
    # and 6 and the fastest three count. Round 7's history is rounds 2-6 only, delays
    # 1, 1.5, 2: D = 1.5 + √(1/6) = 1.91 cuts worker 2 too (the deadline learns only
    # from the commits that made it: it ratchets down)
    tight = simulate_sync(_constant(d), rounds=7, semisync=SemiSync(
        quorum=4, deadline="adaptive", deadline_spread=1.0))
    np.testing.assert_array_equal(tight.counted, [[1, 1, 1, 1]] + [[1, 1, 1, 0]] * 5
                                  + [[1, 1, 0, 0]])
    np.testing.assert_allclose(tight.time[:2], [6.0, 6.0 + mean + std])
    np.testing.assert_allclose(np.diff(tight.time)[-1], 1.5 + math.sqrt(1 / 6))


def _arrivals(trace):
    """Each counted commit's arrival at the server, read from the activity record: the
    end of the worker's last interval that is not a wait, up to its round's close."""
    act = trace.activity
    out = np.full(trace.counted.shape, np.nan)
    for r, k in np.argwhere(trace.counted):
        mine = (act.worker == k) & (act.kind != asynclab.cluster.KINDS.index("wait"))
        out[r, k] = act.end[mine & (act.end <= trace.time[r] + 1e-12)].max()
    return out


@pytest.mark.parametrize("late,history,spread", [("discard", 3, 0.5), ("stale", 5, 1.0)])
def test_adaptive_deadlines_follow_the_trace_s_own_arrival_delays(late, history, spread):
    # numpy re-computation of every round's deadline from the arrivals the activity
    # record holds: D_r = mean + c·std (ddof 0) of the delays (arrival − the opening of
    # the round it counted in) of rounds r−h..r−1; a round closes at its quorum's K-th
    # commit if that comes before D_r, else at D_r with whoever is in
    n, quorum = 6, 5
    cluster = Cluster(n, EXPONENTIAL, server_time=0.02, network=Link(latency=0.05))
    semisync = SemiSync(quorum=quorum, late=late, deadline="adaptive",
                        deadline_history=history, deadline_spread=spread)
    trace = simulate_sync(cluster, rounds=80, rng=3, semisync=semisync, activity=True)
    opened = np.concatenate([[0.0], trace.time[:-1]])
    delays = _arrivals(trace) - opened[:, None]
    cut = 0
    for r in range(len(trace.time)):
        recent = delays[max(0, r - history):r]
        recent = recent[np.isfinite(recent)]
        deadline = recent.mean() + spread * recent.std() if recent.size else np.inf
        mine = delays[r][trace.counted[r]]
        assert (mine <= deadline + 1e-9).all()
        if trace.counted[r].sum() == quorum:
            np.testing.assert_allclose(trace.time[r], opened[r] + mine.max(), rtol=1e-12)
        else:
            np.testing.assert_allclose(trace.time[r], opened[r] + deadline, rtol=1e-12)
            cut += 1
    assert 0 < cut < len(trace.time)  # both ways of closing happen


@pytest.mark.parametrize("semisync", [
    SemiSync(quorum=2), SemiSync(quorum=3, late="stale"),
    SemiSync(window=0.8, min_count=2, deadline=1.5),
    SemiSync(window=0.5, deadline=0.6, late="stale"), SemiSync(window=0.3, deadline=0.4),
], ids=repr)
def test_activity_tiles_every_worker_whatever_closes_the_rounds(semisync):
    # cancelled work (computing, on the link, queued, served) is cut where its round
    # closed; stale work runs on: either way each worker's intervals tile its time
    cluster = Cluster(5, EXPONENTIAL, server_time=0.1, network=Link(latency=0.05))
    trace = simulate_sync(cluster, rounds=60, rng=2, semisync=semisync, activity=True)
    plain = simulate_sync(cluster, rounds=60, rng=2, semisync=semisync)
    np.testing.assert_array_equal(trace.time, plain.time)
    np.testing.assert_array_equal(trace.counted, plain.counted)
    act = trace.activity
    np.testing.assert_allclose(act.seconds().sum(axis=1), trace.time[-1], rtol=1e-12)
    for k in range(5):
        start, end = act.start[act.worker == k], act.end[act.worker == k]
        assert np.all(start[1:] >= end[:-1] - 1e-12)


def test_quorum_n_and_no_backup_are_the_plain_synchronous_trace_bit_for_bit():
    cluster = Cluster(workers=5, compute=EXPONENTIAL, network=Link(latency=0.1),
                      server_time=0.05)
    plain = simulate_sync(cluster, local_steps=2, rounds=40, rng=4, activity=True)
    for semisync in (SemiSync(quorum=5), SemiSync(backup=0), SemiSync(quorum=5, late="stale")):
        full = simulate_sync(cluster, local_steps=2, rounds=40, rng=4, activity=True,
                             semisync=semisync)
        assert full.counted.all()
        for field in ("time", "duration"):
            np.testing.assert_array_equal(getattr(full, field), getattr(plain, field))
        for field in ("worker", "kind", "start", "end", "delay"):
            np.testing.assert_array_equal(getattr(full.activity, field),
                                          getattr(plain.activity, field))


@pytest.mark.parametrize("late", ["discard", "stale"])
def test_a_random_server_serves_semisync_rounds_as_it_serves_plain_ones(late):
    # quorum n with a random server: the same service draws in the same order as the
    # plain synchronous run, so the same trace bit for bit; a quorum below n closes
    # rounds earlier
    server = ComputeTime("exponential", mean=0.05)
    cluster = Cluster(workers=4, compute=EXPONENTIAL, server_time=server)
    plain = simulate_sync(cluster, rounds=30, rng=2)
    full = simulate_sync(cluster, rounds=30, rng=2, semisync=SemiSync(quorum=4, late=late))
    np.testing.assert_array_equal(full.time, plain.time)
    np.testing.assert_array_equal(full.duration, plain.duration)
    early = simulate_sync(cluster, rounds=30, rng=2, semisync=SemiSync(quorum=2, late=late))
    assert (early.counted.sum(axis=1) == 2).all()
    assert early.time[-1] < plain.time[-1]


def test_backup_workers_are_a_quorum_of_the_others():
    cluster = Cluster(workers=6, compute=EXPONENTIAL, server_time=0.02)
    backup = simulate_sync(cluster, rounds=50, rng=3, semisync=SemiSync(backup=2))
    quorum = simulate_sync(cluster, rounds=50, rng=3, semisync=SemiSync(quorum=4))
    np.testing.assert_array_equal(backup.time, quorum.time)
    np.testing.assert_array_equal(backup.counted, quorum.counted)
    assert (backup.counted.sum(axis=1) == 4).all()


# ------------------------------------------------------------------------------ replay


def _masked_rounds(start, counted, late, learning_rate, local_steps, shares=False):
    """Model averaging over the workers that counted, by hand (float64, no noise):
    discard: θ̃ ← mean_C θᵏ and every worker takes θ̃; stale: θ̃ ← θ̃ + mean_C (θᵏ −
    θ̃ᵏ_pull), only the counted workers take θ̃, the others keep their work for later.
    A round nobody made changes nothing. ``shares``: also each worker's share of the
    centre's movement, each round's ‖θ̃⁺ − θ̃‖ split equally among C."""
    params = np.array(start, np.float64)
    pulled = params.copy()
    center = params.mean(axis=0)
    moved = np.zeros(len(params))
    for members in counted:
        before = center
        done = params.copy()
        for k in range(len(params)):
            for _ in range(local_steps):
                done[k] = done[k] - learning_rate * beale_gradient(done[k])
        if not members.any():
            continue
        if late == "discard":
            center = done[members].mean(axis=0)
            params[:] = center
        else:
            center = center + (done[members] - pulled[members]).mean(axis=0)
            params[members] = center
            pulled[members] = center
        moved[members] += np.linalg.norm(center - before) / members.sum()
    return (center, moved / moved.sum()) if shares else center


# the quick tier: stale work; discarded work's replay meets the same numpy rounds in
# test_replay_of_a_trace_with_failures_is_the_masked_replay
@pytest.mark.parametrize("late", [pytest.param("discard", marks=pytest.mark.slow), "stale"])
def test_replay_of_masked_rounds_matches_numpy(late):
    n, lam, lr = 4, 3, 1e-4
    rng = np.random.default_rng(5)
    counted = rng.random((12, n)) < 0.5
    counted[3] = False  # a round nobody made
    counted[4] = True
    trace = RoundTrace(time=np.arange(1.0, 13.0), duration=np.ones(12), n_workers=n,
                       local_steps=lam, counted=counted, late=late)
    problem = beale()
    rule = make_rule("model_averaging", learning_rate=lr, local_steps=lam)
    result = replay(rule, problem, trace, seeds=3, init="random_per_worker",
                    record_every=1)
    # the random starts of seed 3, the same draw the replay makes
    _, workers = initial_state(rule, problem, seed_keys(3, n)[0], n, "random_per_worker")
    start = np.asarray(workers.params, np.float64)
    want, shares = _masked_rounds(start, counted, late, lr, lam, shares=True)
    assert result.diverged_at[0] < 0 and np.isfinite(want).all()
    np.testing.assert_allclose(np.asarray(result.final_params)[0], want, rtol=2e-5)
    np.testing.assert_allclose(result.center_share[0], shares, rtol=1e-4)
    assert np.ptp(shares) > 0.1  # not the equal split
    # the empty round leaves the centre as it was
    assert result.loss[0, 4] == result.loss[0, 3]


# the slow tier's: the quick tier keeps masked rounds against numpy
@pytest.mark.parametrize("rule_name,lam", [
    pytest.param("synchronous_sgd", 1, marks=pytest.mark.slow),
    pytest.param("model_averaging", 3, marks=pytest.mark.slow)])
def test_replay_with_quorum_n_is_the_plain_replay_bit_for_bit(rule_name, lam):
    cluster = Cluster(workers=4, compute=EXPONENTIAL)
    plain = simulate_sync(cluster, local_steps=lam, rounds=25, rng=2)
    full = simulate_sync(cluster, local_steps=lam, rounds=25, rng=2,
                         semisync=SemiSync(quorum=4))
    rule = make_rule(rule_name, learning_rate=0.01, **({"local_steps": lam} if lam > 1
                                                         else {}))
    a = replay(rule, "beale", plain, seeds=[0, 1], noise=1.0, record_every=1)
    b = replay(rule, "beale", full, seeds=[0, 1], noise=1.0, record_every=1)
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(np.asarray(a.final_params), np.asarray(b.final_params))
    np.testing.assert_array_equal(a.worker_path, b.worker_path)
    # all four count in every round: each gets a quarter of every movement, exactly 1/n
    np.testing.assert_array_equal(b.center_share, np.full((2, 4), 0.25))
    np.testing.assert_array_equal(a.center_share, b.center_share)


def test_one_of_n_with_stale_work_is_asynchronous_sgd():
    # K = 1, late work counting later: every commit is a round of its own, its update
    # rebased on the current centre: DOWNPOUR (λ = 1), on the very same schedule
    cluster = Cluster(workers=4, compute=EXPONENTIAL, network=Link(latency=0.1))
    rounds = simulate_sync(cluster, rounds=200, rng=6,
                           semisync=SemiSync(quorum=1, late="stale"))
    commits = asynclab.cluster.simulate_async(cluster, commits=200, rng=6)
    np.testing.assert_array_equal(rounds.time, commits.time)
    np.testing.assert_array_equal(np.argmax(rounds.counted, axis=1), commits.worker)
    stale = replay(make_rule("synchronous_sgd", learning_rate=0.01), "beale", rounds,
                   seeds=[0, 1], noise=1.0, record_every=1)
    downpour = replay(make_rule("downpour", learning_rate=0.01), "beale", commits,
                      seeds=[0, 1], noise=1.0, record_every=1)
    np.testing.assert_allclose(stale.loss, downpour.loss, rtol=1e-6)


def test_run_takes_semisync_and_records_it():
    result = asynclab.run("beale", "synchronous_sgd", workers=4, commits=20, noise=1.0,
                          semisync=SemiSync(quorum=3, late="stale"))
    assert result.config["semisync"]["quorum"] == 3
    assert result.config["semisync"]["late"] == "stale"
    assert np.isfinite(result.final_loss).all()


def test_command_line_runs_the_same_rounds_as_python(capsys):
    from asynclab.cli import main

    code = main(["run", "--rule", "synchronous_sgd", "--workers", "4", "--quorum", "3",
                 "--late", "stale", "--commits", "20", "--noise", "1", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    want = asynclab.run("beale", "synchronous_sgd", workers=4, commits=20, noise=1.0,
                        semisync=SemiSync(quorum=3, late="stale"))
    np.testing.assert_array_equal(out["final_params"], np.asarray(want.final_params))
    # the staleness printed is that of the counted commits (K = 3 of n = 4 per round),
    # not 0 per round
    tau = simulate_sync(Cluster(4, EXPONENTIAL), rounds=20, rng=0,
                        semisync=SemiSync(quorum=3, late="stale")).staleness
    assert out["staleness_histogram"] == np.bincount(tau[tau >= 0]).tolist()
    assert sum(out["staleness_histogram"]) == 3 * 20
    for argv, message in ((["--min-count", "2"], "--min-count"),
                          (["--quorum", "5"], "SemiSync.quorum"),
                          (["--window", "1", "--deadline", "0.5"], "SemiSync.deadline"),
                          (["--quorum", "2", "--backend", "threads"], "--quorum"),
                          (["--quorum", "2", "--deadline-history", "3"],
                           "SemiSync.deadline_history"),
                          (["--window", "1", "--deadline", "adaptive"],
                           "SemiSync.deadline='adaptive'")):
        code = main(["run", "--rule", "model_averaging", "--workers", "4", "--commits", "5",
                     *argv])
        assert code == 2
        assert message in capsys.readouterr().err


def test_command_line_reports_the_staleness_of_late_commits(capsys):
    # K = 1 of 4 with late work counting later is asynchronous SGD: the summary's
    # staleness is that of the asynchronous simulator's commits on the same cluster
    from asynclab.cli import main

    # (the replay the test above compiles: 20 rounds of 4 workers, noisy)
    argv = ["run", "--rule", "synchronous_sgd", "--workers", "4", "--quorum", "1", "--late",
            "stale", "--compute", "exponential", "--commits", "20", "--noise", "1",
            "--seed", "2"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    commits = asynclab.cluster.simulate_async(Cluster(4, EXPONENTIAL), commits=20, rng=2)
    assert out["staleness_histogram"] == np.bincount(commits.staleness).tolist()
    assert out["mean_staleness"] == pytest.approx(commits.staleness.mean())
    assert commits.staleness.mean() > 1
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"mean staleness of the 20 counted commits: {commits.staleness.mean():.3f}" in text


def test_command_line_takes_an_adaptive_deadline(capsys):
    from asynclab.cli import main

    code = main(["run", "--rule", "model_averaging", "--workers", "4", "--quorum", "4",
                 "--deadline", "adaptive", "--deadline-history", "2", "--deadline-spread",
                 "0.5", "--commits", "20", "--noise", "1", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    semisync = SemiSync(quorum=4, deadline="adaptive", deadline_history=2,
                        deadline_spread=0.5)
    want = asynclab.run("beale", "model_averaging", workers=4, commits=20, noise=1.0,
                        semisync=semisync)
    assert want.config["semisync"]["deadline"] == "adaptive"
    np.testing.assert_array_equal(out["final_params"], np.asarray(want.final_params))
    trace = simulate_sync(Cluster(4, EXPONENTIAL), rounds=20, rng=0, semisync=semisync)
    assert not trace.counted.all()  # the deadline did cut someone


def test_sweep_over_masked_rounds_is_run_at_each_point():
    semisync = SemiSync(quorum=2, late="stale")
    swept = asynclab.sweep("beale", "synchronous_sgd", workers=4, commits=15, noise=1.0,
                           seeds=[0, 1], grid={"learning_rate": [0.01, 0.02]},
                           semisync=semisync)
    for i, learning_rate in enumerate((0.01, 0.02)):
        one = asynclab.run("beale", "synchronous_sgd", workers=4, commits=15, noise=1.0,
                           seeds=[0, 1], learning_rate=learning_rate, semisync=semisync)
        np.testing.assert_allclose(swept.loss[i], one.loss, rtol=1e-6)


def test_command_line_sweep_takes_the_semisync_flags(capsys):
    from asynclab.cli import main

    code = main(["sweep", "--rule", "synchronous_sgd", "--workers", "4", "--quorum", "2",
                 "--late", "stale", "--commits", "15", "--noise", "1", "--seeds", "0,1",
                 "--grid", "learning_rate=0.01,0.015", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    want = asynclab.sweep("beale", "synchronous_sgd", workers=4, commits=15, noise=1.0,
                          seeds=[0, 1], grid={"learning_rate": [0.01, 0.015]},
                          semisync=SemiSync(quorum=2, late="stale"))
    np.testing.assert_allclose([p["score"] for p in out["points"]],
                               want.loss[:, :, -1].mean(axis=1), rtol=1e-6)
    for argv, message in ((["--rule", "downpour", "--quorum", "2"], "synchronous rule"),
                          (["--rule", "model_averaging", "--window", "1", "--deadline",
                            "0.5"], "SemiSync.deadline")):
        code = main(["sweep", *argv, "--workers", "4", "--commits", "5", "--grid",
                     "learning_rate=0.01"])
        assert code == 2
        assert message in capsys.readouterr().err


# ------------------------------------------------------------------- exports, timeline


def test_exports_and_timeline_show_who_counted(tmp_path, capsys):
    # the hand-worked K-of-n schedule above: workers 1 and 3 count in every round (at
    # 2.5, 5.5), workers 0 and 2 miss it
    from asynclab.cli import main
    from asynclab.cluster import trace_events, trace_records
    from asynclab.plot import timeline

    trace = simulate_sync(_constant([3, 1, 4, 2], latency=0.5), rounds=2,
                          semisync=SemiSync(quorum=2), activity=True)
    rounds = [r for r in trace_records(trace) if r["type"] == "round"]
    assert [r["counted"] for r in rounds] == [[1, 3], [1, 3]]
    events = trace_events(trace)["traceEvents"]
    aggregates = [e for e in events if e["name"] == "aggregate"]
    assert [(e["args"]["counted"], e["args"]["missed"]) for e in aggregates] == [
        ([1, 3], [0, 2])] * 2
    missed = sorted((e["ts"] / 1e6, e["tid"] - 1) for e in events
                    if e["name"] == "missed round")
    assert missed == [(2.5, 0), (2.5, 2), (5.5, 0), (5.5, 2)]
    ax = timeline(trace).axes[0]
    marks = {c.get_label(): c for c in ax.collections}
    np.testing.assert_array_equal(marks["aggregate"].get_offsets(),
                                  [[2.5, 1], [2.5, 3], [5.5, 1], [5.5, 3]])
    np.testing.assert_array_equal(marks["missed the round"].get_offsets(),
                                  [[2.5, 0], [2.5, 2], [5.5, 0], [5.5, 2]])
    # plain rounds: every worker counts, nothing more is written or drawn
    plain = simulate_sync(_constant([3, 1, 4, 2], latency=0.5), rounds=2, activity=True)
    assert all("counted" not in r for r in trace_records(plain))
    assert not any(e["name"] == "missed round" for e in trace_events(plain)["traceEvents"])
    assert "missed the round" not in [c.get_label() for c in timeline(plain).axes[0].collections]
    # the command line simulates the same rounds
    out = tmp_path / "t.jsonl"
    assert main(["trace", "export", "--rule", "model_averaging", "--workers", "4",
                 "--transfer-time", "0.5", "--quorum", "2", "--seed", "3", "--commits", "6",
                 "--format", "jsonl", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    cluster = Cluster(4, EXPONENTIAL, network=Link(latency=0.5))
    want = simulate_sync(cluster, rounds=6, rng=3, semisync=SemiSync(quorum=2))
    assert len({tuple(c) for c in want.counted}) > 1
    assert [x["counted"] for x in lines if x["type"] == "round"] == [
        np.flatnonzero(c).tolist() for c in want.counted]
    assert main(["trace", "show", "--rule", "model_averaging", "--quorum", "2",
                 "--commits", "3", "--out", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")
    assert "wrote" in capsys.readouterr().out


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("options,field", [
    ({}, "exactly one"),
    ({"quorum": 2, "window": 1.0}, "exactly one"),
    ({"quorum": 0}, "SemiSync.quorum"),
    ({"quorum": 1.5}, "SemiSync.quorum"),
    ({"backup": -1}, "SemiSync.backup"),
    ({"quorum": 2, "late": "later"}, "SemiSync.late"),
    ({"window": -1.0}, "SemiSync.window"),
    ({"window": 0.0}, "SemiSync.window"),
    ({"window": 2.0, "deadline": 1.0}, "SemiSync.deadline"),
    ({"window": 2.0, "min_count": 0}, "SemiSync.min_count"),
    ({"quorum": 2, "deadline": 0.0}, "SemiSync.deadline"),
    ({"quorum": 2, "deadline": "soon"}, "SemiSync.deadline"),
    ({"window": 1.0, "deadline": "adaptive"}, "SemiSync.deadline='adaptive'"),
    ({"quorum": 2, "deadline_history": 3}, "SemiSync.deadline_history"),
    ({"quorum": 2, "deadline": 1.0, "deadline_spread": 1.0}, "SemiSync.deadline_spread"),
    ({"quorum": 2, "deadline": "adaptive", "deadline_history": 0},
     "SemiSync.deadline_history"),
    ({"quorum": 2, "deadline": "adaptive", "deadline_spread": -1.0},
     "SemiSync.deadline_spread"),
    ({"quorum": 2, "min_count": 1}, "SemiSync.min_count"),
])
def test_bad_semisync_is_refused(options, field):
    with pytest.raises(ConfigError, match=field):
        SemiSync(**options)


@pytest.mark.parametrize("semisync,field", [
    (SemiSync(quorum=5), "SemiSync.quorum"),
    (SemiSync(backup=4), "SemiSync.backup"),
    (SemiSync(window=1.0, min_count=5), "SemiSync.min_count"),
])
def test_semisync_that_does_not_fit_the_cluster_is_refused(semisync, field):
    with pytest.raises(ConfigError, match=field):
        simulate_sync(Cluster(workers=4), rounds=3, semisync=semisync)
    with pytest.raises(ConfigError, match=field):
        asynclab.run("beale", "model_averaging", workers=4, commits=3, semisync=semisync)


def test_semisync_with_a_rule_that_cannot_run_it_is_refused():
    with pytest.raises(ConfigError, match="synchronous rule"):
        asynclab.run("beale", "downpour", workers=4, commits=3, semisync=SemiSync(quorum=2))
    with pytest.raises(ConfigError, match="stale"):
        asynclab.run("beale", "easgd", workers=4, commits=3,
                     semisync=SemiSync(quorum=2, late="stale"))
    with pytest.raises(ConfigError, match="warm-up"):
        asynclab.run("beale", "post_local_sgd", workers=4, commits=3,
                     semisync=SemiSync(quorum=2))
    with pytest.raises(ConfigError, match="semisync must be"):
        simulate_sync(Cluster(workers=4), rounds=3, semisync={"quorum": 2})
    trace = simulate_sync(Cluster(workers=4), rounds=3, semisync=SemiSync(quorum=2))
    rule = make_rule("model_averaging", learning_rate=0.01)
    with pytest.raises(ConfigError, match="stepwise"):
        replay(rule, "beale", trace, stepwise=True)
    with pytest.raises(ConfigError, match="one late mode"):
        replay(rule, "beale", [trace, simulate_sync(Cluster(workers=4), rounds=3)],
               seeds=[0, 1])
    with pytest.raises(ConfigError, match="late='discard' or 'stale'"):
        replay(rule, "beale", trace._replace(late=None))
    with pytest.raises(ConfigError, match="counted must be bool"):
        replay(rule, "beale", trace._replace(counted=trace.counted[:, :2]))
    wide = simulate_sync(Cluster(workers=33), rounds=2, semisync=SemiSync(quorum=2))
    with pytest.raises(ConfigError, match="at most 32 workers"):
        replay(rule, "beale", wide)
    with pytest.raises(ConfigError, match="at most 32 workers"):
        asynclab.run("beale", "model_averaging", workers=33, commits=2,
                     semisync=SemiSync(quorum=2))


# ----------------------------------------------------------------------------- devices


@pytest.mark.slow  # two child processes with simulated devices, ~20 s each
@pytest.mark.parametrize("n_devices", [2, 4])
def test_device_executor_runs_masked_rounds_like_the_replay(n_devices):
    import json
    from pathlib import Path

    script = Path(__file__).parent / "backend_scripts" / "pmap_semisync.py"
    child = run_child(script, n_devices, devices=n_devices, timeout=300)
    line = [x for x in child.stdout.splitlines() if x.startswith("REPORT ")]
    assert line, child.stderr[-3000:]
    report = json.loads(line[0][len("REPORT "):])
    assert report["devices"] == n_devices
    failures = [c for c in report["cases"] if not c["ok"]]
    assert not failures, failures
    assert all(c["partial_rounds"] > 0 for c in report["cases"])


# ------------------------------------------------------------------- failures (discard mode)


@pytest.mark.parametrize("semisync", [SemiSync(quorum=3), SemiSync(window=1.5, deadline=3.0),
                                      SemiSync(quorum=4, deadline="adaptive",
                                               deadline_spread=0.5)])
def test_failures_after_the_run_are_the_plain_semisync_trace_bit_for_bit(semisync):
    """Churn whose first failure comes long after the run, and a schedule whose only
    outage does too: the same rounds, counted masks, durations and activity."""
    for server_time in (0.0, ComputeTime("exponential", mean=0.1)):
        plain = Cluster(4, EXPONENTIAL, server_time=server_time)
        a = simulate_sync(plain, local_steps=2, rounds=60, rng=3, semisync=semisync,
                          activity=True)
        for available in (Availability(mtbf=1e12, mttr=1.0),
                          Availability(schedule=[(1, 1e9, 2e9)])):
            failing = Cluster(4, EXPONENTIAL, server_time=server_time,
                              availability=available)
            b = simulate_sync(failing, local_steps=2, rounds=60, rng=3, semisync=semisync,
                              activity=True)
            for field in ("time", "duration", "counted"):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
            for field in ("worker", "kind", "start", "end", "delay"):
                np.testing.assert_array_equal(getattr(a.activity, field),
                                              getattr(b.activity, field))
            assert b.failures.n_failures == 0


def test_a_downed_worker_misses_rounds_and_rejoins_by_hand():
    """Steps of 1, 1, 1, 2.5 s, quorum 3, worker 0 down from 1.5 to 4.2 s.

    Round 1 closes at 1 with {0, 1, 2} (worker 3 cancelled). Worker 0 loses the phase it
    began at 1 (one evaluation); round 2 must wait for worker 3 (1 + 2.5): closes at 3.5
    with {1, 2, 3}. Worker 0 is back at 4.2 (2 rounds applied), starts a phase for round
    3 and arrives at 5.2, the third after workers 1, 2 (4.5): round 3 closes at 5.2 with
    {0, 1, 2}, and from then on every second. Evaluations started: 4 a round (worker 0's
    lost phase in round 2, none while it is down at 3.5), 24 in all, 18 useful."""
    cluster = Cluster(4, ComputeTime("constant", mean=1.0), time_scale=(1.0, 1.0, 1.0, 2.5),
                      availability=_availability([(0, 1.5, 4.2)]))
    trace = simulate_sync(cluster, rounds=6, semisync=SemiSync(quorum=3), activity=True)
    np.testing.assert_allclose(trace.time, [1.0, 3.5, 5.2, 6.2, 7.2, 8.2], rtol=1e-12)
    want = np.array([[1, 1, 1, 0], [0, 1, 1, 1]] + [[1, 1, 1, 0]] * 4, bool)
    np.testing.assert_array_equal(trace.counted, want)
    f = trace.failures
    assert (f.worker.tolist(), f.down.tolist(), f.up.tolist(), f.clock.tolist(),
            f.lost.tolist()) == ([0], [1.5], [4.2], [2], [1])
    fraction, rate = goodput(trace)
    assert fraction == pytest.approx(18 / 24) and rate == pytest.approx(18 / (4 * 8.2))
    act = trace.activity
    failed = act.kind == KINDS.index("failed")
    assert list(zip(act.worker[failed].tolist(), act.start[failed].tolist(),
                    act.end[failed].tolist(), strict=True)) == [(0, 1.5, 4.2)]
    # worker 0 computes 1 → 1.5 then nothing until 4.2
    busy = (act.worker == 0) & ~failed & (act.start < 4.2) & (act.end > 1.5)
    assert not busy.any()


def _availability(schedule):
    """An outage schedule of ``(worker, down_at, up_at)`` rows."""
    return Availability(schedule=schedule)


def test_a_quorum_survives_a_worker_down_for_good_where_plain_rounds_stall():
    """Steps of 1, 1.1, 1.2, 1.3 s; worker 0 down from 2.5 s for good. Quorum 3: rounds
    at 1.2 and 2.4 with {0, 1, 2}; then worker 0 loses its phase and every round takes
    {1, 2, 3}, 1.3 s each. Plain synchronous rounds stall after round 2."""
    cluster = Cluster(4, ComputeTime("constant", mean=1.0),
                      time_scale=(1.0, 1.1, 1.2, 1.3),
                      availability=_availability([(0, 2.5, math.inf)]))
    trace = simulate_sync(cluster, rounds=12, semisync=SemiSync(quorum=3))
    want = np.concatenate([[1.2, 2.4], 2.4 + 1.3 * np.arange(1, 11)])
    np.testing.assert_allclose(trace.time, want, rtol=1e-12)
    assert trace.counted[:2, :3].all() and not trace.counted[:2, 3].any()
    assert trace.counted[2:, 1:].all() and not trace.counted[2:, 0].any()
    assert trace.failures.lost.tolist() == [1] and trace.failures.up.tolist() == [math.inf]
    assert simulate_sync(cluster, rounds=12).n_events == 2
    # a quorum of 4 stalls too; a deadline of 2 s closes the rounds with the other three
    assert simulate_sync(cluster, rounds=12, semisync=SemiSync(quorum=4)).n_events == 2
    cut = simulate_sync(cluster, rounds=12, semisync=SemiSync(quorum=4, deadline=2.0))
    assert cut.n_events == 12 and cut.counted[3:].sum(axis=1).tolist() == [3] * 9


def test_replay_of_a_trace_with_failures_is_the_masked_replay():
    """Discard mode needs no replay change: the centres follow the numpy transcription of
    the counted mask, and the same mask without the failures table replays bit for bit."""
    cluster = Cluster(4, EXPONENTIAL, availability=_availability(
        [(0, 0.2, 3.0), (2, 4.0, 9.0), (3, 5.0, math.inf)]))
    n, lam, lr = 4, 2, 1e-4
    trace = simulate_sync(cluster, local_steps=lam, rounds=10, rng=1,
                          semisync=SemiSync(quorum=2))
    assert trace.failures.n_failures == 3 and not trace.counted[0, 0]
    problem = beale()
    rule = make_rule("model_averaging", learning_rate=lr, local_steps=lam)
    result = replay(rule, problem, trace, seeds=3, init="random_per_worker", record_every=1)
    _, workers = initial_state(rule, problem, seed_keys(3, n)[0], n, "random_per_worker")
    want = _masked_rounds(np.asarray(workers.params, np.float64), trace.counted, "discard",
                          lr, lam)
    np.testing.assert_allclose(np.asarray(result.final_params)[0], want, rtol=2e-5)
    sgd = make_rule("model_averaging", learning_rate=1e-3, local_steps=lam)
    a = replay(sgd, problem, trace, seeds=[0, 1], noise=1.0, record_every=1,
               record_paths=True)
    b = replay(sgd, problem, trace._replace(failures=None), seeds=[0, 1], noise=1.0,
               record_every=1, record_paths=True)
    np.testing.assert_array_equal(a.center_path, b.center_path)
    # the failures table changes only the goodput: a worker down at a close did no work
    assert a.goodput[0] == pytest.approx(goodput(trace)[0]) and a.goodput[0] != b.goodput[0]


def test_stale_rounds_with_failures_are_refused():
    cluster = Cluster(4, EXPONENTIAL, availability=_availability([(0, 1.0, 2.0)]))
    with pytest.raises(ConfigError, match="late='discard'.*cannot carry"):
        simulate_sync(cluster, rounds=5, semisync=SemiSync(quorum=3, late="stale"))


def test_command_line_runs_quorum_rounds_with_churn(capsys):
    from asynclab.cli import main

    base = ["run", "--rule", "synchronous_sgd", "--workers", "4", "--quorum", "3",
            "--mtbf", "20", "--mttr", "5", "--commits", "40", "--json"]
    assert main(base) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["events"] == 40 and 0.0 < out["goodput"][0] < 1.0
    assert main([*base, "--late", "stale"]) == 2
    assert "late='discard'" in capsys.readouterr().err


@pytest.mark.parametrize("semisync", [
    SemiSync(quorum=3), SemiSync(quorum=4, deadline=1.5),
    SemiSync(quorum=4, deadline="adaptive", deadline_spread=1.0),
    SemiSync(window=0.8, min_count=2, deadline=1.5),
], ids=repr)
def test_churn_activity_tiles_and_nobody_counts_while_down(semisync):
    """Poisson churn: every worker's intervals (failed ones included) still tile its time,
    the activity does not change the trace, no worker counts in a round that closes
    while it is down, and every lost phase is λ evaluations."""
    cluster = Cluster(5, EXPONENTIAL, server_time=0.1, network=Link(latency=0.05),
                      availability=Availability(mtbf=6.0, mttr=2.0))
    trace = simulate_sync(cluster, local_steps=2, rounds=80, rng=4, semisync=semisync,
                          activity=True)
    plain = simulate_sync(cluster, local_steps=2, rounds=80, rng=4, semisync=semisync)
    for field in ("time", "duration", "counted"):
        np.testing.assert_array_equal(getattr(trace, field), getattr(plain, field))
    f = trace.failures
    assert f.n_failures > 5 and set(f.lost.tolist()) <= {0, 2} and f.lost.sum() > 0
    down = (f.down[None, :] < trace.time[:, None]) & (trace.time[:, None] < f.up[None, :])
    assert down.any()
    for r, k in zip(*np.nonzero(down), strict=True):
        assert not trace.counted[r, f.worker[k]]
    act = trace.activity
    np.testing.assert_allclose(act.seconds().sum(axis=1), trace.time[-1], rtol=1e-12)
    for k in range(5):
        start, end = act.start[act.worker == k], act.end[act.worker == k]
        assert np.all(start[1:] >= end[:-1] - 1e-12)
    assert (act.kind == KINDS.index("failed")).any()
