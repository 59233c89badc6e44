"""Bring your own engine: the plain layout (CSV + JSON from any driver) imports to a recording
that scores the same as the one it was exported from; a recording without per-step CPU time or
without metrics.prom scores cleanly; bad input is one line naming file, row and field, and
nothing is written; ``aisim schema engine-recording`` publishes the layout."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from aisim.cli import main
from aisim.errors import ConfigError, DataIntegrityError
from qualification.engine import load_recording, score_recording
from qualification.engine._plain import OPTIONAL, export_plain, import_plain
from qualification.engine._schema import PLAIN_DEFAULTS
from qualification.engine._score import write_outputs

ROOT = Path(__file__).resolve().parents[2]
STP = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256"
NGRAM = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256-ngram"
EXAMPLE = ROOT / "docs" / "examples" / "engine-recording"


def _plain(recording: Path, where: Path, runs: int = 1) -> Path:
    """``recording`` exported to the plain layout, keeping its first ``runs`` served runs."""
    out = export_plain(recording, where)
    for child in sorted(out.iterdir()):
        if child.is_dir() and int(child.name.split("-")[1]) > runs:
            shutil.rmtree(child)
    return out


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    """What a score says, without where the files were (paths, host)."""
    drop = {"step_table", "recording", "host_load"}
    runs = [{k: v for k, v in run.items() if k not in drop} for run in report["runs"]]
    return {**{k: v for k, v in report.items() if k not in drop | {"runs"}}, "runs": runs}


def _csv_edit(path: Path, column: str, row: int, value: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[row + 1].split(",")
    cells[header.index(column)] = value
    lines[row + 1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _drop_column(path: Path, column: str) -> None:
    lines = [line.split(",") for line in path.read_text(encoding="utf-8").splitlines()]
    index = lines[0].index(column)
    path.write_text("\n".join(",".join(c[:index] + c[index + 1 :]) for c in lines) + "\n")


@pytest.mark.parametrize("recording", [STP, NGRAM], ids=["sd-off", "ngram"])
def test_plain_import_round_trips_to_the_same_scores(tmp_path: Path, recording: Path) -> None:
    original = import_plain(_plain(recording, tmp_path / "plain"), tmp_path / "original")
    again = import_plain(_plain(original, tmp_path / "plain2"), tmp_path / "again")
    first = load_recording(original)
    second = load_recording(again)
    assert first.grid is not None and second.grid is not None
    report_one, _ = score_recording(first, first.grid)
    report_two, _ = score_recording(second, second.grid)
    assert _figures(report_one) == _figures(report_two)
    # ... and the committed recording's own first run (its grid's wake and admission models
    # travel in the plain layout: before they did not, and the import scored differently).
    whole = load_recording(recording)
    assert whole.grid is not None and whole.grid.wake is not None
    report_committed, _ = score_recording(whole, whole.grid)
    assert _figures({"runs": report_committed["runs"][:1]})["runs"] == _figures(report_one)["runs"]
    # The served run's rows are the committed recording's, value for value.
    committed = load_recording(recording).served[0]
    assert second.served[0].steps.equals(committed.steps)
    assert (
        second.served[0].requests["finish_ms"].tolist() == committed.requests["finish_ms"].tolist()
    )


FRONTEND = {
    "schema": {"name": "aisim.engine_frontend", "version": 1},
    "terms": {"step_ms": 1.0, "token_ms": 0.5, "request_ms": 2.0},
}


def test_a_front_end_model_in_the_plain_layout_prices_the_import(tmp_path: Path) -> None:
    """The docs example with ``frontend_model.json`` beside its CSVs: imported into
    ``frontend/``, it prices the runs as in the front-end test below (hand-derived there: TTFT
    11.833, 19.583, 14.25 ms); exported again, it comes back byte for byte."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    (plain / "frontend_model.json").write_text(json.dumps(FRONTEND), encoding="utf-8")
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert recording.grid is not None and recording.frontend is not None
    report, _ = score_recording(recording, recording.grid)
    rows = report["runs"][0]["requests"]
    assert rows["predicted_ttft_ms"] == pytest.approx([11 + 5 / 6, 19 + 7 / 12, 14.25])
    again = export_plain(tmp_path / "rec", tmp_path / "plain2")
    assert (again / "frontend_model.json").read_bytes() == (
        plain / "frontend_model.json"
    ).read_bytes()


