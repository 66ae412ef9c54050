"""Update rules as pure JAX functions, shared by every executor."""

from ._base import AXIS as AXIS
from ._base import AsynchronousRule as AsynchronousRule
from ._base import ExchangeInfo as ExchangeInfo
from ._base import Rule as Rule
from ._base import ServerState as ServerState
from ._base import SynchronousRule as SynchronousRule
from ._base import WorkerState as WorkerState
from ._catalogue import downpour as downpour
from ._catalogue import model_averaging as model_averaging
from ._catalogue import sequential_sgd as sequential_sgd
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
    "downpour",
    "make_rule",
    "model_averaging",
    "sequential_sgd",
    "synchronous_sgd",
]
