"""Run metrics against plain-numpy oracles."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from asynclab import ConfigError
from asynclab.engine._metrics import (
    evaluate,
    first_reached,
    hardware_efficiency,
    statistical_efficiency,
    temporal_efficiency,
    time_to_target,
)
from asynclab.problems._models import mlp


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
