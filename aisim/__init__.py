"""aisim: what speculative decoding does to an LLM serving deployment, with evidence.

The public API is the names in ``__all__``; everything else is private by convention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aisim._build import is_compiled
from aisim.errors import (
    AisimError,
    ConfigError,
    DataIntegrityError,
    SimulationError,
    UnsupportedQuery,
)
from aisim.speculation import AcceptanceProfile, ResolvedSpeculation

if TYPE_CHECKING:  # loaded lazily at run time (``__getattr__``); typed for checkers
    from aisim.config import resolve_speculation, run_replay

__version__ = "0.1.0"
#: True when the mypyc-compiled core is loaded, False for the pure-Python build.
__compiled__: bool = is_compiled()

__all__ = [
    "AcceptanceProfile",
    "AisimError",
    "ConfigError",
    "DataIntegrityError",
    "ResolvedSpeculation",
    "SimulationError",
    "UnsupportedQuery",
    "__compiled__",
    "__version__",
    "resolve_speculation",
    "run_replay",
]


def __getattr__(name: str) -> object:
    # The config edge (pydantic) loads on first use, so `import aisim` stays light.
    if name == "resolve_speculation":
        from aisim.config import resolve_speculation

        return resolve_speculation
    if name == "run_replay":
        from aisim.config import run_replay

        return run_replay
    raise AttributeError(f"module 'aisim' has no attribute {name!r}")
