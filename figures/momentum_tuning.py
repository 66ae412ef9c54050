"""Tuning explicit (server) momentum under asynchrony: the momentum that reaches a target
loss fastest falls as workers are added (Mitliagkas et al. 2016), in simulation."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.momentum_tuning import plot_momentum_tuning
from asynclab.studies import momentum_tuning


def title(config) -> str:
    return (f"Explicit momentum vs workers: DOWNPOUR (λ = 1) with server momentum, quadratic "
             f"d = {config.dim}, condition {config.condition:g}, η = {config.learning_rate:g}, "
             f"σ² = {config.noise:g}, target {config.target:g} × initial loss, "
             f"{config.seeds} seeds")


def main(quick: bool = False, out=None) -> dict:
    return produce("momentum_tuning", momentum_tuning, plot_momentum_tuning, quick=quick,
                   out=out or Path(__file__).parent, title=title)


if __name__ == "__main__":
    main()
