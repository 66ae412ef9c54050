"""The environment, translated once at start-up: what JAX, XLA, matplotlib and the
terminal are told, made into something each of them takes (or one line saying why not).

- :func:`translate` (when ``asynclab`` is imported, before anything imports JAX):
  ``JAX_PLATFORMS`` in any case, with spaces, or empty is made what JAX reads
  (``CPU`` -> ``cpu``; empty -> unset, JAX's own choice).
- :func:`check` (the command line, before JAX starts a backend): a ``XLA_FLAGS`` or
  ``JAX_PLATFORMS`` that JAX cannot start with is one line naming the variable, not an
  ``AssertionError`` from deep inside JAX or XLA aborting the process with a long dump.
- :func:`prepare_matplotlib` (before asynclab first imports matplotlib): an ``MPLBACKEND``
  matplotlib does not know (it would refuse to be imported) falls back to Agg, with one
  warning.
- :func:`ascii_streams` (the command line): where stdout or stderr cannot encode the
  lab's symbols (``PYTHONIOENCODING=ascii``, a C locale without UTF-8), they are written
  as ASCII names (``λ`` as ``lambda``, ``σ²`` as ``sigma^2``, ``τ`` as ``tau``) instead of
  ending in a UnicodeEncodeError.
- The compilation cache's folder (``asynclab._cache``): one that cannot be written turns
  the cache off with one warning.
"""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
import warnings

from ._errors import ConfigError

_TRANSLATED: list[bool] = []


def platforms(raw: str) -> str:
    """``JAX_PLATFORMS`` as JAX reads it: lower case, no spaces, no empty entries
    (``" CPU, "`` is ``"cpu"``; ``""`` means JAX's own choice)."""
    return ",".join(p.strip().lower() for p in raw.split(",") if p.strip())


def translate() -> None:
    """Make the variables JAX reads at import what it takes; once per process, before
    JAX starts (where JAX was imported already, its setting is updated too)."""
    if _TRANSLATED:
        return
    _TRANSLATED.append(True)
    raw = os.environ.get("JAX_PLATFORMS")
    if raw is None:
        return
    clean = platforms(raw)
    if clean == raw:
        return
    if clean:
        os.environ["JAX_PLATFORMS"] = clean
    else:
        del os.environ["JAX_PLATFORMS"]
    if "jax" in sys.modules:  # imported before asynclab: tell its configuration too
        try:
            sys.modules["jax"].config.update("jax_platforms", clean or None)
        except Exception:  # noqa: BLE001 - a backend already started keeps its platforms
            pass


_MATPLOTLIB: list[bool] = []


def prepare_matplotlib() -> None:
    """Before matplotlib is first imported: an ``MPLBACKEND`` it does not know (it would
    refuse to be imported) becomes Agg, with one warning; a known one is kept."""
    if _MATPLOTLIB:
        return
    _MATPLOTLIB.append(True)
    value = os.environ.get("MPLBACKEND")
    if value is None or "matplotlib" in sys.modules:
        return
    del os.environ["MPLBACKEND"]  # so that importing matplotlib cannot fail on it
    try:
        import matplotlib
        from matplotlib import rcsetup

        try:
            backend = rcsetup.validate_backend(value.strip()) if value.strip() else None
        except (ValueError, ImportError):
            backend = None
        if backend is None:
            warnings.warn(f"MPLBACKEND={value!r} is not a matplotlib backend; using Agg "
                          "(asynclab draws into files)", RuntimeWarning, stacklevel=2)
            os.environ["MPLBACKEND"] = "Agg"
            matplotlib.rcParams["backend"] = "Agg"
        else:
            os.environ["MPLBACKEND"] = value
            matplotlib.rcParams["backend"] = backend
    except BaseException:
        os.environ.setdefault("MPLBACKEND", value)
        raise


#: ASCII names for the symbols the command line prints (see :func:`ascii_name`).
ASCII_NAMES = {
    "λ": "lambda", "σ": "sigma", "τ": "tau", "η": "eta", "μ": "mu", "ρ": "rho",
    "γ": "gamma", "α": "alpha", "β": "beta", "ε": "epsilon", "κ": "kappa", "θ": "theta",
    "φ": "phi", "δ": "delta", "Δ": "Delta", "Σ": "sum", "∇": "grad", "²": "^2", "³": "^3",
    "¹": "^1", "⁻": "^-", "ᵏ": "^k", "ᵢ": "_i", "½": "1/2", "−": "-", "–": "-", "—": "--",
    "…": "...", "×": "x", "·": "*", "±": "+/-", "≥": ">=", "≤": "<=", "≈": "~", "≠": "!=",
    "≡": "==", "∝": "~", "→": "->", "←": "<-", "∞": "inf", "√": "sqrt", "‖": "||",
    "⊙": "*", "⌊": "floor(", "⌋": ")", "\u0303": "~", "\u0302": "^", "’": "'", "‘": "'",
    "“": '"', "”": '"', "█": "#", "▏": "|", "▎": "|", "▍": "|", "▌": "|", "▋": "|",
    "▊": "|", "▉": "|",
}


