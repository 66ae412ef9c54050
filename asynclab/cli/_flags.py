"""The flags the commands share, in one place, and their one translation into the options
of :func:`asynclab.prepare`.

Each ``add_*`` function adds one group of flags; a command takes the groups it needs, and
a flag means the same thing in every command. :func:`prepare_options` turns whatever
groups a command has into the keyword arguments of ``asynclab.prepare``, which holds every
default and every check of a run: nothing here fills a library default or re-derives
what ``prepare`` derives. What stays here is the command line's own: its defaults (4
workers, a budget of 1,000 commits), flags that contradict each other, and files named on
it.
"""

from __future__ import annotations

import argparse

from .. import ConfigError, _validate
from .._names import DISTRIBUTIONS, INITS, LATE, SIMULATORS
from . import _own, _types

#: Seeds one run may have on the command line.
MAX_SEEDS = 10**7


# ----------------------------------------------------------------------------- problem


def _help_later(action: argparse.Action, text) -> None:
    """``action``'s help is ``text()``, called when the help is shown
    (:class:`~asynclab.cli._types.Parser`): the problems it names come from
    ``asynclab.problems`` (JAX), which building the parser must not import."""
    action.help_later = text


def _problems_with(option: str) -> list[str]:
    """The registered problems that take ``option`` (``dim``, ``model``, ...)."""
    from ..problems import PROBLEMS as FACTORIES
    from ..problems import options_of

    return [name for name in FACTORIES if option in options_of(name)]


def _default_rates() -> str:
    """η of each registered problem for a run that gives none: the ``learning_rate`` its
    factory declares, else the problems' common default."""
    from ..problems import LEARNING_RATE
    from ..problems import PROBLEMS as FACTORIES

    rates: dict[float, list[str]] = {}
    for name, factory in FACTORIES.items():
        rates.setdefault(getattr(factory, "learning_rate", LEARNING_RATE), []).append(name)
    return "; ".join(f"{rate:g} for {', '.join(names)}" for rate, names in rates.items())


def _problem_names() -> str:
    from ..problems import PROBLEMS as FACTORIES

    return ", ".join(FACTORIES)


def add_problem(p: argparse.ArgumentParser) -> None:
    """The problem and its options: ``--problem``, ``--dim``, ``--condition``, and the
    data problems' ``--model``, ``--batch-size``, ``--shards``."""
    _help_later(p.add_argument("--problem", default="beale", help="problem"),
                lambda: f"problem: {_problem_names()}; {_own.HELP} (a Problem, or a "
                "function returning one)")
    _help_later(p.add_argument("--dim", type=_types.count(1), default=None,
                               help="dimension"),
                lambda: f"dimension ({', '.join(_problems_with('dim'))}; default: the "
                "problem's)")
    _help_later(p.add_argument("--condition", type=_types.positive, default=None,
                               help="condition number"),
                lambda: f"condition number ({', '.join(_problems_with('condition'))}; "
                "default: the problem's)")
    nets = lambda: "/".join(_problems_with("model"))  # noqa: E731
    _help_later(p.add_argument("--model", default=None, help="the net"),
                lambda: f"{nets()}: mlp, mlp:256-128, cnn, cnn:8-16, "
                "cnn:5x5-32-64:512:maxpool:valid (default: the data set's own)")
    _help_later(p.add_argument("--batch-size", type=_types.count(1), default=None,
                               help="examples per local step"),
                lambda: f"{nets()}: examples per local step (default 32)")
    _help_later(p.add_argument("--shards", default=None, help="how workers share the data"),
                lambda: f"{nets()}: iid, class or dirichlet:ALPHA (default iid)")


