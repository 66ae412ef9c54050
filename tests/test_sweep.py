"""Hyperparameters as traced values, declared rules, and ``asynclab.sweep``."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import asynclab
from asynclab import ConfigError
from asynclab.cli import main
from asynclab.engine import Result, _compiled, best_point, scores
from asynclab.problems import quadratic
from asynclab.rules import RULES, downpour, make_rule

SMALL = dict(workers=4, commits=200, noise=1.0, problem_options={"dim": 5, "condition": 4.0})


def _fresh_problem():
    # a new Problem object: compiled replays are cached per problem, so counting starts clean
    return quadratic(dim=5, condition=4.0)._replace()


# ------------------------------------------------------------------------ compile counts


def test_sweep_compiles_once_and_new_learning_rates_do_not_recompile():
    problem = _fresh_problem()
    before = dict(_compiled.TRACE_COUNT)
    # 3 x 4 points x 2 seeds = 24 pairs in calls of 5: five calls, the last one padded
    result = asynclab.sweep(problem, "downpour", grid={"learning_rate": [0.01, 0.02, 0.03],
                                                       "server_momentum": [-0.3, 0, 0.3, 0.6]},
                            workers=4, commits=100, seeds=[0, 1], noise=1.0, runs_per_call=5)
    assert result.loss.shape[:3] == (3, 4, 2)
    assert _compiled.TRACE_COUNT["chunk"] - before["chunk"] == 1
    assert _compiled.TRACE_COUNT["initial"] - before["initial"] == 1

    first = asynclab.run(problem, "downpour", workers=4, commits=100, seeds=[0, 1, 2],
                         learning_rate=0.01, noise=1.0)
    traced = dict(_compiled.TRACE_COUNT)
    second = asynclab.run(problem, "downpour", workers=4, commits=100, seeds=[0, 1, 2],
                          learning_rate=0.02, noise=1.0)
    assert _compiled.TRACE_COUNT == traced  # another value, the same compiled replay
    assert not np.array_equal(first.final_params, second.final_params)

    # server momentum given adds the server's previous centre: a new program, once; its
    # values (0.0 included) share it
    for mu in (0.4, 0.0, 0.7):
        asynclab.run(problem, "downpour", workers=4, commits=100, seeds=[0, 1, 2],
                     learning_rate=0.02, server_momentum=mu, noise=1.0)
    assert _compiled.TRACE_COUNT["chunk"] - traced["chunk"] == 1


def test_a_static_hyperparameter_does_compile_again():
    problem = _fresh_problem()
    asynclab.run(problem, "agn", workers=2, commits=20, local_steps=2, learning_rate=0.01)
    before = _compiled.TRACE_COUNT["chunk"]
    asynclab.run(problem, "agn", workers=2, commits=20, local_steps=3, learning_rate=0.01)
    assert _compiled.TRACE_COUNT["chunk"] == before + 1


# ------------------------------------------------------------------------ sweep = runs


def test_every_sweep_point_is_the_run_with_those_values():
    grid = {"learning_rate": [0.01, 0.03], "server_momentum": [-0.2, 0.0, 0.5]}
    result = asynclab.sweep("quadratic", "downpour", grid=grid, seeds=[3, 4], **SMALL)
    assert result.loss.shape == (2, 3, 2, result.record_events.size)
    assert result.final_params.shape == (2, 3, 2, 5)
    assert result.diverged_at.shape == (2, 3, 2)
    for i, lr in enumerate(grid["learning_rate"]):
        for j, mu in enumerate(grid["server_momentum"]):
            one = asynclab.run("quadratic", "downpour", seeds=[3, 4], learning_rate=lr,
                               server_momentum=mu, **SMALL)
            # the same arithmetic; XLA may vectorise another batch size differently, which
            # can move the last bit, so compare to float32 rounding
            np.testing.assert_allclose(result.loss[i, j], one.loss, rtol=2e-6, atol=0)
            np.testing.assert_allclose(result.final_params[i, j], one.final_params,
                                       rtol=2e-6, atol=1e-7)


@pytest.mark.slow  # two features the quick tier checks apart: sweeps and per-seed traces
def test_sweep_of_a_synchronous_rule_with_trace_per_seed():
    grid = {"elasticity": [0.5, 2.0]}
    kwargs = dict(workers=3, commits=30, noise=1.0, local_steps=2, learning_rate=0.02,
                  trace_per_seed=True, compute="lognormal")
    result = asynclab.sweep("beale", "easgd", grid=grid, seeds=[0, 1], **kwargs)
    assert result.time.shape[0] == 2  # one schedule per seed, shared by the points
    for i, rho in enumerate(grid["elasticity"]):
        one = asynclab.run("beale", "easgd", seeds=[0, 1], elasticity=rho, **kwargs)
        np.testing.assert_allclose(result.final_params[i], one.final_params, rtol=2e-6,
                                   atol=1e-7)
        np.testing.assert_array_equal(result.time, one.time)


def test_sweep_saves_and_loads_with_its_grid(tmp_path):
    grid = {"server_momentum": [0.0, 0.5], "learning_rate": [0.02, 0.01, 0.005]}
    result = asynclab.sweep("quadratic", "downpour", grid=grid, seeds=[0], **SMALL)
    loaded = Result.load(result.save(tmp_path / "sweep.npz"))
    assert list(loaded.grid) == ["server_momentum", "learning_rate"]  # axis order kept
    np.testing.assert_array_equal(loaded.grid["learning_rate"], grid["learning_rate"])
    assert loaded.grid_shape == (2, 3)
    np.testing.assert_array_equal(loaded.loss, result.loss)
    assert loaded.final_loss.shape == (2, 3, 1)


@pytest.mark.parametrize("grid, field", [
    ({"local_steps": [1, 2]}, "local_steps"),          # static: decides the shape
    ({"gamma": [1.0]}, "gamma"),                       # not a hyperparameter of downpour
    ({"learning_rate": [0.01, -0.1]}, "learning_rate"),  # outside its domain
    ({"server_momentum": [0.0, 1.0]}, "server_momentum"),
    ({"learning_rate": []}, "learning_rate"),
    ({"learning_rate": "fast"}, "learning_rate"),
])
def test_bad_grids_are_refused_naming_the_field(grid, field):
    with pytest.raises(ConfigError, match=field):
        asynclab.sweep("quadratic", "downpour", grid=grid, **SMALL)


def test_a_grid_needs_values():
    with pytest.raises(ConfigError, match="grid"):
        asynclab.sweep("quadratic", "downpour", grid={}, **SMALL)


# ------------------------------------------------------------------------ scores


def _fake(loss, diverged_at, final_params):
    loss = np.asarray(loss, np.float32)
    return Result(config={"grid": [["learning_rate", [0.1, 0.2]]]}, seeds=np.arange(2),
                  time=np.arange(1, 4, dtype=float)[None], worker=np.zeros((1, 3), np.int32),
                  staleness=np.zeros((1, 3), np.int32), record_events=np.arange(4),
                  loss=loss, final_params=np.asarray(final_params, np.float32),
                  diverged_at=np.asarray(diverged_at))


def test_scores_by_hand():
    nan = np.nan
    loss = [[[4.0, 2.0, 0.5, 0.1], [4.0, 3.0, 2.0, 0.9]],   # point 0: target 1 at 2 and 3
            [[4.0, 0.5, nan, nan], [4.0, 0.8, 0.4, 0.2]]]  # point 1: seed 0 diverged at 2
    result = _fake(loss, [[-1, -1], [2, -1]], np.zeros((2, 2, 2)))
    np.testing.assert_allclose(scores(result, "final_loss"), [(0.1 + 0.9) / 2, np.inf],
                               rtol=1e-6)
    np.testing.assert_allclose(scores(result, "commits_to_target", target=1.0), [2.5, 1.0])
    np.testing.assert_allclose(scores(result, "success_rate", target=0.5), [0.5, 0.5])
    best = best_point(result, scores(result, "commits_to_target", target=1.0),
                      "commits_to_target")
    assert best == {"learning_rate": 0.2, "score": 1.0}
    with pytest.raises(ConfigError, match="target"):
        scores(result, "commits_to_target")
    with pytest.raises(ConfigError, match="no validation accuracy"):
        scores(result, "final_accuracy")


def test_accuracy_scores_by_hand():
    nan = np.nan
    # records at simulated times 0, 1, 2, 3 (events 0..3 at times 1, 2, 3 after the start)
    accuracy = [[[0.1, 0.5, 0.7, 0.9], [0.1, 0.2, 0.6, 0.8]],   # point 0: 0.6 at t=2 and 2
                [[0.1, 0.7, nan, nan], [0.1, 0.3, 0.4, 0.5]]]  # point 1: seed 0 diverged
    result = _fake(np.ones((2, 2, 4)), [[-1, -1], [2, -1]], np.zeros((2, 2, 2)))
    result.metrics = {"accuracy": np.asarray(accuracy, np.float32)}
    # a diverged seed counts 0
    np.testing.assert_allclose(scores(result, "final_accuracy"), [0.85, 0.25], rtol=1e-6)
    # seconds: point 0 reaches 0.6 at t = 2 (both seeds); point 1 seed 0 at t = 1, seed 1
    # never: the median of (1, inf) is inf
    np.testing.assert_allclose(scores(result, "time_to_accuracy", target=0.6), [2.0, np.inf])
    assert best_point(result, scores(result, "final_accuracy"), "final_accuracy") == {
        "learning_rate": 0.1, "score": pytest.approx(0.85)}
    with pytest.raises(ConfigError, match=r"\[0, 1\]|target"):
        scores(result, "time_to_accuracy", target=1.5)
    with pytest.raises(ConfigError, match="takes no target"):
        scores(result, "final_accuracy", target=0.5)


# ------------------------------------------------------------------------ traced rules


def test_rules_are_vmappable_over_their_traced_hyperparameters():
    """jax.vmap over (η, μ) of one exchange equals building each rule by hand."""
    rates = jnp.asarray([0.1, 0.2, 0.3])
    momenta = jnp.asarray([-0.5, 0.0, 0.5])
    center = jnp.asarray([1.0, -2.0])

    def one(lr, mu):
        rule = downpour(lr, server_momentum=mu)
        server = rule.init_server(center)
        worker = rule.init_worker(None, server)
        worker = rule.local(worker, lambda p, k, w, s: 2.0 * p, jax.random.key(0), 0)
        server, worker, _ = rule.exchange(server, worker)
        worker = rule.local(worker, lambda p, k, w, s: 2.0 * p, jax.random.key(0), 0)
        server, _, _ = rule.exchange(server, worker)
        return server.center

    batched = jax.vmap(one)(rates, momenta)
    for i in range(3):
        # numpy oracle: θ₁ = θ₀(1 − 2η); θ₂ = θ₁(1 − 2η) + μ(θ₁ − θ₀)
        lr, mu, c0 = float(rates[i]), float(momenta[i]), np.asarray(center)
        c1 = c0 * (1 - 2 * lr)
        c2 = c1 * (1 - 2 * lr) + mu * (c1 - c0)
        np.testing.assert_allclose(batched[i], c2, rtol=1e-6)


def test_concrete_array_values_are_still_checked():
    with pytest.raises(ConfigError, match="downpour: learning_rate"):
        make_rule("downpour", learning_rate=jnp.float32(-0.1))
    with pytest.raises(ConfigError, match="easgd: elasticity"):
        make_rule("easgd", learning_rate=0.1, elasticity=np.float32(0.0))
    rule = make_rule("downpour", learning_rate=jnp.float32(0.25))
    assert rule.values["learning_rate"] == 0.25


def test_declarations_split_static_from_traced():
    for info in RULES.values():
        assert info.kind in ("sync", "async")
        assert "learning_rate" in info.traced
        for h in info.hyperparameters:
            if not h.required and not h.static:  # traced: a real default, or an option
                assert isinstance(h.default, float) or (
                    h.default is None and h.adds_state), (info.name, h.name)
        rule = info.factory(**({"workers": 4} if info.name == "delay_adaptive" else {}),
                            learning_rate=0.01) if info.name != "diloco" else info.factory()
        options = tuple(info.state_options)
        assert rule.structure == (info.name, tuple((k, rule.hyperparameters[k])
                                                   for k in info.static), options)
        assert set(rule.values) == set(info.traced) - set(options)
        assert rule.synchronous == info.synchronous
    assert RULES["mixed"].static == ("local_steps", "group_size", "between")
    assert make_rule("mixed", learning_rate=0.1, group_size=3).group_size == 3
    assert make_rule("post_local_sgd", learning_rate=0.1, warmup_rounds=7).warmup_rounds == 7


# ------------------------------------------------------------------------ CLI


@pytest.mark.slow  # the command-line twin of the quick tier's Python sweeps
def test_cli_sweep_json_reports_grid_points_and_best(capsys):
    argv = ["sweep", "--rule", "downpour", "--problem", "quadratic", "--dim", "5",
            "--grid", "learning_rate=0.003,0.03", "--grid", "server_momentum=-0.3,0,0.5",
            "--workers", "4", "--commits", "150", "--seeds", "0:2", "--noise", "1", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["grid"] == {"learning_rate": [0.003, 0.03], "server_momentum": [-0.3, 0.0, 0.5]}
    assert len(out["points"]) == 6
    # independent check: the best point by mean final loss, from separate runs
    finals = {}
    for lr in (0.003, 0.03):
        for mu in (-0.3, 0.0, 0.5):
            r = asynclab.run("quadratic", "downpour", workers=4, commits=150, seeds=[0, 1],
                             noise=1.0, learning_rate=lr, server_momentum=mu,
                             problem_options={"dim": 5})
            finals[(lr, mu)] = float(np.mean(r.final_loss))
    lr, mu = min(finals, key=finals.get)
    assert (out["best"]["learning_rate"], out["best"]["server_momentum"]) == (lr, mu)
    assert out["best"]["score"] == pytest.approx(finals[(lr, mu)], rel=1e-6)


@pytest.mark.slow  # the command line's sweep runs quick on a surface
def test_cli_sweep_takes_a_nets_model_batch_and_shards_and_ranks_by_accuracy(capsys):
    # the flags mean in sweep what they mean in run: the model, the mini-batch, the shards
    argv = ["sweep", "--problem", "digits", "--model", "mlp:8", "--batch-size", "4",
            "--shards", "class", "--grid", "learning_rate=0.01,0.05", "--workers", "2",
            "--commits", "30", "--seeds", "0:2", "--score", "final_accuracy", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    options = {"model": "mlp:8", "batch_size": 4, "shards": "class"}
    swept = asynclab.sweep("digits", "downpour", grid={"learning_rate": [0.01, 0.05]},
                           workers=2, commits=30, seeds=[0, 1], problem_options=options,
                           progress=False)
    want = scores(swept, "final_accuracy")
    assert [p["score"] for p in out["points"]] == pytest.approx(want.tolist())
    assert out["lower_is_better"] is False
    assert out["best"]["learning_rate"] == [0.01, 0.05][int(np.argmax(want))]
    assert swept.final_params["layer0"]["w"].shape[-1] == 8


def test_cli_sweep_refuses_a_static_grid_key(capsys):
    assert main(["sweep", "--rule", "agn", "--grid", "local_steps=1,2", "--commits", "10"]) == 2
    assert "static" in capsys.readouterr().err


def test_replay_grid_sweeps_given_traces():
    from asynclab.cluster import Cluster, simulate_async
    from asynclab.engine import replay, replay_grid

    problem = quadratic(dim=5, condition=4.0)
    traces = [simulate_async(Cluster(3), local_steps=2, commits=60, rng=s) for s in (0, 1)]
    rule = make_rule("adag", learning_rate=0.02, local_steps=2)
    result = replay_grid(rule, problem, traces, grid={"gamma": [1e-3, 1e-1]}, seeds=[0, 1],
                         noise=1.0)
    assert result.loss.shape[:2] == (2, 2)
    assert result.config["grid"] == [["gamma", [1e-3, 1e-1]]]
    for i, gamma in enumerate((1e-3, 1e-1)):
        one = replay(make_rule("adag", learning_rate=0.02, local_steps=2, gamma=gamma),
                     problem, traces, seeds=[0, 1], noise=1.0)
        np.testing.assert_allclose(result.loss[i], one.loss, rtol=2e-6, atol=0)
    with pytest.raises(ConfigError, match="norm"):
        replay_grid(rule, problem, traces, grid={"norm": [0, 1]}, seeds=[0, 1])


def test_a_new_noise_variance_reuses_the_compiled_replay_and_scales_the_noise():
    """σ² is a traced value: another σ² replays without tracing again, and on a quadratic
    (gradient and DOWNPOUR both linear) the centre moves by σ times a fixed noise
    response: x(σ² = 4) − x(0) = 2 (x(σ² = 1) − x(0))."""
    problem = _fresh_problem()
    kw = dict(workers=4, commits=200, seeds=[0, 1], learning_rate=0.05)
    clean = asynclab.run(problem, "downpour", noise=0.0, **kw).final_params
    one = asynclab.run(problem, "downpour", noise=1.0, **kw).final_params
    before = dict(_compiled.TRACE_COUNT)
    four = asynclab.run(problem, "downpour", noise=4.0, **kw).final_params
    assert _compiled.TRACE_COUNT == before
    assert np.abs(one - clean).max() > 1e-3  # the noise does move the centre
    np.testing.assert_allclose(four - clean, 2 * (one - clean), rtol=1e-4, atol=1e-5)
    # the same numbers as a compilation of its own (a problem object nothing shares)
    alone = asynclab.run(_fresh_problem(), "downpour", noise=4.0, **kw).final_params
    np.testing.assert_array_equal(four, alone)
