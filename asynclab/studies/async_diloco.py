"""Asynchronous DiLoCo on a heterogeneous cluster (Liu et al. 2024): synchronous DiLoCo
against asynchronous DiLoCo with a naive outer Nesterov step per commit, Delayed Nesterov
(DN), dynamic local updates (DyLU), and both.

The scenario is the paper's heterogeneous cluster: four workers whose local steps take
0.58, 0.75, 1.51 and 3.33 simulated seconds (constant compute times, no network), H = 20
inner AdamW steps, an MLP
on the MNIST images the lab ships. Every variant gets the same wall-clock budget: the
time of ``rounds`` synchronous rounds (each waits for the slowest worker's 20 steps, 66.6
s). With constant times the schedule is deterministic; the seeds draw the mini-batches
(the same for every variant: seed s, worker k, step j read the same batch).

Recorded per variant and seed, at ``records`` evenly spaced records of the run: the
training loss (on a fixed subset of 1,000 training examples), the centre's validation
accuracy, the simulated time and the gradient evaluations of all workers so far. Derived:
the final loss and accuracy (equal simulated time), and the loss when the run had spent
as many gradient evaluations as the whole synchronous run (equal work).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._progress import progress_bar
from ..cluster import Cluster, ComputeTime
from ..engine import schedule
from ..problems import get_problem
from ..rules import make_rule
from ._replayed import replay

#: the variants, in the order of the table: name -> (rule, its options)
VARIANTS = {
    "sync": ("diloco", {}),
    "naive": ("async_diloco", {}),
    "dn": ("async_diloco", {"delay_period": None}),  # None: the study's period
    "dylu": ("async_diloco", {"dynamic": True}),
    "dn+dylu": ("async_diloco", {"delay_period": None, "dynamic": True}),
}


@dataclasses.dataclass(frozen=True)
class Config:
    """What the study simulates."""

    step_times: tuple[float, ...] = (0.58, 0.75, 1.51, 3.33)  # seconds per local step
    local_steps: int = 20  # H
    rounds: int = 40  # the budget: this many synchronous rounds' wall-clock time
    delay_period: int = 4  # DN's N (one per worker)
    dataset: str = "mnist"
    model: str = "mlp:32"
    batch_size: int = 32
    learning_rate: float = 1e-3  # inner AdamW
    outer_learning_rate: float = 0.7  # DiLoCo's
    outer_momentum: float = 0.9
    records: int = 40
    seeds: int = 4

    @classmethod
    def quick(cls) -> Config:
        return cls(rounds=4, records=8, seeds=2)


def _cluster(config: Config) -> Cluster:
    n = len(config.step_times)
    return Cluster(n, ComputeTime("constant", 1.0), time_scale=config.step_times)


def rule_for(variant: str, config: Config, workers: int):
    """The variant's rule with the study's hyperparameters (DyLU's speeds are the
    cluster's, 1 / step time)."""
    name, options = VARIANTS[variant]
    options = dict(options)
    if "delay_period" in options:
        options["delay_period"] = config.delay_period
    if options.get("dynamic"):
        options["speeds"] = tuple(1.0 / t for t in config.step_times)
    return make_rule(name, learning_rate=config.learning_rate, local_steps=config.local_steps,
                     outer_learning_rate=config.outer_learning_rate,
                     outer_momentum=config.outer_momentum, **options)


def _gradient_evaluations(rule, trace, workers: int) -> np.ndarray:
    """Gradient evaluations of all workers after each event (the steps they take, not
    the masked ones the replay computes for a shorter window)."""
    if rule.synchronous:
        return np.arange(1, trace.n_events + 1) * workers * rule.local_steps
    return np.cumsum(trace.windows[trace.worker])


def run(config: Config, progress: bool | None = None) -> dict:
    """Every variant on the same cluster, budget and seeds; returns the records and the
    table's numbers (means and standard deviations over seeds)."""
    cluster = _cluster(config)
    n = cluster.workers
    horizon = config.rounds * config.local_steps * max(config.step_times) * (1 + 1e-9)
    problem = get_problem(config.dataset, model=config.model, batch_size=config.batch_size,
                          workers=n)
    seeds = list(range(config.seeds))
    data: dict = {"variants": np.array(list(VARIANTS)), "horizon": horizon,
                  "step_times": np.array(config.step_times)}
    curves = {}
    for variant in progress_bar(list(VARIANTS), desc="async_diloco", progress=progress):
        rule = rule_for(variant, config, n)
        trace = schedule(rule, cluster, horizon=horizon, rng=0)
        every = max(1, trace.n_events // config.records)
        result = replay(rule, problem, trace, seeds=seeds, record_every=every, progress=False)
        work = np.concatenate([[0], _gradient_evaluations(rule, trace, n)])
        curves[variant] = dict(
            time=result.record_time[0], work=work[result.record_events].astype(np.float64),
            loss=np.asarray(result.loss, np.float64),
            accuracy=np.asarray(result.metrics["accuracy"], np.float64),
            validation_loss=np.asarray(result.metrics["validation_loss"], np.float64),
            events=int(trace.n_events),
            windows=trace.windows if not rule.synchronous
            else np.full(n, rule.local_steps))
    sync_work = curves["sync"]["work"][-1]
    for variant, c in curves.items():
        # the loss at the last record within the synchronous run's gradient evaluations
        within = np.flatnonzero(c["work"] <= sync_work)[-1]
        for key, value in c.items():
            data[f"{variant}__{key}"] = value
        data[f"{variant}__final_loss"] = c["loss"][:, -1]
        data[f"{variant}__final_accuracy"] = c["accuracy"][:, -1]
        data[f"{variant}__final_validation_loss"] = c["validation_loss"][:, -1]
        data[f"{variant}__equal_work_loss"] = c["loss"][:, within]
        data[f"{variant}__equal_work_time"] = float(c["time"][within])
    return data


def table(data: dict) -> str:
    """The study's table in Markdown: per variant, commits, windows, the final training
    loss, validation loss and accuracy (equal simulated time), and the training loss at the
    last record within the synchronous run's gradient evaluations (equal work), with the
    simulated time of that record; mean ± standard deviation over seeds."""
    rows = ["| variant | commits | windows H_k | training loss (equal time) | validation "
            "loss (equal time) | accuracy (equal time) | training loss (equal work) | "
            "reached at (s) |", "|---|---|---|---|---|---|---|---|"]

    def cell(v, key, digits=3):
        x = np.asarray(data[f"{v}__{key}"])
        return f"{x.mean():.{digits}g} ± {x.std(ddof=1) if x.size > 1 else 0.0:.2g}"

    for variant in data["variants"]:
        v = str(variant)
        windows = ", ".join(str(int(h)) for h in data[f"{v}__windows"])
        rows.append(f"| {v} | {int(data[f'{v}__events'])} | {windows} | {cell(v, 'final_loss')} "
                    f"| {cell(v, 'final_validation_loss')} | {cell(v, 'final_accuracy')} "
                    f"| {cell(v, 'equal_work_loss')} "
                    f"| {float(data[f'{v}__equal_work_time']):.0f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    """``python -m asynclab.studies.async_diloco [--quick] [--save PATH]``: print the
    table (and save the data)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quick configuration")
    parser.add_argument("--rounds", type=int, default=None, help="budget in sync rounds")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0, 1, …")
    parser.add_argument("--save", default=None, help="also save the data here (.npz)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --save if it exists (only a study's data)")
    args = parser.parse_args(argv)
    if args.save:  # checked before the run
        from .. import _files

        _files.output_path(args.save, "--save", kind="study", overwrite=args.overwrite)
    config = Config.quick() if args.quick else Config()
    changes = {k: v for k, v in (("rounds", args.rounds), ("seeds", args.seeds)) if v}
    config = dataclasses.replace(config, **changes)
    data = run(config)
    if args.save:
        from ._io import save

        save(args.save, data, config, overwrite=args.overwrite)
    print(table(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
