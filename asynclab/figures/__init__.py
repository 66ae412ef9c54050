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
    ``overwrite`` (and only a PNG by a PNG, its data only by a study's data).
    """
    from .. import _files
    from .._cache import enable_compile_cache

    figures = [load_figure(name) for name in (names or available())]  # all known first
    enable_compile_cache()
    out = _files.local_path(out, "--out", folder=True) if out is not None else default_out()
    _files.writable_folder(out, "--out")
    _files.writable_folder(out / "data", "--out")
    for figure in figures:
        for png in figure.outputs():
            _files.output_path(out / png, "--out", kind="figure", overwrite=overwrite)
        _files.output_path(out / "data" / f"{figure.name}.npz", "--out", kind="study",
                           overwrite=overwrite)
    timings = {}
    for figure in figures:
        start = time.perf_counter()
        figure.main(quick=quick, out=out, overwrite=overwrite)
        timings[figure.name] = time.perf_counter() - start
        echo(f"{figure.name}: {timings[figure.name]:.1f} s -> {out / (figure.name + '.png')}")
    return timings


def produce(name: str, study, draw, *, quick: bool = False, out=None, progress=None,
            title=None, pass_config: bool = False, detail=None,
            overwrite: bool = False) -> dict:
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
      overwrite: replace the figure's files where they exist (only a PNG by a PNG, its
        data only by a study's data); without it an existing one is a ConfigError.

    Returns:
      The study's data.
    """
    from .. import _files, studies

    out = _files.local_path(out, "out", folder=True) if out is not None else default_out()
    config = study.Config.quick() if quick else study.Config()
    data = study.run(config, progress=progress)
    studies.save(out / "data" / f"{name}.npz", data, config, overwrite=overwrite)
    _draw(name, data, config, draw, detail, out, title=title, pass_config=pass_config,
          overwrite=overwrite)
    return data


def _draw(name, data, config, draw, detail, out, *, title, pass_config,
          overwrite: bool = False):
    """Draw ``NAME.png`` and its companions (``detail``: one drawing, a list or None)
    into ``out`` (None: write nothing); returns the main figure and the list of
    companions (empty without ``detail``)."""
    import dataclasses

    options = {}
    if title is not None:
        options["title"] = title(config)
    if pass_config:
        options["config"] = dataclasses.asdict(config)
    main = draw(data, None if out is None else out / f"{name}.png", overwrite=overwrite,
                **options)
    details = [] if detail is None else [detail] if callable(detail) else list(detail)
    companions = [companion(data, None if out is None else out / companion_file(name, k),
                            overwrite=overwrite, **options)
                  for k, companion in enumerate(details)]
    return main, companions


def draw_saved(name: str, *, data: str | Path, out: str | Path | None = None,
               overwrite: bool = False):
    """Draw figure ``name`` and its companions from its saved data ``DATA/NAME.npz`` (no
    simulation), into ``out`` if given (an existing PNG only with ``overwrite``); returns
    the main matplotlib figure and the list of its companions, in the order of
    ``Figure.outputs()`` (empty where it has none)."""
    import importlib

    from .. import _files, studies

    figure = load_figure(name)
    study = importlib.import_module(f"asynclab.studies.{figure.study}")
    path = _files.local_path(data, "data", folder=True) / f"{name}.npz"
    values, stored = studies.load(path)
    config = _stored_config(study, stored, path)
    out = None if out is None else _files.local_path(out, "out", folder=True)
    return _draw(name, values, config, figure.drawing(), figure.companions(), out,
                 title=figure.titling(), pass_config=figure.pass_config, overwrite=overwrite)


def _stored_config(study, stored, path):
    """The study's ``Config`` of a saved config: only the fields it has, of their types."""
    import dataclasses

    fields = {f.name: f for f in dataclasses.fields(study.Config)}
    if not isinstance(stored, dict):
        raise ConfigError(f"study data: {str(path)!r} holds no config of {study.__name__}")
    unknown = sorted(set(stored) - set(fields))
    if unknown:
        raise ConfigError(f"study data: {str(path)!r}: its config has field(s) "
                          f"{', '.join(unknown[:5])} that {study.__name__}.Config does not")
    defaults = study.Config()
    values = {}
    for key, value in stored.items():
        value = tuple(value) if isinstance(value, list) else value
        default = getattr(defaults, key)
        if default is not None and value is not None and not _same_kind(default, value):
            raise ConfigError(f"study data: {str(path)!r}: config field {key!r} holds "
                              f"{type(value).__name__}, expected {type(default).__name__}")
        values[key] = value
    try:
        return study.Config(**values)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"study data: {str(path)!r}: its config is not one of "
                          f"{study.__name__} ({error})") from None


def _same_kind(default, value) -> bool:
    """Whether a stored config value has the kind of its field's default (numbers
    together, tuples of numbers with tuples of numbers, ...)."""
    import numbers

    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) == isinstance(value, bool)
    if isinstance(default, numbers.Real):
        return isinstance(value, numbers.Real)
    if isinstance(default, tuple | list):
        return isinstance(value, tuple | list)
    return isinstance(value, type(default))


def redraw(names=None, *, data=None, out: str | Path | None = None, echo=print,
           overwrite: bool = False):
    """Draw each named figure (all by default) and its companions again from its saved
    data (``DATA/NAME.npz``, ``DATA`` = ``out/data`` by default) into ``out``: no
    simulation. Every data file and output is checked first: an existing PNG is replaced
    only with ``overwrite``, as by :func:`build`. Returns the names drawn."""
    from .. import _files

    figures = [load_figure(name) for name in (names or available())]
    out = _files.local_path(out, "--out", folder=True) if out is not None else default_out()
    data = _files.local_path(data, "--data", folder=True) if data is not None else out / "data"
    _files.writable_folder(out, "--out")
    for figure in figures:
        saved = data / f"{figure.name}.npz"
        if not saved.exists():
            raise ConfigError(f"--redraw: no saved data {saved} (build the figure first: "
                              f"asynclab figures {figure.name})")
        _files.input_file(saved, "--redraw")
        for png in figure.outputs():
            _files.output_path(out / png, "--out", kind="figure", overwrite=overwrite)
    for figure in figures:
        draw_saved(figure.name, data=data, out=out, overwrite=overwrite)
        echo(f"{figure.name}: redrawn -> {', '.join(figure.outputs())}")
    return [figure.name for figure in figures]
