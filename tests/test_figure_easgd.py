"""The EASGD figure builds, and its claims hold in its own data (quick run) and in the
committed full-size data."""

from pathlib import Path

import numpy as np
import pytest

from asynclab import studies
from asynclab.figures import load_figure
from asynclab.studies.easgd import (
    critical_alpha,
    synchronous_block,
    synchronous_radius,
    synchronous_stable,
)

COMMITTED = Path(__file__).resolve().parents[1] / "figures" / "data" / "easgd.npz"


def _map_claims(data):
    lams = list(data["map_local_steps"])
    small, large = lams.index(min(lams)), lams.index(max(lams))
    fraction = data["map_fraction"]
    # divergence is at least as frequent with λ = 1 as with the longest period, for every ρ
    assert np.all(fraction[small] >= fraction[large])
    # ... and there is an elasticity at which every λ = 1 run diverges and no λ = 64 run
    assert np.any((fraction[small] == 1.0) & (fraction[large] == 0.0))
    # the linear theory predicts the boundary: no run grows below 0.9 α*(λ), all runs
    # grow above 1.1 α*(λ) (random exchange order)
    alpha = data["map_alpha"]
    for i, star in enumerate(data["alpha_random_order"]):
        assert np.all(data["map_growing"][i][alpha < 0.9 * star] == 0), (lams[i], star)
        assert np.all(data["map_growing"][i][alpha > 1.1 * star] == 1), (lams[i], star)


def _synchronous_claims(data):
    for rho in data["elasticities"]:
        stop, free = f"rho{rho:g}_stop", f"rho{rho:g}_nostop"
        # with the test, the workers sit on its surface ‖ηg‖ − α‖θᵏ − θ̃‖ = η, i.e.
        # (‖g‖ − 1)/(ρ d) = 1 (noise-free gradients: exact up to one step)
        np.testing.assert_allclose(data[f"equilibrium_ratio_{stop}"], 1.0, atol=0.02)
        # ... and skip most of their local work; without it every step is taken
        assert data[f"steps_fraction_{stop}"] < 0.5
        assert data[f"steps_fraction_{free}"] == 1.0
        # re-running the rule's local work on the recorded states reproduces the replay
        # (to float32 rounding; at the test's threshold a rounding difference can flip
        # one step of size η‖g‖ ≈ 3e-5)
        assert data[f"rerun_error_{stop}"] < 1e-4 and data[f"rerun_error_{free}"] < 1e-5
    # what the saved work costs (measured, noise-free): with ρ = 5 the centre is slower
    # with the early stop; with ρ = 1 it is faster
    assert data["final_loss_rho5_stop"] > data["final_loss_rho5_nostop"]
    assert data["final_loss_rho1_stop"] < data["final_loss_rho1_nostop"]


def _stability_claims(data):
    radius, grew = data["stability_radius"], data["stability_grew"]
    # the simulation agrees with the spectral radius in every cell clear of the boundary
    # (|ρ − 1| > 2 %): bounded below it, grown above it
    clear = np.abs(radius - 1) > 0.02
    assert np.all(grew[clear & (radius < 1)] == 0)
    assert np.all(grew[clear & (radius > 1)] == 1)
    # the region shrinks as workers are added (β = pα): fewer stable cells for the
    # largest p than for the smallest
    stable = (grew == 0).sum(axis=(1, 2))
    assert stable[-1] < stable[0]
    # the paper's order and the rule's order give different regions: some simulated cell
    # lies on opposite sides of the two boundaries
    paper = data["stability_radius_paper"]
    assert np.any(clear & (np.abs(paper - 1) > 0.02) & ((paper < 1) != (radius < 1)))


