"""Asynchronous DiLoCo (Liu et al. 2024): the naive outer Nesterov per commit, Delayed
Nesterov (DN) and dynamic local updates (DyLU), against numpy transcriptions written here,
their degenerate identities, hand-checked schedules and the refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import asynclab
from asynclab import ConfigError
from asynclab.cluster import Cluster, ComputeTime, simulate_async
from asynclab.engine import replay
from asynclab.problems import beale, quadratic
from asynclab.rules import async_diloco, downpour, parts

D = 5
#: the paper's scenario: seconds per step of the four workers
STEP_TIMES = (0.58, 0.75, 1.51, 3.33)


def _worker(rule, center, params, pulled, pulled_clock=0):
    """A worker that pulled ``pulled`` (at ``pulled_clock``) and now holds ``params``."""
    server = rule.init_server(jnp.asarray(center))
    worker = rule.init_worker(jnp.asarray(center), server)
    return worker._replace(params=jnp.asarray(params), pulled_center=jnp.asarray(pulled),
                           pulled_clock=jnp.asarray(pulled_clock, jnp.int32))


def _commits(seed=0, count=7):
    """A made-up sequence of commits: (pulled centre index, worker's parameters offset)."""
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(0, k + 1)), rng.normal(size=D).astype(np.float32) * 0.3)
            for k in range(count)]


def _server_oracle(center, commits, lr, mu, period):
    """The server by hand in float64: naive Nesterov (period 1) or Delayed Nesterov.

    Each commit's worker pulled the centre after ``pulled`` commits and moved it by
    ``offset``: Δ = θ̃_pull − θᵏ = −offset."""
    centers = [np.asarray(center, np.float64)]
    m = np.zeros(D)
    buffer = np.zeros(D)
    for t, (_, offset) in enumerate(commits, start=1):
        delta = -offset.astype(np.float64)
        buffer = buffer + delta
        c = centers[-1]
        if t % period == 0:
            m = mu * m + buffer / period
            c = c - lr * (delta / period + mu * m)
            buffer = np.zeros(D)
        else:
            c = c - lr * delta / period
        centers.append(c)
    return centers


@pytest.mark.parametrize("period", [1, 3])
def test_server_matches_a_numpy_transcription_on_stale_commits(period):
    lr, mu = 0.7, 0.9
    rule = async_diloco(1e-3, 4, inner="sgd", outer_learning_rate=lr, outer_momentum=mu,
                        delay_period=period)
    start = np.linspace(-1, 1, D).astype(np.float32)
    commits = _commits(seed=period)
    expected = _server_oracle(start, commits, lr, mu, period)
    server = rule.init_server(jnp.asarray(start))
    exchange = jax.jit(rule.exchange)
    centers = [np.asarray(server.center)]
    for clock, (pulled, offset) in enumerate(commits):
        pulled_center = centers[pulled]  # stale: the centre after `pulled` commits
        worker = _worker(rule, start, pulled_center + offset, pulled_center, pulled)
        server, worker, info = exchange(server, worker)
        centers.append(np.asarray(server.center))
        assert int(info.staleness) == clock - pulled
        np.testing.assert_array_equal(worker.params, server.center)  # reset to the centre
        assert int(worker.pulled_clock) == clock + 1
    np.testing.assert_allclose(np.array(centers), np.array(expected), rtol=1e-5, atol=1e-6)


def test_delayed_nesterov_with_period_one_is_optax_nesterov_bit_for_bit():
    lr, mu = 0.7, 0.9
    init_dn, apply_dn = parts.delayed_nesterov(lr, mu, 1)
    init_naive, apply_naive = parts.outer_sgd(optax.sgd(lr, momentum=mu, nesterov=True))
    start = jnp.asarray(np.linspace(-1, 1, D), jnp.float32)
    dn = asynclab.rules.ServerState(start, jnp.zeros((), jnp.int32), (), init_dn(start))
    naive = dn._replace(extra=init_naive(start))

    @jax.jit
    def both(dn, naive, delta):
        c1, _, e1 = apply_dn(dn, delta, None, 0)
        c2, _, e2 = apply_naive(naive, delta, None, 0)
        return dn._replace(center=c1, clock=dn.clock + 1, extra=e1), \
            naive._replace(center=c2, clock=naive.clock + 1, extra=e2)

    for _, offset in _commits(seed=5, count=8):
        dn, naive = both(dn, naive, jnp.asarray(-offset))
        np.testing.assert_array_equal(dn.center, naive.center)
        np.testing.assert_array_equal(dn.extra.momentum, naive.extra[0].trace)


@pytest.mark.slow  # a reduction between two rules; the quick tier keeps the numpy transcription
def test_one_step_sgd_inner_plain_outer_step_is_downpour_bit_for_bit():
    """H = 1, SGD inner, ε = 1, β = 0: θ̃ − 1·(θ̃_pull − θᵏ + 0) adds exactly what DOWNPOUR
    adds (x − y = −(y − x) in IEEE arithmetic), so the numbers are the same bits."""
    trace = simulate_async(Cluster(4), commits=300, rng=0)
    kwargs = dict(seeds=[0, 1], noise=10.0)
    a = replay(async_diloco(2e-3, 1, inner="sgd", outer_learning_rate=1.0, outer_momentum=0.0),
               beale(), trace, **kwargs)
    b = replay(downpour(2e-3), beale(), trace, **kwargs)
    np.testing.assert_array_equal(a.center_path, b.center_path)
    np.testing.assert_array_equal(a.final_params, b.final_params)


