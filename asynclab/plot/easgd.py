"""Drawing the EASGD study: the synchronous equilibrium and asynchronous stability
(``easgd.png``); the local work done with the early stop and synchronous EASGD's
stability region (``easgd_detail.png``)."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from ..problems import get_problem  # noqa: E402
from ._common import finish, log2_axis  # noqa: E402
from ._style import (  # noqa: E402
    DASHES,
    OKABE_ITO,
    legend_below,
    legend_outside,
    panels,
    styled,
)
from ._surface import draw_contours  # noqa: E402

_STYLE = {False: (OKABE_ITO["blue"], "without early stop"),
          True: (OKABE_ITO["vermillion"], "with early stop")}


def _key(rho, stop):
    return f"rho{rho:g}_{'stop' if stop else 'nostop'}"


def _edges(values):
    """Cell edges around log-spaced centres."""
    logs = np.log(np.asarray(values, float))
    mids = 0.5 * (logs[1:] + logs[:-1])
    first = logs[0] - (mids[0] - logs[0]) if len(logs) > 1 else logs[0] - 0.5
    last = logs[-1] + (logs[-1] - mids[-1]) if len(logs) > 1 else logs[0] + 0.5
    return np.exp(np.concatenate([[first], mids, [last]]))


def _settings(data) -> str:
    n, lam, eta = int(data["workers"]), int(data["local_steps"]), float(data["learning_rate"])
    return rf"$n$ = {n}, $\lambda$ = {lam}, $\eta$ = {eta:g}"


def _paths_panel(ax, data, rho):
    draw_contours(ax, get_problem("beale"), levels=25)
    for stop in (False, True):
        color, label = _STYLE[stop]
        key = _key(rho, stop)
        ends = data[f"ends_{key}"]
        ax.plot(*ends[:, 0].T, ":", color=color, lw=1.8, label=f"worker 1, {label}")
        ax.plot(*data[f"center_{key}"].T, "-", color=color, lw=2.2,
                label=f"centre, {label}")
        ax.plot(*data[f"center_{key}"][-1], "o", color=color, ms=6)
    ax.set_xlim(-0.5, 4.0)
    ax.set_ylim(-1.0, 2.5)
    eta = float(data["learning_rate"])
    ax.set_title(rf"paths on Beale, $\rho$ = {rho:g} ($\alpha$ = {eta * rho:g})")


def _loss_panel(ax, data, rhos):
    for rho, dash in zip(rhos, DASHES, strict=False):
        for stop in (False, True):
            color, label = _STYLE[stop]
            ax.plot(data["rounds_axis"], data[f"loss_{_key(rho, stop)}"], dash, color=color,
                    label=rf"$\rho$ = {rho:g}, {label}")
    ax.set_yscale("log")
    ax.set_xlabel(r"rounds ($\lambda$ local steps each)")
    ax.set_ylabel(r"central loss $f(\tilde\theta)$")
    ax.set_title(r"central loss (noise-free, $\sigma^2$ = " f"{float(data['noise']):g})")
    ax.grid(alpha=0.3)
    legend_below(ax, ncol=2)


def _distance_panel(ax, data, rhos):
    rounds = data["rounds_axis"]
    for rho, dash in zip(rhos, DASHES, strict=False):
        for stop in (False, True):
            color, label = _STYLE[stop]
            key = _key(rho, stop)
            ax.plot(rounds[:-1], data[f"distance_{key}"].mean(axis=1), dash, color=color,
                    label=rf"$\rho$ = {rho:g}, {label}")
        # the workers with early stop sit on this line: a wide pale band under them
        ax.plot(rounds[:-1], data[f"stop_distance_{_key(rho, True)}"].mean(axis=1), dash,
                color=OKABE_ITO["grey"], lw=5, alpha=0.45, zorder=1,
                label=rf"$\rho$ = {rho:g}: stop test $(\Vert g\Vert - 1)/\rho$")
    ax.set_yscale("log")
    ax.set_ylim(1e-2, 20)
    ax.set_xlabel("rounds")
    ax.set_ylabel(r"$\Vert\theta^k - \tilde\theta\Vert$ after the local work"
                  "\n(mean over workers)")
    ax.set_title("worker–centre distance: with early stop\n"
                 r"$-\eta g \approx \alpha(\theta^k - \tilde\theta)$")
    ax.grid(alpha=0.3)
    legend_below(ax, ncol=2)


def _map_panel(fig, ax, data):
    lams = np.asarray(data["map_local_steps"], float)
    map_rhos = np.asarray(data["map_elasticities"], float)
    map_eta = float(data["map_learning_rate"])
    m = int(data["map_workers"])
    mesh = ax.pcolormesh(_edges(lams), _edges(map_rhos), data["map_fraction"].T,
                         cmap="Greys", vmin=0, vmax=2.5, shading="flat")
    for i, lv in enumerate(lams):
        for j, rv in enumerate(map_rhos):
            value = data["map_fraction"][i, j]
            ax.text(lv, rv, f"{value:.2f}", ha="center", va="center", fontsize=5.5,
                    color="0.25")
    theory = np.asarray(data["theory_local_steps"], float)
    ax.plot(theory, data["alpha_round_robin"] / map_eta, "-", color=OKABE_ITO["blue"], lw=2,
            label=f"theory: {m} workers in turn (spectral radius 1)")
    ax.plot(lams, data["alpha_random_order"] / map_eta, "s--", color=OKABE_ITO["green"],
            lw=1.2, ms=4, label=f"theory: {m} workers in random order (Lyapunov exp. 0)")
    ax.plot(theory, data["alpha_one_worker"] / map_eta, ":", color=OKABE_ITO["vermillion"],
            lw=2, label=r"one worker: $\alpha = 2(1 + c)/(1 + 3c)$,"
                        "\n" r"$c = (1 - \eta h_{\min})^\lambda$")
    ax.plot(lams, data["alpha_observed"] / map_eta, "D", color=OKABE_ITO["orange"], mec="k",
            ms=7, label="simulated boundary (half of the runs grow)")
    log2_axis(ax, lams)
    ax.set_yscale("log")
    ax.set_yticks(map_rhos[::3], [f"{v:.1f} ({v * map_eta:.2f})" for v in map_rhos[::3]])
    ax.minorticks_off()
    ax.set_xlabel(r"communication period $\lambda$ (local steps)")
    ax.set_ylabel(r"elasticity $\rho$ ($\alpha = \eta\rho$)")
    curv = ", ".join(f"{h:g}" for h in data["map_curvatures"])
    ax.set_title(rf"asynchronous EASGD: fraction of runs that diverge" "\n"
                 rf"quadratic, $h \in$ {{{curv}}}, $n$ = {m}, $\eta$ = {map_eta:g}, "
                 f"{len(data['map_seeds'])} seeds")
    bar = fig.colorbar(mesh, ax=ax, pad=0.02, label="fraction diverged")
    bar.ax.set_ylim(0, 1)
    legend_below(ax, ncol=1)


def _check_panel(ax, data):
    workers = [int(v) for v in data["check_workers"]]
    alphas = [float(v) for v in data["check_alphas"]]
    map_eta = float(data["map_learning_rate"])
    if workers:
        x = np.arange(len(workers))
        width = 0.8 / len(alphas)
        colors = (OKABE_ITO["blue"], OKABE_ITO["vermillion"], OKABE_ITO["green"])
        for b, alpha in enumerate(alphas):
            xb = x + (b - (len(alphas) - 1) / 2) * width
            values = data["check_growing"][:, b]
            ax.bar(xb, values, width, label=rf"$\alpha = \eta\rho$ = {alpha:g}",
                   color=colors[b % len(colors)])
            for xv, v in zip(xb, values, strict=True):
                ax.text(xv, v + 0.01, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(x, [f"{w}" for w in workers])
        ax.set_xlabel(rf"workers $n$ ($\lambda$ = 1, $\eta$ = {map_eta:g}, "
                      f"{len(data['map_seeds'])} seeds)")
        ax.set_ylim(0, 1.25)
        ax.legend(loc="upper left", ncol=2)
    else:
        ax.text(0.5, 0.5, "not simulated in this (quick) configuration", ha="center",
                transform=ax.transAxes)
    ax.set_ylabel("fraction of runs whose central loss grew")
    ax.set_title(r"$\lambda$ = 1: the boundary is $\alpha \approx 1$ for every $n$"
                 "\n" r"(not $\alpha n \approx 1$)")
    ax.grid(axis="y", alpha=0.3)


@styled
@_files.writes("figure")
def plot_easgd(data: dict, path=None, *, overwrite: bool = False):
    """Top: synchronous EASGD on Beale (paths for two ρ, central loss). Bottom: the
    worker–centre distance, asynchronous EASGD's stability over λ × ρ and at λ = 1."""
    path = checked_path(path, overwrite)  # checked before any drawing
    rhos = [float(r) for r in data["elasticities"]]
    fig, axes = panels(6, width=5.4, height=5.4)
    for ax, rho in zip(axes[:2], rhos[:2], strict=False):
        _paths_panel(ax, data, rho)
    legend_below(axes[0], ncol=2)
    _loss_panel(axes[2], data, rhos)
    _distance_panel(axes[3], data, rhos)
    _map_panel(fig, axes[4], data)
    _check_panel(axes[5], data)
    return finish(fig, path, f"EASGD: the elastic equilibrium ({_settings(data)}, "
                  f"{int(data['rounds']):,} rounds, noise-free) and why asynchronous EASGD "
                  "diverges with a short communication period", overwrite=overwrite)


