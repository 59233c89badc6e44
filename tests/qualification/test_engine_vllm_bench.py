"""A served run made by vLLM's own client (``vllm bench serve --save-detailed``) converts to the
plain layout's requests.csv with hand-derived times, imports without a steps.csv and scores as
the same requests recorded by our recorder would; bad input is one line naming the request and
the field, and nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aisim.errors import DataIntegrityError
from qualification.engine import load_recording, score_recording
from qualification.engine._plain import import_plain
from qualification.engine.vllm_bench import bench_requests, convert, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "engine-recording"


def _result(**changes: Any) -> dict[str, Any]:
    """The docs example's three requests as vllm bench serve saves them: sent at perf_counter
    100.000, 100.005, 100.030 s; r0's 3 tokens at 10, 21, 26 ms after the first send, r1's 2 at
    21, 26, r2's 4 at 41, 45, 49, 53 (ttft and the gaps between streamed chunks, in s)."""
    result: dict[str, Any] = {
        "start_times": [100.0, 100.005, 100.030],
        "ttfts": [0.010, 0.016, 0.011],
        "itls": [[0.011, 0.005], [0.005], [0.004, 0.004, 0.004]],
        "input_lens": [40, 50, 60],
        "output_lens": [3, 2, 4],
        "errors": ["", "", ""],
        "generated_texts": ["a", "b", "c"],
    }
    result.update(changes)
    return result


def test_times_are_derived_from_send_time_ttft_and_chunk_gaps() -> None:
    rows, coalesced = bench_requests(_result(), "r.json")
    assert coalesced == 0
    assert [row["request_id"] for row in rows] == ["req-0", "req-1", "req-2"]
    assert [row["arrival_ms"] for row in rows] == pytest.approx([0.0, 5.0, 30.0])
    assert [row["first_token_ms"] for row in rows] == pytest.approx([10.0, 21.0, 41.0])
    assert [row["finish_ms"] for row in rows] == pytest.approx([26.0, 26.0, 53.0])
    assert rows[2]["token_times_ms"] == pytest.approx([41.0, 45.0, 49.0, 53.0])
    assert [row["prompt_tokens"] for row in rows] == [40, 50, 60]


def test_a_chunk_carrying_several_tokens_gives_them_its_time() -> None:
    # r2 streamed 2 chunks for its 4 tokens: tokens 3 and 4 arrived with chunk 2 (at 45 ms).
    rows, coalesced = bench_requests(_result(itls=[[0.011, 0.005], [0.005], [0.004]]), "r.json")
    assert coalesced == 1
    assert rows[2]["token_times_ms"] == pytest.approx([41.0, 45.0, 45.0, 45.0])
    assert rows[2]["finish_ms"] == pytest.approx(45.0)


BAD = [
    ({"errors": ["", "Bad Request", ""]}, r"r\.json': request 1: errors: 'Bad Request'"),
    ({"ttfts": [0.01, float("nan"), 0.01]}, r"request 1: ttfts: expected a finite number"),
    # A first token before the request was sent used to be written (a negative time).
    ({"ttfts": [0.01, -1.0, 0.01]}, r"request 1: ttfts: -1\.0; expected a time > 0 s$"),
    ({"itls": [[0.011, -0.005], [0.005], [0.004] * 3]}, r"request 0: itls\[1\]: -0.005 is neg"),
    ({"output_lens": [3, 0, 4]}, r"request 1: output_lens: expected a positive integer, got 0"),
    ({"input_lens": [40, 50]}, r"input_lens: 2 entries, start_times has 3"),
    ({"itls": [[0.011, 0.005, 0.001], [0.005], [0.004] * 3]}, r"request 0: itls: 4 streamed"),
]


@pytest.mark.parametrize(("changes", "message"), BAD)
def test_bad_results_are_one_line_naming_request_and_field(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    source = tmp_path / "r.json"
    source.write_text(json.dumps(_result(**changes)), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=message) as caught:
        convert(source, tmp_path / "served-1")
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "served-1").exists()


def test_a_result_saved_without_detail_is_refused(tmp_path: Path) -> None:
    result = _result()
    del result["itls"]
    source = tmp_path / "r.json"
    source.write_text(json.dumps(result), encoding="utf-8")
    assert main([str(source), "--out", str(tmp_path / "served-1")]) == 2
    assert not (tmp_path / "served-1").exists()
    with pytest.raises(DataIntegrityError, match="itls: missing; run vllm bench serve with"):
        convert(source, tmp_path / "served-1")


