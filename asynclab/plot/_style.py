"""The one style of the lab's figures: fonts, colours, legends, sizes.

Every figure module draws inside :func:`styled` and takes its colours from here, so a
change of font size or palette is made once. Colours are the Okabe–Ito palette (safe for
the common colour-vision deficiencies); ordered families (n = 1, 2, 4, …) use viridis,
which is too. Symbols are matplotlib mathtext (no LaTeX install needed).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9",
             "green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
             "vermillion": "#D55E00", "purple": "#CC79A7", "grey": "#999999"}
#: The order in which a figure's categorical series take colours.
CYCLE = [OKABE_ITO[k] for k in ("blue", "vermillion", "green", "orange", "purple", "sky",
                                "black", "yellow")]
#: One colour per optimizer, the same in every figure.
RULE_COLORS = {"downpour": OKABE_ITO["black"], "dynsgd": OKABE_ITO["orange"],
               "aeasgd": OKABE_ITO["green"], "agn": OKABE_ITO["blue"],
               "adag": OKABE_ITO["purple"]}
#: How a figure names an optimizer (its registry name where it has no entry here).
RULE_NAMES = {"downpour": "DOWNPOUR", "dynsgd": "DynSGD", "aeasgd": "AEASGD", "agn": "AGN",
              "adag": "ADAG", "staleness_aware": "staleness-aware SGD"}
#: Line styles that tell overlapping series apart where colour alone would not.
DASHES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")


class Series(NamedTuple):
    """How one named series (a rule, a mode) is drawn in every panel of a figure."""

    color: str
    dash: str
    marker: str

FONT = {"base": 9.5, "title": 10, "label": 9.5, "tick": 8.5, "legend": 8, "small": 7,
        "suptitle": 11.5}
#: Inches per panel; a figure is at most ``MAX_COLUMNS`` panels wide.
PANEL_WIDTH, PANEL_HEIGHT, MAX_COLUMNS = 5.2, 4.0, 3
DPI = 110

RC = {
    "font.size": FONT["base"],
    "axes.titlesize": FONT["title"],
    "axes.labelsize": FONT["label"],
    "xtick.labelsize": FONT["tick"],
    "ytick.labelsize": FONT["tick"],
    "legend.fontsize": FONT["legend"],
    "legend.framealpha": 0.9,
    "legend.edgecolor": "0.8",
    "figure.titlesize": FONT["suptitle"],
    "axes.prop_cycle": plt.cycler(color=CYCLE),
    "axes.grid": False,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.5,
    "mathtext.fontset": "dejavusans",
    "image.cmap": "viridis",
    "savefig.dpi": DPI,
}


def styled(draw):
    """Run a drawing function inside the lab's style (:data:`RC`)."""
    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(RC):
            return draw(*args, **kwargs)
    return wrapper


def sequential(count: int, low: float = 0.0, high: float = 0.85):
    """``count`` colours along viridis for an ordered family (n, λ, …)."""
    return plt.cm.viridis(np.linspace(low, high, count))


def panels(count: int, *, columns: int | None = None, width: float = PANEL_WIDTH,
           height: float = PANEL_HEIGHT, **subplot_kw):
    """A figure of ``count`` panels, at most :data:`MAX_COLUMNS` a row; returns
    ``(fig, axes)`` with exactly ``count`` axes (unused cells removed)."""
    columns = min(count, columns or MAX_COLUMNS)
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows),
                             squeeze=False, **subplot_kw)
    axes = list(axes.ravel())
    for ax in axes[count:]:
        ax.remove()
    return fig, axes[:count]


def legend_outside(ax, *, ncol: int = 1, **kwargs):
    """The legend to the right of the panel, never over its data."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                     ncol=ncol, **kwargs)


def legend_below(ax, *, ncol: int = 2, gap: float = 0.16, **kwargs):
    """The legend under the panel, ``gap`` (axes fraction) below it: under its x label,
    never over its data."""
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, -gap), borderaxespad=0.0,
                     ncol=ncol, **kwargs)


# Unicode in strings that come from saved data (labels written by the studies): shown as
# mathtext. Longest first.
_TEX = [("θ̃_pull", r"$\tilde\theta_{\mathrm{pull}}$"), ("θ̃", r"$\tilde\theta$"),
        ("σ²", r"$\sigma^2$"), ("10×", r"10$\times$"), ("λm", r"$\lambda m$"),
        ("15m", r"15$m$"), ("batch m", r"batch $m$"), ("λ", r"$\lambda$"),
        ("σ", r"$\sigma$"), ("η", r"$\eta$"), ("μ", r"$\mu$"), ("γ", r"$\gamma$"),
        ("ρ", r"$\rho$"), ("α", r"$\alpha$"), ("τ", r"$\tau$"), ("×", r"$\times$"),
        ("−", "-")]
_N_EQUALS = re.compile(r"\bn = ")


def tex(text) -> str:
    """A label from saved data with its symbols in mathtext (``λ = 15`` → ``$\\lambda$ =
    15``, ``n = 4`` → ``$n$ = 4``)."""
    text = str(text)
    for plain, math in _TEX:
        text = text.replace(plain, math)
    return _N_EQUALS.sub("$n$ = ", text)


def panel_count(fig) -> int:
    """The panels of a figure: its axes that hold data (colour bars are not panels)."""
    return sum(1 for ax in fig.axes if ax.has_data() and not hasattr(ax, "_colorbar"))


def plain_log_ticks(ax, axis: str = "x", subs=(1.0, 2.0, 5.0)):
    """A logarithmic axis labelled at 1, 2, 5 × 10^k in plain numbers, minor ticks
    unlabelled: no crowded or colliding ``3×10⁻³4×10⁻³`` labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(LogLocator(base=10.0, subs=subs))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())
