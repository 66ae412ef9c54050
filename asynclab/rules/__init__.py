"""Update rules as pure JAX functions, shared by every executor.

Each rule is a ``NamedTuple`` of pure functions built by a factory from its parts
(``asynclab.rules.parts``); ``make_rule(name, **hyperparameters)`` builds one by name.
Every factory is declared once (``@declare``), the catalogue's and a user's own alike;
the registry ``RULES`` and the factories exported here (``asynclab.rules.downpour``,
...) are read from those declarations. A built rule says what it can do
(``rule.capabilities``), and :func:`check` runs the shared checks of the rule suite on
any declared rule.
"""

from . import parts as parts
from ._base import AXIS as AXIS
from ._base import Capabilities as Capabilities
from ._base import ExchangeInfo as ExchangeInfo
from ._base import Rule as Rule
from ._base import ScheduleFacts as ScheduleFacts
from ._base import ServerState as ServerState
from ._base import WorkerState as WorkerState
from ._catalogue import inner_optimizers as inner_optimizers
from ._declaration import MOMENTA as MOMENTA
from ._declaration import SERVER_MOMENTUM as SERVER_MOMENTUM
from ._declaration import WORKER_MOMENTUM as WORKER_MOMENTUM
from ._declaration import Hyperparameter as Hyperparameter
from ._declaration import declare as declare
from ._registry import RULES as RULES
from ._registry import RuleInfo as RuleInfo
from ._registry import make_rule as make_rule

# one export per rule of the catalogue: its factory, under its name
globals().update({_name: _info.factory for _name, _info in RULES.items()})


#: names imported when first used, by the module that defines them: ``check`` replays
#: rules, so it lives with the replay (asynclab.engine, which imports this package)
_LAZY = {"check": "asynclab.engine._checks"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'asynclab.rules' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LAZY})


__all__ = [
    "AXIS",
    "MOMENTA",
    "RULES",
    "SERVER_MOMENTUM",
    "WORKER_MOMENTUM",
    "Capabilities",
    "ExchangeInfo",
    "Hyperparameter",
    "Rule",
    "ScheduleFacts",
    "RuleInfo",
    "ServerState",
    "WorkerState",
    "check",
    "declare",
    "inner_optimizers",
    "make_rule",
    "parts",
    *RULES,
]
