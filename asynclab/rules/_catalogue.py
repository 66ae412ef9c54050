"""The update rules, each a composition of the parts in ``_parts.py``."""

from __future__ import annotations

import optax

from ._base import AsynchronousRule, SynchronousRule, server_at
from ._parts import (
    accumulated_step,
    add,
    asynchronous,
    average_params,
    check_count,
    check_positive,
    keep_params,
    local_work,
    parameters,
    replace,
    reset_to_center,
    start_at_own,
    synchronize_of,
)


def sequential_sgd(learning_rate: float, local_steps: int = 1) -> AsynchronousRule:
    """Sequential SGD, the reference: one worker, θ ← θ − η g, no server arithmetic.

    Run it on a one-worker cluster; each event of its trace is ``local_steps`` SGD steps,
    after which the recorded centre is the worker's parameters.
    """
    learning_rate = check_positive("sequential_sgd", "learning_rate", learning_rate)
    local_steps = check_count("sequential_sgd", "local_steps", local_steps)
    return asynchronous(
        "sequential_sgd",
        inner=optax.sgd(learning_rate),
        local_steps=local_steps,
        commit=parameters,
        apply=replace,
        pull=keep_params,
        hyperparameters={"learning_rate": learning_rate, "local_steps": local_steps},
    )


def downpour(learning_rate: float, local_steps: int = 1) -> AsynchronousRule:
    """DOWNPOUR (Dean et al. 2012): commit the accumulated step, add it, reset.

    .. math:: Δ = θ^k − θ̃_{pull},\\quad θ̃ ← θ̃ + Δ,\\quad θ^k ← θ̃

    With ``local_steps = 1`` this is plain asynchronous SGD.

    Args:
      learning_rate: η of the workers' SGD.
      local_steps: λ, local steps between two exchanges (the communication window).

    References:
      Dean et al., "Large Scale Distributed Deep Networks", NIPS 2012.
    """
    learning_rate = check_positive("downpour", "learning_rate", learning_rate)
    local_steps = check_count("downpour", "local_steps", local_steps)
    return asynchronous(
        "downpour",
        inner=optax.sgd(learning_rate),
        local_steps=local_steps,
        commit=accumulated_step,
        apply=add,
        pull=reset_to_center,
        hyperparameters={"learning_rate": learning_rate, "local_steps": local_steps},
    )


def model_averaging(learning_rate: float, local_steps: int = 1) -> SynchronousRule:
    """Model averaging: λ local SGD steps on every worker, then θ̃ ← mean_k θᵏ.

    Workers start from their own initial parameters (identical, or random per worker in
    the random-initialisation study) and take the averaged centre after every round.

    Args:
      learning_rate: η of the workers' SGD.
      local_steps: λ, local steps per round.

    References:
      Zinkevich et al., "Parallelized Stochastic Gradient Descent", NIPS 2010;
      Hermans 2017, ch. 2.
    """
    learning_rate = check_positive("model_averaging", "learning_rate", learning_rate)
    local_steps = check_count("model_averaging", "local_steps", local_steps)
    return _averaging("model_averaging", learning_rate, local_steps)


def synchronous_sgd(learning_rate: float) -> SynchronousRule:
    """Synchronous mini-batch SGD: θ̃ ← θ̃ − η · mean_k gᵏ, all workers take θ̃.

    Every worker takes one SGD step from the centre and the server averages the results:
    mean_k (θ̃ − η gᵏ) = θ̃ − η mean_k gᵏ, one SGD step with an n× larger batch. It is
    model averaging with λ = 1 from identical starts, and is built from the same parts.
    """
    learning_rate = check_positive("synchronous_sgd", "learning_rate", learning_rate)
    return _averaging("synchronous_sgd", learning_rate, 1, local_steps_is_parameter=False)


def _averaging(name, learning_rate, local_steps, local_steps_is_parameter=True):
    inner = optax.sgd(learning_rate)
    hyperparameters = {"learning_rate": learning_rate}
    if local_steps_is_parameter:
        hyperparameters["local_steps"] = local_steps
    return SynchronousRule(
        name=name,
        init_server=server_at,
        init_worker=start_at_own(inner),
        local=local_work(inner, local_steps),
        synchronize=synchronize_of(average_params, reset_to_center),
        hyperparameters=hyperparameters,
    )
