"""Staleness histograms for n ∈ {10, 20, 30, 60} with the geometric fit (thesis Fig. 2.1),
plus a heterogeneous cluster and one with a 10× slower worker."""

from pathlib import Path

from asynclab import studies
from asynclab.plot.staleness import plot_staleness
from asynclab.studies import staleness

NAME = "staleness"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = staleness.Config.quick() if quick else staleness.Config()
    data = staleness.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    plot_staleness(data, out / f"{NAME}.png")
    return data


if __name__ == "__main__":
    main()
