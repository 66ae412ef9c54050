"""Steps labelled normal or straggling, and the two-state Markov chain (stragglers that
come and go) estimated from the labelled sequences."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import _validate
from ._distributions import _MIN_STEPS, DistributionFit, fit_step_times


class StragglerFit(NamedTuple):
    """A two-state (normal / straggling) Markov chain over each worker's steps.

    A step is *straggling* when it takes more than ``threshold`` times its worker's
    median step. From the labelled sequences, pooled over workers, the transition
    probabilities are the observed transition frequencies (their maximum-likelihood
    estimates), with binomial standard errors.

    Attributes:
      threshold: the labelling factor over each worker's median.
      p_enter: P(next step straggles | this one is normal).
      p_leave: P(next step is normal | this one straggles).
      p_enter_se, p_leave_se: their standard errors, sqrt(p (1 − p) / transitions).
      fraction: share of steps labelled straggling.
      slowdown: the straggling steps' times over their worker's median (a fit of
        :data:`FAMILIES`), or None when there are too few of them to fit.
      episodes: ``(E, 3)`` int array of straggling episodes: worker, first step (row
        index within the worker), length in steps.
      labels: per worker, the boolean labels of its steps.
    """

    threshold: float
    p_enter: float
    p_leave: float
    p_enter_se: float
    p_leave_se: float
    fraction: float
    slowdown: DistributionFit | None
    episodes: np.ndarray
    labels: tuple[np.ndarray, ...]

    @property
    def stationary(self) -> float:
        """Long-run share of straggling steps: p_enter / (p_enter + p_leave)."""
        total = self.p_enter + self.p_leave
        return self.p_enter / total if total > 0 else 0.0

    @property
    def mean_episode(self) -> float:
        """Mean length of a straggling episode under the chain, 1 / p_leave."""
        return 1.0 / self.p_leave if self.p_leave > 0 else math.inf


def _episodes(labels: np.ndarray) -> list[tuple[int, int]]:
    padded = np.concatenate([[False], labels, [False]]).astype(np.int8)
    edges = np.diff(padded)
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1)
    return [(int(a), int(b - a)) for a, b in zip(starts, stops, strict=True)]


def fit_stragglers(times_per_worker, *, threshold: float = 3.0, bootstrap: int = 200,
                   seed: int = 0) -> StragglerFit:
    """Labels straggling steps and fits the two-state Markov chain.

    Args:
      times_per_worker: a sequence with each worker's step times in order.
      threshold: a step straggles when it takes more than ``threshold`` × its worker's
        median step time; a number > 1.
      bootstrap: refits in the bootstrap of the slowdown distribution's standard errors.
      seed: the bootstrap's seed.

    Returns:
      A :class:`StragglerFit`.
    """
    _validate.number(threshold, "threshold (a factor over the median)", low=1, low_open=True)
    counts = np.zeros((2, 2))
    labels, episodes, ratios = [], [], []
    for k, t in enumerate(times_per_worker):
        t = np.asarray(t, dtype=np.float64)
        median = float(np.median(t))
        lab = t > threshold * median
        labels.append(lab)
        # transitions (this step, next step) counted in one pass: index 2 * a + b
        pairs = np.bincount(2 * lab[:-1].view(np.uint8) + lab[1:].view(np.uint8),
                            minlength=4)
        counts += pairs.reshape(2, 2)
        episodes += [(k, s, n) for s, n in _episodes(lab)]
        ratios.append(t[lab] / median)
    steps = sum(lab.size for lab in labels)
    out_normal, out_strag = counts[0].sum(), counts[1].sum()
    p_enter = counts[0, 1] / out_normal if out_normal else 0.0
    p_leave = counts[1, 0] / out_strag if out_strag else 1.0
    ratios = np.concatenate(ratios) if ratios else np.empty(0)
    slowdown = None
    if ratios.size >= _MIN_STEPS and np.ptp(ratios) > 0:
        slowdown, _ = fit_step_times(ratios, bootstrap=bootstrap, seed=seed,
                                     what="straggling steps / median")
    return StragglerFit(
        threshold=float(threshold), p_enter=float(p_enter), p_leave=float(p_leave),
        p_enter_se=float(math.sqrt(p_enter * (1 - p_enter) / out_normal)) if out_normal else 0.0,
        p_leave_se=float(math.sqrt(p_leave * (1 - p_leave) / out_strag)) if out_strag else 0.0,
        fraction=float(sum(lab.sum() for lab in labels) / steps) if steps else 0.0,
        slowdown=slowdown,
        episodes=np.array(episodes, dtype=np.int64).reshape(-1, 3),
        labels=tuple(labels),
    )
