"""Study data to and from disk: arrays in an ``.npz``, the rest as JSON inside it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .. import _archive


def _jsonable(value):
    if dataclasses.is_dataclass(value):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


#: The version :func:`save` writes.
FORMAT = 1


def save(path: str | Path, data: dict, config=None) -> Path:
    """Write a study's data (numpy arrays and scalars) and its config to ``path`` (.npz).

    An existing file is replaced only if it is a study's data (else a ConfigError)."""
    if Path(path).exists():
        _archive.check_kind(path, "study", "studies.save")
    arrays = {k: np.asarray(v) for k, v in data.items() if isinstance(v, np.ndarray)}
    scalars = {k: _jsonable(v) for k, v in data.items() if not isinstance(v, np.ndarray)}
    meta = {"config": _jsonable(config), "scalars": scalars}
    arrays["__meta__"] = np.array(json.dumps(meta))
    return _archive.write(Path(path), arrays, kind="study", version=FORMAT)


def load(path: str | Path) -> tuple[dict, dict]:
    """``(data, config)`` as written by :func:`save`.

    Raises:
      ConfigError: the file is not a study's data (see ``asynclab._archive.Archive``
        for the checks made before anything is read), or its metadata is damaged.
    """
    what = "a study's data (an .npz written by a figure or a study)"
    with _archive.Archive(path, "study data", what) as archive:
        archive.require("study", FORMAT)
        if "__meta__" not in archive:
            raise archive.error("it has no __meta__ member")
        meta = archive.json("__meta__")
        if not (isinstance(meta, dict) and isinstance(meta.get("scalars"), dict)
                and "config" in meta):
            raise archive.error("its __meta__ lacks config and scalars")
        data = {k: archive[k] for k in archive if k not in ("__meta__", _archive.FORMAT_MEMBER)}
    data.update(meta["scalars"])
    return data, meta["config"]