def test_dynamic_local_steps_for_the_papers_speeds():
    speeds = [1 / t for t in STEP_TIMES]
    # H·v_k/v_max = 20, 15.47, 7.68, 3.48 → floor
    assert parts.dynamic_local_steps(20, speeds) == (20, 15, 7, 3)
    # whole quotients are not floored one below by rounding; never fewer than one step
    assert parts.dynamic_local_steps(20, [1.0, 0.5, 0.25, 0.1, 1e-6]) == (20, 10, 5, 2, 1)
    assert parts.dynamic_local_steps(30, [1 / 0.1, 1 / 0.3]) == (30, 10)
    rule = async_diloco(1e-3, 20, dynamic=True, speeds=speeds)
    assert rule.worker_steps == (20, 15, 7, 3) and rule.local_steps == 20
    # equal speeds: every worker its H, the plain local work
    assert async_diloco(1e-3, 20, dynamic=True, speeds=(2.0, 2.0)).worker_steps is None


def test_per_worker_windows_schedule_each_workers_own_steps():
    """Constant step times, no link: worker k commits at j · H_k · t_k (j = 1, 2, …)."""
    steps = (20, 15, 7, 3)
    cluster = Cluster(4, ComputeTime("constant", 1.0), time_scale=STEP_TIMES)
    trace = simulate_async(cluster, local_steps=steps, horizon=100.0)
    assert trace.local_steps == steps
    for k in range(4):
        times = trace.time[trace.worker == k]
        expected = np.arange(1, times.size + 1) * steps[k] * STEP_TIMES[k]
        np.testing.assert_allclose(times, expected, rtol=1e-12)
        assert times.size == int(100.0 // (steps[k] * STEP_TIMES[k]))
    # equal windows given per worker: the scalar schedule, bit for bit
    a = simulate_async(Cluster(3), local_steps=(2, 2, 2), commits=60, rng=4)
    b = simulate_async(Cluster(3), local_steps=2, commits=60, rng=4)
    np.testing.assert_array_equal(a.time, b.time)
    np.testing.assert_array_equal(a.worker, b.worker)


def test_full_replay_matches_a_numpy_transcription_with_dn_and_dylu():
    """SGD inner on a quadratic without noise, DN with N = 2 and per-worker windows."""
    lr, outer_lr, mu, period = 0.05, 0.7, 0.9, 2
    speeds = (1.0, 0.5, 0.2)
    problem = quadratic(dim=D, condition=10.0)
    h = np.geomspace(1.0, 10.0, D)
    rule = async_diloco(lr, 4, inner="sgd", outer_learning_rate=outer_lr, outer_momentum=mu,
                        delay_period=period, dynamic=True, speeds=speeds)
    steps = rule.worker_steps
    assert steps == (4, 2, 1)
    cluster = Cluster(3, ComputeTime("constant", 1.0), time_scale=(1.0, 1.7, 3.1))
    trace = simulate_async(cluster, local_steps=steps, commits=24)
    result = replay(rule, problem, trace, seeds=[0], record_every=1)

    center = np.ones(D)
    pulled = [center.copy() for _ in range(3)]
    m, buffer = np.zeros(D), np.zeros(D)
    path = [center.copy()]
    for t, w in enumerate(trace.worker, start=1):
        params = pulled[w].copy()
        for _ in range(steps[w]):
            params = params - lr * h * params
        delta = pulled[w] - params
        buffer += delta
        if t % period == 0:
            m = mu * m + buffer / period
            center = center - outer_lr * (delta / period + mu * m)
            buffer = np.zeros(D)
        else:
            center = center - outer_lr * delta / period
        pulled[w] = center.copy()
        path.append(center.copy())
    path = np.array(path)
    np.testing.assert_allclose(result.final_params[0], path[-1], rtol=1e-5, atol=1e-6)
    loss = 0.5 * (h * path ** 2).sum(axis=1)
    np.testing.assert_allclose(result.loss[0], loss, rtol=1e-5, atol=1e-7)


def test_run_fills_the_speeds_in_from_the_cluster():
    cluster = Cluster(4, ComputeTime("constant", 1.0), time_scale=STEP_TIMES)
    result = asynclab.run("quadratic", "async_diloco", cluster=cluster, commits=12,
                          local_steps=20, learning_rate=0.01, dynamic=True)
    speeds = result.config["hyperparameters"]["speeds"]
    np.testing.assert_allclose(speeds, [1 / t for t in STEP_TIMES])
    # the schedule gave the workers their own windows (20, 15, 7, 3): with 1 s per step
    # scaled, worker k's first commit comes after H_k · t_k seconds
    first = [result.time[0][result.worker[0] == k][0] for k in range(4)]
    np.testing.assert_allclose(first, [20 * 0.58, 15 * 0.75, 7 * 1.51, 3 * 3.33])


@pytest.mark.parametrize("options, field", [
    (dict(delay_period=0), "delay_period"),
    (dict(delay_period=1.5), "delay_period"),
    (dict(dynamic=True), "speeds"),
    (dict(speeds=(1.0, 2.0)), "speeds"),
    (dict(dynamic=True, speeds=(1.0, 0.0)), "speeds[1]"),
    (dict(dynamic=True, speeds=(1.0, float("nan"))), "speeds[1]"),
    (dict(dynamic=True, speeds="fast"), "speeds"),
    (dict(dynamic=True, speeds=()), "speeds"),
    (dict(dynamic="yes"), "dynamic"),
    (dict(local_steps=0), "local_steps"),
    (dict(inner="adam"), "inner"),
    (dict(inner="sgd", weight_decay=0.1), "weight_decay"),
    (dict(outer_momentum=1.0), "outer_momentum"),
    (dict(outer_learning_rate=0.0), "outer_learning_rate"),
])
def test_refusals_name_the_field(options, field):
    with pytest.raises(ConfigError, match=r"async_diloco: " + field.replace("[", r"\[")
                       .replace("]", r"\]")):
        async_diloco(**{"learning_rate": 1e-3, **options})


@pytest.mark.parametrize("steps, cluster, field", [
    ((2, 3), Cluster(3), "one entry per worker"),
    ((2, 0, 1), Cluster(3), r"local_steps\[1\]"),
    ((2, 1.5, 1), Cluster(3), r"local_steps\[1\]"),
    ((2, True, 1), Cluster(3), r"local_steps\[1\]"),
    ((2, 2), Cluster(4, group_size=2), "group_size"),
])
def test_simulator_refuses_bad_per_worker_windows(steps, cluster, field):
    with pytest.raises(ConfigError, match=field):
        simulate_async(cluster, local_steps=steps, commits=5)


def test_a_trace_for_other_windows_is_refused():
    rule = async_diloco(1e-3, 4, dynamic=True, speeds=(1.0, 0.5))
    trace = simulate_async(Cluster(2), local_steps=4, commits=5)
    with pytest.raises(ConfigError, match="local_steps"):
        replay(rule, "quadratic", trace)


def test_command_line_runs_dn_with_dylu_and_refuses_a_bad_period(capsys):
    import json

    from asynclab.cli import main

    args = ["run", "--problem", "quadratic", "--rule", "async_diloco", "--workers", "3",
            "--local-steps", "6", "--learning-rate", "0.05", "--param", "inner=sgd",
            "--param", "delay_period=3", "--param", "dynamic=true", "--commits", "30"]
    assert main([*args, "--param", "speeds=2,1,0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hyperparameters"]["speeds"] == [2.0, 1.0, 0.5]
    assert out["hyperparameters"]["delay_period"] == 3 and out["events"] == 30
    assert main([*args, "--param", "speeds=2,1"]) == 2  # one speed per worker
    assert "async_diloco: speeds must have one entry per worker (3)" in capsys.readouterr().err
    assert main([*args[:-6], "--param", "delay_period=0", "--commits", "5"]) == 2
    assert "async_diloco: delay_period" in capsys.readouterr().err



def test_masked_per_worker_windows_draw_the_noise_of_plain_windows():
    """Per-worker windows that are all 3 (the masked local work, built from the parts)
    compute what λ = 3 computes, noise included: step s of worker k draws (seed, k, s)."""
    rule = async_diloco(2e-3, 3, inner="sgd", outer_learning_rate=1.0, outer_momentum=0.0)
    masked = parts.asynchronous(
        "masked", inner=optax.sgd(2e-3), local_steps=3, commit=parts.outer_gradient,
        apply=parts.outer_sgd(optax.sgd(1.0, momentum=0.0, nesterov=True))[1],
        init_extra=parts.outer_sgd(optax.sgd(1.0, momentum=0.0, nesterov=True))[0],
        pull=parts.reset_to_center, worker_steps=(3, 3, 3), hyperparameters={})
    assert masked.worker_steps == (3, 3, 3) and masked.schedule_steps == (3, 3, 3)
    cluster = Cluster(3)
    a = replay(masked, beale(), simulate_async(cluster, local_steps=(3, 3, 3), commits=90),
               seeds=[0, 1], noise=10.0)
    b = replay(rule, beale(), simulate_async(cluster, local_steps=3, commits=90),
               seeds=[0, 1], noise=10.0)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-6, atol=1e-6)


def test_traces_with_per_worker_windows_keep_and_describe_them():
    from asynclab.cluster import trace_from_order
    from asynclab.cluster._export import describe

    trace = simulate_async(Cluster(3), local_steps=(3, 2, 1), commits=10, activity=True)
    assert describe(trace)["local_steps"] == [3, 2, 1]
    assert trace_from_order([0, 1, 2, 0], 3, local_steps=(3, 2, 1)).local_steps == (3, 2, 1)
