"""Drawing the model-averaging paths study (identical vs random initialisation)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from ..problems import get_problem  # noqa: E402
from ._common import finish, series_colors  # noqa: E402
from ._surface import draw_contours  # noqa: E402

_LABELS = {"start": "identical initialisation", "random_per_worker": "random initialisation"}


def _panel(ax, data, init, lam, problem):
    key = f"{init}_{lam}"
    n = int(data["workers"])
    draw_contours(ax, problem, levels=25)
    center = data[f"center_{key}"]
    ends = data[f"ends_{key}"]
    rounds = data[f"ends_round_{key}"]
    starts = data[f"starts_{key}"]
    colors = plt.cm.tab10(np.arange(n) % 10)
    # each worker's local excursion of a round: the chord from the centre it started
    # from (its own start in round 0) to where its λ local steps ended
    for k in range(n):
        segments = [[starts[k] if r == 0 else center[i], ends[i, k]]
                    for i, r in enumerate(rounds)]
        ax.add_collection(LineCollection(segments, colors=[colors[k]], linewidths=1.0,
                                         alpha=0.8))
        ax.plot(*ends[:, k].T, ".", color=colors[k], ms=2.5,
                label="worker end points (λ steps)" if k == 0 else None)
    if init != "start":
        ax.plot(*starts.T, "o", mfc="none", mec="k", ms=7, label="worker starts")
    else:
        sgd = data["sgd_center"]
        ax.plot(*sgd.T, "--", color="tab:orange", lw=2.0, label="sequential SGD")
    ax.plot(*center.T, "-", color="k", lw=1.3, label="centre θ̃")
    ax.plot(*center[0], "s", color="k", ms=6)
    ax.set_title(f"{_LABELS[init]}\nn = {n}, λ = {lam}, η = {data['learning_rate']:g}",
                 fontsize=10)
    ax.set_aspect("equal")


def plot_model_averaging_paths(data: dict, path=None):
    """Worker and central paths on Beale's contours (2 × len(λ) panels), then the
    centre's loss against local steps and the spread of the workers' end points."""
    problem = get_problem("beale")
    lams = [int(v) for v in data["local_steps"]]
    inits = [str(v) for v in data["inits"]]
    cols = len(lams)
    fig = plt.figure(figsize=(4.2 * cols, 13.5))
    grid = fig.add_gridspec(3, cols, height_ratios=[1, 1, 0.85])
    for i, init in enumerate(inits):
        for j, lam in enumerate(lams):
            ax = fig.add_subplot(grid[i, j])
            _panel(ax, data, init, lam, problem)
            if j == 0:
                ax.legend(fontsize=7, loc="lower left", framealpha=0.9)
    n = int(data["workers"])
    eta = data["learning_rate"]
    colors = series_colors(len(lams))
    half = cols // 2
    ax = fig.add_subplot(grid[2, :half])
    ax.plot(data["sgd_step"], data["sgd_loss"], color="tab:orange", lw=3, alpha=0.6,
            label="sequential SGD (1 worker)")
    for lam, c in zip(lams, colors, strict=True):
        for init, style in zip(inits, ("-", ":"), strict=True):
            key = f"{init}_{lam}"
            ax.plot(data[f"loss_step_{key}"], data[f"loss_{key}"], style, color=c,
                    label=f"λ = {lam}, {_LABELS[init].split()[0]}")
    ax.set_yscale("log")
    ax.set_xlabel("local steps per worker (λ · rounds)")
    ax.set_ylabel("central loss f(θ̃), median over seeds")
    ax.set_title(f"Centre vs sequential SGD: n = {n}, η = {eta:g}, σ² = {data['noise']:g}, "
                 f"{len(data['seeds'])} seeds", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)

    ax = fig.add_subplot(grid[2, half:])
    for lam, c in zip(lams, colors, strict=True):
        for init, style in zip(inits, ("-", ":"), strict=True):
            key = f"{init}_{lam}"
            r = data[f"ends_round_{key}"]
            ax.plot((r + 1) * lam, data[f"spread_{key}"], style, color=c, marker=".", ms=3,
                    label=f"λ = {lam}, {_LABELS[init].split()[0]}")
        ax.axhline(data["noise_spread"][lams.index(lam)], color=c, lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("local steps per worker at the end of the round")
    ax.set_ylabel("spread of worker end points\n(mean distance to their mean)")
    ax.set_title("Random starts spread only until the first averaging; dashed: noise-only\n"
                 "prediction ησ√λ·√((n−1)/n)·√(π/2) (no curvature)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return finish(fig, path, "Model averaging on Beale's function: identical vs random "
                  f"initialisation (thesis Figs. 2.2–2.3), gradient noise N(0, "
                  f"{data['noise']:g})", fontsize=13)
