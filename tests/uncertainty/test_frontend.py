"""A serving front end's terms measured on another recording (source ``frontend``): the
interval two hand-made recordings' terms give, leaving a recording out, switching it off,
terms measured on the replay's own recording, the committed evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from single_request import single_request

from aisim.errors import DataIntegrityError
from aisim.fpm import FrontEndCost
from aisim.uncertainty import (
    CostErrorTable,
    FrontEndSample,
    Sources,
    load_cost_errors,
    replay_intervals,
)

ROOT = Path(__file__).resolve().parents[2]
ONLY_FRONTEND = Sources(False, False, False, False, False, True, False)


class Fronted:
    """An engine step table's duck: prefill 10 ms, an SD round 5 ms, plus its front end's
    ``step_ms + token_ms x`` the requests in the step (as ``ServedStepModel`` adds it)."""

    name = "engine-step-table"
    prices_speculation_natively = True
    supports_draft_length = False
    plain_decode_model = None

    def __init__(self) -> None:
        self.frontend: FrontEndCost | None = FrontEndCost(1.0, 0.5, 3.0, "hand")

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        if isinstance(metrics, list):  # one rank per entry: the busiest prices the pass
            return max(self.estimate_forward_pass_time_ms(rank) for rank in metrics)
        base = 10.0 if metrics.num_prefill_requests else 5.0
        requests = int(metrics.num_decode_requests) + int(metrics.num_prefill_requests)
        assert self.frontend is not None
        return base + self.frontend.step_cost_ms(requests)


def two_recordings() -> CostErrorTable:
    # Recording a: nothing beyond the table, 1 ms before the engine; recording b: 3 ms per
    # step, 1 ms per streaming request, 5 ms before the engine.
    return CostErrorTable(
        (),
        {},
        (),
        (
            FrontEndSample(
                "engine-step-table", "a/frontend", "evidence/engine/a", "t", (0.0, 0.0, 1.0)
            ),
            FrontEndSample(
                "engine-step-table", "b/frontend", "evidence/engine/b", "t", (3.0, 1.0, 5.0)
            ),
        ),
    )


def intervals(table: CostErrorTable, borrowed: bool = True, **kwargs: Any) -> dict[str, Any]:
    return replay_intervals(
        single_request(),
        40,
        seed=4,
        sources=kwargs.get("sources", ONLY_FRONTEND),
        table=table,
        forward_pass_model=kwargs.get("model") or Fronted(),
        frontend_borrowed=borrowed,
    )


def test_borrowed_terms_draw_each_recordings_terms_and_admission() -> None:
    # One request, every draft accepted: a prefill pass, then 6 SD rounds (13 tokens).
    # Point (the model's terms 1 + 0.5 per request): prefill 11.5, rounds 6.5: TTFT 11.5 ms,
    # E2E 11.5 + 6 x 6.5 = 50.5 ms (the caller adds the 3 ms before the engine).
    # Terms a: prefill 10, rounds 5: TTFT 10, E2E 40, admission 1 - 3 = -2: 8 and 38 ms.
    # Terms b: prefill 10 + 3 + 1 = 14, rounds 9: TTFT 14, E2E 68, admission +2: 16 and 70 ms.
    model = Fronted()
    original = model.frontend
    report = intervals(two_recordings(), model=model)
    metrics = report["metrics"]
    assert metrics["mean_ttft_ms"]["point"] == pytest.approx(11.5)
    assert metrics["mean_e2e_ms"]["point"] == pytest.approx(50.5)
    assert (metrics["mean_ttft_ms"]["low"], metrics["mean_ttft_ms"]["high"]) == pytest.approx(
        (8.0, 16.0)
    )
    assert (metrics["p90_e2e_ms"]["low"], metrics["p90_e2e_ms"]["high"]) == pytest.approx(
        (38.0, 70.0)
    )
    # TPOT: (E2E - TTFT) / 12 tokens: 30 / 12 = 2.5 and 54 / 12 = 4.5 ms (no admission)
    assert (metrics["mean_tpot_ms"]["low"], metrics["mean_tpot_ms"]["high"]) == pytest.approx(
        (2.5, 4.5)
    )
    assert report["includes"] == ["frontend"]
    detail = report["sources"]["frontend"]["detail"][0]
    assert detail["samples"] == 2 and detail["terms_ms"]["step_ms"] == {"p05": 0.0, "p95": 3.0}
    # the model given is left with its own terms
    assert model.frontend is original


def test_leaving_a_recording_out_drops_its_terms() -> None:
    # Only b's terms are left: every replica is their replay (TTFT 16, E2E 70 ms).
    held_out = two_recordings().excluding("evidence/engine/a")
    assert [s.group for s in held_out.frontends] == ["b/frontend"]
    metrics = intervals(held_out)["metrics"]
    assert metrics["mean_ttft_ms"]["low"] == metrics["mean_ttft_ms"]["high"] == 16.0
    assert metrics["mean_e2e_ms"]["low"] == metrics["mean_e2e_ms"]["high"] == 70.0


def test_own_terms_switched_off_or_without_evidence_is_the_point() -> None:
    for table, borrowed, sources in (
        (two_recordings(), False, ONLY_FRONTEND),  # terms measured on the table's own recording
        (two_recordings(), True, Sources(True, True, True, True, True, False)),
        (two_recordings(), True, Sources.parse("none")),
        (CostErrorTable(()), True, ONLY_FRONTEND),
    ):
        report = intervals(table, borrowed, sources=sources)
        e2e = report["metrics"]["mean_e2e_ms"]
        assert e2e["low"] == e2e["high"] == e2e["point"] == pytest.approx(50.5)
        assert "frontend" not in report["includes"]
    # a replay without a front-end model has nothing to draw
    plain = replay_intervals(single_request(), 3, sources=ONLY_FRONTEND, table=two_recordings())
    assert plain["includes"] == []
    assert "no front-end model" in plain["sources"]["frontend"]["detail"][0]
    assert Sources.parse("frontend") == ONLY_FRONTEND
    assert Sources.parse("none") == Sources(False, False, False, False, False, False, False)


def test_a_malformed_frontend_sample_is_a_one_line_error(tmp_path: Path) -> None:
    document = two_recordings().to_dict()
    document["frontend_samples"][1]["terms"]["token_ms"] = -0.5
    path = tmp_path / "table.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"frontend_samples\[1\]\.terms\.token_ms"):
        load_cost_errors(path)
    del document["frontend_samples"][1]["terms"]["token_ms"]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"frontend_samples\[1\]\.terms: expected"):
        load_cost_errors(path)


def test_the_committed_frontend_samples_are_the_probed_recordings_terms() -> None:
    # Every vllm serve recording that carries a probe of its own (frontend/probe.csv.gz: the
    # five -probed ones and the five idle-host ones) gives one sample, its front-end model's
    # terms. The three older ones have none and borrow another recording's model.
    from aisim.fpm import FRONTEND_FILE, load_frontend_cost
    from qualification.uncertainty._coverage import frontend_borrowed

    table = load_cost_errors()
    engine = ROOT / "evidence/engine"
    probed = sorted(
        f"evidence/engine/{d.name}"
        for d in engine.iterdir()
        if (d / "frontend/probe.csv.gz").is_file()
    )
    assert len(probed) == 10
    assert sorted(sample.source for sample in table.frontends) == probed
    for sample in table.frontends:
        assert sample.group == f"{sample.source}/frontend"
        cost = load_frontend_cost(ROOT / sample.source / FRONTEND_FILE)
        assert cost is not None
        assert sample.terms == (cost.step_ms, cost.token_ms, cost.request_ms)
    borrowing = sorted(d.name for d in engine.iterdir() if d.is_dir() and frontend_borrowed(d))
    assert borrowing == [
        "vllm-bench-llama-4x256-b32-high",
        "vllm-bench-llama-4x256-b32-high-client1",
        "vllm-bench-llama-8x512-b32-client1",
    ]
    # a borrowing recording has no terms of its own to leave out: it draws all ten; a probed
    # recording left out leaves the other nine
    assert len(table.excluding("evidence/engine/vllm-bench-llama-4x256-b32-high").frontends) == 10
    left_out = "evidence/engine/vllm-bench-llama-4x256-b32-high-probed"
    assert len(table.excluding(left_out).frontends) == 9
