"""Closed-form results for a busy parameter server: the machine-repairman model.

n always-busy workers with exponential compute times around one FIFO server form a
closed queue with a finite population, the *machine-repairman* (or machine-interference)
model: M/M/1//n when the service is exponential (Kleinrock, Queueing Systems, Vol. 1,
ch. 3), M/G/1//n for any service distribution (Takács 1962). Its stationary results
check the simulator and tell a user how busy a server is before simulating it.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ._timing import ComputeTime


class Repairman(NamedTuple):
    """Stationary results of the machine-repairman queue (see :func:`machine_repairman`).

    Attributes:
      idle: p0, the probability that the server is idle.
      throughput: X = (1 − p0) / E[S], commits per second.
      response: R = n / X − 1/λ, mean seconds from a commit's arrival at the server to
        the end of its service (queueing plus service).
      queue: mean number of exchanges at the server, waiting or served: X · R.
      stale_zero: P(τ = 0) = p0(n − 1) / n, the share of commits with staleness 0, for an
        exponential server; NaN for the other distributions (no closed form).
    """

    idle: float
    throughput: float
    response: float
    queue: float
    stale_zero: float


def _at_server(workers: int, rho: float) -> np.ndarray:
    """M/M/1//n: P(k exchanges at the server), k = 0 … n: p_k ∝ n!/(n−k)! ρ^k,
    normalised in log space so that neither a large n nor a large ρ overflows."""
    k = np.arange(1, workers + 1)
    log_terms = np.concatenate([[0.0], np.cumsum(np.log(workers - k + 1.0)) + k * np.log(rho)])
    p = np.exp(log_terms - log_terms.max())
    return p / p.sum()


def _log_transform(server: ComputeTime, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log b(s) and log(1 − b(s)), b(s) = E[exp(−s S)] the service time's
    Laplace–Stieltjes transform, at s > 0: closed forms, and for the lognormal two
    integrals over its normal variable (each accurate where the other is close to 1)."""
    m, k = server.mean, server.shape
    if server.distribution != "lognormal":
        if server.distribution == "constant":
            log_b = -s * m
        elif server.distribution == "exponential":
            log_b = -np.log1p(s * m)
        else:  # gamma
            log_b = -k * np.log1p(s * m / k)
        return log_b, np.log(-np.expm1(log_b))
    from scipy import integrate

    mu = math.log(m) - 0.5 * k * k
    scale = 1.0 / math.sqrt(2.0 * math.pi)

    def kept(z, v):  # exp(−v S) for S = exp(μ + σz), times the normal density
        return math.exp(-v * math.exp(min(mu + k * z, 700.0)) - 0.5 * z * z) * scale

    def lost(z, v):  # 1 − exp(−v S), times the normal density
        return -math.expm1(-v * math.exp(min(mu + k * z, 700.0))) * math.exp(-0.5 * z * z) \
            * scale

    out = []
    for value in s:
        # the normal variable beyond ±40 carries < 1e-300; exp(−v S) falls from 1 to 0
        # around z0, which quad is told about
        z0 = min(max((-math.log(value) - mu) / k, -39.0), 39.0)
        out.append([math.log(integrate.quad(f, -40.0, 40.0, args=(value,), points=(z0, 0.0),
                                            epsabs=0.0, epsrel=1e-11, limit=400)[0])
                    for f in (kept, lost)])
    out = np.array(out).reshape(-1, 2)
    return out[:, 0], out[:, 1]


def _general(n: int, think: float, server: ComputeTime) -> Repairman:
    """M/G/1//n (Takács): with Φ_0 = 1, Φ_k = Π_{j=1}^{k} (1 − b(jλ)) / b(jλ),
    p0 = [1 + n λ E[S] Σ_{k=0}^{n−1} C(n−1, k) Φ_k]^{-1}; sums in log space."""
    lam, mean = 1.0 / think, server.mean
    k = np.arange(1, n)
    log_b, log_c = _log_transform(server, k * lam)
    log_phi = np.cumsum(log_c - log_b)
    log_choose = np.array([math.lgamma(n) - math.lgamma(j + 1) - math.lgamma(n - j)
                           for j in k])
    tail = log_choose + log_phi  # the terms k = 1 … n − 1 of the sum
    log_rest = np.logaddexp.reduce(tail) if tail.size else -np.inf
    log_sum = np.logaddexp(0.0, log_rest)
    log_a = math.log(n * lam * mean) + log_sum
    busy = 1.0 / (1.0 + math.exp(-log_a)) if log_a > -700 else math.exp(log_a)
    throughput = busy / mean
    # R = n/X − 1/λ = n E[S] − Σ_{k≥1} / (λ Σ_{k≥0}): no cancellation of n/X and 1/λ
    response = n * mean - think * math.exp(log_rest - log_sum)
    return Repairman(idle=1.0 - busy, throughput=throughput, response=response,
                     queue=throughput * response, stale_zero=math.nan)


