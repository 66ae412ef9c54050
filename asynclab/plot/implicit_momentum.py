"""Drawing the implicit-momentum study."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish, log2_axis, series_colors  # noqa: E402


def _loss(path, h):
    return 0.5 * np.sum(h * path * path, axis=-1)


def plot_implicit_momentum(data: dict, path=None, *, title: str | None = None):
    """Mean central loss against heavy ball, the gap between them, and the fitted μ vs n."""
    n = data["n"]
    h = data["h"]
    commits = data["commits"]
    colors = series_colors(len(n))
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.0))

    ax = axes[0]
    for i, k in enumerate(n):
        ax.plot(commits, _loss(data["mean_path"][i], h), color=colors[i], lw=2.2,
                label=f"asynchronous SGD, n = {k} (mean)")
        ax.plot(commits, _loss(data["heavy_ball"][i], h), color="k", lw=1, ls="--",
                label="heavy ball, μ = 1 − 1/n, step η/n" if i == 0 else None)
    last = len(n) - 1
    ax.plot(commits, _loss(data["plain_sgd"][last], h), color=colors[last], lw=1.2, ls=":",
            label=f"SGD with step η/{n[last]}, no momentum")
    ax.set_yscale("log")
    ax.set_xlabel("commits")
    ax.set_ylabel("loss of the mean centre  L(E θ̃_t)")
    ax.set_title("mean central trajectory vs heavy ball\n(the curves for all n lie on top of "
                 "each other)", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[1]
    several = n > 1  # one worker: no asynchrony, nothing random without gradient noise
    ax.plot(n[several], data["max_gap_sgd"][several], "s--", color="tab:orange",
            label="… to SGD with step η (no momentum)")
    ax.plot(n[several], data["max_gap"][several], "o-", color="tab:blue",
            label="… to heavy ball (μ = 1 − 1/n, step η/n)")
    ax.plot(n[several], data["max_standard_error"][several], "^:", color="grey",
            label="Monte-Carlo standard error of E θ̃_t")
    log2_axis(ax, n[several])
    ax.set_yscale("log")
    ax.set_xlabel("workers n")
    ax.set_ylabel("max over commits of ‖·‖ / ‖θ_0‖")
    ax.set_title("largest distance of the mean centre E θ̃_t …", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[2]
    grid = np.linspace(1.0, max(float(n.max()), 2.0), 200)
    ax.plot(grid, 1.0 - 1.0 / grid, "k-", lw=1.2, label="1 − 1/n (Mitliagkas et al.)")
    ax.errorbar(n, data["fitted_momentum"], yerr=2 * np.nan_to_num(data["fitted_momentum_error"]),
                fmt="o", color="tab:red", capsize=3, label="fitted from trajectories (± 2 s.e.)")
    for k, mu in zip(n, data["fitted_momentum"], strict=True):
        ax.annotate(f"{mu:.3f}", (k, mu), textcoords="offset points", xytext=(6, -12),
                    fontsize=8)
    log2_axis(ax, n)
    ax.set_xlabel("workers n")
    ax.set_ylabel("momentum μ")
    ax.set_title("implicit momentum fitted from E θ̃_t\n"
                 "Δ_t = μ Δ_{t−1} − (1 − μ) η ∇L(E θ̃_t)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return finish(fig, path, title)