def _problem_options(args) -> dict:
    if _own.is_own(args.problem):  # one's own problem is built already
        given = [flag for flag in ("--dim", "--condition", "--model", "--batch-size",
                                   "--shards") if getattr(args, flag[2:].replace("-", "_"))
                 is not None]
        if given:
            raise ConfigError(f"{given[0]} builds a registered problem; --problem "
                              f"{args.problem} is built by your code (give it the option "
                              "there)")
        return {}
    nets = _problems_with("model")
    options = {}
    data = args.problem in nets
    for option in ("dim", "condition"):
        if getattr(args, option) is None:
            continue
        if args.problem not in _problems_with(option):
            raise ConfigError(f"--{option} applies to {', '.join(_problems_with(option))}, "
                              f"not --problem {args.problem}")
        options[option] = getattr(args, option)
    for field in ("model", "batch_size", "shards"):
        value = getattr(args, field)
        if value is None:
            continue
        if not data:
            raise ConfigError(f"--{field.replace('_', '-')} applies to the data problems "
                              f"({', '.join(nets)}), not to {args.problem!r}")
        options[field] = value
    if data and getattr(args, "start", None) is not None:
        raise ConfigError(f"--start: {args.problem} has a net's parameters; its start is "
                          "the model's seeded initialisation")
    return options


# ----------------------------------------------------------------------------- rule


def add_rule(p: argparse.ArgumentParser, *, learning_rate: bool = True) -> None:
    """The rule: ``--rule``, ``--param``, ``--local-steps`` (and ``--learning-rate``)."""
    p.add_argument("--rule", default="downpour",
                   help=f"update rule (see `asynclab rules`); {_own.HELP} (a rule declared "
                   "with asynclab.rules.declare, or a Rule)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a rule hyperparameter, e.g. --param gamma=1e-4 (repeatable; see "
                   "`asynclab rules`)")
    p.add_argument("--local-steps", type=_types.count(1), default=None,
                   help="λ, local steps per exchange (default: the rule's)")
    if learning_rate:
        _help_later(p.add_argument("--learning-rate", type=_types.positive, default=None,
                                   help="η (default: the problem's own)"),
                    lambda: f"η (default: the problem's own: {_default_rates()})")


def params(pairs) -> dict:
    """``--param NAME=VALUE`` pairs as a dict of rule hyperparameters."""
    out = {}
    for pair in pairs or ():
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--param takes NAME=VALUE, got {pair!r}")
        name = name.strip().replace("-", "_")
        if name in out:
            raise ConfigError(f"--param {name} is given twice; give each parameter once")
        out[name] = _types.value(text.strip())
    import inspect

    from ..engine import prepare

    own = set(inspect.signature(prepare).parameters) - {"hyperparameters"}
    for name in out:
        if name in own:
            raise ConfigError(f"{name} is not a rule hyperparameter: give it as "
                              f"--{name.replace('_', '-')} rather than --param")
    return out


# ----------------------------------------------------------------------------- cluster


def add_cluster(p: argparse.ArgumentParser, *, workers_help: str | None = None) -> None:
    """The cluster: workers, compute times, heterogeneity, the link, scheduled stragglers,
    the server's service times, failures, and a real cluster's step-time log."""
    p.add_argument("--workers", type=_types.count(1), default=None,
                   help=workers_help or "number of workers n (default: 4; 1 for "
                   "sequential_sgd; the device count with --backend pmap/threads)")
    add_compute(p)
    p.add_argument("--transfer-time", type=_types.non_negative, default=None,
                   metavar="SECONDS",
                   help="seconds every message spends on the link (commit up, reply down; "
                   "default 0)")
    p.add_argument("--straggler", action="append", type=_types.straggler, default=None,
                   metavar="WORKER:AT:DELAY",
                   help="the first local step worker WORKER starts at or after AT seconds "
                   "takes DELAY seconds longer (repeatable)")
    add_server(p)
    add_availability(p)
    logs = p.add_mutually_exclusive_group()
    logs.add_argument("--trace-log", default=None, metavar="LOG",
                      help="replay a real cluster's step-time log (docs/logs.md; 'example': "
                      "the shipped one): its workers, their measured times in order")
    logs.add_argument("--fit-log", default=None, metavar="LOG",
                      help="simulate a timing model fitted to a step-time log, with "
                      "--workers N workers (default: the log's)")
    p.add_argument("--log-end", default=None, choices=("stop", "wrap"),
                   help="--trace-log shorter than the budget: stop the run there "
                   "(default: stop) or wrap around to the log's start")