def _check_server(server) -> ComputeTime:
    if isinstance(server, ComputeTime):
        return server
    if isinstance(server, numbers.Real) and not isinstance(server, bool):
        mean = _validate.number(server, "server", low=0, low_open=True)
        return ComputeTime("constant", mean=mean)
    raise ConfigError("server must be a service time: seconds > 0 (constant) or a "
                      f"ComputeTime (a distribution), got {server!r}")


def machine_repairman(workers: int, compute_mean: float, server) -> Repairman:
    """Throughput, response time and staleness of n workers around a busy server.

    Every worker computes for an exponential time of mean 1/λ (``compute_mean``: one
    exchange's compute, all ``local_steps`` of it, with no link time), then queues at one
    FIFO server whose service time S is ``server`` (as :attr:`Cluster.server_time`:
    seconds, constant, or a :class:`ComputeTime`), is served, pulls and computes again.

    Exponential service of mean 1/μ (M/M/1//n), with ρ = λ/μ:

    - P(k at the server) = p0 n!/(n−k)! ρ^k, so p0 = [Σ_{k=0}^{n} n!/(n−k)! ρ^k]^{-1} is
      the probability that the server is idle;
    - P(τ = 0) = p0(n − 1)/n: a worker that leaves the server sees the others as the
      same system with n − 1 workers in equilibrium (the arrival theorem of closed
      networks); its next commit has τ = 0 only if the server is idle then and its
      compute ends first among the n. A free server (ρ → 0) gives the geometric 1/n;
      the mean staleness stays n − 1 whatever ρ.

    Any service distribution (M/G/1//n, Takács), with b(s) = E[e^{−sS}]:
    p0 = [1 + n λ E[S] Σ_{k=0}^{n−1} C(n−1, k) Φ_k]^{-1}, Φ_0 = 1,
    Φ_k = Π_{j=1}^{k} (1 − b(jλ))/b(jλ) (exponential service gives the sum above).
    Then, for every distribution:

    - throughput X = (1 − p0)/E[S] commits per second;
    - mean response at the server R = n/X − 1/λ (Little's law on the closed loop),
      computed so that the two terms do not cancel when the server is nearly free.

    Args:
      workers: n, an integer >= 1.
      compute_mean: 1/λ, mean compute seconds per exchange, finite and > 0.
      server: the service time: seconds > 0 (constant) or a :class:`ComputeTime`.

    Returns:
      A :class:`Repairman` (``stale_zero`` is NaN unless the service is exponential).

    Example:
      >>> machine_repairman(8, 1.0, ComputeTime("exponential", 0.15)).throughput
      5.602...

    References:
      L. Kleinrock, Queueing Systems, Vol. 1: Theory (Wiley, 1975), ch. 3;
      L. Takács, Introduction to the Theory of Queues (Oxford University Press, 1962),
      the finite-source single-server queue; S. S. Lavenberg and M. Reiser, Stationary
      state probabilities at arrival instants for closed queueing networks, J. Appl.
      Prob. 17 (1980); K. C. Sevcik and I. Mitrani, The distribution of queuing network
      states at input and output instants, J. ACM 28 (1981).
    """
    n = _validate.count(workers, "workers")
    think = _validate.number(compute_mean, "compute_mean", low=0, low_open=True)
    server = _check_server(server)
    if server.distribution != "exponential":
        return _general(n, think, server)
    service = server.mean
    rho = service / think
    p = _at_server(n, rho)
    idle = float(p[0])
    throughput = (1.0 - idle) / service
    queue = float(np.arange(n + 1) @ p)
    return Repairman(idle=idle, throughput=throughput, response=queue / throughput,
                     queue=queue, stale_zero=float(_at_server(n - 1, rho)[0]) / n)
