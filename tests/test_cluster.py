"""Tests of the cluster timing models and the SimPy simulator.

Statistical checks state their tolerance next to the theory or sample size that
justifies it. Facts used: in a closed loop of n
always-busy workers that pull right after committing, the mean staleness is n - 1 up to
a boundary term; with exponential compute times the committing worker is uniform and
independent of the past, so staleness is Geometric(1/n) on {0, 1, ...}.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from asynclab._errors import ConfigError
from asynclab.cluster import (
    DISTRIBUTIONS,
    Cluster,
    ComputeTime,
    Link,
    RoundTrace,
    Straggler,
    Trace,
    heterogeneous,
    simulate_async,
    simulate_sync,
)

CONSTANT = ComputeTime("constant", mean=1.0)
EXPONENTIAL = ComputeTime("exponential", mean=1.0)


def _worker_times(trace: Trace, worker: int) -> np.ndarray:
    return trace.time[trace.worker == worker]


# ----------------------------------------------------------------- trace format


def test_trace_format_and_semantics():
    trace = simulate_async(Cluster(5), commits=3000, local_steps=2, rng=1)
    assert isinstance(trace, Trace)
    assert trace.n_events == 3000 and trace.n_workers == 5 and trace.local_steps == 2
    assert trace.time.dtype == np.float64
    for a in (trace.worker, trace.pulled_clock, trace.staleness):
        assert a.dtype == np.int32 and a.shape == (3000,)
    np.testing.assert_array_equal(trace.staleness, np.arange(3000) - trace.pulled_clock)
    assert np.all(np.diff(trace.time) >= 0)
    assert np.all(trace.staleness >= 0)
    # Every worker pulls at clock 0 at time 0, then right after each of its commits.
    for k in range(5):
        rows = np.flatnonzero(trace.worker == k)
        assert trace.pulled_clock[rows[0]] == 0
        np.testing.assert_array_equal(trace.pulled_clock[rows[1:]], rows[:-1] + 1)


# -------------------------------------------------------------- mean staleness

_CASES = {
    "exponential": lambda n: Cluster(n, EXPONENTIAL),
    "lognormal": lambda n: Cluster(n, ComputeTime("lognormal", mean=1.0, shape=1.0)),
    "one_slow_worker": lambda n: Cluster(n, EXPONENTIAL, time_scale=(10.0,) + (1.0,) * (n - 1)),
    "straggler": lambda n: Cluster(n, EXPONENTIAL, stragglers=(Straggler(0, 50.0, at_step=3),)),
    "network_and_server": lambda n: Cluster(
        n, EXPONENTIAL, network=Link(latency=0.2), server_time=0.5 / n
    ),
}


@pytest.mark.parametrize("n", [2, 8, 32])
@pytest.mark.parametrize("case", list(_CASES))
def test_mean_staleness_is_n_minus_1(n, case):
    """Closed-loop fact: mean staleness = n - 1 up to a start/end boundary term.

    Worker k's staleness values telescope to (its last commit index) - (its commits - 1),
    so exactly: mean = n - 1 - (sum_k d_k - n) / T with d_k = T - last_k >= 1. d_k is
    about the number of commits between two of worker k's commits: ~n for equal
    workers, ~10 n for the 10x slow one, so the bias is ~(n^2 + 10 n) / T. There is no
    other noise, but d_k has a roughly exponential tail (a residual waiting time), so we
    allow 5x that: an excess of 4 n^2 + 40 n in the slow worker's d (mean ~10 n) alone
    has probability ~exp(-0.4 n - 4) < 1%.
    """
    T = 40_000 if n == 32 else 20_000
    trace = simulate_async(_CASES[case](n), commits=T, rng=7)
    mean = trace.staleness.mean(dtype=np.float64)
    last = np.array([np.flatnonzero(trace.worker == k)[-1] for k in range(n)])
    np.testing.assert_allclose(mean, n - 1 - ((T - last).sum() - n) / T, rtol=0, atol=1e-9)
    assert abs(mean - (n - 1)) <= 5 * (n * n + 10 * n) / T


# ------------------------------------------------------------ geometric shape


@pytest.mark.parametrize("n", [4, 8])
def test_exponential_staleness_is_geometric(n):
    """tau ~ Geometric(1/n): P(0) = 1/n and P(l+1)/P(l) = 1 - 1/n.

    Tolerances are 5 binomial standard errors (5 sqrt(p(1-p)/T) for P(0); for the ratio
    of counts c_{l+1}/c_l, 5 r sqrt(1/c_l + 1/c_{l+1})).
    """
    T = 200_000
    trace = simulate_async(Cluster(n, EXPONENTIAL), commits=T, rng=11)
    tau = trace.staleness[n:]  # a worker's first commit is not geometric
    counts = np.bincount(tau, minlength=8)
    p0 = counts[0] / tau.size
    assert abs(p0 - 1 / n) <= 5 * math.sqrt((1 / n) * (1 - 1 / n) / tau.size)
    for l in range(4):
        ratio = counts[l + 1] / counts[l]
        tol = 5 * ratio * math.sqrt(1 / counts[l] + 1 / counts[l + 1])
        assert abs(ratio - (1 - 1 / n)) <= tol, (l, ratio)


# --------------------------------------------------------- deterministic times


@pytest.mark.parametrize("n", [1, 3, 8])
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"network": Link(latency=0.1, bandwidth=1e3), "message_bytes": 50, "server_time": 0.02},
    ],
    ids=["no_network", "network_and_server"],
)
def test_constant_times_give_staleness_n_minus_1(n, extra):
    """Equal constant times: ties resolved in worker order, so round-robin commits.

    The first n commits (one per worker, all pulled at clock 0) have staleness
    0, 1, ..., n-1; after that every commit has staleness n - 1.
    """
    trace = simulate_async(Cluster(n, CONSTANT, **extra), commits=50 * n, local_steps=3)
    np.testing.assert_array_equal(trace.worker, np.tile(np.arange(n), 50))
    np.testing.assert_array_equal(trace.staleness[:n], np.arange(n))
    assert np.all(trace.staleness[n:] == n - 1)


# ------------------------------------------------------------------ stragglers


def test_straggler_at_step_constant():
    n, delay, step = 4, 5.5, 10
    base = simulate_async(Cluster(n, CONSTANT), commits=200)
    late = simulate_async(
        Cluster(n, CONSTANT, stragglers=(Straggler(1, delay, at_step=step),)), commits=200
    )
    t0, t1 = _worker_times(base, 1), _worker_times(late, 1)
    m = min(t0.size, t1.size)
    np.testing.assert_array_equal(t1[:step], t0[:step])
    np.testing.assert_allclose(t1[step:m], t0[step:m] + delay, rtol=0, atol=1e-9)
    # The other workers are unaffected (no queue): each commits every second.
    for k in (0, 2, 3):
        np.testing.assert_array_equal(_worker_times(late, k)[:50], np.arange(1.0, 51.0))
    # Bound: worker 1 pulled at time `step`, committed at step + 1 + delay; each of the
    # other n - 1 workers commits once per unit of time in between, so at least
    # (n - 1) * floor(1 + delay) commits by others make up its staleness.
    row = np.flatnonzero(late.worker == 1)[step]
    assert late.time[row] == step + 1 + delay
    assert late.staleness[row] >= (n - 1) * math.floor(1 + delay)
    assert np.all(np.delete(late.staleness, row)[n:] <= late.staleness[row])


@pytest.mark.parametrize("at_step", [7, 64, 300])  # in, at the end of, after block 1
def test_straggler_shifts_only_its_worker_with_exponential_times(at_step):
    """Each worker draws from its own stream, so a straggler moves only its own commits."""
    delay = 30.0
    base = simulate_async(Cluster(6, EXPONENTIAL), commits=3000, rng=5)
    late = simulate_async(
        Cluster(6, EXPONENTIAL, stragglers=(Straggler(2, delay, at_step=at_step),)),
        commits=3000,
        rng=5,
    )
    t0, t1 = _worker_times(base, 2), _worker_times(late, 2)
    m = min(t0.size, t1.size)
    assert m > at_step + 10
    np.testing.assert_array_equal(t1[:at_step], t0[:at_step])
    np.testing.assert_allclose(t1[at_step:m], t0[at_step:m] + delay, rtol=1e-12)
    m = min(_worker_times(base, 0).size, _worker_times(late, 0).size)
    np.testing.assert_allclose(_worker_times(late, 0)[:m], _worker_times(base, 0)[:m])


@pytest.mark.parametrize(
    ("local_steps", "straggler", "delayed_commit"),
    [
        (1, Straggler(0, 2.5, at_time=10.3), 11),  # first step starting >= 10.3 starts at 11
        (1, Straggler(0, 2.5, at_time=10.0), 10),  # a step starting exactly then counts
        (3, Straggler(0, 2.5, at_time=4.5), 1),  # steps start 3, 4, 5: step 5, phase 1
        (3, Straggler(0, 2.5, at_step=4), 1),  # step 4 is in phase 1 (steps 3..5)
        (3, Straggler(0, 2.5, at_step=6), 2),
    ],
)
def test_straggler_timing_with_local_steps(local_steps, straggler, delayed_commit):
    n = 3
    base = simulate_async(Cluster(n, CONSTANT), commits=60, local_steps=local_steps)
    late = simulate_async(
        Cluster(n, CONSTANT, stragglers=(straggler,)), commits=60, local_steps=local_steps
    )
    t0, t1 = _worker_times(base, 0), _worker_times(late, 0)
    m = min(t0.size, t1.size)
    shift = t1[:m] - t0[:m]
    expected = np.where(np.arange(m) >= delayed_commit, 2.5, 0.0)
    np.testing.assert_allclose(shift, expected, rtol=0, atol=1e-9)


def test_straggler_at_time_while_waiting_for_the_server():
    """At time 1.05 worker 1 waits in the server queue: its next phase's first step is hit."""
    cluster = Cluster(2, CONSTANT, server_time=0.1, stragglers=(Straggler(1, 4.0, at_time=1.05),))
    trace = simulate_async(cluster, commits=20)
    # Worker 0 served [1.0, 1.1], worker 1 served [1.1, 1.2]; worker 1's next phase
    # starts at 1.2 and lasts 1 + 4.
    np.testing.assert_allclose(_worker_times(trace, 1)[:2], [1.2, 6.3], rtol=1e-12)


