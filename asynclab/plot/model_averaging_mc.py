"""Drawing the model-averaging Monte-Carlo study (thesis Fig. 2.4)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish, series_colors  # noqa: E402


def _budget_text(data) -> str:
    workers = [int(n) for n in data["workers"]]
    budget = [int(b) for b in data["budget"]]
    parts = []
    for b in dict.fromkeys(budget):
        ns = [n for n, v in zip(workers, budget, strict=True) if v == b]
        contiguous = ns == list(range(ns[0], ns[-1] + 1))
        span = (f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}" if contiguous
                else "n ∈ {" + ", ".join(map(str, ns)) + "}")
        parts.append(f"{b:,} ({span})")
    return "budget (local steps per worker): " + ", ".join(parts)


def plot_model_averaging_mc(data: dict, path=None):
    """Bars of P(success) against n for each λ of the bar chart, with 95 % Wilson
    intervals, and a heatmap over (n, λ)."""
    workers = np.asarray(data["workers"])
    lams = [int(v) for v in data["local_steps"]]
    bar_lams = [int(v) for v in data["bar_local_steps"]]
    p, low, high = data["probability"], data["low"], data["high"]
    eta, noise, threshold = data["learning_rate"], data["noise"], data["success_loss"]
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(16, 7.0),
                                 gridspec_kw={"width_ratios": [1.25, 1]})
    width = 0.8 / len(bar_lams)
    colors = series_colors(len(bar_lams), 0.15, 0.75)
    for k, (lam, c) in enumerate(zip(bar_lams, colors, strict=True)):
        i = lams.index(lam)
        x = np.arange(len(workers)) + (k - (len(bar_lams) - 1) / 2) * width
        runs = int(data["runs"][i].min())
        ax.bar(x, p[i], width, color=c, label=f"λ = {lam} ({runs:,} runs per bar)")
        ax.errorbar(x, p[i], yerr=[p[i] - low[i], high[i] - p[i]], fmt="none", ecolor="k",
                    capsize=3, lw=1)
    ax.set_xticks(np.arange(len(workers)), [str(n) for n in workers])
    ax.set_xlabel("number of workers n (each starts uniformly in [−4, 4]²)")
    ax.set_ylabel(f"P(central loss < {threshold:g} at the end of the budget)")
    ax.set_ylim(0.0, 1.0)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    ax.set_title(f"Model averaging on Beale: probability of reaching the global minimum\n"
                 f"η = {eta:g}, σ² = {noise:g}, error bars: 95 % Wilson intervals",
                 fontsize=11)
    check = data["max_check_change"]
    fig.text(0.01, 0.01,
             f"Success test: central loss f(θ̃) < {threshold:g} at the end of the budget "
             "(that sublevel set is a bounded neighbourhood of the global minimum (3, 0.5)).\n"
             f"{_budget_text(data)[0].upper()}{_budget_text(data)[1:]}. Convergence check: "
             "the doubled budget, replayed on the first "
             f"{int(data['check_runs']):,} seeds of every cell, changes no cell by more than "
             f"{check:.3f}.\nRuns whose centre overflowed count as failures "
             f"(at most {100 * float(np.max(data['diverged'] / data['runs'])):.2f} % of a cell).",
             fontsize=9, ha="left", va="bottom")

    image = hx.imshow(p, origin="lower", aspect="auto", cmap="magma", vmin=0.4, vmax=1)
    for i in range(len(lams)):
        for j in range(len(workers)):
            half = (high[i, j] - low[i, j]) / 2
            hx.text(j, i, f"{p[i, j]:.2f}\n±{half:.2f}", ha="center", va="center",
                    fontsize=8.5, color="w" if p[i, j] < 0.75 else "k")
    hx.set_xticks(np.arange(len(workers)), [str(n) for n in workers])
    hx.set_yticks(np.arange(len(lams)),
                  [f"λ = {lam}\n({int(data['runs'][i].min()):,} runs)"
                   for i, lam in enumerate(lams)])
    hx.set_xlabel("number of workers n")
    hx.set_title(f"P(success) over (n, λ), η = {eta:g}, σ² = {noise:g} (± half the 95 % "
                 "interval)", fontsize=11)
    fig.colorbar(image, ax=hx, label="P(success)")
    return finish(fig, path, rect=(0, 0.08, 1, 1))
