"""The notebooks' drawings (``notebooks/``): the device executor beside the replay, the
Monte-Carlo study as its runs accumulate, update rules compared on a net."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish, series_colors  # noqa: E402
from .model_averaging_mc import probability_bars  # noqa: E402


@_files.writes("figure")
def plot_executors(data: dict, path=None, *, overwrite: bool = False):
    """The central loss of both executors against commits, and their wall times."""
    path = checked_path(path, overwrite)  # checked before any drawing
    fig, (ax, wx) = plt.subplots(1, 2, figsize=(12, 4.2),
                                 gridspec_kw={"width_ratios": [1.4, 1]})
    device, replayed = data["device"], data["replay"]
    ax.plot(replayed.record_events, replayed.loss[0], "-", lw=3, color="tab:blue", alpha=0.5,
            label="simulator replay")
    ax.plot(device.record_events, device.loss[0], "--", lw=1.2, color="k",
            label="device executor")
    ax.set_yscale("log")
    ax.set_xlabel("commits")
    ax.set_ylabel("central loss")
    ax.set_title(f"same trace, same seed: max |difference| = {data['max_difference']:.2e}",
                 fontsize=10)
    ax.legend(fontsize=9)
    names = ["device executor", "replay"]
    first = [data["wall"]["device"][0], data["wall"]["replay"][0]]
    second = [data["wall"]["device"][1], data["wall"]["replay"][1]]
    x = np.arange(2)
    wx.bar(x - 0.2, first, 0.4, color="tab:orange", label="first call (compiles)")
    wx.bar(x + 0.2, second, 0.4, color="tab:green", label="second call")
    wx.set_xticks(x, names)
    wx.set_ylabel("wall time (s)")
    wx.set_title(f"{data['segments']} device calls on {data['platform']} devices", fontsize=10)
    wx.legend(fontsize=9)
    return finish(fig, path, overwrite=overwrite)


@_files.writes("figure")
def plot_running_probability(data: dict, path=None, *, overwrite: bool = False):
    """Left: P(success) against n for each λ with its 95 % Wilson interval, as far as
    the runs have come. Right: every cell's estimate and interval against the number of
    runs, narrowing as they accumulate."""
    path = checked_path(path, overwrite)  # checked before any drawing
    workers = data["workers"]
    lams = [int(v) for v in data["local_steps"]]
    fig, (ax, rx) = plt.subplots(1, 2, figsize=(13, 4.6))
    high = np.nan_to_num(data["high"])
    positions = probability_bars(ax, workers, lams, np.nan_to_num(data["probability"]),
                                 np.nan_to_num(data["low"]), high,
                                 [f"λ = {lam}" for lam in lams])
    for i, x in enumerate(positions):
        for k, n in enumerate(x):
            ax.annotate(f"{int(data['runs'][i, k])}", (n, min(high[i, k] + 0.02, 0.95)),
                        ha="center", fontsize=7)
    ax.set_ylabel(f"P(central loss < {data['success_loss']:g} at the end)")
    ax.set_title(f"{100 * data['done']:.0f} % of the runs done (runs per bar above it), "
                 "95 % Wilson intervals", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    cells = list(data["history"])
    line_colors = series_colors(len(cells))
    for (lam, n), color in zip(cells, line_colors, strict=True):
        rows = np.array(data["history"][(lam, n)], float).reshape(-1, 4)
        if rows.size == 0:
            continue
        rx.plot(rows[:, 0], rows[:, 1], "o-", color=color, ms=3, label=f"n = {n}, λ = {lam}")
        rx.fill_between(rows[:, 0], rows[:, 2], rows[:, 3], color=color, alpha=0.15)
    rx.set_ylim(0, 1)
    rx.set_xlabel("runs so far")
    rx.set_ylabel("P(success) and its 95 % interval")
    rx.set_title("the intervals narrow as 1/√runs", fontsize=10)
    rx.legend(fontsize=7, ncol=2, loc="lower right")
    return finish(fig, path, f"Model averaging on Beale, η = {data['learning_rate']:g}, "
                             f"σ² = {data['noise']:g}", fontsize=11, overwrite=overwrite)


@_files.writes("figure")
def plot_rule_comparison(results: dict, scales=None,
                         path=None, *, title: str | None = None, overwrite: bool = False):
    """The centre's validation accuracy and its training loss against simulated time for
    every rule, and (given ``scales``) the factor the server applied at every commit
    against the commit's staleness."""
    path = checked_path(path, overwrite)  # checked before any drawing
    panels = 3 if scales is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.4))
    colors = series_colors(len(results))
    for (name, result), color in zip(results.items(), colors, strict=True):
        time = result.record_time[0]
        axes[0].plot(time, result.metrics["accuracy"][0], "-", color=color, lw=1.8,
                     label=name)
        axes[1].plot(time, result.loss[0], "-", color=color, lw=1.8, label=name)
    axes[0].set_ylabel("validation accuracy of the centre")
    axes[0].set_ylim(0, 1)
    axes[0].set_title("accuracy against simulated time", fontsize=10)
    axes[1].set_ylabel("training loss of the centre")
    axes[1].set_yscale("log")
    axes[1].set_title("loss against simulated time", fontsize=10)
    for ax in axes[:2]:
        ax.set_xlabel("simulated time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if scales is not None:
        ax = axes[2]
        jitter = np.random.default_rng(0).uniform(-0.25, 0.25, scales.staleness.size)
        points = ax.scatter(scales.staleness + jitter, scales.scale, s=6, alpha=0.5,
                            c=np.arange(scales.scale.size), cmap="viridis")
        fig.colorbar(points, ax=ax, label="commit")
        ax.set_xlabel("staleness τ of the commit (commits)")
        ax.set_ylabel("scale factor, mean over the weights")
        ax.set_title(f"the server's scale factors (mean {scales.scale.mean():.3f}, "
                     f"smallest {scales.scale.min():.3f})", fontsize=10)
    return finish(fig, path, title, fontsize=11, overwrite=overwrite)