# ------------------------------------------------------------ network + server


def test_single_worker_commit_times_are_arithmetic():
    c, latency, nbytes, bandwidth, s, lam = 1.0, 0.25, 1000, 4000.0, 0.1, 2
    x = latency + nbytes / bandwidth  # one transfer: 0.5 s
    cluster = Cluster(
        1,
        CONSTANT,
        network=Link(latency=latency, bandwidth=bandwidth),
        message_bytes=nbytes,
        server_time=s,
    )
    assert cluster.network.transfer_time(nbytes) == x
    trace = simulate_async(cluster, commits=100, local_steps=lam)
    # compute, send, serve; then every cycle adds the reply, compute, send, serve.
    expected = lam * c + x + s + np.arange(100) * (lam * c + 2 * x + s)
    np.testing.assert_allclose(trace.time, expected, rtol=1e-12)
    assert np.all(trace.staleness == 0)


@pytest.mark.parametrize(
    "straggler", [Straggler(0, 3.0, at_step=9), Straggler(0, 3.0, at_time=13.0)]
)
def test_single_worker_straggler_with_network(straggler):
    """Phase p starts at p * 3.1 + 0.5 (after the reply) for p >= 1; steps take 1 s."""
    cluster = Cluster(
        1, CONSTANT, network=Link(latency=0.5), server_time=0.1, stragglers=(straggler,)
    )
    trace = simulate_async(cluster, commits=30, local_steps=2)
    expected = 2.6 + np.arange(30) * 3.1
    expected[4:] += 3.0  # step 9 is in phase 4; phase 4's second step starts at 13.9
    np.testing.assert_allclose(trace.time, expected, rtol=1e-12)


