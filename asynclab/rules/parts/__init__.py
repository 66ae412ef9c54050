"""The parts rules are made of: local work, commit, server apply, outer step, pull.

A rule is a composition of these, the catalogue's and a user's alike; two rules that
share a part call the same function. Formulas: ``docs/rules.md``; a worker's
accumulated step is ``a = θᵏ − θ̃_pull``, its staleness ``τ = c − c_pull``.

The modules: ``_checks`` (hyperparameter checks), ``_optimizers`` (inner and outer
optimizers), ``_local`` (local work and starts), ``_exchange`` (commits, server updates,
aggregates, pulls), ``_compose`` (parts composed into a rule), ``_families`` (the
hyperparameters most rules share, the reset and elastic families).
"""

from ._checks import check_count as check_count
from ._checks import check_flag as check_flag
from ._checks import check_fraction as check_fraction
from ._checks import check_momentum as check_momentum
from ._checks import check_nonnegative as check_nonnegative
from ._checks import check_optional_momentum as check_optional_momentum
from ._checks import check_positive as check_positive
from ._checks import label as label
from ._checks import traced as traced
from ._compose import Aggregate as Aggregate
from ._compose import Apply as Apply
from ._compose import Commit as Commit
from ._compose import Pull as Pull
from ._compose import asynchronous as asynchronous
from ._compose import exchange_of as exchange_of
from ._compose import partial_round as partial_round
from ._compose import synchronize_of as synchronize_of
from ._compose import synchronous as synchronous
from ._exchange import DelayedNesterovState as DelayedNesterovState
from ._exchange import GapState as GapState
from ._exchange import accumulated_step as accumulated_step
from ._exchange import add as add
from ._exchange import average_params as average_params
from ._exchange import delay_compensated as delay_compensated
from ._exchange import delayed_nesterov as delayed_nesterov
from ._exchange import distance_scaled as distance_scaled
from ._exchange import elastic_average as elastic_average
from ._exchange import elastic_center as elastic_center
from ._exchange import elastic_pull as elastic_pull
from ._exchange import elastic_sum as elastic_sum
from ._exchange import gap_scaled as gap_scaled
from ._exchange import keep_params as keep_params
from ._exchange import normalised_step as normalised_step
from ._exchange import outer_gradient as outer_gradient
from ._exchange import outer_sgd as outer_sgd
from ._exchange import padded_workers as padded_workers
from ._exchange import parameters as parameters
from ._exchange import replace as replace
from ._exchange import reset_to_center as reset_to_center
from ._exchange import staleness_scaled as staleness_scaled
from ._exchange import worker_count as worker_count
from ._exchange import worker_mean as worker_mean
from ._families import Common as Common
from ._families import common as common
from ._families import elastic_rule as elastic_rule
from ._families import reset_rule as reset_rule
from ._local import ActiveSteps as ActiveSteps
from ._local import StopTest as StopTest
from ._local import dynamic_local_steps as dynamic_local_steps
from ._local import group_local_work as group_local_work
from ._local import local_work as local_work
from ._local import remember_pull as remember_pull
from ._local import start_at_center as start_at_center
from ._local import start_at_own as start_at_own
from ._local import worker_local_work as worker_local_work
from ._optimizers import INNER_OPTIMIZERS as INNER_OPTIMIZERS
from ._optimizers import Outer as Outer
from ._optimizers import outer_optimizer as outer_optimizer
from ._optimizers import server_momentum as server_momentum
from ._optimizers import worker_optimizer as worker_optimizer
from ._optimizers import worker_sgd as worker_sgd

__all__ = [
    "ActiveSteps", "Aggregate", "Apply", "Commit", "Common", "DelayedNesterovState",
    "GapState", "INNER_OPTIMIZERS", "Outer", "Pull", "StopTest", "accumulated_step", "add",
    "asynchronous", "average_params",
    "check_count", "check_flag", "check_fraction", "check_momentum", "check_nonnegative",
    "check_optional_momentum", "check_positive", "common", "delay_compensated",
    "delayed_nesterov", "distance_scaled", "dynamic_local_steps", "elastic_average",
    "elastic_center", "elastic_pull", "elastic_rule", "elastic_sum", "exchange_of",
    "gap_scaled", "group_local_work",
    "keep_params", "label", "local_work", "normalised_step", "outer_gradient", "outer_optimizer",
    "outer_sgd", "padded_workers", "parameters", "partial_round",
    "remember_pull", "replace", "reset_rule", "reset_to_center", "server_momentum",
    "staleness_scaled", "start_at_center", "start_at_own", "synchronize_of", "synchronous",
    "traced", "worker_count", "worker_local_work", "worker_mean", "worker_optimizer",
    "worker_sgd",
]
