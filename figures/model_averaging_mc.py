"""Probability that model averaging with randomly initialised workers reaches Beale's
global minimum, against n = 1…10 for λ ∈ {1, 100} with 95 % Wilson intervals (thesis
Fig. 2.4), and a heatmap over (n, λ)."""

from pathlib import Path

from asynclab import studies
from asynclab.plot.model_averaging_mc import plot_model_averaging_mc
from asynclab.studies import model_averaging_mc

NAME = "model_averaging_mc"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = model_averaging_mc.Config.quick() if quick else model_averaging_mc.Config()
    data = model_averaging_mc.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    plot_model_averaging_mc(data, out / f"{NAME}.png")
    return data


if __name__ == "__main__":
    main()
