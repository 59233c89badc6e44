"""Inputs a newcomer's trial broke: each is rc 2 with one line naming the field and the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from aisim.cli import main

# Bytes that are not UTF-8 (0xff never starts a UTF-8 sequence) and a NUL that YAML refuses.
BINARY = b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    return captured.err


@pytest.mark.parametrize("flag", ["--model", "--hardware"])
def test_binary_model_or_hardware_file(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "weights.json"
    binary.write_bytes(BINARY)
    argv = ["estimate", "--model", "Qwen/Qwen3-8B", "--hardware", "h100"]
    argv[argv.index(flag) + 1] = str(binary)
    error = _run(argv, capsys)
    field = flag.lstrip("-")
    assert error.startswith(f"aisim: error: {field}: ")
    what = "model config" if field == "model" else "hardware file"
    assert f"cannot read {what} {str(binary)!r}: 'utf-8' codec can't decode byte 0x89" in error


def test_nul_byte_in_a_hardware_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hardware = tmp_path / "gpu.yaml"
    hardware.write_bytes(b"bf16_dense_flops: 1\x00\n")
    error = _run(["estimate", "--model", "Qwen3-8B", "--hardware", str(hardware)], capsys)
    expected = f"hardware: hardware file {str(hardware)!r}: not valid YAML: unacceptable character"
    assert expected in error


def test_binary_engine_model_in_a_replay_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "config.json"
    binary.write_bytes(BINARY)
    config = tmp_path / "replay.yaml"
    # The config is validated whole before the model file is read (one validation pass), so
    # the rest of it is valid here: only the model file is wrong.
    config.write_text(
        f"engine: {{model: {str(binary)!r}, hardware: h100, workers: {{aggregated: {{}}}}}}\n"
        "traffic: {source: {type: synthetic, num_requests: 1, prompt_tokens: 10, "
        "output_tokens: 2}, load: {type: poisson, rate_rps: 1}}\n"
    )
    error = _run(["replay", str(config), "--out", str(tmp_path / "out")], capsys)
    assert f"engine.model: cannot read model config {str(binary)!r}: 'utf-8' codec" in error


@pytest.mark.parametrize(("flag", "value"), [("--kv", "100"), ("--kv-total", "5")])
def test_batch_zero_with_past_kv(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--batch", "0", flag, value]
    error = _run(argv, capsys)
    assert error == (
        f"aisim: error: --batch: 0 decode requests hold no past KV tokens, got {flag} {value}; "
        "give --batch >= 1\n"
    )


@pytest.mark.parametrize("tp", [3, 64])
def test_tensor_parallel_must_divide_the_heads(tp: int, capsys: pytest.CaptureFixture[str]) -> None:
    # Qwen3-8B has 32 attention heads (its published config.json).
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--tp", str(tp)]
    error = _run(argv, capsys)
    assert error == (
        f"aisim: error: --tp (tensor_parallel): {tp} does not divide the 32 attention heads of "
        "Qwen/Qwen3-8B (each GPU must hold whole heads); expected one of 1, 2, 4, 8, 16, 32\n"
    )


def test_public_gpu_only_matching_no_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`aisim qualify public-gpu --only zzzz` used to write an empty report (0 points) with
    exit 0: a misspelt filter read as a scored run."""
    pytest.importorskip("pandas")
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    out = tmp_path / "pg"
    error = _run(["qualify", "public-gpu", "--only", "zzzz", "--quiet", "--out", str(out)], capsys)
    assert error.startswith("aisim: error: --only 'zzzz': no point id contains every text given")
    assert not out.exists()


def test_json_files_with_a_byte_order_mark_read_as_without(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model config.json saved by a Windows editor (UTF-8 with BOM) used to be 'not valid
    JSON: Unexpected UTF-8 BOM'; YAML files and CSV traces already read the same with one."""
    root = Path(__file__).resolve().parents[2]
    config = root / "docs" / "examples" / "model" / "config.json"
    with_bom = tmp_path / "config.json"
    with_bom.write_bytes(b"\xef\xbb\xbf" + config.read_bytes())
    answers = []
    for model in (config, with_bom):
        argv = ["estimate", "--model", str(model), "--hardware", "h100", "--json"]
        assert main(argv) == 0
        answers.append(capsys.readouterr().out.replace(str(with_bom), str(config)))
    assert answers[0] == answers[1]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tp", "0"], "--tp (tensor_parallel): expected an integer in 1..1024, got 0"),
        (
            ["--draft-length", "0"],
            "--draft-length (draft_length): expected an integer in 1..4611686018427387903, got 0",
        ),
        (
            ["--scheme", "mtp", "--depth", "99"],
            "--depth (speculation.params.depth, kind mtp): expected an integer in 1..64, got 99",
        ),
        (
            ["--scheme", "eagle3", "--depth", "3"],
            "--draft-config (speculation.draft_config): kind eagle3 needs the draft's config.json",
        ),
    ],
)
def test_estimate_names_the_flag_a_bad_value_came_from(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """These used to name only the config field the flag became (``tensor_parallel: ...``,
    ``speculation.draft_config: ...``), which a newcomer never wrote."""
    error = _run(["estimate", "--model", "Qwen/Qwen3-8B", "--hardware", "h100", *flags], capsys)
    assert error.startswith(f"aisim: error: {message}")


def test_estimate_names_the_speculation_file_for_an_error_inside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = tmp_path / "spec.yaml"
    block.write_text("kind: mtp\nparams: {depth: 3}\nacceptance_rates: [1.5, 0.5, 0.3]\n")
    argv = ["estimate", "--model", "Qwen/Qwen3-8B", "--hardware", "h100", "--speculation"]
    error = _run([*argv, str(block)], capsys)
    assert error == (
        "aisim: error: --speculation (speculation.acceptance_rates[0]): expected a finite "
        "number in 0.0..1.0, got 1.5\n"
    )


@pytest.mark.parametrize(
    ("key", "shape"),
    [
        ("acceptance_trace", "{path: FILE, format: jsonl (default) | vllm-request-metrics}"),
        (
            "acceptance_from",
            "{path: FILE, format: vllm-prometheus | sglang-prometheus | sglang-log | "
            "sglang-requests[, labels, baseline]}",
        ),
    ],
)
def test_a_file_name_where_a_file_block_goes_says_the_shape(
    key: str, shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`acceptance_trace: trace.jsonl` used to be 'expected a mapping, got ...' with no word
    of which mapping."""
    block = tmp_path / "spec.yaml"
    block.write_text(f"speculation:\n  kind: mtp\n  params: {{depth: 3}}\n  {key}: t.jsonl\n")
    error = _run(["speculation", "explain", str(block)], capsys)
    assert error == (
        f"aisim: error: speculation.{key}: expected a mapping {shape}, got 't.jsonl' (str)\n"
    )


def test_advise_trace_that_is_a_named_pipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`aisim advise --trace PIPE` said 'file not found' of a file that exists."""
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    trace = tmp_path / "trace.csv"
    os.mkfifo(trace)
    argv = ["advise", "--model", "Qwen/Qwen3-8B", "--hardware", "h100", "--trace", str(trace)]
    error = _run([*argv, "--acceptance", "ngram=0.5", "--out", str(tmp_path / "o")], capsys)
    assert error == (
        f"aisim: error: --trace {str(trace)!r}: is not a regular file (a FIFO, socket or device)\n"
    )
    assert not (tmp_path / "o").exists()
