"""Free-running threads: the recorded real trace replays to the run's own numbers."""

import json
import subprocess
import sys
from pathlib import Path

import children
import numpy as np
import pytest

from asynclab import ConfigError
from asynclab.backends import run_threads
from asynclab.problems import beale
from asynclab.rules import downpour, model_averaging

SCRIPT = Path(__file__).parent / "backend_scripts" / "threads_check.py"


# both in the slow tier (14 s for 4 threads); tests/test_cluster_logs.py replays a real
# threads run in the quick one
@pytest.mark.slow
@pytest.mark.parametrize("devices", [2, 4])
def test_replaying_the_real_trace_reproduces_the_run(devices):
    proc = children.run(SCRIPT, devices, devices=devices)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, r in report.items():
        assert r["events"] == 300, name
        assert r["max_path_error"] < 1e-5, name
        assert r["final_error"] < 1e-5, name
        assert r["staleness_ok"] and r["time_sorted"], name
        assert r["pulls_ok"], name
        assert sum(r["per_worker"]) == 300 and min(r["per_worker"]) > 0, name
        # closed-loop fact holds for the real run too (up to the start/end boundary)
        assert abs(r["mean_staleness"] - (devices - 1)) < 0.1 * devices + 0.2, name
        assert abs(r["predicted_mean_staleness"] - (devices - 1)) < 0.1 * devices + 0.2, name


def test_threads_refuse_synchronous_rules_and_missing_devices():
    with pytest.raises(ConfigError, match="synchronous"):
        run_threads(model_averaging(0.1), beale(), commits=10)
    with pytest.raises(ConfigError, match="xla_force_host_platform_device_count"):
        run_threads(downpour(0.1), beale(), commits=10, workers=64)


@pytest.mark.slow  # threads run in the quick tier in test_cluster_logs' round trip
def test_cli_threads_backend_reports_the_real_run():
    proc = subprocess.run(
        [sys.executable, "-m", "asynclab.cli", "run", "--backend", "threads", "--devices", "2",
         "--simulate-devices", "--rule", "dynsgd", "--commits", "100", "--noise", "1",
         "--json"], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["backend"] == "threads" and out["events"] == 100
    assert sum(out["staleness_histogram"]) == 100
    assert out["wall_time"] > 0 and out["commits_per_second"] > 0
    assert sum(out["predicted_staleness_histogram"]) >= 100
    # the prediction simulates max(20,000, the run's) commits of the measured cluster, and
    # its mean staleness is the closed-loop n − 1 = 1
    predicted = np.array(out["predicted_staleness_histogram"])
    assert predicted.sum() == 20_000
    assert abs(np.average(np.arange(predicted.size), weights=predicted) - 1) < 0.05
    proc = subprocess.run(
        [sys.executable, "-m", "asynclab.cli", "run", "--backend", "threads", "--devices", "3",
         "--commits", "10"], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 2 and "--simulate-devices" in proc.stderr


def test_predicted_staleness_refuses_a_run_where_a_worker_never_committed():
    # three workers, but worker 2 made none of the four commits: its compute time is unknown
    from asynclab.backends import ThreadsRun, predicted_staleness
    from asynclab.cluster import Trace

    trace = Trace(time=np.arange(1.0, 5.0), worker=np.array([0, 1, 0, 1], np.int32),
                  pulled_clock=np.zeros(4, np.int32), staleness=np.arange(4, dtype=np.int32),
                  n_workers=3, local_steps=1)
    run = ThreadsRun(trace=trace, final_params=np.zeros(2), center_path=None,
                     local_time=np.ones(4), wall_time=4.0)
    with pytest.raises(ConfigError, match=r"worker\(s\) \[2\] never committed"):
        predicted_staleness(run)
