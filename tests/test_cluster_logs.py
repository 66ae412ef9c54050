"""Step-time logs: reading and checking, replay, fitted models, staleness prediction."""

import gzip
import json
import sys
from pathlib import Path

import children
import numpy as np
import pytest
from scipy import special

from asynclab import ConfigError, run
from asynclab.cluster import (
    Cluster,
    Link,
    StepLog,
    fit_distribution,
    fit_log,
    fit_step_times,
    fit_stragglers,
    from_log,
    measured_trace,
    predict_staleness,
    read_log,
    simulate_async,
    simulate_sync,
    total_variation,
    wasserstein,
    write_log,
)

SHIPPED = Path(__file__).resolve().parents[1] / "asynclab" / "data" / "threads_cluster.csv.gz"
SCRIPT = Path(__file__).parent / "backend_scripts" / "threads_log_roundtrip.py"


def _write(path, text):
    path.write_text(text)
    return path


def _log(times_per_worker, **extra) -> StepLog:
    """A long log from per-worker step times laid back to back."""
    rows = []
    for k, times in enumerate(times_per_worker):
        start = np.concatenate([[0.0], np.cumsum(times)[:-1]])
        rows += [(k, j, s, t) for j, (s, t) in enumerate(zip(start, times, strict=True))]
    w, s, st, c = (np.array(x) for x in zip(*rows, strict=True))
    fields = dict(worker=w.astype(np.int64), step=s.astype(np.int64), start=st, compute=c,
                  communication=None, available=None, staleness=None, local_steps=1,
                  names=tuple(str(k) for k in range(len(times_per_worker))), source="test")
    fields.update(extra)
    return StepLog(**fields)


# ------------------------------------------------------------------ round trip


