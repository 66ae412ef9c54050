"""Provenance: each figure's committed data, ``figures/data/NAME.npz``, is what today's
code computes.

The figure tests (``tests/test_figure_*.py``) check each figure's claims against its
committed full-size data. ``asynclab figures`` writes that data and the tests never do, so
a change to the simulator, the engine, a rule or a study could leave every claim test
passing while the committed numbers (and the figures and notes drawn from them) describe
older code. Here, for every figure, the study's ``Config`` is rebuilt from the config
stored with the data, ONE cheap cell of the study is recomputed the way the study
computes it (the same seeds, schedules and settings, through the study's own helpers or
the public API), and the result is compared with the committed entries:

- exactly where only the simulator and numpy are involved (schedules, staleness counts,
  simulated times) and for counts of runs;
- to ``RTOL`` for floats that come out of a replay. Replays run in float32. On a CPU a
  seed's run does not depend on the seeds replayed beside it, except a net's loss record,
  which averages a whole data set and may move in its last bit (``docs/design.md``; seed 0
  of mnist_rules replayed alone differs from seed 0 among four by 2.4e-7). 1e-5 is about
  a hundred float32 roundings: far above that, far below any digit a figure quotes.

Three facts of the code make cells cheap: seeds are independent, so one seed's run can
be replayed alone; a schedule of K commits is the first K rows of a longer one with the
same seed (``simulate_async``'s docstring); and a replay is causal, so the first K events
of a long run, replayed alone and recorded at the same interval, give the long run's
first records.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import asynclab
from asynclab import studies
from asynclab.cluster import (
    Cluster,
    ComputeTime,
    example_log_path,
    from_log,
    heterogeneous,
    read_log,
    simulate_async,
    simulate_sync,
)
from asynclab.engine import initial_state, replay, scores, seed_keys
from asynclab.figures import FIGURES
from asynclab.problems import get_problem, quadratic
from asynclab.rules import make_rule

DATA = Path(__file__).resolve().parents[1] / "figures" / "data"
RTOL = 1e-5  # for replayed float32 numbers (see the module's docstring)


def committed(name):
    """``(study, data, config)`` of figure ``name``: its study module, the committed data
    and the study's ``Config`` rebuilt from the committed JSON (lists back to tuples;
    fields added since the data was written take their defaults)."""
    study = importlib.import_module(f"asynclab.studies.{FIGURES[name].study}")
    data, config = studies.load(DATA / f"{name}.npz")
    config = study.Config(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in config.items()})
    return study, data, config


def close(actual, expected, atol=0.0):
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=atol)


def test_every_figure_has_a_provenance_test():
    missing = [name for name in FIGURES if f"test_{name}_provenance" not in globals()]
    assert not missing


def test_staleness_provenance():
    # Cell: the heterogeneous cluster (n = 20, lognormal speeds), all 200,000 commits. The
    # simulator alone (~0.3 s); its speeds come from the study's rng, so it also checks
    # that seeding.
    study, data, config = committed("staleness")
    i = len(config.workers)  # the clusters: one per n, then the heterogeneous one
    assert "heterogeneous" in str(data["labels"][i])
    m = config.variant_workers
    speeds = heterogeneous(m, config.heterogeneity, np.random.default_rng(config.seed))
    cluster = Cluster(m, ComputeTime("exponential"), time_scale=speeds)
    trace = simulate_async(cluster, commits=config.commits, rng=config.seed + i)
    row = study.histograms([("", trace)])
    counts = row["counts"][0]
    np.testing.assert_array_equal(counts, data["counts"][i, :counts.size])
    np.testing.assert_array_equal(data["counts"][i, counts.size:], 0)
    for key in ("n", "mean", "p_fit", "p_zero", "tail", "tail_geometric"):
        np.testing.assert_array_equal(row[key][0], data[key][i], err_msg=key)


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_straggler_provenance():
    # Cell: the drawn seed (shown_seed) of the fixed-start part, DOWNPOUR: one 4,000-commit
    # schedule and a replay of one seed (~1 s); the basin scan replays 2,000 seeds.
    study, data, config = committed("straggler")
    s = config.shown_seed
    trace = simulate_async(study._cluster(config, True), commits=config.commits, rng=s)
    commit = int(np.argmax(trace.staleness))
    np.testing.assert_array_equal(commit, data["straggler_commit"][s])
    np.testing.assert_array_equal(trace.staleness[commit], data["straggler_staleness"][s])
    np.testing.assert_array_equal(trace.time[commit], data["straggler_time"][s])
    np.testing.assert_array_equal(trace.worker[commit], data["straggler_worker"][s])

    r = study.rule_labels(config).index("DOWNPOUR")
    problem = get_problem("beale")._replace(start=np.asarray(config.start, np.float32))
    rule = make_rule("downpour", learning_rate=config.learning_rate)
    result = replay(rule, problem, trace, seeds=[s], noise=config.noise, record_every=1,
                    record_paths=True)
    close(result.center_path[0], data["path"][r], atol=RTOL)  # coordinates of order 1
    loss = result.loss[0]
    close(loss[commit], data["loss_before"][r, s])
    close(loss[commit + 1], data["loss_after"][r, s])
    close(np.nanmean(loss[-max(1, config.commits // 10):]), data["final_loss"][r, s])


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_implicit_momentum_provenance():
    # Cell: n = 16, the mean centre over all 512 seeds for the first 200 commits (the first
    # 41 stored points of mean_path). The mean needs every seed; the prefix keeps 512
    # schedules and their replay to ~1 s.
    study, data, config = committed("implicit_momentum")
    n, commits = 16, 200
    i = list(config.workers).index(n)
    problem = get_problem("quadratic", dim=config.dim, condition=config.condition)
    rule = make_rule("downpour", learning_rate=config.learning_rate)
    seeds = list(range(config.seed, config.seed + config.seeds))
    cluster = Cluster(n, ComputeTime(config.compute, shape=config.compute_shape))
    traces = [simulate_async(cluster, commits=commits, rng=s) for s in seeds]
    result = replay(rule, problem, traces, seeds=seeds, noise=config.noise, record_every=1,
                    record_paths=True)
    mean = result.center_path.astype(np.float64).mean(axis=0)[::config.store_every]
    np.testing.assert_array_equal(data["commits"][:len(mean)],
                                  np.arange(0, commits + 1, config.store_every))
    close(mean.astype(np.float32), data["mean_path"][i, :len(mean)])


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_momentum_tuning_provenance():
    # Cell: n = 4, (η, μ) = (0.008, 0.15), a stable point near the fastest of its row: all
    # 32 seeds over the whole 1,500 commits (the scores need every seed and the whole run),
    # one replay of 32 runs instead of the study's 99 points × 32 (~2 s).
    study, data, config = committed("momentum_tuning")
    n, e, m = 4, 2, 5
    i = list(config.workers).index(n)
    eta, mu = config.learning_rates[e], config.momenta[m]
    problem = get_problem("quadratic", dim=config.dim, condition=config.condition)
    seeds = list(range(config.seeds))
    cluster = Cluster(n, ComputeTime("exponential"))
    traces = [simulate_async(cluster, commits=config.commits, rng=s) for s in seeds]
    rule = make_rule("downpour", learning_rate=eta, server_momentum=mu)
    result = replay(rule, problem, traces, seeds=seeds, noise=config.noise, record_every=1,
                    record_paths=True)
    keep = slice(None, None, config.store_every)
    # score (a): the decay rate of the seed-averaged centre
    center = result.center_path.astype(np.float64)
    mean, se = center.mean(axis=0), center.std(axis=0) / np.sqrt(len(seeds))
    rate, measurable = study.measured_rate(mean, se)
    np.testing.assert_array_equal(measurable, data["measurable"][i, e, m])
    close(rate, data["measured_rate"][i, e, m])
    close(np.linalg.norm(mean, axis=-1)[keep], data["mean_norm"][i, e, m])
    # score (b): what single runs do
    level = config.target * float(problem.loss(problem.start))
    close(scores(result, "commits_to_target", target=level), data["commits_to_target"][i, e, m])
    final = np.where(result.diverged, np.inf, np.nan_to_num(result.final_loss, nan=np.inf))
    close(np.median(final), data["median_final_loss"][i, e, m])
    close(np.median(result.loss, axis=0)[keep], data["median_loss"][i, e, m])


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_model_averaging_paths_provenance():
    # Cell: random per-worker starts, λ = 1000, the drawn seed: one seed, 40 rounds (~1 s).
    # Its paths are stored undecimated, and it has its own final loss and spreads.
    study, data, config = committed("model_averaging_paths")
    init, lam, n = "random_per_worker", 1000, config.workers
    i, j = study.INITS.index(init), list(config.local_steps).index(lam)
    seed = config.seeds[0]
    rounds = config.steps // lam
    assert rounds <= config.drawn_rounds  # every round is stored
    problem = get_problem("beale")
    rule = make_rule("model_averaging", learning_rate=config.learning_rate, local_steps=lam)
    trace = simulate_sync(Cluster(workers=n), local_steps=lam, rounds=rounds)
    result = replay(rule, problem, trace, seeds=[seed], noise=config.noise, init=init,
                    record_every=1, record_paths=True)
    key = f"{init}_{lam}"
    _, workers = initial_state(rule, problem, seed_keys(seed, n)[0], n, init)
    close(np.asarray(workers.params), data[f"starts_{key}"])
    close(result.center_path[0], data[f"center_{key}"], atol=RTOL)  # coordinates of order 1
    close(result.worker_path[0], data[f"ends_{key}"], atol=RTOL)
    per_round = study.spread(result.worker_path[0])
    close(per_round[0], data["first_spread"][i, j, 0])
    close(per_round[1:].mean(), data["later_spread"][i, j, 0])
    close(result.final_loss[0], data["final_loss"][i, j, 0])


@pytest.mark.slow  # one of the two dearest recomputations (the others run quick)
def test_model_averaging_mc_provenance():
    # Cell: n = 2, λ = 1000, a heatmap-only λ: the convergence-check replay of its 500 seeds
    # over twice the budget (64 rounds) gives the whole cell (~3.5 s). A bar λ replays
    # 10,000 seeds; λ = 1000 has the fewest rounds; n = 1 is cheaper but averages nothing.
    study, data, config = committed("model_averaging_mc")
    n, lam = 2, 1000
    assert lam not in config.bar_local_steps
    i, j = list(data["local_steps"]).index(lam), list(data["workers"]).index(n)
    result = study.replay_cell(config, get_problem("beale"), n, lam, 2 * config.budget_for(n),
                               range(config.check_runs), 2)
    # counts of runs below a loss threshold: exact (a last-bit change could move one only
    # for a loss within float32 rounding of the threshold). The figure stores counts only,
    # so a change that moves no run across the threshold cannot show here.
    ok = result.loss[:, 1:] < config.success_loss  # at 1× and 2× the budget
    np.testing.assert_array_equal(ok.mean(axis=0), [data["check_at_budget"][i, j],
                                                    data["check_at_double"][i, j]])
    final = result.loss[:, 1]
    np.testing.assert_array_equal(
        [final.size, np.sum(final < config.success_loss), np.sum(~np.isfinite(final)), -1],
        [data[key][i, j] for key in ("runs", "success", "diverged", "valley")])


def test_easgd_provenance():
    # Cell: part 1 (synchronous EASGD on Beale), ρ = 5 with the early stop, its first 400
    # rounds: the first 41 stored points of the 20,000-round run, one noise-free replay
    # (~1 s). The early stop first fires near round 290, so the prefix covers it.
    study, data, config = committed("easgd")
    rho, keep, points = config.elasticities[0], max(1, config.rounds // 2000), 40
    rounds = points * keep
    rule = make_rule("easgd", learning_rate=config.learning_rate,
                     local_steps=config.local_steps, elasticity=rho, early_stop=True)
    trace = simulate_sync(Cluster(workers=config.workers), local_steps=config.local_steps,
                          rounds=rounds)
    result = replay(rule, get_problem("beale"), trace, seeds=[config.seed],
                    noise=config.noise, init="start", record_every=1, record_paths=True)
    key = f"rho{rho:g}_stop"
    close(result.loss[0, ::keep], data[f"loss_{key}"][:points + 1])
    close(result.center_path[0, ::keep], data[f"center_{key}"][:points + 1], atol=RTOL)
    close(result.worker_path[0, ::keep], data[f"ends_{key}"][:points], atol=RTOL)


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_agn_provenance():
    # Cell: the AGN loss curve (n = 4, λ = 15), its mean over all 64 seeds for the first 40
    # commits. The mean needs every seed; the prefix keeps it to ~1 s.
    study, data, config = committed("agn")
    n, lam, commits = config.workers, config.window, 40
    assert str(data["labels"][0]).startswith("AGN")
    problem = get_problem("quadratic", dim=config.dim, condition=config.condition)
    seeds = list(range(config.seeds))
    traces = [simulate_async(Cluster(n, ComputeTime("exponential")), commits=commits,
                             local_steps=lam, rng=s) for s in seeds]
    rule = make_rule("agn", learning_rate=config.learning_rate, local_steps=lam)
    result = replay(rule, problem, traces, seeds=seeds, noise=config.noise, record_every=1,
                    record_paths=False)
    mean_time = result.record_time.mean(axis=0).astype(np.float32)  # the simulator's
    np.testing.assert_array_equal(mean_time, data["mean_time"][0, :commits + 1])
    close(result.loss.mean(axis=0), data["mean_loss"][0, :commits + 1])


def test_real_cluster_provenance():
    # Cell: η = learning_rates[3] (1e-3), seed 0, on the replayed log and under the
    # exponential assumption: two 1,500-commit schedules, one replay of two runs (~1 s);
    # the fitted model would need the bootstrapped fit of the log.
    study, data, config = committed("real_cluster")
    e, s = 3, 0
    log = read_log(config.log or example_log_path())
    n, lam, commits = log.n_workers, log.local_steps, config.commits
    mean = float(np.concatenate([log.durations(k) for k in range(n)]).mean()) / lam
    traces = [simulate_async(from_log(log, end="wrap"), local_steps=lam, commits=commits),
              simulate_async(Cluster(n, ComputeTime("exponential", mean=mean)),
                             local_steps=lam, commits=commits, rng=config.seed + s)]
    problem = quadratic(config.dim, config.condition)
    rule = make_rule("downpour", learning_rate=config.learning_rates[e], local_steps=lam)
    result = replay(rule, problem, traces, seeds=[config.seed + s] * 2, noise=config.noise,
                    record_every=commits)
    loss = np.where(result.diverged, np.inf, result.final_loss) / float(
        problem.loss(problem.start))
    rows = [study.MODELS.index(model) for model in ("replayed", "exponential")]
    close(loss, data["loss"][rows, e, s])


@pytest.mark.slow  # one of the two dearest recomputations (the others run quick)
def test_mnist_rules_provenance():
    # Cell: DOWNPOUR, n = 10, λ = 1, seed 0, the first 3 records (180 commits). The cheapest
    # there is: loading MNIST-5k (~2.5 s) and compiling the net's replay dominate.
    study, data, config = committed("mnist_rules")
    rule, n, lam, s, records = "downpour", 10, 1, 0, 3
    r, i, j = config.rules.index(rule), config.workers.index(n), config.windows.index(lam)
    every = config.gradient_steps // lam // config.records
    traces = study.traces_for(config, n, lam, records * every, [s])
    result = replay(study.rule_for(rule, config, lam), study.problem_for(config, n), traces,
                    seeds=[s], record_every=every, progress=False)
    np.testing.assert_array_equal(result.record_events, data["record_commits"][j, :records + 1])
    np.testing.assert_array_equal(result.record_time[0], data["record_time"][i, j, s,
                                                                              :records + 1])
    close(result.loss[0], data["loss"][r, i, j, s, :records + 1])
    close(result.metrics["accuracy"][0], data["accuracy"][r, i, j, s, :records + 1])


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_scaling_provenance():
    # Cell: the slow-worker cluster, mixed mode (2 groups of 4), n = 8, seed 0, the first 8
    # records (64 commits): one seed of a prefix (~2 s, mostly compiling the net's replay).
    study, data, config = committed("scaling")
    kind, mode, n, s, records = "slow workers", "mixed", 8, 0, 8
    c, m = study.CLUSTERS.index(kind), study.MODES.index(mode)
    w = config.workers.index(n)
    unit = study.unit_size(mode, n, config.group_size)
    every = config.evaluations // unit // config.records
    result = asynclab.run(
        config.dataset, study._rule(mode, n), cluster=study.cluster(config, kind, mode, n),
        commits=records * every, seeds=[s], learning_rate=config.learning_rate * unit,
        trace_per_seed=True, record_every=every, progress=False,
        problem_options={"model": config.model, "batch_size": config.batch_size})
    np.testing.assert_array_equal(result.record_time[0], data["time"][c, m, w, s, :records + 1])
    close(result.metrics["accuracy"][0], data["accuracy"][c, m, w, s, :records + 1])
    close(result.metrics["validation_loss"][0],
          data["validation_loss"][c, m, w, s, :records + 1])


def test_movers_provenance():
    # Cell: seed 0 with DynSGD: one 4,000-commit schedule and a replay of one seed (~1 s);
    # the figure replays 16 schedules with 4 rules.
    study, data, config = committed("movers")
    trace = simulate_async(study.cluster(config), commits=config.commits, rng=0)
    n = config.workers
    np.testing.assert_array_equal(np.bincount(trace.worker, minlength=n) / trace.n_events,
                                  data["commit_share"][0])
    r = list(config.rules).index("dynsgd")
    result = replay(study.rule(config, "dynsgd"), get_problem("beale"), trace, seeds=[0],
                    noise=config.noise, record_every=config.commits, record_paths=False)
    close(result.center_share[0], data["center_share"][r, 0])


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_semisync_provenance():
    # Cell: K of n with late work discarded, n = 8, seed 3: one 400 s schedule of rounds
    # and a replay of one seed (~1 s).
    study, data, config = committed("semisync")
    m, n, s = study.MODES.index("K-of-n"), 8, 3
    w = config.workers.index(n)
    rule, cluster, semisync = study.setting(config, "K-of-n", n)
    assert semisync.quorum == data["quorum"][w]
    result = asynclab.run("quadratic", rule, cluster=cluster, horizon=config.horizon,
                          seeds=[s], trace_per_seed=True, learning_rate=config.learning_rate,
                          noise=config.noise, semisync=semisync, progress=False,
                          problem_options={"dim": config.dim, "condition": config.condition})
    assert int(np.sum(result.staleness >= 0)) == data["updates"][m, w, s]
    close(result.time_to_target(config.target, metric="loss").seconds[0],
          data["seconds_to_target"][m, w, s])
    close(result.loss[0, -1], data["final_loss"][m, w, s])


def test_async_diloco_provenance():
    # Cell: DN + DyLU's whole schedule (the simulator alone, exact, ~0.1 s); its replay
    # is the slow tier's test below (compiling the net's replay takes ~8 s here).
    study, data, config = committed("async_diloco")
    variant = "dn+dylu"
    cluster = study._cluster(config)
    rule = study.rule_for(variant, config, cluster.workers)
    np.testing.assert_array_equal(rule.worker_steps, data[f"{variant}__windows"])
    trace = asynclab.engine.schedule(rule, cluster, horizon=data["horizon"], rng=0)
    assert trace.n_events == data[f"{variant}__events"]
    every = max(1, trace.n_events // config.records)
    np.testing.assert_array_equal(trace.time[every - 1::every][:config.records],
                                  data[f"{variant}__time"][1:config.records + 1])


@pytest.mark.slow  # compiling the MNIST replay: ~8 s
def test_async_diloco_replay_provenance():
    # Cell: DN + DyLU, seed 0, the first 3 records: one seed over the schedule's first
    # 3 × record_every commits.
    study, data, config = committed("async_diloco")
    variant, s, records = "dn+dylu", 0, 3
    cluster = study._cluster(config)
    rule = study.rule_for(variant, config, cluster.workers)
    trace = asynclab.engine.schedule(rule, cluster, horizon=data["horizon"], rng=0)
    every = max(1, trace.n_events // config.records)
    k = records * every
    prefix = trace._replace(time=trace.time[:k], worker=trace.worker[:k],
                            pulled_clock=trace.pulled_clock[:k], staleness=trace.staleness[:k])
    problem = get_problem(config.dataset, model=config.model, batch_size=config.batch_size,
                          workers=cluster.workers)
    result = replay(rule, problem, prefix, seeds=[s], record_every=every, progress=False)
    close(result.loss[0], data[f"{variant}__loss"][s, :records + 1])
    close(result.metrics["accuracy"][0], data[f"{variant}__accuracy"][s, :records + 1])


@pytest.mark.slow  # a study cell of 3 s or more; the cheaper cells run quick
def test_failures_provenance():
    # Cell: async DiLoCo at MTBF 50 s, seed 3: one 400 s schedule with Poisson churn (its
    # rejoin pulls replayed) and a replay of one seed (~1 s).
    study, data, config = committed("failures")
    r, f, s = study.RULES.index("async DiLoCo"), config.mtbf.index(50.0), 3
    name, hyperparameters, cluster = study.setting(config, "async DiLoCo", 50.0)
    result = asynclab.run("quadratic", name, cluster=cluster, horizon=config.horizon,
                          seeds=[s], trace_per_seed=True, noise=config.noise, progress=False,
                          problem_options={"dim": config.dim, "condition": config.condition},
                          **hyperparameters)
    assert result.goodput[0] == data["goodput"][r, f, s]
    assert result.goodput_per_device_second[0] == data["goodput_per_device_second"][r, f, s]
    close(result.time_to_target(config.target, metric="loss").seconds[0],
          data["seconds_to_target"][r, f, s])
    close(result.loss[0, -1], data["final_loss"][r, f, s])
