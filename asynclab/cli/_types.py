"""Argument types and the parser's look: each type checks one flag's text with the
library's own checks (:mod:`asynclab._validate`), so that a value means the same thing on
the command line and in Python."""

from __future__ import annotations

import argparse

from .. import ConfigError, _validate


def _checked(check, value, **bounds):
    """``check(value, field, **bounds)`` from :mod:`asynclab._validate`, its message as
    argparse's (which names the flag itself)."""
    try:
        return check(value, "value", **bounds)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("value ")) from None


def count(minimum: int, maximum: int | None = None):
    """An argparse type: an integer >= minimum (and <= maximum)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
            raise argparse.ArgumentTypeError(f"must be an integer {bound}, "
                                             f"got {text!r}") from None
        return _checked(_validate.count, value, low=minimum, high=maximum)

    return parse


def finite(text: str) -> float:
    """An argparse type: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    return _checked(_validate.number, value)


def positive(text: str) -> float:
    """An argparse type: a finite number > 0."""
    return _checked(_validate.number, finite(text), low=0, low_open=True)


def non_negative(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    return _checked(_validate.number, finite(text), low=0)


def numbers(text: str) -> tuple[float, ...]:
    """An argparse type: comma-separated finite numbers (checked further by the caller)."""
    return tuple(finite(v) for v in text.split(",") if v.strip())


def deadline(text: str):
    """An argparse type: a number of seconds > 0, or ``adaptive``."""
    if text == "adaptive":
        return text
    try:
        return positive(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (or 'adaptive')") from None


def straggler(text: str):
    """``--straggler WORKER:AT:DELAY``: worker index, from when (s), extra seconds."""
    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        worker, at, delay = int(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"takes WORKER:AT:DELAY (e.g. 2:10:30: worker 2's first local step from 10 s "
            f"on takes 30 s longer), got {text!r}") from None
    return worker, at, delay


def value(text: str):
    """A ``--param`` value: int, float, bool, a comma list of numbers (a tuple: async
    DiLoCo's ``speeds=1.7,1.3,0.66,0.3``) or string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if "," in text:
        items = tuple(value(part.strip()) for part in text.split(","))
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
            return items
    return text


class Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows ``(default: X)`` after every option that has a default other than None."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or (
                action.default is argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse with the lab's one error format: ``asynclab: error: ...``, exit 2; help
    texts given later (an action's ``help_later``, see ``asynclab.cli._flags``) are
    written when the help is shown."""

    def error(self, message):
        self.exit(2, f"asynclab: error: {message}\n(see `{self.prog} --help`)\n")

    def format_help(self):
        for action in self._actions:
            later = getattr(action, "help_later", None)
            if later is not None:
                action.help, action.help_later = later(), None
        return super().format_help()