@pytest.mark.slow  # real threads on two devices end to end; the parts are quick-tier tests
def test_threads_run_to_log_to_replay_reproduces_the_run(tmp_path):
    """Real free-running threads -> long CSV -> the simulator replays the same order, the
    same pulls and times, and the engine the same numbers."""
    # two simulated CPU devices, also where a GPU is JAX's default platform
    proc = children.run(SCRIPT, "2", tmp_path / "run.csv.gz", devices=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    # "stop": the run ends at the earliest of the workers' last logged commits
    assert r["replayed_events"] == r["expected_events"] > r["commits"] // 2
    assert r["same_workers"] and r["same_pulls"]
    assert r["max_time_error"] < 1e-9
    assert r["max_path_error"] < 1e-5
    assert r["measured_same"] and r["measured_final_error"] < 1e-5


def test_shipped_log_replays_its_own_recorded_order():
    log = read_log(SHIPPED)
    assert log.n_workers == 4 and 2000 <= log.n_rows <= 5000
    assert SHIPPED.stat().st_size < 200_000
    measured = measured_trace(log)
    replayed = simulate_async(from_log(log), local_steps=log.local_steps, commits=log.n_rows)
    m = replayed.n_events
    last = min(measured.time[measured.worker == k].max() for k in range(log.n_workers))
    assert m == np.sum(measured.time <= last) > log.n_rows - 10
    np.testing.assert_array_equal(replayed.worker, measured.worker[:m])
    np.testing.assert_array_equal(replayed.staleness, measured.staleness[:m])
    # the shipped times have 7 decimals, so the replayed clock drifts by at most the
    # rounding of one value per row: 0.5e-7 s × rows per worker
    assert np.abs(replayed.time - measured.time[:m]).max() < 0.5e-7 * log.n_rows


def test_wrap_and_stop_follow_the_log_and_the_budget():
    log = _log([np.array([1.0, 2.0, 3.0]), np.array([1.5, 1.5, 1.5])])
    # stop: worker 1 uses up its log at t = 4.5 and the run ends there
    stopped = simulate_async(from_log(log, end="stop"), commits=100)
    np.testing.assert_allclose(stopped.time, [1.0, 1.5, 3.0, 3.0, 4.5])
    np.testing.assert_array_equal(stopped.worker, [0, 1, 0, 1, 1])
    # wrap: every worker starts its log again; commits are the merged cumulative sums
    wrapped = simulate_async(from_log(log, end="wrap"), commits=12)
    ends = sorted([(t, 0) for t in np.cumsum(np.tile([1.0, 2.0, 3.0], 4))]
                  + [(t, 1) for t in np.cumsum(np.full(12, 1.5))])[:12]
    np.testing.assert_allclose(wrapped.time, [t for t, _ in ends])
    np.testing.assert_array_equal(wrapped.worker, [k for _, k in ends])
    # the network and server still apply: a 0.25 s link each way adds 0.25 to the first
    # commit and 0.5 to every later cycle of a worker
    linked = simulate_async(from_log(log, end="wrap", network=Link(latency=0.25)), commits=4)
    np.testing.assert_allclose(linked.time, [1.25, 1.75, 3.75, 3.75])
    # synchronous rounds end when a worker runs out too: 3 rounds of max(w0, w1)
    rounds = simulate_sync(from_log(log, end="stop"), rounds=50)
    np.testing.assert_allclose(rounds.duration, [1.5, 2.0, 3.0])
    with pytest.raises(ConfigError, match="end must be one of"):
        from_log(log, end="loop")
    with pytest.raises(ConfigError, match="Cluster.workers"):
        Cluster(3, compute=from_log(log).compute)


def test_rows_of_several_local_steps_and_unavailable_steps():
    # a row that covers λ = 2 local steps: replayed at λ = 2 a commit is one row,
    # at λ = 1 every row gives two commits of half its time
    log = _log([np.array([2.0, 4.0])], local_steps=2)
    np.testing.assert_allclose(simulate_async(from_log(log), local_steps=2, commits=9).time,
                               [2.0, 6.0])
    np.testing.assert_allclose(simulate_async(from_log(log), local_steps=1, commits=9).time,
                               [1.0, 2.0, 4.0, 6.0])
    # an unavailable step's time is added to the next available one
    log = _log([np.array([1.0, 5.0, 2.0, 1.0])], available=np.array([True, False, True, True]),
               communication=np.array([0.5, 0.0, 0.5, 0.5]))
    np.testing.assert_allclose(log.durations(0), [1.5, 7.5, 1.5])
    np.testing.assert_allclose(log.durations(0, communication=False), [1.0, 7.0, 1.0])
    np.testing.assert_allclose(log.compute_times(0), [1.0, 2.0, 1.0])


def test_synchronous_rules_replay_a_log_too():
    """Model averaging on a replayed log: every round lasts as long as its slowest worker's
    logged step (plain numpy), and the run goes through asynclab.run like any cluster."""
    log = _log([np.array([1.0, 2.0, 0.5]), np.array([1.5, 1.0, 1.0])])
    result = run("quadratic", "model_averaging", cluster=from_log(log, end="wrap"),
                 commits=6, learning_rate=0.1, local_steps=1, problem_options={"dim": 2})
    durations = np.maximum(np.tile([1.0, 2.0, 0.5], 2), np.tile([1.5, 1.0, 1.0], 2))
    np.testing.assert_allclose(result.time[0], np.cumsum(durations))
    assert result.config["compute"]["model"] == "replayed log"


# ------------------------------------------------------------------ file formats


def test_long_csv_round_trips_through_write_and_read(tmp_path):
    log = _log([np.array([0.1, 0.2, 0.3]), np.array([0.25, 0.5])],
               communication=np.array([0.01, 0.02, 0.03, 0.04, 0.05]),
               staleness=np.array([0, 1, 1, 1, 1]))
    for name in ("a.csv", "a.csv.gz"):
        back = read_log(write_log(log, tmp_path / name))
        for field in ("worker", "step", "start", "compute", "communication", "staleness"):
            np.testing.assert_array_equal(getattr(back, field), getattr(log, field))
    assert gzip.decompress((tmp_path / "a.csv.gz").read_bytes()).startswith(b"worker,step")
    # rows may come in any order and worker ids need not start at 0
    text = "step,worker,compute,start,extra\n1,8,0.5,1.0,x\n0,7,0.2,0.0,y\n0,8,1.0,0.0,z\n"
    log = read_log(_write(tmp_path / "b.csv", text))
    assert log.names == ("7", "8")
    np.testing.assert_array_equal(log.worker, [0, 1, 1])
    np.testing.assert_array_equal(log.compute, [0.2, 1.0, 0.5])


def test_wide_iteration_format(tmp_path):
    text = ("iteration,latency_worker_1,compute_latency_worker_1,latency_worker_2,"
            "compute_latency_worker_2\n"
            "1,0.5,0.4,0.7,0.6\n2,0.6,0.5,,\n3,0.4,0.3,0.9,0.6\n")
    log = read_log(_write(tmp_path / "wide.csv", text))
    assert log.names == ("1", "2")
    np.testing.assert_array_equal(log.steps_per_worker(), [3, 2])
    np.testing.assert_allclose(log.compute, [0.4, 0.5, 0.3, 0.6, 0.6])
    np.testing.assert_allclose(log.communication, [0.1, 0.1, 0.1, 0.1, 0.3], atol=1e-12)
    np.testing.assert_array_equal(log.step, [1, 2, 3, 1, 3])
    np.testing.assert_allclose(log.start[:3], [0.0, 0.5, 1.1])  # back to back


def test_wide_files_with_several_jobs(tmp_path):
    text = ("jobid,iteration,latency_worker_1\n"
            "7,1,0.5\n7,2,0.6\n9,1,0.2\n")
    path = _write(tmp_path / "jobs.csv", text)
    with pytest.raises(ConfigError, match="holds 2 jobs .*7, 9"):
        read_log(path)
    np.testing.assert_allclose(read_log(path, job=9).compute, [0.2])
    np.testing.assert_allclose(read_log(path, job="7").compute, [0.5, 0.6])
    with pytest.raises(ConfigError, match="no rows with jobid"):
        read_log(path, job=8)


def test_parquet_needs_its_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ConfigError, match=r"asynclab\[parquet\]"):
        read_log(tmp_path / "log.parquet")


