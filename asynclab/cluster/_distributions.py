"""One worker's step times fitted by maximum likelihood (gamma, lognormal, shifted
exponential; the family chosen by AIC) with parametric-bootstrap standard errors.

The estimators, densities and draws are ``scipy.stats``'s own formulas (its ``fit`` for
``gamma`` and ``lognorm`` with the location fixed at 0 and for ``expon``; its ``logpdf``;
its ``rvs``, the same NumPy draws in the same order), written over arrays of samples: a
parametric bootstrap refits hundreds of samples in one pass instead of one ``fit`` call
each, and ``asynclab trace inspect`` imports no SciPy (``benchmarks/files.py``, row (b),
times it end to end). ``tests/test_cluster_logs.py`` checks them against
``scipy.stats``.
"""

from __future__ import annotations

import math
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
        from scipy import stats  # imported when asked for: it is slow to import

        p = self.parameters
        if self.family == "gamma":
            return stats.gamma(p["shape"], scale=p["scale"])
        if self.family == "lognormal":
            return stats.lognorm(p["sigma"], scale=p["scale"])
        return stats.expon(loc=p["loc"], scale=p["scale"])

    @property
    def mean(self) -> float:
        p = self.parameters
        if self.family == "gamma":
            return float(p["shape"] * p["scale"])
        if self.family == "lognormal":
            return float(p["scale"] * np.exp(0.5 * p["sigma"] ** 2))
        return float(p["loc"] + p["scale"])

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        """Draws as ``self.frozen().rvs(size=size, random_state=rng)`` makes them."""
        return _draw(self.family, self.parameters, rng, size)


def _draw(family: str, p: dict, rng: np.random.Generator, size) -> np.ndarray:
    # scipy.stats' rvs: its standardised draw, then `* scale + loc`
    if family == "gamma":
        unit, loc = rng.standard_gamma(p["shape"], size), 0.0
    elif family == "lognormal":
        unit, loc = np.exp(p["sigma"] * rng.standard_normal(size)), 0.0
    else:
        unit, loc = rng.standard_exponential(size), p["loc"]
    return np.asarray(unit * p["scale"] + loc, dtype=np.float64)


def _log_likelihood(family: str, p: dict, x: np.ndarray) -> float:
    # scipy.stats' logpdf, summed: the density of (x - loc) / scale, less log(scale);
    # every x is > 0 here (_check_times), so its xlogy(a - 1, z) is (a - 1) log z
    z = (x - p.get("loc", 0.0)) / p["scale"]
    if family == "gamma":
        a = p["shape"]
        logpdf = (a - 1.0) * np.log(z) - z - math.lgamma(a)
    elif family == "lognormal":
        s = p["sigma"]
        logpdf = -np.log(z) ** 2 / (2 * s**2) - np.log(s * z * np.sqrt(2 * np.pi))
    else:
        logpdf = -z
    return float(np.sum(logpdf - np.log(p["scale"])))


#: Bernoulli-number coefficients of the asymptotic series of ψ and ψ' (Abramowitz and
#: Stegun 6.3.18 and 6.4.12), in powers of 1 / x² from x⁻² on.
_PSI_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_TRIGAMMA_SERIES = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _digamma_trigamma(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ψ(a) and ψ'(a) for a > 0, elementwise, to about float64's precision.

    Written here rather than taken from ``scipy.special``, so that fitting a log imports
    no SciPy (``benchmarks/files.py``, row (b), measures what that import costs): the
    recurrences ψ(x) = ψ(x + 1) − 1/x and
    ψ'(x) = ψ'(x + 1) + 1/x² carry x to 10 or more, where seven terms of the asymptotic
    series are exact to float64. ``tests/test_cluster_logs.py`` checks both against
    ``scipy.special``.
    """
    x = np.array(a, dtype=np.float64)
    psi_shift = np.zeros_like(x)
    tri_shift = np.zeros_like(x)
    while np.any(small := x < 10):
        psi_shift -= np.where(small, 1 / x, 0.0)
        tri_shift += np.where(small, 1 / x**2, 0.0)
        x = np.where(small, x + 1, x)
    inv2 = 1 / x**2
    psi_tail = np.zeros_like(x)
    tri_tail = np.zeros_like(x)
    for c_psi, c_tri in zip(_PSI_SERIES[::-1], _TRIGAMMA_SERIES[::-1], strict=True):
        psi_tail = (psi_tail + c_psi) * inv2
        tri_tail = (tri_tail + c_tri) * inv2
    psi = np.log(x) - 0.5 / x - psi_tail + psi_shift
    trigamma = 1 / x + 0.5 * inv2 + tri_tail / x + tri_shift
    return psi, trigamma


def _gamma_shape(s: np.ndarray) -> np.ndarray:
    """The root a of log(a) − ψ(a) = s (> 0), elementwise: the gamma MLE's shape.

    scipy.stats' gamma fit brackets the root around Minka's approximation and solves it
    with Brent's method to ~1e-12; this takes the same start and Newton steps (the
    function is convex and decreasing, so Newton from either side converges) to the
    precision of float64.
    """
    a = (3 - s + np.sqrt((s - 3) ** 2 + 24 * s)) / (12 * s)
    for _ in range(100):
        psi, trigamma = _digamma_trigamma(a)
        step = (np.log(a) - psi - s) / (1 / a - trigamma)
        a_next = np.maximum(a - step, a / 2)  # never past 0
        done = np.all(np.abs(a_next - a) <= 4 * np.finfo(np.float64).eps * a)
        a = a_next
        if done:
            break
    return a


def _mle(family: str, x: np.ndarray) -> dict:
    """Maximum-likelihood parameters of each row of ``x`` (the last axis is the sample),
    as arrays of the leading shape."""
    if family == "gamma":  # location fixed at 0
        xbar = x.mean(axis=-1)
        shape = _gamma_shape(np.log(xbar) - np.log(x).mean(axis=-1))
        return {"shape": shape, "scale": xbar / shape}
    if family == "lognormal":  # location fixed at 0
        lx = np.log(x)
        scale = np.exp(lx.mean(axis=-1))
        sigma = np.sqrt(np.mean((lx - np.log(scale)[..., None]) ** 2, axis=-1))
        return {"sigma": sigma, "scale": scale}
    loc = x.min(axis=-1)
    return {"loc": loc, "scale": x.mean(axis=-1) - loc}


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
    """Fits step times to one family by maximum likelihood.

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
    parameters = {name: float(value) for name, value in _mle(family, x).items()}
    loglik = _log_likelihood(family, parameters, x)
    errors = None
    if bootstrap:
        if not isinstance(bootstrap, numbers.Integral) or bootstrap < 2:
            raise ConfigError(f"bootstrap must be 0 or an integer >= 2, got {bootstrap!r}")
        rng = np.random.default_rng(seed)
        m = min(x.size, BOOTSTRAP_SIZE)
        refits = _mle(family, _draw(family, parameters, rng, (int(bootstrap), m)))
        errors = {name: float(np.std(refits[name], ddof=1)) for name in parameters}
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
