"""The typed field readers every config edge uses."""

from __future__ import annotations

import math

import pytest

from aisim._fields import as_float, as_int, as_list, as_mapping, as_str, reject_unknown
from aisim.errors import ConfigError


def test_integral_floats_accepted_bools_rejected() -> None:
    assert as_int(2.0, "x") == 2
    for bad in (True, 2.5, math.nan, math.inf, "2", None):
        with pytest.raises(ConfigError, match=r"^a\.b: expected an integer"):
            as_int(bad, "a.b")


def test_ranges_are_stated() -> None:
    with pytest.raises(ConfigError, match=r"in 1\.\.5, got 7"):
        as_int(7, "depth", 1, 5)
    with pytest.raises(ConfigError, match=r">= 0"):
        as_float(-1.0, "rate", minimum=0.0)


def test_floats_must_be_finite_numbers() -> None:
    assert as_float(3, "x") == 3.0
    for bad in (math.nan, -math.inf, False, "1.0", [1.0]):
        with pytest.raises(ConfigError, match="expected a finite number"):
            as_float(bad, "x")


def test_mappings_need_string_keys() -> None:
    assert as_mapping({"a": 1}, "p") == {"a": 1}
    with pytest.raises(ConfigError, match="p: expected a mapping"):
        as_mapping([1, 2], "p")
    with pytest.raises(ConfigError, match="p: mapping keys must be strings"):
        as_mapping({1: "a"}, "p")


def test_unknown_keys_are_listed() -> None:
    with pytest.raises(ConfigError, match=r"p: unknown field\(s\) x, y; allowed: a"):
        reject_unknown({"a": 1, "y": 2, "x": 3}, ("a",), "p")


def test_strings_and_lists() -> None:
    assert as_str("vllm", "backend", ("vllm", "sglang")) == "vllm"
    with pytest.raises(ConfigError, match="expected one of vllm, sglang"):
        as_str("trt", "backend", ("vllm", "sglang"))
    assert as_list((1, 2), "l") == [1, 2]
    with pytest.raises(ConfigError, match="expected a list"):
        as_list("12", "l")
