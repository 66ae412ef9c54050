"""Tests of a parameter server whose service time is a distribution.

Theory used. n workers with exponential compute of mean 1/λ per exchange (λ = 1 local
step, no link time) around one exponential FIFO server of mean 1/μ form the
machine-repairman model, a closed M/M/1//n queue (Kleinrock, Queueing Systems vol. 1,
§3.10). With ρ = λ/μ:

- p0(n) = [Σ_{k=0}^{n} n!/(n−k)! ρ^k]^{-1} (the server is idle);
- throughput X = μ (1 − p0(n)); mean response at the server (queue + service)
  R = n/X − 1/λ (Little's law on the closed loop).

Staleness. A commit has τ = 0 exactly when no other commit is served between the
worker's pull (its previous service end) and its own service end. By the arrival theorem
of closed product-form networks (Lavenberg & Reiser 1980; Sevcik & Mitrani 1981) a
worker leaving the server sees the other n − 1 in the stationary state of the same
network with n − 1 workers. τ = 0 needs the server empty then (probability p0(n−1)),
and the worker's memoryless compute to end before the n − 1 others' (1/n); then it is
served before any of them. So P(τ = 0) = p0(n−1)/n, below the free server's 1/n.
"""

from __future__ import annotations

import heapq
import json
import math

import numpy as np
import pytest

from asynclab._errors import ConfigError
from asynclab.cli import main
from asynclab.cluster import (
    KINDS,
    Cluster,
    ComputeTime,
    Link,
    Straggler,
    machine_repairman,
    simulate_async,
    simulate_sync,
)

COMPUTE = KINDS.index("compute")


def _p0(n: int, rho: float) -> float:
    return 1.0 / sum(math.factorial(n) / math.factorial(n - k) * rho**k for k in range(n + 1))


def _same(a, b):
    """Two traces (with or without activity) equal bit for bit."""
    for field in a._fields:
        x, y = getattr(a, field), getattr(b, field)
        if field == "activity" and x is not None:
            for f in x._fields:
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y, field


# ------------------------------------------------------------------ configuration


def test_a_constant_distribution_is_its_mean_bit_for_bit():
    """ComputeTime("constant", s) as server_time is stored as s and gives s's traces."""
    compute = ComputeTime("lognormal", mean=1.0, shape=0.5)
    given = Cluster(4, compute, server_time=ComputeTime("constant", mean=0.3))
    plain = Cluster(4, compute, server_time=0.3)
    assert given == plain and given.server_time == 0.3 and not given.random_server
    _same(simulate_async(given, commits=300, rng=2, activity=True),
          simulate_async(plain, commits=300, rng=2, activity=True))
    _same(simulate_sync(given, rounds=30, rng=2), simulate_sync(plain, rounds=30, rng=2))


def test_mean_server_time():
    assert Cluster(2, server_time=0.25).mean_server_time == 0.25
    assert Cluster(2, server_time=ComputeTime("gamma", 0.4, 3.0)).mean_server_time == 0.4


@pytest.mark.parametrize("make, field", [
    (lambda: Cluster(2, server_time="exponential"), "Cluster.server_time"),
    (lambda: Cluster(2, server_time=True), "Cluster.server_time"),
    (lambda: Cluster(2, server_time=-0.1), "Cluster.server_time"),
    (lambda: Cluster(2, server_time=ComputeTime("exponential", mean=0.0)), "ComputeTime.mean"),
    (lambda: Cluster(2, server_time=ComputeTime("gamma", 1.0, shape=1e-3)),
     "ComputeTime.shape"),
])
def test_bad_server_time_is_refused(make, field):
    with pytest.raises(ConfigError, match=field):
        make()


def _exp(mean):
    return ComputeTime("exponential", mean=mean)


@pytest.mark.parametrize("n, compute, server", [(1, 1.0, 1.0), (4, 2.0, 0.2), (8, 1.0, 0.15),
                                                 (6, 0.5, 0.25), (30, 1.0, 0.2)])
