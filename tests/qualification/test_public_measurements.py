"""The default against the committed public measurements, and the published-rule cross-check."""

from __future__ import annotations

from qualification.public import load_measurements, rulecheck, score


def test_every_public_row_names_its_source_and_role() -> None:
    data = load_measurements()
    for row in data["decode_steps"]:
        assert row["source"].startswith("https://") and row["how"]
        assert row["role"] in ("derivation", "validation")
    assert data["sd_round_setup"]["source"].startswith("https://")


def test_default_decode_is_within_ten_percent_and_vllm_2025_draft_steps_are_a_known_gap() -> None:
    default = score("roofline")
    ideal = score("roofline_ideal")
    assert default["mape_decode_percent"] <= 10.0
    assert ideal["mape_held_out_percent"] > 20.0  # the pure bound sits well under measurement
    # The per-pass host time is fitted to 0 on the public GPU runs (docs/estimators.md): vLLM's
    # mid-2025 EAGLE-3 rounds paid ~1.3 ms per draft step, so every ratio is now under-priced,
    # by more at deeper drafts (the plan marks cost-model/public-sd-ratio a known gap).
    by_id = {row["id"]: row for row in default["rows"]}
    errors = [by_id[f"vllm-20780/eagle3/k{depth}"]["error_percent"] for depth in (2, 3, 4, 5)]
    assert all(error < -20.0 for error in errors)
    assert errors == sorted(errors, reverse=True)


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
