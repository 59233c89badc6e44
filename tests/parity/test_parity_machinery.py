"""The parity machinery on hand-built documents: canonical bytes, exact and tolerant comparison,
the update command's diff report, crash refusal and unused-golden cleanup."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from aisim.errors import ConfigError
from qualification._diff import ABSENT, Change, diff_cases, leaves, values_match
from qualification.cases import Suite, make_cases, run_case, to_jsonable
from qualification.parity import compute_document, parity_rtol, render


def test_canonical_rendering_is_sorted_indented_and_uses_repr_floats() -> None:
    document = {"suite": "s", "format": 1, "cases": {"b": {"result": 0.1}, "a": {"result": 1e-7}}}
    assert render(document) == (
        '{\n  "cases": {\n    "a": {\n      "result": 1e-07\n    },\n'
        '    "b": {\n      "result": 0.1\n    }\n  },\n  "format": 1,\n  "suite": "s"\n}\n'
    )


def test_one_ulp_is_a_change_in_exact_mode_but_not_at_rtol_1e9() -> None:
    old = {"case-a": {"result": {"latency_ms": 11.92}}}
    new = {"case-a": {"result": {"latency_ms": math.nextafter(11.92, math.inf)}}}
    exact = diff_cases(old, new)
    assert [c.case for c in exact.changed] == ["case-a"]
    assert exact.changed[0].field == "result.latency_ms"
    assert diff_cases(old, new, rtol=1e-9).is_empty
    assert not diff_cases(old, {"case-a": {"result": {"latency_ms": 11.93}}}, rtol=1e-9).is_empty


def test_int_and_float_differ_exactly_but_match_in_tolerance_mode() -> None:
    assert not values_match(2, 2.0)
    assert values_match(2, 2.0, rtol=1e-9)
    assert not values_match(-0.0, 0.0)
    assert not values_match(True, 1, rtol=1e-9)
    assert not values_match("a", "b", rtol=1.0)


def test_added_removed_and_structure_changes_are_listed() -> None:
    old = {"kept": {"result": [1, 2]}, "gone": {"result": 1}}
    new = {"kept": {"error": {"type": "ConfigError"}}, "new": {"result": 2}}
    diff = diff_cases(old, new)
    assert diff.added == ("new",)
    assert diff.removed == ("gone",)
    assert set(diff.changed) == {
        Change("kept", "error.type", ABSENT, "ConfigError"),
        Change("kept", "result[0]", 1, ABSENT),
        Change("kept", "result[1]", 2, ABSENT),
    }
    assert diff.summary() == "1 added, 1 removed, 1 changed (3 values)"


def test_relative_change_is_signed_against_the_old_value() -> None:
    assert Change("c", "x", 8.0, 10.0).relative_change == 0.25
    assert Change("c", "x", 0, 1).relative_change == math.inf
    assert Change("c", "x", "a", "b").relative_change is None


def test_leaves_flatten_in_sorted_order() -> None:
    assert list(leaves({"b": [1, {"c": 2}], "a": {}})) == [("a", {}), ("b[0]", 1), ("b[1].c", 2)]


def test_run_case_records_results_aisim_errors_and_crashes() -> None:
    def evaluate(inputs: object) -> object:
        assert isinstance(inputs, dict)
        if inputs["x"] == "bad":
            raise ConfigError("x: expected a number, got 'bad'")
        if inputs["x"] == "bug":
            return {}["missing"]
        return {"double": inputs["x"] * 2, "pair": (1, float("inf"))}

    suite = Suite(
        "t",
        "test",
        make_cases([("ok", {"x": 2}), ("bad", {"x": "bad"}), ("bug", {"x": "bug"})]),
        evaluate,
    )
    assert run_case(suite, suite.cases[0]) == {
        "inputs": {"x": 2},
        "result": {"double": 4, "pair": [1, "inf"]},
    }
    assert run_case(suite, suite.cases[1])["error"] == {
        "type": "ConfigError",
        "message": "x: expected a number, got 'bad'",
    }
    assert run_case(suite, suite.cases[2])["crash"] == "KeyError: 'missing'"


def test_duplicate_case_ids_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate case id 'a'"):
        Suite("t", "test", make_cases([("a", {}), ("a", {})]), lambda inputs: None)


def test_to_jsonable_rejects_unfreezable_values() -> None:
    with pytest.raises(TypeError):
        to_jsonable({1: "non-string key"})
    with pytest.raises(TypeError):
        to_jsonable(object())


def test_parity_rtol_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AISIM_PARITY_RTOL", raising=False)
    assert parity_rtol() == 0.0
    monkeypatch.setenv("AISIM_PARITY_RTOL", "1e-9")
    assert parity_rtol() == 1e-9
    monkeypatch.setenv("AISIM_PARITY_RTOL", "loose")
    with pytest.raises(ValueError, match="AISIM_PARITY_RTOL"):
        parity_rtol()


def test_update_writes_reports_and_check_passes_then_detects_an_edit(tmp_path: Path) -> None:
    from qualification.parity import check, update

    out = io.StringIO()
    assert update(["catalogue"], tmp_path, out) == 0
    assert "catalogue: created" in out.getvalue()
    written = (tmp_path / "catalogue.json").read_text(encoding="utf-8")
    assert written == render(compute_document("catalogue"))

    out = io.StringIO()
    assert update(["catalogue"], tmp_path, out) == 0
    assert "unchanged" in out.getvalue()
    assert check(["catalogue"], tmp_path, 0.0, io.StringIO()) == 0

    edited = written.replace('"kv_bytes_per_token": 114688', '"kv_bytes_per_token": 114689', 1)
    assert edited != written
    (tmp_path / "catalogue.json").write_text(edited, encoding="utf-8")
    out = io.StringIO()
    assert check(["catalogue"], tmp_path, 0.0, out) == 1
    assert "kv_bytes_per_token: 114689 -> 114688" in out.getvalue()

    out = io.StringIO()
    assert update(["catalogue"], tmp_path, out) == 0
    assert "kv_bytes_per_token: 114689 -> 114688" in out.getvalue()
    assert (tmp_path / "catalogue.json").read_text(encoding="utf-8") == written


def test_updating_all_suites_deletes_unused_goldens(tmp_path: Path) -> None:
    from qualification.cases import SUITE_NAMES
    from qualification.parity import check, update

    (tmp_path / "retired_suite.json").write_text("{}", encoding="utf-8")
    out = io.StringIO()
    assert check(list(SUITE_NAMES), tmp_path, 0.0, out) == 1
    assert "unused golden" in out.getvalue()
    assert update(list(SUITE_NAMES), tmp_path, io.StringIO()) == 0
    assert not (tmp_path / "retired_suite.json").exists()


def test_integers_beyond_float_range_compare_exactly_under_a_tolerance() -> None:
    """A snapshot may hold an integer past float range (found by the fuzz campaign: an
    OverflowError from `aisim compare --rtol`); 10**400 and 10**400 + 10**393 differ by 1e-7
    relative, so they match at rtol 1e-6 and not at 1e-8; an infinite float matches nothing."""
    big = 10**400
    assert values_match(big, big + 10**393, rtol=1e-6)
    assert not values_match(big, big + 10**393, rtol=1e-8)
    assert not values_match(big, float("inf"), rtol=1e-6)
    assert not values_match(big, 1.0, rtol=1e-6)


def test_the_relative_change_of_integers_beyond_float_range_is_a_number() -> None:
    """(5 - 10**400) / 10**400 is -1 to float precision; (10**400 - 5) / 5 is beyond float range
    and reads +inf; both were OverflowError tracebacks of `aisim compare`."""
    assert Change("c", "f", 10**400, 5.0).relative_change == -1.0
    assert Change("c", "f", 5, 10**400).relative_change == math.inf
    assert Change("c", "f", 4.0, 5.0).relative_change == 0.25
