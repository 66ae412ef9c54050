"""The one reader and the one writer (``asynclab._files``), walked entry point by entry point.

Every public function that reads a file is entered in ``_files.READERS`` and every one that
writes in ``_files.WRITERS`` (a decorator where it is defined). The tests here take each
class of hostile input or hostile target and try it on every entry of the table, so a new
reader or writer is tried as soon as it is entered; ``test_no_file_call_outside_the_seam``
searches the package for file calls anywhere else, so one that is not entered fails.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import importlib
import inspect
import json
import os
import re
import signal
from pathlib import Path

import numpy as np
import pytest

import asynclab
from asynclab import ConfigError, _files, studies
from asynclab.backends import _checkpoint
from asynclab.cluster import (
    Cluster,
    ComputeTime,
    StepLog,
    export_trace,
    read_availability,
    read_log,
    simulate_async,
    write_log,
)
from asynclab.problems._model import read_arrays

PACKAGE = Path(asynclab.__file__).resolve().parent


@contextlib.contextmanager
def _no_longer_than(seconds: int = 10):
    """Fail, instead of hanging the suite, where a call blocks (a FIFO opened for
    reading waits for a writer)."""

    def stop(signum, frame):
        raise TimeoutError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text, text
    return text


# ----------------------------------------------------------------------------- the tables


def _entered() -> set[tuple[str, str]]:
    """``(module, function)`` of every ``@_files.reads`` / ``@_files.writes`` in the
    source (found in the text, so that no import can hide one); the modules are
    imported, which enters them in the tables."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "@_files.reads(" not in text and "@_files.writes(" not in text:
            continue
        module = ".".join(("asynclab", *path.relative_to(PACKAGE).with_suffix("").parts))
        importlib.import_module(module)
        names = re.findall(r"@_files\.(?:reads|writes)\([^)]*\)\n(?:\s*@[^\n]*\n)*"
                           r"\s*def (\w+)", text)
        assert len(names) == text.count("@_files.reads(") + text.count("@_files.writes(")
        found |= {(module, name) for name in names}
    return found


def test_every_entered_function_is_in_the_tables():
    entered = _entered()
    table = {**_files.READERS, **_files.WRITERS}
    assert len(entered) == len(table) >= 30
    assert {(name.split(".")[0], name.rsplit(".", 1)[-1]) for name in table} == {
        ("asynclab", name) for _, name in entered}
    for name in table:  # each entry names a function that exists
        module, _, qualname = name.rpartition(".")
        while module not in {m for m, _ in entered}:
            module, _, owner = module.rpartition(".")
            qualname = f"{owner}.{qualname}"
        target = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        assert callable(target), name


def _result():
    return asynclab.run("beale", "downpour", workers=2, commits=6)


_TRACE = None


def _trace():
    global _TRACE
    if _TRACE is None:
        _TRACE = simulate_async(Cluster(2, ComputeTime("constant")), commits=4, rng=0,
                                activity=True)
    return _TRACE


def _log() -> StepLog:
    return StepLog(worker=np.array([0, 0, 1, 1]), step=np.array([0, 1, 0, 1]),
                   start=np.array([0.0, 1.0, 0.0, 2.0]), compute=np.array([1.0, 1, 2, 2]),
                   communication=None, available=None, staleness=None, local_steps=1,
                   names=("0", "1"))


#: How each reader is called with a path (the tables' keys, one each).
READERS = {
    "asynclab.engine._result.Result.load": lambda p: asynclab.Result.load(p),
    "asynclab.studies._io.load": lambda p: studies.load(p),
    "asynclab.backends._checkpoint.read": lambda p: _checkpoint.read(p, {"events": 4}),
    "asynclab.cluster._log_read.read_log": lambda p: read_log(p),
    "asynclab.cluster._availability.read_availability": lambda p: read_availability(p),
    "asynclab.problems._model.read_arrays": lambda p: read_arrays(p, "x"),
}


@pytest.fixture(scope="module")
def result():
    return _result()


#: How each writer that is not a drawing is called: ``(suffix, call(path, overwrite))``.
WRITERS = {
    "asynclab.engine._result.Result.save":
        (".npz", lambda p, o, r: r.save(p, overwrite=o)),
    "asynclab.studies._io.save":
        (".npz", lambda p, o, r: studies.save(p, {"x": np.arange(3)}, None, overwrite=o)),
    "asynclab.backends._checkpoint.save":
        (".npz", lambda p, o, r: _checkpoint.save(p, {"rule": "downpour"}, (np.zeros(2),), 1,
                                                  -1, {"loss": np.zeros(1)}, overwrite=o)),
    "asynclab.cluster._export.export_trace":
        (".json", lambda p, o, r: export_trace(_trace(), p, overwrite=o)),
    "asynclab.cluster._log_write.write_log":
        (".csv", lambda p, o, r: write_log(_log(), p, overwrite=o)),
}

#: The drawing every figure test writes for real (the others fail before drawing).
TIMELINE = "asynclab.plot._timeline.timeline"


def _figure_writers() -> dict:
    out = {}
    for name, kind in _files.WRITERS.items():
        if kind != "figure":
            continue
        module, _, qualname = name.rpartition(".")
        function = getattr(importlib.import_module(module), qualname)
        parameters = inspect.signature(function).parameters.values()
        required = [p for p in parameters
                    if p.name != "path" and p.default is inspect.Parameter.empty
                    and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        named = [p.name for p in parameters
                 if p.default is inspect.Parameter.empty and p.kind is p.KEYWORD_ONLY]
        out[name] = (".png", _drawing(function, len(required), named))
    return out


def _drawing(function, blanks: int, named=()):
    """A drawing called with ``path`` (its data: a real trace for the timeline, else
    None, which it never reaches when the path is refused first)."""

    def call(p, o, r):
        if function.__name__ == "timeline":
            return function(_trace(), p, overwrite=o)
        return function(*[None] * blanks, **dict.fromkeys(named), path=p, overwrite=o)

    return call


def _writers() -> dict:
    _entered()  # every module that enters one imported
    return {**WRITERS, **_figure_writers()}


def test_every_entry_point_has_its_recipe_here():
    _entered()
    assert set(READERS) == set(_files.READERS)
    assert set(_writers()) == set(_files.WRITERS)
    figures = [name for name, kind in _files.WRITERS.items() if kind == "figure"]
    assert TIMELINE in figures and len(figures) >= 25
    for name in figures:  # every drawing takes the consent to replace
        module, _, qualname = name.rpartition(".")
        function = getattr(importlib.import_module(module), qualname)
        assert inspect.signature(function).parameters["overwrite"].default is False, name


# ----------------------------------------------------------------------------- readers


def _reader_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    """Hostile inputs every reader refuses: ``name -> (path, words of the message)``."""
    (tmp / "folder").mkdir()
    os.mkfifo(tmp / "fifo.csv")
    (tmp / "empty.csv").write_bytes(b"")
    (tmp / "latin1.csv").write_bytes("worker,down_at,up_at\n# café\n".encode("latin-1"))
    (tmp / "nul.csv").write_bytes(b"\0" * 64)
    with open(tmp / "sparse.csv", "wb") as file:  # 20 GB of nothing, in no disk space
        file.truncate(20 * 10**9)
    (tmp / "long.csv").write_bytes(b"1" * (3 * _files.MAX_LINE))
    return {
        "missing": (tmp / "missing.csv", "missing.csv"),
        "folder": (tmp / "folder", "folder"),
        "fifo": (tmp / "fifo.csv", "FIFO"),
        "device": (Path("/dev/null"), "device"),
        "empty": (tmp / "empty.csv", "empty"),
        "latin-1": (tmp / "latin1.csv", "latin1.csv"),
        "nul": (tmp / "nul.csv", "nul.csv"),
        "sparse 20 GB": (tmp / "sparse.csv", "sparse.csv"),
        "one long line": (tmp / "long.csv", "long.csv"),
        "~user": (Path("~nosuchuser_asynclab/x.csv"), "~nosuchuser_asynclab"),
    }


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return _reader_inputs(tmp_path_factory.mktemp("hostile"))


_INPUTS = ["missing", "folder", "fifo", "device", "empty", "latin-1", "nul", "sparse 20 GB",
           "one long line", "~user"]


@pytest.mark.parametrize("case", _INPUTS)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_every_hostile_input(reader, case, hostile):
    path, word = hostile[case]
    with _no_longer_than(20), pytest.raises(ConfigError) as error:
        READERS[reader](path)
    assert word in _one_line(error)


def test_text_is_utf8_with_or_without_bom_or_gzip_by_its_bytes(tmp_path):
    # the first outage after a byte-order mark is an outage, not a header
    path = tmp_path / "f.csv"
    path.write_bytes(b"\xef\xbb\xbf1,2.0,50.0\n2,3.0,4.5\n")
    assert read_availability(path).schedule == ((1, 2.0, 50.0), (2, 3.0, 4.5))
    # gzip by its magic bytes, whatever the name; a plain .gz is text
    (tmp_path / "g.txt").write_bytes(gzip.compress(b"1,2.0,50.0\n"))
    assert read_availability(tmp_path / "g.txt").schedule == ((1, 2.0, 50.0),)
    (tmp_path / "p.csv.gz").write_bytes(b"worker,step,start,compute\n0,0,0,1\n0,1,1,1\n")
    assert read_log(tmp_path / "p.csv.gz").n_rows == 2
    # latin-1 bytes: one line naming the file and the byte
    (tmp_path / "l.csv").write_bytes(b"1,2.0,50.0\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"l\.csv.*byte 16 \(0xe9\) is not UTF-8"):
        read_availability(tmp_path / "l.csv")


def test_sizes_are_bounded_before_reading(tmp_path, monkeypatch):
    from asynclab import _validate
    from asynclab.cluster import _availability

    path = tmp_path / "huge.csv"
    with open(path, "wb") as file:
        file.truncate(_availability.AVAILABILITY_BYTES + 1)
    with pytest.raises(ConfigError, match="huge.csv.*more than the 67.1 MB"):
        read_availability(path)
    # a gzip bomb: text beyond what memory allows is refused as it expands
    bomb = tmp_path / "bomb.csv"
    bomb.write_bytes(gzip.compress(b"worker,step,start,compute\n" + b"0,0,0,1\n" * 50_000))
    monkeypatch.setattr(_validate, "available_memory", lambda: 200_000)
    with pytest.raises(ConfigError, match="bomb.csv.*memory"):
        read_log(bomb)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_depth_is_measured_before_parsing(tmp_path, result):
    assert _files.json_depth('{"a": [1, {"b": "[[[["}]}') == 3  # brackets in strings: none
    with pytest.raises(ConfigError, match="nests 200000 levels deep"):
        _files.loads_json(_deep(200_000), "header")
    path = result.save(tmp_path / "r.npz")
    with np.load(path) as f:
        members = {name: f[name] for name in f.files}
    deep = json.loads(str(members["config_json"]))
    np.savez(tmp_path / "deep_result.npz", **{**members, "config_json": np.array(
        json.dumps(deep)[:-1] + ', "x": ' + _deep(200_000) + "}")})
    with pytest.raises(ConfigError, match="deep_result.npz.*nests"):
        asynclab.Result.load(tmp_path / "deep_result.npz")
    studies.save(tmp_path / "s.npz", {"x": np.arange(2)})
    with np.load(tmp_path / "s.npz") as f:
        members = {name: f[name] for name in f.files}
    np.savez(tmp_path / "deep_study.npz", **{**members, "__meta__": np.array(_deep(5000))})
    with pytest.raises(ConfigError, match="deep_study.npz.*nests"):
        studies.load(tmp_path / "deep_study.npz")
    _checkpoint.save(tmp_path / "c.npz", {"events": 4}, (np.zeros(2),), 1, -1, {})
    with np.load(tmp_path / "c.npz") as f:
        members = {name: f[name] for name in f.files}
    np.savez(tmp_path / "deep_check.npz", **{**members, "header": np.array(_deep(5000))})
    with pytest.raises(ConfigError, match="deep_check.npz.*nests"):
        _checkpoint.read(tmp_path / "deep_check.npz", {"events": 4})


def _edited(tmp_path, result, name, **changes) -> Path:
    path = result.save(tmp_path / "base.npz", overwrite=True)
    with np.load(path) as f:
        members = {key: f[key] for key in f.files}
    members.update(changes)
    np.savez(tmp_path / name, **members)
    return tmp_path / name


def test_a_result_is_checked_against_its_writers_schema(tmp_path, result):
    back = asynclab.Result.load(result.save(tmp_path / "ok.npz"))
    np.testing.assert_array_equal(back.center_share, result.center_share)
    # 7 columns of shares for 2 workers: a wrong answer that used to load
    wide = _edited(tmp_path, result, "wide.npz", center_share=np.full((1, 7), 1 / 7))
    with pytest.raises(ConfigError, match=r"center_share has 7 columns.*: 2 "):
        asynclab.Result.load(wide)
    config = dict(result.config, workers="2")
    typed = _edited(tmp_path, result, "typed.npz", config_json=np.array(json.dumps(config)))
    with pytest.raises(ConfigError, match=r"'workers' holds text '2'"):
        asynclab.Result.load(typed)
    extra = _edited(tmp_path, result, "extra.npz", surprise=np.zeros(3))
    with pytest.raises(ConfigError, match="unknown member.*surprise"):
        asynclab.Result.load(extra)
    study = studies.save(tmp_path / "s.npz", {"x": np.arange(3)})
    with np.load(study) as f:
        members = {key: f[key] for key in f.files}
    np.savez(tmp_path / "s2.npz", **{**members, "x": np.arange(4)})
    with pytest.raises(ConfigError, match="x holds .* of shape \\(4,\\), its writer recorded"):
        studies.load(tmp_path / "s2.npz")


# ----------------------------------------------------------------------------- writers


def _files_in(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("writer", sorted(set(WRITERS) | {TIMELINE}) + ["figures"])
def test_every_writer_refuses_what_it_must_not_replace(writer, tmp_path, result):
    writers = _writers()
    names = [n for n, k in _files.WRITERS.items() if k == "figure"] if writer == "figures" \
        else [writer]
    for name in names:
        suffix, call = writers[name]
        folder = tmp_path / name.rsplit(".", 1)[-1]
        folder.mkdir()
        mine = folder / f"mine{suffix}"
        mine.write_text("a user's own file\n")
        before = _files_in(folder)
        for overwrite, words in ((False, "already exists"), (True, "nothing was written")):
            with _no_longer_than(20), pytest.raises(ConfigError) as error:
                call(mine, overwrite, result)
            assert words in _one_line(error) and "mine" in str(error.value), name
        os.mkfifo(folder / f"fifo{suffix}")
        with _no_longer_than(20), pytest.raises(ConfigError, match="FIFO"):
            call(folder / f"fifo{suffix}", True, result)
        (folder / f"dir{suffix}").mkdir()
        with pytest.raises(ConfigError, match="folder"):
            call(folder / f"dir{suffix}", True, result)
        with pytest.raises(ConfigError, match="nosuchuser_asynclab") as error:
            call(Path(f"~nosuchuser_asynclab/x{suffix}"), False, result)
        _one_line(error)
        with pytest.raises(ConfigError, match=r"mine\..* is a file, not a folder"):
            call(mine / f"x{suffix}", False, result)
        assert _files_in(folder) == before, name  # nothing changed, nothing left behind


@pytest.mark.parametrize("writer", sorted(set(WRITERS) | {TIMELINE}))
def test_every_writer_replaces_its_own_kind_atomically(writer, tmp_path, result,
                                                        monkeypatch):
    suffix, call = _writers()[writer]
    path = tmp_path / f"out{suffix}"
    call(path, False, result)
    assert path.read_bytes()
    call(path, True, result)  # its own kind: replaced
    second = path.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ConfigError, match="No space left on device") as error:
        call(path, True, result)
    assert "nothing was written" in _one_line(error)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file
    assert path.read_bytes() == second  # the previous file is whole


def test_overwrite_recognises_each_kind_by_content(tmp_path):
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    assert _files.recognise(png, "figure", "path") is None
    fake = tmp_path / "b.png"
    fake.write_text("notes")
    assert "not a .png file" in _files.recognise(fake, "figure", "path")
    js = tmp_path / "t.json"
    js.write_text('{"a":1}')  # the brief's lost data: a .json of someone else
    assert _files.recognise(js, "trace-events", "path") is not None
    export_trace(_trace(), tmp_path / "mine.json")
    assert _files.recognise(tmp_path / "mine.json", "trace-events", "path") is None
    export_trace(_trace(), tmp_path / "mine.jsonl", format="jsonl")
    assert _files.recognise(tmp_path / "mine.jsonl", "trace-records", "path") is None
    write_log(_log(), tmp_path / "l.csv.gz")
    assert _files.recognise(tmp_path / "l.csv.gz", "log", "path") is None
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert _files.recognise(tmp_path / "other.csv", "log", "path") is not None
    (tmp_path / "a.raw").write_bytes(b"\0" * 8)  # raw pixels have no signature
    assert "cannot be recognised" in _files.recognise(tmp_path / "a.raw", "figure", "path")


def test_the_cli_overwrites_only_its_own_json(tmp_path, capsys):
    from asynclab.cli import main

    mine = tmp_path / "mine.json"
    mine.write_text('{"a":1}\n')
    code = main(["trace", "export", "--commits", "5", "--out", str(mine), "--overwrite"])
    assert code == 2 and mine.read_text() == '{"a":1}\n'
    assert "nothing was written" in capsys.readouterr().err
    out = tmp_path / "t.json"
    assert main(["trace", "export", "--commits", "5", "--out", str(out)]) == 0
    assert main(["trace", "export", "--commits", "6", "--out", str(out), "--overwrite"]) == 0
    assert json.loads(out.read_text())[_files.MARKER] == "trace-events 1"


# ----------------------------------------------------------------------------- the seam

#: Calls that reach the file system. Outside ``asynclab/_files`` each needs an entry below.
FILE_CALLS = re.compile(
    r"\bopen\(|\bfdopen\(|\bgzip\.|\bzipfile\.|\bshutil\.|\btempfile\.|\bpickle\b"
    r"|\bnp\.(?:load|save|savez|savez_compressed|loadtxt|genfromtxt|fromfile)\("
    r"|\.tofile\(|\bjson\.loads?\(|(?<!_files)\.(?:read_text|write_text|read_bytes"
    r"|write_bytes)\(|\bsavefig\(|\bpq\.|\bParquetFile\(|\bpacsv\.|\bos\.(?:replace|rename"
    r"|remove|unlink|link|symlink|mkfifo|makedirs|truncate)\(|\.(?:mkdir|unlink|touch"
    r"|symlink_to|rmdir)\(")

#: ``(file, words of the line) -> why it is not a way round the seam``.
ALLOWED = {
    ("_validate.py", 'os.open("/proc/meminfo"'):
        "the system's memory (a pseudo-file, not a user's), read at most 64 KB",
    ("_cache.py", ""): "JAX's compilation cache folder: JAX reads and writes its entries",
    ("cli/_main.py", "os.open(os.devnull"): "stdout pointed at /dev/null after it failed",
    ("backends/_checkpoint.py", "json.loads(json.dumps("):
        "a fingerprint made comparable, not read from a file",
    ("cluster/_log_table.py", "pacsv."): "pyarrow parses the checked stream the reader hands it",
    ("cluster/_log_table.py", "np.loadtxt(io.TextIOWrapper(stream"):
        "numpy parses the checked stream the reader hands it",
    ("cluster/_log_table.py", "pq.ParquetFile(file)"): "a file opened by the reader",
    ("cluster/_log_write.py", "pq.write_table(pa.table("): "into the writer's temporary file",
    ("cluster/_log_write.py", "gzip.GzipFile(fileobj=buffer"): "compresses in memory",
    ("problems/_datasets.py", "np.loadtxt(file"): "a file opened by the reader",
    ("problems/_model.py", "np.load(path, mmap_mode="):
        "a memory-map of a regular file the reader checked, whose first bytes are a .npy "
        "header; numpy reads the header without pickles",
}


def test_no_file_call_outside_the_seam():
    used, found = set(), []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("_files/"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not FILE_CALLS.search(line):
                continue
            allowed = [key for key in ALLOWED if key[0] == relative and key[1] in line]
            if allowed:
                used.update(allowed)
            else:
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "file calls outside asynclab._files:\n" + "\n".join(found)
    assert used == set(ALLOWED), f"stale entries: {set(ALLOWED) - used}"


def test_the_reader_and_the_archive_no_longer_import_each_other():
    text = (PACKAGE / "_validate.py").read_text(encoding="utf-8")
    assert "_files" not in re.sub(r'""".*?"""', "", text, flags=re.DOTALL)
    assert not (PACKAGE / "_archive.py").exists()
