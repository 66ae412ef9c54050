"""Where a benchmark's table goes: printed as it is measured, and written, once the script
has finished, to a dated file of ``benchmarks/results/`` (``DATE-HHMM-MACHINE-SCRIPT.txt``,
e.g. ``2026-11-28-0210-cpu-nets.txt``). The newest file of a script is its latest table;
``benchmarks/README.md`` links it.

``ASYNCLAB_BENCHMARK_RESULTS=FOLDER`` writes the file there instead (``accelerator.sh``
puts it beside its other outputs, which come back from a lent machine). A run that fails
writes nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def folder() -> Path:
    """The folder the tables go to: ``$ASYNCLAB_BENCHMARK_RESULTS`` or benchmarks/results."""
    return Path(os.environ.get("ASYNCLAB_BENCHMARK_RESULTS") or ROOT / "benchmarks" / "results")


def machine() -> str:
    """``cpu``, or the accelerator's short name (``h200`` for an NVIDIA H200), as JAX saw
    it in this process (``cpu`` where JAX was not started)."""
    jax = sys.modules.get("jax")
    if jax is None:
        return "cpu"
    device = jax.devices()[0]
    if device.platform == "cpu":
        return "cpu"
    # the model's name: the first word with a digit ("NVIDIA H200" -> h200)
    words = re.findall(r"[a-z0-9]+", device.device_kind.lower())
    model = next((w for w in words if any(c.isdigit() for c in w)), None)
    if device.platform in ("gpu", "cuda", "rocm"):
        return model or "gpu"
    return f"{device.platform}-{model}" if model else device.platform


def load_average() -> str:
    """The load average (1, 5, 15 min), as the tables print it."""
    return ", ".join(f"{v:.1f}" for v in os.getloadavg())


def commit_of(folder=ROOT) -> str:
    """The commit of the checkout holding ``folder`` (this one by default), and whether it
    has local changes."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder,
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=folder, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "an unknown commit"
    if out.returncode != 0:
        return "an unknown commit"
    return out.stdout.strip() + (" with local changes" if dirty.stdout.strip() else "")


class _Tee:
    """stdout, keeping a copy of what is written."""

    def __init__(self, stream):
        self.stream, self.parts = stream, []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


@contextlib.contextmanager
def recorded(script: str, *, skip: bool = False):
    """Everything printed inside the block, written to the script's dated results file
    when the block ends without an error (nothing with ``skip``, e.g. a child process
    whose output its parent reads)."""
    if skip:
        yield
        return
    started, load = datetime.datetime.now(), load_average()
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        yield
    finally:
        sys.stdout = tee.stream
    text = "".join(tee.parts)
    if not text.strip():
        return
    command = " ".join(["python", f"benchmarks/{script}.py", *sys.argv[1:]])
    header = (f"# {command}\n# {started:%Y-%m-%d %H:%M}, at {commit_of()}; load average "
              f"(1, 5, 15 min) before {load}, after {load_average()} on {os.cpu_count()} cpus\n")
    target = folder()
    target.mkdir(parents=True, exist_ok=True)
    stem = f"{started:%Y-%m-%d-%H%M}-{machine()}-{script}"
    path, n = target / f"{stem}.txt", 2
    while path.exists():
        path, n = target / f"{stem}-{n}.txt", n + 1
    path.write_text(header + text)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"table written to {shown}", file=sys.stderr)
