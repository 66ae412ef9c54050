"""Argument types, the flags several commands share, and the checks that turn flags into
the library's options."""

from __future__ import annotations

import argparse

from .. import _validate
from .._errors import ConfigError


def _value(text: str):
    """A ``--param`` value: int, float, bool, a comma list of numbers (a tuple: async
    DiLoCo's ``speeds=1.7,1.3,0.66,0.3``) or string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if "," in text:
        items = tuple(_value(part.strip()) for part in text.split(","))
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
            return items
    return text


def _learning_rate(args, problem) -> float:
    """--learning-rate, else the problem's default."""
    return problem.learning_rate if args.learning_rate is None else args.learning_rate


def _params(pairs) -> dict:
    out = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--param takes NAME=VALUE, got {pair!r}")
        name = name.strip().replace("-", "_")
        if name in out:
            raise ConfigError(f"--param {name} is given twice; give each parameter once")
        out[name] = _value(value.strip())
    import inspect

    from ..engine import run

    own = set(inspect.signature(run).parameters) - {"hyperparameters"}
    for name in out:
        if name in own:
            raise ConfigError(f"{name} is not a rule hyperparameter: give it as "
                              f"--{name.replace('_', '-')} rather than --param")
    return out


def _seeds(args) -> list[int]:
    if args.seeds is None:
        return [_validate.seed(0 if args.seed is None else args.seed, "--seed")]
    if args.seed is not None:
        raise ConfigError("give either --seed or --seeds, not both")
    text = args.seeds.strip()
    try:
        if ":" in text:
            start, stop = (int(x) for x in text.split(":"))
            seeds = None
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--seeds takes START:STOP or a comma list, got {text!r}") from None
    if seeds is None:
        if stop <= start:
            raise ConfigError(f"--seeds {text!r} gives no seed")
        if stop - start > _MAX_SEEDS:
            raise ConfigError(f"--seeds {text!r} asks for {stop - start} seeds; at most "
                              f"{_MAX_SEEDS} in one run")
        _validate.seed(start, "--seeds START")
        _validate.seed(stop - 1, "--seeds STOP - 1")
        seeds = range(start, stop)
    if not seeds:
        raise ConfigError(f"--seeds {text!r} gives no seed")
    return _validate.seeds(seeds, "--seeds")


_MAX_SEEDS = 10**7


def _start(text):
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"--start takes comma-separated numbers, got {text!r}") from None


def _count(minimum: int):
    """An argparse type: an integer >= minimum."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, "
                                             f"got {text!r}") from None
        return _checked(_validate.count, value, low=minimum)

    return parse


def _checked(check, value, **bounds):
    """``check(value, field, **bounds)`` from :mod:`asynclab._validate`, its message as
    argparse's (which names the flag itself)."""
    try:
        return check(value, "value", **bounds)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("value ")) from None


def _finite(text: str) -> float:
    """An argparse type: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    return _checked(_validate.number, value)


def _positive(text: str) -> float:
    """An argparse type: a finite number > 0."""
    return _checked(_validate.number, _finite(text), low=0, low_open=True)


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows ``(default: X)`` after every option that has a default other than None."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or (
                action.default is argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse with the lab's one error format: ``asynclab: error: ...``, exit 2."""

    def error(self, message):
        self.exit(2, f"asynclab: error: {message}\n(see `{self.prog} --help`)\n")


def _default_rates() -> str:
    from .._names import LEARNING_RATES

    rates: dict[float, list[str]] = {}
    for name, rate in LEARNING_RATES.items():
        rates.setdefault(rate, []).append(name)
    return "; ".join(f"{rate:g} for {', '.join(names)}" for rate, names in rates.items())


def _problems_with(option: str) -> list[str]:
    import inspect

    from ..problems import PROBLEMS

    return [name for name, factory in PROBLEMS.items()
            if option in inspect.signature(factory).parameters]


def add_compute_arguments(p: argparse.ArgumentParser) -> None:
    """``--compute``, ``--compute-mean`` and ``--compute-shape``: a step's compute time."""
    from .._names import DISTRIBUTIONS

    p.add_argument("--compute", default=None, choices=DISTRIBUTIONS, metavar="DISTRIBUTION",
                   help=f"compute time per local step: {', '.join(DISTRIBUTIONS)} "
                   "(default: exponential)")
    p.add_argument("--compute-mean", type=_positive, default=None,
                   help="mean seconds per local step (default: 1.0)")
    p.add_argument("--compute-shape", type=_positive, default=None,
                   help="lognormal σ or gamma shape k (default: 1.0)")
    p.add_argument("--time-scale", type=_numbers, default=None, metavar="S1,S2,...",
                   help="heterogeneous workers: worker k's compute times are S_k times "
                   "longer, one multiplier > 0 per worker, e.g. 1,1.3,2.6,5.7")
    p.add_argument("--heterogeneous", type=_non_negative, default=None, metavar="SIGMA",
                   help="heterogeneous workers: multipliers drawn lognormal with log-std "
                   "SIGMA and mean 1 (asynclab.cluster.heterogeneous(workers, SIGMA), "
                   "seed 0: the same cluster for every --seed)")


