"""Cluster timing models and the SimPy simulator that turns them into a trace."""

from ._orders import random_order_trace as random_order_trace
from ._orders import round_robin_trace as round_robin_trace
from ._orders import simulate_sync_with_warmup as simulate_sync_with_warmup
from ._orders import trace_from_order as trace_from_order
from ._simulator import simulate_async as simulate_async
from ._simulator import simulate_sync as simulate_sync
from ._timing import DISTRIBUTIONS as DISTRIBUTIONS
from ._timing import Cluster as Cluster
from ._timing import ComputeTime as ComputeTime
from ._timing import Link as Link
from ._timing import Straggler as Straggler
from ._timing import heterogeneous as heterogeneous
from ._trace import RoundTrace as RoundTrace
from ._trace import Trace as Trace

__all__ = [
    "DISTRIBUTIONS",
    "Cluster",
    "ComputeTime",
    "Link",
    "RoundTrace",
    "Straggler",
    "Trace",
    "heterogeneous",
    "random_order_trace",
    "round_robin_trace",
    "simulate_async",
    "simulate_sync",
    "simulate_sync_with_warmup",
    "trace_from_order",
]
