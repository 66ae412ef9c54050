"""Who moved the centre: ``Result.center_share`` against a numpy oracle, its identities,
and a property of the damping rules derived below."""

import json

import numpy as np
import pytest

import asynclab
from asynclab._errors import ConfigError
from asynclab.cli import main
from asynclab.cluster import Cluster, ComputeTime, SemiSync, simulate_async, trace_from_order
from asynclab.engine import Result, replay, replay_grid
from asynclab.problems import get_problem
from asynclab.rules import downpour, dynsgd, make_rule

#: one problem object for every test here (one compilation per rule and worker count)
DIM = 3


def problem():
    return get_problem("quadratic", dim=DIM, condition=10.0)


def curvatures():
    return np.geomspace(1.0, 10.0, DIM)


def oracle_shares(order, n_workers, learning_rate, local_steps, damped, stop=None):
    """A few lines of numpy: DOWNPOUR (or DynSGD with ``damped``) commits on
    f = ½ Σ hᵢ θᵢ² from θ = 1, no noise; worker k's summed ‖θ̃_{t+1} − θ̃_t‖ over its
    commits (those before ``stop``, and whose step fits float32's squares), normalised."""
    h = curvatures()
    center = np.ones(DIM)
    pulled = [center.copy() for _ in range(n_workers)]
    pulled_clock = np.zeros(n_workers, int)
    moved = np.zeros(n_workers)
    for t, k in enumerate(order):
        if stop is not None and t >= stop:
            break
        params = pulled[k].copy()
        for _ in range(local_steps):
            params = params - learning_rate * h * params
        scale = 1.0 / (t - pulled_clock[k] + 1) if damped else 1.0
        new = center + scale * (params - pulled[k])
        step = np.linalg.norm(new - center)
        if step ** 2 < np.finfo(np.float32).max:
            moved[k] += step
        center = new
        pulled[k], pulled_clock[k] = center.copy(), t + 1
    return moved / moved.sum()


ORDER = [0, 1, 0, 2, 2, 1, 0, 0, 2, 1, 0, 2]


@pytest.mark.parametrize("name", ["downpour", "dynsgd"])
def test_shares_equal_a_numpy_transcription(name):
    """A hand-made trace (uneven commits, stalenesses 0 to 3), λ = 2: the engine's shares
    are the oracle's to float32 rounding, and sum to 1."""
    rule = make_rule(name, learning_rate=0.05, local_steps=2)
    trace = trace_from_order(ORDER, 3, local_steps=2)
    result = replay(rule, problem(), trace, seeds=[0, 1])
    expected = oracle_shares(ORDER, 3, 0.05, 2, damped=name == "dynsgd")
    assert result.center_share.shape == (2, 3)
    np.testing.assert_allclose(result.center_share, np.stack([expected] * 2), rtol=1e-5)
    np.testing.assert_allclose(result.center_share.sum(axis=1), 1.0, rtol=1e-12)


def test_damping_changes_the_shares():
    """The oracle is not blind to the rule: on this trace DynSGD's shares differ from
    DOWNPOUR's by more than the tolerance above."""
    plain = oracle_shares(ORDER, 3, 0.05, 2, damped=False)
    damped = oracle_shares(ORDER, 3, 0.05, 2, damped=True)
    assert np.abs(plain - damped).max() > 1e-2


def test_one_worker_moves_the_whole_centre():
    result = asynclab.run(problem(), "downpour", workers=1, commits=50, noise=1.0,
                          seeds=[0, 1], learning_rate=0.05)
    assert result.center_share.tolist() == [[1.0], [1.0]]


def test_equal_constant_compute_times_share_equally():
    """Constant equal compute times: a round-robin order; started at the minimum with
    gradient noise, every commit's step is η(hθ + σξ) of one stationary law, so each of
    the n workers' 500 commits per seed sum to ≈ 1/n of the total (relative spread
    ≈ 0.4/√500 per worker: 0.02 is several standard deviations)."""
    n = 4
    result = asynclab.run(problem(), "downpour", workers=n, commits=2000, noise=1.0,
                          compute=ComputeTime("constant"), seeds=[0, 1, 2],
                          learning_rate=0.05, start=[0.0] * DIM)
    np.testing.assert_array_equal(result.worker[0, :8], [0, 1, 2, 3, 0, 1, 2, 3])
    np.testing.assert_allclose(result.center_share, 1 / n, atol=0.02)


def test_damping_takes_share_from_the_slow_worker():
    """One worker 4x slower than three others (exponential times), started at the minimum
    with gradient noise, λ = 1. Each commit's raw step has one stationary law, so under
    DOWNPOUR a worker's share is its share of the commits: the slow one commits at rate
    1/4 against 3 for the rest, ≈ 0.25/3.25 ≈ 0.08. Between two of its commits the others
    commit ≈ 12 times, so its staleness is ≈ 12 against ≈ 2.3 for a fast worker; DynSGD
    scales a commit by 1/(τ + 1), weighting the slow worker's ≈ 0.25/13 against
    ≈ 3/3.3, a share ≈ 0.02. So DynSGD gives the slow worker well under DOWNPOUR's share
    (asserted: under 0.6x)."""
    cluster = Cluster(4, time_scale=(1.0, 1.0, 1.0, 4.0))
    trace = simulate_async(cluster, commits=3000, rng=0)
    start = problem()._replace(start=np.zeros(DIM, np.float32))
    plain = replay(downpour(0.05), start, trace, seeds=[0, 1, 2], noise=1.0)
    damped = replay(dynsgd(0.05), start, trace, seeds=[0, 1, 2], noise=1.0)
    commits = np.bincount(trace.worker, minlength=4) / trace.n_events
    np.testing.assert_allclose(plain.center_share.mean(axis=0), commits, atol=0.02)
    assert np.all(damped.center_share[:, 3] < 0.6 * plain.center_share[:, 3])


