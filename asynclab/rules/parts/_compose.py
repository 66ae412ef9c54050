"""Rules composed of parts: an asynchronous rule's exchange, a synchronous rule's
synchronisation, the states they carry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from ..._errors import ConfigError
from .._base import (
    AXIS,
    Capabilities,
    ExchangeInfo,
    Params,
    Rule,
    ServerState,
    WorkerState,
    server_at,
)
from .._building import current
from ._exchange import reset_to_center
from ._local import (
    local_work,
    remember_pull,
    start_at_center,
    start_at_own,
    worker_local_work,
)
from ._optimizers import Outer


def _stored(pull: Pull, keep_pulled: bool) -> Pull:
    """``pull``, storing the pulled centre only with ``keep_pulled``."""
    if keep_pulled:
        return pull

    def stored(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
        return pull(old, server, worker)._replace(pulled_center=None)

    return stored


Commit = Callable[[WorkerState], Params]


Apply = Callable[[ServerState, Params, WorkerState, jax.Array], tuple[Params, jax.Array, Any]]


Aggregate = Callable[[ServerState, WorkerState], tuple[Params, jax.Array]]


Pull = Callable[[ServerState, ServerState, WorkerState], WorkerState]


def _outer_step(outer: Outer | None, server: ServerState, proposed):
    """Move the centre to ``proposed``, through the outer update if there is one."""
    if outer is None:
        return proposed, server.outer_state
    return outer.step(server.center, proposed, server.outer_state)


def exchange_of(commit: Commit, apply: Apply, pull: Pull, outer=None, keep_pulled=False):
    """One atomic server interaction: commit, apply (through ``outer``), advance, pull;
    the worker stores the centre it pulled only with ``keep_pulled``."""
    pull = _stored(pull, keep_pulled)

    def exchange(server: ServerState, worker: WorkerState):
        staleness = server.clock - worker.pulled_clock
        proposed, scale, extra = apply(server, commit(worker), worker, staleness)
        center, outer_state = _outer_step(outer, server, proposed)
        new = ServerState(center=center, clock=server.clock + 1, outer_state=outer_state,
                          extra=extra)
        return new, pull(server, new, worker), ExchangeInfo(staleness=staleness, scale=scale)

    return exchange


def synchronize_of(aggregate: Aggregate, pull: Pull, outer=None, keep_pulled=False):
    """One synchronous round's communication: aggregate, outer step, advance, pull; the
    worker stores the centre it pulled only with ``keep_pulled``."""
    pull = _stored(pull, keep_pulled)

    def synchronize(server: ServerState, worker: WorkerState):
        proposed, scale = aggregate(server, worker)
        center, outer_state = _outer_step(outer, server, proposed)
        new = server._replace(center=center, clock=server.clock + 1, outer_state=outer_state)
        staleness = jnp.zeros((), jnp.int32)
        return new, pull(server, new, worker), ExchangeInfo(staleness=staleness, scale=scale)

    return synchronize


def _where(keep, new, old):
    """``new`` where ``keep`` (a scalar boolean) else ``old``, leaf by leaf."""
    return jax.tree.map(lambda a, b: jnp.where(keep, a, b), new, old)


def partial_round(exchange, server: ServerState, before: WorkerState, local: WorkerState,
                  counted, stale: bool):
    """One worker's part of a semi-synchronous round, under the named worker axis.

    ``counted`` (a boolean per worker) says whose commit the round's aggregate takes:
    :func:`~asynclab.rules.parts.worker_mean` and
    :func:`~asynclab.rules.parts.worker_count` then cover those workers only (a masked
    ``psum`` over the axis divided by their number), so every executor that runs the
    rule's ``exchange`` under the axis — the replay's ``vmap``, the device executor's
    ``shard_map`` — runs the masked round unchanged.

    - discard (``stale=False``): a worker that did not count contributes nothing, its
      local work is thrown away (parameters and inner optimizer state as in ``before``;
      its step counter advances, so its batches are spent) and it takes the round's
      pull like the others. With every worker counted this is the rule's own exchange,
      the same arithmetic.
    - stale: the commit of a counted worker is its update since its last pull,
      rebased on the current centre, ``θ̃ + (θᵏ − θ̃ᵏ_pull)``; the rule's aggregate
      then averages updates (model averaging: θ̃ ← θ̃ + mean_counted (θᵏ − θ̃ᵏ_pull)). A
      worker that did not count keeps ``before`` (its work is done once, when it counts)
      and does not pull.

    A round in which nobody counted leaves the server and every worker as they were.

    Args:
      exchange: the rule's synchronous exchange ``(server, worker) -> (server, worker,
        info)``.
      server: the server state before the round.
      before: this worker's state before its local work.
      local: its state after its local work (``rule.local``).
      counted: whether this worker counts in the round (a boolean scalar).
      stale: late work counts later (True) or is discarded (False).

    Returns:
      ``(server, worker)`` after the round.
    """
    from ._exchange import padded_workers

    number = jax.lax.psum(counted.astype(jnp.int32), AXIS)
    if stale:
        if local.pulled_center is None:
            raise ConfigError("late='stale' needs a rule whose workers reset to the centre "
                              "(their update θᵏ − θ̃_pull is what a stale commit carries)")
        update = jax.tree.map(
            lambda c, p, q: c + (p - q), server.center, local.params, local.pulled_center)
        sent = local._replace(params=update, pulled_center=server.center)
    else:
        idle = local._replace(params=before.params, inner_state=before.inner_state)
        sent = _where(counted, local, idle)
    with padded_workers(counted, number):
        new_server, after, _ = exchange(server, sent)
    if stale:
        after = _where(counted, after, before)
    empty = number == 0
    return _where(empty, server, new_server), _where(empty, before, after)


def _server_init(outer, init_extra):
    def init_server(center) -> ServerState:
        outer_state = () if outer is None else outer.init(center)
        extra = () if init_extra is None else init_extra(center)
        return server_at(center, outer_state, extra)

    return init_server


def _local(inner, local_steps, local, pull, keep_pulled):
    """The rule's local work; a worker that resets to the centre and does not store the
    centre it pulled hands its starting parameters to the exchange (:func:`remember_pull`)."""
    local = local or local_work(inner, local_steps)
    return remember_pull(local) if pull is reset_to_center and not keep_pulled else local


def _built(name, inner, local_steps, local, pull, outer, init_extra, hyperparameters,
           keep_pulled) -> dict:
    """The fields of a :class:`Rule` that both kinds build alike from their parts: its
    name, the server's start, the local work, the hyperparameters and λ."""
    return {"name": _name(name),
            "init_server": _server_init(outer, init_extra),
            "local": _local(inner, local_steps, local, pull, keep_pulled),
            "hyperparameters": hyperparameters,
            "local_steps": int(local_steps)}


