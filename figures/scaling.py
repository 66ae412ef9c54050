"""When does asynchrony pay off? Time to target accuracy and final accuracy against n for
synchronous, asynchronous and mixed clusters (the distributed-TensorFlow study's question)."""

from pathlib import Path

from asynclab.figures import produce
from asynclab.plot.scaling import plot_scaling
from asynclab.studies import scaling


def title(config) -> str:
    return (f"When does asynchrony pay off? {config.dataset} with {config.model}, batch "
            f"{config.batch_size}, {config.evaluations} gradient evaluations per run, "
            f"η = {config.learning_rate:g} per gradient (a synchronous unit of k workers "
            f"steps k·η on the mean), mixed = synchronous groups of {config.group_size}, "
            f"{config.seeds} seeds")


def main(quick: bool = False, out=None) -> dict:
    return produce("scaling", scaling, plot_scaling, quick=quick,
                   out=out or Path(__file__).parent, title=title, pass_config=True)


if __name__ == "__main__":
    main()
