"""``collider``: a synthetic, seeded, physics-flavoured tabular classification task.

Nothing here is measured data. The generator mimics the structure of the HIGGS data set
(low-level kinematics of reconstructed objects plus high-level invariant masses) with a
deliberately simple event model, so that a net has a physics-like task to learn offline.

Every event has one lepton, missing transverse energy and four jets:

- **signal** (label 1): a resonance X of mass ``mass`` (125 GeV by default, Breit–Wigner
  width 4 GeV) decays isotropically in its rest frame into two b-quark jets;
- **background** (label 0): the jet pair comes from a smooth continuum,
  ``m = 30 GeV + Exponential(mean 80 GeV)``, decaying with a ``1 + cos²θ*`` angular
  distribution; half of these pairs are b-quarks, half light quarks.

In both classes the pair has transverse momentum ``Exponential(mean 50 GeV)`` (signal) or
``Exponential(mean 35 GeV)`` (background) and rapidity ``N(0, 1.2²)`` (signal) or
``N(0, 1.6²)`` (background). Two radiation jets (``pT = 20 + Exponential(25)`` GeV,
``η ~ N(0, 2²)``) and a W boson (mass 80.4 GeV, width 2.1 GeV, rapidity ``N(0, 1.2²)``)
decaying isotropically into a lepton and a neutrino balance the transverse momentum.

Detector: jet ``pT`` is smeared by 15 % (Gaussian, relative), jet ``η, φ`` by 0.03, the
lepton ``pT`` by 2 %; the neutrino escapes and the missing transverse energy is minus
the vector sum of the *measured* visible transverse momenta. A jet from a b-quark is
b-tagged with probability 0.7, a light jet with 0.05. In 30 % of signal events the
reconstruction pairs the wrong jets (one resonance jet swapped for a radiation jet),
which spreads part of the signal over the continuum as in real analyses.

Features (28; GeV and radians; ``jet1, jet2`` are the reconstructed pair ordered by
``pT``, ``jet3, jet4`` the other two jets ordered by ``pT``), see :data:`FEATURES`:

- low level (21): lepton ``pt, eta, phi``; ``missing_energy`` and its ``phi``; for each
  of four jets ``pt, eta, phi, btag``;
- high level (7): ``m_jj`` (invariant mass of the pair: the resonance peak), ``pt_jj``,
  ``delta_r_jj``, ``mt_lv`` (transverse mass of lepton and missing energy), ``m_jjlv``
  (mass of pair, lepton and missing energy with the neutrino's ``p_z`` set to 0),
  ``m_4j`` (mass of the four jets) and ``h_t`` (scalar sum of jet and lepton ``pT``).

All measured objects are treated as massless when masses are computed.
"""

from __future__ import annotations

import numpy as np

from .._errors import ConfigError

FEATURES: tuple[str, ...] = (
    "lepton_pt", "lepton_eta", "lepton_phi", "missing_energy", "missing_energy_phi",
    *(f"jet{i}_{q}" for i in range(1, 5) for q in ("pt", "eta", "phi", "btag")),
    "m_jj", "pt_jj", "delta_r_jj", "mt_lv", "m_jjlv", "m_4j", "h_t",
)

#: documented constants of the event model (GeV)
RESONANCE_WIDTH = 4.0
W_MASS, W_WIDTH = 80.4, 2.1
JET_RESOLUTION = 0.15
MISPAIRED = 0.3


def _breit_wigner(rng, size, mass, width, low, high):
    # a Cauchy (non-relativistic Breit-Wigner) truncated to [low, high] by inversion
    lo, hi = (np.arctan(2 * (b - mass) / width) for b in (low, high))
    return mass + 0.5 * width * np.tan(rng.uniform(lo, hi, size))


def _one_plus_cos2(rng, size):
    # cos θ* with density ∝ 1 + c² on [-1, 1], by rejection
    out = np.empty(0)
    while out.size < size:
        c = rng.uniform(-1, 1, 2 * size)
        out = np.concatenate([out, c[rng.uniform(0, 2, c.size) < 1 + c * c]])
    return out[:size]


def _parent(rng, mass, pt, rapidity):
    """Four-momenta ``(E, px, py, pz)`` of particles of given mass, pT and rapidity."""
    phi = rng.uniform(-np.pi, np.pi, mass.size)
    mt = np.sqrt(mass**2 + pt**2)
    return np.stack([mt * np.cosh(rapidity), pt * np.cos(phi), pt * np.sin(phi),
                     mt * np.sinh(rapidity)], axis=-1)


