"""The replay engine against independent numpy oracles and the identities of docs/rules.md."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import async_sgd, beale_gradient, beale_loss

import asynclab
from asynclab.cluster import (
    Cluster,
    ComputeTime,
    RoundTrace,
    SemiSync,
    Trace,
    simulate_async,
    simulate_sync,
)
from asynclab.engine import Result, replay
from asynclab.problems import beale, linear_regression, quadratic, regression_data
from asynclab.rules import downpour, model_averaging, sequential_sgd, synchronous_sgd


def round_robin_trace(n_workers, n_events, local_steps=1):
    """Equal constant compute times: workers commit in turn, τ = n − 1 after warm-up."""
    t = np.arange(n_events)
    pulled = np.where(t < n_workers, 0, t - n_workers + 1).astype(np.int32)
    return Trace(time=(t + 1.0) / n_workers, worker=(t % n_workers).astype(np.int32),
                 pulled_clock=pulled, staleness=(t - pulled).astype(np.int32),
                 n_workers=n_workers, local_steps=local_steps)


def rounds(n_workers, n_rounds, local_steps=1):
    return RoundTrace(time=np.arange(1.0, n_rounds + 1), duration=np.ones(n_rounds),
                      n_workers=n_workers, local_steps=local_steps)


@pytest.mark.parametrize("local_steps", [1, 3])
def test_downpour_replay_matches_hand_written_async_sgd(local_steps):
    """Replaying a simulated exponential-time trace equals a numpy event loop on Beale."""
    cluster = Cluster(5, ComputeTime("exponential"))
    trace = simulate_async(cluster, local_steps=local_steps, commits=300, rng=3)
    lr = 2e-3
    result = replay(downpour(lr, local_steps), beale(), trace, record_every=1)
    expected = async_sgd(beale_gradient, beale().start, trace.worker, 5, lr, local_steps)
    np.testing.assert_allclose(result.center_path[0, 1:], expected, rtol=2e-4, atol=2e-5)
    assert result.center_path[0, -1] == pytest.approx(result.final_params[0])


def test_downpour_on_quadratic_matches_oracle_in_high_dimension():
    problem = quadratic(dim=50, condition=20.0)
    h = np.geomspace(1.0, 20.0, 50)
    trace = simulate_async(Cluster(8), commits=400, rng=1)
    result = replay(downpour(0.01), problem, trace, record_every=400)
    expected = async_sgd(lambda p: h * p, np.ones(50), trace.worker, 8, 0.01)
    np.testing.assert_allclose(result.final_params[0], expected[-1], rtol=1e-4, atol=1e-6)


def test_downpour_with_one_worker_is_sequential_sgd():
    """n = 1, λ = 1: identical noise draws, identical arithmetic up to float rounding."""
    trace = simulate_async(Cluster(1), commits=500, rng=0)
    kwargs = dict(seeds=[0, 1, 2], noise=10.0, record_every=1)
    a = replay(downpour(1e-3), beale(), trace, **kwargs)
    b = replay(sequential_sgd(1e-3), beale(), trace, **kwargs)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-5, atol=1e-6)
    # and without noise, both equal plain SGD written by hand
    c = replay(sequential_sgd(1e-3), beale(), trace, record_every=1)
    p, path = beale().start.astype(np.float64), []
    for _ in range(500):
        p = p - 1e-3 * beale_gradient(p)
        path.append(p)
    np.testing.assert_allclose(c.center_path[0, 1:], np.array(path), rtol=1e-4, atol=1e-5)


def test_synchronous_sgd_equals_sgd_with_n_times_the_batch():
    """n workers with batch m ≡ one SGD step on the union of their batches (numpy)."""
    n, m, lr, n_rounds = 4, 8, 0.05, 60
    problem = linear_regression(examples=512, dim=5, batch_size=m, shards=n)
    x, y, _ = regression_data(512, 5)
    result = replay(synchronous_sgd(lr), problem, rounds(n, n_rounds), record_every=1,
                    record_paths=True)
    theta = np.zeros(5)
    shard = 512 // n
    for s in range(n_rounds):
        index = np.concatenate([k * shard + (s * m + np.arange(m)) % shard for k in range(n)])
        xb, yb = x[index].astype(np.float64), y[index].astype(np.float64)
        theta = theta - lr * xb.T @ (xb @ theta - yb) / len(index)
    np.testing.assert_allclose(result.final_params[0], theta, rtol=1e-4, atol=1e-5)


def test_model_averaging_with_identical_workers_is_sequential_sgd():
    """Identical starts, no noise, same data on every worker ≡ sequential SGD."""
    lam, n_rounds = 5, 40
    averaged = replay(model_averaging(1e-3, lam), beale(), rounds(4, n_rounds, lam))
    seq = replay(sequential_sgd(1e-3, lam), beale(), simulate_async(Cluster(1), local_steps=lam,
                 commits=n_rounds))
    np.testing.assert_allclose(averaged.final_params, seq.final_params, rtol=1e-5, atol=1e-6)
    p = beale().start.astype(np.float64)
    for _ in range(lam * n_rounds):
        p = p - 1e-3 * beale_gradient(p)
    np.testing.assert_allclose(averaged.final_params[0], p, rtol=1e-4, atol=1e-5)


def test_model_averaging_on_sharded_data_matches_numpy():
    """Workers on different shards drift apart for λ steps, then the centre is their mean."""
    n, m, lam, lr = 3, 4, 6, 0.05
    problem = linear_regression(examples=96, dim=4, batch_size=m, shards=n)
    x, y, _ = regression_data(96, 4)
    result = replay(model_averaging(lr, lam), problem, rounds(n, 20, lam))
    center, shard = np.zeros(4), 96 // n
    for r in range(20):
        ends = []
        for k in range(n):
            theta = center.copy()
            for i in range(lam):
                s = r * lam + i
                index = k * shard + (s * m + np.arange(m)) % shard
                xb, yb = x[index].astype(np.float64), y[index].astype(np.float64)
                theta = theta - lr * xb.T @ (xb @ theta - yb) / m
            ends.append(theta)
        center = np.mean(ends, axis=0)
    np.testing.assert_allclose(result.final_params[0], center, rtol=1e-4, atol=1e-5)


def test_random_per_worker_starts_are_jax_random_draws_and_centre_is_their_mean():
    problem = beale()
    lr = 1e-4
    result = replay(model_averaging(lr, 1), problem, rounds(6, 3), seeds=[4],
                    init="random_per_worker", record_every=1)
    # the documented derivation, with jax.random itself: the seed's first key draws the
    # n starts uniformly in Beale's box
    init_key = jax.random.split(jax.random.key(4))[0]
    starts = np.asarray(jax.random.uniform(init_key, (6, 2), jnp.float32, -4.0, 4.0),
                        np.float64)
    assert np.ptp(starts[:, 0]) > 0.5  # the workers really start apart
    first_locals = starts - lr * np.array([beale_gradient(p) for p in starts])
    np.testing.assert_allclose(result.worker_path[0, 0], first_locals, rtol=1e-5, atol=1e-6)
    # the centre starts at the workers' mean and is their mean after the first round
    np.testing.assert_allclose(result.center_path[0, 0], starts.mean(axis=0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(result.center_path[0, 1], first_locals.mean(axis=0),
                               rtol=1e-5, atol=1e-6)


def test_same_seed_gives_identical_bits():
    a = asynclab.run("beale", "downpour", workers=4, commits=500, seeds=[7], noise=10.0)
    b = asynclab.run("beale", "downpour", workers=4, commits=500, seeds=[7], noise=10.0)
    assert np.array_equal(a.loss, b.loss)
    assert np.array_equal(a.final_params, b.final_params)
    assert np.array_equal(a.time, b.time)
    c = asynclab.run("beale", "downpour", workers=4, commits=500, seeds=[8], noise=10.0)
    assert not np.array_equal(a.final_params, c.final_params)


# a synchronous rule's seeds: the slow tier's; DOWNPOUR's stay quick
@pytest.mark.parametrize("rule", ["downpour", pytest.param("model_averaging",
                                                           marks=pytest.mark.slow)])
def test_vmapped_seeds_equal_seeds_run_one_at_a_time(rule):
    kwargs = dict(workers=4, commits=200, noise=10.0, local_steps=2, trace_per_seed=True)
    together = asynclab.run("beale", rule, seeds=[0, 1, 2], **kwargs)
    for i, seed in enumerate([0, 1, 2]):
        alone = asynclab.run("beale", rule, seeds=[seed], **kwargs)
        np.testing.assert_allclose(together.final_params[i], alone.final_params[0],
                                   rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(together.loss[i], alone.loss[0], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(together.staleness[i], alone.staleness[0])


def test_the_rule_computes_the_staleness_the_simulator_scheduled():
    trace = simulate_async(Cluster(6, ComputeTime("lognormal", shape=1.0)), commits=400, rng=2)
    rule = downpour(1e-3)
    server = rule.init_server(jnp.zeros(2))
    workers = [rule.init_worker(jnp.zeros(2), server) for _ in range(6)]
    seen = []
    def no_gradient(params, key, worker, step):
        return jnp.zeros_like(params)

    @jax.jit
    def commit(server, worker, w):
        return rule.exchange(server, rule.local(worker, no_gradient, jax.random.key(0), w))

    for w in trace.worker:
        server, workers[w], info = commit(server, workers[w], w)
        seen.append(int(info.staleness))
    np.testing.assert_array_equal(seen, trace.staleness)


def test_divergence_is_detected_frozen_and_reported():
    """η·h_max = 2.5 > 2: the centre blows up; the event matches a float32-range oracle
    (no divergence bound: only a centre or loss that is not finite ends the run)."""
    problem = quadratic(dim=4, condition=10.0)
    trace = round_robin_trace(2, 3000)
    result = replay(downpour(0.25), problem, trace, record_every=1, diverged_above=None)
    assert result.diverged[0]
    h = np.geomspace(1.0, 10.0, 4)
    with np.errstate(all="ignore"):
        path = async_sgd(lambda p: h * p, np.ones(4), trace.worker[:200], 2, 0.25)
    # the first commit whose centre, or its loss, no longer fits in float32
    big = np.finfo(np.float32).max
    with np.errstate(all="ignore"):
        overflow = np.any(np.abs(path) > big, axis=1) | (0.5 * (h * path * path).sum(1) > big)
    first_bad = int(np.argmax(overflow))
    assert first_bad > 0
    at = int(result.diverged_at[0])
    assert abs(at - first_bad) <= 2
    # the reported centre is the last finite one: the oracle's before the event that
    # diverged (or at it, when only the loss overflowed there)
    assert np.all(np.isfinite(result.final_params))
    assert any(np.allclose(result.final_params[0], path[i], rtol=1e-3) for i in (at - 1, at))
    after = result.record_events > result.diverged_at[0]
    assert np.all(np.isnan(result.loss[0, after]))
    assert np.all(np.isfinite(result.loss[0, result.record_events <= result.diverged_at[0]]))


@pytest.mark.parametrize("bound", [1e6, 1e3])
def test_a_loss_beyond_the_divergence_bound_is_a_divergence(bound):
    """The default bound (and another): the run diverges at the first record whose loss
    exceeds bound × max(1, initial loss), the centre still finite; the event and the kept
    centre match a numpy oracle of the same commits."""
    problem = quadratic(dim=4, condition=10.0)
    trace = round_robin_trace(2, 3000)
    result = replay(downpour(0.25), problem, trace, record_every=1, diverged_above=bound)
    h = np.geomspace(1.0, 10.0, 4)
    path = async_sgd(lambda p: h * p, np.ones(4), trace.worker[:200], 2, 0.25)
    loss = 0.5 * (h * path * path).sum(1)
    limit = bound * max(1.0, 0.5 * h.sum())
    first = int(np.argmax(loss > limit))
    assert first > 0 and np.isfinite(loss[first])
    at = int(result.diverged_at[0])
    assert abs(at - first) <= 1
    assert np.allclose(result.final_params[0], path[at], rtol=1e-3)
    assert np.all(np.isnan(result.loss[0, result.record_events > at]))
    assert np.all(np.isfinite(result.loss[0, result.record_events <= at]))


@pytest.mark.parametrize("unroll", [3, pytest.param(8, marks=pytest.mark.slow)])
def test_unrolled_event_loop_gives_the_same_numbers(unroll):
    """Several events per loop iteration (blocks of 7 events: 3 does not divide them, 8
    exceeds them) replay the same arithmetic, divergence event included (on a CPU the
    same bits; an accelerator may fuse the unrolled events differently)."""
    problem = quadratic(dim=4, condition=10.0)
    trace = round_robin_trace(2, 300)
    plain = replay(downpour(0.25), problem, trace, record_every=7, seeds=[0, 1], noise=1.0,
                   unroll=1)
    unrolled = replay(downpour(0.25), problem, trace, record_every=7, seeds=[0, 1],
                      noise=1.0, unroll=unroll)
    assert np.all(plain.diverged) and plain.diverged_at[0] > 0
    np.testing.assert_array_equal(plain.diverged_at, unrolled.diverged_at)
    np.testing.assert_allclose(plain.loss, unrolled.loss, rtol=1e-5)
    np.testing.assert_allclose(plain.final_params, unrolled.final_params, rtol=1e-5)
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(plain.loss, unrolled.loss)
        np.testing.assert_array_equal(plain.final_params, unrolled.final_params)
    with pytest.raises(asynclab.ConfigError, match="unroll"):
        replay(downpour(0.25), problem, trace, unroll=0)


def test_a_stable_run_does_not_diverge():
    result = replay(downpour(0.05), quadratic(dim=4, condition=10.0), round_robin_trace(2, 500))
    assert not result.diverged[0] and result.diverged_at[0] == -1
    assert result.final_loss[0] < 1e-6


def test_result_saves_and_loads(tmp_path):
    result = asynclab.run("beale", "downpour", workers=3, commits=100, seeds=[0, 1])
    path = result.save(tmp_path / "run")
    back = Result.load(path)
    assert back.config == result.config
    for name in ("time", "worker", "staleness", "loss", "final_params", "diverged_at",
                 "center_path", "worker_path", "record_events", "seeds"):
        np.testing.assert_array_equal(getattr(back, name), getattr(result, name))


def test_records_and_shapes():
    result = asynclab.run("beale", "downpour", workers=3, commits=95, seeds=[0, 1],
                          record_every=10)
    assert result.loss.shape == (2, 11)
    assert result.record_events.tolist() == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95]
    assert result.worker_path.shape == (2, 95, 2)
    assert result.center_path.shape == (2, 11, 2)
    expected_first = float(beale().loss(jnp.asarray(beale().start)))
    assert result.loss[0, 0] == pytest.approx(expected_first)
    assert result.staleness_histogram().sum() == 95


def test_horizon_traces_of_different_lengths_replay_together():
    result = asynclab.run("beale", "downpour", workers=4, horizon=50.0, seeds=[0, 1, 2],
                          trace_per_seed=True)
    assert result.time.shape[0] == 3
    lengths = (result.staleness >= 0).sum(axis=1)
    assert len(set(lengths.tolist())) > 1  # really different lengths
    assert result.staleness_histogram().sum() == lengths.sum()
    for i in range(3):
        alone = asynclab.run("beale", "downpour", workers=4, horizon=50.0, seeds=[i],
                             trace_per_seed=True)
        np.testing.assert_allclose(result.final_params[i], alone.final_params[0], rtol=1e-6)


def test_compiled_once_for_new_seeds():
    """A second replay with other seeds of the same shape does not trace the event again."""
    calls = []
    base = beale()

    def counted(p):
        calls.append(1)
        return base.loss(p)

    problem = base._replace(loss=counted, batch_loss=lambda p, b: counted(p))
    kwargs = dict(workers=3, commits=60, noise=1.0)
    first = asynclab.run(problem, "downpour", seeds=[0, 1], **kwargs)
    traced = len(calls)
    second = asynclab.run(problem, "downpour", seeds=[2, 3], **kwargs)
    assert traced > 0
    assert len(calls) == traced  # nothing traced again
    assert not np.array_equal(first.final_params, second.final_params)


def test_record_exchanges_ends_where_the_replay_ends_and_marks_divergence():
    """The recording scan runs replay's events: the same final centres and the same
    divergence; every commit's staleness is the trace's, and its scale NaN once diverged."""
    from asynclab.engine import record_exchanges
    from asynclab.rules import make_rule

    trace = simulate_async(Cluster(3), local_steps=2, commits=40, rng=1)
    rule = make_rule("adag", learning_rate=0.05, local_steps=2, gamma=1e-3)
    problem = quadratic(dim=3, condition=10.0)
    record = record_exchanges(rule, problem, trace, seeds=[0, 1, 2], noise=1.0)
    want = replay(rule, problem, trace, seeds=[0, 1, 2], noise=1.0)
    np.testing.assert_allclose(record.final_params, want.final_params, rtol=1e-6, atol=1e-7)
    assert (record.staleness == trace.staleness[None]).all()
    assert record.scale.shape == (3, 40) and np.all((record.scale > 0) & (record.scale <= 1))
    assert record.scale.min() < 0.99  # the scaling is exercised

    big = make_rule("downpour", learning_rate=0.5)
    fast = simulate_async(Cluster(2), commits=30, rng=0)
    record = record_exchanges(big, "beale", fast, seeds=[0, 1])
    want = replay(big, "beale", fast, seeds=[0, 1])
    # replay also stops a run whose recorded loss overflows while the centre is still
    # finite (here one commit earlier); the recording marks the commit whose centre did
    assert np.all(want.diverged_at >= 0) and np.all(record.diverged_at >= want.diverged_at)
    for s, at in enumerate(record.diverged_at):
        assert at >= 0, "η = 0.5 diverges on Beale"
        assert np.all(record.scale[s, :at] == 1.0) and np.all(np.isnan(record.scale[s, at:]))


def test_a_result_prints_as_one_line_without_its_arrays():
    result = asynclab.run("beale", "downpour", workers=3, commits=40, seeds=range(4))
    text = repr(result)
    assert "\n" not in text and "array" not in text and len(text) < 200, text
    assert "downpour on beale" in text and "n=3" in text and "4 seed(s)" in text
    assert "40 commits" in text and "diverged 0/4" in text
    median = float(np.median(result.final_loss))
    assert f"final loss median {median:.4g}" in text


#: one Beale for the layout tests: compiled programs are cached by the problem's identity,
#: so replays of one layout share a program (each layout still compiles its own)
_BEALE = beale()


def _averaging(n, local_steps, n_rounds, lr, **options):
    """Model averaging from random starts with σ² = 10: 12 seeds, central loss recorded
    every 2 rounds, paths recorded."""
    return replay(model_averaging(lr, local_steps), _BEALE, rounds(n, n_rounds, local_steps),
                  seeds=range(12), noise=10.0, init="random_per_worker", record_every=2,
                  record_paths=True, **options)


def _same_bits(a, b):
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True)
               for k in ("loss", "final_params", "diverged_at", "center_path", "worker_path"))


@pytest.mark.parametrize("lr", [
    1e-3, pytest.param(0.03, marks=pytest.mark.slow)])  # 0.03: most runs diverge, at various rounds
def test_stepwise_and_padded_replays_are_the_replay(lr):
    """One local step per compiled event, on a worker axis padded from 3 to 5 workers:
    with λ = 1 the same bits as the plain replay (records, centres, paths, divergence)."""
    plain = _averaging(3, 1, 12, lr)
    assert _same_bits(plain, _averaging(3, 1, 12, lr, stepwise=True, pad_workers=5))
    if lr > 0.01:
        assert 0 < np.sum(plain.diverged_at >= 0) < 12


@pytest.mark.slow  # three more compiled layouts; λ > 1 step by step runs quick below
@pytest.mark.parametrize("lr", [1e-3, 0.03])
def test_stepwise_replays_of_several_local_steps_are_the_replay_to_rounding(lr):
    """With λ = 3 the padding gives the bits of the step-by-step replay without it, which
    is the plain replay to float rounding (its λ-step loop, unrolled, rounds differently in
    the last bits) with the same rounds of divergence."""
    plain = _averaging(3, 3, 4, lr)
    step = _averaging(3, 3, 4, lr, stepwise=True)
    assert step.worker_path.shape == plain.worker_path.shape  # one entry per round
    assert _same_bits(step, _averaging(3, 3, 4, lr, stepwise=True, pad_workers=5))
    assert np.array_equal(step.diverged_at, plain.diverged_at)
    for key in ("loss", "final_params", "center_path", "worker_path"):
        np.testing.assert_allclose(getattr(step, key), getattr(plain, key), rtol=1e-5,
                                   atol=1e-6, err_msg=key)


def test_stepwise_padded_replays_share_one_compilation():
    """λ = 2 and λ = 4 with the same budget of local steps, n = 2 and n = 3 on an axis of
    3 workers: one compiled chunk for all four."""
    from asynclab.engine._compiled import TRACE_COUNT

    problem = beale()  # programs are cached by the problem's identity

    def go(n, local_steps):
        trace = rounds(n, 8 // local_steps, local_steps)
        return replay(model_averaging(1e-3, local_steps), problem, trace, seeds=range(4),
                      noise=1.0, init="random_per_worker", record_every=8 // local_steps,
                      record_paths=False, stepwise=True, pad_workers=3)

    go(2, 2)
    before = TRACE_COUNT["chunk"]
    for n, local_steps in ((2, 4), (3, 2), (3, 4)):
        go(n, local_steps)
    assert TRACE_COUNT["chunk"] == before


def test_stepwise_and_padding_refusals():
    with pytest.raises(asynclab.ConfigError, match="stepwise"):
        replay(downpour(1e-3, 2), beale(), round_robin_trace(2, 4, 2), stepwise=True)
    with pytest.raises(asynclab.ConfigError, match="pad_workers"):
        replay(model_averaging(1e-3), beale(), rounds(4, 2), pad_workers=3)
    with pytest.raises(asynclab.ConfigError, match="asynchronous"):
        replay(downpour(1e-3), beale(), round_robin_trace(2, 4), pad_workers=3)


def test_a_prepared_run_carries_the_replays_layout(tmp_path):
    """``prepare(..., unroll=, stepwise=, pad_workers=)`` runs the replay with that layout:
    the same bits as ``replay`` given the same options, for given traces and for a
    simulated cluster (whose schedule ``run`` simulates, as ``simulate_sync`` does)."""
    problem = _BEALE
    layout = dict(unroll=4, stepwise=True, pad_workers=5)
    options = dict(seeds=range(3), noise=10.0, init="random_per_worker", record_every=2,
                   record_paths=True)
    trace = rounds(3, 4, 3)
    want = replay(model_averaging(1e-3, 3), problem, trace, **options, **layout)
    spec = asynclab.prepare(problem, model_averaging(1e-3, 3), traces=trace, **options,
                            **layout)
    assert (spec.unroll, spec.stepwise, spec.pad_workers) == (4, True, 5)
    got = asynclab.run(spec)
    assert _same_bits(got, want)
    # the result says how it was replayed (only where the layout is not the default)
    assert got.config["layout"] == {"unroll": 4, "stepwise": True, "pad_workers": 5}
    assert Result.load(got.save(tmp_path / "run.npz")).config["layout"] == got.config["layout"]
    assert "layout" not in asynclab.prepare(problem, model_averaging(1e-3, 3), traces=trace,
                                            **options).config
    simulated = asynclab.run(problem, "model_averaging", workers=3, commits=4, local_steps=3,
                             learning_rate=1e-3, **options, **layout)
    again = replay(model_averaging(1e-3, 3), problem,
                   simulate_sync(Cluster(workers=3), local_steps=3, rounds=4, rng=0),
                   **options, **layout)
    assert _same_bits(simulated, again)


@pytest.mark.parametrize("options, match", [
    (dict(rule="downpour", stepwise=True), "downpour is not one"),
    (dict(pad_workers=2), "fewer than"),
    (dict(unroll=0), "unroll must be"),
    (dict(stepwise="yes"), "True or False"),
    (dict(stepwise=True, grid={"learning_rate": [1e-3, 2e-3]}), "not a sweep"),
    (dict(rule="downpour", unroll=2, backend="pmap", devices=1, workers=None),
     "backend 'sim'"),
    (dict(stepwise=True, semisync=SemiSync(quorum=2)), "semi-synchronous"),
])
def test_prepare_refuses_a_layout_the_replay_cannot_take(options, match):
    options = {"rule": "model_averaging", "workers": 3, "commits": 4, **options}
    options = {k: v for k, v in options.items() if v is not None}
    with pytest.raises(asynclab.ConfigError, match=match):
        asynclab.prepare("beale", **options)


@pytest.mark.parametrize("commits, every", [(95, 10), (200, 3)])
def test_every_record_is_the_loss_of_the_centre_recorded_with_it(commits, every):
    """Each chunk of the replay records the state it is given and the states after its
    blocks, and the first of those is kept only in a run's first chunk: across the chunks
    (10 of one block; 17 of four, the last padded), record r's loss is Beale's function of
    record r's centre, the first centre is the start and the last the final one."""
    result = asynclab.run("beale", "downpour", workers=3, commits=commits, seeds=[0, 1],
                          record_every=every)
    n_records = -(-commits // every) + 1
    assert result.loss.shape == (2, n_records) and result.center_path.shape == (2, n_records, 2)
    np.testing.assert_allclose(result.loss, beale_loss(result.center_path), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_array_equal(result.center_path[:, 0],
                                  np.broadcast_to(np.asarray(beale().start), (2, 2)))
    np.testing.assert_array_equal(result.center_path[:, -1], result.final_params)
    assert len(set(result.loss[0].tolist())) == n_records  # every record a new state


def test_a_start_whose_loss_is_not_finite_is_recorded_as_it_is():
    """The first record is the start's loss as it is: an infinite one marks no divergence
    (a run diverges at an event), and the records after it are the run's."""
    base = quadratic(dim=2, condition=10.0)
    start = jnp.asarray(base.start)
    problem = base._replace(loss=lambda p: 1.0 / jnp.sum((p - start) ** 2))  # inf at start
    result = replay(downpour(0.05), problem, round_robin_trace(2, 40), record_every=10)
    assert result.loss[0, 0] == np.inf
    assert not result.diverged[0] and result.diverged_at[0] == -1
    moved = np.sum((result.center_path[0, 1:] - np.asarray(base.start)) ** 2, axis=1)
    np.testing.assert_allclose(result.loss[0, 1:], 1.0 / moved, rtol=1e-4)
