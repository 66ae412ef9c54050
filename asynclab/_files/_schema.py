"""Writers' schemas, checked by the reader: the members of an ``.npz`` (their dtypes and
shapes, from the headers alone) and the types of JSON values.

A member's shape is a tuple of dimensions: an integer, a name (bound by the first member
that has it, and equal in every other), ``"*grid"`` (a sweep's grid axes, given by the
caller) or ``"..."`` (any further axes, e.g. a net's parameter shapes).
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

from .._errors import ConfigError


class Member(NamedTuple):
    """What one member of an ``.npz`` holds.

    Attributes:
      kinds: numpy dtype kinds allowed (``"f"``: floats, ``"iu"``: integers, ``"U"``:
        text, ``"b"``: booleans).
      shapes: the shapes allowed (one or more alternatives, see the module's docs).
      required: whether every file of the kind has it.
      what: what the member is, for messages.
    """

    kinds: str
    shapes: tuple[tuple, ...]
    required: bool = True
    what: str = ""


_KIND_NAMES = {"f": "floats", "iu": "integers", "U": "text", "b": "booleans"}


def check_members(archive, schema: dict[str, Member], dims: dict | None = None) -> dict:
    """Check every member of ``archive`` (an open :class:`~asynclab._files.Archive`)
    against ``schema`` (names; ``"prefix/*"`` matches every member under ``prefix/``);
    returns the dimensions bound.

    Raises:
      ConfigError: via ``archive.error``: a member missing, unknown, of another dtype or
        another shape than the schema's (the message gives the expected shape).
    """
    dims = dict(dims or {})
    headers = archive.headers

    def bad(reason):
        return archive.error(f"inconsistent: {reason}")

    order = []
    for key in schema:
        if key.endswith("/*"):
            order += sorted(n for n in headers if n.startswith(key[:-1]))
        elif key in headers:
            order.append(key)
        elif schema[key].required and not any(n.startswith(key + "/") for n in headers):
            raise bad(f"it lacks {key}")
    known = set(order)
    unknown = sorted(n for n in headers if n not in known)
    if unknown:
        raise bad(f"unknown member(s) {', '.join(unknown)}")
    for name in order:
        member = schema.get(name) or schema[name.split("/")[0] + "/*"]
        shape, dtype = headers[name]
        if dtype.kind not in member.kinds:
            raise bad(f"{name!r} holds {dtype} values, expected "
                      f"{_KIND_NAMES.get(member.kinds, member.kinds)}")
        tried = []
        for spec in member.shapes:
            bound = _match(shape, spec, dims)
            if bound is not None:
                dims = bound
                break
            tried.append(_expected(spec, dims))
        else:
            what = f" ({member.what})" if member.what else ""
            raise bad(f"{name} has shape {shape}, expected {' or '.join(tried)}{what}")
    return dims


def _match(shape: tuple, spec: tuple, dims: dict) -> dict | None:
    """The dimensions with ``spec``'s names bound to ``shape``'s, or None if it does not
    fit."""
    expanded = []
    for d in spec:
        if d == "*grid":
            expanded += list(dims.get("grid", ()))
        else:
            expanded.append(d)
    rest = expanded[-1] == "..." if expanded else False
    if rest:
        expanded = expanded[:-1]
        if len(shape) < len(expanded):
            return None
    elif len(shape) != len(expanded):
        return None
    out = dict(dims)
    for have, want in zip(shape, expanded, strict=False):
        if isinstance(want, int):
            if have != want:
                return None
        elif want in out and out[want] is not None:
            if have != out[want]:
                return None
        else:
            out[want] = int(have)
    return out


def _expected(spec: tuple, dims: dict) -> str:
    parts = []
    for d in spec:
        if d == "*grid":
            parts += [str(n) for n in dims.get("grid", ())]
        elif d == "...":
            parts.append("...")
        elif isinstance(d, int):
            parts.append(str(d))
        else:
            parts.append(str(dims[d]) if dims.get(d) is not None else d)
    inner = ", ".join(parts) + ("," if len(parts) == 1 else "")
    return f"({inner})"


# ----------------------------------------------------------------------------- JSON values

#: JSON value types for :func:`check_json`.
INT, NUMBER, TEXT, BOOL, NULL, DICT, LIST = ("int", "number", "text", "bool", "null", "dict",
                                             "list")


def json_type(value) -> str:
    """The name of a JSON value's type (``"int"``, ``"number"``, ...)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, numbers.Integral):
        return INT
    if isinstance(value, numbers.Real):
        return NUMBER
    if isinstance(value, str):
        return TEXT
    if isinstance(value, dict):
        return DICT
    if isinstance(value, list):
        return LIST
    return type(value).__name__


def check_json(value: dict, types: dict, field: str) -> None:
    """Check the keys of a JSON object that ``types`` names (``key -> allowed types``, a
    tuple of the names above, ``"list of int"``-style entries for lists of one type);
    other keys may hold any JSON.

    Raises:
      ConfigError: naming ``field`` and the key: a value of another type.
    """
    if not isinstance(value, dict):
        raise ConfigError(f"{field}: expected a JSON object, got {json_type(value)}")
    for key, allowed in types.items():
        if key not in value:
            continue
        item = value[key]
        if not any(_fits(item, kind) for kind in allowed):
            raise ConfigError(f"{field}: {key!r} holds {json_type(item)} "
                              f"{_short(item)}, expected {' or '.join(allowed)}")


def _fits(item, kind: str) -> bool:
    if kind.startswith("list of "):
        inner = kind.removeprefix("list of ")
        return isinstance(item, list) and all(_fits(v, inner) for v in item)
    if kind == NUMBER:
        return json_type(item) in (INT, NUMBER) and (
            not isinstance(item, float) or not math.isnan(item))
    if kind == "finite":
        return json_type(item) in (INT, NUMBER) and math.isfinite(item)
    if kind == "count":
        return json_type(item) == INT and item >= 1
    if kind == "natural":
        return json_type(item) == INT and item >= 0
    return json_type(item) == kind


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
