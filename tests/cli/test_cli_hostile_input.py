"""Hostile input at the file and flag edge (issue 17): every case used to end in a traceback
or be read as something else. Each is one ``aisim: error`` line with exit status 2, naming the
input and the limit, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aisim.cli import main
from aisim.errors import ConfigError
from aisim.files import (
    MAX_EXPANDED_NODES,
    MAX_NESTING_DEPTH,
    check_path_text,
    load_config_file,
    parse_float_text,
    parse_int_text,
    parse_json_text,
    parse_yaml_text,
)

REPLAY = """\
traffic:
  source: {type: trace, path: t.csv}
engine:
  workers:
    aggregated:
      kv_cache: {capacity: {type: fixed, blocks: 100}}
      timing: {type: fixed, prefill_ms: 10.0, decode_ms: 5.0}
"""
LONG_NAME = "x" * 256


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --- nesting depth ----------------------------------------------------------------------------


def test_limits_are_documented_values() -> None:
    # The numbers the docs and messages promise (docs/replay.md "Limits").
    assert MAX_NESTING_DEPTH == 64
    assert MAX_EXPANDED_NODES == 1_000_000


def test_deep_yaml_config_is_refused_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("deep.yaml").write_text("a: " + "[" * 2000 + "]" * 2000 + "\n")
    code, out, err = run_cli(["replay", "deep.yaml", "--out", "o"], capsys)
    # The mapping is level 1 and 'a: ' fills columns 1-3, so the 64th '[' (column 3 + 64 = 67)
    # opens level 65.
    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        "aisim: error: 'deep.yaml': nested deeper than 64 levels at line 1, column 67"
    )
    assert not Path("o").exists()


def test_yaml_at_the_depth_limit_still_loads() -> None:
    text = "[" * 64 + "]" * 64
    value = parse_yaml_text(text, "'f.yaml'")
    for _ in range(63):
        value = value[0]
    assert value == []
    with pytest.raises(
        ConfigError, match=r"^'f\.yaml': nested deeper than 64 levels at line 1, column 65$"
    ):
        parse_yaml_text("[" * 65 + "]" * 65, "'f.yaml'")


def test_deep_json_is_refused_before_the_parser_recurses() -> None:
    text = '{"a":\n ' + "[" * 5000 + "]" * 5000 + "}"
    # Level 1 is the object; line 2 starts with a blank, so the 64th '[' (column 65) opens
    # level 65.
    with pytest.raises(ConfigError) as info:
        parse_json_text(text, "'m.json'")
    assert str(info.value) == "'m.json': nested deeper than 64 levels at line 2, column 65"
    assert parse_json_text("[" * 64 + "]" * 64, "x") is not None


def test_brackets_inside_json_strings_do_not_count() -> None:
    text = json.dumps({"a": "[" * 500, "b": '\\"[' * 100, "c": [[1]]})
    assert parse_json_text(text, "x")["c"] == [[1]]


def test_deep_model_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "config.json"
    # Object = level 1; '{"hidden_size": ' is 16 columns; the 64th '[' (column 80) is level 65.
    model.write_text('{"hidden_size": ' + "[" * 3000 + "]" * 3000 + "}")
    code, out, err = run_cli(["estimate", "--model", str(model), "--hardware", "h100"], capsys)
    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        f"aisim: error: model: model config {str(model)!r}: nested deeper than 64 levels at "
        "line 1, column 80"
    )


def test_deep_hardware_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gpu = tmp_path / "gpu.yaml"
    # Mapping = level 1; 'bf16_flops: ' is 12 columns; the 64th '[' (column 76) is level 65.
    gpu.write_text("bf16_flops: " + "[" * 3000 + "]" * 3000 + "\n")
    code, out, err = run_cli(["estimate", "--model", "Qwen3-8B", "--hardware", str(gpu)], capsys)
    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        f"aisim: error: hardware: hardware file {str(gpu)!r}: nested deeper than 64 levels at "
        "line 1, column 76"
    )


def test_deep_jsonl_trace_row_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.jsonl").write_text(
        '{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
        '{"timestamp": 0, "hash_ids": ' + "[" * 3000 + "]" * 3000 + "}\n"
    )
    Path("r.yaml").write_text(REPLAY.replace("t.csv", "t.jsonl"))
    code, out, err = run_cli(["replay", "r.yaml", "--out", "o"], capsys)
    assert (code, out) == (2, "")
    # '{"timestamp": 0, "hash_ids": ' is 29 columns and the object level 1: the 64th '['
    # (column 93) opens level 65.
    assert one_error_line(err) == (
        "aisim: error: t.jsonl:2: nested deeper than 64 levels at line 1, column 93"
    )
    assert not Path("o").exists()


# --- YAML: duplicate keys and aliases ---------------------------------------------------------


def test_duplicate_yaml_keys_name_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,5,2\n")
    Path("r.yaml").write_text(REPLAY + "traffic:\n  source: {type: trace, path: other.csv}\n")
    code, out, err = run_cli(["replay", "r.yaml", "--out", "o"], capsys)
    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        "aisim: error: 'r.yaml': not valid YAML: duplicate key 'traffic' at line 8, column 1 "
        "(first given at line 1)"
    )


def test_duplicate_keys_in_nested_mappings_and_json() -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml_text("a:\n  b: 1\n  c: 2\n  b: 3\n", "'f.yaml'")
    assert str(info.value) == (
        "'f.yaml': not valid YAML: duplicate key 'b' at line 4, column 3 (first given at line 2)"
    )
    with pytest.raises(ConfigError) as info:
        parse_json_text('{"a": {"b": 1, "b": 2}}', "'f.json'")
    assert str(info.value) == "'f.json': not valid JSON: duplicate key 'b' in one object"


def test_merge_keys_may_be_overridden() -> None:
    # '<<' brings keys in that the mapping then overrides: that is not a duplicate.
    loaded = parse_yaml_text("base: &b {x: 1, y: 2}\nk:\n  <<: *b\n  x: 3\n", "f")
    assert loaded["k"] == {"x": 3, "y": 2}


def test_recursive_and_exploding_aliases_are_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml_text("a: &a [1, *a]\n", "'f.yaml'")
    assert str(info.value) == (
        "'f.yaml': an alias refers to a collection that contains it at line 1, column 4"
    )
    levels = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for index, name in enumerate("bcdef"):
        previous = "abcde"[index]
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    with pytest.raises(ConfigError) as info:
        parse_yaml_text("\n".join(levels) + "\n", "'f.yaml'")
    # f expands to 10**6 ones plus the lists holding them: the first level past the limit.
    assert str(info.value) == (
        "'f.yaml': aliases expand to more than 1000000 values at line 6, column 4"
    )


def test_yaml_values_python_cannot_build_are_errors() -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml_text("when: 2001-02-30\n", "'f.yaml'")
    assert str(info.value) == "'f.yaml': not valid YAML: day is out of range for month"


def test_json_integers_past_pythons_digit_limit_are_errors() -> None:
    with pytest.raises(ConfigError) as info:
        parse_json_text("1" * 5000, "'f.json'")
    assert str(info.value) == (
        "'f.json': not valid JSON: an integer of 5000 digits; at most 4300 digits are read"
    )


# --- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["estimate", "--model", LONG_NAME, "--hardware", "h100"], "model"),
        (["estimate", "--model", "Qwen3-8B", "--hardware", LONG_NAME], "hardware"),
        (
            ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--table", LONG_NAME],
            "--table (tables[0])",
        ),
        (["replay", LONG_NAME, "--out", "o"], "CONFIG"),
        (["replay", "r.yaml", "--out", LONG_NAME], "--out"),
        (["speculation", "explain", LONG_NAME], "FILE"),
        (["estimate", "--model", "Qwen3-8B", "--speculation", LONG_NAME], "--speculation"),
    ],
)
def test_long_paths_are_refused_before_any_io(
    argv: list[str],
    field: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("r.yaml").write_text(REPLAY)
    code, out, err = run_cli(argv, capsys)
    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        f"aisim: error: {field}: file name too long: at most 255 bytes per name, got 256 "
        "('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...')"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["r.yaml"]


def test_engine_model_path_and_trace_path_are_checked(tmp_path: Path) -> None:
    config = {
        "traffic": {"source": {"type": "trace", "path": LONG_NAME}},
        "engine": {"model": LONG_NAME},
    }
    from aisim.config import run_replay

    with pytest.raises(ConfigError) as info:
        run_replay(config)
    assert str(info.value) == (
        "engine.model: file name too long: at most 255 bytes per name, got 256 "
        "('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...')"
    )
    config["engine"] = {}
    with pytest.raises(ConfigError, match=r"^traffic\.source\.path: file name too long"):
        run_replay(config)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "f: expected a file path, got an empty string"),
        ("a\0b", "f: a file path cannot contain a NUL character, got 'a\\x00b'"),
        (7, "f: expected a file path (a string), got 7 (int)"),
        ("d/" * 600, "f: path too long: at most 1024 characters, got 1200"),
        (
            "é" * 128,
            "f: file name too long: at most 255 bytes per name, got 256 ('" + "é" * 37 + "...')",
        ),
    ],
)
def test_path_text_rules(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_path_text(value, "f")
    assert str(info.value) == message
    assert check_path_text("a/" + "b" * 255, "f") == Path("a/" + "b" * 255)


def test_a_missing_config_is_still_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"absent\.yaml': file not found$"):
        load_config_file(tmp_path / "absent.yaml")


# --- integers and numbers written as text -----------------------------------------------------


@pytest.mark.parametrize(
    "text", ["+5", " 3", "3 ", "1_000", "٣", "３", "1.0", "0x10", "", "-", "1" * 20]
)
def test_integer_text_is_ascii_digits_with_an_optional_minus(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_int_text(text, "f")
    assert str(info.value) == (
        "f: expected an integer (ASCII digits, optional leading '-', at most 19 digits), "
        f"got {text!r}"
    )


def test_integer_text_accepts_plain_digits() -> None:
    assert parse_int_text("0", "f") == 0
    assert parse_int_text("-12", "f") == -12
    assert parse_int_text("007", "f") == 7
    assert parse_int_text("9" * 19, "f") == 10**19 - 1


@pytest.mark.parametrize("text", ["+1.5", " 1", "1_0", "inf", "nan", "1e", ".", "١.5", "0x1p3"])
def test_number_text_is_json_syntax(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_float_text(text, "f")
    assert str(info.value) == f"f: expected a decimal number like 12, -0.5 or 1e3, got {text!r}"


def test_number_text_must_be_finite() -> None:
    with pytest.raises(ConfigError) as info:
        parse_float_text("1e999", "f")
    assert str(info.value) == "f: expected a finite number, got '1e999'"
    assert parse_float_text("-0.5", "f") == -0.5
    assert parse_float_text(".5e3", "f") == 500.0
    assert parse_float_text("7.", "f") == 7.0


@pytest.mark.parametrize(
    ("flag", "text"),
    [("--tp", "+1"), ("--batch", " 3"), ("--kv", "1_000"), ("--kv", "٣"), ("--depth", "2.0")],
)
def test_cli_integer_flags_are_strict_and_one_line(
    flag: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["estimate", "--model", "Qwen3-8B", "--hardware", "h100", flag, text])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert one_error_line(captured.err) == (
        f"aisim estimate: error: argument {flag}: expected an integer (ASCII digits, optional "
        f"leading '-', at most 19 digits), got {text!r} (see aisim estimate --help)"
    )


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["estimate", "--backend", "tgi", "--model", "Qwen3-8B"])
    assert info.value.code == 2
    assert one_error_line(capsys.readouterr().err) == (
        "aisim estimate: error: argument --backend: invalid choice: 'tgi' (choose from 'vllm', "
        "'sglang') (see aisim estimate --help)"
    )


def test_control_characters_in_an_echoed_value_stay_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by the fuzz campaign: a key holding a vertical tab (a line break to splitlines)
    # was echoed raw by 'unknown field(s)', so the error took two lines.
    monkeypatch.chdir(tmp_path)
    Path("k.json").write_text(
        '{"traffic": {"source": {"type": "trace", "path": "t.csv"}}, "engine": {}, '
        '"a\\u000bb\\u2028": 1}'
    )
    code, out, err = run_cli(["replay", "k.json", "--out", "o"], capsys)
    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        "aisim: error: <root>: unknown field(s) a\\x0bb\\u2028; allowed: engine, simulation, "
        "traffic"
    )


def test_unrecognised_arguments_with_control_characters_stay_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Found by the fuzz campaign: argparse echoes unknown arguments verbatim.
    with pytest.raises(SystemExit) as info:
        main(["speculation", "explain", "f.yaml", "\nz\x0b"])
    assert info.value.code == 2
    assert one_error_line(capsys.readouterr().err) == (
        "aisim speculation explain: error: unrecognized arguments: \\nz\\x0b "
        "(see aisim speculation explain --help)"
    )


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--seed", "-1", "--seed: expected an integer in 0..4611686018427387903, got -1"),
        ("--workers", "0", "--workers: expected an integer in 1..1024, got 0"),
        # Unbounded, the replicas' pool started one process per replica up to the count.
        ("--workers", "1025", "--workers: expected an integer in 1..1024, got 1025"),
        (
            "--acceptance-rounds",
            "0",
            "--acceptance-rounds: expected an integer in 1..1000000000000000, got 0",
        ),
        # Past 2^53 a rate times the count rounded to more rounds than there are: it was
        # refused in the replicas' words ('rounds accepting >= 1 drafts must be in
        # 0..999999999999999999, got 1000000000000000000').
        (
            "--acceptance-rounds",
            "999999999999999999",
            "--acceptance-rounds: expected an integer in 1..1000000000000000, got "
            "999999999999999999",
        ),
    ],
)
def test_a_bad_interval_flag_writes_no_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    """An interval flag is checked before the replay runs: a bad --seed used to be found after
    summary.json and requests.parquet were written."""
    config = tmp_path / "replay.yaml"
    config.write_text(REPLAY, encoding="utf-8")
    (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,8,2\n")
    out = tmp_path / "out"
    argv = ["replay", str(config), "--out", str(out), "--intervals", "2", flag, value]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert one_error_line(err) == f"aisim: error: {message}"
    assert not out.exists()


def test_sweep_interval_seed_is_named_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`aisim sweep --interval-seed -1` used to blame `--seed`, a flag sweep does not have."""
    sweep = Path(__file__).resolve().parents[2] / "docs" / "examples" / "sweep" / "sd_vs_load.yaml"
    out = tmp_path / "out"
    argv = ["sweep", str(sweep), "--out", str(out), "--intervals", "2", "--interval-seed", "-1"]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert one_error_line(err) == (
        "aisim: error: --interval-seed: expected an integer in 0..4611686018427387903, got -1"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--slo", "latency_ms:p90=10"], "--slo 'latency_ms:p90=10'"),
        (["--slo", "tpot_ms:p90=50"], "--slo 'tpot_ms:p90=50'"),
        (["--sources", "bogus"], "--sources 'bogus'"),
        (["--seed", "7"], "--seed 7"),
        (["--acceptance-rounds", "0"], "--acceptance-rounds 0"),
        (["--workers", "4"], "--workers 4"),
    ],
)
def test_a_replica_flag_without_intervals_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """`aisim replay CONFIG --slo latency_ms:p90=10` (an unknown metric) used to replay, exit 0
    and say nothing: the replica flags were read only with --intervals, so a valid SLO was
    ignored just as silently."""
    config = tmp_path / "replay.yaml"
    config.write_text(REPLAY, encoding="utf-8")
    (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,8,2\n")
    out = tmp_path / "out"
    code, _, err = run_cli(["replay", str(config), "--out", str(out), *flags], capsys)
    assert code == 2
    assert one_error_line(err) == (
        f"aisim: error: {message}: only used with --intervals N (the replicas); add "
        f"--intervals N or leave {flags[0]} out"
    )
    assert not out.exists()


def test_replica_flags_at_their_defaults_need_no_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "replay.yaml"
    config.write_text(REPLAY, encoding="utf-8")
    (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,8,2\n")
    argv = ["replay", str(config), "--out", str(tmp_path / "out"), "--seed", "0", "--workers"]
    code, _, err = run_cli([*argv, "1", "--sources", "all"], capsys)
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--interval-seed", "3"], "--interval-seed 3"), (["--sources", "cost"], "--sources 'cost'")],
)
def test_a_sweep_interval_flag_without_intervals_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    sweep = Path(__file__).resolve().parents[2] / "docs" / "examples" / "sweep" / "sd_vs_load.yaml"
    out = tmp_path / "out"
    code, _, err = run_cli(["sweep", str(sweep), "--out", str(out), *flags], capsys)
    assert code == 2
    assert one_error_line(err) == (
        f"aisim: error: {message}: only used with --intervals N (the replicas); add "
        f"--intervals N or leave {flags[0]} out"
    )
    assert not out.exists()


def test_an_slo_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--slo tpot_ms:p90=50 --slo tpot_ms:p90=60` kept the second limit silently."""
    config = tmp_path / "replay.yaml"
    config.write_text(REPLAY, encoding="utf-8")
    (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,8,2\n")
    out = tmp_path / "out"
    slos = ["--slo", "tpot_ms:p90=50", "--slo", "ttft_ms:p90=50", "--slo", "tpot_ms:p90=60"]
    argv = ["replay", str(config), "--out", str(out), "--intervals", "2", *slos]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert one_error_line(err) == (
        "aisim: error: --slo 'tpot_ms:p90=60': tpot_ms:p90 is already given (50 ms); give each "
        "metric and statistic once"
    )
    assert not out.exists()


@pytest.mark.parametrize("value", ["0", "1025"])
def test_advise_bounds_its_worker_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """`aisim advise --workers 100000` was accepted (the replicas' pool starts one process per
    replica up to the count given); the bound is aisim sweep's."""
    out = tmp_path / "out"
    argv = ["advise", "--model", "Qwen/Qwen3-8B", "--hardware", "h100_sxm", "--rate", "2"]
    argv += ["--acceptance", "mtp=0.7", "--workers", value, "--out", str(out)]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert err == f"aisim: error: --workers: expected an integer in 1..1024, got {value}\n"
    assert not out.exists()


@pytest.mark.parametrize("rows", ["0,8,2\n", "0,8,2\n0,8,2\n"], ids=["one-request", "a-burst"])
def test_advise_refuses_a_trace_whose_arrivals_span_no_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: str
) -> None:
    """Its rate is 0: the advice was 'Recommendation at 0 req/s ... helps at every load searched
    (up to 0 req/s)', each load the same replay (the loads scale the arrival times)."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n" + rows, encoding="utf-8")
    out = tmp_path / "out"
    argv = ["advise", "--model", "Qwen/Qwen3-8B", "--hardware", "h100_sxm", "--trace", str(trace)]
    argv += ["--acceptance", "mtp=0.7", "--out", str(out)]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert err == (
        f"aisim: error: --trace {str(trace)!r}: the requests replayed all arrive at one time, so "
        "the trace has no rate for --loads to scale; give a trace whose arrivals span some time, "
        "or --rate / --concurrency\n"
    )
    assert not out.exists()


def test_advise_without_matplotlib_drops_an_earlier_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --overwrite and no matplotlib, advice.json/md/html were replaced and the earlier
    run's gain_vs_load.png kept beside them, as if it were this answer's."""
    import sys

    out = tmp_path / "out"
    out.mkdir()
    (out / "gain_vs_load.png").write_bytes(b"an earlier answer's plot")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    argv = ["advise", "--model", "Qwen/Qwen3-8B", "--hardware", "h100_sxm", "--rate", "2"]
    argv += ["--requests", "6", "--acceptance", "ngram=0.5", "--depths", "2", "--loads", "1"]
    argv += ["--replicas", "2", "--out", str(out), "--overwrite"]
    code, _, _ = run_cli(argv, capsys)
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["advice.html", "advice.json", "advice.md"]
    notes = json.loads((out / "advice.json").read_text(encoding="utf-8"))["notes"]
    assert "gain_vs_load.png not drawn: install aisim[qualify] (matplotlib)" in notes


def test_replay_overwrite_without_intervals_drops_the_earlier_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'aisim replay C --out D --overwrite' after a run with --intervals kept the earlier
    intervals.json beside the new summary.json, as if it were this run's."""
    config = tmp_path / "replay.yaml"
    config.write_text(REPLAY, encoding="utf-8")
    (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,8,2\n")
    out = tmp_path / "out"
    first = ["replay", str(config), "--out", str(out), "--intervals", "2"]
    assert run_cli(first, capsys)[0] == 0
    assert (out / "intervals.json").is_file()
    again = ["replay", str(config), "--out", str(out), "--overwrite"]
    assert run_cli(again, capsys)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["requests.parquet", "summary.json"]


def test_advise_bounds_its_acceptance_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["advise", "--model", "Qwen/Qwen3-8B", "--hardware", "h100_sxm", "--rate", "2"]
    argv += ["--acceptance", "mtp=0.7", "--acceptance-rounds", "999999999999999999"]
    code, _, err = run_cli([*argv, "--out", str(out)], capsys)
    assert code == 2
    assert err == (
        "aisim: error: --acceptance-rounds: expected an integer in 1..1000000000000000, got "
        "999999999999999999\n"
    )
    assert not out.exists()


def test_replay_intervals_refuses_a_folder_named_intervals_json_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was found after summary.json and requests.parquet were written ('cannot write
    .../intervals.json: Is a directory', exit 2, the replay's files left behind)."""
    config = tmp_path / "replay.yaml"
    config.write_text(REPLAY, encoding="utf-8")
    (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,8,2\n")
    out = tmp_path / "out"
    (out / "intervals.json").mkdir(parents=True)
    argv = ["replay", str(config), "--out", str(out), "--intervals", "2", "--overwrite"]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert err == (
        f"aisim: error: --out {str(out / 'intervals.json')!r}: is a folder; give the path of a "
        "file to write\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["intervals.json"]


_SOURCES_ALLOWED = (
    "expected all, none or a comma list of acceptance, cost, simulation, repeat, drift, "
    "frontend, overhead"
)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("cost,", f"empty item in 'cost,'; {_SOURCES_ALLOWED}"),
        ("cost,,drift", f"empty item in 'cost,,drift'; {_SOURCES_ALLOWED}"),
        ("cost,cost", "'cost' repeated in 'cost,cost'; name each source once"),
        ("drift, cost,drift", "'drift' repeated in 'drift, cost,drift'; name each source once"),
    ],
)
@pytest.mark.parametrize("command", ["replay", "advise", "qualification.uncertainty"])
def test_sources_refuses_an_empty_or_repeated_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, value: str, problem: str
) -> None:
    """`--sources cost,` and `--sources cost,cost` were read as `cost`: a slip in the list
    (a name dropped, or one typed twice for another) went unseen."""
    out = tmp_path / "out"
    if command == "qualification.uncertainty":
        from qualification.uncertainty.__main__ import main as uncertainty_main

        argv = ["coverage-public-gpu", "--replicas", "2", "--sources", value]
        assert uncertainty_main(argv) == 2
        captured = capsys.readouterr()
        assert captured.err == f"error: --sources: {problem}\n"
        return
    if command == "replay":
        config = tmp_path / "replay.yaml"
        config.write_text(REPLAY, encoding="utf-8")
        (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,8,2\n")
        argv = ["replay", str(config), "--out", str(out), "--intervals", "3"]
    else:
        argv = ["advise", "--model", "Qwen/Qwen3-8B", "--hardware", "h100_sxm", "--rate", "2"]
        argv += ["--acceptance", "mtp=0.7", "--out", str(out)]
    code, _, err = run_cli([*argv, "--sources", value], capsys)
    assert code == 2
    assert err == f"aisim: error: --sources: {problem}\n"
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [
        ("--depths", "1,1", "1 is given twice; expected a comma list of distinct integers in 1..5"),
        (
            "--depths",
            "3, 2,3",
            "3 is given twice; expected a comma list of distinct integers in 1..5",
        ),
        # '²' passed str.isdigit and ended in int()'s ValueError traceback.
        ("--depths", "2,\u00b2", "expected a comma list of distinct integers in 1..5"),
        (
            "--loads",
            "2,2",
            "2 is given twice; expected a comma list of distinct multipliers in 0.01..100",
        ),
        (
            "--loads",
            "0.5,1,1.0",
            "1 is given twice; expected a comma list of distinct multipliers in 0.01..100",
        ),
    ],
)
def test_advise_refuses_a_repeated_depth_or_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, problem: str
) -> None:
    """`--depths 1,1` was read as `--depths 1` and `--loads 2,2` as `--loads 2`: a slip in the
    list (one typed twice for another) went unseen."""
    out = tmp_path / "out"
    argv = ["advise", "--model", "Qwen/Qwen3-8B", "--hardware", "h100_sxm", "--rate", "2"]
    argv += ["--acceptance", "mtp=0.7", "--out", str(out), flag, value]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert err == f"aisim: error: {flag} {value!r}: {problem}\n"
    assert not out.exists()
