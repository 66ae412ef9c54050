"""Local work: a worker's λ steps of its inner optimizer, and where its workers start."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from ... import _random
from ..._oracle import as_oracle
from .._base import (
    GradientFn,
    Params,
    ServerState,
    WorkerState,
)

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


def worker_local_work(inner: optax.GradientTransformation, steps: tuple[int, ...]):
    """Local work with a window of its own per worker: worker k takes ``steps[k]`` steps
    of the inner optimizer (asynchronous DiLoCo's dynamic local updates).

    It runs the static maximum of the windows and masks the steps beyond worker k's own
    (:func:`local_work` with ``active_steps``); worker k's batches and noise are those of
    its steps 0, 1, …, so a worker's numbers do not depend on the other windows.
    """
    widest = max(steps)

    def local(worker: WorkerState, gradient: GradientFn, key, worker_id) -> WorkerState:
        own = jnp.asarray(steps, jnp.int32)[worker_id]
        return local_work(inner, widest, active_steps=lambda _: own)(
            worker, gradient, key, worker_id)

    return local


def dynamic_local_steps(local_steps: int, speeds) -> tuple[int, ...]:
    """Dynamic local updates (DyLU, Liu et al. 2024): worker k's window
    H_k = max(1, ⌊H · v_k / max_j v_j⌋), with v_k its speed in steps per second, so that
    every worker spends about the time of the fastest one's H steps per exchange.

    The quotient is taken with a relative tolerance of 1e-9 before the floor, so that a
    speed ratio that is a whole number of steps in exact arithmetic is not floored one
    below by rounding.
    """
    fastest = max(speeds)  # the ratio first: a product of a huge speed and H overflows
    return tuple(max(1, math.floor(local_steps * (v / fastest) * (1 + 1e-9))) for v in speeds)


def remember_pull(local):
    """The local work of a worker that resets to the centre it pulls: it stores no pulled
    centre between exchanges (its parameters are that centre when its work begins), and
    this hands the starting parameters to the exchange as ``pulled_center``."""

    def remembering(worker: WorkerState, gradient, key, worker_id) -> WorkerState:
        start = worker.params
        return local(worker, gradient, key, worker_id)._replace(pulled_center=start)

    return remembering


#: parameter vectors at least this long run their local steps rolled (see _unroll)
ROLLED_FROM = 10_000


def _unroll(local_steps: int, params) -> int:
    """Local steps per iteration of the compiled loop: up to 4 for a short parameter
    vector, whose steps are cheap beside the loop's own cost; 1 for a net, whose step is
    a whole program: unrolled, it compiles that many copies, which ran slower on the CNN
    workload of ``benchmarks/peers.py``."""
    size = sum(x.size for x in jax.tree.leaves(params))
    return min(local_steps, 4) if size < ROLLED_FROM else 1


def _plain_local(inner, local_steps, worker, oracle, window):
    def step(carry, i):
        params, inner_state = carry
        grads = oracle.gradient(params, window, i)
        updates, inner_state = inner.update(grads, inner_state, params)
        return (optax.apply_updates(params, updates), inner_state), None

    (params, inner_state), _ = jax.lax.scan(
        step, (worker.params, worker.inner_state), jnp.arange(local_steps, dtype=jnp.int32),
        unroll=_unroll(local_steps, worker.params),
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
