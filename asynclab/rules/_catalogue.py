"""The update rules, each a few lines that combine the parts in ``asynclab.rules.parts``.

Every rule takes the worker learning rate η and (where it has local work) the window λ,
plus ``worker_momentum`` (an optax momentum on each worker whose buffer survives pulls)
and ``server_momentum`` (heavy ball on the sequence of central updates; negative values
compensate the implicit momentum of asynchrony). Formulas: ``docs/rules.md``.

Each factory is declared once with ``@declare``: its kind, description, reference,
static hyperparameters, the options that add state and whether it may be replayed step
by step; every other hyperparameter is traced (it may be a JAX array). The rules are
built only from public names (``asynclab.rules.declare`` and ``asynclab.rules.parts``),
as a rule in a user's own module is.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import _validate
from .._errors import ConfigError
from ._base import Rule
from ._declaration import MOMENTA, SERVER_MOMENTUM, WORKER_MOMENTUM, declare
from .parts import (
    INNER_OPTIMIZERS,
    accumulated_step,
    add,
    asynchronous,
    average_params,
    check_count,
    check_flag,
    check_fraction,
    check_momentum,
    check_nonnegative,
    check_positive,
    common,
    delay_compensated,
    delayed_nesterov,
    distance_scaled,
    dynamic_local_steps,
    elastic_pull,
    elastic_rule,
    elastic_sum,
    gap_scaled,
    group_local_work,
    keep_params,
    label,
    local_work,
    normalised_step,
    outer_gradient,
    outer_optimizer,
    outer_sgd,
    parameters,
    remember_pull,
    replace,
    reset_rule,
    reset_to_center,
    staleness_scaled,
    start_at_center,
    synchronous,
    traced,
    worker_sgd,
)

# ============================================================================ asynchronous


@declare("async",
         "one worker, plain SGD: the reference every rule reduces to",
         "Robbins & Monro 1951",
         static=("local_steps", "inner"),
         state={"worker_momentum": WORKER_MOMENTUM})
def sequential_sgd(learning_rate: float, local_steps: int = 1,
                   worker_momentum: float | None = None, inner: str = "sgd") -> Rule:
    """Sequential SGD, the reference: one worker, θ ← θ − η g, no server arithmetic.

    Run it on a one-worker cluster; each event of its trace is ``local_steps`` SGD steps,
    after which the recorded centre is the worker's parameters.
    """
    c = common(learning_rate, local_steps, worker_momentum, inner=inner)
    return asynchronous(inner=c.inner, local_steps=c.local_steps, commit=parameters,
                        apply=replace, pull=keep_params, hyperparameters=c.hyperparameters)


@declare("async",
         "commit the accumulated step, add it, reset to the centre",
         "Dean et al., NIPS 2012",
         static=("local_steps", "inner"),
         state=MOMENTA)
def downpour(learning_rate: float, local_steps: int = 1, worker_momentum: float | None = None,
             server_momentum: float | None = None, inner: str = "sgd") -> Rule:
    """DOWNPOUR (Dean et al. 2012): Δ = a; θ̃ ← θ̃ + Δ; θᵏ ← θ̃.

    With ``local_steps = 1`` this is plain asynchronous SGD. ``inner="adam"`` makes the
    local work λ Adam steps (the worker keeps its moments across pulls).

    References:
      Dean et al., "Large Scale Distributed Deep Networks", NIPS 2012.
    """
    c = common(learning_rate, local_steps, worker_momentum, server_momentum, inner=inner)
    return reset_rule(c, accumulated_step, add)


@declare("async",
         "DOWNPOUR with the commit scaled by 1/(τ+1)",
         "Jiang et al., SIGMOD 2017",
         static=("local_steps", "inner"),
         state=MOMENTA)
def dynsgd(learning_rate: float, local_steps: int = 1, worker_momentum: float | None = None,
           server_momentum: float | None = None, inner: str = "sgd") -> Rule:
    """DynSGD (Jiang et al. 2017): Δ = a; θ̃ ← θ̃ + Δ / (τ + 1); θᵏ ← θ̃."""
    c = common(learning_rate, local_steps, worker_momentum, server_momentum, inner=inner)
    return reset_rule(c, accumulated_step, staleness_scaled(lambda t: 1.0 / (t + 1.0)))


@declare("async",
         "accumulated gradient normalisation: commit a/λ",
         "Hermans, ACML 2017",
         static=("local_steps", "inner"),
         state=MOMENTA)
def agn(learning_rate: float, local_steps: int = 1, worker_momentum: float | None = None,
        server_momentum: float | None = None, inner: str = "sgd") -> Rule:
    """AGN, accumulated gradient normalisation (Hermans 2017): Δ = a / λ; θ̃ ← θ̃ + Δ.

    With λ = 1 it is DOWNPOUR. The thesis's heuristic: λ ≈ (n + number of layers) / 2.
    """
    c = common(learning_rate, local_steps, worker_momentum, server_momentum, inner=inner)
    return reset_rule(c, normalised_step(c.local_steps), add)


@declare("async",
         "AGN scaled per weight by 1/(γ⁻¹(θ̃−θ̃_pull)²+1)",
         "Hermans 2017 (thesis), ch. 4",
         static=("local_steps", "norm", "inner"),
         state=MOMENTA)
def adag(learning_rate: float, local_steps: int = 1, gamma: float = 1e-4, norm: bool = False,
         worker_momentum: float | None = None, server_momentum: float | None = None,
         inner: str = "sgd") -> Rule:
    """ADAG (Hermans 2017, ch. 4): AGN's Δ = a / λ scaled per weight by the distance
    the centre moved since the worker pulled: θ̃ ← θ̃ + Δ ⊙ 1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1).

    Args:
      gamma: γ > 0; γ → ∞ recovers AGN. The thesis used 1e-4.
      norm: use the scalar ‖θ̃ − θ̃_pull‖² instead of the element-wise square.
    """
    c = common(learning_rate, local_steps, worker_momentum, server_momentum, inner=inner)
    gamma = check_positive("gamma", gamma)
    norm = check_flag("norm", norm)
    return reset_rule(c, normalised_step(c.local_steps), distance_scaled(gamma, norm),
                      gamma=gamma, norm=norm)


@declare("async",
         "step η/τ (η when τ = 0)",
         "Zhang, Gupta, Lian, Liu, IJCAI 2016",
         static=("local_steps",),
         state=MOMENTA)
def staleness_aware(learning_rate: float, local_steps: int = 1,
                    worker_momentum: float | None = None,
                    server_momentum: float | None = None) -> Rule:
    """Staleness-aware SGD (Zhang, Gupta, Lian, Liu 2016): step η/τ (η when τ = 0)."""
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    return reset_rule(c, accumulated_step, staleness_scaled(lambda t: 1.0 / jnp.maximum(t, 1.0)))


@declare("async",
         "step η·n/max(n, τ)",
         "Mishchenko et al., NeurIPS 2022",
         static=("workers", "local_steps"),
         state=MOMENTA)
def delay_adaptive(learning_rate: float, workers: int, local_steps: int = 1,
                   worker_momentum: float | None = None,
                   server_momentum: float | None = None) -> Rule:
    """Delay-adaptive step (Mishchenko et al. 2022): η_k = η · n / max(n, τ_k).

    Args:
      workers: n, the number of workers (``asynclab.run`` fills it in from the cluster).
    """
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    n = float(check_count("workers", workers))
    return reset_rule(c, accumulated_step, staleness_scaled(lambda t: n / jnp.maximum(n, t)),
                      workers=int(n))


@declare("async",
         "delay compensation g + κ g⊙g⊙(θ̃−θ̃_pull)",
         "Zheng et al., ICML 2017",
         static=("local_steps",),
         state=MOMENTA)
def dc_asgd(learning_rate: float, local_steps: int = 1, kappa: float = 0.04,
            worker_momentum: float | None = None, server_momentum: float | None = None) -> Rule:
    """DC-ASGD (Zheng et al. 2017): g ← g + κ g ⊙ g ⊙ (θ̃ − θ̃_pull). MXNet's κ = 0.04."""
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    kappa = check_nonnegative("kappa", kappa)
    return reset_rule(c, accumulated_step,
                      delay_compensated(kappa, c.learning_rate, c.local_steps), kappa=kappa)


