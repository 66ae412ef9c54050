"""Drawing the model-averaging paths study (identical vs random initialisation): the
smallest and largest λ with the loss and the spread (``model_averaging_paths.png``), the
paths of the other λ (``model_averaging_paths_detail.png``)."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from ..problems import get_problem  # noqa: E402
from ._common import finish  # noqa: E402
from ._style import CYCLE, OKABE_ITO, legend_below, legend_outside, sequential, styled  # noqa: E402
from ._surface import draw_contours  # noqa: E402

_LABELS = {"start": "identical initialisation", "random_per_worker": "random initialisation"}


def _panel(ax, data, init, lam, problem):
    key = f"{init}_{lam}"
    n = int(data["workers"])
    draw_contours(ax, problem, levels=25)
    center = data[f"center_{key}"]
    ends = data[f"ends_{key}"]
    rounds = data[f"ends_round_{key}"]
    starts = data[f"starts_{key}"]
    colors = [CYCLE[k % len(CYCLE)] for k in range(n)]
    # each worker's local excursion of a round: the chord from the centre it started
    # from (its own start in round 0) to where its λ local steps ended
    for k in range(n):
        segments = [[starts[k] if r == 0 else center[i], ends[i, k]]
                    for i, r in enumerate(rounds)]
        ax.add_collection(LineCollection(segments, colors=[colors[k]], linewidths=1.0,
                                         alpha=0.8))
        ax.plot(*ends[:, k].T, ".", color=colors[k], ms=2.5,
                label=r"worker end points ($\lambda$ steps)" if k == 0 else None)
    if init != "start":
        ax.plot(*starts.T, "o", mfc="none", mec="k", ms=7, label="worker starts")
    else:
        sgd = data["sgd_center"]
        ax.plot(*sgd.T, "--", color=OKABE_ITO["orange"], lw=2.0, zorder=4,
                label="sequential SGD")
    ax.plot(*center.T, "-", color="k", lw=1.3, label=r"centre $\tilde\theta$")
    ax.plot(*center[0], "s", color="k", ms=6)
    ax.set_title(rf"{_LABELS[init]}, $\lambda$ = {lam}")
    ax.set_aspect("equal")


def _loss_panel(ax, data, lams, inits):
    colors = sequential(len(lams))
    ax.plot(data["sgd_step"], data["sgd_loss"], color=OKABE_ITO["grey"], lw=3, alpha=0.7,
            label="sequential SGD (1 worker)")
    for lam, c in zip(lams, colors, strict=True):
        for init, style in zip(inits, ("-", ":"), strict=True):
            key = f"{init}_{lam}"
            ax.plot(data[f"loss_step_{key}"], data[f"loss_{key}"], style, color=c,
                    label=rf"$\lambda$ = {lam}, {_LABELS[init].split()[0]}")
    ax.set_yscale("log")
    ax.set_xlabel(r"local steps per worker ($\lambda\,\times$ rounds)")
    ax.set_ylabel(rf"central loss $f(\tilde\theta)$, median over {len(data['seeds'])} seeds")
    ax.set_title("centre against sequential SGD\n"
                 r"(the curves of every $\lambda$ coincide)")
    ax.grid(alpha=0.3)
    legend_outside(ax)


def _spread_panel(ax, data, lams, inits):
    colors = sequential(len(lams))
    for lam, c in zip(lams, colors, strict=True):
        for init, style in zip(inits, ("-", ":"), strict=True):
            key = f"{init}_{lam}"
            r = data[f"ends_round_{key}"]
            ax.plot((r + 1) * lam, data[f"spread_{key}"], style, color=c, marker=".", ms=3,
                    label=rf"$\lambda$ = {lam}, {_LABELS[init].split()[0]}")
        ax.axhline(data["noise_spread"][lams.index(lam)], color=c, lw=0.8, ls="--")
    ax.plot([], [], "--", color="0.4", lw=0.8,
            label=r"noise only: $\eta\sigma\sqrt{\lambda}\sqrt{(n-1)/n}\sqrt{\pi/2}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("local steps per worker at the end of the round")
    ax.set_ylabel("spread of worker end points\n(mean distance to their mean)")
    ax.set_title("random starts spread only until the first averaging")
    ax.grid(alpha=0.3)
    legend_outside(ax)


def _title(data, what: str) -> str:
    return (f"Model averaging on Beale's function{what}: $n$ = {int(data['workers'])}, "
            rf"$\eta$ = {data['learning_rate']:g}, gradient noise $\sigma^2$ = "
            f"{data['noise']:g}")


@styled
@_files.writes("figure")
def plot_model_averaging_paths(data: dict, path=None, *, overwrite: bool = False):
    """Worker and central paths on Beale's contours for the smallest and largest λ (both
    initialisations), the centre's loss against local steps and the spread of the
    workers' end points."""
    path = checked_path(path, overwrite)  # checked before any drawing
    problem = get_problem("beale")
    lams = [int(v) for v in data["local_steps"]]
    inits = [str(v) for v in data["inits"]]
    shown = sorted({lams[0], lams[-1]}, key=lams.index)
    fig = plt.figure(figsize=(4.6 * len(shown) + 7.5, 9.6))
    grid = fig.add_gridspec(2, len(shown) + 1, width_ratios=[1] * len(shown) + [1.35])
    for i, init in enumerate(inits[:2]):
        for j, lam in enumerate(shown):
            ax = fig.add_subplot(grid[i, j])
            _panel(ax, data, init, lam, problem)
            if j == 0:
                legend_below(ax, ncol=2, gap=0.13)
    _loss_panel(fig.add_subplot(grid[0, -1]), data, lams, inits)
    _spread_panel(fig.add_subplot(grid[1, -1]), data, lams, inits)
    return finish(fig, path, _title(data, ": identical against random initialisation"),
                  overwrite=overwrite)


@styled
@_files.writes("figure")
def plot_model_averaging_paths_detail(data: dict, path=None, *, overwrite: bool = False):
    """The paths of the λ between the smallest and the largest."""
    path = checked_path(path, overwrite)  # checked before any drawing
    problem = get_problem("beale")
    lams = [int(v) for v in data["local_steps"]]
    inits = [str(v) for v in data["inits"]]
    rest = lams[1:-1] or lams
    fig, axes = plt.subplots(len(inits), len(rest), figsize=(4.6 * len(rest), 5.5 * len(inits)),
                             squeeze=False)
    for i, init in enumerate(inits):
        for j, lam in enumerate(rest):
            _panel(axes[i, j], data, init, lam, problem)
    # one legend for both rows, under the figure
    handles, labels = [], []
    for ax in axes[:, 0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="lower center", ncol=3, bbox_to_anchor=(0.5, 0.0))
    what = r", $\lambda \in$ {" + ", ".join(str(lam) for lam in rest) + "}"
    return finish(fig, path, _title(data, what), rect=(0, 0.06, 1, 0.98), overwrite=overwrite)