def test_parquet_round_trip(tmp_path):
    pytest.importorskip("pyarrow")  # the optional 'parquet' extra
    log = _log([np.array([0.1, 0.2]), np.array([0.3, 0.4])])
    back = read_log(write_log(log, tmp_path / "a.parquet"))
    np.testing.assert_array_equal(back.compute, log.compute)
    np.testing.assert_array_equal(back.worker, log.worker)


HEADER = "worker,step,start,compute\n"


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    (HEADER, "no steps"),
    ("worker,step,compute\n0,0,1\n", "missing column.*'start'"),
    (HEADER + "0,0,0,1\n0,1,1,x\n", r"line 3, column 'compute': 'x' is not a number"),
    (HEADER + "0,0,0,1\n0,1,1,-0.5\n", r"line 3, column 'compute'.*>= 0.*-0.5"),
    (HEADER + "0,0,0,inf\n", r"line 2, column 'compute'.*finite"),
    (HEADER + "0,0,0,nan\n", r"line 2, column 'compute'.*finite"),
    (HEADER + "0,0,0,1\n2,0,0,1\n", "worker 1 has no steps"),
    (HEADER + "0,0,0,1\n0,0,1,1\n", "lines 2 and 3: worker 0 has step 0 twice"),
    (HEADER + "0,0,5,1\n0,1,1,1\n", r"line 3, column 'start'.*before its step 0"),
    (HEADER + "0,0.5,0,1\n", r"line 2, column 'step'.*not an integer"),
    (HEADER + "0,0,0,1,7\n", "line 2: 5 cells"),
    ("worker,step,start,compute,communication\n0,0,0,1,-1\n",
     r"line 2, column 'communication'"),
    ("worker,step,start,compute,available\n0,0,0,1,maybe\n", r"line 2, column 'available'"),
    ("worker,step,start,compute,available\n0,0,0,1,0\n1,0,0,1,1\n",
     "worker 0 has no available steps"),
    ("worker,step,start,compute,staleness\n0,0,0,1,-1\n", r"line 2, column 'staleness'"),
    ("iteration,latency_worker_1\n1,0.5\n", None),  # fine: auto-detected wide
    ("iteration,latency_worker_1,latency_worker_2\n1,0.5,\n2,0.5,\n", "worker 2 has no steps"),
    ("iteration,latency_worker_1,compute_latency_worker_1\n1,0.5,0.7\n",
     r"line 2, column 'compute_latency_worker_1': compute 0.7 exceeds"),
    ("iteration,latency_worker_1\n1,-2\n", r"line 2, column 'latency_worker_1'"),
])
def test_malformed_logs_name_the_line_and_column(tmp_path, text, message):
    path = _write(tmp_path / "bad.csv", text)
    if message is None:
        read_log(path)
        return
    with pytest.raises(ConfigError, match=message):
        read_log(path)


