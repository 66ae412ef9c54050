"""Showing the lab's matplotlib figures inside a notebook.

The drawing functions of :mod:`asynclab.plot` draw on the Agg backend and close their
figures, so a notebook shows them as images rather than through pyplot's own display.
"""

from __future__ import annotations

from .. import _files


def figure_png(fig, dpi: int = 80) -> bytes:
    """The figure as PNG bytes (rendered in memory)."""
    return _files.figure_bytes(fig, format="png", dpi=dpi)


def show(fig, output=None, dpi: int = 80) -> None:
    """Display ``fig`` as an image, in ``output`` (an ``ipywidgets.Output``, cleared
    first) when given, else in the current cell."""
    from IPython.display import Image, display

    image = Image(data=figure_png(fig, dpi))
    if output is None:
        display(image)
        return
    output.clear_output(wait=True)
    with output:
        display(image)
