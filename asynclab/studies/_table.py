"""A study of one's own, as a table: rules × clusters × hyperparameters × seeds in one
call, one row per run (:func:`study`), and the mean over seeds with its confidence
interval (:func:`summary`).

Every cell (a rule on a cluster) is prepared first (:func:`asynclab.prepare`, which checks
everything), so a bad rule, cluster or grid is a ConfigError before any run; then each
cell's grid of traced hyperparameters runs as one sweep (``run(prepare(..., grid=...))``:
one compiled replay for all its points and seeds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .. import _tables, _validate
from .._errors import ConfigError
from .._progress import progress_bar

#: The series a target is checked against (``study(..., target_metric=...)``).
TARGET_METRICS = ("loss", "accuracy", "validation_loss")

#: Options of a rule's own that a study sets for every cell (given to :func:`study`).
_STUDY_OPTIONS = ("grid", "seeds", "cluster", "workers", "traces", "backend", "problem",
                  "rule")


class _Rule(NamedTuple):
    label: str
    rule: object  # a rule name, or a Rule
    name: str | None  # the declared rule's registry name (None: a rule assembled by hand)
    options: dict


class _Cell(NamedTuple):
    rule: str  # the rule's label
    cluster: str  # the cluster's label
    spec: object  # the RunSpec


def study(problem, *, rules, clusters=None, grid=None, seeds, commits: int | None = None,
          horizon: float | None = None, target: float | None = None,
          target_metric: str = "loss", records: bool = False,
          progress: bool | None = None, **options):
    """Run every rule on every cluster, over a grid of hyperparameters and seeds, and
    return one row per run: a tidy pandas DataFrame.

    Each (rule, cluster) cell is one :func:`asynclab.run` of :func:`asynclab.prepare`
    with the cell's rule and cluster, the study's ``seeds``, budget and ``options``, and
    the rule's ``grid`` (a sweep: one compiled replay for all the cell's grid points and
    seeds; a rule without a grid runs once). Every cell is prepared, and so checked,
    before the first one runs. Trajectories are not recorded (``record_paths=False``)
    unless ``options`` ask for them.

    Args:
      problem: a problem name or a :class:`~asynclab.problems.Problem`.
      rules: a list of rules, or a dict ``label -> rule``. A rule is a name
        (``"adag"``), a name with fixed options of its own (``("adag", {"gamma": 1e-3})``
        or ``{"rule": "adag", "gamma": 1e-3}``, which may also give a ``"label"``), or a
        rule built from :mod:`asynclab.rules`. A rule's options are those of
        :func:`asynclab.prepare` (its hyperparameters, ``learning_rate``,
        ``local_steps``, a budget of its own, ...) and take precedence over ``options``.
        Labels (the ``rule`` column) default to the name, followed by the fixed options.
      clusters: a dict ``label -> cluster`` (a :class:`~asynclab.cluster.Cluster`, or a
        dict of its fields as :func:`asynclab.prepare` takes), one Cluster, a list of
        Clusters (labelled ``n=<workers>``), or None: the cluster ``options`` describe
        (``workers=``, ``compute=``), labelled ``n=<workers>``.
      grid: traced hyperparameters to sweep, ``{name: values}`` for every rule, or per
        rule ``{rule: {name: values}}`` (keyed by a rule's label or by a rule name, which
        then applies to every rule of that name; rules not named run without a grid).
        A name a rule does not have, or a static one (λ, workers, a variant switch), is
        a ConfigError naming the rule: give such values as separate rules
        (``rules={"AGN, λ = 1": ("agn", {"local_steps": 1}), ...}``).
      seeds: the seeds, an int or a list (each run of every cell replays each seed).
      commits: the budget in commits (rounds for a synchronous rule)...
      horizon: ...or in simulated seconds: give one, as for :func:`asynclab.prepare`.
      target: with it, the columns ``time_to_target`` and ``commits_to_target``: when a
        run's recorded ``target_metric`` first reaches ``target`` (checked at the
        records, as :meth:`asynclab.Result.time_to_target` does).
      target_metric: ``"loss"`` (reached when at most ``target``), ``"accuracy"`` (at
        least ``target``, in [0, 1]) or ``"validation_loss"``; the last two for problems
        that record them (the nets).
      records: also return the records: ``(table, records)``, where ``records`` has one
        row per (run, record): the key columns (``rule``, ``cluster``, the grid's
        hyperparameters, ``seed``) and those of :meth:`asynclab.Result.to_frame`
        (``record``, ``event``, ``time``, ``loss``, the problem's metrics).
      progress: a progress bar over the cells (None: only on a terminal or in a
        notebook).
      **options: the rest of :func:`asynclab.prepare`'s options for every cell (``noise``,
        ``learning_rate``, ``init``, ``trace_per_seed``, ``record_every``,
        ``problem_options``, ``workers`` and ``compute`` without ``clusters``, ...).

    Returns:
      A ``pandas.DataFrame``, one row per (rule, cluster, grid point, seed), in that
      order (the grid's last hyperparameter fastest), with the columns:

      - ``rule``, ``cluster``: the labels;
      - one per hyperparameter of the grid (of any rule): the run's value; for a rule
        that does not sweep it, the value it ran with, NaN if it has no such
        hyperparameter (or the option is not given, like a momentum left out);
      - ``seed``;
      - ``final_loss``: the central loss at the last record (NaN if the run diverged);
      - ``final_<metric>`` for each metric the problem records (a net's
        ``final_validation_loss`` and ``final_accuracy``); absent for problems that
        record none (the analytic surfaces);
      - ``time_to_target`` (simulated seconds, in float32 as
        :meth:`asynclab.Result.time_to_target` gives them) and ``commits_to_target``
        (events: commits, or rounds for a synchronous rule), with ``target`` only:
        ``inf`` when the run never reaches it;
      - ``diverged`` (bool) and ``diverged_at`` (the event at which it diverged; a
        nullable ``Int64``, ``<NA>`` for a run that did not);
      - ``simulated_time``: seconds the seed's schedule took;
      - ``mean_staleness``: the mean staleness τ of its commits (0 for rounds);
      - ``events``: commits (or rounds) in its schedule.

      With ``records=True``, the pair ``(table, records)``.

    Raises:
      ConfigError: before any run, for anything a cell could not do (naming the rule
        and cluster), and when pandas is not installed (``pip install
        "asynclab[pandas]"``).

    Example:
      >>> import asynclab
      >>> table = asynclab.study("beale", rules=["downpour", ("adag", {"gamma": 1e-3})],
      ...                        clusters={"even": asynclab.Cluster(4)},
      ...                        grid={"learning_rate": [1e-3, 3e-3]},
      ...                        seeds=range(3), commits=200, noise=1.0)
      >>> table.shape[0]  # 2 rules x 1 cluster x 2 points x 3 seeds
      12
    """
    pd = _tables.pandas()
    rule_list = _rules(rules)
    cluster_list = _clusters(clusters)
    grids = _grids(grid, rule_list)
    if target_metric not in TARGET_METRICS:
        raise ConfigError(f"target_metric must be one of {', '.join(TARGET_METRICS)}, got "
                          f"{target_metric!r}")
    if target is not None:
        target = _validate.number(target, "target", dtype=np.float32,
                                  **({"low": 0, "high": 1} if target_metric == "accuracy"
                                     else {}))
    if not isinstance(records, bool):
        raise ConfigError(f"records must be True or False, got {records!r}")
    if "rule" in options:
        raise ConfigError("rule: a study's rules are its argument rules=[...]")
    if "traces" in options:
        raise ConfigError("traces: a study simulates its schedules on its clusters")
    if options.get("backend", "sim") != "sim":
        raise ConfigError("backend: a study replays simulated schedules (backend 'sim')")
    if clusters is not None and "cluster" in options:
        raise ConfigError("cluster: give the study's clusters as clusters=")
    options.setdefault("record_paths", False)
    cells = _prepare(problem, rule_list, cluster_list, grids, seeds=seeds, commits=commits,
                     horizon=horizon, options=options)
    if target_metric != "loss" and cells[0].spec.problem.evaluate is None:
        raise ConfigError(f"target_metric: {cells[0].spec.problem.name} records no "
                          f"{target_metric} (the nets do); use 'loss'")
    swept = list(dict.fromkeys(name for g in grids.values() if g for name in g))

    from ..engine import run

    tables, long = [], []
    with progress_bar(total=len(cells), progress=progress, desc="study", unit="cell") as bar:
        for cell in cells:
            bar.set_postfix_str(f"{cell.rule} on {cell.cluster}", refresh=False)
            result = run(cell.spec, progress=False)
            keys = _keys(cell, result, swept)
            tables.append(pd.DataFrame({**keys, **_outcomes(result, target, target_metric)}))
            if records:
                frame = result.to_frame()
                n_records = result.record_events.size
                front = {k: np.repeat(v, n_records) if isinstance(v, np.ndarray) else v
                         for k, v in keys.items() if k != "seed"}
                long.append(pd.concat([pd.DataFrame(front, index=frame.index),
                                       frame.drop(columns=[k for k in swept if k in frame])],
                                      axis=1))
            bar.update(1)
    table = pd.concat(tables, ignore_index=True)
    if not records:
        return table
    return table, pd.concat(long, ignore_index=True)


# ----------------------------------------------------------------------------- arguments


def _rules(rules) -> list[_Rule]:
    from ..rules import Rule

    if isinstance(rules, str | Rule):
        rules = [rules]
    if isinstance(rules, Mapping):
        given = [(str(label), spec, f"rules[{label!r}]") for label, spec in rules.items()]
    elif isinstance(rules, Sequence) and not isinstance(rules, str):
        given = [(None, spec, f"rules[{i}]") for i, spec in enumerate(rules)]
    else:
        raise ConfigError(f"rules must be a list of rules or a dict label -> rule, got "
                          f"{rules!r}")
    if not given:
        raise ConfigError("rules is empty; give at least one rule")
    out = [_rule(label, spec, where) for label, spec, where in given]
    labels = [r.label for r in out]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(f"rules: {', '.join(map(repr, twice))} names two rules; give "
                          "rules as a dict label -> rule")
    return out


def _rule(label, spec, where: str) -> _Rule:
    from ..rules import RULES, Rule

    if isinstance(spec, Rule):
        name = spec.structure[0] if spec.structure is not None else None
        return _Rule(label or spec.name, spec, name, {})
    options = {}
    if isinstance(spec, Mapping):
        options = dict(spec)
        if "rule" not in options:
            raise ConfigError(f"{where}: a rule given as a dict names it: {{'rule': 'adag', "
                              f"...}}, got {spec!r}")
        spec = options.pop("rule")
        label = options.pop("label", label)
    elif isinstance(spec, tuple | list):
        if len(spec) != 2 or not isinstance(spec[1], Mapping):
            raise ConfigError(f"{where}: a rule with options is (name, {{option: value}}), "
                              f"got {spec!r}")
        spec, options = spec[0], dict(spec[1])
    if not isinstance(spec, str):
        raise ConfigError(f"{where}: a rule is a name, (name, options) or a rule from "
                          f"asynclab.rules, got {spec!r}")
    if spec not in RULES:
        raise ConfigError(f"{where}: unknown rule {spec!r}; available: {', '.join(RULES)}")
    fixed = [k for k in options if k in _STUDY_OPTIONS]
    if fixed:
        raise ConfigError(f"{where}: {fixed[0]} is the study's, the same for every rule "
                          f"(give grids per rule as grid={{rule: {{name: values}}}})")
    if label is None:
        label = spec if not options else f"{spec} ({_describe(options)})"
    return _Rule(str(label), spec, spec, options)


def _describe(options: Mapping) -> str:
    def value(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    return ", ".join(f"{k}={value(v)}" for k, v in options.items())


def _clusters(clusters) -> list[tuple[str | None, object]]:
    """``(label, cluster)`` pairs; a None label is made from the built cluster."""
    from ..cluster import Cluster

    if clusters is None:
        return [(None, None)]
    if isinstance(clusters, Cluster):
        return [(None, clusters)]
    if isinstance(clusters, Mapping):
        if not clusters:
            raise ConfigError("clusters is empty; give at least one cluster")
        for label, cluster in clusters.items():
            if not isinstance(cluster, Cluster | Mapping):
                raise ConfigError(f"clusters[{label!r}] must be an asynclab.Cluster (or a "
                                  f"dict of its fields), got {cluster!r}")
        return [(str(label), cluster) for label, cluster in clusters.items()]
    if isinstance(clusters, Sequence) and not isinstance(clusters, str) and clusters \
            and all(isinstance(c, Cluster) for c in clusters):
        labels = [f"n={c.workers}" for c in clusters]
        if len(set(labels)) != len(labels):
            raise ConfigError("clusters: several clusters of one size; give clusters as a "
                              "dict label -> Cluster")
        return list(zip(labels, clusters, strict=True))
    raise ConfigError(f"clusters must be a dict label -> asynclab.Cluster, a Cluster or a "
                      f"list of them, got {clusters!r}")


def _grids(grid, rules: list[_Rule]) -> dict[str, dict | None]:
    """Each rule's grid (by label), checked against the rule's declaration."""
    from ..rules import RULES

    out: dict[str, dict | None] = {r.label: None for r in rules}
    if grid is None:
        return out
    if not isinstance(grid, Mapping) or not grid:
        raise ConfigError("grid must be a non-empty dict: hyperparameter name -> values, or "
                          "rule -> {name: values}")
    nested = [isinstance(v, Mapping) for v in grid.values()]
    if any(nested) and not all(nested):
        raise ConfigError("grid: give one grid for every rule ({name: values}) or one per "
                          "rule ({rule: {name: values}}), not both")
    if not any(nested):
        common = True
        for r in rules:
            out[r.label] = dict(grid)
    else:
        common = False
        labels = {r.label for r in rules}
        for key, values in grid.items():
            chosen = [r for r in rules if r.label == key] or [
                r for r in rules if r.name == key and r.label not in grid]
            if not chosen:
                raise ConfigError(f"grid: {key!r} is neither a rule's label nor a rule's "
                                  f"name; the rules: {', '.join(map(repr, sorted(labels)))}")
            for r in chosen:
                out[r.label] = dict(values) or None
    for r in rules:
        g = out[r.label]
        if not g:
            continue
        if r.name is None:
            raise ConfigError(f"grid: rule {r.label!r} was assembled by hand; a grid needs a "
                              "declared rule (a name, or one built by a factory of "
                              "asynclab.rules)")
        info = RULES[r.name]
        for name in g:
            if name in info.static:
                raise ConfigError(
                    f"grid: {name} is a static hyperparameter of rule {r.label!r} ({r.name}): "
                    "it decides the shape of the compiled replay; give each value as a rule "
                    f"of its own (rules={{'{r.name}, {name}=...': ('{r.name}', "
                    f"{{'{name}': ...}}), ...}}). Traced ones: {', '.join(info.traced)}")
            if name not in info.parameters:
                per_rule = ("; give the grid per rule (grid={rule: {name: values}})"
                            if common and len(rules) > 1 else "")
                raise ConfigError(f"grid: rule {r.label!r} ({r.name}) has no hyperparameter "
                                  f"{name!r}; its traced ones: {', '.join(info.traced)}"
                                  f"{per_rule}")
    return out


def _prepare(problem, rules, clusters, grids, *, seeds, commits, horizon, options):
    """Every cell's RunSpec, before any run; a cell's ConfigError names the cell."""
    from ..engine import prepare

    cells = []
    for r in rules:
        for label, cluster in clusters:
            where = f"rule {r.label!r}" + ("" if label is None else f" on cluster {label!r}")
            kwargs = {**options, "seeds": seeds, "commits": commits, "horizon": horizon,
                      **r.options}
            if cluster is not None:
                kwargs["cluster"] = cluster
            if grids[r.label]:
                kwargs["grid"] = grids[r.label]
            try:
                spec = prepare(problem, r.rule, **kwargs)
            except ConfigError as error:
                raise ConfigError(f"{where}: {error}") from None
            except TypeError as error:  # an option prepare does not take
                raise ConfigError(f"{where}: {error}") from None
            cells.append(_Cell(r.label, label or f"n={spec.workers}", spec))
    return cells


# ----------------------------------------------------------------------------- columns


def _keys(cell: _Cell, result, swept: list[str]) -> dict:
    """The key columns of a cell's rows: rule, cluster, the swept hyperparameters, seed."""
    points = math.prod(result.grid_shape)
    n_seeds = result.n_seeds
    grid = result.grid or {}
    keys = {"rule": np.full(points * n_seeds, cell.rule, dtype=object),
            "cluster": np.full(points * n_seeds, cell.cluster, dtype=object)}
    if grid:
        mesh = dict(zip(grid, np.meshgrid(*(np.asarray(v, np.float64) for v in grid.values()),
                                          indexing="ij"), strict=True))
    for name in swept:
        if name in grid:
            keys[name] = np.repeat(mesh[name].ravel(), n_seeds)
        else:
            value = cell.spec.rule.hyperparameters.get(name)
            number = (float(value) if isinstance(value, int | float | np.number)
                      and not isinstance(value, bool) else np.nan)
            keys[name] = np.full(points * n_seeds, number)
    keys["seed"] = np.tile(np.asarray(result.seeds, np.int64), points)
    return keys


def _outcomes(result, target, target_metric: str) -> dict:
    """The per-run columns of a cell's result, grid points first, then seeds."""
    import pandas as pd

    points = math.prod(result.grid_shape)
    out = {"final_loss": np.asarray(result.final_loss, np.float64).ravel()}
    for name, values in (result.metrics or {}).items():
        out[f"final_{name}"] = np.asarray(values, np.float64)[..., -1].ravel()
    if target is not None:
        reached = result.time_to_target(target, target_metric)
        out["time_to_target"] = np.asarray(reached.seconds, np.float64).ravel()
        out["commits_to_target"] = np.asarray(reached.commits, np.float64).ravel()
    diverged_at = np.asarray(result.diverged_at, np.int64).ravel()
    out["diverged"] = diverged_at >= 0
    out["diverged_at"] = pd.arrays.IntegerArray(np.maximum(diverged_at, 0), diverged_at < 0)
    rows = result.trace_index
    staleness = np.asarray(result.staleness)[rows]  # (S, T), padding -1
    applied = staleness >= 0
    events = applied.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_staleness = np.where(applied, staleness, 0).sum(axis=1) / events
    out["simulated_time"] = np.tile(np.asarray(result.simulated_time, np.float64)[rows],
                                    points)
    out["mean_staleness"] = np.tile(mean_staleness.astype(np.float64), points)
    out["events"] = np.tile(events.astype(np.int64), points)
    return out


# ----------------------------------------------------------------------------- summaries


def mean_interval(values, confidence: float = 0.95, axis: int = 0):
    """The mean over ``axis`` of the finite ``values`` and its two-sided Student t
    confidence interval: ``(mean, low, high, n)``.

    ``mean ± t_{(1+c)/2, n−1} · s / √n`` with ``s`` the sample standard deviation
    (``ddof=1``) of the ``n`` finite values (the quantile from ``scipy.stats.t``).
    Non-finite values (a diverged run's NaN, a target never reached's ``inf``) are left
    out. With fewer than two values the interval is NaN; with values all equal, the mean.
    """
    from scipy import stats

    values = np.asarray(values, np.float64)
    finite = np.isfinite(values)
    n = finite.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite, values, 0.0).sum(axis=axis) / n
        deviation = np.where(finite, values - np.expand_dims(mean, axis), 0.0)
        sem = np.sqrt((deviation**2).sum(axis=axis) / (n - 1) / n)
    quantile = stats.t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 1))
    half = np.where(n >= 2, np.where(sem > 0, quantile * sem, 0.0), np.nan)
    return mean, mean - half, mean + half, n