def _numbers(text: str) -> tuple[float, ...]:
    """An argparse type: comma-separated finite numbers (checked further by the caller)."""
    return tuple(_finite(v) for v in text.split(",") if v.strip())


def _non_negative(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    return _checked(_validate.number, _finite(text), low=0)


def _time_scale(args, workers: int) -> tuple[float, ...] | None:
    """``Cluster.time_scale`` of ``--time-scale`` or ``--heterogeneous`` for ``workers``
    workers (None without them): a ConfigError naming the flag if it does not fit."""
    if args.time_scale is not None and args.heterogeneous is not None:
        raise ConfigError("--time-scale and --heterogeneous both set the workers' speeds; "
                          "drop one")
    if args.heterogeneous is not None:
        from ..cluster import heterogeneous

        return heterogeneous(workers, args.heterogeneous)
    if args.time_scale is None:
        return None
    if len(args.time_scale) != workers:
        raise ConfigError(f"--time-scale gives {len(args.time_scale)} multiplier(s) for "
                          f"{workers} workers; give one per worker")
    return tuple(_validate.number(v, f"--time-scale (worker {k})", low=0, low_open=True)
                 for k, v in enumerate(args.time_scale))


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """``--server-time``, ``--server-distribution`` and ``--server-shape``: the parameter
    server's service time per exchange (see :func:`_server_time`)."""
    from .._names import DISTRIBUTIONS

    p.add_argument("--server-time", type=_finite, default=None, metavar="SECONDS",
                   help="seconds the parameter server serves one exchange (FIFO queue), "
                   "the mean of --server-distribution (default: 0, a server that takes "
                   "no time)")
    p.add_argument("--server-distribution", default=None, choices=DISTRIBUTIONS,
                   metavar="DISTRIBUTION",
                   help=f"service time per exchange: {', '.join(DISTRIBUTIONS)}, drawn "
                   "with mean --server-time (default: constant)")
    p.add_argument("--server-shape", type=_positive, default=None,
                   help="lognormal σ or gamma shape k of the service time (default: 1.0)")


def add_availability_arguments(p: argparse.ArgumentParser) -> None:
    """``--mtbf``/``--mttr`` (Poisson churn) or ``--failures FILE`` (a schedule): when
    workers are down (asynchronous rules; see :func:`_availability`)."""
    g = p.add_argument_group("failures (asynchronous rules, the simulator)")
    g.add_argument("--mtbf", type=_positive, default=None, metavar="SECONDS",
                   help="mean time between failures of each worker (Poisson churn, with "
                   "--mttr)")
    g.add_argument("--mttr", type=_positive, default=None, metavar="SECONDS",
                   help="mean time to repair: mean seconds a worker stays down")
    g.add_argument("--failures", default=None, metavar="FILE",
                   help="an availability log: CSV rows worker,down_at,up_at")


def _availability(args):
    """``Cluster.availability`` from the failure flags, or None without them."""
    from ..cluster import Availability, read_availability

    mtbf, mttr = getattr(args, "mtbf", None), getattr(args, "mttr", None)
    path = getattr(args, "failures", None)
    if path is not None:
        if mtbf is not None or mttr is not None:
            raise ConfigError("--failures gives a schedule; drop --mtbf/--mttr (Poisson "
                              "churn) or the file")
        return read_availability(path)
    if (mtbf is None) != (mttr is None):
        raise ConfigError("Poisson churn needs both --mtbf and --mttr, got only "
                          + ("--mtbf" if mttr is None else "--mttr"))
    return None if mtbf is None else Availability(mtbf=mtbf, mttr=mttr)


def _server_time(args):
    """``Cluster.server_time`` from the server flags: ``--server-time`` seconds (0 when not
    given), or the distribution ``--server-distribution`` names with that mean (and
    ``--server-shape``), a :class:`~asynclab.cluster.ComputeTime`."""
    from ..cluster import ComputeTime

    name = args.server_distribution or "constant"
    mean = 0.0 if args.server_time is None else args.server_time
    shape = args.server_shape
    if mean < 0:
        raise ConfigError(f"--server-time must be >= 0 seconds, got {mean:g}")
    if shape is not None and name not in ("lognormal", "gamma"):
        raise ConfigError(f"--server-shape applies to --server-distribution lognormal or "
                          f"gamma, not {name}")
    if name == "constant":
        return mean
    if mean <= 0:
        raise ConfigError(f"--server-time must be > 0 seconds with --server-distribution "
                          f"{name} (it is the mean service time), got {mean:g}")
    try:
        return ComputeTime(name, mean=mean, shape=1.0 if shape is None else shape)
    except ConfigError as error:  # name the flag, not the Python field
        raise ConfigError(f"--server-shape: {error}") from None


def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    """Problem, rule, cluster, budget, seeds and start: what `run` and `sweep` share."""
    from .._names import INITS, PROBLEMS

    p.add_argument("--problem", default="beale",
                   help=f"problem: {', '.join(PROBLEMS)}")
    p.add_argument("--dim", type=_count(1), default=None,
                   help=f"dimension ({', '.join(_problems_with('dim'))}; default: the "
                   "problem's)")
    p.add_argument("--condition", type=_positive, default=None,
                   help=f"condition number ({', '.join(_problems_with('condition'))}; "
                   "default: the problem's)")
    p.add_argument("--rule", default="downpour", help="update rule (see `asynclab rules`)")
    p.add_argument("--workers", type=_count(1), default=None,
                   help="number of workers n (default: 4; 1 for sequential_sgd; the device "
                   "count with --backend pmap/threads)")
    p.add_argument("--local-steps", type=_count(1), default=None,
                   help="λ, local steps per exchange (default: the rule's)")
    p.add_argument("--learning-rate", type=_positive, default=None,
                   help=f"η (default: the problem's own: {_default_rates()})")
    p.add_argument("--noise", type=_finite, default=0.0,
                   help="σ², variance of the additive Gaussian gradient noise")
    add_compute_arguments(p)
    add_server_arguments(p)
    add_availability_arguments(p)
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--commits", type=_count(1), default=None,
                        help="budget in commits, rounds for synchronous rules (default: 1000)")
    budget.add_argument("--horizon", type=_positive, default=None,
                        help="budget in simulated seconds (simulator only)")
    p.add_argument("--seed", type=int, default=None,
                   help="the seed, an integer in [0, 2**32) (default: 0)")
    p.add_argument("--seeds", default=None,
                   help="several seeds, START:STOP or a,b,c (simulator only); every seed "
                   "replays the schedule simulated with the first seed (the same commit "
                   "order and staleness) with its own gradient noise and random start, "
                   "unless --trace-per-seed")
    p.add_argument("--trace-per-seed", action="store_true",
                   help="simulate a separate schedule for every seed (simulator only)")
    p.add_argument("--init", default="start", choices=INITS,
                   help="start: the problem's fixed start (or --start); random: uniform in "
                   "its box, drawn per seed; random_per_worker: synchronous rules only")
    p.add_argument("--start", default=None,
                   help="fixed start point, e.g. 1.0,1.75 (with --init start; default: the "
                   "problem's)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a rule hyperparameter, e.g. --param gamma=1e-4 (repeatable; see "
                   "`asynclab rules`)")
    p.add_argument("--record-every", type=_count(1), default=None,
                   help="record the central loss every K events (default: about 100 "
                   "records, fewer where a net's records would cost more than a quarter of "
                   "its gradient work; every event with --backend pmap)")


