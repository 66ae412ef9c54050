"""A straggler's stale update throws DOWNPOUR's central variable on Beale's function
(thesis Fig. 1.5); ADAG absorbs the same update; does it change the basin?"""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.straggler import plot_straggler
from asynclab.studies import straggler


def title(config) -> str:
    return (f"A straggler on Beale's function: asynchronous SGD (λ = 1), n = {config.workers}, "
             f"η = {config.learning_rate:g}, σ² = {config.noise:g}, exponential compute "
             f"times; worker 0's first step takes {config.delay:g} s longer")


def main(quick: bool = False, out=None) -> dict:
    return produce("straggler", straggler, plot_straggler, quick=quick,
                   out=out or Path(__file__).parent, title=title, pass_config=True)


if __name__ == "__main__":
    main()