def _two_body(rng, parent, cos_theta):
    """Two massless daughters of ``parent``, back to back in its rest frame, boosted."""
    mass = np.sqrt(np.maximum(parent[:, 0] ** 2 - np.sum(parent[:, 1:] ** 2, axis=-1), 0))
    phi = rng.uniform(-np.pi, np.pi, mass.size)
    sin_theta = np.sqrt(1 - cos_theta**2)
    half = mass / 2
    direction = np.stack([sin_theta * np.cos(phi), sin_theta * np.sin(phi), cos_theta], -1)
    beta = parent[:, 1:] / parent[:, :1]
    beta2 = np.sum(beta**2, axis=-1, keepdims=True)
    gamma = 1 / np.sqrt(1 - beta2)
    daughters = []
    for sign in (1.0, -1.0):
        p = sign * half[:, None] * direction
        bp = np.sum(beta * p, axis=-1, keepdims=True)
        energy = gamma * (half[:, None] + bp)
        factor = np.where(beta2 > 0, (gamma - 1) * bp / np.where(beta2 > 0, beta2, 1), 0)
        momentum = p + (factor + gamma * half[:, None]) * beta
        daughters.append(np.concatenate([energy, momentum], axis=-1))
    return daughters


def _kinematics(p):
    """``(pt, eta, phi)`` of four-momenta ``(..., 4)``."""
    pt = np.hypot(p[..., 1], p[..., 2])
    return pt, np.arcsinh(p[..., 3] / pt), np.arctan2(p[..., 2], p[..., 1])


def _massless(pt, eta, phi):
    return np.stack([pt * np.cosh(eta), pt * np.cos(phi), pt * np.sin(phi),
                     pt * np.sinh(eta)], axis=-1)


def _mass(p):
    return np.sqrt(np.maximum(p[..., 0] ** 2 - np.sum(p[..., 1:] ** 2, axis=-1), 0))