@declare("async",
         "divide the commit by the gap 1 + |θ̃−θ̃_pull|/(η(√v̂+ε))",
         "Barkai, Hakimi, Schuster, ICLR 2020",
         static=("local_steps",),
         state=MOMENTA)
def gap_aware(learning_rate: float, local_steps: int = 1, decay: float = 0.999,
              worker_momentum: float | None = None, server_momentum: float | None = None) -> Rule:
    """Gap-aware (Barkai, Hakimi, Schuster 2020): Δ ← Δ / G,
    G = 1 + |θ̃ − θ̃_pull| / C, C = η (√v̂ + ε), v an EMA (``decay``) of g²."""
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    decay = check_fraction("decay", decay)
    init, apply = gap_scaled(c.learning_rate, c.local_steps, decay)
    return reset_rule(c, accumulated_step, apply, init_extra=init, decay=decay)


@declare("async",
         "asynchronous EASGD: elastic exchange α(θᵏ−θ̃), no reset",
         "Zhang, Choromanska, LeCun, NIPS 2015",
         static=("local_steps", "inner"),
         state={"worker_momentum": WORKER_MOMENTUM})
def aeasgd(learning_rate: float, local_steps: int = 32, elasticity: float = 5.0,
           worker_momentum: float | None = None, inner: str = "sgd") -> Rule:
    """Asynchronous EASGD (Zhang, Choromanska, LeCun 2015).

    Every λ local steps the worker reads θ̃, E = α (θᵏ − θ̃) with α = ηρ; θᵏ ← θᵏ − E and
    θ̃ ← θ̃ + E. The worker does not reset. dist-keras defaults: ρ = 5, η = 0.01, λ = 32.
    """
    c = common(learning_rate, local_steps, worker_momentum, inner=inner)
    return elastic_rule(c, elasticity)


