"""What each simulated worker draws: its compute phases (its own generator, in blocks of
a fixed schedule), a compute group's phases, and a random server's service times."""

from __future__ import annotations

import numpy as np

from ._timing import Cluster, as_generator

_FIRST_BLOCK = 64
"""Compute phases drawn per worker in the first block; the block doubles up to the max."""
_MAX_BLOCK = 4096
_NO_PHASES = np.empty(0)


class _ComputeStream:
    """A worker's timeouts between two exchanges: reply, compute phase, commit message.

    Step times are drawn in blocks from the worker's own generator, a block being
    ``(block, local_steps)`` steps with ``block`` doubling from 64 to 4096 phases: a
    fixed schedule, so the draws never depend on the budget. :meth:`next_block` hands
    the worker a list of timeout lengths ``down + phase + up`` (the first phase of the
    run has no reply before it). A phase that may hold one of the worker's scheduled
    stragglers is handed out alone, because an ``at_time`` straggler needs the phase's
    start time.
    """

    __slots__ = (
        "_draw",
        "_scale",
        "_local_steps",
        "_up",
        "_down",
        "_block",
        "_steps",
        "_phases",
        "_i",
        "_offset",
        "_first",
        "_at_step",
        "_at_time",
        "_special",
        "_delayed",
    )

    def __init__(self, draw, scale, local_steps, up, down, stragglers):
        self._draw = draw
        self._scale = scale
        self._local_steps = local_steps
        self._up = up
        self._down = down
        self._block = _FIRST_BLOCK
        self._steps = np.empty((0, local_steps))
        self._phases = np.empty(0)
        self._i = 0
        self._offset = 0
        self._first = True
        self._at_step = {}
        at_time = []
        for s in stragglers:
            if s.at_step is not None:
                self._at_step[s.at_step] = self._at_step.get(s.at_step, 0.0) + s.delay
            else:
                at_time.append((s.at_time, s.delay))
        self._at_time = sorted(at_time)
        self._special = bool(self._at_step or self._at_time)
        self._delayed = {}

    def _refill(self):
        self._offset += self._phases.shape[0]
        block = self._block
        self._block = min(2 * block, _MAX_BLOCK)
        steps = self._draw((block, self._local_steps))
        if self._scale != 1.0:
            steps *= self._scale
        self._steps = steps
        self._phases = steps[:, 0] if self._local_steps == 1 else steps.sum(axis=1)
        self._i = 0

    def next_block(self, start: float) -> list[float]:
        """Timeout lengths for the next compute phases, the first starting at ``start``.

        Args:
          start: simulated time at which the next compute phase starts (the reply's
            arrival); only used to place ``at_time`` stragglers.

        Returns:
          A list of floats, one per exchange: ``down + phase + up``, without ``down``
          for the run's very first phase; empty when the worker's timing model has no
          more steps (a log that ends), which ends the run.
        """
        if self._i == self._phases.shape[0]:
            self._refill()
            if not self._phases.shape[0]:
                return []
        up, down = self._up, self._down
        i = self._i
        stop = self._phases.shape[0]
        if self._special:
            # Phases before the next at_step straggler go out as a block; a phase that
            # may hold a straggler goes out alone (an at_time one needs its start).
            if not self._at_time:
                stop = min(stop, min(self._at_step) // self._local_steps - self._offset)
            if self._at_time or stop <= i:
                self._i = i + 1
                phase = float(self._phases[i]) + self._delays(i, start)
                if self._first:
                    self._first = False
                    return [phase + up]
                return [down + phase + up]
        phases = self._phases[i:stop]
        self._i = stop
        lead = down + up
        if self._first:
            self._first = False
            out = (phases + lead).tolist()
            out[0] = float(phases[0]) + up
            return out
        return (phases + lead).tolist()

    def _delays(self, i: int, start: float) -> float:
        """Straggler delays falling into phase ``i`` of the current block."""
        first = (self._offset + i) * self._local_steps
        row = self._steps[i]
        t = start
        total = 0.0
        for j in range(self._local_steps):
            extra = self._at_step.pop(first + j, 0.0)
            while self._at_time and self._at_time[0][0] <= t:
                extra += self._at_time.pop(0)[1]
            total += extra
            t += float(row[j]) + extra
        self._special = bool(self._at_step or self._at_time)
        if total:
            self._delayed[self._offset + i] = total
        return total

    def delays(self) -> dict[int, float]:
        """Straggler delay (seconds) per phase index, for the phases handed out so far
        that hold one."""
        return self._delayed


class _ServiceStream:
    """The server's random service times, drawn in blocks from its own generator.

    A block doubles from 64 to 4096 draws (a fixed schedule, independent of the budget);
    calling the stream returns the next service time, in the order the server serves.
    """

    __slots__ = ("_time", "_rng", "_block", "_times")

    def __init__(self, time, rng: np.random.Generator):
        self._time = time
        self._rng = rng
        self._block = _FIRST_BLOCK
        self._times: list[float] = []

    def __call__(self) -> float:
        if not self._times:
            block = self._block
            self._block = min(2 * block, _MAX_BLOCK)
            self._times = self._time.sample(self._rng, block).tolist()[::-1]
        return self._times.pop()


class _GroupStream:
    """A compute group's exchanges: its phase ends when its slowest member finishes.

    Each member keeps its own :class:`_ComputeStream` (its own generator, time scale and
    stragglers, built without link times), so a member's step times are exactly those
    the same worker would have in a cluster without groups. The group's phase is the
    elementwise maximum of its members' phases, followed by ``intra`` seconds of
    all-reduce; the commit then travels the link like a single worker's.

    :meth:`next_block` hands out as many phases as every member has ready. A member
    whose next phase may hold an ``at_time`` straggler hands out that phase alone, with
    the group's start time, so the group then hands out one phase too.
    """

    __slots__ = ("_members", "_pending", "_first_lead", "_lead", "_first")

    def __init__(self, members, intra, up, down):
        self._members = members
        self._pending = [_NO_PHASES] * len(members)
        self._first_lead = intra + up
        self._lead = intra + (down + up)
        self._first = True

    def next_block(self, start: float) -> list[float]:
        """Timeout lengths ``down + max(member phases) + intra + up`` for the next phases.

        Args:
          start: simulated time at which the group's next phase starts.

        Returns:
          A non-empty list of floats, one per group commit (no ``down`` before the run's
          very first phase).
        """
        pending = self._pending
        for j, ready in enumerate(pending):
            if not ready.shape[0]:
                pending[j] = np.array(self._members[j].next_block(start), dtype=np.float64)
        k = min(ready.shape[0] for ready in pending)
        if not k:  # a member has no more steps
            return []
        phases = pending[0][:k]
        for j, ready in enumerate(pending):
            if j:
                phases = np.maximum(phases, ready[:k])
            pending[j] = ready[k:]
        out = phases + self._lead
        if self._first:
            self._first = False
            out[0] = phases[0] + self._first_lead
        return out.tolist()

    def delays(self) -> dict[int, float]:
        """The largest member's straggler delay per group phase that holds one."""
        out: dict[int, float] = {}
        for member in self._members:
            for j, d in member.delays().items():
                out[j] = max(out.get(j, 0.0), d)
        return out


def service(cluster: Cluster, server_rng):
    """The server's service step's time: a callable returning the next service time, a
    constant's, or one drawn from ``server_rng`` (:class:`_ServiceStream`); None for a
    server that takes no time (nothing ever queues)."""
    if cluster.random_server:
        return _ServiceStream(cluster.server_time, server_rng)
    if cluster.server_time == 0.0:
        return None
    seconds = float(cluster.server_time)
    return lambda: seconds


def streams(cluster: Cluster, local_steps: int | tuple[int, ...], rng,
             grouped: bool = True):
    """One stream per committing unit (per worker, or per group when ``grouped``), and
    the server's generator (None unless the service time is random).

    Worker k always draws from child k of ``rng.spawn(workers)``, grouped or not; a
    random server draws from one more child, ``spawn(workers + 1)[workers]``. Under
    Poisson churn (``cluster.availability``) the failures draw from
    ``spawn(workers + 2)[workers + 1]``, and the second value is the pair ``(server's
    generator or None, failures' generator)``.
    ``local_steps`` is one count for every worker, or a tuple of one count per worker.
    """
    if isinstance(local_steps, tuple):
        steps = local_steps
    else:
        steps = (local_steps,) * cluster.workers
    churn = cluster.availability is not None and cluster.availability.random
    # Poisson churn draws from child n + 1 (child n stays the server's, used or not)
    children = as_generator(rng).spawn(cluster.workers + (2 if churn else
                                                           cluster.random_server))
    server_rng = children[cluster.workers] if cluster.random_server else None
    if churn:
        server_rng = (server_rng, children[cluster.workers + 1])
    scales = cluster.scales
    transfer = cluster.transfer_time
    m = cluster.group_size
    grouped = grouped and m > 1
    link = 0.0 if grouped else transfer  # a group's members do not use the link
    streams = [
        _ComputeStream(
            cluster.compute.stream(k, children[k]),
            scales[k],
            steps[k],
            link,
            link,
            [s for s in cluster.stragglers if s.worker == k],
        )
        for k in range(cluster.workers)
    ]
    if not grouped:
        return streams, server_rng
    intra = cluster.intra_group_time
    return [
        _GroupStream(streams[g * m : (g + 1) * m], intra, transfer, transfer)
        for g in range(cluster.groups)
    ], server_rng


#: Bytes a simulated worker holds beside its draws (a SimPy process, its stream).
BYTES_PER_WORKER = 2048


def simulator_bytes(cluster, events, local_steps: int) -> int:
    """Bytes the simulator holds beside the schedule: every worker's process and its
    block of drawn steps (up to 4,096 phases of ``local_steps`` steps; ``events`` may be
    ``inf`` for a horizon, which draws full blocks), and a random server's block of
    service times."""
    blocks = min(events, _MAX_BLOCK)
    server = 8 * blocks if cluster.random_server else 0
    return int(cluster.workers * (BYTES_PER_WORKER + 8 * blocks * int(local_steps)) + server)


