"""The rule protocol: states, infos, and the two kinds of rule.

A rule is a ``NamedTuple`` of pure functions (optax / blackjax style). Its state lives
in the ``NamedTuple`` states below and nowhere else; hyperparameters are closed over by
the factory that builds the rule. Real-valued hyperparameters may be JAX arrays (traced
values): executors rebuild a declared rule inside the compiled function from its
``structure`` and its ``values``, so a new value never recompiles.

Asynchronous rules split into *local work* (λ steps of an optax inner optimizer on one
worker) and one atomic *exchange* at the server (commit, then pull). Synchronous rules
are one *round* per worker, written with collectives over the named axis
``"workers"``; the same function runs under ``jax.vmap(..., axis_name="workers")`` in
the replay engine and in a ``jax.shard_map`` program over the mesh axis ``"workers"`` on
devices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array
Params = Any  # a pytree of arrays (asynclab's problems use one flat vector)

#: The named axis over which synchronous rules take collectives.
AXIS = "workers"

#: ``gradient(params, key, worker, step) -> grads``, see ``asynclab.problems.stochastic_gradient``.
GradientFn = Callable[[Params, Array, Array, Array], Params]


class WorkerState(NamedTuple):
    """What one worker carries between two exchanges.

    Attributes:
      params: the worker's parameters θᵏ.
      inner_state: the state of its optax inner optimizer.
      pulled_center: the centre θ̃_pull it last pulled.
      pulled_clock: the server clock c_pull at that pull.
      steps: local steps done so far, attempted ones included when an early-stop test
        skips some (selects the worker's batch and noise).
    """

    params: Params
    inner_state: Any
    pulled_center: Params
    pulled_clock: Array
    steps: Array


class ServerState(NamedTuple):
    """What the parameter server carries.

    Attributes:
      center: the central variable θ̃.
      clock: number of commits (or rounds) applied.
      outer_state: the state of the server's outer optimizer (server momentum, DiLoCo's
        Nesterov), or () when the server adds updates as they come.
      extra: state of the rule's server-side scaling (gap-aware's EMA of g²), or ().
    """

    center: Params
    clock: Array
    outer_state: Any = ()
    extra: Any = ()


class ExchangeInfo(NamedTuple):
    """Diagnostics of one exchange or round, recorded but not carried.

    Attributes:
      staleness: τ = c − c_pull, the commits by others since this worker pulled.
      scale: the factor the server applied to the commit (1 for plain addition).
    """

    staleness: Array
    scale: Array


class AsynchronousRule(NamedTuple):
    """An asynchronous rule: local work, then one atomic exchange with the server.

    Attributes:
      name: registry name.
      init_server: ``center -> ServerState``.
      init_worker: ``(params, server) -> WorkerState``.
      local: ``(worker, gradient, key, worker_id) -> worker``; ``key`` is the worker's own
        key, folded with each local step index to draw that step's noise.
      exchange: ``(server, worker) -> (server, worker, ExchangeInfo)``.
      hyperparameters: the values the rule was built with (for records and display).
      local_steps: λ, local steps per exchange (what a schedule must be made for).
      group_size: workers per synchronous group (``mixed``), 1 otherwise.
      warmup_rounds: rounds with one local step before λ applies (synchronous only).
      structure: ``(name, static hyperparameters)`` of a rule built by a declared
        factory, the key under which executors cache compilations; None for a rule
        assembled by hand from parts (cached by identity).
      values: the traced hyperparameters, ``name -> value``; executors pass them to the
        compiled replay as an argument, so new values do not recompile.
    """

    name: str
    init_server: Callable[[Params], ServerState]
    init_worker: Callable[[Params, ServerState], WorkerState]
    local: Callable[[WorkerState, GradientFn, Array, Array], WorkerState]
    exchange: Callable[[ServerState, WorkerState], tuple[ServerState, WorkerState, ExchangeInfo]]
    hyperparameters: dict
    local_steps: int = 1
    group_size: int = 1
    warmup_rounds: int = 0
    structure: tuple | None = None
    values: Mapping[str, Any] = MappingProxyType({})

    @property
    def synchronous(self) -> bool:
        return False


class SynchronousRule(NamedTuple):
    """A synchronous rule: local work on every worker, then one collective synchronisation.

    Attributes:
      name: registry name.
      init_server: ``center -> ServerState``.
      init_worker: ``(params, server) -> WorkerState``.
      local: ``(worker, gradient, key, worker_id) -> worker``, as for asynchronous rules.
      synchronize: ``(server, worker) -> (server, worker, ExchangeInfo)``, called for every
        worker at once under the named axis ``"workers"`` (``jax.vmap`` in the replay,
        ``jax.shard_map`` on devices); the server it returns is computed from collectives and
        so is the same on every worker.
      hyperparameters, local_steps, group_size, warmup_rounds, structure, values: as for
        :class:`AsynchronousRule`.
    """

    name: str
    init_server: Callable[[Params], ServerState]
    init_worker: Callable[[Params, ServerState], WorkerState]
    local: Callable[[WorkerState, GradientFn, Array, Array], WorkerState]
    synchronize: Callable[[ServerState, WorkerState], tuple[ServerState, WorkerState, ExchangeInfo]]
    hyperparameters: dict
    local_steps: int = 1
    group_size: int = 1
    warmup_rounds: int = 0
    structure: tuple | None = None
    values: Mapping[str, Any] = MappingProxyType({})

    @property
    def synchronous(self) -> bool:
        return True


Rule = AsynchronousRule | SynchronousRule


def server_at(center: Params, outer_state: Any = (), extra: Any = ()) -> ServerState:
    """A server holding ``center`` with its clock at zero."""
    return ServerState(center=center, clock=jnp.zeros((), jnp.int32), outer_state=outer_state,
                       extra=extra)
