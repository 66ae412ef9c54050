"""Executors on real devices, sharing the rules with the simulator's replay."""

# schedules live in asynclab.cluster; these names stay here for existing callers
from ..cluster import random_order_trace as random_order_trace
from ..cluster import round_robin_trace as round_robin_trace
from ..cluster import trace_from_order as trace_from_order
from ._device_executor import BackendRun as BackendRun
from ._device_executor import run_pmap as run_pmap
from ._devices import child_environment as child_environment
from ._devices import cpu_devices as cpu_devices
from ._devices import simulate_cpu_devices as simulate_cpu_devices
from ._distributed import initialize as initialize
from ._run import run_devices as run_devices
from ._segments import segment_starts as segment_starts
from ._threads import ThreadsRun as ThreadsRun
from ._threads import predicted_staleness as predicted_staleness
from ._threads import run_threads as run_threads

__all__ = [
    "BackendRun",
    "ThreadsRun",
    "child_environment",
    "cpu_devices",
    "initialize",
    "predicted_staleness",
    "random_order_trace",
    "round_robin_trace",
    "run_devices",
    "run_pmap",
    "run_threads",
    "segment_starts",
    "simulate_cpu_devices",
    "trace_from_order",
]