def test_missing_files_and_bad_arguments(tmp_path):
    with pytest.raises(ConfigError, match="no log file"):
        read_log(tmp_path / "nothing.csv")
    with pytest.raises(ConfigError, match="format must be"):
        read_log(SHIPPED, format="tall")
    # gzip is recognised by its first bytes, not by the name: a plain-text .csv.gz is
    # read as text, and a gzip stream cut short is refused as such
    _write(tmp_path / "x.csv.gz", HEADER + "0,0,0,1\n0,1,1,1\n")
    assert read_log(tmp_path / "x.csv.gz").n_rows == 2
    import gzip

    whole = gzip.compress((HEADER + "0,0,0,1\n" * 2000).encode())
    (tmp_path / "cut.csv").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ConfigError, match="cut.csv.*damaged or truncated gzip"):
        read_log(tmp_path / "cut.csv")
    with pytest.raises(ConfigError, match="a wide log needs an 'iteration'"):
        read_log(_write(tmp_path / "w.csv", "worker,x\n1,2\n"), format="wide")
    with pytest.raises(ConfigError, match="no exchanges"):
        measured_trace(_log([np.ones(3)]))
    with pytest.raises(ConfigError, match="commit 0 .* has staleness 1"):
        measured_trace(_log([np.ones(3)], staleness=np.array([1, 0, 0])))


# ------------------------------------------------------------------ fitting


def _gamma_se(shape, scale, n):
    """Asymptotic standard errors of the gamma MLE: the inverse Fisher information
    n · [[ψ'(k), 1/θ], [1/θ, k/θ²]]."""
    info = n * np.array([[special.polygamma(1, shape), 1 / scale], [1 / scale, shape / scale**2]])
    return np.sqrt(np.diag(np.linalg.inv(info)))


CASES = [  # family, true parameters, scipy draw, asymptotic standard errors at n
    ("gamma", {"shape": 3.0, "scale": 0.002},
     lambda r, n: r.gamma(3.0, 0.002, n), lambda n: dict(zip(("shape", "scale"),
                                                             _gamma_se(3.0, 0.002, n),
                                                             strict=True))),
    ("lognormal", {"sigma": 0.5, "scale": 0.004},
     lambda r, n: r.lognormal(np.log(0.004), 0.5, n),
     lambda n: {"sigma": 0.5 / np.sqrt(2 * n), "scale": 0.004 * 0.5 / np.sqrt(n)}),
    ("shifted_exponential", {"loc": 0.001, "scale": 0.003},
     lambda r, n: 0.001 + r.exponential(0.003, n),
     # the minimum of n exponentials: its spread is scale / n
     lambda n: {"loc": 0.003 / n, "scale": 0.003 / np.sqrt(n)}),
]


