"""AGN against an equivalently sized mini-batch (research question 3) and the straight-line
thought experiment: the commit a/λ approaches the full-batch gradient direction as λ grows."""

import dataclasses
from pathlib import Path

from asynclab import studies
from asynclab.plot.agn import plot_agn
from asynclab.studies import agn

NAME = "agn"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = agn.Config.quick() if quick else agn.Config()
    data = agn.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    title = (f"AGN with n = {config.workers} workers. Top: first commits Δ = a/λ of every "
             f"worker from the pulled centre (unit length; black: −∇L) on a 2-D quadratic, "
             f"η = {config.learning_rates[0]:g}, σ² = {config.direction_noise:g}, "
             f"{config.direction_seeds} seeds.\nBottom: quadratic d = {config.dim}, "
             f"condition {config.condition:g}, η = {config.learning_rate:g}; a batch of m "
             f"examples ≡ gradient noise σ² = {config.noise:g}, a batch of λm ≡ σ²/λ and "
             f"λ× the compute time; {config.seeds} seeds, each its own schedule")
    plot_agn(data, out / f"{NAME}.png", config=dataclasses.asdict(config), title=title)
    return data


if __name__ == "__main__":
    main()
