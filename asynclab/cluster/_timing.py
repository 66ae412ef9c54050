"""Timing models of a data-parallel cluster: compute times, links, stragglers.

These are plain, frozen configuration objects. They hold no simulation state and do
no optimizer arithmetic; :mod:`asynclab.cluster._simulator` turns them into a trace.
Every invalid value raises :class:`asynclab._errors.ConfigError` at construction, with
a message that names the field, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence

import numpy as np

from .. import _names, _validate
from .._errors import ConfigError
from ._availability import Availability

DISTRIBUTIONS: tuple[str, ...] = _names.DISTRIBUTIONS
"""The compute-time distributions :class:`ComputeTime` knows, by name."""


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_int(field: str, value, *, minimum: int) -> int:
    return _validate.count(value, field, low=minimum)


def _check_real(
    field: str,
    value,
    *,
    positive: bool = False,
    allow_inf: bool = False,
) -> float:
    """A real number >= 0 (or > 0), finite unless ``allow_inf``."""
    return _validate.number(value, field, low=0, low_open=positive, allow_inf=allow_inf)


def as_generator(rng, field: str = "rng") -> np.random.Generator:
    """Turns a generator, an integer seed or ``None`` (seed 0) into a generator.

    Args:
      rng: a ``numpy.random.Generator`` (used as is), an integer seed >= 0, or
        ``None``, which means seed 0 so that results are deterministic by default.
      field: the argument's name, for the error message.

    Returns:
      A ``numpy.random.Generator``.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng(0)
    if _is_int(rng) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise ConfigError(
        f"{field} must be a numpy.random.Generator, an integer seed >= 0 or None, got {rng!r}"
    )


#: The largest lognormal σ a ComputeTime takes: beyond it a step exceeds the mean with a
#: chance below 1 in 10,000 (Φ(−σ/2)), so that the steps a run draws average far below the
#: mean the distribution is given.
LOGNORMAL_SHAPE = 7.0


@dataclasses.dataclass(frozen=True)
class ComputeTime:
    """The time a worker takes for ONE local step, in simulated seconds.

    The same object describes a random service time at the parameter server
    (:attr:`Cluster.server_time`): one set of distributions, parameterised and checked
    alike, for both.

    Every distribution is parameterised by its mean, so changing the distribution
    changes the shape of the compute times but not the throughput:

    - ``"constant"``: always ``mean``;
    - ``"exponential"``: exponential with that mean (memoryless; staleness then is
      exactly geometric);
    - ``"lognormal"``: ``exp(N(mu, shape**2))`` with ``mu = log(mean) - shape**2 / 2``;
    - ``"gamma"``: gamma with shape ``k = shape`` and scale ``mean / k``.

    Attributes:
      distribution: one of :data:`DISTRIBUTIONS`.
      mean: mean time of one local step, finite and > 0.
      shape: lognormal: sigma of the underlying normal; gamma: the shape k; ignored
        by the other distributions. Finite and > 0.
    """

    distribution: str = "exponential"
    mean: float = 1.0
    shape: float = 1.0

    def __post_init__(self):
        if self.distribution not in DISTRIBUTIONS:
            raise ConfigError(
                f"ComputeTime.distribution must be one of {DISTRIBUTIONS}, "
                f"got {self.distribution!r}"
            )
        object.__setattr__(self, "mean", _check_real("ComputeTime.mean", self.mean, positive=True))
        object.__setattr__(
            self, "shape", _check_real("ComputeTime.shape", self.shape, positive=True)
        )
        # where draws stay representable in float64: a gamma of shape k < 0.01 draws 0 s
        # for ≥ 0.1 % of steps (1e-300 draws nothing else), a lognormal of σ > 30 too
        if self.distribution == "gamma" and self.shape < 0.01:
            raise ConfigError(f"ComputeTime.shape: a gamma of shape {self.shape!r} draws "
                              "0-second steps (float64 underflow); use shape >= 0.01")
        if self.distribution == "lognormal" and self.shape > LOGNORMAL_SHAPE:
            raise ConfigError(f"ComputeTime.shape: a lognormal of sigma {self.shape!r} puts "
                              "its mean in draws rarer than 1 in 10,000 (a step exceeds the "
                              "mean with chance Φ(−σ/2)): a run's steps average far below "
                              f"the mean it is given; use shape <= {LOGNORMAL_SHAPE:g}")

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        """Draws compute times of local steps.

        Args:
          rng: the generator to draw from (the only source of randomness).
          size: an int or a shape tuple, as for numpy's generator methods.

        Returns:
          A float64 array of that shape, every entry >= 0, with mean ``self.mean``.
        """
        mean = self.mean
        if self.distribution == "constant":
            return np.full(size, mean, dtype=np.float64)
        if self.distribution == "exponential":
            return rng.exponential(mean, size)
        if self.distribution == "lognormal":
            sigma = self.shape
            return rng.lognormal(math.log(mean) - 0.5 * sigma * sigma, sigma, size)
        return rng.gamma(self.shape, mean / self.shape, size)

    def stream(self, worker: int, rng: np.random.Generator):
        """Worker ``worker``'s step times, as for :meth:`TimingModel.stream`."""
        return lambda shape: self.sample(rng, shape)

    def describe(self) -> dict:
        """A JSON-able description (for a result's configuration)."""
        return {"distribution": self.distribution, "mean": self.mean, "shape": self.shape}

    def mean_step(self) -> float:
        """Mean time of one local step (seconds): ``mean``, as every timing model says it."""
        return float(self.mean)


