"""Several machines: JAX's own multi-controller runtime, the same pmap program over all
global devices.

Every process runs the same script: it calls :func:`initialize` first (before any other
JAX call), then :func:`asynclab.backends.run_pmap` with a trace of ``jax.device_count()``
workers. Each process feeds its own devices; the collectives span all of them.

Example (two machines with 4 GPUs each, one process per machine)::

    initialize("10.0.0.1:1234", num_processes=2, process_id=0)  # 1 on the other machine
    run = run_pmap(rule, problem, simulate_sync(Cluster(workers=8), rounds=1000))
"""

from __future__ import annotations

from collections.abc import Sequence

import jax

from .._errors import ConfigError


def initialize(coordinator: str, num_processes: int, process_id: int,
               local_devices: Sequence[int] | int | None = None, *,
               cpu_collectives: str | None = "gloo") -> None:
    """Join a multi-process JAX runtime (``jax.distributed.initialize``).

    Args:
      coordinator: ``"host:port"`` of process 0, reachable from every process.
      num_processes: number of processes.
      process_id: this process's index, 0 to ``num_processes - 1``.
      local_devices: the local device ids this process uses (``local_device_ids``), or
        an int: the number of simulated CPU devices of this process (the CPU platform is
        then selected, whatever accelerator is installed).
      cpu_collectives: the implementation of collectives across processes on CPU devices
        (``jax_cpu_collectives_implementation``: "gloo", "mpi"); None leaves it alone.
        GPUs use NCCL regardless.

    Raises:
      ConfigError: for an impossible process layout.
    """
    if int(num_processes) != num_processes or num_processes < 1:
        raise ConfigError(f"num_processes must be an integer >= 1, got {num_processes!r}")
    if int(process_id) != process_id or not 0 <= process_id < num_processes:
        raise ConfigError(
            f"process_id must be an integer in [0, {num_processes}), got {process_id!r}")
    if ":" not in str(coordinator):
        raise ConfigError(f"coordinator must be 'host:port', got {coordinator!r}")
    if cpu_collectives is not None:
        jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    ids = None
    if isinstance(local_devices, int):
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_num_cpu_devices", local_devices)
    elif local_devices is not None:
        ids = list(local_devices)
    jax.distributed.initialize(coordinator_address=str(coordinator),
                               num_processes=int(num_processes), process_id=int(process_id),
                               local_device_ids=ids)
