"""The parts rules are made of: local work, commit, server apply, outer step, pull.

A rule is a composition of these (see ``_catalogue.py``); two rules that share a part
call the same function. Formulas: ``docs/rules.md``; a worker's accumulated step
is ``a = θᵏ − θ̃_pull``, its staleness ``τ = c − c_pull``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import _random, _validate
from .._errors import ConfigError
from .._oracle import as_oracle
from ._base import (
    AXIS,
    ExchangeInfo,
    GradientFn,
    Params,
    Rule,
    ServerState,
    WorkerState,
    server_at,
)

_ONE = 1.0

# ----------------------------------------------------------------------------- checks


def traced(value) -> bool:
    """True for a value being traced by JAX (inside ``jit``/``vmap``): such values skip
    the concrete checks below and flow into the arithmetic as they are."""
    return isinstance(value, jax.core.Tracer)


def _real(rule: str, name: str, value, **bounds) -> float:
    """``value`` checked by :func:`asynclab._validate.number` in float32, the precision the
    rules compute in; a concrete 0-d array (a grid's value) is read as its number first.
    A traced value (see :func:`traced`) is returned unchecked, as by every check of a
    real-valued hyperparameter here."""
    if traced(value):
        return value
    if not isinstance(value, numbers.Real) and getattr(value, "ndim", None) == 0 \
            and getattr(getattr(value, "dtype", None), "kind", "") in "fiu":
        value = value.item()
    return _validate.number(value, f"{rule}: {name}", dtype=np.float32, **bounds)


def check_positive(rule: str, name: str, value) -> float:
    """``value`` as a float > 0 (also in float32), or a ConfigError naming the rule and
    the parameter."""
    return _real(rule, name, value, low=0, low_open=True)


def check_nonnegative(rule: str, name: str, value) -> float:
    """``value`` as a float >= 0, or a ConfigError naming the rule and the parameter."""
    return _real(rule, name, value, low=0)


def check_momentum(rule: str, name: str, value) -> float:
    """A momentum in (−1, 1) in float32: negative values compensate the implicit
    momentum."""
    return _real(rule, name, value, low=-1, high=1, low_open=True, high_open=True)


def check_fraction(rule: str, name: str, value) -> float:
    """A number in (0, 1) in float32."""
    return _real(rule, name, value, low=0, high=1, low_open=True, high_open=True)


def check_count(rule: str, name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= minimum, or a ConfigError naming the rule and the parameter."""
    return _validate.count(value, f"{rule}: {name}", low=minimum)


def check_flag(rule: str, name: str, value) -> bool:
    if not isinstance(value, bool | int) or value not in (0, 1, True, False):
        raise ConfigError(f"{rule}: {name} must be true or false, got {value!r}")
    return bool(value)


# ----------------------------------------------------------------------------- optimizers


def worker_sgd(learning_rate: float, momentum: float | None = None,
               nesterov: bool = False) -> optax.GradientTransformation:
    """The inner optimizer: optax SGD, with per-worker momentum whose buffer survives pulls.

    ``momentum=None`` is plain SGD, with no buffer; any number (0.0 included) keeps a
    buffer per worker and may be a traced value (with 0 the buffer adds 0·m to each
    gradient, which leaves it unchanged).
    """
    return optax.sgd(learning_rate, momentum=momentum, nesterov=nesterov)


#: the inner optimizers the asynchronous rules take by name (``inner=``)
INNER_OPTIMIZERS = ("sgd", "adam")


def worker_optimizer(rule: str, inner: str, learning_rate, momentum=None,
                     nesterov: bool = False) -> optax.GradientTransformation:
    """The inner optimizer named ``inner``: ``"sgd"`` (:func:`worker_sgd`, with the worker
    momentum) or ``"adam"`` (``optax.adam(learning_rate)``, Kingma & Ba's defaults β₁ = 0.9,
    β₂ = 0.999, ε = 1e-8). Its state belongs to the worker and survives pulls.

    Adam keeps its own moments, so a worker momentum is refused with it (a concrete 0
    is accepted and adds nothing).
    """
    if inner == "sgd":
        return worker_sgd(learning_rate, momentum, nesterov)
    if inner == "adam":
        if momentum is not None and not traced(momentum) and momentum:
            raise ConfigError(f"{rule}: worker_momentum needs inner='sgd' (Adam keeps its "
                              f"own moments), got worker_momentum={momentum!r}")
        return optax.adam(learning_rate)
    raise ConfigError(f"{rule}: inner must be one of {', '.join(INNER_OPTIMIZERS)}, "
                      f"got {inner!r}")


class Outer(NamedTuple):
    """A server-side update of the centre: ``init(center) -> state`` and
    ``step(center, proposed, state) -> (new centre, state)``."""

    init: Callable[[Params], Any]
    step: Callable[[Params, Params, Any], tuple[Params, Any]]


def server_momentum(momentum) -> Outer | None:
    """Heavy ball at the server on the sequence of central updates (Mitliagkas et al.).

    θ̃_{t+1} = θ̃_t + Δ + μ (θ̃_t − θ̃_{t−1}), written as ``proposed + μ v`` with
    ``proposed = θ̃_t + Δ`` the rule's own update and ``v = θ̃_t − θ̃_{t−1}`` the state, so
    μ = 0 gives exactly the rule without momentum and μ may be a traced value.
    ``momentum=None`` is no outer step at all (None), and no state.
    """
    if momentum is None:
        return None

    def init(center):
        return jax.tree.map(jnp.zeros_like, center)

    def step(center, proposed, velocity):
        new = jax.tree.map(lambda p, v: p + jnp.asarray(momentum, v.dtype) * v, proposed,
                           velocity)
        return new, jax.tree.map(jnp.subtract, new, center)

    return Outer(init, step)


def outer_optimizer(optimizer: optax.GradientTransformation) -> Outer:
    """An optax optimizer at the server on the outer gradient θ̃ − proposed (DiLoCo)."""

    def step(center, proposed, state):
        outer_gradient = jax.tree.map(jnp.subtract, center, proposed)
        updates, state = optimizer.update(outer_gradient, state, center)
        return optax.apply_updates(center, updates), state

    return Outer(optimizer.init, step)


# ----------------------------------------------------------------------------- local work

ActiveSteps = Callable[[WorkerState], jax.Array]
StopTest = Callable[[Params, Params, WorkerState], jax.Array]


def local_work(inner: optax.GradientTransformation, local_steps: int, *,
               active_steps: ActiveSteps | None = None, stop: StopTest | None = None):
    """λ steps of the inner optimizer from the worker's current parameters.

    The worker's gradient oracle (a problem's :class:`~asynclab.problems.Oracle`, or
    a plain ``gradient(params, key, worker, step)`` called with ``fold_in(key, step)``)
    prepares the randomness of the λ steps at once and gives each step's gradient; step
    ``s`` of worker ``k`` depends on ``(key, k, s)`` alone, so the numbers do not depend
    on the order in which an executor visits the workers. Local work knows nothing of
    how the oracle makes its noise (additive, mini-batches, both).

    Args:
      inner: the optax inner optimizer.
      local_steps: λ, the number of steps (the scan length).
      active_steps: optional ``worker -> h``: only the first h of the λ steps are taken
        this time (post-local SGD's warm-up).
      stop: optional ``(grads, params, worker) -> bool``: once true, the remaining steps
        of this exchange are skipped (EASGD's equilibrium test); the step that finds it
        true is not taken. The step counter still advances by λ, so the next exchange
        draws fresh noise.
    """

    def local(worker: WorkerState, gradient: GradientFn, key, worker_id) -> WorkerState:
        limit = local_steps if active_steps is None else active_steps(worker)
        oracle = as_oracle(gradient)
        window = oracle.prepare(worker.params, key, worker_id, worker.steps, local_steps)

        def step(carry, i):
            params, inner_state, taken, done = carry
            # a skipped step's index is not reused: with a stop test every attempted
            # step consumes its own noise (a worker that stopped draws fresh noise next
            # round); post-local's inactive steps are simply not scheduled
            index = worker.steps + (i if stop is not None else taken)
            grads = oracle.gradient(params, window, index - worker.steps)
            if stop is not None:
                done = done | stop(grads, params, worker)
            live = (i < limit) & ~done
            updates, new_inner = inner.update(grads, inner_state, params)
            new_params = optax.apply_updates(params, updates)
            params, inner_state = jax.tree.map(
                lambda new, old: jnp.where(live, new, old), (new_params, new_inner),
                (params, inner_state))
            return (params, inner_state, taken + live.astype(jnp.int32), done), None

        masked = active_steps is not None or stop is not None
        if not masked:
            return _plain_local(inner, local_steps, worker, oracle, window)
        init = (worker.params, worker.inner_state, jnp.zeros((), jnp.int32),
                jnp.zeros((), bool))
        (params, inner_state, taken, _), _ = jax.lax.scan(
            step, init, jnp.arange(local_steps, dtype=jnp.int32))
        advanced = local_steps if stop is not None else taken
        return worker._replace(params=params, inner_state=inner_state,
                               steps=worker.steps + advanced)

    return local


def remember_pull(local):
    """The local work of a worker that resets to the centre it pulls: it stores no pulled
    centre between exchanges (its parameters are that centre when its work begins), and
    this hands the starting parameters to the exchange as ``pulled_center``."""

    def remembering(worker: WorkerState, gradient, key, worker_id) -> WorkerState:
        start = worker.params
        return local(worker, gradient, key, worker_id)._replace(pulled_center=start)

    return remembering


def _plain_local(inner, local_steps, worker, oracle, window):
    def step(carry, i):
        params, inner_state = carry
        grads = oracle.gradient(params, window, i)
        updates, inner_state = inner.update(grads, inner_state, params)
        return (optax.apply_updates(params, updates), inner_state), None

    (params, inner_state), _ = jax.lax.scan(
        step, (worker.params, worker.inner_state), jnp.arange(local_steps, dtype=jnp.int32),
        unroll=min(local_steps, 4),
    )
    return worker._replace(params=params, inner_state=inner_state,
                           steps=worker.steps + local_steps)


def group_local_work(inner: optax.GradientTransformation, local_steps: int, group_size: int):
    """Local work of a synchronous group: every member does λ steps, the group averages.

    Member ``j`` of group ``g`` is worker ``g·m + j`` for its data, and draws its noise
    from ``fold_in(group_key, j)``. The group's state holds the group's parameters and a
    stacked inner state, one per member.
    """
    member_local = local_work(inner, local_steps)

    def local(group: WorkerState, gradient: GradientFn, key, group_id) -> WorkerState:
        members = jnp.arange(group_size, dtype=jnp.int32)

        def one(inner_state, j):
            member = group._replace(inner_state=inner_state)
            # a group of one is a plain worker, with the worker's own key
            member_key = key if group_size == 1 else _random.fold_in(key, j)
            member = member_local(member, gradient, member_key, group_id * group_size + j)
            return member.params, member.inner_state

        params, inner_states = jax.vmap(one)(group.inner_state, members)
        mean = jax.tree.map(lambda x: jnp.mean(x, axis=0), params)
        return group._replace(params=mean, inner_state=inner_states,
                              steps=group.steps + local_steps)

    return local


# ----------------------------------------------------------------------------- init


def start_at_center(inner: optax.GradientTransformation, copies: int | None = None,
                    keep_pulled: bool = False):
    """Workers begin by pulling the centre (asynchronous rules).

    With ``copies`` the inner state is stacked that many times (a group's members); with
    ``keep_pulled`` the worker stores the centre it pulled (None otherwise).
    """

    def init_worker(params: Params, server: ServerState) -> WorkerState:
        del params
        state = inner.init(server.center)
        if copies is not None:
            state = jax.tree.map(lambda x: jnp.broadcast_to(x, (copies,) + x.shape), state)
        return WorkerState(
            params=server.center,
            inner_state=state,
            pulled_center=server.center if keep_pulled else None,
            pulled_clock=server.clock,
            steps=jnp.zeros((), jnp.int32),
        )

    return init_worker


def start_at_own(inner: optax.GradientTransformation, keep_pulled: bool = False):
    """Workers begin at their own parameters (synchronous rules; random starts); with
    ``keep_pulled`` they store the starting centre as the one they pulled."""

    def init_worker(params: Params, server: ServerState) -> WorkerState:
        return WorkerState(
            params=params,
            inner_state=inner.init(params),
            pulled_center=server.center if keep_pulled else None,
            pulled_clock=server.clock,
            steps=jnp.zeros((), jnp.int32),
        )

    return init_worker


# ----------------------------------------------------------------------------- commits
# What a worker sends: Commit = worker -> Δ


def accumulated_step(worker: WorkerState) -> Params:
    """Δ = a = θᵏ − θ̃_pull, the step the worker took since it pulled (DOWNPOUR)."""
    return jax.tree.map(jnp.subtract, worker.params, worker.pulled_center)


def normalised_step(local_steps: int):
    """Δ = a / λ, the accumulated step normalised by the window (AGN, ADAG)."""

    def commit(worker: WorkerState) -> Params:
        return jax.tree.map(lambda d: d / local_steps, accumulated_step(worker))

    return commit


def parameters(worker: WorkerState) -> Params:
    """Δ = θᵏ: the worker sends its parameters (sequential SGD, elastic rules)."""
    return worker.params


# ----------------------------------------------------------------------------- server apply
# How the server uses it: Apply = (server, Δ, worker, τ) -> (proposed centre, scale, extra)


def _scaled_add(center, delta, scale):
    """θ̃ + scale·Δ in the parameters' own dtype."""
    return jax.tree.map(lambda c, d: c + jnp.asarray(scale, c.dtype) * d, center, delta)


def add(server: ServerState, delta, worker, staleness):
    """θ̃ ← θ̃ + Δ."""
    del worker, staleness
    return jax.tree.map(jnp.add, server.center, delta), jnp.float32(_ONE), server.extra


def replace(server: ServerState, params, worker, staleness):
    """θ̃ ← what was committed."""
    del worker, staleness
    return params, jnp.float32(_ONE), server.extra


def staleness_scaled(factor: Callable[[jax.Array], jax.Array]):
    """θ̃ ← θ̃ + factor(τ) · Δ (DynSGD, staleness-aware SGD, delay-adaptive steps)."""

    def apply(server: ServerState, delta, worker, staleness):
        del worker
        scale = factor(staleness.astype(jnp.float32))
        return _scaled_add(server.center, delta, scale), scale, server.extra

    return apply


def distance_scaled(gamma: float, norm: bool = False):
    """ADAG: θ̃ ← θ̃ + Δ ⊙ 1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1), element-wise or with ‖θ̃ − θ̃_pull‖²."""

    def apply(server: ServerState, delta, worker, staleness):
        del staleness
        gap = jax.tree.map(jnp.subtract, server.center, worker.pulled_center)
        if norm:
            squared = sum(jnp.sum(g * g) for g in jax.tree.leaves(gap))
            scale = 1.0 / (squared / gamma + 1.0)
            return _scaled_add(server.center, delta, scale), scale, server.extra
        scales = jax.tree.map(lambda g: 1.0 / (g * g / gamma + 1.0), gap)
        center = jax.tree.map(lambda c, d, s: c + d * s, server.center, delta, scales)
        mean_scale = jnp.mean(jnp.concatenate([jnp.ravel(s) for s in jax.tree.leaves(scales)]))
        return center, mean_scale, server.extra

    return apply


def delay_compensated(kappa: float, learning_rate: float, local_steps: int):
    """DC-ASGD: g ← g + κ g ⊙ g ⊙ (θ̃ − θ̃_pull), with g = −a / (η λ) the mean step gradient.

    With λ = 1 this is Zheng et al.'s compensation of the worker's gradient; for λ > 1 it
    compensates the window's mean gradient and applies it λ times (Δ = −ηλ g).
    """

    def apply(server: ServerState, delta, worker, staleness):
        del staleness
        scale = learning_rate * local_steps

        def leaf(c, d, p):
            g = -d / scale
            return c - scale * (g + kappa * g * g * (c - p))

        center = jax.tree.map(leaf, server.center, delta, worker.pulled_center)
        return center, jnp.float32(_ONE), server.extra

    return apply


class GapState(NamedTuple):
    """Gap-aware's server state: EMA of squared gradients and its count."""

    second_moment: Params
    count: jax.Array


def gap_scaled(learning_rate: float, local_steps: int, decay: float = 0.999,
               eps: float = 1e-8):
    """Gap-aware: Δ ← Δ / G per element, G = 1 + |θ̃ − θ̃_pull| / C, C = η (√v̂ + ε).

    v is an EMA (``decay``) of g², with g = −Δ / (η λ) the commit's mean gradient, and v̂
    its bias-corrected value, both updated with the commit before G is computed.
    """

    def init(center) -> GapState:
        return GapState(jax.tree.map(jnp.zeros_like, center), jnp.zeros((), jnp.int32))

    def apply(server: ServerState, delta, worker, staleness):
        del staleness
        state: GapState = server.extra
        count = state.count + 1
        correction = 1.0 - decay ** count.astype(jnp.float32)
        v = jax.tree.map(lambda m, d: decay * m + (1 - decay) * (d / (learning_rate * local_steps))
                         ** 2, state.second_moment, delta)

        def leaf(c, d, p, m):
            threshold = learning_rate * (jnp.sqrt(m / correction) + eps)
            return c + (d / (1.0 + jnp.abs(c - p) / threshold)).astype(c.dtype)

        center = jax.tree.map(leaf, server.center, delta, worker.pulled_center, v)
        return center, jnp.float32(_ONE), GapState(v, count)

    return init, apply


def elastic_center(alpha: float):
    """Asynchronous EASGD at the server: θ̃ ← θ̃ + α (θᵏ − θ̃), with Δ = θᵏ."""

    def apply(server: ServerState, params, worker, staleness):
        del worker, staleness
        center = jax.tree.map(lambda c, p: c + alpha * (p - c), server.center, params)
        return center, jnp.asarray(alpha, jnp.float32), server.extra

    return apply


# ----------------------------------------------------------------------------- aggregates
# Synchronous rules: Aggregate = (server, worker) -> (proposed centre, scale), collectives
# over the named axis.


def average_params(server: ServerState, worker: WorkerState):
    """θ̃ ← mean_k θᵏ, an all-reduce over the named worker axis."""
    del server
    return jax.lax.pmean(worker.params, AXIS), jnp.float32(_ONE)


def elastic_average(beta: float):
    """Synchronous EASGD: θ̃ ← θ̃ + α Σ_k (θᵏ − θ̃) = (1 − β) θ̃ + β mean_k θᵏ, β = nα."""

    def aggregate(server: ServerState, worker: WorkerState):
        diff = jax.lax.pmean(jax.tree.map(jnp.subtract, worker.params, server.center), AXIS)
        return _scaled_add(server.center, diff, beta), jnp.asarray(beta, jnp.float32)

    return aggregate


# ----------------------------------------------------------------------------- pulls
# What the worker takes back: Pull = (old server, new server, worker) -> worker. A pull
# notes the centre it saw as ``pulled_center``; the composition below keeps it only for a
# rule that reads it between exchanges (``keep_pulled``).


def reset_to_center(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
    """θᵏ ← θ̃: the worker continues from the centre it pulls (its inner state is kept)."""
    del old
    return worker._replace(params=server.center, pulled_center=server.center,
                           pulled_clock=server.clock)


def keep_params(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
    """The worker keeps its parameters and only notes the centre it saw."""
    del old
    return worker._replace(pulled_center=server.center, pulled_clock=server.clock)


def elastic_pull(alpha: float):
    """θᵏ ← θᵏ − α (θᵏ − θ̃), with θ̃ the centre before this exchange's update."""

    def pull(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
        params = jax.tree.map(lambda p, c: p - alpha * (p - c), worker.params, old.center)
        return worker._replace(params=params, pulled_center=server.center,
                               pulled_clock=server.clock)

    return pull


def _stored(pull: Pull, keep_pulled: bool) -> Pull:
    """``pull``, storing the pulled centre only with ``keep_pulled``."""
    if keep_pulled:
        return pull

    def stored(old: ServerState, server: ServerState, worker: WorkerState) -> WorkerState:
        return pull(old, server, worker)._replace(pulled_center=None)

    return stored


# ----------------------------------------------------------------------------- composition

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


def asynchronous(
    name: str,
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
) -> Rule:
    """An asynchronous rule from its parts.

    The worker stores the centre it pulled only with ``keep_pulled`` (for parts that read
    it and a pull that does not reset the worker); a worker that resets to the centre
    hands it to the exchange from its local work.
    """
    return Rule(
        name=name,
        synchronous=False,
        init_server=_server_init(outer, init_extra),
        init_worker=start_at_center(inner, keep_pulled=keep_pulled),
        local=_local(inner, local_steps, local, pull, keep_pulled),
        exchange=exchange_of(commit, apply, pull, outer, keep_pulled),
        hyperparameters=hyperparameters,
        local_steps=int(local_steps),
    )


def synchronous(
    name: str,
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
    """A synchronous rule from its parts (``keep_pulled`` as for :func:`asynchronous`)."""
    return Rule(
        name=name,
        synchronous=True,
        init_server=_server_init(outer, None),
        init_worker=start_at_own(inner, keep_pulled=keep_pulled),
        local=_local(inner, local_steps, local, pull, keep_pulled),
        exchange=synchronize_of(aggregate, pull, outer, keep_pulled),
        hyperparameters=hyperparameters,
        local_steps=int(local_steps),
        warmup_rounds=int(warmup_rounds),
    )
