"""The array-speed schedules against the SimPy simulator and against queueing theory.

``simulate_async_many`` / ``simulate_sync_many`` must return, for every seed, the trace
SimPy returns for ``rng=seed``, array for array and float for float: every covered
timing model is checked that way here, with both budgets, across the simulator's draw
blocks, and with the ties of constant step times. Independent of SimPy, pooled
array-path traces are checked against the machine-repairman throughput and the order
statistics of quorum rounds (the oracles of test_cluster_service.py and test_semisync.py).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest

import asynclab
from asynclab._errors import ConfigError
from asynclab.cluster import (
    Availability,
    Cluster,
    ComputeTime,
    Link,
    SemiSync,
    Straggler,
    TimingModel,
    _arrays,
    _arrays_async,
    _arrays_rounds,
    _arrays_streams,
    array_coverage,
    machine_repairman,
    simulate_async,
    simulate_async_many,
    simulate_sync,
    simulate_sync_many,
)

LOGNORMAL = ComputeTime("lognormal", mean=1.0, shape=0.5)
EXPONENTIAL = ComputeTime("exponential", mean=0.7)
GAMMA = ComputeTime("gamma", mean=1.0, shape=2.0)
CONSTANT = ComputeTime("constant", mean=1.0)
SEEDS = [0, 7, 2**32 - 1]


def _same_trace(a, b) -> None:
    """Two traces hold equal arrays of equal dtypes and equal metadata."""
    assert type(a) is type(b)
    for name, x in a._asdict().items():
        if name == "simulator":  # what made it: the two paths say so
            assert {x, getattr(b, name)} <= {"simpy", "arrays"}, name
            continue
        y = getattr(b, name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert x is not None and y is not None, name
            assert x.dtype == y.dtype, name
            np.testing.assert_array_equal(x, y, err_msg=name, strict=True)
        else:
            assert x == y, name


def _check_against_simpy(many_of, one_of, cluster, seeds=SEEDS, **budget):
    """``many_of``'s traces for ``seeds`` are ``one_of``'s (SimPy's), seed by seed."""
    many = many_of(cluster, seeds=seeds, **budget)
    assert len(many) == len(seeds)
    for seed, trace in zip(seeds, many, strict=True):
        _same_trace(trace, one_of(cluster, rng=seed, **budget))
    return many


_check_async = functools.partial(_check_against_simpy, simulate_async_many, simulate_async)
_check_sync = functools.partial(_check_against_simpy, simulate_sync_many, simulate_sync)


# ----------------------------------------------------------------- random streams


def test_children_are_numpy_s_spawned_generators():
    """Child k of seed s is ``default_rng(s).spawn(n)[k]``: its PCG64 words, and its
    draws."""
    seeds = np.array([0, 1, 2, 999, 123456789, 2**31, 2**32 - 1])
    for key in (0, 1, 15, 16, 4097):
        words = _arrays_streams.spawned_words(seeds, key)
        for s, row in zip(seeds.tolist(), words, strict=True):
            expected = np.random.SeedSequence(s, spawn_key=(key,)).generate_state(4, np.uint64)
            np.testing.assert_array_equal(row, expected)
    children = _arrays_streams.Children(seeds, 3)
    for i, s in enumerate(seeds.tolist()):
        reference = np.random.default_rng(s).spawn(5)[3]
        np.testing.assert_array_equal(children[i].random(16), reference.random(16))


def test_numpy_s_own_seed_sequences_give_the_same_traces(monkeypatch):
    """Where the hash ever disagreed with numpy, numpy's objects are used: the same
    traces."""
    monkeypatch.setattr(_arrays_streams, "_hash_agrees", lambda: False)
    _check_async(Cluster(3, LOGNORMAL, server_time=ComputeTime("exponential", 0.2)),
                 commits=300)


# ------------------------------------------------------------------ asynchronous

ASYNC = {
    "lognormal": (Cluster(8, LOGNORMAL), {}),
    "exponential, heterogeneous, link": (
        Cluster(4, EXPONENTIAL, time_scale=(1.0, 2.0, 0.5, 1.5),
                network=Link(latency=0.05, bandwidth=1e6), message_bytes=1000), {}),
    "gamma, lambda 3": (Cluster(3, GAMMA, network=Link(0.01)), {"local_steps": 3}),
    "per-worker windows": (Cluster(3, LOGNORMAL, network=Link(0.01)),
                           {"local_steps": (1, 2, 5)}),
    "constant server": (Cluster(5, EXPONENTIAL, server_time=0.12), {}),
    "random server": (Cluster(5, EXPONENTIAL,
                              server_time=ComputeTime("lognormal", 0.15, 0.8)), {}),
    "groups": (Cluster(8, LOGNORMAL, group_size=2, intra_group_time=0.1,
                       network=Link(0.02)), {}),
    "groups, lambda 2, server": (Cluster(8, GAMMA, group_size=4, intra_group_time=0.1,
                                         server_time=0.05), {"local_steps": 2}),
    "at_step stragglers": (
        Cluster(4, LOGNORMAL, network=Link(0.03),
                stragglers=(Straggler(1, 5.0, at_step=10), Straggler(1, 2.0, at_step=10),
                            Straggler(2, 3.0, at_step=0), Straggler(3, 1.0, at_step=11))),
        {"local_steps": 2}),
    "at_time stragglers": (
        Cluster(4, LOGNORMAL, network=Link(0.03), server_time=0.1,
                stragglers=(Straggler(1, 5.0, at_time=10.0), Straggler(3, 2.0, at_time=50.0),
                            Straggler(3, 1.0, at_time=50.5), Straggler(3, 4.0, at_step=40))),
        {"local_steps": 2}),
    "at_time stragglers in groups": (
        Cluster(4, LOGNORMAL, group_size=2, network=Link(0.03),
                stragglers=(Straggler(1, 5.0, at_time=10.0), Straggler(2, 1.0, at_step=6))),
        {"local_steps": 3}),
    "constant steps, random server": (
        Cluster(4, CONSTANT, time_scale=(1.0, 1.0, 2.0, 1.0),
                server_time=ComputeTime("exponential", 0.2)), {}),
}


@pytest.mark.parametrize("budget", ["commits", "horizon"])
@pytest.mark.parametrize("name", list(ASYNC))
def test_async_traces_are_simpy_s_bit_for_bit(name, budget):
    cluster, options = ASYNC[name]
    many = _check_async(cluster, **options,
                        **({"commits": 500} if budget == "commits" else {"horizon": 100.0}))
    assert all(t.n_events > 40 for t in many)


def test_stragglers_of_the_checked_clusters_fall_inside_the_runs():
    """The straggler clusters above test something: without their stragglers the
    traces differ (each kind of straggler moves its worker's commits)."""
    for name in ("at_step stragglers", "at_time stragglers", "at_time stragglers in groups"):
        cluster, options = ASYNC[name]
        for straggler in cluster.stragglers:
            lighter = dataclasses.replace(cluster, stragglers=tuple(
                s for s in cluster.stragglers if s is not straggler))
            a = simulate_async_many(cluster, seeds=[0], commits=500, **options)[0]
            b = simulate_async_many(lighter, seeds=[0], commits=500, **options)[0]
            assert not np.array_equal(a.time, b.time), (name, straggler)


def test_long_windows_cross_the_simulator_s_draw_blocks():
    """λ > 1 sums every block of (block, λ) steps as the simulator does: 2 workers of
    λ = 3 use about 750 phases each, past the 64-, 192- and 448-phase block ends."""
    _check_async(Cluster(2, GAMMA, time_scale=(1.0, 1.3)), commits=1500, local_steps=3,
                 seeds=[5])


@pytest.mark.parametrize("server_time", [0.0, 0.05])
def test_a_worker_held_up_long_makes_the_others_draw_more(server_time):
    """A straggler of 600 s early in worker 0's run: the others commit far more than an
    even share, beyond the phases drawn for it at first."""
    cluster = Cluster(4, LOGNORMAL, server_time=server_time,
                      stragglers=(Straggler(0, 600.0, at_step=3),))
    many = _check_async(cluster, commits=2000, seeds=[1, 2])
    first = _arrays_async._expected_phases(cluster, (1,) * 4, 2000, math.inf) + 2
    for trace in many:
        counts = np.bincount(trace.worker, minlength=4)
        assert counts[0] < 200 and (counts[1:] > first[1:]).all(), (counts, first)
    _check_async(cluster, horizon=900.0, seeds=[1])


@pytest.mark.parametrize("cluster", [Cluster(3, EXPONENTIAL), Cluster(3, GAMMA, server_time=0.1),
                                     Cluster(4, LOGNORMAL, group_size=2)],
                         ids=["merge", "loop", "groups"])
def test_every_unit_draws_what_its_commits_need_from_any_first_guess(cluster, monkeypatch):
    """With a first guess of 3 phases per unit every run draws on as it goes, with both
    budgets: the same traces."""
    monkeypatch.setattr(_arrays_async, "_expected_phases",
                        lambda cluster, steps, limit, horizon: np.full(cluster.groups, 3))
    _check_async(cluster, commits=400, seeds=[0, 5])
    _check_async(cluster, horizon=80.0, seeds=[0, 5])
    _check_async(cluster, commits=300, seeds=[0, 5], local_steps=2)


def test_rounds_draw_what_they_need_from_any_first_guess(monkeypatch):
    monkeypatch.setattr(_arrays_rounds, "_expected_rounds", lambda *args: 3)
    monkeypatch.setattr(_arrays_rounds, "_CHUNK_ROUNDS", 5)
    for cluster in (Cluster(3, EXPONENTIAL), Cluster(3, GAMMA, server_time=0.1)):
        for semisync in (None, SemiSync(quorum=2), SemiSync(quorum=2, late="stale")):
            _check_sync(cluster, rounds=60, semisync=semisync, seeds=[0, 5])
            _check_sync(cluster, horizon=50.0, semisync=semisync, seeds=[0, 5])


def test_horizon_edges():
    cluster = Cluster(4, LOGNORMAL, network=Link(0.05))
    # before the first commit: empty traces of the right dtypes
    empty = _check_async(cluster, horizon=0.01)
    assert all(t.n_events == 0 for t in empty)
    # a horizon at a commit's time keeps that commit
    reference = simulate_async(cluster, commits=300, rng=SEEDS[1])
    at = float(reference.time[200])
    kept = _check_async(cluster, horizon=at)
    assert kept[1].n_events == 201 and kept[1].time[-1] == at
    _check_async(cluster, commits=1)
    # the same for rounds, plain and semi-synchronous
    for semisync in (None, SemiSync(quorum=2), SemiSync(quorum=2, late="stale")):
        assert all(t.n_events == 0 for t in _check_sync(cluster, horizon=0.01,
                                                        semisync=semisync))
        reference = simulate_sync(cluster, rounds=40, rng=SEEDS[2], semisync=semisync)
        at = float(reference.time[30])
        kept = _check_sync(cluster, horizon=at, semisync=semisync)
        assert kept[2].n_events == 31 and kept[2].time[-1] == at
        _check_sync(cluster, rounds=1, semisync=semisync)


def test_one_seed_and_duplicate_seeds():
    cluster = Cluster(3, EXPONENTIAL)
    (one,) = simulate_async_many(cluster, commits=50, seeds=4)
    _same_trace(one, simulate_async(cluster, commits=50, rng=4))
    for trace, seed in zip(simulate_async_many(cluster, commits=50, seeds=np.arange(3, 6)),
                           range(3, 6), strict=True):
        _same_trace(trace, simulate_async(cluster, commits=50, rng=seed))
    a, b = simulate_async_many(cluster, commits=50, seeds=[4, 4])
    _same_trace(a, b)


# ------------------------------------------------------------------------- ties

TIES = {
    "equal": Cluster(4, CONSTANT),
    "heterogeneous": Cluster(4, CONSTANT, time_scale=(1.0, 2.0, 1.0, 3.0)),
    "heterogeneous, link": Cluster(4, CONSTANT, time_scale=(1.0, 2.0, 1.0, 3.0),
                                   network=Link(0.25)),
    "heterogeneous, server": Cluster(4, CONSTANT, time_scale=(1.0, 2.0, 1.0, 3.0),
                                     server_time=0.5),
    "groups": Cluster(6, CONSTANT, time_scale=(1.0, 2.0, 1.0, 3.0, 1.0, 1.0), group_size=2,
                      intra_group_time=0.5),
    "stragglers": Cluster(3, CONSTANT, stragglers=(Straggler(0, 1.0, at_step=3),
                                                   Straggler(2, 2.0, at_time=5.0))),
}


@pytest.mark.parametrize("name", list(TIES))
def test_ties_of_constant_times_are_ordered_as_simpy_orders_them(name):
    """With constant times every commit ties with others. The full key (time, clock of
    the commit that scheduled the arrival) orders them as SimPy's event queue does; the
    fast rule (lowest index) is flagged wherever a tie could mislead it."""
    cluster = TIES[name]
    seeds = np.array([0])
    reference = simulate_async(cluster, commits=300, rng=0)
    time, worker, pulled, counts, tied = _arrays_async.run(
        cluster, (1,) * cluster.workers, seeds, 300, math.inf, exact=True)
    np.testing.assert_array_equal(time[0], reference.time, strict=True)
    np.testing.assert_array_equal(worker[0], reference.worker, strict=True)
    np.testing.assert_array_equal(pulled[0], reference.pulled_clock, strict=True)
    assert not tied.any()
    time, worker, pulled, counts, tied = _arrays_async.run(
        cluster, (1,) * cluster.workers, seeds, 300, math.inf)
    assert tied[0] or np.array_equal(worker[0], reference.worker)


def test_a_cluster_without_randomness_is_simulated_once_and_shared_read_only():
    cluster = TIES["heterogeneous, server"]
    many = _check_async(cluster, commits=200)
    assert all(t is many[0] for t in many)
    with pytest.raises(ValueError):
        many[0].time[0] = 1.0
    rounds = _check_sync(cluster, rounds=20, semisync=SemiSync(quorum=2))
    assert not rounds[0].counted.flags.writeable


def test_ties_the_array_loops_cannot_order_are_simulated_by_simpy(monkeypatch):
    """Forced through the array loops, constant clusters (every event a tie) still give
    SimPy's traces: the asynchronous loop reruns tied seeds with the full key, the
    rounds hand tied seeds to SimPy."""
    monkeypatch.setattr(_arrays, "_deterministic", lambda cluster: False)
    _check_async(TIES["heterogeneous, server"], commits=200, seeds=[0, 1])
    _check_async(TIES["groups"], horizon=60.0, seeds=[0, 1])
    cluster = Cluster(4, CONSTANT, time_scale=(1.0, 2.0, 3.0, 4.0))
    for late in ("discard", "stale"):
        for semisync in (SemiSync(window=2.0, late=late), SemiSync(quorum=2, late=late),
                         SemiSync(window=0.5, min_count=3, deadline=2.5, late=late)):
            _check_sync(cluster, rounds=30, semisync=semisync, seeds=[0, 1])
    _check_sync(cluster, rounds=30, seeds=[0, 1])


# ----------------------------------------------------------------------- rounds

SYNC = {
    "lognormal, link": Cluster(8, LOGNORMAL, network=Link(0.05)),
    "gamma, heterogeneous": Cluster(4, GAMMA, time_scale=(1.0, 2.0, 0.5, 1.0)),
    "constant server": Cluster(5, EXPONENTIAL, server_time=0.1),
    "random server": Cluster(5, EXPONENTIAL, server_time=ComputeTime("gamma", 0.2, 2.0)),
    "constant steps, random server": Cluster(4, CONSTANT,
                                             server_time=ComputeTime("exponential", 0.2)),
    "stragglers": Cluster(4, LOGNORMAL, network=Link(0.01),
                          stragglers=(Straggler(2, 4.0, at_time=20.0),
                                      Straggler(0, 1.0, at_step=5))),
    "groups (rounds ignore them)": Cluster(4, LOGNORMAL, group_size=2, intra_group_time=0.3),
}


@pytest.mark.parametrize("budget", ["rounds", "horizon"])
@pytest.mark.parametrize("name", list(SYNC))
def test_sync_rounds_are_simpy_s_bit_for_bit(name, budget):
    many = _check_sync(SYNC[name], local_steps=2,
                       **({"rounds": 150} if budget == "rounds" else {"horizon": 200.0}))
    assert all(t.n_events > 20 for t in many)


SEMISYNC = [
    SemiSync(quorum=5),
    SemiSync(backup=2),
    SemiSync(quorum=5, deadline=1.3),
    SemiSync(window=0.5),
    SemiSync(window=0.3, min_count=3, deadline=0.9),
    SemiSync(window=0.3, min_count=3, deadline=0.3),
    SemiSync(quorum=8),
]


@pytest.mark.parametrize("late", ["discard", "stale"])
@pytest.mark.parametrize("semisync", SEMISYNC, ids=str)
def test_semisync_rounds_are_simpy_s_bit_for_bit(semisync, late):
    semisync = dataclasses.replace(semisync, late=late)
    cluster = Cluster(8, EXPONENTIAL, network=Link(0.05))
    many = _check_sync(cluster, rounds=120, semisync=semisync)
    assert any(not t.counted.all() for t in many) or semisync.quorum == 8
    _check_sync(cluster, horizon=40.0, semisync=semisync, seeds=[3])


@pytest.mark.parametrize("late", ["discard", "stale"])
@pytest.mark.parametrize("cluster", [
    Cluster(6, EXPONENTIAL, server_time=0.1),
    Cluster(6, EXPONENTIAL, server_time=ComputeTime("exponential", 0.1)),
    Cluster(5, LOGNORMAL, network=Link(0.01), stragglers=(Straggler(2, 4.0, at_time=20.0),)),
], ids=["constant server", "random server", "at_time straggler"])
def test_semisync_rounds_with_servers_and_stragglers(cluster, late):
    for semisync in (SemiSync(quorum=4, late=late),
                     SemiSync(quorum=4, deadline=1.0, late=late),
                     SemiSync(window=0.5, min_count=2, deadline=1.5, late=late)):
        _check_sync(cluster, rounds=100, semisync=semisync, seeds=[0, 11])


def test_stale_rounds_order_ties_as_simpy_does():
    """Constant steps and a random server: every round's commits arrive together, and
    the stale loop serves them in SimPy's order (who counted first pulls first)."""
    cluster = Cluster(4, CONSTANT, server_time=ComputeTime("exponential", 0.2))
    _check_sync(cluster, rounds=100, semisync=SemiSync(quorum=2, late="stale"))


# ---------------------------------------------------------------------- theory


def test_pooled_throughput_is_the_machine_repairman_s():
    """Exponential steps and server (M/M/1//n): commits per second of 400 seeds' runs
    of 1,000 commits against the closed form X. Each run's rate is its commits over its
    duration; the first 100 commits are dropped as warm-up; 4 standard errors of the
    400 independent rates."""
    n, rho = 6, 0.15
    cluster = Cluster(n, ComputeTime("exponential", 1.0),
                      server_time=ComputeTime("exponential", rho))
    traces = simulate_async_many(cluster, commits=1000, seeds=range(400))
    rates = np.array([(t.n_events - 100) / (t.time[-1] - t.time[99]) for t in traces])
    expected = machine_repairman(n, 1.0, ComputeTime("exponential", rho)).throughput
    se = rates.std(ddof=1) / math.sqrt(rates.size)
    assert abs(rates.mean() - expected) < 4 * se, (rates.mean(), expected, se)
    assert se < 0.01 * expected  # the check has power


@pytest.mark.parametrize("quorum", [1, 3, 8])
def test_quorum_rounds_last_the_kth_order_statistic(quorum):
    """Discarded work restarts, so the rounds of all seeds are i.i.d.: their mean
    duration is E[X_(K:n)] + 2x = (1/μ) Σ_{i=n−K+1}^{n} 1/i + 2x, within 4.5 standard
    errors of 200 seeds × 50 rounds."""
    n, mean, x = 8, 0.5, 0.05
    cluster = Cluster(n, ComputeTime("exponential", mean=mean), network=Link(latency=x))
    traces = simulate_sync_many(cluster, rounds=50, seeds=range(200),
                                semisync=SemiSync(quorum=quorum))
    durations = np.concatenate([t.duration for t in traces])
    i = np.arange(n - quorum + 1, n + 1)
    expected = mean * np.sum(1.0 / i) + 2 * x
    sd = mean * math.sqrt(np.sum(1.0 / i**2))
    assert abs(durations.mean() - expected) < 4.5 * sd / math.sqrt(durations.size)
    assert all((t.counted.sum(axis=1) == quorum).all() for t in traces)


# -------------------------------------------------------------------- coverage


class _Ones(TimingModel):
    def stream(self, worker, rng):
        return lambda shape: np.ones(shape)

    def mean_step(self):
        return 1.0


@pytest.mark.parametrize("cluster, options, words", [
    (Cluster(2), {"activity": True}, "activity"),
    (Cluster(2, _Ones()), {}, "TimingModel"),
    (Cluster(2, availability=Availability(mtbf=10.0, mttr=1.0)), {}, "availability"),
    (Cluster(2), {"synchronous": True,
                  "semisync": SemiSync(quorum=1, deadline="adaptive")}, "adaptive"),
    (Cluster(2, CONSTANT, server_time=ComputeTime("exponential", 0.1)),
     {"synchronous": True, "semisync": SemiSync(quorum=1)}, "discard"),
])
def test_what_the_array_path_does_not_cover_is_said_and_refused(cluster, options, words):
    options = {"synchronous": False, **options}
    reason = array_coverage(cluster, **options)
    assert isinstance(reason, str) and words in reason
    if options.get("activity"):
        return
    with pytest.raises(ConfigError, match="cluster"):
        if options["synchronous"]:
            simulate_sync_many(cluster, rounds=5, seeds=[0], semisync=options["semisync"])
        else:
            simulate_async_many(cluster, commits=5, seeds=[0])


def test_what_the_array_path_covers():
    for cluster, _ in ASYNC.values():
        assert array_coverage(cluster, synchronous=False) is None
    for semisync in SEMISYNC + [SemiSync(quorum=2, late="stale")]:
        assert array_coverage(Cluster(8, LOGNORMAL), synchronous=True,
                              semisync=semisync) is None
    assert array_coverage(SYNC["constant steps, random server"], synchronous=True,
                          semisync=SemiSync(quorum=2, late="stale")) is None


@pytest.mark.parametrize("call, field", [
    (lambda: simulate_async_many(Cluster(2), commits=5, seeds=[-1]), "seeds"),
    (lambda: simulate_async_many(Cluster(2), commits=5, seeds=[1.0]), "seeds"),
    (lambda: simulate_async_many(Cluster(2), commits=5, seeds=[]), "seeds"),
    (lambda: simulate_async_many(Cluster(2), seeds=[0]), "commits"),
    (lambda: simulate_async_many(Cluster(2), commits=5, horizon=1.0, seeds=[0]), "commits"),
    (lambda: simulate_async_many(Cluster(2), commits=0, seeds=[0]), "commits"),
    (lambda: simulate_async_many(Cluster(2), local_steps=(1,), commits=5, seeds=[0]),
     "local_steps"),
    (lambda: simulate_async_many("cluster", commits=5, seeds=[0]), "cluster"),
    (lambda: simulate_sync_many(Cluster(2), rounds=5, seeds=[0],
                                semisync=SemiSync(quorum=3)), "quorum"),
    (lambda: simulate_sync_many(Cluster(2), rounds=5, seeds=[0], semisync="k of n"),
     "semisync"),
    (lambda: simulate_sync_many(Cluster(2), horizon=-1.0, seeds=[0]), "horizon"),
    (lambda: simulate_sync_many(Cluster(2), rounds=5, local_steps=1.0, seeds=[0]),
     "local_steps"),
])
def test_bad_inputs_are_refused_before_any_work(call, field):
    with pytest.raises(ConfigError, match=field):
        call()


def test_a_schedule_too_large_for_memory_is_refused():
    with pytest.raises(ConfigError, match="commits"):
        simulate_async_many(Cluster(2), commits=10**12, seeds=range(1000))


# ----------------------------------------------------------------- large sweeps


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ASYNC))
def test_async_traces_over_many_seeds_and_long_runs(name):
    """Every covered model, 40 seeds of 6,000 commits (past several draw blocks)."""
    cluster, options = ASYNC[name]
    _check_async(cluster, seeds=list(range(40)), commits=6000, **options)


