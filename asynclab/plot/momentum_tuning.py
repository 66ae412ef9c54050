"""Drawing the momentum-tuning study: the theorem's rate, the measured rate of the mean
and what single runs do on the (μ, η) grid (``momentum_tuning.png`` for two n; the rate
map of every n in ``momentum_tuning_detail.png``, the single-run map of every n in
``momentum_tuning_detail_2.png``)."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from ._common import finish, log2_axis  # noqa: E402
from ._style import (  # noqa: E402
    FONT,
    OKABE_ITO,
    legend_below,
    legend_outside,
    panels,
    sequential,
    styled,
)


def _axes(ax, etas, mus):
    ax.set_xticks(range(mus.size), [f"{m:g}" for m in mus], fontsize=7, rotation=90)
    ax.set_yticks(range(etas.size), [f"{e:.3g}" for e in etas], fontsize=7)
    ax.set_xlabel(r"server momentum $\mu$")
    ax.set_ylabel(r"learning rate $\eta$")


def _overlay(ax, data, i):
    """The theorem's best μ per η (line) and its joint optimum (star), in grid units."""
    etas, mus = data["learning_rates"], data["momenta"]
    fine = data["theory_eta"]
    inside = (fine >= etas.min()) & (fine <= etas.max())
    y = np.interp(np.log(fine[inside]), np.log(etas), np.arange(etas.size))
    x = np.interp(data["theory_best_momentum"][i][inside], mus, np.arange(mus.size))
    ax.plot(x, y, "w-", lw=2.2)
    ax.plot(x, y, "k-", lw=1.0, label=r"theorem: best $\mu$ for each $\eta$")
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


_RATE_NORM = plt.Normalize(0.94, 1.02)
_RATE_LABEL = "measured decay rate per commit"
_RUNS_LABEL = "median commits to target"


def _score_norm(data):
    score = data["commits_to_target"]
    finite = score[np.isfinite(score)]
    return LogNorm(max(finite.min(), 1) if finite.size else 1,
                   finite.max() if finite.size else 10)


def _rate_map(fig, ax, data, i, *, bar: bool, legend: bool):
    """Column ``i``'s measured rate of the seed-mean centre with the theorem's γ."""
    etas, mus = data["learning_rates"], data["momenta"]
    dim = data["curvatures"].size
    measurable = data["measurable"][i]
    shown = np.where(measurable > 0, data["measured_rate"][i], np.nan)
    image = ax.imshow(shown, origin="lower", cmap="RdYlBu_r", norm=_RATE_NORM, aspect="auto")
    partial = (measurable > 0) & (measurable < dim)
    for e, m in zip(*np.nonzero(partial), strict=True):
        ax.text(m, e, "·", ha="center", va="center", fontsize=14)
    if np.any(measurable == 0):  # an empty cell (white), in the legend: a patch of no size
        ax.add_patch(plt.Rectangle((0, 0), 0, 0, fc="white", ec="0.5", lw=0.5,
                                   label="white: every direction swamped"))
    contour = ax.contour(np.arange(mus.size), np.arange(etas.size), data["gamma"][i],
                         levels=[0.97, 0.99, 1.0], colors="k",
                         linestyles=[":", "--", "-"], linewidths=0.9)
    ax.clabel(contour, fmt=r"$\gamma$=%g", fontsize=6)
    return _finish_map(fig, ax, data, i, image, best=(
        data["best_by_rate"][i], "o", OKABE_ITO["orange"], "best measured rate (usable points)"),
        title=r"rate of the seed-mean centre" "\n"
              r"(lines: theorem's $\gamma$; · = some directions swamped)",
        bar=_RATE_LABEL if bar else None, legend=legend)


def _finish_map(fig, ax, data, i, image, *, best, title: str, bar: str | None,
                legend: bool):
    """What both maps of column ``i`` end with: the theorem's overlay, the best point
    ``best = (indices, marker, colour, label)``, the axes, the title after ``n = ...``,
    a colour bar labelled ``bar`` (None: none) and the legend below."""
    _overlay(ax, data, i)
    _mark(ax, data, *best)
    _axes(ax, data["learning_rates"], data["momenta"])
    ax.set_title(rf"$n$ = {data['n'][i]}: " + title)
    if bar is not None:
        fig.colorbar(image, ax=ax, label=bar)
    if legend:
        legend_below(ax, ncol=1, gap=0.3)
    return image