def test_a_bad_or_misplaced_model_file_is_one_line_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    bad = {**FRONTEND, "terms": {"step_ms": -1.0, "token_ms": 0.5, "request_ms": 2.0}}
    (plain / "frontend_model.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"frontend_model\.json': terms\.step_ms") as e:
        import_plain(plain, tmp_path / "rec")
    assert "\n" not in str(e.value)
    (plain / "frontend_model.json").unlink()
    wake = {
        "schema": {"name": "aisim.engine_wake", "version": 1},
        "terms": {"wake_ms": 1.0, "reference_prefill": [[1, 32, 8.0]]},
    }
    (plain / "wake_model.json").write_text(json.dumps(wake), encoding="utf-8")
    (plain / "grid.csv").unlink()
    with pytest.raises(
        DataIntegrityError,
        match=r"wake_model\.json': a model of the step table; it needs grid\.csv beside it$",
    ):
        import_plain(plain, tmp_path / "rec")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plain"]


def test_a_recording_without_cpu_times_or_metrics_scores_cleanly(tmp_path: Path) -> None:
    plain = _plain(STP, tmp_path / "plain")
    _drop_column(plain / "grid.csv", "cpu_ms")
    _drop_column(plain / "served-1" / "steps.csv", "cpu_ms")
    (plain / "served-1" / "metrics.prom").unlink()
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert recording.served[0].steps["cpu_ms"].isna().all()
    assert recording.grid is not None
    report, per_request = score_recording(recording, recording.grid)
    written = write_outputs(report, per_request, tmp_path / "out", overwrite=False)
    # Written as one set through a staging folder, which is gone (hidden names included).
    assert sorted((tmp_path / "out").iterdir()) == sorted(written)
    saved = json.loads(written[0].read_text(encoding="utf-8"))
    assert saved["runs"][0]["host_slowdown"] is None
    assert saved["step_table_host_slowdown"] is None
    # engine.json carries every request's prediction next to its measurement.
    rows = saved["runs"][0]["requests"]
    assert len(rows["request_id"]) == 24
    assert rows["measured_e2e_ms"][0] > 0 and rows["predicted_e2e_ms"][0] > 0
    # ... and every served step's price error by kind (the grid as the only input).
    steps = recording.served[0].steps
    decode_only = int(
        ((steps["num_prefill_requests"] == 0) & (steps["num_decode_requests"] > 0)).sum()
    )
    errors = saved["runs"][0]["step_errors"]["errors"]
    assert len(errors["decode"]) == decode_only
    assert sum(len(values) for values in errors.values()) == len(steps)


def test_sd_without_metrics_is_refused_naming_the_file(tmp_path: Path) -> None:
    plain = _plain(NGRAM, tmp_path / "plain")
    (plain / "served-1" / "metrics.prom").unlink()
    with pytest.raises(DataIntegrityError, match=r"served-1/metrics\.prom': missing; with spec"):
        import_plain(plain, tmp_path / "rec")
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize(
    ("file", "value"), [("grid-metrics.prom", "NaN"), ("served-1/metrics.prom", "+Inf")]
)
def test_a_non_finite_counter_is_one_line_and_nothing_is_written(
    tmp_path: Path, file: str, value: str
) -> None:
    # Prometheus text allows NaN and +Inf as values; an engine's counter never is either.
    plain = _plain(NGRAM, tmp_path / "plain")
    metrics = plain / file
    lines = metrics.read_text(encoding="utf-8").splitlines()
    (index,) = [i for i, line in enumerate(lines) if line.startswith("vllm:spec_decode_num_drafts")]
    name = lines[index].rsplit(" ", 1)[0]
    lines[index] = f"{name} {value}"
    metrics.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shown = "nan" if value == "NaN" else "inf"
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(metrics)!r}: {name}: {shown}; expected a finite number (an engine's counters and "
        "gauges are never NaN or infinite)"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plain"]


def test_a_missing_counter_is_named_as_missing(tmp_path: Path) -> None:
    plain = _plain(NGRAM, tmp_path / "plain")
    metrics = plain / "grid-metrics.prom"
    kept = [
        line
        for line in metrics.read_text(encoding="utf-8").splitlines()
        if "vllm:request_success" not in line
    ]
    metrics.write_text("\n".join(kept) + "\n", encoding="utf-8")
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert recording.grid is not None
    with pytest.raises(DataIntegrityError, match=r"metrics\.prom': vllm:request_success: missing"):
        score_recording(recording, recording.grid)


BAD = [
    ("served-1/requests.csv", "first_token_ms", 3, "", r"line 5: first_token_ms: missing"),
    ("served-1/requests.csv", "finish_ms", 2, "nan", r"line 4: finish_ms: expected a finite"),
    (
        "served-1/requests.csv",
        "output_tokens",
        1,
        "999",
        r"requests\.csv': line 3: token_times_ms: request 'r0001' never finished",
    ),
    (
        "served-1/requests.csv",
        "output_tokens",
        1,
        "1",
        r"requests\.csv': line 3: token_times_ms: \d+ times for the 1 output tokens of request "
        r"'r0001' \(output_tokens\); expected one time per output token$",
    ),
    ("served-1/steps.csv", "start_ms", 5, "1.0", r"steps\.csv': line 7: start_ms: 1\.0 is before"),
    ("served-1/steps.csv", "cpu_ms", 2, "inf", r"steps\.csv': line 4: cpu_ms: expected a finite"),
    ("grid.csv", "start_ms", 4, "0.0", r"grid\.csv': line 6: start_ms: 0\.0 is before"),
    (
        "grid.csv",
        "wall_ms",
        0,
        "-3.0",
        r"grid\.csv': line 2: wall_ms: impossible value -3\.0; expected a finite number > 0 \(ms\)$",
    ),
    (
        "grid.csv",
        "batch_size",
        1,
        "0",
        r"grid\.csv': line 3: batch_size: impossible value 0; expected an integer >= 1$",
    ),
    (
        "served-1/requests.csv",
        "prompt_tokens",
        2,
        "0",
        r"requests\.csv': line 4: prompt_tokens: 0; expected an integer >= 1$",
    ),
    ("grid.csv", "phase", 0, "decoding", r"grid\.csv': line 2: phase: 'decoding' is not one of"),
]


@pytest.mark.parametrize(("file", "column", "row", "value", "message"), BAD)
def test_bad_plain_input_is_one_line_and_nothing_is_written(
    tmp_path: Path, file: str, column: str, row: int, value: str, message: str
) -> None:
    plain = _plain(STP, tmp_path / "plain")
    _csv_edit(plain / file, column, row, value)
    with pytest.raises(DataIntegrityError, match=message) as caught:
        import_plain(plain, tmp_path / "rec")
    assert "\n" not in str(caught.value)
    assert str(plain / file) in str(caught.value)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plain"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # A blank line after the first row: the file's line 3, read as a row of no fields.
        (lambda lines: [*lines[:2], "", *lines[2:]], "line 3: 0 fields, the header has 7"),
        # The first row's request_id quoted across lines 2 and 3: the second request starts
        # on line 4, and its prompt_tokens is named there.
        (
            lambda lines: [
                lines[0],
                '"r0',
                'x"' + lines[1].removeprefix("r0"),
                lines[2].replace("r1,50,", "r1,y,"),
                *lines[3:],
            ],
            "line 4: prompt_tokens: expected an integer, got 'y'",
        ),
    ],
)
def test_a_csv_row_is_named_by_its_line_in_the_file(
    tmp_path: Path, edit: Any, message: str
) -> None:
    """The header is line 1 and the first row line 2, as an editor or a spreadsheet shows
    them; a blank line and a quoted cell holding a line break count as the file's lines."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    requests = plain / "served-1" / "requests.csv"
    lines = requests.read_text(encoding="utf-8").splitlines()
    requests.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == f"{str(requests)!r}: {message}"


@pytest.mark.parametrize("file", ["grid.csv", "served-1/requests.csv"])
def test_a_table_with_a_header_and_no_rows_is_refused(tmp_path: Path, file: str) -> None:
    """A header-only grid or requests file used to import and fail later in `aisim qualify
    engine` (no decode steps; `traffic.source: the traffic has no requests`)."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    path = plain / file
    path.write_text(path.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    expected = "no rows; a step table" if file == "grid.csv" else "no requests; a served run"
    with pytest.raises(DataIntegrityError, match=expected) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value).startswith(repr(str(path)) + ": ")
    assert "\n" not in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_an_unknown_column_is_refused(tmp_path: Path) -> None:
    plain = _plain(STP, tmp_path / "plain")
    steps = plain / "served-1" / "steps.csv"
    text = steps.read_text(encoding="utf-8").splitlines()
    steps.write_text("\n".join([text[0] + ",gpu_ms"] + [line + ",1.0" for line in text[1:]]) + "\n")
    with pytest.raises(DataIntegrityError, match=r"steps\.csv': unknown column 'gpu_ms'"):
        import_plain(plain, tmp_path / "rec")


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("host", "cpus", "NaN"),
        ("identity", "target", "NaN"),
        ("engine_settings", "kv_cache_memory_bytes", "Infinity"),
    ],
)
def test_a_non_finite_setting_is_one_line_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, key: str, value: str
) -> None:
    """Python's json reads NaN and Infinity (JSON has neither): a settings.json carrying one
    anywhere is refused naming the field, before anything is written."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings[section][key] = "@"
    text = json.dumps(settings).replace('"@"', value)
    (plain / "settings.json").write_text(text, encoding="utf-8")
    argv = ["qualify", "engine-import", str(plain), "--out", str(tmp_path / "rec")]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert f"settings.json': {section}.{key}: {float(value)!r} is not a finite number" in error
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize(
    ("file", "section", "key"),
    [
        ("served-1/steps.parquet.json", "host", "cpus"),
        ("grid/grid_steps.parquet.json", "engine_settings", "kv_cache_memory_bytes"),
    ],
)
def test_a_non_finite_sidecar_field_is_refused_by_qualify_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, section: str, key: str
) -> None:
    """A recording written by hand (its sidecar not hashed) with NaN in a sidecar: one line
    naming the sidecar and the field; no engine.json."""
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    sidecar = json.loads((recording / file).read_text(encoding="utf-8"))
    sidecar.setdefault(section, {})[key] = math.nan
    (recording / file).write_text(json.dumps(sidecar), encoding="utf-8")
    assert main(["qualify", "engine", str(recording), "--out", str(tmp_path / "q")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert f"{file.split('/')[1]}': {section}.{key}: nan is not a finite number" in error
    assert not (tmp_path / "q").exists()


def test_a_missing_setting_is_named(tmp_path: Path) -> None:
    plain = _plain(STP, tmp_path / "plain")
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    del settings["engine_settings"]["num_kv_blocks"]
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"engine_settings\.num_kv_blocks: missing"):
        import_plain(plain, tmp_path / "rec")


def test_the_published_schema_names_the_plain_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "engine-recording"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert set(schema["$defs"]) == {"grid_steps", "requests", "steps"}
    for name, table in (
        ("aisim.engine_grid_steps", "grid_steps"),
        ("aisim.engine_requests", "requests"),
        ("aisim.engine_steps", "steps"),
    ):
        # A column the importer fills in is exactly a column the schema says may be left out.
        assert set(OPTIONAL[name]) == set(PLAIN_DEFAULTS[name])
        row = schema["$defs"][table]
        assert set(row["properties"]) - set(row["required"]) == set(PLAIN_DEFAULTS[name])
    assert schema["properties"]["engine_settings"]["required"][0] == "max_num_seqs"


def test_the_import_command_writes_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = _plain(STP, tmp_path / "plain")
    assert main(["qualify", "engine-import", str(plain), "--out", str(tmp_path / "rec")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(["qualify", "engine-import", str(plain), "--out", str(tmp_path / "rec")]) == 2
    assert "already exists" in capsys.readouterr().err


def test_the_docs_example_validates_imports_and_scores_as_derived_by_hand(tmp_path: Path) -> None:
    """docs/examples/engine-recording: three requests; the grid prices a prefill of n tokens
    for one request by interpolating 8.0 ms (32 tokens) .. 12.0 ms (128 tokens), and a decode
    step of one request at 4.0 ms (its context, 40-62 tokens, clamped up to the 64 recorded).
    r0 (40 tokens, at 0): prefill 8 + 8/96 x 4 = 8.333 ms -> TTFT 8.333. r1 (50 tokens, at 5)
    is admitted after that step, beside r0's decode: one mixed step = prefill 8 + 18/96 x 4
    (8.75) + decode 4.0 - one step's overhead 4.0 (the cheapest decode step) = 8.75, ending at
    17.083 -> TTFT 12.083. r2 (60 tokens, at 30, alone): prefill 8 + 28/96 x 4 = 9.1667, then
    three decode steps of 4.0 -> TTFT 9.1667, E2E 21.1667."""
    jsonschema = pytest.importorskip("jsonschema")
    from aisim.config import json_schema

    settings = json.loads((EXAMPLE / "settings.json").read_text(encoding="utf-8"))
    jsonschema.validate(settings, json_schema("engine-recording"))
    recording = load_recording(import_plain(EXAMPLE, tmp_path / "rec"))
    assert recording.grid is not None
    report, _ = score_recording(recording, recording.grid)
    rows = report["runs"][0]["requests"]
    assert rows["request_id"] == ["r0", "r1", "r2"]
    assert rows["predicted_ttft_ms"] == pytest.approx([8 + 8 / 24, 17 + 1 / 12 - 5, 9 + 1 / 6])
    assert rows["predicted_e2e_ms"][2] == pytest.approx(9 + 1 / 6 + 12.0)
    assert rows["measured_ttft_ms"] == [10.0, 16.0, 11.0]
    assert rows["measured_e2e_ms"] == [26.0, 21.0, 23.0]


def test_an_sglang_recording_is_replayed_with_sglang_s_scheduler(tmp_path: Path) -> None:
    """The docs example with ``identity.engine`` ``sglang``: SGLang runs a pass as prefill or
    decode, never both, so r1's prefill (8.75 ms, ending at 17.083) is a pass of its own and r0
    decodes its tokens 2 and 3 after it: a decode pass of two requests (5.0 ms, the B = 2 row at
    the 64 recorded; r1 finishes: E2E 22.083 - 5 = 17.083), then one of r0 alone (4.0): r0's E2E
    26.083, where vLLM's mixed step gives 22.083. TTFTs and r2 are as under vLLM."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings["identity"]["engine"] = "sglang"
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert recording.grid is not None
    report, _ = score_recording(recording, recording.grid)
    assert report["replay_config_settings"]["backend"] == "sglang"
    assert report["replay_config_settings"]["worker"]["scheduler"] == {
        "chunked_prefill_size": 512,
        "max_running_requests": 8,
        "chunked_prefill": True,
    }
    rows = report["runs"][0]["requests"]
    assert rows["predicted_ttft_ms"] == pytest.approx([8 + 1 / 3, 12 + 1 / 12, 9 + 1 / 6])
    assert rows["predicted_e2e_ms"] == pytest.approx([26 + 1 / 12, 17 + 1 / 12, 21 + 1 / 6])


