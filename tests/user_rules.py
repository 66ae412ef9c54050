"""Rules of a user's own, in a user's own module: declared with public names only.

``tests/test_rules_open.py`` imports this module as a user would (and drops its
declarations afterwards); ``tests/backend_scripts/pmap_user_rules.py`` runs them on
simulated devices. Formulas, for the tests' independent expectations:

- ``staleness_power``: Δ = a; θ̃ ← θ̃ + Δ / (τ + 1)^p; θᵏ ← θ̃. p = 0 is DOWNPOUR, p = 1
  is DynSGD.
- ``damped_averaging``: λ local steps, then θ̃ ← θ̃ + β (mean_k θᵏ − θ̃); θᵏ ← θ̃. β = 1
  is model averaging.
"""

import jax
import jax.numpy as jnp

from asynclab.rules import MOMENTA, WORKER_MOMENTUM, Rule, declare
from asynclab.rules.parts import (
    accumulated_step,
    check_nonnegative,
    check_positive,
    common,
    reset_rule,
    reset_to_center,
    staleness_scaled,
    synchronous,
    worker_mean,
)


@declare("async",
         "DOWNPOUR with the commit scaled by 1/(τ+1)^p",
         "asynclab's tests",
         static=("local_steps",),
         state=MOMENTA)
def staleness_power(learning_rate: float, local_steps: int = 1, power: float = 0.5,
                    worker_momentum: float | None = None,
                    server_momentum: float | None = None) -> Rule:
    """Δ = a; θ̃ ← θ̃ + Δ / (τ + 1)^p; θᵏ ← θ̃ (p = 0: DOWNPOUR, p = 1: DynSGD)."""
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    power = check_nonnegative("power", power)
    return reset_rule(c, accumulated_step, staleness_scaled(lambda t: (t + 1.0) ** -power),
                      power=power)


@declare("sync",
         "model averaging damped by β: θ̃ ← θ̃ + β (mean θᵏ − θ̃)",
         "asynclab's tests",
         static=("local_steps",),
         state={"worker_momentum": WORKER_MOMENTUM},
         stepwise=True)
def damped_averaging(learning_rate: float, local_steps: int = 1, damping: float = 0.5,
                     worker_momentum: float | None = None) -> Rule:
    """λ local steps, θ̃ ← θ̃ + β (mean_k θᵏ − θ̃), θᵏ ← θ̃ (β = 1: model averaging)."""
    c = common(learning_rate, local_steps, worker_momentum)
    damping = check_positive("damping", damping)

    def aggregate(server, worker):
        mean = worker_mean(worker.params)
        center = jax.tree.map(lambda t, m: t + jnp.asarray(damping, t.dtype) * (m - t),
                              server.center, mean)
        return center, jnp.float32(1.0)

    return synchronous(inner=c.inner, local_steps=c.local_steps, aggregate=aggregate,
                       pull=reset_to_center, outer=c.outer,
                       hyperparameters={**c.hyperparameters, "damping": damping})
