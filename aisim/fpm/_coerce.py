"""Values the compiled forward-pass API did not take as plain Python: numpy integers, integral
floats and arrays converted, anything else refused in one line naming the field (interpreted,
not compiled; it imports nothing from ``aisim.fpm``, so the compiled modules that call it
lazily form no import cycle)."""

from __future__ import annotations

from typing import Any

from aisim._fields import as_int, describe
from aisim.errors import ConfigError


def count_value(value: object, path: str, maximum: int) -> int:
    """A count that is not a plain ``int``: a numpy integer or an integral float, else the error
    (bools, strings, 2.5, NaN and values outside 0..``maximum``)."""
    if not isinstance(value, (bool, float, str)) and hasattr(value, "__index__"):
        numpy_integer: Any = value
        return int(numpy_integer.__index__())
    return as_int(value, path, minimum=0, maximum=maximum)


def plain_list(value: object, path: str) -> list[object]:
    """A list of counts given as something other than a list or tuple: a numpy array (or
    anything with ``tolist``) as a plain list, its entries still to be checked; else the error."""
    items: Any = value
    if hasattr(items, "tolist"):
        items = items.tolist()
    if not isinstance(items, (list, tuple)):
        raise ConfigError(f"{path}: expected a list of integers or null, got {describe(value)}")
    return list(items)


def draft_length_value(draft_length: object, path: str, maximum: int) -> int:
    """A draft length that is not a plain ``int`` in range: a numpy integer or an integral float,
    else the error (bools, 0, negatives, 2.5, strings, values above ``maximum``)."""
    if isinstance(draft_length, bool) or not isinstance(draft_length, (int, float)):
        if hasattr(draft_length, "__index__") and not isinstance(draft_length, (bool, str)):
            numpy_integer: Any = draft_length
            return draft_length_value(int(numpy_integer.__index__()), path, maximum)
        raise ConfigError(
            f"{path}: expected a positive integer draft length, got {describe(draft_length)}"
        )
    return as_int(draft_length, path, minimum=1, maximum=maximum)
