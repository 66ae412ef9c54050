"""Timelines of a run: the simulator's activity record, its drawing and its exports
(Perfetto trace JSON, JSON lines), checked against a tiny cluster worked out by hand."""

import json

import numpy as np
import pytest

from asynclab import ConfigError
from asynclab.cli import main
from asynclab.cluster import (
    KINDS,
    Cluster,
    ComputeTime,
    Link,
    Straggler,
    export_trace,
    simulate_async,
    simulate_sync,
    simulate_sync_with_warmup,
    trace_events,
    trace_from_order,
    trace_records,
)

# Two workers, 1 s per local step, 0.25 s on the link each way, 0.5 s of service at the
# server; worker 1's second step (step 1) takes 2 s longer. Dyadic numbers: exact sums.
TINY = Cluster(2, ComputeTime("constant", mean=1.0), network=Link(latency=0.25),
               server_time=0.5, stragglers=(Straggler(worker=1, delay=2.0, at_step=1),))

# By hand. Both compute [0, 1] and send [1, 1.25]; worker 0 is served [1.25, 1.75]
# (commit 0), worker 1 waits for it and is served [1.75, 2.25] (commit 1). Worker 0:
# reply [1.75, 2], compute [2, 3], send, served [3.25, 3.75] (commit 2), again: commit 3
# at 5.75, then reply [5.75, 6] and compute from 6 (cut at the end, 6.25). Worker 1:
# reply [2.25, 2.5], compute 1 + 2 s (the straggler) [2.5, 5.5], send [5.5, 5.75], the
# server is free at 5.75: served [5.75, 6.25] (commit 4).
C, M, W = "compute", "communicate", "wait"
ASYNC = {0: [(C, 0, 1), (M, 1, 1.25), (M, 1.25, 1.75), (M, 1.75, 2), (C, 2, 3),
             (M, 3, 3.25), (M, 3.25, 3.75), (M, 3.75, 4), (C, 4, 5), (M, 5, 5.25),
             (M, 5.25, 5.75), (M, 5.75, 6), (C, 6, 6.25)],
         1: [(C, 0, 1), (M, 1, 1.25), (W, 1.25, 1.75), (M, 1.75, 2.25), (M, 2.25, 2.5),
             (C, 2.5, 5.5), (M, 5.5, 5.75), (M, 5.75, 6.25)]}
ASYNC_TIMES = [1.75, 2.25, 3.75, 5.75, 6.25]
ASYNC_WORKERS = [0, 1, 0, 0, 1]
ASYNC_STALENESS = [0, 1, 1, 0, 2]  # commit t pulled at the worker's previous commit + 1


def _intervals(activity):
    out = {}
    for k, code, s, e in zip(activity.worker, activity.kind, activity.start, activity.end,
                             strict=True):
        out.setdefault(int(k), []).append((KINDS[code], float(s), float(e)))
    return out


def test_activity_of_a_tiny_cluster_by_hand():
    trace = simulate_async(TINY, commits=5, activity=True)
    assert trace.time.tolist() == ASYNC_TIMES and trace.worker.tolist() == ASYNC_WORKERS
    assert trace.staleness.tolist() == ASYNC_STALENESS
    assert _intervals(trace.activity) == ASYNC
    # the straggler's delay is noted on its compute interval, nowhere else
    a = trace.activity
    assert a.delay[a.delay > 0].tolist() == [2.0]
    assert (a.worker[a.delay > 0].tolist(), a.start[a.delay > 0].tolist()) == ([1], [2.5])


def test_synchronous_rounds_by_hand():
    """Round 0: both served one after the other, the aggregate at 2.25; worker 0 waits
    for it from 1.75. Round 1: worker 1's straggling step ends at 5.5, aggregate at 6.25."""
    trace = simulate_sync(TINY, rounds=2, activity=True)
    assert trace.time.tolist() == [2.25, 6.25]
    assert _intervals(trace.activity) == {
        0: [(C, 0, 1), (M, 1, 1.25), (M, 1.25, 1.75), (W, 1.75, 2.25), (M, 2.25, 2.5),
            (C, 2.5, 3.5), (M, 3.5, 3.75), (M, 3.75, 4.25), (W, 4.25, 6.25)],
        1: [(C, 0, 1), (M, 1, 1.25), (W, 1.25, 1.75), (M, 1.75, 2.25), (M, 2.25, 2.5),
            (C, 2.5, 5.5), (M, 5.5, 5.75), (M, 5.75, 6.25)]}


