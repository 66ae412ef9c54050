"""The pmap backend: the replay's numbers on real (simulated CPU) devices.

Multi-device runs happen in subprocesses with a timeout (simulated CPU devices can
deadlock when the host does not wait for them regularly), each looping over many cases
and printing one JSON report, so the file costs a handful of process starts.
This process itself has one CPU device.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from children import start

from asynclab import ConfigError
from asynclab.backends import (
    random_order_trace,
    round_robin_trace,
    run_pmap,
    segment_starts,
    trace_from_order,
)
from asynclab.cluster import Cluster, RoundTrace, simulate_sync
from asynclab.engine import build_rule, replay
from asynclab.problems import beale
from asynclab.rules import RULES

# module fixtures that run many processes: the whole file on one xdist worker
pytestmark = pytest.mark.xdist_group("backend_pmap")

SCRIPTS = Path(__file__).parent / "backend_scripts"
DEVICE_COUNTS = (2, 4)




def _finish(child: subprocess.Popen, timeout: float) -> tuple[str, str]:
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"{child.args} timed out after {timeout} s (deadlock?)\n{err[-3000:]}")
    return out, err


def _report(out: str, err: str) -> dict:
    for line in out.splitlines():
        if line.startswith("REPORT "):
            return json.loads(line[len("REPORT "):])
    pytest.fail(f"no report from the child process\nstdout:\n{out[-2000:]}\n"
                f"stderr:\n{err[-4000:]}")


@pytest.fixture(scope="module")
def equivalence_reports():
    """Both device counts at once: one child process each, in parallel."""
    children = {n: start(SCRIPTS / "pmap_equivalence.py", n, devices=n)
                for n in DEVICE_COUNTS}
    # ~1 CPU-minute each; the limit leaves room for a loaded machine (a deadlock never ends)
    return {n: _report(*_finish(child, timeout=480)) for n, child in children.items()}


# ----------------------------------------------------------------------------- equivalence


@pytest.mark.slow  # every rule on 1 and 2 devices: about a CPU-minute per child
@pytest.mark.parametrize("n_devices", DEVICE_COUNTS)
def test_every_rule_matches_the_replay(equivalence_reports, n_devices):
    report = equivalence_reports[n_devices]
    assert report["devices"] == n_devices
    failures = [f"{c['rule']} on {c.get('trace')}:\n{c.get('error')}"
                for c in report["cases"] if not c["ok"]]
    assert not failures, "\n\n".join(failures)
    covered = {c["rule"] for c in report["cases"]}
    expected = set(RULES) if n_devices == 2 else set(RULES) - {"sequential_sgd"}
    assert covered == expected
    traces = {c["trace"] for c in report["cases"]}
    assert {"simulate_async_exponential", "random_order", "round_robin",
            "simulated_rounds", "diverging"} <= traces
    # mixed ran real groups: each device computes a synchronous group of two workers
    assert {c["group_size"] for c in report["cases"] if c["rule"] == "mixed"} == {2}
    # the diverging case really diverged, at the same event as the replay
    assert [c["diverged_at"] for c in report["cases"] if c["trace"] == "diverging"][0] >= 0
    # asynchronous traces were cut into segments of several events
    exponential = [c for c in report["cases"] if c["trace"] == "simulate_async_exponential"
                   and c["rule"] != "sequential_sgd"]
    assert all(c["segments"] < c["events"] for c in exponential)


# ----------------------------------------------------------------------------- checkpoints


@pytest.mark.slow  # ~7 s of processes; the quick tier resumes from a saved checkpoint
def test_resume_after_a_kill_gives_the_uninterrupted_result(tmp_path):
    path = tmp_path / "run.npz"
    script = SCRIPTS / "pmap_checkpoint.py"
    writer = start(script, "write", path, devices=2)
    deadline = time.monotonic() + 120
    while not path.exists() and writer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.4)  # let it run on past the first checkpoint, then kill it mid-run
    writer.send_signal(signal.SIGKILL)
    out, err = _finish(writer, timeout=30)
    assert path.exists(), err[-3000:]
    assert "FINISHED" not in out, "the run ended before it could be killed"

    report = _report(*_finish(start(script, "resume", path, devices=2), timeout=180))
    assert 0 < report["resumed_at"] < report["segments"]
    assert report["async_mismatch"] == []
    assert report["wall_time_len"] == report["segments"]
    assert report["mismatch_error"] and "seed" in report["mismatch_error"]
    assert report["sync_saves_before_crash"] == 2
    assert report["sync_mismatch"] == []


# ----------------------------------------------------------------------------- multi-process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two processes of two devices, 9 s
def test_two_processes_of_two_devices_match_the_replay(tmp_path):
    out = tmp_path / "process.json"
    port = _free_port()
    children = [start(SCRIPTS / "pmap_distributed.py", p, 2, port, out, devices=2)
                for p in range(2)]
    logs = [_finish(child, timeout=120) for child in children]
    for child, (_, err) in zip(children, logs, strict=True):
        assert child.returncode == 0, err[-4000:]
    reports = [json.loads(Path(f"{out}.{p}").read_text()) for p in range(2)]
    assert [r["devices"] for r in reports] == [4, 4]
    assert [r["local_devices"] for r in reports] == [2, 2]

    problem = beale()
    traces = {"model_averaging": simulate_sync(Cluster(workers=4), local_steps=2, rounds=20,
                                               rng=1),
              "downpour": random_order_trace(4, 10, 3, local_steps=2)}
    for name, trace in traces.items():
        rule = build_rule(name, learning_rate=0.002, local_steps=2)
        want = replay(rule, problem, trace, seeds=7, noise=1.0, record_every=2)
        for report in reports:
            got = report["runs"][name]
            np.testing.assert_allclose(got["final_params"], want.final_params, rtol=1e-5,
                                       atol=1e-6)
            np.testing.assert_allclose(got["loss"], want.loss, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- in process


def test_real_devices_match_the_replay():
    """On a machine with several accelerators: one worker per real device."""
    import jax

    devices = jax.devices()
    if len(devices) < 2:
        pytest.skip(f"needs 2 devices of JAX's default platform; this process sees "
                    f"{len(devices)} {devices[0].platform} device(s)")
    n = min(len(devices), 4)
    problem = beale()
    for name, trace in (("model_averaging", simulate_sync(Cluster(workers=n), local_steps=2,
                                                          rounds=20, rng=1)),
                        ("downpour", random_order_trace(n, 10, 3, local_steps=2))):
        rule = build_rule(name, learning_rate=0.002, local_steps=2)
        want = replay(rule, problem, trace, seeds=7, noise=1.0, record_every=2)
        got = run_pmap(rule, problem, trace, seed=7, noise=1.0, record_every=2,
                       devices=devices[:n]).result
        np.testing.assert_allclose(got.final_params, want.final_params, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got.loss, want.loss, rtol=1e-5, atol=1e-6)


def test_round_robin_trace_has_the_simulators_staleness():
    trace = round_robin_trace(3, 4)
    assert trace.worker.tolist() == [0, 1, 2] * 4
    assert trace.staleness.tolist() == [0, 1, 2] + [2] * 9
    np.testing.assert_array_equal(trace.staleness, np.arange(12) - trace.pulled_clock)


def test_random_order_trace_is_one_permutation_per_round():
    trace = random_order_trace(4, 5, np.random.default_rng(0), local_steps=3)
    rounds = trace.worker.reshape(5, 4)
    assert all(sorted(r) == [0, 1, 2, 3] for r in rounds.tolist())
    assert trace.local_steps == 3
    for t, k in enumerate(trace.worker):  # pulled right after its previous commit
        previous = np.flatnonzero(trace.worker[:t] == k)
        assert trace.pulled_clock[t] == (previous[-1] + 1 if previous.size else 0)


def test_segments_hold_each_worker_at_most_once():
    trace = trace_from_order([0, 1, 0, 2, 1, 1, 3], 4)
    starts = segment_starts(trace)
    assert starts.tolist() == [0, 2, 5, 7]
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        assert len(set(trace.worker[a:b].tolist())) == b - a
    rounds = RoundTrace(time=np.arange(3.0), duration=np.ones(3), n_workers=2, local_steps=1)
    assert segment_starts(rounds).tolist() == [0, 1, 2, 3]


def test_more_workers_than_devices_says_how_to_simulate_devices():
    rule = build_rule("downpour", learning_rate=0.01)
    with pytest.raises(ConfigError, match="xla_force_host_platform_device_count=64"):
        run_pmap(rule, beale(), round_robin_trace(64, 2))


def test_a_trace_of_the_wrong_kind_is_refused():
    rule = build_rule("synchronous_sgd", learning_rate=0.01)
    with pytest.raises(ConfigError, match="RoundTrace"):
        run_pmap(rule, beale(), round_robin_trace(1, 2))
    with pytest.raises(ConfigError, match="local_steps"):
        run_pmap(build_rule("agn", learning_rate=0.01, local_steps=2), beale(),
                 round_robin_trace(1, 2))
    with pytest.raises(ConfigError, match="sync_every"):
        run_pmap(build_rule("downpour", learning_rate=0.01), beale(), round_robin_trace(1, 2),
                 sync_every=17)


def test_one_device_sequential_sgd_with_a_mismatched_checkpoint(tmp_path):
    rule = build_rule("sequential_sgd", learning_rate=0.01)
    trace = round_robin_trace(1, 10)
    path = tmp_path / "seq.npz"
    run = run_pmap(rule, beale(), trace, seed=1, noise=0.5, checkpoint=path,
                   checkpoint_every=4)
    want = replay(rule, beale(), trace, seeds=1, noise=0.5, record_every=1)
    np.testing.assert_allclose(run.result.final_params, want.final_params, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(run.result.loss, want.loss, rtol=1e-5, atol=1e-6)
    assert run.segments == 10 and run.wall_time.shape == (10,)
    for field in ("goodput", "goodput_per_device_second"):  # the schedule's, as replayed
        np.testing.assert_array_equal(getattr(run.result, field), getattr(want, field))
    assert run.result.goodput[0] == 1.0
    again = run_pmap(rule, beale(), trace, seed=1, noise=0.5, checkpoint=path, resume=True)
    np.testing.assert_array_equal(again.result.final_params, run.result.final_params)
    with pytest.raises(ConfigError, match="noise"):
        run_pmap(rule, beale(), trace, seed=1, noise=0.7, checkpoint=path, resume=True)


@pytest.mark.slow  # four rules training an MLP on four simulated devices
def test_a_net_problem_matches_the_replay():
    """digits with an MLP: every executor reads the same mini-batches for the same seed,
    so the devices' final parameters and losses are the replay's."""
    report = _report(*_finish(start(SCRIPTS / "pmap_nets.py", 4, devices=4), timeout=480))
    assert report["devices"] == 4
    failures = [f"{c['rule']}:\n{c.get('error')}" for c in report["cases"] if not c["ok"]]
    assert not failures, "\n\n".join(failures)
    assert {c["rule"] for c in report["cases"]} == {"downpour", "agn", "easgd",
                                                    "model_averaging"}
    assert all(c["moved"] > 1e-3 for c in report["cases"])  # the runs did train
def test_child_environment_selects_simulated_cpu_devices():
    from asynclab.backends import child_environment

    env = child_environment(3, {"XLA_FLAGS": "--xla_force_host_platform_device_count=8 "
                                             "--xla_cpu_enable_fast_math=false",
                                "JAX_PLATFORMS": "cuda"})
    assert env["JAX_PLATFORMS"] == "cpu" and env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert env["XLA_FLAGS"].split() == ["--xla_cpu_enable_fast_math=false",
                                        "--xla_force_host_platform_device_count=3"]


def test_simulated_devices_after_jax_started_are_refused():
    import jax

    from asynclab.backends import cpu_devices, simulate_cpu_devices

    jax.devices()  # this process's backends are running
    with pytest.raises(ConfigError, match="before JAX starts"):
        simulate_cpu_devices(len(jax.devices("cpu")) + 1)
    with pytest.raises(ConfigError, match="simulate_cpu_devices"):
        cpu_devices(len(jax.devices("cpu")) + 1)
    with pytest.raises(ConfigError, match="integer"):
        simulate_cpu_devices(0)
