"""The replay's compiled programs, cached by the rule's structure, the problem and the
layout, so that new seeds and new values of the traced hyperparameters (σ included)
reuse a compilation."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import ConfigError
from .._programs import Programs
from ..problems import stochastic_gradient
from ..problems._problem import check_noise
from ..rules import RULES, Rule
from ._events import _initial_carry, chunk_runner
from ._kinds import EVENT_KINDS, Layout
from ._layout import _over_runs

#: the compiled initial states and chunk replays (studies may replay several
#: configurations from threads at once: each cache builds a key once)
_INITIAL = Programs(32)


_COMPILED = Programs(32)


#: How many times a replay (or its initial state) was traced, by kind; tests read it to
#: prove that new hyperparameter values, seeds or grids do not compile again.
TRACE_COUNT = {"chunk": 0, "initial": 0}


class _CompiledOnce:
    """A jitted program whose first call for each input layout (shapes, dtypes) runs under
    a lock: threads that replay cells of one program at once (a study's thread pool) wait
    for one compilation instead of each compiling it (``jax.jit`` does not hold them
    back). The lock covers that whole first call, its run included (``jax.jit`` compiles
    and runs in one call), so a second thread may wait for one launch. Later calls with a
    known layout go straight to the program."""

    def __init__(self, program):
        self.program = program
        self._lock = threading.Lock()
        self._layouts = set()

    def __call__(self, *args):
        layout = tuple((tuple(np.shape(x)), str(getattr(x, "dtype", type(x))))
                       for x in jax.tree.leaves(args))
        if layout in self._layouts:
            return self.program(*args)
        with self._lock:
            out = self.program(*args)
            self._layouts.add(layout)
            return out

    def _cache_size(self) -> int:
        return self.program._cache_size()


def structure_key(rule: Rule):
    """What a compiled replay of ``rule`` depends on: its declared structure (name and
    static hyperparameters), or the rule object itself for a rule assembled by hand."""
    return ("declared",) + rule.structure if rule.structure is not None else ("object", id(rule))


def with_values(rule: Rule, values) -> Rule:
    """``rule`` rebuilt with traced hyperparameter ``values`` (a dict of arrays or tracers);
    a rule assembled by hand, which has no declaration, is returned as it is."""
    if rule.structure is None or not values:
        return rule
    return RULES[rule.structure[0]].rebuild(rule.structure[1], dict(values), rule.structure[2])


def hyperparameter_values(rule: Rule, batch: int) -> dict:
    """The rule's traced hyperparameters as float32 arrays of shape ``(batch,)``."""
    if rule.structure is None:
        return {}
    return {k: np.full(batch, v, np.float32) for k, v in rule.values.items()}


#: the entry of the traced values that holds a run's number of workers on a padded
#: worker axis (``replay(..., pad_workers=N)``)
WORKERS = "__workers__"


def _pop_workers(values: dict, padded: bool):
    """``(values without the worker count, the count as int32 or None)``."""
    values = dict(values)
    count = values.pop(WORKERS, None)
    return values, (count.astype(jnp.int32) if padded else None)


def _initial_carry_batch(rule, problem, kind: str, layout: Layout, workers: int, init: str):
    """The compiled initial state of a batch of runs: ``(init keys, worker keys, values)
    -> (carry, worker keys)`` on a worker axis of ``workers`` (a padded replay draws on a
    longer axis than its layout's, see ``INITIAL_AXIS`` in ``asynclab.engine._replay``).
    The keys enter as their data (``asynclab.engine._core.seed_key_data``, hashed on the
    host for JAX's default keys), so that the program compiles no hash to make them."""
    counts = EVENT_KINDS[kind].counts_movement
    key = (structure_key(rule), id(problem), workers, init, layout.padded, layout.devices,
           counts)

    def build():
        def initial(init_data, worker_data, values):
            TRACE_COUNT["initial"] += 1
            values, count = _pop_workers(values, layout.padded)
            k = jax.random.wrap_key_data(init_data)
            worker_keys = jax.random.wrap_key_data(worker_data)
            # the initial record is the first chunk's (see chunk_runner): the loss and
            # the metrics compile once, in the chunk's program
            carry = _initial_carry(with_values(rule, values), problem, k, workers, init,
                                   count, counts)
            return carry, worker_keys

        return _CompiledOnce(_over_runs(jax.vmap(initial), layout.devices,
                                        (True, True, True)))

    return _INITIAL.get(key, build, keep=(rule, problem))


#: the entry of a chunk's traced values that holds σ (see :func:`traced_noise`)
NOISE_STD = "__noise_std__"


def event_unroll(unroll=None) -> int:
    """Events per iteration of the replay's compiled loop (``lax.scan(unroll=...)``):
    ``unroll``, checked, or 1 for None.

    More events per iteration speed up a long replay of a short parameter vector
    (``benchmarks/replay.py``, row (h)), the more on an accelerator, where every loop
    iteration costs kernel launches; each program then compiles a little longer, which a
    short replay does not earn back.
    """
    if unroll is None:
        return 1
    if isinstance(unroll, bool) or not isinstance(unroll, int | np.integer) or unroll < 1:
        raise ConfigError(f"unroll must be an integer >= 1, got {unroll!r}")
    return int(unroll)


def _compiled_chunk(rule, problem, noise, record_paths, kind: str, layout: Layout):
    """The jitted, batch-vmapped chunk replay, cached so new seeds and new values of the
    traced hyperparameters reuse the compilation.

    Keyed by the rule's structure (:func:`structure_key`), the identity of the problem
    (kept alive in the cache, so an identity is never reused while its entry exists;
    ``asynclab.problems.get_problem`` returns the same object for the same arguments),
    the trace's kind of events (:data:`~asynclab.engine._kinds.EVENT_KINDS`) and the
    layout (:class:`~asynclab.engine._kinds.Layout`). The traced hyperparameters are the
    function's last argument, one value per batch element (a padded replay's hold each
    run's worker count under :data:`WORKERS`).
    """
    traced = traced_noise(problem, noise)
    key = (structure_key(rule), id(problem), "σ traced" if traced else noise, record_paths,
           kind, layout)
    return _COMPILED.get(key, lambda: _build_chunk(rule, problem, noise, traced, record_paths,
                                                   kind, layout), keep=(rule, problem))


def traced_noise(problem, noise) -> bool:
    """Whether the replay passes σ as a traced value (problems without an oracle of their
    own, σ > 0), so that another σ reuses the compilation. ``noise`` is checked first."""
    return problem.oracle is None and check_noise(noise) > 0


def _build_chunk(rule, problem, noise, traced, record_paths, kind: str, layout: Layout):
    fixed = None if traced else stochastic_gradient(problem, noise)
    events = EVENT_KINDS[kind]

    def event(carry, worker_keys, worker_id, active, index, *rest):
        *extra, values = rest
        values, count = _pop_workers(values, layout.padded)
        std = values.pop(NOISE_STD, None)
        gradient = stochastic_gradient(problem, std=std) if traced else fixed
        one = events.event(with_values(rule, values), gradient, layout)
        if events.synchronous:
            return one(carry, worker_keys, worker_id, active, index, count)
        return one(carry, worker_keys, worker_id, active, index, *extra)

    arrays = 3 + (events.extra is not None)
    runner = chunk_runner(event, problem.loss, record_paths, problem.evaluate, layout.unroll,
                          layout.shared, arrays)

    def chunk(carry, worker_keys, chunk_events, values, first):
        TRACE_COUNT["chunk"] += 1
        return runner(carry, worker_keys, chunk_events, values, first)

    return _CompiledOnce(_over_runs(chunk, layout.devices,
                                    (True, True, not layout.shared, True, False),
                                    donate=(0,)))
