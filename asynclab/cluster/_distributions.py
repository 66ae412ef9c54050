"""One worker's step times fitted with ``scipy.stats`` (gamma, lognormal, shifted
exponential; maximum likelihood, the family chosen by AIC) with parametric-bootstrap
standard errors."""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from .._errors import ConfigError
from ._replayed import _check_choice

FAMILIES: tuple[str, ...] = ("gamma", "lognormal", "shifted_exponential")
"""The distribution families :func:`fit_step_times` chooses from."""


_MIN_STEPS = 10  # fewer steps cannot support a two-parameter fit

#: The most draws in one bootstrap sample. A worker with more steps is refitted on
#: samples of this size, and the spreads are scaled to its own size: maximum likelihood's
#: errors shrink as 1/sqrt(n), a shifted exponential's shift (the sample minimum) as 1/n.
#: Fits on fewer steps are bootstrapped at their own size, as they always were.
BOOTSTRAP_SIZE = 5000

#: How each parameter's spread scales with the sample size n: as n ** -power.
_POWER = {"loc": 1.0}

#: The most step times one fit uses: a worker with more (a log of millions of steps) is
#: fitted on this many of them, evenly spaced over its run; its standard errors are
#: those of that sample (at 200,000 steps, well under a percent of the parameters).
FIT_SIZE = 200_000


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
    More than 5,000 times are bootstrapped at that size, and the spreads scaled to the
    sample's (by sqrt(m / n); the shift's by m / n); more than 200,000 are fitted on that
    many, evenly spaced: a log of millions of steps is fitted in about the time of one of
    a hundred thousand.

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
    if x.size > FIT_SIZE:  # evenly spaced over the run (see FIT_SIZE)
        x = x[np.round(np.linspace(0, x.size - 1, FIT_SIZE)).astype(np.int64)]
    parameters = _mle(family, x)
    frozen = _frozen(family, parameters)
    loglik = float(np.sum(frozen.logpdf(x)))
    errors = None
    if bootstrap:
        if not isinstance(bootstrap, numbers.Integral) or bootstrap < 2:
            raise ConfigError(f"bootstrap must be 0 or an integer >= 2, got {bootstrap!r}")
        rng = np.random.default_rng(seed)
        m = min(x.size, BOOTSTRAP_SIZE)
        draws = frozen.rvs(size=(int(bootstrap), m), random_state=rng)
        refits = [_mle(family, row) for row in draws]
        errors = {name: float(np.std([r[name] for r in refits], ddof=1)) for name in parameters}
        if m < x.size:
            errors = {name: value * (m / x.size) ** _POWER.get(name, 0.5)
                      for name, value in errors.items()}
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
