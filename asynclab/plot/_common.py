"""What every drawing does last."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def finish(fig, path=None, title: str | None = None, *, dpi: int = 100,
           fontsize: float | None = None, rect=None):
    """Title, tight layout (within ``rect``), write ``path`` (if given), release the
    figure; returns it."""
    if title is not None:
        fig.suptitle(title, **({} if fontsize is None else {"fontsize": fontsize}))
    fig.tight_layout(rect=rect)
    if path is not None:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return fig


def series_colors(count: int, low: float = 0.0, high: float = 0.85):
    """``count`` colours along viridis, one per curve of a family (n, λ, …)."""
    return plt.cm.viridis(np.linspace(low, high, count))


def log2_axis(ax, values):
    """A base-2 logarithmic x axis labelled exactly at ``values`` (worker counts, λ)."""
    values = np.asarray(values)
    ax.set_xscale("log", base=2)
    ax.set_xticks(values, [f"{v:g}" for v in values])
