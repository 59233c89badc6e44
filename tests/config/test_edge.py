"""The edge base keeps the error contract: one line, full path, the value, what is allowed."""

from __future__ import annotations

import math
from typing import Annotated

import pytest
from pydantic import ValidationError

from aisim.config import Choice, EdgeModel, Integer, Number, check, validate
from aisim.errors import ConfigError


class Inner(EdgeModel):
    edge_label = " (kind demo)"
    depth: Annotated[int, Integer(1, 64, label=" (kind demo)")] | None = None


class Outer(EdgeModel):
    backend: Annotated[str, Choice("vllm", "sglang")] = "vllm"
    rate: Annotated[float, Number(0.0, 1.0)] = 1.0
    enabled: bool = False
    widths: list[Annotated[int, Integer(1, 3)]] = []
    inner: Inner | None = None
    name: str = ""


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "cfg: expected a mapping, got [1, 2] (list)"),
        ({1: 2}, "cfg: mapping keys must be strings, got key 1 (int)"),
        (
            {"bakend": "x", "zzz": 1},
            "cfg: unknown field(s) bakend, zzz; allowed: backend, enabled, inner, name, rate, widths",
        ),
        ({"backend": "trtllm"}, "cfg.backend: expected one of vllm, sglang, got 'trtllm'"),
        ({"backend": 3}, "cfg.backend: expected a string, got 3 (int)"),
        ({"rate": math.nan}, "cfg.rate: expected a finite number in 0.0..1.0, got nan (float)"),
        ({"rate": math.inf}, "cfg.rate: expected a finite number in 0.0..1.0, got inf (float)"),
        ({"rate": True}, "cfg.rate: expected a finite number in 0.0..1.0, got True (bool)"),
        ({"rate": "0.5"}, "cfg.rate: expected a finite number in 0.0..1.0, got '0.5' (str)"),
        ({"rate": 2}, "cfg.rate: expected a finite number in 0.0..1.0, got 2.0"),
        ({"enabled": 1}, "cfg.enabled: expected true or false, got 1 (int)"),
        ({"widths": 3}, "cfg.widths: expected a list, got 3 (int)"),
        ({"widths": [1, 4]}, "cfg.widths[1]: expected an integer in 1..3, got 4"),
        ({"widths": [1, 2.5]}, "cfg.widths[1]: expected an integer in 1..3, got 2.5 (float)"),
        ({"widths": [False]}, "cfg.widths[0]: expected an integer in 1..3, got False (bool)"),
        ({"inner": [3]}, "cfg.inner: expected a mapping, got [3] (list)"),
        ({"inner": {"w": 1}}, "cfg.inner (kind demo): unknown field(s) w; allowed: depth"),
        (
            {"inner": {"depth": 0}},
            "cfg.inner.depth (kind demo): expected an integer in 1..64, got 0",
        ),
        (
            {"inner": {"depth": "3"}},
            "cfg.inner.depth (kind demo): expected an integer in 1..64, got '3' (str)",
        ),
        ({"name": None}, "cfg.name: expected a string, got None (NoneType)"),
    ],
)
def test_one_line_errors(data: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate(Outer, data, "cfg")
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


def test_integral_floats_are_integers_and_ints_are_numbers() -> None:
    model = validate(Outer, {"widths": [1.0, 3.0], "rate": 1, "inner": {"depth": 64.0}}, "cfg")
    assert model.widths == [1, 3] and all(type(width) is int for width in model.widths)
    assert model.rate == 1.0 and type(model.rate) is float
    assert model.inner is not None and model.inner.depth == 64


def test_models_are_frozen() -> None:
    model = validate(Outer, {}, "cfg")
    with pytest.raises(ValidationError):
        model.backend = "sglang"  # type: ignore[misc]


def test_required_fields_and_root_path() -> None:
    class Needs(EdgeModel):
        size: Annotated[int, Integer(1)]

    with pytest.raises(ConfigError, match=r"^cfg\.size: required field is missing$"):
        validate(Needs, {}, "cfg")
    with pytest.raises(ConfigError, match=r"^<root>: expected a mapping, got 3 \(int\)$"):
        validate(Needs, 3)
    with pytest.raises(ConfigError, match=r"^size: expected an integer >= 1, got 0$"):
        validate(Needs, {"size": 0})


def test_check_validates_one_value_with_bounds_known_late() -> None:
    depth = 3
    assert check(Annotated[float, Number(0.0, depth)], 2, "x.mean") == 2.0
    with pytest.raises(
        ConfigError, match=r"^x\.mean: expected a finite number in 0\.0\.\.3\.0, got 3\.5$"
    ):
        check(Annotated[float, Number(0.0, depth)], 3.5, "x.mean")


def test_json_schema_carries_bounds_choices_and_no_extra_fields() -> None:
    schema = Outer.model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["backend"]["enum"] == ["vllm", "sglang"]
    assert (schema["properties"]["rate"]["minimum"], schema["properties"]["rate"]["maximum"]) == (
        0.0,
        1.0,
    )
    widths = schema["properties"]["widths"]["items"]
    assert (widths["type"], widths["minimum"], widths["maximum"]) == ("integer", 1, 3)


def test_activation_scales_need_fp8_weights_and_a_known_scheme() -> None:
    from aisim.config import best_available

    base = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "estimator": "roofline"}
    with pytest.raises(
        ConfigError,
        match=r"^deployment\.activation_scales: 'tensor' needs weights 'fp8' \(got 'fp4'\)",
    ):
        best_available({**base, "deployment": {"weights": "fp4", "activation_scales": "tensor"}})
    with pytest.raises(ConfigError, match=r"^deployment\.activation_scales: .*'block'"):
        best_available({**base, "deployment": {"weights": "fp8", "activation_scales": "block"}})
    from aisim.fpm import ForwardPassMetrics

    prefill = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=4096)
    price = {
        scales: best_available(
            {**base, "deployment": {"weights": "fp8", "activation_scales": scales}}
        ).estimate_forward_pass_time_ms(prefill)
        for scales in ("token", "static", "tensor")
    }
    # token and static move the same 3 bytes per element in one launch; tensor reads once more.
    assert price["token"] == price["static"] < price["tensor"]
