"""The replay's per-event bookkeeping in its cheap forms: a worker's row written with one
dynamic update slice under ``vmap``, the rule's counters (step counts, clocks) held once
for a batch that shares its schedule, a net's batch draws without ``vmap`` over its
steps, a run alone without ``vmap`` at all. Each must compute what the general form
computes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import asynclab
from asynclab.cluster import Cluster
from asynclab.engine import _events, replay, schedule
from asynclab.engine._core import put_row
from asynclab.problems import get_problem
from asynclab.problems._datasets import load_dataset
from asynclab.problems._shards import batch_indices, make_shards


def _numpy_put(x, i, r):
    out = np.array(x, copy=True)
    out[i] = r
    return out


def test_put_row_under_vmap_writes_each_runs_row():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 4, 3)).astype(np.float32)  # 5 runs of 4 rows
    r = rng.normal(size=(5, 3)).astype(np.float32)
    one = {"a": x}

    # one row for every run (a shared schedule): the dynamic update slice of the next axis
    got = jax.jit(jax.vmap(lambda t, new: put_row(t, 2, {"a": new})))(one, r)["a"]
    want = np.stack([_numpy_put(x[s], 2, r[s]) for s in range(5)])
    np.testing.assert_array_equal(got, want)

    # a row of its own per run: the scatter
    rows = np.array([0, 3, 1, 1, 2], np.int32)
    got = jax.vmap(lambda t, i, new: put_row(t, i, {"a": new}))(one, rows, r)["a"]
    want = np.stack([_numpy_put(x[s], rows[s], r[s]) for s in range(5)])
    np.testing.assert_array_equal(got, want)

    # one table for every run, each its own new row; and two vmaps (grid points x seeds)
    got = jax.vmap(lambda new: put_row({"a": x[0]}, 3, {"a": new}))(r)["a"]
    np.testing.assert_array_equal(got, np.stack([_numpy_put(x[0], 3, r[s]) for s in range(5)]))
    xx = np.stack([x, x + 1])  # (2, 5, 4, 3)
    rr = np.stack([r, r - 1])
    nested = jax.vmap(jax.vmap(lambda t, new: put_row(t, 1, new)))(xx, rr)
    np.testing.assert_array_equal(nested, np.stack([[_numpy_put(xx[g, s], 1, rr[g, s])
                                                     for s in range(5)] for g in range(2)]))


def _run_dependent_counts(rule):
    """``rule`` with step counts that depend on the run's parameters as far as tracing can
    tell (the added count is 0 unless a parameter passes 1e30, which none does)."""
    local = rule.local

    def counted(worker, gradient, key, worker_id):
        after = local(worker, gradient, key, worker_id)
        leaf = jax.tree.leaves(after.params)[0]
        extra = (jnp.max(jnp.abs(leaf)) > 1e30).astype(after.steps.dtype)
        return after._replace(steps=after.steps + extra)

    return rule._replace(local=counted, structure=None)


@pytest.mark.parametrize("name", ["dynsgd", pytest.param("easgd", marks=pytest.mark.slow)])
def test_step_counts_per_run_give_the_numbers_of_counts_held_once(name, monkeypatch):
    # a rule whose counts might differ between runs keeps its counters (step counts,
    # pulled clocks, the server's clock) per run; the numbers are the catalogue rule's,
    # whose counters the batch holds once (DynSGD's commits read the clocks: τ = c − c_pull).
    # Each compilation tries the counters held once; vmap refuses them (a ValueError) for
    # the per-run rule.
    held = []
    decide = _events._shared_counts

    def observed(*args):
        event, one = decide(*args)
        # every counter is held without its batch axis: the clock a number, the workers'
        # counters one per worker
        assert one.server.clock.ndim == 0
        assert one.workers.steps.ndim == one.workers.pulled_clock.ndim == 1
        held.append(True)

        def watched(*a):
            try:
                return event(*a)
            except ValueError:
                held[-1] = False
                raise

        return watched, one

    monkeypatch.setattr(_events, "_shared_counts", observed)
    rule = asynclab.rules.make_rule(name, learning_rate=1e-3)
    # a problem object of its own: its programs are compiled (and traced) here
    problem = asynclab.problems.beale()._replace()
    trace = schedule(rule, Cluster(4), commits=120, rng=1)
    kwargs = dict(seeds=range(3), noise=1.0, record_every=30, progress=False)
    held_once = replay(rule, problem, trace, **kwargs)
    assert held == [True]
    per_run = replay(_run_dependent_counts(rule), problem, trace, **kwargs)
    assert held == [True, False]
    for key in ("loss", "final_params", "diverged_at", "center_path", "center_share"):
        np.testing.assert_array_equal(getattr(per_run, key), getattr(held_once, key),
                                      err_msg=key)


def test_counters_that_start_unequal_across_runs_are_refused():
    # a batch over one schedule holds its counters once, from its first run: a rule whose
    # counters start per seed (here the step counts, from each seed's random start) would
    # give every run the first one's, so it is refused before its events run
    rule = asynclab.rules.make_rule("downpour", learning_rate=1e-3)
    init_worker = rule.init_worker

    def uneven(center, server):
        worker = init_worker(center, server)
        return worker._replace(steps=worker.steps + (center[0] > 0).astype(worker.steps.dtype))

    problem = asynclab.problems.beale()._replace()
    trace = schedule(rule, Cluster(4), commits=20, rng=1)
    rule = rule._replace(init_worker=uneven, structure=None)
    # (the 8 seeds' random starts fall on both sides of 0, or nothing would be refused)
    with pytest.raises(asynclab.ConfigError, match=r"counters workers\.steps start at "
                                                   "different values"):
        replay(rule, problem, trace, seeds=range(8), init="random", record_every=20,
               progress=False)
    # one seed alone holds nothing once (nor does a batch with a schedule per seed): it runs
    replay(rule, problem, trace, seeds=[3], init="random", progress=False)


def test_a_compilation_traces_the_event_once():
    # the counts held once are tried in the chunk's one trace (no probe before it), and
    # the no-events and unmeasured branches take the shapes the events' branch traced
    rule = asynclab.rules.make_rule("downpour", learning_rate=1e-3)
    local, calls = rule.local, []

    def counted(*args):
        calls.append(1)
        return local(*args)

    rule = rule._replace(local=counted, structure=None)
    problem = asynclab.problems.beale()._replace()  # its programs are compiled here
    trace = schedule(rule, Cluster(4), commits=40, rng=1)
    result = replay(rule, problem, trace, seeds=range(2), noise=1.0, record_every=10,
                    progress=False)
    assert result.center_path is not None  # the no-events branch shaped the paths
    assert len(calls) == 1


@pytest.mark.parametrize("count", [pytest.param(1, marks=pytest.mark.slow), 5])
def test_a_nets_batch_draws_are_the_batches_of_their_steps(count):
    # a net's local work draws the batches of its λ steps at once (one step alone, more
    # in a loop on a CPU): each is batch_indices of its step; at an epoch's end a batch
    # reaches into the next epoch's order (digits: shards of about 360 examples, batches
    # of 16)
    problem = get_problem("digits", model="mlp:8", workers=4, batch_size=16)
    shards = make_shards(load_dataset("digits", seed=0).y_train, 4, "iid", seed=0)
    key = jax.random.key(7)
    prepare = jax.jit(lambda w, s: problem.oracle(0.0).prepare(None, key, w, s, count)[2])
    steps = np.arange(70)
    for worker in (0, 3):
        length = int(shards.lengths[worker])
        straddle = (steps * 16) // length != (steps * 16 + 15) // length
        assert straddle.sum() >= 2, straddle.sum()  # the two-epoch branch is taken
        want = jax.jit(jax.vmap(lambda s, w=worker: batch_indices(
            shards.index, shards.lengths, key, w, s, 16)))(np.arange(70 + count))
        for first in steps:
            np.testing.assert_array_equal(prepare(worker, first), want[first:first + count])


@pytest.mark.parametrize("name, learning_rate, noise, case", [
    pytest.param("downpour", 1e-3, 1.0, "finite",        # every run finite (the mixed
                 marks=pytest.mark.slow),                 # case has finite runs too)
    ("downpour", 6e-3, 400.0, "mixed"),                  # some runs diverge, some not
    pytest.param("model_averaging", 2e-2, 2500.0, "each its own",  # every run diverges,
                 marks=pytest.mark.slow),                            # each apart
])
def test_a_run_alone_is_its_row_of_a_batch(name, learning_rate, noise, case, monkeypatch):
    # a replay of one run leaves out vmap (_one_run); its numbers are its row of a batch
    # of several: records, paths, movement, divergence and the kept centre
    monkeypatch.setattr(_events, "ALONE_MIN_PARAMETERS", 0)  # Beale's 2 parameters
    alone_calls = []
    one_run = _events._one_run
    monkeypatch.setattr(_events, "_one_run",
                        lambda tree: alone_calls.append(1) or one_run(tree))
    rule = asynclab.rules.make_rule(name, learning_rate=learning_rate)
    problem = asynclab.problems.beale()._replace()  # its own programs, traced here
    trace = schedule(rule, Cluster(4), commits=120, rng=2)
    kwargs = dict(noise=noise, record_every=30, record_paths=True, progress=False)
    among = replay(rule, problem, trace, seeds=[0, 1, 5], **kwargs)
    assert not alone_calls
    # the batch is the case it stands for (so that the guard and the kept centre are
    # compared where they act)
    diverged = among.diverged_at >= 0
    assert {"finite": not diverged.any(), "mixed": diverged.any() and not diverged.all(),
            "each its own": diverged.all() and len(set(among.diverged_at)) == 3}[case]
    for row, seed in enumerate(among.seeds):
        alone = replay(rule, problem, trace, seeds=[seed], **kwargs)
        for key in ("loss", "final_params", "diverged_at", "center_path", "worker_path",
                    "center_share"):
            got, want = getattr(alone, key), getattr(among, key)
            if want is None:
                assert got is None, key
                continue
            np.testing.assert_array_equal(got, want[row:row + 1], err_msg=f"{key}, seed {seed}")
    assert alone_calls  # the one-run program was traced (once: the seeds share it)


@pytest.mark.slow  # ~6 s of compiling; Beale's runs alone (above) stay quick
def test_a_net_run_alone_is_its_row_of_a_batch(monkeypatch):
    # the same for a net (a data problem: validation metrics at each record)
    monkeypatch.setattr(_events, "ALONE_MIN_PARAMETERS", 0)
    problem = get_problem("digits", model="mlp:16", workers=2, batch_size=8)._replace()
    rule = asynclab.rules.downpour(0.05)
    trace = schedule(rule, Cluster(2), commits=40, rng=0)
    kwargs = dict(record_every=20, progress=False)
    alone, among = replay(rule, problem, trace, seeds=[1], **kwargs), \
        replay(rule, problem, trace, seeds=[0, 1], **kwargs)
    for a, b in zip(jax.tree.leaves(alone.final_params), jax.tree.leaves(among.final_params),
                    strict=True):
        np.testing.assert_array_equal(a, b[1:])
    # the recorded losses and metrics are means over data sets, summed in another order
    # for another batch shape: to the last bits
    np.testing.assert_allclose(alone.loss, among.loss[1:], rtol=1e-6)
    assert alone.metrics.keys() == among.metrics.keys() and alone.metrics
    for key, value in alone.metrics.items():
        np.testing.assert_allclose(value, among.metrics[key][1:], rtol=1e-6, err_msg=key)
    assert alone.loss[0, -1] < alone.loss[0, 0]
