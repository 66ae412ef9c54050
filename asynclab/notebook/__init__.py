"""What the interactive notebooks use: widgets over runs and studies (no rules, no
studies and no drawing code of their own)."""

from ._explorer import NOISE_LEVELS as NOISE_LEVELS
from ._explorer import SURFACES as SURFACES
from ._explorer import Explorer as Explorer
from ._explorer import explorer_cluster as explorer_cluster
from ._explorer import rule_controls as rule_controls
from ._explorer import worker_paths as worker_paths

__all__ = [
    "NOISE_LEVELS",
    "SURFACES",
    "Explorer",
    "explorer_cluster",
    "rule_controls",
    "worker_paths",
]