@pytest.mark.parametrize("recording", [EXAMPLE, NGRAM], ids=["example", "ngram"])
def test_aisim_replay_prices_with_a_step_table_as_qualify_engine_does(
    tmp_path: Path, recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pandas as pd

    from qualification.engine._replay import replay_config

    if recording == EXAMPLE:
        recording = import_plain(EXAMPLE, tmp_path / "rec")
    loaded = load_recording(recording)
    assert loaded.grid is not None
    run = loaded.served[0]
    config = tmp_path / "replay.json"
    config.write_text(json.dumps(replay_config(run, loaded.grid)), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["replay", str(config), "--out", str(out), "--step-table", str(recording), "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    replayed = pd.read_parquet(out / "requests.parquet").set_index("request_id")
    report, _ = score_recording(loaded, loaded.grid)
    rows = report["runs"][0]["requests"]
    assert replayed.loc[rows["request_id"], "e2e_latency_ms"].tolist() == pytest.approx(
        rows["predicted_e2e_ms"], rel=1e-12
    )
    assert replayed.loc[rows["request_id"], "ttft_ms"].tolist() == pytest.approx(
        rows["predicted_ttft_ms"], rel=1e-12
    )


def test_aisim_replay_and_qualify_engine_price_a_front_end_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/examples/engine-recording with a front end of 1.0 ms per step, 0.5 ms per
    streaming request and 2.0 ms per request (hand-derived in test_engine_frontend: every
    request reaches the engine 2 ms after the client sent it; TTFT 11.833, 19.583, 14.25 ms,
    E2E 31.583, 26.583, 30.75 ms): ``aisim replay --step-table`` and ``aisim qualify engine``
    give the same per-request figures, and engine.json carries them beside the measured ones."""
    import pandas as pd

    from qualification.engine._replay import replay_config

    recording = import_plain(EXAMPLE, tmp_path / "rec")
    (recording / "frontend").mkdir()
    (recording / "frontend" / "frontend_model.json").write_text(
        json.dumps(
            {
                "schema": {"name": "aisim.engine_frontend", "version": 1},
                "terms": {"step_ms": 1.0, "token_ms": 0.5, "request_ms": 2.0},
            }
        ),
        encoding="utf-8",
    )
    loaded = load_recording(recording)
    assert loaded.grid is not None
    config = tmp_path / "replay.json"
    config.write_text(json.dumps(replay_config(loaded.served[0], loaded.grid)), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["replay", str(config), "--out", str(out), "--step-table", str(recording), "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["config"]["admission_ms"] == 2.0
    replayed = pd.read_parquet(out / "requests.parquet").set_index("request_id")
    assert main(["qualify", "engine", str(recording), "--out", str(tmp_path / "q")]) == 0
    capsys.readouterr()
    report = json.loads((tmp_path / "q" / "engine.json").read_text(encoding="utf-8"))
    rows = report["runs"][0]["requests"]
    assert rows["request_id"] == ["r0", "r1", "r2"]
    ttft = [11 + 5 / 6, 19 + 7 / 12, 14.25]
    e2e = [31 + 7 / 12, 26 + 7 / 12, 30.75]
    assert rows["predicted_ttft_ms"] == pytest.approx(ttft, rel=1e-12)
    assert rows["predicted_e2e_ms"] == pytest.approx(e2e, rel=1e-12)
    assert replayed.loc[rows["request_id"], "ttft_ms"].tolist() == rows["predicted_ttft_ms"]
    assert replayed.loc[rows["request_id"], "e2e_latency_ms"].tolist() == rows["predicted_e2e_ms"]
    assert replayed.loc[rows["request_id"], "tpot_ms"].tolist() == rows["predicted_tpot_ms"]
    # The client's arrivals (0, 5, 30 ms), not the engine's.
    assert replayed.loc[rows["request_id"], "arrival_ms"].tolist() == [0.0, 5.0, 30.0]
    assert rows["measured_ttft_ms"] == [10.0, 16.0, 11.0]
    assert rows["measured_e2e_ms"] == [26.0, 21.0, 23.0]


def test_aisim_replay_intervals_price_with_the_step_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``aisim replay --step-table REC --intervals N`` prices its replicas as the replay is (the
    intervals used to ignore the step table and price by the config's roofline). The front-end
    example above (TTFT 11.833, 19.583, 14.25 ms; E2E 31.583, 26.583, 30.75 ms, hand-derived)
    with every source off: each interval is the point, the replay's own mean figures."""
    from qualification.engine._replay import replay_config

    recording = import_plain(EXAMPLE, tmp_path / "rec")
    (recording / "frontend").mkdir()
    (recording / "frontend" / "frontend_model.json").write_text(
        json.dumps(
            {
                "schema": {"name": "aisim.engine_frontend", "version": 1},
                "terms": {"step_ms": 1.0, "token_ms": 0.5, "request_ms": 2.0},
            }
        ),
        encoding="utf-8",
    )
    loaded = load_recording(recording)
    assert loaded.grid is not None
    config = tmp_path / "replay.json"
    config.write_text(json.dumps(replay_config(loaded.served[0], loaded.grid)), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["replay", str(config), "--out", str(out), "--step-table", str(recording)]
    argv += ["--intervals", "2", "--sources", "none", "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    metrics = json.loads((out / "intervals.json").read_text(encoding="utf-8"))["metrics"]
    ttft = (11 + 5 / 6 + 19 + 7 / 12 + 14.25) / 3
    e2e = (31 + 7 / 12 + 26 + 7 / 12 + 30.75) / 3
    for name, value in (("mean_ttft_ms", ttft), ("mean_e2e_ms", e2e)):
        item = metrics[name]
        assert item["point"] == pytest.approx(value, rel=1e-12)
        assert item["low"] == item["high"] == item["p50"] == item["point"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert metrics["mean_ttft_ms"]["point"] == summary["mean_ttft_ms"]


def test_step_table_intervals_with_every_source_off_are_the_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every source off: each interval is zero-width at the replay's own figure (issue 26). On
    a vLLM CPU step table (a primitive-cache model) the replicas used to share the point's
    model and start with the caches it left: mean TTFT 21.73 ms against the point's 24.28."""
    from qualification.engine._replay import replay_config

    loaded = load_recording(STP)
    assert loaded.grid is not None
    config = tmp_path / "replay.json"
    config.write_text(json.dumps(replay_config(loaded.served[0], loaded.grid)), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["replay", str(config), "--out", str(out), "--step-table", str(STP)]
    assert main([*argv, "--intervals", "2", "--sources", "none", "--json"]) == 0
    capsys.readouterr()
    metrics = json.loads((out / "intervals.json").read_text(encoding="utf-8"))["metrics"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert metrics["mean_ttft_ms"]["point"] == summary["mean_ttft_ms"]
    for item in metrics.values():
        assert item["low"] == item["high"] == item["p50"] == item["point"]


def test_aisim_replay_refuses_a_step_table_that_is_not_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ROOT / "docs" / "examples" / "replay" / "aggregated_mtp.yaml"
    argv = ["replay", str(config), "--out", str(tmp_path / "o"), "--step-table", str(tmp_path)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error == (
        f"aisim: error: {str(tmp_path)!r}: neither grid/grid_steps.parquet nor "
        "grid_steps.parquet here: not an engine recording or step table\n"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["replay", "qualify"])
def test_a_plain_layout_or_missing_path_is_named_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The plain example given where an imported recording is expected used to read as a
    recording whose parquet sidecars are missing; a missing path likewise."""
    config = ROOT / "docs" / "examples" / "replay" / "aggregated_mtp.yaml"
    out = tmp_path / "o"
    if command == "replay":
        argv = ["replay", str(config), "--out", str(out), "--step-table"]
    else:
        argv = ["qualify", "engine", "--out", str(out)]
    assert main([*argv, str(EXAMPLE)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"aisim: error: {str(EXAMPLE)!r}: a plain engine recording (")
    assert error.endswith(
        f"not an imported one; convert it first: aisim qualify engine-import {EXAMPLE} "
        "--out RECORDING\n"
    )
    if command == "replay":
        assert main([*argv, str(tmp_path / "nosuch")]) == 2
        error = capsys.readouterr().err
        assert error == (
            f"aisim: error: {str(tmp_path / 'nosuch')!r}: not found; expected an engine "
            "recording, its grid/ folder or its grid_steps.parquet\n"
        )
    assert not out.exists()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("platform", "tpu", r"engine_settings\.platform: expected 'cpu' or 'cuda', got 'tpu'"),
        ("cudagraph_capture_sizes", [8, 0], r"cudagraph_capture_sizes: expected a non-empty"),
        (
            "block_size",
            0,
            r"engine_settings\.block_size: expected an integer in 1\.\.1048576, got 0",
        ),
        # Past the replay config's limits (docs/replay.md "Limits"): imported, then refused by
        # `qualify engine` naming engine.workers.aggregated.kv_cache.capacity.blocks.
        (
            "num_kv_blocks",
            10**20,
            r"engine_settings\.num_kv_blocks: expected an integer in 1\.\.1099511627776, got "
            r"100000000000000000000$",
        ),
    ],
)
def test_a_bad_setting_is_named(tmp_path: Path, key: str, value: Any, message: str) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings["engine_settings"][key] = value
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=message):
        import_plain(plain, tmp_path / "rec")
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize(
    ("file", "old", "new", "place"),
    [
        ("served-1/requests.csv", "r0,40,", "r0,10000000000000000000,", "line 2: prompt_tokens"),
        (
            "served-1/steps.csv",
            "41.0,45.0,0,0,1,60,",
            "41.0,45.0,0,0,1,9223372036854775808,",
            "line 6: decode_kv_tokens",
        ),
        (
            "grid.csv",
            "decode,1,64,64,",
            "decode,1,64,-9223372036854775809,",
            "line 2: total_kv_tokens",
        ),
    ],
)
def test_an_integer_past_64_bits_is_one_line_and_nothing_is_written(
    tmp_path: Path, file: str, old: str, new: str, place: str
) -> None:
    """An integer cell past int64 passed every check and crashed writing the parquet
    (pyarrow's OverflowError: Python int too large to convert to C long)."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    path = plain / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    value = new.split(",")[-2]
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(path)!r}: {place}: expected an integer of at most 9223372036854775807 (64 bits), "
        f"got {value!r}"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_a_key_given_twice_in_settings_is_refused(tmp_path: Path) -> None:
    """json.loads kept the last of two values silently."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    path = plain / "settings.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"block_size": 32,', '"block_size": 32, "block_size": 16,'))
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(path)!r}: not valid JSON: duplicate key 'block_size' in one object"
    )
    assert not (tmp_path / "rec").exists()


def test_an_unknown_setting_is_refused_naming_it_and_the_allowed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt setting used to be kept as given: ``enforce_eagre: true`` left
    ``enforce_eager`` at its default (graphs on, on cuda) and changed the price silently."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings["engine_settings"]["enforce_eagre"] = True
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    out = tmp_path / "rec"
    assert main(["qualify", "engine-import", str(plain), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(
        f"aisim: error: {str(plain / 'settings.json')!r}: engine_settings.enforce_eagre: unknown "
        "setting; allowed: max_num_seqs, max_num_batched_tokens, block_size, num_kv_blocks, "
        "chunked_prefill, prefix_caching, speculative_method, num_speculative_tokens, platform, "
        "enforce_eager, cudagraph_capture_sizes, max_model_len, "
    )
    assert error.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "sidecar", ["grid/grid_steps.parquet.json", "served-1/requests.parquet.json"]
)
def test_a_recording_whose_sidecar_states_an_unknown_setting_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sidecar: str
) -> None:
    """The same refusal for a recording's own sidecars (a hand-edited one was read, the
    unknown key ignored)."""
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    path = recording / sidecar
    document = json.loads(path.read_text(encoding="utf-8"))
    document["engine_settings"]["enforce_eagre"] = True
    path.write_text(json.dumps(document), encoding="utf-8")
    if sidecar.startswith("served-1"):  # both tables of a run state the same settings
        steps = recording / "served-1" / "steps.parquet.json"
        other = json.loads(steps.read_text(encoding="utf-8"))
        other["engine_settings"]["enforce_eagre"] = True
        steps.write_text(json.dumps(other), encoding="utf-8")
    out = tmp_path / "score"
    assert main(["qualify", "engine", str(recording), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(
        f"aisim: error: {str(path)!r}: engine_settings.enforce_eagre: unknown setting; "
        "allowed: max_num_seqs, "
    )
    assert error.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_model_len", "long", "expected an integer >= 1, got 'long'"),
        ("long_prefill_token_threshold", -1, "expected an integer >= 0, got -1"),
        ("async_scheduling", 1, "expected true or false, got 1"),
        ("dtype", 32, "expected a string, got 32"),
    ],
)
def test_a_reported_setting_of_the_wrong_type_is_named(
    tmp_path: Path, key: str, value: Any, message: str
) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings["engine_settings"][key] = value
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=rf"engine_settings\.{key}: {message}$"):
        import_plain(plain, tmp_path / "rec")
    assert not (tmp_path / "rec").exists()


def test_every_committed_recording_states_only_published_settings() -> None:
    """What our recorders write (``_vllm.VllmEngine.settings``, the vllm-bench driver) is what
    the published schema allows, so every committed recording's plain export imports back."""
    jsonschema = pytest.importorskip("jsonschema")
    from aisim.config import json_schema

    engine_settings = json_schema("engine-recording")["properties"]["engine_settings"]
    sidecars = sorted(
        path
        for path in (ROOT / "evidence" / "engine").glob("*/*/*.parquet.json")
        if path.name in ("grid_steps.parquet.json", "requests.parquet.json", "steps.parquet.json")
    )
    assert len(sidecars) > 20
    for sidecar in sidecars:
        settings = json.loads(sidecar.read_text(encoding="utf-8"))["engine_settings"]
        jsonschema.validate(settings, engine_settings)


def test_overwrite_replaces_the_recording_parts_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`engine-import --overwrite` used to delete the whole --out folder (a user's notes, a
    score folder, anything): now grid/ and served-N/ are replaced (a stale served-9 included)
    and the rest is kept; --out naming a file is one line (was a NotADirectoryError traceback)."""
    target = tmp_path / "rec"
    (target / "served-9").mkdir(parents=True)
    (target / "score").mkdir()
    (target / "score" / "engine.md").write_text("old score\n", encoding="utf-8")
    (target / "notes.txt").write_text("precious\n", encoding="utf-8")
    argv = ["qualify", "engine-import", str(EXAMPLE), "--out", str(target), "--overwrite"]
    assert main(argv) == 0
    capsys.readouterr()
    assert sorted(p.name for p in target.iterdir()) == ["grid", "notes.txt", "score", "served-1"]
    assert (target / "notes.txt").read_text(encoding="utf-8") == "precious\n"
    assert (target / "score" / "engine.md").read_text(encoding="utf-8") == "old score\n"
    assert len(load_recording(target).served) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec"]
    # A front-end model imported over a recording's frontend/ replaces the model and keeps the
    # probe beside it.
    (target / "frontend").mkdir()
    (target / "frontend" / "probe.csv.gz").write_bytes(b"probe")
    (target / "frontend" / "frontend_model.json").write_text("{}", encoding="utf-8")
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    (plain / "frontend_model.json").write_text(json.dumps(FRONTEND), encoding="utf-8")
    assert main(["qualify", "engine-import", str(plain), "--out", str(target), "--overwrite"]) == 0
    capsys.readouterr()
    assert (target / "frontend" / "probe.csv.gz").read_bytes() == b"probe"
    assert load_recording(target).frontend is not None
    shutil.rmtree(plain)
    a_file = tmp_path / "a-file"
    a_file.write_text("", encoding="utf-8")
    argv = ["qualify", "engine-import", str(EXAMPLE), "--out", str(a_file), "--overwrite"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: --out {str(a_file)!r}: exists and is not a folder\n"
    )
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        import_plain(EXAMPLE, a_file, overwrite=True)


def test_qualify_engine_names_a_missing_or_plain_step_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`qualify engine REC --step-table nosuch` used to say 'nosuch/grid/grid_steps.parquet':
    sidecar ... is missing."""
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    out = tmp_path / "o"
    for table, expected in (
        (tmp_path / "nosuch", "not found; expected an engine recording, its grid/ folder"),
        (EXAMPLE, "a plain engine recording (CSV + settings.json), not an imported one"),
    ):
        argv = ["qualify", "engine", str(recording), "--step-table", str(table), "--out", str(out)]
        assert main(argv) == 2
        assert capsys.readouterr().err.startswith(f"aisim: error: {str(table)!r}: {expected}")
    assert not out.exists()


def test_a_csv_with_a_byte_order_mark_imports_as_without(tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" (and some Windows editors' JSON) starts the file with a BOM: the
    header's first column used to read as '\\ufeffphase', an unknown column, and settings.json
    as not JSON."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    for path in (plain / "grid.csv", plain / "served-1" / "requests.csv", plain / "settings.json"):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    with_bom = load_recording(import_plain(plain, tmp_path / "bom"))
    plain_rec = load_recording(import_plain(EXAMPLE, tmp_path / "plain-rec"))
    assert with_bom.grid is not None and plain_rec.grid is not None
    assert with_bom.grid.steps.equals(plain_rec.grid.steps)
    assert with_bom.served[0].requests.equals(plain_rec.served[0].requests)


def test_engine_md_of_another_drivers_recording_says_what_is_not_stated(tmp_path: Path) -> None:
    """The plain example states no target shape, platform or host load: engine.md used to
    print 'None' and '? -> ?' for them."""
    from qualification.engine._render import to_markdown

    recording = load_recording(import_plain(EXAMPLE, tmp_path / "rec"))
    assert recording.grid is not None
    report, _ = score_recording(recording, recording.grid)
    text = to_markdown(report, [])
    assert "?" not in text and ", None)" not in text and "platform None" not in text
    assert "(weights not stated, shape not stated)" in text
    assert "platform not stated (the table's prices alone)" in text
    assert "| n/a -> n/a |" in text


def test_engine_md_without_engine_steps_says_n_a_once(tmp_path: Path) -> None:
    """A driver that sees only requests (no steps.csv): engine.md used to print the
    drift-adjusted diagnostic (drift n/a, so a copy of the headline) and an empty step-error
    table; each is now one n/a line."""
    from qualification.engine._render import to_markdown

    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    (plain / "served-1" / "steps.csv").unlink()
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert recording.grid is not None
    report, _ = score_recording(recording, recording.grid)
    text = to_markdown(report, [])
    assert "Diagnostic, not the headline" not in text
    assert "Drift-adjusted diagnostic: n/a (no served run has engine steps" in text
    assert "| run | kind | steps |" not in text
    assert "Step price error per kind: n/a (no served run recorded engine steps" in text
    with_steps = load_recording(import_plain(EXAMPLE, tmp_path / "rec2"))
    assert with_steps.grid is not None
    text = to_markdown(score_recording(with_steps, with_steps.grid)[0], [])
    assert "Diagnostic, not the headline" in text and "| run | kind | steps |" in text


def test_served_runs_keep_the_order_they_were_served_in(tmp_path: Path) -> None:
    """Runs were taken in name order, so served-10 came before served-2 (the engine's caches
    carry from one run's replay to the next: the order is part of the score); a folder of
    requests not named served-N was dropped without a word."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    (plain / "served-1").rename(plain / "served-2")
    shutil.copytree(plain / "served-2", plain / "served-10")
    recording = load_recording(import_plain(plain, tmp_path / "rec"))
    assert [run.directory.name for run in recording.served] == ["served-2", "served-10"]
    (plain / "served-10").rename(plain / "served_10")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec2")
    assert str(caught.value) == (
        f"{str(plain / 'served_10')!r}: holds requests.csv but is not named served-N; name the "
        "served runs served-1, served-2, ... in the order they were served"
    )
    assert not (tmp_path / "rec2").exists()


def test_the_published_row_schemas_state_the_ranges_import_enforces() -> None:
    """`aisim schema engine-recording` gave each column a type but no range, so a row the
    import refuses (wall_ms -3, prompt_tokens 0, batch_size 0) validated against it."""
    jsonschema = pytest.importorskip("jsonschema")
    from aisim.config import json_schema

    rows = json_schema("engine-recording")["$defs"]
    grid, requests = rows["grid_steps"], rows["requests"]
    assert grid["properties"]["wall_ms"]["exclusiveMinimum"] == 0.0
    assert grid["properties"]["batch_size"]["minimum"] == 1
    assert requests["properties"]["prompt_tokens"]["minimum"] == 1
    assert requests["properties"]["output_tokens"]["minimum"] == 1
    # The maxima are replay's limits (2^32 ms, 2^24 tokens per request, counts 2^40).
    assert grid["properties"]["wall_ms"]["maximum"] == 4294967296.0
    assert requests["properties"]["token_times_ms"]["items"]["maximum"] == 4294967296.0
    assert requests["properties"]["prompt_tokens"]["maximum"] == 16777216
    assert grid["properties"]["batch_size"]["maximum"] == 1099511627776
    row = {"phase": "decode", "batch_size": 1, "context_tokens": 64, "total_kv_tokens": 64}
    row |= {"scheduled_tokens": 1, "wall_ms": 4.0}
    jsonschema.validate(row, grid)
    for column, bad in (("wall_ms", -3.0), ("wall_ms", 0.0), ("batch_size", 0), ("wall_ms", 1e308)):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**row, column: bad}, grid)


@pytest.mark.parametrize(
    "file",
    [
        "grid.csv",
        "settings.json",
        "served-1/metrics.prom",
        "wake_model.json",
        "admit_model.json",
        "frontend_model.json",
    ],
)
def test_a_fifo_in_the_plain_layout_is_refused_without_blocking(tmp_path: Path, file: str) -> None:
    """A named pipe where grid.csv goes used to block the import forever (opened and read
    until a writer closes it); settings.json, metrics.prom and the probed models likewise
    (the models' reader, aisim.fpm's, blocked aisim qualify engine on a recording too)."""
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    (plain / file).unlink(missing_ok=True)
    os.mkfifo(plain / file)
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(plain / file)!r}: is not a regular file (a FIFO, socket or device)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_import_over_its_own_source_is_refused(tmp_path: Path) -> None:
    """`engine-import PLAIN --out PLAIN --overwrite` replaced the plain files with the
    recording (before: deleted the whole folder); a folder above the source likewise."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    before = sorted(str(p.relative_to(plain)) for p in plain.rglob("*"))
    for out in (plain, tmp_path):
        with pytest.raises(ConfigError) as caught:
            import_plain(plain, out, overwrite=True)
        assert str(caught.value) == (
            f"{str(out)!r}: is the plain recording {str(plain)!r} or a folder above it; the "
            "import would write over its own input: give another --out"
        )
    assert sorted(str(p.relative_to(plain)) for p in plain.rglob("*")) == before
    assert len(load_recording(import_plain(plain, plain / "rec")).served) == 1


@pytest.mark.parametrize("file", ["grid-metrics.prom", "served-1/metrics.prom"])
def test_a_metrics_file_that_is_not_utf8_text_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str
) -> None:
    """A metrics.prom of binary bytes ended engine-import (and qualify engine) in a
    UnicodeDecodeError traceback, exit 1."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    (plain / file).write_bytes(b"vllm:x 1\n\xf4\n")
    argv = ["qualify", "engine-import", str(plain), "--out", str(tmp_path / "rec")]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: {str(plain / file)!r}: not UTF-8 text (byte 0xf4 at offset 9); expected "
        "Prometheus text exposition format\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


@pytest.mark.parametrize("kind", ["folder", "binary"])
def test_qualify_engine_names_a_bad_metrics_file_in_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """A served run's metrics.prom that is a folder (IsADirectoryError) or binary
    (UnicodeDecodeError) ended qualify engine in a traceback, exit 1."""
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    metrics = recording / "served-1" / "metrics.prom"
    if kind == "folder":
        metrics.mkdir()
        problem = "is a folder, not a file"
    else:
        metrics.write_bytes(b"\xff\xfe")
        problem = (
            "not UTF-8 text (byte 0xff at offset 0); expected Prometheus text exposition format"
        )
    out = tmp_path / "score"
    assert main(["qualify", "engine", str(recording), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"aisim: error: {str(metrics)!r}: {problem}\n"
    assert not out.exists()


@pytest.mark.parametrize(
    ("file", "line", "old", "new", "message"),
    [
        # wall_ms 1e308 imported, and qualify engine scored every error as inf % (TPOT's as a
        # 300-digit number) with a numpy RuntimeWarning.
        (
            "grid.csv",
            1,
            "decode,1,64,64,1,4.0",
            "decode,1,64,64,1,1e308",
            "line 2: wall_ms: 1e+308; expected at most 4294967296 ms (2^32 ms, about 49.7 days: "
            "replay's time limit)",
        ),
        # Imported, then qualify engine refused it in the replay config's words
        # ('traffic.source.requests[0].input_length: ...'), naming no file.
        (
            "served-1/requests.csv",
            1,
            "r0,40,",
            "r0,4000000000000,",
            "line 2: prompt_tokens: 4000000000000; expected at most 16777216 tokens (2^24: "
            "replay's limit per request)",
        ),
        (
            "served-1/requests.csv",
            3,
            "49.0;53.0",
            "49.0;5e12",
            "line 4: token_times_ms[3]: 5000000000000.0; expected at most 4294967296 ms (2^32 ms, "
            "about 49.7 days: replay's time limit)",
        ),
        (
            "served-1/steps.csv",
            1,
            "0.0,10.0,1,40,",
            "0.0,10.0,1,4000000000000,",
            "line 2: prefill_tokens: 4000000000000; expected at most 1099511627776 (2^40: "
            "replay's count limit)",
        ),
    ],
)
def test_a_value_past_replay_s_limits_is_refused_at_import(
    tmp_path: Path, file: str, line: int, old: str, new: str, message: str
) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    lines = (plain / file).read_text(encoding="utf-8").splitlines()
    assert old in lines[line]
    lines[line] = lines[line].replace(old, new)
    (plain / file).write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == f"{str(plain / file)!r}: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_qualify_engine_names_a_recording_s_value_past_the_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording's parquet edited past the limits (sidecar hash updated) is named by file,
    row and column, not in the replay config's words."""
    from qualification.datasets import read_table, write_table
    from qualification.engine._schema import SERVED_REQUESTS

    recording = import_plain(EXAMPLE, tmp_path / "rec")
    data = recording / "served-1" / "requests.parquet"
    frame, sidecar = read_table(data, SERVED_REQUESTS)
    columns = {name: frame[name].tolist() for name in SERVED_REQUESTS.column_names}
    columns["output_tokens"][1] = 1 << 25
    write_table(data.parent, SERVED_REQUESTS, columns, sidecar, overwrite=True)
    out = tmp_path / "score"
    assert main(["qualify", "engine", str(recording), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: {str(data)!r}: row 1: output_tokens: 33554432; expected at most 16777216 "
        "tokens (2^24: replay's limit per request)\n"
    )
    assert not out.exists()


def test_qualify_engine_names_a_step_table_that_is_a_file_or_holds_no_grid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --step-table that is a file (not .parquet) or a folder without grid/ was read as
    'PATH/grid/grid_steps.parquet' and refused for that path's missing sidecar."""
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x\n")
    sidecar = recording / "grid" / "grid_steps.parquet.json"
    empty = tmp_path / "empty"
    empty.mkdir()
    expected = "expected an engine recording, its grid/ folder or its grid_steps.parquet"
    out = tmp_path / "o"
    for table, problem in (
        (a_file, "not a folder or a .parquet file"),
        (sidecar, "not a folder or a .parquet file"),
        (empty, "no grid/ folder and no grid_steps.parquet"),
    ):
        argv = ["qualify", "engine", str(recording), "--step-table", str(table), "--out", str(out)]
        assert main(argv) == 2
        assert capsys.readouterr().err == f"aisim: error: {str(table)!r}: {problem}; {expected}\n"
    assert not out.exists()


def test_a_plain_file_over_256_mib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """The import holds a CSV's cells as Python objects (a 50 MiB requests.csv peaked at
    1.4 GB resident): at the 1 GiB trace limit a CSV would need some 28 GB. A sparse file
    refused by its size alone, never read."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    requests = plain / "served-1" / "requests.csv"
    with requests.open("r+b") as handle:
        handle.truncate(256 * 2**20 + 1)
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(requests)!r}: is 268435457 bytes, over the limit of 268435456 (256 MiB)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


@pytest.mark.parametrize(("part", "value", "shown"), [("host", 5, "int"), ("grid", [1, 2], "list")])
def test_a_settings_part_that_is_not_an_object_is_refused_at_import(
    tmp_path: Path, part: str, value: Any, shown: str
) -> None:
    """The published schema says host and grid are objects; "host": 5 imported and qualify
    engine ended in an AttributeError traceback."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings[part] = value
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(plain / 'settings.json')!r}: {part}: expected an object, got {shown}"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_qualify_engine_names_a_sidecar_part_that_is_not_an_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    sidecar = recording / "served-1" / "requests.parquet.json"
    document = json.loads(sidecar.read_text(encoding="utf-8"))
    document["host"] = 5
    sidecar.write_text(json.dumps(document), encoding="utf-8")
    out = tmp_path / "score"
    assert main(["qualify", "engine", str(recording), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: {str(sidecar)!r}: host: expected an object or null, got 5 (int)\n"
    )
    assert not out.exists()


def test_an_identity_with_a_line_break_is_refused(tmp_path: Path) -> None:
    """engine.md prints the identity in its first lines: a line break in engine_version split
    them (and could start a table row of its own)."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings["identity"]["engine_version"] = "0.32\n| evil |"
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(plain / 'settings.json')!r}: identity.engine_version: '0.32\\n| evil |' holds a "
        "control character; expected one line of text"
    )


@pytest.mark.parametrize(
    ("argv", "command", "argument"),
    [
        (["qualify", "engine", "REC", "--out", ""], "qualify engine", "--out"),
        (["qualify", "engine", ""], "qualify engine", "DATASET"),
        (["qualify", "engine-import", "PLAIN", "--out", ""], "qualify engine-import", "--out"),
        (["qualify", "report", "--out", ""], "qualify report", "--out"),
        (["qualify", "mape", "DATA", "--out", ""], "qualify mape", "--out"),
    ],
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    command: str,
    argument: str,
) -> None:
    """Path('') is '.': 'qualify engine REC --out ""' wrote engine.json and the plots into the
    current folder; 'qualify engine ""' read the current folder as a recording."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        f"aisim {command}: error: argument {argument}: expected a path, got an empty string "
        f"(see aisim {command} --help)\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", [".", ".."])
def test_import_over_the_current_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    """'--out . --overwrite' ended in a ValueError traceback ('.' has an empty name); '--out ..'
    in an OSError after moving the parent's files into the staging folder (and back)."""
    here = tmp_path / "work"
    here.mkdir()
    (here / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(here)
    with pytest.raises(ConfigError) as caught:
        import_plain(EXAMPLE, out, overwrite=True)
    assert str(caught.value) == (
        f"{out!r}: is the current folder or a folder above it; the import replaces its --out "
        "folder: give another --out"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert sorted(p.name for p in here.iterdir()) == ["notes.txt"]


def test_import_to_a_relative_folder_beside_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "work"
    here.mkdir()
    monkeypatch.chdir(here)
    assert import_plain(EXAMPLE, "../rec") == Path("../rec")
    assert sorted(p.name for p in (tmp_path / "rec").iterdir()) == ["grid", "served-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec", "work"]


def test_an_unknown_identity_field_is_refused_and_the_known_ones_are_published(
    tmp_path: Path,
) -> None:
    """A misspelt 'weigths' imported and engine.md said 'weights not stated'; the published
    schema did not list weights or draft_shape, which our recorders write."""
    from aisim.config import json_schema

    identity = json_schema("engine-recording")["properties"]["identity"]
    assert list(identity["properties"]) == [
        "engine",
        "engine_version",
        "target",
        "draft",
        "target_shape",
        "draft_shape",
        "weights",
    ]
    assert identity["additionalProperties"] is False
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    settings = json.loads((plain / "settings.json").read_text(encoding="utf-8"))
    settings["identity"]["weigths"] = "bf16"
    (plain / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(plain / 'settings.json')!r}: identity.weigths: unknown field; allowed: engine, "
        "engine_version, target, draft, target_shape, draft_shape, weights"
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # int() and float() took each of these: '4_0' imported as 40, ' 40 ' as 40, the
        # Arabic-Indic digits as 40, '1_0.0' as 10.0.
        (",40,", ",4_0,", "line 2: prompt_tokens: expected an integer, got '4_0'"),
        (",40,", ", 40 ,", "line 2: prompt_tokens: expected an integer, got ' 40 '"),
        (
            ",40,",
            ",\u0664\u0660,",
            "line 2: prompt_tokens: expected an integer, got '\u0664\u0660'",
        ),
        (",10.0,26.0,", ",1_0.0,26.0,", "line 2: first_token_ms: expected a number, got '1_0.0'"),
        (";21.0;", "; 21.0;", "line 2: token_times_ms[1]: expected a number, got ' 21.0'"),
    ],
)
def test_a_number_cell_is_read_strictly(tmp_path: Path, old: str, new: str, message: str) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    requests = plain / "served-1" / "requests.csv"
    lines = requests.read_text(encoding="utf-8").splitlines()
    assert old in lines[1]
    lines[1] = lines[1].replace(old, new, 1)
    requests.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == f"{str(requests)!r}: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


@pytest.mark.parametrize("name", ["cdf_ttft.png", "cdf_e2e.png"])
def test_qualify_engine_refuses_a_folder_at_a_plot_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The CDF plots were not among the outputs checked first: with --overwrite a folder
    named cdf_ttft.png was found after the scoring ('cannot write ...: Is a directory')."""
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    out = tmp_path / "score"
    (out / name).mkdir(parents=True)
    argv = ["qualify", "engine", str(recording), "--out", str(out), "--overwrite"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: --out {str(out / name)!r}: is a folder; give the path of a file to write\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [name]
