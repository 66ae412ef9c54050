"""Drawing the EASGD study: the synchronous equilibrium and asynchronous stability."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..problems import get_problem  # noqa: E402
from ._common import finish, log2_axis  # noqa: E402
from ._surface import draw_contours  # noqa: E402

_STYLE = {False: ("tab:blue", "without early stop"), True: ("tab:red", "with early stop")}


def _key(rho, stop):
    return f"rho{rho:g}_{'stop' if stop else 'nostop'}"


def _edges(values):
    """Cell edges around log-spaced centres."""
    logs = np.log(np.asarray(values, float))
    mids = 0.5 * (logs[1:] + logs[:-1])
    first = logs[0] - (mids[0] - logs[0]) if len(logs) > 1 else logs[0] - 0.5
    last = logs[-1] + (logs[-1] - mids[-1]) if len(logs) > 1 else logs[0] + 0.5
    return np.exp(np.concatenate([[first], mids, [last]]))


def plot_easgd(data: dict, path=None):
    """Top: synchronous EASGD on Beale (paths, central loss, distance to the centre,
    local steps taken). Bottom: asynchronous EASGD's stability over λ × ρ."""
    problem = get_problem("beale")
    n, lam, eta = int(data["workers"]), int(data["local_steps"]), float(data["learning_rate"])
    rhos = [float(r) for r in data["elasticities"]]
    rounds = data["rounds_axis"]
    noise = float(data["noise"])
    settings = f"n = {n}, λ = {lam}, η = {eta:g}"
    stability = "stability_workers" in data
    fig = plt.figure(figsize=(22, 16.5 if stability else 11))
    grid = fig.add_gridspec(3 if stability else 2, 4)

    for j, rho in enumerate(rhos[:2]):
        ax = fig.add_subplot(grid[0, j])
        draw_contours(ax, problem, levels=25)
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
        ax.set_title(f"Synchronous EASGD on Beale, ρ = {rho:g} (α = {eta * rho:g})\n"
                     f"{settings}, {int(data['rounds']):,} rounds", fontsize=10)
        ax.legend(fontsize=7.5, loc="lower left")

    ax = fig.add_subplot(grid[0, 2])
    for rho, dash in zip(rhos, ("-", "--", ":"), strict=False):
        for stop in (False, True):
            color, label = _STYLE[stop]
            ax.plot(rounds, data[f"loss_{_key(rho, stop)}"], dash, color=color,
                    label=f"ρ = {rho:g}, {label}")
    ax.set_yscale("log")
    ax.set_xlabel("rounds (λ local steps each)")
    ax.set_ylabel("central loss f(θ̃)")
    ax.set_title(f"Central loss ({settings}, σ² = {noise:g})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)

    ax = fig.add_subplot(grid[0, 3])
    for rho, dash in zip(rhos, ("-", "--", ":"), strict=False):
        for stop in (False, True):
            color, label = _STYLE[stop]
            key = _key(rho, stop)
            ax.plot(rounds[:-1], data[f"distance_{key}"].mean(axis=1), dash, color=color,
                    label=f"ρ = {rho:g}, {label}")
        ax.plot(rounds[:-1], data[f"stop_distance_{_key(rho, True)}"].mean(axis=1), dash,
                color="0.5", lw=0.9,
                label=f"ρ = {rho:g}: test fires beyond (‖g‖ − 1)/ρ" if rho == rhos[0]
                else f"ρ = {rho:g}: (‖g‖ − 1)/ρ")
    ax.set_yscale("log")
    ax.set_ylim(1e-2, 20)
    ax.set_xlabel("rounds")
    ax.set_ylabel("‖θᵏ − θ̃‖ after the local work (mean over workers)")
    ax.set_title("Worker–centre distance; with early stop the workers\n"
                 "sit on ‖ηg‖ − α‖θᵏ − θ̃‖ = η, i.e. −ηg ≈ α(θᵏ − θ̃)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5)

    ax = fig.add_subplot(grid[1, 0])
    for rho, dash in zip(rhos, ("-", "--", ":"), strict=False):
        key = _key(rho, True)
        taken = data[f"taken_{key}"]
        window = max(1, len(taken) // 100)
        smooth = np.convolve(taken, np.ones(window) / window, mode="valid")
        ax.plot(rounds[:-1][window - 1:], smooth, dash, color="tab:red",
                label=f"ρ = {rho:g}: {100 * data[f'steps_fraction_{key}']:.0f} % of all "
                      "local steps taken")
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("rounds")
    ax.set_ylabel("fraction of the λ local steps taken\n(running mean over 1 % of the run)")
    ax.set_title(f"Early stop: local work actually done ({settings})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)

    # ---------------------------------------------------------------- stability map
    ax = fig.add_subplot(grid[1, 1:3])
    lams = np.asarray(data["map_local_steps"], float)
    map_rhos = np.asarray(data["map_elasticities"], float)
    map_eta = float(data["map_learning_rate"])
    m = int(data["map_workers"])
    mesh = ax.pcolormesh(_edges(lams), _edges(map_rhos), data["map_fraction"].T,
                         cmap="Reds", vmin=0, vmax=1, shading="flat")
    for i, lv in enumerate(lams):
        for j, rv in enumerate(map_rhos):
            value = data["map_fraction"][i, j]
            ax.text(lv, rv, f"{value:.2f}", ha="center", va="center", fontsize=7,
                    color="w" if value > 0.6 else "k")
    theory = np.asarray(data["theory_local_steps"], float)
    ax.plot(theory, data["alpha_round_robin"] / map_eta, "k-", lw=2,
            label=f"theory, {m} workers in turn (spectral radius = 1)")
    ax.plot(lams, data["alpha_random_order"] / map_eta, "ks--", lw=1.2, ms=4,
            label=f"theory, {m} workers in random order (Lyapunov exponent = 0)")
    ax.plot(theory, data["alpha_one_worker"] / map_eta, ":", color="tab:blue", lw=2,
            label="one worker: α = 2(1 + c)/(1 + 3c), c = (1 − η h_min)^λ")
    ax.plot(lams, data["alpha_observed"] / map_eta, "D", color="gold", mec="k", ms=7,
            label="simulated boundary (half of the runs grow)")
    log2_axis(ax, lams)
    ax.set_yscale("log")
    ax.set_yticks(map_rhos, [f"{v:.1f} ({v * map_eta:.2f})" for v in map_rhos])
    ax.minorticks_off()
    ax.set_xlabel("communication period λ (local steps between two exchanges)")
    ax.set_ylabel("elasticity ρ  (α = ηρ in brackets)")
    curv = ", ".join(f"{h:g}" for h in data["map_curvatures"])
    ax.set_title(f"Asynchronous EASGD: fraction of runs that diverge (centre overflows)\n"
                 f"quadratic with curvatures {{{curv}}}, n = {m}, η = {map_eta:g}, "
                 f"{len(data['map_seeds'])} seeds × {int(data['map_exchanges'])} exchanges "
                 "per worker, exponential compute times", fontsize=10)
    fig.colorbar(mesh, ax=ax, pad=0.02, label="fraction diverged")
    ax.legend(fontsize=7.5, loc="upper left", framealpha=0.9)

    ax = fig.add_subplot(grid[1, 3])
    workers = [int(v) for v in data["check_workers"]]
    alphas = [float(v) for v in data["check_alphas"]]
    if workers:
        x = np.arange(len(workers))
        width = 0.8 / len(alphas)
        for b, alpha in enumerate(alphas):
            xb = x + (b - (len(alphas) - 1) / 2) * width
            values = data["check_growing"][:, b]
            ax.bar(xb, values, width, label=f"α = ηρ = {alpha:g}",
                   color=plt.cm.coolwarm(b / max(1, len(alphas) - 1)))
            for xv, v in zip(xb, values, strict=True):
                ax.text(xv, v + 0.01, f"{v:.2f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x, [f"n = {w}" for w in workers])
        ax.set_xlabel(f"workers (λ = 1, η = {map_eta:g}, {len(data['map_seeds'])} seeds)")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "not simulated in this (quick) configuration", ha="center",
                transform=ax.transAxes)
    ax.set_ylabel("fraction of runs whose central loss grew")
    ax.set_title("λ = 1: the boundary is α ≈ 1 for every n\n(not α·n ≈ 1)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)

    if stability:
        _draw_stability(fig, grid, data)
    return finish(fig, path, "EASGD: the elastic equilibrium (top), why asynchronous "
                  "EASGD diverges with a short communication period (middle)"
                  + (" and synchronous EASGD's stability region (bottom)" if stability
                     else ""), fontsize=13)


def _draw_stability(fig, grid, data):
    """Simulated cells (grew / did not) in the (ηh, α) plane with the boundary of the
    spectral radius, for every p."""
    from ..studies.easgd import synchronous_radius

    step, alpha = data["stability_step"], data["stability_alpha"]
    fine_step = np.geomspace(step.min(), step.max(), 300)
    fine_alpha = np.geomspace(3e-3, 3.0, 300)
    S, A = np.meshgrid(fine_step, fine_alpha, indexing="ij")
    inside = (alpha >= fine_alpha[0]) & (alpha <= fine_alpha[-1])
    for i, p in enumerate(data["stability_workers"]):
        ax = fig.add_subplot(grid[2, i])
        grew = data["stability_grew"][i]
        for value, color, label in ((0.0, "tab:blue", "stayed bounded"),
                                    (1.0, "tab:red", "grew / overflowed")):
            cells = inside & (grew == value)
            ax.plot(step[cells], alpha[cells], "s", color=color, ms=3.5, alpha=0.6,
                    label=f"simulated: {label}")
        mixed = inside & (grew > 0) & (grew < 1)
        ax.plot(step[mixed], alpha[mixed], "s", color="tab:purple", ms=3.5,
                label="simulated: some seeds grew")
        ax.contour(S, A, synchronous_radius(S, A, int(p)), levels=[1.0], colors="k",
                   linewidths=1.6)
        ax.contour(S, A, synchronous_radius(S, A, int(p), paper_order=True), levels=[1.0],
                   colors="tab:orange", linewidths=1.2, linestyles="--")
        ax.plot([], [], "k-", lw=1.6, label="spectral radius = 1 (the rule's order)")
        ax.plot([], [], "--", color="tab:orange", lw=1.2,
                label="spectral radius = 1 (the paper's order)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(fine_step[0], fine_step[-1])
        ax.set_ylim(fine_alpha[0], fine_alpha[-1])
        ax.set_xlabel("ηh (step × curvature)")
        ax.set_ylabel("α = ηρ (β = pα)")
        ax.set_title(f"synchronous EASGD, p = {p}, λ = 1: stable below the line\n"
                     f"({int(data['stability_rounds'])} rounds, workers started apart)",
                     fontsize=10)
        if i == 0:
            ax.legend(fontsize=7, loc="lower left")
