"""Tuning explicit (server) momentum under asynchrony: the momentum that reaches a target
loss fastest falls as workers are added (Mitliagkas et al. 2016), in simulation."""

from pathlib import Path

from asynclab import studies
from asynclab.plot.momentum_tuning import plot_momentum_tuning
from asynclab.studies import momentum_tuning

NAME = "momentum_tuning"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = momentum_tuning.Config.quick() if quick else momentum_tuning.Config()
    data = momentum_tuning.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    title = (f"Explicit momentum vs workers: DOWNPOUR (λ = 1) with server momentum, quadratic "
             f"d = {config.dim}, condition {config.condition:g}, η = {config.learning_rate:g}, "
             f"σ² = {config.noise:g}, target {config.target:g} × initial loss, "
             f"{config.seeds} seeds")
    plot_momentum_tuning(data, out / f"{NAME}.png", title=title)
    return data


if __name__ == "__main__":
    main()
