"""EASGD's equilibrium and the stability of asynchronous EASGD.

Part 1, synchronous EASGD on Beale's function with the thesis's settings (n = 5,
λ = 30, η = 1e-5, ρ ∈ {5, 1}, α = ηρ), with and without the thesis's early-stop test
‖η g‖ − ‖α (θᵏ − θ̃)‖ < η, which ends a worker's local work once its gradient step no
longer beats the elastic pull (the equilibrium −η g = α (θᵏ − θ̃)). All workers start
at Beale's start point. Gradients are noise-free here. Measured: central loss per
round, each worker's distance to the centre, the distance at which the test fires,
(‖g‖ − 1)/ρ, and the local steps actually taken per round (re-evaluated with the rule's
own step and test on the recorded states, which also checks the reconstruction against
the replay).

Part 2, asynchronous EASGD (``aeasgd``) on a 2-D quadratic (curvatures 1 and 10)
over communication period λ × elasticity ρ, many seeds, each with its own cluster
schedule (exponential compute times): the fraction of runs whose centre overflows
(``Result.diverged``). The linear analysis of one exchange explains the boundary: on a
direction of curvature h a worker's λ local steps multiply its offset by
c = (1 − ηh)^λ, and the exchange mixes worker and centre with the matrix
[[1 − α, α], [α, 1 − α]] (eigenvalues 1 and 1 − 2α). For one worker the cycle is
stable iff α < 2 (1 + c) / (1 + 3c): α < 1 when λ is small (c → 1: the elastic
exchange overshoots and nothing damps it), up to α < 2 when λ is large (c → 0: the
local steps pull the worker back to the minimum between two exchanges). For n workers
the study computes the spectral radius of the round-robin cycle and the Lyapunov
exponent of a random exchange order.

Part 3, synchronous EASGD's stability region (Zhang, Choromanska, LeCun 2015): with
λ = 1 on a quadratic of curvature h, one round maps the workers' mean y and the centre
x̃ (every worker takes its gradient step, then the elastic exchange uses the values
after it, β = pα) by

    M = [[1 − α, α], [β, 1 − β]] · diag(1 − ηh, 1)
      = [[(1 − α)(1 − ηh), α], [β (1 − ηh), 1 − β]],

and each worker's offset from the mean by (1 − α)(1 − ηh). The run is stable iff the
spectral radius of the whole map is below 1: |(1 − α)(1 − ηh)| < 1 and, for the 2 × 2
block (Jury's conditions), |det M| < 1 and |tr M| < 1 + det M, with det M =
(1 − ηh)(1 − α − β). The paper's own order (the gradient and the elastic term both
evaluated at the round's start) has the block [[1 − ηh − α, α], [β, 1 − β]] instead;
the study computes both boundaries and sweeps the (ηh, α) plane in simulation for
p ∈ {4, 8, 16} workers (one :func:`asynclab.engine.replay_grid` per p over η × ρ).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import ConfigError
from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, simulate_async, simulate_sync
from ..problems import get_problem, stochastic_gradient
from ..rules import make_rule
from ._replayed import replay, replay_grid


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates.

    Attributes:
      workers, local_steps, learning_rate, elasticities: synchronous EASGD (thesis).
      rounds: synchronous rounds.
      noise: gradient-noise variance σ² of part 1; must be 0 (the count of steps taken
        re-runs the local work from the recorded states).
      seed: the seed of part 1.
      map_workers, map_learning_rate: asynchronous EASGD's n and η.
      map_local_steps, map_elasticities: the λ × ρ grid.
      map_dim, map_condition: the quadratic (curvatures log-spaced in [1, condition]).
      map_exchanges: exchanges per worker (commits = n × this).
      map_seeds: seeds; seed s draws the start and the cluster schedule.
      check_workers, check_alphas: λ = 1 cells at α = ηρ just below and above 1 for
        other worker counts (is the boundary α ≈ 1 or α·n ≈ 1?).
    """

    workers: int = 5
    local_steps: int = 30
    learning_rate: float = 1e-5
    elasticities: tuple[float, ...] = (5.0, 1.0)
    rounds: int = 20_000
    noise: float = 0.0
    seed: int = 0
    map_workers: int = 4
    map_learning_rate: float = 0.05
    map_local_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    map_elasticities: tuple[float, ...] = tuple(float(v) for v in np.geomspace(10, 60, 10))
    map_dim: int = 2
    map_condition: float = 10.0
    map_exchanges: int = 500
    map_seeds: tuple[int, ...] = tuple(range(32))
    check_workers: tuple[int, ...] = (1, 2, 8)
    check_alphas: tuple[float, ...] = (0.9, 1.1)
    stability_workers: tuple[int, ...] = (4, 8, 16)
    stability_steps: tuple[float, ...] = tuple(float(v) for v in np.geomspace(0.02, 4, 20))
    stability_elasticities: tuple[float, ...] = tuple(float(v) for v in
                                                      np.geomspace(1e-3, 100, 41))
    stability_rounds: int = 400
    stability_seeds: tuple[int, ...] = (0, 1)

    @classmethod
    def quick(cls) -> Config:
        """Fewer rounds, exchanges, seeds and grid points; every panel still drawn: the map
        over three λ × five ρ (every other ρ of the full grid), the worker-count check for
        n ∈ {1, 2}, the stability region for every p of the full build."""
        full = cls()
        return cls(rounds=3_000, map_local_steps=(1, 8, 64),
                   map_elasticities=full.map_elasticities[::2],
                   map_exchanges=300, map_seeds=tuple(range(8)), check_workers=(1, 2),
                   stability_workers=full.stability_workers,
                   stability_steps=tuple(float(v) for v in np.geomspace(0.02, 4, 8)),
                   stability_elasticities=tuple(float(v) for v in
                                                np.geomspace(1e-3, 100, 16)),
                   stability_rounds=300, stability_seeds=(0,))


