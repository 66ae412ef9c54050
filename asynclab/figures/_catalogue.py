"""The figures ``asynclab figures`` builds: each one a study, a drawing and a caption.

A figure is data, not a file to execute: ``asynclab figures NAME`` looks NAME up in
:data:`FIGURES` and nothing else, so a name can never run code from the disk.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple


class Figure(NamedTuple):
    """One figure: the study that computes it and the function that draws it.

    Attributes:
      name: the figure's name (``NAME.png`` and ``data/NAME.npz`` in the output folder).
      summary: one sentence on what it shows.
      study: the module of :mod:`asynclab.studies` that computes it.
      draw: ``"module:function"`` of :mod:`asynclab.plot` that draws it.
      title: the title drawn, from the study's config: a template that
        ``str.format`` fills with it (``"{config.workers} workers"``), or
        ``title(config) -> str``, or None.
      pass_config: whether ``draw`` also takes the config as a dict (``config=``).
      detail: ``"module:function"`` that draws the companion ``NAME_detail.png`` (the
        panels that do not fit the figure's one message) from the same data, or a tuple
        of them, one companion each (``NAME_detail.png``, ``NAME_detail_2.png``, …, in
        order: every shipped PNG keeps to at most 6 panels), or None.
    """

    name: str
    summary: str
    study: str
    draw: str
    title: str | Callable | None = None
    pass_config: bool = False
    detail: str | tuple[str, ...] | None = None

    def main(self, quick: bool = False, out: str | Path | None = None, *,
             overwrite: bool = False) -> dict:
        """Run the study (its quick config with ``quick``), save its data to
        ``out/data/NAME.npz``, draw ``out/NAME.png`` (and its companions,
        ``out/NAME_detail.png``, …); returns the study's data. An existing file is
        replaced only with ``overwrite`` (and only by one of its kind)."""
        from . import default_out, produce

        study = importlib.import_module(f"asynclab.studies.{self.study}")
        return produce(self.name, study, self.drawing(), quick=quick,
                       out=default_out() if out is None else out, title=self.titling(),
                       pass_config=self.pass_config, detail=self.companions(),
                       overwrite=overwrite)

    def titling(self) -> Callable | None:
        """``title(config) -> str``, the figure's title for a config of its study (None:
        the figure has none)."""
        if self.title is None or callable(self.title):
            return self.title
        return functools.partial(_fill, self.title)

    def details(self) -> tuple[str, ...]:
        """The ``"module:function"`` of each companion, in order (empty: none)."""
        if self.detail is None:
            return ()
        return (self.detail,) if isinstance(self.detail, str) else tuple(self.detail)

    def outputs(self) -> list[str]:
        """The PNG files the figure writes: ``NAME.png`` and one per companion,
        ``NAME_detail.png``, ``NAME_detail_2.png``, … in order."""
        return [f"{self.name}.png"] + [companion_file(self.name, k)
                                       for k in range(len(self.details()))]

    def drawing(self) -> Callable:
        """The function that draws the figure."""
        return _resolve(self.draw)

    def companions(self) -> list[Callable]:
        """The functions that draw its companions, in the order of :meth:`outputs`."""
        return [_resolve(target) for target in self.details()]


def companion_file(name: str, k: int) -> str:
    """The file of figure ``name``'s companion ``k`` (from 0): ``NAME_detail.png``, then
    ``NAME_detail_2.png``, ``NAME_detail_3.png``, …"""
    return f"{name}_detail.png" if k == 0 else f"{name}_detail_{k + 1}.png"


def _fill(template: str, config) -> str:
    return template.format(config=config)


def _resolve(target: str) -> Callable:
    module, function = target.split(":")
    return getattr(importlib.import_module(f"asynclab.plot.{module}"), function)


def _async_diloco_title(config) -> str:
    times = ", ".join(f"{t:g}" for t in config.step_times)
    return (f"Asynchronous DiLoCo: {len(config.step_times)} workers at {times} s per step, "
            f"$H$ = {config.local_steps} AdamW steps, {config.dataset} ({config.model}), "
            f"the time of {config.rounds} synchronous rounds, DN period $N$ = "
            f"{config.delay_period}, {config.seeds} seeds")


_ALL = [
    Figure("staleness", "Staleness histograms for n ∈ {10, 20, 30, 60} with the geometric "
           "fit, a heterogeneous cluster and one with a 10× slower worker.",
           "staleness", "staleness:plot_staleness"),
    Figure("straggler", "A straggler's stale update throws DOWNPOUR's central variable on "
           "Beale's function; ADAG absorbs the same update.",
           "straggler", "straggler:plot_straggler", pass_config=True,
           title=(r"A straggler on Beale's function: asynchronous SGD ($\lambda$ = 1), $n$ = "
                  r"{config.workers}, $\eta$ = {config.learning_rate:g}, $\sigma^2$ = "
                  "{config.noise:g}, exponential compute times; worker 0's first step takes "
                  "{config.delay:g} s longer")),
    Figure("implicit_momentum", "The mean central trajectory of asynchronous SGD with n "
           "workers against heavy ball with μ = 1 − 1/n; the fitted momentum against n.",
           "implicit_momentum", "implicit_momentum:plot_implicit_momentum",
           title=(r"Implicit momentum of asynchrony: DOWNPOUR ($\lambda$ = 1), quadratic $d$ = "
                  r"{config.dim}, condition {config.condition:g}, $\eta$ = "
                  "{config.learning_rate:g}, exponential compute times, mean over {config.seeds} "
                  "seeds")),
    Figure("momentum_tuning", "Joint (η, μ) tuning under asynchrony: the predicted and the "
           "measured rate of the expected centre, and what single runs do.",
           "momentum_tuning", "momentum_tuning:plot_momentum_tuning",
           title=(r"Joint ($\eta$, $\mu$) tuning of DOWNPOUR ($\lambda$ = 1) with server momentum: "
                  "quadratic $d$ = {config.dim}, condition {config.condition:g}, "
                  r"$\sigma^2$ = {config.noise:g}, {config.commits} commits, {config.seeds} seeds "
                  r"per point, target {config.target:g} $\times$ initial loss"),
           detail=("momentum_tuning:plot_momentum_tuning_rates",
                   "momentum_tuning:plot_momentum_tuning_runs")),
    Figure("model_averaging_paths", "Model averaging on Beale's function with identical vs "
           "random initialisation: worker and central paths for λ ∈ {1, 5, 100, 1000}.",
           "model_averaging_paths", "model_averaging_paths:plot_model_averaging_paths",
           detail="model_averaging_paths:plot_model_averaging_paths_detail"),
    Figure("model_averaging_mc", "The probability that model averaging with random starts "
           "reaches Beale's global minimum, against n and λ, with Wilson intervals.",
           "model_averaging_mc", "model_averaging_mc:plot_model_averaging_mc"),
    Figure("easgd", "EASGD's elastic equilibrium on Beale's function and the stability map "
           "of asynchronous EASGD over λ × ρ.", "easgd", "easgd:plot_easgd",
           detail="easgd:plot_easgd_detail"),
    Figure("agn", "AGN against an equivalently sized mini-batch, and the commit a/λ "
           "approaching the full-batch gradient direction as λ grows.",
           "agn", "agn:plot_agn", pass_config=True,
           title=("AGN with $n$ = {config.workers} workers. Top: first commits "
                  r"$\Delta = a/\lambda$ from the pulled centre (unit length; black: $-\nabla L$), "
                  r"2-D quadratic, $\sigma^2$ = {config.direction_noise:g}, "
                  "{config.direction_seeds} seeds. Bottom: a batch of $m$ examples = gradient "
                  r"noise $\sigma^2$ = {config.noise:g}, a batch of $\lambda m$ = "
                  r"$\sigma^2/\lambda$")),
    Figure("real_cluster", "A real cluster's step-time log against the exponential "
           "assumption: fits, stragglers, staleness, DOWNPOUR's stable learning rates.",
           "real_cluster", "real_cluster:plot_real_cluster", pass_config=True),
    Figure("mnist_rules", "DOWNPOUR, DynSGD, AEASGD, AGN and ADAG on MNIST with an Adam "
           "inner optimizer for n ∈ {10, 20, 30, 40} and λ ∈ {1, 15}.",
           "mnist_rules", "mnist_rules:plot_mnist_rules",
           title=(r"MNIST-5k ({config.model}, batch {config.batch_size}), Adam $\eta$ = "
                  r"{config.learning_rate:g}, AEASGD $\alpha$ = {config.elastic_alpha:g}, ADAG "
                  r"$\gamma$ = {config.gamma:g}: {config.gradient_steps} gradient evaluations "
                  "per run, {config.seeds} seeds per cell"),
           detail="mnist_rules:plot_mnist_rules_detail"),
    Figure("scaling", "Time to a target accuracy and final accuracy against n for "
           "synchronous, asynchronous and mixed clusters.",
           "scaling", "scaling:plot_scaling", pass_config=True,
           title=("When does asynchrony pay off? {config.dataset} with {config.model}, batch "
                  "{config.batch_size}, {config.evaluations} gradient evaluations per run, "
                  r"$\eta$ = {config.learning_rate:g} per gradient, mixed = synchronous groups of "
                  "{config.group_size}")),
    Figure("semisync", "Time to target and final error against n for synchronous, K-of-n "
           "(discarded or stale late work), backup-worker and asynchronous SGD.",
           "semisync", "semisync:plot_semisync", pass_config=True,
           title=("Slow and stale: synchronous, K-of-$n$, backup and asynchronous SGD, quadratic "
                  r"$d$ = {config.dim}, condition {config.condition:g}, $\eta$ = "
                  r"{config.learning_rate:g}, $\sigma^2$ = {config.noise:g}, exponential step "
                  "times (mean 1 s), {config.horizon:g} s per run, {config.seeds} seeds")),
    Figure("async_diloco", "Asynchronous DiLoCo on a heterogeneous cluster: the naive "
           "outer Nesterov step per commit fails, Delayed Nesterov repairs it, dynamic local "
           "updates do not help here.",
           "async_diloco", "async_diloco:plot_async_diloco", _async_diloco_title),
    Figure("movers", "Who moved the centre: each worker's share of the centre's movement "
           "on a heterogeneous cluster; rules that damp stale commits favour fast workers.",
           "movers", "movers:plot_movers",
           title=("Who moved the centre: Beale, $n$ = {config.workers} workers of lognormal "
                  r"speeds (spread {config.spread:g}), $\eta$ = {config.learning_rate:g}, "
                  r"$\sigma^2$ = {config.noise:g}, ADAG $\gamma$ = {config.gamma:g}, "
                  "{config.commits} commits, {config.seeds} seeds")),
    Figure("failures", "Goodput, useful work per device-second and time to target against "
           "the failure rate for synchronous SGD, DOWNPOUR, ADAG, DiLoCo and asynchronous "
           "DiLoCo.",
           "failures", "failures:plot_failures", pass_config=True,
           title=("Failures: {config.workers} workers, Poisson churn (MTTR {config.mttr:g} s), "
                  "quadratic $d$ = {config.dim}, condition {config.condition:g}, "
                  r"$\sigma^2$ = {config.noise:g}, exponential step times (mean 1 s), "
                  "{config.horizon:g} s per run, {config.seeds} seeds")),
]

#: Every figure by name, in the order ``asynclab figures`` builds them.
FIGURES: dict[str, Figure] = {figure.name: figure for figure in _ALL}
