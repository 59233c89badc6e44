"""docs/estimators.md stays true: its examples run and its figures match the code."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

from aisim.cli import main
from aisim.config import best_available
from aisim.fpm import ForwardPassMetrics, load_table_file

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "estimators.md"
EXAMPLES = ROOT / "docs" / "examples" / "estimators"


def test_example_config_uses_the_example_table_through_the_rule() -> None:
    model = best_available(str(EXAMPLES / "timing.yaml"))
    result = model.estimate_forward_pass_detailed(ForwardPassMetrics(2, 8192), draft_length=3)
    assert result.diagnostics.estimator == "table"
    assert result.stp_reference is not None
    # The example table records B=8, K_total=8192 at 6.119 ms; 1.49 x 6.119 by hand.
    assert result.stp_reference.latency_ms == 6.119
    assert result.latency_ms == pytest.approx(9.11731, abs=1e-12)
    assert load_table_file(EXAMPLES / "stp_qwen3_8b_h100.csv").identity["evidence"] == "synthetic"


def test_roofline_figures_in_the_doc_match_the_code() -> None:
    rows = re.findall(
        r"^\| (h\d00_sxm) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", DOC.read_text(), re.M
    )
    assert len(rows) == 6
    for hardware, batch, short, long in rows:
        model = best_available({"model": "Qwen/Qwen3-8B", "hardware": hardware})
        for per_request, shown in ((1024, short), (8192, long)):
            metrics = ForwardPassMetrics(int(batch), int(batch) * per_request)
            assert f"{model.estimate_forward_pass_time_ms(metrics):.3f}" == shown


def test_doc_cli_examples_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    commands = re.findall(
        r"^aisim ((?:estimate|qualify) .*?)(?<!\\)$", _joined(DOC.read_text()), re.M
    )
    assert len(commands) == 6
    for command in commands:
        assert main(command.split()) == 0
    out = capsys.readouterr().out
    assert "latency:" in out and "0.08 d + 1.25" in out and "MAPE, held-out rows" in out


def test_public_and_rulecheck_tables_in_the_doc_are_current() -> None:
    from qualification.public import rulecheck, rulecheck_markdown, score, score_markdown

    text = DOC.read_text()
    assert score_markdown(score("roofline_ideal"), score("roofline")) in text
    assert rulecheck_markdown(rulecheck(gpus=("h100_sxm",))) in text


def test_reference_prefill_table_in_the_doc_is_current() -> None:
    from qualification.public import prefill_markdown, prefill_reference

    assert prefill_markdown(prefill_reference("roofline")) in DOC.read_text()


def _joined(text: str) -> str:
    return re.sub(r"\\\n\s+", "", text)


def test_benchmark_command_prints_figures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_fpm", "--queries", "50"])
    runpy.run_module("qualification.bench.bench_fpm", run_name="__main__")
    out = capsys.readouterr().out
    assert "queries/s" in out and "h200_sxm B=64" in out
