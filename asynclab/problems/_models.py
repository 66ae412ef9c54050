"""Small neural networks as plain JAX functions over dict pytrees.

A model is a pair of pure functions: ``init(key) -> params`` and
``apply(params, x) -> logits``. The parameters are a nested ``dict`` of ``float32``
arrays, so the update rules can average, scale and subtract them with ``jax.tree.map``
like any other pytree, stack them on a worker axis, and ``vmap`` them over seeds.

Example:
  >>> model = mlp(64, (32,), 10)
  >>> params = model.init(jax.random.key(0))
  >>> logits = model.apply(params, x)            # x: (batch, 64)
  >>> loss = cross_entropy(logits, labels)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import _validate
from .._errors import ConfigError

Array = jax.Array
Params = Any


class Model(NamedTuple):
    """A network as two pure functions.

    Attributes:
      name: a short description, e.g. ``"mlp:784-256-10"``.
      init: ``init(key) -> params``, a seeded initialisation (a dict pytree, float32).
      apply: ``apply(params, x) -> logits``; ``x`` is ``(batch, *input_shape)``, the
        logits ``(batch, classes)``.
      input_shape: the shape of one example.
      classes: the number of outputs.
    """

    name: str
    init: Callable[[Array], Params]
    apply: Callable[[Params, Array], Array]
    input_shape: tuple[int, ...]
    classes: int


def _he_normal(key, shapes: list[tuple[int, ...]], fan_ins: list[int]) -> list[Array]:
    """Weights ``N(0, 2 / fan_in)`` (He et al., 2015, suited to ReLU) for several layers.

    One draw of all the numbers, cut into the layers: XLA compiles one random draw much
    faster than one per layer (and jax's ``he_normal`` truncates, which costs more still).
    """
    sizes = [math.prod(shape) for shape in shapes]
    flat = jax.random.normal(key, (sum(sizes),), jnp.float32)
    out, start = [], 0
    for shape, size, fan_in in zip(shapes, sizes, fan_ins, strict=True):
        out.append(jnp.float32(math.sqrt(2.0 / fan_in)) * flat[start:start + size].reshape(shape))
        start += size
    return out


#: Matrix products in full float32. On GPUs JAX's default multiplies float32 matrices in
#: TF32 (about 3 significant digits), which would make a run's numbers depend on the
#: platform; these nets are small enough that the full-precision product costs little.
PRECISION = jax.lax.Precision.HIGHEST


def _dense(layer, x):
    return jnp.matmul(x, layer["w"], precision=PRECISION) + layer["b"][None, :]


def _positive_ints(model: str, name: str, values) -> tuple[int, ...]:
    try:
        values = tuple(values)
    except TypeError:
        values = (values,)
    for value in values:
        try:
            _validate.count(value, name)
        except ConfigError:
            raise ConfigError(f"{model}: {name} must be integers >= 1, got {values!r}") from None
    return tuple(int(v) for v in values)


def mlp(input_size: int, hidden: Sequence[int] = (256,), classes: int = 10) -> Model:
    """A multilayer perceptron: dense layers with ReLU between them, linear logits.

    .. math:: z_0 = x,\\quad z_{l+1} = \\mathrm{relu}(z_l W_l + b_l),\\quad
              \\mathrm{logits} = z_L W_L + b_L

    Args:
      input_size: features per example; an example of any shape is flattened.
      hidden: the widths of the hidden layers (``()`` gives multinomial logistic regression).
      classes: the number of outputs.

    Returns:
      A :class:`Model` whose params are ``{"layer0": {"w", "b"}, ...}``.
    """
    (input_size,) = _positive_ints("mlp", "input_size", (input_size,))
    hidden = _positive_ints("mlp", "hidden", hidden) if len(tuple(hidden)) else ()
    (classes,) = _positive_ints("mlp", "classes", (classes,))
    sizes = (input_size, *hidden, classes)

    def init(key):
        pairs = list(zip(sizes[:-1], sizes[1:], strict=True))
        weights = _he_normal(key, pairs, list(sizes[:-1]))
        return {f"layer{i}": {"w": w, "b": jnp.zeros((w.shape[1],), jnp.float32)}
                for i, w in enumerate(weights)}

    def apply(params, x):
        z = x.reshape(x.shape[0], -1)
        for i in range(len(sizes) - 2):
            z = jax.nn.relu(_dense(params[f"layer{i}"], z))
        return _dense(params[f"layer{len(sizes) - 2}"], z)

    return Model("mlp:" + "-".join(map(str, sizes)), init, apply, (input_size,), classes)


def _conv3x3(z, w):
    """A 3×3 "same" convolution (NHWC input, HWIO kernel) as one matrix product.

    The nine shifted copies of the zero-padded input are stacked along the channel axis
    (im2col) and multiplied by the kernel reshaped to ``(9·C_in, C_out)``. This equals
    ``lax.conv_general_dilated(..., "SAME")`` and, unlike it, stays a plain batched matrix
    product when the rules ``vmap`` it over workers with their own kernels (XLA's CPU
    backend turns that into a slow grouped convolution; see benchmarks/nets_models.py).
    """
    _, height, width, depth = z.shape
    padded = jnp.pad(z, ((0, 0), (1, 1), (1, 1), (0, 0)))
    patches = jnp.concatenate(
        [padded[:, i:i + height, j:j + width, :] for i in range(3) for j in range(3)], axis=-1)
    return jnp.matmul(patches, w.reshape(9 * depth, -1), precision=PRECISION)


def _pool(z):
    """2×2 average pooling with stride 2 (an odd last row/column is dropped)."""
    n, height, width, depth = z.shape
    z = z[:, :height // 2 * 2, :width // 2 * 2, :]
    return z.reshape(n, height // 2, 2, width // 2, 2, depth).mean(axis=(2, 4))


def cnn(image_shape: Sequence[int] = (28, 28, 1), channels: Sequence[int] = (8, 16),
        classes: int = 10) -> Model:
    """A small convolutional net: [3×3 convolution, ReLU, 2×2 average pool] per channel
    count, then one dense layer to the logits.

    For 8×8 digits with ``channels=(8, 16)`` the feature map goes 8×8 → 4×4 → 2×2
    (64 features, 1.9 k parameters); for 28×28 MNIST 28 → 14 → 7 (784 features).

    Args:
      image_shape: ``(height, width, channels)`` of one example (an example given flat
        is reshaped to it).
      channels: output channels of each convolution block.
      classes: the number of outputs.

    Returns:
      A :class:`Model` whose params are ``{"conv0": {"w", "b"}, ..., "dense": {"w", "b"}}``.
    """
    image_shape = _positive_ints("cnn", "image_shape", image_shape)
    if len(image_shape) != 3:
        raise ConfigError(f"cnn: image_shape must be (height, width, channels), got "
                          f"{image_shape!r}")
    channels = _positive_ints("cnn", "channels", channels)
    (classes,) = _positive_ints("cnn", "classes", (classes,))
    height, width, depth = image_shape
    for _ in channels:
        height, width = height // 2, width // 2
    if height < 1 or width < 1:
        raise ConfigError(f"cnn: {len(channels)} pooling blocks shrink an image of shape "
                          f"{image_shape} to nothing; use fewer channels entries")
    features = height * width * channels[-1]
    ins = (depth, *channels[:-1])

    def init(key):
        shapes = [(3, 3, c_in, c_out) for c_in, c_out in zip(ins, channels, strict=True)]
        weights = _he_normal(key, [*shapes, (features, classes)],
                             [9 * c_in for c_in in ins] + [features])
        params = {f"conv{i}": {"w": w, "b": jnp.zeros((w.shape[3],), jnp.float32)}
                  for i, w in enumerate(weights[:-1])}
        params["dense"] = {"w": weights[-1], "b": jnp.zeros((classes,), jnp.float32)}
        return params

    def apply(params, x):
        z = x.reshape(x.shape[0], *image_shape)
        for i in range(len(channels)):
            layer = params[f"conv{i}"]
            z = _pool(jax.nn.relu(_conv3x3(z, layer["w"]) + layer["b"][None, None, None, :]))
        return _dense(params["dense"], z.reshape(z.shape[0], -1))

    name = "cnn:" + "x".join(map(str, image_shape)) + "-" + "-".join(map(str, channels))
    return Model(name, init, apply, image_shape, classes)


def cross_entropy(logits: Array, labels: Array) -> Array:
    """Mean softmax cross-entropy of integer ``labels`` (``(batch,)``) under ``logits``.

    .. math:: \\ell = -\\frac1B \\sum_i \\log \\mathrm{softmax}(z_i)_{y_i}
    """
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_p, labels[..., None], axis=-1))


def accuracy(logits: Array, labels: Array) -> Array:
    """The fraction of examples whose largest logit is the label's."""
    return jnp.mean((jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32))


def model_loss(model: Model) -> Callable[[Params, Array, Array], Array]:
    """``loss(params, x, labels)``: the model's mean cross-entropy on a batch."""

    def loss(params, x, labels):
        return cross_entropy(model.apply(params, x), labels)

    return loss


def parameter_count(params: Params) -> int:
    """The number of scalars in a params pytree."""
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(params))


