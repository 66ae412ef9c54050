"""Notebook 04: update rules compared on real handwritten digits, and ADAG's scale factors.

:func:`compare_rules` runs several asynchronous rules on one cluster schedule (the same
trace for every rule with the same λ); :func:`exchange_record` replays one trace with a
rule and keeps what the replay engine does not: the factor the server applied to every
commit (ADAG's distance scaling, ``ExchangeInfo.scale``) and its staleness.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from .._errors import ConfigError
from ..cluster import Trace
from ..engine import Result, record_exchanges, run
from ..problems import Problem
from ..rules import Rule


def compare_rules(rules, *, problem: str = "mnist", workers: int = 4, commits: int = 600,
                  learning_rate: float = 0.05, local_steps: int = 1, seed: int = 0,
                  compute: str = "exponential", problem_options: dict | None = None,
                  record_every: int | None = None, hyperparameters: dict | None = None,
                  progress: bool | None = None) -> dict[str, Result]:
    """Run every rule in ``rules`` (names) on ``problem`` with the same cluster and seed.

    Args:
      rules: rule names (asynchronous rules share the schedule of the first seed).
      problem: ``mnist`` (5,000 real images), ``digits`` (1,797 8×8 digits) or any
        problem name.
      workers: as for :func:`asynclab.run`.
      commits: as for :func:`asynclab.run`.
      learning_rate: as for :func:`asynclab.run`.
      local_steps: as for :func:`asynclab.run`.
      seed: as for :func:`asynclab.run` (one seed).
      compute: as for :func:`asynclab.run`.
      problem_options: options of the problem (``model``, ``batch_size``, …).
      record_every: record the loss and validation metrics every k commits (default:
        about 30 records).
      hyperparameters: per rule name, its own hyperparameters (e.g. ``{"adag":
        {"gamma": 1e-3}}``).
      progress: progress bars (None: automatic).

    Returns:
      ``name -> Result``; ``Result.metrics["accuracy"]`` is the centre's validation
      accuracy at each record, ``Result.record_time`` the simulated seconds.
    """
    rules = list(rules)
    if not rules:
        raise ConfigError("rules: give at least one rule name")
    hyperparameters = dict(hyperparameters or {})
    every = record_every or max(1, commits // 30)
    results = {}
    for name in rules:
        results[name] = run(problem, name, workers=workers, commits=commits, seeds=seed,
                            learning_rate=learning_rate, local_steps=local_steps,
                            compute=compute, problem_options=problem_options,
                            record_every=every, progress=progress,
                            **hyperparameters.get(name, {}))
    return results


class ExchangeRecord(NamedTuple):
    """What :func:`exchange_record` keeps of every commit of a trace.

    Attributes:
      scale: ``(T,)`` the factor the server applied to each commit (ADAG: the mean over
        the weights of 1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1); 1 for plain addition; NaN once the
        run has diverged).
      staleness: ``(T,)`` the commit's staleness τ as the rule counted it.
      final_params: the centre after the last commit.
    """

    scale: np.ndarray
    staleness: np.ndarray
    final_params: object


def exchange_record(rule: Rule, problem: Problem | str, trace: Trace, *, seed: int = 0,
                    noise: float = 0.0) -> ExchangeRecord:
    """Replay ``trace`` with an asynchronous ``rule`` for one seed, recording every
    exchange's :class:`~asynclab.rules.ExchangeInfo`: one seed of
    :func:`asynclab.engine.record_exchanges`, so ``final_params`` equals
    :func:`asynclab.replay`'s for the same seed."""
    record = record_exchanges(rule, problem, trace, seeds=[seed], noise=noise)
    return ExchangeRecord(record.scale[0], record.staleness[0],
                          jax.tree.map(lambda x: x[0], record.final_params))
