"""One run on real devices, as ``asynclab run --backend pmap|threads`` makes it: the
device executor replaying a simulated schedule, or free-running threads whose measured
schedule the engine then replays."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine import Result, replay, schedule
from ..problems import Problem
from ..rules import Rule


def run_devices(rule: Rule, problem: Problem, *, backend: str, devices, commits: int,
                seed: int = 0, noise: float = 0.0, init: str = "start",
                record_every: int | None = None, cluster=None, checkpoint=None,
                checkpoint_every: int | None = None, resume: bool = False,
                overwrite: bool = False, progress: bool | None = None,
                config: dict | None = None, semisync=None) -> tuple[Result, dict[str, Any]]:
    """Run ``rule`` on ``problem`` with one committing unit (a worker, or a group of the
    ``mixed`` rule) per device; returns ``(result, extra)``.

    Args:
      backend: ``"pmap"``: the device executor (:func:`asynclab.backends.run_pmap`)
        replays the schedule simulated on ``cluster`` (default: exponential compute
        times); ``"threads"``: free-running workers
        (:func:`asynclab.backends.run_threads`), whose measured schedule is replayed by
        the engine for the run's numbers.
      devices: the devices, one per committing unit.
      config: entries added to the result's config.
      semisync: pmap: semi-synchronous rounds for a synchronous rule (an
        :class:`asynclab.cluster.SemiSync`): the simulated schedule records who counted
        in each round and the devices average over those.

    Returns:
      The :class:`~asynclab.Result` and what the backend measured beside it (wall-clock
      times; for threads the staleness the simulator predicts for those workers).
    """
    config = dict(config or {})
    if semisync is not None and backend != "pmap":
        from .._errors import ConfigError

        raise ConfigError("semisync: semi-synchronous rounds run on a simulated schedule "
                          "(backend 'pmap'), not on free-running threads")
    if backend == "threads":
        from ._threads import predicted_staleness, run_threads

        real = run_threads(rule, problem, commits=commits, workers=len(devices), seed=seed,
                           noise=noise, init=init, progress=progress, devices=devices)
        # the real schedule replayed by the engine gives the run's numbers and records
        result = replay(rule, problem, real.trace, seeds=[seed], noise=noise, init=init,
                        record_every=record_every, progress=False, config=config)
        predicted, _ = predicted_staleness(real)
        return result, {
            "backend": "threads", "wall_time": round(real.wall_time, 4),
            "commits_per_second": round(real.trace.n_events / real.wall_time, 1),
            "predicted_mean_staleness": float(np.mean(predicted.staleness)),
            "predicted_staleness_histogram": np.bincount(predicted.staleness).tolist()}
    if backend != "pmap":
        from .._errors import ConfigError

        raise ConfigError(f"backend must be 'pmap' or 'threads', got {backend!r}")
    from ..cluster import Cluster
    from ._device_executor import run_pmap

    if cluster is None:
        cluster = Cluster(len(devices) * rule.group_size, group_size=rule.group_size)
    trace = schedule(rule, cluster, commits=commits, rng=seed, semisync=semisync)
    out = run_pmap(rule, problem, trace, seed=seed, noise=noise, init=init,
                   record_every=record_every, checkpoint=checkpoint,
                   checkpoint_every=checkpoint_every, resume=resume, overwrite=overwrite,
                   progress=progress, devices=devices)
    result = out.result
    result.config.update(config)
    wall = np.asarray(out.wall_time)
    wall = wall[np.isfinite(wall)]  # a diverged run stops before its last segments
    return result, {"backend": "pmap", "segments": int(out.segments),
                    "segments_run": int(wall.size), "wall_time": round(float(wall.sum()), 4),
                    "wall_time_per_segment": round(float(wall.mean()), 6) if wall.size
                    else 0.0}
