"""Acceptance read from engine metrics: committed scrapes, logs and request outputs written by
hand from each engine's exposition format, with counts chosen so every rate is hand-computable.

The expected numbers are worked out in the comments (never by the code under test); the
Clopper-Pearson bounds are checked against their closed forms at k = 0 and k = n and a
published table value.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aisim import AcceptanceProfile, ConfigError
from aisim.speculation import ENGINE_METRICS_FORMATS
from aisim.speculation._engine_measure import (
    detect_format,
    load_engine_acceptance,
    measure_engine_acceptance,
)

DATA = Path(__file__).resolve().parent / "engine_metrics"
BEFORE = DATA / "vllm_before.prom"
AFTER = DATA / "vllm_after.prom"
DP = DATA / "vllm_data_parallel.prom"
SGLANG_PROM = DATA / "sglang_metrics.prom"
SGLANG_LOG = DATA / "sglang_server.log"
SGLANG_REQUESTS = DATA / "sglang_requests.jsonl"
SERIES = '{engine="0",model_name="Qwen/Qwen3-8B"}'


def _scrape(tmp_path: Path, name: str, counts: dict[str, float], labels: str = SERIES) -> Path:
    """A minimal vLLM scrape: ``counts`` maps drafts/draft_tokens/accepted/pos0.. to values."""
    inner = labels[1:-1]
    lines = []
    for key, value in counts.items():
        if key.startswith("pos"):
            lines.append(
                f"vllm:spec_decode_num_accepted_tokens_per_pos_total{{{inner},"
                f'position="{key[3:]}"}} {value}'
            )
        else:
            metric = {
                "drafts": "num_drafts",
                "draft_tokens": "num_draft_tokens",
                "accepted": "num_accepted_tokens",
            }[key]
            lines.append(f"vllm:spec_decode_{metric}_total{labels} {value}")
    file = tmp_path / name
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return file


def _error(call: object) -> str:
    assert callable(call)
    with pytest.raises(ConfigError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    return message


# -- vLLM --------------------------------------------------------------------------------------


def test_vllm_window_between_two_scrapes_by_hand() -> None:
    # Window = after - before: drafts 1400-400 = 1000, draft tokens 4200-1200 = 3000,
    # accepted 2110-610 = 1500, per position 1100-300 = 800, 700-200 = 500, 310-110 = 200.
    # u = (800, 500, 200) / 1000 = (0.8, 0.5, 0.2); p = (0.8, 500/800, 200/500) = (0.8, 0.625,
    # 0.4); E[a] = 0.8 + 0.5 + 0.2 = 1.5; AL = 2.5; P(a = 0..3) = (0.2, 0.3, 0.3, 0.2).
    measured = measure_engine_acceptance(AFTER, "vllm-prometheus", baseline=BEFORE)
    assert (measured.drafts, measured.draft_tokens, measured.accepted_tokens) == (1000, 3000, 1500)
    assert measured.accepted_at_least == (800, 500, 200)
    assert dict(measured.labels) == {"engine": "0", "model_name": "Qwen/Qwen3-8B"}
    assert [item.sha256 for item in measured.files] == [
        hashlib.sha256(BEFORE.read_bytes()).hexdigest(),
        hashlib.sha256(AFTER.read_bytes()).hexdigest(),
    ]
    profile = measured.profile()
    assert profile.depth == 3
    assert profile.unconditional_rates == (0.8, 0.5, 0.2)
    assert profile.conditional_rates == pytest.approx((0.8, 0.625, 0.4), abs=1e-15)
    assert profile.mean_accepted == pytest.approx(1.5, abs=1e-15)
    assert profile.acceptance_length == pytest.approx(2.5, abs=1e-15)
    assert profile.accepted_length_distribution() == pytest.approx((0.2, 0.3, 0.3, 0.2))
    assert profile == AcceptanceProfile.from_unconditional([0.8, 0.5, 0.2])


def test_vllm_single_scrape_counts_since_engine_start() -> None:
    # after alone: drafts 1400, per position (1100, 700, 310): u = (11/14, 1/2, 31/140).
    profile = load_engine_acceptance(AFTER, "vllm-prometheus")
    assert profile.unconditional_rates == pytest.approx((11 / 14, 0.5, 31 / 140), abs=1e-15)
    assert profile.mean_accepted == pytest.approx(2110 / 1400, abs=1e-15)


def test_format_is_told_from_the_text() -> None:
    assert detect_format(AFTER.read_text(), "after") == "vllm-prometheus"
    assert detect_format(SGLANG_PROM.read_text(), "m") == "sglang-prometheus"
    assert detect_format(SGLANG_LOG.read_text(), "log") == "sglang-log"
    assert detect_format(SGLANG_REQUESTS.read_text(), "req") == "sglang-requests"
    message = _error(lambda: detect_format("# HELP x y\nx 1\n", "plain.prom"))
    assert message.startswith("'plain.prom': no speculative-decoding metrics found")


def test_several_engines_in_one_scrape_are_selected_by_label() -> None:
    message = _error(lambda: measure_engine_acceptance(DP, "vllm-prometheus"))
    assert "2 vllm:spec_decode_* series, so which one is ambiguous" in message
    assert message.endswith(
        'label sets found: {engine="0",model_name="Qwen/Qwen3-8B"}, '
        '{engine="1",model_name="Qwen/Qwen3-8B"}'
    )
    # engine 1: drafts 200, per position (150, 100, 50): u = (0.75, 0.5, 0.25).
    profile = load_engine_acceptance(DP, "vllm-prometheus", labels={"engine": "1"})
    assert profile.unconditional_rates == (0.75, 0.5, 0.25)
    message = _error(lambda: load_engine_acceptance(DP, labels={"engine": "7"}))
    assert 'no vllm:spec_decode_* series with labels {engine="7"}; label sets found:' in message


def test_counter_reset_between_scrapes_is_refused() -> None:
    # Scrapes given in the wrong order look exactly like a restart: every counter went down.
    message = _error(lambda: measure_engine_acceptance(BEFORE, baseline=AFTER))
    assert "counter reset: vllm:spec_decode_num_drafts" in message
    assert "went down from 1400 to 400" in message


def test_counter_reset_seen_by_created_timestamp_is_refused(tmp_path: Path) -> None:
    # A restarted engine that already counted past the earlier values: only _created tells.
    restarted = tmp_path / "restarted.prom"
    text = AFTER.read_text().replace("1.7643e+09", "1.7644e+09")
    text = text.replace("} 1400.0", "} 5000.0")
    restarted.write_text(text, encoding="utf-8")
    message = _error(lambda: measure_engine_acceptance(restarted, baseline=BEFORE))
    assert "counter reset:" in message and "_created" in message
    assert "changed from 1764300000.0 to 1764400000.0" in message


def test_scrape_without_speculative_metrics_is_an_error(tmp_path: Path) -> None:
    file = tmp_path / "plain.prom"
    file.write_text(
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{engine="0",model_name="m"} 2.0\n',
        encoding="utf-8",
    )
    message = _error(lambda: measure_engine_acceptance(file, "vllm-prometheus"))
    assert "no speculative-decoding metrics (vllm:spec_decode_*) in this scrape" in message


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"drafts": -1, "draft_tokens": 3, "accepted": 1, "pos0": 1}, "is negative (-1.0)"),
        ({"drafts": 2.5, "draft_tokens": 3, "accepted": 1, "pos0": 1}, "must be a whole number"),
        ({"drafts": 10, "draft_tokens": 30, "accepted": 9, "pos0": 4, "pos1": 5}, "position 1"),
        ({"drafts": 10, "draft_tokens": 30, "accepted": 9, "pos0": 6, "pos1": 2}, "sum to 8"),
        ({"drafts": 10, "draft_tokens": 3, "accepted": 5, "pos0": 5}, "can never exceed"),
        ({"drafts": 0, "draft_tokens": 0, "accepted": 0, "pos0": 0}, "is 0 in this window"),
        ({"drafts": 4, "draft_tokens": 8, "accepted": 1, "pos0": 1, "pos2": 0}, "none missing"),
        ({"draft_tokens": 8, "accepted": 1, "pos0": 1}, "lacks vllm:spec_decode_num_drafts"),
        ({"drafts": "NaN", "draft_tokens": 8, "accepted": 1}, "must be finite"),
    ],
)
def test_inconsistent_counters_are_one_line_errors(
    tmp_path: Path, counts: dict[str, float], expected: str
) -> None:
    file = _scrape(tmp_path, "bad.prom", counts)
    assert expected in _error(lambda: measure_engine_acceptance(file, "vllm-prometheus"))


def test_per_position_series_must_match_the_depth() -> None:
    longer = _error(lambda: load_engine_acceptance(AFTER, "vllm-prometheus", depth=2))
    assert "the per-position series has 3 positions, longer than the configured depth 2" in longer
    shorter = _error(lambda: load_engine_acceptance(AFTER, "vllm-prometheus", depth=4))
    assert "shorter than the configured depth 4" in shorter


def test_vllm_without_per_position_counter_gives_the_mean(tmp_path: Path) -> None:
    # drafts 200, accepted 300: E[a] = 1.5, AL = 2.5; at depth 3 the staircase (1, 0.5, 0).
    file = _scrape(tmp_path, "old.prom", {"drafts": 200, "draft_tokens": 600, "accepted": 300})
    measured = measure_engine_acceptance(file, "vllm-prometheus")
    assert measured.acceptance_length == 2.5 and measured.intervals() is None
    assert measured.profile(3).conditional_rates == (1.0, 0.5, 0.0)
    assert "only the mean acceptance length; give the depth" in _error(measured.profile)


def test_malformed_and_missing_files_are_one_line_errors(tmp_path: Path) -> None:
    file = tmp_path / "garbage.prom"
    file.write_text('vllm:spec_decode_num_drafts_total{engine="0" 12\n', encoding="utf-8")
    message = _error(lambda: measure_engine_acceptance(file, "vllm-prometheus"))
    assert "not Prometheus text exposition format" in message
    missing = _error(lambda: measure_engine_acceptance(tmp_path / "nope.prom"))
    assert missing.endswith("nope.prom': file not found")
    long_name = _error(lambda: measure_engine_acceptance(tmp_path / ("m" * 300)))
    assert long_name.startswith("path: file name too long: at most 255 bytes per name")
    binary = tmp_path / "binary.prom"
    binary.write_bytes(b"\xff\xfe\x00")
    assert "not UTF-8 text" in _error(lambda: measure_engine_acceptance(binary))


# -- binomial intervals -------------------------------------------------------------------------


def test_clopper_pearson_intervals_by_closed_form(tmp_path: Path) -> None:
    # 10 drafts, all accept position 1, 5 accept position 2, none position 3.
    file = _scrape(
        tmp_path,
        "ci.prom",
        {"drafts": 10, "draft_tokens": 30, "accepted": 15, "pos0": 10, "pos1": 5, "pos2": 0},
    )
    rows = measure_engine_acceptance(file, "vllm-prometheus").intervals(confidence=0.95)
    assert rows is not None
    # k = n = 10: the exact interval is [(alpha/2)^(1/n), 1] with alpha = 0.05.
    assert rows[0]["conditional_ci"] == pytest.approx([0.025 ** (1 / 10), 1.0], abs=1e-9)
    # k = 5 of n = 10: [0.1871, 0.8129] (Clopper-Pearson table, e.g. Newcombe 1998, method 4).
    assert rows[1]["conditional_ci"] == pytest.approx([0.1871, 0.8129], abs=1e-4)
    assert rows[1]["conditional_trials"] == 10
    # k = 0 of n = 5: [0, 1 - (alpha/2)^(1/n)].
    assert rows[2]["conditional_ci"] == pytest.approx([0.0, 1 - 0.025 ** (1 / 5)], abs=1e-9)
    assert rows[2]["unconditional_ci"] == pytest.approx([0.0, 1 - 0.025 ** (1 / 10)], abs=1e-9)


# -- SGLang ------------------------------------------------------------------------------------


def test_sglang_gauge_is_a_mean_acceptance_length() -> None:
    # AL 2.75 at depth 3: E[a] = 1.75, the staircase (1, 0.75, 0).
    measured = measure_engine_acceptance(SGLANG_PROM, "sglang-prometheus")
    assert measured.acceptance_length == 2.75 and measured.drafts is None
    assert measured.profile(3).conditional_rates == (1.0, 0.75, 0.0)
    assert measured.intervals(3) is None
    assert "longer than depth 1 allows (at most 2" in _error(lambda: measured.profile(1))
    message = _error(lambda: measure_engine_acceptance(SGLANG_PROM, baseline=SGLANG_PROM))
    assert "a baseline scrape" in message and "sglang-prometheus is read as one file" in message


def test_sglang_gauge_at_zero_and_several_ranks(tmp_path: Path) -> None:
    file = tmp_path / "zero.prom"
    file.write_text('sglang:spec_accept_length{model_name="m",tp_rank="0"} 0.0\n', "utf-8")
    assert "is 0: SGLang reports 0 before" in _error(lambda: measure_engine_acceptance(file))
    file.write_text(
        'sglang:spec_accept_length{model_name="m",tp_rank="0"} 2.0\n'
        'sglang:spec_accept_length{model_name="m",tp_rank="1"} 2.5\n',
        "utf-8",
    )
    assert "ambiguous" in _error(lambda: measure_engine_acceptance(file))
    profile = load_engine_acceptance(file, labels={"tp_rank": "1"}, depth=2)
    assert profile.acceptance_length == 2.5


def test_sglang_log_mean_of_accept_len_per_data_parallel_rank() -> None:
    # DP0 windows: 2.50, 3.00, 2.00 -> mean 2.5 -> E[a] = 1.5 -> staircase (1, 0.5, 0) at d = 3.
    message = _error(lambda: measure_engine_acceptance(SGLANG_LOG, "sglang-log"))
    assert message.endswith('label sets found: {dp="0",tp="0"}, {dp="1",tp="0"}')
    measured = measure_engine_acceptance(SGLANG_LOG, "sglang-log", labels={"dp": "0"})
    assert (measured.acceptance_length, measured.windows) == (2.5, 3)
    assert measured.profile(3).conditional_rates == (1.0, 0.5, 0.0)
    # DP1: one window at 3.50.
    assert load_engine_acceptance(SGLANG_LOG, labels={"dp": "1"}, depth=3).mean_accepted == 2.5


def test_sglang_log_older_line_format_and_no_lines(tmp_path: Path) -> None:
    file = tmp_path / "old.log"
    file.write_text(
        "[2025-01-01 10:00:00] Decode batch. #running-req: 1, #token: 83, token usage: 0.00, "
        "accept len: 3.04, gen throughput (token/s): 90.10, #queue-req: 0\n",
        encoding="utf-8",
    )
    assert load_engine_acceptance(file, "sglang-log", depth=3).acceptance_length == 3.04
    file.write_text("[2025-01-01 10:00:00] Prefill batch, #new-seq: 1\n", encoding="utf-8")
    message = _error(lambda: measure_engine_acceptance(file, "sglang-log"))
    assert "no SGLang decode log line with 'accept len:'" in message


def test_sglang_request_histograms_by_hand() -> None:
    # Histograms (verify steps accepting exactly 0, 1, 2, 3 drafts): r1 (5, 10, 20, 5),
    # r2 (10, 15, 10, 5), r3 (5, 5, 10); r4 never speculated. Sum (20, 30, 40, 10): 100 verify
    # steps; accepting >= 1, 2, 3: 80, 50, 10; u = (0.8, 0.5, 0.1), p = (0.8, 0.625, 0.2),
    # E[a] = 1.4, accepted tokens 30 + 80 + 30 = 140.
    measured = measure_engine_acceptance(SGLANG_REQUESTS, "sglang-requests")
    assert (measured.drafts, measured.accepted_tokens, measured.windows) == (100, 140, 3)
    assert measured.accepted_at_least == (80, 50, 10)
    profile = measured.profile(3)
    assert profile.unconditional_rates == (0.8, 0.5, 0.1)
    assert profile.conditional_rates == pytest.approx((0.8, 0.625, 0.2), abs=1e-15)
    # The histogram stops at the longest accept seen: at depth 4 position 4 accepted nothing.
    assert measured.profile(4).unconditional_rates == (0.8, 0.5, 0.1, 0.0)
    assert "longer than the configured depth 2" in _error(lambda: measured.profile(2))
    assert "cannot tell the depth" in _error(measured.profile)


def test_sglang_requests_as_a_json_array_and_bad_entries(tmp_path: Path) -> None:
    lines = [line for line in SGLANG_REQUESTS.read_text().splitlines() if line]
    array = tmp_path / "requests.json"
    array.write_text("[" + ",\n".join(lines) + "]", encoding="utf-8")
    assert measure_engine_acceptance(array).accepted_at_least == (80, 50, 10)
    array.write_text('[{"meta_info": {"spec_accept_histogram": [3, -1]}}]', encoding="utf-8")
    message = _error(lambda: measure_engine_acceptance(array, "sglang-requests"))
    assert message.endswith("spec_accept_histogram[1]: expected a non-negative whole count, got -1")
    array.write_text('{"meta_info": {"spec_accept_histogram": [1]}}\n' + "9" * 5000, "utf-8")
    message = _error(lambda: measure_engine_acceptance(array, "sglang-requests"))
    assert message.startswith(
        f"{str(array)!r}:2: not JSON (an integer of 5000 digits; at most 4300 digits are read)"
    )
    message = _error(lambda: measure_engine_acceptance(SGLANG_REQUESTS, labels={"model_name": "m"}))
    assert "sglang-requests has none" in message


# -- invariants ---------------------------------------------------------------------------------


@st.composite
def _window(draw: st.DrawFn) -> tuple[int, list[int]]:
    drafts = draw(st.integers(min_value=1, max_value=10**9))
    counts: list[int] = []
    ceiling = drafts
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        ceiling = draw(st.integers(min_value=0, max_value=ceiling))
        counts.append(ceiling)
    return drafts, counts


@given(_window())
def test_probe_counts_become_rates_and_intervals_hold_them(window: tuple[int, list[int]]) -> None:
    drafts, counts = window
    values: dict[str, float] = {
        "drafts": drafts,
        "draft_tokens": drafts * len(counts),
        "accepted": sum(counts),
    }
    values.update({f"pos{index}": count for index, count in enumerate(counts)})
    with tempfile.TemporaryDirectory() as folder:
        measured = measure_engine_acceptance(_scrape(Path(folder), "w.prom", values))
    profile = measured.profile()
    assert profile.unconditional_rates == tuple(count / drafts for count in counts)
    rows = measured.intervals()
    assert rows is not None
    for row, rate in zip(rows, profile.unconditional_rates, strict=True):
        low, high = row["unconditional_ci"]
        assert 0.0 <= low <= rate <= high <= 1.0


_FIXTURE_LINES = sorted(
    {line for file in DATA.iterdir() for line in file.read_text(encoding="utf-8").splitlines()}
)
_NUMBER = st.sampled_from(["-1", "0", "1", "2.5", "NaN", "+Inf", "1e308", "", "x", "9" * 30])


@st.composite
def _mangled_line(draw: st.DrawFn) -> str:
    """A real line from the fixtures with its last field, or a random slice, replaced."""
    line = draw(st.sampled_from(_FIXTURE_LINES))
    if draw(st.booleans()):
        return line.rsplit(" ", 1)[0] + " " + draw(_NUMBER)
    cut = draw(st.integers(min_value=0, max_value=len(line)))
    return line[:cut] + draw(st.text(max_size=8)) + line[cut + 1 :]


@given(st.lists(st.one_of(st.sampled_from(_FIXTURE_LINES), _mangled_line()), max_size=12))
def test_probe_any_text_is_read_or_refused_in_one_line(lines: list[str]) -> None:
    text = "\n".join(lines)
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "fuzz.txt"
        file.write_text(text, encoding="utf-8")
        for format_name in (None, *ENGINE_METRICS_FORMATS):
            try:
                measure_engine_acceptance(file, format_name)
            except ConfigError as exc:
                assert "\n" not in str(exc)
