"""One parameterised suite over every rule of the catalogue, plus the identities and the
behavioural claims of the thesis, measured with fixed seeds.

The suite's shared checks are ``asynclab.rules.check``, the function a user runs on a
rule of their own: the tests here give it each rule's settings and pick the checks of
each tier.
"""

import numpy as np
import pytest

import asynclab
from asynclab import ConfigError
from asynclab.cluster import Cluster, ComputeTime, Straggler, simulate_async
from asynclab.engine import replay
from asynclab.problems import beale, quadratic
from asynclab.rules import RULES, adag, check, downpour, dynsgd, make_rule

# Per rule: hyperparameters for the convergence suite (n = 4 workers, no noise), chosen so
# that each converges; the commit budgets are the "stated number of commits".
SUITE = {
    "sequential_sgd": dict(workers=1),
    "downpour": dict(),
    "dynsgd": dict(budget_factor=4),  # steps scaled by 1/(τ+1): ~4× smaller at n = 4
    "agn": dict(local_steps=4),
    "adag": dict(local_steps=4, gamma=1e-2),
    "staleness_aware": dict(budget_factor=4),  # steps scaled by 1/τ
    "delay_adaptive": dict(),
    "dc_asgd": dict(),
    "gap_aware": dict(budget_factor=4),  # steps divided by the gap G ≥ 1
    "aeasgd": dict(local_steps=4, elasticity=5.0),
    "eamsgd": dict(local_steps=4, elasticity=5.0, momentum=0.5),
    "mixed": dict(group_size=2, local_steps=2),
    "synchronous_sgd": dict(),
    "model_averaging": dict(local_steps=4),
    "local_sgd": dict(local_steps=4),
    "post_local_sgd": dict(local_steps=4, warmup_rounds=20),
    "easgd": dict(local_steps=4, elasticity=2.0),
    "diloco": dict(local_steps=10, inner="adamw", learning_rate=0.01),
    # SGD inner: Adam at a constant step keeps oscillating around a noiseless minimum, and
    # without the averaging of synchronous rounds that stays above the target
    "async_diloco": dict(local_steps=10, inner="sgd", delay_period=4),
}
QUADRATIC = dict(problem="quadratic", problem_options={"dim": 10, "condition": 10.0},
                 learning_rate=0.02, commits=3000, target=1e-4)
ROSENBROCK = dict(problem="rosenbrock", learning_rate=5e-4, commits=12000, target=1e-2)


def test_the_suite_covers_every_rule():
    assert set(SUITE) == set(RULES)


def _check(name, checks, setting=QUADRATIC, **overrides):
    """``asynclab.rules.check`` of rule ``name`` with its suite settings on ``setting``."""
    options = dict(SUITE[name])
    kwargs = dict(workers=options.pop("workers", 4), local_steps=options.pop("local_steps", 1),
                  learning_rate=options.pop("learning_rate", setting["learning_rate"]),
                  commits=setting["commits"] * options.pop("budget_factor", 1),
                  target=setting["target"], problem=setting["problem"],
                  problem_options=setting.get("problem_options"))
    kwargs.update(overrides)
    return check(name, checks=checks, **kwargs, **options)


#: the rules whose per-rule properties the quick tier checks: a plain asynchronous rule,
#: one with per-weight state, a synchronous average and an outer optimizer; the slow tier
#: checks every rule
QUICK = ("downpour", "adag", "model_averaging", "diloco")


def _tiered(names):
    return [pytest.param(n, marks=() if n in QUICK else pytest.mark.slow) for n in names]


@pytest.mark.parametrize("name", _tiered(sorted(SUITE)))
# the quick tier runs QUICK's rules on the quadratic; every rule, and Rosenbrock's valley,
# are the slow tier's
@pytest.mark.parametrize("setting", [QUADRATIC, pytest.param(ROSENBROCK, marks=pytest.mark.slow)],
                         ids=["quadratic", "rosenbrock"])
def test_converges_without_noise(name, setting):
    """No divergence, and the final loss below the setting's target."""
    measured = _check(name, ["converges"], setting)
    assert list(measured) == ["converges"]


@pytest.mark.parametrize("name", _tiered(sorted(SUITE)))
def test_dtype_kept_deterministic_and_no_retrace_on_new_seeds_or_values(name):
    """float32 parameters and losses, the same bits for a seed run twice, and another
    seed or other traced values replay the same compiled program with other numbers."""
    measured = _check(name, ["deterministic", "dtype", "new_seed", "new_values"])
    assert list(measured) == ["deterministic", "dtype", "new_seed", "new_values"]


