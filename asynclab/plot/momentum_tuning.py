"""Drawing the momentum-tuning study: the theorem's rate, the measured rate of the mean
and what single runs do, per number of workers, on the (μ, η) grid."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from ._common import finish, log2_axis, series_colors  # noqa: E402


def _axes(ax, etas, mus):
    ax.set_xticks(range(mus.size), [f"{m:g}" for m in mus], fontsize=7, rotation=90)
    ax.set_yticks(range(etas.size), [f"{e:.3g}" for e in etas], fontsize=7)
    ax.set_xlabel("server momentum μ", fontsize=8)
    ax.set_ylabel("learning rate η", fontsize=8)


def _overlay(ax, data, i):
    """The theorem's best μ per η (line) and its joint optimum (star), in grid units."""
    etas, mus = data["learning_rates"], data["momenta"]
    fine = data["theory_eta"]
    inside = (fine >= etas.min()) & (fine <= etas.max())
    y = np.interp(np.log(fine[inside]), np.log(etas), np.arange(etas.size))
    x = np.interp(data["theory_best_momentum"][i][inside], mus, np.arange(mus.size))
    ax.plot(x, y, "w-", lw=2.2)
    ax.plot(x, y, "k-", lw=1.0, label="theorem: best μ for each η")
    eta, mu, _ = data["theory_optimum"][i]
    ax.plot(np.interp(mu, mus, np.arange(mus.size)),
            np.interp(np.log(eta), np.log(etas), np.arange(etas.size)), "*", color="w",
            mec="k", ms=14, label="theorem: joint optimum")


def _mark(ax, data, where, marker, color, label):
    etas, mus = data["learning_rates"], data["momenta"]
    if np.all(np.isfinite(where)):
        ax.plot(int(np.argmin(np.abs(mus - where[1]))),
                int(np.argmin(np.abs(etas - where[0]))), marker, color=color, mec="k",
                ms=10, label=label)


def _heatmap_extras(fig, ax, image, data, i, etas, mus, *, last, best, title, bar):
    """What both heatmaps of column ``i`` share: the theorem's overlay, the best point
    (``(index, marker, colour, label)``), axes, title, legend (first column) and colour
    bar (last column)."""
    _overlay(ax, data, i)
    _mark(ax, data, *best)
    _axes(ax, etas, mus)
    ax.set_title(title, fontsize=9)
    if i == 0:
        ax.legend(fontsize=6, loc="upper left")
    if last:
        fig.colorbar(image, ax=ax, label=bar)


