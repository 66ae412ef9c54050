"""What a replay returns, and how it goes to and from disk."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .. import _files, _tables, _validate
from .._errors import ConfigError
from . import _metrics

_ARRAYS = ("seeds", "time", "worker", "staleness", "record_events", "loss", "final_params",
           "diverged_at", "center_path", "worker_path", "center_share", "goodput",
           "goodput_per_device_second", "round_staleness")


@dataclasses.dataclass(repr=False)
class Result:
    """The record of one replay over S seeds (T events, R loss records), or of a sweep:
    then every per-seed array has the grid's axes in front, ``loss`` has shape
    ``(len(grid[k1]), len(grid[k2]), ..., S, R)``, and ``config["grid"]`` records the grid.

    Event arrays have a leading trace axis of length 1 when every seed replayed the same
    trace, or S when each seed had its own; ``trace_index`` maps seeds to traces.

    Attributes:
      config: the configuration that produced the result (JSON-able).
      seeds: ``(S,)`` the seeds.
      time: ``(Tr, T)`` simulated seconds at each commit (asynchronous) or round end.
      worker: ``(Tr, T)`` committing worker (-1 for synchronous rounds).
      staleness: ``(Tr, T)`` staleness τ of each commit (0 for synchronous rounds, -1 for
        the padding after a shorter trace when traces of several lengths replay together).
      record_events: ``(R,)`` number of events done at each loss record (0 = the start).
      loss: ``(S, R)`` central loss at each record (NaN once a run has diverged).
      final_params: ``(S, d)`` the final centre (the last finite one if the run diverged);
        for a problem with pytree parameters (a net) the same pytree with a leading
        seed axis on every leaf (a nested dict of arrays).
      diverged_at: ``(S,)`` the event at which the centre became non-finite (or its loss,
        checked at each record), or -1.
      center_path: ``(S, R, d)`` the centre at each record (NaN once a run has
        diverged, like the loss), or None (problems with d > 2).
      worker_path: the committing worker's parameters after its local work, ``(S, T, d)``
        (asynchronous), or every worker's after each round's local work, ``(S, T, n, d)``
        (synchronous), NaN after the event at which a run diverged; None when not
        recorded.
      metrics: what the problem evaluates beside the loss at each record, ``name ->
        (S, R)`` (a net's ``validation_loss`` and ``accuracy``, validation accuracy of
        the centre, NaN once diverged); None for problems without an evaluation.
      center_share: ``(S, n)`` who moved the centre: worker k's share of the centre's
        total movement, ``Σ_{t credited to k} ‖θ̃_{t+1} − θ̃_t‖₂ / Σ_t ‖θ̃_{t+1} − θ̃_t‖₂``
        over the events the run applied (a diverged run's before ``diverged_at``). An
        asynchronous commit is credited to its worker (a mixed cluster's group commit
        to its members, equally); a synchronous round to every worker equally, a
        semi-synchronous one to the workers that counted in it, equally. Each row sums
        to 1; NaN for a run whose centre never moved. None for a result made without it
        (archives older than it, a device run resumed from an older checkpoint).
      goodput: ``(Tr,)`` useful gradient evaluations over all those started, per trace
        (:func:`asynclab.cluster.goodput`: work lost to failures and discarded
        semi-synchronous work are not useful); 1.0 without either. None for a result
        made without it (archives older than it).
      goodput_per_device_second: ``(Tr,)`` useful gradient evaluations per device-second
        (workers × simulated duration), per trace; None as ``goodput``.
      round_staleness: ``(Tr, R, n)`` int32, semi-synchronous rounds only: the staleness
        of each worker's commit counted in each round (``RoundTrace.staleness``), -1
        where it did not count; None otherwise (every round's commits are then fresh,
        ``staleness`` 0).

    The records' axes: :attr:`record_events` (events done at each record) and
    :attr:`record_time` (simulated seconds at each record, ``(Tr, R)``); ``loss[s, r]``
    and ``metrics[name][s, r]`` were recorded at ``record_time[trace_index[s], r]``.
    ``asynclab.plot.compare`` draws several results against either.
    """

    config: dict[str, Any]
    seeds: np.ndarray
    time: np.ndarray
    worker: np.ndarray
    staleness: np.ndarray
    record_events: np.ndarray
    loss: np.ndarray
    final_params: Any
    diverged_at: np.ndarray
    center_path: np.ndarray | None = None
    worker_path: np.ndarray | None = None
    metrics: dict[str, np.ndarray] | None = None
    center_share: np.ndarray | None = None
    goodput: np.ndarray | None = None
    goodput_per_device_second: np.ndarray | None = None
    round_staleness: np.ndarray | None = None

    def __repr__(self) -> str:
        """One line: what ran, how long, and how it ended (arrays are not printed)."""
        cfg = self.config
        grid = "" if self.grid is None else " grid " + "x".join(map(str, self.grid_shape)) + ","
        budget = "rounds" if cfg.get("synchronous") else "commits"
        parts = [f"{cfg.get('rule', '?')} on {cfg.get('problem', '?')}, "
                 f"n={cfg.get('workers', '?')},{grid} {self.n_seeds} seed(s), "
                 f"{self.n_events} {budget}"]
        final = np.asarray(self.final_loss, np.float64)
        if np.isfinite(final).any():
            parts.append(f"final loss median {np.nanmedian(final):.4g}")
        if self.final_accuracy is not None and np.isfinite(self.final_accuracy).any():
            parts.append(f"accuracy median {np.nanmedian(self.final_accuracy):.3g}")
        parts.append(f"diverged {int(np.sum(self.diverged))}/{self.diverged.size}")
        return f"Result({'; '.join(parts)})"

    # ------------------------------------------------------------------ derived views
    @property
    def n_seeds(self) -> int:
        return int(self.seeds.shape[0])

    @property
    def n_events(self) -> int:
        return int(self.time.shape[-1])

    @property
    def trace_index(self) -> np.ndarray:
        """``(S,)`` which row of the event arrays each seed replayed."""
        if self.time.shape[0] == 1:
            return np.zeros(self.n_seeds, np.int64)
        return np.arange(self.n_seeds)

    @property
    def diverged(self) -> np.ndarray:
        """``(S,)`` whether each run diverged."""
        return self.diverged_at >= 0

    @property
    def record_time(self) -> np.ndarray:
        """``(Tr, R)`` simulated seconds at each loss record (0 at the start)."""
        padded = np.concatenate([np.zeros((self.time.shape[0], 1)), self.time], axis=1)
        return padded[:, self.record_events]

    @property
    def final_loss(self) -> np.ndarray:
        """``(S,)`` (``grid_shape + (S,)`` for a sweep) the last recorded central loss (NaN
        for a diverged run)."""
        return self.loss[..., -1]

    @property
    def final_accuracy(self) -> np.ndarray | None:
        """``(S,)`` the centre's validation accuracy at the last record, or None."""
        return None if not self.metrics else self.metrics["accuracy"][..., -1]

    @property
    def final_validation_loss(self) -> np.ndarray | None:
        """``(S,)`` the centre's validation loss at the last record, or None."""
        return None if not self.metrics else self.metrics["validation_loss"][..., -1]

    @property
    def simulated_time(self) -> np.ndarray:
        """``(Tr,)`` simulated seconds the whole schedule took."""
        return self.time[:, -1] if self.n_events else np.zeros(self.time.shape[0])

    def to_frame(self):
        """The records in long form, a pandas DataFrame: one row per (grid point, seed,
        record).

        Columns, in order: for a sweep, one per grid hyperparameter (its value at the
        row's point, in the grid's axis order); ``seed``; ``record`` (the record's index,
        0 = the start); ``event`` (events done at the record, :attr:`record_events`:
        commits, or rounds for a synchronous rule); ``time`` (simulated seconds at the
        record, from the schedule the seed replayed, :attr:`record_time`); ``loss`` (the
        central loss, NaN once a run has diverged); then one column per entry of
        :attr:`metrics` (a net's ``validation_loss`` and ``accuracy``). Rows run over the
        grid points in order (the last axis fastest), then the seeds, then the records.
        Numbers are float64 (the records' float32 values, exactly), indices int64.

        Needs pandas (``pip install "asynclab[pandas]"``); without it, a ConfigError.

        Example:
          >>> import asynclab
          >>> result = asynclab.run("beale", "downpour", workers=2, commits=20,
          ...                       seeds=[0, 1], record_every=10)
          >>> result.to_frame().shape  # 2 seeds x 3 records, 5 columns
          (6, 5)
        """
        pd = _tables.pandas()
        seeds = np.asarray(self.seeds, np.int64)
        events = np.asarray(self.record_events, np.int64)
        n_seeds, n_records = seeds.size, events.size
        grid = self.grid or {}
        points = math.prod(self.grid_shape)
        columns = {}
        if grid:
            mesh = np.meshgrid(*(np.asarray(v, np.float64) for v in grid.values()),
                               indexing="ij")
            for name, values in zip(grid, mesh, strict=True):
                columns[name] = np.repeat(values.ravel(), n_seeds * n_records)
        columns["seed"] = np.tile(np.repeat(seeds, n_records), points)
        columns["record"] = np.tile(np.arange(n_records, dtype=np.int64), points * n_seeds)
        columns["event"] = np.tile(events, points * n_seeds)
        columns["time"] = np.tile(np.asarray(self._seed_record_time(), np.float64).ravel(),
                                  points)
        columns["loss"] = np.asarray(self.loss, np.float64).ravel()
        for name, values in (self.metrics or {}).items():
            columns[name] = np.asarray(values, np.float64).ravel()
        return pd.DataFrame(columns)

    # ------------------------------------------------------------------ efficiency
    def _series(self, metric: str) -> np.ndarray:
        """``(..., S, R)`` the recorded series ``metric``: ``"loss"`` (the central loss) or
        one of :attr:`metrics` (a net's ``"accuracy"``, ``"validation_loss"``)."""
        if metric == "loss":
            return np.asarray(self.loss)
        if not self.metrics or metric not in self.metrics:
            available = ", ".join(["loss", *(self.metrics or {})])
            raise ConfigError(f"metric: this result records no {metric!r}; "
                              f"available: {available}")
        return np.asarray(self.metrics[metric])

    def _seed_record_time(self) -> np.ndarray:
        """``(S, R)`` simulated seconds at each record, for the trace each seed replayed."""
        return self.record_time[self.trace_index]

    def time_to_target(self, target: float, metric: str = "accuracy", *,
                       higher_is_better: bool | None = None) -> _metrics.TimeToTarget:
        """When each run first reaches ``target``: simulated seconds and events (commits;
        rounds for a synchronous rule), ``inf`` if it never does.

        Measured at the records (every ``record_every`` events): the first record at which
        the series reaches the target.

        Args:
          target: e.g. a validation accuracy of 0.9, or a loss of 0.1.
          metric: ``"accuracy"`` (default), ``"validation_loss"`` or ``"loss"``.
          higher_is_better: reached means ``value >= target`` (default for accuracy) or
            ``value <= target`` (default for the losses).

        Returns:
          A ``TimeToTarget(seconds, commits)`` of ``(S,)`` arrays (grid axes in front for
          a sweep).
        """
        values = self._series(metric)
        target = _validate.number(target, "target", dtype=np.float32,
                                  **({"low": 0, "high": 1} if metric == "accuracy" else {}))
        if higher_is_better is None:
            higher_is_better = metric == "accuracy"
        found = _metrics.time_to_target(self._seed_record_time(), self.record_events, values,
                                        target, higher_is_better=higher_is_better)
        return _metrics.TimeToTarget(np.asarray(found.seconds), np.asarray(found.commits))

    def temporal_efficiency(self, other: Result, metric: str = "loss") -> np.ndarray:
        """The temporal efficiency ``E(self, other) = ∫ f_self dt / ∫ f_other dt`` over
        the shorter of the two runs, seed by seed (``f``: the recorded ``metric``,
        interpolated linearly in simulated time between records). For a loss, ``E < 1``
        means this run reached lower values sooner than ``other``.

        Args:
          other: a result over the same seeds (or over one seed, compared with each).
          metric: ``"loss"`` (default), ``"validation_loss"`` or ``"accuracy"``.

        Returns:
          ``(S,)`` (grid axes in front for a sweep).
        """
        if not isinstance(other, Result):
            raise ConfigError(f"other must be a Result, got {type(other).__name__}")
        if self.config.get("problem") != other.config.get("problem"):
            raise ConfigError(f"other: a run on {other.config.get('problem')!r}, this one on "
                              f"{self.config.get('problem')!r}; compare runs on one problem")
        mine, theirs = self._series(metric), other._series(metric)
        try:
            np.broadcast_shapes(mine.shape[:-1], theirs.shape[:-1])
        except ValueError:
            raise ConfigError(f"other: {theirs.shape[-2]} seed(s) against this result's "
                              f"{mine.shape[-2]}; compare results over the same seeds"
                              ) from None
        return np.asarray(_metrics.temporal_efficiency(
            np.broadcast_to(self._seed_record_time(), mine.shape), mine,
            np.broadcast_to(other._seed_record_time(), theirs.shape), theirs))

    def statistical_efficiency(self, reference: Result, target: float,
                               metric: str = "accuracy", *,
                               higher_is_better: bool | None = None) -> np.ndarray:
        """Commits to ``target`` relative to ``reference`` (e.g. one worker), ``C / C_ref``
        seed by seed: 1 means asynchrony costs nothing per update, 2 twice as many commits;
        ``inf`` where this run never reaches the target. The target is reached as in
        :meth:`time_to_target`."""
        if not isinstance(reference, Result):
            raise ConfigError(f"reference must be a Result, got {type(reference).__name__}")
        mine = self.time_to_target(target, metric, higher_is_better=higher_is_better)
        theirs = reference.time_to_target(target, metric, higher_is_better=higher_is_better)
        return np.asarray(_metrics.statistical_efficiency(mine.commits, theirs.commits))

    def hardware_efficiency(self) -> np.ndarray:
        """``(S,)`` simulated seconds per event (commit, or round) over each seed's run:
        ``(t_end − t_0) / (events_end − events_0)`` between the first and last records."""
        return np.asarray(_metrics.hardware_efficiency(self._seed_record_time(),
                                                       self.record_events))

    def staleness_histogram(self) -> np.ndarray:
        """Counts of each staleness value over all commits of all traces (padding excluded);
        of semi-synchronous rounds, over every commit counted in a round
        (:attr:`round_staleness`)."""
        values = (self.staleness if self.round_staleness is None
                  else self.round_staleness).ravel()
        return np.bincount(values[values >= 0].astype(np.int64), minlength=1)

    @property
    def grid(self) -> dict[str, np.ndarray] | None:
        """The grid of a sweep, ``name -> values`` in axis order, or None for a run."""
        pairs = self.config.get("grid")
        if not pairs:
            return None
        return {name: np.asarray(values) for name, values in pairs}

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The leading grid axes of a sweep's per-seed arrays (``()`` for a run)."""
        grid = self.grid
        return () if grid is None else tuple(len(v) for v in grid.values())

    # ------------------------------------------------------------------ disk
    @_files.writes("result")
    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the arrays and the config to one ``.npz`` file (``.npz`` is added to a
        path without it); returns the path. The file holds its format version.

        An existing file is refused unless ``overwrite``, and then replaced only if it is
        a saved result (anything else is a ConfigError, and nothing is written). The
        file is written to a temporary file and moved into place, so a write that fails
        (a full disk) leaves nothing behind.
        """
        path = _files.local_path(path, "Result.save")
        if path.suffix != ".npz":  # added, as numpy does: run.v2 -> run.v2.npz
            path = path.with_name(path.name + ".npz")
        _files.output_path(path, "Result.save", kind="result", overwrite=overwrite)
        arrays = {name: getattr(self, name) for name in _ARRAYS if getattr(self, name) is not None}
        if isinstance(self.final_params, dict):
            del arrays["final_params"]
            arrays.update(_flatten("final_params", self.final_params))
        arrays.update(_flatten("metrics", self.metrics or {}))
        try:
            text = json.dumps(self.config, sort_keys=True, allow_nan=True)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"Result.save: the config is not JSON ({error}); nothing was "
                              "written") from None
        arrays["config_json"] = np.array(text)
        return _files.write_npz(path, arrays, "Result.save", kind="result", version=FORMAT,
                                overwrite=overwrite)

    @classmethod
    @_files.reads("result")
    def load(cls, path: str | Path) -> Result:
        """Read a result written by :meth:`save`.

        Every member's dtype and shape is checked against the writer's schema before any
        is read (``center_share`` is ``(seeds, workers)``, the grid's axes in front for a
        sweep), the config's values against their types, and the event and record
        indices against their ranges after.

        Raises:
          ConfigError: the file is missing, empty, truncated, not a saved result (a
            checkpoint of a run on devices, or another program's ``.npz``), of a newer
            format, or inconsistent (arrays whose shapes, types or values do not fit).
        """
        what = "an asynclab result (an .npz written by Result.save)"
        with _files.Archive(path, "Result.load", what) as archive:
            archive.require("result", FORMAT)
            if "config_json" not in archive:
                raise archive.error("it lacks config_json")
            try:
                config = _files.loads_json(archive.text("config_json"), "its config")
            except ConfigError as error:
                raise archive.error(str(error)) from None
            if not isinstance(config, dict):
                raise archive.error("its config is not JSON object")
            try:
                _files.check_json(config, CONFIG_TYPES, "its config")
            except ConfigError as error:
                raise archive.error(str(error)) from None
            _check_layout(archive, config)
            data = archive.read_all()
        fields = {name: data[name] for name in _ARRAYS if name in data}
        fields.update(_unflatten({name: data[name] for name in data if "/" in name}))
        _check_values(archive, fields, config)
        return cls(config=config, **fields)


#: The version :meth:`Result.save` writes.
FORMAT = 1


#: The types of the config values a result records (other keys may hold any JSON).
CONFIG_TYPES = {
    "rule": ("text",), "synchronous": ("bool",), "hyperparameters": ("dict",),
    "problem": ("text",), "dim": ("count",), "workers": ("count",),
    "seeds": ("list of natural",), "noise": ("finite",), "init": ("text",),
    "problem_options": ("dict",), "compute": ("dict", "text", "null"),
    "cluster": ("text", "null"), "commits": ("count", "null"),
    "horizon": ("finite", "null"), "start": ("list of finite", "null"),
    "trace_per_seed": ("bool",), "semisync": ("dict", "null"),
    "defaults_used": ("list of text",), "grid": ("list",), "structure": ("list",),
    "backend": ("text",), "diverged_above": ("finite", "null"),
    "record_every": ("count", "null"), "simulator": ("text",), "layout": ("dict",),
}

#: The members of a saved result (the writer's schema): ``seeds`` binds S, ``time`` the
#: traces (1 or S) and the events T, ``record_events`` the records R; a sweep's grid
#: axes come first in every per-seed member, and ``center_share`` has one column per
#: worker of the config (a mixed rule's replayed groups: one per member).
SCHEMA = {
    "seeds": _files.Member("iu", (("seeds",),), what="the seeds"),
    "time": _files.Member("f", (("traces", "events"),), what="simulated seconds per event"),
    "worker": _files.Member("iu", (("traces", "events"),), what="one per event"),
    "staleness": _files.Member("iu", (("traces", "events"),), what="one per event"),
    "record_events": _files.Member("iu", (("records",),), what="one per record"),
    "loss": _files.Member("f", (("*grid", "seeds", "records"),),
                          what="grid axes, seeds, records"),
    "diverged_at": _files.Member("iu", (("*grid", "seeds"),), what="grid axes, seeds"),
    "final_params": _files.Member("f", (("*grid", "seeds", "..."),), what="grid axes, "
                                  "seeds, then the parameters' shape"),
    "final_params/*": _files.Member("f", (("*grid", "seeds", "..."),),
                                    what="grid axes, seeds, then the leaf's shape"),
    "metrics/*": _files.Member("f", (("*grid", "seeds", "records"),),
                               what="grid axes, seeds, records"),
    "center_path": _files.Member("f", (("*grid", "seeds", "records", "dim"),),
                                 required=False, what="grid axes, seeds, records, d"),
    "worker_path": _files.Member("f", (("*grid", "seeds", "events", "dim"),
                                       ("*grid", "seeds", "events", "path_workers", "dim")),
                                 required=False, what="grid axes, seeds, events, then d "
                                 "or (workers, d)"),
    "center_share": _files.Member("f", (("*grid", "seeds", "workers"),), required=False,
                                  what="grid axes, seeds, one column per worker"),
    "goodput": _files.Member("f", (("traces",),), required=False, what="one per trace"),
    "goodput_per_device_second": _files.Member("f", (("traces",),), required=False,
                                               what="one per trace"),
    "round_staleness": _files.Member("iu", (("traces", "events", "round_workers"),),
                                     required=False, what="traces, rounds, workers"),
    "config_json": _files.Member("U", ((),), what="the config as JSON"),
    _files.FORMAT_MEMBER: _files.Member("U", ((),), required=False),
}


def _check_layout(archive, config: dict) -> None:
    """Shapes and dtypes of a saved result against :data:`SCHEMA`, from the members'
    headers alone."""

    def bad(reason):
        return archive.error(f"inconsistent: {reason}")

    grid = config.get("grid")
    dims: dict = {"grid": ()}
    if grid:
        if not (isinstance(grid, list) and all(
                isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], list) and pair[1] and all(
                    isinstance(v, int | float) and not isinstance(v, bool)
                    and math.isfinite(v) for v in pair[1]) for pair in grid)):
            raise bad("config['grid'] is not a list of [name, finite numbers] pairs")
        names = [pair[0] for pair in grid]
        if len(set(names)) != len(names):
            raise bad(f"config['grid'] names an axis twice ({', '.join(names)})")
        dims["grid"] = tuple(len(values) for _, values in grid)
    shapes = {name: shape for name, (shape, _) in archive.headers.items()}
    seeds = shapes.get("seeds")
    if seeds is not None and (len(seeds) != 1 or seeds[0] < 1):
        raise bad(f"seeds has shape {seeds}, expected a non-empty list of integers")
    time = shapes.get("time")
    if time is not None and seeds is not None and (len(time) != 2 or time[0] not in (
            1, seeds[0])):
        raise bad(f"time has shape {time}, expected (1 or {seeds[0]} traces, events)")
    dims = _files.check_members(archive, SCHEMA, dims)
    workers, width = config.get("workers"), dims.get("workers")
    if isinstance(workers, int) and width is not None:
        group = (config.get("hyperparameters") or {}).get("group_size", 1)
        group = group if isinstance(group, int) and not isinstance(group, bool) else 1
        allowed = sorted({workers, workers * group})
        if width not in allowed:
            raise bad(f"center_share has {width} columns, expected one per worker: "
                      f"{' or '.join(map(str, allowed))} (config['workers'] = {workers})")


def _check_values(archive, fields: dict, config: dict) -> None:
    """Indices in their ranges (seeds, committing workers, record positions, divergence
    events, staleness) and times finite and in order."""
    events = fields["time"].shape[1]
    workers = config.get("workers")
    workers = workers if isinstance(workers, int) and workers >= 1 else 2**31

    def within(name, low, high):
        values = fields[name]
        outside = (values < low) | (values > high)
        if outside.any():
            value = values[np.unravel_index(int(np.flatnonzero(outside)[0]), values.shape)]
            raise archive.error(f"inconsistent: {name} holds {value}, outside [{low}, {high}]")

    within("seeds", 0, 2**32 - 1)
    within("worker", -1, workers - 1)
    time = fields["time"]
    if not np.all(np.isfinite(time)) or np.any(np.diff(time, axis=-1) < 0):
        raise archive.error("inconsistent: time is not finite and non-decreasing")
    within("record_events", 0, events)
    within("diverged_at", -1, events)
    within("staleness", -1, max(events, 1))
    if "center_share" in fields:
        within("center_share", 0, 1)
    if "goodput" in fields:
        within("goodput", 0, 1)
    if not np.all(np.diff(fields["record_events"]) > 0):
        raise archive.error("inconsistent: record_events is not strictly increasing")


def _flatten(prefix: str, tree: dict) -> dict[str, np.ndarray]:
    """``{"prefix/a/b": array}`` from a nested dict of arrays."""
    out = {}
    for name, value in tree.items():
        if isinstance(value, dict):
            out.update(_flatten(f"{prefix}/{name}", value))
        else:
            out[f"{prefix}/{name}"] = np.asarray(value)
    return out


def _unflatten(flat: dict[str, np.ndarray]) -> dict:
    out: dict = {}
    for path, value in flat.items():
        *parents, leaf = path.split("/")
        node = out
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    return out
