"""The figures' layout: every shipped PNG, companions included, one message each (at most
6 panels); what does not fit is in ``_detail`` companions (``NAME_detail.png``,
``NAME_detail_2.png``, …) that ``asynclab figures`` builds from the same data; symbols in
mathtext.

Every figure is drawn here from its committed data (``figures/data``): no simulation.
"""

from __future__ import annotations

import dataclasses
import re
import types
from pathlib import Path

import numpy as np
import pytest

from asynclab._errors import ConfigError
from asynclab.figures import FIGURES, build, draw_saved, produce, redraw
from asynclab.plot._style import panel_count

# one module fixture draws every figure: the file's tests share it on one xdist worker
# drawing every figure and companion takes ~20 s of matplotlib: the slow tier
pytestmark = [pytest.mark.xdist_group("figure_layout"), pytest.mark.slow]

DATA = Path(__file__).resolve().parents[1] / "figures" / "data"
SHIPPED = DATA.parent
MAX_PANELS = 6
#: Symbols that must be mathtext, not raw unicode, wherever a figure writes them.
RAW_SYMBOLS = re.compile(r"[λημθσραγτΔ∇‖∫ᵏ²⁻¹]|h_min|h_max|_pull")


@pytest.fixture(scope="module")
def drawn():
    return {name: draw_saved(name, data=DATA) for name in FIGURES}


@pytest.mark.parametrize("png", [png for figure in FIGURES.values()
                                 for png in figure.outputs()])
def test_every_png_has_at_most_six_panels(drawn, png):
    # companions too: no shipped file is a poster
    name = next(name for name, figure in FIGURES.items() if png in figure.outputs())
    main, companions = drawn[name]
    fig = dict(zip(FIGURES[name].outputs(), [main, *companions], strict=True))[png]
    assert 1 <= panel_count(fig) <= MAX_PANELS


def test_the_posters_moved_their_extra_panels_to_companions(drawn):
    # the figures that had more than 6 panels keep them all, split over several files
    for name, before in (("easgd", 10), ("momentum_tuning", 13), ("mnist_rules", 8),
                         ("model_averaging_paths", 10)):
        main, companions = drawn[name]
        assert companions, name
        assert panel_count(main) + sum(map(panel_count, companions)) >= before, name


def _titles(fig):
    return [ax.get_title() for ax in fig.axes if ax.has_data()]


def test_momentum_tuning_draws_both_maps_of_every_n(drawn):
    # the rate map of the seed-mean centre and the single-run map of each n are in some
    # shipped file: the rate maps of every n in the first companion, the single runs of
    # every n in the second
    main, (rates, runs) = drawn["momentum_tuning"]
    for n in (1, 2, 4, 8, 16):
        for fig, kind in ((rates, "rate of the seed-mean centre"),
                          (runs, "single runs, median commits")):
            assert sum(t.startswith(f"$n$ = {n}: {kind}") for t in _titles(fig)) == 1, \
                (n, kind)
    assert sum("$n$ = 16: single runs" in t for t in _titles(main)) == 1


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_symbol_is_mathtext(drawn, name):
    from matplotlib.text import Text

    main, companions = drawn[name]
    for fig in (main, *companions):
        for text in (t.get_text() for t in fig.findobj(Text)):
            outside = re.sub(r"\$[^$]*\$", "", text)  # what mathtext does not render
            assert not RAW_SYMBOLS.search(outside), (name, text)


def test_redraw_builds_every_companion_from_the_saved_data(tmp_path):
    # one figure with a companion (writing every PNG takes a minute on 2 cores; the
    # shipped ones are checked by test_shipped_companions_are_there)
    names = ["mnist_rules"]
    assert FIGURES["mnist_rules"].detail
    assert redraw(names, data=DATA, out=tmp_path, echo=lambda *_: None) == names
    for name in names:
        for png in FIGURES[name].outputs():
            assert (tmp_path / png).stat().st_size > 20_000, png
    # drawn again into the same folder: refused without overwrite, nothing changed
    before = {png: (tmp_path / png).stat().st_mtime_ns for png in FIGURES[names[0]].outputs()}
    with pytest.raises(ConfigError, match="already exists"):
        redraw(names[:1], data=DATA, out=tmp_path, echo=lambda *_: None)
    assert before == {png: (tmp_path / png).stat().st_mtime_ns for png in before}
    assert redraw(names[:1], data=DATA, out=tmp_path, echo=lambda *_: None,
                  overwrite=True) == names[:1]
    with pytest.raises(ConfigError, match="no saved data"):
        redraw(names[:1], data=tmp_path / "nowhere", out=tmp_path / "other",
               echo=lambda *_: None)


def test_shipped_companions_are_there():
    for figure in FIGURES.values():
        for png in figure.outputs():
            assert (SHIPPED / png).is_file(), png


def test_produce_draws_the_companions_from_the_same_data(tmp_path):
    seen = []

    @dataclasses.dataclass
    class Config:
        size: int = 3

        @classmethod
        def quick(cls):
            return cls()

    study = types.SimpleNamespace(Config=Config, run=lambda config, progress=None:
                                  {"x": np.arange(3.0)})

    def draw(data, path, **_):
        seen.append(("main", path.name, data["x"].sum()))

    def detail(data, path, **_):
        seen.append(("detail", path.name, data["x"].sum()))

    produce("fake", study, draw, out=tmp_path, detail=detail)
    assert seen == [("main", "fake.png", 3.0), ("detail", "fake_detail.png", 3.0)]
    # several companions: NAME_detail.png, NAME_detail_2.png, … in order
    seen.clear()  # (its data file exists now: replaced only with overwrite)
    produce("fake", study, draw, out=tmp_path, detail=[detail, detail, detail],
            overwrite=True)
    assert seen == [("main", "fake.png", 3.0), ("detail", "fake_detail.png", 3.0),
                    ("detail", "fake_detail_2.png", 3.0), ("detail", "fake_detail_3.png", 3.0)]


def test_outputs_name_every_companion():
    figure = FIGURES["momentum_tuning"]
    assert figure.outputs() == ["momentum_tuning.png", "momentum_tuning_detail.png",
                                "momentum_tuning_detail_2.png"]
    assert len(figure.companions()) == 2
    assert FIGURES["staleness"].outputs() == ["staleness.png"]
    assert FIGURES["staleness"].companions() == []


@pytest.mark.parametrize("name, png", [("easgd", "easgd_detail.png"),
                                       ("momentum_tuning", "momentum_tuning_detail_2.png")])
def test_build_refuses_to_replace_a_companion_without_overwrite(tmp_path, name, png):
    # checked before anything is simulated, for every companion
    (tmp_path / png).write_bytes(b"not ours")
    with pytest.raises(ConfigError):
        build([name], out=tmp_path, echo=lambda *_: None)
    assert (tmp_path / png).read_bytes() == b"not ours"
