"""The rule protocol: states, infos, and the rule.

A rule is a ``NamedTuple`` of pure functions (optax / blackjax style). Its state lives
in the ``NamedTuple`` states below and nowhere else; hyperparameters are closed over by
the factory that builds the rule. Real-valued hyperparameters may be JAX arrays (traced
values): executors rebuild a declared rule inside the compiled function from its
``structure`` and its ``values``, so a new value never recompiles.

A state holds only what the rule's parts read (optax's convention): a momentum given as
None has no buffer, a pulled centre that no part reads is None. Which fields are
present is part of the rule's static structure; the values stay traced.

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

from .._facts import ScheduleFacts

Array = jax.Array
Params = Any  # a pytree of arrays (a flat vector for the surfaces, a dict for the nets)

#: The named axis over which synchronous rules take collectives.
AXIS = "workers"

#: A problem's gradient oracle (``asynclab.problems.Oracle``, see
#: ``asynclab.problems.stochastic_gradient``), or a plain
#: ``gradient(params, key, worker, step) -> grads``.
GradientFn = Callable[[Params, Array, Array, Array], Params]


class WorkerState(NamedTuple):
    """What one worker carries between two exchanges.

    Attributes:
      params: the worker's parameters θᵏ.
      inner_state: the state of its optax inner optimizer.
      pulled_center: the centre θ̃_pull it last pulled, or None where no part of the rule
        reads it between two exchanges: a worker that resets to the centre holds it as
        its parameters, and its local work hands it to the exchange (see
        ``parts.remember_pull``).
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
      outer_state: the state of the server's outer optimizer (server momentum's previous
        centre, DiLoCo's outer momentum), or () when the server adds updates as they come.
      extra: state of the rule's server-side apply part (gap-aware's EMA of g²,
        asynchronous DiLoCo's outer optimizer), or ().
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


class Capabilities(NamedTuple):
    """What a built rule can do: executors ask this rather than a list of rule names.

    Attributes:
      resets: its workers reset to the centre at a pull (θᵏ ← θ̃), read off its pull part
        (:func:`~asynclab.rules.parts.reset_to_center`). Their late work in a
        semi-synchronous round is an update θᵏ − θ̃_pull that can be added to a newer
        centre, so such a rule can count late work stale (``SemiSync(late="stale")``).
      stepwise: it may be replayed one local step per compiled event
        (``asynclab.replay(..., stepwise=True)``): its declaration says so
        (``declare(..., stepwise=True)``: λ sets only the length of its local work) and
        its parts allow it (synchronous, plain local work: λ steps of the inner optimizer,
        nothing masked or skipped; no warm-up rounds).
      state: the options that add state when given, ``name -> what they add``, as its
        declaration lists them (whether each is given is in ``Rule.structure``).

    A rule assembled by hand answers conservatively: ``resets`` only where it was
    composed by :func:`~asynclab.rules.parts.asynchronous` or
    :func:`~asynclab.rules.parts.synchronous` with the pull
    :func:`~asynclab.rules.parts.reset_to_center`, never ``stepwise`` (a step-by-step
    replay rebuilds the rule with λ = 1 through its declaration), no ``state``.
    """

    resets: bool = False
    stepwise: bool = False
    state: Mapping[str, str] = MappingProxyType({})


class Rule(NamedTuple):
    """A rule: local work on a worker, then its exchange with the server.

    An asynchronous rule's ``exchange`` is one atomic interaction of one worker with the
    server (commit, then pull). A synchronous rule's ``exchange`` is one round's
    synchronisation, called for every worker at once under the named axis ``"workers"``
    (``jax.vmap`` in the replay, ``jax.shard_map`` on devices); the server it returns is
    computed from collectives and so is the same on every worker.

    Attributes:
      name: registry name.
      synchronous: True for a synchronous rule (one round per event), False for an
        asynchronous one (one exchange per event).
      init_server: ``center -> ServerState``.
      init_worker: ``(params, server) -> WorkerState``.
      local: ``(worker, gradient, key, worker_id) -> worker``; ``key`` is the worker's own
        key, folded with each local step index to draw that step's noise.
      exchange: ``(server, worker) -> (server, worker, ExchangeInfo)``.
      hyperparameters: the values the rule was built with (for records and display).
      local_steps: λ, local steps per exchange (what a schedule must be made for).
      group_size: workers per synchronous group (``mixed``), 1 otherwise.
      warmup_rounds: rounds with one local step before λ applies (synchronous only).
      structure: ``(name, static hyperparameters, absent options)`` of a rule built by a
        declared factory, the key under which executors cache compilations; None for a
        rule assembled by hand from parts (cached by identity).
      values: the traced hyperparameters, ``name -> value``; executors pass them to the
        compiled replay as an argument, so new values do not recompile.
      worker_steps: one window per worker (asynchronous DiLoCo's dynamic local updates),
        what the schedule is then made for; None when every worker takes ``local_steps``
        (which is otherwise the largest window).
      capabilities: what the rule can do (:class:`Capabilities`), set by the parts it is
        composed of and its declaration.
    """

    name: str
    synchronous: bool
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
    worker_steps: tuple[int, ...] | None = None
    capabilities: Capabilities = Capabilities()

    @property
    def schedule_steps(self) -> int | tuple[int, ...]:
        """The local steps a schedule is made for: ``worker_steps`` when given, else λ."""
        return self.local_steps if self.worker_steps is None else self.worker_steps

    @property
    def schedule_facts(self) -> ScheduleFacts:
        """The facts a schedule is made for (:class:`ScheduleFacts`)."""
        return ScheduleFacts(self.synchronous, self.schedule_steps, self.group_size,
                             self.warmup_rounds if self.synchronous else 0)

def server_at(center: Params, outer_state: Any = (), extra: Any = ()) -> ServerState:
    """A server holding ``center`` with its clock at zero."""
    return ServerState(center=center, clock=jnp.zeros((), jnp.int32), outer_state=outer_state,
                       extra=extra)
