"""Asynchronous rules on MNIST (thesis chapters 2–4): DOWNPOUR, DynSGD, asynchronous EASGD,
AGN and ADAG with an Adam inner optimizer, for n ∈ {10, 20, 30, 40} workers and
communication windows λ ∈ {1, 15}, several seeds per cell.

Every run has the same budget of gradient evaluations (``gradient_steps``, all workers
together), so a cell with λ local steps makes ``gradient_steps / λ`` commits, and n workers
with exponential compute times (mean 1 s per local step) finish in about
``gradient_steps / n`` simulated seconds. Seed s draws the cluster schedule (``rng = s``)
and the mini-batches, so within a cell every rule replays the same schedule on the same
batches and the comparisons between rules are paired.

Per run the study records the training loss (on a fixed subset of 1,000 training examples)
and the centre's validation accuracy at ``records`` evenly spaced commits, and derives:

- final validation accuracy, with a t interval over seeds;
- time to a target validation accuracy, in simulated seconds (``inf``: never);
- the thesis's temporal efficiency E(rule, DOWNPOUR) = ∫ loss_rule / ∫ loss_DOWNPOUR over
  simulated time (below 1: the rule's loss is lower than DOWNPOUR's);
- loss spikes: the largest rise of the training loss above its running minimum in the
  first ``spike_fraction`` of the run (``spike``) and in the whole run (``spike_all``),
  relative to the initial loss;
- ADAG's scale factors: a short replay of ADAG that records every exchange's
  ``ExchangeInfo`` (:func:`asynclab.engine.record_exchanges`), checked to end at the
  centre :func:`asynclab.replay` ends at.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from .._errors import ConfigError
from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, simulate_async
from ..engine import record_exchanges
from ..engine._metrics import first_reached, temporal_efficiency
from ..problems import Problem, get_problem
from ..rules import make_rule
from ._replayed import replay

RULES = ("downpour", "dynsgd", "aeasgd", "agn", "adag")


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    rules: tuple[str, ...] = RULES
    workers: tuple[int, ...] = (10, 20, 30, 40)
    windows: tuple[int, ...] = (1, 15)  # λ, local steps per commit
    dataset: str = "mnist"
    model: str = "mlp:32"
    batch_size: int = 32
    learning_rate: float = 1e-3  # Adam's (Kingma & Ba's default)
    elastic_alpha: float = 0.05  # AEASGD's α = ηρ (dist-keras: ρ = 5, η = 0.01)
    gamma: float = 1e-4  # ADAG's γ (the thesis's value)
    gradient_steps: int = 3000  # gradient evaluations per run, all workers together
    records: int = 50  # evenly spaced records per run
    seeds: int = 4
    target: float = 0.85  # validation accuracy for "time to target"
    spike_fraction: float = 0.2  # the early part of a run searched for loss spikes
    # ADAG's scale factors: a short replay recorded at every commit
    probe_workers: int = 30
    probe_commits: int = 90
    probe_seeds: int = 2

    @classmethod
    def quick(cls) -> Config:
        """One n, both λ (every panel drawn: the final accuracy at each λ, and λ = 1
        reaches the target within the budget), fewer evaluations, records and seeds."""
        return cls(workers=(20,), windows=(1, 15), gradient_steps=1200, records=40, seeds=2,
                   probe_workers=20, probe_commits=40, probe_seeds=1)


def rule_for(name: str, config: Config, local_steps: int):
    """The rule ``name`` with the study's Adam inner optimizer and hyperparameters."""
    options = {"learning_rate": config.learning_rate, "local_steps": local_steps,
               "inner": "adam"}
    if name == "aeasgd":
        options["elasticity"] = config.elastic_alpha / config.learning_rate
    if name == "adag":
        options["gamma"] = config.gamma
    return make_rule(name, **options)


def problem_for(config: Config, workers: int) -> Problem:
    """The data problem with one IID shard per worker."""
    return get_problem(config.dataset, model=config.model, batch_size=config.batch_size,
                       workers=workers)


def traces_for(config: Config, workers: int, local_steps: int, commits: int, seeds):
    """One schedule per seed (``rng = seed``), exponential compute times of mean 1 s."""
    cluster = Cluster(workers, ComputeTime("exponential"))
    return [simulate_async(cluster, commits=commits, local_steps=local_steps, rng=s)
            for s in seeds]


def t_interval(values: np.ndarray, axis: int = -1, confidence: float = 0.95):
    """Mean and half-width of the Student-t interval over ``axis``."""
    from scipy import stats

    values = np.asarray(values, np.float64)
    count = values.shape[axis]
    mean = values.mean(axis=axis)
    if count < 2:
        return mean, np.full_like(mean, np.nan)
    half = stats.t.ppf(0.5 + confidence / 2, count - 1) * values.std(axis=axis, ddof=1)
    return mean, half / np.sqrt(count)


def loss_spike(loss: np.ndarray, fraction: float) -> np.ndarray:
    """The largest rise of ``loss`` above its running minimum within the first
    ``fraction`` of the records, relative to the initial loss (0: no spike)."""
    loss = np.asarray(loss, np.float64)
    stop = max(2, int(round(fraction * (loss.shape[-1] - 1))) + 1)
    early = np.where(np.isfinite(loss[..., :stop]), loss[..., :stop], np.inf)
    rise = early - np.minimum.accumulate(early, axis=-1)
    rise = np.where(np.isfinite(rise), rise, np.inf)  # a diverged run spikes without bound
    return rise.max(axis=-1) / loss[..., 0]


