"""Tuning (η, μ) jointly under asynchrony, against Mitliagkas et al.'s (2016) theorem.

Asynchronous SGD (DOWNPOUR, λ = 1) with heavy-ball momentum μ at the server,
θ̃_{t+1} = θ̃_t − η g(θ̃_{t−τ_t}) + μ (θ̃_t − θ̃_{t−1}), on a noisy diagonal quadratic
f = ½ Σ hᵢ θᵢ². With exponential compute times the next committer is any of the n
workers with probability 1/n, so the staleness is geometric, P(τ = l) = (1 − q) qˡ with
q = μ_S = 1 − 1/n (the implicit momentum), and independent of the values.

**The expected recursion.** Write x_t = E θ̃_t − θ* along one eigen-direction of
curvature h. Taking expectations (the noise has mean zero; τ_t is independent of the
past values),

    x_{t+1} = x_t + μ (x_t − x_{t−1}) − η h (1 − q) Σ_{l≥0} qˡ x_{t−l},

with x_{−l} = x_0 (every worker starts from the initial centre, so a commit older than
the run carries the gradient at x_0; the momentum starts at rest). Multiplying by the
lag polynomial (1 − qB) removes the sum: x obeys a linear recursion of order three with
characteristic polynomial

    p(z) = (z − 1)(z − μ)(z − q) + η h (1 − q) z²
         = z³ − (1 + μ + q − η h (1 − q)) z² + (μ + q + μ q) z − μ q,

the cubic of Mitliagkas et al.'s Theorem 7 (implicit momentum μ_S = q, explicit μ_L =
μ). So ‖E θ̃_t − θ*‖ = O(γᵗ) with γ the largest root modulus over the spectrum; the
study computes γ from the roots (:func:`theorem_rate`) and the exact expected trajectory
by iterating the recursion (:func:`expected_trajectory`).

**The sweep.** For every n, every (η, μ) of a joint grid × every seed is replayed by one
:func:`asynclab.engine.replay_grid` (one compilation for the whole study; seed s schedules its
own cluster with rng = s, the same schedules for every point of one n). Two scores per
point, side by side:

(a) what the theorem speaks of: the decay rate per commit of the seed-averaged centre,
    fitted per eigen-direction (least squares on a logarithm) over the second half of
    the window in which the mean stands above 3 Monte-Carlo standard errors, the
    largest over the directions (:func:`measured_rate`), compared point by point with γ;
(b) what a user of one run sees: the median over seeds of the commits until a run's own
    loss reaches ``target`` × its initial loss, the median final loss and the fraction
    of unusable runs (overflowed, or ending above the initial loss).

The theorem's optimum is the (η, μ) minimising γ (on a fine grid); its optimal μ_L per
η is overlaid on the maps.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, simulate_async
from ..engine import scores
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import replay_grid


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    workers: tuple[int, ...] = (1, 2, 4, 8, 16)
    momenta: tuple[float, ...] = (-0.6, -0.45, -0.3, -0.15, 0.0, 0.15, 0.3, 0.45, 0.6,
                                  0.75, 0.9)
    learning_rates: tuple[float, ...] = tuple(0.002 * 2.0 ** k for k in range(9))
    dim: int = 10
    condition: float = 100.0
    noise: float = 0.01  # σ² of the additive Gaussian gradient noise
    commits: int = 1500
    seeds: int = 32  # seeds 0, 1, …; seed s schedules its own cluster with rng = s
    target: float = 0.01  # fraction of the initial loss (score b)
    store_every: int = 5  # curves are stored (for drawing) every k commits
    theory_points: int = 241  # fine (η, μ) grid of the theorem's optimum, per axis

    @classmethod
    def quick(cls) -> Config:
        return cls(workers=(1, 16), momenta=(-0.3, 0.0, 0.45, 0.9),
                   learning_rates=(0.004, 0.032, 0.256), commits=600, seeds=16,
                   theory_points=81)


# ----------------------------------------------------------------------------- theory


def characteristic_polynomial(learning_rate, momentum, workers, curvature) -> np.ndarray:
    """Coefficients ``(1, c2, c1, c0)`` (last axis, highest power first) of the cubic
    p(z) = (z − 1)(z − μ)(z − q) + η h (1 − q) z², q = 1 − 1/n, of the expected central
    variable along a direction of curvature h; the arguments broadcast."""
    q = 1.0 - 1.0 / np.asarray(workers, np.float64)
    eta, mu, h = (np.asarray(a, np.float64) for a in (learning_rate, momentum, curvature))
    c2 = -(1.0 + mu + q - eta * h * (1.0 - q))
    c1 = mu + q + mu * q
    c0 = -mu * q
    c2, c1, c0 = np.broadcast_arrays(c2, c1, c0)
    return np.stack([np.ones_like(c2), c2, c1, c0], axis=-1)


def cubic_roots(coefficients: np.ndarray) -> np.ndarray:
    """The three roots of monic cubics ``(..., 4)``: eigenvalues of their companion
    matrices (what ``numpy.roots`` does for one polynomial), batched."""
    c = np.asarray(coefficients, np.float64)
    companion = np.zeros(c.shape[:-1] + (3, 3))
    companion[..., 0, :] = -c[..., 1:] / c[..., :1]
    companion[..., 1, 0] = companion[..., 2, 1] = 1.0
    return np.linalg.eigvals(companion)


def theorem_rate(learning_rate, momentum, workers, curvatures) -> np.ndarray:
    """γ: the largest root modulus of the cubic over the spectrum ``curvatures``, so that
    ‖E θ̃_t − θ*‖ = O(γᵗ) (γ < 1: the expected centre converges). Shape: the broadcast of
    ``learning_rate`` and ``momentum``."""
    eta = np.asarray(learning_rate, np.float64)[..., None]
    mu = np.asarray(momentum, np.float64)[..., None]
    roots = cubic_roots(characteristic_polynomial(eta, mu, workers, np.asarray(curvatures)))
    return np.abs(roots).max(axis=(-1, -2))


def expected_trajectory(learning_rate, momentum, workers, curvatures, start,
                        commits: int) -> np.ndarray:
    """E θ̃_t − θ*, t = 0 … commits, by iterating the expected recursion from rest.

    ``learning_rate`` and ``momentum`` broadcast to a shape P; returns ``P + (commits +
    1, d)``. The geometric sum is carried as S_t = x_t + q S_{t−1}, S_{−1} = q x_0/(1 − q)
    (every worker starts from x_0); for n = 1 it is x_t itself.
    """
    q = 1.0 - 1.0 / workers
    eta, mu = np.broadcast_arrays(np.asarray(learning_rate, np.float64),
                                  np.asarray(momentum, np.float64))
    eta, mu = eta[..., None], mu[..., None]
    h = np.asarray(curvatures, np.float64)
    x = np.broadcast_to(np.asarray(start, np.float64), eta.shape[:-1] + h.shape).copy()
    previous = x.copy()
    tail = q / (1.0 - q) * x  # Σ_{l≥1} q^l x_{−l} with x_{−l} = x_0
    out = np.empty(eta.shape[:-1] + (commits + 1, h.size))
    out[..., 0, :] = x
    with np.errstate(over="ignore", invalid="ignore"):  # unstable points overflow to inf
        _iterate(x, previous, tail, eta, mu, h, q, out, commits)
    return out


def _iterate(x, previous, tail, eta, mu, h, q, out, commits):
    for t in range(commits):
        total = x + tail
        new = x + mu * (x - previous) - eta * h * (1.0 - q) * total
        tail = q * total
        previous, x = x, new
        out[..., t + 1, :] = x


def optimal_momentum(learning_rates, workers, curvatures, momenta) -> tuple:
    """The theorem's best explicit momentum for each learning rate: ``(μ*, γ*)`` over the
    values ``momenta`` (a fine grid)."""
    eta, mu = np.meshgrid(np.asarray(learning_rates), np.asarray(momenta), indexing="ij")
    gamma = theorem_rate(eta, mu, workers, curvatures)
    best = np.argmin(gamma, axis=1)
    return np.asarray(momenta)[best], gamma[np.arange(len(best)), best]


# ----------------------------------------------------------------------------- measuring


def measured_rate(mean: np.ndarray, standard_error: np.ndarray, *, floor: float = 3.0,
                  shortest: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Decay rate per commit of a seed-averaged trajectory ``(..., T + 1, d)`` in the
    eigenbasis (one coordinate per curvature), with its Monte-Carlo standard error.

    Along each coordinate the recursion has order three, so the size of its state
    r_t = ‖(x̄_t, x̄_{t−1}, x̄_{t−2})‖ decays like its largest root even when the roots are
    complex (x̄ itself crosses zero). The window is the commits before r_t first falls to
    ``floor`` standard errors (or is not finite); the coordinate's rate is exp(slope) of a
    least-squares line through log r_t over the window's second half (past the
    transient). The measured rate is the largest over the coordinates whose window is at
    least ``shortest`` commits long (NaN if none). Returns ``(rate, measurable)``, the
    latter the number of such coordinates.
    """
    x = np.asarray(mean, np.float64)
    se = np.asarray(standard_error, np.float64)

    def state(a):
        b = a ** 2
        return np.sqrt(b[..., 2:, :] + b[..., 1:-1, :] + b[..., :-2, :])

    r, e = state(x), state(se)
    below = ~(np.isfinite(r) & np.isfinite(e) & (r > floor * e) & (r > 0))
    end = np.where(below.any(axis=-2), np.argmax(below, axis=-2), r.shape[-2]) - 1
    rates = np.full(end.shape, np.nan)
    for index in np.ndindex(end.shape):
        stop = int(end[index])
        if stop < shortest:
            continue
        t = np.arange(stop // 2, stop + 1)
        rates[index] = np.exp(np.polyfit(t, np.log(r[index[:-1] + (t, index[-1])]), 1)[0])
    measurable = np.isfinite(rates).sum(axis=-1)
    with np.errstate(invalid="ignore"):
        rate = np.where(measurable > 0, np.nanmax(np.where(np.isfinite(rates), rates,
                                                           -np.inf), axis=-1), np.nan)
    return rate, measurable


# ----------------------------------------------------------------------------- the study


def run(config: Config = Config(), progress=None) -> dict:
    """Both scores for every (n, η, μ), the theorem's γ and optimum, and curves."""
    problem = get_problem("quadratic", dim=config.dim, condition=config.condition)
    curvatures = np.geomspace(1.0, config.condition, config.dim)
    start = np.asarray(problem.start, np.float64)
    seeds = list(range(config.seeds))
    etas = np.asarray(config.learning_rates, np.float64)
    mus = np.asarray(config.momenta, np.float64)
    shape = (len(config.workers), etas.size, mus.size)
    initial = float(problem.loss(problem.start))
    level = config.target * initial
    keep = slice(None, None, config.store_every)
    records = np.arange(config.commits + 1)

    rate = np.full(shape, np.nan)
    in_window = np.full(shape, np.nan)
    measurable = np.zeros(shape, np.int64)  # directions whose rate could be measured
    to_target = np.full(shape, np.inf)
    median_final = np.full(shape, np.nan)
    unusable = np.zeros(shape)
    diverged = np.zeros(shape)
    mean_norm = np.full(shape + (records[keep].size,), np.nan)
    expected_norm = np.full_like(mean_norm, np.nan)
    median_loss = np.full_like(mean_norm, np.nan)
    fine_eta = np.geomspace(etas.min() / 2, etas.max() * 2, config.theory_points)
    fine_mu = np.linspace(-0.9, 0.99, config.theory_points)
    optimum = np.zeros((len(config.workers), 3))  # (η*, μ*, γ*) on the fine grid
    best_mu = np.zeros((len(config.workers), fine_eta.size))
    rule = make_rule("downpour", learning_rate=float(etas[0]))
    for i, n in enumerate(progress_bar(config.workers, desc="momentum tuning", unit="n",
                                       progress=progress)):
        cluster = Cluster(n, ComputeTime("exponential"))
        traces = [simulate_async(cluster, commits=config.commits, rng=s) for s in seeds]
        result = replay_grid(rule, problem, traces, seeds=seeds, noise=config.noise,
                             grid={"learning_rate": etas, "server_momentum": mus},
                             record_every=1, record_paths=True, progress=False)
        # (E, M, S, T + 1, d), NaN once a seed has overflowed
        center = result.center_path.astype(np.float64)
        gone = (result.diverged_at[..., None] >= 0) & (
            records > result.diverged_at[..., None])
        center[gone] = np.nan
        with np.errstate(invalid="ignore", over="ignore"):
            mean = center.mean(axis=2)
            se = center.std(axis=2) / np.sqrt(len(seeds))
        rate[i], measurable[i] = measured_rate(mean, se)
        mean_norm[i] = np.linalg.norm(mean, axis=-1)[..., keep]
        del center, result.center_path, result.worker_path
        expected = expected_trajectory(etas[:, None], mus[None, :], n, curvatures, start,
                                       config.commits)
        # the same estimator on the exact expectation, over (nearly) the same windows:
        # tells a simulation that leaves the expected recursion from a window too short
        # for the asymptotic rate
        with np.errstate(over="ignore", invalid="ignore"):
            in_window[i] = measured_rate(expected, se)[0]
            expected_norm[i] = np.linalg.norm(expected, axis=-1)[..., keep]
        to_target[i] = scores(result, "commits_to_target", target=level)
        final = np.where(result.diverged, np.inf, np.nan_to_num(result.final_loss, nan=np.inf))
        median_final[i] = np.median(final, axis=-1)
        unusable[i] = (final > initial).mean(axis=-1)
        diverged[i] = result.diverged.mean(axis=-1)
        with np.errstate(invalid="ignore"):
            median_loss[i] = np.nanmedian(np.where(np.isfinite(result.loss), result.loss,
                                                   np.inf), axis=-2)[..., keep]
        best_mu[i], gamma_best = optimal_momentum(fine_eta, n, curvatures, fine_mu)
        j = int(np.argmin(gamma_best))
        optimum[i] = fine_eta[j], best_mu[i, j], gamma_best[j]

    E, M = np.meshgrid(etas, mus, indexing="ij")
    gamma = np.stack([theorem_rate(E, M, n, curvatures) for n in config.workers])

    def best(values):
        out = np.full((len(config.workers), 2), np.nan)
        for i in range(len(config.workers)):
            v = np.where(np.isfinite(values[i]), values[i], np.inf)
            if np.isfinite(v).any():
                e, m = np.unravel_index(np.argmin(v), v.shape)
                out[i] = etas[e], mus[m]
        return out

    n = np.array(config.workers, np.float64)
    return {
        "n": np.array(config.workers),
        "learning_rates": etas,
        "momenta": mus,
        "curvatures": curvatures,
        "gamma": gamma,                    # (N, E, M) the theorem's rate
        "measured_rate": rate,             # (N, E, M) score (a); NaN: not measurable
        "measurable": measurable,          # (N, E, M) directions with a measured rate
        "expected_in_window": in_window,   # (N, E, M) the estimator on E θ̃_t
        "commits_to_target": to_target,    # (N, E, M) score (b): median over seeds
        "median_final_loss": median_final,  # (N, E, M) inf when over half diverged
        "unusable": unusable,              # (N, E, M) fraction of runs overflowed/grown
        "diverged": diverged,              # (N, E, M) fraction of runs overflowed
        "theory_optimum": optimum,         # (N, 3) η*, μ*, γ* on the fine grid
        "theory_eta": fine_eta,
        "theory_best_momentum": best_mu,   # (N, fine η) argmin_μ γ
        # among the points whose every coordinate's rate was measured and where at most
        # half of the runs are unusable (elsewhere the seed mean is swamped by the spread
        # of the runs before its asymptotic rate can show)
        "best_by_rate": best(np.where((measurable == config.dim) & (unusable <= 0.5), rate,
                                      np.inf)),  # (N, 2) η, μ
        "best_by_theory_on_grid": best(gamma),
        "best_by_runs": best(to_target),   # (N, 2) η, μ
        "implicit_momentum": implicit_momentum(n),
        "commits": records[keep],
        "mean_norm": mean_norm,            # (N, E, M, R) ‖mean over seeds of θ̃_t‖
        "expected_norm": expected_norm,    # (N, E, M, R) ‖E θ̃_t‖ from the recursion
        "median_loss": median_loss,        # (N, E, M, R) median over seeds of the loss
        "initial_loss": initial,
        "target_loss": level,
    }


def implicit_momentum(n: np.ndarray) -> np.ndarray:
    """μ_S = 1 − 1/n, the implicit momentum of n asynchronous workers (to first order,
    the best explicit momentum falls by this much from its value at n = 1)."""
    return 1.0 - 1.0 / np.asarray(n, np.float64)