def _name(name: str | None) -> str:
    """``name``, else the declared rule's (the factory being run), else ``"custom"``."""
    if name is not None:
        return name
    declaration = current()
    return "custom" if declaration is None else declaration.name


def _capabilities(pull: Pull, synchronous: bool, local, warmup_rounds: int) -> Capabilities:
    """What the parts allow: a reset where the pull is :func:`reset_to_center`; a
    step-by-step replay where the declaration claims it and the local work is plain (no
    custom local work, no warm-up rounds), synchronous rules only."""
    declaration = current()
    stepwise = (synchronous and local is None and not warmup_rounds
                and declaration is not None and declaration.stepwise)
    return Capabilities(resets=pull is reset_to_center, stepwise=stepwise)


def asynchronous(
    name: str | None = None,
    *,
    inner: optax.GradientTransformation,
    local_steps: int,
    commit: Commit,
    apply: Apply,
    pull: Pull,
    hyperparameters: dict,
    outer: Outer | None = None,
    init_extra: Callable[[Params], Any] | None = None,
    local=None,
    keep_pulled: bool = False,
    worker_steps: tuple[int, ...] | None = None,
) -> Rule:
    """An asynchronous rule from its parts.

    The worker stores the centre it pulled only with ``keep_pulled`` (for parts that read
    it and a pull that does not reset the worker); a worker that resets to the centre
    hands it to the exchange from its local work. ``worker_steps`` gives every worker a
    window of its own (:func:`worker_local_work`; ``local_steps`` is then their maximum).
    ``name`` defaults to the declared rule's (inside its factory). The rule's
    capabilities are read off the parts: its workers reset where ``pull`` is
    :func:`reset_to_center`.
    """
    capabilities = _capabilities(pull, False, local, 0)
    if worker_steps is not None:
        local = local or worker_local_work(inner, worker_steps)
        local_steps = max(worker_steps)
    return Rule(
        **_built(name, inner, local_steps, local, pull, outer, init_extra, hyperparameters,
                 keep_pulled),
        synchronous=False,
        init_worker=start_at_center(inner, keep_pulled=keep_pulled),
        exchange=exchange_of(commit, apply, pull, outer, keep_pulled),
        worker_steps=worker_steps,
        capabilities=capabilities,
    )


def synchronous(
    name: str | None = None,
    *,
    inner: optax.GradientTransformation,
    local_steps: int,
    aggregate: Aggregate,
    pull: Pull,
    hyperparameters: dict,
    outer: Outer | None = None,
    local=None,
    warmup_rounds: int = 0,
    keep_pulled: bool = False,
) -> Rule:
    """A synchronous rule from its parts (``keep_pulled`` and ``name`` as for
    :func:`asynchronous`).

    Its capabilities are read off the parts: its workers reset where ``pull`` is
    :func:`reset_to_center`; it may be replayed step by step where its declaration says
    so (``declare(..., stepwise=True)``), its local work is the plain one (no ``local``)
    and it has no warm-up rounds.
    """
    return Rule(
        **_built(name, inner, local_steps, local, pull, outer, None, hyperparameters,
                 keep_pulled),
        synchronous=True,
        init_worker=start_at_own(inner, keep_pulled=keep_pulled),
        exchange=synchronize_of(aggregate, pull, outer, keep_pulled),
        warmup_rounds=int(warmup_rounds),
        capabilities=_capabilities(pull, True, local, warmup_rounds),
    )
