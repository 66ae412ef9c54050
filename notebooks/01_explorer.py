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
# Workers run gradient descent on a 2-D surface and exchange with a parameter server.
# Change a control and the run is simulated again: the contour plot shows the central
# variable (red) and each worker's parameters at its commits, the lower panels the
# central loss against simulated time and against commits, the upper right the
# staleness τ of the commits (how many server updates happened since the committing
# worker last pulled). The *commit shown* slider, or the play button, scrubs through
# the run.
#
# Things to try: raise n and watch the staleness grow; raise η until the run diverges
# (the message says so); move the straggler's delay and see the kick it gives the
# centre; switch the rule to `adag` or `dynsgd`, which damp stale commits.
#
# Units: simulated seconds (a local step takes 1 s on average), η per gradient step,
# σ² the variance of the Gaussian noise added to every gradient.
#
# Speed: after the first compilation, a change of a real-valued control (η, momenta,
# σ², heterogeneity, the straggler, the compute-time shape) replays and redraws without
# compiling, for Beale with n = 16 and 2,000 commits in 0.30 s (median; worst 0.57 s) on
# a shared 2-core machine at load 1–2 (`python benchmarks/explorer.py --quick`).
# A new n, rule, budget or number of seeds, or σ² between 0 and > 0, compiles once (a
# few seconds); returning to one already seen is fast again.

# %% tags=["parameters"]
import os

QUICK = os.environ.get("ASYNCLAB_NOTEBOOK_QUICK") == "1"

# %%
from asynclab.notebook import Explorer

explorer = Explorer(commits=300 if QUICK else 2000, seeds=2 if QUICK else 4)
explorer
