"""Implicit momentum of asynchrony (Mitliagkas et al. 2016; thesis Eq. 2.1).

Under geometric staleness, asynchronous SGD with n workers is heavy-ball momentum in
expectation:

    E[θ̃_{t+1} − θ̃_t] = (1 − 1/n) E[θ̃_t − θ̃_{t−1}] − (η/n) E∇L(θ̃_t).

The study replays asynchronous SGD (DOWNPOUR, λ = 1) on a diagonal quadratic with
exponential compute times (or another distribution, to see where the prediction needs
geometric staleness; or a parameter server that takes time, whose queue makes staleness
gather around n − 1), for many seeds, each with its own cluster schedule, and
averages the central trajectory over the seeds. It then

- runs the heavy-ball reference θ_{t+1} = θ_t + μ (θ_t − θ_{t−1}) − (η/n) ∇L(θ_t) with
  μ = 1 − 1/n, started at the same point with the steady-state velocity −η∇L(θ_0) (the
  first n commits of the asynchronous run all carry the gradient at the start);
- fits the single parameter μ in Δ_t = μ Δ_{t−1} − (1 − μ) η ∇L(θ̄_t), Δ_t = θ̄_{t+1} − θ̄_t,
  by least squares in closed form, after dropping the first few n commits (a free fit of
  μ and the step together is ill-posed: on a geometric trajectory the two regressors are
  almost collinear).

On a quadratic ∇L is linear, so E∇L(θ̃_t) = ∇L(E θ̃_t) and the mean trajectory obeys the
recursion without a mean-field approximation; only the correlation between the staleness
of successive commits separates it from heavy ball.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, simulate_async
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import replay


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    workers: tuple[int, ...] = (1, 2, 4, 8, 16)
    dim: int = 2
    condition: float = 10.0
    learning_rate: float = 1e-3
    commits: int = 3000
    seeds: int = 512
    noise: float = 0.0
    drop: int = 3  # drop the first drop·n commits before fitting
    bootstrap: int = 100  # resamples of the seeds for the standard error of the fit
    store_every: int = 5  # trajectories are stored (for drawing) every k commits
    seed: int = 0  # seeds are seed, seed + 1, …; seed s also schedules its own cluster
    compute: str = "exponential"  # the compute-time distribution of every local step
    compute_shape: float = 1.0  # its shape (lognormal σ, gamma k; see ComputeTime)
    server: str = "constant"  # the distribution of the server's service time
    server_time: float = 0.0  # its mean in seconds (0: a server that takes no time)
    server_shape: float = 1.0  # its shape (lognormal σ, gamma k)

    @classmethod
    def quick(cls) -> Config:
        return cls(workers=(2, 4, 8), commits=1500, seeds=128)


def curvatures(config: Config) -> np.ndarray:
    """The quadratic's diagonal Hessian h (log-spaced in [1, condition])."""
    return np.geomspace(1.0, config.condition, config.dim)


def heavy_ball(start, h, learning_rate: float, momentum: float, steps: int) -> np.ndarray:
    """θ_{t+1} = θ_t + μ (θ_t − θ_{t−1}) − η ∇L(θ_t) on ½ Σ hᵢ θᵢ², ``(steps + 1, d)``.

    Starts at ``start`` with the steady-state velocity of a constant gradient,
    θ_0 − θ_{−1} = −η ∇L(θ_0) / (1 − μ).
    """
    theta = np.asarray(start, np.float64)
    velocity = -learning_rate * h * theta / (1.0 - momentum)
    path = np.empty((steps + 1, theta.size))
    path[0] = theta
    for t in range(steps):
        velocity = momentum * velocity - learning_rate * h * theta
        theta = theta + velocity
        path[t + 1] = theta
    return path


def fit_momentum(mean_path: np.ndarray, h: np.ndarray, learning_rate: float,
                 first: int) -> float:
    """Least-squares μ in Δ_t = μ Δ_{t−1} − (1 − μ) η ∇L(θ̄_t), using t ≥ ``first``.

    Rearranged, Δ_t + η∇L(θ̄_t) = μ (Δ_{t−1} + η∇L(θ̄_t)), one regressor, so
    μ = Σ a·b / Σ a·a with a = Δ_{t−1} + η∇L(θ̄_t), b = Δ_t + η∇L(θ̄_t).
    """
    delta = np.diff(mean_path, axis=0)  # Δ_t = θ̄_{t+1} − θ̄_t
    t = np.arange(max(first, 1), delta.shape[0])
    step = learning_rate * h * mean_path[t]
    a = delta[t - 1] + step
    b = delta[t] + step
    return float(np.sum(a * b) / np.sum(a * a))


