"""EASGD: synchronous EASGD's elastic equilibrium on Beale with the thesis's settings
(n = 5, λ = 30, η = 1e-5, ρ ∈ {5, 1}), with and without the early-stop test, and the
stability map of asynchronous EASGD over communication period λ × elasticity ρ."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.easgd import plot_easgd
from asynclab.studies import easgd


def main(quick: bool = False, out=None) -> dict:
    return produce("easgd", easgd, plot_easgd, quick=quick,
                   out=out or Path(__file__).parent)


if __name__ == "__main__":
    main()
