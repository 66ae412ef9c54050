"""The staleness figure builds, and its claims hold in its own data."""

from pathlib import Path

import numpy as np
import pytest

from asynclab import studies
from asynclab.figures import load_figure

COMMITTED = Path(__file__).resolve().parents[1] / "figures" / "data" / "staleness.npz"


@pytest.mark.slow  # the figure's quick study: study-sized
def test_staleness_figure_and_its_claims(tmp_path):
    data = load_figure("staleness").main(quick=True, out=tmp_path)
    assert (tmp_path / "staleness.png").stat().st_size > 20_000
    n = data["n"]
    # E[τ] = n − 1 for every cluster, heterogeneous and with a straggler included
    np.testing.assert_allclose(data["mean"], n - 1, rtol=0.06)
    # exponential times: geometric with p = 1/n, so P(τ = 0) ≈ 1/n
    homogeneous = slice(0, 4)
    np.testing.assert_allclose(data["p_zero"][homogeneous], 1 / n[homogeneous], rtol=0.15)
    # the straggler changes the shape: its own commits sit far out in the tail, P(τ ≥ 8n)
    # many times what the geometric fit predicts, while homogeneous clusters match it
    assert data["tail"][-1] > 5 * data["tail_geometric"][-1]
    np.testing.assert_allclose(data["tail"][:4], data["tail_geometric"][:4], rtol=0.6,
                               atol=5e-4)


def test_committed_tail_matches_the_geometric_law():
    """Full data (200,000 commits per cluster, ≈ 60 expected in the tail): the number of
    homogeneous commits with τ ≥ 8n is the geometric prediction within 5 Poisson standard
    deviations (the quick run's ≈ 6 expected cannot tell 0 from the law)."""
    data, config = studies.load(COMMITTED)
    n = data["n"][:4]
    commits = config["commits"] - n  # the first n commits are dropped as warm-up
    observed = data["tail"][:4] * commits
    expected = data["tail_geometric"][:4] * commits
    assert np.all(expected > 30)
    assert np.all(np.abs(observed - expected) <= 5 * np.sqrt(expected))
