"""Every exchange against a few-line numpy transcription of its formula (docs/rules.md)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from asynclab.rules import (
    AXIS,
    ServerState,
    WorkerState,
    adag,
    aeasgd,
    agn,
    dc_asgd,
    delay_adaptive,
    diloco,
    downpour,
    dynsgd,
    easgd,
    gap_aware,
    staleness_aware,
)

D = 6


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    center, pulled, params = (rng.normal(size=D).astype(np.float32) for _ in range(3))
    return center, pulled, params


def exchange(rule, center, pulled, params, clock=10, pulled_clock=7):
    """Run one exchange of ``rule`` from explicit states; returns (server, worker, info)."""
    server = rule.init_server(jnp.asarray(center))._replace(clock=jnp.int32(clock))
    worker = rule.init_worker(None, server)._replace(
        params=jnp.asarray(params), pulled_center=jnp.asarray(pulled),
        pulled_clock=jnp.int32(pulled_clock))
    return rule.exchange(server, worker)


def test_dynsgd_divides_by_staleness_plus_one():
    c, p, x = arrays(1)
    server, worker, info = exchange(dynsgd(0.1), c, p, x, clock=10, pulled_clock=7)
    assert int(info.staleness) == 3
    np.testing.assert_allclose(server.center, c + (x - p) / 4, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(worker.params, server.center)  # reset
    assert worker.pulled_center is None  # a reset worker's parameters are the centre it pulled
    assert int(worker.pulled_clock) == 11


def test_downpour_and_agn_commit():
    c, p, x = arrays(2)
    server, _, _ = exchange(downpour(0.1, 4), c, p, x)
    np.testing.assert_allclose(server.center, c + (x - p), rtol=1e-6, atol=1e-6)
    server, _, _ = exchange(agn(0.1, 4), c, p, x)
    np.testing.assert_allclose(server.center, c + (x - p) / 4, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("gamma", [1e-4, 0.5, 3.0])
def test_adag_scales_each_weight_by_the_distance_from_the_pulled_centre(gamma):
    c, p, x = arrays(3)
    lam = 5
    server, _, _ = exchange(adag(0.1, lam, gamma=gamma), c, p, x)
    delta = (x - p) / lam
    expected = c + delta / ((c - p) ** 2 / gamma + 1)
    np.testing.assert_allclose(server.center, expected, rtol=1e-5, atol=1e-6)
    server, _, info = exchange(adag(0.1, lam, gamma=gamma, norm=True), c, p, x)
    scale = 1 / (np.sum((c - p) ** 2) / gamma + 1)
    np.testing.assert_allclose(server.center, c + delta * scale, rtol=1e-5, atol=1e-6)
    assert float(info.scale) == pytest.approx(scale, rel=1e-5)


def test_staleness_aware_and_delay_adaptive_steps():
    c, p, x = arrays(4)
    for tau in (0, 1, 3, 9):
        server, _, _ = exchange(staleness_aware(0.1), c, p, x, clock=20, pulled_clock=20 - tau)
        np.testing.assert_allclose(server.center, c + (x - p) / max(tau, 1), rtol=1e-6, atol=1e-6)
        server, _, _ = exchange(delay_adaptive(0.1, workers=4), c, p, x, clock=20,
                                pulled_clock=20 - tau)
        np.testing.assert_allclose(server.center, c + (x - p) * 4 / max(4, tau), rtol=1e-6,
                                   atol=1e-6)


def test_dc_asgd_compensates_the_gradient():
    c, p, x = arrays(5)
    lr, kappa = 0.1, 0.04
    server, _, _ = exchange(dc_asgd(lr, kappa=kappa), c, p, x)
    g = -(x - p) / lr  # the gradient the worker's step came from
    compensated = g + kappa * g * g * (c - p)
    np.testing.assert_allclose(server.center, c - lr * compensated, rtol=1e-5, atol=1e-6)


def test_gap_aware_divides_by_the_gap_in_units_of_typical_steps():
    lr, decay, eps = 0.1, 0.999, 1e-8
    rule = gap_aware(lr, decay=decay)
    rng = np.random.default_rng(6)
    c = rng.normal(size=D).astype(np.float32)
    server = rule.init_server(jnp.asarray(c))
    v = np.zeros(D)
    for t in range(1, 4):
        p = c - rng.normal(size=D).astype(np.float32) * 0.1
        x = p + rng.normal(size=D).astype(np.float32) * 0.05
        worker = rule.init_worker(None, server)._replace(
            params=jnp.asarray(x), pulled_center=jnp.asarray(p))
        server, _, _ = rule.exchange(server, worker)
        g = -(x - p) / lr
        v = decay * v + (1 - decay) * g * g
        threshold = lr * (np.sqrt(v / (1 - decay**t)) + eps)
        c = c + (x - p) / (1 + np.abs(c - p) / threshold)
        np.testing.assert_allclose(server.center, c, rtol=1e-5, atol=1e-6)


def test_asynchronous_easgd_elastic_exchange():
    c, p, x = arrays(7)
    lr, rho = 0.01, 5.0
    alpha = lr * rho
    server, worker, _ = exchange(aeasgd(lr, 32, elasticity=rho), c, p, x)
    e = alpha * (x - c)
    np.testing.assert_allclose(server.center, c + e, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(worker.params, x - e, rtol=1e-6)  # no reset


def synchronize_all(rule, center, params):
    """The synchronous exchange for all workers at once, under the named axis."""
    server = rule.init_server(jnp.asarray(center))
    workers = jax.vmap(rule.init_worker, in_axes=(0, None))(jnp.asarray(params), server)
    return jax.vmap(rule.exchange, in_axes=(None, 0), out_axes=(None, 0, 0),
                    axis_name=AXIS)(server, workers)


def test_synchronous_easgd_elastic_averaging():
    rng = np.random.default_rng(8)
    n, lr, rho = 5, 0.02, 3.0
    alpha = lr * rho
    c = rng.normal(size=D).astype(np.float32)
    x = rng.normal(size=(n, D)).astype(np.float32)
    server, workers, _ = synchronize_all(easgd(lr, elasticity=rho), c, x)
    np.testing.assert_allclose(server.center, c + alpha * (x - c).sum(0), rtol=1e-5, atol=1e-6)
    beta = n * alpha
    np.testing.assert_allclose(server.center, (1 - beta) * c + beta * x.mean(0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(workers.params, x - alpha * (x - c), rtol=1e-6, atol=1e-6)


def test_diloco_outer_nesterov_step():
    rng = np.random.default_rng(9)
    n, outer_lr, mu = 3, 0.7, 0.9
    c = rng.normal(size=D).astype(np.float32)
    rule = diloco(1e-3, 4, outer_learning_rate=outer_lr, outer_momentum=mu)
    server = rule.init_server(jnp.asarray(c))
    buf = np.zeros(D)
    for _ in range(3):
        x = (c + rng.normal(size=(n, D)) * 0.1).astype(np.float32)
        workers = jax.vmap(rule.init_worker, in_axes=(0, None))(jnp.asarray(x), server)
        server, workers, _ = jax.vmap(rule.exchange, in_axes=(None, 0), out_axes=(None, 0, 0),
                                      axis_name=AXIS)(server, workers)
        outer_grad = c - x.mean(0)
        buf = mu * buf + outer_grad  # optax/PyTorch Nesterov: step = g + μ·buf
        c = c - outer_lr * (outer_grad + mu * buf)
        np.testing.assert_allclose(server.center, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(workers.params, np.broadcast_to(c, (n, D)), rtol=1e-5,
                                   atol=1e-6)


def test_server_momentum_is_heavy_ball_on_central_updates():
    """θ̃_{t+1} = θ̃_t + Δ + μ (θ̃_t − θ̃_{t−1}), with μ negative as well."""
    for mu in (0.5, -0.3):
        rule = downpour(0.1, server_momentum=mu)
        rng = np.random.default_rng(10)
        c = rng.normal(size=D).astype(np.float32)
        previous = c.copy()
        server = rule.init_server(jnp.asarray(c))
        for _ in range(4):
            p = np.asarray(server.center)
            x = p + rng.normal(size=D).astype(np.float32) * 0.1
            worker = rule.init_worker(None, server)._replace(params=jnp.asarray(x),
                                                             pulled_center=jnp.asarray(p))
            server, _, _ = rule.exchange(server, worker)
            c, previous = c + (x - p) + mu * (c - previous), c
            np.testing.assert_allclose(server.center, c, rtol=1e-5, atol=1e-6)


def test_worker_momentum_survives_pulls():
    """Per-worker optax momentum: the buffer is kept across exchanges (not reset)."""
    rule = downpour(0.1, worker_momentum=0.9)
    server = rule.init_server(jnp.zeros(2))
    worker = rule.init_worker(None, server)

    def gradient(params, key, worker_id, step):
        return jnp.ones(2)

    key = jax.random.key(0)
    worker = rule.local(worker, gradient, key, 0)
    server, worker, _ = rule.exchange(server, worker)
    worker = rule.local(worker, gradient, key, 0)
    # second step: buffer = 0.9·1 + 1 = 1.9, step −0.19
    np.testing.assert_allclose(worker.params - worker.pulled_center, [-0.19, -0.19], rtol=1e-5,
                               atol=1e-6)


def test_states_are_typed_named_tuples():
    rule = downpour(0.1)
    server = rule.init_server(jnp.zeros(3))
    assert isinstance(server, ServerState)
    assert isinstance(rule.init_worker(None, server), WorkerState)


def test_mixed_group_averages_its_members_local_work():
    """A group of m members: each takes λ SGD steps on its own shard from the group's
    parameters, the group commits the mean (numpy oracle on least squares)."""
    from asynclab.problems import linear_regression, regression_data, stochastic_gradient
    from asynclab.rules import mixed

    m, lam, lr, batch = 3, 4, 0.05, 4
    problem = linear_regression(examples=96, dim=4, batch_size=batch, shards=6)
    x, y, _ = regression_data(96, 4)
    rule = mixed(lr, lam, group_size=m)
    server = rule.init_server(jnp.zeros(4))
    group = rule.init_worker(None, server)
    group = rule.local(group, stochastic_gradient(problem), jax.random.key(0), 1)  # group 1
    ends = []
    for j in range(m):
        worker = 1 * m + j
        theta = np.zeros(4)
        for s in range(lam):
            index = worker * 16 + (s * batch + np.arange(batch)) % 16
            xb, yb = x[index].astype(np.float64), y[index].astype(np.float64)
            theta = theta - lr * xb.T @ (xb @ theta - yb) / batch
        ends.append(theta)
    np.testing.assert_allclose(group.params, np.mean(ends, axis=0), rtol=1e-5, atol=1e-6)
    server, group, _ = rule.exchange(server, group)
    np.testing.assert_allclose(server.center, np.mean(ends, axis=0), rtol=1e-5, atol=1e-6)
