"""The device executor's mesh: one worker per device on the axis ``"workers"``, what is
replicated and what is split, and the devices a run may use."""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from .._errors import ConfigError
from ..engine._core import (
    compiler_options,
)
from ..rules import AXIS


def _mesh(devices) -> Mesh:
    """A one-axis mesh ``"workers"`` over the run's devices, worker k on ``devices[k]``."""
    return Mesh(np.asarray(devices, dtype=object), (AXIS,))


def _spec(axes):
    """The partition specs of ``in_axes``/``out_axes``-style axes (nested tuples of 0/None)."""
    if isinstance(axes, tuple):
        return tuple(_spec(a) for a in axes)
    return P(AXIS) if axes == 0 else P()


def _over_devices(fn, mesh: Mesh, in_axes, out_axes):
    """``fn`` once per device as a jitted ``shard_map`` program over the mesh axis.

    ``fn`` is written per device: an argument or result with axis ``0`` is one worker's
    row (laid out ``P("workers")`` across the mesh), one with ``None`` is the same on
    every device (``P()``). Collectives inside ``fn`` name ``AXIS``.
    """

    def per_device(*args):
        args = [jax.tree.map(lambda x: x[0], a) if axis == 0 else a
                for a, axis in zip(args, in_axes, strict=True)]
        return _add_rows(fn(*args), out_axes)

    program = jax.shard_map(per_device, mesh=mesh, in_specs=_spec(tuple(in_axes)),
                            out_specs=_spec(out_axes), check_vma=False)
    return jax.jit(program, compiler_options=compiler_options(mesh.devices.flat[0].platform))


def _add_rows(out, axes):
    if isinstance(axes, tuple):
        return tuple(_add_rows(o, a) for o, a in zip(out, axes, strict=True))
    return jax.tree.map(lambda x: x[None], out) if axes == 0 else out


def _replicate(tree, mesh: Mesh):
    """``tree`` (host values, the same in every process) copied onto every device."""
    sharding = NamedSharding(mesh, P())

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda _: x)

    return jax.tree.map(put, tree)


def _shard(rows, ids, mesh: Mesh):
    """``rows`` (leading axis: this process's workers ``ids``) placed one per device."""
    sharding = NamedSharding(mesh, P(AXIS))
    n = mesh.devices.size
    where = {int(g): i for i, g in enumerate(ids)}

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(
            (n,) + x.shape[1:], sharding, lambda index: x[where[index[0].start or 0]][None])

    return jax.tree.map(put, rows)


def _replica(x) -> np.ndarray:
    """A replicated array's value, read from one local device."""
    return np.asarray(x.addressable_shards[0].data)


def _rows(x) -> np.ndarray:
    """A stacked array's local rows, in the order of the mesh axis."""
    if x.is_fully_addressable:
        return np.asarray(x)
    shards = sorted(x.addressable_shards, key=lambda s: s.index[0].start or 0)
    return np.concatenate([np.asarray(s.data) for s in shards])


def _resolve_devices(n_workers: int, devices):
    """``(devices, ids)``: one device per worker, and the workers this process feeds."""
    available = jax.devices()
    if devices is None:
        if n_workers > len(available):
            raise ConfigError(
                f"the trace has {n_workers} workers but only {len(available)} "
                f"{available[0].platform} device(s) are available; the pmap backend runs "
                "one worker per device. Simulate CPU devices with "
                f"asynclab.backends.simulate_cpu_devices({n_workers}), or JAX_PLATFORMS=cpu "
                f"and XLA_FLAGS=--xla_force_host_platform_device_count={n_workers} in the "
                "environment before JAX starts."
            )
        devices = available[:n_workers]
    devices = list(devices)
    if len(devices) != n_workers:
        raise ConfigError(f"the trace has {n_workers} workers but {len(devices)} devices "
                          "were given; the pmap backend runs one worker per device")
    if len({d.id for d in devices}) != len(devices):
        raise ConfigError("devices must be distinct")
    if jax.process_count() > 1 and len(devices) != jax.device_count():
        raise ConfigError(
            f"a multi-process run uses every global device ({jax.device_count()}); the "
            f"trace has {n_workers} workers")
    ids = np.asarray([k for k, d in enumerate(devices)
                      if d.process_index == jax.process_index()], np.int64)
    return devices, ids
