"""What every drawing does last."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def finish(fig, path=None, title: str | None = None, *, dpi: int = 100):
    """Title, tight layout, write ``path`` (if given), release the figure; returns it."""
    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return fig
