"""The command line: summaries, JSON, clear errors instead of tracebacks."""

import json
import subprocess
import sys

import numpy as np
import pytest

from asynclab.cli import main
from asynclab.cluster import Cluster, ComputeTime, simulate_async


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "asynclab.cli", *args], capture_output=True,
                          text=True, timeout=300)
    return proc


def strict_loads(text: str):
    """JSON as RFC 8259 defines it: NaN and Infinity are not numbers there."""
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_strict_json_names_every_non_finite_value():
    from asynclab.cli import strict_json

    text = strict_json({"loss": [0.5, float("inf"), np.float32("nan")], "time": -np.inf,
                        "nested": {"start": [1.0, float("-inf")]}, "count": np.int64(3)})
    out = strict_loads(text)
    assert out["loss"] == [0.5, None, None] and out["time"] is None and out["count"] == 3
    assert out["nested"] == {"start": [1.0, None]}
    assert out["non_finite"] == {"loss[1]": "inf", "loss[2]": "nan", "time": "-inf",
                                 "nested.start[1]": "-inf"}
    assert "non_finite" not in strict_loads(strict_json({"loss": [0.5]}))


def test_json_run_has_the_documented_fields(capsys):
    code = main(["run", "--problem", "beale", "--rule", "downpour", "--workers", "8",
                 "--compute", "exponential", "--commits", "3000", "--seed", "0", "--json",
                 "--noise", "10"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("final_loss", "mean_staleness", "staleness_histogram", "simulated_time",
                "diverged", "final_params"):
        assert key in out
    assert out["diverged"] == [False]  # one seed: a list of one, like every per-seed field
    hist = np.array(out["staleness_histogram"])
    assert hist.sum() == 3000
    assert out["mean_staleness"] == pytest.approx(np.average(np.arange(hist.size), weights=hist))
    # the run's schedule is the simulator's for this cluster and seed, simulated apart
    trace = simulate_async(Cluster(8, ComputeTime("exponential")), commits=3000, rng=0)
    np.testing.assert_array_equal(hist, np.bincount(trace.staleness, minlength=hist.size))
    assert out["mean_staleness"] == pytest.approx(trace.staleness.mean())
    assert out["simulated_time"] == [pytest.approx(trace.time[-1])]
    assert abs(out["mean_staleness"] - 7) < 0.3
    assert len(out["final_params"]) == 1 and len(out["final_params"][0]) == 2


#: What --json holds once per seed (a list of one for one seed).
PER_SEED = ("final_loss", "simulated_time", "diverged", "diverged_at", "success",
            "final_params", "center_share", "goodput", "goodput_per_device_second")


def test_json_has_one_shape_for_any_number_of_seeds_and_records_the_settings(capsys):
    argv = ["run", "--rule", "downpour", "--workers", "3", "--commits", "30", "--noise",
            "2", "--compute", "lognormal", "--compute-shape", "0.5", "--server-time", "0.2",
            "--server-distribution", "exponential", "--mtbf", "40", "--mttr", "4"]
    outs = {}
    for seeds in (["--seed", "1"], ["--seeds", "1,2"]):
        assert main([*argv, *seeds, "--json"]) == 0
        outs[len(seeds[1].split(","))] = json.loads(capsys.readouterr().out)
    one, two = outs[1], outs[2]
    assert set(one) == set(two)
    for key in PER_SEED:
        assert isinstance(one[key], list) and len(one[key]) == 1, key
        assert isinstance(two[key], list) and len(two[key]) == 2, key
        assert one[key][0] == two[key][0], key  # seed 1 is seed 1 either way
    assert len(one["final_params"][0]) == 2 and len(one["center_share"][0]) == 3
    # the settings that shaped the run, as given
    assert one["noise"] == 2.0
    assert one["compute"] == {"distribution": "lognormal", "mean": 1.0, "shape": 0.5}
    assert one["server"] == {"distribution": "exponential", "mean": 0.2, "shape": 1.0}
    assert one["failures"] == {"mtbf": 40.0, "mttr": 4.0}
    assert one["semisync"] is None and one["stragglers"] == [] and one["time_scale"] is None
    assert main([*argv, "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "noise σ² = 2.0" in text
    assert ("cluster: compute lognormal, mean 1 s per local step, shape 0.5; server "
            "exponential, mean 0.2 s per exchange; failures: Poisson churn, MTBF 40 s, "
            "MTTR 4 s per worker") in text
    assert main(["run", "--rule", "synchronous_sgd", "--workers", "4", "--quorum", "3",
                 "--deadline", "2", "--commits", "10"]) == 0
    text = capsys.readouterr().out
    assert "semi-synchronous rounds: quorum K = 3, deadline 2 s; late work discarded" in text
    assert "cluster: compute exponential, mean 1 s per local step; server 0 s per exchange; " \
           "no failures" in text


def test_human_summary_and_plot_and_save(tmp_path, capsys):
    png, npz = tmp_path / "run.png", tmp_path / "run.npz"
    assert main(["run", "--workers", "4", "--commits", "500", "--plot", str(png),
                 "--save", str(npz)]) == 0
    text = capsys.readouterr().out
    assert "mean staleness" in text and "final central loss" in text
    assert png.stat().st_size > 10_000
    from asynclab.engine import Result

    assert Result.load(npz).n_events == 500


def test_rules_lists_every_rule(capsys):
    from asynclab.rules import RULES

    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    # a rule's line starts with its name ("easgd" is inside "aeasgd": compare whole words)
    listed = [line.split()[0] for line in out.splitlines()
              if line and not line[0].isspace() and line.split()[0] in RULES]
    assert listed == list(RULES)


def test_param_the_rule_does_not_have_is_an_error(capsys):
    code = main(["run", "--rule", "downpour", "--param", "gamma=1", "--commits", "50"])
    assert code == 2
    err = capsys.readouterr().err
    assert "gamma" in err and "downpour" in err
    code = main(["run", "--rule", "downpour", "--param", "local_steps=3", "--commits", "50"])
    assert code == 2
    assert "--local-steps" in capsys.readouterr().err
    assert main(["run", "--param", "oops", "--commits", "5"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_a_bad_input_in_a_fresh_process_is_one_line_and_exit_2():
    # the in-process table in test_bad_inputs.py covers the messages; this checks what only
    # a real process shows: the exit status and nothing but the one line on stderr
    proc = run_cli("run", "--workers", "0")
    assert proc.returncode == 2
    assert proc.stderr.startswith("asynclab: error:") and "--workers" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_divergence_exits_zero_and_says_so(capsys):
    argv = ["run", "--problem", "quadratic", "--dim", "10", "--rule", "downpour",
            "--workers", "8", "--learning-rate", "0.5", "--commits", "2000"]
    assert main([*argv, "--json"]) == 0
    out = strict_loads(capsys.readouterr().out)
    assert out["diverged"] == [True] and out["diverged_at"][0] > 0
    assert out["final_loss"] == [None]  # a diverged run has no final loss
    assert main(argv) == 0
    assert "DIVERGED" in capsys.readouterr().out


def test_demo_prints_a_summary_and_writes_a_plot(tmp_path, capsys):
    png = tmp_path / "demo.png"
    assert main(["demo", "--out", str(png), "--commits", "2000"]) == 0
    assert "mean staleness" in capsys.readouterr().out
    assert png.stat().st_size > 10_000


@pytest.mark.slow  # a figure's quick build, ~6 s, like every figure's in the slow tier
def test_figures_build_into_the_current_folder_outside_a_checkout(tmp_path, monkeypatch,
                                                                   capsys):
    # an installed package: no figures/ folder here, so the figure lands where we stand
    monkeypatch.chdir(tmp_path)
    assert main(["figures", "staleness", "--quick"]) == 0
    assert (tmp_path / "staleness.png").stat().st_size > 20_000
    assert (tmp_path / "data" / "staleness.npz").is_file()
    assert "1 figure(s)" in capsys.readouterr().out


def test_rule_hyperparameters_reach_the_rule(capsys):
    assert main(["run", "--rule", "adag", "--param", "gamma=0.5", "--param", "norm=true",
                 "--commits", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hyperparameters"]["gamma"] == 0.5 and out["hyperparameters"]["norm"] is True
    assert main(["run", "--rule", "mixed", "--workers", "6", "--param", "group_size=3",
                 "--param", "between=dynsgd", "--commits", "40", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hyperparameters"]["group_size"] == 3
    # two groups commit: the run's schedule is the simulator's for groups of 3, simulated
    # apart, whose closed-loop mean staleness is G − 1 = 1
    trace = simulate_async(Cluster(6, ComputeTime("exponential"), group_size=3), commits=40,
                           rng=0)
    hist = np.bincount(trace.staleness)
    np.testing.assert_array_equal(out["staleness_histogram"], hist)
    assert out["mean_staleness"] == pytest.approx(trace.staleness.mean())
    assert out["mean_staleness"] == pytest.approx(1.0, abs=0.1)


def test_sweep_json_is_strict_where_no_point_reaches_the_target(capsys):
    # commits to an unreachable target are infinite: null in strict JSON
    assert main(["sweep", "--rule", "downpour", "--workers", "2", "--commits", "50",
                 "--grid", "learning_rate=1e-6,1e-3", "--score", "commits_to_target",
                 "--target", "1e-9", "--json"]) == 0
    out = strict_loads(capsys.readouterr().out)
    assert [p["score"] for p in out["points"]] == [None, None]


def test_the_names_in_the_help_are_the_registries():
    from asynclab import _names, cluster, engine, figures

    assert _names.DISTRIBUTIONS == tuple(cluster.DISTRIBUTIONS)
    assert _names.INITS == tuple(engine.INITS)
    assert _names.FIGURES == tuple(figures.FIGURES)


def test_the_help_imports_no_simulator_optimizer_or_drawing():
    # `asynclab --help` builds every parser: it must not import SimPy, optax, SciPy,
    # matplotlib or the figures (each costs a large part of a second at start-up)
    import subprocess
    import sys

    code = ("import sys, asynclab.cli as c; c.build_parser().format_help(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'simpy', 'optax', 'scipy', 'matplotlib'}), "
            "sorted(m for m in sys.modules if m.startswith('asynclab.figures')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[] []", out


def test_building_the_parser_imports_no_jax_and_the_help_names_every_problem():
    # every command builds the parser: it must not pay for JAX; the help, when shown,
    # names the registered problems and the options they take
    code = "import sys, asynclab.cli as c; c.build_parser(); print('jax' in sys.modules)"
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert built == "False"
    shown = subprocess.run([sys.executable, "-m", "asynclab.cli", "run", "--help"],
                           capture_output=True, text=True, check=True).stdout
    from asynclab import problems

    flat = " ".join(shown.split())
    assert "problem: " + ", ".join(problems.PROBLEMS) in flat
    assert "dimension (quadratic, linear_regression;" in flat
    assert "digits/mnist/collider: iid, class or dirichlet:ALPHA" in flat


@pytest.mark.slow  # several seconds; the quick tier keeps its 5-minute budget
def test_a_long_run_reports_progress_lines_on_stderr_with_json(capsys, monkeypatch):
    # stderr is a pipe here, not a terminal: lines (no in-place redraws), every
    # ASYNCLAB_PROGRESS_SECONDS, while stdout holds the JSON alone
    import os
    import subprocess
    import sys

    argv = [sys.executable, "-m", "asynclab.cli", "run", "--problem", "digits", "--workers",
            "4", "--commits", "1500", "--seeds", "0:2", "--json"]
    env = {**os.environ, "ASYNCLAB_PROGRESS_SECONDS": "0.3", "ASYNCLAB_COMPILE_CACHE": ""}
    env.pop("TQDM_DISABLE", None)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["events"] == 1500
    lines = proc.stderr.splitlines()
    assert "\r" not in proc.stderr
    assert lines and all(line.startswith("downpour x2: ") for line in lines), lines
    assert lines[0] == "downpour x2: compiling…"  # the first compilation takes > 0.3 s
    assert lines[-1].startswith("downpour x2: 100%") and "3.00k/3.00k" in lines[-1]
    # a run shorter than the interval (5 s by default) says nothing; pytest's captured
    # stderr is not a terminal either
    monkeypatch.setenv("ASYNCLAB_PROGRESS_SECONDS", "5")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert main(["run", "--commits", "50", "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_a_bar_hidden_on_closing_draws_its_last_state_first():
    # a notebook keeps the last text a bar drew: a bar closed with leave=False between two
    # timed redraws must draw "10/10" before it goes, not stay at its last redraw
    import io

    from asynclab._progress import progress_bar

    buffer = io.StringIO()
    with progress_bar(total=10, progress=True, leave=False, file=buffer,
                      mininterval=3600, miniters=10**9) as bar:
        for _ in range(10):
            bar.update(1)
        assert "10/10" not in buffer.getvalue()
    assert "10/10" in buffer.getvalue()
