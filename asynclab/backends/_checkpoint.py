"""Checkpoints of a run on devices: state, position, records, and what run wrote them.

A checkpoint is one ``.npz`` file: the leaves of ``(server, workers)`` (flattened with
``jax.tree.flatten``; they are rebuilt on a template state from
``asynclab.engine.initial_state``, so no code is pickled), the records so far, and a
JSON header holding the position in the trace and a *fingerprint* of the run (rule and
hyperparameters, problem, seed, noise, a hash of the trace). It is written to a
temporary file and moved into place with ``os.replace``, so a run killed while writing
leaves the previous checkpoint intact. A checkpoint whose fingerprint differs from the
run resuming it is refused with a :class:`~asynclab.ConfigError`.

In a multi-process run each process writes its own file (``name.process{i}.npz``)
holding the server and its own devices' workers.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from .. import _files
from .._errors import ConfigError
from ..cluster import RoundTrace

FORMAT = 1


def trace_hash(trace) -> str:
    """A SHA-256 of everything in a trace that the numbers depend on."""
    digest = hashlib.sha256()
    digest.update(type(trace).__name__.encode())
    fields = ("time", "duration") if isinstance(trace, RoundTrace) else (
        "time", "worker", "pulled_clock")
    for name in fields:
        digest.update(np.ascontiguousarray(getattr(trace, name)).tobytes())
    digest.update(json.dumps([trace.n_workers, trace.local_steps,
                              getattr(trace, "group_size", 1)]).encode())
    if getattr(trace, "counted", None) is not None:  # semi-synchronous rounds
        digest.update(np.ascontiguousarray(trace.counted, bool).tobytes())
        digest.update(str(trace.late).encode())
    return digest.hexdigest()


def fingerprint(rule, problem, trace, **settings) -> dict:
    """What identifies a run: a checkpoint resumes only a run with the same fingerprint."""
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(problem.start):
        digest.update(np.ascontiguousarray(leaf).tobytes())
    start = digest.hexdigest()[:16]
    value = {
        "rule": rule.name,
        "hyperparameters": dict(rule.hyperparameters),
        "problem": problem.name,
        "dim": int(problem.dim),
        "problem_start": start,
        "workers": int(trace.n_workers),
        "events": int(trace.n_events),
        "trace": trace_hash(trace),
        "processes": [jax.process_count(), jax.process_index()],
        **settings,
    }
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def process_path(path: str | Path) -> Path:
    """The file this process writes: ``path`` itself, or one file per process."""
    path = _files.local_path(path, "checkpoint")
    if jax.process_count() == 1:
        return path
    return path.with_name(f"{path.stem}.process{jax.process_index()}{path.suffix}")


class Saved(NamedTuple):
    """A checkpoint read back."""

    state: Any
    position: int
    diverged_at: int
    records: dict


@_files.writes("checkpoint")
def save(path: Path, print_: dict, state, position: int, diverged_at: int,
         records: dict, *, overwrite: bool = False) -> Path:
    """Write ``state`` (a pytree of numpy arrays) and the records atomically to ``path``
    (an existing file only with ``overwrite``, and only a checkpoint)."""
    leaves = jax.tree.leaves(state)
    arrays = {f"state_{i}": np.asarray(leaf) for i, leaf in enumerate(leaves)}
    arrays.update({f"record_{name}": np.asarray(value) for name, value in records.items()})
    header = {"format": FORMAT, "fingerprint": print_, "position": int(position),
              "diverged_at": int(diverged_at), "leaves": len(leaves),
              "records": sorted(records)}
    arrays["header"] = np.asarray(json.dumps(header, sort_keys=True))
    return _files.write_npz(path, arrays, "checkpoint", kind="checkpoint", version=FORMAT,
                            overwrite=overwrite, compressed=False)


#: The types of a checkpoint's header values.
HEADER_TYPES = {"format": ("int",), "fingerprint": ("dict",), "position": ("natural",),
                "diverged_at": ("int",), "leaves": ("natural",),
                "records": ("list of text",)}


def load(path: Path, print_: dict, template) -> Saved:
    """Read a checkpoint of the run with fingerprint ``print_``; leaves go onto ``template``.

    Raises:
      ConfigError: the file is not a checkpoint, or another run (another fingerprint, or
        state of another shape) wrote it.
    """
    return restore(read(path, print_), path, template)


@_files.reads("checkpoint")
def read(path: Path, print_: dict) -> Saved:
    """A checkpoint's header, records and state leaves (a flat list), checked against the
    fingerprint ``print_`` of the run that resumes it; nothing is compiled or placed.

    Raises:
      ConfigError: the file is missing, empty, truncated, not a checkpoint, or another
        run's.
    """
    what = "an asynclab checkpoint (written by a run on devices with --checkpoint)"
    with _files.Archive(path, "checkpoint", what) as archive:
        archive.require("checkpoint", FORMAT)
        try:
            header = _files.loads_json(archive.text("header"), "header")
            _files.check_json(header, HEADER_TYPES, "header")
            leaves = header["leaves"]
            if not isinstance(leaves, int) or not 0 <= leaves <= len(list(archive)):
                raise ValueError(f"{leaves!r} state leaves")
            names = [f"state_{i}" for i in range(leaves)]
            names += [f"record_{name}" for name in header["records"]]
            position, diverged_at = header["position"], header["diverged_at"]
            if not isinstance(header["fingerprint"], dict):
                raise TypeError("fingerprint")
            missing = [name for name in names if name not in archive]
            if missing:
                raise KeyError(missing[0])
        except (KeyError, ValueError, TypeError, AttributeError) as error:  # ConfigError too
            detail = str(error) if isinstance(error, ConfigError) else type(error).__name__
            raise ConfigError(f"checkpoint: {str(path)!r} is not {what}: its header is "
                              f"damaged ({detail})") from None
        if header.get("format") != FORMAT:
            raise ConfigError(f"{path}: checkpoint format {header.get('format')} is not "
                              f"{FORMAT}")
        events = print_.get("events")
        for name, value, low in (("position", position, 0), ("diverged_at", diverged_at, -1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low or (
                    isinstance(events, int) and value > events):
                raise archive.error(f"its {name} {value!r} is outside [{low}, {events}]")
        saved = header["fingerprint"]
        if saved != print_:
            differences = ", ".join(
                f"{key}: checkpoint {saved.get(key)!r} vs run {print_.get(key)!r}"
                for key in sorted(set(saved) | set(print_)) if saved.get(key) != print_.get(key))
            raise ConfigError(f"the checkpoint {path} belongs to another run ({differences}); "
                              "resume with the same configuration or remove the file")
        leaves = [archive[f"state_{i}"] for i in range(header["leaves"])]
        records = {name: archive[f"record_{name}"] for name in header["records"]}
    return Saved(state=leaves, position=header["position"],
                 diverged_at=header["diverged_at"], records=records)


def restore(saved: Saved, path: Path, template) -> Saved:
    """``saved`` with its state leaves rebuilt on ``template``'s structure."""
    leaves = saved.state
    expected, treedef = jax.tree.flatten(template)
    if len(expected) != len(leaves) or any(
            np.shape(a) != b.shape or np.asarray(a).dtype != b.dtype
            for a, b in zip(expected, leaves, strict=False)):
        raise ConfigError(f"the checkpoint {path} holds state of another shape than this run")
    return saved._replace(state=jax.tree.unflatten(treedef, leaves))