def plot_momentum_tuning(data: dict, path=None, *, title: str | None = None):
    """Row 1: γ of the theorem (contours) over the measured rate of the seed-averaged
    centre; row 2: single runs (median commits to target, unusable cells hatched); row 3:
    the rates point by point, the optimal μ against n, and mean trajectories."""
    n = data["n"]
    etas, mus = data["learning_rates"], data["momenta"]
    gamma, rate = data["gamma"], data["measured_rate"]
    dim = data["curvatures"].size
    columns = len(n)
    fig = plt.figure(figsize=(4.0 * max(columns, 3), 12.5))
    grid = fig.add_gridspec(3, max(columns, 3))
    rate_norm = plt.Normalize(0.94, 1.02)
    score = data["commits_to_target"]
    finite = score[np.isfinite(score)]
    score_norm = LogNorm(max(finite.min(), 1) if finite.size else 1,
                         finite.max() if finite.size else 10)
    for i, k in enumerate(n):
        ax = fig.add_subplot(grid[0, i])
        shown = np.where(data["measurable"][i] > 0, rate[i], np.nan)
        image = ax.imshow(shown, origin="lower", cmap="RdYlBu_r", norm=rate_norm,
                          aspect="auto")
        partial = (data["measurable"][i] > 0) & (data["measurable"][i] < dim)
        for e, m in zip(*np.nonzero(partial), strict=True):
            ax.text(m, e, "·", ha="center", va="center", fontsize=14)
        contour = ax.contour(np.arange(mus.size), np.arange(etas.size), gamma[i],
                             levels=[0.97, 0.99, 1.0], colors="k",
                             linestyles=[":", "--", "-"], linewidths=0.9)
        ax.clabel(contour, fmt="γ=%g", fontsize=6)
        _heatmap_extras(fig, ax, image, data, i, etas, mus, last=i == columns - 1,
                best=(data["best_by_rate"][i], "o", "tab:orange",
                      "best measured rate (usable points)"),
                title=f"n = {k}: rate of the seed-mean centre\n(lines: theorem's γ; "
                      "· = some directions swamped)",
                bar="measured decay rate per commit")

        ax = fig.add_subplot(grid[1, i])
        image = ax.imshow(np.where(np.isfinite(score[i]), score[i], np.nan), origin="lower",
                          cmap="viridis", norm=score_norm, aspect="auto")
        bad = data["unusable"][i]
        for e, m in zip(*np.nonzero(bad >= 0.5), strict=True):
            ax.add_patch(plt.Rectangle((m - 0.5, e - 0.5), 1, 1, fill=False, hatch="xxx",
                                       ec="tab:red", lw=0))
        for e, m in zip(*np.nonzero((bad > 0) & (bad < 0.5)), strict=True):
            ax.text(m, e, f"{bad[e, m]:.0%}", ha="center", va="center", fontsize=5,
                    color="tab:red")
        _heatmap_extras(fig, ax, image, data, i, etas, mus, last=i == columns - 1,
                best=(data["best_by_runs"][i], "D", "tab:green", "best single runs"),
                title=f"n = {k}: single runs, median commits to target\n"
                      "(red hatch: ≥ half of the runs unusable)",
                bar="median commits to target")

    ax = fig.add_subplot(grid[2, 0])
    colors = series_colors(len(n))
    for i, k in enumerate(n):
        full = data["measurable"][i] == dim
        ax.plot(gamma[i][full], rate[i][full], "o", color=colors[i], ms=4,
                label=f"n = {k}")
        part = (data["measurable"][i] > 0) & ~full
        ax.plot(gamma[i][part], rate[i][part], "x", color=colors[i], ms=5)
    ax.plot([], [], "kx", label="some directions swamped")
    ax.plot([0.9, 1.1], [0.9, 1.1], "k-", lw=0.7)
    ax.set_xlim(0.93, 1.05)
    ax.set_ylim(0.93, 1.05)
    ax.set_xlabel("theorem's γ (roots of the cubic)")
    ax.set_ylabel("measured rate of the seed-mean centre")
    ax.set_title("point by point", fontsize=10)
    ax.legend(fontsize=7)

    ax = fig.add_subplot(grid[2, 1])
    ax.plot(n, data["theory_optimum"][:, 1], "k*-", ms=10, label="theorem: joint optimum")
    ax.plot(n, data["best_by_rate"][:, 1], "o--", color="tab:orange",
            label="best measured rate of the mean (grid, usable points)")
    ax.plot(n, data["best_by_runs"][:, 1], "D-", color="tab:green",
            label="best single runs (grid)")
    ax.plot(n, data["theory_optimum"][0, 1] - data["implicit_momentum"], ":", color="grey",
            label="theorem's μ*(1) − (1 − 1/n)")
    ax.axhline(0, color="grey", lw=0.6)
    log2_axis(ax, n)
    ax.set_xlabel("workers n")
    ax.set_ylabel("best explicit momentum μ")
    ax.set_title("the optimal μ against n", fontsize=10)
    ax.legend(fontsize=7)

    ax = fig.add_subplot(grid[2, 2])
    commits = data["commits"]
    i = len(n) - 1
    picks = {"theorem's best grid point": data["best_by_theory_on_grid"][i],
             "best single runs": data["best_by_runs"][i]}
    for (label, (eta, mu)), color in zip(picks.items(), ("k", "tab:green"), strict=True):
        if not np.isfinite(eta):
            continue
        e, m = int(np.argmin(np.abs(etas - eta))), int(np.argmin(np.abs(mus - mu)))
        start = data["mean_norm"][i, e, m, 0]
        ax.plot(commits, data["mean_norm"][i, e, m] / start, color=color, lw=1.5,
                label=f"{label} (grid η = {etas[e]:.3g}, μ = {mus[m]:g})")
        ax.plot(commits, data["expected_norm"][i, e, m] / start, color=color, lw=1, ls="--")
        ax.plot(commits, data["median_loss"][i, e, m] / data["initial_loss"], color=color,
                lw=0.8, ls=":")
    ax.plot([], [], "k-", lw=1.5, label="‖mean over seeds of θ̃_t‖ (simulated)")
    ax.plot([], [], "k--", lw=1, label="‖E θ̃_t‖ from the expected recursion")
    ax.plot([], [], "k:", lw=0.8, label="median loss of single runs")
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1e6)
    ax.set_xlabel("commits")
    ax.set_ylabel("relative to the start")
    ax.set_title(f"n = {n[i]}: the mean converges, single runs do not", fontsize=10)
    ax.legend(fontsize=6)
    return finish(fig, path, title)
