"""Acceptance suite: every ``AcceptanceProfile`` constructor over a grid of values and depths, and
its invalid inputs. Results hold all forms (conditional, unconditional, mean accepted, acceptance
length, accepted-length distribution), so each conversion is frozen both ways."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aisim.config import acceptance_profile
from aisim.files import parse_yaml_text
from qualification.cases._suite import Suite, make_cases

Row = tuple[str, dict[str, Any]]


def _rows() -> list[Row]:
    rows: list[Row] = []
    for alpha in (0.0, 0.3, 0.5, 0.7, 0.9, 1.0):
        for depth in (1, 2, 3, 4, 5):
            rows.append(
                (f"iid/alpha-{alpha}/d-{depth}", {"form": "iid", "value": alpha, "depth": depth})
            )
    for mean in (0.0, 0.5, 1.0, 1.5, 2.25, 2.999, 3.0):
        rows.append(
            (f"mean_accepted/{mean}/d-3", {"form": "mean_accepted", "value": mean, "depth": 3})
        )
    for mean in (0.1, 2.5, 4.75, 5.0):
        rows.append(
            (f"mean_accepted/{mean}/d-5", {"form": "mean_accepted", "value": mean, "depth": 5})
        )
    for length in (1.0, 1.5, 2.0, 2.8, 3.3, 4.0):
        rows.append(
            (
                f"acceptance_length/{length}/d-3",
                {"form": "acceptance_length", "value": length, "depth": 3},
            )
        )
    conditional = {
        "decreasing": [0.8, 0.6, 0.4],
        "flat-half": [0.5, 0.5, 0.5, 0.5],
        "zero-first": [0.0, 0.9],
        "ones": [1.0, 1.0, 1.0, 1.0, 1.0],
        "ngram-example": [0.6, 0.5, 0.4, 0.3],
        "single": [0.7],
        "thirds": [1 / 3, 2 / 3, 0.1],
    }
    rows += [
        (f"conditional/{name}", {"form": "conditional", "value": rates})
        for name, rates in conditional.items()
    ]
    unconditional = {
        "vllm-style": [0.8, 0.55, 0.3],
        "product-of-decreasing": [0.8, 0.48, 0.192],
        "hits-zero": [0.5, 0.0, 0.0],
        "flat": [0.6, 0.6, 0.6],
        "ones": [1.0, 1.0],
    }
    rows += [
        (f"unconditional/{name}", {"form": "unconditional", "value": rates})
        for name, rates in unconditional.items()
    ]
    rows += [
        ("error/iid-above-1", {"form": "iid", "value": 1.01, "depth": 3}),
        ("error/iid-depth-0", {"form": "iid", "value": 0.5, "depth": 0}),
        ("error/iid-depth-65", {"form": "iid", "value": 0.5, "depth": 65}),
        ("error/iid-depth-bool", {"form": "iid", "value": 0.5, "depth": True}),
        ("error/iid-string", {"form": "iid", "value": "0.5", "depth": 3}),
        ("error/iid-nan", {"form": "iid", "yaml": ".nan", "depth": 3}),
        ("error/mean-above-depth", {"form": "mean_accepted", "value": 3.01, "depth": 3}),
        ("error/mean-negative", {"form": "mean_accepted", "value": -1, "depth": 3}),
        ("error/length-below-1", {"form": "acceptance_length", "value": 0.99, "depth": 3}),
        ("error/length-above", {"form": "acceptance_length", "value": 4.01, "depth": 3}),
        ("error/conditional-empty", {"form": "conditional", "value": []}),
        ("error/conditional-negative", {"form": "conditional", "value": [0.5, -0.1]}),
        ("error/conditional-not-list", {"form": "conditional", "value": {"a": 1}}),
        ("error/conditional-null-item", {"form": "conditional", "value": [0.5, None]}),
        ("error/conditional-inf", {"form": "conditional", "yaml": "[0.5, .inf]"}),
        ("error/conditional-65", {"form": "conditional", "value": [0.5] * 65}),
        ("error/unconditional-increasing", {"form": "unconditional", "value": [0.3, 0.6]}),
        ("error/unconditional-above-1", {"form": "unconditional", "value": [1.2]}),
    ]
    return rows


def evaluate(inputs: Mapping[str, Any]) -> dict[str, object]:
    value = parse_yaml_text(inputs["yaml"], "yaml") if "yaml" in inputs else inputs["value"]
    profile = acceptance_profile(inputs["form"], value, inputs.get("depth"))
    return profile.to_dict()


SUITE = Suite(
    name="acceptance",
    description="acceptance forms and their exact conversions (AcceptanceProfile)",
    cases=make_cases(_rows()),
    evaluate=evaluate,
)