def _add_data_arguments(p: argparse.ArgumentParser) -> None:
    """The net problems' options: one meaning for each of these flags in every command."""
    p.add_argument("--model", default=None,
                   help="digits/mnist/collider: mlp, mlp:256-128, cnn, cnn:8-16, "
                        "cnn:5x5-32-64:512:maxpool:valid (default: the data set's own)")
    p.add_argument("--batch-size", type=_count(1), default=None,
                   help="digits/mnist/collider: examples per local step (default 32)")
    p.add_argument("--shards", default=None,
                   help="digits/mnist/collider: iid, class or dirichlet:ALPHA (default iid)")


def _add_overwrite(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true",
                   help="replace output files that exist (only files of the kind this "
                   "command writes); without it an existing file is refused before any work")


def _given(args, flags: dict) -> list[str]:
    return [flag for name, flag in flags.items() if getattr(args, name) not in (None, False)]


def _check_model(args) -> None:
    """Refuse contradictory model flags and bad seeds before anything is computed."""
    if args.start is not None and args.init != "start":
        raise ConfigError(f"--start sets the fixed start, which --init {args.init} replaces; "
                          "drop one of them")
    if args.compute_shape is not None and (args.compute or "exponential") not in (
            "lognormal", "gamma"):
        raise ConfigError(f"--compute-shape applies to --compute lognormal or gamma, not "
                          f"{args.compute or 'exponential'}")
    _server_time(args)
    for option, flag in (("dim", "--dim"), ("condition", "--condition")):
        if getattr(args, option) is not None and args.problem not in _problems_with(option):
            raise ConfigError(f"{flag} applies to {', '.join(_problems_with(option))}, not "
                              f"--problem {args.problem}")
    _seeds(args)


