"""What a schedule is made for: the timing facts of a rule (no JAX here, so that the
cluster's simulator can read them without importing the rules)."""

from __future__ import annotations

from typing import NamedTuple


class ScheduleFacts(NamedTuple):
    """What a schedule is made for: the facts of a rule that decide its timing.

    A schedule (``asynclab.cluster.schedule``) needs these and nothing else of a rule: no
    learning rate, no arithmetic.

    Attributes:
      synchronous: rounds (every worker, then the aggregate) or asynchronous commits.
      local_steps: λ, local steps per exchange; or a tuple of one window per worker
        (asynchronous rules with per-worker windows).
      group_size: workers per synchronous group that commits as one unit (``mixed``), 1
        otherwise.
      warmup_rounds: rounds of one local step before λ applies (synchronous rules).
    """

    synchronous: bool
    local_steps: int | tuple[int, ...] = 1
    group_size: int = 1
    warmup_rounds: int = 0
