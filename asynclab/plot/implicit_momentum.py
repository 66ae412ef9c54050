"""Drawing the implicit-momentum study."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish, log2_axis  # noqa: E402
from ._style import OKABE_ITO, legend_below, sequential, styled  # noqa: E402


def _loss(path, h):
    return 0.5 * np.sum(h * path * path, axis=-1)


@styled
@_files.writes("figure")
def plot_implicit_momentum(data: dict, path=None, *, title: str | None = None,
                           overwrite: bool = False):
    """Mean central loss against heavy ball, the gap between them, and the fitted μ vs n."""
    path = checked_path(path, overwrite)  # checked before any drawing
    n = data["n"]
    h = data["h"]
    commits = data["commits"]
    colors = sequential(len(n))
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.6))

    ax = axes[0]
    for i, k in enumerate(n):
        # the curves coincide: widest first, so every one shows as a band around the next
        ax.plot(commits, _loss(data["mean_path"][i], h), color=colors[i],
                lw=1.2 + 1.0 * (len(n) - 1 - i), label=f"asynchronous SGD, $n$ = {k} (mean)")
        ax.plot(commits, _loss(data["heavy_ball"][i], h), color="k", lw=1, ls="--", zorder=3,
                label=r"heavy ball, $\mu = 1 - 1/n$, step $\eta/n$" if i == 0 else None)
    last = len(n) - 1
    ax.plot(commits, _loss(data["plain_sgd"][last], h), color=colors[last], lw=1.2, ls=":",
            label=rf"SGD with step $\eta$/{n[last]}, no momentum")
    ax.set_yscale("log")
    ax.set_xlabel("commits")
    ax.set_ylabel(r"loss of the mean centre $L(\mathbb{E}\,\tilde\theta_t)$")
    ax.set_title("mean central trajectory against heavy ball\n(the curves for all $n$ lie "
                 "on top of each other)")
    legend_below(ax, ncol=2)

    ax = axes[1]
    several = n > 1  # one worker: no asynchrony, nothing random without gradient noise
    ax.plot(n[several], data["max_gap_sgd"][several], "s--", color=OKABE_ITO["orange"],
            label=r"… to SGD with step $\eta$ (no momentum)")
    ax.plot(n[several], data["max_gap"][several], "o-", color=OKABE_ITO["blue"],
            label=r"… to heavy ball ($\mu = 1 - 1/n$, step $\eta/n$)")
    ax.plot(n[several], data["max_standard_error"][several], "^:", color=OKABE_ITO["grey"],
            label=r"Monte-Carlo standard error of $\mathbb{E}\,\tilde\theta_t$")
    log2_axis(ax, n[several])
    ax.set_yscale("log")
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(r"max over commits of $\Vert\cdot\Vert\ /\ \Vert\theta_0\Vert$")
    ax.set_title(r"largest distance of the mean centre $\mathbb{E}\,\tilde\theta_t$ …")
    legend_below(ax, ncol=1)

    ax = axes[2]
    grid = np.linspace(1.0, max(float(n.max()), 2.0), 200)
    ax.plot(grid, 1.0 - 1.0 / grid, "k-", lw=1.2, label=r"$1 - 1/n$ (Mitliagkas et al.)")
    ax.errorbar(n, data["fitted_momentum"], yerr=2 * np.nan_to_num(data["fitted_momentum_error"]),
                fmt="o", color=OKABE_ITO["vermillion"], capsize=3,
                label=r"fitted from trajectories ($\pm$ 2 s.e.)")
    for k, mu in zip(n, data["fitted_momentum"], strict=True):
        ax.annotate(f"{mu:.3f}", (k, mu), textcoords="offset points", xytext=(6, -12),
                    fontsize=8)
    log2_axis(ax, n)
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(r"momentum $\mu$")
    ax.set_title(r"implicit momentum fitted from $\mathbb{E}\,\tilde\theta_t$" "\n"
                 r"$\Delta_t = \mu \Delta_{t-1} - (1 - \mu)\, \eta\, "
                 r"\nabla L(\mathbb{E}\,\tilde\theta_t)$")
    legend_below(ax, ncol=1)
    return finish(fig, path, title, overwrite=overwrite)
