"""Closed-form results for a busy parameter server: the machine-repairman model.

n always-busy workers with exponential compute times around one exponential FIFO server
form a closed M/M/1//n queue, the *machine-repairman* model (Kleinrock, Queueing
Systems, Vol. 1, ch. 3, the finite-population single-server system). Its stationary
results check the simulator and tell a user how busy a server is before simulating it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _validate


class Repairman(NamedTuple):
    """Stationary results of the closed M/M/1//n queue (see :func:`machine_repairman`).

    Attributes:
      idle: p0, the probability that the server is idle.
      throughput: X = μ (1 − p0), commits per second.
      response: R = n / X − 1/λ, mean seconds from a commit's arrival at the server to
        the end of its service (queueing plus service).
      queue: mean number of exchanges at the server, waiting or served: X · R.
      stale_zero: P(τ = 0) = p0(n − 1) / n, the share of commits with staleness 0.
    """

    idle: float
    throughput: float
    response: float
    queue: float
    stale_zero: float


def _at_server(workers: int, rho: float) -> np.ndarray:
    """P(k exchanges at the server), k = 0 … n: p_k ∝ n!/(n−k)! ρ^k, normalised in log
    space so that neither a large n nor a large ρ overflows."""
    k = np.arange(1, workers + 1)
    log_terms = np.concatenate([[0.0], np.cumsum(np.log(workers - k + 1.0)) + k * np.log(rho)])
    p = np.exp(log_terms - log_terms.max())
    return p / p.sum()


def machine_repairman(workers: int, compute_mean: float, server_mean: float) -> Repairman:
    """Throughput, response time and staleness of n workers around a busy server.

    Every worker computes for an exponential time of mean 1/λ (``compute_mean``: one
    exchange's compute, all ``local_steps`` of it, with no link time), then queues at one
    FIFO server whose exponential service has mean 1/μ (``server_mean``), is served,
    pulls and computes again. With ρ = λ/μ:

    - P(k at the server) = p0 n!/(n−k)! ρ^k, so p0 = [Σ_{k=0}^{n} n!/(n−k)! ρ^k]^{-1}
      is the probability that the server is idle;
    - throughput X = μ (1 − p0) commits per second;
    - mean response at the server R = n/X − 1/λ (Little's law on the closed loop; it
      is computed as L/X, L = Σ k P(k), which does not cancel when ρ is small);
    - P(τ = 0) = p0(n − 1)/n: a worker that leaves the server sees the others as the
      same system with n − 1 workers in equilibrium (the arrival theorem of closed
      networks); its next commit has τ = 0 only if the server is idle then and its
      compute ends first among the n. A free server (ρ → 0) gives the geometric 1/n;
      the mean staleness stays n − 1 whatever ρ.

    Args:
      workers: n, an integer >= 1.
      compute_mean: 1/λ, mean compute seconds per exchange, finite and > 0.
      server_mean: 1/μ, mean service seconds per exchange, finite and > 0.

    Returns:
      A :class:`Repairman`.

    Example:
      >>> machine_repairman(8, 1.0, 0.15).throughput  # commits per second, < 1/0.15
      5.602...

    References:
      L. Kleinrock, Queueing Systems, Vol. 1: Theory (Wiley, 1975), ch. 3;
      S. S. Lavenberg and M. Reiser, Stationary state probabilities at arrival instants
      for closed queueing networks, J. Appl. Prob. 17 (1980); K. C. Sevcik and
      I. Mitrani, The distribution of queuing network states at input and output
      instants, J. ACM 28 (1981).
    """
    n = _validate.count(workers, "workers")
    think = _validate.number(compute_mean, "compute_mean", low=0, low_open=True)
    service = _validate.number(server_mean, "server_mean", low=0, low_open=True)
    rho = service / think
    p = _at_server(n, rho)
    idle = float(p[0])
    throughput = (1.0 - idle) / service
    queue = float(np.arange(n + 1) @ p)
    return Repairman(idle=idle, throughput=throughput, response=queue / throughput,
                     queue=queue, stale_zero=float(_at_server(n - 1, rho)[0]) / n)