#: the synchronous rules whose local work is λ plain steps and whose synchronisation does
#: not read λ (docs/rules.md: an average, an elastic average, an outer step on the mean)
STEPWISE = ("synchronous_sgd", "model_averaging", "local_sgd", "easgd", "diloco")


@pytest.mark.slow  # two compilations per rule; tests/test_engine.py keeps model averaging's quick
@pytest.mark.parametrize("name", STEPWISE)
def test_a_step_by_step_replay_is_the_plain_replay(name):
    assert list(_check(name, ["stepwise"])) == ["stepwise"]


# ------------------------------------------------------------------------------ identities

ONE_WORKER_ASYNC = ["downpour", "dynsgd", "agn", "adag", "staleness_aware", "delay_adaptive",
                    "dc_asgd", "gap_aware", "mixed", "async_diloco"]
#: what makes a rule's degenerate case: groups of one; DiLoCo's plain outer step with SGD
DEGENERATE = {"mixed": {"group_size": 1},
              "async_diloco": {"inner": "sgd", "outer_learning_rate": 1.0,
                               "outer_momentum": 0.0}}


# the quick tier: a mixed cluster's; DOWNPOUR's is test_engine.py's (against SGD by hand)
@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "mixed" else pytest.mark.slow)
                                  for n in ONE_WORKER_ASYNC])
def test_asynchronous_rules_with_one_worker_and_one_step_are_sequential_sgd(name):
    """On Beale's function with σ² = 10, η = 2e-3, 300 commits and seeds 0 and 1, the
    centre's path is sequential SGD's to 1e-5."""
    measured = check(name, checks=["sequential"], sequential_options=DEGENERATE.get(name))
    assert list(measured) == ["sequential"]


def _trace(n=4, commits=400, local_steps=1, seed=0):
    return simulate_async(Cluster(n), local_steps=local_steps, commits=commits, rng=seed)


def test_agn_with_one_local_step_is_downpour():
    trace = _trace()
    a = replay(make_rule("agn", learning_rate=2e-3), beale(), trace, seeds=[0, 1], noise=10.0)
    b = replay(downpour(2e-3), beale(), trace, seeds=[0, 1], noise=10.0)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-6, atol=1e-6)


@pytest.mark.slow  # a reduction between two rules; the quick tier keeps AGN's to DOWNPOUR
def test_adag_with_infinite_gamma_is_agn():
    trace = _trace(local_steps=3)
    a = replay(adag(2e-3, 3, gamma=1e30), beale(), trace, seeds=[0, 1], noise=10.0)
    b = replay(make_rule("agn", learning_rate=2e-3, local_steps=3), beale(), trace,
               seeds=[0, 1], noise=10.0)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-6, atol=1e-6)
    c = replay(adag(2e-3, 3, gamma=1e-4), beale(), trace, seeds=[0, 1], noise=10.0)
    assert not np.allclose(c.final_params, b.final_params, atol=1e-3)  # γ matters


@pytest.mark.slow  # a reduction between two rules; the quick tier keeps AGN's to DOWNPOUR
def test_eamsgd_with_zero_momentum_is_asynchronous_easgd():
    trace = _trace(local_steps=4)
    kwargs = dict(seeds=[0], noise=1.0)
    a = replay(make_rule("eamsgd", learning_rate=1e-3, local_steps=4, momentum=0.0), beale(),
               trace, **kwargs)
    b = replay(make_rule("aeasgd", learning_rate=1e-3, local_steps=4), beale(), trace, **kwargs)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-6, atol=1e-6)


@pytest.mark.slow  # a reduction between two rules; the quick tier keeps AGN's to DOWNPOUR
def test_diloco_with_plain_outer_step_is_model_averaging():
    kwargs = dict(workers=4, commits=30, local_steps=5, seeds=[0, 1], noise=10.0,
                  learning_rate=1e-3, init="random_per_worker")
    a = asynclab.run("beale", "diloco", inner="sgd", outer_learning_rate=1.0,
                     outer_momentum=0.0, **kwargs)
    b = asynclab.run("beale", "model_averaging", **kwargs)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # a reduction between two rules; the quick tier keeps AGN's to DOWNPOUR
def test_diloco_with_one_step_and_sgd_is_synchronous_sgd():
    kwargs = dict(workers=4, commits=100, seeds=[0, 1], noise=10.0, learning_rate=1e-3)
    a = asynclab.run("beale", "diloco", inner="sgd", outer_learning_rate=1.0,
                     outer_momentum=0.0, local_steps=1, **kwargs)
    b = asynclab.run("beale", "synchronous_sgd", **kwargs)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # a reduction between two rules; the quick tier keeps AGN's to DOWNPOUR
