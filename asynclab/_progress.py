"""The lab's progress bars."""

from __future__ import annotations

from tqdm.auto import tqdm


def progress_bar(iterable=None, *, progress: bool | None = None, **options):
    """A tqdm bar: shown when ``progress`` is true, hidden when false, and with ``None``
    shown only on a terminal or in a notebook (``TQDM_DISABLE=1`` hides every bar)."""
    return tqdm(iterable, disable=None if progress is None else not progress, **options)
