"""A user's own problem or rule named on the command line: ``FILE.py:NAME`` or
``MODULE:NAME``, imported on purpose (its code runs), as pytest and uvicorn import a
user's code. Only ``--problem``, ``--rule`` and ``asynclab rules --import`` name code
this way; nothing else imports code from a name."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path

from .. import ConfigError

#: What a name of one's own code looks like: ``path/to/file.py:NAME`` or
#: ``package.module:NAME``.
_OWN = re.compile(r"^(?P<source>.+\.py|[A-Za-z_][\w.]*):(?P<name>[A-Za-z_]\w*)$")

#: The help text that says so.
HELP = ("or your own: FILE.py:NAME or MODULE:NAME, imported (its code runs) to find NAME")


def is_own(text: str) -> bool:
    """Whether ``text`` names one's own code (``FILE.py:NAME``, ``MODULE:NAME``)."""
    return isinstance(text, str) and _OWN.match(text) is not None


def load(source: str, flag: str):
    """Import ``source`` (a ``.py`` file or a module name) and return the module."""
    if source.endswith(".py"):
        path = Path(source).expanduser()
        if not path.is_file():
            raise ConfigError(f"{flag}: no file {source!r} to import")
        name = "asynclab_own_" + re.sub(r"\W", "_", path.resolve().stem)
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(loaded, "__file__", None) == str(path.resolve()):
            return loaded  # --problem and --rule from one file: imported once
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        if spec is None or spec.loader is None:
            raise ConfigError(f"{flag}: {source!r} cannot be imported as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # a rule declared there is known by its module
        try:
            spec.loader.exec_module(module)
        except ConfigError as error:
            sys.modules.pop(name, None)
            raise ConfigError(f"{flag}: importing {source!r}: {error}") from None
        except Exception as error:  # noqa: BLE001 - the user's code: one line, not a traceback
            sys.modules.pop(name, None)
            raise ConfigError(f"{flag}: importing {source!r} failed: "
                              f"{type(error).__name__}: {error}") from None
        return module
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as error:
        raise ConfigError(f"{flag}: no module {error.name!r} to import (give a FILE.py:NAME, "
                          "or put the module on PYTHONPATH)") from None
    except ConfigError as error:
        raise ConfigError(f"{flag}: importing {source!r}: {error}") from None
    except Exception as error:  # noqa: BLE001 - the user's code
        raise ConfigError(f"{flag}: importing {source!r} failed: "
                          f"{type(error).__name__}: {error}") from None


def own(text: str, flag: str):
    """The object ``NAME`` of ``FILE.py:NAME`` / ``MODULE:NAME``."""
    found = _OWN.match(text)
    if found is None:
        raise ConfigError(f"{flag} {text!r}: give a name, FILE.py:NAME or MODULE:NAME")
    module = load(found["source"], flag)
    name = found["name"]
    if not hasattr(module, name):
        public = sorted(n for n in vars(module) if not n.startswith("_"))
        raise ConfigError(f"{flag}: {found['source']!r} has no {name!r}"
                          + (f"; it has {', '.join(public[:12])}" if public else ""))
    return getattr(module, name)


def own_problem(text: str):
    """``--problem FILE.py:NAME``: a :class:`~asynclab.problems.Problem`, or a function
    of no arguments that returns one."""
    from ..problems import Problem

    value = own(text, "--problem")
    if callable(value) and not isinstance(value, Problem):
        try:
            value = value()
        except ConfigError as error:
            raise ConfigError(f"--problem {text}: {error}") from None
        except Exception as error:  # noqa: BLE001 - the user's code
            raise ConfigError(f"--problem {text}: calling it failed: "
                              f"{type(error).__name__}: {error}") from None
    if not isinstance(value, Problem):
        raise ConfigError(f"--problem {text}: is a {type(value).__name__}, not an "
                          "asynclab.problems.Problem (or a function returning one: build it "
                          "with asynclab.problems.from_loss or from_model)")
    return value


def own_rule(text: str):
    """``--rule FILE.py:NAME``: the name of a rule the file declares
    (``asynclab.rules.declare``), or a :class:`~asynclab.rules.Rule` built already."""
    from ..rules import RULES, Rule

    value = own(text, "--rule")
    if isinstance(value, Rule):
        return value
    for name, info in RULES.items():
        if info.factory is value or getattr(value, "__wrapped__", None) is info.factory:
            return name
    raise ConfigError(f"--rule {text}: is not a declared rule (declare its factory with "
                      "asynclab.rules.declare) nor a Rule")
