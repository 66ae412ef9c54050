"""The replay engine: a trace and a rule in, a result out."""

from ._compiled import structure_key as structure_key
from ._compiled import with_values as with_values
from ._core import INITS as INITS
from ._core import initial_state as initial_state
from ._core import seed_keys as seed_keys
from ._exchanges import ExchangeRecord as ExchangeRecord
from ._exchanges import record_exchanges as record_exchanges
from ._prepare import build_rule as build_rule
from ._prepare import prepare as prepare
from ._prepare import with_start as with_start
from ._replay import replay as replay
from ._result import Result as Result
from ._run import estimated_seconds as estimated_seconds
from ._run import execute as execute
from ._run import run as run
from ._run import schedule as schedule
from ._run import schedules as schedules
from ._run import sweep as sweep
from ._spec import BACKENDS as BACKENDS
from ._spec import RunSpec as RunSpec
from ._sweep import HIGHER_IS_BETTER as HIGHER_IS_BETTER
from ._sweep import SCORES as SCORES
from ._sweep import best_point as best_point
from ._sweep import replay_grid as replay_grid
from ._sweep import scores as scores

__all__ = [
    "BACKENDS",
    "HIGHER_IS_BETTER",
    "INITS",
    "ExchangeRecord",
    "SCORES",
    "Result",
    "RunSpec",
    "best_point",
    "build_rule",
    "estimated_seconds",
    "execute",
    "initial_state",
    "prepare",
    "record_exchanges",
    "replay",
    "replay_grid",
    "run",
    "schedule",
    "schedules",
    "scores",
    "seed_keys",
    "structure_key",
    "sweep",
    "with_start",
    "with_values",
]
