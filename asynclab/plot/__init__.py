"""Matplotlib drawing of results (no simulation here)."""

from ._run import plot_run as plot_run
from ._surface import draw_contours as draw_contours

__all__ = ["draw_contours", "plot_run"]
