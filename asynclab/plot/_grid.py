"""A study's table in a grid of panels: the mean over seeds of one column against another,
with its confidence interval, one colour per ``hue``, one panel per ``col`` × ``row``."""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from .. import _files, _tables  # noqa: E402
from .._errors import ConfigError  # noqa: E402
from ._common import checked_path, finish  # noqa: E402
from ._style import (  # noqa: E402
    CYCLE,
    MAX_COLUMNS,
    PANEL_HEIGHT,
    legend_outside,
    plain_log_ticks,
    styled,
)

#: Inches per panel of a grid (narrower than a figure's panel: grids have several), and
#: for the legend beside them.
GRID_WIDTH, LEGEND_WIDTH = 4.2, 2.2
#: Characters of the title per inch of figure width (longer titles wrap).
CAPTION_CHARACTERS = 11


@_files.writes("figure")
@styled
def grid(table, *, x: str, y: str, hue: str | None = None, col: str | None = None,
         row: str | None = None, confidence: float = 0.95, logx: bool | None = None,
         logy: bool | None = None, path=None, overwrite: bool = False):
    """Draw column ``y`` of a study's table against ``x``: in each panel the mean over
    the seeds, one line per value of ``hue``, and its confidence interval, a Student t
    interval of the mean (95 % by default; :func:`asynclab.studies.summary`).

    A numeric ``x`` (a hyperparameter, ``event``, ``time``) draws lines through the means
    with the interval as a band; any other (``cluster``, ``rule``) draws points with the
    interval as error bars. Runs whose ``y`` is not finite (a diverged run's loss, a
    target never reached) are left out of the means, and the title says how many.

    Args:
      table: a table of :func:`asynclab.study` (one row per run), or of records
        (``study(..., records=True)``, :meth:`asynclab.Result.to_frame`) with ``x`` one
        of ``record``, ``event`` or ``time`` (the means over the seeds at equal values).
      x: the column along the x axis.
      y: the column whose mean is drawn.
      hue: the column whose values are the lines (default: ``rule`` when the table has
        one and it is not ``x``, ``col`` or ``row``).
      col: the column whose values are the panels' columns (without ``row``, wrapped
        after three panels a row).
      row: the column whose values are the panels' rows.
      confidence: the interval's level, in (0, 1).
      logx: a logarithmic x axis (default: for numeric values, all positive, spanning at
        least a factor 10).
      logy: a logarithmic y axis (default: for means and bounds, all positive, spanning at
        least a factor 100).
      path: where to write the PNG (None: do not write).
      overwrite: replace an existing file at ``path`` (only a picture of the format its
        name says); without it an existing file is a ConfigError, before anything is
        drawn.

    Returns:
      The matplotlib figure.

    Every other configuration column (``rule``, ``cluster``, a hyperparameter) must be
    the same within a point, which must hold one row per seed; else a ConfigError says
    which column to give as ``hue``, ``col`` or ``row`` (or to select first).
    """
    from ..studies import key_columns, summary

    path = checked_path(path, overwrite)  # checked before any drawing
    pd = _tables.pandas()
    if not _tables.is_table(table):
        raise ConfigError(f"grid draws a pandas DataFrame (asynclab.study), got "
                          f"{type(table).__name__}")
    if hue is None and "rule" in table.columns and "rule" not in (x, col, row):
        hue = "rule"
    roles = {"x": x, "y": y, "hue": hue, "col": col, "row": row}
    for role, name in roles.items():
        if name is not None and name not in table.columns:
            raise ConfigError(f"{role}: the table has no column {name!r}; its columns: "
                              f"{', '.join(map(str, table.columns))}")
    given = [name for name in (row, col, hue, x) if name is not None]
    if len(set(given)) != len(given) or y in given:
        raise ConfigError(f"x, y, hue, col and row must be different columns, got {roles}")
    if "seed" in table.columns and table.duplicated(subset=[*given, "seed"]).any():
        varying = [c for c in [*key_columns(table), "record"]
                   if c in table.columns and c not in given and table[c].nunique() > 1]
        raise ConfigError(f"grid: several rows per seed at one point: "
                          f"{', '.join(varying) or 'some column'} varies; give it as hue, "
                          "col or row, or select rows first (table[table.cluster == ...])")
    means = summary(table, y, by=given, confidence=confidence)
    rows = _values(table, row)
    cols = _values(table, col)
    hues = _values(table, hue)
    colors = {value: CYCLE[i % len(CYCLE)] for i, value in enumerate(hues)}
    numeric = pd.api.types.is_numeric_dtype(table[x]) and not pd.api.types.is_bool_dtype(
        table[x])
    xs = _values(table, x)
    # the panels: rows × columns, or the values of col alone wrapped after MAX_COLUMNS
    facets = [(r, c) for r in rows for c in cols]
    n_columns = len(cols) if row is not None else min(len(cols), MAX_COLUMNS)
    n_rows = -(-len(facets) // n_columns)
    legend = LEGEND_WIDTH if hue is not None else 0.0
    fig, grid_axes = plt.subplots(n_rows, n_columns, squeeze=False, sharex=True, sharey=True,
                                  figsize=(GRID_WIDTH * n_columns + legend,
                                           PANEL_HEIGHT * n_rows))
    axes = list(grid_axes.ravel()[:len(facets)])
    for ax in grid_axes.ravel()[len(facets):]:
        ax.remove()
    for index, (ax, (row_value, col_value)) in enumerate(zip(axes, facets, strict=True)):
        panel = means
        for name, value in ((row, row_value), (col, col_value)):
            if name is not None:
                panel = panel[panel[name] == value]
        for k, hue_value in enumerate(hues):
            line = panel if hue is None else panel[panel[hue] == hue_value]
            if line.empty:
                continue
            if numeric:
                _draw_line(ax, line.sort_values(x), x, colors[hue_value])
            else:
                _draw_points(ax, line, x, xs, k, len(hues), colors[hue_value])
        titles = [f"{name} = {value}" for name, value in ((row, row_value),
                                                         (col, col_value)) if name]
        if titles:
            ax.set_title(", ".join(titles))
        if index + n_columns >= len(facets):  # the lowest panel of its column
            ax.set_xlabel(x.replace("_", " "))
            ax.xaxis.set_tick_params(labelbottom=True)
        if index % n_columns == 0:
            ax.set_ylabel(y.replace("_", " "))
        if not numeric:
            ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    finite = means[["mean", "low", "high"]].to_numpy(np.float64)
    positive = finite[np.isfinite(finite)]
    if logy is None:
        logy = positive.size > 0 and positive.min() > 0 and positive.max() >= 100 * positive.min()
    if logx is None and numeric:
        values = np.asarray(xs, np.float64)
        logx = bool(values.min() > 0 and values.max() >= 10 * values.min())
    for ax in axes:
        if logy:
            ax.set_yscale("log")
        if logx and numeric:
            ax.set_xscale("log")
            plain_log_ticks(ax, "x")
    if hue is not None:
        handles = [Line2D([], [], color=colors[h], marker="o", ms=4, label=str(h))
                   for h in hues]
        legend_outside(axes[n_columns - 1], handles=handles, title=hue.replace("_", " "))
    width = int(CAPTION_CHARACTERS * fig.get_figwidth())
    parts = _caption(means, y, confidence)
    caption = "; ".join(parts)
    if len(caption) > width:  # one line per part
        caption = "\n".join(textwrap.fill(part, width) for part in parts)
    return finish(fig, path, title=caption, overwrite=overwrite)


def _values(table, name: str | None) -> list:
    """The column's distinct values (sorted when numeric, else in order of appearance);
    ``[None]`` for no column."""
    if name is None:
        return [None]
    values = list(dict.fromkeys(table[name].tolist()))
    if all(isinstance(v, int | float | np.number) and not isinstance(v, bool)
           for v in values):
        values.sort()
    return values


#: Above this many points a line has no markers (a table of records' curves).
MARKED_POINTS = 20


def _draw_line(ax, line, x: str, color):
    xv = line[x].to_numpy(np.float64)
    mean, low, high = (line[c].to_numpy(np.float64) for c in ("mean", "low", "high"))
    ax.plot(xv, mean, "o-" if xv.size <= MARKED_POINTS else "-", color=color, ms=3.5)
    ax.fill_between(xv, low, high, color=color, alpha=0.2, lw=0)
    _mark_empty(ax, xv, line, color)


def _draw_points(ax, line, x: str, xs: list, k: int, count: int, color):
    dodge = 0.0 if count == 1 else 0.5 * (k / (count - 1) - 0.5)
    at = np.asarray([xs.index(v) for v in line[x]], np.float64) + dodge
    mean, low, high = (line[c].to_numpy(np.float64) for c in ("mean", "low", "high"))
    spread = np.stack([mean - low, high - mean])
    ax.errorbar(at, mean, yerr=np.where(np.isfinite(spread), spread, 0.0), fmt="o",
                color=color, ms=4, capsize=2.5, lw=1.2)
    _mark_empty(ax, at, line, color)


def _mark_empty(ax, at, line, color):
    """A cross at the top of the panel over each point without one finite value."""
    empty = line["n"].to_numpy() == 0
    if empty.any():
        ax.plot(at[empty], np.full(empty.sum(), 0.97), "x", color=color, ms=6, mew=1.5,
                transform=ax.get_xaxis_transform(), clip_on=False)


def _caption(means, y: str, confidence: float) -> list[str]:
    """The title's parts: the seeds and the interval; the runs left out."""
    runs = means["n"] + means["excluded"]
    low, high = int(runs.min()), int(runs.max())
    seeds = f"{low} seeds" if low == high else f"{low}–{high} seeds"
    parts = [f"mean over {seeds}, {confidence:.0%} t interval of the mean"]
    excluded = int(means["excluded"].sum())
    if excluded:
        parts.append(f"{excluded} of {int(runs.sum())} runs without a finite "
                     f"{y.replace('_', ' ')} left out"
                     + (" (×: all runs of a point)" if (means["n"] == 0).any() else ""))
    return parts
