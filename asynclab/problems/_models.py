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
import re
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


def _conv(z, w, padding: str = "same"):
    """A k×k convolution (NHWC input, HWIO kernel, stride 1) as one matrix product.

    The k² shifted copies of the input (zero-padded for ``"same"``) are stacked along
    the channel axis (im2col) and multiplied by the kernel reshaped to ``(k²·C_in,
    C_out)``. This equals ``lax.conv_general_dilated(..., padding)`` and, unlike it,
    stays a plain batched matrix product when the rules ``vmap`` it over workers and
    seeds with their own kernels: XLA's CPU backend turns that into a grouped
    convolution, far slower (``benchmarks/convolutions.py`` measures the formulations
    for each kernel size; this one is the fastest there for 3×3 and 5×5).
    For an even k, ``"same"`` pads one more row and column after than before (as XLA).
    """
    k = w.shape[0]
    _, height, width, depth = z.shape
    if padding == "same":
        before = (k - 1) // 2
        z = jnp.pad(z, ((0, 0), (before, k - 1 - before), (before, k - 1 - before), (0, 0)))
    else:
        height, width = height - k + 1, width - k + 1
    patches = jnp.concatenate(
        [z[:, i:i + height, j:j + width, :] for i in range(k) for j in range(k)], axis=-1)
    return jnp.matmul(patches, w.reshape(k * k * depth, -1), precision=PRECISION)


def _pool(z, kind: str = "avg"):
    """2×2 pooling with stride 2, average or max (an odd last row/column is dropped).

    The max's gradient is shared equally among tied maxima (JAX's rule for a maximum);
    libraries that route it to the first maximum agree wherever the four values differ.
    """
    n, height, width, depth = z.shape
    z = z[:, :height // 2 * 2, :width // 2 * 2, :]
    blocks = z.reshape(n, height // 2, 2, width // 2, 2, depth)
    return blocks.max(axis=(2, 4)) if kind == "max" else blocks.mean(axis=(2, 4))


#: the options of :func:`cnn`
PADDINGS = ("same", "valid")
POOLS = ("avg", "max")


def cnn(image_shape: Sequence[int] = (28, 28, 1), channels: Sequence[int] = (8, 16),
        classes: int = 10, *, kernel: int = 3, padding: str = "same", pool: str = "avg",
        hidden: Sequence[int] = ()) -> Model:
    """A convolutional net: [k×k convolution, ReLU, 2×2 pool] per channel count, then
    dense layers with ReLU (``hidden``) and a dense layer to the logits.

    For 8×8 digits with ``channels=(8, 16)`` the feature map goes 8×8 → 4×4 → 2×2
    (64 features, 1.9 k parameters); for 28×28 MNIST 28 → 14 → 7 (784 features). With
    ``kernel=5, padding="valid", pool="max", channels=(32, 64), hidden=(512,)`` a 28×28
    image goes 28 → 24 → 12 → 8 → 4 (1,024 features, 582,026 parameters): the classic
    MNIST CNN of federated-learning benchmarks.

    Args:
      image_shape: ``(height, width, channels)`` of one example (an example given flat
        is reshaped to it).
      channels: output channels of each convolution block.
      classes: the number of outputs.
      kernel: the convolutions' size k (k×k), an integer >= 1.
      padding: ``"same"`` (zero padding, the map keeps its size) or ``"valid"`` (no
        padding, the map shrinks by k − 1).
      pool: ``"avg"`` or ``"max"`` 2×2 pooling after each convolution.
      hidden: widths of dense ReLU layers between the last pool and the logits.

    Returns:
      A :class:`Model` whose params are ``{"conv0": {"w", "b"}, ..., "hidden0": {"w",
      "b"}, ..., "dense": {"w", "b"}}``.
    """
    image_shape = _positive_ints("cnn", "image_shape", image_shape)
    if len(image_shape) != 3:
        raise ConfigError(f"cnn: image_shape must be (height, width, channels), got "
                          f"{image_shape!r}")
    channels = _positive_ints("cnn", "channels", channels)
    (classes,) = _positive_ints("cnn", "classes", (classes,))
    (kernel,) = _positive_ints("cnn", "kernel", (kernel,))
    hidden = _positive_ints("cnn", "hidden", hidden) if len(tuple(hidden)) else ()
    if padding not in PADDINGS:
        raise ConfigError(f"cnn: padding must be one of {', '.join(PADDINGS)}, got "
                          f"{padding!r}")
    if pool not in POOLS:
        raise ConfigError(f"cnn: pool must be one of {', '.join(POOLS)}, got {pool!r}")
    height, width, depth = image_shape
    for _ in channels:
        if padding == "valid":
            height, width = height - kernel + 1, width - kernel + 1
        height, width = height // 2, width // 2
    if height < 1 or width < 1:
        raise ConfigError(f"cnn: {len(channels)} blocks of {kernel}x{kernel} {padding} "
                          f"convolution and pooling shrink an image of shape "
                          f"{image_shape} to nothing; use fewer channels entries or a "
                          "smaller kernel")
    features = height * width * channels[-1]
    ins = (depth, *channels[:-1])
    dense = list(zip((features, *hidden), (*hidden, classes), strict=True))

    def init(key):
        shapes = [(kernel, kernel, c_in, c_out) for c_in, c_out in zip(ins, channels,
                                                                         strict=True)]
        weights = _he_normal(key, [*shapes, *dense],
                             [kernel * kernel * c_in for c_in in ins] + [a for a, _ in dense])
        params = {f"conv{i}": {"w": w, "b": jnp.zeros((w.shape[3],), jnp.float32)}
                  for i, w in enumerate(weights[:len(channels)])}
        for i, w in enumerate(weights[len(channels):-1]):
            params[f"hidden{i}"] = {"w": w, "b": jnp.zeros((w.shape[1],), jnp.float32)}
        params["dense"] = {"w": weights[-1], "b": jnp.zeros((classes,), jnp.float32)}
        return params

    def apply(params, x):
        z = x.reshape(x.shape[0], *image_shape)
        for i in range(len(channels)):
            layer = params[f"conv{i}"]
            z = _conv(z, layer["w"], padding) + layer["b"][None, None, None, :]
            z = _pool(jax.nn.relu(z), pool)
        z = z.reshape(z.shape[0], -1)
        for i in range(len(hidden)):
            z = jax.nn.relu(_dense(params[f"hidden{i}"], z))
        return _dense(params["dense"], z)

    name = "cnn:" + "x".join(map(str, image_shape)) + "-"
    if kernel != 3:
        name += f"{kernel}x{kernel}-"
    name += "-".join(map(str, channels))
    if hidden:
        name += ":" + "-".join(map(str, hidden))
    name += "".join(f":{v}" for v, default in ((f"{pool}pool", "avgpool"),
                                              (padding, "same")) if v != default)
    return Model(name, init, apply, image_shape, classes)


def cross_entropy(logits: Array, labels: Array) -> Array:
    """Mean softmax cross-entropy of integer ``labels`` (``(batch,)``) under ``logits``.

    .. math:: \\ell = -\\frac1B \\sum_i \\log \\mathrm{softmax}(z_i)_{y_i}
    """
    return -jnp.mean(label_log_probabilities(logits, labels))


def label_log_probabilities(logits: Array, labels: Array) -> Array:
    """``log softmax(z_i)_{y_i}`` of each example (shape ``(batch,)``)."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]


def accuracy(logits: Array, labels: Array) -> Array:
    """The fraction of examples whose largest logit is the label's."""
    return jnp.mean(correct(logits, labels))


def correct(logits: Array, labels: Array) -> Array:
    """1.0 for each example whose largest logit is the label's, else 0.0 (``(batch,)``)."""
    return (jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32)


def model_loss(model: Model) -> Callable[[Params, Array, Array], Array]:
    """``loss(params, x, labels)``: the model's mean cross-entropy on a batch."""

    def loss(params, x, labels):
        return cross_entropy(model.apply(params, x), labels)

    return loss


def parameter_count(params: Params) -> int:
    """The number of scalars in a params pytree."""
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(params))


def _cnn_options(spec: str, fields: list[str]) -> dict:
    """:func:`cnn`'s keyword arguments from the fields of a ``cnn:...`` spec."""
    options: dict = {}
    for i, field in enumerate(fields):
        parts = field.split("-")
        if i == 0:
            size = re.fullmatch(r"(\d+)x(\d+)", parts[0])
            if size:
                if size[1] != size[2]:
                    raise ConfigError(f"model {spec!r}: kernels are square, got {parts[0]}")
                options["kernel"] = int(size[1])
                parts = parts[1:]
            if parts:
                options["channels"] = _spec_ints(spec, parts)
        elif field in ("maxpool", "avgpool"):
            options["pool"] = field[:3]
        elif field in PADDINGS:
            options["padding"] = field
        elif "hidden" not in options and field[:1].isdigit():
            options["hidden"] = _spec_ints(spec, parts)
        else:
            raise ConfigError(f"model {spec!r}: unknown field {field!r}; a cnn spec is "
                              "cnn[:KxK-CHANNELS][:HIDDEN][:maxpool|avgpool][:same|valid], "
                              "e.g. cnn:5x5-32-64:512:maxpool:valid")
    return options


def _spec_ints(spec: str, parts: list[str]) -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in parts)
    except ValueError:
        raise ConfigError(f"model {spec!r}: sizes must be integers joined by '-', "
                          f"e.g. mlp:256-128") from None


