"""The AGN figure builds, and its claims hold in its own data."""

import numpy as np
import pytest

from asynclab.figures import load_figure


@pytest.mark.slow  # the figure's quick study: study-sized
def test_agn_figure_and_its_claims(tmp_path):
    data = load_figure("agn").main(quick=True, out=tmp_path)
    assert (tmp_path / "agn.png").stat().st_size > 50_000
    # straight line: at small η the commit's cosine with −∇L(θ̃_pull) grows with λ and
    # approaches 1 (quick, 32 seeds × 100 commits each, all commits: 0.19, 0.67, 0.995 for
    # λ = 1, 15, 1000; first commits only: 0.22, 0.63, 0.99; 128 first commits per λ, so the
    # standard error of each mean is < 0.06)
    for small in (data["cosine"][0], data["cosine_first"][0]):  # all commits, first commits
        assert np.all(np.diff(small) > 0.1)
        assert small[-1] > 0.97
        assert small[0] < 0.5
    # per commit, AGN (n workers, λ local steps, batch m) tracks SGD with a λ× larger batch:
    # commits to the target within 25% (quick: 50 vs 44) and the same noise floor within
    # 40% (0.020 vs 0.018) ...
    agn, sequential = 0, 1
    hits = data["commits_to_target"]
    assert np.all(hits >= 0)
    assert 0.8 < hits[agn] / hits[sequential] < 1.25
    assert 0.7 < data["final_loss"][agn] / data["final_loss"][sequential] < 1.4
    # ... and per simulated second it gets there ≈ n times sooner than one worker computing
    # the big batch (quick: 193 s vs 664 s)
    assert data["seconds_to_target"][agn] < data["seconds_to_target"][sequential] / 2
