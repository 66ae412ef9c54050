"""AGN against an equivalently sized mini-batch (research question 3) and the straight-line
thought experiment: the commit a/λ approaches the full-batch gradient direction as λ grows."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.agn import plot_agn
from asynclab.studies import agn


def title(config) -> str:
    return (f"AGN with n = {config.workers} workers. Top: first commits Δ = a/λ of every "
             f"worker from the pulled centre (unit length; black: −∇L) on a 2-D quadratic, "
             f"η = {config.learning_rates[0]:g}, σ² = {config.direction_noise:g}, "
             f"{config.direction_seeds} seeds.\nBottom: quadratic d = {config.dim}, "
             f"condition {config.condition:g}, η = {config.learning_rate:g}; a batch of m "
             f"examples ≡ gradient noise σ² = {config.noise:g}, a batch of λm ≡ σ²/λ and "
             f"λ× the compute time; {config.seeds} seeds, each its own schedule")


def main(quick: bool = False, out=None) -> dict:
    return produce("agn", agn, plot_agn, quick=quick,
                   out=out or Path(__file__).parent, title=title, pass_config=True)


if __name__ == "__main__":
    main()
