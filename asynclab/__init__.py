"""asynclab: a laboratory for the dynamics of data-parallel optimizers.

A SimPy simulator decides *when* workers exchange with the parameter server (a trace);
a vectorised JAX engine replays the trace with an update rule, for many seeds at once.
"""

from . import cluster as cluster
from . import engine as engine
from . import problems as problems
from . import rules as rules
from ._errors import ConfigError as ConfigError
from .cluster import Cluster as Cluster
from .cluster import ComputeTime as ComputeTime
from .cluster import Link as Link
from .cluster import Straggler as Straggler
from .engine import Result as Result
from .engine import replay as replay
from .engine import run as run
from .engine import sweep as sweep

__version__ = "0.1.0"

__all__ = [
    "Cluster",
    "ComputeTime",
    "ConfigError",
    "Link",
    "Result",
    "Straggler",
    "cluster",
    "engine",
    "problems",
    "replay",
    "rules",
    "run",
    "sweep",
]
