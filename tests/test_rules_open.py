"""Rules declare what they can do, and a user's own rule runs wherever a shipped one runs.

The user's rules live in ``tests/user_rules.py``, declared with public names only; a
fixture imports that module as a user would and drops its declarations afterwards, so
the rest of the suite sees the catalogue alone. Expectations come from the rules'
formulas (``docs/rules.md``): a rule whose pull resets the worker to the centre takes
stale work; a staleness power of 0 is DOWNPOUR and of 1 is DynSGD; a damping of 1 is
model averaging.
"""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from children import start

import asynclab
from asynclab import ConfigError
from asynclab.cluster import SemiSync, round_robin_trace, simulate_sync
from asynclab.engine import build_rule, replay
from asynclab.problems import beale, quadratic
from asynclab.rules import (
    MOMENTA,
    RULES,
    SERVER_MOMENTUM,
    WORKER_MOMENTUM,
    Capabilities,
    Rule,
    check,
    declare,
    make_rule,
    parts,
)

SCRIPTS = Path(__file__).parent / "backend_scripts"
USER_RULES = ("staleness_power", "damped_averaging")

# ------------------------------------------------------------------ the catalogue's answers

#: docs/rules.md: the workers of these rules take the centre at every pull (θᵏ ← θ̃);
#: sequential SGD keeps its parameters, the elastic rules pull elastically
RESETS = {"downpour", "dynsgd", "agn", "adag", "staleness_aware", "delay_adaptive",
          "dc_asgd", "gap_aware", "mixed", "async_diloco", "synchronous_sgd",
          "model_averaging", "local_sgd", "post_local_sgd", "diloco"}
#: synchronous rules whose local work is λ plain steps and whose synchronisation does not
#: read λ (an average, an elastic average, an outer step on the mean); post-local SGD's
#: warm-up changes its local work by round
STEPWISE = {"synchronous_sgd", "model_averaging", "local_sgd", "easgd", "diloco"}
BOTH = {"worker_momentum": "a momentum buffer on every worker",
        "server_momentum": "the previous centre at the server"}
WORKER_ONLY = {"worker_momentum": "a momentum buffer on every worker"}
#: the options that add state, per rule (docs/rules.md: "worker_momentum", "server_momentum")
STATE = {"sequential_sgd": WORKER_ONLY, "downpour": BOTH, "dynsgd": BOTH, "agn": BOTH,
         "adag": BOTH, "staleness_aware": BOTH, "delay_adaptive": BOTH, "dc_asgd": BOTH,
         "gap_aware": BOTH, "aeasgd": WORKER_ONLY, "eamsgd": {}, "mixed": BOTH,
         "model_averaging": BOTH,
         "synchronous_sgd": {"server_momentum": "the previous centre at the server"},
         "local_sgd": BOTH, "post_local_sgd": BOTH, "easgd": WORKER_ONLY, "diloco": {},
         "async_diloco": {}}


def _catalogue_rule(name: str, **options) -> Rule:
    if name == "delay_adaptive":
        options.setdefault("workers", 4)
    return make_rule(name, **({} if "diloco" in name else {"learning_rate": 0.1}), **options)


def test_every_catalogue_rule_says_what_it_can_do():
    assert set(STATE) == set(RULES) - set(USER_RULES)
    for name in STATE:
        capabilities = _catalogue_rule(name).capabilities
        assert capabilities.resets == (name in RESETS), name
        assert capabilities.stepwise == (name in STEPWISE), name
        assert dict(capabilities.state) == STATE[name], name
        assert RULES[name].state_options == STATE[name], name
    # the public texts are the ones the catalogue declares
    assert dict(MOMENTA) == BOTH
    assert (WORKER_MOMENTUM, SERVER_MOMENTUM) == (BOTH["worker_momentum"],
                                                  BOTH["server_momentum"])
    # the parts narrow a declared claim: EASGD's equilibrium test stops its local work
    assert not _catalogue_rule("easgd", early_stop=True).capabilities.stepwise
    # mixed's between rule brings no claim of its own
    assert not _catalogue_rule("mixed", between="agn").capabilities.stepwise


