"""The default against the committed public measurements, and the published-rule cross-check."""

from __future__ import annotations

import pytest

from qualification.public import _step_host_ms, load_measurements, rulecheck, score, step_host_terms


def test_every_public_row_names_its_source_and_role() -> None:
    data = load_measurements()
    for row in data["decode_steps"]:
        assert row["source"].startswith("https://") and row["how"]
        assert row["role"] in ("derivation", "validation")
    assert data["sd_round_setup"]["source"].startswith("https://")


def test_default_decode_is_within_ten_percent_and_vllm_2025_draft_steps_are_a_known_gap() -> None:
    default = score("roofline", version_terms=False)
    ideal = score("roofline_ideal")
    # The decode figure the plan judges (cost-model/public-decode) includes the measured vLLM V1
    # step host time; without it the default is 10.22 % (docs/estimators.md).
    assert score("roofline")["mape_decode_percent"] <= 10.0
    assert ideal["mape_held_out_percent"] > 20.0  # the pure bound sits well under measurement
    assert ideal["version_terms"] == {} and default["version_terms"] == {}
    # The per-pass host time is fitted to 0 on the public GPU runs (docs/estimators.md): the
    # default has no host time per draft step, so every vLLM mid-2025 ratio is under-priced,
    # by more at deeper drafts.
    by_id = {row["id"]: row for row in default["rows"]}
    errors = [by_id[f"vllm-20780/eagle3/k{depth}"]["error_percent"] for depth in (2, 3, 4, 5)]
    assert all(error < -20.0 for error in errors)
    assert errors == sorted(errors, reverse=True)


def test_the_vllm_2025_draft_step_host_time_is_fitted_on_k2_k3_and_judged_on_k4_to_k7() -> None:
    scored = score("roofline", step_host=False)
    default = {row["id"]: row for row in score("roofline", version_terms=False)["rows"]}
    term = scored["version_terms"]["vllm (V1, mid 2025)"]
    fitted_on = ["vllm-20780/eagle3/k2", "vllm-20780/eagle3/k3"]
    assert term["fitted_on"] == fitted_on
    step_ms = term["draft_step_host_ms"]
    assert 0.9 < step_ms < 1.2  # about 1 ms per draft step (docs/estimators.md)
    # The default's STP price of the setup (H100, Llama-3.1-8B, batch 1, 512 past tokens):
    # 6.532 ms, the vllm-20780 decode row of the docs table.
    stp_price = 6.532
    rows = {row["id"]: row for row in scored["rows"]}
    normal = 0.0
    for k in range(2, 8):
        row = rows[f"vllm-20780/eagle3/k{k}"]
        # The term adds k x step_ms to the round and nothing to the STP step.
        moved = row["predicted"] - default[row["id"]]["predicted"]
        assert moved == pytest.approx(k * step_ms / stp_price, rel=1e-3)
        seen = row["id"] in fitted_on
        assert row["seen_by"] == (["draft_step_host_s"] if seen else [])
        assert row["held_out"] is (not seen)
        if seen:
            # Least squares: the fitted rows' residuals, weighted by k, sum to zero.
            normal += k * (row["predicted"] - row["measured"])
    assert normal == pytest.approx(0.0, abs=1e-9)
    held = [r for r in scored["rows"] if r["held_out"]]
    assert len(held) == 6 + 4
    sd = [abs(r["error_percent"]) for r in held if r["quantity"] == "round_over_stp"]
    assert scored["mape_sd_percent"] == pytest.approx(sum(sd) / 4)
    assert scored["mape_held_out_percent"] == pytest.approx(
        sum(abs(r["error_percent"]) for r in held) / 10
    )
    # The decode rows are untouched by a per-draft-step term.
    for row in scored["rows"]:
        if row["quantity"] == "decode_ms":
            assert row["predicted"] == default[row["id"]]["predicted"]


def test_vllm_v1_2025_decode_steps_pay_the_measured_step_host_time() -> None:
    scored = score("roofline")
    default = {row["id"]: row for row in score("roofline", version_terms=False)["rows"]}
    # Measured by qualification/engine/probe_step_host.py (docs/estimators.md): 0.512 ms at
    # batch 1 for both vLLM V1 versions of 2025; it saw no row, so every row stays held out.
    assert scored["step_host_terms"] == {
        "vllm (V1, April 2025)": {"step_host_ms": 0.512, "batch": 1},
        "vllm (V1, mid 2025)": {"step_host_ms": 0.512, "batch": 1},
    }
    rows = {row["id"]: row for row in scored["rows"]}
    v1 = ("vllm-20780/llama-3.1-8b/h100/b1", "vllm-16937/llama-3.1-8b/h100/b1")
    for row_id, row in rows.items():
        if row["quantity"] != "decode_ms":
            continue
        moved = row["predicted"] - default[row_id]["predicted"]
        assert moved == pytest.approx(0.512 if row_id in v1 else 0.0, abs=1e-12)
        assert row["held_out"] and row["seen_by"] == []
    # Against the published figures (7.07 and 7.5188 ms, measurements.json): the default's
    # price of the setup, 6.532 ms (the docs table: the code's own figure, a pin), + 0.512 =
    # 7.044 ms, -0.37 % and -6.31 %.
    assert rows[v1[0]]["error_percent"] == pytest.approx(100 * (7.044 - 7.07) / 7.07, abs=0.01)
    assert rows[v1[1]]["error_percent"] == pytest.approx(100 * (7.044 - 7.5188) / 7.5188, abs=0.01)
    # The decode MAPE is the mean |error| of the six decode rows, each from its published
    # measurement (the other four at their default price: moved 0 above).
    decode = [row for row in rows.values() if row["quantity"] == "decode_ms"]
    errors = [abs(row["predicted"] - row["measured"]) / row["measured"] * 100.0 for row in decode]
    assert len(decode) == 6
    assert scored["mape_decode_percent"] == pytest.approx(sum(errors) / 6, rel=1e-9)
    # The figure cost-model/public-decode quotes (a pin of the code's output; 10.22 % without
    # the term, docs/estimators.md).
    assert round(scored["mape_decode_percent"], 2) == 7.88


