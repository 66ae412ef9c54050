"""Where a replay's batch (seeds, grid points) lives: the devices it is split over, one
mesh axis ``"runs"``, and the transfers to and from the host."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._errors import ConfigError
from ._core import (
    compiler_options,
)

#: The mesh axis over which a replay's batch (seeds, grid points) is split.
BATCH_AXIS = "runs"


def replay_devices(devices=None) -> tuple:
    """The devices a replay splits its runs over: ``devices`` checked.

    None: every device of JAX's default backend (this process's, or every process's
    after ``asynclab.backends.initialize``); an int k: the first k of them; a sequence of
    ``jax.Device``: those. A bad value is a ``ConfigError`` naming ``devices``.
    """
    local = jax.devices() if jax.process_count() > 1 else jax.local_devices()
    if devices is None:
        return tuple(local)
    if isinstance(devices, bool):
        raise ConfigError(f"devices must be a count or a list of devices, got {devices!r}")
    if isinstance(devices, int | np.integer):
        if not 1 <= devices <= len(local):
            raise ConfigError(f"devices={devices}: this process has {len(local)} local "
                              f"{local[0].platform} device(s); give 1 to {len(local)}")
        return tuple(local[:int(devices)])
    if isinstance(devices, str) or not isinstance(devices, Sequence) or not devices:
        raise ConfigError(f"devices must be a count or a list of devices, got {devices!r}")
    chosen = tuple(devices)
    unknown = [d for d in chosen if d not in local]
    if unknown:
        raise ConfigError(f"devices: {unknown} are not devices of this run "
                          f"({', '.join(map(str, local))})")
    if len(set(chosen)) != len(chosen):
        raise ConfigError(f"devices: a device is named twice in {list(chosen)}")
    return chosen


@functools.cache
def _mesh(devices: tuple) -> Mesh:
    return Mesh(np.asarray(devices, dtype=object), (BATCH_AXIS,))


def _spans_processes(devices: tuple) -> bool:
    return any(d.process_index != jax.process_index() for d in devices)


def _put(x, devices: tuple, split: bool = True):
    """Host data ``x`` as the input of a replay over ``devices``: as it is on one
    process; across processes a global array (every process holds all of ``x``, as every
    process runs the same replay, and gives its own devices their part)."""
    if not _spans_processes(devices):
        return jnp.asarray(x)
    x = np.asarray(x)
    sharding = NamedSharding(_mesh(devices), PartitionSpec(BATCH_AXIS) if split
                             else PartitionSpec())
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def _host(tree):
    """A replay's output on this host: the whole batch, from every process's part."""
    def leaf(x):
        if getattr(x, "is_fully_addressable", True):
            return np.asarray(x)
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))

    return jax.tree.map(leaf, tree)


def _over_runs(fn, devices: tuple, in_specs, donate=()):
    """``fn`` (over a leading batch axis) jitted, and on several devices a ``shard_map``
    over the batch axis: each device replays its own runs, with no collective between
    them, so a run's numbers do not depend on how many devices share the batch."""
    options = compiler_options(devices[0].platform)
    if len(devices) == 1:
        return jax.jit(fn, donate_argnums=donate, compiler_options=options)
    mesh = _mesh(devices)
    split = PartitionSpec(BATCH_AXIS)
    specs = tuple(split if s else PartitionSpec() for s in in_specs)
    program = jax.shard_map(fn, mesh=mesh, in_specs=specs, out_specs=split, check_vma=False)
    return jax.jit(program, donate_argnums=donate, compiler_options=options)