def test_a_rule_assembled_by_hand_answers_conservatively():
    sgd = optax.sgd(0.1)
    averaging = parts.synchronous(inner=sgd, local_steps=2, aggregate=parts.average_params,
                                  pull=parts.reset_to_center, hyperparameters={})
    assert averaging.name == "custom"
    assert averaging.capabilities == Capabilities(resets=True, stepwise=False)
    elastic = parts.synchronous(inner=sgd, local_steps=2, aggregate=parts.elastic_sum(0.1),
                                pull=parts.elastic_pull(0.1), hyperparameters={})
    assert elastic.capabilities == Capabilities()
    bare = averaging._replace(capabilities=Capabilities())  # as Rule(...) would build it
    assert bare.capabilities == Capabilities()
    # the engine asks the rule: a step-by-step replay needs a declaration to rebuild from,
    # stale late work needs workers that reset
    rounds = simulate_sync(asynclab.Cluster(3), local_steps=2, rounds=3, rng=0)
    with pytest.raises(ConfigError, match="rule.capabilities.stepwise"):
        replay(averaging, beale(), rounds, stepwise=True)
    stale = simulate_sync(asynclab.Cluster(3), local_steps=2, rounds=3, rng=0,
                          semisync=SemiSync(quorum=2, late="stale"))
    with pytest.raises(ConfigError, match="reset to the centre at a pull"):
        replay(elastic, beale(), stale)
    with pytest.raises(ConfigError, match="reset to the centre at a pull"):
        asynclab.run("beale", "easgd", workers=3, commits=3,
                     semisync=SemiSync(quorum=2, late="stale"))


# ------------------------------------------------------------------ a user's own rules


@pytest.fixture(scope="module")
def user_rules():
    """``tests/user_rules.py`` imported as a user would; its declarations dropped after."""
    before = dict(RULES)
    sys.modules.pop("user_rules", None)
    module = importlib.import_module("user_rules")
    yield module
    RULES.clear()
    RULES.update(before)
    sys.modules.pop("user_rules", None)


@pytest.fixture
def scratch():
    """Declarations made in a test are dropped after it."""
    before = dict(RULES)
    yield
    RULES.clear()
    RULES.update(before)


SMALL = dict(workers=4, commits=150, seeds=[0, 1], noise=1.0, learning_rate=0.05)


def test_a_users_rule_is_declared_once_with_public_names(user_rules):
    info = RULES["staleness_power"]
    assert info.factory is user_rules.staleness_power
    assert info.static == ("local_steps",) and info.traced == (
        "learning_rate", "power", "worker_momentum", "server_momentum")
    rule = user_rules.staleness_power(0.1)
    assert rule.name == "staleness_power"
    assert rule.structure == ("staleness_power", (("local_steps", 1),),
                              ("worker_momentum", "server_momentum"))
    assert rule.capabilities == Capabilities(resets=True, stepwise=False, state=MOMENTA)
    averaging = make_rule("damped_averaging", learning_rate=0.1, local_steps=3)
    assert averaging.capabilities.resets and averaging.capabilities.stepwise
    # the parts' checks name the rule without being told it
    with pytest.raises(ConfigError, match="staleness_power: power"):
        make_rule("staleness_power", learning_rate=0.1, power=-1.0)
    with pytest.raises(ConfigError, match="damped_averaging: learning_rate"):
        make_rule("damped_averaging", learning_rate=0.0)


def test_a_users_rule_runs_and_reduces_to_the_shipped_one(user_rules):
    """τ-scaled commits with p = 1 are DynSGD's on the same schedule, to float32 rounding
    of (τ + 1)^−1 against 1 / (τ + 1)."""
    problem = quadratic(dim=5, condition=4.0)
    ours = asynclab.run(problem, "staleness_power", power=1.0, **SMALL)
    dynsgd = asynclab.run(problem, "dynsgd", **SMALL)
    assert ours.config["rule"] == "staleness_power"
    np.testing.assert_allclose(ours.final_params, dynsgd.final_params, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours.loss, dynsgd.loss, rtol=1e-5, atol=1e-9)