def test_machine_repairman_closed_forms(n, compute, server):
    """The library's M/M/1//n (log-space queue lengths) against the factorial sums
    written out here; n = 1 is an alternating renewal: idle 1/λ of every 1/λ + 1/μ."""
    rho = server / compute
    p0 = _p0(n, rho)
    r = machine_repairman(n, compute, _exp(server))
    assert r.idle == pytest.approx(p0, rel=1e-12)
    assert r.throughput == pytest.approx((1 - p0) / server, rel=1e-12)
    assert r.response == pytest.approx(n * server / (1 - p0) - compute, rel=1e-12)
    assert r.queue == pytest.approx(r.throughput * r.response, rel=1e-12)
    assert r.stale_zero == pytest.approx(_p0(n - 1, rho) / n, rel=1e-12)
    if n == 1:
        assert r.idle == pytest.approx(compute / (compute + server))
        assert r.response == pytest.approx(server) and r.stale_zero == 1.0


def _takacs_p0(n, lam, mean, transform):
    """M/G/1//n by hand: p0 = 1 / (1 + n λ E[S] Σ_k C(n−1, k) Π_{j≤k} (1 − B*(jλ))/B*(jλ))."""
    total, phi = 1.0, 1.0
    for k in range(1, n):
        b = transform(k * lam)
        phi *= (1 - b) / b
        total += math.comb(n - 1, k) * phi
    return 1 / (1 + n * lam * mean * total)


@pytest.mark.parametrize("n, server, transform", [
    (5, 0.3, lambda s: math.exp(-0.3 * s)),  # a constant server
    (5, ComputeTime("gamma", 0.3, 4.0), lambda s: (1 + s * 0.3 / 4) ** -4),
    (12, ComputeTime("gamma", 0.1, 0.5), lambda s: (1 + s * 0.1 / 0.5) ** -0.5),
    (7, _exp(0.2), lambda s: 1 / (1 + 0.2 * s)),  # the product form again
    (1, ComputeTime("gamma", 0.7, 2.0), lambda s: (1 + s * 0.35) ** -2),
])
def test_machine_repairman_any_service_distribution(n, server, transform):
    """M/G/1//n (Takács) against its sum written out here with the Laplace transforms
    of the constant and gamma laws; X = (1 − p0)/E[S] and R = n/X − 1/λ for any law."""
    compute = 1.5
    mean = server if isinstance(server, float) else server.mean
    p0 = _takacs_p0(n, 1 / compute, mean, transform)
    r = machine_repairman(n, compute, server)
    assert r.idle == pytest.approx(p0, rel=1e-10)
    assert r.throughput == pytest.approx((1 - p0) / mean, rel=1e-10)
    assert r.response == pytest.approx(n / r.throughput - compute, rel=1e-9)
    assert math.isnan(r.stale_zero) != (server == _exp(0.2))


@pytest.mark.parametrize("sigma", [0.6, 1.5])
def test_machine_repairman_lognormal_transform(sigma):
    """The lognormal's transform, which the library integrates with scipy's quad, here by
    the trapezoid rule on a fine grid of its normal variable, in the Takács sum. Jensen
    (e^{−sx} is convex): every law of mean m has B*(s) >= e^{−sm}, the constant's, so
    the constant server idles least; a lognormal of tiny σ is that constant server."""
    n, compute, mean = 6, 1.0, 0.2
    mu = math.log(mean) - sigma**2 / 2
    z = np.linspace(-14, 14, 400_001)
    weight = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    def transform(s):
        return float(np.trapezoid(np.exp(-s * np.exp(mu + sigma * z)) * weight, z))

    r = machine_repairman(n, compute, ComputeTime("lognormal", mean, sigma))
    assert r.idle == pytest.approx(_takacs_p0(n, 1 / compute, mean, transform), rel=1e-7)
    constant = machine_repairman(n, compute, mean).idle
    assert constant < r.idle
    narrow = machine_repairman(n, compute, ComputeTime("lognormal", mean, 1e-4)).idle
    assert narrow == pytest.approx(constant, rel=1e-6)


