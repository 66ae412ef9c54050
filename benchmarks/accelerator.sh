#!/usr/bin/env bash
# The accelerator checks in one run, most important first, each bounded in time
# (REPLAY_SECONDS, NETS_SECONDS, PEERS_SECONDS, SUITE_SECONDS), each writing its table
# under $OUT (default: ./accelerator-results): the engine's accelerator rows with the whole
# Monte-Carlo figure (and the figure again on the CPU's shared programs, STEPWISE_SECONDS),
# the net beside its hand-written floor at 1, 32 and 1,024 seeds, the
# peer's workload at 1 and 1,024 seeds (asynclab's rows; the peer itself runs on a CPU),
# per-seed schedules for 10,000 seeds and the Monte-Carlo run over them
# (SCHEDULES_SECONDS), then the quick tier of the suite on the accelerator host
# (SUITE_WORKERS processes).
#
#     bash benchmarks/accelerator.sh            # on a machine with a GPU and CUDA jax
#
# The checkout must be importable (pip install -e ., or PYTHONPATH=$PWD).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-accelerator-results}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# each script's dated table (benchmarks/_results.py) comes back with the rest: the
# newest file of benchmarks/results/ is a script's latest table once copied there
export ASYNCLAB_BENCHMARK_RESULTS="${ASYNCLAB_BENCHMARK_RESULTS:-$out/results}"
py="${PYTHON:-python3}"
{
  date -u +%FT%T
  nvidia-smi -L 2>/dev/null
  "$py" -c "import jax, numpy; print('jax', jax.__version__, 'numpy', numpy.__version__, jax.devices())"
} 2>&1 | tee "$out/environment.txt"
# XLA's compilations (with their times) go to compiles.txt, with anything else on stderr:
# how the Monte-Carlo figure's time splits between compiling and running
JAX_LOG_COMPILES=1 timeout "${REPLAY_SECONDS:-200}" "$py" benchmarks/replay.py --rows gifh \
  --mc full 2>"$out/compiles.txt" | tee "$out/replay.txt"
grep -c "Finished XLA compilation" "$out/compiles.txt" | sed 's/^/XLA compilations: /' \
  | tee -a "$out/replay.txt"
# the figure again on the programs the CPU shares (step by step, padded worker axes):
# fewer compilations, more work per step; which wins on an accelerator
JAX_LOG_COMPILES=1 timeout "${STEPWISE_SECONDS:-120}" "$py" benchmarks/replay.py --rows g \
  --mc full --mc-stepwise on 2>"$out/compiles-stepwise.txt" | tee "$out/replay-stepwise.txt"
grep -c "Finished XLA compilation" "$out/compiles-stepwise.txt" \
  | sed 's/^/XLA compilations: /' | tee -a "$out/replay-stepwise.txt"
timeout "${NETS_SECONDS:-180}" "$py" benchmarks/nets.py --seeds 32,1024 2>&1 | tee "$out/nets.txt"
# 1,024 seeds of the peer's CNN need ~108 GB at once (60 MB of state and 45 MB of
# temporaries each): replayed 256 at a time (the plain-JAX rows, all seeds at once, are skipped)
timeout "${PEERS_SECONDS:-150}" "$py" benchmarks/peers.py --seeds 1,1024 \
  --updates "${PEERS_UPDATES:-20}" --runs-per-call "${PEERS_RUNS_PER_CALL:-256}" --no-by-hand 2>&1 \
  | tee "$out/peers.txt"
# schedules drawn for 10,000 seeds at once, and the run over them beside one shared schedule
timeout "${SCHEDULES_SECONDS:-200}" "$py" benchmarks/schedules.py --seeds 10000 2>&1 \
  | tee "$out/schedules.txt"
# one line per test (the names survive a cut at the time limit), failures' tracebacks short
timeout "${SUITE_SECONDS:-400}" "$py" -m pytest -v -n "${SUITE_WORKERS:-8}" --maxprocesses="${SUITE_WORKERS:-8}" --tb=short \
  --durations=15 2>&1 | tee "$out/suite.txt"
