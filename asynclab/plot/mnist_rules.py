"""Drawing the MNIST rules study."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish  # noqa: E402
from ._style import (  # noqa: E402
    DASHES,
    OKABE_ITO,
    RULE_COLORS,
    RULE_NAMES,
    legend_outside,
    panels,
    plain_log_ticks,
    styled,
)

COLORS = RULE_COLORS
NAMES = RULE_NAMES
#: A marker per rule: series that meet stay told apart.
MARKERS = {"downpour": "o", "dynsgd": "s", "aeasgd": "^", "agn": "D", "adag": "v"}
#: Per-seed curves: a line style per rule (λ styles use :data:`STYLES`).
CURVE_STYLES = {"downpour": "-", "dynsgd": "--", "aeasgd": "-.", "agn": "-", "adag": ":"}
STYLES = DASHES


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
        # side by side (0.8 workers apart) and DOWNPOUR on top: no series hides another
        ax.errorbar(n + 0.8 * (r - 2), mean, yerr=half, marker=MARKERS.get(rule, "o"),
                    ls="-", color=COLORS.get(rule), capsize=3, ms=5, mfc="none" if r else None,
                    zorder=3 if rule == "downpour" else 2, label=NAMES.get(rule, rule))
    ax.set_xticks(n)
    ax.set_ylim(0, 1)
    ax.axhline(float(data["target"]), color="k", lw=0.8, ls=":")
    ax.set_xlabel("workers $n$")
    ax.set_ylabel("final validation accuracy\n(mean, 95 % $t$ interval)")
    ax.set_title(rf"final accuracy, $\lambda$ = {int(data['windows'][j])}")


def _target_panel(ax, data):
    n = data["workers"]
    for r, rule in enumerate(_rules(data)):
        for j, lam in enumerate(data["windows"]):
            seconds = np.median(data["seconds_to_target"][r, :, j], axis=-1)
            # side by side and DOWNPOUR on top: at λ = 1 AGN's numbers are DOWNPOUR's
            ax.plot(n + 0.8 * (r - 2), np.where(np.isfinite(seconds), seconds, np.nan),
                    MARKERS.get(rule, "o"), ls=STYLES[j % len(STYLES)], color=COLORS.get(rule),
                    zorder=3 if rule == "downpour" else 2,
                    mfc="none" if j else None,
                    label=rf"{NAMES.get(rule, rule)}, $\lambda$ = {int(lam)}")
    ax.set_xticks(n)
    if np.any(np.isfinite(data["seconds_to_target"])):
        ax.set_yscale("log")
        plain_log_ticks(ax, "y", subs=(1.0, 2.0, 3.0, 5.0))
    ax.set_xlabel("workers $n$")
    ax.set_ylabel("median simulated seconds to target\n(missing: not reached)")
    ax.set_title(f"time to validation accuracy {float(data['target']):g}")
    legend_outside(ax)


def _efficiency_panel(ax, data):
    n = data["workers"]
    for r, rule in enumerate(_rules(data)):
        if rule == "downpour":
            continue
        for j, lam in enumerate(data["windows"]):
            ax.plot(n, np.mean(data["efficiency"][r, :, j], axis=-1), MARKERS.get(rule, "o"),
                    ls=STYLES[j % len(STYLES)], color=COLORS.get(rule),
                    mfc="none" if j else None,
                    label=rf"{NAMES.get(rule, rule)}, $\lambda$ = {int(lam)}")
    ax.axhline(1.0, color=COLORS["downpour"], lw=1.2, ls=(0, (1, 1)), zorder=4,
               label="DOWNPOUR (= 1)")
    ax.set_xticks(n)
    ax.set_yscale("log")
    ax.set_xlabel("workers $n$")
    ax.set_ylabel(r"$E = \int \mathrm{loss}\,dt\ /\ \int \mathrm{loss}_{\mathrm{DOWNPOUR}}\,dt$"
                  " (mean)")
    ax.set_title("temporal efficiency against DOWNPOUR (< 1: better)")
    legend_outside(ax)


def _curves_panel(ax, data, key):
    i, j = _shown_cell(data)
    times = data["record_time"][i, j]  # (seeds, records)
    for r, rule in enumerate(_rules(data)):
        for s in range(times.shape[0]):
            ax.plot(times[s], data[key][r, i, j, s], CURVE_STYLES.get(rule, "-"),
                    color=COLORS.get(rule), lw=1.0, alpha=0.85,
                    zorder=3 if rule == "downpour" else 2,
                    label=NAMES.get(rule, rule) if s == 0 else None)
    n, lam = int(data["workers"][i]), int(data["windows"][j])
    ax.set_xlabel("simulated time (s)")
    seeds = times.shape[0]
    if key == "loss":
        ax.set_yscale("log")
        ax.set_ylim(0.3, 5.0)
        ax.set_ylabel(f"training loss ({seeds} seeds each)")
        ax.set_title(rf"training loss, $n$ = {n}, $\lambda$ = {lam}" "\n"
                     "(DOWNPOUR leaves the panel)")
        legend_outside(ax)
    else:
        ax.set_ylim(0, 1)
        ax.set_ylabel(f"validation accuracy ({seeds} seeds each)")
        ax.set_title(rf"validation accuracy, $n$ = {n}, $\lambda$ = {lam}")


def _scale_panel(ax, data):
    for j, lam in enumerate(data["windows"]):
        scale = data[f"probe_scale_{int(lam)}"]
        staleness = data[f"probe_staleness_{int(lam)}"]
        commits = np.arange(scale.shape[-1])
        points = ax.scatter(np.broadcast_to(commits, scale.shape), scale, c=staleness, s=8,
                            marker="o" if j == 0 else "^", cmap="viridis",
                            label=rf"$\lambda$ = {int(lam)}")
    plt.colorbar(points, ax=ax, label=r"staleness $\tau$")
    ax.set_xlabel("commit")
    ax.set_ylabel("ADAG scale factor (mean over the weights)")
    ax.set_title(r"ADAG's scale $1 / (\gamma^{-1} (\tilde\theta - "
                 r"\tilde\theta_{\mathrm{pull}})^2 + 1)$ per commit")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower left")


def _worker_panel(ax, data):
    for j, lam in enumerate(data["windows"]):
        per = data[f"probe_per_worker_{int(lam)}"]  # (seeds, n)
        workers = np.arange(per.shape[-1])
        for s in range(per.shape[0]):
            ax.plot(workers, per[s], "o" if j == 0 else "^", ls="", alpha=0.8,
                    color=(OKABE_ITO["blue"], OKABE_ITO["orange"])[j % 2],
                    label=rf"$\lambda$ = {int(lam)}" if s == 0 else None)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("worker")
    ax.set_ylabel("mean ADAG scale factor of its commits")
    ax.set_title("ADAG's scale factor per worker (first commits)")
    ax.legend(loc="lower left")


@styled
@_files.writes("figure")
def plot_mnist_rules(data: dict, path=None, *, title: str | None = None, overwrite: bool = False):
    """Final accuracy per (n, λ), time to target and temporal efficiency; the curves of
    one cell."""
    path = checked_path(path, overwrite)  # checked before any drawing
    fig, axes = panels(6, width=5.4, height=4.2)
    for j in range(2):
        if j < len(data["windows"]):
            _accuracy_panel(axes[j], data, j)
        else:
            axes[j].axis("off")
    legend_outside(axes[min(1, len(data["windows"]) - 1)])  # the rules, once
    _target_panel(axes[2], data)
    _efficiency_panel(axes[3], data)
    _curves_panel(axes[4], data, "accuracy")
    _curves_panel(axes[5], data, "loss")
    return finish(fig, path, title, overwrite=overwrite)


@styled
@_files.writes("figure")
def plot_mnist_rules_detail(data: dict, path=None, *, title: str | None = None,
                            overwrite: bool = False):
    """ADAG's scale factors per commit and per worker in its first commits."""
    path = checked_path(path, overwrite)  # checked before any drawing
    fig, axes = panels(2, width=5.6, height=4.2)
    _scale_panel(axes[0], data)
    _worker_panel(axes[1], data)
    lam = data["windows"]
    probe = data[f"probe_per_worker_{int(lam[0])}"]
    return finish(fig, path,
                  f"MNIST: ADAG's scale factor in its first commits "
                  f"($n$ = {probe.shape[-1]}, {probe.shape[0]} seed(s) per $\\lambda$)",
                  overwrite=overwrite)
