"""The ``asynclab`` command line: one module per command (``run``, ``sweep``, ``rules``,
``demo``, ``figures``, ``trace``), the flags they share (``_flags``) and their types
(``_types``), what they print (``_output``) and the executable itself (``_main``). What a
command computes lives in the library; these modules turn flags into its options and its
results into text."""

from ._main import INTERRUPTED, _interrupt_outside_callbacks, build_parser, console, main
from ._output import strict_json, summary

__all__ = ["INTERRUPTED", "build_parser", "console", "main", "strict_json", "summary",
           "_interrupt_outside_callbacks"]
