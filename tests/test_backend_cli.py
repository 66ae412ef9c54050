"""`asynclab run --backend pmap`: runs, checkpoints, and clear errors."""

import json
import subprocess
import sys

import pytest

from asynclab.cli import main


def cli(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "asynclab.cli", "run", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow  # 11 s of child processes; the refusals of --backend pmap stay quick
def test_pmap_backend_from_the_command_line(tmp_path, capsys):
    common = ["--backend", "pmap", "--devices", "2", "--simulate-devices", "--rule", "dynsgd",
              "--commits", "60", "--noise", "1", "--json"]
    plain = cli(*common)
    assert plain.returncode == 0, plain.stderr[-2000:]
    out = json.loads(plain.stdout)
    assert out["backend"] == "pmap" and out["events"] == 60 and out["segments"] > 0
    # the same trace and seed through the simulator's replay give the same numbers
    # (the simulator needs no simulated devices: it runs in this process)
    assert main(["run", "--rule", "dynsgd", "--workers", "2", "--commits", "60", "--noise",
                 "1", "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    for a, b in zip(sim["final_params"][0], out["final_params"][0], strict=True):
        assert abs(a - b) < 1e-5
    checkpoint = tmp_path / "run.npz"
    first = cli(*common, "--checkpoint", str(checkpoint), "--checkpoint-every", "5")
    assert first.returncode == 0 and checkpoint.exists()
    resumed = cli(*common, "--checkpoint", str(checkpoint), "--resume")
    assert resumed.returncode == 0
    assert json.loads(resumed.stdout)["final_params"] == out["final_params"]
    other = cli(*[a if a != "1" else "2" for a in common], "--checkpoint", str(checkpoint),
                "--resume")
    assert other.returncode == 2 and "noise" in other.stderr and "Traceback" not in other.stderr


def test_pmap_backend_errors():
    proc = cli("--backend", "pmap", "--devices", "64", "--commits", "10")
    assert proc.returncode == 2
    assert "xla_force_host_platform_device_count=64" in proc.stderr
    proc = cli("--backend", "pmap", "--devices", "2", "--simulate-devices", "--seeds", "0:3")
    assert proc.returncode == 2 and "one seed" in proc.stderr