@declare("async",
         "asynchronous EASGD with Nesterov momentum on the workers",
         "Zhang, Choromanska, LeCun, NIPS 2015",
         static=("local_steps",))
def eamsgd(learning_rate: float, local_steps: int = 32, elasticity: float = 5.0,
           momentum: float = 0.99) -> Rule:
    """EAMSGD: asynchronous EASGD with a Nesterov-momentum inner optimizer (momentum δ).

    With momentum 0 it is asynchronous EASGD.
    """
    c = common(learning_rate, local_steps, check_momentum("momentum", momentum), nesterov=True)
    rule = elastic_rule(c, elasticity)
    hp = {k: v for k, v in rule.hyperparameters.items() if k != "worker_momentum"}
    return rule._replace(hyperparameters={**hp, "momentum": c.hyperparameters["worker_momentum"]})


@declare("async",
         "synchronous groups (averaging), asynchronous between groups",
         "Hadjis et al. (Omnivore) 2016; Mitliagkas et al. 2016",
         static=("local_steps", "group_size", "between"),
         state=MOMENTA)
def mixed(learning_rate: float, local_steps: int = 1, group_size: int = 2,
          between: str = "downpour", worker_momentum: float | None = None,
          server_momentum: float | None = None) -> Rule:
    """Mixed (hybrid): synchronous inside groups of ``group_size`` workers (model
    averaging over the group after λ local steps), asynchronous between groups with the
    rule ``between`` (any asynchronous rule of the reset family: downpour, agn, dynsgd,
    adag, staleness_aware, dc_asgd, gap_aware).

    Each group is one worker to the server; the cluster must have the same ``group_size``.
    """
    group_size = check_count("group_size", group_size)
    allowed = ("downpour", "agn", "dynsgd", "adag", "staleness_aware", "dc_asgd", "gap_aware")
    if between not in allowed:
        raise ConfigError(f"{label('between')} must be one of {', '.join(allowed)}, got "
                          f"{between!r}")
    base = _REGISTRY_BETWEEN[between](learning_rate, local_steps,
                                      worker_momentum=worker_momentum,
                                      server_momentum=server_momentum)
    inner = worker_sgd(base.hyperparameters["learning_rate"],
                       base.hyperparameters["worker_momentum"])
    return base._replace(
        init_worker=start_at_center(inner, copies=group_size),
        local=remember_pull(group_local_work(inner, base.local_steps, group_size)),
        hyperparameters={**base.hyperparameters, "group_size": group_size, "between": between},
        group_size=group_size,
    )


