"""Seeds replayed in turns (``runs_per_call``): the same numbers as in one call, less
memory checked and held at once."""

import json

import jax
import numpy as np
import pytest

import asynclab
from asynclab import ConfigError, _validate
from asynclab.cli import main


def _same(a, b, rtol=0.0):
    """The same records, final parameters and divergence: bit for bit (``rtol=0``), or to
    float32 rounding."""
    def close(x, y):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=0.0)

    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)
    for field in ("loss", "center_path"):
        if getattr(a, field) is not None:
            close(getattr(a, field), getattr(b, field))
    jax.tree.map(close, a.final_params, b.final_params)
    if a.metrics is not None:
        jax.tree.map(close, a.metrics, b.metrics)


# the quick tier: two seeds per call, the last call padded; one, four and more seeds per
# call than there are seeds are the slow tier's
@pytest.mark.parametrize("runs_per_call", [pytest.param(1, marks=pytest.mark.slow), 2,
                                           pytest.param(4, marks=pytest.mark.slow),
                                           pytest.param(9, marks=pytest.mark.slow)])
def test_seeds_in_turns_are_the_seeds_at_once(runs_per_call):
    options = dict(workers=4, commits=60, seeds=[3, 0, 7, 1, 12], noise=1.0,
                   init="random", record_every=10)
    whole = asynclab.run("beale", "downpour", **options)
    turns = asynclab.run("beale", "downpour", runs_per_call=runs_per_call, **options)
    _same(whole, turns)
    assert turns.final_loss.shape == (5,)


@pytest.mark.slow  # 8 s; Beale's seeds in turns stay in the quick tier
def test_a_nets_seeds_in_turns_are_its_seeds_at_once():
    """To float32 rounding: XLA may compile a net's matrix products for a batch of two
    runs otherwise than for three (JAX 0.12 on a CPU differs in the last bit of the loss;
    JAX 0.10 gives the same bits)."""
    pytest.importorskip("sklearn")
    options = dict(workers=2, commits=12, seeds=[0, 1, 2], record_every=4,
                   problem_options={"model": "mlp:8", "batch_size": 8})
    whole = asynclab.run("digits", "downpour", **options)
    _same(whole, asynclab.run("digits", "downpour", runs_per_call=2, **options), rtol=1e-5)


def test_the_memory_check_counts_only_the_seeds_of_one_call(monkeypatch):
    """A budget of memory between what two seeds at once and what sixty-four need: the
    run in one call is refused before any work, the run in turns of two passes it."""
    from asynclab.cluster import Cluster
    from asynclab.engine._budget import run_memory
    from asynclab.problems import get_problem
    from asynclab.rules import make_rule

    problem = get_problem("quadratic", dim=20_000)
    rule = make_rule("downpour", learning_rate=1e-3)
    seeds, commits = 64, 10

    def estimate(in_flight):
        return run_memory(rule, problem, Cluster(8), 8, commits=commits, n_seeds=seeds,
                          record_every=commits, record_paths=False, in_flight=in_flight)

    assert estimate(2) < estimate(None)
    limit = (estimate(2) + estimate(None)) // 2
    monkeypatch.setattr(_validate, "available_memory", lambda: int(limit / 0.8))
    options = dict(workers=8, commits=commits, seeds=list(range(seeds)), record_every=commits,
                   record_paths=False, problem_options={"dim": 20_000})
    with pytest.raises(ConfigError, match="runs_per_call"):
        asynclab.run("quadratic", "downpour", **options)
    result = asynclab.run("quadratic", "downpour", runs_per_call=2, **options)
    assert result.final_loss.shape == (seeds,)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2"])
def test_bad_runs_per_call_names_the_field(value):
    with pytest.raises(ConfigError, match="runs_per_call"):
        asynclab.run("beale", "downpour", workers=2, commits=5, runs_per_call=value)


@pytest.mark.slow  # seeds in turns run quick from Python above
def test_command_line_runs_seeds_in_turns(capsys):
    argv = ["run", "--problem", "beale", "--rule", "downpour", "--workers", "4",
            "--commits", "40", "--seeds", "0,1,2", "--noise", "1", "--json"]
    main(argv)
    whole = json.loads(capsys.readouterr().out)
    main(argv + ["--runs-per-call", "2"])
    turns = json.loads(capsys.readouterr().out)
    assert turns["final_loss"] == whole["final_loss"]
    assert main(["run", "--backend", "pmap", "--runs-per-call", "2", "--workers", "2",
                 "--commits", "4"]) == 2
    assert "--runs-per-call" in capsys.readouterr().err
