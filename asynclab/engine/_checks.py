"""The shared checks of the rule suite, for any declared rule (``asynclab.rules.check``).

The test suite runs these on every rule of the catalogue (``tests/test_rules_registry.py``)
and a user runs them on a rule of their own: one definition of what a rule must do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from .._errors import ConfigError
from ..cluster import Cluster, simulate_sync
from ..problems import get_problem
from ..rules import AXIS, RULES, Rule, RuleInfo
from ._compiled import TRACE_COUNT
from ._prepare import build_rule
from ._replay import replay
from ._run import run

#: The checks, in the order they run (see :func:`check`).
CHECKS = ("converges", "deterministic", "dtype", "new_seed", "new_values", "low_precision",
          "sequential", "stepwise")

#: The convergence check's problem by default: a quadratic of dimension 10 and condition
#: number 10, from its fixed start, without noise.
QUADRATIC = {"dim": 10, "condition": 10.0}


class _Subject(NamedTuple):
    """The rule under check: its declaration and the settings it is checked with."""

    info: RuleInfo
    options: dict          # hyperparameters other than η and λ
    learning_rate: float | None
    local_steps: int | None
    workers: int
    problem: Any
    problem_options: dict | None

    def run(self, **settings):
        """``asynclab.run`` of the rule (by name) with the subject's settings, updated by
        ``settings`` (``learning_rate``, ``local_steps``, ``options`` replace)."""
        options = settings.pop("options", self.options)
        kwargs = dict(problem_options=self.problem_options, workers=self.workers,
                      learning_rate=self.learning_rate, local_steps=self.local_steps,
                      progress=False)
        kwargs.update(settings)
        return run(kwargs.pop("problem", self.problem), self.info.name, **kwargs, **options)

    def built(self, **options) -> Rule:
        """The rule built with the subject's settings, updated by ``options``."""
        options = {**self.options, **options}
        return build_rule(self.info.name, learning_rate=options.pop(
            "learning_rate", self.learning_rate or 0.01),
            local_steps=options.pop("local_steps", self.local_steps),
            workers=options.pop("workers", self.workers), **options)


