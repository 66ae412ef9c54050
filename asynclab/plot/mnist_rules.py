"""Drawing the MNIST rules study."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish  # noqa: E402

COLORS = {"downpour": "tab:red", "dynsgd": "tab:orange", "aeasgd": "tab:green",
          "agn": "tab:blue", "adag": "tab:purple"}
NAMES = {"downpour": "DOWNPOUR", "dynsgd": "DynSGD", "aeasgd": "AEASGD", "agn": "AGN",
         "adag": "ADAG"}
STYLES = ("-", "--", ":", "-.")


def _rules(data):
    return [str(r) for r in data["rules"]]


def _shown_cell(data, workers: int = 30):
    """The (n, λ) cell whose curves are drawn: n = ``workers`` (or the nearest), largest λ."""
    n = np.asarray(data["workers"])
    i = int(np.argmin(np.abs(n - workers)))
    return i, len(data["windows"]) - 1


def _accuracy_panel(ax, data, j):
    n = data["workers"]
    for r, rule in enumerate(_rules(data)):
        mean = data["final_accuracy_mean"][r, :, j]
        half = np.nan_to_num(data["final_accuracy_half_width"][r, :, j])
        ax.errorbar(n + 0.4 * (r - 2), mean, yerr=half, fmt="o-", color=COLORS.get(rule),
                    capsize=3, label=NAMES.get(rule, rule))
    ax.set_xticks(n)
    ax.set_ylim(0, 1)
    ax.axhline(float(data["target"]), color="k", lw=0.8, ls=":")
    ax.set_xlabel("workers n")
    ax.set_ylabel("final validation accuracy (mean, 95 % t interval)")
    ax.set_title(f"λ = {int(data['windows'][j])}", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")


def _target_panel(ax, data):
    n = data["workers"]
    for r, rule in enumerate(_rules(data)):
        for j, lam in enumerate(data["windows"]):
            seconds = np.median(data["seconds_to_target"][r, :, j], axis=-1)
            ax.plot(n, np.where(np.isfinite(seconds), seconds, np.nan), "o",
                    ls=STYLES[j % len(STYLES)], color=COLORS.get(rule),
                    label=f"{NAMES.get(rule, rule)}, λ = {int(lam)}")
    ax.set_xticks(n)
    if np.any(np.isfinite(data["seconds_to_target"])):
        ax.set_yscale("log")
    ax.set_xlabel("workers n")
    ax.set_ylabel("median simulated seconds to target (missing: not reached)")
    ax.set_title(f"time to validation accuracy {float(data['target']):g}", fontsize=10)
    ax.legend(fontsize=7, ncol=2)


def _efficiency_panel(ax, data):
    n = data["workers"]
    for r, rule in enumerate(_rules(data)):
        if rule == "downpour":
            continue
        for j, lam in enumerate(data["windows"]):
            ax.plot(n, np.mean(data["efficiency"][r, :, j], axis=-1), "o",
                    ls=STYLES[j % len(STYLES)], color=COLORS.get(rule),
                    label=f"{NAMES.get(rule, rule)}, λ = {int(lam)}")
    ax.axhline(1.0, color="tab:red", lw=1, label="DOWNPOUR")
    ax.set_xticks(n)
    ax.set_yscale("log")
    ax.set_xlabel("workers n")
    ax.set_ylabel("E(rule, DOWNPOUR) = ∫ loss / ∫ loss_DOWNPOUR (mean)")
    ax.set_title("temporal efficiency against DOWNPOUR (< 1: better)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)


def _curves_panel(ax, data, key):
    i, j = _shown_cell(data)
    times = data["record_time"][i, j]  # (seeds, records)
    for r, rule in enumerate(_rules(data)):
        for s in range(times.shape[0]):
            ax.plot(times[s], data[key][r, i, j, s], color=COLORS.get(rule),
                    lw=1.0, alpha=0.8, label=NAMES.get(rule, rule) if s == 0 else None)
    n, lam = int(data["workers"][i]), int(data["windows"][j])
    ax.set_xlabel("simulated time (s)")
    if key == "loss":
        ax.set_yscale("log")
        ax.set_ylim(0.3, 5.0)
        ax.set_ylabel("training loss (every seed; DOWNPOUR leaves the panel)")
        ax.set_title(f"training loss, n = {n}, λ = {lam}", fontsize=10)
    else:
        ax.set_ylim(0, 1)
        ax.set_ylabel("validation accuracy (every seed)")
        ax.set_title(f"validation accuracy, n = {n}, λ = {lam}", fontsize=10)
    ax.legend(fontsize=8)


def _scale_panel(ax, data):
    for j, lam in enumerate(data["windows"]):
        scale = data[f"probe_scale_{int(lam)}"]
        staleness = data[f"probe_staleness_{int(lam)}"]
        commits = np.arange(scale.shape[-1])
        points = ax.scatter(np.broadcast_to(commits, scale.shape), scale, c=staleness, s=8,
                            marker="o" if j == 0 else "^", cmap="viridis",
                            label=f"λ = {int(lam)}")
    plt.colorbar(points, ax=ax, label="staleness τ")
    ax.set_xlabel("commit")
    ax.set_ylabel("ADAG scale factor (mean over the weights)")
    ax.set_title("ADAG: 1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1) per commit", fontsize=10)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8, loc="lower left")


def _worker_panel(ax, data):
    for j, lam in enumerate(data["windows"]):
        per = data[f"probe_per_worker_{int(lam)}"]  # (seeds, n)
        workers = np.arange(per.shape[-1])
        for s in range(per.shape[0]):
            ax.plot(workers, per[s], "o" if j == 0 else "^", ls="", alpha=0.8,
                    color=plt.cm.tab10(j), label=f"λ = {int(lam)}" if s == 0 else None)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("worker")
    ax.set_ylabel("mean ADAG scale factor of its commits")
    ax.set_title("ADAG's scale factor per worker (first commits)", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")


def plot_mnist_rules(data: dict, path=None, *, title: str | None = None):
    """Final accuracy, time to target and temporal efficiency per (n, λ); curves of one
    cell; ADAG's scale factors per commit and per worker."""
    fig, axes = plt.subplots(2, 4, figsize=(22, 10))
    for j in range(2):
        if j < len(data["windows"]):
            _accuracy_panel(axes[0, j], data, j)
        else:
            axes[0, j].axis("off")
    _target_panel(axes[0, 2], data)
    _efficiency_panel(axes[0, 3], data)
    _curves_panel(axes[1, 0], data, "accuracy")
    _curves_panel(axes[1, 1], data, "loss")
    _scale_panel(axes[1, 2], data)
    _worker_panel(axes[1, 3], data)
    return finish(fig, path, title, rect=(0, 0, 1, 0.95) if title else None)
