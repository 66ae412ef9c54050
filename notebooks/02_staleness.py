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
# # 02 · Staleness and the implicit momentum of asynchrony
#
# When n workers share one model through a parameter server, a worker's commit was
# computed from a centre that other workers have moved since: its **staleness** τ is
# the number of commits by others since it pulled. This notebook shows
#
# 1. the distribution of τ for a simulated cluster, with the geometric law it follows
#    when compute times are exponential (mean n − 1, whatever the distribution: every
#    worker is always busy, so n − 1 others commit per commit of yours on average), and
#    how a busy parameter server changes its shape but not its mean;
# 2. what that staleness does to the optimizer: in expectation, asynchronous SGD with
#    n workers behaves like heavy-ball momentum with μ = 1 − 1/n (Mitliagkas et al.,
#    2016). The momentum is fitted from simulated trajectories and compared with
#    1 − 1/n.
#
# Move the controls; every change re-simulates the cluster (a fraction of a second).

# %% tags=["parameters"]
import os

QUICK = os.environ.get("ASYNCLAB_NOTEBOOK_QUICK") == "1"  # small sizes, for tests

# %%
import ipywidgets as widgets
from IPython.display import display

import asynclab
from asynclab.cluster import DISTRIBUTIONS, ComputeTime
from asynclab.notebook import momentum_data, server_staleness_data, show, staleness_data
from asynclab.plot.implicit_momentum import plot_implicit_momentum
from asynclab.plot.staleness import plot_staleness

COMMITS = 5_000 if QUICK else 50_000  # commits simulated for each histogram

# %% [markdown]
# ## The staleness histogram
#
# `workers` is n. `compute time` is the distribution of the time one local step takes
# (every distribution has mean 1 s, so only its *shape* changes: `shape` is the σ of a
# lognormal or the k of a gamma distribution). The black curve is the geometric
# distribution fitted by maximum likelihood, p = 1 / (1 + mean τ).

# %%
workers = widgets.IntSlider(value=16, min=1, max=64, description="workers n",
                            continuous_update=False)
distribution = widgets.Dropdown(options=DISTRIBUTIONS, value="exponential",
                                description="compute time")
shape = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                               description="shape", continuous_update=False)
summary = widgets.HTML()
histogram = widgets.Output()


def compute_time() -> ComputeTime:
    return ComputeTime(distribution.value, shape=shape.value)


def draw_histogram(_=None):
    try:
        data = staleness_data(workers.value, compute_time(), commits=COMMITS)
    except asynclab.ConfigError as error:
        summary.value = f"<b>Cannot simulate this cluster:</b> {error}"
        return
    n = workers.value
    summary.value = (f"mean τ = <b>{data['mean'][0]:.2f}</b> commits (n − 1 = {n - 1}); "
                     f"P(τ = 0) = {data['p_zero'][0]:.3f}, geometric fit p = "
                     f"{data['p_fit'][0]:.3f}; P(τ ≥ 8n) = {data['tail'][0]:.4f} against "
                     f"{data['tail_geometric'][0]:.4f} for the geometric law")
    show(plot_staleness(data), histogram)


for control in (workers, distribution, shape):
    control.observe(draw_histogram, names="value")
draw_histogram()
display(widgets.VBox([widgets.HBox([workers, distribution, shape]), summary, histogram]))

# %% [markdown]
# Things to try: `constant` compute times make every worker commit in turn, so every
# commit has τ = n − 1 exactly and the geometric fit is poor; a `lognormal` with a
# large `shape` keeps the mean at n − 1 but fattens the tail. Setting a control from
# code redraws too:

# %%
workers.value = 8 if QUICK else 32

