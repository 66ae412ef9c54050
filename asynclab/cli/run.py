"""``asynclab run``: the simulator, or real devices (``--backend pmap`` / ``threads``)."""

from __future__ import annotations

import argparse

from .. import ConfigError
from . import _flags, _types
from ._output import report


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    _flags.add_run(p)
    p.add_argument("--backend", default="sim", choices=("sim", "pmap", "threads"),
                   help="sim: simulated cluster; pmap: one worker per device, "
                   "replaying the simulated schedule; threads: free-running workers")
    p.add_argument("--devices", type=_types.count(1, 4096), default=None,
                   help="devices for --backend pmap/threads (default: --workers); with the "
                   "simulator, the local devices the seeds are split over (default: all)")
    p.add_argument("--runs-per-call", type=_types.count(1), default=None,
                   help="seeds replayed per compiled call (default: all at once); fewer hold "
                   "less memory at once, with the same numbers")
    p.add_argument("--simulate-devices", action="store_true",
                   help="run on --devices simulated CPU devices, even where a GPU is installed")
    p.add_argument("--checkpoint", default=None, help="pmap: checkpoint file")
    p.add_argument("--checkpoint-every", type=_types.count(1), default=None,
                   help="pmap: checkpoint every K segments/rounds (default: at the end only)")
    p.add_argument("--resume", action="store_true", help="pmap: continue from --checkpoint")
    _flags.add_semisync(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--save", default=None, help="save the result here (a .npz file)")
    _flags.add_overwrite(p)
    p.add_argument("--plot", default=None,
                   help="draw the run into this file (.png, .pdf, .svg, ...)")


_DEVICE_ONLY = {"devices": "--devices", "simulate_devices": "--simulate-devices"}
_PMAP_ONLY = {"checkpoint": "--checkpoint", "checkpoint_every": "--checkpoint-every",
              "resume": "--resume"}
_SIM_ONLY = {"seeds": "--seeds", "trace_per_seed": "--trace-per-seed", "horizon": "--horizon",
             "mtbf": "--mtbf", "mttr": "--mttr", "failures": "--failures",
             "runs_per_call": "--runs-per-call"}


def check_flags(args) -> None:
    """Refuse flags that this configuration would ignore, and unwritable outputs, before
    anything is computed."""
    backend = args.backend
    refused = []
    if backend == "sim" and args.simulate_devices and args.devices is None:
        refused += [("--simulate-devices", "--devices N")]
    if backend != "pmap":
        refused += [(f, "--backend pmap") for f in _flags.given_flags(args, _PMAP_ONLY)]
    if backend != "sim":
        refused += [(f, "the simulator (--backend sim)")
                    for f in _flags.given_flags(args, _SIM_ONLY)]
    if backend == "threads":
        refused += [(f, "the simulated schedules (threads measure real compute times)")
                    for f in _flags.given_flags(args, {**_flags.TIMING, **_flags.SERVER,
                                                       **_flags.NETWORK})]
        refused += [(f, "the simulated schedules (free-running threads keep no rounds)")
                    for f in _flags.given_flags(args, _flags.SEMISYNC)]
        if args.trace_log or args.fit_log:
            raise ConfigError("--trace-log / --fit-log set a simulated schedule; --backend "
                              "threads measures its own (asynclab.cluster.log_from_threads "
                              "records it)")
    if refused:
        flag, where = refused[0]
        if flag == "--seeds":
            raise ConfigError(f"--backend {backend} runs one seed (--seed); --seeds applies "
                              "only to the simulator (--backend sim)")
        if flag == "--runs-per-call":
            raise ConfigError("--runs-per-call: the seeds of --backend sim are replayed in "
                              "turns; --backend pmap and threads run one seed")
        backend_bound = where.startswith(("--backend", "the simulator", "the simulated"))
        raise ConfigError(f"{flag} applies only to {where}; drop it"
                          + (f" with --backend {backend}" if backend_bound else ""))
    if args.resume and args.checkpoint is None:
        raise ConfigError("--resume continues from --checkpoint FILE; give the file")
    if args.checkpoint_every is not None and args.checkpoint is None:
        raise ConfigError("--checkpoint-every needs --checkpoint FILE")
    check_outputs(args)


def check_outputs(args) -> None:
    """Every output file, before any work: writable, not an existing file unless
    --overwrite (or --resume for the checkpoint), no two flags naming one file."""
    from .. import _files

    checkpoint = getattr(args, "checkpoint", None)
    _files.distinct_outputs({"--save": args.save, "--plot": getattr(args, "plot", None),
                             "--checkpoint": checkpoint})
    if args.save is not None:
        _files.output_path(args.save, "--save", kind="result", suffixes=(".npz",),
                           overwrite=args.overwrite)
    if getattr(args, "plot", None) is not None:
        _files.output_path(args.plot, "--plot", kind="figure", overwrite=args.overwrite)
    if checkpoint is not None:
        resuming = args.resume and _files.local_path(checkpoint, "--checkpoint").exists()
        if resuming:  # read and checked as a checkpoint of this run before any work
            path = _files.input_file(checkpoint, "--checkpoint")
            _files.writable_folder(path.parent, "--checkpoint", for_file=path)
        else:
            _files.output_path(checkpoint, "--checkpoint", kind="checkpoint",
                               overwrite=args.overwrite)


def _devices(args):
    """The devices of the run: a count, or (``--simulate-devices``) that many simulated
    CPU devices, selected before JAX starts, whatever accelerator is installed."""
    if not args.simulate_devices:
        return args.devices
    from ..backends import cpu_devices, simulate_cpu_devices

    n = args.devices if args.devices is not None else args.workers
    if n is None:
        raise ConfigError(f"--backend {args.backend} needs --devices N")
    simulate_cpu_devices(n)
    return cpu_devices(n) if args.backend != "sim" else n


def spec(args):
    """The prepared run of the flags (:func:`asynclab.prepare`)."""
    from ..engine import prepare

    check_flags(args)
    if args.backend != "sim" and args.devices is None and args.workers is None:
        raise ConfigError(f"--backend {args.backend} needs --devices N")
    devices = _devices(args)
    options = _flags.prepare_options(args, backend=args.backend)
    return prepare(**options, devices=devices, runs_per_call=args.runs_per_call,
                   backend=args.backend)


def run_command(args) -> int:
    prepared = spec(args)
    if prepared.backend == "sim":
        from ..engine import run

        result, extra = run(prepared), None
    else:
        from ..backends import run_devices

        result, extra = run_devices(prepared, checkpoint=args.checkpoint,
                                    checkpoint_every=args.checkpoint_every,
                                    resume=args.resume, overwrite=args.overwrite,
                                    progress=False if args.json else None)
    report(args, result, prepared.problem, extra)
    return 0
