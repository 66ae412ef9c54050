"""pandas, the optional dependency of the lab's tables (``pip install "asynclab[pandas]"``).

Importing asynclab never imports pandas; a function that returns or reads a table asks for
it here, first, so that a missing pandas is a ConfigError before any work."""

from __future__ import annotations

import sys

from ._errors import ConfigError

#: What to install for the tables.
INSTALL = 'pip install "asynclab[pandas]"'


def pandas():
    """The pandas module, or a ConfigError saying what to install."""
    try:
        import pandas
    except ImportError:
        raise ConfigError(f"tables need pandas, which is not installed: {INSTALL}") from None
    return pandas


def is_table(value) -> bool:
    """Whether ``value`` is a pandas DataFrame (without importing pandas)."""
    module = sys.modules.get("pandas")
    return module is not None and isinstance(value, module.DataFrame)
