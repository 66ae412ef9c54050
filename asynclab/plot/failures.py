"""Drawing the failures study: goodput, useful work per device-second and time to target
against the workers' mean time between failures, one line per rule."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish, mark_missed, missed_handle, target_quartiles  # noqa: E402
from ._style import OKABE_ITO, Series, legend_below, plain_log_ticks, styled  # noqa: E402

#: Each rule's colour, dash and marker.
SERIES = {"synchronous SGD": Series(OKABE_ITO["blue"], "-", "s"),
          "DOWNPOUR": Series(OKABE_ITO["black"], "--", "o"),
          "ADAG": Series(OKABE_ITO["purple"], ":", "D"),
          "DiLoCo": Series(OKABE_ITO["green"], "-", "^"),
          "async DiLoCo": Series(OKABE_ITO["vermillion"], "--", "v")}


def _mtbf_axis(ax, mtbf):
    """Categorical x: the MTBF values, no failures (∞) first."""
    ax.set_xticks(range(len(mtbf)))
    ax.set_xticklabels(["none" if np.isinf(m) else f"{m:g}" for m in mtbf])
    ax.set_xlabel("mean time between failures per worker (s)")


def _same_lines(ax, values, labels):
    """Say which rules' lines lie on each other (asynchronous rules on one schedule lose
    and use the same work), so that a series drawn under another is not taken for
    missing."""
    pairs = [f"{labels[i]} = {labels[j]}" for i in range(len(labels))
             for j in range(i + 1, len(labels)) if np.array_equal(values[i], values[j])]
    if pairs:
        ax.text(0.03, 0.03, "lines on each other: " + ", ".join(pairs),
                transform=ax.transAxes, fontsize=8, color="0.3")


def _lines(ax, data, values, labels, band=None, *, mark: bool = False) -> bool:
    """One line per rule; with ``mark``, a value that is not finite (a median time to
    target that most seeds missed) is an open marker at the top edge. Returns whether
    one was marked."""
    x = np.arange(len(data["mtbf"]))
    missed = False
    for r, rule in enumerate(data["rules"]):
        style = SERIES[str(rule)]
        ax.plot(x + 0.04 * (r - 2), values[r], marker=style.marker, ls=style.dash,
                color=style.color, label=labels[r])
        if band is not None:
            low, high = band[r]
            ax.fill_between(x + 0.04 * (r - 2), low, high, color=style.color, alpha=0.12,
                            lw=0)
        if mark:
            missed |= mark_missed(ax, x + 0.04 * (r - 2), values[r], color=style.color,
                                  marker=style.marker)
    return missed


@styled
@_files.writes("figure")
def plot_failures(data: dict, path=None, title: str | None = None, config: dict | None = None, *,
                  overwrite: bool = False):
    """Left: goodput (useful over all gradient evaluations started); middle: useful
    evaluations per device-second; right: simulated seconds to the target loss (median,
    quartiles), each against the MTBF. One line per rule; a median time that did not reach
    the target is an open marker at the top edge."""
    path = checked_path(path, overwrite)  # checked before any drawing
    config = config or {}
    labels = [str(rule) for rule in data["rules"]]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.4))
    for ax, key in ((axes[0], "goodput"), (axes[1], "goodput_per_device_second")):
        values = np.mean(data[key], axis=-1)
        _lines(ax, data, values, labels)
        _same_lines(ax, values, labels)
    axes[0].set_ylabel("goodput: useful / all gradient evaluations (mean)")
    axes[0].set_title("a crash loses the phase in flight: long phases lose more",
                      fontsize=10)
    axes[1].set_ylabel("useful gradient evaluations per device-second (mean)")
    axes[1].set_title("synchronous rounds stall while a worker is down", fontsize=10)
    median, low, high = target_quartiles(data["seconds_to_target"])
    missed = _lines(axes[2], data, median, labels, np.stack([low, high], axis=1), mark=True)
    axes[2].set_yscale("log")
    plain_log_ticks(axes[2], "y")
    target = config.get("target", 0.2)
    axes[2].set_ylabel(f"simulated seconds to loss {target:g} (median, quartiles)")
    axes[2].set_title("asynchronous rules barely slow down", fontsize=10)
    for ax in axes:
        _mtbf_axis(ax, data["mtbf"])
    handles = axes[1].get_legend_handles_labels()[0] + ([missed_handle()] if missed else [])
    legend_below(axes[1], ncol=len(handles), gap=0.14, handles=handles)
    return finish(fig, path, title, overwrite=overwrite)