def key_columns(table) -> list[str]:
    """The columns that name a run's configuration: ``rule``, ``cluster`` and those named
    like a rule's hyperparameter (``learning_rate``, ``gamma``, ...), in table order."""
    from ..rules import RULES

    names = {"rule", "cluster"} | {p for info in RULES.values() for p in info.parameters}
    return [c for c in table.columns if c in names]


def summary(table, y: str, by: Sequence[str] | str | None = None, *,
            confidence: float = 0.95):
    """The mean of column ``y`` over the seeds of each group of ``by``, with its
    confidence interval: a 95 % (``confidence``) Student t interval of the mean
    (:func:`mean_interval`), from ``scipy.stats.t``.

    Args:
      table: a table of :func:`study` (or of :meth:`asynclab.Result.to_frame`).
      y: the column to summarise (``final_loss``, ``time_to_target``, ``loss``, ...).
      by: the columns that make a group (default: :func:`key_columns`, and for a table of
        records also ``record`` and ``event``).
      confidence: the interval's confidence level, in (0, 1).

    Returns:
      A ``pandas.DataFrame``, one row per group in order of first appearance: the ``by``
      columns, ``mean``, ``low``, ``high``, ``n`` (the finite values used) and
      ``excluded`` (the group's rows whose ``y`` is not finite: diverged runs' NaN, and
      ``inf`` for a target never reached; left out of the mean).
    """
    pd = _tables.pandas()
    if not _tables.is_table(table):
        raise ConfigError(f"summary takes a pandas DataFrame (asynclab.study), got "
                          f"{type(table).__name__}")
    if y not in table.columns:
        raise ConfigError(f"y: the table has no column {y!r}; its columns: "
                          f"{', '.join(map(str, table.columns))}")
    if by is None:
        by = key_columns(table) + [c for c in ("record", "event") if c in table.columns]
    elif isinstance(by, str):
        by = [by]
    by = list(by)
    for name in by:
        if name not in table.columns:
            raise ConfigError(f"by: the table has no column {name!r}")
    confidence = _validate.number(confidence, "confidence", low=0, high=1, low_open=True,
                                  high_open=True)
    try:
        values = table[y].to_numpy(np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise ConfigError(f"y: column {y!r} does not hold numbers") from None
    if by:
        groups = table.groupby(by, sort=False, dropna=False).indices
    else:
        groups = {(): np.arange(len(table))}
    rows = []
    for key, index in groups.items():
        mean, low, high, n = mean_interval(values[index], confidence)
        key = key if isinstance(key, tuple) else (key,)
        rows.append((*key, float(mean), float(low), float(high), int(n), int(index.size - n)))
    return pd.DataFrame(rows, columns=[*by, "mean", "low", "high", "n", "excluded"])