_REGISTRY_BETWEEN = {"downpour": downpour, "agn": agn, "dynsgd": dynsgd, "adag": adag,
                     "staleness_aware": staleness_aware, "dc_asgd": dc_asgd,
                     "gap_aware": gap_aware}


# ============================================================================ synchronous


@declare("sync",
         "λ local SGD steps per worker, then average the parameters",
         "Zinkevich et al., NIPS 2010; Hermans 2017, ch. 2",
         static=("local_steps",),
         state=MOMENTA,
         stepwise=True)
def model_averaging(learning_rate: float, local_steps: int = 1,
                    worker_momentum: float | None = None,
                    server_momentum: float | None = None) -> Rule:
    """Model averaging: λ local SGD steps on every worker, then θ̃ ← mean_k θᵏ.

    Workers start from their own initial parameters (identical, or random per worker in
    the random-initialisation study) and take the averaged centre after every round.

    References:
      Zinkevich et al., "Parallelized Stochastic Gradient Descent", NIPS 2010;
      Hermans 2017, ch. 2.
    """
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    return synchronous(inner=c.inner, local_steps=c.local_steps, aggregate=average_params,
                       pull=reset_to_center, outer=c.outer, hyperparameters=c.hyperparameters)


@declare("sync",
         "average the workers' gradient steps: one SGD step with an n× batch",
         "e.g. Goyal et al. 2017",
         static=(),
         state={"server_momentum": SERVER_MOMENTUM},
         stepwise=True)
def synchronous_sgd(learning_rate: float, server_momentum: float | None = None) -> Rule:
    """Synchronous mini-batch SGD: θ̃ ← θ̃ − η · mean_k gᵏ, all workers take θ̃.

    Every worker takes one SGD step from the centre and the server averages the results:
    mean_k (θ̃ − η gᵏ) = θ̃ − η mean_k gᵏ, one SGD step with an n× larger batch. It is
    model averaging with λ = 1, built from the same parts.
    """
    c = common(learning_rate, 1, None, server_momentum)
    hp = {"learning_rate": c.learning_rate,
          "server_momentum": c.hyperparameters["server_momentum"]}
    # no worker momentum here: one step from the centre per round makes it meaningless
    c = c._replace(inner=optax.sgd(c.learning_rate))
    return synchronous(inner=c.inner, local_steps=1, aggregate=average_params,
                       pull=reset_to_center, outer=c.outer, hyperparameters=hp)


@declare("sync",
         "model averaging every H steps",
         "Stich, ICLR 2019",
         static=("local_steps",),
         state=MOMENTA,
         stepwise=True)
def local_sgd(learning_rate: float, local_steps: int = 8, worker_momentum: float | None = None,
              server_momentum: float | None = None) -> Rule:
    """Local SGD (Stich 2018): model averaging every H = ``local_steps`` steps."""
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    return synchronous(inner=c.inner, local_steps=c.local_steps, aggregate=average_params,
                       pull=reset_to_center, outer=c.outer, hyperparameters=c.hyperparameters)


@declare("sync",
         "H = 1 for a warm-up, then local SGD with H = λ",
         "Lin et al., ICLR 2020",
         static=("local_steps", "warmup_rounds"),
         state=MOMENTA)
