"""What most rules share: their checked common hyperparameters, and the two families
most asynchronous rules belong to (commit, apply, reset; the elastic exchange)."""

from __future__ import annotations

from typing import NamedTuple

import optax

from ._checks import check_count, check_optional_momentum, check_positive
from ._compose import Apply, Commit, asynchronous
from ._exchange import elastic_center, elastic_pull, parameters, reset_to_center
from ._optimizers import Outer, worker_optimizer
from ._optimizers import server_momentum as heavy_ball


class Common(NamedTuple):
    """The checked hyperparameters most rules share, and what they make.

    Attributes:
      learning_rate: η, the workers' learning rate.
      local_steps: λ, local steps between two exchanges.
      inner: the workers' inner optimizer (optax).
      outer: the server's heavy ball (server momentum), or None.
      hyperparameters: the checked values, for the rule's record (``Rule.hyperparameters``).
    """

    learning_rate: float
    local_steps: int
    inner: optax.GradientTransformation
    outer: Outer | None
    hyperparameters: dict


def common(learning_rate, local_steps: int = 1, worker_momentum=None, server_momentum=None,
           *, nesterov: bool = False, inner: str = "sgd") -> Common:
    """The hyperparameters most rules share, checked (a ``ConfigError`` names the rule
    being declared and the field), with the optimizers they make.

    Args:
      learning_rate: η > 0 (may be traced).
      local_steps: λ >= 1.
      worker_momentum: a momentum in (−1, 1) of the workers' optax SGD, whose buffer
        survives pulls; None is no buffer.
      server_momentum: heavy ball at the server in (−1, 1)
        (:func:`~asynclab.rules.parts.server_momentum`); None is no outer step.
      nesterov: Nesterov momentum on the workers.
      inner: the workers' inner optimizer by name
        (:func:`~asynclab.rules.parts.worker_optimizer`: ``"sgd"`` or ``"adam"``).

    Declare the momenta as options that add state (``declare(..., state=MOMENTA)``).
    """
    learning_rate = check_positive("learning_rate", learning_rate)
    local_steps = check_count("local_steps", local_steps)
    worker_momentum = check_optional_momentum("worker_momentum", worker_momentum)
    server_momentum = check_optional_momentum("server_momentum", server_momentum)
    hyperparameters = {"learning_rate": learning_rate, "local_steps": local_steps,
                       "worker_momentum": worker_momentum, "server_momentum": server_momentum}
    outer = heavy_ball(server_momentum)
    optimizer = worker_optimizer(inner, learning_rate, worker_momentum, nesterov)
    return Common(learning_rate, local_steps, optimizer, outer, hyperparameters)


def reset_rule(common: Common, commit: Commit, apply: Apply, *, init_extra=None,
               **hyperparameters):
    """An asynchronous rule of the DOWNPOUR family: λ local steps, ``commit``, the server
    applies it with ``apply`` (through the server momentum of ``common``), the worker
    resets to the centre (:func:`~asynclab.rules.parts.reset_to_center`).

    Args:
      common: the shared hyperparameters (:func:`common`).
      commit: what the worker sends (``accumulated_step``, ``normalised_step(λ)``, ...).
      apply: how the server applies it (``add``, ``staleness_scaled(f)``, ...).
      init_extra: the server-side state of ``apply``, ``center -> state``, if it has one.
      **hyperparameters: the rule's own checked hyperparameters, for its record.
    """
    return asynchronous(inner=common.inner, local_steps=common.local_steps, commit=commit,
                        apply=apply, pull=reset_to_center, outer=common.outer,
                        init_extra=init_extra,
                        hyperparameters={**common.hyperparameters, **hyperparameters})


def elastic_rule(common: Common, elasticity):
    """Asynchronous elastic averaging (AEASGD's exchange): every λ local steps
    E = α (θᵏ − θ̃) with α = η ρ, θᵏ ← θᵏ − E and θ̃ ← θ̃ + E; the worker does not reset.

    Args:
      common: the shared hyperparameters (:func:`common`).
      elasticity: ρ > 0 (may be traced).
    """
    elasticity = check_positive("elasticity", elasticity)
    alpha = common.learning_rate * elasticity
    return asynchronous(inner=common.inner, local_steps=common.local_steps, commit=parameters,
                        apply=elastic_center(alpha), pull=elastic_pull(alpha),
                        outer=common.outer,
                        hyperparameters={**common.hyperparameters, "elasticity": elasticity})
