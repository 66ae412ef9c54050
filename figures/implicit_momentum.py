"""Implicit momentum: the mean central trajectory of asynchronous SGD with n workers is
heavy ball with μ = 1 − 1/n and step η/n; the momentum fitted from trajectories vs n."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.implicit_momentum import plot_implicit_momentum
from asynclab.studies import implicit_momentum


def title(config) -> str:
    return (f"Implicit momentum of asynchrony: DOWNPOUR (λ = 1), quadratic d = {config.dim}, "
             f"condition {config.condition:g}, η = {config.learning_rate:g}, exponential "
             f"compute times, mean over {config.seeds} seeds (own schedule each)")


def main(quick: bool = False, out=None) -> dict:
    return produce("implicit_momentum", implicit_momentum, plot_implicit_momentum, quick=quick,
                   out=out or Path(__file__).parent, title=title)


if __name__ == "__main__":
    main()
