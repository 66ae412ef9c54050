"""Drawing 2-D test surfaces."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_GRIDS: dict = {}


def _loss_grid(problem, resolution: int):
    """The loss over the plotting domain on a ``resolution``² grid, cached per problem
    object (a redraw of the same surface does not evaluate or compile it again)."""
    key = (id(problem), resolution)
    if key not in _GRIDS or _GRIDS[key][0] is not problem:
        (x0, x1), (y0, y1) = problem.domain
        x, y = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
        grid = jnp.asarray(np.stack([x.ravel(), y.ravel()], axis=1), jnp.float32)
        z = np.asarray(jax.jit(jax.vmap(problem.loss))(grid)).reshape(x.shape)
        if len(_GRIDS) >= 16:
            _GRIDS.pop(next(iter(_GRIDS)))
        _GRIDS[key] = (problem, x, y, z)
    return _GRIDS[key][1:]


def draw_contours(ax, problem, *, resolution: int = 200, levels: int = 30):
    """Log-spaced contours of a 2-D problem's loss over its plotting domain, minima marked."""
    if problem.dim != 2 or problem.domain is None:
        raise ValueError(f"{problem.name} is not a 2-D problem with a plotting domain")
    (x0, x1), (y0, y1) = problem.domain
    x, y, z = _loss_grid(problem, resolution)
    z = np.log10(z - z.min() + 1e-3)
    ax.contour(x, y, z, levels=levels, cmap="Greys", linewidths=0.6, alpha=0.8)
    ax.plot(*problem.minima.T, "*", color="gold", markeredgecolor="k", markersize=12,
            label="minimum", zorder=5)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel(r"$\theta_1$")
    ax.set_ylabel(r"$\theta_2$")
    return ax
