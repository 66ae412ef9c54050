"""Drawing the staleness study."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish  # noqa: E402


def plot_staleness(data: dict, path=None):
    """One panel per cluster: the staleness histogram, the geometric fit, E[τ] and n − 1."""
    k = len(data["n"])
    cols = min(3, k)
    rows = int(np.ceil(k / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(max(5 * cols, 9), 3.6 * rows), squeeze=False)
    for i, ax in enumerate(axes.ravel()):
        if i >= k:
            ax.axis("off")
            continue
        counts = data["counts"][i]
        n = int(data["n"][i])
        total = counts.sum()
        heavy = data["tail"][i] > 3 * data["tail_geometric"][i]
        limit = int(np.flatnonzero(counts).max() + 2) if heavy else int(max(4 * n, 10))
        tau = np.arange(min(limit, counts.size))
        ax.bar(tau, counts[: tau.size] / total, width=1.0, color="tab:blue", alpha=0.7,
               label="simulated")
        p = data["p_fit"][i]
        ax.plot(tau, p * (1 - p) ** tau, "k-", lw=1.2, label=f"geometric fit, p = {p:.3f}")
        ax.axvline(data["mean"][i], color="tab:red", lw=1.5,
                   label=f"mean τ = {data['mean'][i]:.2f}")
        ax.axvline(n - 1, color="k", ls="--", lw=1, label=f"n − 1 = {n - 1}")
        if heavy:
            ax.set_yscale("log")
            ax.set_ylim(0.5 / total, 1.0)
            ax.set_title(f"{data['labels'][i]}\nP(τ ≥ 8n) = {data['tail'][i]:.4f} vs geometric "
                         f"{data['tail_geometric'][i]:.4f}", fontsize=9)
        else:
            ax.set_title(str(data["labels"][i]), fontsize=10)
        ax.set_xlabel("staleness τ (commits)")
        ax.set_ylabel("fraction of commits")
        ax.legend(fontsize=8)
    return finish(fig, path, "Staleness distributions: the mean stays n − 1, the shape changes")
