"""Drawing the real-cluster study: step times, staleness, and the outcome on that cluster."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._common import finish  # noqa: E402
from ._style import (  # noqa: E402
    OKABE_ITO,
    legend_below,
    plain_log_ticks,
    sequential,
    styled,
)

_COLORS = {"measured": "0.35", "replayed": OKABE_ITO["blue"], "fitted": OKABE_ITO["orange"],
           "exponential": OKABE_ITO["purple"]}
_MARKERS = {"replayed": "o", "fitted": "s", "exponential": "^"}
_DASHES = {"replayed": "-", "fitted": "--", "exponential": ":"}


def _step_times(ax, data):
    n = int(data["workers"])
    colors = sequential(n)
    edges = data["edges"] * 1e3  # in ms
    for k in range(n):
        ax.stairs(data["density"][k] / 1e3, edges, color=colors[k], alpha=0.6,
                  label=f"worker {k}: {data['chosen'][k]}, mean "
                  f"{data['mean_step'][k] * 1e3:.2f} ms")
        ax.plot(data["grid"] * 1e3, data["pdf"][k] / 1e3, color=colors[k], lw=1.4)
    ax.set_xscale("log")
    plain_log_ticks(ax, "x")
    ax.set_xlabel("time per commit (ms): compute + communication")
    ax.set_ylabel("density (1/ms)")
    ax.set_title("measured step times (stairs), fits chosen by AIC (lines)\n"
                 rf"{int(data['rows'])} commits of $\lambda$ = {int(data['local_steps'])} "
                 "local steps")
    legend_below(ax, ncol=1, gap=0.17)


def _series(ax, data):
    t = data["series"]
    labels = data["series_labels"].astype(bool)
    steps = np.arange(t.size)
    ax.plot(steps, t * 1e3, color="0.5", lw=0.6)
    ax.plot(steps[labels], t[labels] * 1e3, "o", color=OKABE_ITO["vermillion"], ms=3,
            label=f"straggling (> {data['threshold_line'] * 1e3:.1f} ms)")
    ax.axhline(data["threshold_line"] * 1e3, color=OKABE_ITO["vermillion"], ls=":", lw=1)
    ax.set_yscale("log")
    plain_log_ticks(ax, "y")
    ax.set_xlabel("commit of worker 0")
    ax.set_ylabel("time per commit (ms)")
    ax.set_title(f"stragglers come and go: $P$(enter) = {data['p_enter']:.4f} $\\pm$ "
                 f"{data['p_enter_se']:.4f}, $P$(leave) = {data['p_leave']:.2f} $\\pm$ "
                 f"{data['p_leave_se']:.2f}\n{int(data['episodes'])} episodes, mean "
                 f"{data['mean_episode_steps']:.2f} steps, {data['straggling_fraction']:.1%} of "
                 "steps")
    legend_below(ax, ncol=1, gap=0.17)


def _staleness(ax, data):
    names = [str(x) for x in data["staleness_names"]]
    hist = data["staleness"]
    n = int(data["workers"])
    tau = np.arange(hist.shape[1])
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        label = (f"{name}: mean {data['staleness_mean'][i]:.3f}, TV "
                 f"{data['staleness_tv'][i]:.3f}, W {data['staleness_wasserstein'][i]:.3f}")
        ax.bar(tau + (i - (len(names) - 1) / 2) * width, hist[i], width=width,
               color=_COLORS.get(name, "k"), label=label)
    ax.axvline(n - 1, color="k", ls="--", lw=1, label=f"$n - 1$ = {n - 1}")
    ax.set_xlim(-0.6, min(tau.size, 4 * n) - 0.4)
    ax.set_xlabel(r"staleness $\tau$ (commits)")
    ax.set_ylabel("fraction of commits")
    ax.set_title(f"staleness on the logged cluster ($n$ = {n})\ndistances (TV, W) to the "
                 f"{data['staleness_reference']} histogram")
    legend_below(ax, ncol=1, gap=0.17)


def _big_staleness(ax, data):
    hist = data["big_staleness"]
    m = int(np.round(data["big_mean"][1])) + 1
    tau = np.arange(hist.shape[1])
    for i, name in enumerate(("fitted", "exponential")):
        ax.step(tau, hist[i], where="mid", color=_COLORS[name], ls=_DASHES[name],
                label=f"{name}: mean {data['big_mean'][i]:.2f}")
    ax.axvline(m - 1, color="k", ls="--", lw=1, label=f"$n - 1$ = {m - 1}")
    ax.set_xlim(0, min(tau.size, 3 * m))
    ax.set_xlabel(r"staleness $\tau$ (commits)")
    ax.set_ylabel("fraction of commits")
    ax.set_title(f"the fitted cluster extended to $n$ = {m} (worker $j$ $\\leftarrow$ "
                 f"logged worker $j$ mod {int(data['workers'])})\nTV {data['big_tv']:.3f}, W "
                 f"{data['big_wasserstein']:.2f} between the two")
    legend_below(ax, ncol=1, gap=0.17)


def _outcome(ax, rates, loss, names, stable, target, title):
    for i, name in enumerate(names):
        finite = np.where(np.isfinite(loss[i]), loss[i], np.nan)
        median = np.nanmedian(np.where(np.isnan(finite), 1e30, finite), axis=-1)
        converged = np.mean(loss[i] < target, axis=-1)
        ax.plot(rates, np.minimum(median, 1e6), marker=_MARKERS.get(name, "o"),
                ls=_DASHES.get(name, "-"), color=_COLORS[name], mfc="none" if i else None,
                label=rf"{name}: stable up to $\eta$ = {stable[i]:.2g}")
        for r, c, y in zip(rates, converged, np.minimum(median, 1e6), strict=True):
            if c < 1:
                ax.annotate(f"{c:.0%}", (r, y), fontsize=6, color=_COLORS[name],
                            xytext=(2, 4), textcoords="offset points")
    ax.axhline(target, color="k", ls=":", lw=1, label=f"target {target:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax, "x")
    ax.set_xlabel(r"learning rate $\eta$")
    ax.set_ylabel("median final loss / initial loss\n(capped at $10^6$)")
    ax.set_title(title)
    legend_below(ax, ncol=1, gap=0.17)


@styled
@_files.writes("figure")
def plot_real_cluster(data: dict, path=None, config=None, *, overwrite: bool = False):
    """Step times with fits, the straggler series, staleness histograms, and DOWNPOUR's
    final loss against η on the logged cluster and under the exponential assumption."""
    path = checked_path(path, overwrite)  # checked before any drawing
    big = "big_loss" in data
    fig, axes = plt.subplots(2, 3, figsize=(17, 11.5))
    _step_times(axes[0, 0], data)
    _series(axes[0, 1], data)
    _staleness(axes[0, 2], data)
    _big_staleness(axes[1, 0], data)
    target = (config or {}).get("target", 1e-3)
    n = int(data["workers"])
    _outcome(axes[1, 1], data["learning_rates"], data["loss"], [str(x) for x in data["models"]],
             data["stable"], target,
             rf"DOWNPOUR ($\lambda$ = {int(data['local_steps'])}) on the logged cluster, "
             f"$n$ = {n}\n(% = share of seeds reaching the target where not all do)")
    if big:
        m = int(data["outcome_workers"])
        _outcome(axes[1, 2], data["big_learning_rates"], data["big_loss"],
                 ["fitted", "exponential"], data["big_stable"], target,
                 f"DOWNPOUR on the fitted cluster extended to $n$ = {m}\n"
                 rf"($\eta$ scaled by {n}/{m})")
    else:
        axes[1, 2].axis("off")
    return finish(fig, path, "A real cluster (threads backend, 2 cores) against the "
                  "exponential assumption with the same mean step time", overwrite=overwrite)
