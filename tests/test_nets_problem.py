"""Nets as problems: mini-batch oracles, metrics, results and the command line."""

import importlib.util
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import asynclab
from asynclab.cli import main
from asynclab.engine import Result
from asynclab.engine._core import seed_keys
from asynclab.problems import get_problem
from asynclab.problems._datasets import load_dataset
from asynclab.problems._shards import batch_indices, make_shards

# the digits come with scikit-learn (asynclab[nets]); found, not imported, so that
# collecting the suite does not import it in every worker
if importlib.util.find_spec("sklearn") is None:
    pytest.skip("scikit-learn (asynclab[nets]) is not installed", allow_module_level=True)

OPTIONS = {"model": "mlp:16", "batch_size": 8, "workers": 2}


def _numpy_forward(params, x):
    x = x.reshape(len(x), -1)
    h = np.maximum(x @ params["layer0"]["w"] + params["layer0"]["b"], 0.0)
    return h @ params["layer1"]["w"] + params["layer1"]["b"]


def _numpy_cross_entropy(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -log_p[np.arange(labels.size), labels].mean()


def test_replay_equals_a_plain_sgd_loop_on_the_same_batches():
    """One DOWNPOUR worker with λ = 3 is plain SGD: the replay's centre equals a plain
    loop over the batches each worker-step names (its key, its shard, its step)."""
    lam, commits, lr = 3, 6, 0.1
    problem = get_problem("digits", **{**OPTIONS, "workers": 1})
    result = asynclab.run(problem, "downpour", workers=1, commits=commits, local_steps=lam,
                          learning_rate=lr, seeds=[3])
    data = load_dataset("digits", seed=0)
    shards = make_shards(data.y_train, 1, "iid", seed=0)
    _, worker_keys = seed_keys(3, 1)
    x = jnp.asarray(data.x_train.reshape(len(data.y_train), -1))
    y = jnp.asarray(data.y_train)
    params = jax.tree.map(jnp.asarray, problem.start)

    def loss(p, rows):
        # full float32 products like the models (a GPU's default would be TF32)
        hidden = jax.nn.relu(jnp.matmul(x[rows], p["layer0"]["w"], precision="highest")
                             + p["layer0"]["b"][None])
        logits = jnp.matmul(hidden, p["layer1"]["w"], precision="highest") + p["layer1"]["b"][None]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(rows.size), y[rows]])

    @jax.jit  # one compilation for the loop's steps (run eagerly, they took ~10 s)
    def sgd_step(params, step):
        rows = batch_indices(shards.index, shards.lengths, worker_keys[0], 0, step, 8)
        return jax.tree.map(lambda p, g: p - lr * g, params, jax.grad(loss)(params, rows))

    for step in range(lam * commits):
        params = sgd_step(params, step)
    for layer in ("layer0", "layer1"):
        for name in ("w", "b"):
            np.testing.assert_allclose(result.final_params[layer][name][0],
                                       params[layer][name], rtol=2e-5, atol=2e-6)


@pytest.fixture(scope="module")
def agn_run():
    """A small AGN run of an MLP on digits, two seeds, five records (one compilation,
    shared by the tests that read it; they run in one process, see their group)."""
    problem = get_problem("digits", **OPTIONS)
    return asynclab.run(problem, "agn", workers=2, commits=40, local_steps=2,
                        learning_rate=0.05, seeds=[0, 1], record_every=10)


@pytest.mark.xdist_group("nets_agn_run")
def test_metrics_are_the_centres_validation_accuracy_and_loss(agn_run):
    result = agn_run
    assert set(result.metrics) == {"validation_loss", "accuracy"}
    assert result.metrics["accuracy"].shape == result.loss.shape == (2, 5)
    data = load_dataset("digits", seed=0)
    for s in range(2):
        params = jax.tree.map(lambda leaf, s=s: np.asarray(leaf[s], np.float64),
                              result.final_params)
        logits = _numpy_forward(params, data.x_valid.astype(np.float64))
        accuracy = np.mean(logits.argmax(axis=1) == data.y_valid)
        assert result.final_accuracy[s] == pytest.approx(accuracy, abs=1.5 / data.y_valid.size)
        assert result.final_validation_loss[s] == pytest.approx(
            _numpy_cross_entropy(logits, data.y_valid), rel=1e-4)
    # seeds draw different batches; the start is the problem's fixed one
    assert result.final_accuracy[0] != result.final_accuracy[1] or not np.allclose(
        result.final_params["layer0"]["w"][0], result.final_params["layer0"]["w"][1])
    assert result.metrics["accuracy"][0, 0] == result.metrics["accuracy"][1, 0]
    # it learns: after 40 small commits well above chance (0.1), the loss falling
    assert np.all(result.final_accuracy > 0.25)
    assert np.all(np.diff(result.metrics["validation_loss"], axis=1) < 0)


