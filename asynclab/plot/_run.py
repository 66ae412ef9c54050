"""A one-page picture of one run."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..cluster import slow_workers  # noqa: E402
from ._panels import clip_staleness, draw_loss, draw_staleness  # noqa: E402
from ._surface import draw_contours  # noqa: E402


def stragglers(result, share: float = 0.5) -> list[int]:
    """The workers whose commits number less than ``share`` of the median worker's (for
    the first trace): the stragglers of an asynchronous run (none for synchronous
    rounds, where every worker counts in every round)."""
    worker = np.asarray(result.worker[0])
    if result.config.get("synchronous") or worker.size == 0 or worker.min() < 0:
        return []
    return slow_workers(worker, int(result.config.get("workers") or 0), share)


@_files.writes("figure")
def plot_run(result, problem, path=None, *, title: str | None = None, overwrite: bool = False):
    """Loss against simulated time, validation accuracy for a net, the staleness
    histogram and, for 2-D problems, the centre's path.

    The loss panel marks the commits of stragglers (workers with less than half the
    median worker's commits; :func:`stragglers`) along its foot, and the simulated time
    at which a run diverged.

    Args:
      result: an :class:`asynclab.Result` (a run, not a sweep).
      problem: the problem it was run on.
      path: where to write the PNG (None: do not write).
      overwrite: replace an existing file at ``path`` (only a picture of the
        format its name says); without it an existing file is a ConfigError, before
        anything is drawn.
      title: the figure title (default: built from the result's config).

    Returns:
      The matplotlib figure.
    """
    path = checked_path(path, overwrite)  # checked before any drawing
    config = result.config
    two_d = result.center_path is not None and problem.dim == 2 and problem.domain is not None
    accuracy = bool(result.metrics) and "accuracy" in result.metrics
    panels = 2 + two_d + accuracy
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 4.0), layout="constrained")
    ax = axes[0]
    draw_loss(ax, result, against="time")
    ax.set_title("central training loss")
    _mark_stragglers_and_divergence(ax, result)
    axes_left = list(axes[1:])
    if accuracy:
        ax = axes_left.pop(0)
        times = result.record_time[result.trace_index]
        alpha = 0.8 if result.n_seeds < 10 else 0.2
        for s in range(result.n_seeds):
            ax.plot(times[s], result.metrics["accuracy"][s], lw=1, alpha=alpha)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("validation accuracy")
        ax.set_title("validation accuracy of the centre")
    ax = axes_left.pop(0)
    draw_staleness(ax, result)
    clip_staleness(ax, result)  # a straggler's rare large τ marked, not drawn
    ax.set_title("staleness")
    if two_d:
        ax = axes_left.pop(0)
        draw_contours(ax, problem)
        path_ = result.center_path[0]
        ax.plot(path_[:, 0], path_[:, 1], "-", color="tab:red", lw=1.5, label="centre (seed 0)")
        ax.plot(*path_[0], "o", color="tab:red")
        ax.legend(loc="lower left")
        ax.set_title("central variable")
    if title is None:
        hp = config.get("hyperparameters", {})
        noise = config.get("noise") or 0
        seeds = f", {result.n_seeds} seeds" if result.n_seeds > 1 else ""
        title = (f"{config.get('rule', '?')} on {config.get('problem', '?')}: "
                 f"$n = {config.get('workers', '?')}$, "
                 f"$\\lambda = {hp.get('local_steps', 1)}$, "
                 f"$\\eta = {hp.get('learning_rate', '?')}$"
                 + (f", $\\sigma^2 = {noise:g}$" if noise else "") + seeds)
    fig.suptitle(title)
    if path is not None:
        _files.save_figure(fig, path, "path", overwrite=overwrite, dpi=110)
    return fig


def _mark_stragglers_and_divergence(ax, result) -> None:
    slow = stragglers(result)
    if slow:
        worker, time = np.asarray(result.worker[0]), np.asarray(result.time[0])
        at = time[np.isin(worker, slow)]
        names = ", ".join(map(str, slow[:4])) + (" …" if len(slow) > 4 else "")
        ax.plot(at, np.zeros_like(at), "|", color="0.3", ms=12, mew=1.2,
                transform=ax.get_xaxis_transform(), clip_on=False,
                label=f"commits of straggler{'s' if len(slow) > 1 else ''} {names}")
    gone = np.flatnonzero(result.diverged)
    if gone.size:
        times = result.time[result.trace_index[gone], result.diverged_at[gone]]
        for i, t in enumerate(times):
            ax.axvline(t, color="tab:red", ls=":", lw=1.2,
                       label=f"diverged ({gone.size} of {result.n_seeds})" if i == 0 else None)
    if slow or gone.size:
        ax.legend(loc="upper right", fontsize="small")
