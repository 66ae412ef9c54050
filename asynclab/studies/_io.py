"""Study data to and from disk: arrays in an ``.npz``, the rest as JSON inside it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np


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


def save(path: str | Path, data: dict, config=None) -> Path:
    """Write a study's data (numpy arrays and scalars) and its config to ``path`` (.npz)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {k: np.asarray(v) for k, v in data.items() if isinstance(v, np.ndarray)}
    scalars = {k: _jsonable(v) for k, v in data.items() if not isinstance(v, np.ndarray)}
    meta = {"config": _jsonable(config), "scalars": scalars}
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, __meta__=np.array(json.dumps(meta)), **arrays)
    tmp.replace(path)
    return path


def load(path: str | Path) -> tuple[dict, dict]:
    """``(data, config)`` as written by :func:`save`."""
    with np.load(Path(path), allow_pickle=False) as f:
        meta = json.loads(str(f["__meta__"]))
        data = {k: f[k] for k in f.files if k != "__meta__"}
    data.update(meta["scalars"])
    return data, meta["config"]
