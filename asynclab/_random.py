"""``fold_in``, ``normal`` and ``uniform`` for the replay's inner loop, bit-identical to
``jax.random``.

Every local step of every worker draws its gradient noise from
``normal(fold_in(key, step), shape)``. ``jax.random`` computes the Threefry-2x32 hash
behind both with a primitive that XLA's CPU backend lowers as a rolled loop, which
cannot fuse with the arithmetic around it; at 10⁵ worker-steps per event that hash is
most of a replay's time. Here the same hash is written in element-wise ``lax``
operations, so XLA fuses it with the gradient into one loop, and the numbers are the same
bits as ``jax.random.fold_in`` / ``jax.random.normal`` (tested). Keys stay ordinary
typed ``jax.random`` keys.

The fast path applies to Threefry keys with ``jax_threefry_partitionable`` on (JAX's
default) and float32 draws; anything else goes through ``jax.random`` unchanged.

Why not another of JAX's generators: ``jax.random.key(seed, impl="philox2x32")`` draws
bulk normals faster than stock Threefry on a CPU, but inside the replay, where short
parameter vectors draw a few numbers per step, it is slower than this fused copy
(``benchmarks/replay.py``, row (e), compares the three); a seed therefore means JAX's
default Threefry-2x32 stream. On a GPU ``jax.random``'s own Threefry (the same bits) is
the faster one, so the copy is used only when JAX's default backend is the CPU
(:data:`FUSE`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap

_U32 = jnp.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(x, d: int):
    return lax.bitwise_or(lax.shift_left(x, np.uint32(d)),
                          lax.shift_right_logical(x, np.uint32(32 - d)))


def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32 block function (20 rounds), element-wise on uint32 arrays.

    Written in ``lax`` operations with NumPy constants: the same arithmetic as
    ``jax.numpy``'s operators, without their promotion and conversion of every constant,
    which made tracing the 20 rounds a large part of compiling a replay."""
    k0, k1, x0, x1 = jnp.broadcast_arrays(*(jnp.asarray(v, _U32) for v in (k0, k1, x0, x1)))
    ks = (k0, k1, lax.bitwise_xor(lax.bitwise_xor(k0, k1), lax.full_like(k0, _PARITY)))
    x0 = lax.add(x0, k0)
    x1 = lax.add(x1, k1)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = lax.add(x0, x1)
            x1 = lax.bitwise_xor(x0, _rotate_left(x1, r))
        x0 = lax.add(x0, ks[(i + 1) % 3])
        x1 = lax.add(lax.add(x1, ks[(i + 2) % 3]), lax.full_like(x1, np.uint32(i + 1)))
    return x0, x1


def threefry2x32_host(k0, k1, x0, x1):
    """:func:`threefry2x32` in NumPy, element-wise on uint32 arrays: the same bits on the
    host, where a run's keys are made before anything is compiled (NumPy's uint32
    arithmetic wraps as XLA's does; arrays, not scalars, so that it wraps silently)."""
    k0, k1, x0, x1 = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, np.uint32))
                                           for v in (k0, k1, x0, x1)))
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = x0 + k0
    x1 = x1 + k1
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r)))
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def fold_in_host(raw, data):
    """``jax.random.fold_in`` of Threefry key data ``raw`` (``uint32[..., 2]``) and
    ``data`` (integers, broadcast against the keys), in NumPy: key data ``uint32[..., 2]``."""
    raw = np.asarray(raw, np.uint32)
    data = np.asarray(data).astype(np.uint32)
    y0, y1 = threefry2x32_host(raw[..., 0], raw[..., 1], 0, data)
    return np.stack([y0, y1], axis=-1)


#: Where the fused copy is used: ``None`` means on a CPU (JAX's default backend) only.
#: On a GPU ``jax.random``'s own Threefry is the faster inside the replay
#: (``benchmarks/replay.py``, row (e)) and it is the same stream, so the numbers do not
#: depend on the choice. ``True``/``False`` force it (tests do).
FUSE: bool | None = None


def _fused_here() -> bool:
    return jax.default_backend() == "cpu" if FUSE is None else bool(FUSE)


def _fast(key, dtype=jnp.float32) -> bool:
    return (
        _fused_here()
        and jax.config.jax_threefry_partitionable
        and jnp.dtype(dtype) == jnp.float32
        and str(jax.random.key_impl(key)) == "threefry2x32"
    )


def _as_u32(x):
    """An integer (Python int of any size, or an int array) as uint32, wrapping."""
    if isinstance(x, int | np.integer):
        return jnp.uint32(int(x) % 2**32)
    return jnp.asarray(x).astype(_U32)


def fold_in(key, data):
    """``jax.random.fold_in(key, data)`` for a scalar key and an int32 scalar ``data``."""
    if not _fast(key):
        return jax.random.fold_in(key, data)
    raw = jax.random.key_data(key)
    data = _as_u32(data)
    y0, y1 = threefry2x32(raw[0], raw[1], jnp.zeros((), _U32), data)
    return jax.random.wrap_key_data(jnp.stack([y0, y1]), dtype=key.dtype)


def normal(key, shape=(), dtype=jnp.float32):
    """``jax.random.normal(key, shape, dtype)`` for a scalar key."""
    shape = tuple(shape)
    if not _fast(key, dtype) or math.prod(shape) >= 2**32:
        return jax.random.normal(key, shape, dtype)
    raw = jax.random.key_data(key)
    count = lax.iota(_U32, math.prod(shape)).reshape(shape)
    y0, y1 = threefry2x32(raw[0], raw[1], jnp.zeros(shape, _U32), count)
    return _normal_from_bits(y0 ^ y1)


