"""The movers figure: who moved the centre on a heterogeneous cluster, per rule."""

from __future__ import annotations

import numpy as np

from .. import _files
from ._common import checked_path, finish
from ._shares import draw_center_shares
from ._style import CYCLE, RULE_COLORS, RULE_NAMES, legend_below, panels, styled, tex


@styled
@_files.writes("figure")
def plot_movers(data: dict, path=None, title: str | None = None, *, overwrite: bool = False):
    """Left: each worker's share of the centre's movement per rule, and its share of the
    commits. Right: the ratio of the two against the worker's compute-time factor (1:
    its commits moved the centre as much as anyone's; below 1: a rule damped them)."""
    path = checked_path(path, overwrite)  # checked before any drawing
    labels = [str(label) for label in data["labels"]]
    colors = [RULE_COLORS.get(label, CYCLE[i % len(CYCLE)]) for i, label in enumerate(labels)]
    labels = [RULE_NAMES.get(label, label) for label in labels]
    shares = np.asarray(data["center_share"], np.float64)
    commit = np.asarray(data["commit_share"], np.float64)
    slowdown = np.asarray(data["slowdown"])
    seeds = shares.shape[1]
    fig, (left, right) = panels(2, width=5.6, height=4.2)
    draw_center_shares(left, shares, labels, commit_share=commit, slowdown=slowdown,
                       colors=colors)
    left.set_title(f"share per worker (mean of {seeds} seeds, ± 1 sd)")
    legend_below(left, ncol=3, gap=0.27)
    ratio = shares / commit[None]  # per seed: its own schedule's commits
    for r, label in enumerate(labels):
        right.plot(slowdown, np.nanmean(ratio[r], axis=0), "o-", color=colors[r], label=label,
                   ms=4)
    right.axhline(1.0, color="0.5", lw=0.8, ls=(0, (3, 2)))
    right.set_xscale("log")
    ticks = [t for t in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
             if slowdown.min() / 1.5 <= t <= slowdown.max() * 1.5]
    right.set_xticks(ticks, [f"{t:g}" for t in ticks])
    right.minorticks_off()
    right.set_xlabel("worker's compute-time factor (mean 1)")
    right.set_ylabel("share of movement / share of commits")
    right.set_title("damping moves share to the fast workers")
    legend_below(right, ncol=2, gap=0.2)
    return finish(fig, path, None if title is None else tex(title), overwrite=overwrite)