def add_compute(p: argparse.ArgumentParser) -> None:
    """``--compute``, ``--compute-mean``, ``--compute-shape``: a step's compute time; and
    heterogeneous workers (``--time-scale``, ``--heterogeneous``)."""
    p.add_argument("--compute", default=None, choices=DISTRIBUTIONS, metavar="DISTRIBUTION",
                   help=f"compute time per local step: {', '.join(DISTRIBUTIONS)} "
                   "(default: exponential)")
    p.add_argument("--compute-mean", type=_types.positive, default=None,
                   help="mean seconds per local step (default: 1.0)")
    p.add_argument("--compute-shape", type=_types.positive, default=None,
                   help="lognormal σ or gamma shape k (default: 1.0)")
    p.add_argument("--time-scale", type=_types.numbers, default=None, metavar="S1,S2,...",
                   help="heterogeneous workers: worker k's compute times are S_k times "
                   "longer, one multiplier > 0 per worker, e.g. 1,1.3,2.6,5.7")
    p.add_argument("--heterogeneous", type=_types.non_negative, default=None, metavar="SIGMA",
                   help="heterogeneous workers: multipliers drawn lognormal with log-std "
                   "SIGMA and mean 1 (asynclab.cluster.heterogeneous(workers, SIGMA), "
                   "seed 0: the same cluster for every --seed)")


def add_server(p: argparse.ArgumentParser) -> None:
    """``--server-time``, ``--server-distribution``, ``--server-shape``: the parameter
    server's service time per exchange."""
    p.add_argument("--server-time", type=_types.finite, default=None, metavar="SECONDS",
                   help="seconds the parameter server serves one exchange (FIFO queue), "
                   "the mean of --server-distribution (default: 0, a server that takes "
                   "no time)")
    p.add_argument("--server-distribution", default=None, choices=DISTRIBUTIONS,
                   metavar="DISTRIBUTION",
                   help=f"service time per exchange: {', '.join(DISTRIBUTIONS)}, drawn "
                   "with mean --server-time (default: constant)")
    p.add_argument("--server-shape", type=_types.positive, default=None,
                   help="lognormal σ or gamma shape k of the service time (default: 1.0)")


def add_availability(p: argparse.ArgumentParser) -> None:
    """``--mtbf``/``--mttr`` (Poisson churn) or ``--failures FILE`` (a schedule)."""
    g = p.add_argument_group("failures (the simulator)")
    g.add_argument("--mtbf", type=_types.positive, default=None, metavar="SECONDS",
                   help="mean time between failures of each worker (Poisson churn, with "
                   "--mttr)")
    g.add_argument("--mttr", type=_types.positive, default=None, metavar="SECONDS",
                   help="mean time to repair: mean seconds a worker stays down")
    g.add_argument("--failures", default=None, metavar="FILE",
                   help="an availability log: CSV rows worker,down_at,up_at")


#: The flags that set the distributions asynclab draws compute times from.
TIMING = {"compute": "--compute", "compute_mean": "--compute-mean",
          "compute_shape": "--compute-shape", "time_scale": "--time-scale",
          "heterogeneous": "--heterogeneous"}
#: The flags of the server's service times.
SERVER = {"server_time": "--server-time", "server_distribution": "--server-distribution",
          "server_shape": "--server-shape"}
#: The flags of the link and the scheduled stragglers.
NETWORK = {"transfer_time": "--transfer-time", "straggler": "--straggler"}


def _compute(args):
    from ..cluster import ComputeTime

    name = args.compute or "exponential"
    if args.compute_shape is not None and name not in ("lognormal", "gamma"):
        raise ConfigError(f"--compute-shape applies to --compute lognormal or gamma, not "
                          f"{name}")
    return ComputeTime(name, mean=1.0 if args.compute_mean is None else args.compute_mean,
                       shape=1.0 if args.compute_shape is None else args.compute_shape)


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


