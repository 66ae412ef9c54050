"""Asynchronous rules on MNIST with an Adam inner optimizer (thesis chapters 2–4):
DOWNPOUR, DynSGD, AEASGD, AGN and ADAG for n ∈ {10, 20, 30, 40} and λ ∈ {1, 15}."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.mnist_rules import plot_mnist_rules
from asynclab.studies import mnist_rules


def title(config) -> str:
    return (f"MNIST-5k ({config.model}, batch {config.batch_size}, one IID shard per worker), "
            f"Adam inner optimizer η = {config.learning_rate:g}; AEASGD α = "
            f"{config.elastic_alpha:g}, ADAG γ = {config.gamma:g}; every run "
            f"{config.gradient_steps} gradient evaluations (all workers), exponential step "
            f"times of mean 1 s, {config.seeds} seeds per cell (each its own schedule).\n"
            f"Bottom right: ADAG's first {config.probe_commits} commits with "
            f"n = {config.probe_workers}, {config.probe_seeds} seed(s)")


def main(quick: bool = False, out=None) -> dict:
    return produce("mnist_rules", mnist_rules, plot_mnist_rules, quick=quick,
                   out=out or Path(__file__).parent, title=title)


if __name__ == "__main__":
    main()
