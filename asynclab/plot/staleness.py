"""Drawing the staleness study."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from ._common import finish  # noqa: E402
from ._style import OKABE_ITO, panels, styled, tex  # noqa: E402


@styled
@_files.writes("figure")
def plot_staleness(data: dict, path=None, *, overwrite: bool = False):
    """One panel per cluster: the staleness histogram, the geometric fit, E[τ] and n − 1."""
    path = checked_path(path, overwrite)  # checked before any drawing
    k = len(data["n"])
    fig, axes = panels(k, width=5.0, height=3.7)
    for i, ax in enumerate(axes):
        counts = data["counts"][i]
        n = int(data["n"][i])
        total = counts.sum()
        heavy = data["tail"][i] > 3 * data["tail_geometric"][i]
        limit = int(np.flatnonzero(counts).max() + 2) if heavy else int(max(4 * n, 10))
        tau = np.arange(min(limit, counts.size))
        ax.bar(tau, counts[: tau.size] / total, width=1.0, color=OKABE_ITO["sky"], alpha=0.8,
               label=f"simulated ({int(total):,} commits)")
        p = data["p_fit"][i]
        ax.plot(tau, p * (1 - p) ** tau, "-", color=OKABE_ITO["blue"], lw=1.3,
                label=f"geometric fit, $p$ = {p:.3f}")
        # the mean and n − 1 coincide: a wide pale band for the mean, a dashed line on top
        ax.axvline(data["mean"][i], color=OKABE_ITO["vermillion"], lw=4, alpha=0.45,
                   zorder=3, label=rf"mean $\tau$ = {data['mean'][i]:.2f}")
        ax.axvline(n - 1, color="k", ls=(0, (3, 2)), lw=1.1, zorder=4,
                   label=f"$n - 1$ = {n - 1}")
        if heavy:
            ax.set_yscale("log")
            ax.set_ylim(0.5 / total, 1.0)
            ax.set_title(f"{tex(data['labels'][i])}\n"
                         rf"$P(\tau \geq 8n)$ = {data['tail'][i]:.4f}, geometric "
                         f"{data['tail_geometric'][i]:.4f}")
        else:
            ax.set_title(tex(data["labels"][i]))
        ax.set_xlabel(r"staleness $\tau$ (commits)")
        ax.set_ylabel("fraction of commits")
        ax.legend(loc="upper right")
    return finish(fig, path, r"Staleness distributions: the mean stays $n - 1$, the shape "
                  "changes", overwrite=overwrite)
