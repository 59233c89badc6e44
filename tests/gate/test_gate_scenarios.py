"""Scenario files for ``aisim snapshot``: validation errors name the field; the packaged default
file parses."""

from __future__ import annotations

from typing import Any

import pytest

from aisim.errors import ConfigError
from qualification.gate import parse_scenarios

GOOD = {
    "format": 1,
    "scenarios": [
        {"id": "a", "kind": "estimate", "config": {}, "metrics": {"num_decode_requests": 1}},
        {"id": "b", "kind": "replay", "config": {}, "outputs": ["mean_ttft_ms"]},
    ],
}


def test_a_valid_document_parses_in_order() -> None:
    scenarios = parse_scenarios(GOOD)
    assert [(s.id, s.kind) for s in scenarios] == [("a", "estimate"), ("b", "replay")]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "scenarios: expected a mapping"),
        ({"format": 2, "scenarios": []}, "scenarios.format: expected 1, got 2"),
        ({"scenarios": {}}, "scenarios.scenarios: expected a list"),
        ({"scenarios": [], "extra": 1}, "unknown field(s) extra"),
        ({"scenarios": [3]}, "scenarios.scenarios[0]: expected a mapping"),
        (
            {"scenarios": [{"id": "x", "kind": "guess", "config": {}}]},
            "scenarios.scenarios[0].kind: expected one of estimate, replay, got 'guess'",
        ),
        (
            {"scenarios": [{"id": "x", "kind": "estimate", "config": {}}]},
            "scenarios.scenarios[0].metrics: required",
        ),
        (
            {"scenarios": [{"id": "x", "kind": "replay", "config": []}]},
            "scenarios.scenarios[0].config: expected a mapping",
        ),
        (
            {"scenarios": [{"id": "x", "kind": "replay", "config": {}, "draft_length": 1}]},
            "unknown field(s) draft_length",
        ),
        (
            {"scenarios": [{"id": "x", "kind": "replay", "config": {}, "outputs": [1]}]},
            "scenarios.scenarios[0].outputs[0]: expected a string",
        ),
        (
            {
                "scenarios": [
                    {"id": "x", "kind": "replay", "config": {}},
                    {"id": "x", "kind": "replay", "config": {}},
                ]
            },
            "scenarios.scenarios[1].id: expected a unique non-empty id of printable "
            "characters, got 'x'",
        ),
        # An id with a line break split `aisim compare`'s one line per moved prediction.
        (
            {"scenarios": [{"id": "a\nb", "kind": "replay", "config": {}}]},
            "scenarios.scenarios[0].id: expected a unique non-empty id of printable "
            "characters, got 'a\\nb'",
        ),
        # No scenario used to write a snapshot of nothing, which compares equal to any other.
        ({"scenarios": []}, "scenarios.scenarios: empty; expected at least one scenario"),
        (
            {"scenarios": [{"id": 5, "kind": "replay", "config": {}}]},
            "scenarios.scenarios[0].id: expected a string",
        ),
    ],
)
def test_invalid_documents_are_config_errors_naming_the_field(document: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_scenarios(document)
    assert message in str(caught.value)


def test_the_packaged_default_scenarios_parse() -> None:
    from qualification.gate import DEFAULT_SCENARIOS, load_scenarios

    scenarios = load_scenarios(DEFAULT_SCENARIOS)
    assert {s.kind for s in scenarios} == {"estimate", "replay"}
    assert len(scenarios) >= 15
