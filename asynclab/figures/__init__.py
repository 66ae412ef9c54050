"""Finding and running the figure scripts in ``figures/`` (``asynclab figures``)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from ._errors import ConfigError


def figures_dir() -> Path:
    """The ``figures/`` folder: ./figures if it exists, else the one beside the package."""
    here = Path.cwd() / "figures"
    if here.is_dir():
        return here
    beside = Path(__file__).resolve().parents[1] / "figures"
    if beside.is_dir():
        return beside
    raise ConfigError("no figures/ folder found: run `asynclab figures` from the repository root")


def available(folder: Path | None = None) -> list[str]:
    """Names of the figure scripts (``figures/NAME.py`` with a ``main``)."""
    folder = folder or figures_dir()
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def load_figure(name: str, folder: Path | None = None):
    """The module ``figures/NAME.py``."""
    folder = folder or figures_dir()
    path = folder / f"{name}.py"
    if not path.is_file():
        raise ConfigError(f"unknown figure {name!r}; available: {', '.join(available(folder))}")
    spec = importlib.util.spec_from_file_location(f"asynclab_figure_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "main"):
        raise ConfigError(f"figures/{name}.py has no main(quick=False, out=...)")
    return module


def build(names=None, *, quick: bool = False, out: str | Path | None = None, echo=print):
    """Run ``main(quick, out)`` of each named figure (all by default); returns timings."""
    from . import _validate

    folder = figures_dir()
    names = list(names) if names else available(folder)
    modules = {name: load_figure(name, folder) for name in names}  # all known, before work
    out = Path(out) if out is not None else folder
    _validate.writable_folder(out, "--out")
    _validate.writable_folder(out / "data", "--out")
    timings = {}
    for name in names:
        module = modules[name]
        start = time.perf_counter()
        module.main(quick=quick, out=out)
        timings[name] = time.perf_counter() - start
        echo(f"{name}: {timings[name]:.1f} s -> {out / (name + '.png')}")
    return timings


def produce(name: str, study, draw, *, quick: bool = False, out=None, progress=None,
            title=None, pass_config: bool = False) -> dict:
    """What every figure script does: run the study, save its data, draw the PNG.

    Args:
      name: the figure's name (file names ``out/NAME.png`` and ``out/data/NAME.npz``).
      study: the study module (``Config`` with ``quick()``, ``run(config, progress)``).
      draw: ``draw(data, path)`` from ``asynclab.plot``.
      quick: use ``study.Config.quick()``.
      out: output folder (default: ``figures/``).
      title: optional ``title(config) -> str`` handed to ``draw`` as ``title=``.
      pass_config: also hand ``draw`` the config as a dict (``config=``).

    Returns:
      The study's data.
    """
    from . import studies

    out = Path(out) if out is not None else figures_dir()
    config = study.Config.quick() if quick else study.Config()
    data = study.run(config, progress=progress)
    studies.save(out / "data" / f"{name}.npz", data, config)
    options = {}
    if title is not None:
        options["title"] = title(config)
    if pass_config:
        import dataclasses

        options["config"] = dataclasses.asdict(config)
    draw(data, out / f"{name}.png", **options)
    return data