def test_local_sgd_is_model_averaging_and_post_local_starts_synchronous():
    kwargs = dict(workers=4, commits=30, local_steps=5, seeds=[0], noise=10.0)
    a = asynclab.run("beale", "local_sgd", **kwargs)
    b = asynclab.run("beale", "model_averaging", **kwargs)
    np.testing.assert_allclose(a.center_path, b.center_path, rtol=1e-6, atol=1e-6)
    # post-local: the first warm-up rounds are synchronous SGD, then rounds of λ steps
    post = asynclab.run("beale", "post_local_sgd", warmup_rounds=10, **kwargs)
    sync = asynclab.run("beale", "synchronous_sgd", workers=4, commits=10, seeds=[0],
                        noise=10.0)
    np.testing.assert_allclose(post.center_path[0, 1:11], sync.center_path[0, 1:11],
                               rtol=1e-5, atol=1e-6)
    rounds = np.diff(post.time[0])
    assert rounds[12:].mean() > 3 * rounds[:9].mean()  # later rounds take ~λ× longer


@pytest.mark.slow  # one rule's option; the quick tier keeps EASGD's rules through QUICK's
def test_easgd_early_stop_skips_local_work_at_equilibrium():
    """The thesis's test ‖η g‖ − ‖α (θᵏ − θ̃)‖ < η stops a round's local work."""
    import jax
    import jax.numpy as jnp

    from asynclab.problems import stochastic_gradient

    rule = make_rule("easgd", learning_rate=1e-3, local_steps=30, elasticity=5.0,
                     early_stop=True)
    gradient = stochastic_gradient(quadratic(dim=2, condition=1.0))  # g = θ
    server = rule.init_server(jnp.zeros(2))
    key = jax.random.key(0)
    # ‖ηg‖ = 1e-3·0.1 is tiny, the elastic pull α‖θ − θ̃‖ = 5e-3·0.1: at equilibrium.
    near = rule.init_worker(jnp.array([0.1, 0.0]), server)
    after = rule.local(near, gradient, key, 0)
    np.testing.assert_array_equal(after.params, near.params)  # no step taken
    assert int(after.steps) == 30  # the step counter (noise index) still moves on
    # a large gradient and no elastic pull: all 30 steps are taken, as without the test
    far = rule.init_worker(jnp.array([2000.0, 0.0]), server._replace(center=jnp.array(
        [2000.0, 0.0])))
    after = rule.local(far, gradient, key, 0)
    assert int(after.steps) == 30
    np.testing.assert_allclose(after.params[0], 2000.0 * (1 - 1e-3) ** 30, rtol=1e-5)
    # in a run, the test changes the dynamics (thesis settings, n = 5, λ = 30)
    kwargs = dict(workers=5, commits=100, local_steps=30, seeds=[0], learning_rate=1e-4,
                  init="random_per_worker", elasticity=5.0)
    free = asynclab.run("beale", "easgd", **kwargs)
    stopped = asynclab.run("beale", "easgd", early_stop=True, **kwargs)
    assert not np.allclose(free.final_params, stopped.final_params, atol=1e-3)
    assert np.all(np.isfinite(stopped.final_params))


# ------------------------------------------------------------------------------ behaviour


def test_adag_absorbs_a_stragglers_stale_update_on_beale():
    """Thesis Fig. 1.5 as a measurement: worker 0 is delayed 40 s at its first step, so its
    gradient from the start point lands ~100 commits late. DOWNPOUR applies it in full;
    ADAG scales it by the distance the centre has moved since that worker pulled."""
    n_seeds = 16
    cluster = Cluster(4, ComputeTime("exponential"),
                      stragglers=(Straggler(worker=0, delay=40.0, at_step=0),))
    traces = [simulate_async(cluster, commits=300, rng=s) for s in range(n_seeds)]
    kwargs = dict(seeds=range(n_seeds), noise=10.0, record_every=1)
    down = replay(downpour(5e-3), beale(), traces, **kwargs)
    ada = replay(adag(5e-3, gamma=1e-2), beale(), traces, **kwargs)
    jumps = {}
    for name, result in (("downpour", down), ("adag", ada)):
        moves = []
        for s, trace in enumerate(traces):
            t = int(np.argmax(trace.staleness))  # the straggler's commit
            assert trace.worker[t] == 0 and trace.staleness[t] > 50
            moves.append(np.linalg.norm(result.center_path[s, t + 1] - result.center_path[s, t]))
        jumps[name] = np.array(moves)
    assert np.all(jumps["downpour"] > 0.5)   # thrown: −η∇L(θ̃_{t−τ}) ≈ 0.9 long
    assert np.all(jumps["adag"] < 0.05)      # absorbed
    distance = {name: np.linalg.norm(r.final_params - beale().global_minimum, axis=1)
                for name, r in (("downpour", down), ("adag", ada))}
    assert distance["adag"].mean() < distance["downpour"].mean()