@pytest.mark.slow
@pytest.mark.parametrize("late", ["discard", "stale"])
def test_semisync_rounds_over_many_seeds(late):
    cluster = Cluster(6, LOGNORMAL, network=Link(0.02),
                      server_time=ComputeTime("gamma", 0.05, 2.0))
    for semisync in SEMISYNC[:6]:
        semisync = dataclasses.replace(semisync, late=late)
        if semisync.quorum is not None and semisync.quorum > 6:
            continue
        _check_sync(cluster, seeds=list(range(10)), rounds=1000, semisync=semisync)


# ----------------------------------------------------------------------------- the choice


def test_a_run_takes_the_array_path_where_it_covers_the_model_with_the_same_numbers():
    """`simulator="auto"` makes each seed's schedule with the array path, `"simpy"` with
    the reference: the same traces (each says which made it), so the same run."""
    cluster = Cluster(6, ComputeTime("lognormal", 1.0, 0.5), server_time=0.05)
    options = dict(cluster=cluster, commits=300, seeds=range(5), noise=1.0,
                   trace_per_seed=True)
    fast = asynclab.prepare("beale", "downpour", simulator="auto", **options)
    slow = asynclab.prepare("beale", "downpour", simulator="simpy", **options)
    made = [asynclab.engine.schedules(s) for s in (fast, slow)]
    assert {t.simulator for t in made[0]} == {"arrays"}
    assert {t.simulator for t in made[1]} == {"simpy"}
    for a, b in zip(*made, strict=True):
        _same_trace(a, b)
    np.testing.assert_array_equal(asynclab.run(fast, progress=False).final_loss,
                                  asynclab.run(slow, progress=False).final_loss)


def test_the_reference_makes_what_the_array_path_does_not_cover():
    cluster = Cluster(4, availability=asynclab.cluster.Availability(mtbf=50.0, mttr=2.0))
    spec = asynclab.prepare("beale", "downpour", cluster=cluster, commits=50, seeds=[0, 1],
                            trace_per_seed=True)
    assert {t.simulator for t in asynclab.engine.schedules(spec)} == {"simpy"}
    with pytest.raises(ConfigError, match="simulator='arrays' does not cover.*failures"):
        asynclab.prepare("beale", "downpour", cluster=cluster, commits=50,
                         simulator="arrays")
    with pytest.raises(ConfigError, match="simulator must be one of auto, simpy, arrays"):
        asynclab.prepare("beale", "downpour", workers=2, commits=5, simulator="fast")


def test_the_command_line_chooses_the_simulator(capsys):
    from asynclab.cli import main

    assert main(["run", "--simulator", "arrays", "--mtbf", "100", "--mttr", "1",
                 "--commits", "10"]) == 2
    assert "simulator='arrays' does not cover" in capsys.readouterr().err
    assert main(["run", "--simulator", "simpy", "--seeds", "0:3", "--trace-per-seed",
                 "--commits", "20", "--json"]) == 0
