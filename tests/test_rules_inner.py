"""The asynchronous rules' Adam inner optimizer (``inner="adam"``) against a numpy Adam."""

import numpy as np
import pytest

import asynclab
from asynclab.problems import quadratic


def _numpy_adam(gradient, start, steps, lr, b1=0.9, b2=0.999, eps=1e-8):
    # Kingma & Ba, Algorithm 1, written out
    theta = np.asarray(start, np.float64).copy()
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for t in range(1, steps + 1):
        g = gradient(theta)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta = theta - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return theta


def test_sequential_adam_matches_a_numpy_adam_on_a_quadratic():
    problem = quadratic(dim=4, condition=10.0)
    curvature = np.geomspace(1.0, 10.0, 4)  # the quadratic's Hessian diagonal
    start = np.asarray(problem.start, np.float64)
    assert np.allclose(np.asarray(problem.loss(start)), 0.5 * np.sum(curvature * start**2))
    result = asynclab.run(problem, "sequential_sgd", workers=1, commits=60, local_steps=1,
                          learning_rate=0.05, inner="adam", record_every=1)
    expected = _numpy_adam(lambda x: curvature * x, start, 60, 0.05)
    np.testing.assert_allclose(result.final_params[0], expected, rtol=1e-4, atol=1e-5)
    # Adam is not SGD: the same run with the SGD inner optimizer ends elsewhere
    sgd = asynclab.run(problem, "sequential_sgd", workers=1, commits=60, learning_rate=0.05)
    assert np.max(np.abs(sgd.final_params[0] - expected)) > 1e-2


# the quick tier: a plain rule and one with per-weight state; the slow tier all four
@pytest.mark.parametrize("name", ["downpour", pytest.param("dynsgd", marks=pytest.mark.slow),
                                  pytest.param("agn", marks=pytest.mark.slow), "adag"])
def test_one_worker_with_adam_is_sequential_adam(name):
    kwargs = dict(workers=1, commits=40, learning_rate=0.01, noise=1.0, seeds=[0, 1],
                  inner="adam", problem_options={"dim": 6})
    a = asynclab.run("quadratic", name, **kwargs)
    b = asynclab.run("quadratic", "sequential_sgd", **kwargs)
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-5)


def test_adam_state_survives_pulls_and_agn_with_one_step_is_downpour():
    # AGN with λ = 1 commits a/1 = a: the same numbers as DOWNPOUR, with Adam too
    kwargs = dict(workers=4, commits=200, learning_rate=0.01, noise=1.0, seeds=[0, 1],
                  inner="adam", problem_options={"dim": 6})
    a = asynclab.run("quadratic", "agn", **kwargs)
    b = asynclab.run("quadratic", "downpour", **kwargs)
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-6)
    # one worker, λ = 3: Adam's moments carry over from one window to the next, so the
    # centre after 10 commits is 30 consecutive Adam steps (not 10 restarts of 3 steps)
    problem = quadratic(dim=4, condition=10.0)
    curvature = np.geomspace(1.0, 10.0, 4)
    result = asynclab.run(problem, "downpour", workers=1, commits=10, local_steps=3,
                          learning_rate=0.05, inner="adam")
    expected = _numpy_adam(lambda x: curvature * x, np.asarray(problem.start), 30, 0.05)
    np.testing.assert_allclose(result.final_params[0], expected, rtol=1e-4, atol=1e-5)
