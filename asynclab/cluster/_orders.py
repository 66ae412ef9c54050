"""Schedules that are not simulated: fixed and random commit orders, and traces joined
in time (post-local SGD's warm-up rounds followed by its local rounds)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ._activity import join
from ._sync import simulate_sync
from ._timing import Cluster
from ._trace import RoundTrace, Trace


def trace_from_order(worker: Sequence[int], n_workers: int, *, local_steps: int = 1,
                     time: Sequence[float] | None = None, group_size: int = 1) -> Trace:
    """The :class:`~asynclab.cluster.Trace` of commits by ``worker`` in this order.

    Each worker pulls right after its commit, so commit ``t`` by worker ``k`` has
    ``pulled_clock`` = 1 + the index of ``k``'s previous commit (0 for its first).

    Args:
      worker: the committing worker (or group, for a mixed rule) of each event.
      n_workers: number of workers (groups).
      local_steps: λ, the local steps per commit, or a tuple of one count per worker
        (asynchronous DiLoCo's dynamic local updates).
      time: seconds of each commit (default: every worker takes one second per commit
        and the commits are spread evenly, ``(t + 1) / n``).
      group_size: workers per group, for the ``mixed`` rule.
    """
    worker = np.asarray(worker, np.int32)
    if int(n_workers) != n_workers or n_workers < 1:
        raise ConfigError(f"n_workers must be an integer >= 1, got {n_workers!r}")
    if worker.ndim != 1 or np.any(worker < 0) or np.any(worker >= n_workers):
        raise ConfigError(f"worker must be a list of ids in [0, {n_workers})")
    last = np.zeros(n_workers, np.int32)
    pulled = np.empty_like(worker)
    for t, k in enumerate(worker.tolist()):
        pulled[t] = last[k]
        last[k] = t + 1
    if time is None:
        time = np.arange(1, worker.size + 1) / n_workers
    return Trace(time=np.asarray(time, np.float64), worker=worker, pulled_clock=pulled,
                 staleness=(np.arange(worker.size, dtype=np.int32) - pulled),
                 n_workers=int(n_workers),
                 local_steps=tuple(int(h) for h in local_steps)
                 if isinstance(local_steps, tuple) else int(local_steps),
                 group_size=int(group_size))


def round_robin_trace(n_workers: int, rounds: int, *, local_steps: int = 1,
                      group_size: int = 1) -> Trace:
    """Workers commit in the fixed order 0, 1, …, n−1, ``rounds`` times."""
    _check_rounds(n_workers, rounds)
    return trace_from_order(np.tile(np.arange(n_workers), rounds), n_workers,
                            local_steps=local_steps, group_size=group_size)


def random_order_trace(n_workers: int, rounds: int, rng, *, local_steps: int = 1,
                       group_size: int = 1) -> Trace:
    """Every worker commits once per round, in a fresh random order each round.

    Args:
      rng: a ``numpy.random.Generator`` or a seed.
    """
    _check_rounds(n_workers, rounds)
    rng = np.random.default_rng(rng if isinstance(rng, np.random.Generator)
                                else _validate.seed(rng, "rng"))
    order = np.concatenate([rng.permutation(n_workers) for _ in range(rounds)])
    return trace_from_order(order, n_workers, local_steps=local_steps,
                            group_size=group_size)


def _check_rounds(n_workers, rounds) -> None:
    for name, value in (("n_workers", n_workers), ("rounds", rounds)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")


def simulate_sync_with_warmup(cluster: Cluster, *, warmup_rounds: int, local_steps: int,
                              rounds: int | None = None, horizon: float | None = None,
                              rng=0, activity: bool = False) -> RoundTrace:
    """Rounds of ``warmup_rounds`` single local steps, then rounds of ``local_steps``
    (post-local SGD), joined in time: the second part starts when the first ends.

    The two parts are simulated with generators spawned from ``rng`` (an int; anything
    else counts as 0). ``rounds`` and ``horizon`` bound the whole trace, as in
    :func:`simulate_sync`; the second part runs only if the warm-up completed. With
    ``activity`` the two parts' activities are joined in time too.
    """
    if cluster.availability is not None:
        raise ConfigError("Cluster.availability: warm-up rounds (post-local SGD) are not "
                          "simulated with failures")
    warmup, commits = warmup_rounds, rounds
    seeds = np.random.SeedSequence(rng if isinstance(rng, int) else 0).spawn(2)
    first = simulate_sync(cluster, local_steps=1, rng=np.random.default_rng(seeds[0]),
                          rounds=warmup if commits is None else min(warmup, commits),
                          horizon=horizon, activity=activity)
    elapsed = float(first.time[-1]) if first.n_events else 0.0
    parts = [first]
    rest = None if commits is None else commits - first.n_events
    left = None if horizon is None else horizon - elapsed
    full_warmup = first.n_events == warmup
    if full_warmup and (rest is None or rest > 0) and (left is None or left > 0):
        second = simulate_sync(cluster, local_steps=local_steps, rounds=rest, horizon=left,
                               rng=np.random.default_rng(seeds[1]), activity=activity)
        parts.append(second._replace(
            time=second.time + elapsed,
            activity=second.activity and second.activity.shifted(elapsed)))
    return RoundTrace(time=np.concatenate([p.time for p in parts]),
                      duration=np.concatenate([p.duration for p in parts]),
                      n_workers=cluster.workers, local_steps=local_steps,
                      activity=join([p.activity for p in parts], cluster.workers)
                      if activity else None, simulator="simpy")
