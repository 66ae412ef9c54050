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
# # 03 · Model averaging on Beale: a Monte Carlo run live
#
# Model averaging: n workers each start at a random point in [−4, 4]², take λ local SGD
# steps with noisy gradients (η = 1e-4, noise variance σ² = 10), then replace their
# parameters by the average, and so on. Does starting several workers at random help
# the *average* find Beale's global minimum (3, 0.5), or do the workers pull each other
# into its valleys?
#
# A single run says nothing: the answer is a probability. Below, each (n, λ) cell is
# replayed for many seeds, in batches, and the success probabilities are redrawn as
# the runs come in, with 95 % Wilson confidence intervals that narrow like 1/√runs.
# A run succeeds when the central loss at the end of the budget is below 0.1 (that
# sublevel set is a bounded neighbourhood of the global minimum). The full figure of
# the study (`asynclab figures model_averaging_mc`) uses 10,000 runs per bar.

# %% tags=["parameters"]
import os

QUICK = os.environ.get("ASYNCLAB_NOTEBOOK_QUICK") == "1"  # small sizes, for tests

# %%
import ipywidgets as widgets
from IPython.display import display
from tqdm.auto import tqdm

from asynclab.notebook import accumulate, plot_running_probability, show
from asynclab.studies.model_averaging_mc import Config

if QUICK:
    config = Config(workers=(1, 4), bar_local_steps=(10,), runs=24, budget=2_000,
                    budget_few=2_000)
    BATCH = 12
else:
    config = Config(workers=(1, 2, 5, 10), bar_local_steps=(1, 100), runs=1_000)
    BATCH = 100  # seeds per replay call; the plot is redrawn after each

cells = len(config.workers) * len(config.bar_local_steps)
print(f"{cells} cells × {config.runs:,} runs, budget {config.budget:,} local steps per "
      f"worker ({config.budget_few:,} for n ≤ {config.few_workers})")

# %% [markdown]
# The first batch of every cell compiles its replay (a few seconds each); the batches
# after it reuse the compilation.

# %%
plot = widgets.Output()
display(plot)
with tqdm(total=cells * config.runs, desc="model averaging runs", unit="run") as bar:
    for data in accumulate(config, batch=BATCH):
        bar.update(int(data["runs"].sum()) - bar.n)
        show(plot_running_probability(data), plot)

# %% [markdown]
# ## The numbers

# %%
for i, lam in enumerate(data["local_steps"]):
    for j, n in enumerate(data["workers"]):
        print(f"λ = {lam:>4}, n = {n:>2}: P(success) = {data['probability'][i, j]:.3f}  "
              f"95 % interval [{data['low'][i, j]:.3f}, {data['high'][i, j]:.3f}]  "
              f"({data['success'][i, j]} of {data['runs'][i, j]} runs)")
