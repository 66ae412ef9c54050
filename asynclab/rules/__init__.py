"""Update rules as pure JAX functions, shared by every executor.

Each rule is a ``NamedTuple`` of pure functions built by a factory from its parts
(``asynclab.rules.parts``); ``make_rule(name, **hyperparameters)`` builds one by name.
"""

from . import _parts as parts
from ._base import AXIS as AXIS
from ._base import AsynchronousRule as AsynchronousRule
from ._base import ExchangeInfo as ExchangeInfo
from ._base import Rule as Rule
from ._base import ServerState as ServerState
from ._base import SynchronousRule as SynchronousRule
from ._base import WorkerState as WorkerState
from ._catalogue import adag as adag
from ._catalogue import aeasgd as aeasgd
from ._catalogue import agn as agn
from ._catalogue import dc_asgd as dc_asgd
from ._catalogue import delay_adaptive as delay_adaptive
from ._catalogue import diloco as diloco
from ._catalogue import downpour as downpour
from ._catalogue import dynsgd as dynsgd
from ._catalogue import eamsgd as eamsgd
from ._catalogue import easgd as easgd
from ._catalogue import gap_aware as gap_aware
from ._catalogue import local_sgd as local_sgd
from ._catalogue import mixed as mixed
from ._catalogue import model_averaging as model_averaging
from ._catalogue import post_local_sgd as post_local_sgd
from ._catalogue import sequential_sgd as sequential_sgd
from ._catalogue import staleness_aware as staleness_aware
from ._catalogue import synchronous_sgd as synchronous_sgd
from ._registry import RULES as RULES
from ._registry import RuleInfo as RuleInfo
from ._registry import make_rule as make_rule

__all__ = [
    "AXIS",
    "RULES",
    "AsynchronousRule",
    "ExchangeInfo",
    "Rule",
    "RuleInfo",
    "ServerState",
    "SynchronousRule",
    "WorkerState",
    "adag",
    "aeasgd",
    "agn",
    "dc_asgd",
    "delay_adaptive",
    "diloco",
    "downpour",
    "dynsgd",
    "eamsgd",
    "easgd",
    "gap_aware",
    "local_sgd",
    "mixed",
    "model_averaging",
    "post_local_sgd",
    "sequential_sgd",
    "staleness_aware",
    "synchronous_sgd",
    "make_rule",
    "parts",
]
