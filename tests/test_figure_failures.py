"""The failures figure builds, and its claims hold in its own data."""

import math
from pathlib import Path

import numpy as np
import pytest

from asynclab import studies
from asynclab.figures import load_figure
from asynclab.studies.failures import RULES

COMMITTED = Path(__file__).resolve().parents[1] / "figures" / "data" / "failures.npz"
SYNC, DOWNPOUR, ADAG, DILOCO, ASYNC_DILOCO = range(len(RULES))
ASYNCHRONOUS = (DOWNPOUR, ADAG, ASYNC_DILOCO)


def _work_claims(data):
    """The left and middle panels' claims (goodput, useful work per device-second)."""
    goodput = data["goodput"].mean(axis=-1)
    rate = data["goodput_per_device_second"].mean(axis=-1)
    assert np.isinf(data["mtbf"][0]) and not data["diverged"].any()
    # no failures: every evaluation is useful
    assert np.all(data["goodput"][:, 0] == 1.0)
    # more failures, less goodput and less useful work per device-second, every rule
    assert np.all(np.diff(goodput, axis=1) < 0) and np.all(np.diff(rate, axis=1) < 0)
    # a crash loses the phase in flight: DiLoCo's H-step phases lose the most
    assert np.all(goodput[DILOCO, 1:] < goodput[SYNC, 1:])
    assert np.all(goodput[ASYNC_DILOCO, 1:] < goodput[DOWNPOUR, 1:])
    # the asynchronous rules keep working while a worker is down; the rounds stall
    for a in ASYNCHRONOUS:
        assert np.all(rate[a] > rate[DILOCO]) and np.all(rate[a] > rate[SYNC])


def _claims(data):
    _work_claims(data)
    with np.errstate(invalid="ignore"):  # ∞: a seed that never reached the target
        seconds = np.median(data["seconds_to_target"], axis=-1)
    for a in ASYNCHRONOUS:
        assert seconds[a, -1] < 2 * seconds[a, 0]
    assert seconds[SYNC, -1] > 2 * seconds[SYNC, 0]


@pytest.mark.slow  # the figure's quick study: study-sized (~25 s)
def test_failures_figure_and_its_claims(tmp_path):
    data = load_figure("failures").main(quick=True, out=tmp_path)
    assert (tmp_path / "failures.png").stat().st_size > 50_000
    assert data["goodput"].shape == (len(RULES), 3, 2)
    # the work panels' claims hold on the quick run too (its 2 seeds are too few for the
    # time-to-target quartiles)
    _work_claims(data)


def test_committed_failures_claims():
    data, config = studies.load(COMMITTED)
    _claims(data)
    n, seeds, horizon, mttr = config["workers"], config["seeds"], config["horizon"], \
        config["mttr"]
    rate = data["goodput_per_device_second"]
    # without failures, against theory: synchronous rounds last E[max of n Exp(1)] = H_n
    # seconds for n evaluations, so n / (n H_n) per device-second; DOWNPOUR (λ = 1)
    # keeps every device busy, 1 per device-second (within 5 %: about 4 standard errors)
    harmonic = np.sum(1.0 / np.arange(1, n + 1))
    assert rate[SYNC, 0].mean() == pytest.approx(1 / harmonic, rel=0.05)
    assert rate[DOWNPOUR, 0].mean() == pytest.approx(1.0, rel=0.05)
    # with failures: exponential steps are memoryless, so an up worker completes
    # DOWNPOUR's steps at rate 1 whatever it lost, and useful work per device-second is
    # the up fraction p = MTBF / (MTBF + MTTR); every outage cuts one phase of 1
    # evaluation, one per MTBF + MTTR seconds, so goodput = MTBF / (MTBF + 1). The up
    # fraction's standard error over T seconds, n workers and S seeds is
    # sqrt(2 (MTBF MTTR)² / ((MTBF + MTTR)³ T n S)) (a two-state Markov chain)
    for f, mtbf in enumerate(data["mtbf"]):
        if math.isinf(mtbf):
            continue
        p = mtbf / (mtbf + mttr)
        se = math.sqrt(2 * (mtbf * mttr) ** 2 / ((mtbf + mttr) ** 3 * horizon * n * seeds)
                       + p / (horizon * n * seeds))  # + the Poisson count of completions
        assert abs(rate[DOWNPOUR, f].mean() - p) < 4 * se, (mtbf, rate[DOWNPOUR, f].mean(), p)
        assert data["goodput"][DOWNPOUR, f].mean() == pytest.approx(mtbf / (mtbf + 1),
                                                                   rel=0.01)


def test_a_point_that_missed_the_target_is_marked_at_the_top_edge():
    # the committed data with every seed of DiLoCo at the shortest MTBF missing the
    # target: its median time is ∞, drawn as an open marker at the top edge of the panel
    from asynclab.plot.failures import plot_failures

    data, config = studies.load(COMMITTED)
    data = dict(data, seconds_to_target=data["seconds_to_target"].copy())
    data["seconds_to_target"][DILOCO, -1] = np.inf
    fig = plot_failures(data, config=config)
    time_panel = fig.axes[2]
    marks = [line for line in time_panel.get_lines() if line.get_mfc() == "none"]
    assert len(marks) == 1
    x, y = marks[0].get_data()
    # at the last MTBF, where DiLoCo's line places its points
    assert x[0] == pytest.approx(len(data["mtbf"]) - 1 + 0.04 * (DILOCO - 2))
    assert 0.95 < y[0] <= 1.0
    assert marks[0].get_transform() == time_panel.get_xaxis_transform()
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert "did not reach the target" in legend
