"""Model averaging on Beale's function with identical vs random initialisation (thesis
Figs. 2.2, 2.3): worker and central paths for λ ∈ {1, 5, 100, 1000}, the centre against
sequential SGD, and the spread of the workers' end points per round."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.model_averaging_paths import plot_model_averaging_paths
from asynclab.studies import model_averaging_paths


def main(quick: bool = False, out=None) -> dict:
    return produce("model_averaging_paths", model_averaging_paths,
                   plot_model_averaging_paths, quick=quick, out=out or Path(__file__).parent)


if __name__ == "__main__":
    main()
