"""The parts rules are made of: local work, commit, server apply, pull.

A rule is a composition of these (see ``_catalogue.py``); two rules that share a part
call the same function.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from .._errors import ConfigError
from ._base import (
    AXIS,
    AsynchronousRule,
    ExchangeInfo,
    GradientFn,
    Params,
    ServerState,
    WorkerState,
    server_at,
)

# ----------------------------------------------------------------------------- checks


def check_positive(rule: str, name: str, value) -> float:
    """``value`` as a float, or a ConfigError naming the rule and the parameter."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{rule}: {name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{rule}: {name} must be a finite number > 0, got {value}")
    return value


def check_count(rule: str, name: str, value) -> int:
    """``value`` as an int >= 1, or a ConfigError naming the rule and the parameter."""
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{rule}: {name} must be an integer >= 1, got {value!r}") from None
    if as_int != value or as_int < 1:
        raise ConfigError(f"{rule}: {name} must be an integer >= 1, got {value!r}")
    return as_int


# ----------------------------------------------------------------------------- local work


def local_work(inner: optax.GradientTransformation, local_steps: int):
    """λ steps of the inner optimizer from the worker's current parameters.

    Step ``s`` of worker ``k`` draws its batch and noise from ``(k, s)`` alone
    (``fold_in(key, s)``), so the numbers do not depend on the order in which an
    executor visits the workers.
    """

    def local(worker: WorkerState, gradient: GradientFn, key, worker_id) -> WorkerState:
        def step(carry, i):
            params, inner_state = carry
            index = worker.steps + i
            grads = gradient(params, jax.random.fold_in(key, index), worker_id, index)
            updates, inner_state = inner.update(grads, inner_state, params)
            return (optax.apply_updates(params, updates), inner_state), None

        (params, inner_state), _ = jax.lax.scan(
            step, (worker.params, worker.inner_state), jnp.arange(local_steps, dtype=jnp.int32),
            unroll=min(local_steps, 4),
        )
        return worker._replace(params=params, inner_state=inner_state,
                               steps=worker.steps + local_steps)

    return local


# ----------------------------------------------------------------------------- init


def start_at_center(inner: optax.GradientTransformation):
    """Workers begin by pulling the centre (asynchronous rules, synchronous SGD)."""

    def init_worker(params: Params, server: ServerState) -> WorkerState:
        del params
        return WorkerState(
            params=server.center,
            inner_state=inner.init(server.center),
            pulled_center=server.center,
            pulled_clock=server.clock,
            steps=jnp.zeros((), jnp.int32),
        )

    return init_worker


def start_at_own(inner: optax.GradientTransformation):
    """Workers begin at their own parameters (model averaging with random starts)."""

    def init_worker(params: Params, server: ServerState) -> WorkerState:
        return WorkerState(
            params=params,
            inner_state=inner.init(params),
            pulled_center=server.center,
            pulled_clock=server.clock,
            steps=jnp.zeros((), jnp.int32),
        )

    return init_worker


# ----------------------------------------------------------------------------- commits


def accumulated_step(worker: WorkerState) -> Params:
    """Δ = a = θᵏ − θ̃_pull, the step the worker took since it pulled (DOWNPOUR)."""
    return jax.tree.map(jnp.subtract, worker.params, worker.pulled_center)


# ----------------------------------------------------------------------------- server apply


def add(server: ServerState, delta: Params, worker: WorkerState, staleness):
    """θ̃ ← θ̃ + Δ. Returns the new centre and the scale applied (1)."""
    del worker, staleness
    center = jax.tree.map(jnp.add, server.center, delta)
    return center, jnp.ones((), jnp.float32)


# ----------------------------------------------------------------------------- pulls


def reset_to_center(server: ServerState, worker: WorkerState) -> WorkerState:
    """θᵏ ← θ̃: the worker continues from the centre it pulls."""
    return worker._replace(params=server.center, pulled_center=server.center,
                           pulled_clock=server.clock)


def keep_params(server: ServerState, worker: WorkerState) -> WorkerState:
    """The worker keeps its parameters and only notes the centre it saw."""
    return worker._replace(pulled_center=server.center, pulled_clock=server.clock)


# ----------------------------------------------------------------------------- composition

Commit = Callable[[WorkerState], Params]
Apply = Callable[[ServerState, Params, WorkerState, jax.Array], tuple[Params, jax.Array]]
Pull = Callable[[ServerState, WorkerState], WorkerState]


def exchange_of(commit: Commit, apply: Apply, pull: Pull):
    """One atomic server interaction: commit, apply, advance the clock, pull."""

    def exchange(server: ServerState, worker: WorkerState):
        staleness = server.clock - worker.pulled_clock
        center, scale = apply(server, commit(worker), worker, staleness)
        server = server._replace(center=center, clock=server.clock + 1)
        return server, pull(server, worker), ExchangeInfo(staleness=staleness, scale=scale)

    return exchange


def asynchronous(
    name: str,
    *,
    inner: optax.GradientTransformation,
    local_steps: int,
    commit: Commit,
    apply: Apply,
    pull: Pull,
    hyperparameters: dict,
) -> AsynchronousRule:
    """An asynchronous rule from its parts."""
    return AsynchronousRule(
        name=name,
        init_server=server_at,
        init_worker=start_at_center(inner),
        local=local_work(inner, local_steps),
        exchange=exchange_of(commit, apply, pull),
        hyperparameters=hyperparameters,
    )


def parameters(worker: WorkerState) -> Params:
    """Δ = θᵏ: the worker sends its parameters (sequential SGD)."""
    return worker.params


def replace(server: ServerState, params: Params, worker: WorkerState, staleness):
    """θ̃ ← what was committed."""
    del server, worker, staleness
    return params, jnp.ones((), jnp.float32)


def average_params(server: ServerState, worker: WorkerState):
    """θ̃ ← mean_k θᵏ, an all-reduce over the named worker axis."""
    del server
    return jax.lax.pmean(worker.params, AXIS), jnp.ones((), jnp.float32)


Aggregate = Callable[[ServerState, WorkerState], tuple[Params, jax.Array]]


def synchronize_of(aggregate: Aggregate, pull: Pull):
    """One synchronous round's communication: aggregate over workers, advance, pull."""

    def synchronize(server: ServerState, worker: WorkerState):
        center, scale = aggregate(server, worker)
        server = server._replace(center=center, clock=server.clock + 1)
        staleness = jnp.zeros((), jnp.int32)
        return server, pull(server, worker), ExchangeInfo(staleness=staleness, scale=scale)

    return synchronize