@pytest.mark.xdist_group("nets_agn_run")
def test_pytree_result_saves_and_loads(tmp_path, agn_run):
    result = agn_run
    back = Result.load(result.save(tmp_path / "net"))
    np.testing.assert_array_equal(back.final_accuracy, result.final_accuracy)
    np.testing.assert_array_equal(back.final_params["layer1"]["w"],
                                  result.final_params["layer1"]["w"])
    np.testing.assert_array_equal(back.metrics["validation_loss"],
                                  result.metrics["validation_loss"])


@pytest.mark.slow  # a net's seeded start: the quick tier keeps the replay against a plain SGD loop
def test_random_init_is_seeded_per_run():
    problem = get_problem("digits", **OPTIONS)
    result = asynclab.run(problem, "downpour", workers=2, commits=1, seeds=[0, 1, 0],
                          learning_rate=1e-12, init="random")
    w = result.final_params["layer0"]["w"]
    np.testing.assert_array_equal(w[0], w[2])
    assert not np.allclose(w[0], w[1])
    assert np.std(w[0]) == pytest.approx(np.sqrt(2 / 64), rel=0.1)  # He: N(0, 2/fan_in)


@pytest.mark.slow  # the command line's twin of the API's metrics test above
def test_cli_json_carries_final_accuracy_per_seed(capsys):
    code = main(["run", "--problem", "digits", "--model", "mlp:16", "--rule", "agn",
                 "--workers", "2", "--local-steps", "2", "--commits", "20",
                 "--batch-size", "8", "--shards", "dirichlet:0.3", "--seeds", "0,1",
                 "--learning-rate", "0.05", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["final_accuracy"]) == 2 and len(out["final_loss"]) == 2
    assert all(0.0 <= a <= 1.0 for a in out["final_accuracy"])
    assert out["model"]["shards"] == "dirichlet:0.3" and out["model"]["batch_size"] == 8
    assert "success" not in out and "final_params" not in out


@pytest.mark.slow  # several seconds; the quick tier keeps its 5-minute budget
def test_a_sweep_point_of_a_net_is_the_run_with_that_value():
    options = {"model": "mlp:16", "batch_size": 8}
    swept = asynclab.sweep("digits", "agn", grid={"learning_rate": [0.02, 0.05]}, workers=2,
                           commits=12, local_steps=2, seeds=[0, 1], problem_options=options)
    one = asynclab.run("digits", "agn", workers=2, commits=12, local_steps=2,
                       learning_rate=0.05, seeds=[0, 1], problem_options=options)
    assert swept.final_params["layer0"]["w"].shape == (2, 2, 64, 16)
    np.testing.assert_array_equal(swept.final_params["layer0"]["w"][1],
                                  one.final_params["layer0"]["w"])
    np.testing.assert_array_equal(swept.metrics["accuracy"][1], one.metrics["accuracy"])


@pytest.mark.slow  # several seconds; the quick tier keeps its 5-minute budget
def test_a_net_run_without_a_learning_rate_takes_the_problems_and_learns():
    # digits declares η = 0.03: with it 300 commits of 4 workers pass 80 % validation
    # accuracy, where Beale's 1e-3 (the old default for every problem) stays far below
    problem = asynclab.problems.get_problem("digits", workers=4)
    assert problem.learning_rate == 0.03
    default = asynclab.run("digits", "downpour", workers=4, commits=300)
    slow = asynclab.run("digits", "downpour", workers=4, commits=300, learning_rate=1e-3,
                        record_every=100)
    assert default.config["hyperparameters"]["learning_rate"] == 0.03
    assert default.config["defaults_used"] == ["learning_rate", "record_every"]
    assert slow.config["defaults_used"] == []
    np.testing.assert_array_equal(slow.record_events, [0, 100, 200, 300])
    assert default.final_accuracy[0] > 0.8 > slow.final_accuracy[0]
    assert asynclab.problems.get_problem("beale").learning_rate == 1e-3


@pytest.mark.slow  # a record split in chunks; the quick tier keeps the metrics test above
def test_a_record_of_a_large_net_evaluates_in_chunks_that_fit(monkeypatch):
    """A net whose record would hold more than ``RECORD_CHUNK_BYTES`` per run evaluates
    its examples in chunks (the last padded): the same loss and accuracy as the numpy
    reduction of the whole pass's logits, and a compiled record of several runs that holds
    a chunk per run, where the whole pass would hold more."""
    from asynclab.problems import _measures, _nets

    budget = 2**20
    monkeypatch.setattr(_measures, "RECORD_CHUNK_BYTES", budget)
    problem = _nets.data_problem("digits", model="cnn:8-16:32", batch_size=16)
    chunk = problem.recording.chunk
    examples = problem.info["validation"]
    assert 1 < chunk < examples and examples % chunk  # several chunks, the last padded
    net = _nets.parse_model("cnn:8-16:32", (8, 8, 1), 10)
    params = jax.tree.map(lambda leaf: leaf + 0.01, problem.start)  # not the start
    data = load_dataset("digits", seed=0)
    logits = np.asarray(net.apply(params, jnp.asarray(data.x_valid)), np.float64)
    metrics = problem.evaluate(params)
    assert float(metrics["validation_loss"]) == pytest.approx(
        _numpy_cross_entropy(logits, data.y_valid), rel=1e-5)
    assert float(metrics["accuracy"]) == pytest.approx(
        np.mean(logits.argmax(axis=1) == data.y_valid), abs=0.5 / examples)

    runs = 4
    stacked = jax.tree.map(lambda leaf: jnp.stack([leaf] * runs), params)

    def held(evaluate):
        compiled = jax.jit(jax.vmap(evaluate)).lower(stacked).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    measures = (_measures._BUILT_IN["cross_entropy"], _measures._BUILT_IN["accuracy"])
    whole = _measures._evaluator(net.apply, measures, jnp.asarray(data.x_valid),
                                 jnp.asarray(data.y_valid), examples)
    assert held(problem.evaluate) <= runs * budget < held(whole)


def test_a_record_evaluates_whole_training_batches(monkeypatch):
    """A record's chunk is as many whole training batches as the budget holds, and one
    batch where it holds less (the forward pass then has the training step's shapes)."""
    from asynclab.problems import _measures, _nets

    per_example = _nets.data_problem("digits", model="cnn:8-16:32",
                                     batch_size=16).recording.example_bytes
    for budget, chunk in ((per_example * (3 * 16 + 15), 48), (per_example * 5, 16),
                          (per_example * 16, 16)):
        monkeypatch.setattr(_measures, "RECORD_CHUNK_BYTES", budget)
        problem = _nets.data_problem("digits", model="cnn:8-16:32", batch_size=16)
        assert problem.recording.chunk == chunk < problem.info["validation"]


@pytest.mark.slow  # 11 s of compiling; the quick tier checks the estimate in test_runs_per_call
def test_the_memory_estimate_of_a_cnn_run_bounds_its_compiled_programs(monkeypatch):
    """What ``asynclab.run`` checks against the machine's memory before any work is at
    least what XLA's compiled programs of the run hold (arguments, outputs not aliased to
    them, temporaries), a record's chunk of examples included."""
    from asynclab.cluster import Cluster
    from asynclab.engine import _compiled
    from asynclab.engine._budget import run_memory
    from asynclab.rules import make_rule

    held = []
    call = _compiled._CompiledOnce.__call__

    def measured(self, *args):
        memory = self.program.lower(*args).compile().memory_analysis()
        held.append(memory.argument_size_in_bytes + memory.output_size_in_bytes
                    - memory.alias_size_in_bytes + memory.temp_size_in_bytes)
        return call(self, *args)

    monkeypatch.setattr(_compiled._CompiledOnce, "__call__", measured)
    seeds, commits = 6, 4
    problem = get_problem("digits", model="cnn:8-16:32", batch_size=16, workers=4)
    rule = make_rule("downpour", learning_rate=0.01, local_steps=2, inner="adam")
    asynclab.run(problem, rule, workers=4, commits=commits, seeds=seeds, record_every=2,
                 progress=False)
    estimate = run_memory(rule, problem, Cluster(4), 4, commits=commits, n_seeds=seeds,
                          record_every=2, record_paths=False)
    assert held and max(held) <= estimate