@pytest.mark.slow  # a comparison of three rules; the quick tier keeps ADAG's against DOWNPOUR above
def test_dynsgd_and_adag_stay_finite_where_downpour_diverges():
    """n = 16 asynchronous workers, noisy quadratic (σ² = 1), η = 0.1."""
    trace = simulate_async(Cluster(16), commits=5000, rng=0)
    problem = quadratic(dim=10, condition=10.0)
    kwargs = dict(seeds=range(4), noise=1.0)
    assert np.all(replay(downpour(0.1), problem, trace, **kwargs).diverged)
    for rule in (dynsgd(0.1), adag(0.1, gamma=1e-4), adag(0.1, gamma=1e-2)):
        result = replay(rule, problem, trace, **kwargs)
        assert not np.any(result.diverged), rule.name
        assert np.all(result.final_loss < 1.0)


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "name, params, word",
    [
        ("easgd", {"elasticity": 0.0}, "elasticity"),
        ("aeasgd", {"elasticity": -1.0}, "elasticity"),
        ("adag", {"gamma": 0.0}, "gamma"),
        ("adag", {"gamma": -1e-4}, "gamma"),
        ("eamsgd", {"momentum": 1.0}, "momentum"),
        ("downpour", {"server_momentum": 1.5}, "server_momentum"),
        ("downpour", {"worker_momentum": -1.0}, "worker_momentum"),
        ("dc_asgd", {"kappa": -0.1}, "kappa"),
        ("gap_aware", {"decay": 1.0}, "decay"),
        ("diloco", {"inner": "lbfgs"}, "inner"),
        ("agn", {"inner": "adamw"}, "inner"),
        ("adag", {"inner": "adam", "worker_momentum": 0.9}, "worker_momentum"),
        ("diloco", {"outer_momentum": 1.0}, "outer_momentum"),
        ("post_local_sgd", {"warmup_rounds": -1}, "warmup_rounds"),
        ("mixed", {"between": "easgd"}, "between"),
        ("downpour", {"gamma": 1.0}, "gamma"),
        ("synchronous_sgd", {"local_steps": 3}, "local_steps"),
    ],
)
def test_bad_hyperparameter_names_rule_and_parameter(name, params, word):
    with pytest.raises(ConfigError, match=word) as error:
        make_rule(name, learning_rate=0.01, **params)
    assert name in str(error.value)


@pytest.mark.parametrize("name", _tiered(sorted(SUITE)))
@pytest.mark.parametrize("dtype", ["bfloat16", pytest.param("float16", marks=pytest.mark.slow)])
def test_rule_functions_keep_the_parameter_dtype(name, dtype):
    """Local work and the exchange keep low-precision parameters in their dtype: the
    centre, the workers' parameters and, where a worker stores it, the pulled centre."""
    options = {k: v for k, v in SUITE[name].items() if k not in ("workers", "budget_factor")}
    measured = check(name, checks=["low_precision"], dtype=dtype,
                     learning_rate=options.pop("learning_rate", 0.01),
                     local_steps=options.pop("local_steps", None), **options)
    assert list(measured) == ["low_precision"]


@pytest.mark.parametrize("name", [n for n in sorted(RULES) if "inner" in RULES[n].parameters])
def test_every_listed_inner_optimizer_builds_and_no_other(name):
    from asynclab.rules import inner_optimizers

    options = {k: v for k, v in SUITE[name].items()
               if k not in ("workers", "budget_factor", "inner")}
    options.setdefault("learning_rate", 0.01)
    if name == "delay_adaptive":
        options["workers"] = 4
    listed = inner_optimizers(name)
    assert RULES[name].defaults["inner"] in listed
    for inner in listed:
        assert make_rule(name, inner=inner, **options) is not None
    with pytest.raises(ConfigError, match="inner must be one of"):
        make_rule(name, inner="rmsprop", **options)
