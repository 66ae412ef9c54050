"""Studies: one module per study, configuration in, data out (no drawing).

Each study module (``asynclab.studies.staleness``, ...) offers a frozen ``Config``
dataclass with a ``quick()`` constructor and ``run(config, progress=None) -> dict`` that
returns numpy arrays and numbers. ``save``/``load`` keep the data next to the figure so
it can be redrawn without re-simulating.

A study of one's own is one call: :func:`study` runs rules × clusters × a grid of
hyperparameters × seeds and returns a pandas table, one row per run; :func:`summary`
gives the mean over the seeds with its confidence interval (pandas is an optional
extra: ``pip install "asynclab[pandas]"``).
"""

from ._io import load as load
from ._io import save as save
from ._table import key_columns as key_columns
from ._table import mean_interval as mean_interval
from ._table import study as study
from ._table import summary as summary

__all__ = ["key_columns", "load", "mean_interval", "save", "study", "summary"]