def bootstrap_momentum(paths: np.ndarray, h, learning_rate: float, first: int, resamples: int,
                       rng: np.random.Generator) -> float:
    """Standard deviation of the fitted μ over resamples (with replacement) of the seeds."""
    if resamples < 2:
        return float("nan")
    s = paths.shape[0]
    fits = [fit_momentum(paths[rng.integers(0, s, s)].mean(axis=0), h, learning_rate, first)
            for _ in range(resamples)]
    return float(np.std(fits, ddof=1))


def service_time(config: Config) -> float | ComputeTime:
    """The server's service time the config describes, as ``Cluster.server_time`` takes
    it: seconds (constant) or a :class:`~asynclab.cluster.ComputeTime`."""
    if config.server == "constant":
        return config.server_time
    return ComputeTime(config.server, mean=config.server_time, shape=config.server_shape)


def run(config: Config = Config(), progress=None) -> dict:
    """Mean central trajectories, heavy-ball references and fitted momenta for every n."""
    problem = get_problem("quadratic", dim=config.dim, condition=config.condition)
    rule = make_rule("downpour", learning_rate=config.learning_rate)
    h = curvatures(config)
    seeds = list(range(config.seed, config.seed + config.seeds))
    rng = np.random.default_rng(config.seed)
    server = service_time(config)
    mean_paths, references, plain, fitted, fit_error, spread = [], [], [], [], [], []
    for n in progress_bar(config.workers, desc="implicit momentum", unit="n",
                  progress=progress):
        cluster = Cluster(n, ComputeTime(config.compute, shape=config.compute_shape),
                          server_time=server)
        traces = [simulate_async(cluster, commits=config.commits, rng=s) for s in seeds]
        result = replay(rule, problem, traces, seeds=seeds, noise=config.noise, record_every=1,
                        record_paths=True)
        paths = result.center_path.astype(np.float64)  # (S, T + 1, d)
        mean = paths.mean(axis=0)
        mean_paths.append(mean)
        spread.append(paths.std(axis=0) / np.sqrt(len(seeds)))
        momentum = 1.0 - 1.0 / n
        references.append(heavy_ball(problem.start, h, config.learning_rate / n, momentum,
                                     config.commits))
        plain.append(heavy_ball(problem.start, h, config.learning_rate / n, 0.0, config.commits))
        fitted.append(fit_momentum(mean, h, config.learning_rate, config.drop * n))
        fit_error.append(bootstrap_momentum(paths, h, config.learning_rate, config.drop * n,
                                            config.bootstrap, rng))
    mean_paths = np.stack(mean_paths)
    references = np.stack(references)
    scale = float(np.linalg.norm(problem.start))
    sgd = heavy_ball(problem.start, h, config.learning_rate, 0.0, config.commits)

    def largest(difference):
        return np.max(np.linalg.norm(difference, axis=-1), axis=1) / scale

    spread = np.stack(spread)
    return {
        "n": np.array(config.workers),
        "h": h,
        "start": np.asarray(problem.start, np.float64),
        # (N, R, d) trajectories after ``commits`` commits (stored every few), float32
        "commits": np.arange(0, config.commits + 1, config.store_every),
        "mean_path": mean_paths[:, ::config.store_every].astype(np.float32),
        "heavy_ball": references[:, ::config.store_every].astype(np.float32),
        "plain_sgd": np.stack(plain)[:, ::config.store_every].astype(np.float32),
        "fitted_momentum": np.array(fitted),
        "fitted_momentum_error": np.array(fit_error),
        "predicted_momentum": 1.0 - 1.0 / np.array(config.workers, np.float64),
        # max over t of ‖·‖ / ‖θ_0‖, for every n: distance of the mean to heavy ball, to
        # plain SGD with step η (what n = 1 does), and the Monte-Carlo standard error
        "max_gap": largest(mean_paths - references),
        "max_gap_sgd": largest(mean_paths - sgd),
        "max_standard_error": largest(spread),
    }