@pytest.mark.parametrize("cluster", [
    Cluster(5, ComputeTime("exponential"), server_time=0.1, network=Link(latency=0.05),
            stragglers=(Straggler(worker=3, delay=4.0, at_time=2.0),)),
    Cluster(6, ComputeTime("lognormal", shape=0.5), group_size=3, intra_group_time=0.2),
], ids=["queue", "groups"])
def test_activity_changes_no_number_and_tiles_each_worker(cluster):
    for simulate, budget in ((simulate_async, {"commits": 60}), (simulate_sync, {"rounds": 8})):
        plain = simulate(cluster, rng=3, **budget)
        traced = simulate(cluster, rng=3, activity=True, **budget)
        assert plain.activity is None
        for field in plain._fields:
            if field != "activity":
                np.testing.assert_array_equal(getattr(traced, field), getattr(plain, field))
        seconds = traced.activity.seconds()
        assert seconds.shape == (traced.n_workers, len(KINDS))
        np.testing.assert_allclose(seconds.sum(axis=1), traced.time[-1], rtol=1e-12)
        assert np.all(traced.activity.end > traced.activity.start)


def test_warmup_rounds_join_their_activity_in_time():
    trace = simulate_sync_with_warmup(TINY, warmup_rounds=1, local_steps=2, rounds=2, rng=0,
                                      activity=True)
    np.testing.assert_allclose(trace.activity.seconds().sum(axis=1), trace.time[-1])
    assert trace.activity.start.min() == 0.0 and trace.activity.end.max() == trace.time[-1]


def test_perfetto_events_against_the_hand_worked_cluster():
    events = json.loads(json.dumps(trace_events(simulate_async(TINY, commits=5,
                                                               activity=True))))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {0: "server", 1: "worker 0", 2: "worker 1"}
    for k, expected in ASYNC.items():
        got = [(e["cat"], e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6) for e in events
               if e["ph"] == "X" and e["tid"] == k + 1]
        assert [g[0] for g in got] == [x[0] for x in expected]
        np.testing.assert_allclose([g[1:] for g in got], [x[1:] for x in expected])
    straggling = [e for e in events if e["ph"] == "X" and "args" in e]
    assert [(e["name"], e["tid"], e["args"]["straggler_delay_s"]) for e in straggling] == [
        ("compute (straggler)", 2, 2.0)]
    commits = [e for e in events if e["ph"] == "i"]
    assert [e["ts"] / 1e6 for e in commits] == pytest.approx(ASYNC_TIMES)
    assert [e["tid"] - 1 for e in commits] == ASYNC_WORKERS
    assert [e["args"]["staleness"] for e in commits] == ASYNC_STALENESS
    assert all(e["pid"] == 1 and e["s"] == "t" for e in commits)