def test_saturated_server_throughput_is_one_over_server_time():
    """8 workers want 8 exchanges/s; a 0.5 s server serves 2/s and is always busy."""
    s = 0.5
    trace = simulate_async(Cluster(8, EXPONENTIAL, server_time=s), commits=4000, rng=3)
    gaps = np.diff(trace.time)
    assert np.all(gaps >= s - 1e-9)  # one exchange at a time
    throughput = (trace.n_events - 1) / (trace.time[-1] - trace.time[0])
    assert throughput == pytest.approx(1 / s, rel=0.01)


# ------------------------------------------------------------------------ sync


def test_sync_duration_by_hand():
    n, c, latency, s, lam = 5, 1.0, 0.2, 0.1, 2
    cluster = Cluster(n, CONSTANT, network=Link(latency=latency), server_time=s)
    trace = simulate_sync(cluster, rounds=20, local_steps=lam)
    assert isinstance(trace, RoundTrace)
    assert trace.n_events == 20 and trace.n_workers == n and trace.local_steps == lam
    duration = lam * c + 2 * latency + n * s  # compute, send, n services, reply
    np.testing.assert_allclose(trace.duration, duration, rtol=1e-12)
    np.testing.assert_allclose(
        trace.time, np.arange(20) * duration + lam * c + latency + n * s, rtol=1e-12
    )


def test_sync_round_lasts_as_long_as_the_slowest_worker():
    lam, latency, s = 2, 0.2, 0.1
    cluster = Cluster(
        5, CONSTANT, time_scale=(1, 1, 3, 1, 1), network=Link(latency=latency), server_time=s
    )
    trace = simulate_sync(cluster, rounds=10, local_steps=lam)
    # The fast workers are served long before the slow one arrives.
    np.testing.assert_allclose(trace.duration, 3 * lam + 2 * latency + s, rtol=1e-12)


def test_sync_straggler_lengthens_one_round():
    cluster = Cluster(4, CONSTANT, stragglers=(Straggler(3, 7.0, at_step=5),))
    trace = simulate_sync(cluster, rounds=10, local_steps=2)
    expected = np.full(10, 2.0)
    expected[2] += 7.0  # step 5 falls in round 2 (steps 4, 5)
    np.testing.assert_allclose(trace.duration, expected, rtol=1e-12)


def test_sync_exponential_round_is_the_max_of_n_workers():
    """E[max of n Exp(1)] = H_n; sd of that max is sqrt(sum 1/k^2) < 1.3; 5 SE tolerance."""
    n, rounds = 8, 5000
    trace = simulate_sync(Cluster(n, EXPONENTIAL), rounds=rounds, rng=2)
    harmonic = sum(1 / k for k in range(1, n + 1))
    sd = math.sqrt(sum(1 / k**2 for k in range(1, n + 1)))
    assert abs(trace.duration.mean() - harmonic) <= 5 * sd / math.sqrt(rounds)
    np.testing.assert_allclose(np.cumsum(trace.duration), trace.time, rtol=1e-9)


