"""Every seed's random streams at once, drawn as the SimPy simulator draws them.

``simulate_async(cluster, rng=seed)`` spawns one child generator per worker
(``np.random.default_rng(seed).spawn(n)``): worker k draws its step times from child k,
``(block, local_steps)`` at a time, a random server its service times from child n. Child
k of seed s is numpy's ``SeedSequence(s, spawn_key=(k,))``; its PCG64 state is computed
here for every seed at once (:func:`spawned_words`), because creating thousands of
``SeedSequence`` objects one by one costs more than the whole schedule. The hash is the
one numpy documents for ``SeedSequence`` (after M. O'Neill's ``seed_seq_fe``); it is
checked against numpy itself once per process, and numpy's own objects are used if the
two ever disagree.

A numpy generator's draws form one stream: ``draw(a)`` then ``draw(b)`` are the first
``a + b`` values of one draw, so the number of phases drawn at once changes no value. The
phase sums of λ > 1 steps are taken block by block, on ``(block, λ)`` arrays like the
simulator's, so that they are its sums to the bit.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from ._streams import _FIRST_BLOCK, _MAX_BLOCK

_MASK32 = 0xFFFFFFFF
_POOL = 4  # numpy's default SeedSequence pool: 4 words of 32 bits
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_SHIFT = np.uint32(16)
_HEADROOM = 64  # phases of room left when the arrays grow


class _Hash:
    """The seed hash with its running multiplier, which is the same for every seed."""

    def __init__(self, init: int, mult: int):
        self.value, self.mult = init, mult

    def __call__(self, words: np.ndarray) -> np.ndarray:
        out = words ^ np.uint32(self.value)
        self.value = self.value * self.mult & _MASK32
        out = out * np.uint32(self.value)
        return out ^ (out >> _SHIFT)


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
    return out ^ (out >> _SHIFT)


def spawned_words(seeds: np.ndarray, key: int) -> np.ndarray:
    """``SeedSequence(s, spawn_key=(key,)).generate_state(4, np.uint64)`` for every seed.

    Args:
      seeds: integer seeds in ``[0, 2**32)`` (one 32-bit word of entropy each), ``(S,)``.
      key: the child's index (its spawn key), in ``[0, 2**32)``.

    Returns:
      ``(S, 4)`` uint64, the words a PCG64 is seeded with.
    """
    seeds = np.asarray(seeds).astype(np.uint32)
    zero = np.zeros_like(seeds)
    # the seed's word, zeros up to the pool size (a spawned sequence pads), the key
    entropy = [seeds, zero, zero, zero, np.full_like(seeds, key)]
    hashmix = _Hash(_INIT_A, _MULT_A)
    pool = [hashmix(entropy[i]) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = _mix(pool[dst], hashmix(pool[src]))
    for dst in range(_POOL):
        pool[dst] = _mix(pool[dst], hashmix(entropy[_POOL]))
    out = _Hash(_INIT_B, _MULT_B)
    halves = [out(pool[i % _POOL]).astype(np.uint64) for i in range(8)]
    return np.stack([halves[2 * j] | (halves[2 * j + 1] << np.uint64(32)) for j in range(4)],
                    axis=-1)


@functools.cache
def _hash_agrees() -> bool:
    """Whether :func:`spawned_words` is numpy's ``SeedSequence`` on this numpy."""
    seeds = np.array([0, 1, 12345, 2**32 - 1])
    for key in (0, 7, 1000):
        ours = spawned_words(seeds, key)
        for s, row in zip(seeds.tolist(), ours, strict=True):
            theirs = np.random.SeedSequence(s, spawn_key=(key,)).generate_state(4, np.uint64)
            if not np.array_equal(row, theirs):
                return False
    return True


class _Words(ISeedSequence):
    """A seed sequence that hands a PCG64 the words computed for it."""

    def __init__(self, words: np.ndarray):
        self._words = words

    def generate_state(self, n_words, dtype=np.uint32):
        assert n_words == 4 and np.dtype(dtype) == np.uint64, (n_words, dtype)
        return self._words