def post_local_sgd(learning_rate: float, local_steps: int = 8, warmup_rounds: int = 10,
                   worker_momentum: float | None = None,
                   server_momentum: float | None = None) -> Rule:
    """Post-local SGD (Lin et al. 2018): H = 1 for ``warmup_rounds`` rounds, then H = λ.

    The simulator schedules the warm-up rounds with one local step each.
    """
    c = common(learning_rate, local_steps, worker_momentum, server_momentum)
    warmup = check_count("warmup_rounds", warmup_rounds, minimum=0)
    h = c.local_steps

    def active_steps(worker):
        return jnp.where(worker.pulled_clock < warmup, 1, h)

    return synchronous(inner=c.inner, local_steps=h,
                       aggregate=average_params, pull=reset_to_center, outer=c.outer,
                       local=local_work(c.inner, h, active_steps=active_steps),
                       hyperparameters={**c.hyperparameters, "warmup_rounds": warmup},
                       warmup_rounds=warmup)


@declare("sync",
         "synchronous elastic averaging, optional equilibrium early stop",
         "Zhang, Choromanska, LeCun, NIPS 2015",
         static=("local_steps", "early_stop"),
         state={"worker_momentum": WORKER_MOMENTUM},
         stepwise=True)
def easgd(learning_rate: float, local_steps: int = 1, elasticity: float = 1.0,
          early_stop: bool = False, worker_momentum: float | None = None) -> Rule:
    """Synchronous EASGD (Zhang, Choromanska, LeCun 2015), α = ηρ, β = nα.

    After λ local steps: θᵏ ← θᵏ − α (θᵏ − θ̃) and θ̃ ← θ̃ + α Σ_k (θᵏ − θ̃), both from the
    values before the exchange. (The paper's Algorithm 1 moves the worker elastically
    before its first local step of a period and evaluates that step's gradient at the
    pre-elastic point; here the elastic terms close the period. For λ = 1 they differ
    only in whether the gradient sees the elastic move of the same round.)

    Args:
      elasticity: ρ > 0.
      early_stop: the thesis's equilibrium test: stop the local work of a round once
        ‖η g‖ − ‖α (θᵏ − θ̃)‖ < η (the workers would only fight the elastic force).
    """
    c = common(learning_rate, local_steps, worker_momentum)
    elasticity = check_positive("elasticity", elasticity)
    early_stop = check_flag("early_stop", early_stop)
    alpha = c.learning_rate * elasticity
    lr = c.learning_rate

    def at_equilibrium(grads, params, worker):
        step = lr * jnp.sqrt(sum(jnp.sum(g * g) for g in _leaves(grads)))
        pull = alpha * jnp.sqrt(sum(jnp.sum((p - q) ** 2) for p, q in
                                    zip(_leaves(params), _leaves(worker.pulled_center),
                                        strict=True)))
        return step - pull < lr

    # the equilibrium test stops the local work early (and so is no step-by-step replay)
    local = local_work(c.inner, c.local_steps, stop=at_equilibrium) if early_stop else None
    return synchronous(inner=c.inner, local_steps=c.local_steps,
                       aggregate=elastic_sum(alpha), pull=elastic_pull(alpha), local=local,
                       keep_pulled=early_stop,
                       hyperparameters={**c.hyperparameters, "elasticity": elasticity,
                                        "early_stop": early_stop})


def _leaves(tree):
    return jax.tree.leaves(tree)


#: the inner optimizers DiLoCo takes by name (``inner=``)
DILOCO_INNER = ("adamw", "sgd")


def inner_optimizers(rule: str) -> tuple[str, ...]:
    """The names rule ``rule`` accepts as its workers' inner optimizer (``inner=``)."""
    return DILOCO_INNER if rule in ("diloco", "async_diloco") else INNER_OPTIMIZERS


