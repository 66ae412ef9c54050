"""The real_cluster figure builds, and its claims hold in its own data."""

from pathlib import Path

import numpy as np
import pytest

from asynclab import studies
from asynclab.cluster import example_log_path, read_log
from asynclab.figures import load_figure

COMMITTED = Path(__file__).resolve().parents[1] / "figures" / "data" / "real_cluster.npz"


def _check_staleness(data):
    n = int(data["workers"])
    names = list(data["staleness_names"])
    assert names == ["measured", "replayed", "fitted", "exponential"]
    # mean τ = n − 1 for the measured, replayed, fitted and exponential schedules
    np.testing.assert_allclose(data["staleness_mean"], n - 1, atol=0.02)
    np.testing.assert_allclose(data["big_mean"], int(data["big_workers"]) - 1, atol=0.05)
    # the replay follows the measured order (only the last few commits are cut) ...
    assert data["staleness_tv"][1] < 0.005
    # ... and the fitted model is closer to the measured staleness than the textbook one
    assert data["staleness_tv"][2] < data["staleness_tv"][3]
    assert data["staleness_wasserstein"][2] < data["staleness_wasserstein"][3]


@pytest.mark.slow  # the figure's quick study: study-sized
def test_real_cluster_figure_and_its_claims(tmp_path):
    data = load_figure("real_cluster").main(quick=True, out=tmp_path)
    assert (tmp_path / "real_cluster.png").stat().st_size > 50_000
    _check_staleness(data)
    # the per-worker statistics are those of the shipped log (plain numpy on the file)
    log = read_log(example_log_path())
    for k in range(4):
        t = log.compute[log.worker == k] + log.communication[log.worker == k]
        assert data["steps"][k] == t.size
        np.testing.assert_allclose(data["mean_step"][k], t.mean())
        np.testing.assert_allclose(data["p99"][k], np.percentile(t, 99))
    # the chosen family has the smallest AIC of the three for every worker
    assert all(data["families"][np.argmin(a)] == c
               for a, c in zip(data["aic"], data["chosen"], strict=True))
    # DOWNPOUR: every run converges at the two smaller η under every timing model, none
    # at the largest; the textbook assumption gives the same largest stable η on this grid
    loss = data["loss"]
    assert np.all(loss[:, :2] < 1e-3)
    assert np.all(~(loss[:, -1] < 1e-3))
    np.testing.assert_array_equal(data["stable"], data["learning_rates"][1])


def test_committed_real_cluster_claims():
    """Full data: the largest η at which every seed converges is the same for the replayed
    log, the fitted model and the exponential assumption, and so it is at 16 workers for
    the fitted model and the exponential one; at the next η the real schedule fails for
    more seeds than either model."""
    data, config = studies.load(COMMITTED)
    _check_staleness(data)
    rates, loss, target = data["learning_rates"], data["loss"], config["target"]
    assert len(set(data["stable"].tolist())) == 1
    assert len(set(data["big_stable"].tolist())) == 1
    edge = int(np.flatnonzero(rates == data["stable"][0])[0]) + 1
    converged = np.mean(loss[:, edge] < target, axis=-1)
    assert converged[0] < converged[1] and converged[0] < converged[2]
