"""Cluster timing models, the SimPy simulator that turns them into a trace, and its
array-speed twin that draws many seeds' traces at once."""

from .._facts import ScheduleFacts as ScheduleFacts
from ._activity import KINDS as KINDS
from ._activity import Activity as Activity
from ._arrays import array_coverage as array_coverage
from ._arrays import simulate_async_many as simulate_async_many
from ._arrays import simulate_sync_many as simulate_sync_many
from ._availability import Availability as Availability
from ._availability import Failures as Failures
from ._availability import goodput as goodput
from ._availability import read_availability as read_availability
from ._distributions import FAMILIES as FAMILIES
from ._distributions import DistributionFit as DistributionFit
from ._distributions import fit_distribution as fit_distribution
from ._distributions import fit_step_times as fit_step_times
from ._expected import expected_events as expected_events
from ._expected import hopeless as hopeless
from ._export import FORMATS as EXPORT_FORMATS
from ._export import export_trace as export_trace
from ._export import trace_events as trace_events
from ._export import trace_records as trace_records
from ._fit import EXTENDS as EXTENDS
from ._fit import FittedTimes as FittedTimes
from ._fit import fit_log as fit_log
from ._log_adapters import log_from_threads as log_from_threads
from ._log_adapters import measured_trace as measured_trace
from ._log_read import example_log_path as example_log_path
from ._log_read import read_log as read_log
from ._log_write import write_log as write_log
from ._orders import random_order_trace as random_order_trace
from ._orders import round_robin_trace as round_robin_trace
from ._orders import simulate_sync_with_warmup as simulate_sync_with_warmup
from ._orders import trace_from_order as trace_from_order
from ._predict import predict_staleness as predict_staleness
from ._predict import staleness_distribution as staleness_distribution
from ._predict import total_variation as total_variation
from ._predict import wasserstein as wasserstein
from ._queue import Repairman as Repairman
from ._queue import machine_repairman as machine_repairman
from ._replayed import ENDS as ENDS
from ._replayed import ReplayedTimes as ReplayedTimes
from ._replayed import from_log as from_log
from ._rounds import LATE as LATE
from ._rounds import SemiSync as SemiSync
from ._schedule import SIMULATORS as SIMULATORS
from ._schedule import check_simulator as check_simulator
from ._schedule import schedule as schedule
from ._schedule import schedules as schedules
from ._simulator import simulate_async as simulate_async
from ._simulator import simulator_bytes as simulator_bytes
from ._steplog import StepLog as StepLog
from ._stragglers import StragglerFit as StragglerFit
from ._stragglers import fit_stragglers as fit_stragglers
from ._summary import summarize_log as summarize_log
from ._sync import simulate_sync as simulate_sync
from ._timing import DISTRIBUTIONS as DISTRIBUTIONS
from ._timing import Cluster as Cluster
from ._timing import ComputeTime as ComputeTime
from ._timing import Link as Link
from ._timing import Straggler as Straggler
from ._timing import TimingModel as TimingModel
from ._timing import heterogeneous as heterogeneous
from ._trace import COMMITS as COMMITS
from ._trace import REJOINS as REJOINS
from ._trace import ROUNDS as ROUNDS
from ._trace import ROUNDS_DISCARD as ROUNDS_DISCARD
from ._trace import ROUNDS_STALE as ROUNDS_STALE
from ._trace import TRACE_KINDS as TRACE_KINDS
from ._trace import RoundTrace as RoundTrace
from ._trace import Trace as Trace
from ._trace import rejoin_events as rejoin_events
from ._trace import slow_workers as slow_workers

__all__ = [
    "read_availability",
    "goodput",
    "Availability",
    "Failures",
    "Activity",
    "array_coverage",
    "Cluster",
    "LATE",
    "SemiSync",
    "ComputeTime",
    "DistributionFit",
    "DISTRIBUTIONS",
    "ENDS",
    "example_log_path",
    "expected_events",
    "export_trace",
    "EXPORT_FORMATS",
    "EXTENDS",
    "FAMILIES",
    "fit_distribution",
    "fit_log",
    "fit_step_times",
    "fit_stragglers",
    "FittedTimes",
    "from_log",
    "heterogeneous",
    "hopeless",
    "KINDS",
    "Link",
    "log_from_threads",
    "machine_repairman",
    "measured_trace",
    "predict_staleness",
    "random_order_trace",
    "read_log",
    "Repairman",
    "ReplayedTimes",
    "round_robin_trace",
    "schedule",
    "schedules",
    "SIMULATORS",
    "check_simulator",
    "ScheduleFacts",
    "RoundTrace",
    "simulate_async",
    "simulate_async_many",
    "simulate_sync",
    "simulate_sync_many",
    "simulate_sync_with_warmup",
    "simulator_bytes",
    "slow_workers",
    "staleness_distribution",
    "StepLog",
    "Straggler",
    "StragglerFit",
    "summarize_log",
    "TimingModel",
    "total_variation",
    "Trace",
    "TRACE_KINDS",
    "COMMITS",
    "REJOINS",
    "ROUNDS",
    "ROUNDS_DISCARD",
    "ROUNDS_STALE",
    "rejoin_events",
    "trace_events",
    "trace_from_order",
    "trace_records",
    "wasserstein",
    "write_log",
]
