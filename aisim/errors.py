"""The aisim exception hierarchy: every error a user can cause is an ``AisimError``.

Kept out of the compiled module list: exception classes subclassing builtins are not
reliably compiled by mypyc, and raising them from compiled code works either way.
"""

from __future__ import annotations


class AisimError(Exception):
    """Root of every error aisim raises on purpose."""


class ConfigError(AisimError, ValueError):
    """Invalid user input: the message names the field path, the value and what is allowed."""


class UnsupportedQuery(AisimError, ValueError):
    """A valid query that the chosen estimator (or aisim) cannot answer honestly."""


class DataIntegrityError(AisimError, ValueError):
    """Recorded data that is missing, tampered with, truncated or of an unknown schema."""


class SimulationError(AisimError, RuntimeError):
    """A replay that cannot proceed (for example, a request that can never fit)."""


__all__ = ["AisimError", "ConfigError", "DataIntegrityError", "SimulationError", "UnsupportedQuery"]
