"""Probability that model averaging with randomly initialised workers reaches Beale's
global minimum, against n = 1…10 for λ ∈ {1, 100} with 95 % Wilson intervals (thesis
Fig. 2.4), and a heatmap over (n, λ)."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.model_averaging_mc import plot_model_averaging_mc
from asynclab.studies import model_averaging_mc


def main(quick: bool = False, out=None) -> dict:
    return produce("model_averaging_mc", model_averaging_mc, plot_model_averaging_mc, quick=quick,
                   out=out or Path(__file__).parent)


if __name__ == "__main__":
    main()