@pytest.mark.parametrize("family, truth, draw, theory", CASES, ids=[c[0] for c in CASES])
def test_fits_recover_known_distributions_within_their_standard_errors(family, truth, draw,
                                                                       theory):
    n = 2000
    for seed in (1, 2, 3):
        x = draw(np.random.default_rng(seed), n)
        best, fits = fit_step_times(x, bootstrap=200, seed=seed)
        assert best.family == family  # chosen by likelihood
        assert set(fits) == {"gamma", "lognormal", "shifted_exponential"}
        expected = theory(n)
        for name, value in truth.items():
            se = best.standard_errors[name]
            # the bootstrap agrees with the asymptotic theory ...
            assert 0.75 < se / expected[name] < 1.33, (family, name, se, expected[name])
            # ... and the estimate lies within 3.5 standard errors of the truth
            assert abs(best.parameters[name] - value) < 3.5 * se, (family, name, seed)


def _scipy_fit(family, x):
    from scipy import stats

    if family == "gamma":
        shape, _, scale = stats.gamma.fit(x, floc=0)
        return {"shape": shape, "scale": scale}, stats.gamma(shape, scale=scale)
    if family == "lognormal":
        sigma, _, scale = stats.lognorm.fit(x, floc=0)
        return {"sigma": sigma, "scale": scale}, stats.lognorm(sigma, scale=scale)
    loc, scale = stats.expon.fit(x)
    return {"loc": loc, "scale": scale}, stats.expon(loc=loc, scale=scale)


@pytest.mark.parametrize("family, truth, draw, theory", CASES, ids=[c[0] for c in CASES])
def test_fits_densities_and_draws_are_scipy_stats(family, truth, draw, theory):
    # the oracle is scipy.stats itself: fit_distribution writes its formulas over arrays
    for n, seed in ((20, 1), (2000, 2), (50_000, 3)):
        x = draw(np.random.default_rng(seed), n)
        fit = fit_distribution(x, family, bootstrap=0)
        expected, frozen = _scipy_fit(family, x)
        for name, value in expected.items():
            # scipy solves the gamma shape's equation by Brent's method to ~1e-12
            assert fit.parameters[name] == pytest.approx(value, rel=1e-11, abs=0), name
        assert fit.log_likelihood == pytest.approx(np.sum(frozen.logpdf(x)), rel=1e-12)
        assert fit.mean == pytest.approx(frozen.mean(), rel=1e-12)
        ours = fit.sample(np.random.default_rng(7), (3, 5))
        np.testing.assert_array_equal(ours, fit.frozen().rvs(size=(3, 5),
                                                             random_state=np.random.default_rng(7)))
    # a bootstrap's refits are scipy's fits of scipy's draws, one at a time
    x = draw(np.random.default_rng(4), 300)
    fit = fit_distribution(x, family, bootstrap=5, seed=9)
    draws = fit.frozen().rvs(size=(5, 300), random_state=np.random.default_rng(9))
    refits = [_scipy_fit(family, row)[0] for row in draws]
    for name in fit.parameters:
        assert fit.standard_errors[name] == pytest.approx(
            np.std([r[name] for r in refits], ddof=1), rel=1e-9), name


def test_digamma_and_trigamma_are_scipys():
    from asynclab.cluster._distributions import _digamma_trigamma

    a = np.concatenate([np.geomspace(1e-3, 1e6, 500), [0.5, 1.0, 1.4616321449683622, 9.999,
                                                       10.0, 10.001]])
    psi, trigamma = _digamma_trigamma(a)
    expected = special.digamma(a)
    assert np.max(np.abs(psi - expected) / np.maximum(1.0, np.abs(expected))) < 1e-14
    np.testing.assert_allclose(trigamma, special.polygamma(1, a), rtol=1e-14)