def test_machine_repairman_limits_and_refusals():
    """A nearly free server: X → nλ, R → E[S], P(τ = 0) → 1/n (geometric); a saturated
    one: X → 1/E[S]. Bad arguments are ConfigErrors naming them."""
    for server in (_exp(1e-9), 1e-9, ComputeTime("gamma", 1e-9, 2.0)):
        free = machine_repairman(8, 1.0, server)
        assert free.throughput == pytest.approx(8.0, rel=1e-6)
        assert free.response == pytest.approx(1e-9, rel=1e-5)
    assert machine_repairman(8, 1.0, _exp(1e-9)).stale_zero == pytest.approx(1 / 8, rel=1e-6)
    assert machine_repairman(500, 1.0, _exp(0.01)).throughput == pytest.approx(100.0, rel=1e-12)
    assert machine_repairman(500, 1.0, 0.01).throughput == pytest.approx(100.0, rel=1e-12)
    for args, field in (((0, 1.0, 1.0), "workers"), ((2, 0.0, 1.0), "compute_mean"),
                        ((2, 1.0, -1.0), "server"), ((2, 1.0, math.inf), "server"),
                        ((2, 1.0, 0.0), "server"), ((2, 1.0, "exponential"), "server")):
        with pytest.raises(ConfigError, match=field):
            machine_repairman(*args)


# ------------------------------------------------------------- the numpy oracle


def _repairman_oracle(n, compute_mean, server: ComputeTime, seed, commits):
    """The FIFO single-server closed loop by hand (Lindley's recursion over a heap of
    arrivals): worker k draws its compute times from child k of spawn(n + 1), the server
    its service times from child n, each as one long draw."""
    children = np.random.default_rng(seed).spawn(n + 1)
    compute = [c.exponential(compute_mean, commits + 1) for c in children[:n]]
    mu = math.log(server.mean) - 0.5 * server.shape**2
    service = children[n].lognormal(mu, server.shape, commits)
    arrivals = [(compute[k][0], k) for k in range(n)]
    heapq.heapify(arrivals)
    used, pulled, free = [1] * n, [0] * n, 0.0
    time, worker, clock = [], [], []
    for i in range(commits):
        arrival, k = heapq.heappop(arrivals)
        free = max(arrival, free) + service[i]
        time.append(free), worker.append(k), clock.append(pulled[k])
        pulled[k] = i + 1
        heapq.heappush(arrivals, (free + compute[k][used[k]], k))
        used[k] += 1
    return np.array(time), np.array(worker), np.array(clock)


def test_async_trace_equals_the_numpy_oracle_bit_for_bit():
    """Every commit's time, worker and pulled clock, 5,000 commits of 5 workers (enough
    to cross the 64- and 128-draw block boundaries of the compute and service draws)."""
    server = ComputeTime("lognormal", mean=0.15, shape=0.8)
    trace = simulate_async(Cluster(5, ComputeTime("exponential", 0.7), server_time=server),
                           commits=5000, rng=21)
    time, worker, clock = _repairman_oracle(5, 0.7, server, 21, 5000)
    np.testing.assert_array_equal(trace.time, time)
    np.testing.assert_array_equal(trace.worker, worker)
    np.testing.assert_array_equal(trace.pulled_clock, clock)


