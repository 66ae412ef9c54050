"""What the device executor records: losses, metrics and paths collected from its calls,
and restored from a checkpoint."""

from __future__ import annotations

import math

import numpy as np

from .._errors import ConfigError
from ..cluster import RoundTrace
from ._device_mesh import _replica, _rows


class _Records:
    """Loss, metrics, paths and wall time, gathered on the host at each wait."""

    def __init__(self, record_paths: bool, record_every: int, n_events: int, dim: int,
                 metric_names: tuple = ()):
        self.record_paths = record_paths
        self.metrics: dict[str, list[np.ndarray]] = {k: [] for k in metric_names}
        self.record_every, self.n_events, self.dim = record_every, n_events, dim
        self.loss: list[np.ndarray] = []
        self.centers: list[np.ndarray] = []
        self.paths: list[np.ndarray] = []
        self.times: list[np.ndarray] = []

    def add(self, pending, seconds: float, first_step: int, starts, trace) -> None:
        self.times.append(np.full(len(pending), seconds / len(pending)))
        for offset, (values, centers, local_params, metrics) in enumerate(pending):
            s = first_step + offset
            size = int(starts[s + 1] - starts[s])
            index = np.arange(starts[s], starts[s] + size)
            due = ((index + 1) % self.record_every == 0) | (index == self.n_events - 1)
            if due.any():  # else there is nothing to read back from the devices
                self.loss.append(_replica(values)[:size][due])
                for k, v in metrics.items():
                    self.metrics[k].append(_replica(v)[:size][due])
                if self.record_paths:
                    self.centers.append(_replica(centers)[:size][due])
            if self.record_paths:
                local_params = _rows(local_params)
                if isinstance(trace, RoundTrace):
                    self.paths.append(local_params[None])
                else:
                    self.paths.append(local_params[trace.worker[starts[s]:starts[s + 1]]])

    def state(self) -> dict:
        """The records so far, for a checkpoint."""
        state = {"loss": _cat(self.loss, (0,)), "wall_time": _cat(self.times, (0,))}
        state.update({f"metric_{k}": _cat(v, (0,)) for k, v in self.metrics.items()})
        if self.record_paths:
            state["center_path"] = _cat(self.centers, (0, self.dim))
            state["worker_path"] = _cat(self.paths, (0, self.dim))
        return state

    def restore(self, saved: dict, events_done: int, segments_done: int) -> None:
        """The records of a checkpoint taken after ``segments_done`` segments
        (``events_done`` events), checked against what those segments record."""
        need = {"loss", "wall_time"} | ({"center_path", "worker_path"} if self.record_paths
                                       else set())
        if need - set(saved):
            raise ConfigError(f"the checkpoint lacks the records {sorted(need - set(saved))}")
        records = events_done // self.record_every + int(
            events_done == self.n_events and self.n_events % self.record_every != 0)
        shapes = {"loss": (records,), "wall_time": (segments_done,),
                  **{f"metric_{k}": (records,) for k in self.metrics if f"metric_{k}" in saved}}
        if self.record_paths:
            shapes["center_path"] = (records, self.dim)
        for name, shape in shapes.items():
            value = saved[name]
            if value.shape != shape or value.dtype.kind != "f":
                raise ConfigError(f"the checkpoint's record {name!r} holds {value.dtype} of "
                                  f"shape {value.shape}, not the floats of shape {shape} that "
                                  f"{segments_done} segments record: it is damaged")
        self.loss, self.times = [saved["loss"]], [saved["wall_time"]]
        self.metrics = {k: [saved.get(f"metric_{k}", np.full(saved["loss"].shape, np.nan))]
                        for k in self.metrics}
        if self.record_paths:
            self.centers = [saved["center_path"]]
            self.paths = [saved["worker_path"]] if saved["worker_path"].size else []

    def wall_time(self, n_segments: int) -> np.ndarray:
        seconds = _cat(self.times, (0,))
        return np.concatenate([seconds, np.full(n_segments - seconds.size, np.nan)])

    def metric_arrays(self, first: dict) -> dict:
        """``name -> (1, records + 1)``, as the replay records them: the start's value,
        then one per record block; NaN for what a diverged run did not record."""
        n_records = math.ceil(self.n_events / self.record_every)
        out = {}
        for k, v in self.metrics.items():
            series = np.full(n_records + 1, np.nan, np.float32)
            series[0] = np.asarray(first[k])
            done = _cat(v, (0,))
            series[1:1 + done.size] = done
            out[k] = series[None]
        return out

    def arrays(self, first_loss, first_center, worker_tail, events_done):
        """``(loss, center_path, worker_path)`` with a leading seed axis; NaN for what a
        diverged run did not record."""
        n_records = math.ceil(self.n_events / self.record_every)
        loss = np.full(n_records + 1, np.nan)
        done = _cat(self.loss, (0,))
        loss[0] = first_loss
        loss[1:1 + done.size] = done
        if not self.record_paths:
            return loss[None], None, None
        center_path = np.full((n_records + 1, self.dim), np.nan)
        center_path[0] = first_center
        centers = _cat(self.centers, (0, self.dim))
        center_path[1:1 + len(centers)] = centers
        worker_path = np.full((self.n_events,) + worker_tail, np.nan)
        if self.paths:
            worker_path[:events_done] = np.concatenate(self.paths)[:events_done]
        return loss[None], center_path[None], worker_path[None]


def _cat(parts: list[np.ndarray], empty: tuple) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(empty)
