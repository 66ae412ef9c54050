# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · The same trace on devices and in the simulator
#
# The simulator decides *when* workers exchange with the server (a trace); the replay
# engine then does the arithmetic for many seeds at once. The device executor
# (`asynclab run --backend pmap`) runs the very same update rule with one worker per
# device: it cuts the trace into segments in which each worker appears at most once,
# runs the workers' local steps in parallel on their devices and applies the
# exchanges in trace order. Same rule, same trace, same seed: the same numbers.
#
# Here both run the same trace; the notebook reports the largest difference and the
# wall time of each (the first call compiles). On a machine with several accelerators
# the workers use them; otherwise JAX simulates CPU devices (which share this machine's
# cores, so the device executor is no faster here: the point is that it agrees).

# %% tags=["parameters"]
import os

QUICK = os.environ.get("ASYNCLAB_NOTEBOOK_QUICK") == "1"  # small sizes, for tests

# %%
# Before anything starts JAX: the number of simulated CPU devices is fixed at start-up.
from asynclab.notebook import notebook_devices

DEVICES = 2 if QUICK else 4
devices = notebook_devices(DEVICES)
print(devices)

# %%
import asynclab
from asynclab.cluster import Cluster, ComputeTime
from asynclab.engine import schedules
from asynclab.notebook import compare_executors, plot_executors, show
from asynclab.problems import beale

COMMITS = 48 if QUICK else 2_000
NOISE = 1.0  # gradient-noise variance σ²

# %% [markdown]
# ## An asynchronous rule: DOWNPOUR on a simulated cluster

# %%
cluster = Cluster(DEVICES, ComputeTime("exponential"))
spec = asynclab.prepare(beale(), "downpour", cluster=cluster, commits=COMMITS,
                        learning_rate=0.002, local_steps=2, seeds=7, noise=NOISE)
(trace,) = schedules(spec)
data = compare_executors(spec.rule, spec.problem, trace, devices, seed=7, noise=NOISE)
print(f"max |device − replay| = {data['max_difference']:.2e}; wall time device "
      f"{data['wall']['device'][1]:.3f} s, replay {data['wall']['replay'][1]:.3f} s "
      f"(second calls)")
show(plot_executors(data))

# %% [markdown]
# ## A synchronous rule: model averaging, one round per device call
#
# Every device runs its worker's λ local steps, then the average is taken with a
# collective over the devices; the replay takes the same average over a vectorised
# worker axis.

# %%
if not QUICK:
    spec = asynclab.prepare(beale(), "model_averaging", cluster=cluster,
                            commits=COMMITS // 4, learning_rate=0.002, local_steps=4, seeds=7,
                            noise=NOISE)
    (trace,) = schedules(spec)
    data = compare_executors(spec.rule, spec.problem, trace, devices, seed=7, noise=NOISE)
    print(f"max |device − replay| = {data['max_difference']:.2e}")
    show(plot_executors(data))
