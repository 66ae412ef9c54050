"""A straggler's stale update throws DOWNPOUR's central variable on Beale's function
(thesis Fig. 1.5); ADAG absorbs the same update; does it change the basin?"""

import dataclasses
from pathlib import Path

from asynclab import studies
from asynclab.plot.straggler import plot_straggler
from asynclab.studies import straggler

NAME = "straggler"


def main(quick: bool = False, out=None) -> dict:
    out = Path(out) if out is not None else Path(__file__).parent
    config = straggler.Config.quick() if quick else straggler.Config()
    data = straggler.run(config)
    studies.save(out / "data" / f"{NAME}.npz", data, config)
    title = (f"A straggler on Beale's function: asynchronous SGD (λ = 1), n = {config.workers}, "
             f"η = {config.learning_rate:g}, σ² = {config.noise:g}, exponential compute "
             f"times; worker 0's first step takes {config.delay:g} s longer")
    plot_straggler(data, out / f"{NAME}.png", config=dataclasses.asdict(config), title=title)
    return data


if __name__ == "__main__":
    main()
