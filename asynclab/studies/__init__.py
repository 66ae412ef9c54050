"""Studies: one module per study, configuration in, data out (no drawing).

Each study module (``asynclab.studies.staleness``, ...) offers a frozen ``Config``
dataclass with a ``quick()`` constructor and ``run(config, progress=None) -> dict`` that
returns numpy arrays and numbers. ``save``/``load`` keep the data next to the figure so
it can be redrawn without re-simulating.
"""

from ._io import load as load
from ._io import save as save

__all__ = ["load", "save"]