def uniform(key, shape=()):
    """``jax.random.uniform(key, shape)`` (float32 on [0, 1)) for a scalar key."""
    shape = tuple(shape)
    if not _fast(key) or math.prod(shape) >= 2**32:
        return jax.random.uniform(key, shape, jnp.float32)
    raw = jax.random.key_data(key)
    count = lax.iota(_U32, math.prod(shape)).reshape(shape)
    y0, y1 = threefry2x32(raw[0], raw[1], jnp.zeros(shape, _U32), count)
    one = _one_to_two(y0 ^ y1)
    return lax.max(np.float32(0), (one - np.float32(1)) * np.float32(1) + np.float32(0))


def _one_to_two(bits):
    """A float32 in [1, 2) whose mantissa is the 23 high ``bits``: ``jax.random``'s first
    step from bits to a uniform draw."""
    return lax.bitcast_convert_type((bits >> np.uint32(9)) | np.uint32(0x3F800000),
                                    jnp.float32)


def _normal_from_bits(bits):
    """``jax.random.normal``'s transform: uniform on [nextafter(−1, 0), 1) from the 23
    mantissa bits, then √2·erfinv."""
    one = _one_to_two(bits)
    low = np.nextafter(np.float32(-1), np.float32(0))
    u = jnp.maximum(low, (one - np.float32(1)) * (np.float32(1) - low) + low)
    return np.float32(np.sqrt(2)) * lax.erf_inv(u)


# ----------------------------------------------------------------------------- windows


def _step_rows(k0, k1, start, size: int):
    """``normal(fold_in(key_i, start_i), (size,))`` for the raw key words ``k0[i], k1[i]``,
    laid out ``[size, m]``: one loop along the long row axis ``m``."""
    m = k0.shape[0]
    a0, a1 = threefry2x32(k0, k1, jnp.zeros((m,), _U32), start)
    y0, y1 = threefry2x32(a0[None], a1[None], jnp.zeros((size, m), _U32),
                          lax.broadcasted_iota(_U32, (size, m), 0))
    return _normal_from_bits(y0 ^ y1)


def _window_rows(raw, start, count: int, shape: tuple[int, ...]):
    """Rows of ``normal(fold_in(key_i, start_i + j), shape)`` for ``j < count``.

    ``raw``: ``uint32[m, 2]`` key data, ``start``: ``uint32[m]``; returns
    ``float32[m, count, *shape]``. Each step's draw is laid out ``[size, m]``
    (:func:`_step_rows`), so every loop runs along the long axis ``m``; the transpose to
    the caller's layout is one copy at the end. Several steps draw in a scan over ``j``;
    one step draws inside a conditional (below).
    """
    m = raw.shape[0]
    size = math.prod(shape)
    if count == 1 and size > 1:
        # one step: every component of every row in one loop, inside a conditional whose
        # other branch is never taken. XLA does not fuse across a conditional, so the
        # draw stays a loop of its own along the long row axis, which XLA's CPU backend
        # vectorises and splits across cores. Left to fuse, it lands in its consumer (on
        # model averaging a reduction over the workers, the short parameter axis last) as
        # scalar code; drawn a component at a time in a scan, each loop runs on one core.
        # Row (h) of ``benchmarks/replay.py`` (its model averaging cell) measures this
        # form against the scan and the fused draw.
        def one_step(raw, start):  # the key words sliced inside: they fuse into the loop
            return _step_rows(raw[:, 0], raw[:, 1], start, size)

        def never(raw, start):  # an empty branch: the draw compiles once, not twice
            return jnp.zeros((size, m), jnp.float32)

        # true for every key (x | 1 is odd), but XLA does not fold it, which keeps the
        # conditional; were it ever folded, the draw would fuse, with the same numbers
        always = (raw[0, 0] | np.uint32(1)) != 0
        z = lax.cond(always, one_step, never, raw, start)  # [size, m]
        return z.T.reshape((m, 1) + shape)
    k0, k1 = raw[:, 0], raw[:, 1]
    _, z = lax.scan(lambda _, j: (None, _step_rows(k0, k1, start + j, size)), None,
                    jnp.arange(count, dtype=_U32))  # [count, size, m]
    return jnp.transpose(z, (2, 0, 1)).reshape((m, count) + shape)


def _make_window(count: int, shape: tuple[int, ...]):
    @custom_vmap
    def window(raw, start):
        return _window_rows(raw, start, count, shape)

    @window.def_vmap
    def _batched(size, batched, raw, start):
        # fold the batch axis into the rows, so nested vmaps end in one flat draw
        raw_batched, start_batched = batched
        if not raw_batched:
            raw = jnp.broadcast_to(raw, (size,) + raw.shape)
        if not start_batched:
            start = jnp.broadcast_to(start, (size,) + start.shape)
        m = raw.shape[1]
        rows = window(raw.reshape(size * m, 2), start.reshape(size * m))
        return rows.reshape((size, m, count) + shape), True

    return window


_WINDOWS: dict = {}


def normal_window(key, start, count: int, shape=()):
    """``stack([normal(fold_in(key, start + j), shape) for j in range(count)])``, float32.

    The noise of ``count`` consecutive local steps drawn at once; the same bits as the
    per-step draws (tested). Under ``vmap`` every batch axis is folded into one flat
    draw, which XLA vectorises on CPU where the per-step draws (laid out with the short
    parameter axis last) run as scalar code.
    """
    shape = tuple(shape)
    if not _fast(key):
        return jnp.stack([jax.random.normal(jax.random.fold_in(key, start + j), shape,
                                            jnp.float32) for j in range(count)])
    if (count, shape) not in _WINDOWS:
        _WINDOWS[(count, shape)] = _make_window(count, shape)
    raw = jax.random.key_data(key)
    start = _as_u32(start)
    return _WINDOWS[(count, shape)](raw[None], start[None])[0]