def _diloco_inner(inner, learning_rate, weight_decay) -> optax.GradientTransformation:
    """DiLoCo's inner optimizer by name: AdamW (with ``weight_decay``) or plain SGD."""
    if inner == "adamw":
        return optax.adamw(learning_rate, weight_decay=weight_decay)
    if inner == "sgd":
        if not traced(weight_decay) and weight_decay:
            raise ConfigError(f"{label('weight_decay')} needs inner='adamw'")
        return optax.sgd(learning_rate)
    raise ConfigError(f"{label('inner')} must be one of {', '.join(DILOCO_INNER)}, "
                      f"got {inner!r}")


def _diloco_common(learning_rate, local_steps, inner, weight_decay, outer_learning_rate,
                   outer_momentum):
    """The checked hyperparameters both DiLoCos share, and their inner optimizer:
    ``(inner optimizer, hyperparameters)``."""
    learning_rate = check_positive("learning_rate", learning_rate)
    local_steps = check_count("local_steps", local_steps)
    weight_decay = check_nonnegative("weight_decay", weight_decay)
    outer_learning_rate = check_positive("outer_learning_rate", outer_learning_rate)
    outer_momentum = check_momentum("outer_momentum", outer_momentum)
    hp = {"learning_rate": learning_rate, "local_steps": local_steps, "inner": inner,
          "weight_decay": weight_decay, "outer_learning_rate": outer_learning_rate,
          "outer_momentum": outer_momentum}
    return _diloco_inner(inner, learning_rate, weight_decay), hp


@declare("sync",
         "H inner AdamW steps, outer Nesterov SGD on θ̃ − mean θᵏ",
         "Douillard et al. 2023",
         static=("local_steps", "inner", "nesterov"),
         stepwise=True)
def diloco(learning_rate: float = 4e-4, local_steps: int = 50, inner: str = "adamw",
           weight_decay: float = 0.0, outer_learning_rate: float = 0.7,
           outer_momentum: float = 0.9, nesterov: bool = True) -> Rule:
    """DiLoCo (Douillard et al. 2023): H inner AdamW steps per replica; the outer
    gradient θ̃ − mean_k θᵏ goes through SGD with Nesterov momentum (lr 0.7, 0.9);
    replicas reset to θ̃ and keep their inner optimizer state.

    With outer lr 1 and no momentum it is model averaging; with H = 1 and an SGD inner
    optimizer, synchronous SGD.

    Args:
      inner: "adamw" or "sgd".
    """
    inner_opt, hp = _diloco_common(learning_rate, local_steps, inner, weight_decay,
                                   outer_learning_rate, outer_momentum)
    local_steps, outer_learning_rate, outer_momentum = (
        hp["local_steps"], hp["outer_learning_rate"], hp["outer_momentum"])
    nesterov = check_flag("nesterov", nesterov)
    # the momentum buffer is always there (the momentum may be traced); with momentum 0 it
    # adds 0·m, and Nesterov's look-ahead adds 0·m again, leaving plain outer SGD
    outer = outer_optimizer(optax.sgd(outer_learning_rate, momentum=outer_momentum,
                                      nesterov=nesterov))
    hp = {**hp, "nesterov": nesterov}
    return synchronous(inner=inner_opt, local_steps=local_steps, aggregate=average_params,
                       pull=reset_to_center, outer=outer, hyperparameters=hp)


@declare("async",
         "DiLoCo with asynchronous commits: outer Nesterov per commit, Delayed Nesterov, "
         "dynamic local updates",
         "Liu et al., arXiv 2401.09135 (2024)",
         static=("local_steps", "inner", "delay_period", "dynamic", "speeds"))
