"""Error-message helpers the compiled core shares with the config edge (compiled by mypyc).

The field readers that check untrusted values (``aisim._fields``) are the edge's and stay
interpreted; the core only formats what it reports.
"""

from __future__ import annotations


def join_path(base: str, name: str) -> str:
    """``join_path("engine", "model") == "engine.model"``; an empty base yields ``name``."""
    if not base:
        return name
    return base + "." + name


def describe(value: object) -> str:
    """A short, safe rendering of a user value for error messages."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"
