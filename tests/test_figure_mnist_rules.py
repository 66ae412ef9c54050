"""The MNIST rules figure builds, its measures agree with numpy oracles, and the claims
reported in figures/notes/mnist_rules.md hold in the committed full data."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from asynclab import ConfigError, studies
from asynclab.figures import load_figure
from asynclab.studies import mnist_rules

SAVED = Path(__file__).resolve().parents[1] / "figures" / "data" / "mnist_rules.npz"


def _integral(times, values):
    # trapezoids, written out
    return float(np.sum(0.5 * (values[1:] + values[:-1]) * np.diff(times)))


def _spike(loss, fraction):
    stop = max(2, int(round(fraction * (len(loss) - 1))) + 1)
    best, rise = np.inf, 0.0
    for value in loss[:stop]:
        best = min(best, value)
        rise = max(rise, value - best)
    return rise / loss[0]


def _check_measures(data, config):
    """Every derived measure recomputed from the recorded series with plain numpy."""
    rules = [str(r) for r in data["rules"]]
    downpour = rules.index("downpour")
    loss, accuracy, times = data["loss"], data["accuracy"], data["record_time"]
    target = float(data["target"])
    for index in np.ndindex(*loss.shape[:4]):
        _, i, j, s = index
        t = times[i, j, s]
        # temporal efficiency: a cell's rules share their schedules, so the common range
        # is the whole run
        expected = _integral(t, loss[index]) / _integral(t, loss[(downpour, i, j, s)])
        np.testing.assert_allclose(data["efficiency"][index], expected, rtol=1e-4)
        np.testing.assert_allclose(data["spike"][index],
                                   _spike(loss[index], config["spike_fraction"]), rtol=1e-6)
        hit = np.flatnonzero(accuracy[index] >= target)
        seconds = t[hit[0]] if hit.size else np.inf
        np.testing.assert_allclose(data["seconds_to_target"][index], seconds, rtol=1e-6)
        commits = data["record_commits"][j][hit[0]] if hit.size else np.inf
        assert data["commits_to_target"][index] == commits
    np.testing.assert_array_equal(data["final_accuracy"], accuracy[..., -1])
    final = data["final_accuracy"].astype(np.float64)
    np.testing.assert_allclose(data["final_accuracy_mean"], final.mean(axis=-1), rtol=1e-6)
    return rules


def _check_probe(data, lam):
    scale = data[f"probe_scale_{lam}"]
    staleness = data[f"probe_staleness_{lam}"]
    worker = data[f"probe_worker_{lam}"]
    # the recording of the exchanges ends where the replay ends
    assert float(data[f"probe_reconstruction_error_{lam}"]) < 1e-6
    # a commit with τ = 0 meets an unmoved centre: the scale is exactly 1; otherwise in (0, 1]
    assert np.all(scale[staleness == 0] == 1.0)
    assert np.all((scale > 0) & (scale <= 1.0))
    per_worker = data[f"probe_per_worker_{lam}"]
    for s in range(scale.shape[0]):
        for k in range(per_worker.shape[1]):
            mine = scale[s, worker[s] == k]
            if mine.size:
                np.testing.assert_allclose(per_worker[s, k], mine.mean(), rtol=1e-5)


@pytest.mark.slow  # the figure's quick study: study-sized
def test_mnist_rules_quick_figure_and_its_claims(tmp_path):
    data = load_figure("mnist_rules").main(quick=True, out=tmp_path)
    assert (tmp_path / "mnist_rules.png").stat().st_size > 50_000
    assert (tmp_path / "mnist_rules_detail.png").stat().st_size > 20_000  # its companion
    config = dataclasses.asdict(mnist_rules.Config.quick())
    rules = _check_measures(data, config)
    for lam in config["windows"]:
        _check_probe(data, lam)
    # two seeds: the 95 % t interval is t(0.975, 1) · |a − b| / 2, t(0.975, 1) = 12.706
    final = data["final_accuracy"].astype(np.float64)
    np.testing.assert_allclose(data["final_accuracy_half_width"],
                               12.7062 * np.abs(final[..., 0] - final[..., 1]) / 2, rtol=1e-4)
    # quick (n = 20, λ = 15, 80 commits): DOWNPOUR's un-normalised accumulated Adam steps
    # throw the centre away (final accuracy 0.16, 0.24; early loss spikes of 0.6–0.7 of
    # the initial loss), while every other rule learns (0.75–0.79) without spikes
    j = list(data["windows"]).index(15)
    acc = {r: final[k, 0, j] for k, r in enumerate(rules)}
    spike = {r: data["spike"][k, 0, j] for k, r in enumerate(rules)}
    assert np.all(acc["downpour"] < 0.4)
    assert np.all(spike["downpour"] > 0.3)
    for rule in ("dynsgd", "aeasgd", "agn", "adag"):
        assert np.all(acc[rule] > 0.65), rule
        assert np.all(spike[rule] < 0.05), rule
        assert np.all(data["efficiency"][rules.index(rule), 0, j] < 0.5), rule
    # λ = 1 (1,200 commits): AGN commits a/1 = a, DOWNPOUR's very numbers; every panel has
    # data: the final accuracy at both λ, and some rule reaches the target at λ = 1
    lam1 = list(data["windows"]).index(1)
    np.testing.assert_array_equal(data["loss"][rules.index("agn"), :, lam1],
                                  data["loss"][rules.index("downpour"), :, lam1])
    assert np.isfinite(data["seconds_to_target"][:, 0, lam1]).any()
    _every_panel_drawn(data)


def _every_panel_drawn(data):
    from asynclab.plot._style import panel_count
    from asynclab.plot.mnist_rules import plot_mnist_rules

    fig = plot_mnist_rules(data)
    assert panel_count(fig) == 6
    # the time-to-target panel holds at least one finite point
    assert any(np.isfinite(line.get_ydata()).any() for line in fig.axes[2].get_lines())


def _cell(data, rule, workers, window):
    rules = [str(r) for r in data["rules"]]
    i = list(data["workers"]).index(workers)
    j = list(data["windows"]).index(window)
    return rules.index(rule), i, j


def test_mnist_rules_claims_in_the_committed_full_data():
    data, config = studies.load(SAVED)
    assert config["workers"] == [10, 20, 30, 40] and config["windows"] == [1, 15]
    assert config["seeds"] == 4 and config["learning_rate"] == 1e-3
    rules = _check_measures(data, config)
    for lam in config["windows"]:
        _check_probe(data, lam)
    np.testing.assert_allclose(data["spike_all"], np.vectorize(
        lambda *i: _spike(data["loss"][i], 1.0))(*np.indices(data["loss"].shape[:4])),
        rtol=1e-6)
    final = data["final_accuracy"]

    def acc(rule, n, lam):
        return final[_cell(data, rule, n, lam)]

    # AGN with λ = 1 commits a/1 = a: the very numbers of DOWNPOUR, in every cell
    np.testing.assert_array_equal(data["loss"][rules.index("agn"), :, 0],
                                  data["loss"][rules.index("downpour"), :, 0])
    # claim 1, "DOWNPOUR with 20 workers and λ = 1 fails to learn while DynSGD copes":
    # NOT reproduced at λ = 1 (both learn: every seed above 0.9) ...
    assert np.all(acc("downpour", 20, 1) > 0.9) and np.all(acc("dynsgd", 20, 1) > 0.9)
    # ... but it holds at λ = 15 for every n: DOWNPOUR's sum of 15 Adam steps per commit
    # throws the centre away (every seed below 0.45) while DynSGD learns (above 0.75)
    for n in config["workers"]:
        assert np.all(acc("downpour", n, 15) < 0.45), n
        assert np.all(acc("dynsgd", n, 15) > 0.75), n
    # claim 2, "AGN stays robust as n grows": at λ = 1 yes (40 workers lose < 0.04 of the
    # accuracy of 10); at λ = 15 NOT (0.89 → 0.62, its loss oscillates from n = 30 on),
    # where ADAG keeps every seed above 0.76
    assert np.mean(acc("agn", 10, 1)) - np.mean(acc("agn", 40, 1)) < 0.04
    assert np.mean(acc("agn", 10, 15)) - np.mean(acc("agn", 40, 15)) > 0.2
    for n in (30, 40):
        assert np.all(acc("adag", n, 15) > 0.76)
        assert np.mean(acc("adag", n, 15)) > np.mean(acc("agn", n, 15)) + 0.1
    # claim 3, "ADAG removes AGN's early loss spikes with 30 workers": neither has a spike
    # in the first 20 % of the run; AGN's spikes come later (n = 30, λ = 15: rises of
    # 0.1–0.3 of the initial loss), and ADAG makes them smaller for every seed, without
    # removing them all
    agn, adag = _cell(data, "agn", 30, 15), _cell(data, "adag", 30, 15)
    assert np.all(data["spike"][agn] < 0.01) and np.all(data["spike"][adag] < 0.01)
    assert np.all(data["spike_all"][adag] < data["spike_all"][agn])
    assert np.mean(data["spike_all"][agn]) > 2 * np.mean(data["spike_all"][adag])
    assert np.max(data["spike_all"][adag]) > 0.02
    # claim 4, "AGN beats AEASGD in about 70 % of (n, λ) cells by temporal efficiency":
    # here in 7 of 8 (88 %); the exception is n = 40, λ = 15
    e_agn = data["efficiency"][rules.index("agn")].mean(axis=-1)
    e_aeasgd = data["efficiency"][rules.index("aeasgd")].mean(axis=-1)
    beats = e_agn < e_aeasgd
    assert beats.sum() == 7 and not beats[3, 1]
    # ADAG's scale factor falls with staleness: commits with τ ≥ 20 are scaled by less
    # than those with τ < 5, at both λ
    for lam in config["windows"]:
        scale, tau = data[f"probe_scale_{lam}"], data[f"probe_staleness_{lam}"]
        assert scale[tau >= 20].mean() < scale[tau < 5].mean() - 0.1


@pytest.mark.parametrize("change, field", [
    ({"rules": ("agn", "adag")}, "rules"),
    ({"gradient_steps": 1000}, "gradient_steps"),
    ({"probe_commits": 0}, "probe_commits"),
])
def test_mnist_rules_refuses_a_configuration_it_cannot_measure(change, field):
    config = dataclasses.replace(mnist_rules.Config.quick(), **change)
    with pytest.raises(ConfigError, match=field):
        mnist_rules.run(config)
