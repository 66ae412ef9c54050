"""What the interactive notebooks (``notebooks/``) use beside the studies and plots:
widgets over runs and small data helpers built on the engine, the studies and the
backends; their drawings live in :mod:`asynclab.plot.notebooks` and are re-exported here
(no rules, no studies and no drawing code of their own in a notebook).

Nothing below imports this package; it sits at the top with ``plot``, ``figures`` and
the CLI.
"""

from .._cache import enable_compile_cache as _enable_compile_cache
from ..plot.notebooks import plot_executors as plot_executors
from ..plot.notebooks import plot_rule_comparison as plot_rule_comparison
from ..plot.notebooks import plot_running_probability as plot_running_probability
from ._controls import NOISE_MAX as NOISE_MAX
from ._controls import SURFACES as SURFACES
from ._controls import rule_controls as rule_controls
from ._devices import compare_executors as compare_executors
from ._devices import notebook_devices as notebook_devices
from ._display import figure_png as figure_png
from ._display import show as show
from ._explorer import Explorer as Explorer
from ._explorer import explorer_cluster as explorer_cluster
from ._explorer import worker_paths as worker_paths
from ._mc import accumulate as accumulate
from ._mc import cell_success as cell_success
from ._mnist import ExchangeRecord as ExchangeRecord
from ._mnist import compare_rules as compare_rules
from ._mnist import exchange_record as exchange_record
from ._staleness import momentum_data as momentum_data
from ._staleness import server_staleness_data as server_staleness_data
from ._staleness import staleness_data as staleness_data

__all__ = [
    "NOISE_MAX",
    "SURFACES",
    "Explorer",
    "ExchangeRecord",
    "accumulate",
    "cell_success",
    "compare_executors",
    "compare_rules",
    "exchange_record",
    "explorer_cluster",
    "figure_png",
    "momentum_data",
    "notebook_devices",
    "plot_executors",
    "plot_rule_comparison",
    "plot_running_probability",
    "rule_controls",
    "server_staleness_data",
    "show",
    "staleness_data",
    "worker_paths",
]

# a notebook run again reads its compiled programs back (see asynclab._cache)
_enable_compile_cache()
