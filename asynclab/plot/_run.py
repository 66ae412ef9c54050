"""A one-page picture of one run."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._panels import draw_loss, draw_staleness  # noqa: E402
from ._surface import draw_contours  # noqa: E402


def plot_run(result, problem, path=None, *, title: str | None = None):
    """Loss against simulated time, the staleness histogram and, for 2-D problems, paths.

    Args:
      result: an :class:`asynclab.engine.Result`.
      problem: the problem it was run on.
      path: where to write the PNG (None: do not write).
      title: the figure title (default: built from the result's config).

    Returns:
      The matplotlib figure.
    """
    config = result.config
    two_d = result.center_path is not None and problem.dim == 2 and problem.domain is not None
    fig, axes = plt.subplots(1, 3 if two_d else 2, figsize=(15 if two_d else 10, 4.2))
    ax = axes[0]
    draw_loss(ax, result, against="time")
    ax.set_title("central loss")
    ax = axes[1]
    draw_staleness(ax, result)
    ax.set_title("staleness")
    if two_d:
        ax = axes[2]
        draw_contours(ax, problem)
        path_ = result.center_path[0]
        ax.plot(path_[:, 0], path_[:, 1], "-", color="tab:red", lw=1.5, label="centre (seed 0)")
        ax.plot(*path_[0], "o", color="tab:red")
        ax.legend(loc="lower left")
        ax.set_title("central variable")
    if title is None:
        hp = config.get("hyperparameters", {})
        title = (f"{config.get('rule', '?')} on {config.get('problem', '?')}: "
                 f"n = {config.get('workers', '?')}, λ = {hp.get('local_steps', 1)}, "
                 f"η = {hp.get('learning_rate', '?')}, σ² = {config.get('noise', 0)}")
    fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
