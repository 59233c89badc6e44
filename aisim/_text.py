"""Error-message helpers the compiled core shares with the config edge (compiled by mypyc).

The field readers that check untrusted values (``aisim._fields``) are the edge's and stay
interpreted; the core only formats what it reports.
"""

from __future__ import annotations

import re


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


def value_error_text(exc: ValueError | OverflowError) -> str:
    """``exc``'s message on one line; Python's refusal of a long integer ('Exceeds the limit
    (4300 digits) for integer string conversion: value has N digits; use
    sys.set_int_max_str_digits() ...') is said without the interpreter advice a user cannot
    act on."""
    text = " ".join(str(exc).split())
    found = re.search(r"limit \((\d+) digits\).*value has (\d+) digits", text)
    if found is not None:
        limit, digits = found.groups()
        return f"an integer of {digits} digits; at most {limit} digits are read"
    return text
