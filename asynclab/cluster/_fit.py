"""Timing models fitted to a step-time log, and the log replayed as a timing model.

- :func:`from_log` replays a log: a worker's k-th step takes its logged k-th time.
- :func:`fit_distribution` / :func:`fit_step_times` fit one worker's step times with
  ``scipy.stats`` (gamma, lognormal, shifted exponential; maximum likelihood, the family
  chosen by AIC) with parametric-bootstrap standard errors.
- :func:`fit_stragglers` labels steps normal or straggling and estimates a two-state
  Markov chain (stragglers that come and go) from the labelled sequences.
- :func:`fit_log` does all of it per worker; the result (:class:`FittedTimes`) is a
  timing model for :class:`~asynclab.cluster.Cluster`, at the log's worker count or,
  through :meth:`FittedTimes.resize`, at any other.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import _validate
from ._distributions import FAMILIES, DistributionFit, fit_step_times
from ._replayed import _WORKER_BYTES, _as_log, _check_choice, _Steps
from ._stragglers import StragglerFit, fit_stragglers
from ._timing import TimingModel, as_generator

EXTENDS: tuple[str, ...] = ("cycle", "resample")
"""How :meth:`FittedTimes.resize` gives a larger (or smaller) cluster its workers."""


def _markov_rows(normal: DistributionFit, median: float, stragglers, rng):
    """Row times of one worker from its normal-state fit and the straggler chain."""
    chain = stragglers is not None and stragglers.slowdown is not None and stragglers.p_enter > 0
    state = [bool(chain and rng.random() < stragglers.stationary)]

    def rows(count: int) -> np.ndarray:
        out = normal.sample(rng, count)
        if not chain:
            return out
        labels = np.empty(count, dtype=bool)
        i, s = 0, state[0]
        while i < count:
            # steps left in the current state: geometric with the chain's leave rate
            p = stragglers.p_leave if s else stragglers.p_enter
            run = int(rng.geometric(p)) if p > 0 else count
            labels[i : i + run] = s
            i += run
            s = not s
        # the state after this block: the state of its last step carries on (memoryless)
        state[0] = bool(labels[-1])
        slow = np.flatnonzero(labels)
        if slow.size:
            out[slow] = median * stragglers.slowdown.sample(rng, slow.size)
        return out

    return rows


@dataclasses.dataclass(frozen=True, eq=False)
class FittedTimes(TimingModel):
    """A timing model fitted to a log: per-worker distributions plus the straggler chain.

    Worker k's steps are drawn from its own fitted distribution (``normal[k]``) while it
    is in the normal state; the state follows the two-state Markov chain
    ``stragglers`` (shared by all workers, started in its stationary distribution), and
    a straggling step takes ``median[k]`` × a draw of the slowdown distribution. Draws
    come from the worker's own generator, so runs are reproducible.

    Build it with :func:`fit_log`; :meth:`resize` gives it another number of workers.

    Attributes:
      normal: per worker, the fitted distribution of its normal-state steps (row times).
      median: per worker, its median step time (the straggling steps' unit).
      stragglers: the fitted chain, or None for independent steps.
      per_row: local steps one logged row covers.
      origin: per worker, the index of the logged worker it was fitted to.
    """

    normal: tuple[DistributionFit, ...]
    median: tuple[float, ...]
    stragglers: StragglerFit | None = None
    per_row: int = 1
    origin: tuple[int, ...] = ()

    @property
    def workers(self) -> int:
        return len(self.normal)

    def stream(self, worker: int, rng: np.random.Generator):
        return _Steps(_markov_rows(self.normal[worker], self.median[worker], self.stragglers,
                                   rng), self.per_row)

    def mean_step(self) -> float:
        """Mean time of one local step over workers (straggling included)."""
        base = np.array([f.mean for f in self.normal])
        s = self.stragglers
        if s is not None and s.slowdown is not None and s.p_enter > 0:
            slow = np.array(self.median) * s.slowdown.mean
            base = (1 - s.stationary) * base + s.stationary * slow
        return float(base.mean()) / self.per_row

    def resize(self, workers: int, *, extend: str = "cycle", rng=None) -> FittedTimes:
        """The same fitted cluster with another number of workers.

        Args:
          workers: the new number of workers, >= 1.
          extend: how worker j of the new cluster gets its model: ``"cycle"``: from
            logged worker ``j mod n`` (so 2n workers are the logged cluster twice, and
            the spread of speeds across workers is kept exactly); ``"resample"``: from a
            logged worker drawn uniformly with replacement (the log's workers taken as a
            sample of the machines a larger cluster would be made of).
          rng: generator or seed for ``"resample"`` (None: seed 0).

        Returns:
          A :class:`FittedTimes` with ``workers`` workers; :attr:`origin` says which
          logged worker each came from. The straggler chain is shared as before.
        """
        workers = _validate.count(workers, "workers")
        _validate.check_memory(workers * _WORKER_BYTES, f"workers={workers}",
                               what="this cluster", advice="use fewer workers")
        _check_choice("extend", extend, EXTENDS)
        n = self.workers
        if extend == "cycle":
            pick = np.arange(workers) % n
        else:
            pick = as_generator(rng).integers(0, n, workers)
        origin = self.origin or tuple(range(n))
        return dataclasses.replace(
            self, normal=tuple(self.normal[i] for i in pick),
            median=tuple(self.median[i] for i in pick),
            origin=tuple(origin[i] for i in pick))

    def __repr__(self) -> str:
        s = self.stragglers
        chain = ("None" if s is None else
                 f"p_enter={s.p_enter:.4g}, p_leave={s.p_leave:.4g}")
        return (f"FittedTimes(workers={self.workers}, families="
                f"{[f.family for f in self.normal]}, stragglers=({chain}), "
                f"per_row={self.per_row})")

    def describe(self) -> dict:
        s = self.stragglers
        return {
            "model": "fitted", "workers": self.workers, "local_steps_per_row": self.per_row,
            "families": [f.family for f in self.normal],
            "parameters": [f.parameters for f in self.normal],
            "origin": list(self.origin),
            "stragglers": None if s is None else {
                "threshold": s.threshold, "p_enter": s.p_enter, "p_leave": s.p_leave,
                "slowdown": None if s.slowdown is None else
                {"family": s.slowdown.family, **s.slowdown.parameters}},
        }


def fit_log(log, *, communication: bool = True, threshold: float | None = 3.0,
            families=FAMILIES, bootstrap: int = 200, seed: int = 0,
            format: str = "auto") -> FittedTimes:
    """Fits a timing model to a log, worker by worker.

    The step times fitted are the ones :func:`from_log` replays (compute, plus
    communication when ``communication`` and logged). First the straggler chain is
    fitted (:func:`fit_stragglers`); then each worker's normal-state steps get the
    family of :data:`FAMILIES` with the lowest AIC (:func:`fit_step_times`). The
    workers keep their own fits, so heterogeneity across workers (speed and shape) is
    kept as measured.

    Args:
      log: a :class:`~asynclab.cluster.StepLog` or a path.
      communication: fit compute + communication (True) or compute only.
      threshold: straggler labelling factor over each worker's median (None: no
        straggler chain; every step is drawn independently).
      families: the candidate families.
      bootstrap: refits in the bootstrap of the standard errors.
      seed: the bootstrap's seed.
      format: the file layout, for a path.

    Returns:
      A :class:`FittedTimes`; ``Cluster(fitted.workers, compute=fitted)`` simulates
      the fitted cluster, ``fitted.resize(32)`` a larger one.
    """
    log = _as_log(log, format)
    times = [log.durations(k, communication=bool(communication)) for k in range(log.n_workers)]
    stragglers = None
    if threshold is not None:
        stragglers = fit_stragglers(times, threshold=threshold, bootstrap=bootstrap, seed=seed)
    normal, median = [], []
    for k, t in enumerate(times):
        body = t if stragglers is None else t[~stragglers.labels[k]]
        best, _ = fit_step_times(body, families, bootstrap=bootstrap, seed=seed + k,
                                 what=f"{log.source}, worker {log.names[k]}")
        normal.append(best)
        median.append(float(np.median(t)))
    return FittedTimes(normal=tuple(normal), median=tuple(median), stragglers=stragglers,
                       per_row=log.local_steps, origin=tuple(range(log.n_workers)))
