"""Which build of aisim is running: mypyc-compiled or pure Python."""

from __future__ import annotations

import importlib.machinery

import aisim._text as _probe


def is_compiled() -> bool:
    """True when the core modules were loaded from mypyc-built extension modules."""
    origin = getattr(_probe, "__file__", "") or ""
    return origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
