"""Drawing the AGN study."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..problems import get_problem  # noqa: E402
from ._common import finish  # noqa: E402
from ._style import DASHES, MARKERS, OKABE_ITO, legend_below, styled, tex  # noqa: E402
from ._surface import draw_contours  # noqa: E402

COLORS = tuple(OKABE_ITO[k] for k in ("vermillion", "blue", "green", "purple"))


def _arrow_panel(ax, data, k, config):
    lam = int(data["shown_local_steps"][k])
    problem = get_problem("quadratic", dim=2,
                          condition=float(config.get("direction_condition", 10.0)))
    draw_contours(ax, problem, levels=20)
    pulled = data["pulled"]
    length = 0.6
    arrows = data["arrows"][k]
    arrows = arrows[np.all(np.isfinite(arrows), axis=1)]
    for d in arrows:
        ax.annotate("", xy=pulled + length * d, xytext=pulled,
                    arrowprops={"arrowstyle": "-", "color": OKABE_ITO["blue"], "lw": 0.6,
                                "alpha": 0.5})
    ax.annotate("", xy=pulled + 1.3 * length * data["descent"], xytext=pulled,
                arrowprops={"arrowstyle": "-|>", "color": "k", "lw": 2})
    ax.plot(*pulled, "s", color="k", ms=6)
    j = list(data["direction_local_steps"]).index(lam)
    eta = float(data["direction_learning_rates"][0])
    ax.set_title(rf"$\lambda$ = {lam}, $\eta$ = {eta:g}: mean "
                 r"$\cos(\Delta, -\nabla L(\tilde\theta_{\mathrm{pull}}))$ = "
                 f"{data['cosine_first'][0, j]:.2f}")
    ax.set_xlim(pulled[0] - 1.0, pulled[0] + 0.6)
    ax.set_ylim(pulled[1] - 1.0, pulled[1] + 0.6)
    ax.set_aspect("equal")


def _cosine_panel(ax, data):
    lam = data["direction_local_steps"]
    for i, eta in enumerate(data["direction_learning_rates"]):
        ax.plot(lam, data["cosine_first"][i], marker=MARKERS[i], ls=DASHES[i],
                color=COLORS[i], mfc="none" if i else None, ms=7 - 2 * i,
                label=rf"$\eta$ = {eta:g}")
        # where the local walk ends up, ηλh ≈ 1 for the stiffest direction
        bend = 1.0 / (eta * float(np.max(data["direction_h"])))
        if lam.min() <= bend <= lam.max():
            ax.axvline(bend, color=COLORS[i], lw=0.8, ls=":",
                       label=rf"$\lambda = 1/(\eta\, h_{{\max}})$ for $\eta$ = {eta:g}")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(r"local steps $\lambda$")
    ax.set_ylabel(r"mean $\cos(\Delta, -\nabla L(\tilde\theta_{\mathrm{pull}}))$, "
                  r"$\Delta = a/\lambda$")
    ax.set_title(r"commit direction against $\lambda$" "\n"
                 r"(first commit of every worker, all pulled $\tilde\theta_0$)")
    legend_below(ax, ncol=1)


def _curve_panel(ax, data, axis: str, seeds: int | None = None):
    for r, label in enumerate(data["labels"]):
        x = np.arange(data["mean_loss"].shape[1]) if axis == "commits" else data["mean_time"][r]
        reached = (int(data["commits_to_target"][r]) if axis == "commits"
                   else data["seconds_to_target"][r])
        unit = "commits" if axis == "commits" else "s"
        note = f"target after {reached:.0f} {unit}" if np.isfinite(reached) and reached >= 0 \
            else "target not reached"
        ax.plot(x, data["mean_loss"][r], DASHES[r], color=COLORS[r], lw=1.4,
                label=f"{tex(label)} ({note})")
    ax.axhline(data["target_loss"], color="k", lw=0.8, ls=":", label="target")
    ax.set_yscale("log")
    ax.set_xlabel("commits (server updates)" if axis == "commits" else "simulated time (s)")
    ax.set_ylabel(f"central loss (mean over {seeds} seeds)" if seeds else
                  "central loss (mean over seeds)")
    ax.legend(loc="upper right")


@styled
@_files.writes("figure")
def plot_agn(data: dict, path=None, *, config: dict | None = None, title: str | None = None,
             overwrite: bool = False):
    """AGN commit directions for several λ, cosine vs λ, loss vs commits and vs time."""
    path = checked_path(path, overwrite)  # checked before any drawing
    config = dict(config or {})
    shown = len(data["shown_local_steps"])
    fig = plt.figure(figsize=(4.3 * (shown + 1) + 1, 11))
    grid = fig.add_gridspec(2, 2 * (shown + 1), height_ratios=[1, 1.05])
    for k in range(shown):
        _arrow_panel(fig.add_subplot(grid[0, 2 * k: 2 * k + 2]), data, k, config)
    _cosine_panel(fig.add_subplot(grid[0, 2 * shown:]), data)
    half = shown + 1
    seeds = config.get("seeds")
    quadratic = (f"quadratic $d$ = {config['dim']}, condition {config['condition']:g}, "
                 rf"$\eta$ = {config['learning_rate']:g}" if "dim" in config else "")
    ax = fig.add_subplot(grid[1, :half])
    _curve_panel(ax, data, "commits", seeds)
    ax.set_title(r"per commit: AGN $\approx$ SGD with a $\lambda\times$ larger batch" "\n"
                 + quadratic)
    ax = fig.add_subplot(grid[1, half:])
    _curve_panel(ax, data, "time", seeds)
    ax.set_title(r"per simulated second: $n$ workers commit $n\times$ as often" "\n"
                 r"(a batch of $\lambda m$ costs $\lambda\times$ the compute time)")
    return finish(fig, path, title, overwrite=overwrite)