# %% [markdown]
# ## A busy parameter server
#
# So far the server took no time. Give it a service time, exponential with mean
# `server time` seconds, and the loop becomes a closed queue, the *machine-repairman*
# model: the n workers (exponential compute, mean 1 s) queue at one FIFO server. Left:
# the n workers of the slider above around a free server; right: the same workers, with
# the same step times, around the busy one. The mean staleness is still n − 1, but the
# histogram is no longer geometric: a worker leaving a busy server usually finds others
# queued, who commit before it can, so τ = 0 is rare. Theory
# (`asynclab.cluster.machine_repairman`): P(τ = 0) = p0(n − 1)/n, where p0(n − 1) is the
# probability that the server of n − 1 such workers is idle.

# %%
server_time = widgets.FloatLogSlider(value=0.05, base=10, min=-3, max=0, step=0.05,
                                     description="server time", continuous_update=False)
server_summary = widgets.HTML()
server_histogram = widgets.Output()


def draw_server(_=None):
    try:
        data = server_staleness_data(workers.value, server_time.value, commits=COMMITS)
    except asynclab.ConfigError as error:
        server_summary.value = f"<b>Cannot simulate this cluster:</b> {error}"
        return
    n = workers.value
    server_summary.value = (
        f"server busy {data['utilisation'][1]:.0%} of the time; "
        f"{data['throughput'][1]:.2f} commits/s (theory {data['throughput_theory'][1]:.2f},"
        f" free server {data['throughput'][0]:.2f}); P(τ = 0) = <b>{data['p_zero'][1]:.4f}"
        f"</b> (theory p0(n − 1)/n = {data['p_zero_theory'][1]:.4f}; geometric 1/n = "
        f"{1 / n:.4f}); mean τ = {data['mean'][1]:.2f} (n − 1 = {n - 1})")
    show(plot_staleness(data), server_histogram)


for control in (workers, server_time):
    control.observe(draw_server, names="value")
draw_server()
display(widgets.VBox([widgets.HBox([workers, server_time]), server_summary,
                      server_histogram]))

# %% [markdown]
# ## The implicit momentum
#
# Asynchronous SGD (DOWNPOUR with one local step) on a convex quadratic, averaged over
# many seeds, each with its own simulated schedule. The mean central trajectory obeys
# Δ_t = μ Δ_{t−1} − (1 − μ) η ∇L(θ̄_t); μ is fitted from it by least squares and
# plotted against 1 − 1/n (right panel, ± 2 bootstrap standard errors). The compute-time
# distribution is the one chosen above; press the button after changing it (each fit
# replays a few hundred runs per n, a few seconds). Tick `busy server` to fit with the
# exponential server of the section above (the same mean service time for every n, so
# the larger clusters load it more): compare the fitted μ with the free server's.

# %%
WORKER_COUNTS = (2, 4) if QUICK else (1, 2, 4, 8, 16)
SIZES = {"seeds": 32, "commits": 600} if QUICK else {}

fit_button = widgets.Button(description="fit the momentum", icon="play")
busy_server = widgets.Checkbox(value=False, description="busy server")
fit_status = widgets.HTML()
momentum = widgets.Output()


def draw_momentum(_=None):
    compute = compute_time()
    server = ComputeTime("exponential", mean=server_time.value) if busy_server.value else 0.0
    what = f"{compute.distribution} compute times" + (
        f", exponential server of mean {server_time.value:.3g} s" if busy_server.value else "")
    fit_status.value = f"fitting for {what} …"
    try:
        data = momentum_data(WORKER_COUNTS, compute, quick=True, server_time=server, **SIZES)
    except asynclab.ConfigError as error:
        fit_status.value = f"<b>Cannot fit:</b> {error}"
        return
    fitted = ", ".join(f"n = {n}: μ = {mu:.3f} (1 − 1/n = {1 - 1 / n:.3f})"
                       for n, mu in zip(data["n"], data["fitted_momentum"], strict=True))
    fit_status.value = f"{what}: {fitted}"
    show(plot_implicit_momentum(data, title=what), momentum)


fit_button.on_click(draw_momentum)
draw_momentum()
display(widgets.VBox([widgets.HBox([fit_button, busy_server]), fit_status, momentum]))