def _grid(config: Config, progress) -> dict:
    seeds = list(range(config.seeds))
    shape = (len(config.rules), len(config.workers), len(config.windows), len(seeds))
    points = config.records + 1
    loss = np.full(shape + (points,), np.nan, np.float32)
    accuracy = np.full(shape + (points,), np.nan, np.float32)
    times = np.full(shape[1:] + (points,), np.nan)
    commits = np.zeros((len(config.windows), points), np.int64)
    cells = [(i, n, j, lam) for i, n in enumerate(config.workers)
             for j, lam in enumerate(config.windows)]
    for i, n, j, lam in progress_bar(cells, desc="mnist_rules", unit="cell", progress=progress):
        count = config.gradient_steps // lam
        problem = problem_for(config, n)
        traces = traces_for(config, n, lam, count, seeds)
        for r, name in enumerate(config.rules):
            result = replay(rule_for(name, config, lam), problem, traces, seeds=seeds,
                            record_every=count // config.records, progress=False)
            loss[r, i, j] = result.loss
            accuracy[r, i, j] = result.metrics["accuracy"]
        times[i, j] = result.record_time
        commits[j] = result.record_events
    return {"loss": loss, "accuracy": accuracy, "record_time": times,
            "record_commits": commits}


def _derived(config: Config, data: dict) -> dict:
    loss, accuracy, times = data["loss"], data["accuracy"], data["record_time"]
    seconds = np.asarray(first_reached(accuracy, config.target, times[None]))
    reached_commits = np.asarray(first_reached(
        accuracy, config.target, data["record_commits"][None, None, :, None, :]))
    downpour = config.rules.index("downpour")
    every = np.broadcast_to(times[None], loss.shape)  # a cell's rules share its schedules
    efficiency = np.asarray(temporal_efficiency(every, loss, every,
                                                np.broadcast_to(loss[downpour], loss.shape)))
    final = accuracy[..., -1]
    mean, half = t_interval(final)
    return {
        "final_accuracy": final,                  # (rules, n, λ, seeds)
        "final_accuracy_mean": mean,
        "final_accuracy_half_width": half,        # 95 % t interval
        "seconds_to_target": seconds,             # (rules, n, λ, seeds) inf: never
        "commits_to_target": reached_commits,
        "efficiency": efficiency,                 # E(rule, DOWNPOUR) per seed
        "spike": loss_spike(loss, config.spike_fraction),  # early part of the run
        "spike_all": loss_spike(loss, 1.0),                # the whole run
    }


def adag_scales(config: Config, local_steps: int) -> dict:
    """ADAG's scale factor of every commit in the first ``probe_commits`` commits.

    Each seed's schedule is replayed by :func:`asynclab.engine.record_exchanges`, which
    keeps every exchange's ``ExchangeInfo`` (the mean scale factor over the weights), and
    by :func:`asynclab.replay` for the training loss after every commit; the two must end
    at the same centre (``reconstruction_error``, the largest absolute difference).
    """
    n, commits = config.probe_workers, config.probe_commits
    seeds = list(range(config.probe_seeds))
    problem = problem_for(config, n)
    rule = rule_for("adag", config, local_steps)
    traces = traces_for(config, n, local_steps, commits, seeds)
    result = replay(rule, problem, traces, seeds=seeds, record_every=1, progress=False)
    scale = np.zeros((len(seeds), commits), np.float32)
    error = 0.0
    for s, trace in enumerate(traces):
        record = record_exchanges(rule, problem, trace, seeds=[seeds[s]])
        scale[s] = record.scale[0]
        for mine, theirs in zip(jax.tree.leaves(record.final_params),
                                jax.tree.leaves(result.final_params), strict=True):
            error = max(error, float(np.max(np.abs(mine[0] - theirs[s]))))
    per_worker = np.array([[scale[s, traces[s].worker == k].mean()
                            if np.any(traces[s].worker == k) else np.nan
                            for k in range(n)] for s in range(len(seeds))])
    return {"scale": scale,                                       # (seeds, commits)
            "worker": np.stack([t.worker for t in traces]),      # (seeds, commits)
            "staleness": np.stack([t.staleness for t in traces]),
            "per_worker": per_worker,                            # (seeds, n) mean scale
            "reconstruction_error": error,
            "loss": result.loss}                                 # (seeds, commits + 1)


def check(config: Config) -> None:
    """Refuse a configuration the study cannot measure, naming the field."""
    if "downpour" not in config.rules:
        raise ConfigError("rules: the study measures temporal efficiency against DOWNPOUR; "
                          "include 'downpour'")
    for lam in config.windows:
        if config.gradient_steps % (lam * config.records):
            raise ConfigError(f"gradient_steps ({config.gradient_steps}) must be a multiple "
                              f"of λ · records ({lam} · {config.records}) for every λ")
    if config.probe_commits < 1 or config.probe_seeds < 1:
        raise ConfigError("probe_commits and probe_seeds must be >= 1")


def run(config: Config = Config(), progress=None) -> dict:
    """Every rule in every (n, λ) cell, the derived measures, and ADAG's scale factors."""
    check(config)
    data = _grid(config, progress)
    data.update(_derived(config, data))
    data.update({"rules": np.array(config.rules), "workers": np.array(config.workers),
                 "windows": np.array(config.windows), "seeds": np.arange(config.seeds),
                 "target": config.target})
    for lam in config.windows:
        probe = adag_scales(config, lam)
        data.update({f"probe_{k}_{lam}": v for k, v in probe.items()})
    return data
