"""Timelines of a run: what every worker did when, and its commits coloured by staleness."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .._errors import ConfigError  # noqa: E402
from ..cluster import KINDS, RoundTrace, Trace, slow_workers  # noqa: E402
from ._common import finish  # noqa: E402
from ._style import OKABE_ITO, PANEL_HEIGHT, PANEL_WIDTH, legend_below, styled  # noqa: E402

#: The colour of each interval kind (:data:`asynclab.cluster.KINDS`).
KIND_COLORS = {"compute": OKABE_ITO["sky"], "communicate": OKABE_ITO["orange"],
               "wait": "#DDDDDD", "failed": OKABE_ITO["black"]}
#: A compute interval holding a scheduled straggler delay.
STRAGGLER_COLOR = OKABE_ITO["vermillion"]
#: The mark of a worker that missed a semi-synchronous round.
MISSED_COLOR = OKABE_ITO["vermillion"]
#: Height of a worker's row of intervals (rows are 1 apart).
_ROW = 0.64
#: The staleness colour scale ends at this quantile (a straggler's rare large τ would
#: otherwise wash out the colours of every other commit).
_STALENESS_QUANTILE = 0.995


class _Schedule:
    """What a timeline draws, from a Trace, a RoundTrace or a Result (seed 0's)."""

    def __init__(self, source):
        self.activity = None
        self.group_size = 1
        self.counted = getattr(source, "counted", None)  # semi-synchronous rounds
        if isinstance(source, Trace | RoundTrace):
            self.activity = source.activity
            self.workers = int(source.n_workers)
            self.synchronous = isinstance(source, RoundTrace)
            self.times = np.asarray(source.time, np.float64)
            if self.synchronous:
                self.who = np.full(self.times.shape, -1, np.int32)
                self.staleness = np.zeros(self.times.shape, np.int32)
            else:
                self.who = np.asarray(source.worker)
                self.staleness = np.asarray(source.staleness)
                self.group_size = int(source.group_size)
        elif hasattr(source, "trace_index") and hasattr(source, "staleness"):
            index = source.trace_index[0]
            keep = source.staleness[index] >= 0  # not the padding of a shorter trace
            self.times = source.time[index][keep]
            self.who = source.worker[index][keep]
            self.staleness = source.staleness[index][keep]
            self.synchronous = bool(self.who.size and self.who.min() < 0)
            config = getattr(source, "config", {}) or {}
            groups = config.get("hyperparameters", {}).get("group_size", 1) or 1
            workers = config.get("workers")
            self.workers = (int(workers) // int(groups) if workers and not self.synchronous
                            else int(workers or (self.who.max() + 1 if self.who.size else 1)))
        else:
            raise ConfigError(f"a timeline draws a Trace, a RoundTrace or a Result, got "
                              f"{type(source).__name__}")
        self.slow = [] if self.synchronous else slow_workers(self.who, self.workers)

    @property
    def end(self) -> float:
        return float(self.times[-1]) if self.times.size else 0.0


def _rectangles(start, end, row) -> np.ndarray:
    """``(I, 4, 2)`` corners of bars from ``start`` to ``end`` on rows ``row``."""
    low, high = row - _ROW / 2, row + _ROW / 2
    return np.stack([np.stack([start, low], -1), np.stack([end, low], -1),
                     np.stack([end, high], -1), np.stack([start, high], -1)], 1)


def _kind_handles(a) -> list:
    """Legend entries for the interval kinds present in activity ``a`` (None: none)."""
    if a is None or not a.n_intervals:
        return []
    straggling = a.delay > 0
    handles = [Patch(color=KIND_COLORS[kind], label=kind) for code, kind in enumerate(KINDS)
               if ((a.kind == code) & ~straggling).any()]
    if straggling.any():
        handles.append(Patch(facecolor=STRAGGLER_COLOR, edgecolor="white", hatch="////",
                             label="compute (straggler)"))
    return handles


def draw_timeline(ax, source, *, colorbar: bool = False, legend: bool = True):
    """What every worker did when, against simulated time.

    With a trace simulated with ``activity=True`` (``simulate_async``, ``simulate_sync``,
    ``asynclab.engine.schedule``) every worker's row shows its intervals: computing,
    communicating, waiting, failed (:data:`asynclab.cluster.KINDS`, one
    ``PolyCollection`` per kind present, labelled with it), and compute intervals that
    hold a scheduled straggler's delay in vermillion, hatched. Every commit is a mark
    on its worker's row coloured by its staleness (viridis; the scale ends at the 99.5 %
    quantile); each synchronous round's aggregate marks every worker, in black, except
    (semi-synchronous rounds) the workers that did not count in it: a vermillion ×,
    labelled "missed the round". Slow workers (:func:`asynclab.cluster.slow_workers`)
    have their row label in vermillion.

    Args:
      ax: the axes to draw into.
      source: a :class:`~asynclab.cluster.Trace` or
        :class:`~asynclab.cluster.RoundTrace` (with or without its activity), or a
        :class:`~asynclab.engine.Result` (its first trace's commits only).
      colorbar: add a staleness colour bar beside the axes (asynchronous schedules).
      legend: a legend of the interval kinds below the axes.

    Returns:
      The commit marks (a scatter ``PathCollection``, its offsets ``(time, worker)``).
    """
    s = _Schedule(source)
    a = s.activity
    handles = _kind_handles(a)
    if a is not None and a.n_intervals:
        straggling = a.delay > 0
        for code, kind in enumerate(KINDS):
            chosen = (a.kind == code) & ~straggling
            if not chosen.any():
                continue
            ax.add_collection(PolyCollection(
                _rectangles(a.start[chosen], a.end[chosen], a.worker[chosen]),
                facecolors=KIND_COLORS[kind], edgecolors="none", label=kind, zorder=1))
        if straggling.any():
            ax.add_collection(PolyCollection(
                _rectangles(a.start[straggling], a.end[straggling], a.worker[straggling]),
                facecolors=STRAGGLER_COLOR, edgecolors="white", hatch="////", lw=0.0,
                label="straggler", zorder=1))
    if s.synchronous:
        times = np.repeat(s.times, s.workers)
        who = np.tile(np.arange(s.workers), s.times.size)
        counted = (np.ones(times.shape, bool) if s.counted is None
                   else np.asarray(s.counted, bool).reshape(-1))
        marks = ax.scatter(times[counted], who[counted], c="k", marker="|", s=110,
                           linewidths=1.2, zorder=3, label="aggregate")
        if not counted.all():
            missed = ax.scatter(times[~counted], who[~counted], c=MISSED_COLOR, marker="x",
                                s=30, linewidths=1.2, zorder=3, label="missed the round")
            handles.append(missed)
    else:
        top = float(np.quantile(s.staleness, _STALENESS_QUANTILE)) if s.staleness.size else 1
        norm = Normalize(0, max(top, 1.0))
        marks = ax.scatter(s.times, s.who, c=s.staleness, cmap="viridis", norm=norm,
                           marker="|", s=110, linewidths=1.2, zorder=3, label="commit")
        if colorbar:
            bar = ax.figure.colorbar(marks, ax=ax, pad=0.01, fraction=0.04,
                                     extend="max" if s.staleness.size and
                                     s.staleness.max() > top else "neither")
            bar.set_label("staleness τ of the commit")
    ax.set_xlim(0, max(s.end, 1e-9) * 1.01)
    ax.set_ylim(s.workers - 0.5, -0.5)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if s.slow and s.workers <= 32:
        ax.set_yticks(range(s.workers))
        for label in ax.get_yticklabels():
            if int(round(label.get_position()[1])) in s.slow:
                label.set_color(STRAGGLER_COLOR)
                label.set_fontweight("bold")
    unit = "group" if s.group_size > 1 else "worker"
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel(unit + (" (slow in red)" if s.slow else ""))
    what = "rounds" if s.synchronous else "commits"
    ax.set_title(("activity and " if a is not None else "") + f"{what} of each {unit}")
    if legend and handles:
        # a fixed distance under the axes (below the x label) whatever the panel's height:
        # a short timeline of few workers is only an inch or two high
        legend_below(ax, handles=handles, ncol=min(len(handles), 5), gap=0.2)
    return marks


def _draw_shares(ax, activity, workers: int, end: float) -> None:
    """Per worker, the share of the run spent in each kind (stacked horizontal bars)."""
    seconds = activity.seconds() / max(end, 1e-300)
    left = np.zeros(workers)
    for code, kind in enumerate(KINDS):
        if seconds[:, code].any():
            ax.barh(np.arange(workers), seconds[:, code], left=left, height=_ROW,
                    color=KIND_COLORS[kind], label=kind)
            left += seconds[:, code]
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the run")
    ax.set_title("time per kind")
    ax.tick_params(labelleft=False)


@styled
@_files.writes("figure")
def timeline(trace, path=None, *, title: str | None = None, overwrite: bool = False):
    """The timeline of a simulated run: :func:`draw_timeline` of ``trace``, and (when the
    trace holds its activity) each worker's share of the run per kind.

    Args:
      trace: a :class:`~asynclab.cluster.Trace` or :class:`~asynclab.cluster.RoundTrace`;
        simulate it with ``activity=True`` to see the intervals, not only the commits.
      path: where to write the picture (PNG, PDF, SVG, ...; None: do not write).
      overwrite: replace an existing file at ``path`` (only a picture of the
        format its name says); without it an existing file is a ConfigError, before
        anything is drawn.
      title: the figure title (default: what the trace is).

    Returns:
      The matplotlib figure (closed; saved when ``path`` is given).

    Example:
      >>> cluster = Cluster(4, ComputeTime("exponential", mean=1.0), server_time=0.2)
      >>> trace = simulate_async(cluster, commits=40, activity=True)
      >>> timeline(trace, "timeline.png")
    """
    path = checked_path(path, overwrite)  # checked before any drawing
    if not isinstance(trace, Trace | RoundTrace):
        raise ConfigError(f"timeline draws a Trace or a RoundTrace, got "
                          f"{type(trace).__name__}")
    s = _Schedule(trace)
    height = min(max(2.2 + 0.28 * s.workers, PANEL_HEIGHT * 0.8), 3 * PANEL_HEIGHT)
    if trace.activity is not None:
        fig, (ax, side) = plt.subplots(1, 2, figsize=(2.2 * PANEL_WIDTH, height),
                                       sharey=True, gridspec_kw={"width_ratios": [4, 1]})
    else:
        fig, ax = plt.subplots(figsize=(1.8 * PANEL_WIDTH, height))
        side = None
    draw_timeline(ax, trace, colorbar=not s.synchronous, legend=False)
    handles = _kind_handles(trace.activity) + [
        c for c in ax.collections if c.get_label() == "missed the round"]
    rect = None
    if handles:  # under the whole figure, outside tight_layout's reach: never over a label
        fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5),
                   bbox_to_anchor=(0.5, 0.0), frameon=False)
        rect = (0, 0.42 / height, 1, 1)
    if side is not None:
        _draw_shares(side, trace.activity, s.workers, s.end)
    if title is None:
        kind = "synchronous" if s.synchronous else "asynchronous"
        unit = "groups" if s.group_size > 1 else "workers"
        what = "rounds" if s.synchronous else "commits"
        title = (f"{kind} cluster: {s.workers} {unit}, $\\lambda$ = {trace.local_steps}, "
                 f"{trace.n_events} {what} in {s.end:.4g} s")
    return finish(fig, path, title, rect=rect, overwrite=overwrite)
