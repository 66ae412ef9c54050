"""Every exchange of one run, recorded event by event (a slow, exact path for tests and
figures that need what each commit did)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import ConfigError
from ..cluster import Trace
from ..problems import Problem, stochastic_gradient
from ..rules import Rule
from ._core import (
    check_traces,
    compiler_options,
    seed_key_data,
    select,
)
from ._events import _commit, _initial_carry, end_runs
from ._replay import _check_seeds, _checked_inputs


class ExchangeRecord(NamedTuple):
    """What :func:`record_exchanges` keeps of every commit of a trace, per seed.

    Attributes:
      scale: ``(S, T)`` the factor the server applied to each commit
        (:class:`~asynclab.rules.ExchangeInfo`; ADAG: the mean over the weights of
        1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1), 1 for plain addition); NaN from the commit at which
        the run diverged on.
      staleness: ``(S, T)`` each commit's staleness τ as the rule counted it.
      final_params: the centre after the last commit, a leading seed axis on every leaf.
      diverged_at: ``(S,)`` the commit whose centre turned non-finite, -1 if none did
        (:func:`replay` may mark a run earlier, when a recorded loss overflows while the
        centre is still finite).
    """

    scale: np.ndarray
    staleness: np.ndarray
    final_params: object
    diverged_at: np.ndarray


def record_exchanges(rule: Rule, problem: Problem | str, trace: Trace, *,
                     seeds: int | Sequence[int] = 0, noise: float = 0.0) -> ExchangeRecord:
    """Replay one asynchronous trace for every seed, recording each commit's
    :class:`~asynclab.rules.ExchangeInfo` (which :func:`replay` does not keep).

    The events are :func:`replay`'s (same initial state, keys, gradient oracle and
    divergence guard), in one compiled scan without loss records or chunks, so the final
    centres equal :func:`replay`'s for the same seeds (a diverged run's may not: replay
    also stops at a recorded loss that overflows).
    """
    rule, problem, trace = _checked_inputs(rule, problem, trace)
    if rule.synchronous or not isinstance(trace, Trace):
        raise ConfigError(f"record_exchanges takes an asynchronous rule and its Trace; got "
                          f"{rule.name} with a {type(trace).__name__}")
    seeds = _check_seeds(seeds)
    n = check_traces(rule, [trace])
    commit = _commit(rule, stochastic_gradient(problem, noise))
    order = jnp.asarray(trace.worker, jnp.int32)
    index = jnp.arange(trace.n_events, dtype=jnp.int32)

    def one(init_data, worker_data):  # the keys' data (seed_key_data)
        worker_keys = jax.random.wrap_key_data(worker_data)
        carry = _initial_carry(rule, problem, jax.random.wrap_key_data(init_data), n, "start")

        def step(carry, event):
            after, ending, _, info = commit(carry, worker_keys, event[0], jnp.bool_(True),
                                            event[1])
            return end_runs(carry, after, ending, event[1]), info

        carry, info = jax.lax.scan(step, carry, (order, index))
        return select(carry.stopped, carry.center, carry.server.center), carry.diverged_at, info

    center, diverged_at, info = jax.jit(jax.vmap(one), compiler_options=compiler_options())(
        *seed_key_data(seeds, n))
    diverged_at = np.asarray(diverged_at)
    after = (diverged_at[:, None] >= 0) & (np.arange(trace.n_events) >= diverged_at[:, None])
    scale = np.where(after, np.nan, np.asarray(info.scale, np.float64))
    return ExchangeRecord(scale, np.asarray(info.staleness, np.int64),
                          jax.tree.map(np.asarray, center), diverged_at)