def parse_model(spec: str, input_shape: Sequence[int], classes: int) -> Model:
    """A model from a short spec: ``mlp``, ``mlp:256``, ``mlp:256-128``, ``cnn``, ``cnn:8-16``.

    ``mlp`` alone has one hidden layer of 256 units, ``cnn`` alone channels (8, 16).
    Images (``input_shape`` of rank 2 or 3) suit both; tabular data only the MLP.
    """
    input_shape = tuple(int(s) for s in input_shape)
    kind, sep, sizes = str(spec).partition(":")
    if sep and not sizes:
        raise ConfigError(f"model {spec!r}: give sizes after ':' (e.g. {kind}:64) or drop "
                          "the ':'")
    try:
        numbers = tuple(int(s) for s in sizes.split("-")) if sizes else None
    except ValueError:
        raise ConfigError(f"model {spec!r}: sizes must be integers joined by '-', "
                          f"e.g. mlp:256-128") from None
    if kind == "mlp":
        return mlp(math.prod(input_shape), (256,) if numbers is None else numbers, classes)
    if kind == "cnn":
        if len(input_shape) not in (2, 3):
            raise ConfigError(f"model {spec!r}: a cnn needs images, the data have examples "
                              f"of shape {input_shape}")
        image = input_shape if len(input_shape) == 3 else (*input_shape, 1)
        return cnn(image, (8, 16) if numbers is None else numbers, classes)
    raise ConfigError(f"unknown model {spec!r}; available: mlp[:sizes], cnn[:channels]")