def _full_map(step, alpha, p, paper_order=False):
    """One synchronous EASGD round (λ = 1, β = pα) on (θ¹, …, θᵖ, θ̃), curvature 1,
    written worker by worker."""
    beta = p * alpha
    m = np.zeros((p + 1, p + 1))
    for k in range(p):
        if paper_order:  # gradient and elastic term at the round's start
            m[k, k] = 1 - step - alpha
            m[k, p] = alpha
            m[p, k] = beta / p
        else:  # gradient step, then the exchange on the stepped values
            m[k, k] = (1 - alpha) * (1 - step)
            m[k, p] = alpha
            m[p, k] = beta / p * (1 - step)
    m[p, p] = 1 - beta
    return m


def test_synchronous_stability_against_the_full_map():
    rng = np.random.default_rng(1)
    for _ in range(300):
        step, alpha = 10 ** rng.uniform(-2, 0.6), 10 ** rng.uniform(-2.5, 0.4)
        p = int(rng.choice([1, 2, 4, 8, 16]))
        for paper in (False, True):
            radius = np.max(np.abs(np.linalg.eigvals(_full_map(step, alpha, p, paper))))
            np.testing.assert_allclose(synchronous_radius(step, alpha, p, paper_order=paper),
                                       radius, rtol=1e-9)
            if abs(radius - 1) > 1e-9:
                assert synchronous_stable(step, alpha, p, paper_order=paper) == (radius < 1)
    # the (mean, centre) block: iterating it is iterating the mean of the full map
    x = rng.normal(size=5)
    full, block = _full_map(0.3, 0.1, 4), synchronous_block(0.3, 0.1, 0.4)
    y = full @ x
    np.testing.assert_allclose(block @ np.array([x[:4].mean(), x[4]]), [y[:4].mean(), y[4]])


@pytest.mark.slow  # the figure's quick study: study-sized
def test_easgd_figure_and_its_claims(tmp_path):
    data = load_figure("easgd").main(quick=True, out=tmp_path)
    assert (tmp_path / "easgd.png").stat().st_size > 20_000
    assert (tmp_path / "easgd_detail.png").stat().st_size > 20_000  # its companion
    _synchronous_claims(data)
    _map_claims(data)
    _stability_claims(data)
    _every_panel_drawn(data)


def _every_panel_drawn(data):
    """No panel of the quick build is empty or a degenerate grid: the map spans at least
    three λ and three ρ, the λ = 1 check has its bars, the companion shows every p."""
    from asynclab.plot._style import panel_count
    from asynclab.plot.easgd import plot_easgd, plot_easgd_detail

    assert len(data["map_local_steps"]) >= 3 and len(data["map_elasticities"]) >= 3
    assert data["check_growing"].size >= 4
    assert panel_count(plot_easgd(data)) == 6
    assert panel_count(plot_easgd_detail(data)) == 1 + len(data["stability_workers"]) == 4


def test_one_worker_boundary_formula():
    # one worker: the exchange cycle is stable iff α < 2(1 + c)/(1 + 3c)
    for c in (0.0, 0.3, 0.9, 1.0):
        np.testing.assert_allclose(critical_alpha([c], 1), 2 * (1 + c) / (1 + 3 * c),
                                   rtol=1e-6)


@pytest.mark.skipif(not COMMITTED.exists(), reason="full-size data not generated")
def test_easgd_committed_data():
    data, _ = studies.load(COMMITTED)
    _synchronous_claims(data)
    _map_claims(data)
    _stability_claims(data)
    # λ = 1: the boundary is α ≈ 1 whatever the number of workers (not α·n ≈ 1)
    alphas = list(data["check_alphas"])
    growing = data["check_growing"]
    assert np.all(growing[:, alphas.index(0.9)] == 0)
    assert np.all(growing[:, alphas.index(1.1)] > 0.9)


def test_part_one_refuses_gradient_noise():
    """Counting the steps taken re-runs the local work, which needs noise-free gradients."""
    import dataclasses

    from asynclab._errors import ConfigError
    from asynclab.studies import easgd

    config = dataclasses.replace(easgd.Config.quick(), noise=10.0)
    with pytest.raises(ConfigError, match="noise"):
        easgd.run(config)
