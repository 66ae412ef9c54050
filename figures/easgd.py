"""EASGD: synchronous EASGD's elastic equilibrium on Beale with the thesis's settings
(n = 5, λ = 30, η = 1e-5, ρ ∈ {5, 1}), with and without the early-stop test, and the
stability map of asynchronous EASGD over communication period λ × elasticity ρ."""

from pathlib import Path

from asynclab import studies
from asynclab.plot.easgd import plot_easgd
from asynclab.studies import easgd

NAME = "easgd"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = easgd.Config.quick() if quick else easgd.Config()
    data = easgd.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    plot_easgd(data, out / f"{NAME}.png")
    return data


if __name__ == "__main__":
    main()