def test_a_users_synchronous_rule_takes_stale_work(user_rules):
    """Damping 1 is model averaging, with late work counted stale too."""
    problem = quadratic(dim=5, condition=4.0)
    kwargs = dict(SMALL, commits=40, local_steps=2, semisync=SemiSync(quorum=3, late="stale"))
    ours = asynclab.run(problem, "damped_averaging", damping=1.0, **kwargs)
    averaging = asynclab.run(problem, "model_averaging", **kwargs)
    assert ours.config["semisync"]["late"] == "stale"
    np.testing.assert_allclose(ours.final_params, averaging.final_params, rtol=1e-5,
                               atol=1e-7)


@pytest.mark.slow  # five compiled replays
def test_a_users_rules_in_a_sweep_and_by_their_formulas(user_rules):
    """Over a grid of p, p = 0 is DOWNPOUR and p = 1 DynSGD; damping ½ moves the centre
    half as far as an average in a first round."""
    problem = quadratic(dim=5, condition=4.0)
    grid = asynclab.sweep(problem, "staleness_power", grid={"power": [0.0, 1.0]}, **SMALL)
    for point, shipped in enumerate(("downpour", "dynsgd")):
        want = asynclab.run(problem, shipped, **SMALL)
        np.testing.assert_allclose(grid.final_params[point], want.final_params, rtol=1e-5,
                                   atol=1e-7, err_msg=shipped)
    # with damping ½ the centre moves half as far in the first round (one step, no noise:
    # θ̃₁ − θ̃₀ = ½ (mean_k θᵏ − θ̃₀) = −½ η ∇L(θ̃₀), ∇L(θ) = h θ, θ̃₀ = 1)
    rounds = simulate_sync(asynclab.Cluster(4), local_steps=1, rounds=1, rng=0)
    rule = build_rule("damped_averaging", learning_rate=0.05, damping=0.5)
    first = replay(rule, problem, rounds, record_paths=True, record_every=1)
    h = np.geomspace(1.0, 4.0, 5)
    np.testing.assert_allclose(first.center_path[0, 1], 1 - 0.5 * 0.05 * h, rtol=1e-6)


def test_a_users_rule_runs_on_the_device_executor_in_process(user_rules):
    """One device, one worker: the replay's numbers (two devices: the slow tier)."""
    from asynclab.backends import run_pmap

    trace = round_robin_trace(1, 10)
    rule = build_rule("staleness_power", learning_rate=0.01)
    got = run_pmap(rule, beale(), trace, seed=1, noise=0.5).result
    want = replay(rule, beale(), trace, seeds=1, noise=0.5, record_every=1)
    np.testing.assert_allclose(got.final_params, want.final_params, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.loss, want.loss, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # a child process on two simulated devices, about 20 s
def test_a_users_rules_run_on_two_devices():
    child = start(SCRIPTS / "pmap_user_rules.py", 2, devices=2)
    try:
        out, err = child.communicate(timeout=300)
    except Exception:
        child.kill()
        raise
    reports = [json.loads(line[len("REPORT "):]) for line in out.splitlines()
               if line.startswith("REPORT ")]
    assert reports, err[-3000:]
    report = reports[0]
    assert report["devices"] == 2
    failures = [c for c in report["cases"] if not c["ok"]]
    assert not failures, failures
    assert {c["rule"] for c in report["cases"]} == set(USER_RULES)
    assert all(c["moved"] > 1e-2 for c in report["cases"])  # the runs did move


def test_the_command_line_lists_a_users_rule(user_rules, capsys):
    from asynclab.cli import main

    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines() if line and not line[0].isspace()]
    assert listed[-2:] == list(USER_RULES)  # declared after the catalogue
    assert "+power" not in out and "*local_steps=1, power=0.5, +worker_momentum" in out


@pytest.mark.slow  # the explorer draws two runs, about 10 s
def test_the_explorer_lists_a_users_rule(user_rules):
    from asynclab.notebook import Explorer

    explorer = Explorer("beale", "staleness_power", commits=200, seeds=2, noise=0.0,
                        straggler_delay=0.0, dpi=40)
    assert set(USER_RULES) <= set(explorer.controls["rule"].options)
    assert set(explorer.rule_controls) == {"power", "worker_momentum", "server_momentum"}
    assert explorer.result.config["rule"] == "staleness_power"
    explorer.rule_controls["power"].value = 1.0
    assert explorer.result.config["hyperparameters"]["power"] == 1.0