def test_json_lines_against_the_hand_worked_cluster(tmp_path):
    path = export_trace(simulate_async(TINY, commits=5, activity=True), tmp_path / "t.jsonl",
                        format="jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    head, rest = lines[0], lines[1:]
    assert head["type"] == "trace" and head["schedule"] == "asynchronous"
    assert (head["n_workers"], head["events"], head["duration"]) == (2, 5, 6.25)
    intervals = [r for r in rest if r["type"] == "interval"]
    assert {k: [(r["kind"], r["start"], r["end"]) for r in intervals if r["worker"] == k]
            for k in (0, 1)} == ASYNC
    commits = [r for r in rest if r["type"] == "commit"]
    assert [(r["time"], r["worker"], r["staleness"]) for r in commits] == list(
        zip(ASYNC_TIMES, ASYNC_WORKERS, ASYNC_STALENESS, strict=True))
    assert len(intervals) + len(commits) == len(rest)
    # a synchronous trace: one line per round; a trace without activity: commits only
    rounds = trace_records(simulate_sync(TINY, rounds=2))
    assert [(r["type"], r["time"]) for r in rounds[1:]] == [("round", 2.25), ("round", 6.25)]
    ordered = trace_records(trace_from_order([0, 1, 0], 2))
    assert [r["type"] for r in ordered] == ["trace", "commit", "commit", "commit"]


def test_timeline_figure_structure():
    from asynclab.plot import timeline

    trace = simulate_async(TINY, commits=5, activity=True)
    fig = timeline(trace)
    main_ax, side = fig.axes[:2]
    labels = sorted(c.get_label() for c in main_ax.collections)
    assert labels == ["commit", "communicate", "compute", "straggler", "wait"]
    kinds = {c.get_label(): c for c in main_ax.collections}
    # one rectangle per interval of the kind (the straggling compute one apart)
    a = trace.activity
    assert len(kinds["compute"].get_paths()) == np.sum((a.kind == 0) & (a.delay == 0))
    assert len(kinds["straggler"].get_paths()) == 1
    marks = kinds["commit"]
    np.testing.assert_array_equal(marks.get_offsets(), np.c_[ASYNC_TIMES, ASYNC_WORKERS])
    np.testing.assert_array_equal(marks.get_array(), ASYNC_STALENESS)
    assert len(fig.axes) == 3  # the timeline, the shares per kind, the staleness bar
    assert len(side.patches) == 2 * 3  # a bar per worker and kind present
    # synchronous, without activity: one panel, every worker marked at every round
    fig = timeline(simulate_sync(TINY, rounds=2))
    (ax,) = fig.axes
    assert ax.collections[0].get_offsets().shape == (2 * 2, 2)


def test_trace_show_and_export_commands(tmp_path, capsys):
    flags = ["--workers", "2", "--compute", "constant", "--transfer-time", "0.25",
             "--server-time", "0.5", "--commits", "5"]
    assert main(["trace", "export", *flags, "--out", str(tmp_path / "t.json")]) == 0
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    by_hand = simulate_async(Cluster(2, ComputeTime("constant"), network=Link(latency=0.25),
                                     server_time=0.5), commits=5)
    commits = [e for e in events if e["ph"] == "i"]
    assert [e["ts"] / 1e6 for e in commits] == pytest.approx(by_hand.time.tolist())
    assert main(["trace", "export", *flags, "--format", "jsonl",
                 "--out", str(tmp_path / "t.jsonl")]) == 0
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["events"] == 5
    assert main(["trace", "show", "--rule", "model_averaging", "--commits", "3",
                 "--out", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["trace", "export", "--server-time", "-1"], "--server-time must be >= 0"),
    (["trace", "export", "--straggler", "7:1:1"], "must be in [0, 3]"),
    (["trace", "export", "--out", "t.png"], "unsupported file type '.png'"),
    (["trace", "show", "--out", "t.txt"], "unsupported file type '.txt'"),
    (["trace", "export", "--trace-log", "example", "--compute", "gamma"],
     "the log gives the compute times"),
    (["trace", "export", "--compute-shape", "2"], "--compute-shape applies to"),
])
def test_trace_commands_refuse_bad_input(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_trace_commands_refuse_to_overwrite_and_bad_straggler(tmp_path, capsys):
    (tmp_path / "t.json").write_text("{}")
    assert main(["trace", "export", "--out", str(tmp_path / "t.json")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "t.json").read_text() == "{}"
    with pytest.raises(SystemExit) as stop:
        main(["trace", "show", "--straggler", "1:2"])
    assert stop.value.code == 2 and "WORKER:AT:DELAY" in capsys.readouterr().err


def test_library_refusals(tmp_path):
    trace = simulate_async(TINY, commits=3)
    with pytest.raises(ConfigError, match="format must be one of perfetto, jsonl"):
        export_trace(trace, tmp_path / "t.json", format="csv")
    with pytest.raises(ConfigError, match="give a Trace or a RoundTrace"):
        trace_events({"time": [1.0]})
    with pytest.raises(ConfigError, match="activity must be True or False"):
        simulate_async(TINY, commits=3, activity="yes")
    with pytest.raises(ConfigError, match="timeline draws a Trace"):
        from asynclab.plot import timeline

        timeline([1, 2])
