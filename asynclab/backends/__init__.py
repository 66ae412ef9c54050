"""Executors on real devices, sharing the rules with the simulator's replay."""

from ._threads import ThreadsRun as ThreadsRun
from ._threads import predicted_staleness as predicted_staleness
from ._threads import run_threads as run_threads

__all__ = ["ThreadsRun", "predicted_staleness", "run_threads"]
