"""Tuning (η, μ) jointly under asynchrony: the rate of the expected centre predicted by
Mitliagkas et al.'s (2016) cubic, the measured rate of the seed-averaged centre, and what
single runs do, per number of workers."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.momentum_tuning import plot_momentum_tuning
from asynclab.studies import momentum_tuning


def title(config) -> str:
    return (f"Joint (η, μ) tuning of DOWNPOUR (λ = 1) with server momentum, quadratic\n"
            f"d = {config.dim}, condition {config.condition:g}, σ² = {config.noise:g}, "
            f"{config.commits} commits, {config.seeds} seeds per point; target "
            f"{config.target:g} × initial loss")


def main(quick: bool = False, out=None) -> dict:
    return produce("momentum_tuning", momentum_tuning, plot_momentum_tuning, quick=quick,
                   out=out or Path(__file__).parent, title=title)


if __name__ == "__main__":
    main()
