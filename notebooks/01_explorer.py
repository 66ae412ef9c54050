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
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Explorer: one asynchronous run, every knob
#
# Workers descend a 2-D surface and exchange with a parameter server; change a control
# on the left and the run is simulated again. Left panel: the central variable (red) and
# each worker's commits; right: the staleness τ of the commits; below: the central loss
# against simulated seconds (a local step takes 1 s on average) and when each worker
# committed. The slider under the picture scrubs through the run. Try: more workers
# (staleness grows), a larger η (until the run diverges), a long straggler delay (a kick
# to the centre), the rules `adag` or `dynsgd` (they damp stale commits).

# %% tags=["parameters"]
import os

QUICK = os.environ.get("ASYNCLAB_NOTEBOOK_QUICK") == "1"

# %%
from asynclab.notebook import Explorer

explorer = Explorer(commits=300 if QUICK else 2000, seeds=2 if QUICK else 4)
explorer
