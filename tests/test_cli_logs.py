"""The command line with step-time logs: trace inspect, run --trace-log, run --fit-log."""

import json

import numpy as np
import pytest

from asynclab.cli import main
from asynclab.cluster import example_log_path, from_log, read_log, simulate_async


def _json(capsys, *args):
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_trace_inspect_summarises_the_log(capsys):
    out = _json(capsys, "trace", "inspect", "example", "--commits", "5000")
    log = read_log(example_log_path())
    assert out["workers"] == 4 and out["rows"] == log.n_rows and out["local_steps"] == 4
    assert out["columns"] == ["communication", "staleness"]
    for k, w in enumerate(out["per_worker"]):
        # plain numpy on the file: compute + communication per row of worker k
        rows = log.worker == k
        t = log.compute[rows] + log.communication[rows]
        assert w["steps"] == t.size
        assert w["mean"] == pytest.approx(t.mean(), rel=1e-5)
        assert w["p99"] == pytest.approx(np.percentile(t, 99), rel=1e-5)
        assert w["family"] in ("gamma", "lognormal", "shifted_exponential")
        assert set(w["standard_errors"]) == set(w["parameters"])
    s = out["stragglers"]
    assert s["episodes"] == sum(s["episodes_per_worker"]) > 0
    for name in ("measured", "replayed", "fitted", "exponential"):
        assert out["staleness"][name]["mean"] == pytest.approx(3, abs=0.02)
    text_code = main(["trace", "inspect", "example", "--commits", "2000"])
    text = capsys.readouterr().out
    assert text_code == 0 and "Markov chain" in text and "mean τ" in text


def test_trace_inspect_names_the_bad_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("worker,step,start,compute\n0,0,0,0.1\n0,1,0.1,-3\n")
    assert main(["trace", "inspect", str(bad)]) == 2
    assert "line 3, column 'compute'" in capsys.readouterr().err


def test_run_replays_the_log_and_stops_or_wraps(capsys):
    out = _json(capsys, "run", "--trace-log", "example", "--commits", "400", "--rule",
                "downpour", "--local-steps", "4")
    assert out["workers"] == 4 and out["events"] == 400
    # the same schedule, simulated apart from the command line
    trace = simulate_async(from_log(example_log_path()), local_steps=4, commits=400)
    np.testing.assert_array_equal(out["staleness_histogram"], np.bincount(trace.staleness))
    assert out["simulated_time"] == [pytest.approx(trace.time[-1])]
    # a budget longer than the log: stop ends with the log, wrap fills the budget
    rows = read_log(example_log_path()).n_rows
    stopped = _json(capsys, "run", "--trace-log", "example", "--commits", "10000",
                    "--local-steps", "4")
    assert rows - 10 <= stopped["events"] < rows
    wrapped = _json(capsys, "run", "--trace-log", "example", "--commits", "10000",
                    "--local-steps", "4", "--log-end", "wrap")
    assert wrapped["events"] == 10_000


@pytest.mark.slow  # a log's replay from the command line runs quick just above
def test_a_log_cluster_runs_to_a_horizon(capsys):
    """A horizon in simulated seconds, with a log's own times or times fitted to it: the
    schedule is the one simulated apart, cut at the horizon."""
    replayed = _json(capsys, "run", "--trace-log", "example", "--horizon", "3")
    trace = simulate_async(from_log(example_log_path()), horizon=3.0)
    assert replayed["events"] == trace.n_events > 0
    assert replayed["simulated_time"] == [pytest.approx(trace.time[-1])]
    assert trace.time[-1] <= 3.0
    fitted = _json(capsys, "run", "--fit-log", "example", "--workers", "6", "--horizon", "3")
    assert fitted["workers"] == 6 and 0 < fitted["simulated_time"][0] <= 3.0


def test_run_with_a_fitted_log_at_another_worker_count(capsys):
    out = _json(capsys, "run", "--fit-log", "example", "--workers", "16", "--commits", "4000")
    assert out["workers"] == 16 and out["events"] == 4000
    assert abs(out["mean_staleness"] - 15) < 0.5


def test_log_flags_refuse_what_they_cannot_do(capsys):
    assert main(["run", "--trace-log", "example", "--workers", "8"]) == 2
    assert "--fit-log LOG --workers 8" in capsys.readouterr().err
    assert main(["run", "--trace-log", "nowhere.csv"]) == 2
    assert "no log file" in capsys.readouterr().err
    assert main(["run", "--trace-log", "example", "--backend", "threads", "--devices", "1"]) == 2
    assert "measures its own" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--trace-log", "example", "--fit-log", "example"])