def check(
    rule: str | Rule,
    /,
    *,
    checks: Sequence[str] | None = None,
    skip: Sequence[str] = (),
    workers: int = 4,
    learning_rate: float | None = None,
    local_steps: int | None = None,
    commits: int = 3000,
    target: float = 1e-4,
    problem="quadratic",
    problem_options: Mapping[str, Any] | None = None,
    sequential_options: Mapping[str, Any] | None = None,
    dtype: str = "bfloat16",
    **hyperparameters,
) -> dict[str, str]:
    """Run the rule suite's shared checks on a declared rule.

    The checks (``CHECKS``), each on ``workers`` workers with the rule's
    ``hyperparameters``:

    - ``converges``: without noise, from the problem's start, ``commits`` commits (rounds)
      bring the central loss below ``target`` without diverging (by default on a
      quadratic of dimension 10 and condition number 10, η = 0.02);
    - ``deterministic``: two runs of one seed (50 commits, σ² = 1) give the same bits;
    - ``dtype``: their parameters and losses are float32;
    - ``new_seed``: another seed replays the same compiled program (no new trace) and
      gives other numbers;
    - ``new_values``: the rule with every traced hyperparameter halved replays the same
      compiled program and gives other numbers;
    - ``low_precision``: local work and an exchange keep parameters of ``dtype`` in that
      dtype (traced, not run);
    - ``sequential`` (asynchronous rules whose workers reset to the centre): with one
      worker and λ = 1 the rule is sequential SGD, on Beale's function with σ² = 10, to
      1e-5 (``sequential_options``: hyperparameters that make that degenerate case, e.g.
      ``{"group_size": 1}`` for groups);
    - ``stepwise`` (rules that say they can, ``rule.capabilities.stepwise``): replayed one
      local step per compiled event with λ = 3, the rule gives its plain replay's numbers
      to float rounding.

    Args:
      rule: a declared rule's name, or a rule built by a declared factory (then its own
        hyperparameters, η and λ are the ones checked, and none may be given here).
      checks: the checks to run (default: every one that applies to the rule).
      skip: checks not to run (a rule that resets but is not SGD with one worker skips
        ``sequential``).
      workers: n, the workers of the runs.
      learning_rate: η (default 0.02 for the convergence check, the rule's own elsewhere).
      local_steps: λ (default: the rule's own).
      commits: the convergence check's budget.
      target: the convergence check's bound on the final loss.
      problem: the problem of the convergence and determinism checks, a name or a
        Problem (default: the quadratic above).
      problem_options: its options (default for ``"quadratic"``: dimension 10, condition
        number 10).
      sequential_options: hyperparameters of the ``sequential`` check's degenerate case.
      dtype: the low-precision dtype of ``low_precision``.
      **hyperparameters: the rule's own hyperparameters (with a rule name).

    Returns:
      What each check that ran measured, by name (one line each).

    Raises:
      ConfigError: for bad arguments (before any work), and for the first check that
        fails, naming the check and what it measured.

    Example:
      >>> import asynclab
      >>> measured = asynclab.rules.check("downpour", checks=["converges"])
      >>> sorted(measured)
      ['converges']
    """
    subject = _subject(rule, workers, learning_rate, local_steps, problem, problem_options,
                       hyperparameters)
    commits = _validate.count(commits, "commits")
    target = _validate.number(target, "target", low=0, low_open=True)
    if not isinstance(dtype, str) or not _floating(dtype):
        raise ConfigError(f"dtype must name a floating-point dtype, got {dtype!r}")
    sequential_options = dict(sequential_options or {})
    capabilities = subject.built().capabilities  # bad hyperparameters fail here
    applies = {
        "sequential": (not subject.info.synchronous and capabilities.resets,
                       "it is not an asynchronous rule whose workers reset to the centre"),
        "stepwise": (capabilities.stepwise, "it cannot be replayed step by step "
                                            "(rule.capabilities.stepwise)"),
    }
    chosen = _chosen(checks, skip, applies, subject.info.name)

    runs = _Runs(subject)
    measured = {}
    for name in chosen:
        ok, what = _CHECKS[name](subject, runs, commits=commits, target=target, dtype=dtype,
                                 sequential_options=sequential_options)
        if not ok:
            raise ConfigError(f"rule {subject.info.name}: check {name!r} failed: {what}")
        measured[name] = what
    return measured


def _floating(name: str) -> bool:
    try:
        return bool(jnp.issubdtype(jnp.dtype(name), jnp.floating))
    except TypeError:
        return False


def _subject(rule, workers, learning_rate, local_steps, problem, problem_options,
             hyperparameters) -> _Subject:
    workers = _validate.count(workers, "workers")
    if isinstance(rule, str):
        if rule not in RULES:
            raise ConfigError(f"unknown rule {rule!r}; available: {', '.join(RULES)}")
        info, options = RULES[rule], dict(hyperparameters)
        for name in ("learning_rate", "local_steps"):
            if name in options:
                raise ConfigError(f"give {name} as check()'s own argument")
    elif isinstance(rule, Rule):
        if rule.structure is None or rule.structure[0] not in RULES:
            raise ConfigError(f"check needs a declared rule (a name, or a rule built by a "
                              f"declared factory); {rule.name} was assembled by hand")
        if hyperparameters or learning_rate is not None or local_steps is not None:
            raise ConfigError("the hyperparameters are those of the rule you built; give "
                              "a rule name to check it with others")
        info, options = RULES[rule.structure[0]], dict(rule.hyperparameters)
        learning_rate = options.pop("learning_rate", None)
        local_steps = options.pop("local_steps", None)
    else:
        raise ConfigError(f"rule must be a rule name or a built rule, got {rule!r}")
    if learning_rate is None and "learning_rate" in info.parameters:
        learning_rate = 0.02
    if problem == "quadratic" and problem_options is None:
        problem_options = dict(QUADRATIC)
    return _Subject(info, options, learning_rate, local_steps, workers, problem,
                    None if problem_options is None else dict(problem_options))