# ----------------------------------------------------------------------------- theory


def _exchange_matrix(alpha: float, contraction: float, n: int, k: int) -> np.ndarray:
    """Worker k's λ local steps (×c on its offset), then its elastic exchange, acting on
    (θ̃, θ¹, …, θⁿ) along one eigen-direction of a quadratic."""
    local = np.eye(n + 1)
    local[k + 1, k + 1] = contraction
    mix = np.eye(n + 1)
    mix[0, 0] = mix[k + 1, k + 1] = 1 - alpha
    mix[0, k + 1] = mix[k + 1, 0] = alpha
    return mix @ local


def elastic_growth(alpha: float, contraction: float, n: int, order=None) -> float:
    """Growth factor per exchange of linear asynchronous EASGD on one direction.

    ``order=None``: round robin, the spectral radius of the n-exchange cycle to the
    power 1/n. Otherwise ``order`` lists the committing workers; the Lyapunov exponent
    along it is returned as a factor.
    """
    if order is None:
        cycle = np.eye(n + 1)
        for k in range(n):
            cycle = _exchange_matrix(alpha, contraction, n, k) @ cycle
        return float(np.max(np.abs(np.linalg.eigvals(cycle))) ** (1.0 / n))
    mats = [_exchange_matrix(alpha, contraction, n, k) for k in range(n)]
    v = np.ones(n + 1) + np.arange(n + 1) * 0.1
    total = 0.0
    for k in order:
        v = mats[k] @ v
        norm = np.linalg.norm(v)
        total += np.log(norm)
        v /= norm
    return float(np.exp(total / len(order)))


def critical_alpha(contractions, n: int, order=None, high: float = 4.0) -> float:
    """The largest α at which every direction (contraction c) still contracts."""

    def stable(alpha):
        return all(elastic_growth(alpha, c, n, order) <= 1 + 1e-9 for c in contractions)

    low = 1e-3
    for _ in range(30):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if stable(mid) else (low, mid)
    return low


def synchronous_block(step, alpha, beta, *, paper_order: bool = False) -> np.ndarray:
    """The 2 × 2 map of (workers' mean, centre) of one synchronous EASGD round (λ = 1)
    along a direction of curvature h, ``step`` = ηh; shape ``broadcast + (2, 2)``.

    ``paper_order``: the gradient and the elastic term both at the round's start
    (Zhang et al.'s equations); otherwise the rule's order (gradient step, then the
    exchange on the stepped values)."""
    step, alpha, beta = np.broadcast_arrays(*(np.asarray(a, np.float64)
                                              for a in (step, alpha, beta)))
    m = np.empty(step.shape + (2, 2))
    if paper_order:
        m[..., 0, 0], m[..., 1, 0] = 1 - step - alpha, beta
    else:
        m[..., 0, 0], m[..., 1, 0] = (1 - alpha) * (1 - step), beta * (1 - step)
    m[..., 0, 1], m[..., 1, 1] = alpha, 1 - beta
    return m


