"""aisim: what speculative decoding does to an LLM serving deployment, with evidence.

The public API is the names in ``__all__``; everything else is private by convention.
"""

from __future__ import annotations

from aisim._build import is_compiled
from aisim.errors import AisimError, ConfigError, DataIntegrityError, SimulationError, UnsupportedQuery

__version__ = "0.1.0"
#: True when the mypyc-compiled core is loaded, False for the pure-Python build.
__compiled__: bool = is_compiled()

__all__ = [
    "AisimError",
    "ConfigError",
    "DataIntegrityError",
    "SimulationError",
    "UnsupportedQuery",
    "__compiled__",
    "__version__",
]