def test_a_client_recording_imports_without_steps_and_scores_as_derived_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs example's grid and settings with its served run replaced by the client's view
    of the same requests (no steps.csv): the replay does not read served steps, so the
    predicted TTFTs are the example's hand-derived ones (8.333, 12.083, 9.1667 ms) and the
    measured ones the client's (10, 16, 11 ms)."""
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("settings.json", "grid.csv"):
        shutil.copyfile(EXAMPLE / name, plain / name)
    source = tmp_path / "bench-1.json"
    source.write_text(json.dumps(_result()), encoding="utf-8")
    assert main([str(source), "--out", str(plain / "served-1")]) == 0
    assert "3 requests, 0 with fewer streamed chunks" in capsys.readouterr().out
    assert main([str(source), "--out", str(plain / "served-1")]) == 2  # no overwrite
    assert sorted(path.name for path in (plain / "served-1").iterdir()) == ["requests.csv"]
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert recording.grid is not None
    assert recording.served[0].steps.empty
    report, _ = score_recording(recording, recording.grid)
    rows = report["runs"][0]["requests"]
    assert rows["request_id"] == ["req-0", "req-1", "req-2"]
    assert rows["predicted_ttft_ms"] == pytest.approx([8 + 8 / 24, 17 + 1 / 12 - 5, 9 + 1 / 6])
    assert rows["measured_ttft_ms"] == pytest.approx([10.0, 16.0, 11.0])
    assert rows["measured_e2e_ms"] == pytest.approx([26.0, 21.0, 23.0])
    run = report["runs"][0]
    assert run["step_errors"]["summary"] == {}


def test_a_driver_block_is_carried_into_every_sidecar(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings["driver"] = {"client": "vllm bench serve", "client_cpu": 0}
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert recording.served[0].sidecar["driver"] == {"client": "vllm bench serve", "client_cpu": 0}
    settings["driver"] = "vllm bench serve"
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"settings\.json': driver: expected an object"):
        import_plain(plain, tmp_path / "rec2")


def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO given as RESULT.json used to block the converter forever."""
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    source = tmp_path / "result.json"
    os.mkfifo(source)
    with pytest.raises(DataIntegrityError) as caught:
        convert(source, tmp_path / "served-1")
    assert str(caught.value) == (
        f"{str(source)!r}: is not a regular file (a FIFO, socket or device)"
    )
    assert not (tmp_path / "served-1").exists()


def test_an_error_is_one_line_on_stderr_not_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was printed on stdout: a script reading the tool's output took it for its answer.
    missing = tmp_path / "nope.json"
    assert main([str(missing), "--out", str(tmp_path / "served-1")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {str(missing)!r}: missing\n"


def test_a_key_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # json.loads kept the second 'ttfts' silently.
    source = tmp_path / "r.json"
    text = json.dumps(_result())
    source.write_text(text[:-1] + ', "ttfts": [1, 1, 1]}', encoding="utf-8")
    assert main([str(source), "--out", str(tmp_path / "served-1")]) == 2
    assert capsys.readouterr().err == (
        f"error: {str(source)!r}: not valid JSON: duplicate key 'ttfts' in one object\n"
    )
    assert not (tmp_path / "served-1").exists()


def test_a_gzip_result_is_read_and_a_bomb_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    from qualification.engine import vllm_bench

    source = tmp_path / "r.json.gz"
    source.write_bytes(gzip.compress(json.dumps(_result()).encode()))
    assert main([str(source), "--out", str(tmp_path / "served-1")]) == 0
    assert "3 requests" in capsys.readouterr().out
    # gzip.decompress expanded any file whole: the read stops at the limit (lowered here to
    # 1000 bytes; a 1 MB file of spaces decompresses to 1.1 GB).
    monkeypatch.setattr(vllm_bench, "MAX_TRACE_BYTES", 1000)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * 5000))
    assert main([str(bomb), "--out", str(tmp_path / "served-2")]) == 2
    assert capsys.readouterr().err == (
        f"error: {str(bomb)!r}: decompresses to more than 1000 bytes, the limit\n"
    )
    assert not (tmp_path / "served-2").exists()


def test_an_out_under_a_file_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "served-1"
    blocker.write_text("x\n")
    # The result does not exist: this message shows --out was checked first.
    assert main([str(tmp_path / "nope.json"), "--out", str(blocker)]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {str(blocker / 'requests.csv')!r}: {str(blocker)!r} is a file, not a "
        "folder\n"
    )


def test_a_usage_error_is_one_line_naming_the_module(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "python -m qualification.engine.vllm_bench: error: the following arguments are "
        "required: result, --out (see python -m qualification.engine.vllm_bench --help)\n"
    )
