"""The ``asynclab`` executable: the parser of every command, errors, Ctrl-C."""

from __future__ import annotations

import argparse
import sys

from .. import ConfigError
from ._flags import add_overwrite
from ._types import Help, Parser, count
from .demo import _demo
from .figures import _figure_names, _figures
from .rules import _rules
from .run import add_run_arguments, run_command
from .sweep import add_sweep_arguments, sweep_command
from .trace import add_trace_parser


def build_parser() -> argparse.ArgumentParser:
    """The ``asynclab`` command's argument parser, with every subcommand and its flags."""
    parser = Parser(
        prog="asynclab", description="A laboratory for data-parallel optimizer dynamics.",
        formatter_class=Help)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="simulate a cluster and replay it with a rule",
                       description="Simulate a cluster and replay its schedule with an update "
                       "rule, for one or several seeds; print a summary.",
                       formatter_class=Help)
    add_run_arguments(p)
    p.set_defaults(func=run_command)
    p = sub.add_parser("sweep", help="replay a grid of hyperparameter values x seeds in one "
                       "compiled call and report the best point", formatter_class=Help)
    add_sweep_arguments(p)
    p.set_defaults(func=sweep_command)
    add_trace_parser(sub)
    p = sub.add_parser("rules", help="list the update rules", formatter_class=Help)
    p.add_argument("--import", dest="imports", action="append", default=None,
                   metavar="FILE.py|MODULE",
                   help="also list the rules this file or module of yours declares "
                   "(imported: its code runs; repeatable)")
    p.set_defaults(func=_rules)
    p = sub.add_parser("demo", help="a demonstration run: summary + plot",
                       formatter_class=Help)
    p.add_argument("--out", default="asynclab-demo.png",
                   help="where to write the plot (.png, .pdf, .svg, ...)")
    p.add_argument("--commits", type=count(1), default=20000, help="commits per seed")
    add_overwrite(p)
    p.set_defaults(func=_demo)
    p = sub.add_parser("figures", help="regenerate figures (all, or the ones named)",
                       formatter_class=Help,
                       epilog=f"figures: {_figure_names()}")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="figure names (default: every figure, listed below)")
    p.add_argument("--quick", action="store_true", help="small, fast versions")
    p.add_argument("--redraw", action="store_true",
                   help="no simulation: draw the PNGs again from OUT/data/NAME.npz (an "
                        "existing PNG is replaced only with --overwrite)")
    p.add_argument("--out", default=None,
                   help="output folder (default: ./figures if it exists, else the current "
                        "folder); data go to OUT/data/")
    add_overwrite(p)
    p.set_defaults(func=_figures)
    return parser


#: The exit status after Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


def _interrupted(args) -> str:
    """The one line printed on Ctrl-C: what was lost and how to continue."""
    checkpoint = getattr(args, "checkpoint", None)
    if checkpoint is None:
        return "asynclab: interrupted"
    from pathlib import Path

    if Path(checkpoint).exists():
        return (f"asynclab: interrupted; {checkpoint} holds the run up to its last "
                "checkpoint: rerun the same command with --resume to continue")
    return ("asynclab: interrupted before the first checkpoint was written (nothing to "
            "resume; --checkpoint-every K saves every K segments)")


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as the command line's other messages: one line on stderr."""
    text = " ".join(str(message).split())
    print(f"asynclab: warning: {text}", file=sys.stderr if file is None else file)


def main(argv=None) -> int:
    """Run the ``asynclab`` command with the arguments ``argv`` (default: the process's)
    and return its exit status: 0, 2 for a configuration error (one line
    ``asynclab: error: ...`` on stderr), :data:`INTERRUPTED` after Ctrl-C."""
    import warnings

    from .. import _environment

    _environment.translate()  # the environment, as JAX, matplotlib and the terminal take it
    _environment.ascii_streams()
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        try:
            code = _main(argv)
            sys.stdout.flush()  # a full disk under `--json > file` is said here, in one line
            return code
        except BrokenPipeError:  # e.g. `asynclab rules | head`
            _quiet_stdout()
            sys.stderr.close()
            return 0
        except OSError as error:  # writing the output: a full disk, a closed terminal
            import errno

            _quiet_stdout()
            reason = error.strerror or str(error) or type(error).__name__
            output = error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
            print(f"asynclab: error: {'cannot write the output' if output else 'the system'}"
                  f" ({reason})", file=sys.stderr)
            return 2


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the output it still buffers is not written
    (and fails) again when Python exits."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests' capture)
        pass


def _main(argv) -> int:
    import warnings

    from .. import _environment

    words = list(sys.argv[1:] if argv is None else argv)
    if words[:2] != ["trace", "inspect"]:  # inspecting a log needs no JAX
        try:
            _environment.import_jax()  # a help's problem list, and every run, import JAX
        except ConfigError as error:
            print(f"asynclab: error: {error}", file=sys.stderr)
            return 2
    args = build_parser().parse_args(argv)
    try:
        if args.func in (run_command, sweep_command, _demo, _figures):  # the commands that compile
            from .._cache import enable_compile_cache

            _environment.check()
            enable_compile_cache()
        with warnings.catch_warnings():
            # a diverging run overflows on purpose; it is reported as DIVERGED instead
            warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
            warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
            return args.func(args)
    except ConfigError as error:
        print(f"asynclab: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{_interrupted(args)}", file=sys.stderr)
        return INTERRUPTED


def _interrupt_outside_callbacks() -> None:
    """Ctrl-C raises KeyboardInterrupt, but never inside a garbage-collection callback.

    Python drops an exception raised in a ``gc`` callback ("Exception ignored in ..."),
    and JAX runs one at every collection: a Ctrl-C that lands there was lost and the run
    went on. The handler raises it again 10 ms later instead, outside the callback.
    """
    import signal

    if not hasattr(signal, "setitimer") or signal.getsignal(signal.SIGINT) not in (
            signal.default_int_handler, signal.SIG_DFL):
        return

    def interrupt(signum, frame):
        if frame is not None and frame.f_code.co_name.endswith("gc_callback"):
            signal.signal(signal.SIGALRM, interrupt)
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)


def console() -> None:
    """The ``asynclab`` executable: :func:`main`, then exit with its status.

    After Ctrl-C the process ends at once (``os._exit``) instead of tearing down JAX:
    XLA aborts when its runtime is destroyed while device computations or worker threads
    are still in flight. Checkpoints and saved results are written atomically, so
    nothing on disk is left half-written.
    """
    import os

    _interrupt_outside_callbacks()
    code = main()
    if code == INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)
