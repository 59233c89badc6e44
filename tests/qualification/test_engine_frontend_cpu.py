"""The front end of vllm serve from the probe's CPU accounting: the terms of a hand-made probe
(two decode batches and one single request) by hand, a pooled model's provenance, bad input
(no vLLM needed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from aisim.errors import DataIntegrityError
from aisim.fpm import load_frontend_cost
from qualification.engine.frontend import PROBE_COLUMNS, read_probe
from qualification.engine.frontend_cpu import (
    CPU_COLUMNS,
    batch_costs,
    fit_terms,
    main,
    model_probes,
    read_probe_cpu,
)


def _probe_rows() -> list[list[object]]:
    """decode B = 1 and B = 2 of 4 output tokens each, one ttft request of 2 tokens."""
    rows: list[list[object]] = []

    def add(kind: str, batch: int, request: int, times: list[float]) -> None:
        for chunk, t in enumerate(times):
            rows.append([kind_pass, kind, 0, batch, 8, len(times), request, chunk, t, 0.0, "w"])

    kind_pass = "p1"
    add("decode", 1, 0, [10.0, 20.0, 30.0, 40.0])
    add("decode", 2, 0, [12.0, 24.0, 36.0, 48.0])
    add("decode", 2, 1, [12.5, 24.5, 36.5, 48.5])
    add("ttft", 1, 0, [9.0, 15.0])
    return rows


def _cpu_rows() -> list[list[object]]:
    """Per batch: API server, engine core, client, worker CPU ms; the batch's wall time.

    decode B = 1: front 6 + 4 + 2 = 12 over 4 steps = 3.0 ms per step (worker 40);
    decode B = 2: front 10 + 5 + 3 = 18 over 4 steps = 4.5 ms per step (worker 50);
    ttft: front 5 + 3 + 2 = 10 over 2 steps (worker 6)."""
    rows: list[list[object]] = []
    for kind, batch, front, worker, wall in (
        ("decode", 1, (6.0, 4.0, 2.0), 40.0, 52.5),
        ("decode", 2, (10.0, 5.0, 3.0), 50.0, 68.0),
        ("ttft", 1, (5.0, 3.0, 2.0), 6.0, 16.0),
    ):
        names = ("python", "VLLM::EngineCor", "client", "VLLM::Worker")
        for pid, (name, cpu) in enumerate(zip(names, (*front, worker), strict=True), start=1):
            rows.append(["p1", kind, 0, batch, 8, name, pid, cpu, wall])
    return rows


def _write(folder: Path, probe: list[list[object]], cpu: list[list[object]]) -> Path:
    (folder / "frontend").mkdir(parents=True)
    pd.DataFrame(probe, columns=list(PROBE_COLUMNS)).to_csv(
        folder / "frontend" / "probe.csv.gz", index=False
    )
    pd.DataFrame(cpu, columns=list(CPU_COLUMNS)).to_csv(
        folder / "frontend" / "probe-cpu.csv.gz", index=False
    )
    return folder


def test_two_decode_batches_and_one_request_give_the_exact_line(tmp_path: Path) -> None:
    folder = _write(tmp_path / "rec", _probe_rows(), _cpu_rows())
    batches = batch_costs(
        read_probe_cpu(folder / "frontend" / "probe-cpu.csv.gz"),
        read_probe(folder / "frontend" / "probe.csv.gz"),
    )
    by_kind = {(row.kind, row.batch): row for row in batches.itertuples()}
    assert by_kind[("decode", 1)].front_ms == 12.0 and by_kind[("decode", 1)].steps == 4
    assert by_kind[("decode", 2)].front_ms == 18.0 and by_kind[("decode", 2)].worker_ms == 50.0
    assert by_kind[("ttft", 1)].front_ms == 10.0 and by_kind[("ttft", 1)].steps == 2
    assert by_kind[("decode", 2)].cpu_ms == 68.0 and by_kind[("decode", 2)].wall_ms == 68.0
    # per step 3.0 at B = 1 and 4.5 at B = 2: the line 1.5 + 1.5 B; the request alone pays
    # 10 - 2 x (1.5 + 1.5) = 4.0 besides its two steps.
    assert fit_terms(batches) == pytest.approx({"step_ms": 1.5, "token_ms": 1.5, "request_ms": 4.0})


def test_a_pooled_model_names_every_probe_it_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _write(tmp_path / "a", _probe_rows(), _cpu_rows())
    # the second probe: every front-end CPU figure doubled (per step 6.0 and 9.0, request 20)
    doubled = [
        [*row[:7], float(str(row[7])) * (1 if row[5] == "VLLM::Worker" else 2), row[8]]
        for row in _cpu_rows()
    ]
    second = _write(tmp_path / "b", _probe_rows(), doubled)
    target = tmp_path / "c"
    target.mkdir()
    assert main([str(target), "--from", str(first), "--from", str(second)]) == 0
    written = target / "frontend" / "frontend_model.json"
    cost = load_frontend_cost(written)
    assert cost is not None
    # pooled points (1, 3), (2, 4.5), (1, 6), (2, 9): mean B 1.5, mean y 5.625, slope
    # ((-.5)(-2.625) + (.5)(-1.125) + (-.5)(.375) + (.5)(3.375)) / 1 = 2.25, intercept
    # 5.625 - 2.25 x 1.5 = 2.25; requests 10 - 2 x 4.5 = 1 and 20 - 9 = 11: mean 6.
    assert (cost.step_ms, cost.token_ms, cost.request_ms) == pytest.approx((2.25, 2.25, 6.0))
    model = json.loads(written.read_text())
    assert model_probes(model) == ["a", "b"]
    assert model["derived_from"]["probes"][1]["probe_cpu"] == "b/frontend/probe-cpu.csv.gz"
    from qualification.uncertainty._coverage import frontend_borrowed

    assert frontend_borrowed(target) and not frontend_borrowed(first)
    assert main([str(target), "--from", str(first)]) == 2  # not overwritten
    assert "exists; pass --overwrite" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda rows: rows[1].__setitem__(7, "nan"), r"row 1: cpu_ms: 'nan' is not a finite"),
        (lambda rows: rows[0].__setitem__(1, "warm"), r"row 0: kind: 'warm' is not one of"),
        (lambda rows: rows[3].__setitem__(5, "python"), r"row 0: process: the batch needs"),
        (lambda rows: rows[2].__setitem__(3, "x"), r"row 2: batch: 'x' is not an integer >= 1"),
    ],
)
def test_a_bad_cpu_file_is_one_line_naming_row_and_field(
    tmp_path: Path,
    change: Callable[[list[list[object]]], None],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cpu = _cpu_rows()
    change(cpu)
    folder = _write(tmp_path / "rec", _probe_rows(), cpu)
    with pytest.raises(DataIntegrityError, match=message):
        read_probe_cpu(folder / "frontend" / "probe-cpu.csv.gz")
    assert main([str(tmp_path / "out"), "--from", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not (tmp_path / "out" / "frontend" / "frontend_model.json").exists()


def test_a_cpu_batch_the_probe_lacks_or_an_unknown_column_is_refused(tmp_path: Path) -> None:
    cpu = [row[:4] + [16] + row[5:] if row[1] == "ttft" else row for row in _cpu_rows()]
    folder = _write(tmp_path / "rec", _probe_rows(), cpu)
    with pytest.raises(DataIntegrityError, match=r"row 8: the CPU batch .*ttft.* no requests"):
        batch_costs(
            read_probe_cpu(folder / "frontend" / "probe-cpu.csv.gz"),
            read_probe(folder / "frontend" / "probe.csv.gz"),
        )
    path = folder / "frontend" / "probe-cpu.csv.gz"
    pd.DataFrame([[*r, 1] for r in _cpu_rows()], columns=[*CPU_COLUMNS, "extra"]).to_csv(
        path, index=False
    )
    with pytest.raises(DataIntegrityError, match=r"unknown column 'extra'"):
        read_probe_cpu(path)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({}, r"derived_from: missing"),
        ({"derived_from": {"probes": []}}, r"derived_from.probes: \[\] is not a non-empty list"),
        ({"derived_from": {"probes": [{"probe": 3}]}}, r"derived_from.probes\[0\].probe: 3 is"),
        ({"derived_from": {"grid": "g"}}, r"derived_from.probe: None is not a probe path"),
    ],
)
def test_a_model_without_its_probes_named_is_refused(
    model: dict[str, object], message: str
) -> None:
    with pytest.raises(DataIntegrityError, match=message):
        model_probes(model)
    assert model_probes({"derived_from": {"probe": "rec/frontend/probe.csv.gz"}}) == ["rec"]


def test_the_command_needs_a_recording_and_a_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err == "error: RECORDING: required unless --evaluate\n"
    assert main([str(tmp_path / "rec")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --from: name at least one recording") and err.count("\n") == 1
    assert not (tmp_path / "rec").exists()
