"""A seed's run does not depend on how many seeds share its replay.

Every seed of a replay is one row of a vmapped computation. XLA's CPU backend used to hand
the reductions of that computation (a mean over the workers, a sum over a mini-batch) to
a library whose sums came out differently with the number of rows, so seed 0 alone and
seed 0 among 500 others differed in the last bits and, over thousands of steps, in the
sixth digit. The replay now compiles with the library's reductions off
(``asynclab.engine._core.CPU_COMPILER_OPTIONS``); these tests fail without that. A lone
seed of a small problem is replayed on two rows (the second a copy), because on some CPUs
XLA lays out the matrix products of a one-row program otherwise; the net test fails
there without it.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import asynclab
from asynclab.cluster import Cluster, simulate_sync
from asynclab.engine import _core, schedule

# The promise and its fix are about XLA's CPU backend; a GPU chooses its own reductions.
pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="about XLA's CPU reductions; JAX's default backend "
                                       "here is not the CPU")


def _same_run(alone, among, loss_rtol=0.0):
    """The first rows of ``among`` are ``alone``: the final centres bit for bit, the loss
    records to ``loss_rtol`` (0: bit for bit)."""
    rows = alone.loss.shape[0]
    for a, b in zip(jax.tree.leaves(alone.final_params), jax.tree.leaves(among.final_params),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[:rows])
    np.testing.assert_allclose(alone.loss, among.loss[:rows], rtol=loss_rtol, atol=0)
    np.testing.assert_array_equal(alone.diverged_at, among.diverged_at[:rows])


@pytest.mark.slow  # a seed alone and in a batch runs quick in tests/test_engine_rows.py
def test_model_averaging_seeds_alone_and_among_many():
    """The Monte-Carlo study's workload: 64 seeds alone, then among 500."""
    problem = asynclab.problems.beale()
    rule = asynclab.rules.model_averaging(1e-4)
    trace = simulate_sync(Cluster(10), rounds=300)

    def replay(seeds):
        return asynclab.replay(rule, problem, trace, seeds=seeds, noise=10.0,
                               init="random_per_worker", record_paths=False,
                               record_every=30, progress=False)

    alone, among = replay(range(64)), replay(range(500))
    _same_run(alone, among)
    # and the runs are runs: the centres moved and differ between seeds
    assert np.ptp(alone.final_params[:, 0]) > 0.1


@pytest.mark.slow  # two net programs, ~9 s; Beale's seeds alone and among many stay quick
@pytest.mark.parametrize("rule_name", ["downpour", "model_averaging"])
def test_a_net_seed_alone_and_among_many(rule_name):
    """A small MLP on digits: the batch sums of its gradient and loss."""
    problem = asynclab.problems.get_problem("digits", model="mlp:32", workers=4,
                                            batch_size=16)
    rule = asynclab.rules.make_rule(rule_name, learning_rate=0.05)
    trace = schedule(rule, Cluster(4), commits=60, rng=0)

    def replay(seeds):
        return asynclab.replay(rule, problem, trace, seeds=seeds, record_every=20,
                               progress=False)

    alone, among = replay([0]), replay(range(8))
    # the run is the same; the recorded loss, a mean over the whole training set, may
    # be summed in another order for another batch and differ in its last bit
    _same_run(alone, among, loss_rtol=1e-6)
    assert alone.loss[0, -1] < alone.loss[0, 0]  # it learned something


def test_this_xla_accepts_the_flag():
    """A canary: the day JAX drops the experimental flag, this fails (and the executors
    fall back to compiling without it, with a warning; see the next test)."""
    assert _core._options_supported(tuple(sorted(_core.CPU_COMPILER_OPTIONS.items())))
    assert _core.compiler_options("cpu") == dict(_core.CPU_COMPILER_OPTIONS)
    assert _core.compiler_options("cpu") == {
        "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"}
    assert _core.compiler_options("gpu") == {}


@pytest.mark.parametrize("option", [("xla_cpu_no_such_option", "1"),
                                    ("xla_cpu_experimental_ynn_fusion_type", "NO_SUCH_TYPE")])
def test_an_option_xla_refuses_is_left_out_with_a_warning(option):
    with pytest.warns(RuntimeWarning, match="compiling without them"):
        assert not _core._options_supported((option,))
