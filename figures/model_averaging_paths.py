"""Model averaging on Beale's function with identical vs random initialisation (thesis
Figs. 2.2, 2.3): worker and central paths for λ ∈ {1, 5, 100, 1000}, the centre against
sequential SGD, and the spread of the workers' end points per round."""

from pathlib import Path

from asynclab import studies
from asynclab.plot.model_averaging_paths import plot_model_averaging_paths
from asynclab.studies import model_averaging_paths

NAME = "model_averaging_paths"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = (model_averaging_paths.Config.quick() if quick
              else model_averaging_paths.Config())
    data = model_averaging_paths.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    plot_model_averaging_paths(data, out / f"{NAME}.png")
    return data


if __name__ == "__main__":
    main()
