"""``asynclab figures``: the lab's figures, built or redrawn."""

from __future__ import annotations


def _figures(args) -> int:
    from ..figures import build, redraw

    if args.redraw:
        drawn = redraw(args.names, out=args.out, overwrite=args.overwrite)
        print(f"{len(drawn)} figure(s) redrawn from their saved data")
        return 0

    timings = build(args.names, quick=args.quick, out=args.out, overwrite=args.overwrite)
    print(f"{len(timings)} figure(s) in {sum(timings.values()):.1f} s")
    return 0


def _figure_names() -> str:
    from .._names import FIGURES

    return ", ".join(FIGURES)