def test_sync_rounds_equal_the_numpy_oracle_bit_for_bit():
    """Constant compute c, no link: every round all n commits arrive at its start + c and
    are served one after another, so its aggregate comes after the sum of n service
    times drawn in order from child n of spawn(n + 1)."""
    n, c, rounds = 3, 0.5, 100
    server = ComputeTime("gamma", mean=0.2, shape=2.0)
    trace = simulate_sync(Cluster(n, ComputeTime("constant", c), server_time=server),
                          rounds=rounds, rng=4)
    service = np.random.default_rng(4).spawn(n + 1)[n].gamma(2.0, 0.1, n * rounds)
    start, times, durations = 0.0, [], []
    for r in range(rounds):
        t = start + c
        for s in service[r * n:(r + 1) * n]:
            t = t + s
        times.append(t), durations.append(t - start)
        start = t
    np.testing.assert_array_equal(trace.time, times)
    np.testing.assert_array_equal(trace.duration, durations)


def _compute_lengths(trace, k):
    a = trace.activity
    rows = (a.worker == k) & (a.kind == COMPUTE)
    return (a.end - a.start)[rows]


def test_the_workers_step_times_do_not_change():
    """A random server takes child n of spawn(n + 1); the first n children are those of
    spawn(n) (numpy's SeedSequence spawn keys), so every worker's compute phases, with
    links, λ = 2, heterogeneity and a straggler, are those of the constant server's run
    (intervals from the activity; compared over the phases both runs finished)."""
    for n in (1, 4):
        a, b = (np.random.default_rng(9).spawn(n + extra) for extra in (0, 1))
        for x, y in zip(a, b[:n], strict=True):
            np.testing.assert_array_equal(x.random(8), y.random(8))
    base = dict(workers=4, compute=ComputeTime("lognormal", 1.0, 0.7),
                time_scale=(1.0, 2.0, 0.5, 1.0), network=Link(latency=0.05),
                stragglers=(Straggler(2, 3.0, at_step=7),))
    fixed = simulate_async(Cluster(**base, server_time=0.2), commits=2000, local_steps=2,
                           rng=5, activity=True)
    drawn = simulate_async(Cluster(**base, server_time=ComputeTime("exponential", 0.2)),
                           commits=2000, local_steps=2, rng=5, activity=True)
    assert not np.array_equal(fixed.time, drawn.time)  # the service times did change
    for k in range(4):
        x, y = _compute_lengths(fixed, k), _compute_lengths(drawn, k)
        m = min(x.size, y.size) - 1  # the last phase is cut at the end of the run
        assert m > 100
        np.testing.assert_allclose(x[:m], y[:m], rtol=1e-12, atol=1e-12)


def test_activity_tiles_the_run_with_a_random_server():
    """Per worker, the intervals tile [0, end] and the served ones are the trace's."""
    trace = simulate_async(Cluster(3, server_time=ComputeTime("exponential", 0.4)),
                           commits=500, rng=3, activity=True)
    a = trace.activity
    for k in range(3):
        rows = a.worker == k
        np.testing.assert_allclose(a.start[rows][1:], a.end[rows][:-1], rtol=0, atol=1e-9)
        assert a.start[rows][0] == 0.0 and a.end[rows][-1] == pytest.approx(trace.duration)
    served = a.end[a.kind == KINDS.index("communicate")]
    assert np.isin(trace.time, served).all()
    rounds = simulate_sync(Cluster(3, server_time=ComputeTime("gamma", 0.2, 2.0)),
                           rounds=50, rng=3, activity=True)
    a = rounds.activity
    for k in range(3):
        rows = a.worker == k
        np.testing.assert_allclose(a.start[rows][1:], a.end[rows][:-1], rtol=0, atol=1e-9)
        assert a.end[rows][-1] == pytest.approx(rounds.time[-1])
    # a round's aggregate comes when the service of its last commit ends
    served = np.sort(a.end[a.kind == KINDS.index("communicate")])
    assert np.isin(rounds.time, served).all()


# --------------------------------------------------------------------- theory