def parse_model(spec: str, input_shape: Sequence[int], classes: int) -> Model:
    """A model from a short spec: ``mlp``, ``mlp:256``, ``mlp:256-128``, ``cnn``,
    ``cnn:8-16``, ``cnn:5x5-32-64:512:maxpool:valid``.

    ``mlp`` alone has one hidden layer of 256 units. A cnn spec is
    ``cnn[:KxK-CHANNELS][:HIDDEN][:maxpool|avgpool][:same|valid]``: the kernel (default
    3x3), the channels of the convolution blocks (default 8-16), the widths of dense
    ReLU layers before the logits (default none), the pooling (default avgpool) and the
    padding (default same); see :func:`cnn`. Images (``input_shape`` of rank 2 or 3)
    suit both; tabular data only the MLP.
    """
    input_shape = tuple(int(s) for s in input_shape)
    kind, sep, sizes = str(spec).partition(":")
    if sep and not sizes:
        raise ConfigError(f"model {spec!r}: give sizes after ':' (e.g. {kind}:64) or drop "
                          "the ':'")
    if kind == "mlp":
        numbers = _spec_ints(spec, sizes.split("-")) if sizes else None
        return mlp(math.prod(input_shape), (256,) if numbers is None else numbers, classes)
    if kind == "cnn":
        if len(input_shape) not in (2, 3):
            raise ConfigError(f"model {spec!r}: a cnn needs images, the data have examples "
                              f"of shape {input_shape}")
        image = input_shape if len(input_shape) == 3 else (*input_shape, 1)
        options = _cnn_options(spec, sizes.split(":") if sizes else [])
        channels = options.pop("channels", (8, 16))
        return cnn(image, channels, classes, **options)
    raise ConfigError(f"unknown model {spec!r}; available: mlp[:sizes], "
                      "cnn[:KxK-channels][:hidden][:maxpool][:valid]")
