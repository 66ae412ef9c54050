"""Run metrics against plain-numpy oracles."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from asynclab import ConfigError
from asynclab.cluster import Cluster
from asynclab.engine import Result, replay, schedule
from asynclab.engine._metrics import (
    evaluate,
    first_reached,
    hardware_efficiency,
    statistical_efficiency,
    temporal_efficiency,
    time_to_target,
)
from asynclab.problems._models import mlp
from asynclab.rules import make_rule


def test_evaluate_vmapped_over_seeds_matches_numpy():
    model = mlp(6, (5,), 3)
    params = jax.jit(jax.vmap(model.init))(jax.random.split(jax.random.key(0), 4))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 6)).astype(np.float32)
    y = rng.integers(0, 3, 40).astype(np.int32)
    result = jax.jit(lambda p: evaluate(model.apply, p, x, y))(params)
    chunked = jax.jit(lambda p: evaluate(model.apply, p, x, y, chunk=8))(params)
    assert result.loss.shape == result.accuracy.shape == (4,)
    for s in range(4):
        p = jax.tree.map(lambda a, s=s: np.asarray(a[s], np.float64), params)
        logits = np.maximum(x @ p["layer0"]["w"] + p["layer0"]["b"], 0) @ p["layer1"]["w"] \
            + p["layer1"]["b"]
        log_p = logits - np.log(np.exp(logits).sum(1, keepdims=True))
        assert float(result.loss[s]) == pytest.approx(-log_p[np.arange(40), y].mean(), rel=1e-5)
        assert float(result.accuracy[s]) == pytest.approx(np.mean(logits.argmax(1) == y))
    np.testing.assert_allclose(chunked.loss, result.loss, rtol=1e-6)
    np.testing.assert_array_equal(chunked.accuracy, result.accuracy)
    with pytest.raises(ConfigError, match="chunk"):
        evaluate(model.apply, params, x, y, chunk=7)
    single = evaluate(model.apply, jax.tree.map(lambda a: a[1], params), x, y, seeds_axis=False)
    assert float(single.loss) == pytest.approx(float(result.loss[1]), rel=1e-6)


def _first_oracle(values, target, at, higher):
    for v, a in zip(values, at, strict=True):
        if (v >= target) if higher else (v <= target):
            return a
    return np.inf


def test_time_to_target_matches_a_loop():
    rng = np.random.default_rng(1)
    accuracy = np.cumsum(rng.uniform(0, 0.05, (6, 30)), axis=1)  # rising, 6 seeds
    times = np.cumsum(rng.exponential(1.0, (6, 30)), axis=1)
    commits = np.arange(30) * 10
    result = time_to_target(times, commits, accuracy, 0.5)
    for s in range(6):
        assert float(result.seconds[s]) == pytest.approx(
            _first_oracle(accuracy[s], 0.5, times[s], True), rel=1e-6)
        assert float(result.commits[s]) == _first_oracle(accuracy[s], 0.5, commits, True)
    # never reached, and a loss target (lower is better), with per-seed targets
    assert np.isinf(time_to_target(times, commits, accuracy, 5.0).seconds).all()
    loss = 2.0 - accuracy
    targets = np.linspace(1.2, 1.9, 6)
    got = first_reached(loss, targets, commits, higher_is_better=False)
    for s in range(6):
        assert float(got[s]) == _first_oracle(loss[s], targets[s], commits, False)


def _integral_oracle(t, f, start, end):
    grid = np.unique(np.concatenate([[start, end], t[(t > start) & (t < end)]]))
    return np.trapezoid(np.interp(grid, t, f), grid)


def test_temporal_efficiency_matches_numpy_integration():
    rng = np.random.default_rng(2)
    t_a = np.concatenate([[0.0], np.cumsum(rng.exponential(1.0, 40))])
    t_b = np.concatenate([[0.0], np.cumsum(rng.exponential(1.5, 25))])
    f_a = np.exp(-0.1 * t_a) + 0.05 * rng.uniform(size=t_a.size)
    f_b = np.exp(-0.05 * t_b) + 0.05 * rng.uniform(size=t_b.size)
    end = min(t_a[-1], t_b[-1])
    expected = _integral_oracle(t_a, f_a, 0.0, end) / _integral_oracle(t_b, f_b, 0.0, end)
    got = float(temporal_efficiency(t_a, f_a, t_b, f_b))
    assert got == pytest.approx(expected, rel=1e-5)
    assert float(temporal_efficiency(t_a, f_a, t_a, f_a)) == pytest.approx(1.0)
    # constant losses: the ratio of the constants
    assert float(temporal_efficiency(t_a, np.full(t_a.size, 2.0), t_b,
                                     np.full(t_b.size, 4.0))) == pytest.approx(0.5)
    # batched over seeds against one reference run
    stacked = np.stack([f_a, 2 * f_a])
    got = temporal_efficiency(np.stack([t_a, t_a]), stacked, t_b, f_b)
    np.testing.assert_allclose(got, [expected, 2 * expected], rtol=1e-5)


def test_statistical_and_hardware_efficiency():
    assert float(statistical_efficiency(300, 100)) == pytest.approx(3.0)
    assert np.isinf(float(statistical_efficiency(jnp.inf, 100)))
    times = np.array([[0.0, 1.0, 3.0, 6.0], [0.0, 2.0, 4.0, 8.0]])
    commits = np.array([0, 10, 20, 30])
    np.testing.assert_allclose(hardware_efficiency(times, commits), [6 / 30, 8 / 30])


# ----------------------------------------------------------------------------- from a Result


def _hand_result(seed_traces: bool):
    """A Result of 3 seeds, 12 events recorded every 4, with known series."""
    rng = np.random.default_rng(3)
    n_traces = 3 if seed_traces else 1
    time = np.cumsum(rng.exponential(1.0, (n_traces, 12)), axis=1)
    accuracy = np.array([[0.1, 0.3, 0.6, 0.9], [0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.7, 0.8]])
    loss = np.array([[2.0, 1.5, 1.0, 0.5], [2.0, 1.9, 1.8, 1.7], [1.0, 0.9, 0.8, 0.7]])
    result = Result(config={}, seeds=np.arange(3), time=time,
                    worker=np.zeros((n_traces, 12), np.int32),
                    staleness=np.zeros((n_traces, 12), np.int32),
                    record_events=np.array([0, 4, 8, 12]), loss=loss,
                    final_params=np.zeros((3, 2)), diverged_at=np.full(3, -1),
                    metrics={"accuracy": accuracy, "validation_loss": loss + 0.1})
    return result, time, accuracy, loss


@pytest.mark.parametrize("seed_traces", [False, True])
def test_result_time_to_target_reads_each_seeds_trace(seed_traces):
    result, time, accuracy, loss = _hand_result(seed_traces)
    record_time = np.concatenate([np.zeros((time.shape[0], 1)), time], axis=1)[:, [0, 4, 8, 12]]
    found = result.time_to_target(0.55)
    lowered = result.time_to_target(1.2, "loss")  # a loss: lower is better by default
    for s in range(3):
        at = record_time[s if seed_traces else 0]
        assert float(found.seconds[s]) == pytest.approx(
            _first_oracle(accuracy[s], 0.55, at, True), rel=1e-6)
        assert float(found.commits[s]) == _first_oracle(accuracy[s], 0.55, [0, 4, 8, 12], True)
        assert float(lowered.commits[s]) == _first_oracle(loss[s], 1.2, [0, 4, 8, 12], False)
    assert np.isinf(found.seconds[1]) and np.isinf(found.commits[1])  # never reaches 0.55
    # against itself: statistical efficiency is the ratio of commits, seed by seed
    ratio = result.statistical_efficiency(result, 0.55)
    np.testing.assert_allclose(ratio[[0, 2]], 1.0)
    assert np.isnan(ratio[1])  # inf / inf: neither run reached the target
    # against a reference whose accuracy arrives one record later: commits over commits
    slower = dataclasses.replace(result, metrics={**result.metrics,
                                                  "accuracy": accuracy[:, [0, 0, 1, 2]]})
    ratio = result.statistical_efficiency(slower, 0.55)
    for s in (0, 2):
        assert float(ratio[s]) == pytest.approx(
            _first_oracle(accuracy[s], 0.55, [0, 4, 8, 12], True)
            / _first_oracle(accuracy[s, [0, 0, 1, 2]], 0.55, [0, 4, 8, 12], True))
        assert float(ratio[s]) < 1
    # hardware efficiency: simulated seconds per commit between the first and last record
    np.testing.assert_allclose(result.hardware_efficiency(),
                               record_time[[0, 1, 2] if seed_traces else [0, 0, 0], -1] / 12,
                               rtol=1e-6)


def test_result_temporal_efficiency_integrates_in_simulated_time():
    result, time, _, loss = _hand_result(True)
    other, other_time, _, _ = _hand_result(False)
    other.loss = loss[::-1].copy()
    record = np.concatenate([np.zeros((3, 1)), time], axis=1)[:, [0, 4, 8, 12]]
    other_record = np.concatenate([[0.0], other_time[0]])[[0, 4, 8, 12]]
    got = result.temporal_efficiency(other)
    for s in range(3):
        end = min(record[s, -1], other_record[-1])
        expected = (_integral_oracle(record[s], loss[s], 0.0, end)
                    / _integral_oracle(other_record, other.loss[s], 0.0, end))
        assert float(got[s]) == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(result.temporal_efficiency(result, "validation_loss"), 1.0,
                               rtol=1e-6)
    # the metric named is the one integrated: the other run's validation loss differs
    other.metrics = {**other.metrics, "validation_loss": loss[::-1] + 0.5}
    got = result.temporal_efficiency(other, "validation_loss")
    for s in range(3):
        end = min(record[s, -1], other_record[-1])
        expected = (_integral_oracle(record[s], loss[s] + 0.1, 0.0, end)
                    / _integral_oracle(other_record, (loss[::-1] + 0.5)[s], 0.0, end))
        assert float(got[s]) == pytest.approx(expected, rel=1e-5)


def test_result_efficiency_refuses_what_it_cannot_measure():
    result, *_ = _hand_result(False)
    with pytest.raises(ConfigError, match="metric.*'top5'.*available: loss, accuracy"):
        result.time_to_target(0.5, "top5")
    fewer = dataclasses.replace(result, seeds=np.arange(2), loss=result.loss[:2])
    with pytest.raises(ConfigError, match="other: 2 seed"):
        result.temporal_efficiency(fewer)
    with pytest.raises(ConfigError, match="reference must be a Result"):
        result.statistical_efficiency(0.5, 0.5)


def test_result_time_to_target_on_a_replay():
    rule = make_rule("downpour", learning_rate=1e-3)  # 0.01 diverges on Beale's start
    trace = schedule(rule, Cluster(3), commits=60, rng=0)
    result = replay(rule, "beale", trace, seeds=[0, 1], record_every=10, noise=1.0)
    target = float(np.median(result.loss))
    found = result.time_to_target(target, "loss")
    # each record's simulated time from the trace itself (0 before the first commit)
    at = np.concatenate([[0.0], trace.time])[result.record_events]
    firsts = [_first_oracle(result.loss[s], target, result.record_events, False)
              for s in range(2)]
    assert any(np.isfinite(firsts))  # the median loss is reached by some seed
    for s, first in enumerate(firsts):
        assert float(found.commits[s]) == first
        if np.isfinite(first):
            i = list(result.record_events).index(first)
            assert float(found.seconds[s]) == pytest.approx(at[i], rel=1e-6)
    with pytest.raises(ConfigError, match="records no 'accuracy'"):
        result.time_to_target(0.9)
