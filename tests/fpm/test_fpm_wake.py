"""The first engine step after an idle spell (vLLM CPU): the wake model's file, its carry-over to
a step table's speed, and which steps pay it; every expected number derived by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aisim.errors import DataIntegrityError
from aisim.fpm import WAKE_FILE, WakeCost, load_wake_cost, served_step_model
from aisim.fpm._engine_steps import LinearStepCost
from aisim.fpm._served_steps import ServedStepModel


def _decode_line() -> LinearStepCost:
    """2 + 1 x requests (+ 0 x past KV), fitted to three steps exactly on it."""
    return LinearStepCost([(1, 0.0, 3.0), (2, 0.0, 4.0), (1, 100.0, 3.0)], "line", "decode")


def _prefill_line() -> LinearStepCost:
    """5 + 0.01 x prompt tokens (+ 0 x tokens^2 / requests), fitted to three steps on it."""
    return LinearStepCost([(1, 100.0, 6.0), (1, 300.0, 8.0), (2, 300.0, 8.0)], "line", "prefill")


def test_the_probe_s_wake_cost_is_carried_to_the_table_s_speed() -> None:
    # The table prices the probe's reference steps at 5 + 0.32 = 5.32 and 5 + 2 = 7 ms; the
    # probe ran them in 2.66 and 3.5 ms: the table is 2 x slower, so 1.5 ms becomes 3 ms.
    wake = WakeCost(1.5, [(1, 32, 2.66), (1, 200, 3.5)], "hand")
    cost, ratio = wake.scaled(_prefill_line(), {})
    assert ratio == pytest.approx(2.0)
    assert cost == pytest.approx(3.0)
    # Three references: the median ratio (5.32 / 5.32 = 1, 7 / 3.5 = 2, 7 / 1.75 = 4 -> 2).
    three = WakeCost(1.0, [(1, 32, 5.32), (1, 200, 3.5), (1, 200, 1.75)], "hand")
    assert three.scaled(_prefill_line(), {}) == pytest.approx((2.0, 2.0))


def test_only_a_step_with_prompt_work_and_no_decode_pays_the_wake_cost() -> None:
    model = ServedStepModel(_decode_line(), _prefill_line(), draft_length=0, step_overhead_ms=2.0)
    model.wake = WakeCost(1.5, [(1, 32, 2.66), (1, 200, 3.5)], "hand")
    model.wake_ms, model.wake_scale = 3.0, 2.0
    schedule = [(0, 0, 1, 100), (2, 300, 0, 0), (2, 320, 1, 50), (0, 0, 2, 300)]
    prices = [model.price_step(*step) for step in schedule]
    # 5 + 1 + 3 (wake); decode 2 + 2; mixed 4 + 5.5 - 2 (no wake); 5 + 3 + 3 (wake).
    assert prices == pytest.approx([9.0, 4.0, 7.5, 11.0])
    assert model.coverage["wake"] == 2
    assert model.describe()["wake"] == {
        "probe_ms": 1.5,
        "reference_prefill": [[1, 32, 2.66], [1, 200, 3.5]],
        "source": "hand",
        "wake_ms": 3.0,
        "speed_ratio": 2.0,
    }


def _rows(cached: bool) -> list[dict[str, object]]:
    """A CPU step table by hand: decode B = 1, 2 at 3 and 4 ms; prefill (new token counts)
    1 x 100, 1 x 300 and 2 x 150 tokens at 6, 8 and 8 ms, on the line 5 + 0.01 x tokens;
    ``cached``: the same steps again 1 ms cheaper (creation cost 1, cached line 4 + 0.01 x
    tokens)."""
    rows: list[dict[str, object]] = []
    for batch, latency in ((1, 3.0), (2, 4.0)):
        rows.append(
            {
                "phase": "decode",
                "point_id": f"decode-b{batch}",
                "batch_size": batch,
                "total_kv_tokens": 16 * batch,
                "scheduled_tokens": batch,
                "num_draft_tokens": 0,
                "warmup": False,
                "wall_ms": latency,
            }
        )
    phases = (("prefill", 0.0), ("prefill-cached", 1.0)) if cached else (("prefill", 0.0),)
    for phase, less in phases:
        for batch, tokens, latency in ((1, 100, 6.0), (1, 300, 8.0), (2, 300, 8.0)):
            rows.append(
                {
                    "phase": phase,
                    "point_id": f"{phase}-b{batch}-c{tokens // batch}",
                    "batch_size": batch,
                    "total_kv_tokens": 0,
                    "scheduled_tokens": tokens,
                    "num_draft_tokens": 0,
                    "warmup": False,
                    "wall_ms": latency - less,
                }
            )
    return rows


def test_the_table_model_takes_the_wake_cost_on_cpu_with_cached_prefill_steps_only() -> None:
    wake = WakeCost(1.0, [(1, 100, 2.5)], "hand")  # the cached line prices 1 x 100 at 5: 2 x
    cpu = served_step_model(_rows(True), {"platform": "cpu"}, {}, 0, where="hand", wake=wake)
    assert cpu.creation_ms == pytest.approx(1.0)
    assert (cpu.wake_ms, cpu.wake_scale) == pytest.approx((2.0, 2.0))
    # A prompt of 200 tokens alone, a count new to the process: the cached line 4 + 0.01 x 200
    # = 6, + creation 1, + the wake cost 2.
    assert cpu.price_step(0, 0, 1, 200) == pytest.approx(9.0)
    assert cpu.price_step(0, 0, 1, 200) == pytest.approx(8.0)  # cached now
    # Without cached prefill steps the prefill price carries creation: no wake cost.
    uncached = served_step_model(_rows(False), {"platform": "cpu"}, {}, 0, where="hand", wake=wake)
    assert uncached.wake is None and uncached.price_step(0, 0, 1, 200) == pytest.approx(7.0)
    cuda = served_step_model(
        _rows(True), {"platform": "cuda", "enforce_eager": True}, {}, 0, where="hand", wake=wake
    )
    assert cuda.wake is None and cuda.wake_ms == 0.0


def _wake_file(tmp_path: Path, data: object) -> Path:
    path = tmp_path / WAKE_FILE
    path.write_text(json.dumps(data))
    return path


GOOD = {
    "schema": {"name": "aisim.engine_wake", "version": 1},
    "terms": {"wake_ms": 1.25, "reference_prefill": [[1, 32, 4.0], [1, 200, 10.0]]},
    "source": "probe",
}


def test_a_wake_model_file_round_trips(tmp_path: Path) -> None:
    cost = load_wake_cost(_wake_file(tmp_path, GOOD))
    assert cost is not None
    assert (cost.probe_ms, cost.reference, cost.source) == (
        1.25,
        [(1, 32, 4.0), (1, 200, 10.0)],
        "probe",
    )
    assert load_wake_cost(tmp_path / "absent.json") is None


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        ({"wake_ms": -1, "reference_prefill": [[1, 32, 4.0]]}, "terms.wake_ms: -1 is not"),
        ({"wake_ms": 1}, "terms.reference_prefill: None is not a non-empty list"),
        (
            {"wake_ms": 1, "reference_prefill": [[1, 32, 0.0]]},
            r"terms.reference_prefill\[0\]: \[1, 32, 0.0\] is not",
        ),
        (
            {"wake_ms": 1, "reference_prefill": [[1, 32.5, 4.0]]},
            r"terms.reference_prefill\[0\]",
        ),
        (
            {"wake_ms": 1, "reference_prefill": [[1, 32, 4.0]], "x": 2},
            "terms.x: unknown; allowed: wake_ms, reference_prefill",
        ),
    ],
)
def test_a_bad_wake_model_is_one_line_naming_the_field(
    tmp_path: Path, terms: object, message: str
) -> None:
    data = {"schema": {"name": "aisim.engine_wake", "version": 1}, "terms": terms}
    with pytest.raises(DataIntegrityError, match=message) as caught:
        load_wake_cost(_wake_file(tmp_path, data))
    assert "\n" not in str(caught.value) and WAKE_FILE in str(caught.value)


def test_a_wake_model_of_another_schema_or_unreadable_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataIntegrityError, match="schema: .* is not 'aisim.engine_wake'"):
        load_wake_cost(_wake_file(tmp_path, {**GOOD, "schema": {"name": "other"}}))
    (tmp_path / WAKE_FILE).write_text("{")
    with pytest.raises(DataIntegrityError, match="unreadable wake model"):
        load_wake_cost(tmp_path / WAKE_FILE)


def test_replay_s_pass_pays_the_admission_per_prompt_a_recorded_step_does_not() -> None:
    from aisim.fpm import ForwardPassMetrics

    model = ServedStepModel(_decode_line(), _prefill_line(), draft_length=0, step_overhead_ms=2.0)
    model.admit = WakeCost(0.25, [(1, 100, 3.0)], "hand")
    model.admit_ms, model.admit_scale = 0.5, 2.0
    # Two prompts of 50 tokens beside two decodes: the step 4 + 6 - 2 = 8 ms; replay's pass
    # adds 2 x 0.5 for the two admissions before it, the recorded step's price does not.
    assert model.price_step(2, 300, 2, 100) == pytest.approx(8.0)
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 300, 2, 100)) == pytest.approx(
        9.0
    )
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 300)) == pytest.approx(4.0)
    assert model.coverage["admit"] == 1
    assert model.describe()["admit"] == {
        "probe_ms": 0.25,
        "reference_prefill": [[1, 100, 3.0]],
        "source": "hand",
        "admit_ms": 0.5,
        "speed_ratio": 2.0,
    }


def test_the_table_model_takes_the_admission_like_the_wake_cost() -> None:
    admit = WakeCost(0.25, [(1, 100, 2.5)], "hand")  # the cached line prices 1 x 100 at 5: 2 x
    cpu = served_step_model(_rows(True), {"platform": "cpu"}, {}, 0, where="hand", admit=admit)
    assert (cpu.admit_ms, cpu.admit_scale) == pytest.approx((0.5, 2.0))
    uncached = served_step_model(
        _rows(False), {"platform": "cpu"}, {}, 0, where="hand", admit=admit
    )
    assert uncached.admit is None and uncached.admit_ms == 0.0


def test_an_admission_model_file_round_trips_and_a_bad_one_names_its_field(tmp_path: Path) -> None:
    from aisim.fpm import ADMIT_FILE, load_admit_cost

    path = tmp_path / ADMIT_FILE
    good = {
        "schema": {"name": "aisim.engine_admit", "version": 1},
        "terms": {"admit_ms": 0.3, "reference_prefill": [[1, 32, 4.0]]},
    }
    path.write_text(json.dumps(good))
    cost = load_admit_cost(path)
    assert cost is not None and (cost.probe_ms, cost.reference) == (0.3, [(1, 32, 4.0)])
    path.write_text(json.dumps({**good, "terms": {"admit_ms": "x", "reference_prefill": []}}))
    with pytest.raises(DataIntegrityError, match="terms.admit_ms: 'x' is not a finite") as caught:
        load_admit_cost(path)
    assert "\n" not in str(caught.value) and ADMIT_FILE in str(caught.value)
    path.write_text(json.dumps({**good, "schema": {"name": "aisim.engine_wake", "version": 1}}))
    with pytest.raises(DataIntegrityError, match="is not 'aisim.engine_admit'"):
        load_admit_cost(path)


def _first_decode_rows() -> list[dict[str, object]]:
    """A CPU step table without cached prefill steps, in the order it was timed: per decode
    point a warm-up step (the batch's first decode step) then a timed one. B = 1 at contexts 16
    and 64 (token count 1: new, then run before), B = 2 likewise (count 2), and the prefill
    steps of ``_rows(False)`` (1 x 100, 1 x 300, 2 x 150 at 6, 8, 8 ms: 5 + 0.01 x tokens)."""
    rows: list[dict[str, object]] = []
    # (batch, context, warm-up ms, timed ms): first decode steps at a new count 3.0 and 2.0 ms
    # dearer than the next step, at a count run before 0.5 and 0.3 ms.
    for batch, context, warm, timed in (
        (1, 16, 6.0, 3.0),
        (1, 64, 3.5, 3.0),
        (2, 16, 6.0, 4.0),
        (2, 64, 4.3, 4.0),
    ):
        for warmup, latency in ((True, warm), (False, timed)):
            rows.append(
                {
                    "phase": "decode",
                    "point_id": f"decode-b{batch}-c{context}",
                    "batch_size": batch,
                    "total_kv_tokens": context * batch,
                    "scheduled_tokens": batch,
                    "num_draft_tokens": 0,
                    "warmup": warmup,
                    "wall_ms": latency,
                }
            )
    return rows + [row for row in _rows(False) if row["phase"] == "prefill"]


def test_creation_from_the_first_decode_step_at_a_new_count_by_hand() -> None:
    from aisim.fpm._engine_step_files import first_decode_creation_ms

    rows = _first_decode_rows()
    # New counts: median(3.0, 2.0) = 2.5; counts run before: median(0.5, 0.3) = 0.4; 2.1 ms.
    assert first_decode_creation_ms(rows) == pytest.approx(2.1)
    assert first_decode_creation_ms(rows, scale=2.0) == pytest.approx(4.2)
    # Rows given out of order are taken in the order they were timed (``start_ms``).
    timed = [dict(row, start_ms=float(index)) for index, row in enumerate(rows)]
    assert first_decode_creation_ms(timed[::-1]) == pytest.approx(2.1)
    # No warm-up step at a count run before (or none at a new one): unknown.
    assert first_decode_creation_ms(rows[:2] + rows[4:6]) is None
    assert first_decode_creation_ms(_rows(False)) is None
    # Never below 0: first steps at new counts no dearer than the others.
    cheap = [dict(row, wall_ms=3.0) if row["point_id"] == "decode-b1-c16" else row for row in rows]
    cheap = [dict(row, wall_ms=4.0) if row["point_id"] == "decode-b2-c16" else row for row in cheap]
    assert first_decode_creation_ms(cheap) == 0.0


def test_a_table_without_cached_prefill_steps_prices_creation_from_its_decode_steps() -> None:
    wake = WakeCost(1.0, [(1, 100, 2.5)], "hand")
    model = served_step_model(
        _first_decode_rows(), {"platform": "cpu"}, {}, 0, where="hand", wake=wake, admit=wake
    )
    assert model.creation_ms == pytest.approx(2.1)
    assert model.describe()["creation_source"] == "first decode step at a new count"
    # The prefill line through the new-count steps less 2.1 ms: 2.9 + 0.01 x tokens. The
    # probes are carried to its speed: it prices their 1 x 100 reference at 3.9 ms against
    # 2.5, so 1.56 x: wake and admission 1.56 ms each.
    assert (model.wake_ms, model.wake_scale) == pytest.approx((1.56, 1.56))
    assert (model.admit_ms, model.admit_scale) == pytest.approx((1.56, 1.56))
    # A prompt of 200 tokens alone at a count new to the process pays creation and the wake
    # cost (2.9 + 2 + 2.1 + 1.56 = 8.56), the same count again only the wake cost (6.46); with
    # a decode request beside it no wake cost: decode 2 + 1 = 3, prefill 4.9, less the step
    # overhead 2, and creation 2.1 at its new count 201 (8.0).
    assert model.price_step(0, 0, 1, 200) == pytest.approx(8.56)
    assert model.price_step(0, 0, 1, 200) == pytest.approx(6.46)
    assert model.price_step(1, 16, 1, 200) == pytest.approx(8.0)
    # A table that timed its prefill points cached keeps that measure.
    cached = served_step_model(_rows(True), {"platform": "cpu"}, {}, 0, where="hand")
    assert cached.describe()["creation_source"] == "prefill new - cached"


@pytest.mark.parametrize("kind", ["fifo", "folder", "oversized", "duplicate key"])
def test_a_wake_model_that_is_no_json_file_is_one_line_without_blocking(
    tmp_path: Path, kind: str
) -> None:
    """A named pipe at wake_model.json blocked `aisim qualify engine` forever (read until a
    writer closed it); a folder was '[Errno 21] Is a directory'; a file of any size was read
    whole; a key given twice kept its last value."""
    import os

    from aisim._io import MAX_DOCUMENT_BYTES

    path = tmp_path / WAKE_FILE
    where = repr(str(path))
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no named pipes here")
        os.mkfifo(path)
        expected = f"{where}: is not a regular file (a FIFO, socket or device)"
    elif kind == "folder":
        path.mkdir()
        expected = f"{where}: is a folder, not a file"
    elif kind == "oversized":
        with path.open("wb") as handle:  # sparse: no 64 MiB written
            handle.truncate(MAX_DOCUMENT_BYTES + 1)
        expected = (
            f"{where}: is {MAX_DOCUMENT_BYTES + 1} bytes, over the limit of {MAX_DOCUMENT_BYTES} "
            "(64 MiB)"
        )
    else:
        path.write_text('{"schema": {"name": "aisim.engine_wake"}, "schema": 1}')
        expected = (
            f"{where}: unreadable wake model (not valid JSON: duplicate key 'schema' in one object)"
        )
    with pytest.raises(DataIntegrityError) as caught:
        load_wake_cost(path)
    assert str(caught.value) == expected