def collider_events(examples: int = 20_000, seed: int = 0, *, signal_fraction: float = 0.5,
                    mass: float = 125.0):
    """Generate ``examples`` synthetic events (see the module docstring for the model).

    Args:
      examples: number of events.
      seed: seed of the ``numpy.random.Generator`` that draws everything.
      signal_fraction: the probability that an event is signal.
      mass: the resonance mass in GeV.

    Returns:
      ``(features, labels)``: float32 ``(examples, 28)`` in the order of :data:`FEATURES`
      (not standardised) and int32 ``(examples,)`` with 1 for signal.
    """
    if isinstance(examples, bool) or int(examples) != examples or examples < 2:
        raise ConfigError(f"collider: examples must be an integer >= 2, got {examples!r}")
    if not 0 < signal_fraction < 1:
        raise ConfigError(f"collider: signal_fraction must lie in (0, 1), got {signal_fraction}")
    if not 20 < mass < 1000:
        raise ConfigError(f"collider: mass must lie in (20, 1000) GeV, got {mass}")
    n = int(examples)
    rng = np.random.default_rng(seed)
    signal = rng.uniform(size=n) < signal_fraction

    # the jet pair: a resonance or the continuum
    pair_mass = np.where(
        signal,
        _breit_wigner(rng, n, mass, RESONANCE_WIDTH, 0.5 * mass, 1.5 * mass),
        30.0 + rng.exponential(80.0, n))
    pair_pt = np.where(signal, rng.exponential(50.0, n), rng.exponential(35.0, n))
    pair_y = rng.normal(0, 1, n) * np.where(signal, 1.2, 1.6)
    pair = _parent(rng, pair_mass, pair_pt, pair_y)
    cos_theta = np.where(signal, rng.uniform(-1, 1, n), _one_plus_cos2(rng, n))
    quark_a, quark_b = _two_body(rng, pair, cos_theta)
    pair_is_b = signal | (rng.uniform(size=n) < 0.5)

    # radiation jets, and a W that balances the transverse momentum
    radiation = [_massless(20.0 + rng.exponential(25.0, n), rng.normal(0, 2.0, n),
                           rng.uniform(-np.pi, np.pi, n)) for _ in range(2)]
    recoil = -(pair[:, 1:3] + radiation[0][:, 1:3] + radiation[1][:, 1:3])
    w_mass = _breit_wigner(rng, n, W_MASS, W_WIDTH, 60.0, 100.0)
    w_pt = np.hypot(recoil[:, 0], recoil[:, 1])
    w_mt = np.sqrt(w_mass**2 + w_pt**2)
    w_y = rng.normal(0, 1.2, n)
    w = np.stack([w_mt * np.cosh(w_y), recoil[:, 0], recoil[:, 1], w_mt * np.sinh(w_y)], -1)
    lepton, _neutrino = _two_body(rng, w, rng.uniform(-1, 1, n))

    # detector
    def measure_jet(p):
        pt, eta, phi = _kinematics(p)
        pt = pt * np.maximum(1 + JET_RESOLUTION * rng.normal(size=n), 0.05)
        eta = eta + 0.03 * rng.normal(size=n)
        phi = np.angle(np.exp(1j * (phi + 0.03 * rng.normal(size=n))))
        return pt, eta, phi

    jets = [measure_jet(p) for p in (quark_a, quark_b, *radiation)]
    is_b = [pair_is_b, pair_is_b, np.zeros(n, bool), np.zeros(n, bool)]
    tags = [(rng.uniform(size=n) < np.where(b, 0.7, 0.05)).astype(np.float64) for b in is_b]
    lepton_pt, lepton_eta, lepton_phi = _kinematics(lepton)
    lepton_pt = lepton_pt * (1 + 0.02 * rng.normal(size=n))

    jet_pt = np.stack([j[0] for j in jets], -1)
    jet_eta = np.stack([j[1] for j in jets], -1)
    jet_phi = np.stack([j[2] for j in jets], -1)
    jet_tag = np.stack(tags, -1)

    # the reconstruction pairs jets (0, 1); for mispaired signal events, swap jet 1 and 2
    swap = signal & (rng.uniform(size=n) < MISPAIRED)
    order = np.tile(np.arange(4), (n, 1))
    order[swap, 1], order[swap, 2] = 2, 1
    # within the pair and within the rest, order by pT (leading first)
    take = np.take_along_axis
    pts = take(jet_pt, order, axis=1)
    for lo in (0, 2):
        flip = pts[:, lo] < pts[:, lo + 1]
        order[flip, lo], order[flip, lo + 1] = order[flip, lo + 1], order[flip, lo].copy()
    jet_pt, jet_eta, jet_phi, jet_tag = (take(a, order, axis=1)
                                         for a in (jet_pt, jet_eta, jet_phi, jet_tag))

    visible_x = np.sum(jet_pt * np.cos(jet_phi), -1) + lepton_pt * np.cos(lepton_phi)
    visible_y = np.sum(jet_pt * np.sin(jet_phi), -1) + lepton_pt * np.sin(lepton_phi)
    met, met_phi = np.hypot(visible_x, visible_y), np.arctan2(-visible_y, -visible_x)

    jet_p = _massless(jet_pt, jet_eta, jet_phi)  # (n, 4 jets, 4)
    lepton_p = _massless(lepton_pt, lepton_eta, lepton_phi)
    neutrino_p = _massless(met, np.zeros(n), met_phi)  # p_z unknown: set to 0
    pair_p = jet_p[:, 0] + jet_p[:, 1]
    d_phi = np.angle(np.exp(1j * (jet_phi[:, 0] - jet_phi[:, 1])))
    high = [
        _mass(pair_p),
        np.hypot(pair_p[:, 1], pair_p[:, 2]),
        np.hypot(jet_eta[:, 0] - jet_eta[:, 1], d_phi),
        np.sqrt(np.maximum(2 * lepton_pt * met * (1 - np.cos(lepton_phi - met_phi)), 0)),
        _mass(pair_p + lepton_p + neutrino_p),
        _mass(np.sum(jet_p, axis=1)),
        np.sum(jet_pt, -1) + lepton_pt,
    ]
    low = [lepton_pt, lepton_eta, lepton_phi, met, met_phi]
    for i in range(4):
        low += [jet_pt[:, i], jet_eta[:, i], jet_phi[:, i], jet_tag[:, i]]
    features = np.stack(low + high, axis=-1).astype(np.float32)
    return features, signal.astype(np.int32)
