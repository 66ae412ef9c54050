"""The replay engine: a trace and a rule in, a result out."""

from ._compiled import structure_key as structure_key
from ._compiled import with_values as with_values
from ._core import INITS as INITS
from ._core import initial_state as initial_state
from ._core import seed_keys as seed_keys
from ._exchanges import ExchangeRecord as ExchangeRecord
from ._exchanges import record_exchanges as record_exchanges
from ._replay import replay as replay
from ._result import Result as Result
from ._run import build_rule as build_rule
from ._run import run as run
from ._run import schedule as schedule
from ._sweep import SCORES as SCORES
from ._sweep import best_point as best_point
from ._sweep import replay_grid as replay_grid
from ._sweep import scores as scores
from ._sweep import sweep as sweep

__all__ = [
    "INITS",
    "ExchangeRecord",
    "SCORES",
    "Result",
    "best_point",
    "build_rule",
    "initial_state",
    "record_exchanges",
    "replay",
    "replay_grid",
    "run",
    "schedule",
    "scores",
    "seed_keys",
    "structure_key",
    "sweep",
    "with_values",
]