def test_sync_horizon_and_prefix():
    cluster = Cluster(3, CONSTANT, network=Link(latency=0.25), server_time=0.1)
    trace = simulate_sync(cluster, horizon=20.0)
    # aggregates at 1.55 + 1.8 r <= 20  =>  r <= 10.25
    assert trace.n_events == 11 and np.all(trace.time <= 20.0)
    exact = simulate_sync(Cluster(2, CONSTANT), horizon=3.0)  # aggregates at 1, 2, 3, ...
    np.testing.assert_array_equal(exact.time, [1.0, 2.0, 3.0])
    short = simulate_sync(Cluster(4), rounds=100, rng=9)
    long = simulate_sync(Cluster(4), rounds=300, rng=9)
    np.testing.assert_array_equal(short.time, long.time[:100])
    np.testing.assert_array_equal(short.duration, long.duration[:100])


# --------------------------------------------------------------------- horizon


def test_async_horizon_budget():
    """Count ~ horizon * n / mean; each worker's count is a Poisson(horizon) renewal count,
    so the total has sd sqrt(horizon * n) = 126 here; 5 sd tolerance."""
    n, horizon = 8, 2000.0
    trace = simulate_async(Cluster(n, EXPONENTIAL), horizon=horizon, rng=4)
    assert np.all(trace.time <= horizon)
    assert trace.time[-1] > horizon - 1.0  # n commits per second: no gap that long
    assert abs(trace.n_events - horizon * n) <= 5 * math.sqrt(horizon * n)
    full = simulate_async(Cluster(n, EXPONENTIAL), commits=trace.n_events + 50, rng=4)
    np.testing.assert_array_equal(full.time[: trace.n_events], trace.time)
    assert full.time[trace.n_events] > horizon


def test_async_horizon_includes_commit_exactly_at_horizon():
    trace = simulate_async(Cluster(2, CONSTANT), horizon=3.0)
    np.testing.assert_array_equal(trace.time, [1, 1, 2, 2, 3, 3])


# ----------------------------------------------------------------- determinism


def _clusters():
    return [
        Cluster(4, EXPONENTIAL),
        Cluster(5, ComputeTime("gamma", 2.0, 0.5), time_scale=heterogeneous(5, 0.5, 1)),
        Cluster(4, ComputeTime("lognormal"), network=Link(0.05), server_time=0.1),
    ]


def test_default_rng_is_seed_zero():
    cluster = Cluster(3)
    np.testing.assert_array_equal(
        simulate_async(cluster, commits=500).time, simulate_async(cluster, commits=500, rng=0).time
    )


# ------------------------------------------------------------ timing models


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_compute_time_moments(distribution):
    """Sample mean within 5 SE of the mean; variance matches the parameterisation."""
    compute = ComputeTime(distribution, mean=2.0, shape=0.5)
    x = compute.sample(np.random.default_rng(0), 200_000)
    assert x.shape == (200_000,) and x.dtype == np.float64 and np.all(x >= 0)
    variance = {
        "constant": 0.0,
        "exponential": 4.0,
        "lognormal": 4.0 * (math.exp(0.25) - 1),
        "gamma": 4.0 / 0.5,
    }[distribution]
    assert abs(x.mean() - 2.0) <= 5 * math.sqrt(variance / x.size) + 1e-12
    assert x.var() == pytest.approx(variance, rel=0.05, abs=1e-12)


def test_heterogeneous():
    scale = heterogeneous(16, 0.8, 0)
    assert len(scale) == 16 and all(s > 0 for s in scale)
    assert np.mean(scale) == pytest.approx(1.0)
    assert np.std(scale) > 0.2
    assert scale == heterogeneous(16, 0.8, 0)
    assert heterogeneous(4, 0.0, 1) == (1.0, 1.0, 1.0, 1.0)
    Cluster(16, time_scale=scale)  # accepted as is


def test_link_transfer_time():
    assert Link().transfer_time(10**9) == 0.0
    assert Link(latency=0.01, bandwidth=1e6).transfer_time(5000) == pytest.approx(0.015)


# ---------------------------------------------------------------- ConfigError