class TimingModel:
    """A compute-time model that gives every worker its own stream of step times.

    :class:`ComputeTime` draws every worker's steps from one distribution. A timing
    model built from a real cluster (a replayed log, a fitted model with stragglers
    that come and go) needs per-worker sequences with memory; it subclasses this and
    goes into :attr:`Cluster.compute` in the same place, so the simulator's network,
    parameter-server queue, stragglers and budget apply to it unchanged.

    Attributes:
      workers: the number of workers the model describes (``Cluster.workers`` must
        match), or None for any number.
    """

    workers: int | None = None

    def stream(self, worker: int, rng: np.random.Generator):
        """Worker ``worker``'s step times: a function ``draw(shape) -> array``.

        ``draw((rows, local_steps))`` returns the next ``rows`` compute phases of
        ``local_steps`` steps each, in the worker's order, as a float64 array of shape
        ``(m, local_steps)`` with ``m <= rows``; ``m = 0`` means the worker has no more
        steps and the run ends. ``rng`` is the worker's own generator.
        """
        raise NotImplementedError

    def mean_step(self) -> float:
        """Mean time of one local step over workers (seconds)."""
        raise NotImplementedError

    def describe(self) -> dict:
        """A JSON-able description (for a result's configuration)."""
        return {"model": type(self).__name__}


@dataclasses.dataclass(frozen=True)
class Link:
    """A network link between a worker and the parameter server.

    Like the ``Cable`` of SimPy's examples, a link is an object of its own rather than
    delays scattered through the processes. It has unlimited capacity: messages on it
    do not wait for each other, each just takes :meth:`transfer_time`.

    Attributes:
      latency: seconds every message spends on the link, finite and >= 0.
      bandwidth: bytes per second, > 0 (``math.inf``: size costs nothing).
    """

    latency: float = 0.0
    bandwidth: float = math.inf

    def __post_init__(self):
        object.__setattr__(self, "latency", _check_real("Link.latency", self.latency))
        object.__setattr__(
            self,
            "bandwidth",
            _check_real("Link.bandwidth", self.bandwidth, positive=True, allow_inf=True),
        )

    def transfer_time(self, nbytes: int) -> float:
        """Time for one message of ``nbytes`` bytes to cross the link.

        Args:
          nbytes: message size in bytes.

        Returns:
          ``latency + nbytes / bandwidth`` in seconds.
        """
        if nbytes == 0:
            return self.latency
        return self.latency + nbytes / self.bandwidth


@dataclasses.dataclass(frozen=True)
class Straggler:
    """A scheduled straggler: one local step of worker ``worker`` takes ``delay`` longer.

    Give exactly one of ``at_step`` and ``at_time``.

    Attributes:
      worker: index of the worker that straggles (checked against the cluster size by
        :class:`Cluster`).
      delay: extra seconds added to that one local step, finite and >= 0.
      at_step: the worker's local step number (0-based, counted over the whole run)
        that takes ``delay`` longer.
      at_time: or: the first local step the worker STARTS at or after this simulated
        time takes ``delay`` longer (if the worker is waiting for the server, the link
        or the rest of its group at that time, it is the first step of its next compute
        phase).
    """

    worker: int
    delay: float
    at_step: int | None = None
    at_time: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "worker", _check_int("Straggler.worker", self.worker, minimum=0))
        object.__setattr__(self, "delay", _check_real("Straggler.delay", self.delay))
        if (self.at_step is None) == (self.at_time is None):
            raise ConfigError(
                "Straggler needs exactly one of at_step / at_time, got "
                f"at_step={self.at_step!r}, at_time={self.at_time!r}"
            )
        if self.at_step is not None:
            object.__setattr__(
                self, "at_step", _check_int("Straggler.at_step", self.at_step, minimum=0)
            )
        else:
            object.__setattr__(self, "at_time", _check_real("Straggler.at_time", self.at_time))


