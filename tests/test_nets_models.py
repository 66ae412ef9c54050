"""The small nets: shapes, seeded init, pytree arithmetic, forward pass and gradient
against independent references (numpy in float64, XLA's own convolution)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from asynclab import ConfigError
from asynclab.problems._models import (
    accuracy,
    cnn,
    cross_entropy,
    mlp,
    model_loss,
    parameter_count,
    parse_model,
)


def _numpy_mlp(params, x, layers):
    z = np.asarray(x, np.float64).reshape(len(x), -1)
    for i in range(layers):
        w = np.asarray(params[f"layer{i}"]["w"], np.float64)
        b = np.asarray(params[f"layer{i}"]["b"], np.float64)
        z = z @ w + b
        if i < layers - 1:
            z = np.maximum(z, 0)
    return z


def _numpy_cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -np.mean(log_p[np.arange(len(labels)), labels])


def _data(n, shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, *shape)).astype(np.float32),
            rng.integers(0, 10, n).astype(np.int32))


def test_mlp_shapes_count_and_names():
    model = mlp(64, (32, 16), 10)
    params = jax.jit(model.init)(jax.random.key(0))
    assert [params[f"layer{i}"]["w"].shape for i in range(3)] == [(64, 32), (32, 16), (16, 10)]
    assert parameter_count(params) == 64 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10
    assert model.name == "mlp:64-32-16-10"
    x, _ = _data(5, (8, 8, 1))  # examples of any shape are flattened
    assert jax.jit(model.apply)(params, jnp.asarray(x)).shape == (5, 10)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(params))


@pytest.mark.parametrize("shape, features", [((8, 8, 1), 2 * 2 * 16), ((28, 28, 1), 7 * 7 * 16)])
def test_cnn_shapes(shape, features):
    model = cnn(shape, (8, 16), 10)
    params = jax.jit(model.init)(jax.random.key(1))
    assert params["conv0"]["w"].shape == (3, 3, shape[2], 8)
    assert params["conv1"]["w"].shape == (3, 3, 8, 16)
    assert params["dense"]["w"].shape == (features, 10)
    x, _ = _data(3, shape)
    assert jax.jit(model.apply)(params, jnp.asarray(x)).shape == (3, 10)
    # a flat example is reshaped to the image
    flat = jnp.asarray(x.reshape(3, -1))
    apply = jax.jit(model.apply)
    np.testing.assert_array_equal(apply(params, flat), apply(params, jnp.asarray(x)))


def test_init_is_seeded():
    for model in (mlp(20, (8,), 3), cnn((8, 8, 1), (4,), 3)):
        a, b = jax.jit(model.init)(jax.random.key(7)), jax.jit(model.init)(jax.random.key(7))
        c = jax.jit(model.init)(jax.random.key(8))
        jax.tree.map(np.testing.assert_array_equal, a, b)
        assert not np.allclose(a[next(iter(a))]["w"], c[next(iter(c))]["w"])


def test_he_initialisation_scale():
    # He normal: weights ~ N(0, 2 / fan_in)
    params = mlp(400, (300,), 10).init(jax.random.key(0))
    w = np.asarray(params["layer0"]["w"])
    assert abs(w.std() - np.sqrt(2 / 400)) < 0.03 * np.sqrt(2 / 400)
    assert np.all(params["layer0"]["b"] == 0)


def test_params_are_a_pytree_the_rules_can_average():
    model = mlp(10, (6,), 4)
    a, b = jax.jit(model.init)(jax.random.key(0)), jax.jit(model.init)(jax.random.key(1))
    mean = jax.tree.map(lambda u, v: 0.5 * (u + v), a, b)
    np.testing.assert_allclose(mean["layer1"]["w"], 0.5 * (a["layer1"]["w"] + b["layer1"]["w"]))
    stacked = jax.jit(jax.vmap(model.init))(jax.random.split(jax.random.key(0), 3))
    assert stacked["layer0"]["w"].shape == (3, 10, 6)


def test_mlp_forward_and_gradient_against_numpy():
    model = mlp(12, (9,), 5)
    params = jax.jit(model.init)(jax.random.key(3))
    x, y = _data(16, (12,))
    y = y % 5
    logits = jax.jit(model.apply)(params, jnp.asarray(x))
    np.testing.assert_allclose(logits, _numpy_mlp(params, x, 2), rtol=1e-5, atol=1e-5)
    loss = jax.jit(model_loss(model))
    np.testing.assert_allclose(loss(params, x, y), _numpy_cross_entropy(_numpy_mlp(params, x, 2),
                                                                        y), rtol=1e-5)
    grads = jax.jit(jax.grad(loss))(params, jnp.asarray(x), jnp.asarray(y))
    # central differences of the float64 numpy loss, entry by entry on a few entries
    rng = np.random.default_rng(0)
    eps = 1e-6
    for name in ("layer0", "layer1"):
        for part in ("w", "b"):
            shape = params[name][part].shape
            for _ in range(4):
                where = tuple(int(rng.integers(s)) for s in shape)
                values = []
                for sign in (1, -1):
                    moved = jax.tree.map(lambda a: np.asarray(a, np.float64), params)
                    moved[name][part][where] += sign * eps
                    values.append(_numpy_cross_entropy(_numpy_mlp(moved, x, 2), y))
                fd = (values[0] - values[1]) / (2 * eps)
                np.testing.assert_allclose(grads[name][part][where], fd, rtol=2e-3, atol=2e-5)


# full float32 products (GPUs default to TF32), like the models themselves
HIGHEST = jax.lax.Precision.HIGHEST


def _lax_cnn(params, x, channels):
    # an independent forward pass with XLA's convolution and reduce_window pooling
    z = x
    for i in range(channels):
        layer = params[f"conv{i}"]
        z = jax.lax.conv_general_dilated(z, layer["w"], (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         precision=HIGHEST)
        z = jax.nn.relu(z + layer["b"][None, None, None, :])
        z = jax.lax.reduce_window(z, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
    return (jnp.matmul(z.reshape(z.shape[0], -1), params["dense"]["w"], precision=HIGHEST)
            + params["dense"]["b"][None, :])


@pytest.mark.parametrize("shape", [(8, 8, 1), (7, 9, 2)])
def test_cnn_forward_matches_xla_convolution(shape):
    model = cnn(shape, (4, 6), 10)
    params = jax.jit(model.init)(jax.random.key(2))
    x, _ = _data(4, shape)
    reference = jax.jit(_lax_cnn, static_argnums=2)(params, jnp.asarray(x), 2)
    np.testing.assert_allclose(jax.jit(model.apply)(params, jnp.asarray(x)), reference,
                               rtol=1e-4, atol=1e-5)


def test_cnn_gradient_against_finite_differences():
    model = cnn((8, 8, 1), (4, 6), 10)
    params = jax.jit(model.init)(jax.random.key(4))
    x, y = _data(8, (8, 8, 1))
    loss = jax.jit(model_loss(model))
    grads = jax.jit(jax.grad(loss))(params, x, y)
    rng = np.random.default_rng(1)
    eps = 1e-2

    @jax.jit
    def along(direction, t):
        return loss(jax.tree.map(lambda p, d: p + t * d, params, direction), x, y)

    for _ in range(3):
        direction = jax.tree.map(lambda a: rng.standard_normal(a.shape), params)
        norm = np.sqrt(sum(np.sum(d * d) for d in jax.tree.leaves(direction)))
        direction = jax.tree.map(lambda d, norm=norm: jnp.asarray(d / norm, jnp.float32),
                                 direction)
        fd = (float(along(direction, eps)) - float(along(direction, -eps))) / (2 * eps)
        analytic = sum(float(np.sum(np.asarray(g) * np.asarray(d))) for g, d in zip(
            jax.tree.leaves(grads), jax.tree.leaves(direction), strict=True))
        assert abs(fd - analytic) < 2e-3 + 0.02 * abs(analytic)


def test_cross_entropy_and_accuracy_against_numpy():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((50, 7)).astype(np.float32) * 3
    labels = rng.integers(0, 7, 50).astype(np.int32)
    np.testing.assert_allclose(cross_entropy(jnp.asarray(logits), jnp.asarray(labels)),
                               _numpy_cross_entropy(logits.astype(np.float64), labels), rtol=1e-5)
    expected = np.mean(logits.argmax(axis=1) == labels)
    assert float(accuracy(jnp.asarray(logits), jnp.asarray(labels))) == pytest.approx(expected)


def test_parse_model():
    assert parse_model("mlp", (8, 8, 1), 10).name == "mlp:64-256-10"
    assert parse_model("mlp:32-16", (28,), 2).name == "mlp:28-32-16-2"
    assert parse_model("cnn", (28, 28, 1), 10).name == "cnn:28x28x1-8-16"
    assert parse_model("cnn:4", (8, 8), 10).input_shape == (8, 8, 1)
    for spec, shape, field in [("resnet", (8, 8, 1), "unknown model"),
                               ("mlp:a", (8,), "integers"),
                               ("mlp:0", (8,), "hidden"),
                               ("cnn", (28,), "needs images"),
                               ("cnn:8-16-32-64", (8, 8, 1), "fewer channels")]:
        with pytest.raises(ConfigError, match=field):
            parse_model(spec, shape, 10)


def _numpy_cnn(params, x, kernel, padding, pool, hidden):
    """The forward pass in plain numpy loops over kernel offsets: an oracle for
    cnn(kernel=, padding=, pool=, hidden=)."""
    z = np.asarray(x, np.float64)
    for i in range(len([k for k in params if k.startswith("conv")])):
        w = np.asarray(params[f"conv{i}"]["w"], np.float64)
        b = np.asarray(params[f"conv{i}"]["b"], np.float64)
        if padding == "same":
            lo = (kernel - 1) // 2
            z = np.pad(z, ((0, 0), (lo, kernel - 1 - lo), (lo, kernel - 1 - lo), (0, 0)))
        n, h, wd, _ = z.shape
        oh, ow = h - kernel + 1, wd - kernel + 1
        out = np.zeros((n, oh, ow, w.shape[3]))
        for a in range(kernel):
            for c in range(kernel):
                out += np.einsum("nhwi,io->nhwo", z[:, a:a + oh, c:c + ow, :], w[a, c])
        z = np.maximum(out + b, 0)
        n, h, wd, ch = z.shape
        blocks = z[:, :h // 2 * 2, :wd // 2 * 2].reshape(n, h // 2, 2, wd // 2, 2, ch)
        z = blocks.max(axis=(2, 4)) if pool == "max" else blocks.mean(axis=(2, 4))
    z = z.reshape(z.shape[0], -1)
    for i in range(hidden):
        layer = params[f"hidden{i}"]
        z = np.maximum(z @ np.asarray(layer["w"], np.float64) + np.asarray(layer["b"]), 0)
    return z @ np.asarray(params["dense"]["w"], np.float64) + np.asarray(params["dense"]["b"])


# the quick tier: each padding and each pool once; the slow tier two more kernel sizes
@pytest.mark.parametrize("kernel,padding,pool,shape", [
    (5, "valid", "max", (16, 16, 1)),
    (5, "same", "avg", (9, 11, 2)),
    pytest.param(2, "same", "max", (8, 8, 1), marks=pytest.mark.slow),
    pytest.param(1, "valid", "avg", (6, 6, 3), marks=pytest.mark.slow),
])
def test_cnn_options_forward_matches_numpy(kernel, padding, pool, shape):
    model = cnn(shape, (4, 6), 10, kernel=kernel, padding=padding, pool=pool, hidden=(12,))
    params = jax.jit(model.init)(jax.random.key(3))
    assert params["conv0"]["w"].shape == (kernel, kernel, shape[2], 4)
    assert params["hidden0"]["w"].shape[1] == 12
    x, _ = _data(3, shape)
    expected = _numpy_cnn(params, x, kernel, padding, pool, hidden=1)
    np.testing.assert_allclose(jax.jit(model.apply)(params, jnp.asarray(x)), expected,
                               rtol=1e-4, atol=1e-4)


def test_the_classic_federated_mnist_cnn_from_a_spec():
    # 5x5 valid convolutions with 32 and 64 channels, 2x2 max pools, dense 512, 10 logits:
    # 28 -> 24 -> 12 -> 8 -> 4, so 4*4*64 = 1024 features; counted by hand:
    # (25*1+1)*32 + (25*32+1)*64 + (1024+1)*512 + (512+1)*10 = 582,026
    model = parse_model("cnn:5x5-32-64:512:maxpool:valid", (28, 28), 10)
    assert model.name == "cnn:28x28x1-5x5-32-64:512:maxpool:valid"
    params = model.init(jax.random.key(0))
    assert parameter_count(params) == (26 * 32 + 801 * 64 + 1025 * 512 + 513 * 10) == 582_026
    assert parse_model(model.name.replace("28x28x1-", ""), (28, 28), 10).name == model.name
    # the defaults keep the name (and the numbers) of the 3x3 same-padded, average-pooled net
    assert parse_model("cnn:3x3-8-16:avgpool:same", (28, 28, 1), 10).name == "cnn:28x28x1-8-16"


def test_cnn_spec_and_option_refusals():
    for spec, shape, field in [("cnn:5x3-8", (28, 28), "square"),
                               ("cnn:8:big", (28, 28), "unknown field"),
                               ("cnn:7x7-8-16-32:valid", (28, 28), "shrink"),
                               ("cnn:8:12:13", (28, 28), "unknown field"),
                               ("cnn:0x0-8", (28, 28), "kernel"),
                               ("cnn:8:a-b", (28, 28), "unknown field")]:
        with pytest.raises(ConfigError, match=field):
            parse_model(spec, shape, 10)
    with pytest.raises(ConfigError, match="padding"):
        cnn((8, 8, 1), (4,), padding="full")
    with pytest.raises(ConfigError, match="pool"):
        cnn((8, 8, 1), (4,), pool="min")