_BAD = [
    ("distribution", lambda: ComputeTime("weibull")),
    ("mean", lambda: ComputeTime(mean=0.0)),
    ("mean", lambda: ComputeTime(mean=math.inf)),
    ("mean", lambda: ComputeTime(mean=math.nan)),
    ("shape", lambda: ComputeTime("gamma", shape=-1.0)),
    ("workers", lambda: Cluster(0)),
    ("workers", lambda: Cluster(2.5)),
    ("workers", lambda: Cluster(True)),
    ("compute", lambda: Cluster(2, compute="exponential")),
    ("time_scale", lambda: Cluster(3, time_scale=(1.0, 2.0))),
    ("time_scale", lambda: Cluster(2, time_scale=(1.0, 0.0))),
    ("time_scale", lambda: Cluster(2, time_scale=(1.0, -2.0))),
    ("time_scale", lambda: Cluster(2, time_scale=2.0)),
    ("worker", lambda: Cluster(2, stragglers=(Straggler(2, 1.0, at_step=0),))),
    ("worker", lambda: Straggler(-1, 1.0, at_step=0)),
    ("stragglers", lambda: Cluster(2, stragglers=("late",))),
    ("delay", lambda: Straggler(0, -1.0, at_step=0)),
    ("at_step", lambda: Straggler(0, 1.0)),
    ("at_step", lambda: Straggler(0, 1.0, at_step=1, at_time=1.0)),
    ("at_step", lambda: Straggler(0, 1.0, at_step=-1)),
    ("at_time", lambda: Straggler(0, 1.0, at_time=math.nan)),
    ("latency", lambda: Link(latency=-0.1)),
    ("bandwidth", lambda: Link(bandwidth=0.0)),
    ("network", lambda: Cluster(2, network=0.1)),
    ("message_bytes", lambda: Cluster(2, message_bytes=-1)),
    ("message_bytes", lambda: Cluster(2, message_bytes=1.5)),
    ("server_time", lambda: Cluster(2, server_time=-1.0)),
    ("server_time", lambda: Cluster(2, server_time=math.inf)),
    ("commits", lambda: simulate_async(Cluster(2))),
    ("commits", lambda: simulate_async(Cluster(2), commits=10, horizon=1.0)),
    ("commits", lambda: simulate_async(Cluster(2), commits=0)),
    ("horizon", lambda: simulate_async(Cluster(2), horizon=0.0)),
    ("horizon", lambda: simulate_async(Cluster(2), horizon=math.inf)),
    ("local_steps", lambda: simulate_async(Cluster(2), commits=10, local_steps=0)),
    ("rng", lambda: simulate_async(Cluster(2), commits=10, rng="seed")),
    ("rng", lambda: simulate_async(Cluster(2), commits=10, rng=-1)),
    ("cluster", lambda: simulate_async(4, commits=10)),
    ("rounds", lambda: simulate_sync(Cluster(2), rounds=0)),
    ("rounds", lambda: simulate_sync(Cluster(2), rounds=5, horizon=1.0)),
    ("horizon", lambda: simulate_sync(Cluster(2), horizon=-1.0)),
    ("local_steps", lambda: simulate_sync(Cluster(2), rounds=5, local_steps=1.5)),
    ("spread", lambda: heterogeneous(4, -0.1, 0)),
    ("workers", lambda: heterogeneous(0, 0.1, 0)),
    ("group_size", lambda: Cluster(6, group_size=4)),  # does not divide workers
    ("group_size", lambda: Cluster(6, group_size=12)),
    ("group_size", lambda: Cluster(6, group_size=0)),
    ("group_size", lambda: Cluster(6, group_size=-2)),
    ("group_size", lambda: Cluster(6, group_size=1.5)),
    ("group_size", lambda: Cluster(6, group_size=True)),
    ("intra_group_time", lambda: Cluster(6, group_size=2, intra_group_time=-1.0)),
    ("intra_group_time", lambda: Cluster(6, group_size=2, intra_group_time=math.inf)),
    ("intra_group_time", lambda: Cluster(6, group_size=2, intra_group_time=math.nan)),
    ("intra_group_time", lambda: Cluster(6, intra_group_time="0.1")),
]


@pytest.mark.parametrize(("field", "make"), _BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(_BAD)])
def test_config_errors_name_the_field(field, make):
    with pytest.raises(ConfigError, match=field):
        make()
    assert issubclass(ConfigError, ValueError)


# --------------------------------------------------------------- mixed clusters
#
# A group of m workers is synchronous inside and commits as one unit: its phase ends
# when its slowest member ends, then it all-reduces for intra_group_time. Group g holds
# workers g*m ... g*m + m - 1, and member k draws from the same stream as worker k of
# the cluster without groups.


def test_group_fields():
    cluster = Cluster(12, group_size=4, intra_group_time=0.5)
    assert cluster.groups == 3 and cluster.group_size == 4 and cluster.intra_group_time == 0.5
    assert Cluster(12).groups == 12 and Cluster(12).group_size == 1
    assert Cluster(7, group_size=7).groups == 1
    with pytest.raises(AttributeError):
        cluster.groups = 2
    trace = simulate_async(cluster, commits=30, local_steps=2)
    assert trace.n_workers == 3 and trace.group_size == 4 and trace.local_steps == 2
    assert set(trace.worker.tolist()) == {0, 1, 2}
    assert trace.worker.dtype == np.int32 and trace.staleness.dtype == np.int32
    plain = simulate_async(Cluster(12), commits=30)
    assert plain.group_size == 1 and plain.n_workers == 12
    # A Trace built without the new field still works and has groups of 1.
    built = Trace(plain.time, plain.worker, plain.pulled_clock, plain.staleness, 12, 1)
    assert built.group_size == 1 and built.n_events == 30


