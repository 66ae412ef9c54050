"""A real cluster's step-time log (threads backend, 2 cores) against the exponential
assumption: step-time fits, stragglers, staleness, and DOWNPOUR's stable learning rates."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.real_cluster import plot_real_cluster
from asynclab.studies import real_cluster


def main(quick: bool = False, out=None) -> dict:
    return produce("real_cluster", real_cluster, plot_real_cluster, quick=quick,
                   out=out or Path(__file__).parent, pass_config=True)


if __name__ == "__main__":
    main()
