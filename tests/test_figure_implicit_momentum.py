"""The implicit-momentum figure builds, and its claims hold in its own data."""

import numpy as np
import pytest

from asynclab.figures import load_figure


@pytest.mark.slow  # the figure's quick study: study-sized
def test_implicit_momentum_figure_and_its_claims(tmp_path):
    data = load_figure("implicit_momentum").main(quick=True, out=tmp_path)
    assert (tmp_path / "implicit_momentum.png").stat().st_size > 20_000
    n = data["n"]
    assert set(n.tolist()) >= {2, 4, 8}
    # the momentum fitted from the mean trajectory is 1 − 1/n within 0.05 (measured:
    # within 0.01; the bootstrap standard error over the 128 seeds is ≈ 0.002)
    np.testing.assert_allclose(data["fitted_momentum"], 1 - 1 / n, atol=0.05)
    assert np.all(data["fitted_momentum_error"] < 0.01)
    # the mean trajectory is heavy ball with μ = 1 − 1/n and step η/n: it never strays
    # from it by more than 1e-3 of the starting distance, at the level of the Monte-Carlo
    # error and far closer than to plain SGD with step η (the no-momentum alternative)
    assert np.all(data["max_gap"] < 1e-3)
    assert np.all(data["max_gap"] < 5 * data["max_standard_error"])
    assert np.all(data["max_gap_sgd"] > 20 * data["max_gap"])