def test_a_step_host_time_paid_by_round_and_stp_moves_the_draft_step_fit_not_the_ratios() -> None:
    """The round / STP ratio becomes (R + s + k h) / (S + s). The default prices a batch-1
    round as the STP step plus k equal draft steps, R = S + k c, so the refit keeps the slope
    (c + h) / S: h' = h + (c + h) s / S, and every ratio stays where it was."""
    with_host = score("roofline")
    without = score("roofline", step_host=False)
    default = {row["id"]: row for row in score("roofline", version_terms=False)["rows"]}
    stp_price = default["vllm-20780/llama-3.1-8b/h100/b1"]["predicted"]  # 6.532 ms
    # c, the default's price of one draft step: (ratio - 1) S / k, the same for every k (to
    # 2e-5 ms: each step reads the KV its predecessors appended).
    draft = [
        (default[f"vllm-20780/eagle3/k{k}"]["predicted"] - 1.0) * stp_price / k for k in range(2, 8)
    ]
    assert max(draft) - min(draft) < 2e-5
    h = without["version_terms"]["vllm (V1, mid 2025)"]["draft_step_host_ms"]
    refit = with_host["version_terms"]["vllm (V1, mid 2025)"]["draft_step_host_ms"]
    assert refit == pytest.approx(h + (draft[0] + h) * 0.512 / stp_price, rel=1e-5)
    # 1.034 ms -> 1.142 ms (docs/estimators.md): 0.335 ms per default draft step.
    assert (round(h, 3), round(refit, 3), round(draft[0], 3)) == (1.034, 1.142, 0.335)
    pairs = zip(with_host["rows"], without["rows"], strict=True)
    for new, old in pairs:
        if new["quantity"] == "round_over_stp":
            assert new["predicted"] == pytest.approx(old["predicted"], rel=1e-5)
    assert with_host["mape_sd_percent"] == pytest.approx(without["mape_sd_percent"], abs=1e-3)


def test_a_step_host_term_refuses_bad_values_and_a_row_at_another_batch() -> None:
    data = load_measurements()
    terms = [entry for entry in data["version_terms"] if entry["term"] == "step_host_s"]
    bad = {**data, "version_terms": [{**terms[0], "value_ms": -0.5}]}
    with pytest.raises(ValueError, match=r"version_terms\[0\]\.value_ms: -0\.5; expected"):
        step_host_terms(bad)
    bad = {**data, "version_terms": [{**terms[0], "batch": 0}]}
    with pytest.raises(ValueError, match=r"version_terms\[0\]\.batch: 0; expected an int"):
        step_host_terms(bad)
    hosts = step_host_terms(data)
    row = {"id": "x/b8", "engine": "vllm (V1, mid 2025)", "batch": 8}
    with pytest.raises(ValueError, match=r"x/b8\.batch: 8; the step_host_s .* batch 1 only"):
        _step_host_ms(hosts, row)
    assert _step_host_ms(hosts, {**row, "engine": "sglang"}) == 0.0


def test_measured_ratio_is_tpot_times_acceptance_over_stp() -> None:
    row = next(r for r in score("roofline")["rows"] if r["id"] == "vllm-20780/eagle3/k3")
    assert row["measured"] == 4.09 * 2.79 / 7.07  # 1.614: the published table


def test_rulecheck_never_prices_a_round_below_the_widened_stp_pass() -> None:
    rows = rulecheck(gpus=("h100_sxm", "b200_sxm"))
    assert len(rows) == 2 * 2 * 5
    # H100 holds 80 GiB: Qwen3-8B's 16.4 GB of weights plus 147,456 KV bytes per token leave
    # room for about 471k tokens, so B x K of 64 x 8k, 64 x 16k, 64 x 32k, 32 x 16k, 32 x 32k and
    # 16 x 32k (6 of the 35 points) do not fit.
    h100 = [row for row in rows if row["hardware"] == "h100_sxm"]
    assert {(row["points"], row["over_capacity"]) for row in h100} == {(29, 6)}
    for row in rows:
        assert row["below_widened_count"] == 0
        assert 1.0 < row["ratio_min"] <= row["ratio_median"] <= row["ratio_max"]
        assert row["rule_factor"] == round(0.08 * row["d"] + 1.25, 2)