class Children:
    """Child ``key`` of every seed's generator, made when first drawn from."""

    def __init__(self, seeds: np.ndarray, key: int):
        self._seeds = seeds
        self._key = key
        self._words = spawned_words(seeds, key) if _hash_agrees() else None
        self._made: list[np.random.Generator | None] = [None] * len(seeds)

    def __getitem__(self, s: int) -> np.random.Generator:
        g = self._made[s]
        if g is None:
            if self._words is None:
                seq = np.random.SeedSequence(int(self._seeds[s]), spawn_key=(self._key,))
            else:
                seq = _Words(self._words[s])
            g = self._made[s] = np.random.Generator(np.random.PCG64(seq))
        return g


def block_bounds(count: int) -> np.ndarray:
    """Phases drawn after each block of the simulator's schedule (64, 128, …, 4096 per
    block), up to the first bound ``>= count``."""
    bounds, total, block = [0], 0, _FIRST_BLOCK
    while total < count:
        total += block
        bounds.append(total)
        block = min(2 * block, _MAX_BLOCK)
    return np.array(bounds, np.int64)


def whole_blocks(need: np.ndarray) -> np.ndarray:
    """The fewest phases, in whole blocks, that hold ``need`` phases (elementwise)."""
    need = np.asarray(need, np.int64)
    bounds = block_bounds(int(need.max()) if need.size else 0)
    return bounds[np.searchsorted(bounds, need)]


