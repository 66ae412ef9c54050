"""Single panels of a run's picture, shared by :func:`plot_run` and the explorer."""

from __future__ import annotations

import numpy as np


def draw_loss(ax, result, *, against: str = "time"):
    """The central loss of every seed against simulated time or against commits.

    Returns the list of lines, one per seed (in seed order).
    """
    if against == "time":
        x = result.record_time[result.trace_index]
        ax.set_xlabel("simulated time (s)")
    elif against == "commits":
        x = np.broadcast_to(result.record_events, result.loss.shape)
        ax.set_xlabel("commits (server updates)")
    else:
        raise ValueError(f"against must be 'time' or 'commits', got {against!r}")
    alpha = 0.8 if result.n_seeds < 10 else 0.2
    lines = [ax.plot(x[s], result.loss[s], lw=1, alpha=alpha)[0] for s in range(result.n_seeds)]
    ax.set_yscale("log")
    ax.set_ylabel("central loss")
    return lines


def draw_staleness(ax, result):
    """The staleness histogram (fraction of commits per τ) with its mean marked.

    One filled step artist (bars of width 1 centred on each τ): a straggler's long tail
    of rare τ values stays cheap to draw. Returns it.
    """
    hist = result.staleness_histogram()
    bars = ax.stairs(hist / max(hist.sum(), 1), np.arange(hist.size + 1) - 0.5, fill=True,
                     color="tab:blue")
    mean = np.average(np.arange(hist.size), weights=hist) if hist.sum() else 0.0
    ax.axvline(mean, color="k", ls="--", label=f"mean τ = {mean:.2f}")
    ax.set_xlabel("staleness τ (commits)")
    ax.set_ylabel("fraction of commits")
    ax.legend()
    return bars
