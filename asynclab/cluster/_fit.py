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
import math
import numbers
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import _validate
from .._errors import ConfigError
from ._logs import StepLog, read_log
from ._timing import Cluster, TimingModel, as_generator

FAMILIES: tuple[str, ...] = ("gamma", "lognormal", "shifted_exponential")
"""The distribution families :func:`fit_step_times` chooses from."""
ENDS: tuple[str, ...] = ("stop", "wrap")
"""What a replayed log does when a worker has used up its steps."""
EXTENDS: tuple[str, ...] = ("cycle", "resample")
"""How :meth:`FittedTimes.resize` gives a larger (or smaller) cluster its workers."""

_MIN_STEPS = 10  # fewer steps cannot support a two-parameter fit


# ------------------------------------------------------------------- step streams


#: Bytes one fitted worker costs (its entries in the model's tuples and a simulated
#: worker's process and stream).
_WORKER_BYTES = 4096


class _Steps:
    """A worker's stream of step times from a source of row times (a log's rows).

    A row covers ``per_row`` local steps; it is split into ``per_row`` equal steps. The
    simulator asks for ``(rows, width)`` phases and gets whole phases only. Only the
    steps asked for are built, so a row of many steps costs nothing until it is used.
    """

    __slots__ = ("_rows", "_per_row", "_time", "_left", "_rest")

    def __init__(self, rows, per_row: int):
        self._rows = rows  # rows(count) -> array of at most `count` row times
        self._per_row = per_row
        self._time, self._left = 0.0, 0  # the row in use and its steps not handed out
        self._rest = np.empty(0)  # steps short of a whole phase once the rows ran out

    def __call__(self, shape) -> np.ndarray:
        rows, width = shape
        per = self._per_row
        want = rows * width - self._rest.size
        take = min(self._left, max(want, 0))
        times, counts = [self._time], [take]
        self._left -= take
        if want > take:
            fetched = np.asarray(self._rows(-(-(want - take) // per)), dtype=np.float64)
            if fetched.size:
                spare = max(fetched.size * per - (want - take), 0)  # the last row's rest
                times.extend(fetched)
                counts.extend([per] * (fetched.size - 1) + [per - spare])
                self._time, self._left = float(fetched[-1]), spare
        steps = np.concatenate([self._rest, np.repeat(np.asarray(times) / per, counts)])
        m = min(rows, steps.size // width)
        self._rest = steps[m * width :]
        return steps[: m * width].reshape(m, width)


def _cursor(times: np.ndarray, end: str):
    position = [0]

    def rows(count: int) -> np.ndarray:
        i = position[0]
        if end == "stop":
            out = times[i : i + count]
        else:
            out = times[np.arange(i, i + count) % times.size]
        position[0] = i + out.size
        return out

    return rows


@dataclasses.dataclass(frozen=True, eq=False)
class ReplayedTimes(TimingModel):
    """A log replayed: worker k's j-th step takes its j-th logged time.

    Build it with :func:`from_log`. Attributes:
      times: per worker, the logged time of each row in order (seconds).
      per_row: local steps one row covers (the log's ``local_steps``).
      end: ``"stop"``: the run ends when a worker has used up its log; ``"wrap"``: the
        worker starts its log again from its first step.
      source: where the log came from.
    """

    times: tuple[np.ndarray, ...]
    per_row: int = 1
    end: str = "stop"
    source: str = "log"

    @property
    def workers(self) -> int:
        return len(self.times)

    def stream(self, worker: int, rng: np.random.Generator):
        return _Steps(_cursor(self.times[worker], self.end), self.per_row)

    def __repr__(self) -> str:
        return (f"ReplayedTimes(source={self.source!r}, workers={self.workers}, rows="
                f"{[int(t.size) for t in self.times]}, per_row={self.per_row}, end={self.end!r})")

    def mean_step(self) -> float:
        """Mean logged time of one local step over every worker's rows."""
        return float(np.mean(np.concatenate(self.times))) / self.per_row

    def describe(self) -> dict:
        return {"model": "replayed log", "source": self.source, "workers": self.workers,
                "rows": [int(t.size) for t in self.times], "local_steps_per_row": self.per_row,
                "end": self.end, "mean_step": self.mean_step()}


def _as_log(log, format: str = "auto", job=None) -> StepLog:
    if isinstance(log, StepLog):
        return log
    if isinstance(log, str | Path):
        return read_log(log, format=format, job=job)
    raise ConfigError(f"log must be a StepLog or a path to a log file, got {log!r}")


def _check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def from_log(log, *, end: str = "stop", communication: bool = True, format: str = "auto",
             **cluster_options) -> Cluster:
    """A cluster whose workers replay a log's measured step times in order.

    Worker k's j-th local step takes the j-th logged time of the log's worker k
    (compute, plus communication when ``communication`` and the log has it; the time
    of an unavailable step is added to the next available one). A row that covers λ
    local steps (``local_steps`` column) is split into λ equal steps. Everything else
    of the simulator still applies: network, server queue, stragglers, budget, and
    the trace replays with every rule and backend.

    The logged communication already contains what the real network and server took;
    keep ``network`` and ``server_time`` at 0 then, or replay compute only
    (``communication=False``) and model them.

    Args:
      log: a :class:`~asynclab.cluster.StepLog` or a path (see :func:`read_log`).
      end: what happens when a worker has used up its logged steps before the budget:
        ``"stop"`` ends the run there (the trace then has fewer events than asked;
        nothing is invented), ``"wrap"`` starts that worker's log again.
      communication: add the logged communication seconds to each step.
      format: the file layout, for a path (``"auto"``, ``"long"``, ``"wide"``).
      **cluster_options: other :class:`Cluster` fields (``network``, ``server_time``,
        ``time_scale``, ``stragglers``, ``message_bytes``, ``group_size``...).

    Returns:
      A :class:`Cluster` with one worker per logged worker.

    Example:
      >>> cluster = from_log("my_cluster.csv.gz", end="wrap")
      >>> trace = simulate_async(cluster, commits=50_000)
    """
    log = _as_log(log, format)
    _check_choice("end", end, ENDS)
    if "workers" in cluster_options or "compute" in cluster_options:
        raise ConfigError("from_log takes its workers and compute times from the log")
    times = tuple(log.durations(k, communication=bool(communication))
                  for k in range(log.n_workers))
    model = ReplayedTimes(times=times, per_row=log.local_steps, end=end, source=log.source)
    return Cluster(workers=log.n_workers, compute=model, **cluster_options)


# ------------------------------------------------------------------- distributions


class DistributionFit(NamedTuple):
    """A maximum-likelihood fit of step times to one family.

    Parameters by family (all in seconds except the shapes):

    - ``gamma``: ``shape`` k and ``scale`` θ (mean kθ), location fixed at 0;
    - ``lognormal``: ``sigma`` (of log t) and ``scale`` = exp(μ), location fixed at 0;
    - ``shifted_exponential``: ``loc`` (the shift) and ``scale`` (mean loc + scale).

    Attributes:
      family: one of :data:`FAMILIES`.
      parameters: the fitted parameters, by name.
      standard_errors: their standard errors by parametric bootstrap, by name, or None.
      log_likelihood: the maximised log-likelihood.
      aic: 2 · (number of parameters) − 2 · log-likelihood.
      n: number of step times fitted.
    """

    family: str
    parameters: dict
    standard_errors: dict | None
    log_likelihood: float
    aic: float
    n: int

    def frozen(self):
        """The fitted distribution as a frozen ``scipy.stats`` distribution."""
        return _frozen(self.family, self.parameters)

    @property
    def mean(self) -> float:
        return float(self.frozen().mean())

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return np.asarray(self.frozen().rvs(size=size, random_state=rng), dtype=np.float64)


def _frozen(family: str, p: dict):
    from scipy import stats  # imported when needed: it costs ~0.7 s at start-up

    if family == "gamma":
        return stats.gamma(p["shape"], scale=p["scale"])
    if family == "lognormal":
        return stats.lognorm(p["sigma"], scale=p["scale"])
    return stats.expon(loc=p["loc"], scale=p["scale"])


def _mle(family: str, x: np.ndarray) -> dict:
    from scipy import stats

    if family == "gamma":
        shape, _, scale = stats.gamma.fit(x, floc=0)
        return {"shape": float(shape), "scale": float(scale)}
    if family == "lognormal":
        sigma, _, scale = stats.lognorm.fit(x, floc=0)
        return {"sigma": float(sigma), "scale": float(scale)}
    loc, scale = stats.expon.fit(x)
    return {"loc": float(loc), "scale": float(scale)}


def _check_times(times, what: str) -> np.ndarray:
    x = np.asarray(times, dtype=np.float64).ravel()
    if x.size < _MIN_STEPS:
        raise ConfigError(f"{what}: {x.size} step time(s) cannot be fitted (need at least "
                          f"{_MIN_STEPS})")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ConfigError(f"{what}: step times must be finite and > 0 to be fitted")
    if np.ptp(x) <= 0:
        raise ConfigError(f"{what}: every step took the same time ({x[0]!r} s); a constant "
                          "needs no fit")
    return x


def fit_distribution(times, family: str, *, bootstrap: int = 200, seed: int = 0,
                     what: str = "times") -> DistributionFit:
    """Fits step times to one family by maximum likelihood (``scipy.stats``).

    Standard errors come from a parametric bootstrap: ``bootstrap`` samples of the same
    size drawn from the fitted distribution (generator seeded with ``seed``), each
    refitted; the standard error of a parameter is the standard deviation of its
    refits. (The shifted exponential's shift is a boundary estimate, the sample minimum,
    for which the usual Fisher-information formula does not hold; the bootstrap does.)

    Args:
      times: step times in seconds, finite and > 0, at least 10.
      family: one of :data:`FAMILIES`.
      bootstrap: number of bootstrap refits (0: no standard errors).
      seed: seed of the bootstrap's generator.
      what: a name for the data, for error messages.

    Returns:
      A :class:`DistributionFit`.
    """
    _check_choice("family", family, FAMILIES)
    x = _check_times(times, what)
    parameters = _mle(family, x)
    frozen = _frozen(family, parameters)
    loglik = float(np.sum(frozen.logpdf(x)))
    errors = None
    if bootstrap:
        if not isinstance(bootstrap, numbers.Integral) or bootstrap < 2:
            raise ConfigError(f"bootstrap must be 0 or an integer >= 2, got {bootstrap!r}")
        rng = np.random.default_rng(seed)
        draws = frozen.rvs(size=(int(bootstrap), x.size), random_state=rng)
        refits = [_mle(family, row) for row in draws]
        errors = {name: float(np.std([r[name] for r in refits], ddof=1)) for name in parameters}
    return DistributionFit(family=family, parameters=parameters, standard_errors=errors,
                           log_likelihood=loglik, aic=2 * len(parameters) - 2 * loglik,
                           n=int(x.size))


def fit_step_times(times, families=FAMILIES, *, bootstrap: int = 200, seed: int = 0,
                   what: str = "times") -> tuple[DistributionFit, dict]:
    """Fits every family and keeps the one with the lowest AIC.

    Every family has two parameters, so the AIC ranks them by likelihood.

    Returns:
      ``(best, fits)``: the chosen :class:`DistributionFit` (with bootstrap standard
      errors) and every family's fit by name (without).
    """
    if isinstance(families, str) or not families:
        raise ConfigError(f"families must be a non-empty sequence of {FAMILIES}, got "
                          f"{families!r}")
    fits = {f: fit_distribution(times, f, bootstrap=0, what=what) for f in families}
    best = min(fits.values(), key=lambda f: f.aic)
    if bootstrap:
        best = fit_distribution(times, best.family, bootstrap=bootstrap, seed=seed, what=what)
    return best, fits


# ------------------------------------------------------------------- stragglers


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
    if not (isinstance(threshold, numbers.Real) and math.isfinite(threshold) and threshold > 1):
        raise ConfigError(f"threshold must be a finite number > 1 (a factor over the "
                          f"median), got {threshold!r}")
    counts = np.zeros((2, 2))
    labels, episodes, ratios = [], [], []
    for k, t in enumerate(times_per_worker):
        t = np.asarray(t, dtype=np.float64)
        median = float(np.median(t))
        lab = t > threshold * median
        labels.append(lab)
        a, b = lab[:-1].astype(int), lab[1:].astype(int)
        np.add.at(counts, (a, b), 1)
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


# ------------------------------------------------------------------- fitted cluster


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
