"""The replay engine: a trace and a rule in, a result out."""

from ._replay import INITS as INITS
from ._replay import replay as replay
from ._result import Result as Result
from ._run import run as run
from ._run import schedule as schedule

__all__ = ["INITS", "Result", "replay", "run", "schedule"]
