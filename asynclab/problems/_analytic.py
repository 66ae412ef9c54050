"""Analytic test surfaces (2-D functions and an n-dimensional quadratic), each built with
:func:`~asynclab.problems.from_loss`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import _validate
from ._problem import Problem, from_loss


def beale() -> Problem:
    """Beale's function.

    f(x, y) = (1.5 − x + xy)² + (2.25 − x + xy²)² + (2.625 − x + xy³)².
    Global minimum f(3, 0.5) = 0; a saddle at (0, 1); a valley toward x → −∞ along
    y ≈ 1 where f → ≈ 0.45 (the thesis's "other optimum"); and a second unbounded valley
    toward y → −∞ along x ≈ 2.625/|y|³, where f → ≈ 7.31.
    """

    def f(p):
        x, y = p[0], p[1]
        return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y**2) ** 2 + (2.625 - x + x * y**3) ** 2

    return from_loss(f, [1.0, 1.75], box=(-4.0, 4.0), domain=((-4.5, 4.5), (-4.5, 4.5)),
                     minima=[[3.0, 0.5]], success_radius=0.1, name="beale")


def rosenbrock(a: float = 1.0, b: float = 100.0) -> Problem:
    """Rosenbrock's banana, f = (a − x)² + b (y − x²)²; minimum (a, a²)."""

    def f(p):
        x, y = p[0], p[1]
        return (a - x) ** 2 + b * (y - x**2) ** 2

    return from_loss(f, [-1.5, 2.0], box=(-2.0, 2.0), domain=((-2.0, 2.0), (-1.0, 3.0)),
                     minima=[[a, a * a]], success_radius=0.1, name="rosenbrock")


def booth() -> Problem:
    """Booth's function, f = (x + 2y − 7)² + (2x + y − 5)²; minimum (1, 3)."""

    def f(p):
        x, y = p[0], p[1]
        return (x + 2 * y - 7) ** 2 + (2 * x + y - 5) ** 2

    return from_loss(f, [-5.0, -5.0], box=(-10.0, 10.0),
                     domain=((-10.0, 10.0), (-10.0, 10.0)), minima=[[1.0, 3.0]],
                     success_radius=0.1, name="booth")


HIMMELBLAU_MINIMA = np.array(
    [[3.0, 2.0], [-2.805118, 3.131312], [-3.779310, -3.283186], [3.584428, -1.848126]],
    np.float32,
)


def himmelblau() -> Problem:
    """Himmelblau's function, f = (x² + y − 11)² + (x + y² − 7)²; four minima (f = 0).

    The first of ``minima`` (3, 2) is the one counted as "global" for the success test;
    all four have f = 0.
    """

    def f(p):
        x, y = p[0], p[1]
        return (x**2 + y - 11) ** 2 + (x + y**2 - 7) ** 2

    return from_loss(f, [0.0, 0.0], box=(-5.0, 5.0), domain=((-5.0, 5.0), (-5.0, 5.0)),
                     minima=HIMMELBLAU_MINIMA, success_radius=0.1, name="himmelblau")


def quadratic(dim: int = 10, condition: float = 10.0) -> Problem:
    """A convex quadratic f = ½ Σᵢ hᵢ θᵢ² with curvatures log-spaced in [1, condition].

    Written in its eigenbasis (diagonal Hessian), so its gradient costs O(dim) and
    closed-form theory applies coordinate by coordinate. Minimum at 0; start at 1.
    """
    dim = _validate.count(dim, "quadratic: dim")
    # its curvatures, start and minimum, and a run's centre and gradient (float32/64)
    _validate.check_memory(40 * dim, f"quadratic: dim={dim}", what="this problem",
                           advice="use a smaller dim")
    condition = _validate.number(condition, "quadratic: condition", low=1,
                                 dtype=np.float32)
    h = jnp.asarray(np.geomspace(1.0, condition, dim), jnp.float32)

    def f(p):
        return 0.5 * jnp.sum(h * p * p)

    domain = ((-1.5, 1.5), (-1.5, 1.5)) if dim == 2 else None
    return from_loss(f, np.ones(dim), box=(-1.0, 1.0), domain=domain,
                     minima=np.zeros((1, dim)), success_radius=0.05, name="quadratic")