@pytest.mark.parametrize(("m", "groups", "lam"), [(4, 3, 3), (2, 5, 1), (3, 1, 2)])
def test_groups_with_constant_times(m, groups, lam):
    """(a) Constant c, intra time a, no network: each group commits every λc + a exactly
    (c and a are dyadic, so the sums are exact); round-robin in group order, so the
    staleness is 0, 1, ..., G - 1 for the first G commits and G - 1 after that."""
    c, a = 0.5, 0.25
    cluster = Cluster(m * groups, ComputeTime("constant", mean=c), group_size=m, intra_group_time=a)
    trace = simulate_async(cluster, local_steps=lam, commits=40 * groups)
    np.testing.assert_array_equal(trace.worker, np.tile(np.arange(groups), 40))
    for g in range(groups):
        np.testing.assert_array_equal(_worker_times(trace, g), (lam * c + a) * np.arange(1, 41))
    np.testing.assert_array_equal(trace.staleness[:groups], np.arange(groups))
    assert np.all(trace.staleness[groups:] == groups - 1)


def test_group_with_network_and_server_by_hand():
    """One group: compute, all-reduce, send, serve; every cycle adds the reply."""
    c, a, latency, s, lam = 1.0, 0.3, 0.25, 0.1, 2
    cluster = Cluster(
        4,
        CONSTANT,
        network=Link(latency=latency),
        server_time=s,
        group_size=4,
        intra_group_time=a,
    )
    trace = simulate_async(cluster, commits=50, local_steps=lam)
    expected = lam * c + a + latency + s + np.arange(50) * (lam * c + a + 2 * latency + s)
    np.testing.assert_allclose(trace.time, expected, rtol=1e-12)
    assert np.all(trace.staleness == 0)