def async_diloco(learning_rate: float = 4e-4, local_steps: int = 50, inner: str = "adamw",
                 weight_decay: float = 0.0, outer_learning_rate: float = 0.7,
                 outer_momentum: float = 0.9, delay_period: int = 1, dynamic: bool = False,
                 speeds: tuple[float, ...] | None = None) -> Rule:
    """Asynchronous DiLoCo (Liu et al. 2024): each worker runs H inner AdamW steps from
    the centre θ̃_pull it pulled and commits its outer gradient Δᵏ = θ̃_pull − θᵏ on its
    own; the server applies it to the current centre with an outer Nesterov SGD (ε, β);
    the worker resets to the new centre and keeps its inner optimizer state.

    - ``delay_period = 1`` (naive): one Nesterov step per commit, m ← β m + Δ,
      θ̃ ← θ̃ − ε (Δ + β m) (optax's ``sgd(ε, β, nesterov=True)``).
    - ``delay_period = N > 1`` (Delayed Nesterov, DN): every commit takes the plain step
      θ̃ ← θ̃ − ε Δ / N and adds Δ to a buffer; every N-th commit also updates the momentum
      with the buffer's mean, m ← β m + mean(buffer), and applies θ̃ ← θ̃ − ε β m
      (:func:`~asynclab.rules.parts.delayed_nesterov`).
    - ``dynamic`` (dynamic local updates, DyLU): worker k takes
      H_k = max(1, ⌊H v_k / max_j v_j⌋) steps, v_k its speed
      (:func:`~asynclab.rules.parts.dynamic_local_steps`); ``asynclab.run`` fills
      ``speeds`` in from the cluster (v_k = 1 / time_scale_k).

    With H = 1, an SGD inner optimizer, ε = 1 and β = 0 it is DOWNPOUR, bit for bit.

    Args:
      inner: "adamw" or "sgd".
      delay_period: N >= 1, the commits between two momentum updates.
      dynamic: give every worker a window in proportion to its speed (DyLU).
      speeds: the workers' speeds (steps per second; only their ratios matter), one per
        worker, read only with ``dynamic``.

    References:
      Liu, Chhaparia, Douillard, Kale, Rusu, Shen, Szlam, Ranzato, "Asynchronous
      Local-SGD Training for Language Modeling", arXiv 2401.09135, 2024.
    """
    inner_opt, hp = _diloco_common(learning_rate, local_steps, inner, weight_decay,
                                   outer_learning_rate, outer_momentum)
    local_steps, outer_learning_rate, outer_momentum = (
        hp["local_steps"], hp["outer_learning_rate"], hp["outer_momentum"])
    delay_period = check_count("delay_period", delay_period)
    dynamic = check_flag("dynamic", dynamic)
    speeds = _speeds(dynamic, speeds)
    if delay_period == 1:
        init, apply = outer_sgd(optax.sgd(outer_learning_rate, momentum=outer_momentum,
                                          nesterov=True))
    else:
        init, apply = delayed_nesterov(outer_learning_rate, outer_momentum, delay_period)
    worker_steps = None
    if dynamic:
        worker_steps = dynamic_local_steps(local_steps, speeds)
        if len(set(worker_steps)) == 1:  # equal windows: the plain local work
            worker_steps = None
    hp = {**hp, "delay_period": delay_period, "dynamic": dynamic, "speeds": speeds}
    return asynchronous(inner=inner_opt, local_steps=local_steps, commit=outer_gradient,
                        apply=apply, pull=reset_to_center, init_extra=init,
                        worker_steps=worker_steps, hyperparameters=hp)


def _speeds(dynamic, speeds):
    """The workers' speeds as a tuple of finite numbers > 0, read only with ``dynamic``."""
    if not dynamic:
        if speeds is not None:
            raise ConfigError(f"{label('speeds')} are read only with dynamic=True, got "
                              f"speeds={speeds!r}")
        return None
    if speeds is None:
        raise ConfigError(f"{label('speeds')}: dynamic=True needs the workers' speeds, one "
                          "per worker (asynclab.run fills them in from the cluster's "
                          "time_scale)")
    if isinstance(speeds, str | bytes) or not isinstance(speeds, Sequence | np.ndarray) \
            or len(speeds) == 0:
        raise ConfigError(f"{label('speeds')} must be a sequence of one number > 0 per "
                          f"worker, got {speeds!r}")
    return tuple(_validate.number(v, label(f"speeds[{k}]"), low=0, low_open=True)
                 for k, v in enumerate(speeds))
