"""``aisim estimate``: latency, factor and evidence, as text and JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aisim.cli import main
from aisim.fpm import write_table_file


def test_rule_on_a_table_file_prints_the_published_oracle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = write_table_file(
        tmp_path / "stp.csv", [{"batch_size": 8, "total_kv_tokens": 64, "latency_ms": 8.0}]
    )
    argv = ["estimate", "--model", "Qwen3-8B", "--batch", "2", "--kv-total", "64"]
    argv += ["--draft-length", "3", "--table", str(table), "--estimator", "table"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "latency: 11.9200 ms" in text
    assert "scaling factor: 1.49 (d=3); STP reference 8.0000 ms at B=8, K_total=64" in text
    assert "estimator: table (coverage: measured)" in text
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["result"]["latency_ms"] == pytest.approx(11.92, abs=1e-12)
    assert payload["result"]["stp_reference"]["latency_ms"] == 8.0
    assert payload["result"]["diagnostics"]["data_identity"] is not None


def test_roofline_with_a_scheme_prints_native_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "Qwen/Qwen3-8B", "--hardware", "h100", "--batch", "8"]
    argv += ["--kv", "1024", "--scheme", "mtp", "--depth", "3", "--json"]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    diagnostics = payload["result"]["diagnostics"]
    assert diagnostics["estimator"] == "roofline"
    assert diagnostics["speculation"] == "mtp d=3 w=4"
    details = diagnostics["details"]
    assert details["draft_steps"] == 3.0  # MTP block + shared LM head, three sequential steps
    assert details["draft_ms"] > 0.0 and details["mtp_compute_scale"] == 1.0
    parts = details["draft_ms"] + details["target_ms"] + details["sampling_ms"]
    assert parts == pytest.approx(payload["result"]["latency_ms"], rel=1e-12)
    assert payload["query"]["sum_decode_kv_tokens"] == 8 * 1024
    assert payload["draft_kv_bytes_per_token"] == 2 * 8 * 128 * 2
    assert main([*argv, "--estimator", "roofline_ideal"]) == 0
    ideal = json.loads(capsys.readouterr().out)["result"]["diagnostics"]
    assert ideal["estimator"] == "roofline_ideal"
    assert ideal["details"]["mtp_compute_scale"] == pytest.approx(39 / 36)


TABLE_ALLOWED = (
    "expected a table file: NAME.parquet or NAME.csv beside its sidecar NAME.parquet.json or "
    "NAME.csv.json"
)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (".", "is a folder, not a file"),
        ("no-such-table.csv", "file not found"),
        ("fifo.parquet", "is not a regular file (a FIFO, socket or device)"),
    ],
)
def test_a_table_that_is_no_file_names_the_flag(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
    problem: str,
) -> None:
    """`--table /tmp` said 'tables[0]: ... file not found (or not a file)': neither the flag
    nor that it was a folder. A FIFO is refused without being opened (no hang)."""
    monkeypatch.chdir(tmp_path)
    os.mkfifo("fifo.parquet")
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--kv", "10"]
    assert main([*argv, "--table", value]) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: --table (tables[0]): {value!r}: {problem}; {TABLE_ALLOWED}\n"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--draft-length", "3"], "draft_length"),
        (["--draft-length", "0"], "draft_length"),
        (["--depth", "2"], "--depth: needs --scheme"),
        (["--draft-model", "Qwen/Qwen3-0.6B"], "--draft-model: needs --scheme"),
        (["--speculation", "docs/examples/x.yaml", "--depth", "5"], "--depth: goes with --scheme"),
        (["--speculation", "x.yaml", "--draft-model", "m"], "--draft-model: goes with --scheme"),
        (["--kv-total", "5"], "--kv-total"),
        (["--estimator", "table"], "table is not available"),
        (["--table", "no-such-table.parquet"], "'no-such-table.parquet': file not found"),
    ],
)
def test_user_errors_exit_2_with_one_line(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--kv", "10", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


EVIDENCE_ROUNDS = (
    Path(__file__).resolve().parents[2] / "evidence" / "cpu-qwen3-0.6b-mtp" / "sd_rounds.parquet"
)


def test_role_decode_prices_a_recorded_round_table(capsys: pytest.CaptureFixture[str]) -> None:
    # d2-b4-k1024 of the committed MTP recording: its five rounds' median (the sidecar's figure).
    argv = ["estimate", "--model", "Qwen/Qwen3-0.6B", "--scheme", "mtp", "--depth", "2"]
    argv += ["--batch", "4", "--kv-total", "1024", "--table", str(EVIDENCE_ROUNDS)]
    assert main([*argv, "--role", "decode", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["result"]["latency_ms"] == 726.056914
    assert payload["result"]["diagnostics"]["estimator"] == "measured_round"
    assert payload["result"]["scaling_factor"] is None
    # The default role is aggregated: the decode-role recording does not match it.
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "role: recorded 'decode', query 'aggregated'" in err
    assert err.count("\n") == 1


def test_json_output_is_canonical(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--batch", "8", "--kv", "64"]
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    payload = json.loads(out)
    assert out == json.dumps(payload, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_reading_a_parquet_table_exits_cleanly() -> None:
    # pyarrow's threaded reader could abort the interpreter at exit (status 134) after printing a
    # correct answer; a script or CI job then sees a crash. Several runs: the abort was racy.
    code = (
        "from aisim.fpm import load_table_models; "
        f"print(len(load_table_models({str(EVIDENCE_ROUNDS)!r})))"
    )
    for _ in range(6):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "4\n", "")


# Counts the process's native threads (Linux /proc) around the readers; prints the increase.
_THREADS_AFTER_READS = """
import os, sys
def threads():
    return len(os.listdir('/proc/self/task'))
import pyarrow, pyarrow.parquet, pandas
from aisim.fpm import load_table_models
from qualification.datasets import load_dataset
before = threads()
load_table_models(sys.argv[1])
load_dataset(sys.argv[2])
print(threads() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in Linux /proc")
def test_parquet_readers_start_no_arrow_pool_thread() -> None:
    # The at-exit abort above needs an Arrow pool thread alive when the interpreter exits; it is
    # racy, but the thread is not: pyarrow.parquet.read_table and Table.to_pandas() each start
    # pool threads (the former even with use_threads=False). The readers must start none.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _THREADS_AFTER_READS,
            str(EVIDENCE_ROUNDS),
            str(EVIDENCE_ROUNDS.parent),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "0\n", "")