def _chosen(checks, skip, applies, name) -> list[str]:
    for field, names in (("checks", checks), ("skip", skip)):
        if names is None:
            continue
        if isinstance(names, str) or not all(isinstance(c, str) for c in names):
            raise ConfigError(f"{field} must be a list of check names, got {names!r}")
        unknown = [c for c in names if c not in CHECKS]
        if unknown:
            raise ConfigError(f"{field}: unknown check {unknown[0]!r}; the checks: "
                              f"{', '.join(CHECKS)}")
    if checks is None:
        return [c for c in CHECKS if c not in skip and applies.get(c, (True,))[0]]
    for c in checks:
        if not applies.get(c, (True,))[0]:
            raise ConfigError(f"rule {name}: check {c!r} does not apply: {applies[c][1]}")
    return [c for c in CHECKS if c in checks and c not in skip]


class _Runs:
    """The short noisy runs (50 commits, σ² = 1) that several checks read, each made once
    when first read: ``first`` and ``again`` (seed 3), ``other_seed`` (seed 4), ``halved``
    (seed 3, every traced hyperparameter that is not 0 halved). ``traced`` is
    ``TRACE_COUNT`` right after ``first``, whose replay compiles."""

    def __init__(self, subject: _Subject):
        self.subject = subject
        self._results: dict[str, Any] = {}
        self.traced: dict = {}

    def __getitem__(self, key: str):
        if key not in self._results:
            first = self._results.get("first")
            if first is None and key != "first":
                first = self["first"]
            self._results[key] = self._make(key, first)
            if key == "first":
                self.traced = dict(TRACE_COUNT)
        return self._results[key]

    def _make(self, key: str, first):
        subject = self.subject
        if key == "halved":
            given = first.config["hyperparameters"]
            halved = {k: 0.5 * given[k] for k in subject.info.traced
                      if isinstance(given.get(k), float | int)
                      and not isinstance(given[k], bool) and given[k] != 0}
            rate = halved.pop("learning_rate", subject.learning_rate)
            return subject.run(commits=50, noise=1.0, seeds=[3], learning_rate=rate,
                               options={**subject.options, **halved})
        seed = 4 if key == "other_seed" else 3
        return subject.run(commits=50, noise=1.0, seeds=[seed])


def _converges(subject, runs, *, commits, target, **_):
    result = subject.run(commits=commits, seeds=[0], noise=0.0)
    loss = float(result.final_loss[0])
    if result.diverged[0]:
        return False, (f"diverged at event {int(result.diverged_at[0])} of {commits} "
                       f"(wanted a final loss < {target:g})")
    return loss < target, f"final loss {loss:.3g} after {commits} commits (wanted < {target:g})"


def _deterministic(subject, runs, **_):
    a, b = runs["first"], runs["again"]
    same = np.array_equal(a.final_params, b.final_params) and np.array_equal(a.loss, b.loss)
    if not same:
        gap = float(np.max(np.abs(np.asarray(a.final_params, np.float64) - b.final_params)))
        return False, f"two runs of seed 3 differ: final parameters by up to {gap:.3g}"
    return True, "two runs of seed 3 give the same bits"


def _dtype(subject, runs, **_):
    a = runs["first"]
    kinds = {"parameters": a.final_params.dtype, "loss": a.loss.dtype}
    wrong = {k: str(v) for k, v in kinds.items() if v != np.float32}
    if wrong:
        return False, f"float32 wanted, got {wrong}"
    return True, "parameters and loss in float32"


def _no_new_trace(runs, key: str, what: str):
    a, other = runs["first"], runs[key]
    runs["again"]  # noqa: B018 (the same seed again must not trace either)
    if dict(TRACE_COUNT) != runs.traced:
        new = {k: TRACE_COUNT[k] - runs.traced.get(k, 0) for k in TRACE_COUNT}
        return False, f"{what} traced the replay again ({new} new traces)"
    if np.array_equal(a.final_params, other.final_params):
        return False, f"{what} gave the same final parameters"
    return True, f"{what}: the same compiled replay, other numbers"


def _new_seed(subject, runs, **_):
    return _no_new_trace(runs, "other_seed", "another seed")


def _new_values(subject, runs, **_):
    return _no_new_trace(runs, "halved", "the traced hyperparameters halved")


