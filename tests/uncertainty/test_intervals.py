"""Prediction intervals: hand-derived exact intervals, every source off equals today's point,
cost factors applied by step kind, determinism, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from single_request import single_request

from aisim.cli import main
from aisim.config import run_replay
from aisim.errors import ConfigError
from aisim.uncertainty import (
    CostErrorTable,
    ErrorSample,
    Sources,
    load_cost_errors,
    replay_intervals,
)


def test_binomial_acceptance_gives_the_exact_interval() -> None:
    # Output 13 tokens: the prefill emits the first, then m = 12 tokens come from SD rounds of
    # 1 + Bernoulli(1/2) tokens. R rounds suffice when R + Bin(R, 1/2) >= 12, so
    # P(R <= r) = P(Bin(r, 1/2) >= 12 - r):
    #   r = 6: 1/64 = 0.016;  r = 7: (1 + 7 + 21 + 35 + 35 + 21)... = 29/128 = 0.227
    #   r = 8: 163/256 = 0.637;  r = 9: 466/512 = 0.910;  r = 10: 1013/1024 = 0.989
    # so the 5 % quantile of R is 7, the median 8, the 95 % quantile 10, and
    # E2E = 10 + 5 R ms: [45, 60], p50 50; TPOT = 5 R / 12 ms; TTFT is 10 ms in every replica.
    report = replay_intervals(
        single_request(13, 0.5), 400, seed=5, sources=Sources(False, False, True)
    )
    e2e = report["metrics"]["mean_e2e_ms"]
    assert (e2e["low"], e2e["p50"], e2e["high"]) == (45.0, 50.0, 60.0)
    tpot = report["metrics"]["p90_tpot_ms"]
    assert (tpot["low"], tpot["p50"], tpot["high"]) == (35 / 12, 40 / 12, 50 / 12)
    ttft = report["metrics"]["mean_ttft_ms"]
    assert (ttft["low"], ttft["p50"], ttft["high"]) == (10.0, 10.0, 10.0)
    assert report["includes"] == ["simulation"]


def test_cumulative_binomial_oracle_matches_the_comment() -> None:
    from math import comb

    def at_most(r: int) -> float:
        return sum(comb(r, k) for k in range(max(0, 12 - r), r + 1)) / 2**r

    assert [round(at_most(r), 3) for r in range(6, 11)] == [0.016, 0.227, 0.637, 0.91, 0.989]


def test_every_source_off_is_a_zero_width_interval_at_the_point() -> None:
    config = single_request(13, 0.5)
    point = run_replay(config).summary
    report = replay_intervals(config, 4, sources=Sources.parse("none"))
    assert report["includes"] == []
    assert not any(source["included"] for source in report["sources"].values())
    e2e = report["metrics"]["mean_e2e_ms"]
    assert e2e["low"] == e2e["p50"] == e2e["high"] == e2e["point"] == point["mean_e2e_latency_ms"]
    throughput = report["metrics"]["request_throughput_rps"]
    assert throughput["low"] == throughput["high"] == point["request_throughput_rps"]


SUMMARY_NAME = {
    "mean_ttft_ms": "mean_ttft_ms",
    "p90_ttft_ms": "p90_ttft_ms",
    "mean_tpot_ms": "mean_tpot_ms",
    "p90_tpot_ms": "p90_tpot_ms",
    "mean_e2e_ms": "mean_e2e_latency_ms",
    "p90_e2e_ms": "p90_e2e_latency_ms",
    "request_throughput_rps": "request_throughput_rps",
    "output_throughput_tok_s": "output_throughput_tok_s",
}


def test_sources_none_on_the_worked_example_is_the_point_on_every_metric(
    tmp_path: Path,
) -> None:
    # docs/examples/replay/aggregated_mtp.yaml is priced by the roofline, which has cost
    # evidence, and draws Poisson arrivals: with every source on its intervals have width; with
    # --sources none every metric's p50 and bounds are the point, which is summary.json's
    # figure, and summary.json is the bytes of a run without --intervals.
    config = str(Path(__file__).resolve().parents[2] / "docs/examples/replay/aggregated_mtp.yaml")
    assert main(["replay", config, "--out", str(tmp_path / "plain"), "--no-progress"]) == 0
    argv = ["replay", config, "--intervals", "3", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "none"), "--sources", "none"]) == 0
    assert main([*argv, "--out", str(tmp_path / "all")]) == 0
    summary = (tmp_path / "plain/summary.json").read_bytes()
    assert (tmp_path / "none/summary.json").read_bytes() == summary
    assert (tmp_path / "all/summary.json").read_bytes() == summary
    point = json.loads(summary)
    off = json.loads((tmp_path / "none/intervals.json").read_text())
    assert off["includes"] == []
    assert len(off["metrics"]) == 9
    for name, figures in off["metrics"].items():
        assert figures["low"] == figures["p50"] == figures["high"] == figures["point"], name
        if name in SUMMARY_NAME:
            assert figures["point"] == point[SUMMARY_NAME[name]], name
    on = json.loads((tmp_path / "all/intervals.json").read_text())
    assert "cost" in on["includes"]
    tpot = on["metrics"]["mean_tpot_ms"]
    assert tpot["low"] < tpot["high"] and tpot["point"] == point["mean_tpot_ms"]


def test_cost_factors_multiply_each_step_kind() -> None:
    # Acceptance 1.0: 12 tokens after the first come in 6 rounds of 2. A table for the fixed
    # pricer with prefill x 1.5 and SD rounds x 2.0: TTFT 15 ms, E2E 15 + 6 x 10 = 75 ms.
    table = CostErrorTable(
        (
            ErrorSample("fixed", "prefill", "test", "g", 1.5, "hand", "synthetic"),
            ErrorSample("fixed", "sd_round", "test", "g", 2.0, "hand", "synthetic"),
        )
    )
    report = replay_intervals(
        single_request(13, 1.0), 2, sources=Sources(False, True, False), table=table
    )
    assert report["metrics"]["mean_ttft_ms"]["low"] == 15.0
    assert report["metrics"]["mean_e2e_ms"]["high"] == 75.0
    assert report["metrics"]["mean_e2e_ms"]["point"] == 10.0 + 6 * 5.0
    assert report["includes"] == ["cost"]


def test_groups_are_drawn_together_and_relative_kinds_compose() -> None:
    import numpy as np

    table = CostErrorTable(
        (
            ErrorSample("x", "decode", "r", "run-a", 0.5, "s", "t"),
            ErrorSample("x", "prefill", "r", "run-a", 0.25, "s", "t"),
            ErrorSample("x", "decode", "r", "run-b", 2.0, "s", "t"),
            ErrorSample("x", "prefill", "r", "run-b", 4.0, "s", "t"),
            ErrorSample("x", "sd_round", "r", "ratio", 3.0, "s", "t", relative_to="decode"),
        )
    )
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(200):
        factors = table.sample(rng, "x")
        assert factors.sd_round == 3.0 * factors.decode
        if factors.decode == 0.5:
            # run-a drawn: its prefill comes with it; a decode drawn from the pool (group
            # "ratio" drawn) pairs with any prefill.
            seen.add((factors.decode, factors.prefill))
        assert factors.mixed == 1.0 and "mixed" not in factors.sampled
    assert (0.5, 0.25) in seen


def test_acceptance_counts_sample_the_beta_posterior() -> None:
    import numpy as np
    from scipy.stats import beta

    from aisim.uncertainty import AcceptanceCounts

    counts = AcceptanceCounts(200, (120, 60), "test")
    rng = np.random.default_rng(1)
    draws = np.array([counts.sample(rng, [0.6, 0.5]) for _ in range(4000)])
    # Position 1: 120 of 200; position 2: 60 of the 120 that reached it (Jeffreys prior).
    for column, (k, n) in enumerate(((120, 200), (60, 120))):
        low, high = np.quantile(draws[:, column], [0.05, 0.95])
        assert low == pytest.approx(beta.ppf(0.05, k + 0.5, n - k + 0.5), abs=0.006)
        assert high == pytest.approx(beta.ppf(0.95, k + 0.5, n - k + 0.5), abs=0.006)


def test_same_seed_same_report_whatever_the_workers() -> None:
    config = single_request(13, 0.5)
    config["traffic"]["source"]["num_requests"] = 6
    config["traffic"]["load"] = {"type": "poisson", "rate_rps": 50}
    one = replay_intervals(config, 6, seed=9, acceptance_rounds=50, workers=1)
    two = replay_intervals(config, 6, seed=9, acceptance_rounds=50, workers=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    other = replay_intervals(config, 6, seed=10, acceptance_rounds=50, workers=1)
    assert other["metrics"] != one["metrics"]
    assert one["includes"] == ["simulation", "acceptance"]


def test_committed_table_has_provenance_for_every_sample() -> None:
    table = load_cost_errors()
    assert {"roofline", "stp_rule", "engine-step-table"} <= set(table.estimators())
    for sample in table.samples:
        assert sample.source.split("#")[0].split("/")[0] in ("evidence", "qualification")
        assert sample.ratio > 0
    for name in {sample.source.split("#")[0] for sample in table.samples}:
        assert name in table.sources


def write(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_cli_summary_is_byte_identical_with_intervals(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, single_request(13, 0.5))
    assert main(["replay", str(path), "--out", str(tmp_path / "a"), "--no-progress"]) == 0
    code = main(
        ["replay", str(path), "--out", str(tmp_path / "b"), "--intervals", "5", "--no-progress"]
    )
    assert code == 0
    a = (tmp_path / "a/summary.json").read_bytes()
    assert a == (tmp_path / "b/summary.json").read_bytes()
    intervals = json.loads((tmp_path / "b/intervals.json").read_text())
    assert intervals["replicas"] == 5
    assert "90 % interval" in capsys.readouterr().out


def test_cli_json_with_intervals_prints_the_summary_alone(tmp_path: Path, capsys) -> None:
    # docs/uncertainty.md: with --json stdout is one JSON document, the summary; the intervals
    # are in DIR/intervals.json only.
    path = write(tmp_path, single_request(13, 0.5))
    argv = ["replay", str(path), "--out", str(tmp_path / "o"), "--intervals", "2", "--json"]
    assert main([*argv, "--no-progress"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "o/summary.json").read_text())
    assert json.loads((tmp_path / "o/intervals.json").read_text())["replicas"] == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--intervals", "1"], "--intervals: expected an integer in 2..10000 (replicas), got 1"),
        # Planned up front, 10^8 replicas grew past 2 GB before the first replay finished.
        (
            ["--intervals", "100000000"],
            "--intervals: expected an integer in 2..10000 (replicas), got 100000000",
        ),
        (["--intervals", "3", "--sources", "cost,nope"], "--sources: expected all, none"),
        (["--intervals", "3", "--slo", "ttfb_ms:p90=5"], "--slo 'ttfb_ms:p90=5': unknown metric"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path: Path, capsys, flags, message) -> None:
    path = write(tmp_path, single_request(13, 0.5))
    assert main(["replay", str(path), "--out", str(tmp_path / "o"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "o").exists()


def test_unknown_slo_metric_is_one_line() -> None:
    from aisim.cli._intervals import parse_slos

    with pytest.raises(ConfigError, match=r"^--slo 'ttfb_ms:p90=5': unknown metric 'ttfb_ms'"):
        parse_slos(["ttfb_ms:p90=5"])
    assert parse_slos(["tpot_ms:p90=50", "ttft_ms:mean=200"]) == {
        "tpot_ms": {"p90": 50.0},
        "ttft_ms": {"mean": 200.0},
    }


def test_profile_tolerance_moves_every_unconditional_rate_by_one_factor() -> None:
    import numpy as np

    from aisim.uncertainty._acceptance import ProfileSpread

    entry = {"spread": {"kind": "relative_tolerance", "value": 0.05, "of": "each rate"}}
    spread = ProfileSpread.from_entry(entry, "test")
    assert spread is not None
    # Published unconditional [0.8, 0.4] = conditional [0.8, 0.5]; a replica multiplies both
    # unconditional rates by one factor in [0.95, 1.05], so the conditional second rate stays
    # 0.5 and the first lies in [0.76, 0.84].
    rng = np.random.default_rng(3)
    for _ in range(100):
        first, second = spread.sample(rng, [0.8, 0.5])
        assert 0.76 <= first <= 0.84
        assert second == pytest.approx(0.5)


def test_a_profile_range_draws_the_rate_inside_it() -> None:
    import numpy as np

    from aisim.uncertainty._acceptance import ProfileSpread

    spread = ProfileSpread.from_entry({"spread": {"kind": "range", "low": 0.85, "high": 0.9}}, "t")
    assert spread is not None
    rng = np.random.default_rng(4)
    rates = [spread.sample(rng, [0.875])[0] for _ in range(200)]
    assert 0.85 <= min(rates) < 0.86 and 0.89 < max(rates) <= 0.9