@pytest.mark.slow  # every check on both rules: about 20 s
def test_check_passes_on_a_users_rules(user_rules):
    assert "sequential" in check("staleness_power")
    measured = check("damped_averaging", local_steps=2)
    assert "stepwise" in measured and "sequential" not in measured


# ------------------------------------------------------------------ check fails clearly


def test_check_names_the_failing_check_and_what_it_measured(scratch):
    """Two broken rules: one climbs, one hands back float32 parameters."""

    @declare("async", "DOWNPOUR uphill", "a broken rule", static=("local_steps",))
    def uphill(learning_rate: float, local_steps: int = 1) -> Rule:
        c = parts.common(learning_rate, local_steps)
        return parts.reset_rule(c, parts.accumulated_step, _subtract)

    @declare("async", "DOWNPOUR in float32", "a broken rule", static=("local_steps",))
    def widened(learning_rate: float, local_steps: int = 1) -> Rule:
        c = parts.common(learning_rate, local_steps)
        return parts.reset_rule(c, lambda w: _float32(parts.accumulated_step(w)), _widen)

    with pytest.raises(ConfigError, match=r"rule uphill: check 'converges' failed: "
                                          r"(diverged at event \d+|final loss)"):
        check("uphill", checks=["converges"], commits=200)
    with pytest.raises(ConfigError, match=r"rule widened: check 'low_precision' failed: "
                                          r"bfloat16 parameters came back as .*float32"):
        check("widened", checks=["low_precision"])
    # what does not apply, or is not a check, is refused before any work
    with pytest.raises(ConfigError, match="'stepwise' does not apply"):
        check("widened", checks=["stepwise"])
    with pytest.raises(ConfigError, match="unknown check 'fast'"):
        check("widened", checks=["fast"])
    with pytest.raises(ConfigError, match="hand"):
        check(parts.asynchronous(inner=optax.sgd(0.1), local_steps=1,
                                 commit=parts.accumulated_step, apply=parts.add,
                                 pull=parts.reset_to_center, hyperparameters={}))


def _subtract(server, delta, worker, staleness):
    """θ̃ ← θ̃ − Δ: a step uphill."""
    return jax.tree.map(jnp.subtract, server.center, delta), jnp.float32(1), server.extra


def _float32(tree):
    return jax.tree.map(lambda x: x.astype(jnp.float32), tree)


def _widen(server, delta, worker, staleness):
    """θ̃ ← θ̃ + Δ in the wider dtype of the two."""
    return jax.tree.map(jnp.add, server.center, delta), jnp.float32(1), server.extra


@pytest.mark.slow  # four replays compiled
def test_check_finds_a_rule_that_is_not_sgd_alone_or_reads_its_window(scratch):
    """A DOWNPOUR that halves its commits is not sequential SGD with one worker; an
    average that divides the workers' steps by λ reads λ, so that replayed with λ = 1 per
    event it is another rule."""

    @declare("async", "DOWNPOUR halved", "a broken rule", static=("local_steps",))
    def halved(learning_rate: float, local_steps: int = 1) -> Rule:
        c = parts.common(learning_rate, local_steps)
        return parts.reset_rule(c, parts.accumulated_step, parts.staleness_scaled(
            lambda t: 0.5 + 0.0 * t))

    with pytest.raises(ConfigError, match=r"rule halved: check 'sequential' failed: .*"
                                          r"not sequential SGD's: it differs by up to"):
        check("halved")  # every check in order: the ones before it pass

    @declare("sync", "averaged steps over λ", "a broken rule", static=("local_steps",),
             stepwise=True)
    def per_step(learning_rate: float, local_steps: int = 1) -> Rule:
        c = parts.common(learning_rate, local_steps)

        def aggregate(server, worker):
            mean = parts.worker_mean(worker.params)
            return jax.tree.map(lambda t, m: t + (m - t) / c.local_steps, server.center,
                                mean), jnp.float32(1)

        return parts.synchronous(inner=c.inner, local_steps=c.local_steps,
                                 aggregate=aggregate, pull=parts.reset_to_center,
                                 hyperparameters=c.hyperparameters)

    with pytest.raises(ConfigError, match=r"rule per_step: check 'stepwise' failed: "
                                          r"replayed step by step \(λ = 3\)"):
        check("per_step", checks=["stepwise"])


