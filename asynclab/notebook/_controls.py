"""The explorer's controls: one widget per setting of a run (problem, rule, n, λ, η, σ²,
budget, seeds), of its cluster (compute-time distribution, heterogeneity, straggler) and
of the rule's own hyperparameters, each within the range it offers."""

from __future__ import annotations

import functools

import ipywidgets as widgets

from .. import _validate
from .._errors import ConfigError
from ..cluster import DISTRIBUTIONS
from ..rules import RULES, inner_optimizers

#: The 2-D surfaces the explorer draws (problems with a plotting domain).
SURFACES = ("beale", "rosenbrock", "booth", "himmelblau")

#: The largest gradient-noise variance σ² the control offers. σ² is a traced value of
#: the replay: only going from 0 to σ² > 0 (noise drawn or not) compiles.
NOISE_MAX = 100.0

#: Control ranges for traced rule hyperparameters: name -> (kind, min, max, step).
#: "log" is a base-10 exponent range. Unknown names get a plain number box.
_RANGES = {
    "worker_momentum": ("lin", -0.5, 0.99, 0.01),
    "server_momentum": ("lin", -0.5, 0.99, 0.01),
    "momentum": ("lin", 0.0, 0.999, 0.001),
    "outer_momentum": ("lin", 0.0, 0.99, 0.01),
    "outer_learning_rate": ("lin", 0.05, 1.5, 0.05),
    "gamma": ("log", -6, 0, 0.1),
    "elasticity": ("log", -2, 2, 0.1),
    "kappa": ("lin", 0.0, 1.0, 0.01),
    "decay": ("lin", 0.9, 0.9999, 0.0001),
    "weight_decay": ("lin", 0.0, 0.1, 0.001),
}

#: Meanings shown next to a rule's hyperparameters.
_LABELS = {
    "worker_momentum": "worker momentum",
    "server_momentum": "server momentum",
    "momentum": "momentum δ",
    "outer_momentum": "outer momentum",
    "outer_learning_rate": "outer η",
    "gamma": "γ (ADAG)",
    "elasticity": "elasticity ρ",
    "kappa": "κ (DC-ASGD)",
    "decay": "decay",
    "weight_decay": "weight decay",
}

#: Static rule settings the explorer does not show: the run sets them itself (async
#: DiLoCo's speeds from the cluster, with ``dynamic``).
_HIDDEN_STATIC = ("local_steps", "workers", "speeds")

STYLE = {"description_width": "150px"}
WIDE = widgets.Layout(width="430px")


def _slider(kind, low, high, step, value, description):
    if kind == "log":
        value = min(max(value, 10.0 ** low), 10.0 ** high)
        return widgets.FloatLogSlider(value=value, base=10, min=low, max=high, step=step,
                                      description=description, style=STYLE, layout=WIDE,
                                      continuous_update=False, readout_format=".2g")
    value = min(max(value, low), high)
    return widgets.FloatSlider(value=value, min=low, max=high, step=step,
                               description=description, style=STYLE, layout=WIDE,
                               continuous_update=False, readout_format=".4g")


def group_sizes(workers: int) -> tuple[int, ...]:
    """The group sizes a cluster of ``workers`` workers can be cut into: the divisors of
    ``workers``, smallest first."""
    workers = _validate.count(workers, "workers")
    return tuple(m for m in range(1, workers + 1) if workers % m == 0)


@functools.cache
def _between_rules() -> tuple[str, ...]:
    """The asynchronous rules ``mixed`` can run between its groups (its ``between``), in
    the registry's order: the rules its factory accepts, asked of the factory itself so
    that the choice follows the rule's own check."""
    factory = RULES["mixed"].factory

    def accepted(name):
        try:
            factory(learning_rate=1e-3, between=name)
        except ConfigError:
            return False
        return True

    return tuple(name for name in RULES if accepted(name))


def group_size_choice(workers: int, value: int) -> int:
    """``value`` if it divides ``workers``, else the largest divisor below it (1 at
    least): the group size a change of the worker count keeps."""
    return max(m for m in group_sizes(workers) if m <= max(int(value), 1))


