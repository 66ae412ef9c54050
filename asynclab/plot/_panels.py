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


#: The staleness axis ends at this quantile of τ; rarer, larger τ are marked, not drawn.
STALENESS_QUANTILE = 0.995


def clip_staleness(ax, result, quantile: float | None = None):
    """End the staleness axis at the ``quantile`` of τ (default ``STALENESS_QUANTILE``,
    0.995: a straggler's one commit at τ ≈ 100 would otherwise squeeze the histogram into
    a corner) and say at the right edge how many commits lie beyond it; returns that text
    artist or None."""
    quantile = STALENESS_QUANTILE if quantile is None else quantile
    hist = result.staleness_histogram()
    if hist.sum() == 0:
        return None
    cumulative = np.cumsum(hist) / hist.sum()
    edge = int(np.searchsorted(cumulative, quantile)) + 1
    beyond = int(hist[edge + 1:].sum())
    if beyond == 0:
        return None
    ax.set_xlim(-0.5, edge + 0.5)
    return ax.annotate(f"{beyond} commit(s) with τ > {edge}\n(largest τ = {hist.size - 1})",
                       xy=(1, 0.5), xycoords="axes fraction", xytext=(-4, 0),
                       textcoords="offset points", ha="right", va="center", fontsize=8,
                       color="tab:red")
