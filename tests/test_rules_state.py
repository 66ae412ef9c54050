"""A rule's state holds only what its parts read (options given as None add nothing)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import asynclab
from asynclab.engine import _compiled
from asynclab.engine._core import initial_state
from asynclab.problems import quadratic
from asynclab.rules import RULES, aeasgd, downpour, easgd, make_rule, model_averaging

D, N = 5, 4


def _floats(tree) -> int:
    """How many floating-point numbers a state holds."""
    return sum(int(np.size(x)) for x in jax.tree.leaves(tree)
               if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating))


def _state_size(rule) -> int:
    server, workers = initial_state(rule, quadratic(dim=D), jax.random.key(0), N)
    return _floats((server, workers))


def test_downpour_at_defaults_holds_n_plus_one_parameter_vectors():
    assert _state_size(downpour(0.1)) == (N + 1) * D
    # a worker momentum, 0.0 included, is a buffer on every worker
    assert _state_size(downpour(0.1, worker_momentum=0.0)) == (2 * N + 1) * D
    # a server momentum keeps the previous centre's step at the server
    assert _state_size(downpour(0.1, server_momentum=0.0)) == (N + 2) * D
    assert _state_size(downpour(0.1, worker_momentum=0.5, server_momentum=0.5)) == \
        (2 * N + 2) * D


def test_only_rules_that_read_the_pulled_centre_store_it():
    assert _state_size(model_averaging(0.1)) == (N + 1) * D
    assert _state_size(aeasgd(0.1)) == (N + 1) * D
    assert _state_size(easgd(0.1)) == (N + 1) * D
    # EASGD's equilibrium test reads the centre of the last round
    assert _state_size(easgd(0.1, early_stop=True)) == (2 * N + 1) * D


def test_every_declared_option_that_adds_state_adds_it():
    for name, info in RULES.items():
        base = {"learning_rate": 0.1, **({"workers": N} if name == "delay_adaptive" else {})}
        if name == "diloco":
            base = {}
        for option in info.state_options:
            assert info.defaults[option] is None, (name, option)
            without, with_ = make_rule(name, **base), make_rule(name, **base, **{option: 0.0})
            assert with_.structure != without.structure, (name, option)
            assert _state_size(with_) > _state_size(without), (name, option)


@pytest.mark.parametrize("option", ["worker_momentum",  # the server's: the slow tier
                                    pytest.param("server_momentum", marks=pytest.mark.slow)])
def test_a_momentum_of_zero_computes_what_no_momentum_computes(option):
    """μ = 0 with a buffer adds 0·m: the same numbers as no buffer (a noisy DOWNPOUR on
    a quadratic, 4 workers with a random schedule)."""
    kwargs = dict(workers=N, commits=300, seeds=[0, 1], noise=0.5, learning_rate=0.05,
                  problem_options={"dim": D})
    plain = asynclab.run("quadratic", "downpour", **kwargs)
    zero = asynclab.run("quadratic", "downpour", **kwargs, **{option: 0.0})
    np.testing.assert_allclose(zero.final_params, plain.final_params, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(zero.loss, plain.loss, rtol=1e-6, atol=1e-9)
    assert zero.config["hyperparameters"][option] == 0.0
    assert plain.config["hyperparameters"][option] is None


def test_a_grid_over_a_state_option_is_one_compilation():
    problem = quadratic(dim=D, condition=3.0)
    before = _compiled.TRACE_COUNT["chunk"]
    result = asynclab.sweep(problem, "downpour", grid={"server_momentum": [0.0, 0.3, 0.6]},
                            workers=N, commits=200, seeds=[0, 1], learning_rate=0.05)
    assert _compiled.TRACE_COUNT["chunk"] - before == 1
    assert result.loss.shape[:2] == (3, 2)
    # μ = 0 of the grid is DOWNPOUR without momentum
    plain = asynclab.run(problem, "downpour", workers=N, commits=200, seeds=[0, 1],
                         learning_rate=0.05)
    np.testing.assert_allclose(result.final_params[0], plain.final_params, rtol=1e-6)


def test_an_option_given_none_is_no_state():
    rule = make_rule("downpour", learning_rate=0.1, server_momentum=None)
    assert rule.structure[2] == ("worker_momentum", "server_momentum")
    assert "server_momentum" not in rule.values
    with pytest.raises(asynclab.ConfigError, match="downpour: server_momentum"):
        make_rule("downpour", learning_rate=0.1, server_momentum=1.0)
