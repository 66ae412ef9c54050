"""The figures of the lab (``asynclab figures``): each a study, a drawing and a caption,
registered in :data:`FIGURES` and shipped inside the package."""

from __future__ import annotations

import time
from pathlib import Path

from .._errors import ConfigError
from ._catalogue import FIGURES, Figure, companion_file

__all__ = ["FIGURES", "Figure", "available", "build", "default_out", "draw_saved",
           "load_figure", "produce", "redraw"]


def default_out() -> Path:
    """Where figures go when no ``out`` is given: ``./figures`` if the current folder has
    one (a source checkout), else the current folder."""
    here = Path.cwd() / "figures"
    return here if here.is_dir() else Path.cwd()


def available() -> list[str]:
    """The names of the figures, in the order they are built."""
    return list(FIGURES)


def load_figure(name: str) -> Figure:
    """The figure registered as ``name`` (call its ``main(quick=False, out=None)``).

    Raises:
      ConfigError: for a name that is not one of :data:`FIGURES` (no file is looked up).
    """
    if not isinstance(name, str) or name not in FIGURES:
        raise ConfigError(f"unknown figure {name!r}; available: {', '.join(FIGURES)}")
    return FIGURES[name]


def build(names=None, *, quick: bool = False, out: str | Path | None = None, echo=print,
          overwrite: bool = False):
    """Build each named figure (all by default) into ``out``; returns timings.

    Every name, and every file a figure will write (``out/NAME.png``, each companion
    ``out/NAME_detail.png``, ``out/NAME_detail_2.png``, …, and ``out/data/NAME.npz``), is
    checked before any figure is built: an existing file is replaced only with
    ``overwrite`` (and its data only if they are a study's data).
    """
    from .. import _validate
    from .._cache import enable_compile_cache

    figures = [load_figure(name) for name in (names or available())]  # all known first
    enable_compile_cache()
    out = Path(out) if out is not None else default_out()
    _validate.writable_folder(out, "--out")
    _validate.writable_folder(out / "data", "--out")
    for figure in figures:
        for png in figure.outputs():
            _validate.output_path(out / png, "--out", overwrite=overwrite)
        _validate.output_path(out / "data" / f"{figure.name}.npz", "--out",
                              overwrite=overwrite, kind="study")
    timings = {}
    for figure in figures:
        start = time.perf_counter()
        figure.main(quick=quick, out=out)
        timings[figure.name] = time.perf_counter() - start
        echo(f"{figure.name}: {timings[figure.name]:.1f} s -> {out / (figure.name + '.png')}")
    return timings


def produce(name: str, study, draw, *, quick: bool = False, out=None, progress=None,
            title=None, pass_config: bool = False, detail=None) -> dict:
    """What every figure does: run the study, save its data, draw the PNG (and its
    companions ``NAME_detail.png``, ``NAME_detail_2.png``, … from the same data).

    Args:
      name: the figure's name (file names ``out/NAME.png`` and ``out/data/NAME.npz``).
      study: the study module (``Config`` with ``quick()``, ``run(config, progress)``).
      draw: ``draw(data, path)`` from ``asynclab.plot``.
      quick: use ``study.Config.quick()``.
      out: output folder (default: :func:`default_out`).
      title: optional ``title(config) -> str`` handed to ``draw`` as ``title=``.
      pass_config: also hand ``draw`` the config as a dict (``config=``).
      detail: ``detail(data, path, ...)`` drawing ``out/NAME_detail.png``, a list of them
        (drawing ``out/NAME_detail.png``, ``out/NAME_detail_2.png``, … in order), or None.

    Returns:
      The study's data.
    """
    from .. import studies

    out = Path(out) if out is not None else default_out()
    config = study.Config.quick() if quick else study.Config()
    data = study.run(config, progress=progress)
    studies.save(out / "data" / f"{name}.npz", data, config)
    _draw(name, data, config, draw, detail, out, title=title, pass_config=pass_config)
    return data


def _draw(name, data, config, draw, detail, out, *, title, pass_config):
    """Draw ``NAME.png`` and its companions (``detail``: one drawing, a list or None)
    into ``out`` (None: write nothing); returns the main figure and the list of
    companions (empty without ``detail``)."""
    import dataclasses

    options = {}
    if title is not None:
        options["title"] = title(config)
    if pass_config:
        options["config"] = dataclasses.asdict(config)
    main = draw(data, None if out is None else out / f"{name}.png", **options)
    details = [] if detail is None else [detail] if callable(detail) else list(detail)
    companions = [companion(data, None if out is None else out / companion_file(name, k),
                            **options)
                  for k, companion in enumerate(details)]
    return main, companions


def draw_saved(name: str, *, data: str | Path, out: str | Path | None = None):
    """Draw figure ``name`` and its companions from its saved data ``DATA/NAME.npz`` (no
    simulation), into ``out`` if given; returns the main matplotlib figure and the list
    of its companions, in the order of ``Figure.outputs()`` (empty where it has none)."""
    import importlib

    from .. import studies

    figure = load_figure(name)
    study = importlib.import_module(f"asynclab.studies.{figure.study}")
    values, stored = studies.load(Path(data) / f"{name}.npz")
    config = study.Config(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in stored.items()})
    return _draw(name, values, config, figure.drawing(), figure.companions(),
                 None if out is None else Path(out), title=figure.title,
                 pass_config=figure.pass_config)


def redraw(names=None, *, data=None, out: str | Path | None = None, echo=print,
           overwrite: bool = False):
    """Draw each named figure (all by default) and its companions again from its saved
    data (``DATA/NAME.npz``, ``DATA`` = ``out/data`` by default) into ``out``: no
    simulation. Every data file and output is checked first: an existing PNG is replaced
    only with ``overwrite``, as by :func:`build`. Returns the names drawn."""
    from .. import _validate

    figures = [load_figure(name) for name in (names or available())]
    out = Path(out) if out is not None else default_out()
    data = Path(data) if data is not None else out / "data"
    _validate.writable_folder(out, "--out")
    for figure in figures:
        saved = data / f"{figure.name}.npz"
        if not saved.is_file():
            raise ConfigError(f"--redraw: no saved data {saved} (build the figure first: "
                              f"asynclab figures {figure.name})")
        for png in figure.outputs():
            _validate.output_path(out / png, "--out", overwrite=overwrite)
    for figure in figures:
        draw_saved(figure.name, data=data, out=out)
        echo(f"{figure.name}: redrawn -> {', '.join(figure.outputs())}")
    return [figure.name for figure in figures]