def _availability(args):
    """``Cluster.availability`` from the failure flags, or None without them."""
    from ..cluster import Availability, read_availability

    mtbf, mttr, path = args.mtbf, args.mttr, args.failures
    if path is not None:
        if mtbf is not None or mttr is not None:
            raise ConfigError("--failures gives a schedule; drop --mtbf/--mttr (Poisson "
                              "churn) or the file")
        return read_availability(path)
    if (mtbf is None) != (mttr is None):
        raise ConfigError("Poisson churn needs both --mtbf and --mttr, got only "
                          + ("--mtbf" if mttr is None else "--mttr"))
    return None if mtbf is None else Availability(mtbf=mtbf, mttr=mttr)


def _log_path(text: str):
    from ..cluster import example_log_path

    return example_log_path() if text == "example" else text


def default_workers(args) -> int:
    """The command line's default worker count: 4, or 1 for sequential SGD."""
    if args.workers is not None:
        return args.workers
    return 1 if args.rule == "sequential_sgd" else 4


def cluster_options(args, workers: int | None) -> tuple[int | None, dict]:
    """``(workers, fields)``: the run's worker count and the fields of its
    :class:`~asynclab.cluster.Cluster` (without ``group_size``, which is the rule's) from
    the cluster flags. A ``--trace-log`` decides the workers and their times; a
    ``--fit-log`` the times (its workers unless ``--workers`` says)."""
    from ..cluster import Link, Straggler

    fields = {}
    if args.trace_log or args.fit_log:
        given = [flag for name, flag in TIMING.items() if getattr(args, name) is not None]
        if given:
            log = "--trace-log" if args.trace_log else "--fit-log"
            raise ConfigError(f"{given[0]} applies only to the distributions asynclab "
                              f"draws: the log gives the compute times ({log}); drop it or "
                              "the log")
    if args.log_end is not None and not args.trace_log:
        raise ConfigError("--log-end applies only to --trace-log; drop it")
    if args.trace_log:
        from ..cluster import from_log

        log = from_log(_log_path(args.trace_log), end=args.log_end or "stop")
        if args.workers is not None and args.workers != log.workers:
            raise ConfigError(f"--trace-log replays the log's {log.workers} workers, not "
                              f"{args.workers}; use --fit-log LOG --workers {args.workers} "
                              "to simulate another number of workers")
        workers, fields["compute"] = log.workers, log.compute
    elif args.fit_log:
        from ..cluster import fit_log

        fitted = fit_log(_log_path(args.fit_log), bootstrap=0)
        workers = args.workers if args.workers is not None else fitted.workers
        fields["compute"] = fitted.resize(workers)
    else:
        fields["compute"] = _compute(args)
        if workers is not None:
            scale = _time_scale(args, workers)
            if scale is not None:
                fields["time_scale"] = scale
    fields["server_time"] = _server_time(args)
    availability = _availability(args)
    if availability is not None:
        fields["availability"] = availability
    if args.transfer_time:
        fields["network"] = Link(latency=args.transfer_time)
    if args.straggler:
        fields["stragglers"] = tuple(Straggler(worker=w, delay=d, at_time=at)
                                     for w, at, d in args.straggler)
    return workers, fields


# ----------------------------------------------------------------------------- rounds


