"""What every drawing does last."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .. import _files
from ._style import DPI, FONT, sequential  # noqa: E402


def checked_path(path, overwrite: bool = False):
    """``path`` checked by the output policy before anything is drawn (None: no file):
    an existing file is refused unless ``overwrite``, and then replaced only if it is a
    picture of the format its name says."""
    if path is None:
        return None
    return _files.output_path(path, "path", kind="figure", overwrite=overwrite)


def finish(fig, path=None, title: str | None = None, *, dpi: int = DPI,
           fontsize: float | None = None, rect=None, overwrite: bool = False):
    """Title (one line), tight layout (within ``rect``), write ``path`` (if given, through
    the output policy, atomically), release the figure; returns it."""
    if title is not None:
        fig.suptitle(title, fontsize=FONT["suptitle"] if fontsize is None else fontsize)
    fig.tight_layout(rect=rect)
    if path is not None:
        _files.save_figure(fig, path, "path", overwrite=overwrite, dpi=dpi,
                           bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return fig


def series_colors(count: int, low: float = 0.0, high: float = 0.85):
    """``count`` colours along viridis, one per curve of a family (n, λ, …)."""
    return sequential(count, low, high)


def log2_axis(ax, values):
    """A base-2 logarithmic x axis labelled exactly at ``values`` (worker counts, λ)."""
    values = np.asarray(values)
    ax.set_xscale("log", base=2)
    ax.set_xticks(values, [f"{v:g}" for v in values])
    ax.minorticks_off()


def target_quartiles(seconds):
    """``(median, first quartile, third quartile)`` over the last axis of times to a
    target, where ∞ marks a seed that never reached it; a statistic that is not finite
    (too many such seeds) is NaN, which matplotlib leaves undrawn."""
    with np.errstate(invalid="ignore"):  # ∞ − ∞ in the interpolation
        median = np.median(seconds, axis=-1)
        low, high = np.percentile(seconds, [25, 75], axis=-1)
    return tuple(np.where(np.isfinite(v), v, np.nan) for v in (median, low, high))


#: The legend entry of a point that did not reach its target (:func:`mark_missed`).
MISSED_LABEL = "did not reach the target"


def mark_missed(ax, x, values, *, color, marker: str = "o") -> bool:
    """An open ``marker`` along the top edge of ``ax`` (just inside it, clear of the
    title) for every ``x`` whose ``values`` is not finite (a median time to a target that
    most seeds missed), so that the point is seen as missed rather than vanishing; returns
    whether any point was marked."""
    missed = ~np.isfinite(np.asarray(values, float))
    if missed.any():
        ax.plot(np.asarray(x)[missed], np.full(int(missed.sum()), 0.975), ls="", marker=marker,
                mfc="none", mec=color, mew=1.5, ms=8, transform=ax.get_xaxis_transform(),
                clip_on=False, zorder=4)
    return bool(missed.any())


def missed_handle():
    """The legend entry of :func:`mark_missed`'s marks: an open grey circle."""
    from matplotlib.lines import Line2D

    return Line2D([], [], ls="", marker="o", mfc="none", mec="0.35", mew=1.5, ms=8,
                  label=MISSED_LABEL)