def test_gamma_shapes_far_from_one_are_scipys():
    from scipy import stats

    for shape in (0.05, 0.4, 40.0, 3000.0):
        x = np.random.default_rng(0).gamma(shape, 2.0, 500)
        fit = fit_distribution(x, "gamma", bootstrap=0)
        assert fit.parameters["shape"] == pytest.approx(stats.gamma.fit(x, floc=0)[0],
                                                       rel=1e-10)


def test_fit_errors_are_config_errors():
    with pytest.raises(ConfigError, match="cannot be fitted"):
        fit_distribution([1.0, 2.0], "gamma")
    with pytest.raises(ConfigError, match="> 0"):
        fit_distribution(np.r_[np.arange(1.0, 21.0), 0.0], "lognormal")
    with pytest.raises(ConfigError, match="family must be"):
        fit_distribution(np.arange(1.0, 30.0), "weibull")
    with pytest.raises(ConfigError, match="same time"):
        fit_distribution(np.ones(30), "gamma")
    with pytest.raises(ConfigError, match="threshold"):
        fit_stragglers([np.arange(1.0, 30.0)], threshold=0.5)


def _markov_log(p_enter, p_leave, workers, steps, seed):
    """Plain loops: a two-state chain per worker; normal steps ~ lognormal(σ = 0.2)
    around the worker's speed, straggling ones 6–10× slower."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(workers):
        speed = 1.0 + 0.5 * k
        state = False
        times = []
        for _ in range(steps):
            state = (rng.random() < p_enter) if not state else (rng.random() >= p_leave)
            t = speed * rng.lognormal(0.0, 0.2)
            times.append(speed * rng.uniform(6, 10) if state else t)
        out.append(np.array(times))
    return out


def test_straggler_chain_recovers_its_transition_probabilities():
    p_enter, p_leave = 0.02, 0.3
    times = _markov_log(p_enter, p_leave, workers=4, steps=3000, seed=0)
    fit = fit_stragglers(times, threshold=3.0, bootstrap=0)
    assert abs(fit.p_enter - p_enter) < 3 * fit.p_enter_se
    assert abs(fit.p_leave - p_leave) < 3 * fit.p_leave_se
    assert abs(fit.stationary - p_enter / (p_enter + p_leave)) < 0.01
    # episodes: (worker, first step, length); their lengths add up to the straggling steps
    assert fit.episodes[:, 2].sum() == sum(lab.sum() for lab in fit.labels)
    assert 0.5 / p_leave < fit.episodes[:, 2].mean() < 2 / p_leave
    # the slowdown lies in the drawn 6–10× band (over the worker's median ≈ speed)
    assert 5.5 < fit.slowdown.mean < 9.5


def test_fitted_cluster_simulates_at_other_worker_counts():
    times = _markov_log(0.02, 0.3, workers=3, steps=3000, seed=1)
    log = _log(times)
    fitted = fit_log(log, bootstrap=0)
    assert fitted.workers == 3
    # heterogeneity kept: worker k's normal steps are lognormal around 1 + 0.5 k
    np.testing.assert_allclose([f.parameters.get("scale", 0) for f in fitted.normal],
                               [1.0, 1.5, 2.0], rtol=0.05)
    assert all(f.family == "lognormal" for f in fitted.normal)
    # the simulated stream has the model's mean step time: of the fitted chain (its
    # closed form) and, up to the fit's error, of the drawn one:
    # (1 − π) E[lognormal(0, 0.2)] + π · 8 with π = p_enter / (p_enter + p_leave)
    draw = fitted.stream(0, np.random.default_rng(0))
    sim = np.concatenate([draw((1000, 1)).ravel() for _ in range(50)])
    fitted_mean = fitted.resize(1).mean_step()
    np.testing.assert_allclose(sim.mean(), fitted_mean, rtol=0.03)
    pi = 0.02 / 0.32
    np.testing.assert_allclose(sim.mean(), (1 - pi) * np.exp(0.02) + pi * 8, rtol=0.1)
    np.testing.assert_allclose(np.mean(sim > 3 * np.median(times[0])),
                               np.mean(times[0] > 3 * np.median(times[0])), atol=0.02)
    big = fitted.resize(8)
    assert big.origin == (0, 1, 2, 0, 1, 2, 0, 1)
    resampled = fitted.resize(8, extend="resample", rng=4)
    assert set(resampled.origin) <= {0, 1, 2} and len(resampled.origin) == 8
    trace = simulate_async(Cluster(8, compute=big), commits=20_000, rng=0)
    assert abs(trace.staleness[8:].mean() - 7) < 0.1  # the closed-loop identity
    with pytest.raises(ConfigError, match="extend must be"):
        fitted.resize(8, extend="tile")


def test_staleness_prediction_for_the_shipped_log():
    out = predict_staleness(SHIPPED, commits=20_000)
    n = out["workers"]
    assert out["reference"] == "measured"
    for name in ("measured", "replayed", "fitted", "exponential"):
        assert abs(out[name]["mean"] - (n - 1)) < 0.05, name  # mean τ = n − 1
        np.testing.assert_allclose(out[name]["histogram"].sum(), 1.0)
    assert out["measured"]["total_variation"] == 0.0
    # the replay follows the measured order but for the last few commits
    assert out["replayed"]["total_variation"] < 0.005
    assert out["fitted"]["total_variation"] < out["exponential"]["total_variation"]


def test_distances_against_plain_formulas():
    p = np.array([0.5, 0.5])
    q = np.array([0.0, 0.5, 0.5])
    assert total_variation(p, q) == pytest.approx(0.5)
    assert wasserstein(p, q) == pytest.approx(1.0)  # everything moves by one commit
    assert wasserstein(p, p) == 0.0
    from scipy import stats

    rng = np.random.default_rng(3)
    for size_p, size_q in ((1, 9), (12, 12), (30, 4)):
        p, q = rng.random(size_p), rng.random(size_q)
        p, q = p / p.sum(), q / q.sum()
        width = max(size_p, size_q)
        support = np.arange(width)
        assert wasserstein(p, q) == pytest.approx(stats.wasserstein_distance(
            support, support, np.pad(p, (0, width - size_p)), np.pad(q, (0, width - size_q))),
            rel=1e-12, abs=1e-15)


def test_a_gzip_log_whose_trailer_lies_is_refused_as_it_expands(tmp_path, monkeypatch):
    # the trailer's length (modulo 4 GiB, forgeable) says 10 bytes; the text is ~60 kB:
    # the reader re-checks memory as the text grows instead of trusting the trailer
    import gzip

    from asynclab import _validate
    from asynclab.cluster import _log_read

    path = tmp_path / "forged.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("worker,step,start,compute\n")
        f.write("".join(f"0,{i},{i}.0,1.0\n" for i in range(4000)))
    data = bytearray(path.read_bytes())
    data[-4:] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    monkeypatch.setattr(_validate, "available_memory", lambda: 200_000)
    with pytest.raises(ConfigError, match="forged.csv.gz.*memory"):
        _log_read.read_log(path)


def test_a_truncated_gzip_log_is_not_sized_by_its_broken_trailer(tmp_path):
    # gzip stores the text's length in its last 4 bytes; a truncated file ends in
    # compressed bytes instead, read as a length of up to 4 GiB: the memory check must
    # not refuse a 22 kB file for that, and deflate expands a byte to 1,032 at most
    from asynclab.cluster._log_table import _text_size

    text = b"".join(b"%d,0,%d.0,1.0\n" % (k % 8, k) for k in range(20_000))
    whole = tmp_path / "whole.csv.gz"
    whole.write_bytes(gzip.compress(text))
    assert _text_size(whole) == len(text)  # an intact file: its stored length
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(whole.read_bytes()[:-7] + b"\xff\xff\xff\xff")
    assert cut.stat().st_size <= _text_size(cut) <= 1032 * cut.stat().st_size
