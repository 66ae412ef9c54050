"""Drawing the asynchronous DiLoCo study: synchronous DiLoCo, the naive asynchronous outer
Nesterov step, Delayed Nesterov and dynamic local updates on a heterogeneous cluster."""

from __future__ import annotations

import matplotlib

from .. import _files
from ._common import checked_path

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from ._common import finish  # noqa: E402
from ._style import OKABE_ITO, legend_below, panels, styled  # noqa: E402

COLORS = {"sync": OKABE_ITO["black"], "naive": OKABE_ITO["vermillion"],
          "dn": OKABE_ITO["blue"], "dylu": OKABE_ITO["orange"],
          "dn+dylu": OKABE_ITO["green"]}
DASHES = {"sync": "-", "naive": "--", "dn": "-", "dylu": ":", "dn+dylu": "-."}
LABELS = {"sync": "synchronous DiLoCo", "naive": "async, naive Nesterov",
          "dn": "async, Delayed Nesterov", "dylu": "async, dynamic local updates",
          "dn+dylu": "async, DN + DyLU"}


def _curves(ax, data, x_key, y_key, *, scale=1.0):
    for variant in (str(v) for v in data["variants"]):
        x = np.asarray(data[f"{variant}__{x_key}"], dtype=float)
        y = np.asarray(data[f"{variant}__{y_key}"], dtype=float)
        mean = scale * y.mean(axis=0)
        ax.plot(x, mean, DASHES[variant], color=COLORS[variant], label=LABELS[variant])
        if y.shape[0] > 1:
            ax.fill_between(x, scale * y.min(axis=0), scale * y.max(axis=0),
                            color=COLORS[variant], alpha=0.15, lw=0)


@styled
@_files.writes("figure")
def plot_async_diloco(data: dict, path=None, title: str | None = None, *, overwrite: bool = False):
    """Training loss against simulated time and against gradient evaluations, and the
    validation accuracy against simulated time; lines: mean over seeds, bands: their
    range."""
    path = checked_path(path, overwrite)  # checked before any drawing
    fig, (loss_time, loss_work, accuracy) = panels(3)
    _curves(loss_time, data, "time", "loss")
    loss_time.set_xlabel("simulated seconds (equal wall-clock budget)")
    loss_time.set_title("training loss at equal time")
    sync_work = float(np.asarray(data["sync__work"])[-1])
    _curves(loss_work, data, "work", "loss")
    loss_work.axvline(sync_work, color="k", lw=0.8, ls=":")
    loss_work.set_xlabel("gradient evaluations of all workers (dotted: sync's total)")
    loss_work.set_title("training loss at equal work")
    for ax in (loss_time, loss_work):
        ax.set_yscale("log")
        ax.set_ylabel("training loss, mean (band: range)")
    _curves(accuracy, data, "time", "accuracy", scale=100.0)
    accuracy.set_xlabel("simulated seconds")
    accuracy.set_ylabel("validation accuracy (%)")
    accuracy.set_title("validation accuracy")
    accuracy.set_ylim(0, 100)
    legend_below(loss_work, ncol=3, gap=0.2)
    return finish(fig, path, title, overwrite=overwrite)
