"""A researcher's own problems: a loss (from_loss), a model and data (from_model), the
Flax and Equinox adapters, shards that declare themselves, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from children import run as run_child

import asynclab
from asynclab import ConfigError
from asynclab.problems import (
    Problem,
    Sharding,
    from_loss,
    from_model,
    get_problem,
)
from asynclab.problems._shards import batch_indices, make_shards

SCRIPTS = Path(__file__).parent / "backend_scripts"

# ----------------------------------------------------------------------------- data


def _data(n=240, features=6, classes=3, seed=0):
    """Three Gaussian blobs in 6 dimensions: separable enough that an MLP learns."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n).astype(np.int64)
    centres = rng.normal(0.0, 2.0, (classes, features))
    x = (centres[y] + rng.normal(0.0, 1.0, (n, features))).astype(np.float32)
    return x, y


def _mlp_params(features=6, hidden=5, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    return {"w0": rng.normal(0, 0.5, (features, hidden)).astype(np.float32),
            "b0": rng.normal(0, 0.1, hidden).astype(np.float32),
            "w1": rng.normal(0, 0.5, (hidden, classes)).astype(np.float32),
            "b1": rng.normal(0, 0.1, classes).astype(np.float32)}


def _mlp_apply(params, x):
    h = jax.nn.relu(jnp.matmul(x, params["w0"], precision="highest") + params["b0"][None])
    return jnp.matmul(h, params["w1"], precision="highest") + params["b1"][None]


def _numpy_loss_and_gradient(params, x, y):
    """Mean softmax cross-entropy of the MLP and its gradient, by hand in float64."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    x = np.asarray(x, np.float64)
    z = x @ p["w0"] + p["b0"]
    h = np.maximum(z, 0.0)
    logits = h @ p["w1"] + p["b1"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_p[np.arange(y.size), y].mean()
    d_logits = np.exp(log_p)
    d_logits[np.arange(y.size), y] -= 1.0
    d_logits /= y.size
    d_h = d_logits @ p["w1"].T
    d_z = d_h * (z > 0)
    grads = {"w1": h.T @ d_logits, "b1": d_logits.sum(0), "w0": x.T @ d_z, "b0": d_z.sum(0)}
    return loss, grads, logits


def _train_and_valid():
    """240 training and 90 validation examples of the same blobs."""
    x, y = _data(n=330)
    return x[:240], y[:240], x[240:], y[240:]


@pytest.fixture(scope="module")
def model_problem():
    x, y, xv, yv = _train_and_valid()
    return from_model(_mlp_apply, _mlp_params(), x, y, validation=(xv, yv), batch_size=8,
                      workers=3, name="blobs", learning_rate=0.1, seed=0)


# ----------------------------------------------------------------------------- from_loss


def test_from_loss_is_the_surfaces_constructor():
    # a surface built by hand equals the shipped one: same start, box, minima, loss
    beale = get_problem("beale")

    def f(p):
        x, y = p[0], p[1]
        return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y**2) ** 2 + (2.625 - x + x * y**3) ** 2

    own = from_loss(f, [1.0, 1.75], box=(-4.0, 4.0), domain=((-4.5, 4.5), (-4.5, 4.5)),
                    minima=[[3.0, 0.5]], success_radius=0.1, name="beale")
    for field in ("start", "minima"):
        np.testing.assert_array_equal(getattr(own, field), getattr(beale, field))
    for got, want in zip(own.box, beale.box, strict=True):
        np.testing.assert_array_equal(got, want)
    assert own.start.dtype == np.float32 and own.is_surface and own.shards is None
    assert own.for_workers(7) is own  # not sharded
    point = jnp.array([0.3, -1.2])
    assert float(own.loss(point)) == float(beale.loss(point))


@pytest.mark.slow  # two runs compiled: several seconds
def test_a_pytree_loss_runs_with_noise_and_random_starts():
    target = {"a": np.array([1.0, -2.0], np.float32), "b": np.float32(0.5)}

    def loss(p):
        return jnp.sum((p["a"] - target["a"]) ** 2) + (p["b"] - target["b"]) ** 2

    problem = from_loss(loss, {"a": np.zeros(2), "b": 0.0}, box=(-1.0, 1.0), name="tree",
                        learning_rate=0.1)
    assert problem.dim == 3 and not problem.flat and problem.learning_rate == 0.1
    result = asynclab.run(problem, "downpour", workers=2, commits=300, noise=1e-4,
                          seeds=[0, 1], init="random", progress=False)
    # gradient descent with η = 0.1 on a unit quadratic: the centre ends at the minimum
    np.testing.assert_allclose(result.final_params["a"], np.tile(target["a"], (2, 1)),
                               atol=0.02)
    np.testing.assert_allclose(result.final_params["b"], [0.5, 0.5], atol=0.02)
    starts = asynclab.run(problem, "downpour", workers=2, commits=1, seeds=[0, 1],
                          init="random", learning_rate=1e-9, progress=False).final_params
    assert np.all(np.abs(starts["a"]) <= 1.0) and starts["a"][0, 0] != starts["a"][1, 0]


@pytest.mark.slow  # two runs and a sweep compiled: several seconds
def test_a_loss_problem_in_run_sweep_and_compare(tmp_path):
    bowl = from_loss(lambda p: 0.5 * jnp.sum(p * p), np.ones(3), box=(-1.0, 1.0),
                     minima=np.zeros((1, 3)), success_radius=0.05, name="bowl")
    one = asynclab.run(bowl, "downpour", workers=2, commits=40, learning_rate=0.05,
                       seeds=[0], progress=False)
    # one worker at a time commits one step from the centre it pulled: |θ| shrinks
    # geometrically and the loss falls
    assert one.loss[0, -1] < one.loss[0, 0]
    slow = asynclab.run(bowl, "downpour", workers=2, commits=40, learning_rate=0.01,
                        seeds=[0], progress=False)
    swept = asynclab.sweep(bowl, "downpour", grid={"learning_rate": [0.01, 0.05]},
                           workers=2, commits=40, seeds=[0])
    np.testing.assert_array_equal(swept.final_params[0], slow.final_params)
    np.testing.assert_array_equal(swept.final_params[1], one.final_params)
    ax = asynclab.plot.compare([one, slow], ["η=0.05", "η=0.01"], path=tmp_path / "bowl.png")
    assert (tmp_path / "bowl.png").stat().st_size > 0 and len(ax.get_lines()) == 2


# ----------------------------------------------------------------------------- from_model


def test_the_model_problems_loss_and_gradient_are_numpys(model_problem):
    problem = model_problem
    x, y, xv, yv = _train_and_valid()
    params = jax.tree.map(lambda a: a + 0.05, problem.start)
    # the recorded training loss: every training example (fewer than the 1,000 of the
    # loss subset); the validation metrics
    loss, _, _ = _numpy_loss_and_gradient(params, x, y)
    assert float(jax.jit(problem.loss)(params)) == pytest.approx(loss, rel=1e-5)
    valid_loss, _, logits = _numpy_loss_and_gradient(params, xv, yv)
    metrics = jax.jit(problem.evaluate)(params)
    assert problem.recording.metrics == ("validation_loss", "accuracy")
    assert set(metrics) == set(problem.recording.metrics)
    assert float(metrics["validation_loss"]) == pytest.approx(valid_loss, rel=1e-5)
    assert float(metrics["accuracy"]) == pytest.approx(np.mean(logits.argmax(1) == yv),
                                                       abs=0.5 / yv.size)
    # a worker's stochastic gradient: the numpy gradient of the batch its key names in
    # its shard (3 iid shards dealt from the training labels with the problem's seed)
    shards = make_shards(y, 3, "iid", seed=0)
    key = jax.random.key(11)
    rows_of = jax.jit(lambda k, w: batch_indices(shards.index, shards.lengths, k, w, 0, 8))
    sample = jax.jit(problem.oracle(0.0).sample)
    for worker, step in ((0, 0), (2, 5)):
        rows = np.asarray(rows_of(jax.random.fold_in(key, step), worker))
        assert set(rows) <= set(shards.members(worker))
        got = sample(params, jax.random.fold_in(key, step), worker, step)
        _, want, _ = _numpy_loss_and_gradient(params, x[rows], y[rows])
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=2e-4, atol=1e-6,
                                       err_msg=name)


def test_a_model_problem_declares_its_shards_and_costs(model_problem):
    problem = model_problem
    x, y, xv, yv = _train_and_valid()
    assert problem.shards.workers == 3 and str(problem.shards.sharding) == "iid"
    assert problem.shards.histograms.shape == (3, 3)
    np.testing.assert_array_equal(problem.shards.histograms.sum(0), np.bincount(y))
    assert problem.shards.lengths.sum() == y.size
    costs = problem.recording
    assert costs.batch_size == 8 and costs.examples == 240 + 90 and costs.chunk >= 8
    assert costs.example_bytes > 0
    # for_workers: the shards of building it for that count; one object per count
    four = problem.for_workers(4)
    assert four is problem.for_workers(4) and problem.for_workers(3) is problem
    assert four.shards.workers == 4 and four.info["workers"] == 4 and four.loss is problem.loss
    want = make_shards(y, 4, "iid", seed=0)
    np.testing.assert_array_equal(four.shards.lengths, want.lengths)
    direct = from_model(_mlp_apply, _mlp_params(), x, y, validation=(xv, yv), batch_size=8,
                        workers=4)
    np.testing.assert_array_equal(direct.shards.histograms, four.shards.histograms)
    assert jax.jit(direct.batch)(1, 3).tolist() == jax.jit(four.batch)(1, 3).tolist()


@pytest.mark.slow  # three net programs compiled (run, sweep, a second run): ~10 s
def test_a_model_problem_in_run_sweep_and_compare(model_problem, tmp_path):
    problem = model_problem
    # run() deals the examples out to its 2 workers
    one = asynclab.run(problem, "downpour", workers=2, commits=60, seeds=[0, 1],
                       record_every=20, progress=False)
    assert one.config["hyperparameters"]["learning_rate"] == 0.1  # the problem's η
    assert set(one.metrics) == {"validation_loss", "accuracy"}
    assert np.all(one.loss[:, -1] < one.loss[:, 0]) and np.all(one.final_accuracy > 0.6)
    swept = asynclab.sweep(problem, "downpour", grid={"learning_rate": [0.02, 0.1]},
                           workers=2, commits=60, seeds=[0, 1], record_every=20)
    np.testing.assert_array_equal(swept.final_params["w0"][1], one.final_params["w0"])
    np.testing.assert_array_equal(swept.metrics["accuracy"][1], one.metrics["accuracy"])
    again = asynclab.run(problem.for_workers(2), "downpour", workers=2, commits=60,
                         seeds=[0, 1], record_every=20, progress=False)
    np.testing.assert_array_equal(again.final_params["w1"], one.final_params["w1"])
    asynclab.plot.compare([one, again], metric="accuracy", path=tmp_path / "a.png")
    assert (tmp_path / "a.png").stat().st_size > 0


@pytest.mark.slow  # a child process with 2 simulated devices, two problems: ~20 s
def test_own_problems_on_the_device_executor_match_the_replay():
    proc = run_child(SCRIPTS / "pmap_own.py", 2, devices=2, timeout=480)
    report = next((json.loads(line[7:]) for line in proc.stdout.splitlines()
                   if line.startswith("REPORT ")), None)
    assert report is not None, proc.stderr[-3000:]
    failures = [f"{c['problem']}:\n{c.get('error')}" for c in report["cases"] if not c["ok"]]
    assert not failures, "\n\n".join(failures)
    assert [c["problem"] for c in report["cases"]] == ["bowl", "blobs"]


def test_the_data_can_come_from_files_memory_maps_dicts_and_array_likes(tmp_path):
    x, y = _data(n=60)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.savez(tmp_path / "data.npz", features=x, label=y)
    common = dict(validation=0.25, batch_size=4, workers=2, seed=3)
    base = from_model(_mlp_apply, _mlp_params(), x, y, **common)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    variants = [from_model(_mlp_apply, _mlp_params(), tmp_path / "x.npy",
                           str(tmp_path / "y.npy"), **common),
                from_model(_mlp_apply, _mlp_params(), mapped, y, **common),
                from_model(_mlp_apply, _mlp_params(), tmp_path / "data.npz", "label",
                           **common)]
    params = jax.tree.map(lambda a: a - 0.1, base.start)
    for problem in variants:
        assert float(jax.jit(problem.loss)(params)) == float(jax.jit(base.loss)(params))
        np.testing.assert_array_equal(problem.shards.histograms, base.shards.histograms)
    # the split is stratified: each class keeps its share in validation
    assert base.info["train"] + base.info["validation"] == 60
    # a dict of feature arrays reaches apply as a dict of batches
    two = from_model(lambda p, d: _mlp_apply(p, jnp.concatenate([d["a"], d["b"]], 1)),
                     _mlp_params(), {"a": x[:, :2], "b": x[:, 2:]}, y, **common)
    want = float(jax.jit(base.loss)(params))
    assert float(jax.jit(two.loss)(params)) == pytest.approx(want, rel=1e-6)


class _Recorded:
    """An array-like (as h5py or zarr present one) that records the rows read."""

    def __init__(self, array):
        self.array, self.read = array, []
        self.shape, self.dtype = array.shape, array.dtype

    def __getitem__(self, index):
        index = np.asarray(index)
        self.read.extend(index.ravel().tolist())
        return self.array[index]


def test_a_subset_of_an_array_like_reads_only_its_rows():
    x, y = _data(n=200)
    features = _Recorded(x)
    problem = from_model(_mlp_apply, _mlp_params(), features, y, examples=50,
                         validation=0.2, batch_size=4, workers=2)
    assert len(features.read) == 50 == len(set(features.read))
    assert problem.info["train"] + problem.info["validation"] == 50
    assert np.all(np.diff(features.read[:40]) > 0)  # sorted rows, each part read once


def test_losses_and_metrics_of_ones_own():
    x, y = _data(n=80)
    targets = np.eye(3, dtype=np.float32)[y]

    def per_example(outputs, labels):
        return jnp.sum((outputs - labels) ** 2, axis=1)

    def mean(outputs, labels):
        return jnp.mean(jnp.sum((outputs - labels) ** 2, axis=1))

    common = dict(validation=0.25, batch_size=4, workers=1)
    a = from_model(_mlp_apply, _mlp_params(), x, targets, loss=per_example,
                   metrics={"error": per_example}, **common)
    b = from_model(_mlp_apply, _mlp_params(), x, targets, loss=mean,
                   metrics={"error": mean}, **common)
    params = _mlp_params(seed=4)
    for problem in (a, b):
        assert problem.recording.metrics == ("validation_loss", "error")
        assert set(jax.jit(problem.evaluate)(params)) == {"validation_loss", "error"}
    out_a, out_b = jax.jit(a.evaluate)(params), jax.jit(b.evaluate)(params)
    assert float(out_a["error"]) == pytest.approx(float(out_b["error"]), rel=1e-6)
    # mse: the mean over examples of the mean squared difference per example, by numpy
    c = from_model(_mlp_apply, _mlp_params(), x, targets, loss="mse", **common)
    assert c.recording.metrics == ("validation_loss",) and c.shards.histograms is None
    logits = np.asarray(_mlp_apply(params, x), np.float64)
    everything = from_model(_mlp_apply, _mlp_params(), x, targets, loss="mse", workers=1,
                            validation=(x, targets), batch_size=4)
    assert float(jax.jit(everything.evaluate)(params)["validation_loss"]) == pytest.approx(
        np.mean((logits - targets) ** 2), rel=1e-5)


# ----------------------------------------------------------------------------- Dirichlet


def test_dirichlet_shards_follow_the_dirichlets_mean_and_variance():
    """Each class's share that a worker gets is Dirichlet(α)-distributed over the workers:
    over many seeded splits the shares average 1/W with variance (1/W)(1 - 1/W)/(Wα + 1)."""
    workers, alpha, per_class, classes = 4, 0.5, 2000, 3
    labels = np.repeat(np.arange(classes), per_class)
    shares = []
    for seed in range(300):
        shards = make_shards(labels, workers, Sharding("dirichlet", alpha), seed=seed)
        counts = np.stack([np.bincount(labels[shards.members(k)], minlength=classes)
                           for k in range(workers)])
        shares.append(counts / per_class)
    shares = np.asarray(shares)  # (splits, workers, classes)
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    mean = 1 / workers
    variance = mean * (1 - mean) / (workers * alpha + 1)
    # 300 splits x 12 (worker, class) shares: the sample mean within 4 standard errors
    assert abs(shares.mean() - mean) < 4 * np.sqrt(variance / shares.size)
    assert shares.var() == pytest.approx(variance, rel=0.15)
    # a fixed seed reproduces the split, another seed does not
    a, b = (make_shards(labels, workers, "dirichlet:0.5", seed=s) for s in (7, 7))
    np.testing.assert_array_equal(a.index, b.index)
    assert not np.array_equal(a.lengths, make_shards(labels, workers, "dirichlet:0.5",
                                                     seed=8).lengths)
    assert str(Sharding.parse("dirichlet:0.5")) == "dirichlet:0.5"


def test_class_and_dirichlet_shards_show_in_the_histograms():
    x, y = _data(n=300)
    by_class = from_model(_mlp_apply, _mlp_params(), x, y, shards="class", workers=3,
                          batch_size=4)
    # three workers, three classes: one class each
    assert np.all((by_class.shards.histograms > 0).sum(axis=1) == 1)
    skewed = from_model(_mlp_apply, _mlp_params(), x, y, shards=Sharding("dirichlet", 0.1),
                        workers=3, batch_size=2)
    assert str(skewed.shards.sharding) == skewed.info["shards"] == "dirichlet:0.1"


# ----------------------------------------------------------------------------- adapters


def test_an_equinox_model_trains_through_the_adapter():
    eqx = pytest.importorskip("equinox", reason="the optional extra asynclab[equinox]")
    from asynclab.problems import from_equinox

    model = eqx.nn.MLP(6, 3, 5, 1, key=jax.random.key(0))
    apply, params = from_equinox(model)
    x, y = _data(n=40)
    np.testing.assert_allclose(apply(params, x), jax.vmap(model)(x), rtol=1e-6)
    assert set(params) == {"layers"} and set(params["layers"]) == {"0", "1"}
    problem = from_model(apply, params, x, y, batch_size=4, workers=1)
    grads = jax.jit(jax.grad(problem.batch_loss))(problem.start, jax.jit(problem.batch)(0, 0))
    assert jax.tree.structure(grads) == jax.tree.structure(problem.start)


@pytest.mark.slow  # one adapter (Equinox) trains quick; Flax in the slow tier
def test_a_flax_model_trains_through_the_adapter():
    nnx = pytest.importorskip("flax.nnx", reason="the optional extra asynclab[flax]")
    from asynclab.problems import from_flax

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.hidden = nnx.Linear(6, 5, rngs=rngs)
            self.out = nnx.Linear(5, 3, rngs=rngs)

        def __call__(self, x):
            return self.out(jax.nn.relu(self.hidden(x)))

    model = Net(nnx.Rngs(0))
    apply, params = from_flax(model)
    x, y = _data(n=40)
    np.testing.assert_allclose(apply(params, x), model(x), rtol=1e-6)
    assert set(params) == {"hidden", "out"} and set(params["out"]) == {"bias", "kernel"}
    problem = from_model(apply, params, x, y, batch_size=4, workers=1)
    grads = jax.jit(jax.grad(problem.batch_loss))(problem.start, jax.jit(problem.batch)(0, 0))
    assert jax.tree.structure(grads) == jax.tree.structure(problem.start)


# ----------------------------------------------------------------------------- bad inputs


def _model(**options):
    x, y = _data(n=60)
    arguments = dict(apply=_mlp_apply, params=_mlp_params(), x=x, y=y, batch_size=4)
    arguments.update(options)
    return from_model(**arguments)


BAD = [
    ("loss not a scalar", lambda: from_loss(lambda p: p * 2, [1.0, 2.0]), "loss"),
    ("loss raises", lambda: from_loss(lambda p: p["missing"], [1.0]), "loss"),
    ("start of strings", lambda: from_loss(jnp.sum, ["a", "b"]), "start"),
    ("start of integers", lambda: from_loss(jnp.sum, np.arange(3)), "start"),
    ("start empty", lambda: from_loss(jnp.sum, {}), "start"),
    ("box upside down", lambda: from_loss(jnp.sum, [1.0, 2.0], box=(1.0, -1.0)), "box"),
    ("minima of another size", lambda: from_loss(jnp.sum, [1.0, 2.0], minima=[[1, 2, 3]]),
     "minima"),
    ("radius without minima", lambda: from_loss(jnp.sum, [1.0], success_radius=0.1),
     "success_radius"),
    ("domain of a 3-D loss", lambda: from_loss(jnp.sum, [1.0, 2, 3],
                                               domain=((0, 1), (0, 1))), "domain"),
    ("params of integers", lambda: _model(params={"w": np.ones(3, np.int32)}), "params"),
    ("params with a string", lambda: _model(params={"w0": "x"}), "params"),
    ("features and labels of different lengths", lambda: _model(y=np.zeros(59, int)), "y"),
    ("a label outside the classes", lambda: _model(y=np.full(60, 3)), "y"),
    ("a negative label", lambda: _model(y=np.full(60, -1)), "y"),
    ("float labels for cross-entropy", lambda: _model(y=np.zeros(60)), "y"),
    ("dirichlet alpha 0", lambda: _model(shards="dirichlet:0"), "shards"),
    ("dirichlet alpha negative", lambda: Sharding("dirichlet", -1.0), "shards"),
    ("an unknown sharding", lambda: _model(shards="random"), "shards"),
    # class 2 has one example: of its two owners (workers 2 and 5 of 6), one gets none
    ("a shard with no examples", lambda: _model(y=np.array([0, 1] * 29 + [1, 2]),
                                                shards="class", workers=6, batch_size=1),
     "shards"),
    ("validation 0", lambda: _model(validation=0.0), "validation"),
    ("validation 1", lambda: _model(validation=1), "validation"),
    ("validation 1.5", lambda: _model(validation=1.5), "validation"),
    ("a batch larger than a shard", lambda: _model(batch_size=40, workers=2), "batch_size"),
    ("more workers than examples", lambda: _model(workers=100, batch_size=1), "workers"),
    ("a loss returning a matrix", lambda: _model(loss=lambda o, y: o), "loss"),
    ("an unknown loss", lambda: _model(loss="hinge"), "loss"),
    ("an unknown metric", lambda: _model(metrics=("f1",)), "metrics"),
    ("apply fails", lambda: _model(apply=lambda p, x: p["nothing"]), "apply"),
    ("init of another shape", lambda: _model(init=lambda k: {"w0": jnp.zeros(2)}), "init"),
    ("a missing file", lambda: _model(x="/nonexistent/x.npy"), "x"),
    ("cross-entropy without labels", lambda: _model(y=None), "y"),
]


@pytest.mark.parametrize("call, field", [row[1:] for row in BAD], ids=[r[0] for r in BAD])
def test_bad_inputs_are_config_errors_naming_the_field(call, field):
    with pytest.raises(ConfigError) as error:
        call()
    assert field in str(error.value), str(error.value)


def test_a_file_that_is_not_an_array_is_refused(tmp_path):
    (tmp_path / "x.npy").write_bytes(b"not numpy at all")
    with pytest.raises(ConfigError, match="x: cannot read"):
        _model(x=tmp_path / "x.npy")
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ConfigError, match="without pickles"):
        _model(x=tmp_path / "objects.npy")
    (tmp_path / "x.csv").write_text("1,2\n")
    with pytest.raises(ConfigError, match="not a .npy or .npz"):
        _model(x=tmp_path / "x.csv")


def test_get_problem_takes_the_runs_worker_count():
    beale = get_problem("beale", workers=8)
    assert beale is get_problem("beale") and isinstance(beale, Problem)
    pytest.importorskip("sklearn")
    digits = get_problem("digits", model="mlp:8", batch_size=8, workers=3)
    assert digits.shards.workers == 3
    assert digits is get_problem("digits", model="mlp:8", batch_size=8, workers=3)
    assert get_problem(digits, workers=5) is digits.for_workers(5)
    with pytest.raises(ConfigError, match="workers"):
        asynclab.run("beale", commits=2, problem_options={"workers": 3})


def test_a_random_start_needs_a_box_or_an_init():
    fixed = from_loss(lambda p: jnp.sum(p * p), [1.0, 2.0], name="fixed")
    with pytest.raises(ConfigError, match="init='random'"):
        asynclab.run(fixed, commits=2, init="random")
