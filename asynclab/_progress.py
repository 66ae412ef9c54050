"""The lab's progress bars.

On a terminal or in a notebook a bar is drawn in place (tqdm). Elsewhere — stderr piped
to a file or a CI log, or a command printing ``--json`` on stdout — a long run writes a
plain line to stderr every few seconds instead (``ASYNCLAB_PROGRESS_SECONDS``, default 5;
nothing for a run shorter than that), so that it is never silent for minutes.
``TQDM_DISABLE=1`` hides everything.
"""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm

#: Seconds between two progress lines when stderr is not a terminal.
LINE_SECONDS = 5.0


def progress_bar(iterable=None, *, progress: bool | None = None, **options):
    """A tqdm bar: shown when ``progress`` is true, hidden when false; with ``None``, a bar
    on a terminal or in a notebook, and a line every few seconds elsewhere."""
    if progress is None and not _interactive() and not os.environ.get("TQDM_DISABLE"):
        seconds = _line_seconds()
        options.setdefault("mininterval", seconds)
        options.setdefault("delay", seconds)
        options.pop("leave", None)
        return tqdm(iterable, file=_Lines(sys.stderr), ascii=True, leave=True,
                    dynamic_ncols=False, ncols=100, **options)
    return _Finishing(iterable, disable=None if progress is None else not progress, **options)


class _Finishing(tqdm):
    """A bar that draws its last state before it closes: in a notebook, a bar that is
    hidden on closing (``leave=False``) otherwise keeps the text of its last timed redraw
    ("5%") in the saved widget state beside a full bar."""

    def close(self):
        if not self.disable and not getattr(self, "_closed_once", False):
            self._closed_once = True
            self.refresh()
        super().close()


def _interactive() -> bool:
    """Whether bars can be drawn in place: stderr is a terminal, or this is a notebook."""
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _line_seconds() -> float:
    try:
        value = float(os.environ.get("ASYNCLAB_PROGRESS_SECONDS", LINE_SECONDS))
    except ValueError:
        return LINE_SECONDS
    return value if value > 0 else LINE_SECONDS


class _Lines:
    """A file for tqdm that turns each in-place redraw into one line of its own."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> None:
        text = text.replace("\x1b[A", "").replace("\r", "").strip()
        if text:
            self._stream.write(text + "\n")

    def flush(self) -> None:
        self._stream.flush()


def note(bar, text: str):
    """Say what a bar's work is doing now ("compiling…") until the returned function is
    called: beside the bar on a terminal; where bars are lines, one line, written only if
    the work is still going after the line interval (a short step says nothing)."""
    bar = getattr(bar, "bar", bar)  # a share of a bar (a sweep's calls, a padded batch)
    if getattr(bar, "disable", True):
        return lambda: None
    stream = getattr(getattr(bar, "fp", None), "_wrapped", None)  # tqdm wraps the file
    if not isinstance(stream, _Lines):
        bar.set_postfix_str(text)
        return lambda: bar.set_postfix_str("")
    import threading

    timer = threading.Timer(_line_seconds(), stream.write, (f"{bar.desc}: {text}",))
    timer.daemon = True
    timer.start()
    return timer.cancel
