"""``aisim speculation acceptance`` and ``acceptance_from``: the CLI prints every form and a block
that resolves to the same profile; a speculation block (and a replay config) reads the same file
into the same frozen profile, recorded with the file's SHA-256."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aisim import AcceptanceProfile, ConfigError, resolve_speculation
from aisim.cli import main
from aisim.config import run_replay

DATA = Path(__file__).resolve().parent / "engine_metrics"
BEFORE = DATA / "vllm_before.prom"
AFTER = DATA / "vllm_after.prom"
# The window of vllm_before.prom -> vllm_after.prom, worked out in engine_metrics/vllm_after.prom.
WINDOW_RATES = [0.8, 0.5, 0.2]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(["speculation", "acceptance", *args])
    except SystemExit as exc:  # usage errors exit from argparse, still one line
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- the command ---------------------------------------------------------------------------------


def test_text_shows_every_form_and_a_block_that_resolves_to_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _cli([str(BEFORE), str(AFTER)], capsys)
    assert code == 0
    assert "drafts              1000 (draft tokens 3000, accepted 1500)" in out
    assert "conditional p_i     [0.8, 0.625, 0.4]" in out
    assert "unconditional u_i   [0.8, 0.5, 0.2]" in out
    assert "mean accepted E[a]  1.5" in out and "acceptance length   2.5" in out
    # Position 2: 500 of the 800 rounds that reached it, and 500 of all 1000.
    assert "    2         500    0.6250" in out
    snippet = out.split("# paste into engine.speculation (or any speculation block):\n")[1]
    block = yaml.safe_load(snippet)
    assert block == {"unconditional_acceptance_rates": WINDOW_RATES}
    resolved = resolve_speculation({"kind": "mtp", "params": {"depth": 3}, **block})
    assert resolved.acceptance == AcceptanceProfile.from_unconditional(WINDOW_RATES)
    assert (
        f"# acceptance_from: {{path: {AFTER}, format: vllm-prometheus, baseline: {BEFORE}}}" in out
    )


def test_json_is_canonical_and_complete(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli([str(BEFORE), str(AFTER), "--json", "--depth", "3"], capsys)
    assert code == 0
    shown = json.loads(out)
    assert out == json.dumps(shown, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert shown["depth"] == 3 and shown["confidence"] == 0.95
    assert shown["source"]["drafts"] == 1000
    assert shown["source"]["accepted_at_least"] == [800, 500, 200]
    assert [row["accepted"] for row in shown["positions"]] == [800, 500, 200]
    assert [row["conditional_trials"] for row in shown["positions"]] == [1000, 800, 500]
    assert shown["profile"]["unconditional_rates"] == WINDOW_RATES
    assert shown["speculation"] == {"unconditional_acceptance_rates": WINDOW_RATES}
    assert shown["acceptance_from"] == {
        "path": str(AFTER),
        "format": "vllm-prometheus",
        "baseline": str(BEFORE),
    }


def test_mean_only_source_prints_acceptance_length(capsys: pytest.CaptureFixture[str]) -> None:
    log = DATA / "sglang_server.log"
    code, out, _ = _cli([str(log), "--label", "dp=0", "--depth", "3"], capsys)
    assert code == 0
    assert "no 95% intervals: this source reports a mean, not counts" in out
    assert "\nacceptance_length: 2.5\n" in out
    assert 'labels: {dp: "0"}' in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--label", "engine"], "--label: expected KEY=VALUE, got 'engine'"),
        # The second used to replace the first silently.
        (
            ["--label", "engine=1", "--label", "engine=0"],
            "--label 'engine=0': engine is already given (engine=1); a series carries one value "
            "per label\n",
        ),
        (["--depth", "0"], "--depth: expected an integer in 1..64, got 0"),
        (["--depth", "two"], "argument --depth: expected an integer (ASCII digits"),
        (["--depth", " 3"], "argument --depth: expected an integer (ASCII digits"),
        (["--depth", "2"], "longer than the configured depth 2"),
        (["--format", "sglang-log"], "no SGLang decode log line"),
    ],
)
def test_bad_arguments_are_one_line_errors(
    args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli([str(AFTER), *args], capsys)
    assert code == 2 and out == ""
    assert err.startswith("aisim") and ": error: " in err and err.count("\n") == 1
    assert expected in err


def test_reversed_scrapes_exit_2_with_the_reset(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli([str(AFTER), str(BEFORE)], capsys)
    assert code == 2 and "counter reset" in err and err.count("\n") == 1


# -- acceptance_from in a speculation block ---------------------------------------------------


def _block(**source: Any) -> dict[str, Any]:
    return {"kind": "mtp", "params": {"depth": 3}, "acceptance_from": source, "seed": 7}


def test_block_resolves_to_the_same_frozen_profile() -> None:
    resolved = resolve_speculation(
        _block(path=str(AFTER), format="vllm-prometheus", baseline=str(BEFORE)),
        path="engine.speculation",
    )
    assert resolved.acceptance == AcceptanceProfile.from_unconditional(WINDOW_RATES)
    source = resolved.acceptance_source
    assert source is not None
    assert source["files"] == [
        {"path": str(BEFORE), "sha256": hashlib.sha256(BEFORE.read_bytes()).hexdigest()},
        {"path": str(AFTER), "sha256": hashlib.sha256(AFTER.read_bytes()).hexdigest()},
    ]
    assert resolved.to_dict()["acceptance_source"] == source
    inline = resolve_speculation(
        {"kind": "mtp", "params": {"depth": 3}, "unconditional_acceptance_rates": WINDOW_RATES}
    )
    assert "acceptance_source" not in inline.to_dict()
    assert resolved.cost_identity == inline.cost_identity


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            {**_block(path=str(AFTER), format="vllm-prometheus"), "acceptance_rate": 0.5},
            "engine.speculation.acceptance_rate and engine.speculation.acceptance_from are two "
            "acceptance inputs",
        ),
        (
            _block(path=str(AFTER), format="vllm-prometheus", since=str(BEFORE)),
            "engine.speculation.acceptance_from: unknown field(s) since; allowed: baseline, "
            "format, labels, path",
        ),
        (
            _block(path=str(AFTER)),
            "engine.speculation.acceptance_from.format: required field is missing",
        ),
        (
            _block(path=str(AFTER), format="vllm"),
            "engine.speculation.acceptance_from.format: expected one of",
        ),
        (
            _block(format="vllm-prometheus"),
            "engine.speculation.acceptance_from.path: required field is missing",
        ),
        (
            {**_block(path=str(AFTER), format="vllm-prometheus"), "params": {"depth": 2}},
            "engine.speculation.acceptance_from: '",
        ),
        (
            _block(path=str(DATA / "vllm_data_parallel.prom"), format="vllm-prometheus"),
            "so which one is ambiguous",
        ),
        (
            _block(path=str(AFTER), format="vllm-prometheus", labels={"engine": [0]}),
            "engine.speculation.acceptance_from.labels.engine: expected a label value",
        ),
        (
            {"kind": "none", "acceptance_from": {"path": "x", "format": "sglang-log"}},
            "engine.speculation.acceptance_from: kind none takes no acceptance",
        ),
    ],
)
def test_block_errors_name_the_field(block: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(block, path="engine.speculation")
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_depth_mismatch_names_the_field_and_the_file() -> None:
    block = _block(path=str(AFTER), format="vllm-prometheus")
    block["params"] = {"depth": 2}
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(block, path="engine.speculation")
    assert str(caught.value) == (
        f"engine.speculation.acceptance_from: {str(AFTER)!r} (vllm-prometheus): the per-position "
        "series has 3 positions, longer than the configured depth 2 (the engine drafted 3 tokens "
        "per round; configure depth 3 or measure the deployment you model)"
    )


def test_labels_select_the_series_and_integers_are_label_text() -> None:
    dp = str(DATA / "vllm_data_parallel.prom")
    resolved = resolve_speculation(_block(path=dp, format="vllm-prometheus", labels={"engine": 1}))
    assert resolved.acceptance is not None
    assert resolved.acceptance.unconditional_rates == (0.75, 0.5, 0.25)


# -- replay config and explain ------------------------------------------------------------------


def _replay_config(speculation: dict[str, Any]) -> dict[str, Any]:
    return {
        "traffic": {
            "source": {
                "type": "agentic",
                "requests": [{"input_length": 100, "output_length": 64} for _ in range(4)],
            }
        },
        "engine": {
            "speculation": speculation,
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 256}},
                    "timing": {"type": "fixed", "prefill_ms": 10, "decode_ms": 5},
                }
            },
        },
    }


def test_replay_reads_the_file_relative_to_the_config_and_records_it(tmp_path: Path) -> None:
    shutil.copy(BEFORE, tmp_path / "before.prom")
    shutil.copy(AFTER, tmp_path / "after.prom")
    config = _replay_config(
        _block(path="after.prom", format="vllm-prometheus", baseline="before.prom")
    )
    file = tmp_path / "replay.yaml"
    file.write_text(yaml.safe_dump(config), encoding="utf-8")
    from_file = run_replay(file).summary  # a copy: ReplayResult is read-only
    worker = from_file["config"]["workers"][0]
    recorded = worker.pop("acceptance_from")
    assert [item["sha256"] for item in recorded["files"]] == [
        hashlib.sha256(BEFORE.read_bytes()).hexdigest(),
        hashlib.sha256(AFTER.read_bytes()).hexdigest(),
    ]
    assert [item["path"] for item in recorded["files"]] == ["before.prom", "after.prom"]
    assert recorded["drafts"] == 1000 and recorded["format"] == "vllm-prometheus"
    inline = copy.deepcopy(config)
    inline["engine"]["speculation"] = {
        "kind": "mtp",
        "params": {"depth": 3},
        "unconditional_acceptance_rates": WINDOW_RATES,
        "seed": 7,
    }
    assert run_replay(inline).summary == from_file


def test_replay_error_names_the_engine_field(tmp_path: Path) -> None:
    config = _replay_config(_block(path=str(tmp_path / "missing.prom"), format="vllm-prometheus"))
    with pytest.raises(ConfigError) as caught:
        run_replay(config)
    assert str(caught.value).startswith("engine.speculation.acceptance_from: '")
    assert str(caught.value).endswith("missing.prom': file not found")


def test_explain_shows_where_acceptance_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(AFTER, tmp_path / "after.prom")
    file = tmp_path / "spec.yaml"
    file.write_text(
        yaml.safe_dump({"speculation": _block(path="after.prom", format="vllm-prometheus")}),
        encoding="utf-8",
    )
    assert main(["speculation", "explain", str(file)]) == 0
    out = capsys.readouterr().out
    digest = hashlib.sha256(AFTER.read_bytes()).hexdigest()[:16]
    # The path as the config wrote it (portable); the digest identifies the bytes.
    assert f"acceptance_from            vllm-prometheus: after.prom (sha256 {digest})\n" in out