def _check_outputs(args) -> None:
    """Every output file, before any work: writable, not an existing file unless
    --overwrite (or --resume for the checkpoint), no two flags naming one file."""
    from .. import _files

    _files.distinct_outputs({"--save": args.save, "--plot": args.plot,
                             "--checkpoint": args.checkpoint})
    if args.save is not None:
        _files.output_path(args.save, "--save", kind="result", suffixes=(".npz",),
                           overwrite=args.overwrite)
    if args.plot is not None:
        _files.output_path(args.plot, "--plot", kind="figure", overwrite=args.overwrite)
    if args.checkpoint is not None:
        resuming = args.resume and _exists(args.checkpoint)
        if resuming:  # read and checked as a checkpoint of this run before any work
            path = _files.input_file(args.checkpoint, "--checkpoint")
            _files.writable_folder(path.parent, "--checkpoint", for_file=path)
        else:
            _files.output_path(args.checkpoint, "--checkpoint", kind="checkpoint",
                               overwrite=args.overwrite)


def _exists(path) -> bool:
    from .. import _files

    return _files.local_path(path, "--checkpoint").exists()


def _compute(args):
    from ..cluster import ComputeTime

    return ComputeTime(args.compute or "exponential",
                       mean=1.0 if args.compute_mean is None else args.compute_mean,
                       shape=1.0 if args.compute_shape is None else args.compute_shape)


def _problem_options(args) -> dict:
    from ..problems import DATA_PROBLEMS

    options = {}
    data = args.problem in DATA_PROBLEMS
    if args.dim is not None:
        if data:
            raise ConfigError(f"--dim: {args.problem} is a data set; its dimension is the "
                              "model's (choose the model with --model)")
        options["dim"] = args.dim
    if args.condition is not None:
        options["condition"] = args.condition
    for field in ("model", "batch_size", "shards"):
        value = getattr(args, field, None) if hasattr(args, "shards") else None
        if value is None:
            continue
        flag = "--" + field.replace("_", "-")
        if not data:
            raise ConfigError(f"{flag} applies to the data problems "
                              f"({', '.join(DATA_PROBLEMS)}), not to {args.problem!r}")
        options[field] = value
    if data and getattr(args, "start", None) is not None:
        raise ConfigError(f"--start: {args.problem} has a net's parameters; its start is "
                          "the model's seeded initialisation")
    return options


def _simulation_options(args) -> dict:
    """The keyword arguments `run` and `sweep` share, from the model flags, with the CLI's
    defaults: 4 workers (1 for sequential_sgd) and 1,000 commits."""
    workers = args.workers if args.workers is not None else (
        1 if args.rule == "sequential_sgd" else 4)
    if args.commits is None and args.horizon is None:
        args.commits = 1000
    server = _server_time(args)
    scale = _time_scale(args, workers)
    availability = _availability(args)
    busy = {}
    # the cluster, with the rule's groups, when any of its options is given
    if server != 0.0 or scale is not None or availability is not None:
        from ..cluster import Cluster
        from ..engine._run import rule_group_size

        busy["cluster"] = Cluster(workers, _compute(args), server_time=server,
                                  group_size=rule_group_size(args.rule, _params(args.param)),
                                  time_scale=scale, availability=availability)
    return dict(
        **busy,
        workers=workers, compute=_compute(args), commits=args.commits, horizon=args.horizon,
        seeds=_seeds(args), learning_rate=args.learning_rate, local_steps=args.local_steps,
        noise=args.noise, init=args.init, trace_per_seed=args.trace_per_seed,
        record_every=args.record_every, progress=None,  # stderr: JSON stays alone on stdout
        problem_options=_problem_options(args), start=_start(args.start),
        **_params(args.param),
    )