def synchronous_radius(step, alpha, workers: int, *, paper_order: bool = False):
    """Spectral radius of a synchronous EASGD round (λ = 1, β = pα) on the workers and
    the centre: the larger of the (mean, centre) block's and (p > 1) the offsets'
    factor."""
    step, alpha = np.broadcast_arrays(np.asarray(step, np.float64),
                                      np.asarray(alpha, np.float64))
    block = synchronous_block(step, alpha, workers * alpha, paper_order=paper_order)
    offset = (1 - step - alpha) if paper_order else (1 - alpha) * (1 - step)
    if workers == 1:  # no offset from the mean
        offset = np.zeros_like(offset)
    return np.maximum(np.abs(np.linalg.eigvals(block)).max(axis=-1), np.abs(offset))


def synchronous_stable(step, alpha, workers: int, *, paper_order: bool = False):
    """Whether synchronous EASGD (λ = 1, β = pα) is stable, in closed form: Jury's
    conditions on the (mean, centre) block (|det| < 1, |tr| < 1 + det) and a
    contracting offset of every worker from the mean."""
    step, alpha = np.broadcast_arrays(np.asarray(step, np.float64),
                                      np.asarray(alpha, np.float64))
    beta = workers * alpha
    if paper_order:
        det = (1 - step - alpha) * (1 - beta) - alpha * beta
        trace = 2 - step - alpha - beta
        offset = 1 - step - alpha
    else:
        det = (1 - step) * (1 - alpha - beta)
        trace = (1 - alpha) * (1 - step) + 1 - beta
        offset = (1 - alpha) * (1 - step)
    return (np.abs(det) < 1) & (np.abs(trace) < 1 + det) & ((np.abs(offset) < 1)
                                                            | (workers == 1))


# ----------------------------------------------------------------------------- part 1


def _steps_taken(rule, problem, noise, starts, centers):
    """Re-run one round's local work of the rule from recorded states: steps taken.

    The round's λ steps are re-run one at a time with the same rule at λ = 1 (the same
    step and the same equilibrium test, which sees the worker's current parameters); a
    step counts as taken when it moved the worker, and the round ends at the first step
    the test skips, as in the rule's own local work. Part 1 is noise-free, so a skipped
    step would be skipped again.
    """
    gradient = stochastic_gradient(problem, noise)
    single = make_rule(rule.name, **{**rule.hyperparameters, "local_steps": 1})

    def one(start, center, worker_id):
        server = single.init_server(center)
        worker = single.init_worker(start, server)

        def step(carry, _):
            worker, taken, stopped = carry
            after = single.local(worker, gradient, jax.random.key(0), worker_id)
            moved = jnp.any(after.params != worker.params) & ~stopped
            worker = jax.tree.map(lambda a, b: jnp.where(moved, a, b), after, worker)
            return (worker, taken + moved.astype(jnp.int32), stopped | ~moved), None

        init = (worker, jnp.zeros((), jnp.int32), jnp.zeros((), bool))
        (worker, taken, _), _ = jax.lax.scan(step, init, None, length=rule.local_steps)
        return taken, worker.params

    flat = jax.jit(jax.vmap(one))
    n = starts.shape[1]
    ids = np.broadcast_to(np.arange(n), starts.shape[:2]).reshape(-1)
    steps, params = flat(jnp.asarray(starts.reshape(-1, 2)),
                         jnp.asarray(np.repeat(centers, n, axis=0)), jnp.asarray(ids))
    return np.asarray(steps).reshape(starts.shape[:2]), np.asarray(params).reshape(starts.shape)


