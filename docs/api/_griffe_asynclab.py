"""A griffe extension for the API reference (mkdocs.yml loads it; nothing imports asynclab).

- Sphinx roles in docstrings (``:func:`fit_log```, ``:class:`~asynclab.Result```) become
  mkdocstrings cross-references, resolved from the docstring's scope, so an unresolved
  name fails ``mkdocs build --strict`` instead of showing as raw reST.
- The names ``asynclab`` and ``asynclab.rules`` export lazily (``_NAMES`` in
  ``asynclab/__init__.py``, ``_LAZY`` in ``asynclab/rules/__init__.py``, read by their
  ``__getattr__``) and the rule factories ``asynclab.rules`` exports from its
  registry (every ``@declare``d function of ``asynclab/rules/_catalogue.py``) are added
  as aliases, as the running package has them.
"""

from __future__ import annotations

import ast
import re

import griffe

_ROLE = re.compile(
    r":(?:py:)?(?:func|class|data|attr|meth|mod|exc|obj|const):`(~?)([\w.]+)(?:\(\))?`")


def _crossref(match: re.Match) -> str:
    short, target = match.groups()
    shown = target.rsplit(".", 1)[-1] if short else target
    return f"[`{shown}`][{target}]"


class AsynclabDocs(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_crossref, obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.path != "asynclab":
            return
        lazy = ast.literal_eval(str(pkg.members["_NAMES"].value))
        for name, module in lazy.items():
            pkg.set_member(name, griffe.Alias(name, f"asynclab.{module}.{name}", parent=pkg))
        rules = pkg.members["rules"]
        for name, module in ast.literal_eval(str(rules.members["_LAZY"].value)).items():
            rules.set_member(name, griffe.Alias(name, f"{module}.{name}", parent=rules))
        catalogue = rules.members["_catalogue"]
        for name, member in catalogue.members.items():
            if not member.is_alias and member.is_function and any(str(d.value).startswith("declare")
                                          for d in member.decorators):
                rules.set_member(name, griffe.Alias(name, member.path, parent=rules))
