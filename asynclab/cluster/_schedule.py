"""The schedule a cluster produces for a rule's facts: commits or rounds."""

from __future__ import annotations

from .. import _names
from .._errors import ConfigError
from .._facts import ScheduleFacts
from ._orders import simulate_sync_with_warmup
from ._rounds import SemiSync
from ._simulator import simulate_async
from ._sync import simulate_sync
from ._timing import Cluster
from ._trace import RoundTrace, Trace


def schedule_facts(facts) -> ScheduleFacts:
    """``facts`` as :class:`~asynclab.rules.ScheduleFacts`: given as they are, or read off
    a rule (``rule.schedule_facts``)."""
    if isinstance(facts, ScheduleFacts):
        return facts
    read = getattr(facts, "schedule_facts", None)
    if isinstance(read, ScheduleFacts):
        return read
    raise ConfigError(f"a schedule is made for a rule's facts (asynclab.rules.ScheduleFacts, "
                      f"or a rule), got {facts!r}")


def check_semisync(facts: ScheduleFacts, semisync) -> None:
    """``semisync`` is None or a :class:`SemiSync` these facts can be scheduled with:
    synchronous rounds without warm-up rounds."""
    if semisync is None:
        return
    if not isinstance(semisync, SemiSync):
        raise ConfigError(f"semisync must be an asynclab.cluster.SemiSync, got {semisync!r}")
    if not facts.synchronous:
        raise ConfigError("semisync: semi-synchronous rounds need a synchronous rule; this "
                          "one is asynchronous")
    if facts.warmup_rounds:
        raise ConfigError("semisync: warm-up rounds do not combine with semi-synchronous "
                          "rounds")


def schedule(facts, cluster: Cluster, *, commits: int | None = None,
             horizon: float | None = None, rng=0, activity: bool = False,
             semisync: SemiSync | None = None) -> Trace | RoundTrace:
    """The trace a cluster produces for a rule: commits (asynchronous) or rounds.

    Args:
      facts: what the schedule is made for, :class:`~asynclab.rules.ScheduleFacts`, or a
        rule (its ``schedule_facts``): synchronous or not, λ (one for all, or one per
        worker), the group size, warm-up rounds.
      cluster: the timing model.
      commits: the budget in commits (asynchronous) or rounds (synchronous)...
      horizon: ...or in simulated seconds. Give exactly one.
      rng: the seed (or a ``numpy.random.Generator``).
      activity: also record what every worker did when (``trace.activity``).
      semisync: semi-synchronous rounds (synchronous rules), see :func:`simulate_sync`.

    Post-local SGD's warm-up rounds take one local step each, so they are scheduled with
    λ = 1 and the rest with λ = H; the two parts are joined in time
    (:func:`simulate_sync_with_warmup`).
    """
    facts = schedule_facts(facts)
    check_semisync(facts, semisync)
    if not isinstance(cluster, Cluster):
        raise ConfigError(f"cluster must be an asynclab.cluster.Cluster, got {cluster!r}")
    if not facts.synchronous and cluster.group_size != facts.group_size:
        raise ConfigError(f"the rule works on groups of {facts.group_size} but the cluster has "
                          f"group_size={cluster.group_size}")
    if semisync is not None:
        return simulate_sync(cluster, local_steps=facts.local_steps, rounds=commits,
                             horizon=horizon, rng=rng, activity=activity, semisync=semisync)
    if facts.synchronous and facts.warmup_rounds:
        return simulate_sync_with_warmup(cluster, warmup_rounds=facts.warmup_rounds,
                                         local_steps=facts.local_steps, rounds=commits,
                                         horizon=horizon, rng=rng, activity=activity)
    if facts.synchronous:
        return simulate_sync(cluster, local_steps=facts.local_steps, rounds=commits,
                             horizon=horizon, rng=rng, activity=activity)
    return simulate_async(cluster, local_steps=facts.local_steps, commits=commits,
                          horizon=horizon, rng=rng, activity=activity)


#: The simulators that make schedules: ``"auto"`` (the array-speed generator where it
#: covers the timing model, SimPy elsewhere), ``"simpy"`` (the reference simulator,
#: which covers every timing model) or ``"arrays"`` (only the array-speed generator).
SIMULATORS = _names.SIMULATORS


def array_reason(facts, cluster: Cluster, *, semisync=None, activity: bool = False
                 ) -> str | None:
    """Why the array-speed generator does not make these facts' schedules on ``cluster``
    (one sentence), or None where it does."""
    from ._arrays import array_coverage

    facts = schedule_facts(facts)
    if facts.synchronous and facts.warmup_rounds and semisync is None:
        return "warm-up rounds (post-local SGD) are simulated by SimPy"
    return array_coverage(cluster, synchronous=facts.synchronous,
                          local_steps=facts.local_steps, semisync=semisync,
                          activity=activity)


def check_simulator(simulator, facts, cluster: Cluster, *, semisync=None,
                    activity: bool = False) -> str:
    """``simulator`` (one of :data:`SIMULATORS`) checked: forcing the array path on a
    timing model it does not cover is a ConfigError saying what it covers."""
    if simulator not in SIMULATORS:
        raise ConfigError(f"simulator must be one of {', '.join(SIMULATORS)}, got "
                          f"{simulator!r}")
    if simulator == "arrays":
        reason = array_reason(facts, cluster, semisync=semisync, activity=activity)
        if reason is not None:
            raise ConfigError(f"simulator='arrays' does not cover this timing model: "
                              f"{reason}. It covers compute-time distributions, "
                              "heterogeneous workers, scheduled stragglers, links, λ >= 1 "
                              "and per-worker windows, groups, a FIFO server with constant "
                              "or random service times, synchronous and semi-synchronous "
                              "rounds (quorum, backup, window, fixed deadline); give "
                              "simulator='simpy' or 'auto'")
    return simulator


def schedules(facts, cluster: Cluster, *, seeds, commits: int | None = None,
              horizon: float | None = None, semisync: SemiSync | None = None,
              activity: bool = False, simulator: str = "auto") -> list:
    """One schedule per seed of ``seeds``: :func:`schedule`'s trace for each, made by the
    array-speed generator (:func:`simulate_async_many`, :func:`simulate_sync_many`: the
    same traces, many seeds at once) where it covers the timing model and ``simulator``
    allows, by SimPy otherwise. Each trace says which made it (``trace.simulator``)."""
    facts = schedule_facts(facts)
    check_semisync(facts, semisync)
    simulator = check_simulator(simulator, facts, cluster, semisync=semisync,
                                activity=activity)
    seeds = [int(s) for s in seeds]
    arrays = simulator != "simpy" and array_reason(
        facts, cluster, semisync=semisync, activity=activity) is None
    if not arrays:
        return [schedule(facts, cluster, commits=commits, horizon=horizon, rng=s,
                         activity=activity, semisync=semisync) for s in seeds]
    from ._arrays import simulate_async_many, simulate_sync_many

    if facts.synchronous:
        return simulate_sync_many(cluster, local_steps=facts.local_steps, rounds=commits,
                                  horizon=horizon, seeds=seeds, semisync=semisync)
    if cluster.group_size != facts.group_size:
        raise ConfigError(f"the rule works on groups of {facts.group_size} but the cluster has "
                          f"group_size={cluster.group_size}")
    return simulate_async_many(cluster, local_steps=facts.local_steps, commits=commits,
                               horizon=horizon, seeds=seeds)