@styled
@_files.writes("figure")
def plot_easgd_detail(data: dict, path=None, *, overwrite: bool = False):
    """The local work done with the early stop; synchronous EASGD's stability region in
    the (ηh, α) plane for every p (where simulated)."""
    path = checked_path(path, overwrite)  # checked before any drawing
    stability = "stability_workers" in data
    count = 1 + (len(data["stability_workers"]) if stability else 0)
    fig, axes = panels(count, columns=2, width=5.6, height=4.4)
    _taken_panel(axes[0], data)
    if stability:
        _draw_stability(axes[1:], data)
    return finish(fig, path, "EASGD in detail: the local work the early stop leaves, and "
                  "synchronous EASGD's stability region", overwrite=overwrite)


def _taken_panel(ax, data):
    rounds = data["rounds_axis"]
    for rho, dash in zip([float(r) for r in data["elasticities"]], DASHES, strict=False):
        key = _key(rho, True)
        taken = data[f"taken_{key}"]
        window = max(1, len(taken) // 100)
        smooth = np.convolve(taken, np.ones(window) / window, mode="valid")
        ax.plot(rounds[:-1][window - 1:], smooth, dash, color=OKABE_ITO["vermillion"],
                label=rf"$\rho$ = {rho:g}: {100 * data[f'steps_fraction_{key}']:.0f} % of "
                      "all local steps taken")
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("rounds")
    ax.set_ylabel(r"fraction of the $\lambda$ local steps taken" "\n"
                  "(running mean over 1 % of the run)")
    ax.set_title(f"early stop: local work actually done\n({_settings(data)})")
    ax.grid(alpha=0.3)
    ax.legend(loc="center right")


def _draw_stability(axes, data):
    """Simulated cells (grew / did not) in the (ηh, α) plane with the boundary of the
    spectral radius, for every p."""
    from ..studies.easgd import synchronous_radius

    step, alpha = data["stability_step"], data["stability_alpha"]
    fine_step = np.geomspace(step.min(), step.max(), 300)
    fine_alpha = np.geomspace(3e-3, 3.0, 300)
    S, A = np.meshgrid(fine_step, fine_alpha, indexing="ij")
    inside = (alpha >= fine_alpha[0]) & (alpha <= fine_alpha[-1])
    for i, (ax, p) in enumerate(zip(axes, data["stability_workers"], strict=True)):
        grew = data["stability_grew"][i]
        for value, color, marker, label in (
                (0.0, OKABE_ITO["blue"], "s", "stayed bounded"),
                (1.0, OKABE_ITO["vermillion"], "x", "grew / overflowed")):
            cells = inside & (grew == value)
            ax.plot(step[cells], alpha[cells], marker, color=color, ms=3.5, alpha=0.7,
                    label=f"simulated: {label}")
        mixed = inside & (grew > 0) & (grew < 1)
        ax.plot(step[mixed], alpha[mixed], "D", color=OKABE_ITO["orange"], ms=3.5,
                label="simulated: some seeds grew")
        ax.contour(S, A, synchronous_radius(S, A, int(p)), levels=[1.0], colors="k",
                   linewidths=1.6)
        ax.contour(S, A, synchronous_radius(S, A, int(p), paper_order=True), levels=[1.0],
                   colors=OKABE_ITO["purple"], linewidths=1.4, linestyles="--")
        ax.plot([], [], "k-", lw=1.6, label="spectral radius 1 (the rule's order)")
        ax.plot([], [], "--", color=OKABE_ITO["purple"], lw=1.4,
                label="spectral radius 1 (the paper's order)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(fine_step[0], fine_step[-1])
        ax.set_ylim(fine_alpha[0], fine_alpha[-1])
        ax.set_xlabel(r"$\eta h$ (step $\times$ curvature)")
        ax.set_ylabel(r"$\alpha = \eta\rho$ ($\beta = p\alpha$)")
        ax.set_title(rf"synchronous EASGD, $p$ = {p}, $\lambda$ = 1: stable below the line"
                     f"\n({int(data['stability_rounds'])} rounds, workers started apart)")
        if i == len(axes) - 1:
            legend_outside(ax)
