"""Implicit momentum: the mean central trajectory of asynchronous SGD with n workers is
heavy ball with μ = 1 − 1/n and step η/n; the momentum fitted from trajectories vs n."""

from pathlib import Path

from asynclab import studies
from asynclab.plot.implicit_momentum import plot_implicit_momentum
from asynclab.studies import implicit_momentum

NAME = "implicit_momentum"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = implicit_momentum.Config.quick() if quick else implicit_momentum.Config()
    data = implicit_momentum.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    title = (f"Implicit momentum of asynchrony: DOWNPOUR (λ = 1), quadratic d = {config.dim}, "
             f"condition {config.condition:g}, η = {config.learning_rate:g}, exponential "
             f"compute times, mean over {config.seeds} seeds (own schedule each)")
    plot_implicit_momentum(data, out / f"{NAME}.png", title=title)
    return data


if __name__ == "__main__":
    main()
