"""Update rules as pure JAX functions, shared by every executor.

Each rule is a ``NamedTuple`` of pure functions built by a factory from its parts
(``asynclab.rules.parts``); ``make_rule(name, **hyperparameters)`` builds one by name.
Every factory is declared once (``@declare`` in ``_catalogue.py``); the registry
``RULES`` and the factories exported here (``asynclab.rules.downpour``, ...) are read
from those declarations.
"""

from . import parts as parts
from ._base import AXIS as AXIS
from ._base import ExchangeInfo as ExchangeInfo
from ._base import Rule as Rule
from ._base import ScheduleFacts as ScheduleFacts
from ._base import ServerState as ServerState
from ._base import WorkerState as WorkerState
from ._catalogue import inner_optimizers as inner_optimizers
from ._declaration import Hyperparameter as Hyperparameter
from ._declaration import declare as declare
from ._registry import RULES as RULES
from ._registry import RuleInfo as RuleInfo
from ._registry import make_rule as make_rule

# one export per declared rule: its factory, under its name
globals().update({_name: _info.factory for _name, _info in RULES.items()})

__all__ = [
    "AXIS",
    "RULES",
    "ExchangeInfo",
    "Hyperparameter",
    "Rule",
    "ScheduleFacts",
    "RuleInfo",
    "ServerState",
    "WorkerState",
    "declare",
    "inner_optimizers",
    "make_rule",
    "parts",
    *RULES,
]
