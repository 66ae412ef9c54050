"""Problems: known minima, saddles, curvature, gradient noise, initialisers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import beale_gradient

from asynclab import ConfigError
from asynclab.problems import (
    PROBLEMS,
    beale,
    booth,
    get_problem,
    himmelblau,
    linear_regression,
    quadratic,
    rosenbrock,
    stochastic_gradient,
)


@pytest.mark.parametrize("factory", [beale, rosenbrock, booth, himmelblau])
def test_listed_minima_are_stationary_zeros(factory):
    problem = factory()
    minima = jnp.asarray(problem.minima, jnp.float32)
    # every minimum at once, in one compiled program (eager, each minimum's Hessian
    # dispatched its operations one by one)
    losses, grads, hessians = (np.asarray(a) for a in jax.jit(jax.vmap(
        lambda m: (problem.loss(m), jax.grad(problem.loss)(m),
                   jax.hessian(problem.loss)(m))))(minima))
    np.testing.assert_allclose(losses, 0.0, atol=1e-6)
    assert np.all(np.linalg.norm(grads, axis=1) < 1e-2)
    assert np.all(np.linalg.eigvalsh(hessians) > 0)  # true minima


def test_beale_gradient_matches_hand_derivative():
    rng = np.random.default_rng(0)
    points = rng.uniform(-3, 3, (20, 2))
    got = np.asarray(jax.vmap(jax.grad(beale().loss))(jnp.asarray(points, jnp.float32)))
    for p, g in zip(points, got, strict=True):
        np.testing.assert_allclose(g, beale_gradient(p), rtol=1e-4, atol=1e-3)


def test_beale_saddle_and_valley():
    problem = beale()
    saddle = jnp.array([0.0, 1.0])
    assert np.linalg.norm(np.asarray(jax.jit(jax.grad(problem.loss))(saddle))) < 1e-6
    eig = np.linalg.eigvalsh(np.asarray(jax.jit(jax.hessian(problem.loss))(saddle)))
    assert eig[0] < -1 and eig[1] > 1  # indefinite: a saddle
    # far to the left, with y optimised numerically near 1, the loss approaches ≈ 0.45
    ys = np.linspace(0.9, 1.1, 2001)
    far = jax.vmap(problem.loss)(jnp.stack([jnp.full(ys.shape, -1e4), ys], axis=1))
    assert float(jnp.min(far)) == pytest.approx(0.45, abs=0.02)


def test_quadratic_has_the_condition_number_asked_for():
    problem = quadratic(dim=7, condition=50.0)
    hess = np.asarray(jax.jit(jax.hessian(problem.loss))(jnp.zeros(7)))
    eig = np.linalg.eigvalsh(hess)
    assert eig.max() / eig.min() == pytest.approx(50.0, rel=1e-5)
    assert float(problem.loss(jnp.zeros(7))) == 0.0


def test_gradient_noise_has_the_variance_asked_for():
    problem = beale()
    gradient = jax.jit(jax.vmap(stochastic_gradient(problem, noise=10.0),
                                in_axes=(None, 0, None, None)))
    keys = jax.random.split(jax.random.key(0), 20000)
    p = jnp.array([1.0, 1.0])
    samples = np.asarray(gradient(p, keys, 0, 0))
    np.testing.assert_allclose(samples.mean(0), beale_gradient([1.0, 1.0]), atol=0.1)
    np.testing.assert_allclose(samples.var(0), [10.0, 10.0], rtol=0.05)
    exact = np.asarray(stochastic_gradient(problem, 0.0)(p, keys[0], 0, 0))
    np.testing.assert_allclose(exact, beale_gradient([1.0, 1.0]), rtol=1e-5)


def test_random_initialisation_is_uniform_in_the_box():
    problem = beale()
    points = np.asarray(problem.initial_params(jax.random.key(1), 5000))
    assert points.shape == (5000, 2)
    assert np.all(points >= -4) and np.all(points <= 4)
    np.testing.assert_allclose(points.mean(0), [0, 0], atol=0.15)
    np.testing.assert_allclose(points.var(0), [64 / 12] * 2, rtol=0.05)
    np.testing.assert_array_equal(np.asarray(problem.initial_params()), problem.start)


def test_success_test():
    problem = beale()
    assert problem.success([3.0, 0.5]) and problem.success([3.05, 0.45])
    assert not problem.success([-4.0, 1.2])
    assert problem.success(np.array([[3.0, 0.5], [0.0, 0.0]])).tolist() == [True, False]


def test_linear_regression_batches_are_the_workers_shards():
    problem = linear_regression(examples=64, dim=3, batch_size=4, shards=4)
    assert np.asarray(problem.batch(1, 0)).tolist() == [16, 17, 18, 19]
    assert np.asarray(problem.batch(1, 4)).tolist() == [16, 17, 18, 19]  # cyclic in 16
    assert np.asarray(problem.batch(5, 0)).tolist() == [16, 17, 18, 19]  # worker 5 -> shard 1
    grad = np.asarray(jax.grad(problem.loss)(jnp.asarray(problem.global_minimum)))
    assert np.linalg.norm(grad) < 1e-4


def test_registry_and_bad_options():
    assert set(PROBLEMS) >= {"beale", "rosenbrock", "booth", "himmelblau", "quadratic"}
    assert get_problem("quadratic", dim=3).dim == 3
    with pytest.raises(ConfigError, match="unknown problem"):
        get_problem("nope")
    with pytest.raises(ConfigError, match="dim"):
        quadratic(dim=0)
    with pytest.raises(ConfigError, match="condition"):
        quadratic(condition=0.5)
    with pytest.raises(ConfigError, match="noise"):
        stochastic_gradient(beale(), -1.0)
    with pytest.raises(ConfigError, match="noise"):
        stochastic_gradient(beale(), float("nan"))
