"""The serving front end's cost model (vLLM's OpenAI server on the engine's core): hand-derived
step prices, the terms derived from a hand-made probe and an exact-line grid, and bad input
(no vLLM needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from aisim.errors import DataIntegrityError
from aisim.fpm import FrontEndCost, load_frontend_cost
from aisim.fpm._engine_steps import LinearStepCost
from aisim.fpm._served_steps import ServedStepModel
from qualification.engine._recording import StepTable
from qualification.engine.frontend import (
    PROBE_COLUMNS,
    decode_windows,
    derive,
    fit_step_token,
    main,
    read_probe,
)


def _decode_line() -> LinearStepCost:
    """2 + 1 x requests (+ 0 x KV tokens): fitted to three steps exactly on that line (a
    hand-checkable price; a test class cannot subclass the compiled ``StepPrice``)."""
    return LinearStepCost([(1, 0.0, 3.0), (2, 0.0, 4.0), (1, 100.0, 3.0)], "line", "decode")


def _prefill_line() -> LinearStepCost:
    """5 + 0.01 x prompt tokens (+ 0 x tokens^2 / requests), fitted to three steps on it."""
    return LinearStepCost([(1, 100.0, 6.0), (1, 300.0, 8.0), (2, 300.0, 8.0)], "line", "prefill")


def _model(frontend: FrontEndCost | None) -> ServedStepModel:
    model = ServedStepModel(_decode_line(), _prefill_line(), draft_length=0, step_overhead_ms=2.0)
    model.frontend = frontend
    return model


def test_a_three_step_schedule_priced_by_hand() -> None:
    # decode 2 + 1 B; prefill 5 + 0.01 tokens; a mixed step pays the overhead (2) once; the
    # front end adds 1.5 per step + 0.25 per request streaming from it.
    schedule = [(0, 0, 2, 100), (2, 300, 0, 0), (2, 320, 1, 50)]
    bare = [_model(None).price_step(*step) for step in schedule]
    assert bare == pytest.approx([6.0, 4.0, 7.5])  # 5+1; 2+2; 4 + 5.5 - 2
    served = _model(FrontEndCost(1.5, 0.25, 4.0, "hand"))
    priced = [served.price_step(*step) for step in schedule]
    assert priced == pytest.approx([6.0 + 2.0, 4.0 + 2.0, 7.5 + 2.25])
    assert sum(priced) == pytest.approx(23.75)
    assert served.coverage["frontend"] == 3
    assert served.describe()["frontend"] == {
        "step_ms": 1.5,
        "token_ms": 0.25,
        "request_ms": 4.0,
        "source": "hand",
    }


def test_the_step_and_token_terms_are_a_non_negative_line() -> None:
    assert fit_step_token([(1, 3.0), (2, 3.5), (4, 4.5), (8, 6.5)]) == pytest.approx((2.5, 0.5))
    assert fit_step_token([(1, 3.0), (2, 2.0)]) == pytest.approx((2.5, 0.0))  # slope < 0
    # intercept < 0: through the origin, (1 x 0.5 + 2 x 1.5) / (1 + 4)
    assert fit_step_token([(1, 0.5), (2, 1.5)]) == pytest.approx((0.0, 0.7))
    with pytest.raises(DataIntegrityError, match="no decode steps"):
        fit_step_token([])


def _probe_rows() -> list[list[object]]:
    rows: list[list[object]] = []

    def add(kind: str, batch: int, prompt: int, request: int, send: float, times: list[float]):
        for chunk, t in enumerate(times):
            rows.append(
                ["p1", kind, 0, batch, prompt, len(times), request, chunk, t - send, send, "w"]
            )

    add("decode", 1, 10, 0, 0.0, [20.0, 27.0, 34.0])
    add("decode", 2, 10, 0, 0.0, [25.0, 34.0, 43.0, 52.0])
    add("decode", 2, 10, 1, 0.5, [30.0, 39.0, 48.0, 57.0])
    add("ttft", 1, 20, 0, 100.0, [120.0, 125.0])
    add("ttft", 1, 40, 0, 200.0, [230.0, 235.0])
    return rows


def _write_probe(path: Path, rows: list[list[object]]) -> Path:
    pd.DataFrame(rows, columns=list(PROBE_COLUMNS)).to_csv(path, index=False)
    return path


def _exact_table(tmp_path: Path) -> StepTable:
    # Every timed step exactly on decode 2 + 1 B + 0.01 past KV, prefill 5 + 0.02 tokens.
    rows = []
    for batch in (1, 2, 4):
        for per in (8, 16, 32):
            kv = batch * per
            rows.append(("decode", batch, kv, batch, 2.0 + batch + 0.01 * kv))
    for batch in (1, 2):
        for per in (16, 32, 64):
            tokens = batch * per
            rows.append(("prefill", batch, 0, tokens, 5.0 + 0.02 * tokens))
    frame = pd.DataFrame(
        [
            {
                "phase": phase,
                "point_id": f"{phase}-b{batch}-t{kv or tokens}",
                "batch_size": batch,
                "total_kv_tokens": kv,
                "scheduled_tokens": tokens,
                "num_draft_tokens": 0,
                "warmup": False,
                "wall_ms": ms,
            }
            for phase, batch, kv, tokens, ms in rows
        ]
    )
    return StepTable(tmp_path, frame, {"engine_settings": {"platform": "cpu"}})


def test_decode_windows_keep_the_steps_where_the_whole_batch_decodes(tmp_path: Path) -> None:
    probe = read_probe(_write_probe(tmp_path / "probe.csv", _probe_rows()))
    windows = decode_windows(probe)
    # batch 1: chunks 20, 27, 34 -> tokens 1, 2 in 14 ms; batch 2: window 30..52 (last first
    # token, first last token): request 0 streams 34, 43, 52 (tokens 2, 3), request 1 30, 39,
    # 48 (tokens 1, 2), 18 ms each.
    assert windows == [
        {"batch": 1, "prompt_tokens": 10, "tokens": [1, 2], "served_ms": pytest.approx(14.0)},
        {"batch": 2, "prompt_tokens": 10, "tokens": [2, 3], "served_ms": pytest.approx(18.0)},
        {"batch": 2, "prompt_tokens": 10, "tokens": [1, 2], "served_ms": pytest.approx(18.0)},
    ]


def test_terms_derived_by_hand_from_a_probe_and_an_exact_grid(tmp_path: Path) -> None:
    probe = read_probe(_write_probe(tmp_path / "probe.csv", _probe_rows()))
    figures = derive(probe, _exact_table(tmp_path))
    # B = 1: served 7 ms/step; grid at past KV 10, 11: 3.10, 3.11 -> excess 7 - 3.105 = 3.895.
    # B = 2: served 36 / 4 = 9; grid at past KV 22, 24, 20, 22: 4.22 mean -> excess 4.78.
    # Line through (1, 3.895), (2, 4.78): token 0.885, step 3.01.
    assert [row["excess_ms"] for row in figures["decode"]] == pytest.approx([3.895, 4.78])
    terms = figures["terms"]
    assert terms["step_ms"] == pytest.approx(3.01)
    assert terms["token_ms"] == pytest.approx(0.885)
    # TTFT 20 at P = 20: grid 5.4 + 3.01 + 0.885 -> excess 10.705; 30 at P = 40: 5.8 + 3.895
    # -> 20.305; mean 15.505.
    assert [row["excess_ms"] for row in figures["ttft"]] == pytest.approx([10.705, 20.305])
    assert terms["request_ms"] == pytest.approx(15.505)


def test_the_command_writes_the_model_once(tmp_path: Path, capsys) -> None:
    recording = tmp_path / "rec"
    (recording / "frontend").mkdir(parents=True)
    _write_probe(recording / "frontend" / "probe.csv.gz", _probe_rows())
    # A grid folder the loader reads: reuse the exact table through its parquet + sidecar.
    from qualification.datasets import write_table
    from qualification.engine._schema import GRID_STEPS

    table = _exact_table(tmp_path).steps
    full = table.assign(
        context_tokens=0,
        repetition=0,
        start_ms=[float(i) for i in range(len(table))],
        cpu_ms=None,
        accepted_tokens=0,
    )
    (recording / "grid").mkdir()
    write_table(
        recording / "grid",
        GRID_STEPS,
        {column.name: full[column.name].tolist() for column in GRID_STEPS.columns},
        {"engine_settings": {"platform": "cpu"}},
    )
    assert main([str(recording)]) == 0
    written = recording / "frontend" / "frontend_model.json"
    cost = load_frontend_cost(written)
    assert cost is not None
    assert (cost.step_ms, cost.token_ms, cost.request_ms) == pytest.approx((3.01, 0.885, 15.505))
    assert json.loads(written.read_text())["derived_from"]["probe"] == "rec/frontend/probe.csv.gz"
    assert main([str(recording)]) == 2  # not overwritten
    assert "exists; pass --overwrite" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda rows: [r[:8] + ["x"] + r[9:] for r in rows], "row 0: t_ms: 'x' is not a finite"),
        (lambda rows: [r[:8] + ["nan"] + r[9:] for r in rows], "row 0: t_ms: 'nan' is not"),
        (lambda rows: [r[:1] + ["prefill"] + r[2:] for r in rows], "row 0: kind: 'prefill'"),
        (lambda rows: rows[:1] + rows[2:], "row 0: chunk: the request's chunks are not 0..2"),
        (
            lambda rows: [rows[0], rows[1][:8] + [1.0] + rows[1][9:], *rows[2:]],
            "row 1: t_ms: 1 is before the request's previous chunk",
        ),
        (lambda rows: [r[:3] + [0] + r[4:] for r in rows], "row 0: batch: '0' is not an integer"),
    ],
)
def test_a_bad_probe_is_one_line_naming_row_and_field(tmp_path: Path, change, message) -> None:
    path = _write_probe(tmp_path / "probe.csv", change(_probe_rows()))
    with pytest.raises(DataIntegrityError, match=message) as caught:
        read_probe(path)
    assert "\n" not in str(caught.value) and "probe.csv" in str(caught.value)


def test_a_probe_with_an_unknown_column_or_none_is_refused(tmp_path: Path) -> None:
    frame = pd.DataFrame(_probe_rows(), columns=list(PROBE_COLUMNS)).assign(extra=1)
    frame.to_csv(tmp_path / "probe.csv", index=False)
    with pytest.raises(DataIntegrityError, match="unknown column 'extra'"):
        read_probe(tmp_path / "probe.csv")
    with pytest.raises(DataIntegrityError, match="missing; the front-end model needs the probe"):
        read_probe(tmp_path / "absent.csv")


def _model_file(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "frontend_model.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"schema": {"name": "other", "version": 1}}, "schema: .* is not 'aisim.engine_frontend'"),
        ({"schema": {"name": "aisim.engine_frontend", "version": 2}}, "schema.version: 2"),
        ({"schema": {"name": "aisim.engine_frontend", "version": 1}}, "terms: missing"),
        (
            {
                "schema": {"name": "aisim.engine_frontend", "version": 1},
                "terms": {"step_ms": 1, "token_ms": -0.5, "request_ms": 2},
            },
            "terms.token_ms: -0.5 is not a finite number of ms >= 0",
        ),
        (
            {
                "schema": {"name": "aisim.engine_frontend", "version": 1},
                "terms": {"step_ms": 1, "token_ms": 0.5},
            },
            "terms.request_ms: None is not a finite number",
        ),
        (
            {
                "schema": {"name": "aisim.engine_frontend", "version": 1},
                "terms": {"step_ms": 1, "token_ms": 0.5, "request_ms": 1, "per_byte": 2},
            },
            "terms.per_byte: unknown; allowed: step_ms, token_ms, request_ms",
        ),
        ([1, 2], "a JSON object expected, got list"),
    ],
)
def test_a_bad_frontend_model_is_one_line_naming_the_field(tmp_path: Path, data, message) -> None:
    with pytest.raises(DataIntegrityError, match=message) as caught:
        load_frontend_cost(_model_file(tmp_path, data))
    assert "\n" not in str(caught.value) and "frontend_model.json" in str(caught.value)


def test_no_frontend_model_is_an_in_process_recording(tmp_path: Path) -> None:
    assert load_frontend_cost(tmp_path / "absent.json") is None
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(DataIntegrityError, match="unreadable front-end model"):
        load_frontend_cost(tmp_path / "bad.json")


def test_a_served_recording_is_scored_with_its_frontend_model_by_hand(tmp_path: Path) -> None:
    """docs/examples/engine-recording (prices derived by hand in test_engine_plain) with a
    front end of 1.0 ms per step, 0.5 ms per streaming request and 2.0 ms per request: every
    request reaches the engine 2 ms after the client sent it. r0 (at 2): prefill 8.333 + 1.5
    -> ends 11.833, TTFT 11.833 from the client's 0. r1 (sent at 5, during r0's prefill: its
    2 ms on the engine's core are the next step's too; at the engine at 7) joins the next, mixed,
    step: 8.75 + 1 + 0.5 x 2 + 2 = 12.75 -> 24.583, TTFT 19.583. r0's last and r1's last token:
    a decode step of two (5.0, clamped to the table's context 64) + 2.0 -> 31.583: E2E 31.583
    and 26.583. r2 (sent at 30, during that step, which is the engine's last before r2 reaches
    it at 32: it shared 31.583 - 30 = 1.583 ms with it): prefill 9.167 + 1.5 + 1.583 -> 44.25,
    TTFT 14.25; three decode steps of 4.0 + 1.5 -> 60.75, E2E 30.75."""
    from qualification.engine import load_recording, score_recording
    from qualification.engine._plain import import_plain

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "engine-recording"
    directory = import_plain(example, tmp_path / "rec")
    (directory / "frontend").mkdir()
    _model_file(
        directory / "frontend",
        {
            "schema": {"name": "aisim.engine_frontend", "version": 1},
            "terms": {"step_ms": 1.0, "token_ms": 0.5, "request_ms": 2.0},
        },
    )
    recording = load_recording(directory)
    assert recording.frontend is not None and recording.grid is not None
    report, _ = score_recording(recording, recording.grid)
    rows = report["runs"][0]["requests"]
    assert rows["predicted_ttft_ms"] == pytest.approx([11 + 5 / 6, 19 + 7 / 12, 14.25])
    assert rows["predicted_e2e_ms"] == pytest.approx([31 + 7 / 12, 26 + 7 / 12, 30.75])
    assert report["frontend"]["request_ms"] == 2.0
    assert report["runs"][0]["step_model"]["coverage"]["frontend"] == 7
    # The same replay without the front end (the hand-derived figures of the plain example).
    bare = report["runs"][0]["without_frontend"]["ttft"]["mean_predicted_ms"]
    assert bare == pytest.approx((8 + 8 / 24 + 17 + 1 / 12 - 5 + 9 + 1 / 6) / 3)


def test_every_committed_frontend_model_is_what_its_probe_and_grid_give() -> None:
    """The committed terms are re-derived from the committed probe and grid they name (never
    edited by hand, never from the served runs), and the files are the ones hashed; a pooled
    model (``derived_from.probes``, ``qualification.engine.frontend_cpu``) from the probes'
    CPU accounting it names, none of them the recording's own."""
    import hashlib

    from qualification.engine import frontend_cpu
    from qualification.engine.frontend import build

    engine = Path(__file__).resolve().parents[2] / "evidence" / "engine"
    models = sorted(engine.glob("*/frontend/frontend_model.json"))
    assert len(models) >= 7
    for path in models:
        committed = json.loads(path.read_text(encoding="utf-8"))
        source = committed["derived_from"]
        if "probes" in source:
            recording = path.parent.parent
            names = frontend_cpu.model_probes(committed)
            assert recording.name not in names, path
            for entry in source["probes"]:
                for key in ("probe", "probe_cpu"):
                    digest = hashlib.sha256((engine / entry[key]).read_bytes()).hexdigest()
                    assert digest == entry[f"{key}_sha256"], path
            rebuilt = frontend_cpu.build(recording, [engine / name for name in names])
            assert rebuilt["terms"] == committed["terms"], path
            continue
        probe, grid = engine / source["probe"], engine / source["grid"]
        assert hashlib.sha256(probe.read_bytes()).hexdigest() == source["probe_sha256"], path
        assert hashlib.sha256(grid.read_bytes()).hexdigest() == source["grid_sha256"], path
        rebuilt = build(path.parent.parent, probe, grid.parent.parent)
        assert rebuilt["terms"] == committed["terms"], path


def test_the_host_speed_of_two_grids_is_the_median_ratio_at_common_points() -> None:
    """Table: p1 timed 2 and 4 ms (a warm-up step of 100 ms left out: median 3), p2 10 ms, p3
    only here; reference: p1 2 ms, p2 5 ms, p4 only there. Ratios at p1, p2: 1.5 and 2.0 ->
    median 1.75 over 2 points; tables with no point in common have no ratio."""
    from qualification.engine.frontend_transfer import host_speed

    def table(rows: list[tuple[str, float, bool]]) -> StepTable:
        steps = pd.DataFrame(rows, columns=["point_id", "wall_ms", "warmup"])
        return StepTable(Path("t"), steps, {})

    mine = table(
        [
            ("p1", 100.0, True),
            ("p1", 2.0, False),
            ("p1", 4.0, False),
            ("p2", 10.0, False),
            ("p3", 1.0, False),
        ]
    )
    reference = table([("p1", 2.0, False), ("p2", 5.0, False), ("p4", 7.0, False)])
    assert host_speed(mine, reference) == (1.75, 2)
    with pytest.raises(DataIntegrityError, match="no grid point timed in both"):
        host_speed(table([("p3", 1.0, False)]), reference)


@pytest.mark.parametrize("module", ["frontend", "frontend_cpu"])
def test_a_folder_at_out_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], module: str
) -> None:
    """With --overwrite a folder at --out passed the 'exists' check and the temp file's rename
    onto it ended in an IsADirectoryError traceback, after the model was built."""
    import importlib

    tool = importlib.import_module(f"qualification.engine.{module}")
    out = tmp_path / "frontend_model.json"
    (out / "inside").mkdir(parents=True)
    # No recording at all: the output is checked first, so its error is the one shown.
    assert tool.main([str(tmp_path / "no-recording"), "--out", str(out), "--overwrite"]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {str(out)!r}: is a folder; give the path of a file to write\n"
    )