def _check_server_time(value) -> float | ComputeTime:
    """:attr:`Cluster.server_time` checked: a float >= 0, or a non-constant ComputeTime
    (a constant one becomes its mean)."""
    if isinstance(value, ComputeTime):
        return float(value.mean) if value.distribution == "constant" else value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return _check_real("Cluster.server_time", value)
    raise ConfigError("Cluster.server_time must be a finite number of seconds >= 0 or a "
                      f"ComputeTime (a distribution of service times), got {value!r}")


@dataclasses.dataclass(frozen=True)
class Cluster:
    """A cluster of ``workers`` always-busy workers around one parameter server.

    Attributes:
      workers: number of workers, an integer >= 1.
      compute: the compute time of one local step: a :class:`ComputeTime` (one
        distribution for every worker) or a :class:`TimingModel` (per-worker streams,
        e.g. a replayed log).
      time_scale: per-worker multiplier of compute times (heterogeneity), one finite
        value > 0 per worker; ``None`` means all 1. See :func:`heterogeneous`.
      stragglers: scheduled stragglers (:class:`Straggler`), worker indices in range.
      network: the link used for each commit (worker -> server) and each pull reply
        (server -> worker).
      message_bytes: size of one commit or pull message in bytes, an integer >= 0.
      server_time: service time of one exchange at the parameter server: a number of
        seconds, finite and >= 0, or a :class:`ComputeTime` whose draws are the service
        times (exponential, lognormal, gamma; a constant one is stored as its mean, so it
        gives the very traces of that number). The server serves one exchange at a time,
        first come first served. Random service times come from a generator of their
        own, so the workers' step times do not change. See :attr:`mean_server_time`.
      group_size: workers per compute group (mixed clusters), an integer >= 1 that
        divides ``workers``. Group g holds workers g·m … (g+1)·m − 1 (their
        ``time_scale`` entries and stragglers apply to them); in the asynchronous
        simulator it is synchronous inside (its phase ends when its slowest member
        finishes) and commits to the server as one unit. 1 means every worker commits
        on its own. Fully synchronous rounds are not affected by groups.
      intra_group_time: seconds of a group's internal all-reduce before it commits,
        finite and >= 0 (ignored when ``group_size`` is 1).
      availability: when workers are down (:class:`Availability`: a schedule, or
        Poisson churn with ``mtbf``/``mttr``), or None (always up); a cluster without
        groups. See :func:`simulate_async` and :func:`simulate_sync`.
    """

    workers: int
    compute: ComputeTime | TimingModel = ComputeTime()
    time_scale: tuple[float, ...] | None = None
    stragglers: tuple[Straggler, ...] = ()
    network: Link = Link()
    message_bytes: int = 0
    server_time: float | ComputeTime = 0.0
    group_size: int = 1
    intra_group_time: float = 0.0
    availability: Availability | None = None

    def __post_init__(self):
        n = _check_int("Cluster.workers", self.workers, minimum=1)
        object.__setattr__(self, "workers", n)
        if not isinstance(self.compute, ComputeTime | TimingModel):
            raise ConfigError(
                f"Cluster.compute must be a ComputeTime or a TimingModel, got {self.compute!r}"
            )
        modelled = getattr(self.compute, "workers", None)
        if isinstance(self.compute, TimingModel) and modelled is not None and modelled != n:
            raise ConfigError(
                f"Cluster.workers ({n}) must match the {modelled} workers of its compute "
                f"model {type(self.compute).__name__}"
            )
        if not isinstance(self.network, Link):
            raise ConfigError(f"Cluster.network must be a Link, got {self.network!r}")
        if self.time_scale is not None:
            if isinstance(self.time_scale, str | bytes) or not isinstance(
                self.time_scale, Sequence | np.ndarray
            ):
                raise ConfigError(
                    "Cluster.time_scale must be None or a sequence of one number > 0 per "
                    f"worker, got {self.time_scale!r}"
                )
            if len(self.time_scale) != n:
                raise ConfigError(
                    f"Cluster.time_scale must have one entry per worker ({n}), "
                    f"got {len(self.time_scale)} entries"
                )
            scale = tuple(
                _check_real(f"Cluster.time_scale[{k}]", s, positive=True)
                for k, s in enumerate(self.time_scale)
            )
            object.__setattr__(self, "time_scale", scale)
        if isinstance(self.stragglers, Straggler) or not isinstance(self.stragglers, Sequence):
            raise ConfigError(
                f"Cluster.stragglers must be a sequence of Straggler, got {self.stragglers!r}"
            )
        for i, s in enumerate(self.stragglers):
            if not isinstance(s, Straggler):
                raise ConfigError(f"Cluster.stragglers[{i}] must be a Straggler, got {s!r}")
            if s.worker >= n:
                raise ConfigError(
                    f"Cluster.stragglers[{i}].worker must be in [0, {n - 1}] for a cluster "
                    f"of {n} workers, got {s.worker}"
                )
        object.__setattr__(self, "stragglers", tuple(self.stragglers))
        object.__setattr__(
            self,
            "message_bytes",
            _check_int("Cluster.message_bytes", self.message_bytes, minimum=0),
        )
        object.__setattr__(self, "server_time", _check_server_time(self.server_time))
        m = _check_int("Cluster.group_size", self.group_size, minimum=1)
        if n % m:
            raise ConfigError(f"Cluster.group_size must divide Cluster.workers ({n}), got {m}")
        object.__setattr__(self, "group_size", m)
        object.__setattr__(
            self,
            "intra_group_time",
            _check_real("Cluster.intra_group_time", self.intra_group_time),
        )
        if self.availability is not None:
            if not isinstance(self.availability, Availability):
                raise ConfigError("Cluster.availability must be an Availability or None, "
                                  f"got {self.availability!r}")
            self.availability.check_workers(n)
            if m > 1:
                raise ConfigError("Cluster.availability needs a cluster without groups "
                                  f"(group_size 1), got group_size={m}")

    @property
    def groups(self) -> int:
        """Number of committing units: ``workers // group_size``."""
        return self.workers // self.group_size

    @property
    def scales(self) -> tuple[float, ...]:
        """The per-worker compute-time multipliers (all 1 when ``time_scale`` is None)."""
        return self.time_scale if self.time_scale is not None else (1.0,) * self.workers

    @property
    def mean_server_time(self) -> float:
        """Mean service time of one exchange at the server (seconds), constant or not."""
        s = self.server_time
        return s.mean_step() if isinstance(s, ComputeTime) else s

    @property
    def random_server(self) -> bool:
        """Whether service times are random (a non-constant :class:`ComputeTime`)."""
        return isinstance(self.server_time, ComputeTime)

    @property
    def transfer_time(self) -> float:
        """Time for one commit or pull message to cross :attr:`network`."""
        return self.network.transfer_time(self.message_bytes)

    def describe(self) -> dict:
        """A JSON-able description of every setting (for a result's configuration):
        ``compute`` (:meth:`ComputeTime.describe`), ``time_scale`` (a list, or None),
        ``stragglers`` (one dict each), ``network`` (latency, bandwidth — None when
        unlimited —, message bytes and the resulting transfer time), ``server`` (the
        service time's distribution, mean and shape; ``"constant"`` for a number),
        ``groups`` (group size, intra-group time) and ``failures`` (None; ``mtbf`` and
        ``mttr``; or the ``schedule`` of ``[worker, down_at, up_at]``)."""
        server = self.server_time
        availability = self.availability
        if availability is None:
            failures = None
        elif availability.random:
            failures = {"mtbf": availability.mtbf, "mttr": availability.mttr}
        else:
            failures = {"schedule": [[int(k), float(down), float(up)]
                                     for k, down, up in availability.schedule]}
        return {
            "compute": self.compute.describe(),
            "time_scale": None if self.time_scale is None else list(self.time_scale),
            "stragglers": [dataclasses.asdict(s) for s in self.stragglers],
            "network": {"latency": self.network.latency,
                        "bandwidth": (None if math.isinf(self.network.bandwidth)
                                      else self.network.bandwidth),
                        "message_bytes": self.message_bytes,
                        "transfer_time": self.transfer_time},
            "server": (server.describe() if isinstance(server, ComputeTime)
                       else {"distribution": "constant", "mean": float(server),
                             "shape": None}),
            "groups": {"group_size": self.group_size,
                       "intra_group_time": self.intra_group_time},
            "failures": failures,
        }


def heterogeneous(workers: int, spread: float, rng=None) -> tuple[float, ...]:
    """Draws per-worker compute-time multipliers for :attr:`Cluster.time_scale`.

    The factors are lognormal, ``exp(spread * z_k)`` with ``z_k ~ N(0, 1)``, then divided
    by their arithmetic mean, so the cluster's mean compute time is unchanged and only
    its spread across workers grows with ``spread``. ``spread = 0`` gives all 1.

    Args:
      workers: number of workers, an integer >= 1.
      spread: sigma of the log of the factors, finite and >= 0.
      rng: a ``numpy.random.Generator``, an integer seed or ``None`` (seed 0).

    Returns:
      A tuple of ``workers`` floats > 0 whose mean is 1.
    """
    n = _check_int("workers", workers, minimum=1)
    sigma = _check_real("spread", spread)
    z = as_generator(rng).standard_normal(n)
    factors = np.exp(sigma * z)
    factors /= factors.mean()
    return tuple(float(f) for f in factors)
