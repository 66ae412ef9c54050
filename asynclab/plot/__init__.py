"""Matplotlib drawing of results (no simulation here)."""

from . import _backend  # noqa: F401 (first: MPLBACKEND checked before matplotlib loads)
from ._compare import compare as compare
from ._grid import grid as grid
from ._panels import clip_staleness as clip_staleness
from ._panels import draw_loss as draw_loss
from ._panels import draw_staleness as draw_staleness
from ._run import plot_run as plot_run
from ._run import stragglers as stragglers
from ._shares import draw_center_shares as draw_center_shares
from ._shares import plot_center_shares as plot_center_shares
from ._surface import draw_contours as draw_contours
from ._timeline import draw_timeline as draw_timeline
from ._timeline import timeline as timeline

__all__ = [
    "clip_staleness",
    "compare",
    "draw_center_shares",
    "draw_contours",
    "draw_loss",
    "draw_staleness",
    "draw_timeline",
    "grid",
    "plot_center_shares",
    "plot_run",
    "stragglers",
    "timeline",
]
