"""`--problem` and `--rule` take one's own code, FILE.py:NAME or MODULE:NAME, imported on
purpose; `asynclab rules --import` lists what a file declares. Nothing else imports code
from a name."""

import json
import sys
import textwrap

import numpy as np
import pytest

import asynclab
from asynclab.cli import main
from asynclab.rules import RULES

OWN = textwrap.dedent('''
    import jax
    import jax.numpy as jnp

    import asynclab
    from asynclab.rules import MOMENTA, declare, parts


    def bowl(p):
        return jnp.sum((p - 1.0) ** 2)


    problem = asynclab.problems.from_loss(bowl, [3.0, -2.0], name="bowl")


    def make_problem():
        return problem


    @declare("async", "DOWNPOUR with the commit halved", "a test", static=("local_steps",),
             state=MOMENTA)
    def halved_downpour(learning_rate: float, local_steps: int = 1,
                        worker_momentum: float | None = None,
                        server_momentum: float | None = None):
        c = parts.common(learning_rate, local_steps, worker_momentum, server_momentum)
        return parts.reset_rule(
            c, lambda w: jax.tree.map(lambda d: d / 2, parts.accumulated_step(w)), parts.add)


    not_a_problem = 3
''')


@pytest.fixture
def own(tmp_path, monkeypatch):
    """A user's file in the working folder; its module and rule are gone afterwards."""
    (tmp_path / "mine.py").write_text(OWN)
    (tmp_path / "broken.py").write_text("1 / 0\n")
    monkeypatch.chdir(tmp_path)
    before, modules = dict(RULES), set(sys.modules)
    yield tmp_path
    RULES.clear()
    RULES.update(before)
    for name in set(sys.modules) - modules:
        sys.modules.pop(name)


def _json(argv, capsys):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_own_problem_and_rule_run_as_from_python(own, capsys):
    """The command line's run is the Python run of the same objects, number for number."""
    out = _json(["run", "--problem", "mine.py:problem", "--rule", "mine.py:halved_downpour",
                 "--workers", "3", "--commits", "120", "--seeds", "0,1", "--noise", "0.5",
                 "--json"], capsys)
    mine = sys.modules["asynclab_own_mine"]
    want = asynclab.run(mine.problem, "halved_downpour", workers=3, commits=120, seeds=[0, 1],
                        noise=0.5, progress=False)
    assert out["rule"] == "halved_downpour" and out["problem"] == "bowl"
    np.testing.assert_array_equal(np.asarray(out["final_loss"], np.float32), want.final_loss)
    # a factory of no arguments gives the problem too, and the file is imported once
    again = _json(["run", "--problem", "mine.py:make_problem", "--rule",
                   "mine.py:halved_downpour", "--workers", "3", "--commits", "120",
                   "--seeds", "0,1", "--noise", "0.5", "--json"], capsys)
    assert again["final_loss"] == out["final_loss"]


def test_a_module_on_the_path_names_its_problem(own, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(own))
    out = _json(["run", "--problem", "mine:problem", "--workers", "2", "--commits", "30",
                 "--json"], capsys)
    assert out["problem"] == "bowl"


def test_rules_lists_what_a_file_declares(own, capsys):
    assert main(["rules", "--import", "mine.py"]) == 0
    listed = capsys.readouterr().out
    assert "halved_downpour" in listed and "DOWNPOUR with the commit halved" in listed


def test_the_help_says_that_the_code_is_imported(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "FILE.py:NAME or MODULE:NAME, imported (its code runs)" in text


@pytest.mark.parametrize(("argv", "words"), [
    (["--problem", "nosuch.py:problem"], ["--problem", "no file 'nosuch.py'"]),
    (["--problem", "mine.py:nope"], ["has no 'nope'", "problem"]),
    (["--problem", "mine.py:not_a_problem"], ["is a int", "not an asynclab.problems.Problem"]),
    (["--rule", "mine.py:problem"], ["is not a declared rule"]),
    (["--problem", "broken.py:x"], ["importing 'broken.py' failed", "ZeroDivisionError"]),
    (["--problem", "nosuchmodule:x"], ["no module 'nosuchmodule'"]),
    (["--problem", "mine.py:problem", "--dim", "3"], ["--dim builds a registered problem"]),
    (["--rule", "mine.py:halved_downpour", "--param", "gamma=1"], ["gamma"]),
])
def test_bad_own_code_is_one_line_before_any_work(own, capsys, argv, words):
    assert main(["run", "--commits", "10", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("asynclab: error:") and "Traceback" not in err
    for word in words:
        assert word in err, (word, err)
