"""Before matplotlib is first imported: an ``MPLBACKEND`` it does not know falls back to
Agg with one warning, instead of making every import of matplotlib fail."""

from .. import _environment

_environment.prepare_matplotlib()
