"""Optional dependencies: which extra brings which module, and the one-line hint when absent.

The base install (``pip install aisim``) runs the library and the ``speculation``, ``estimate``,
``replay``, ``schema``, ``snapshot`` and ``compare`` commands. Heavier parts come with extras:
``aisim[qualify]`` (pandas, matplotlib, scipy: ``aisim qualify``, ``aisim sweep``,
``ReplayResult.requests``, the intervals of ``aisim speculation acceptance``),
``aisim[record]`` (torch), ``aisim[ray]`` (ray). Not compiled.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

from aisim.errors import AisimError

#: Top-level module -> the extra that installs it.
EXTRA_OF: Final[dict[str, str]] = {
    "pandas": "qualify",
    "matplotlib": "qualify",
    "scipy": "qualify",
    "torch": "record",
    "ray": "ray",
}


class MissingExtra(AisimError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def missing_extra_message(module: str, feature: str) -> str:
    """``"aisim qualify needs pandas, from the extra aisim[qualify]: pip install 'aisim[qualify]'"``."""
    extra = EXTRA_OF.get(module.split(".")[0], "qualify")
    return f"{feature} needs {module}, from the extra aisim[{extra}]: pip install 'aisim[{extra}]'"


def import_optional(module: str, feature: str) -> ModuleType:
    """``module`` imported, or ``MissingExtra`` naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == module.split(".")[0]:
            raise MissingExtra(missing_extra_message(module, feature)) from None
        raise
