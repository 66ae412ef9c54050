"""The slow-and-stale figure builds, and its claims hold in its own data."""

from pathlib import Path

import numpy as np
import pytest

from asynclab import studies
from asynclab.figures import load_figure
from asynclab.studies.semisync import MODES

COMMITTED = Path(__file__).resolve().parents[1] / "figures" / "data" / "semisync.npz"
SYNC, K_OF_N, K_ASYNC, BACKUP, ASYNC = (MODES.index(m) for m in MODES)


def _claims(data, largest):
    """The figure's message, on data whose largest n is ``largest``."""
    with np.errstate(invalid="ignore"):  # ∞: a seed that never reached the target
        seconds = np.median(data["seconds_to_target"], axis=-1)
    final = np.nanmean(data["final_loss"], axis=-1)
    w = int(np.flatnonzero(data["workers"] == largest)[0])
    assert not data["diverged"].any()
    # slow: synchronous rounds wait for the slowest of n, so the time to target grows
    # with n; K of n and backups wait for fewer, and asynchronous SGD for nobody
    assert np.all(np.diff(seconds[SYNC]) > 0)
    assert seconds[ASYNC, w] < seconds[K_OF_N, w] < seconds[BACKUP, w] < seconds[SYNC, w]
    # stale: asynchronous SGD applies one stale gradient at a time and ends noisier than
    # the K-gradient rounds at the largest n
    assert final[ASYNC, w] > 2 * max(final[K_OF_N, w], final[K_ASYNC, w])
    # a K-of-n round is the K-th fastest of n: far more updates than synchronous rounds
    assert np.all(data["updates"][K_OF_N].mean(-1) > 2 * data["updates"][SYNC].mean(-1))


@pytest.mark.slow  # the figure's quick study: study-sized (~15 s)
def test_semisync_figure_and_its_claims(tmp_path):
    data = load_figure("semisync").main(quick=True, out=tmp_path)
    assert (tmp_path / "semisync.png").stat().st_size > 50_000
    assert data["seconds_to_target"].shape == (len(MODES), 2, 4)
    _claims(data, largest=8)


def test_committed_data_claims():
    """Full data (n up to 24, 16 seeds): the slow-and-stale trade-off."""
    data, config = studies.load(COMMITTED)
    assert config["seeds"] == 16
    _claims(data, largest=24)
    # the mean K-of-n update rate against the order statistic of exponential times:
    # horizon / E[X_(K:n)] rounds per run, within 5 % (rounds are i.i.d. under discard)
    for w, n in enumerate(data["workers"]):
        k = data["quorum"][w]
        expected = config["horizon"] / np.sum(1.0 / np.arange(n - k + 1, n + 1))
        assert abs(data["updates"][K_OF_N, w].mean() / expected - 1) < 0.05


def test_a_point_that_missed_the_target_is_marked_at_the_top_edge():
    # the committed data with every seed of synchronous SGD at the largest n missing the
    # target: its median time is ∞, drawn as an open marker at the top edge of the panel
    from asynclab.plot.semisync import plot_semisync

    data, config = studies.load(COMMITTED)
    data = dict(data, seconds_to_target=data["seconds_to_target"].copy())
    data["seconds_to_target"][SYNC, -1] = np.inf
    fig = plot_semisync(data, config=config)
    time_panel = fig.axes[0]
    marks = [line for line in time_panel.get_lines() if line.get_mfc() == "none"]
    assert len(marks) == 1
    x, y = marks[0].get_data()
    assert list(x) == [data["workers"][-1]] and 0.95 < y[0] <= 1.0
    assert marks[0].get_transform() == time_panel.get_xaxis_transform()
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert "did not reach the target" in legend
    # the committed data: every median reached it, nothing marked, no such entry
    fig = plot_semisync(studies.load(COMMITTED)[0], config=config)
    assert not [line for line in fig.axes[0].get_lines() if line.get_mfc() == "none"]
    assert "did not reach the target" not in [t.get_text() for t in
                                              fig.axes[1].get_legend().get_texts()]
