"""Drawing the scaling study: time to target and final accuracy against n, per mode."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish, log2_axis, target_quartiles  # noqa: E402
from ._style import OKABE_ITO, styled  # noqa: E402

COLORS = {"synchronous": OKABE_ITO["blue"], "asynchronous": OKABE_ITO["vermillion"],
          "mixed": OKABE_ITO["green"]}
DASHES = {"synchronous": "-", "asynchronous": "--", "mixed": "-."}
MARKERS = {"synchronous": "s", "asynchronous": "o", "mixed": "^"}


def _time_panel(ax, data, c, target):
    n = data["workers"]
    reference = None
    for m, mode in enumerate(data["modes"]):
        median, low, high = target_quartiles(data["seconds_to_target"][c, m])
        shown = np.isfinite(median)
        ax.plot(n[shown], median[shown], marker=MARKERS[mode], ls=DASHES[mode],
                color=COLORS[mode], label=mode)
        ax.fill_between(n[shown], low[shown], high[shown], color=COLORS[mode], alpha=0.15,
                        lw=0)
        reference = median[0] if reference is None else reference
    if np.isfinite(reference):
        ax.plot(n, reference / n, "k:", lw=1, label="ideal: ($n$ = 1 time) / $n$")
    log2_axis(ax, n)
    ax.set_yscale("log")
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(f"simulated seconds to validation accuracy {target:g}")


def _accuracy_panel(ax, data, c):
    n = data["workers"]
    for m, mode in enumerate(data["modes"]):
        final = data["final_accuracy"][c, m]
        mean = np.nanmean(final, axis=-1)
        # side by side (a few per cent of a doubling apart): no bar hides another
        ax.errorbar(n * 2.0 ** (0.08 * (m - 1)), 100 * (1 - mean),
                    yerr=100 * np.nanstd(final, axis=-1), marker=MARKERS[mode],
                    ls=DASHES[mode], color=COLORS[mode], capsize=3, label=mode)
    log2_axis(ax, n)
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(f"final validation error (%), mean $\\pm$ sd over {final.shape[-1]} seeds")


def _curve_panel(ax, data, c, shown, target):
    i = int(np.flatnonzero(data["workers"] == shown)[0])
    for m, mode in enumerate(data["modes"]):
        t = np.median(data["time"][c, m, i], axis=0)
        acc = np.median(data["accuracy"][c, m, i], axis=0)
        ax.plot(t, 100 * acc, DASHES[mode], color=COLORS[mode], label=f"{mode}, $n$ = {shown}")
    t = np.median(data["time"][c, 0, 0], axis=0)
    ax.plot(t, 100 * np.median(data["accuracy"][c, 0, 0], axis=0), color=OKABE_ITO["grey"],
            ls=":", lw=2, label="one worker")
    ax.axhline(100 * target, color="k", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_ylim(max(0.0, 100 * target - 30), 100)
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel("validation accuracy (%), median over seeds")


@styled
@_files.writes("figure")
def plot_scaling(data: dict, path=None, title: str | None = None, config: dict | None = None, *,
                 overwrite: bool = False):
    """Rows: the homogeneous cluster, the one with slow workers. Columns: time to target
    against n, final validation error against n, accuracy against simulated time at the
    largest n ≤ 8 (the TensorFlow study's largest cluster)."""
    path = checked_path(path, overwrite)  # checked before any drawing
    config = config or {}
    target = float(config.get("target", 0.9))
    n = data["workers"]
    shown = int(n[n <= 8].max())
    clusters = list(data["clusters"])
    fig, axes = plt.subplots(len(clusters), 3, figsize=(17, 5.2 * len(clusters)),
                             squeeze=False)
    for c, kind in enumerate(clusters):
        label = kind
        if kind != "homogeneous" and config:
            label = f"1 in {config['slow_every']} workers {config['slowdown']:g}$\\times$ slower"
        _time_panel(axes[c, 0], data, c, target)
        axes[c, 0].set_title(f"{label}: time to target (median, quartiles)", fontsize=10)
        _accuracy_panel(axes[c, 1], data, c)
        axes[c, 1].set_title(f"{label}: final validation error", fontsize=10)
        _curve_panel(axes[c, 2], data, c, shown, target)
        axes[c, 2].set_title(f"{label}: accuracy over simulated time", fontsize=10)
    # each row's legends where its panels are empty (checked on the shipped data)
    axes[0, 0].legend(loc="lower left")
    axes[0, 1].legend(loc="upper left")
    axes[0, 2].legend(loc="lower right")
    return finish(fig, path, title, overwrite=overwrite)