def _low_precision(subject, runs, *, dtype, **_):
    rule = subject.built()
    dtype = jnp.dtype(dtype)
    center = jnp.linspace(-1, 1, 5).astype(dtype)

    def gradient(params, key, worker, step):
        return params + jax.random.normal(key, params.shape, params.dtype)

    def exchanged(center):
        server = rule.init_server(center)
        key = jax.random.key(0)
        if rule.synchronous:
            workers = jax.vmap(rule.init_worker, in_axes=(0, None))(jnp.stack([center] * 3),
                                                                    server)
            local = jax.vmap(lambda w, i: rule.local(w, gradient, jax.random.fold_in(key, i),
                                                     i))
            workers = local(workers, jnp.arange(3))
            server, workers, _ = jax.vmap(rule.exchange, in_axes=(None, 0),
                                          out_axes=(None, 0, 0), axis_name=AXIS)(server,
                                                                                 workers)
        else:
            worker = rule.init_worker(center, server)
            for _ in range(2):
                worker = rule.local(worker, gradient, key, 0)
                server, worker, _ = rule.exchange(server, worker)
            workers = worker
        return server.center, workers.params, workers.pulled_center

    center_out, params, pulled = jax.eval_shape(exchanged, center)
    got = {"centre": center_out.dtype, "worker parameters": params.dtype}
    # a worker stores the centre it pulled only where the rule reads it
    if pulled is not None:
        got["pulled centre"] = pulled.dtype
    wrong = {k: str(v) for k, v in got.items() if v != dtype}
    if wrong:
        return False, f"{dtype} parameters came back as {wrong}"
    return True, f"{dtype} parameters stay {dtype}"


def _sequential(subject, runs, *, sequential_options, **_):
    kwargs = dict(problem_options=None, workers=1, commits=300, seeds=[0, 1], noise=10.0,
                  learning_rate=2e-3)
    steps = {"local_steps": 1} if "local_steps" in subject.info.parameters else {}
    # run() fills a rule's number of workers in from the cluster of one
    options = {k: v for k, v in {**subject.options, **sequential_options}.items()
               if k != "workers" or k in sequential_options}
    result = subject.run(problem="beale", **kwargs, **steps, options=options)
    reference = run("beale", "sequential_sgd", progress=False, **kwargs)
    path, want = np.asarray(result.center_path), np.asarray(reference.center_path)
    gap = float(np.max(np.abs(path.astype(np.float64) - want)))
    if not np.allclose(path, want, rtol=1e-5, atol=1e-5):
        return False, (f"with one worker and λ = 1 the centre's path is not sequential "
                       f"SGD's: it differs by up to {gap:.3g} (tolerance 1e-5, relative "
                       f"and absolute)")
    return True, f"one worker, λ = 1: sequential SGD's path to {gap:.2g}"


def _stepwise(subject, runs, **_):
    steps = {"local_steps": 3} if "local_steps" in subject.info.parameters else {}
    rule = subject.built(**steps)
    trace = simulate_sync(Cluster(subject.workers), local_steps=rule.local_steps, rounds=20,
                          rng=0)
    problem = subject.problem
    kwargs = dict(seeds=[0, 1], noise=1.0, record_every=1, record_paths=False, progress=False)
    if isinstance(problem, str):
        problem = get_problem(problem, **(subject.problem_options or {}))
    plain = replay(rule, problem, trace, **kwargs)
    stepped = replay(rule, problem, trace, stepwise=True, **kwargs)
    if not np.array_equal(plain.diverged_at, stepped.diverged_at):
        return False, (f"step by step it diverged at rounds {stepped.diverged_at.tolist()}, "
                       f"in its plain replay at {plain.diverged_at.tolist()}")
    for key in ("loss", "final_params"):
        a, b = np.asarray(getattr(plain, key)), np.asarray(getattr(stepped, key))
        if not np.allclose(b, a, rtol=1e-5, atol=1e-6, equal_nan=True):
            gap = float(np.nanmax(np.abs(a.astype(np.float64) - b)))
            return False, (f"replayed step by step (λ = {rule.local_steps}) its {key} "
                           f"differs from its plain replay by up to {gap:.3g}")
    return True, f"step by step (λ = {rule.local_steps}): its plain replay to float rounding"


_CHECKS: dict[str, Callable] = {
    "converges": _converges,
    "deterministic": _deterministic,
    "dtype": _dtype,
    "new_seed": _new_seed,
    "new_values": _new_values,
    "low_precision": _low_precision,
    "sequential": _sequential,
    "stepwise": _stepwise,
}
