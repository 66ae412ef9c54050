"""Several results in one picture: the median over seeds with a band, one colour each."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _files
from .._errors import ConfigError
from ._common import checked_path

METRICS = ("loss", "accuracy", "validation_loss")
AGAINST = ("time", "commits")


def _worst(metric: str) -> float:
    """The value a diverged run counts as: worse than any recorded one."""
    return 0.0 if metric == "accuracy" else np.inf


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
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if against not in AGAINST:
        raise ConfigError(f"against must be 'time' or 'commits', got {against!r}")
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
    seed_times = times[result.trace_index]
    held = np.empty((values.shape[0], points))
    for s in range(values.shape[0]):
        at = np.searchsorted(seed_times[s], x, side="right") - 1
        held[s] = values[s, np.clip(at, 0, None)]
    return x, held


@_files.writes("figure")
def compare(results: Sequence, labels: Sequence[str] | None = None, *,
            metric: str = "loss", against: str = "time", band: tuple[float, float] = (0.25, 0.75),
            ax=None, path=None, overwrite: bool = False):
    """Draw several results in one panel: for each, the median over its seeds and a band
    between two quantiles (the quartiles by default).

    Args:
      results: :class:`asynclab.Result` objects (runs, not sweeps).
      labels: one label per result (default: each result's rule, workers and η).
      metric: ``"loss"`` (the central training loss), ``"accuracy"`` or
        ``"validation_loss"`` (a net's validation metrics).
      against: ``"time"`` (simulated seconds) or ``"commits"`` (server updates; rounds
        for a synchronous rule).
      band: the quantiles bounding the shaded band (``None``: no band).
      ax: an axes to draw on (default: a new figure).
      path: where to write the PNG (None: do not write).
      overwrite: replace an existing file at ``path`` (only a picture of the
        format its name says); without it an existing file is a ConfigError, before
        anything is drawn.

    Returns:
      The matplotlib axes.

    A diverged run counts as the worst value from its divergence on (infinite loss, zero
    accuracy), so that a median over seeds is a median over all of them;
    the legend says how many of each result's runs diverged.
    """
    path = checked_path(path, overwrite)  # checked before any drawing
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
            low, high = _quantiles(values, band)
            finite = np.isfinite(low) & np.isfinite(high)
            ax.fill_between(x, np.where(finite, low, np.nan), np.where(finite, high, np.nan),
                            color=color, alpha=0.2, lw=0)
    ax.set_xlabel("simulated time (s)" if against == "time" else "commits (server updates)")
    ax.set_ylabel({"loss": "central training loss", "accuracy": "validation accuracy",
                   "validation_loss": "validation loss"}[metric])
    if metric != "accuracy":
        ax.set_yscale("log")
    if band is not None:
        ax.set_title(f"median over seeds, band: quantiles {band[0]:g}–{band[1]:g}",
                     fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    if path is not None:
        _files.save_figure(ax.figure, path, "path", overwrite=overwrite, dpi=150)
    return ax


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