def add_semisync(p: argparse.ArgumentParser) -> None:
    """Semi-synchronous rounds (synchronous rules): ``asynclab.cluster.SemiSync``."""
    g = p.add_argument_group("semi-synchronous rounds (synchronous rules)")
    g.add_argument("--quorum", type=_types.count(1), default=None, metavar="K",
                   help="a round closes at its K-th commit (K of --workers)")
    g.add_argument("--backup", type=_types.count(0), default=None, metavar="B",
                   help="B of --workers are backups: a round takes the first workers - B")
    g.add_argument("--window", type=_types.positive, default=None, metavar="T",
                   help="a round closes T seconds after it opened (with --min-count in)")
    g.add_argument("--min-count", type=_types.count(1), default=None, metavar="M",
                   help="with --window: wait for M commits (default 1)...")
    g.add_argument("--deadline", type=_types.deadline, default=None, metavar="D",
                   help="with --window: ...but close D seconds after the round opened; with "
                   "--quorum/--backup: close at the K-th commit or at D, whichever is first; "
                   "'adaptive': D = mean + c*std of the last rounds' arrival delays")
    g.add_argument("--deadline-history", type=_types.count(1), default=None, metavar="H",
                   help="with --deadline adaptive: the last H rounds set D (default 5)")
    g.add_argument("--deadline-spread", type=_types.non_negative, default=None, metavar="C",
                   help="with --deadline adaptive: D = mean + C*std (default 2)")
    g.add_argument("--late", default=None, choices=LATE,
                   help="the work that misses a round: discard it (default), or let it "
                   "count, stale, in a later round")


#: The flags of semi-synchronous rounds.
SEMISYNC = {"quorum": "--quorum", "backup": "--backup", "window": "--window",
            "min_count": "--min-count", "deadline": "--deadline", "late": "--late",
            "deadline_history": "--deadline-history", "deadline_spread": "--deadline-spread"}


def semisync(args):
    """The :class:`~asynclab.cluster.SemiSync` of the flags, or None without them."""
    given = given_flags(args, SEMISYNC)
    if not given:
        return None
    if not any(f in given for f in ("--quorum", "--backup", "--window")):
        raise ConfigError(f"{given[0]} shapes semi-synchronous rounds; give --quorum K, "
                          "--backup B or --window T")
    from ..cluster import SemiSync

    return SemiSync(quorum=args.quorum, backup=args.backup, window=args.window,
                    min_count=args.min_count, deadline=args.deadline,
                    deadline_history=args.deadline_history,
                    deadline_spread=args.deadline_spread, late=args.late or "discard")


# ----------------------------------------------------------------------------- budget, seeds


def add_budget(p: argparse.ArgumentParser, *, default_commits: int = 1000) -> None:
    """``--commits`` or ``--horizon``."""
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--commits", type=_types.count(1), default=None,
                        help=f"budget in commits, rounds for synchronous rules (default: "
                        f"{default_commits})")
    budget.add_argument("--horizon", type=_types.positive, default=None,
                        help="budget in simulated seconds (simulator only)")
    p.set_defaults(default_commits=default_commits)


def add_seeds(p: argparse.ArgumentParser, *, several: bool = True) -> None:
    """``--seed`` (and ``--seeds``, ``--trace-per-seed``)."""
    p.add_argument("--seed", type=int, default=None,
                   help="the seed, an integer in [0, 2**32) (default: 0)")
    if not several:
        return
    p.add_argument("--seeds", default=None,
                   help="several seeds, START:STOP or a,b,c (simulator only); every seed "
                   "replays the schedule simulated with the first seed (the same commit "
                   "order and staleness) with its own gradient noise and random start, "
                   "unless --trace-per-seed")
    p.add_argument("--trace-per-seed", action="store_true",
                   help="simulate a separate schedule for every seed (simulator only)")
    p.add_argument("--simulator", default="auto", choices=SIMULATORS,
                   help="what makes the schedules: auto (the array-speed generator where it "
                   "covers the timing model, many seeds at once; SimPy elsewhere: the same "
                   "traces), simpy (the reference simulator) or arrays")


