"""Failures: goodput and time to target against the failure rate.

Clusters of n workers with exponential step times (mean 1 s) train a convex quadratic
(``dim``, ``condition``) with additive gradient noise σ² while their workers fail and come
back: Poisson churn, every worker up for Exp(MTBF) seconds, then down for Exp(MTTR)
(``asynclab.cluster.Availability``). A crash loses the compute phase in flight; a worker
that comes back pulls the current centre; a synchronous round waits for a worker that is
down. Five rules:

- ``synchronous SGD``: every round averages the n workers' gradients (λ = 1), with the
  step size n·η (``synchronous_learning_rate``, the linear scaling rule);
- ``DOWNPOUR``: asynchronous SGD, every gradient applied as it arrives (λ = 1);
- ``ADAG``: DOWNPOUR's commits scaled per weight by how far the centre moved (λ = 1);
- ``DiLoCo``: synchronous rounds of H inner SGD steps (step size n·η) and an outer
  Nesterov step;
- ``async DiLoCo``: the outer gradients committed asynchronously (Liu et al. 2024),
  applied by outer SGD with step size 1/n (the per-commit Nesterov step of synchronous
  DiLoCo does not converge here), inner step size ``async_learning_rate``.

Every run lasts ``horizon`` simulated seconds. Measured per (rule, MTBF, seed): the goodput
(useful gradient evaluations over all those started) and the useful evaluations per
device-second (``Result.goodput``, ``Result.goodput_per_device_second``), the simulated
seconds until the central loss first reaches ``target`` (∞ if never) and the loss at the
horizon. Every seed schedules its own cluster and failures (``rng = seed``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._errors import ConfigError
from ..cluster import Availability, Cluster, ComputeTime
from ._horizon import outcomes, over_cells, quadratic_run

RULES = ("synchronous SGD", "DOWNPOUR", "ADAG", "DiLoCo", "async DiLoCo")


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates (``mtbf`` entries of ``inf``: no failures)."""

    workers: int = 8
    mtbf: tuple[float, ...] = (math.inf, 400.0, 200.0, 100.0, 50.0, 25.0)
    mttr: float = 10.0
    dim: int = 10
    condition: float = 10.0
    learning_rate: float = 0.01  # η of DOWNPOUR and ADAG, per commit
    #: η of synchronous SGD (per round of n averaged gradients) and of DiLoCo's inner
    #: steps: n·η, the linear scaling rule
    synchronous_learning_rate: float = 0.08
    local_steps: int = 8  # DiLoCo's H
    outer_learning_rate: float = 0.7
    outer_momentum: float = 0.9
    #: asynchronous DiLoCo: inner step size and outer SGD (no momentum) step size; the
    #: outer Nesterov step of synchronous DiLoCo (0.7, 0.9), taken per commit, does not
    #: converge here, even delayed to every n-th commit (Delayed Nesterov)
    async_learning_rate: float = 0.04
    async_outer_learning_rate: float = 0.125
    noise: float = 1.0
    horizon: float = 400.0
    target: float = 0.2  # central loss (the start's is 20.4)
    seeds: int = 8

    @classmethod
    def quick(cls) -> Config:
        return cls(mtbf=(math.inf, 100.0, 25.0), horizon=200.0, seeds=2)


def setting(config: Config, rule: str, mtbf: float) -> tuple[str, dict, Cluster]:
    """``(rule name, hyperparameters, cluster)`` of one rule at one MTBF."""
    availability = None if math.isinf(mtbf) else Availability(mtbf=mtbf, mttr=config.mttr)
    cluster = Cluster(config.workers, ComputeTime("exponential", mean=1.0),
                      availability=availability)
    eta = config.learning_rate
    if rule == "synchronous SGD":
        return "synchronous_sgd", {"learning_rate": config.synchronous_learning_rate}, cluster
    if rule == "DOWNPOUR":
        return "downpour", {"learning_rate": eta}, cluster
    if rule == "ADAG":
        return "adag", {"learning_rate": eta}, cluster
    outer = {"learning_rate": config.synchronous_learning_rate,
             "local_steps": config.local_steps, "inner": "sgd",
             "outer_learning_rate": config.outer_learning_rate,
             "outer_momentum": config.outer_momentum}
    if rule == "DiLoCo":
        return "diloco", outer, cluster
    return "async_diloco", {**outer, "learning_rate": config.async_learning_rate,
                            "outer_learning_rate": config.async_outer_learning_rate,
                            "outer_momentum": 0.0}, cluster


def one(config: Config, rule: str, mtbf: float):
    """The :class:`~asynclab.engine.Result` of one (rule, MTBF) for every seed."""
    name, hyperparameters, cluster = setting(config, rule, mtbf)
    return quadratic_run(config, name, cluster, **hyperparameters)


def _check(config: Config) -> None:
    if not config.mtbf or any(not m > 0 for m in config.mtbf):
        raise ConfigError(f"mtbf must be a non-empty tuple of numbers > 0 (inf: no "
                          f"failures), got {config.mtbf!r}")


def run(config: Config = Config(), progress=None) -> dict:
    """Goodput, time to target and final loss per (rule, MTBF, seed)."""
    _check(config)

    def measure(result):
        return {"goodput": result.goodput[result.trace_index],
                "goodput_per_device_second":
                    result.goodput_per_device_second[result.trace_index],
                **outcomes(result, config.target)}

    measured = over_cells(RULES, config.mtbf, lambda rule, mtbf: one(config, rule, mtbf),
                          measure, desc="failures", progress=progress)
    return {
        "rules": np.array(RULES),
        "mtbf": np.asarray(config.mtbf, np.float64),
        "failure_rate": 1.0 / np.asarray(config.mtbf, np.float64),
        "up_fraction": np.array([1.0 if math.isinf(m) else
                                 Availability(mtbf=m, mttr=config.mttr).up_fraction
                                 for m in config.mtbf]),
        "goodput": measured["goodput"].astype(np.float64),
        "goodput_per_device_second": measured["goodput_per_device_second"].astype(np.float64),
        "seconds_to_target": measured["seconds_to_target"].astype(np.float64),
        "final_loss": measured["final_loss"].astype(np.float32),
        "diverged": measured["diverged"],
    }