def ascii_name(character: str) -> str:
    """The ASCII a stream that cannot encode ``character`` writes instead: its name in
    :data:`ASCII_NAMES`, else its compatibility decomposition without accents (``₁``:
    ``1``, ``é``: ``e``), else ``?``."""
    if character in ASCII_NAMES:
        return ASCII_NAMES[character]
    import unicodedata

    plain = unicodedata.normalize("NFKD", character).encode("ascii", "ignore").decode()
    return plain or "?"


def _ascii_names(error: UnicodeError):
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start:error.end]
    return "".join(ascii_name(c) for c in text), error.end


codecs.register_error("asynclab-ascii", _ascii_names)

#: What a stream must be able to write for the lab's symbols to be printed as they are.
_SYMBOLS = "λσ²τη−×…"


def ascii_streams(streams=None) -> None:
    """Make stdout and stderr write ASCII names for the symbols they cannot encode (see
    :data:`ASCII_NAMES`); streams that can encode them are left as they are."""
    for stream in streams if streams is not None else (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue
        try:
            _SYMBOLS.encode(encoding)
        except UnicodeEncodeError:
            stream.reconfigure(errors="asynclab-ascii")
        except LookupError:  # an encoding Python does not know: write ASCII
            stream.reconfigure(encoding="ascii", errors="asynclab-ascii")

#: XLA flags asynclab's own docs and tests set; any other flag is tried in a child
#: process first, because XLA aborts the process on a flag it does not know.
KNOWN_XLA_FLAGS = ("--xla_force_host_platform_device_count",)

_checked: set[tuple[str, str]] = set()


def check() -> None:
    """Refuse a ``XLA_FLAGS`` or ``JAX_PLATFORMS`` that JAX cannot start with.

    Raises:
      ConfigError: one line naming the variable and its value.
    """
    flags = os.environ.get("XLA_FLAGS", "").strip()
    platforms = os.environ.get("JAX_PLATFORMS", "").strip()
    if (flags, platforms) in _checked:
        return
    for token in flags.split():
        name, _, value = token.partition("=")
        if name == "--xla_force_host_platform_device_count" and not (
                value.isdigit() and int(value) >= 1):
            raise ConfigError(f"XLA_FLAGS={flags!r}: {name} takes a count >= 1, got "
                              f"{value!r}")
    unknown = [token for token in flags.split() if token.split("=")[0] not in KNOWN_XLA_FLAGS]
    if unknown:
        _try_in_a_child(flags, unknown)
    if platforms and set(platforms.lower().split(",")) - {"cpu", ""}:
        # cpu always starts, and starting it here would fix its device count before
        # --simulate-devices can set it; any other platform is tried now
        _try_platforms(platforms)
    _checked.add((flags, platforms))


def _try_in_a_child(flags: str, unknown: list[str]) -> None:
    probe = "import jax; jax.devices()"
    # on the CPU alone, which always starts: a platform this machine lacks is
    # JAX_PLATFORMS's fault, told by _try_platforms, not the flags'
    environment = dict(os.environ, JAX_PLATFORMS="cpu")
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              timeout=120, env=environment)
    except (OSError, subprocess.TimeoutExpired):
        return  # cannot tell; JAX will say what it says
    if done.returncode == 0:
        return
    lines = [line for line in done.stderr.splitlines() if "XLA_FLAGS" in line]
    reason = lines[0].split("]")[-1].strip() if lines else "XLA refuses to start with it"
    raise ConfigError(f"XLA_FLAGS={flags!r}: {reason}; remove {' '.join(unknown)} or unset "
                      "XLA_FLAGS")


def import_jax() -> None:
    """Import JAX, turning its refusal of an environment variable (``JAX_ENABLE_X64=maybe``
    is a ValueError naming it) into a ConfigError."""
    try:
        import jax  # noqa: F401
    except ValueError as error:
        raise ConfigError(f"JAX refuses the environment: {error}") from None


def _try_platforms(platforms: str) -> None:
    import jax

    try:
        jax.devices()
    except (RuntimeError, AssertionError, ValueError) as error:
        first = (str(error).strip().splitlines() or [""])[0] or "no backend of that name"
        raise ConfigError(f"JAX_PLATFORMS={platforms!r}: JAX cannot start that platform on "
                          f"this machine ({first or type(error).__name__}); unset it or name "
                          "one this machine has (cpu always works)") from None