def _runs_map(fig, ax, data, i, *, bar: bool, legend: bool):
    """Column ``i``'s single runs: median commits to target, unusable cells hatched."""
    score = data["commits_to_target"]
    image = ax.imshow(np.where(np.isfinite(score[i]), score[i], np.nan), origin="lower",
                      cmap="viridis", norm=_score_norm(data), aspect="auto")
    bad = data["unusable"][i]
    for e, m in zip(*np.nonzero(bad >= 0.5), strict=True):
        ax.add_patch(plt.Rectangle((m - 0.5, e - 0.5), 1, 1, fill=False, hatch="xxx",
                                   ec=OKABE_ITO["vermillion"], lw=0))
    for e, m in zip(*np.nonzero((bad > 0) & (bad < 0.5)), strict=True):
        ax.text(m, e, f"{bad[e, m]:.0%}", ha="center", va="center", fontsize=5,
                color=OKABE_ITO["vermillion"])
    missed = ~np.isfinite(score[i]) & (bad < 0.5)  # usable, but the median run misses
    for k, (e, m) in enumerate(zip(*np.nonzero(missed), strict=True)):
        ax.add_patch(plt.Rectangle((m - 0.5, e - 0.5), 1, 1, fc="0.9", ec="0.5", lw=0.5,
                                   hatch="..", label=None if k else
                                   "usable, but the median run misses the target"))
    return _finish_map(fig, ax, data, i, image, best=(
        data["best_by_runs"][i], "D", OKABE_ITO["green"], "best single runs"),
        title=r"single runs, median commits to target" "\n"
              r"(hatched: $\geq$ half of the runs unusable)",
        bar=_RUNS_LABEL if bar else None, legend=legend)


def _point_panel(ax, data):
    n, gamma, rate = data["n"], data["gamma"], data["measured_rate"]
    dim = data["curvatures"].size
    colors = sequential(len(n))
    for i, k in enumerate(n):
        full = data["measurable"][i] == dim
        ax.plot(gamma[i][full], rate[i][full], "o", color=colors[i], ms=4,
                label=f"$n$ = {k}")
        part = (data["measurable"][i] > 0) & ~full
        ax.plot(gamma[i][part], rate[i][part], "x", color=colors[i], ms=5)
    ax.plot([], [], "kx", label="some directions swamped")
    ax.plot([0.9, 1.1], [0.9, 1.1], "k-", lw=0.7)
    ax.set_xlim(0.93, 1.05)
    ax.set_ylim(0.93, 1.05)
    ax.set_xlabel(r"theorem's $\gamma$ (roots of the cubic)")
    ax.set_ylabel("measured rate of the seed-mean centre")
    ax.set_title(r"theorem against measurement, every ($\eta$, $\mu$)")
    legend_outside(ax)


def _optimum_panel(ax, data):
    n = data["n"]
    ax.plot(n, data["theory_optimum"][:, 1], "k*-", ms=10, label="theorem: joint optimum")
    ax.plot(n, data["best_by_rate"][:, 1], "o--", color=OKABE_ITO["orange"],
            label="best measured rate of the mean\n(grid, usable points)")
    ax.plot(n, data["best_by_runs"][:, 1], "D:", color=OKABE_ITO["green"],
            label="best single runs (grid)")
    ax.plot(n, data["theory_optimum"][0, 1] - data["implicit_momentum"], "-.",
            color=OKABE_ITO["grey"], label=r"theorem's $\mu^*(1) - (1 - 1/n)$")
    ax.axhline(0, color="grey", lw=0.6)
    log2_axis(ax, n)
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(r"best explicit momentum $\mu$")
    ax.set_title(r"the optimal $\mu$ against $n$")
    legend_below(ax, ncol=1, gap=0.2)


