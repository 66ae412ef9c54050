"""Seeds and grid points split over several devices give each run the numbers it has on
one device, to the bit on a CPU (4 simulated CPU devices in a child process)."""

import json
import socket
import subprocess
from pathlib import Path

import pytest
from children import run, start

# the module's child process runs once: every test of the file on one xdist worker
# (30 s of child process: the slow tier; the 2-process device check of
# tests/test_backend_pmap.py stays in the quick one)
pytestmark = [pytest.mark.xdist_group("replay_devices"), pytest.mark.slow]

SCRIPTS = Path(__file__).parent / "backend_scripts"
SCRIPT = SCRIPTS / "replay_devices.py"


@pytest.fixture(scope="module")
def report():
    child = run(SCRIPT, devices=4, timeout=400)
    for line in child.stdout.splitlines():
        if line.startswith("REPORT "):
            return json.loads(line[len("REPORT "):])
    pytest.fail(f"no report from the child\n{child.stdout[-2000:]}\n{child.stderr[-4000:]}")


def test_every_run_is_the_same_on_four_devices_as_on_one(report):
    assert report["devices"] == 4
    assert report["split"] == [1, 4]  # programs over four devices and over one ran
    assert not report["control"]  # the comparison tells other seeds apart
    assert len(report["cases"]) == 6
    for name, case in report["cases"].items():
        assert case["same"], name
    # uneven counts were padded and trimmed: 6 seeds and 3-point calls over 4 devices
    assert report["cases"]["downpour, 6 seeds"]["seeds"] == 6
    assert report["cases"]["diverging adag"]["diverged"] > 0


def test_devices_that_do_not_exist_are_refused_naming_the_field(report):
    for bad, message in report["errors"].items():
        assert message != "accepted", bad
        assert "devices" in message, (bad, message)


@pytest.mark.slow  # two more processes starting JAX; the split itself is tested above
def test_the_command_line_splits_seeds_over_simulated_devices():
    argv = ["-m", "asynclab.cli", "run", "--problem", "beale", "--rule", "downpour",
            "--workers", "3", "--commits", "200", "--noise", "1", "--seeds", "0:5", "--json"]
    split = run(*argv, "--devices", "4", "--simulate-devices")
    alone = run(*argv)
    assert split.returncode == 0 and alone.returncode == 0, split.stderr[-2000:]
    got, want = json.loads(split.stdout), json.loads(alone.stdout)
    assert got["final_loss"] == want["final_loss"] and len(got["final_loss"]) == 5
    refused = run(*argv, "--simulate-devices")
    assert refused.returncode == 2 and "--devices" in refused.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two processes, each compiling every replay for 4 devices and for 1
def test_two_processes_split_the_seeds_over_all_their_devices(tmp_path):
    """After asynclab.backends.initialize, a run spans every process's devices; each
    process sees every seed, and each seed has the numbers it has on one device."""
    out, port = tmp_path / "process.json", _free_port()
    children = [start(SCRIPTS / "replay_hosts.py", p, 2, port, out, devices=2)
                for p in range(2)]
    for child in children:
        try:
            _, err = child.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            child.kill()
            _, err = child.communicate()
            pytest.fail(f"a process did not finish (deadlock?)\n{err[-3000:]}")
        assert child.returncode == 0, err[-4000:]
    reports = [json.loads(Path(f"{out}.{p}").read_text()) for p in range(2)]
    assert [r["process"] for r in reports] == [0, 1]
    for report in reports:
        assert report["devices"] == 4
        assert report["spanning"] == [1, 4]  # programs over all four devices ran
        for name, run_ in report["runs"].items():
            assert run_["same"], (report["process"], name)
    # both processes hold the whole batch, the same numbers
    assert reports[0]["runs"] == reports[1]["runs"]
