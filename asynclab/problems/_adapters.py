"""Flax (NNX) and Equinox models as ``(apply, params)`` for
:func:`~asynclab.problems.from_model`.

A module is split once into its trainable arrays and the rest (structure, static fields,
non-trainable state); ``params`` is a nested dict of those arrays named by their place in
the module (``{"layers": {"0": {"weight": ...}}}``), which the rules average, scale and
subtract like any pytree and a :class:`~asynclab.engine.Result` saves; ``apply`` puts a
dict of that structure back into the module and calls it. Both libraries are optional
extras (``pip install "asynclab[flax]"``, ``"asynclab[equinox]"``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import jax

from .._errors import ConfigError


def _optional(module: str, extra: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"{module.split('.')[0]} is not installed: pip install "
                          f"\"asynclab[{extra}]\"") from None


def _key_name(key) -> str:
    for attribute in ("key", "name", "idx"):
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


def named_arrays(tree) -> tuple[dict, Callable[[dict], Any]]:
    """``(params, rebuild)``: ``tree``'s array leaves as a nested dict named by their
    paths (a Flax variable's trailing ``value`` dropped), and ``rebuild(params) -> tree``
    that puts a dict of that structure back in ``tree``'s place."""
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    if not with_paths:
        raise ConfigError("model: it has no trainable arrays")
    paths = []
    for path, _ in with_paths:
        names = [_key_name(k) for k in path]
        if len(names) > 1 and isinstance(path[-1], jax.tree_util.GetAttrKey) \
                and names[-1] == "value":
            names = names[:-1]
        paths.append(tuple(names) or ("params",))
    nested: dict = {}
    for names, (_, leaf) in zip(paths, with_paths, strict=True):
        node = nested
        for name in names[:-1]:
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                raise ConfigError(f"model: the array names collide at {'/'.join(names)}")
        if names[-1] in node:
            raise ConfigError(f"model: the array names collide at {'/'.join(names)}")
        node[names[-1]] = leaf

    def rebuild(params: dict):
        leaves = []
        for names in paths:
            node = params
            for name in names:
                node = node[name]
            leaves.append(node)
        return jax.tree.unflatten(treedef, leaves)

    return nested, rebuild


def from_flax(model) -> tuple[Callable, dict]:
    """``(apply, params)`` of a Flax NNX module: ``params`` its ``nnx.Param`` arrays as a
    nested dict, ``apply(params, x)`` the module with those parameters called on ``x``.

    The module is split once (``nnx.split(model, nnx.Param, ...)``); ``apply`` merges
    the parameters given with the rest (``nnx.merge``). State other than parameters
    (batch statistics, random streams) stays as it was when split, so give a module in
    evaluation mode (``model.eval()``) where it has such layers.

    Raises:
      ConfigError: flax is not installed, or ``model`` is not an ``nnx.Module``.
    """
    nnx = _optional("flax.nnx", "flax")
    if not isinstance(model, nnx.Module):
        raise ConfigError(f"model must be a flax.nnx.Module, got {type(model).__name__}")
    graphdef, state, rest = nnx.split(model, nnx.Param, ...)
    params, rebuild = named_arrays(state)

    def apply(params, x):
        return nnx.merge(graphdef, rebuild(params), rest)(x)

    return apply, params


def from_equinox(model, *, batched: bool = False) -> tuple[Callable, dict]:
    """``(apply, params)`` of an Equinox module: ``params`` its inexact (float) arrays as
    a nested dict, ``apply(params, x)`` the module with those arrays called on ``x``.

    The module is split once (``eqx.partition(model, eqx.is_inexact_array)``); ``apply``
    joins the arrays given with the rest (``eqx.combine``). Equinox layers take one
    example, so ``apply`` maps the module over the batch's leading axis (``jax.vmap``)
    unless ``batched=True`` says the module takes whole batches itself.

    Raises:
      ConfigError: equinox is not installed, or ``model`` is not an ``eqx.Module``.
    """
    eqx = _optional("equinox", "equinox")
    if not isinstance(model, eqx.Module):
        raise ConfigError(f"model must be an equinox.Module, got {type(model).__name__}")
    arrays, static = eqx.partition(model, eqx.is_inexact_array)
    params, rebuild = named_arrays(arrays)

    def apply(params, x):
        module = eqx.combine(rebuild(params), static)
        return module(x) if batched else jax.vmap(module)(x)

    return apply, params