def test_a_slow_member_slows_only_its_group():
    """(b) Worker 2 (in group 1 of 4 groups of 2) is 10x slower: group 1 commits every
    10 λ c, the others every λ c, exactly as in the cluster without the slow worker."""
    lam, horizon = 2, 200.0
    scale = (1.0, 1.0, 10.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    slow = simulate_async(
        Cluster(8, CONSTANT, time_scale=scale, group_size=2), horizon=horizon, local_steps=lam
    )
    even = simulate_async(Cluster(8, CONSTANT, group_size=2), horizon=horizon, local_steps=lam)
    counts = np.bincount(slow.worker, minlength=4)
    np.testing.assert_array_equal(counts, [100, 10, 100, 100])  # 200 / 2 and 200 / 20
    np.testing.assert_array_equal(np.diff(_worker_times(slow, 1)), 10 * lam)
    for g in (0, 2, 3):
        np.testing.assert_array_equal(_worker_times(slow, g), _worker_times(even, g))
        np.testing.assert_array_equal(np.diff(_worker_times(slow, g)), lam)
    # With an all-reduce time a the spacings are 10 λ c + a and λ c + a.
    a = 0.5
    trace = simulate_async(
        Cluster(8, CONSTANT, time_scale=scale, group_size=2, intra_group_time=a),
        commits=300,
        local_steps=lam,
    )
    np.testing.assert_array_equal(np.diff(_worker_times(trace, 1)), 10 * lam + a)
    for g in (0, 2, 3):
        np.testing.assert_array_equal(np.diff(_worker_times(trace, g)), lam + a)


@pytest.mark.parametrize(
    ("straggler", "shifted_from"),
    [
        (Straggler(4, 3.0, at_step=5), 2),  # member 1 of group 1; steps 4, 5 = phase 2
        (Straggler(4, 3.0, at_time=5.25), 2),  # phase 2's steps start at 4.5 and 5.5
        (Straggler(4, 3.0, at_time=5.75), 3),  # phase 3 starts at 6.75
        (Straggler(5, 3.0, at_time=2.25), 1),  # phase 1 starts exactly then
    ],
)
def test_member_straggler_delays_its_group(straggler, shifted_from):
    """Constant 1 s steps, λ = 2, a = 0.25 (phase 2.25 s: phase p starts at 2.25 p).
    A member's straggler delays its whole group from that phase on; the other group is
    unaffected."""
    cluster = Cluster(6, CONSTANT, group_size=3, intra_group_time=0.25)
    base = simulate_async(cluster, commits=40, local_steps=2)
    late = simulate_async(
        dataclasses.replace(cluster, stragglers=(straggler,)), commits=40, local_steps=2
    )
    m = min(_worker_times(base, 1).size, _worker_times(late, 1).size)
    shift = _worker_times(late, 1)[:m] - _worker_times(base, 1)[:m]
    np.testing.assert_array_equal(shift, np.where(np.arange(m) >= shifted_from, 3.0, 0.0))
    m = min(_worker_times(base, 0).size, _worker_times(late, 0).size)
    np.testing.assert_array_equal(_worker_times(late, 0)[:m], _worker_times(base, 0)[:m])


def test_at_time_straggler_while_waiting_for_the_group():
    """Worker 0 finishes at 1 and waits for worker 1 (2x slower) until 2; at 1.5 it is
    idle, so its next phase (starting at 2.5 after the 0.5 s all-reduce) takes 1 + 3."""
    cluster = Cluster(
        2,
        CONSTANT,
        time_scale=(1.0, 2.0),
        group_size=2,
        intra_group_time=0.5,
        stragglers=(Straggler(0, 3.0, at_time=1.5),),
    )
    trace = simulate_async(cluster, commits=4)
    np.testing.assert_array_equal(trace.time, [2.5, 7.0, 9.5, 12.0])


def _reference_group_times(cluster, local_steps, phases, seed):
    """Commit times and groups, computed without SimPy: no network and no server time,
    so group g's commit j happens at the sum of its first j + 1 phases, each the max of
    its members' phases plus the all-reduce."""
    children = np.random.default_rng(seed).spawn(cluster.workers)
    member = np.stack(
        [
            (cluster.compute.sample(children[k], (phases, local_steps)) * cluster.scales[k]).sum(1)
            for k in range(cluster.workers)
        ]
    )
    m = cluster.group_size
    group = member.reshape(cluster.groups, m, phases).max(axis=1) + cluster.intra_group_time
    times = np.cumsum(group, axis=1)
    ids = np.repeat(np.arange(cluster.groups), phases)
    order = np.lexsort((ids, times.ravel()))
    complete = int(np.searchsorted(times.ravel()[order], times[:, -1].min(), side="right"))
    return times.ravel()[order][:complete], ids[order][:complete]  # no group ran out


@pytest.mark.parametrize("lam", [1, 3])
@pytest.mark.parametrize(("m", "intra"), [(3, 0.125), (1, 0.0)])
def test_groups_match_a_reference_without_simpy(lam, m, intra):
    """Member k draws from child k of the seed's spawn; the group waits for its slowest
    member; group commits interleave by time. Times are compared bit for bit; m = 1
    checks the plain (one worker per unit) path against the same reference."""
    cluster = Cluster(
        12,
        ComputeTime("gamma", 1.0, 0.7),
        time_scale=heterogeneous(12, 0.6, 3),
        group_size=m,
        intra_group_time=intra,
    )
    trace = simulate_async(cluster, commits=5000, local_steps=lam, rng=8)
    times, ids = _reference_group_times(cluster, lam, 3000, seed=8)
    assert times.size >= 5000
    np.testing.assert_array_equal(trace.time, times[:5000])
    np.testing.assert_array_equal(trace.worker, ids[:5000])


@pytest.mark.parametrize("latency", [0.0, 0.2])
def test_one_group_is_a_synchronous_round(latency):
    """A single group without server time commits exactly when a synchronous round of
    the same workers and seed aggregates (the same max over the same member streams)."""
    cluster = Cluster(6, EXPONENTIAL, network=Link(latency=latency), group_size=6)
    async_trace = simulate_async(cluster, commits=500, local_steps=2, rng=4)
    sync_trace = simulate_sync(
        Cluster(6, EXPONENTIAL, network=Link(latency=latency)), rounds=500, local_steps=2, rng=4
    )
    np.testing.assert_array_equal(async_trace.time, sync_trace.time)


_GROUP_CASES = {
    "exponential": lambda m, g: Cluster(m * g, EXPONENTIAL, group_size=m),
    "intra_and_heterogeneous": lambda m, g: Cluster(
        m * g,
        EXPONENTIAL,
        time_scale=heterogeneous(m * g, 0.5, 0),
        group_size=m,
        intra_group_time=0.3,
    ),
    "network_and_server": lambda m, g: Cluster(
        m * g,
        EXPONENTIAL,
        network=Link(latency=0.2),
        server_time=0.3 / g,
        group_size=m,
        intra_group_time=0.1,
    ),
}


@pytest.mark.parametrize(("m", "groups"), [(4, 2), (2, 8)])
@pytest.mark.parametrize("case", list(_GROUP_CASES))
def test_groups_mean_staleness_is_groups_minus_1(case, m, groups):
    """(c) The closed-loop fact holds with groups as the committing units. Exactly:
    mean = G - 1 - (sum_g d_g - G) / T with d_g = T - last_g (see the test for workers).
    d_g is a residual count of commits: its mean is at most about G times the ratio of
    group g's spacing to the mean spacing (<= 1.7 in these cases), so sum_g d_g is
    ~G^2 on average; its tail is exponential-like, and the bound below allows
    5 (G^2 + 5 G), several times that (measured: at most a tenth of the bound over ten
    seeds)."""
    T = 20_000
    trace = simulate_async(_GROUP_CASES[case](m, groups), commits=T, rng=13)
    assert trace.n_workers == groups
    mean = trace.staleness.mean(dtype=np.float64)
    last = np.array([np.flatnonzero(trace.worker == g)[-1] for g in range(groups)])
    np.testing.assert_allclose(
        mean, groups - 1 - ((T - last).sum() - groups) / T, rtol=0, atol=1e-9
    )
    assert abs(mean - (groups - 1)) <= 5 * (groups * groups + 5 * groups) / T


@pytest.mark.parametrize("m", [2, 4, 8])
def test_group_phase_is_the_max_of_m_exponentials(m):
    """(d) λ = 1, Exp(1) step times, no network, no server time: a group's spacing is
    exactly its phase, the max of m independent Exp(1), whose mean is H_m and variance
    sum_{k<=m} 1/k^2 (Rényi). Spacings are i.i.d. within and across groups, so the
    sample mean of N of them is within 5 sd / sqrt(N) of H_m (a 5-SE tolerance; for
    N ~ 45,000 and m = 4 it is 0.028, 1.3% of H_4)."""
    groups, T = 3, 45_000
    trace = simulate_async(Cluster(m * groups, EXPONENTIAL, group_size=m), commits=T, rng=21)
    spacing = np.concatenate([np.diff(_worker_times(trace, g)) for g in range(groups)])
    harmonic = sum(1 / k for k in range(1, m + 1))
    sd = math.sqrt(sum(1 / k**2 for k in range(1, m + 1)))
    assert abs(spacing.mean() - harmonic) <= 5 * sd / math.sqrt(spacing.size)
    # Each group commits at rate 1 / H_m, so the groups commit equally often.
    counts = np.bincount(trace.worker, minlength=groups)
    assert counts.max() - counts.min() <= 5 * math.sqrt(T / groups)


def _group_clusters():
    return [
        Cluster(6, EXPONENTIAL, group_size=2),
        Cluster(
            8,
            ComputeTime("gamma", 2.0, 0.5),
            time_scale=heterogeneous(8, 0.5, 1),
            group_size=4,
            intra_group_time=0.2,
            stragglers=(Straggler(5, 4.0, at_step=100),),
        ),
        Cluster(
            6,
            ComputeTime("lognormal"),
            network=Link(0.05),
            server_time=0.1,
            group_size=3,
            stragglers=(Straggler(1, 2.0, at_time=30.0),),
        ),
    ]


@pytest.mark.parametrize("kind,index", [(kind, i) for kind in ("plain", "groups")
                                         for i in range(3)])
def test_same_seed_same_trace_and_prefix(kind, index):
    """Determinism and the prefix property, with and without groups (also under a
    horizon); another seed gives another trace."""
    cluster = (_clusters() if kind == "plain" else _group_clusters())[index]
    a = simulate_async(cluster, commits=2000, local_steps=2, rng=3)
    b = simulate_async(cluster, commits=2000, local_steps=2, rng=np.random.default_rng(3))
    for x, y in zip(a[:4], b[:4], strict=True):
        np.testing.assert_array_equal(x, y)
    short = simulate_async(cluster, commits=1000, local_steps=2, rng=3)
    for x, y in zip(short[:4], a[:4], strict=True):
        np.testing.assert_array_equal(x, y[:1000])
    horizon = float(a.time[1499])
    timed = simulate_async(cluster, horizon=horizon, local_steps=2, rng=3)
    n = timed.n_events
    assert n >= 1500 and np.all(timed.time <= horizon) and a.time[n] > horizon
    for x, y in zip(timed[:4], a[:4], strict=True):
        np.testing.assert_array_equal(x, y[:n])
    other = simulate_async(cluster, commits=2000, local_steps=2, rng=4)
    assert not np.array_equal(a.time, other.time)
    assert not np.array_equal(a.worker, other.worker)


def test_group_size_1_is_the_plain_simulator():
    """group_size = 1 (with or without an intra_group_time, which it ignores) gives the
    plain simulator bit for bit."""
    for cluster in _clusters():
        plain = simulate_async(cluster, commits=1500, local_steps=2, rng=6)
        for extra in ({"group_size": 1}, {"group_size": 1, "intra_group_time": 5.0}):
            ones = simulate_async(
                dataclasses.replace(cluster, **extra), commits=1500, local_steps=2, rng=6
            )
            assert ones.group_size == 1 and ones.n_workers == cluster.workers
            for x, y in zip(plain, ones, strict=True):
                np.testing.assert_array_equal(x, y)


def test_sync_ignores_groups():
    """A synchronous round already waits for everybody: groups change nothing."""
    cluster = Cluster(
        8,
        EXPONENTIAL,
        network=Link(latency=0.1),
        server_time=0.05,
        stragglers=(Straggler(3, 2.0, at_step=4),),
    )
    plain = simulate_sync(cluster, rounds=300, local_steps=2, rng=1)
    for m in (2, 4, 8):
        grouped = dataclasses.replace(cluster, group_size=m, intra_group_time=0.5)
        trace = simulate_sync(grouped, rounds=300, local_steps=2, rng=1)
        assert trace.n_workers == 8
        np.testing.assert_array_equal(trace.time, plain.time)
        np.testing.assert_array_equal(trace.duration, plain.duration)
