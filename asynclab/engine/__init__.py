"""The replay engine: a trace and a rule in, a result out."""

from ._core import INITS as INITS
from ._core import initial_state as initial_state
from ._core import seed_keys as seed_keys
from ._replay import replay as replay
from ._result import Result as Result
from ._run import build_rule as build_rule
from ._run import run as run
from ._run import schedule as schedule

__all__ = [
    "INITS",
    "Result",
    "build_rule",
    "initial_state",
    "replay",
    "run",
    "schedule",
    "seed_keys",
]
