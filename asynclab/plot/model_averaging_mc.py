"""Drawing the model-averaging Monte-Carlo study (thesis Fig. 2.4)."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish  # noqa: E402
from ._style import sequential, styled  # noqa: E402


def _budget_text(data) -> str:
    workers = [int(n) for n in data["workers"]]
    budget = [int(b) for b in data["budget"]]
    parts = []
    for b in dict.fromkeys(budget):
        ns = [n for n, v in zip(workers, budget, strict=True) if v == b]
        contiguous = ns == list(range(ns[0], ns[-1] + 1))
        span = (f"$n$ = {ns[0]}" if len(ns) == 1 else f"$n$ = {ns[0]}–{ns[-1]}" if contiguous
                else r"$n \in$ {" + ", ".join(map(str, ns)) + "}")
        parts.append(f"{b:,} ({span})")
    return "budget (local steps per worker): " + ", ".join(parts)


def probability_bars(ax, workers, lams, p, low, high, labels):
    """Bars of P(success) against n, one series per λ (``p``, ``low``, ``high``: one row
    per λ), with their intervals as error bars; returns the bars' x positions (one row
    per λ)."""
    width = 0.8 / len(lams)
    colors = sequential(len(lams), 0.15, 0.75)
    positions = []
    for k, (p_k, low_k, high_k, label, color) in enumerate(
            zip(p, low, high, labels, colors, strict=True)):
        x = np.arange(len(workers)) + (k - (len(lams) - 1) / 2) * width
        ax.bar(x, p_k, width, color=color, label=label)
        ax.errorbar(x, p_k, yerr=[p_k - low_k, high_k - p_k], fmt="none", ecolor="k",
                    capsize=3, lw=1)
        positions.append(x)
    ax.set_xticks(np.arange(len(workers)), [str(n) for n in workers])
    ax.set_xlabel(r"number of workers $n$ (each starts uniformly in $[-4, 4]^2$)")
    ax.set_ylim(0.0, 1.0)
    return positions


@styled
@_files.writes("figure")
def plot_model_averaging_mc(data: dict, path=None, *, overwrite: bool = False):
    """Bars of P(success) against n for each λ of the bar chart, with 95 % Wilson
    intervals, and a heatmap over (n, λ)."""
    path = checked_path(path, overwrite)  # checked before any drawing
    workers = np.asarray(data["workers"])
    lams = [int(v) for v in data["local_steps"]]
    bar_lams = [int(v) for v in data["bar_local_steps"]]
    p, low, high = data["probability"], data["low"], data["high"]
    eta, noise, threshold = data["learning_rate"], data["noise"], data["success_loss"]
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(16, 7.0),
                                 gridspec_kw={"width_ratios": [1.25, 1]})
    rows = [lams.index(lam) for lam in bar_lams]
    probability_bars(ax, workers, bar_lams, p[rows], low[rows], high[rows],
                     [rf"$\lambda$ = {lam} ({int(data['runs'][i].min()):,} runs per bar)"
                      for lam, i in zip(bar_lams, rows, strict=True)])
    ax.set_ylabel(f"P(central loss < {threshold:g} at the end of the budget)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0.0, 1.18)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.legend(loc="upper left", ncol=2)
    ax.set_title("probability of reaching the global minimum\n"
                 "(error bars: 95 % Wilson intervals)")
    check = data["max_check_change"]
    fig.text(0.01, 0.01,
             rf"Success test: central loss $f(\tilde\theta)$ < {threshold:g} at the end of the "
             "budget "
             "(that sublevel set is a bounded neighbourhood of the global minimum (3, 0.5)).\n"
             f"{_budget_text(data)[0].upper()}{_budget_text(data)[1:]}. Convergence check: "
             "the doubled budget, replayed on the first "
             f"{int(data['check_runs']):,} seeds of every cell, changes no cell by more than "
             f"{check:.3f}.\nRuns whose centre overflowed count as failures "
             f"(at most {100 * float(np.max(data['diverged'] / data['runs'])):.2f} % of a cell).",
             fontsize=8.5, ha="left", va="bottom")

    image = hx.imshow(p, origin="lower", aspect="auto", cmap="magma", vmin=0.4, vmax=1)
    for i in range(len(lams)):
        for j in range(len(workers)):
            half = (high[i, j] - low[i, j]) / 2
            hx.text(j, i, f"{p[i, j]:.2f}\n$\\pm${half:.2f}", ha="center", va="center",
                    fontsize=8.5, color="w" if p[i, j] < 0.75 else "k")
    hx.set_xticks(np.arange(len(workers)), [str(n) for n in workers])
    hx.set_yticks(np.arange(len(lams)),
                  [f"$\\lambda$ = {lam}\n({int(data['runs'][i].min()):,} runs)"
                   for i, lam in enumerate(lams)])
    hx.set_xlabel("number of workers $n$")
    hx.set_title(r"$P$(success) over ($n$, $\lambda$)" "\n"
                 r"($\pm$ half the 95 % interval)")
    fig.colorbar(image, ax=hx, label="$P$(success)")
    return finish(fig, path, rf"Model averaging with random starts on Beale: $\eta$ = "
                  rf"{eta:g}, $\sigma^2$ = {noise:g}", rect=(0, 0.08, 1, 1), overwrite=overwrite)
