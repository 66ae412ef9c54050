"""How many events a timing model makes within a horizon: the budget guard's estimate of a
schedule's size before it is simulated.

The estimate takes the timing model as it is, not its average worker: every worker's own
time scale (so one very fast worker counts as the many commits it makes), the links, a
group's all-reduce, the server's service times, and a semi-synchronous round's quorum,
window or deadline. It errs high where it must err (the slowest of a round's workers by
its mean, not the mean of the slowest), so that a horizon too long for the memory is
refused before any work rather than found out while simulating.
"""

from __future__ import annotations

import math

from .._facts import ScheduleFacts
from ._rounds import SemiSync
from ._timing import Cluster

#: The most events an estimate counts (the budget guard refuses far fewer).
MOST = 2**62


def phase_times(cluster: Cluster, facts: ScheduleFacts) -> list[float]:
    """Each committing unit's mean time from one exchange to its next: its λ steps at its
    own time scale (a group: its slowest member's), the links both ways and a group's
    all-reduce."""
    windows = facts.local_steps
    if not isinstance(windows, tuple):
        windows = (int(windows),) * cluster.workers
    step = cluster.compute.mean_step()
    link = 2 * cluster.transfer_time
    scales = cluster.scales
    m = cluster.group_size if not facts.synchronous else 1
    if m > 1:
        return [max(windows[k] * step * scales[k] for k in range(g * m, (g + 1) * m))
                + link + cluster.intra_group_time for g in range(cluster.workers // m)]
    return [windows[k] * step * scales[k] + link for k in range(cluster.workers)]


def expected_events(cluster: Cluster, facts: ScheduleFacts, horizon: float,
                    semisync: SemiSync | None = None) -> int:
    """About how many commits (asynchronous) or rounds (synchronous) ``cluster`` makes in
    ``horizon`` simulated seconds for a rule of these ``facts``, erring high.

    Asynchronous: every unit commits once per phase, so the rate is the sum of the units'
    rates, at most one commit per mean service time of a busy server. Synchronous: a
    round lasts at least its slowest worker's mean phase (a quorum's K-th fastest) and
    the server's services of its commits; a window at least the window, a deadline at
    most the deadline.
    """
    phases = phase_times(cluster, facts)
    service = cluster.mean_server_time
    if not facts.synchronous:
        rate = sum(1.0 / max(p, 1e-300) for p in phases)
        if service > 0:
            rate = min(rate, 1.0 / service)
        return _count(horizon * rate)
    ordered = sorted(phases)
    if semisync is None:
        shortest = ordered[-1] + cluster.workers * service
    else:
        quorum = semisync.quorum_of(cluster.workers)
        if quorum is not None:
            shortest = ordered[quorum - 1] + quorum * service
            if isinstance(semisync.deadline, float):
                shortest = min(shortest, semisync.deadline)
        else:  # a window: no earlier than the window, no later than its deadline
            shortest = semisync.window
    if facts.warmup_rounds:  # warm-up rounds take one local step each
        shortest = min(shortest, shortest / max(int(facts.local_steps), 1))
    return _count(horizon / max(shortest, 1e-300))


def _count(events: float) -> int:
    if not math.isfinite(events) or events >= MOST:
        return MOST
    return int(events) + 1


#: A phase that survives the failures with a smaller chance than this is hopeless.
HOPELESS = 1e-9


def hopeless(cluster: Cluster, facts: ScheduleFacts) -> str | None:
    """Why no commit can be expected at all, where it is plain before simulating: Poisson
    churn whose mean time between failures is so short that even the fastest worker's
    phase survives it with a chance below 1e-9 (``exp(−phase / mtbf)``); else None. The
    simulator itself stops a run that makes no progress with a ConfigError."""
    available = cluster.availability
    if available is None or not available.random:
        return None
    fastest = min(phase_times(cluster, facts))
    if fastest / available.mtbf > -math.log(HOPELESS):
        return (f"Cluster.availability: with mtbf={available.mtbf:g} s every phase is cut "
                f"by a failure (the fastest worker's phase, about {fastest:.3g} s, survives "
                f"with a chance of exp(-{fastest / available.mtbf:.3g})); no commit can be "
                "made")
    return None