def _trajectory_panel(ax, data):
    n, etas, mus = data["n"], data["learning_rates"], data["momenta"]
    commits = data["commits"]
    i = len(n) - 1
    picks = {"theorem's best grid point": data["best_by_theory_on_grid"][i],
             "best single runs": data["best_by_runs"][i]}
    colors = ("k", OKABE_ITO["green"])
    for (label, (eta, mu)), color in zip(picks.items(), colors, strict=True):
        if not np.isfinite(eta):
            continue
        e, m = int(np.argmin(np.abs(etas - eta))), int(np.argmin(np.abs(mus - mu)))
        start = data["mean_norm"][i, e, m, 0]
        ax.plot(commits, data["mean_norm"][i, e, m] / start, color=color, lw=1.5,
                label=rf"{label} ($\eta$ = {etas[e]:.3g}, $\mu$ = {mus[m]:g})")
        ax.plot(commits, data["expected_norm"][i, e, m] / start, color=color, lw=1, ls="--")
        ax.plot(commits, data["median_loss"][i, e, m] / data["initial_loss"], color=color,
                lw=0.8, ls=":")
    ax.plot([], [], "-", color="0.4", lw=1.5,
            label=r"$\Vert$mean over seeds of $\tilde\theta_t\Vert$ (simulated)")
    ax.plot([], [], "--", color="0.4", lw=1,
            label=r"$\Vert\mathbb{E}\,\tilde\theta_t\Vert$ from the expected recursion")
    ax.plot([], [], ":", color="0.4", lw=0.8, label="median loss of single runs")
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1e6)
    ax.set_xlabel("commits")
    ax.set_ylabel("relative to the start")
    ax.set_title(f"$n$ = {n[i]}: the mean converges, single runs do not")
    legend_below(ax, ncol=1, gap=0.2)


@styled
@_files.writes("figure")
def plot_momentum_tuning(data: dict, path=None, *, title: str | None = None,
                         overwrite: bool = False):
    """Top: the measured rate of the seed-averaged centre under the theorem's γ for a
    middle and the largest n, theorem against measurement point by point. Bottom: single
    runs at the largest n, the optimal μ against n, mean trajectories against single
    runs."""
    path = checked_path(path, overwrite)  # checked before any drawing
    n = list(data["n"])
    last = len(n) - 1
    middle = n.index(4) if 4 in n and len(n) > 1 else 0
    fig, axes = panels(6, width=5.4, height=4.6)
    _rate_map(fig, axes[0], data, middle, bar=False, legend=True)
    _rate_map(fig, axes[1], data, last, bar=True, legend=False)
    _point_panel(axes[2], data)
    _runs_map(fig, axes[3], data, last, bar=True, legend=True)
    _optimum_panel(axes[4], data)
    _trajectory_panel(axes[5], data)
    return finish(fig, path, title, overwrite=overwrite)


def _every_n(data, path, title, draw_map, label, heading, overwrite=False):
    """One map per n (``draw_map``: :func:`_rate_map` or :func:`_runs_map`), at most
    ``MAX_COLUMNS`` a row; the cell after the last map holds
    their shared colour bar and legend (neither is a panel)."""
    count = len(data["n"])
    fig, axes = panels(count + 1, width=5.4, height=4.6)
    *maps, key = axes
    for i, ax in enumerate(maps):
        image = draw_map(fig, ax, data, i, bar=False, legend=False)
    key.axis("off")
    bar = key.inset_axes([0.08, 0.84, 0.84, 0.07])
    fig.colorbar(image, cax=bar, orientation="horizontal", label=label)
    entries = {}  # every map's entries, once each (not every map has every kind)
    for ax in maps:
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(name, handle)
    key.legend(list(entries.values()), list(entries), loc="upper center",
               bbox_to_anchor=(0.5, 0.55), borderaxespad=0.0, fontsize=FONT["base"])
    if title is not None:  # the study's settings (after the title's colon) kept
        heading = f"{heading}; {title.partition(': ')[2]}"
    return finish(fig, path, heading, overwrite=overwrite)


@styled
@_files.writes("figure")
def plot_momentum_tuning_rates(data: dict, path=None, *, title: str | None = None,
                               overwrite: bool = False):
    """The measured rate of the seed-mean centre under the theorem's γ, one map per n
    (``momentum_tuning_detail.png``)."""
    path = checked_path(path, overwrite)  # checked before any drawing
    return _every_n(data, path, title, _rate_map, _RATE_LABEL,
                    r"DOWNPOUR ($\lambda$ = 1), server momentum, every $n$: rate of the "
                    "seed-mean centre", overwrite=overwrite)


@styled
@_files.writes("figure")
def plot_momentum_tuning_runs(data: dict, path=None, *, title: str | None = None,
                              overwrite: bool = False):
    """Single runs' median commits to target, one map per n
    (``momentum_tuning_detail_2.png``)."""
    path = checked_path(path, overwrite)  # checked before any drawing
    return _every_n(data, path, title, _runs_map, _RUNS_LABEL,
                    r"DOWNPOUR ($\lambda$ = 1), server momentum, every $n$: single runs",
                    overwrite=overwrite)
