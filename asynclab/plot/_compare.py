"""Several results in one picture: the median over seeds with a band, one colour each."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _files, _tables
from .._errors import ConfigError
from ._common import checked_path

METRICS = ("loss", "accuracy", "validation_loss")
AGAINST = ("time", "commits")
#: The default band of results: their quartiles.
QUARTILES = (0.25, 0.75)
#: A table's column of the x axis, by ``against``.
_X_COLUMN = {"time": "time", "commits": "event"}


def _worst(metric: str) -> float:
    """The value a diverged run counts as: worse than any recorded one."""
    return 0.0 if metric == "accuracy" else np.inf


def _check_axes(metric: str, against: str) -> None:
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if against not in AGAINST:
        raise ConfigError(f"against must be 'time' or 'commits', got {against!r}")


def series(result, metric: str = "loss", against: str = "time", points: int = 200):
    """``(x, values)`` of ``result`` for :func:`compare`: ``values`` of shape ``(S, X)``.

    Against ``"commits"`` the records themselves (``record_events``: events done at each
    record; rounds for a synchronous rule). Against ``"time"`` (simulated seconds,
    ``record_time``) the same when every seed replayed one schedule; with a schedule per
    seed, each seed's series is read on ``points`` common times, holding its last record
    (a run that has not yet reached a time holds its latest value, the way its server
    would). A diverged run counts as the worst value from its divergence on (infinite
    loss, zero accuracy), so that a median over seeds is a median over all of them.
    """
    _check_axes(metric, against)
    if result.grid is not None:
        raise ConfigError("compare draws runs, not sweeps: pick a grid point of the sweep "
                          "by running it on its own (asynclab.run with those values)")
    values = np.array(result._series(metric), np.float64)  # (S, R), a copy
    values[np.isnan(values)] = _worst(metric)
    if against == "commits":
        return np.asarray(result.record_events, np.float64), values
    times = result.record_time  # (Tr, R)
    if times.shape[0] == 1:
        return times[0], values
    x = np.linspace(0.0, float(np.max(times)), points)
    return x, _held(times[result.trace_index], values, x)


def _held(xs, values, x):
    """Each seed's ``values`` (recorded at its ``xs``) at the common ``x``: its last record
    at or before each, the first before its first."""
    held = np.empty((values.shape[0], x.size))
    for s in range(values.shape[0]):
        at = np.searchsorted(xs[s], x, side="right") - 1
        held[s] = values[s, np.clip(at, 0, None)]
    return held


@_files.writes("figure")
def compare(results, labels: Sequence[str] | None = None, *,
            metric: str = "loss", against: str = "time",
            band: tuple[float, float] | None = QUARTILES, confidence: float | None = None,
            by: Sequence[str] | None = None, ax=None, path=None, overwrite: bool = False):
    """Draw several runs' records in one panel, one colour each: from results, the median
    over each result's seeds and a band between two quantiles (the quartiles by
    default); from a table of records, the mean over the seeds and its confidence
    interval.

    Args:
      results: :class:`asynclab.Result` objects (runs, not sweeps), or a table of records
        (a pandas DataFrame: ``asynclab.study(..., records=True)``'s second table, or
        :meth:`asynclab.Result.to_frame`), one line per configuration (see ``by``).
      labels: one label per result (default: each result's rule, workers and η), or per
        line of a table (default: its configuration's values).
      metric: ``"loss"`` (the central training loss), ``"accuracy"`` or
        ``"validation_loss"`` (a net's validation metrics).
      against: ``"time"`` (simulated seconds) or ``"commits"`` (server updates; rounds
        for a synchronous rule).
      band: results: the quantiles bounding the shaded band (``None``: no band).
      confidence: a table: the level of the band, a Student t interval of the mean
        (:func:`asynclab.studies.mean_interval`; default 0.95).
      by: a table: the columns whose values make the lines (default: those of ``rule``,
        ``cluster`` and the hyperparameter columns that vary).
      ax: an axes to draw on (default: a new figure).
      path: where to write the PNG (None: do not write).
      overwrite: replace an existing file at ``path`` (only a picture of the
        format its name says); without it an existing file is a ConfigError, before
        anything is drawn.

    Returns:
      The matplotlib axes.

    From results, a diverged run counts as the worst value from its divergence on
    (infinite loss, zero accuracy), so that a median over seeds is a median over all of
    them. From a table, a diverged run's records are NaN from its divergence on and the
    mean is over the runs still going; with a schedule per seed (``trace_per_seed``),
    each seed's series is read against time on common times, holding its last record,
    as for results. Either way the legend says how many of each line's runs diverged.
    On the logarithmic axis of a loss, a t interval that reaches zero or below runs to
    the bottom of the panel.
    """
    path = checked_path(path, overwrite)  # checked before any drawing
    if _tables.is_table(results):
        if band is not QUARTILES:
            raise ConfigError("band: a table's band is the confidence interval of the mean; "
                              "set its level with confidence=")
        return _compare_table(results, labels, metric=metric, against=against,
                              confidence=0.95 if confidence is None else confidence, by=by,
                              ax=ax, path=path, overwrite=overwrite)
    for name, value in (("confidence", confidence), ("by", by)):
        if value is not None:
            raise ConfigError(f"{name}: applies to a table of records; results draw the "
                              "median and quantiles (band=)")
    results = list(results)
    if not results:
        raise ConfigError("compare needs at least one result")
    if labels is None:
        labels = [_label(r) for r in results]
    labels = [str(label) for label in labels]
    if len(labels) != len(results):
        raise ConfigError(f"labels: {len(labels)} label(s) for {len(results)} result(s)")
    if band is not None:
        band = tuple(float(q) for q in band)
        if len(band) != 2 or not 0 <= band[0] < band[1] <= 1:
            raise ConfigError(f"band must be two quantiles 0 <= low < high <= 1, got {band!r}")
    drawn = [series(r, metric, against) for r in results]

    import matplotlib.pyplot as plt

    from ._style import CYCLE

    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    colors = [CYCLE[i % len(CYCLE)] for i in range(len(results))]
    for (x, values), label, result, color in zip(drawn, labels, results, colors, strict=True):
        median = _quantiles(values, 0.5)
        diverged = int(np.sum(result.diverged))
        note = f" ({diverged}/{result.n_seeds} diverged)" if diverged else ""
        seeds = f", {result.n_seeds} seeds" if result.n_seeds > 1 else ""
        ax.plot(x, np.where(np.isfinite(median), median, np.nan), color=color, lw=1.8,
                label=f"{label}{seeds}{note}")
        if band is not None and result.n_seeds > 1:
            _band(ax, x, *_quantiles(values, band), color)
    _label_axes(ax, metric, against)
    if band is not None:
        ax.set_title(f"median over seeds, band: quantiles {band[0]:g}–{band[1]:g}",
                     fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    if path is not None:
        _files.save_figure(ax.figure, path, "path", overwrite=overwrite, dpi=150)
    return ax


def _band(ax, x, low, high, color) -> None:
    """The shaded band between ``low`` and ``high``, left open where either is not finite."""
    finite = np.isfinite(low) & np.isfinite(high)
    ax.fill_between(x, np.where(finite, low, np.nan), np.where(finite, high, np.nan),
                    color=color, alpha=0.2, lw=0)


def _label_axes(ax, metric: str, against: str) -> None:
    """The axes' labels, and a logarithmic y axis for a loss."""
    ax.set_xlabel("simulated time (s)" if against == "time" else "commits (server updates)")
    ax.set_ylabel({"loss": "central training loss", "accuracy": "validation accuracy",
                   "validation_loss": "validation loss"}[metric])
    if metric != "accuracy":
        ax.set_yscale("log")


def _quantiles(values, q):
    """Quantiles over the seeds (axis 0) of values that may hold +inf (a diverged run's
    loss): computed on a huge finite stand-in, so that a median of (1, 2, inf) is 2."""
    huge = np.finfo(np.float64).max / 4
    quantiles = np.quantile(np.where(np.isinf(values), huge, values), q, axis=0)
    return np.where(quantiles >= huge / 2, np.inf, quantiles)


def _label(result) -> str:
    cfg = result.config
    lr = (cfg.get("hyperparameters") or {}).get("learning_rate")
    eta = f", η={lr:g}" if isinstance(lr, int | float) else ""
    return f"{cfg.get('rule', '?')}, n={cfg.get('workers', '?')}{eta}"


def _compare_table(table, labels, *, metric, against, confidence, by, ax, path,
                   overwrite=False):
    """:func:`compare` of a table of records: one line per configuration."""
    import matplotlib.pyplot as plt

    from ..studies import key_columns, mean_interval
    from ._style import CYCLE, legend_outside

    _check_axes(metric, against)
    x_column = _X_COLUMN[against]
    for name in ("seed", "record", x_column, metric):
        if name not in table.columns:
            kind = ("a table of records (asynclab.study(..., records=True), or "
                    "Result.to_frame()); plot.grid draws a table of runs"
                    if name in ("record", x_column) else f"a table that records {metric}")
            raise ConfigError(f"compare draws {kind}: this one has no column {name!r}")
    if by is None:
        by = [c for c in key_columns(table) if table[c].nunique(dropna=False) > 1]
    else:
        by = [by] if isinstance(by, str) else list(by)
        for name in by:
            if name not in table.columns:
                raise ConfigError(f"by: the table has no column {name!r}")
    groups = (table.groupby(by, sort=False, dropna=False).indices if by
              else {(): np.arange(len(table))})
    if labels is None:
        labels = [_table_label(by, key) for key in groups]
    labels = [str(label) for label in labels]
    if len(labels) != len(groups):
        raise ConfigError(f"labels: {len(labels)} label(s) for {len(groups)} line(s)")
    confidence = _validate_confidence(confidence)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    seed_counts = []
    for i, (index, label) in enumerate(zip(groups.values(), labels, strict=True)):
        lines = table.iloc[index]
        if lines.duplicated(subset=["seed", "record"]).any():
            varying = [c for c in key_columns(table) if c not in by
                       and lines[c].nunique(dropna=False) > 1]
            raise ConfigError(f"compare: the line {label!r} holds several runs per seed "
                              f"({', '.join(varying) or 'a column'} varies); give by=[...] "
                              "or select rows first")
        values = lines.pivot(index="seed", columns="record", values=metric).to_numpy(
            np.float64, na_value=np.nan)
        xs = lines.pivot(index="seed", columns="record", values=x_column).to_numpy(np.float64)
        x, held = _common_x(xs, values)
        mean, low, high, _ = mean_interval(held, confidence)
        color = CYCLE[i % len(CYCLE)]
        diverged = int(np.sum(~np.isfinite(values[:, -1])))
        seeds = values.shape[0]
        seed_counts.append(seeds)
        note = f" ({diverged}/{seeds} diverged)" if diverged else ""
        ax.plot(x, mean, color=color, lw=1.8, label=f"{label}{note}")
        _band(ax, x, low, high, color)
    _label_axes(ax, metric, against)
    low, high = min(seed_counts), max(seed_counts)
    seeds = f"{low} seeds" if low == high else f"{low}–{high} seeds"
    ax.set_title(f"mean over {seeds}, band: {confidence:.0%} t interval of the mean",
                 fontsize="medium")
    legend_outside(ax, fontsize="small")
    if path is not None:
        _files.save_figure(ax.figure, path, "path", overwrite=overwrite, dpi=150,
                           bbox_inches="tight")
    return ax


def _validate_confidence(confidence) -> float:
    from .. import _validate

    return _validate.number(confidence, "confidence", low=0, high=1, low_open=True,
                            high_open=True)


def _common_x(xs, values, points: int = 200):
    """``(x, values)`` on one x axis: the records' own when every seed has them at the same
    x, else ``points`` common values at which each seed holds its last record."""
    if np.all(xs == xs[:1]):
        return xs[0], values
    x = np.linspace(0.0, float(np.nanmax(xs)), points)
    return x, _held(xs, values, x)


def _table_label(by, key) -> str:
    key = key if isinstance(key, tuple) else (key,)
    parts = []
    for name, value in zip(by, key, strict=True):
        if name in ("rule", "cluster"):
            parts.append(str(value))
        elif isinstance(value, float) and np.isnan(value):
            continue  # a hyperparameter this line's rule does not have
        else:
            parts.append(f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}")
    return ", ".join(parts) or "runs"
