"""Notebook 04: update rules compared on real handwritten digits, and ADAG's scale factors.

:func:`compare_rules` runs several asynchronous rules on one cluster schedule (the same
trace for every rule with the same λ); :func:`exchange_record` replays one trace with a
rule and keeps what the replay engine does not: the factor the server applied to every
commit (ADAG's distance scaling, ``ExchangeInfo.scale``) and its staleness.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .._errors import ConfigError  # noqa: E402
from ..cluster import Trace  # noqa: E402
from ..engine import Result, record_exchanges, run  # noqa: E402
from ..plot._common import finish, series_colors  # noqa: E402
from ..problems import Problem  # noqa: E402
from ..rules import Rule  # noqa: E402


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


def plot_rule_comparison(results: dict[str, Result], scales: ExchangeRecord | None = None,
                         path=None, *, title: str | None = None):
    """The centre's validation accuracy and its training loss against simulated time for
    every rule, and (given ``scales``) the factor the server applied at every commit
    against the commit's staleness."""
    panels = 3 if scales is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.4))
    colors = series_colors(len(results))
    for (name, result), color in zip(results.items(), colors, strict=True):
        time = result.record_time[0]
        axes[0].plot(time, result.metrics["accuracy"][0], "-", color=color, lw=1.8,
                     label=name)
        axes[1].plot(time, result.loss[0], "-", color=color, lw=1.8, label=name)
    axes[0].set_ylabel("validation accuracy of the centre")
    axes[0].set_ylim(0, 1)
    axes[0].set_title("accuracy against simulated time", fontsize=10)
    axes[1].set_ylabel("training loss of the centre")
    axes[1].set_yscale("log")
    axes[1].set_title("loss against simulated time", fontsize=10)
    for ax in axes[:2]:
        ax.set_xlabel("simulated time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if scales is not None:
        ax = axes[2]
        jitter = np.random.default_rng(0).uniform(-0.25, 0.25, scales.staleness.size)
        points = ax.scatter(scales.staleness + jitter, scales.scale, s=6, alpha=0.5,
                            c=np.arange(scales.scale.size), cmap="viridis")
        fig.colorbar(points, ax=ax, label="commit")
        ax.set_xlabel("staleness τ of the commit (commits)")
        ax.set_ylabel("scale factor, mean over the weights")
        ax.set_title(f"the server's scale factors (mean {scales.scale.mean():.3f}, "
                     f"smallest {scales.scale.min():.3f})", fontsize=10)
    return finish(fig, path, title, fontsize=11)
