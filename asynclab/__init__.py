"""asynclab: a laboratory for the dynamics of data-parallel optimizers.

A SimPy simulator decides *when* workers exchange with the parameter server (a trace);
a vectorised JAX engine replays the trace with an update rule, for many seeds at once.
"""

import importlib

from . import _environment
from ._errors import ConfigError as ConfigError

# the environment as JAX reads it (JAX_PLATFORMS=CPU means cpu), before JAX is imported
_environment.translate()

# The package's names are imported when first used, so that `import asynclab` (and
# `asynclab --help`) do not pay for JAX, SimPy and the registries until they are needed.
_NAMES = {
    "Cluster": "cluster",
    "ComputeTime": "cluster",
    "Link": "cluster",
    "Straggler": "cluster",
    "Result": "engine",
    "RunSpec": "engine",
    "SemiSync": "cluster",
    "prepare": "engine",
    "replay": "engine",
    "run": "engine",
    "study": "studies",
    "sweep": "engine",
}
_SUBPACKAGES = ("cluster", "engine", "problems", "rules", "backends", "studies", "plot",
                "figures", "notebook", "cli")


def __getattr__(name: str):
    if name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'asynclab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_NAMES, *_SUBPACKAGES})


__version__ = "0.1.0"

__all__ = [
    "Cluster",
    "ComputeTime",
    "ConfigError",
    "Link",
    "Result",
    "RunSpec",
    "SemiSync",
    "Straggler",
    "cluster",
    "engine",
    "prepare",
    "problems",
    "replay",
    "rules",
    "run",
    "study",
    "sweep",
]
