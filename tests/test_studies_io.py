"""A study's data and config survive the round trip to disk, so a figure can be redrawn
without re-simulating: one test for every study's config, one for what a figure writes."""

import dataclasses
import importlib
import json

import numpy as np
import pytest

from asynclab import studies
from asynclab.figures import FIGURES, load_figure


def _as_json(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("name", sorted({figure.study for figure in FIGURES.values()}))
def test_every_study_config_and_data_round_trip(name, tmp_path):
    study = importlib.import_module(f"asynclab.studies.{name}")
    config = study.Config.quick()
    data = {"curve": np.linspace(0, 1, 7, dtype=np.float32), "counts": np.arange(5),
            "grid": np.eye(3, dtype=np.float64), "flags": np.array([True, False]),
            "final": 0.25, "label": "a run", "steps": 12}
    saved, loaded = studies.load(studies.save(tmp_path / f"{name}.npz", data, config))
    assert loaded == _as_json(dataclasses.asdict(config))  # tuples come back as lists
    assert saved.keys() == data.keys()
    for key, value in data.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(saved[key], value)
            assert saved[key].dtype == value.dtype
        else:
            assert saved[key] == value


@pytest.mark.slow  # a figure's quick build (the slow tier builds every figure's)
def test_a_figure_writes_the_data_it_drew(tmp_path):
    data = load_figure("staleness").main(quick=True, out=tmp_path)
    saved, config = studies.load(tmp_path / "data" / "staleness.npz")
    assert config == _as_json(dataclasses.asdict(studies.staleness.Config.quick()))
    assert saved.keys() == data.keys()
    for key, value in data.items():
        np.testing.assert_array_equal(saved[key], value)