@pytest.mark.parametrize("record_every", [150, 1])
def test_a_diverged_run_counts_the_commits_of_its_final_centre(record_every):
    """η = 0.5 on curvatures up to 10: every commit multiplies the stiff coordinate by
    −4, and the run diverges within ~70 commits. The shares are the oracle's over the
    commits that made the run's final centre (its last finite one): those before
    ``diverged_at`` where the centre overflowed (one loss record, at the end), those up
    to and with it where a recorded loss overflowed first (a record every commit).
    Steps too large for float32's squares, on the way there, count in neither."""
    order = [0, 1, 2, 1, 1] * 30
    trace = trace_from_order(order, 3)
    result = replay(downpour(0.5), problem(), trace, seeds=[0], record_every=record_every)
    (at,) = result.diverged_at
    assert 0 < at < len(order)
    stop = at if record_every > 1 else at + 1
    expected = oracle_shares(order, 3, 0.5, 1, damped=False, stop=stop)
    np.testing.assert_allclose(result.center_share[0], expected, rtol=1e-4)
    assert result.center_share[0].sum() == pytest.approx(1.0)


def test_a_centre_that_never_moves_has_no_shares():
    result = asynclab.run(problem(), "downpour", workers=3, commits=30, learning_rate=0.05,
                          start=[0.0] * DIM)
    assert np.isnan(result.center_share).all()


def test_synchronous_rounds_weight_workers_equally():
    """A synchronous round averages its workers with equal weights: 1/n each, exactly."""
    result = asynclab.run("beale", "model_averaging", workers=3, commits=20, noise=1.0,
                          seeds=[0, 1])
    np.testing.assert_array_equal(result.center_share, np.full((2, 3), 1 / 3))


def test_semi_synchronous_rounds_split_among_those_who_counted():
    """A round's movement goes to its counted workers, equally: with constant step times
    1, 1, 1, 4 and a quorum of 3, worker 3 never counts (share 0, exactly) and the others
    split every round's step: 1/3 each, exactly."""
    cluster = Cluster(4, compute=ComputeTime("constant", mean=1.0),
                      time_scale=(1.0, 1.0, 1.0, 4.0))
    result = asynclab.run("beale", "model_averaging", cluster=cluster, commits=10,
                          noise=1.0, seeds=[0, 1], semisync=SemiSync(quorum=3))
    np.testing.assert_array_equal(result.center_share, [[1 / 3, 1 / 3, 1 / 3, 0]] * 2)


def test_mixed_groups_split_their_share():
    """A mixed cluster commits per group: a group's share is the oracle's for its
    commits (DOWNPOUR between groups of identical members with no noise is DOWNPOUR of
    one worker per group), split equally over its members."""
    order = [0, 1, 1, 0, 1, 0, 0, 0]
    rule = make_rule("mixed", learning_rate=0.05, group_size=2)
    result = replay(rule, problem(), trace_from_order(order, 2, group_size=2))
    groups = oracle_shares(order, 2, 0.05, 1, damped=False)
    np.testing.assert_allclose(result.center_share[0], np.repeat(groups / 2, 2), rtol=1e-5)


def test_save_and_load_keep_the_shares(tmp_path):
    result = asynclab.run(problem(), "downpour", workers=3, commits=40, noise=1.0,
                          seeds=[0, 1], learning_rate=0.05)
    loaded = Result.load(result.save(tmp_path / "run"))
    np.testing.assert_array_equal(loaded.center_share, result.center_share)

    # an archive from before the shares (no member) loads, without them
    older = Result(**{**vars(result), "center_share": None})
    assert Result.load(older.save(tmp_path / "old")).center_share is None

    bad = Result(**{**vars(result), "center_share": result.center_share[:, :2, None]})
    with pytest.raises(ConfigError, match="center_share"):
        Result.load(bad.save(tmp_path / "bad"))
    outside = Result(**{**vars(result), "center_share": result.center_share + 1})
    with pytest.raises(ConfigError, match="center_share"):
        Result.load(outside.save(tmp_path / "outside"))


def test_a_sweep_has_shares_per_grid_point():
    trace = trace_from_order(ORDER, 3)
    result = replay_grid(downpour(0.05), problem(), trace, seeds=[0, 1],
                         grid={"learning_rate": [0.05, 0.02]})
    assert result.center_share.shape == (2, 2, 3)
    for i, lr in enumerate((0.05, 0.02)):
        expected = oracle_shares(ORDER, 3, lr, 1, damped=False)
        np.testing.assert_allclose(result.center_share[i], np.stack([expected] * 2),
                                   rtol=1e-5)


def test_the_command_line_prints_and_returns_the_shares(capsys):
    args = ["run", "--problem", "quadratic", "--dim", str(DIM), "--condition", "10",
            "--rule", "dynsgd", "--workers", "3", "--commits", "60", "--noise", "1",
            "--learning-rate", "0.05", "--seeds", "0,1"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = asynclab.run(problem(), "dynsgd", workers=3, commits=60, noise=1.0,
                            learning_rate=0.05, seeds=[0, 1]).center_share
    np.testing.assert_array_equal(out["center_share"], expected)
    assert main(args) == 0
    text = capsys.readouterr().out
    mean = ", ".join(f"{v:.3f}" for v in expected.mean(axis=0))
    assert f"share of the centre's movement by worker, mean over 2 seeds: {mean}" in text
