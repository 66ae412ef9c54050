"""Who moved the centre: bars of each worker's share of the centre's movement."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _files
from .._errors import ConfigError
from ._common import checked_path


def draw_center_shares(ax, shares, labels: Sequence[str], *, commit_share=None,
                       slowdown=None, colors=None):
    """Grouped bars on ``ax``: for each worker, one bar per rule, the mean over the seeds
    of its share of the centre's movement, with the seeds' standard deviation.

    Args:
      ax: the axes.
      shares: ``(rules, seeds, workers)`` (``Result.center_share`` of each rule); runs
        whose centre never moved (NaN) are left out of the means.
      labels: one label per rule.
      commit_share: ``(workers,)`` or ``(seeds, workers)``: each worker's share of the
        commits, drawn as a black mark over each group (what every rule would give if
        each commit moved the centre equally far), or None.
      slowdown: ``(workers,)`` the workers' compute-time factors, written under the
        workers' numbers, or None.
      colors: one colour per rule (default: the lab's cycle, its colour of a rule where a
        label is a rule's name).
    """
    from ._style import CYCLE, RULE_COLORS

    shares = np.asarray(shares, np.float64)
    rules, _, workers = shares.shape
    if colors is None:
        colors = [RULE_COLORS.get(str(label), CYCLE[i % len(CYCLE)])
                  for i, label in enumerate(labels)]
    width = 0.8 / rules
    x = np.arange(workers)
    for r in range(rules):
        ax.bar(x - 0.4 + width * (r + 0.5), np.nanmean(shares[r], axis=0), width,
               yerr=np.nanstd(shares[r], axis=0), color=colors[r], label=str(labels[r]),
               error_kw={"lw": 0.8, "capsize": 1.5}, alpha=0.9)
    if commit_share is not None:
        commit = np.asarray(commit_share, np.float64)
        commit = commit.mean(axis=0) if commit.ndim == 2 else commit
        ax.plot(x, commit, "_", color="k", ms=22, mew=2, label="share of the commits")
    ticks = [str(k) for k in x]
    if slowdown is not None:
        ticks = [f"{k}\n×{s:.2f}" for k, s in zip(x, slowdown, strict=True)]
    ax.set_xticks(x, ticks)
    ax.set_xlabel("worker (compute-time factor)" if slowdown is not None else "worker")
    ax.set_ylabel("share of the centre's movement")
    ax.set_ylim(0, None)
    return ax


@_files.writes("figure")
def plot_center_shares(results: Sequence, labels: Sequence[str] | None = None, *, ax=None,
                       path=None, overwrite: bool = False):
    """Who moved the centre, for several results on one cluster: per worker, one bar per
    result (the mean over its seeds of ``Result.center_share``, with the seeds' standard
    deviation) and a black mark at the worker's share of the commits.

    Args:
      results: results of one cluster (the same number of workers), e.g. one per rule.
      labels: one per result (default: each result's rule).
      ax: an axes to draw on (default: a new figure), as for :func:`asynclab.plot.compare`.
      path: where to write the PNG (None: do not write).
      overwrite: whether an existing file at ``path`` is replaced (without it, a
        ConfigError before anything is drawn).

    Returns:
      The matplotlib axes.

    Example:
      >>> cluster = Cluster(4, time_scale=(1.0, 1.0, 1.0, 4.0))
      >>> results = [asynclab.run("beale", r, cluster=cluster, commits=1000, seeds=[0, 1])
      ...            for r in ("downpour", "dynsgd")]
      >>> plot_center_shares(results, path="shares.png")
    """
    path = checked_path(path, overwrite)  # checked before any drawing
    results = list(results)
    if not results:
        raise ConfigError("plot_center_shares needs at least one result")
    if any(r.center_share is None for r in results):
        raise ConfigError("a result has no center_share (made by the threads backend, "
                          "or saved before it existed)")
    if any(r.grid is not None for r in results):
        raise ConfigError("plot_center_shares draws runs, not sweeps")
    workers = {r.center_share.shape[-1] for r in results}
    if len(workers) != 1:
        raise ConfigError(f"results of one cluster, please: worker counts {sorted(workers)}")
    if labels is None:
        labels = [str(r.config.get("rule", "?")) for r in results]
    if len(labels) != len(results):
        raise ConfigError(f"labels: {len(labels)} label(s) for {len(results)} result(s)")
    seeds = max(r.n_seeds for r in results)
    shares = np.full((len(results), seeds, workers.pop()), np.nan)
    for i, r in enumerate(results):
        shares[i, :r.n_seeds] = r.center_share
    commit = None
    first = results[0]
    if not first.config.get("synchronous") and first.config.get("rule") != "mixed":
        n = shares.shape[-1]
        worker = first.worker[first.staleness >= 0]
        commit = np.bincount(worker, minlength=n) / worker.size

    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    draw_center_shares(ax, shares, labels, commit_share=commit)
    ax.legend(loc="best", fontsize="small")
    ax.set_title(f"who moved the centre (mean over {seeds} seed(s), bars: ± 1 sd)",
                 fontsize="medium")
    if path is not None:
        _files.save_figure(ax.figure, path, "path", overwrite=overwrite, dpi=150)
    return ax
