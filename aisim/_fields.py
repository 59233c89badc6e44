"""Typed field readers for untrusted mappings: every failure is a ConfigError naming the path.

Used at the edges (``aisim.config``, and the interpreted ``aisim.fpm._inputs`` that turns the
forward-pass API's arguments into typed values) so a malformed mapping (a list where a mapping
belongs, a bool where an integer belongs, NaN, non-string keys) never leaks an
AttributeError/TypeError/KeyError. Not compiled: no compiled module calls these readers
(``tests/test_layers.py``); the message helpers they share with the core are ``aisim._text``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from aisim._text import describe, join_path
from aisim.errors import ConfigError

__all__ = [
    "FLOAT_INT_LIMIT",
    "as_bool",
    "as_float",
    "as_int",
    "as_list",
    "as_mapping",
    "as_str",
    "describe",
    "integer_text",
    "join_path",
    "check_tree",
    "range_text",
    "reject_unknown",
]

#: Integers at or past this magnitude have no float (``float(10**400)`` raises OverflowError).
FLOAT_INT_LIMIT: Final = 10**308


def as_mapping(value: object, path: str) -> dict[str, Any]:
    """Return ``value`` as a ``dict`` with string keys, or raise a ConfigError at ``path``."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path or '<root>'}: expected a mapping, got {describe(value)}")
    result: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ConfigError(
                f"{path or '<root>'}: mapping keys must be strings, got key {describe(key)}"
            )
        result[key] = item
    return result


def check_tree(value: object, path: str) -> None:
    """The one rule every config value keeps, also inside fields the edge passes on untyped
    (a sweep's ``base``, a draft's ``config.json``, inline requests): every mapping key is a
    string and every float is finite. The first offence is a ``ConfigError`` naming its field
    path; containers met twice (a mapping that holds itself) are walked once."""
    stack: list[tuple[object, str]] = [(value, path)]
    seen: set[int] = set()
    while stack:
        item, where = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ConfigError(
                    f"{where or '<root>'}: expected a finite number, got {describe(item)}"
                )
        elif isinstance(item, Mapping):
            if id(item) in seen:
                continue
            seen.add(id(item))
            children: list[tuple[object, str]] = []
            for key, child in item.items():
                if not isinstance(key, str):
                    raise ConfigError(
                        f"{where or '<root>'}: mapping keys must be strings, got key {describe(key)}"
                    )
                children.append((child, join_path(where, key)))
            stack.extend(reversed(children))
        elif isinstance(item, (list, tuple)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(reversed([(child, f"{where}[{i}]") for i, child in enumerate(item)]))


def reject_unknown(mapping: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
    """Raise when ``mapping`` has keys outside ``allowed`` (listing the offending keys)."""
    unknown = sorted(key for key in mapping if key not in allowed)
    if unknown:
        raise ConfigError(
            f"{path or '<root>'}: unknown field(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def as_int(value: object, path: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (integral floats like 2.0 accepted; bools, strings, 2.5, NaN rejected)."""
    result: int
    if isinstance(value, bool):
        raise _not_a_number(path, "an integer", minimum, maximum, describe(value))
    if isinstance(value, int):
        result = int(value)
    elif isinstance(value, float):
        if not math.isfinite(value) or value != math.floor(value):
            raise _not_a_number(path, "an integer", minimum, maximum, describe(value))
        result = int(value)
    else:
        raise _not_a_number(path, "an integer", minimum, maximum, describe(value))
    if (minimum is not None and result < minimum) or (maximum is not None and result > maximum):
        raise _not_a_number(path, "an integer", minimum, maximum, integer_text(result))
    return result


def integer_text(value: int) -> str:
    """``value`` for an error message: its digits, or ``1e+300``-style past 24 digits (a float
    such as 1e300 read as an integer would otherwise print 301 digits)."""
    if -(10**24) < value < 10**24:
        return str(value)
    # Not through float: 10**400 is a valid int that no float holds.
    digits = str(abs(value))
    fraction = digits[1:6].rstrip("0")
    mantissa = digits[0] + ("." + fraction if fraction else "")
    return f"{'-' if value < 0 else ''}{mantissa}e+{len(digits) - 1}"


def as_float(
    value: object, path: str, minimum: float | None = None, maximum: float | None = None
) -> float:
    """A finite real number (ints accepted; bools, strings, NaN and infinities rejected)."""
    # Bounds print as floats in both builds (compiled code has already made int bounds floats).
    if minimum is not None:
        minimum = float(minimum)
    if maximum is not None:
        maximum = float(maximum)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _not_a_number(path, "a finite number", minimum, maximum, describe(value))
    if isinstance(value, int) and not -FLOAT_INT_LIMIT < value < FLOAT_INT_LIMIT:
        # float() would raise OverflowError (10**400 is a valid JSON/YAML integer).
        raise _not_a_number(path, "a finite number", minimum, maximum, integer_text(value))
    result = float(value)
    if not math.isfinite(result):
        raise _not_a_number(path, "a finite number", minimum, maximum, describe(value))
    if (minimum is not None and result < minimum) or (maximum is not None and result > maximum):
        raise _not_a_number(path, "a finite number", minimum, maximum, repr(result))
    return result


def _not_a_number(
    path: str, expected: str, minimum: object, maximum: object, got: str
) -> ConfigError:
    """The error for a rejected number (built only on failure: the readers are on hot paths)."""
    return ConfigError(f"{path}: expected {expected}{range_text(minimum, maximum)}, got {got}")


def as_str(value: object, path: str, choices: tuple[str, ...] = ()) -> str:
    """A string, optionally one of ``choices``."""
    if not isinstance(value, str):
        raise ConfigError(f"{path}: expected a string, got {describe(value)}")
    if choices and value not in choices:
        raise ConfigError(f"{path}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def as_bool(value: object, path: str) -> bool:
    """A real boolean (not 0/1, not "true")."""
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: expected true or false, got {describe(value)}")
    return value


def as_list(value: object, path: str) -> list[Any]:
    """A list or tuple (strings and mappings rejected)."""
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{path}: expected a list, got {describe(value)}")
    return list(value)


def range_text(minimum: object, maximum: object) -> str:
    # ``object``, not ``float | None``: compiled code coerces an int passed as ``float`` to a
    # float, so "1..64" would read "1.0..64.0" in the compiled build only.
    if minimum is not None and maximum is not None:
        return f" in {minimum}..{maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""