def _synchronous(config: Config, progress) -> dict:
    problem = get_problem("beale")
    n, lam, eta = config.workers, config.local_steps, config.learning_rate
    if config.noise != 0:
        raise ConfigError(
            f"easgd study: part 1 counts the steps taken by re-running the local work from "
            f"the recorded states, which needs noise-free gradients; got noise={config.noise}")
    trace = simulate_sync(Cluster(workers=n), local_steps=lam, rounds=config.rounds)
    grad = jax.jit(jax.vmap(jax.grad(problem.loss)))
    keep = max(1, config.rounds // 2000)
    out: dict = {}
    runs = [(rho, stop) for rho in config.elasticities for stop in (False, True)]
    for rho, stop in progress_bar(runs, desc="synchronous EASGD",
                          progress=progress):
        rule = make_rule("easgd", learning_rate=eta, local_steps=lam, elasticity=rho,
                         early_stop=stop)
        result = replay(rule, problem, trace, seeds=[config.seed], noise=config.noise,
                        init="start", record_every=1, record_paths=True)
        alpha = eta * rho
        center = result.center_path[0]          # (R + 1, 2): centre after r rounds
        ends = result.worker_path[0]            # (R, n, 2): after round r's local work
        starts = np.concatenate([np.broadcast_to(center[0], (1, n, 2)),
                                 ends[:-1] - alpha * (ends[:-1] - center[:-2, None])])
        taken, rerun = _steps_taken(rule, problem, config.noise, starts, center[:-1])
        distance = np.linalg.norm(ends - center[:-1, None], axis=-1)       # (R, n)
        start_distance = np.linalg.norm(starts - center[:-1, None], axis=-1)
        g = np.linalg.norm(np.asarray(grad(jnp.asarray(starts.reshape(-1, 2)))),
                           axis=-1).reshape(distance.shape)
        key = f"rho{rho:g}_{'stop' if stop else 'nostop'}"
        half = config.rounds // 2
        out[f"loss_{key}"] = result.loss[0, ::keep]
        out[f"center_{key}"] = center[::keep]
        out[f"ends_{key}"] = ends[::keep]
        out[f"distance_{key}"] = distance[::keep]
        # the distance at which the test fires for the gradient at the round's start
        out[f"stop_distance_{key}"] = ((g - 1.0) / rho)[::keep]
        out[f"taken_{key}"] = taken.mean(axis=1)[::keep] / lam
        out[f"final_loss_{key}"] = float(result.final_loss[0])
        out[f"steps_fraction_{key}"] = float(taken.mean() / lam)
        out[f"rerun_error_{key}"] = float(np.max(np.abs(rerun - ends)))
        # on the test's surface ‖ηg‖ − α d = η ⇔ (‖g‖ − 1) / (ρ d) = 1; second half
        out[f"equilibrium_ratio_{key}"] = float(np.median(
            (g[half:] - 1.0) / (rho * start_distance[half:])))
    out["rounds_axis"] = np.arange(config.rounds + 1)[::keep]
    return out


# ----------------------------------------------------------------------------- part 2


def _asynchronous_row(problem, eta, lam, rhos, traces, seeds):
    """Every ρ of one λ in one compiled replay: fractions diverged and grown per ρ."""
    rule = make_rule("aeasgd", learning_rate=eta, local_steps=lam, elasticity=float(rhos[0]))
    result = replay_grid(rule, problem, traces, seeds=seeds, init="random", noise=0.0,
                         grid={"elasticity": np.asarray(rhos, np.float64)},
                         record_paths=False, record_every=traces[0].n_events, progress=False)
    # growing: the centre ended farther up than it started (overflowed or not)
    growing = result.diverged | (result.loss[..., -1] > result.loss[..., 0])
    return result.diverged.mean(axis=-1), growing.mean(axis=-1)


def _map(config: Config, progress) -> dict:
    problem = get_problem("quadratic", dim=config.map_dim, condition=config.map_condition)
    n, eta = config.map_workers, config.map_learning_rate
    seeds = list(config.map_seeds)
    lams = list(config.map_local_steps)
    rhos = list(config.map_elasticities)
    cluster = Cluster(workers=n, compute=ComputeTime("exponential"))
    commits = n * config.map_exchanges
    fraction = np.zeros((len(lams), len(rhos)))
    growing = np.zeros((len(lams), len(rhos)))
    bar = progress_bar(total=len(lams) + len(config.check_workers),
                       desc="asynchronous EASGD map", progress=progress)
    with bar:
        # λ decides the shape of the replay: one sweep over ρ per λ
        for i, lam in enumerate(lams):
            traces = [simulate_async(cluster, local_steps=lam, commits=commits, rng=s)
                      for s in seeds]
            fraction[i], growing[i] = _asynchronous_row(problem, eta, lam, rhos, traces,
                                                        seeds)
            bar.update()
        check_fraction = np.zeros((len(config.check_workers), len(config.check_alphas)))
        check_growing = np.zeros_like(check_fraction)
        for a, m in enumerate(config.check_workers):
            other = Cluster(workers=m, compute=ComputeTime("exponential"))
            traces = [simulate_async(other, local_steps=1, commits=m * config.map_exchanges,
                                     rng=s) for s in seeds]
            check_fraction[a], check_growing[a] = _asynchronous_row(
                problem, eta, 1, [alpha / eta for alpha in config.check_alphas], traces,
                seeds)
            bar.update()

    curvatures = np.geomspace(1.0, config.map_condition, config.map_dim)
    fine = np.unique(np.concatenate([np.geomspace(1, max(lams), 40), lams]))
    rng = np.random.default_rng(config.seed)
    order = rng.integers(0, n, 1000)

    def boundary(lam, workers, order=None):
        return critical_alpha((1 - eta * curvatures) ** lam, workers, order)

    alpha_round_robin = np.array([boundary(lam, n) for lam in fine])
    alpha_random = np.array([boundary(lam, n, order) for lam in lams])
    alpha_single = np.array([boundary(lam, 1) for lam in fine])
    # the boundary seen in simulation: between the last ρ where at most half of the
    # runs grew and the next one (geometric mean of the two α)
    grid = np.asarray(rhos)
    observed = np.full(len(lams), np.nan)
    for i in range(len(lams)):
        over = np.flatnonzero(growing[i] > 0.5)
        if over.size and over[0] > 0:
            observed[i] = eta * np.sqrt(grid[over[0] - 1] * grid[over[0]])
    return {
        "map_local_steps": np.array(lams),
        "map_elasticities": grid,
        "map_alpha": eta * grid,
        "map_fraction": fraction,
        "map_growing": growing,
        "map_workers": n,
        "map_learning_rate": eta,
        "map_seeds": np.array(seeds),
        "map_exchanges": config.map_exchanges,
        "map_curvatures": curvatures,
        "theory_local_steps": fine,
        "alpha_round_robin": alpha_round_robin,
        "alpha_random_order": alpha_random,
        "alpha_one_worker": alpha_single,
        "alpha_observed": observed,
        "check_workers": np.array(config.check_workers),
        "check_alphas": np.array(config.check_alphas),
        "check_fraction": check_fraction,
        "check_growing": check_growing,
    }


# ----------------------------------------------------------------------------- part 3


def _stability(config: Config, progress) -> dict:
    problem = get_problem("quadratic", dim=1)  # curvature h = 1: ηh = η
    etas = np.asarray(config.stability_steps)
    rhos = np.asarray(config.stability_elasticities)
    seeds = list(config.stability_seeds)
    grew = np.zeros((len(config.stability_workers), etas.size, rhos.size))
    rule = make_rule("easgd", learning_rate=float(etas[0]), local_steps=1, elasticity=1.0)
    for i, p in enumerate(progress_bar(config.stability_workers, desc="synchronous EASGD "
                                       "stability", unit="p", progress=progress)):
        trace = simulate_sync(Cluster(workers=p), local_steps=1,
                              rounds=config.stability_rounds)
        result = replay_grid(rule, problem, trace, seeds=seeds, init="random_per_worker",
                             grid={"learning_rate": etas, "elasticity": rhos},
                             record_every=config.stability_rounds, progress=False)
        # grew: the centre overflowed or ended above where it started
        grew[i] = (result.diverged | (np.nan_to_num(result.loss[..., -1], nan=np.inf)
                                      > result.loss[..., 0])).mean(axis=-1)
    step, alpha = np.meshgrid(etas, rhos, indexing="ij")
    alpha = alpha * step
    workers = config.stability_workers
    return {
        "stability_workers": np.array(workers),
        "stability_step": step,          # (E, R) ηh of every simulated cell
        "stability_alpha": alpha,        # (E, R) α = ηρ
        "stability_grew": grew,          # (P, E, R) fraction of seeds that grew
        "stability_radius": np.stack([synchronous_radius(step, alpha, p) for p in workers]),
        "stability_radius_paper": np.stack([synchronous_radius(step, alpha, p,
                                                                paper_order=True)
                                            for p in workers]),
        "stability_rounds": config.stability_rounds,
    }


def run(config: Config = Config(), progress=None) -> dict:
    """All parts: per-round series of part 1, the stability map of part 2 and the
    synchronous stability region of part 3."""
    data = _synchronous(config, progress)
    data.update(_map(config, progress))
    data.update(_stability(config, progress))
    data.update({
        "workers": config.workers,
        "local_steps": config.local_steps,
        "learning_rate": config.learning_rate,
        "elasticities": np.array(config.elasticities),
        "noise": config.noise,
        "rounds": config.rounds,
    })
    return data