def seeds(args) -> list[int]:
    """The seeds of ``--seed`` / ``--seeds``."""
    if getattr(args, "seeds", None) is None:
        return [_validate.seed(0 if args.seed is None else args.seed, "--seed")]
    if args.seed is not None:
        raise ConfigError("give either --seed or --seeds, not both")
    text = args.seeds.strip()
    try:
        if ":" in text:
            start, stop = (int(x) for x in text.split(":"))
            listed = None
        else:
            listed = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--seeds takes START:STOP or a comma list, got {text!r}") from None
    if listed is None:
        if stop <= start:
            raise ConfigError(f"--seeds {text!r} gives no seed")
        if stop - start > MAX_SEEDS:
            raise ConfigError(f"--seeds {text!r} asks for {stop - start} seeds; at most "
                              f"{MAX_SEEDS} in one run")
        _validate.seed(start, "--seeds START")
        _validate.seed(stop - 1, "--seeds STOP - 1")
        listed = range(start, stop)
    if not listed:
        raise ConfigError(f"--seeds {text!r} gives no seed")
    return _validate.seeds(listed, "--seeds")


# ----------------------------------------------------------------------------- replay


def add_replay(p: argparse.ArgumentParser) -> None:
    """What a replay computes: ``--noise``, ``--init``, ``--start``, ``--record-every``."""
    p.add_argument("--noise", type=_types.finite, default=0.0,
                   help="σ², variance of the additive Gaussian gradient noise")
    p.add_argument("--init", default="start", choices=INITS,
                   help="start: the problem's fixed start (or --start); random: uniform in "
                   "its box, drawn per seed; random_per_worker: synchronous rules only")
    p.add_argument("--start", default=None,
                   help="fixed start point, e.g. 1.0,1.75 (with --init start; default: the "
                   "problem's)")
    p.add_argument("--record-every", type=_types.count(1), default=None,
                   help="record the central loss every K events (default: about 100 "
                   "records, fewer where a net's records would cost more than a quarter of "
                   "its gradient work; every event with --backend pmap)")


def _start(text):
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"--start takes comma-separated numbers, got {text!r}") from None


def add_overwrite(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true",
                   help="replace output files that exist (only files of the kind this "
                   "command writes); without it an existing file is refused before any work")


def add_run(p: argparse.ArgumentParser) -> None:
    """The groups of flags that describe one run, in the order its help lists them: the
    problem, the rule, the cluster, the budget, the seeds and what the replay computes."""
    for add in (add_problem, add_rule, add_cluster, add_budget, add_seeds, add_replay):
        add(p)


def given_flags(args, flags: dict) -> list[str]:
    """The flags of ``flags`` (``{attribute: flag}``) that ``args`` gives."""
    return [flag for name, flag in flags.items() if getattr(args, name, None) not in (None, False)]


# ----------------------------------------------------------------------------- prepare


def prepare_options(args, *, backend: str = "sim") -> dict:
    """The keyword arguments of :func:`asynclab.prepare` from the flags a command has."""
    has = vars(args)
    if "start" in has and args.start is not None and args.init != "start":
        raise ConfigError(f"--start sets the fixed start, which --init {args.init} replaces; "
                          "drop one of them")
    rule_params = params(args.param)
    if backend in ("pmap", "threads") and args.workers is None:
        workers = None  # the device count decides
    else:
        workers = default_workers(args)
    rule = _own.own_rule(args.rule) if _own.is_own(args.rule) else args.rule
    options = {"rule": rule, "local_steps": args.local_steps, **rule_params}
    if backend != "threads":
        workers, fields = cluster_options(args, workers)
        options["cluster"] = fields
    options["workers"] = workers
    options["seeds"] = seeds(args)
    if "problem" in has:
        problem_options = _problem_options(args)
        problem = (_own.own_problem(args.problem) if _own.is_own(args.problem)
                   else args.problem)
        options.update(problem=problem, problem_options=problem_options or None)
    if "learning_rate" in has:
        options["learning_rate"] = args.learning_rate
    if "noise" in has:
        options.update(noise=args.noise, init=args.init, start=_start(args.start),
                       record_every=args.record_every)
    if "trace_per_seed" in has:
        options.update(trace_per_seed=args.trace_per_seed, simulator=args.simulator)
    commits = args.commits
    if commits is None and args.horizon is None:
        commits = args.default_commits
    options.update(commits=commits, horizon=args.horizon)
    if "quorum" in has:
        options["semisync"] = semisync(args)
    return options
