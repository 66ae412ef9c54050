"""Matplotlib drawing of results (no simulation here)."""

from ._panels import draw_loss as draw_loss
from ._panels import draw_staleness as draw_staleness
from ._run import plot_run as plot_run
from ._surface import draw_contours as draw_contours

__all__ = ["draw_contours", "draw_loss", "draw_staleness", "plot_run"]
