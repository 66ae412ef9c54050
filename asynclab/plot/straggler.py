"""Drawing the straggler study."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..problems import get_problem  # noqa: E402
from ..studies.straggler import DIVERGED, MINIMUM, VALLEY  # noqa: E402
from ._common import finish  # noqa: E402
from ._style import OKABE_ITO, legend_below, styled, tex  # noqa: E402
from ._surface import draw_contours  # noqa: E402

COLORS = tuple(OKABE_ITO[k] for k in ("vermillion", "blue", "green", "purple"))
DASHES = ("-", "-", "--", "-.")


def _paths_panel(ax, data, problem, config):
    draw_contours(ax, problem, levels=40)
    k = int(config.get("shown_seed", 0))
    i = int(data["straggler_commit"][k])
    for r, label in enumerate(data["labels"]):
        path = data["path"][r]
        ax.plot(path[:, 0], path[:, 1], DASHES[r], color=COLORS[r], lw=1.0, alpha=0.85,
                label=tex(label))
        ax.plot(*path[i], "o", color=COLORS[r], ms=7, mfc="none", mew=1.5)
    before, after = data["path"][0][i], data["path"][0][i + 1]
    ax.annotate("", xy=after, xytext=before,
                arrowprops={"arrowstyle": "->", "color": "k", "lw": 2})
    ax.annotate(rf"the straggler's commit ($\tau$ = {data['straggler_staleness'][k]}, "
                f"{data['straggler_time'][k]:.0f} s):\nDOWNPOUR's centre jumps "
                f"{data['jump'][0, k]:.2f}, ADAG's {data['jump'][1, k]:.3f}", xy=after,
                xytext=(0.45, 0.04), textcoords="axes fraction", fontsize=8,
                arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.7})
    start = data["path"][0][0]
    ax.annotate("first commits of the other workers\ncarry the start's gradient too "
                r"($\tau \leq n - 1$):" "\nDOWNPOUR's straight segments", xy=data["path"][0][3],
                xytext=(0.02, 0.3), textcoords="axes fraction", fontsize=8,
                arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.7})
    ax.plot(*start, "s", color="k", ms=8, label="start = where the straggler pulled")
    ax.plot([], [], "o", color="grey", mfc="none", label="centre at the straggler's commit")
    ax.set_xlim(-0.6, 3.6)
    ax.set_ylim(-1.1, 2.1)
    ax.set_title(f"central paths, seed {k} (same schedule and noise for every rule)")
    ax.legend(loc="upper right")


def _aligned_panel(ax, data):
    offset = data["aligned_offset"]
    for r, label in enumerate(data["labels"]):
        curve = np.nanmean(data["aligned_loss"][r], axis=0)
        ax.plot(offset, curve, DASHES[r], color=COLORS[r], lw=1.6,
                label=f"{tex(label)}: jump {np.mean(data['jump'][r]):.3g}, loss after "
                      f"{np.mean(data['loss_after'][r]):.2f}")
    ax.axvline(0, color="k", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xlabel("commits after the straggler's commit")
    seeds = data["jump"].shape[1]
    ax.set_ylabel(f"central loss (mean over {seeds} seeds)")
    ax.set_title("around the straggler's commit (each seed its own schedule)")
    ax.legend(loc="upper right")


def _convergence_panel(ax, data, config):
    commits = np.arange(data["mean_loss"].shape[1])
    for r, label in enumerate(data["labels"]):
        reached = int(data["commits_to_target"][r])
        text = f"loss {config.get('target', 0.1):g} after {reached} commits" if reached >= 0 \
            else "target not reached"
        ax.plot(commits, data["mean_loss"][r], color=COLORS[r], lw=1.0, alpha=0.85,
                label=f"{tex(label)} ({text}; final {np.mean(data['final_loss'][r]):.3f})")
    ax.axvspan(data["straggler_commit"].min(), data["straggler_commit"].max(), color="grey",
               alpha=0.3, label="straggler's commits")
    ax.set_yscale("log")
    ax.set_xlabel("commits")
    ax.set_ylabel(f"central loss (mean over {data['jump'].shape[1]} seeds)")
    ax.set_title(r"whole run: a small $\gamma$ damps ordinary commits too"
                 "\n(slower at first, lower noise floor)")
    legend_below(ax, ncol=1, gap=0.12)


def _basin_panel(ax, data, problem, config):
    draw_contours(ax, problem, levels=30)
    if "basin_starts" not in data:
        ax.set_title("basin scan skipped", fontsize=10)
        return
    starts = data["basin_starts"]
    none, strag = data["basin_downpour_none"], data["basin_downpour_straggler"]
    thrown = (none == MINIMUM) & (strag == VALLEY)
    rescued = (none == VALLEY) & (strag == MINIMUM)
    ax.plot(*starts[none == DIVERGED].T, ".", color="0.8", ms=2,
            label="start: DOWNPOUR diverges anyway")
    ax.plot(*starts[thrown].T, "v", color=COLORS[0], ms=6,
            label=f"straggler sends DOWNPOUR into the valley ({int(data['basin_thrown'])})")
    ax.plot(*starts[rescued].T, "^", color=COLORS[1], ms=6,
            label=f"… out of the valley to the minimum ({int(data['basin_rescued'])})")
    ax.plot([], [], " ", label=rf"ADAG $\gamma$ = {config.get('gammas', [0])[0]:g}: "
                                f"{int(data['basin_adag_thrown'])} / "
                                f"{int(data['basin_adag_rescued'])} such switches")
    if int(data.get("basin_example", -1)) >= 0:
        paths = data["basin_example_paths"]
        styles = [(COLORS[0], "-", "DOWNPOUR with straggler"),
                  ("k", ":", "DOWNPOUR without"),
                  (COLORS[1], "-", "ADAG with straggler")]
        for p, (color, ls, label) in zip(paths, styles, strict=True):
            ax.plot(p[:, 0], p[:, 1], ls=ls, color=color, lw=1.3, label=f"example: {label}")
        ax.plot(*paths[0][0], "s", color="k", ms=7,
                label=f"example start ({paths[0][0][0]:.2f}, {paths[0][0][1]:.2f}), "
                      rf"$\tau$ = {int(data['basin_example_staleness'])}")
    ax.set_title(f"does the straggler throw the centre into the other basin?\n"
                 rf"{starts.shape[0]} random starts, $\eta$ = "
                 f"{config.get('basin_learning_rate')}, one shared schedule, same noise with "
                 "and without it")
    legend_below(ax, ncol=2, gap=0.12)


@styled
@_files.writes("figure")
def plot_straggler(data: dict, path=None, *, config: dict | None = None,
                   title: str | None = None, overwrite: bool = False):
    """Paths on Beale's contours, loss around the straggler's commit, the whole run, basins.

    Args:
      data: the output of :func:`asynclab.studies.straggler.run`.
      path: where to write the PNG (None: do not write).
      overwrite: replace an existing file at ``path`` (only a picture of the
        format its name says); without it an existing file is a ConfigError, before
        anything is drawn.
      config: the study's configuration as a dict (for labels).
      title: the figure title.
    """
    path = checked_path(path, overwrite)  # checked before any drawing
    config = dict(config or {})
    problem = get_problem("beale")
    fig, axes = plt.subplots(2, 2, figsize=(14, 13))
    _paths_panel(axes[0, 0], data, problem, config)
    _aligned_panel(axes[0, 1], data)
    _convergence_panel(axes[1, 0], data, config)
    _basin_panel(axes[1, 1], data, problem, config)
    return finish(fig, path, title, overwrite=overwrite)
