"""Strict settings for the whole suite, set before JAX is imported by any test.

Multi-device tests set their own device count in a subprocess (see DESIGN.md: simulated
CPU devices can deadlock, which would abort the whole run), so nothing here asks for
several devices.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TQDM_DISABLE", "1")
# processes sharing one GPU (this one and the CLI runs it starts) must not each reserve
# most of its memory
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")