# ------------------------------------------------------------------ declarations


def test_a_taken_name_is_refused_and_the_same_factory_again_replaces_it(scratch, tmp_path,
                                                                         monkeypatch):
    with pytest.raises(ConfigError, match="downpour: the name is taken by "
                                          "asynclab.rules._catalogue.downpour"):
        @declare("async", "mine", "me", static=("local_steps",))
        def downpour(learning_rate: float, local_steps: int = 1) -> Rule:
            raise AssertionError("never built")
    assert RULES["downpour"].factory is asynclab.rules.downpour

    # a module of one's own, run twice (a notebook cell again, a reload): the second
    # declaration replaces the first, and runs compute what the new body says
    source = textwrap.dedent('''
        from asynclab.rules import Rule, declare
        from asynclab.rules.parts import accumulated_step, common, reset_rule, staleness_scaled

        @declare("async", "DOWNPOUR with a scaled commit", "me", static=("local_steps",))
        def scaled(learning_rate: float, local_steps: int = 1) -> Rule:
            c = common(learning_rate, local_steps)
            return reset_rule(c, accumulated_step, staleness_scaled(lambda t: SCALE + 0 * t))
        ''')
    module = tmp_path / "my_rules.py"
    module.write_text("SCALE = 0.0\n" + source)  # the commit adds nothing
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_rules", None)
    mine = importlib.import_module("my_rules")
    kwargs = dict(workers=3, commits=60, seeds=[0], noise=1.0, learning_rate=0.01)
    start = beale().start
    np.testing.assert_array_equal(asynclab.run("beale", "scaled", **kwargs).final_params[0],
                                  start)
    module.write_text("SCALE = 1.0\n" + source)  # now it is DOWNPOUR's
    importlib.reload(mine)
    assert RULES["scaled"].factory is mine.scaled
    moved = asynclab.run("beale", "scaled", **kwargs).final_params[0]
    assert np.linalg.norm(moved - start) > 0.1  # the new body runs, not the old program
    sys.modules.pop("my_rules", None)


@pytest.mark.parametrize("declaration, factory, message", [
    (dict(kind="both"), "def f(learning_rate): ...", "kind must be one of"),
    (dict(static=("window",)), "def f(learning_rate, local_steps: int = 1): ...",
     r"static \['window'\] are not arguments"),
    ({}, "def f(learning_rate, local_steps: int = 1): ...", "local_steps has a non-real"),
    (dict(static=("local_steps",)),
     "def f(learning_rate, local_steps: int = 1, momentum=None): ...",
     "momentum defaults to None but the declaration does not say what it adds"),
    (dict(state={"momentum": "a buffer"}), "def f(learning_rate): ...",
     r"state \['momentum'\] are not traced arguments whose default is None"),
    (dict(kind="async", stepwise=True), "def f(learning_rate): ...",
     "stepwise replays synchronous rules"),
    (dict(kind="sync", stepwise=True), "def f(learning_rate, local_steps=1.0): ...",
     "declare local_steps static"),
    (dict(state={"momentum": ""}), "def f(learning_rate, momentum=None): ...",
     "state must map option names to what they add"),
])
def test_a_declaration_that_contradicts_its_factory_is_refused(scratch, declaration,
                                                                factory, message):
    namespace = {}
    exec(factory, namespace)  # noqa: S102 (a factory written in the test)
    arguments = {"kind": "async", "description": "d", "reference": "r", **declaration}
    kind = arguments.pop("kind")
    with pytest.raises(ConfigError, match=message):
        declare(kind, **arguments)(namespace["f"])
    assert "f" not in RULES


def test_a_factory_that_builds_another_kind_is_refused_when_built(scratch):
    @declare("sync", "says sync, builds async", "r", static=("local_steps",))
    def mislabelled(learning_rate: float, local_steps: int = 1) -> Rule:
        c = parts.common(learning_rate, local_steps)
        return parts.reset_rule(c, parts.accumulated_step, parts.add)

    with pytest.raises(ConfigError, match="mislabelled: declared 'sync' but the factory "
                                          "built an asynchronous rule"):
        mislabelled(0.1)
