"""One run on real devices, as ``asynclab run --backend pmap|threads`` makes it: the
device executor replaying a simulated schedule, or free-running threads whose measured
schedule the engine then replays."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import ConfigError
from ..engine import Result, RunSpec, replay, schedules


def run_devices(spec: RunSpec, *, checkpoint=None, checkpoint_every: int | None = None,
                resume: bool = False, overwrite: bool = False,
                progress: bool | None = None) -> tuple[Result, dict[str, Any]]:
    """Run a prepared run (``asynclab.prepare(..., backend="pmap" | "threads")``) with one
    committing unit (a worker, or a group of the ``mixed`` rule) per device; returns
    ``(result, extra)``.

    ``"pmap"``: the device executor (:func:`asynclab.backends.run_pmap`) replays the
    schedule simulated on the spec's cluster (with its semi-synchronous rounds, if any);
    ``"threads"``: free-running workers (:func:`asynclab.backends.run_threads`), whose
    measured schedule is replayed by the engine for the run's numbers.

    Args:
      spec: the prepared run.
      checkpoint: the device executor's checkpoint file, or None (``"pmap"`` only, as
        the next three; see :func:`run_pmap`).
      checkpoint_every: also write it every this many segments (rounds).
      resume: continue from ``checkpoint`` if it exists.
      overwrite: without ``resume``, replace an existing ``checkpoint``.
      progress: progress bar (None: only on a terminal or in a notebook).

    Returns:
      The :class:`~asynclab.Result` and what the backend measured beside it (wall-clock
      times; for threads the staleness the simulator predicts for those workers).
    """
    if not isinstance(spec, RunSpec) or spec.backend not in ("pmap", "threads"):
        raise ConfigError("run_devices runs a run prepared with asynclab.prepare(..., "
                          f"backend='pmap' or 'threads'), got {spec!r}")
    config = dict(spec.config)
    seed = spec.seeds[0]
    if spec.backend == "threads":
        if checkpoint is not None or resume:
            raise ConfigError("checkpoint: free-running threads keep no checkpoint; it "
                              "applies to backend 'pmap'")
        from ._threads import predicted_staleness, run_threads

        real = run_threads(spec.rule, spec.problem, commits=spec.commits,
                           workers=len(spec.devices), seed=seed, noise=spec.noise,
                           init=spec.init, progress=progress, devices=spec.devices)
        # the real schedule replayed by the engine gives the run's numbers and records
        result = replay(spec.rule, spec.problem, real.trace, seeds=[seed], noise=spec.noise,
                        init=spec.init, record_every=spec.record_every, progress=False,
                        config=config, diverged_above=spec.diverged_above)
        predicted, _ = predicted_staleness(real)
        return result, {
            "backend": "threads", "wall_time": round(real.wall_time, 4),
            "commits_per_second": round(real.trace.n_events / real.wall_time, 1),
            "predicted_mean_staleness": float(np.mean(predicted.staleness)),
            "predicted_staleness_histogram": np.bincount(predicted.staleness).tolist()}
    from ._device_executor import run_pmap

    (trace,) = schedules(spec)
    out = run_pmap(spec.rule, spec.problem, trace, seed=seed, noise=spec.noise,
                   init=spec.init, record_every=spec.record_every, checkpoint=checkpoint,
                   checkpoint_every=checkpoint_every, resume=resume, overwrite=overwrite,
                   progress=progress, devices=spec.devices,
                   diverged_above=spec.diverged_above)
    result = out.result
    result.config.update(config)
    wall = np.asarray(out.wall_time)
    wall = wall[np.isfinite(wall)]  # a diverged run stops before its last segments
    return result, {"backend": "pmap", "segments": int(out.segments),
                    "segments_run": int(wall.size), "wall_time": round(float(wall.sum()), 4),
                    "wall_time_per_segment": round(float(wall.mean()), 6) if wall.size
                    else 0.0}