def _response_times(trace, n):
    """Per commit: its service end (trace.time) minus its arrival at the server (with
    no link time, the end of the worker's compute interval)."""
    a = trace.activity
    out = np.empty(trace.n_events)
    for k in range(n):
        rows = np.flatnonzero(trace.worker == k)
        arrivals = a.end[(a.worker == k) & (a.kind == COMPUTE)]
        assert arrivals.size >= rows.size
        out[rows] = trace.time[rows] - arrivals[:rows.size]
    return out


@pytest.mark.parametrize("n, rho", [(4, 0.1), (8, 0.15), (6, 0.5)])
def test_machine_repairman_throughput_and_response(n, rho):
    """Simulated commits per second and mean response at the server against the closed
    M/M/1//n formulas (module docstring). ρ = 0.5 with 6 workers keeps the server busy
    97 % of the time. Batch means: 30,000 commits in 15 batches of 2,000 (the first
    dropped as warm-up); batches are far longer than the loop's memory (~n commits), so
    their means are nearly independent and the tolerance is 4 standard errors of the
    14 batch means."""
    p0 = _p0(n, rho)
    X = (1 - p0) / rho
    _check_batch_means(n, _exp(rho), X, n / X - 1.0)


def _check_batch_means(n, server, X, R, T=30_000, batches=15):
    trace = simulate_async(Cluster(n, ComputeTime("exponential", 1.0), server_time=server),
                           commits=T, rng=17, activity=True)
    m = T // batches
    ends = trace.time[m - 1::m]
    per_commit = np.diff(ends) / m  # batch means of the time between commits: 1/X
    response = _response_times(trace, n)[m:].reshape(batches - 1, m).mean(axis=1)
    for values, expected in ((per_commit, 1 / X), (response, R)):
        se = values.std(ddof=1) / math.sqrt(values.size)
        assert abs(values.mean() - expected) <= 4 * se, (values.mean(), expected, se)
        assert se < 0.02 * expected  # the check has power: 4 se is under 8 % of the value


@pytest.mark.parametrize("n, server", [
    (5, 0.3),
    (6, ComputeTime("gamma", 0.25, 0.5)),
    (5, ComputeTime("lognormal", 0.3, 1.0)),
])
def test_general_service_throughput_and_response(n, server):
    """Any service law (M/G/1//n): the simulator against Takács's p0 through
    machine_repairman (itself checked against the sum written out above), with the same
    batch means. The servers are busy 85 to 91 % of the time."""
    r = machine_repairman(n, 1.0, server)
    assert 0.85 < 1 - r.idle < 0.92
    _check_batch_means(n, server, r.throughput, r.response)


@pytest.mark.parametrize("n, rho", [(4, 0.3), (8, 0.15)])
def test_busy_server_staleness_mean_and_shape(n, rho):
    """Mean staleness n − 1 (exactly, up to the closed loop's boundary term, as in
    test_cluster's identity), but P(τ = 0) = p0(n−1)/n, not the geometric 1/n: the
    share of τ = 0 is within 5 binomial standard errors of the theory and more than 10
    away from 1/n; a chi-square test against Geometric(1/n) rejects at p < 1e-12."""
    from scipy import stats

    T = 60_000
    trace = simulate_async(Cluster(n, ComputeTime("exponential", 1.0),
                                   server_time=ComputeTime("exponential", rho)),
                           commits=T, rng=23)
    tau = trace.staleness.astype(np.int64)
    last = np.array([np.flatnonzero(trace.worker == k)[-1] for k in range(n)])
    np.testing.assert_allclose(tau.mean(), n - 1 - ((T - last).sum() - n) / T, atol=1e-9)
    assert abs(tau.mean() - (n - 1)) <= 5 * n * n / T
    tau = tau[n:]
    zero = np.mean(tau == 0)
    theory = _p0(n - 1, rho) / n
    se = math.sqrt(theory * (1 - theory) / tau.size)
    assert abs(zero - theory) <= 5 * se, (zero, theory)
    assert 1 / n - zero > 10 * math.sqrt((1 / n) * (1 - 1 / n) / tau.size)
    top = 3 * n
    counts = np.bincount(np.minimum(tau, top), minlength=top + 1)
    geometric = stats.geom.pmf(np.arange(1, top + 1), 1 / n)
    expected = np.append(geometric, 1 - geometric.sum()) * tau.size
    assert stats.chisquare(counts, expected).pvalue < 1e-12


