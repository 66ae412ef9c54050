"""Heterogeneous clusters from the command line: ``--time-scale`` and ``--heterogeneous``
make the cluster ``asynclab.run``/``sweep`` make from ``Cluster(time_scale=...)``, and
fill DyLU's speeds as ``asynclab.run`` does; bad multipliers are refused by flag."""

import json

import numpy as np
import pytest

import asynclab
from asynclab.cli import main
from asynclab.cluster import Cluster, ComputeTime, heterogeneous, simulate_async

SCALES = (1.0, 1.3, 2.6, 5.7)


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow  # the command line's heterogeneity runs quick below; DyLU's speeds
# filled from the cluster run quick in tests/test_async_diloco.py
def test_run_with_a_time_scale_is_the_python_run(capsys):
    argv = ["run", "--rule", "async_diloco", "--param", "dynamic=true", "--local-steps",
            "4", "--workers", "4", "--commits", "30", "--noise", "1", "--json"]
    out = _json(capsys, [*argv, "--time-scale", ",".join(map(str, SCALES))])
    want = asynclab.run("beale", "async_diloco", cluster=Cluster(4, time_scale=SCALES),
                        local_steps=4, commits=30, noise=1.0, dynamic=True)
    np.testing.assert_array_equal(out["final_params"], np.asarray(want.final_params))
    # DyLU's speeds are the cluster's, v_k = 1 / s_k (worker 3: 4 · 1/5.7 -> 1 step)
    np.testing.assert_allclose(out["hyperparameters"]["speeds"], 1 / np.array(SCALES))
    homogeneous = _json(capsys, argv)
    assert homogeneous["hyperparameters"]["speeds"] == [1.0] * 4
    assert homogeneous["final_params"] != out["final_params"]


def test_heterogeneous_draws_the_python_multipliers(capsys):
    out = _json(capsys, ["run", "--rule", "downpour", "--workers", "5", "--commits", "40",
                         "--noise", "1", "--heterogeneous", "0.8", "--json"])
    cluster = Cluster(5, time_scale=heterogeneous(5, 0.8))
    want = asynclab.run("beale", "downpour", cluster=cluster, commits=40, noise=1.0)
    np.testing.assert_array_equal(out["final_params"], np.asarray(want.final_params))
    trace = simulate_async(cluster, commits=40, rng=0)
    np.testing.assert_array_equal(want.worker[0], trace.worker)


def test_sweep_with_a_time_scale_is_the_python_sweep(capsys):
    out = _json(capsys, ["sweep", "--rule", "downpour", "--workers", "4", "--commits", "30",
                         "--noise", "1", "--seeds", "0,1", "--compute", "constant",
                         "--time-scale", "1,1,1,4", "--grid", "learning_rate=0.001,0.002",
                         "--json"])
    cluster = Cluster(4, ComputeTime("constant"), time_scale=(1, 1, 1, 4))
    want = asynclab.sweep("beale", "downpour", cluster=cluster, commits=30, noise=1.0,
                          seeds=[0, 1], grid={"learning_rate": [0.001, 0.002]})
    np.testing.assert_allclose([p["score"] for p in out["points"]],
                               want.loss[:, :, -1].mean(axis=1), rtol=1e-6)
    # worker 3 is four times slower: one commit for every four of each other worker
    counts = np.bincount(want.worker[0], minlength=4)
    assert counts[3] < counts[:3].min() / 3


@pytest.mark.parametrize("argv,message", [
    (["--time-scale", "1,2"], "--time-scale gives 2 multiplier(s) for 4 workers"),
    (["--time-scale", "1,0,2,3"], "--time-scale (worker 1) must be a finite number > 0"),
    (["--time-scale", "1,-2,2,3"], "--time-scale (worker 1) must be a finite number > 0"),
    (["--time-scale", "1,1,1,1", "--heterogeneous", "0.5"], "drop one"),
    (["--time-scale", "1,2,3,4", "--backend", "threads"], "--time-scale applies only"),
    (["--heterogeneous", "0.5", "--trace-log", "example"], "--heterogeneous applies only"),
])
def test_bad_multipliers_are_refused(argv, message, capsys):
    for command in ("run", "sweep"):
        if command == "sweep" and ("--backend" in argv or "--trace-log" in argv):
            continue
        extra = ["--grid", "learning_rate=0.001"] if command == "sweep" else []
        code = main([command, "--workers", "4", "--commits", "5", *argv, *extra])
        assert code == 2
        assert message in capsys.readouterr().err


def test_trace_show_takes_the_multipliers(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    assert main(["trace", "export", "--workers", "4", "--compute", "constant",
                 "--time-scale", "1,1,1,4", "--commits", "13", "--format", "jsonl",
                 "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    workers = [x["worker"] for x in lines if x["type"] == "commit"]
    want = simulate_async(Cluster(4, ComputeTime("constant"), time_scale=(1, 1, 1, 4)),
                          commits=13, rng=0)
    assert workers == want.worker.tolist()
    assert workers.count(3) == 1  # in 4 s the slow worker commits once, the others 4 times
    assert main(["trace", "show", "--time-scale", "1,2", "--out",
                 str(tmp_path / "t.png")]) == 2
    assert "--time-scale gives 2" in capsys.readouterr().err