class Stragglers:
    """A worker's scheduled stragglers as the simulator applies them.

    ``totals`` maps a phase holding ``at_step`` stragglers to the delay they add to it
    (summed in step order, as the simulator does); ``at_time`` is the sorted list of
    ``(time, delay)``.
    """

    def __init__(self, stragglers, local_steps: int):
        at_step: dict[int, float] = {}
        at_time = []
        for s in stragglers:
            if s.at_step is not None:
                at_step[s.at_step] = at_step.get(s.at_step, 0.0) + s.delay
            else:
                at_time.append((s.at_time, s.delay))
        self.at_time = sorted(at_time)
        self.extras: dict[int, dict[int, float]] = {}  # phase -> {step in phase: delay}
        for step, delay in at_step.items():
            self.extras.setdefault(step // local_steps, {})[step % local_steps] = delay
        self.totals: dict[int, float] = {}
        for phase, extras in self.extras.items():
            total = 0.0
            for j in sorted(extras):
                total += extras[j]
            self.totals[phase] = total

    def phase_total(self, phase: int, row, start: float, pointer: int) -> tuple[float, int]:
        """The straggler delay of one phase whose steps are ``row`` and which starts at
        ``start``, with the ``at_time`` stragglers from ``pointer`` on still pending: the
        simulator's per-step rule (an ``at_time`` straggler falls on the first step that
        starts at or after its time). Returns ``(total, new pointer)``."""
        extras = self.extras.get(phase, {})
        at_time = self.at_time
        t = start
        total = 0.0
        for j, step in enumerate(row.tolist()):
            extra = extras.get(j, 0.0)
            while pointer < len(at_time) and at_time[pointer][0] <= t:
                extra += at_time[pointer][1]
                pointer += 1
            total += extra
            t += step + extra
        return total, pointer


class Phases:
    """Every seed's compute phases, and the simulator's timeout per exchange.

    For one chunk of seeds: ``raw[s, k, j]`` is worker k's j-th phase (the sum of its
    λ_k scaled step times) and ``delays[s, u, j]`` the timeout of committing unit u (a
    worker, or a group when ``grouped``) for its j-th exchange: reply, phase, commit
    message, added as the simulator adds them (``phase + up`` for the first; ``phase +
    (down + up)`` for a phase handed out in a block; ``(down + phase') + up`` for one
    holding an ``at_step`` straggler, handed out alone; a group's ``max(members) + intra
    + …``). ``alone`` holds the same for a worker whose ``at_time`` stragglers are still
    pending (every phase handed out alone); :meth:`timed` gives the exact timeout of a
    phase that may hold one, which needs its start.
    """

    def __init__(self, cluster, local_steps: tuple[int, ...], seeds: np.ndarray,
                 grouped: bool):
        n = cluster.workers
        self.n = n
        self.seeds = seeds
        self.steps = local_steps
        self.scales = cluster.scales
        self.compute = cluster.compute
        self.children = [Children(seeds, k) for k in range(n)]
        self.stragglers = [Stragglers([s for s in cluster.stragglers if s.worker == k],
                                      local_steps[k]) for k in range(n)]
        self.timed_workers = [k for k in range(n) if self.stragglers[k].at_time]
        x = cluster.transfer_time
        self.grouped = grouped and cluster.group_size > 1
        self.m = cluster.group_size if self.grouped else 1
        self.units = n // self.m
        self.down = x
        if self.grouped:
            self.first_lead = cluster.intra_group_time + x
            self.lead = cluster.intra_group_time + (x + x)
        else:
            self.up, self.lead = x, x + x
        size = len(seeds)
        # the phases themselves are kept where a timeout needs more than its own phase
        # (a group's slowest member, a straggler's delay); else timeouts only
        self.keep_raw = self.grouped or bool(cluster.stragglers)
        self.raw = np.full((size, n if self.keep_raw else 0, 0), np.nan)
        self.drawn = np.zeros((size, n), np.int64)
        self.rows = {k: np.full((size, 0, local_steps[k]), np.nan) for k in self.timed_workers}
        self.delays = np.full((size, self.units, 0), np.nan)
        self.alone = np.full((size, self.units, 0), np.nan)
        # per seed and worker: the next pending at_time straggler
        self.pointer = np.zeros((size, n), np.int64)
        self.pending = np.zeros((size, self.units), bool)
        for k in self.timed_workers:
            self.pending[:, k // self.m] = True

    # ------------------------------------------------------------------- draws

    def unit_drawn(self) -> np.ndarray:
        """Phases every unit has drawn, ``(S, U)``: a group's are its members' fewest."""
        if self.m == 1:
            return self.drawn
        return self.drawn.reshape(len(self.seeds), self.units, self.m).min(axis=2)

    def ensure(self, need: np.ndarray) -> None:
        """Draw until unit u of seed s holds ``need[s, u]`` phases (whole blocks for λ > 1)."""
        need = np.maximum(np.repeat(np.asarray(need, np.int64), self.m, axis=1), self.drawn)
        # a phase of one step is one draw: any count of them; λ > 1: whole blocks, whose
        # phases are summed as the simulator sums them
        blocks = np.array([lam > 1 for lam in self.steps])
        target = np.where(blocks[None, :], whole_blocks(need), need)
        grow = target > self.drawn
        if not grow.any():
            return
        width = int(target.max())
        if width > self.delays.shape[2]:
            # room for the top-ups near the end of a run, which then copy nothing
            width = max(width + 2 * _HEADROOM, self.delays.shape[2] * 3 // 2)
            self.raw = _widen(self.raw, width)
            self.delays = _widen(self.delays, width)
            if self.timed_workers:
                self.alone = _widen(self.alone, width)
            for k in self.rows:
                self.rows[k] = _widen(self.rows[k], width, axis=1)
        changed = np.zeros((len(self.seeds), self.units), bool)
        for k in range(self.n):
            sub = np.flatnonzero(grow[:, k])
            if not sub.size:
                continue
            changed[sub, k // self.m] = True
            pairs = np.stack([self.drawn[sub, k], target[sub, k]], axis=1)
            for start, stop in np.unique(pairs, axis=0).tolist():
                same = sub[(pairs[:, 0] == start) & (pairs[:, 1] == stop)]
                self._draw(k, same, start, stop)
                self.drawn[same, k] = stop
        if self.keep_raw:
            self._update(changed)

    def _draw(self, k: int, seeds: np.ndarray, start: int, stop: int) -> None:
        lam = self.steps[k]
        children = self.children[k]
        sample = self.compute.sample
        steps = np.empty((len(seeds), stop - start, lam))
        for i, s in enumerate(seeds.tolist()):
            steps[i] = sample(children[s], (stop - start, lam))
        scale = self.scales[k]
        if scale != 1.0:
            steps *= scale
        if lam == 1:
            values = steps[:, :, 0]
        else:
            values = np.empty(steps.shape[:2])
            bounds = block_bounds(stop)
            cuts = bounds[(bounds >= start) & (bounds <= stop)] - start
            for i in range(len(seeds)):
                for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
                    values[i, a:b] = steps[i, a:b].sum(axis=1)
        if k in self.rows:
            self.rows[k][seeds, start:stop] = steps
        # every seed at once (the first draws): write in place rather than through an index
        rows = slice(None) if len(seeds) == len(self.seeds) else seeds
        if self.keep_raw:
            self.raw[rows, k, start:stop] = values
            return
        if rows is seeds:
            out = values + self.lead
            if start == 0:
                out[:, 0] = values[:, 0] + self.up
            self.delays[seeds, k, start:stop] = out
            return
        np.add(values, self.lead, out=self.delays[:, k, start:stop])
        if start == 0:
            self.delays[:, k, 0] = values[:, 0] + self.up

    def _values(self, seeds: np.ndarray, k: int) -> np.ndarray:
        """Worker k's phases with their ``at_step`` delays: ``phase + total``."""
        values = self.raw[seeds, k]
        for phase, total in self.stragglers[k].totals.items():
            if phase < values.shape[1]:
                values[:, phase] = values[:, phase] + total
        return values

    def _update(self, changed: np.ndarray) -> None:
        """Recompute the timeouts of the units (rows) whose draws grew."""
        for u in range(self.units):
            seeds = np.flatnonzero(changed[:, u])
            if not seeds.size:
                continue
            if self.grouped:
                members = range(u * self.m, (u + 1) * self.m)
                phase = functools.reduce(np.maximum, [self._values(seeds, k) for k in members])
                out = phase + self.lead
                out[:, 0] = phase[:, 0] + self.first_lead
                self.delays[seeds, u] = out
                continue
            raw = self.raw[seeds, u]
            up, down = self.up, self.down
            out = raw + self.lead
            out[:, 0] = raw[:, 0] + up
            totals = self.stragglers[u].totals
            for phase, total in totals.items():
                if phase < out.shape[1]:
                    value = raw[:, phase] + total
                    out[:, phase] = value + up if phase == 0 else (down + value) + up
            self.delays[seeds, u] = out
            if self.stragglers[u].at_time:
                value = self._values(seeds, u)
                alone = (down + value) + up
                alone[:, 0] = value[:, 0] + up
                self.alone[seeds, u] = alone

    # ------------------------------------------------------- at_time stragglers

    def timed(self, seeds: np.ndarray, units: np.ndarray, phase: np.ndarray,
              start: np.ndarray) -> np.ndarray:
        """Timeouts of phases ``phase`` of ``units`` (one each per seed of ``seeds``)
        whose ``at_time`` stragglers are pending, the phases starting at ``start``;
        updates which stragglers are left. Every phase must have been drawn."""
        if self.grouped:
            return self._timed_groups(seeds, units, phase, start)
        out = self.alone[seeds, units, phase]
        fire = self._may_fire(seeds, units, phase, start)
        for i in np.flatnonzero(fire).tolist():
            out[i] = self._exact(int(seeds[i]), int(units[i]), int(phase[i]), float(start[i]))
        return out

    def _may_fire(self, seeds, workers, phase, start) -> np.ndarray:
        """Whether a phase may hold a pending ``at_time`` straggler or holds an
        ``at_step`` one: its last step starts at or after the next pending time."""
        out = np.zeros(seeds.shape[0], bool)
        for k in np.unique(workers).tolist():
            mine = np.flatnonzero(workers == k)
            strag = self.stragglers[k]
            times = np.array([t for t, _ in strag.at_time] + [math.inf])
            due = times[self.pointer[seeds[mine], k]]
            rows = self.rows[k][seeds[mine], phase[mine]]
            t = start[mine].copy()
            for j in range(rows.shape[1] - 1):
                t = t + rows[:, j]
            held = np.isin(phase[mine], list(strag.extras))
            out[mine] = (t >= due) | held
        return out

    def _exact(self, s: int, k: int, phase: int, start: float) -> float:
        """One worker's timeout by the simulator's per-step rule."""
        strag = self.stragglers[k]
        total, pointer = strag.phase_total(phase, self.rows[k][s, phase], start,
                                           int(self.pointer[s, k]))
        self.pointer[s, k] = pointer
        value = float(self.raw[s, k, phase]) + total
        if pointer == len(strag.at_time):
            self.pending[s, k] = False
        if phase == 0:
            return value + self.up
        return (self.down + value) + self.up

    def _timed_groups(self, seeds, units, phase, start) -> np.ndarray:
        """As :meth:`timed` for groups: a group's timeout changes only where one of its
        members' pending stragglers falls into the phase."""
        out = self.delays[seeds, units, phase]
        fire = np.zeros(seeds.shape[0], bool)
        for k in self.timed_workers:
            mine = np.flatnonzero((units == k // self.m) & (
                self.pointer[seeds, k] < len(self.stragglers[k].at_time)))
            if mine.size:
                fire[mine] |= self._may_fire(seeds[mine], np.full(mine.size, k), phase[mine],
                                             start[mine])
        for i in np.flatnonzero(fire).tolist():
            s, g, j = int(seeds[i]), int(units[i]), int(phase[i])
            value = -math.inf
            for k in range(g * self.m, (g + 1) * self.m):
                strag = self.stragglers[k]
                if self.pointer[s, k] < len(strag.at_time):
                    total, self.pointer[s, k] = strag.phase_total(
                        j, self.rows[k][s, j], float(start[i]), int(self.pointer[s, k]))
                    v = float(self.raw[s, k, j]) + total
                else:
                    v = float(self._values(np.array([s]), k)[0, j])
                value = max(value, v)
            out[i] = value + (self.first_lead if j == 0 else self.lead)
            self.pending[s, g] = any(self.pointer[s, k] < len(self.stragglers[k].at_time)
                                     for k in range(g * self.m, (g + 1) * self.m))
        return out


class Service:
    """Every seed's random service times (child n of its generator), in serving order."""

    def __init__(self, cluster, seeds: np.ndarray):
        self.time = cluster.server_time
        self.children = Children(seeds, cluster.workers)
        self.values = np.full((len(seeds), 0), np.nan)
        self.drawn = np.zeros(len(seeds), np.int64)

    def ensure(self, need: np.ndarray) -> None:
        """Draw until seed s holds ``need[s]`` service times."""
        target = np.maximum(np.asarray(need, np.int64), self.drawn)
        grow = np.flatnonzero(target > self.drawn)
        if not grow.size:
            return
        width = int(target.max())
        if width > self.values.shape[1]:
            self.values = _widen(self.values, max(width + 2 * _HEADROOM,
                                                  self.values.shape[1] * 3 // 2), axis=1)
        for s in grow.tolist():
            start, stop = int(self.drawn[s]), int(target[s])
            self.values[s, start:stop] = self.time.sample(self.children[s], stop - start)
            self.drawn[s] = stop


def _widen(array: np.ndarray, width: int, axis: int = 2) -> np.ndarray:
    """``array`` padded with NaN to ``width`` along ``axis``."""
    shape = list(array.shape)
    shape[axis] = width
    out = np.full(shape, np.nan)
    out[(slice(None),) * axis + (slice(0, array.shape[axis]),)] = array
    return out