# ------------------------------------------------------------------ command line


def test_trace_export_with_a_service_distribution(tmp_path):
    """--server-distribution/--server-shape with mean --server-time: the cluster Python
    builds from ComputeTime, commit for commit."""
    out = tmp_path / "t.jsonl"
    assert main(["trace", "export", "--workers", "3", "--server-time", "0.4",
                 "--server-distribution", "gamma", "--server-shape", "2", "--commits", "50",
                 "--seed", "6", "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    times = [r["time"] for r in rows if r["type"] == "commit"]
    python = simulate_async(Cluster(3, server_time=ComputeTime("gamma", 0.4, 2.0)),
                            commits=50, rng=6)
    assert times == python.time.tolist()


@pytest.mark.parametrize("argv, message", [
    (["--server-shape", "2"], "--server-shape applies to --server-distribution lognormal"),
    (["--server-distribution", "exponential", "--server-shape", "2"], "--server-shape applies"),
    (["--server-distribution", "exponential"], "--server-time must be > 0 seconds"),
    (["--server-distribution", "gamma", "--server-time", "0.1", "--server-shape", "0.001"],
     "--server-shape: ComputeTime.shape"),
])
def test_trace_export_refuses_a_bad_service_distribution(argv, message, capsys, tmp_path,
                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "export", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before any work


def test_run_and_sweep_flags_build_the_busy_cluster():
    """`asynclab run`/`sweep` share the cluster flags: with server flags the run they
    prepare has that service time (and the rule's groups); without, a server that takes
    no time."""
    from asynclab.cli._flags import prepare_options
    from asynclab.cli._main import build_parser
    from asynclab.engine import prepare

    parser = build_parser()
    for command in (["run"], ["sweep", "--grid", "learning_rate=1e-3,2e-3"]):
        args = parser.parse_args([*command, "--workers", "4", "--server-time", "0.3",
                                  "--server-distribution", "gamma", "--server-shape", "2"])
        cluster = prepare(**prepare_options(args)).cluster
        assert cluster == Cluster(4, ComputeTime("exponential"),
                                  server_time=ComputeTime("gamma", 0.3, 2.0))
    args = parser.parse_args(["run", "--rule", "mixed", "--param", "group_size=2",
                              "--server-time", "0.1"])
    assert prepare(**prepare_options(args)).cluster == Cluster(4, server_time=0.1,
                                                               group_size=2)
    assert prepare(**prepare_options(parser.parse_args(["run"]))).cluster == Cluster(4)


def test_run_command_simulates_the_busy_server(capsys):
    """The JSON summary's simulated time and staleness are those of the Python trace."""
    assert main(["run", "--workers", "3", "--server-time", "0.4", "--server-distribution",
                 "exponential", "--commits", "100", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    trace = simulate_async(Cluster(3, server_time=ComputeTime("exponential", 0.4)),
                           commits=100, rng=2)
    assert out["simulated_time"] == [trace.duration]
    assert out["staleness_histogram"] == np.bincount(trace.staleness).tolist()


@pytest.mark.parametrize("argv, message", [
    (["--backend", "threads", "--server-time", "0.2"], "--server-time applies only to the "
     "simulated schedules"),
    (["--server-distribution", "lognormal"], "--server-time must be > 0 seconds"),
    (["--server-time", "-1"], "--server-time must be >= 0 seconds"),
])
def test_run_command_refuses_bad_server_flags(argv, message, capsys):
    assert main(["run", *argv]) == 2
    assert message in capsys.readouterr().err