def rule_controls(rule: str, workers: int = 4) -> dict[str, widgets.Widget]:
    """One control per hyperparameter of ``rule`` that is not a run-level setting
    (η, λ, n): sliders for traced numbers, drop-downs for the inner optimizer, ``mixed``'s
    group size (the divisors of ``workers``) and the rule it runs between groups,
    checkboxes, integer boxes and text for other static switches. Values start at the rule's
    declared defaults (a group size that does not divide ``workers``: the largest
    divisor below it)."""
    if not isinstance(rule, str) or rule not in RULES:
        raise ConfigError(f"unknown rule {rule!r}; available: {', '.join(RULES)}")
    workers = _validate.count(workers, "workers")
    info = RULES[rule]
    controls = {}
    for h in info.hyperparameters:
        if h.name in ("learning_rate",) + _HIDDEN_STATIC or h.required:
            continue
        label = _LABELS.get(h.name, h.name.replace("_", " "))
        if h.name == "inner":
            control = widgets.Dropdown(options=inner_optimizers(rule), value=h.default,
                                       description="inner optimizer", style=STYLE)
        elif h.name == "group_size":
            control = widgets.Dropdown(options=group_sizes(workers),
                                       value=group_size_choice(workers, h.default),
                                       description=label, style=STYLE)
        elif h.name == "between":
            control = widgets.Dropdown(options=_between_rules(), value=h.default,
                                       description=label, style=STYLE)
        elif h.static:
            if isinstance(h.default, bool):
                control = widgets.Checkbox(value=h.default, description=label, style=STYLE)
            elif isinstance(h.default, int):
                control = widgets.BoundedIntText(value=h.default, min=1, max=1000,
                                                 description=label, style=STYLE)
            else:  # a string switch of a rule declared elsewhere: its factory checks it
                control = widgets.Text(value=str(h.default), description=label,
                                       style=STYLE, continuous_update=False)
        elif h.name in _RANGES:
            # an option that adds state starts at 0: present, and changing nothing
            control = _slider(*_RANGES[h.name], float(h.default or 0.0), label)
        else:
            control = widgets.FloatText(value=float(h.default or 0.0), description=label,
                                        style=STYLE)
        if h.adds_state:
            control.tooltip = f"adds {h.adds_state}"
        control.add_class(f"asynclab-{h.name.replace('_', '-')}")
        controls[h.name] = control
    return controls


def state_note(rule: str) -> widgets.HTML:
    """What the rule's options that add state add, under its controls."""
    parts = [f"{_LABELS.get(name, name)} adds {what}"
             for name, what in RULES[rule].state_options.items()]
    return widgets.HTML(f"<small>{'; '.join(parts)} (here always kept: at 0 the rule "
                        "computes what it computes without them).</small>")


def run_controls(problem: str, rule: str, *, workers: int, learning_rate: float,
                 noise: float, commits: int, seeds: int,
                 straggler_delay: float) -> dict[str, widgets.Widget]:
    """The controls of a run and its cluster, by name, at these starting values (each
    within its control's range: a slider would clamp it silently); every one carries
    the class ``asynclab-NAME`` (dashes for underscores) for a page's tests."""
    c = {}
    c["problem"] = widgets.Dropdown(options=SURFACES, value=problem, description="problem",
                                    style=STYLE)
    c["rule"] = widgets.Dropdown(options=list(RULES), value=rule, description="rule",
                                 style=STYLE)
    c["workers"] = widgets.IntSlider(value=workers, min=1, max=32,
                                     description="workers n", style=STYLE, layout=WIDE,
                                     continuous_update=False)
    c["local_steps"] = widgets.IntSlider(value=1, min=1, max=64,
                                         description="λ (local steps)", style=STYLE,
                                         layout=WIDE, continuous_update=False)
    c["learning_rate"] = widgets.FloatLogSlider(
        value=learning_rate, base=10, min=-4, max=0, step=0.05,
        description="η (learning rate)", style=STYLE, layout=WIDE,
        continuous_update=False, readout_format=".2g")
    c["noise"] = widgets.FloatSlider(
        value=float(noise), min=0.0, max=NOISE_MAX, step=0.1,
        description="gradient noise σ²", style=STYLE, layout=WIDE,
        continuous_update=False, readout_format=".1f")
    c["commits"] = widgets.IntSlider(value=commits, min=100, max=5000, step=100,
                                     description="commits (budget)", style=STYLE,
                                     layout=WIDE, continuous_update=False)
    c["seeds"] = widgets.IntSlider(value=seeds, min=1, max=32, description="seeds",
                                   style=STYLE, layout=WIDE, continuous_update=False)
    c["distribution"] = widgets.Dropdown(options=DISTRIBUTIONS, value="exponential",
                                         description="compute time", style=STYLE)
    c["shape"] = widgets.FloatSlider(value=1.0, min=0.1, max=5.0, step=0.1,
                                     description="shape (σ or k)",
                                     style=STYLE, layout=WIDE, continuous_update=False)
    c["heterogeneity"] = widgets.FloatSlider(
        value=0.0, min=0.0, max=2.0, step=0.05, description="heterogeneity (log σ)",
        style=STYLE, layout=WIDE, continuous_update=False)
    c["straggler_worker"] = widgets.IntSlider(value=0, min=0, max=workers - 1,
                                              description="straggler: worker",
                                              style=STYLE, layout=WIDE,
                                              continuous_update=False)
    c["straggler_at"] = widgets.FloatSlider(value=0.0, min=0.0, max=500.0, step=5.0,
                                            description="straggler: at (s)",
                                            style=STYLE, layout=WIDE,
                                            continuous_update=False)
    c["straggler_delay"] = widgets.FloatSlider(value=straggler_delay, min=0.0, max=500.0,
                                               step=5.0,
                                               description="straggler: delay (s)",
                                               style=STYLE, layout=WIDE,
                                               continuous_update=False)
    for name, control in c.items():
        control.add_class(f"asynclab-{name.replace('_', '-')}")
    return c
