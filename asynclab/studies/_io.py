"""Study data to and from disk: arrays in an ``.npz``, the rest as JSON inside it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import ConfigError


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

#: The types of ``__meta__``'s values (the rest of a study's data is its own).
META_TYPES = {"config": ("dict", "null"), "scalars": ("dict",), "arrays": ("dict",)}


@_files.writes("study")
def save(path: str | Path, data: dict, config=None, *, overwrite: bool = False) -> Path:
    """Write a study's data (numpy arrays and scalars) and its config to ``path`` (.npz).

    ``__meta__`` records the config, the scalars and every array's dtype and shape (the
    writer's schema, which :func:`load` checks). An existing file is refused unless
    ``overwrite``, and then replaced only if it is a study's data (else a ConfigError);
    the write is atomic.
    """
    path = _files.output_path(path, "studies.save", kind="study", overwrite=overwrite)
    arrays = {k: np.asarray(v) for k, v in data.items() if isinstance(v, np.ndarray)}
    scalars = {k: _jsonable(v) for k, v in data.items() if not isinstance(v, np.ndarray)}
    shapes = {k: [v.dtype.str, list(v.shape)] for k, v in arrays.items()}
    meta = {"config": _jsonable(config), "scalars": scalars, "arrays": shapes}
    try:
        arrays["__meta__"] = np.array(json.dumps(meta))
    except (TypeError, ValueError) as error:
        raise ConfigError(f"studies.save: the config or a scalar is not JSON ({error}); "
                          "nothing was written") from None
    return _files.write_npz(path, arrays, "studies.save", kind="study", version=FORMAT,
                            overwrite=overwrite)


@_files.reads("study")
def load(path: str | Path) -> tuple[dict, dict]:
    """``(data, config)`` as written by :func:`save`.

    Raises:
      ConfigError: the file is not a study's data (its members' headers, sizes and
        format are checked before anything is read), its metadata is damaged or nested
        too deep, or an array's dtype or shape differs from what its writer recorded.
    """
    what = "a study's data (an .npz written by a figure or a study)"
    with _files.Archive(path, "study data", what) as archive:
        archive.require("study", FORMAT)
        if "__meta__" not in archive:
            raise archive.error("it has no __meta__ member")
        meta = archive.json("__meta__")
        try:
            _files.check_json(meta, META_TYPES, "its __meta__")
        except ConfigError as error:
            raise archive.error(str(error)) from None
        if "config" not in meta or "scalars" not in meta:
            raise archive.error("its __meta__ lacks config and scalars")
        names = [k for k in archive if k not in ("__meta__", _files.FORMAT_MEMBER)]
        _check_recorded(archive, names, meta.get("arrays"))
        data = {k: archive[k] for k in names}
    data.update(meta["scalars"])
    return data, meta["config"]


def _check_recorded(archive, names: list[str], recorded: dict | None) -> None:
    """Every array as its writer recorded it (files written before the record: as is)."""
    if recorded is None:
        return
    if sorted(recorded) != sorted(names):
        raise archive.error(f"its arrays ({', '.join(sorted(names))}) are not the ones its "
                            f"writer recorded ({', '.join(sorted(recorded))})")
    for name in names:
        shape, dtype = archive.headers[name]
        entry = recorded[name]
        if not (isinstance(entry, list) and len(entry) == 2
                and entry == [dtype.str, list(shape)]):
            raise archive.error(f"inconsistent: {name} holds {dtype.str} of shape "
                                f"{shape}, its writer recorded {entry!r}")
