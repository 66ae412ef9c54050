"""Drawing the momentum-tuning study."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish, log2_axis, series_colors  # noqa: E402


def plot_momentum_tuning(data: dict, path=None, *, title: str | None = None):
    """Commits to target against server momentum per n; the best momentum against n."""
    n = data["n"]
    momenta = data["momenta"]
    score = data["commits_to_target"]
    colors = series_colors(len(n))
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.0))

    ax = axes[0]
    ceiling = np.nanmax(np.where(np.isfinite(score), score, np.nan)) * 1.25
    for i, k in enumerate(n):
        finite = np.isfinite(score[i])
        ax.plot(momenta[finite], score[i][finite], "o-", color=colors[i], ms=4,
                label=f"n = {k}: best μ = {data['best_momentum'][i]:g}")
        ax.plot(momenta[~finite], np.full((~finite).sum(), ceiling * 1.08 ** i), "x",
                color=colors[i], ms=7)
        j = int(np.argmin(score[i]))
        ax.plot(momenta[j], score[i][j], "*", color=colors[i], ms=15, mec="k")
    ax.plot([], [], "kx", label="target not reached (or diverged)")
    ax.axvline(0, color="grey", lw=0.6)
    ax.set_yscale("log")
    ax.set_xlabel("explicit server momentum μ (heavy ball on the central updates)")
    ax.set_ylabel("commits until the mean loss reaches the target")
    ax.set_title("time to target vs explicit momentum (★ = best)", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[1]
    ax.plot(n, data["best_momentum"], "o-", color="tab:red", ms=7,
            label="best μ measured (grid)")
    if np.all(np.isfinite(data["first_order"])):
        grid = np.geomspace(1, n.max(), 100)
        ax.plot(grid, data["best_momentum"][0] - (1 - 1 / grid), "k--", lw=1,
                label="first order: best μ(n = 1) − (1 − 1/n)")
    ax.axhline(0, color="grey", lw=0.6)
    log2_axis(ax, n)
    ax.set_xlabel("workers n")
    ax.set_ylabel("best explicit momentum μ")
    step = np.min(np.diff(momenta)) if momenta.size > 1 else 0.1
    ax.set_ylim(momenta.min() - step, momenta.max() + step)
    ax.set_title("the best explicit momentum falls as workers are added", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[2]
    curves = data["mean_loss"]
    commits = data["commits"]
    for i, k in enumerate(n):
        j = int(np.argmin(score[i]))
        ax.plot(commits, curves[i, j], color=colors[i], lw=1.5,
                label=f"n = {k}, best μ = {momenta[j]:g}")
        zero = int(np.argmin(np.abs(momenta)))
        ax.plot(commits, curves[i, zero], color=colors[i], lw=0.9, ls=":")
    ax.plot([], [], color="grey", ls=":", label=f"same n, μ = {momenta[zero]:g}")
    ax.axhline(data["target_loss"], color="k", lw=0.8, ls="--", label="target")
    ax.set_yscale("log")
    ax.set_xlabel("commits")
    ax.set_ylabel("central loss (mean over seeds)")
    ax.set_title("mean loss curves", fontsize=10)
    ax.legend(fontsize=8)
    return finish(fig, path, title)
