"""The model-averaging paths figure builds, and its claims hold in its own data."""

import numpy as np
import pytest

from asynclab.figures import load_figure


@pytest.mark.slow  # the figure's quick study: study-sized
def test_model_averaging_paths_figure_and_its_claims(tmp_path):
    data = load_figure("model_averaging_paths").main(quick=True, out=tmp_path)
    assert (tmp_path / "model_averaging_paths.png").stat().st_size > 20_000
    assert (tmp_path / "model_averaging_paths_detail.png").stat().st_size > 20_000  # its companion
    lams = data["local_steps"]
    identical, random = 0, 1
    # identical starts: the centre follows sequential SGD's path for every λ. The two
    # differ only by gradient noise (mean of n streams vs one): per coordinate about
    # ησ√T ≈ 0.02 after T = 4,000 steps, damped by the curvature; 0.05 leaves room.
    assert np.all(data["distance_to_sgd"] < 0.05), data["distance_to_sgd"]
    # ... and reaches the same loss (seed-wise mean, within 20 %)
    sgd = data["sgd_final_loss"].mean()
    np.testing.assert_allclose(data["final_loss"][identical].mean(axis=1), sgd, rtol=0.2)
    # random starts: the first round's end points are spread over the box (uniform
    # starts in [−4, 4]², mean distance to their mean ≈ 2.6 for n = 4; λ local steps
    # pull them together somewhat), identical starts only by noise
    assert np.all(data["first_spread"][random].mean(axis=1) > 1.0)
    assert np.all(data["first_spread"][identical] < 0.05)
    # after one averaging a random-start run is an identical-start run: the spread of
    # the end points is the same (same noise, mean over rounds and seeds; ±25 % for the
    # few rounds of λ = 1000 in quick mode)
    ratio = data["later_spread"][random].mean(axis=1) / data["later_spread"][identical].mean(axis=1)
    np.testing.assert_allclose(ratio, 1.0, rtol=0.25)
    # that spread is gradient noise accumulated over λ local steps: it grows with λ and
    # matches ησ√λ·√((n−1)/n)·√(π/2) (curvature shrinks it for the longest windows)
    later = data["later_spread"][identical].mean(axis=1)
    assert np.all(np.diff(later) > 0), later
    np.testing.assert_allclose(later / data["noise_spread"], 1.0, rtol=0.35)
    assert list(lams) == [1, 5, 100, 1000]
