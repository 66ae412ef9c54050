"""Drawing the slow-and-stale study: time to target and final error against n, per mode,
and the loss over simulated time at one n."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import (  # noqa: E402
    finish,
    log2_axis,
    mark_missed,
    missed_handle,
    target_quartiles,
)
from ._style import OKABE_ITO, Series, legend_below, styled  # noqa: E402

#: Each mode's colour, dash and marker.
SERIES = {"synchronous": Series(OKABE_ITO["blue"], "-", "s"),
          "K-of-n": Series(OKABE_ITO["green"], "--", "^"),
          "K-async": Series(OKABE_ITO["orange"], "-.", "v"),
          "backup": Series(OKABE_ITO["purple"], ":", "D"),
          "asynchronous": Series(OKABE_ITO["vermillion"], "--", "o")}


def mode_label(mode: str, config: dict) -> str:
    """The legend entry of a mode, with its K or b."""
    if mode == "K-of-n" and config:
        return rf"K of $n$ (K = {config['quorum_share']:g}$n$, late work discarded)"
    if mode == "K-async" and config:
        return rf"K-async (K = {config['quorum_share']:g}$n$, late work stale)"
    if mode == "backup" and config:
        return rf"backup ($n$ + {config['backup_share']:g}$n$ workers, first $n$)"
    if mode == "asynchronous":
        return r"asynchronous SGD (DOWNPOUR, $\lambda$ = 1)"
    return "synchronous SGD" if mode == "synchronous" else mode


def _time_panel(ax, data, labels, target) -> bool:
    """Returns whether a point did not reach the target (marked at the top edge)."""
    n = data["workers"]
    missed = False
    for m, mode in enumerate(data["modes"]):
        style = SERIES[mode]
        median, low, high = target_quartiles(data["seconds_to_target"][m])
        shown = np.isfinite(median)
        ax.plot(n[shown], median[shown], marker=style.marker, ls=style.dash,
                color=style.color, label=labels[m])
        ax.fill_between(n[shown], low[shown], high[shown], color=style.color, alpha=0.15,
                        lw=0)
        missed |= mark_missed(ax, n, median, color=style.color, marker=style.marker)
    log2_axis(ax, n)
    ax.set_yscale("log")
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(f"simulated seconds to loss {target:g} (median, quartiles)")
    return missed


def _final_panel(ax, data, labels):
    n = data["workers"]
    for m, mode in enumerate(data["modes"]):
        final, style = data["final_loss"][m], SERIES[mode]
        ax.plot(n * 2.0 ** (0.05 * (m - 2)), np.nanmean(final, axis=-1),
                marker=style.marker, ls=style.dash, color=style.color, label=labels[m])
    log2_axis(ax, n)
    ax.set_yscale("log")
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(f"loss at the horizon (mean over {data['final_loss'].shape[-1]} seeds)")


def _curve_panel(ax, data, labels, shown, target):
    i = int(np.flatnonzero(data["workers"] == shown)[0])
    for m, mode in enumerate(data["modes"]):
        ax.plot(data["grid"], data["curves"][m, i], ls=SERIES[mode].dash,
                color=SERIES[mode].color, label=labels[m])
    ax.axhline(target, color="k", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel(f"central loss, $n$ = {shown} (mean over seeds)")


@styled
@_files.writes("figure")
def plot_semisync(data: dict, path=None, title: str | None = None, config: dict | None = None, *,
                  overwrite: bool = False):
    """Left: simulated seconds to the target loss against n; middle: the loss at the
    horizon against n; right: the loss over simulated time at one n (``config["shown"]``,
    else the largest n). One line per mode; a median time that did not reach the target is
    an open marker at the top edge."""
    path = checked_path(path, overwrite)  # checked before any drawing
    config = config or {}
    target = float(config.get("target", 0.2))
    shown = int(config.get("shown", int(data["workers"].max())))
    if shown not in data["workers"]:
        shown = int(data["workers"].max())
    labels = [mode_label(str(mode), config) for mode in data["modes"]]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.4))
    missed = _time_panel(axes[0], data, labels, target)
    axes[0].set_title("time to target: slow rounds wait for stragglers", fontsize=10)
    _final_panel(axes[1], data, labels)
    axes[1].set_title("final error: stale and few gradients are noisy", fontsize=10)
    _curve_panel(axes[2], data, labels, shown, target)
    axes[2].set_title(f"loss over simulated time, $n$ = {shown}", fontsize=10)
    handles = axes[1].get_legend_handles_labels()[0] + ([missed_handle()] if missed else [])
    legend_below(axes[1], ncol=3, gap=0.14, handles=handles)
    return finish(fig, path, title, overwrite=overwrite)
