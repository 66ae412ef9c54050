"""Staleness histograms for n ∈ {10, 20, 30, 60} with the geometric fit (thesis Fig. 2.1),
plus a heterogeneous cluster and one with a 10× slower worker."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.staleness import plot_staleness
from asynclab.studies import staleness


def main(quick: bool = False, out=None) -> dict:
    return produce("staleness", staleness, plot_staleness, quick=quick,
                   out=out or Path(__file__).parent)


if __name__ == "__main__":
    main()
