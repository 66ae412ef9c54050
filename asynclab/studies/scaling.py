"""When does asynchrony pay off? Synchronous, asynchronous and mixed clusters of n workers.

A small net on a real data set (scikit-learn's 8×8 handwritten digits, an MLP) is
trained by clusters of n ∈ {1, 2, 4, 8, 16, 32} workers in three modes:

- ``synchronous``: synchronous SGD; a round waits for every worker, the server averages
  the n gradients (one step with an n× larger batch);
- ``asynchronous``: DOWNPOUR with λ = 1; every worker commits its own step as soon as it
  is done, on parameters that are τ commits stale;
- ``mixed``: synchronous groups of ``group_size`` workers (a node's devices), DOWNPOUR
  between the groups; a group commits when its slowest member is done.

Each mode runs on a homogeneous cluster and on one where one worker in ``slow_every``
(workers ``slow_every − 1``, ``2·slow_every − 1``, …) is ``slowdown``× slower.

The comparison is fair in data and in step size: every run makes the same number of
gradient evaluations (``evaluations``, each on a batch of ``batch_size``), and every
gradient moves the parameters by ``learning_rate``: a synchronous unit of k workers
(a whole synchronous cluster, or a mixed group) applies the mean of its k gradients
with ``k · learning_rate``, i.e. their sum with ``learning_rate`` — the linear
scaling rule. Synchronous and asynchronous then differ only in *when* a gradient is
applied (after waiting for the round, or on stale parameters), which is the question.
With n = 1 the three modes are the same algorithm (sequential SGD), run as DOWNPOUR
with one worker.

Measured per (cluster, mode, n, seed): the centre's validation accuracy at
``records + 1`` equally spaced gradient-evaluation counts, the simulated time of each
record, time and evaluations to the ``target`` validation accuracy, the final
validation accuracy and loss, and the simulated seconds per gradient evaluation. Every
seed schedules its own cluster (``rng = seed``) and draws its own batches and
initialisation; the seeds are the same in every cell.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._errors import ConfigError
from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime, Link
from ..engine import run as run_engine
from ..engine._metrics import hardware_efficiency, statistical_efficiency, time_to_target
from ._replayed import STUDY_DIVERGENCE

MODES = ("synchronous", "asynchronous", "mixed")
CLUSTERS = ("homogeneous", "slow workers")


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    dataset: str = "digits"
    model: str = "mlp:64"
    batch_size: int = 16
    learning_rate: float = 0.05  # per gradient evaluation (see the module docstring)
    evaluations: int = 2048  # gradient evaluations per run, every mode and n
    records: int = 64  # validation accuracy recorded every evaluations / records
    workers: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    group_size: int = 4  # mixed mode: workers per synchronous group (min(group_size, n))
    seeds: int = 16
    target: float = 0.9  # validation accuracy for "time to target"
    step_time: float = 1.0  # mean seconds of one gradient evaluation on a worker
    step_shape: float = 0.3  # lognormal σ of the step times
    latency: float = 0.02  # seconds per message on the link (commit, pull reply)
    server_time: float = 0.005  # seconds the parameter server serves one exchange
    intra_group_time: float = 0.02  # seconds of a mixed group's all-reduce
    slow_every: int = 8  # slow cluster: workers slow_every − 1, 2·slow_every − 1, … are slow
    slowdown: float = 4.0

    @classmethod
    def quick(cls) -> Config:
        return cls(workers=(1, 8), seeds=4, evaluations=512, records=16)


def unit_size(mode: str, workers: int, group_size: int) -> int:
    """Gradients per server update: n (synchronous), 1 (asynchronous), a group (mixed)."""
    if mode == "synchronous":
        return workers
    if mode == "mixed":
        return min(group_size, workers)
    return 1


def slow_workers(config: Config, workers: int) -> tuple[int, ...]:
    """The slow workers of the slow cluster of ``workers`` workers."""
    return tuple(range(config.slow_every - 1, workers, config.slow_every))


def cluster(config: Config, kind: str, mode: str, workers: int) -> Cluster:
    """The cluster of ``workers`` workers of ``kind`` (one of :data:`CLUSTERS`)."""
    scale = np.ones(workers)
    if kind == CLUSTERS[1]:
        scale[list(slow_workers(config, workers))] = config.slowdown
    group = unit_size(mode, workers, config.group_size) if mode == "mixed" else 1
    return Cluster(workers, ComputeTime("lognormal", config.step_time, config.step_shape),
                   time_scale=tuple(scale.tolist()), network=Link(config.latency),
                   server_time=config.server_time, group_size=group,
                   intra_group_time=config.intra_group_time)


def _rule(mode: str, workers: int) -> str:
    if workers == 1:  # the three modes coincide: sequential SGD
        return "downpour"
    return {"synchronous": "synchronous_sgd", "asynchronous": "downpour",
            "mixed": "mixed"}[mode]


def _one(config: Config, kind: str, mode: str, workers: int) -> dict:
    unit = unit_size(mode, workers, config.group_size)
    events = config.evaluations // unit
    result = run_engine(
        config.dataset, _rule(mode, workers), cluster=cluster(config, kind, mode, workers),
        commits=events, seeds=list(range(config.seeds)),
        learning_rate=config.learning_rate * unit, trace_per_seed=True,
        record_every=events // config.records, progress=False,
        diverged_above=STUDY_DIVERGENCE,
        problem_options={"model": config.model, "batch_size": config.batch_size})
    times = np.broadcast_to(result.record_time, result.metrics["accuracy"].shape)
    return {"accuracy": result.metrics["accuracy"], "validation_loss":
            result.metrics["validation_loss"], "time": times,
            "diverged": result.diverged}


def _check(config: Config) -> None:
    for n in config.workers:
        unit = unit_size("synchronous", n, config.group_size)
        if config.evaluations % (unit * config.records):
            raise ConfigError(f"evaluations ({config.evaluations}) must be a multiple of "
                              f"records × n ({config.records} × {n})")


def run(config: Config = Config(), progress=None) -> dict:
    """Accuracy curves, time to target and final accuracy per (cluster, mode, n, seed)."""
    _check(config)
    cells = [(c, m, i) for c in range(len(CLUSTERS)) for i in range(len(config.workers))
             for m in range(len(MODES))]
    out, done = {}, {}
    for c, m, i in progress_bar(cells, desc="scaling", unit="run", progress=progress):
        n = config.workers[i]
        # a cell whose rule and cluster equal an earlier one's is that run (n = 1 in every
        # mode; the slow cluster below slow_every workers)
        same = (_rule(MODES[m], n), cluster(config, CLUSTERS[c], MODES[m], n))
        if same not in done:
            done[same] = _one(config, CLUSTERS[c], MODES[m], n)
        for name, value in done[same].items():
            if name not in out:
                out[name] = np.zeros((len(CLUSTERS), len(MODES), len(config.workers),
                                      *value.shape), value.dtype)
            out[name][c, m, i] = value
    evaluations = np.arange(config.records + 1) * (config.evaluations // config.records)
    reached = time_to_target(out["time"], evaluations, out["accuracy"], config.target)
    seconds = np.asarray(reached.seconds, np.float64)
    evals = np.asarray(reached.commits, np.float64)
    reference = np.median(evals[:, :, :1], axis=-1)  # n = 1, per cluster and mode
    median = np.median(seconds, axis=-1)
    data = {
        "workers": np.asarray(config.workers),
        "modes": np.array(MODES),
        "clusters": np.array(CLUSTERS),
        "evaluations": evaluations,
        "accuracy": out["accuracy"].astype(np.float32),  # (C, M, N, S, R + 1)
        "validation_loss": out["validation_loss"].astype(np.float32),
        "time": out["time"].astype(np.float64),
        "diverged": out["diverged"],
        "seconds_to_target": seconds,  # (C, M, N, S), inf: never reached
        "evaluations_to_target": evals,
        "final_accuracy": out["accuracy"][..., -1].astype(np.float64),
        "final_validation_loss": out["validation_loss"][..., -1].astype(np.float64),
        # simulated seconds per gradient evaluation over the whole run
        "seconds_per_evaluation": np.asarray(hardware_efficiency(out["time"], evaluations),
                                             np.float64),
        # median evaluations to target relative to n = 1 (1: asynchrony costs nothing)
        "statistical_efficiency": np.asarray(statistical_efficiency(
            np.median(evals, axis=-1), reference), np.float64),
        # median time to target at n = 1 over median time to target at n
        "speedup": _ratio(median[:, :, :1], median),
        "slow_workers": np.array([len(slow_workers(config, n)) for n in config.workers]),
    }
    return data


def _ratio(a, b):
    """``a / b`` with NaN where both are infinite (never reached)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(a, np.float64) / np.asarray(b, np.float64)
