"""The one exception asynclab raises for a configuration it cannot run."""


class ConfigError(ValueError):
    """A run was configured with a value asynclab cannot use (the message says which)."""
