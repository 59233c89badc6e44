"""The front-end model of a served engine: what `vllm serve` costs on the engine's core beyond
the in-process step table, derived from a probe timed *through the server* and the table alone
(never from the served runs it prices).

The probe (``evidence/vllm-bench-driver/frontend_probe.py``, ``frontend/probe.csv.gz`` of a
recording, one row per streamed chunk) holds two kinds of measurement:

* ``decode``: B simultaneous requests of P prompt tokens streaming O tokens each. While all B
  decode together (after the last first token, up to the first request's last token) every
  request receives one chunk per engine step; per request, (last - first chunk time in that
  window) / chunks between them is its served step time, and the grid prices the same steps at
  B requests and past KV P + j - 1 per request for the step that streams token j.
* ``ttft``: one request alone of P prompt tokens; its first chunk's time is everything from the
  client's send to the first streamed token.

Terms (ms; ``terms`` of ``frontend/frontend_model.json``):

* per decode batch B, excess(B) = mean served step - mean grid price of the same steps; a line
  ``step_ms + token_ms x B`` is fitted to the excess over the probe's batch sizes (ordinary
  least squares over B, both terms clipped at 0: when the fitted intercept is below 0 the line
  goes through the origin, when the slope is, the intercept is the mean excess);
* ``request_ms`` = mean over ``ttft`` rows of TTFT - (grid prefill price at 1 request of P
  tokens + step_ms + token_ms), clipped at 0: what a request pays before the engine's step.

The grid prices are the served-step model's (``aisim.fpm._engine_step_files``,
``served_step_model``: on CPU the lines through every timed step; prefill from its cached
steps, the probe's prompt lengths being met again and again) without the primitive-cache
charge and without a front end.

usage: python -m qualification.engine.frontend RECORDING [--probe CSV] [--table RECORDING]
       [--out FILE] [--overwrite]
Without ``--probe`` the recording's ``frontend/probe.csv.gz``; without ``--table`` its grid. Writes
``frontend/frontend_model.json`` (or ``--out``) atomically; an existing file is kept unless
``--overwrite``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from aisim.errors import AisimError, DataIntegrityError
from aisim.files import atomic_write_text, check_output_file
from aisim.fpm import FRONTEND_FILE, FRONTEND_SCHEMA, served_step_model
from qualification.engine._recording import StepTable, load_step_table

PROBE_FILE = "frontend/probe.csv.gz"
PROBE_COLUMNS = (
    "pass",
    "kind",
    "rep",
    "batch",
    "prompt_tokens",
    "max_tokens",
    "request",
    "chunk",
    "t_ms",
    "send_ms",
    "wall_start",
)
KINDS = ("decode", "ttft")
_INTEGER = ("rep", "batch", "prompt_tokens", "max_tokens", "request", "chunk")


def read_probe_table(
    path: str | Path, columns: tuple[str, ...], needed_by: str
) -> tuple[pd.DataFrame, str]:
    """A probe CSV read as text, with exactly ``columns``, at least one row and every ``kind``
    in ``KINDS``; the frame and the file's quoted name for messages. DataIntegrityError naming
    the file (and the 0-based data row and field) otherwise; ``needed_by`` says why a missing
    file matters."""
    file = Path(path)
    where = repr(str(file))
    try:
        frame = pd.read_csv(file, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise DataIntegrityError(f"{where}: missing; {needed_by}") from None
    except (OSError, EOFError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise DataIntegrityError(f"{where}: unreadable ({exc})") from None
    if tuple(frame.columns) != columns:
        extra = [c for c in frame.columns if c not in columns]
        missing = [c for c in columns if c not in frame.columns]
        what = f"unknown column {extra[0]!r}" if extra else f"missing column {missing[0]!r}"
        raise DataIntegrityError(f"{where}: {what}; columns are {', '.join(columns)}")
    if frame.empty:
        raise DataIntegrityError(f"{where}: no rows")
    for row, kind in enumerate(frame["kind"]):
        if kind not in KINDS:
            raise DataIntegrityError(
                f"{where}: row {row}: kind: {kind!r} is not one of {', '.join(KINDS)}"
            )
    return frame, where


def integer_column(frame: pd.DataFrame, column: str, low: int, where: str) -> list[int]:
    """``frame[column]`` as integers >= ``low``; DataIntegrityError naming the row otherwise."""
    values = []
    for row, text in enumerate(frame[column]):
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < low:
            raise DataIntegrityError(
                f"{where}: row {row}: {column}: {text!r} is not an integer >= {low}"
            )
        values.append(value)
    return values


def ms_column(frame: pd.DataFrame, column: str, where: str) -> list[float]:
    """``frame[column]`` as finite milliseconds >= 0; DataIntegrityError naming the row otherwise."""
    numbers = []
    for row, text in enumerate(frame[column]):
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise DataIntegrityError(
                f"{where}: row {row}: {column}: {text!r} is not a finite number of ms >= 0"
            )
        numbers.append(number)
    return numbers


def read_probe(path: str | Path) -> pd.DataFrame:
    """The probe's rows, checked: exactly ``PROBE_COLUMNS``, known kinds, integer counts >= 0
    (batch, prompt and max tokens >= 1), finite times >= 0, each request's chunks numbered 0..
    max_tokens - 1 with non-decreasing times, ``ttft`` rows of batch 1. DataIntegrityError
    naming the file, row (0-based data row) and field otherwise."""
    frame, where = read_probe_table(path, PROBE_COLUMNS, "the front-end model needs the probe")
    out = frame.copy()
    for column in _INTEGER:
        low = 1 if column in ("batch", "prompt_tokens", "max_tokens") else 0
        out[column] = integer_column(frame, column, low, where)
    for column in ("t_ms", "send_ms"):
        out[column] = ms_column(frame, column, where)
    bad = out[(out["kind"] == "ttft") & (out["batch"] != 1)]
    if not bad.empty:
        raise DataIntegrityError(f"{where}: row {int(bad.index[0])}: batch: a ttft row of batch 1")
    for _, group in out.groupby(["pass", "kind", "rep", "batch", "prompt_tokens", "request"]):
        chunks = group["chunk"].tolist()
        size = int(group["max_tokens"].iloc[0])
        if chunks != list(range(size)) or (group["max_tokens"] != size).any():
            raise DataIntegrityError(
                f"{where}: row {int(group.index[0])}: chunk: the request's chunks are not "
                f"0..{size - 1} in order (max_tokens {size})"
            )
        times = group["t_ms"].tolist()
        for offset, (before, after) in enumerate(zip(times, times[1:], strict=False)):
            if after < before:
                raise DataIntegrityError(
                    f"{where}: row {int(group.index[offset + 1])}: t_ms: {after:g} is before "
                    f"the request's previous chunk ({before:g})"
                )
    return out


def decode_windows(probe: pd.DataFrame) -> list[dict[str, Any]]:
    """Per decode request of the probe: its steps while the whole batch decoded together
    (module docstring): batch, prompt tokens, the token indices j streamed in that window
    (the first excluded), and their summed served time (ms). Requests whose window holds no
    step are left out."""
    decode = probe[probe["kind"] == "decode"]
    found = []
    for _, group in decode.groupby(["pass", "rep", "batch", "prompt_tokens"], sort=True):
        batch, prompt = int(group["batch"].iloc[0]), int(group["prompt_tokens"].iloc[0])
        absolute = group["send_ms"] + group["t_ms"]
        firsts = absolute[group["chunk"] == 0]
        start = float(firsts.max())
        ends = [float(absolute[group["request"] == r].max()) for r in group["request"].unique()]
        end = min(ends)
        for _, request in group.assign(abs_ms=absolute).groupby("request", sort=True):
            inside = request[(request["abs_ms"] >= start) & (request["abs_ms"] <= end)]
            if len(inside) < 2:
                continue
            found.append(
                {
                    "batch": batch,
                    "prompt_tokens": prompt,
                    "tokens": [int(j) for j in inside["chunk"].tolist()[1:]],
                    "served_ms": float(inside["abs_ms"].iloc[-1] - inside["abs_ms"].iloc[0]),
                }
            )
    return found


def fit_step_token(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """(step_ms, token_ms) of ``step_ms + token_ms x B`` through (B, excess) points: ordinary
    least squares, both >= 0 (module docstring)."""
    if not points:
        raise DataIntegrityError("the probe has no decode steps to fit the front end to")
    xs = [float(b) for b, _ in points]
    ys = [float(y) for _, y in points]
    n = len(points)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = (
        sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    )
    intercept = mean_y - slope * mean_x
    if slope < 0:
        return max(0.0, mean_y), 0.0
    if intercept < 0:
        through = sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs)
        return 0.0, max(0.0, through)
    return intercept, slope


def derive(probe: pd.DataFrame, table: StepTable) -> dict[str, Any]:
    """The front-end terms and the figures they come from (module docstring)."""
    model = served_step_model(
        [{str(k): v for k, v in row.items()} for row in table.steps.to_dict("records")],
        table.settings,
        table.sidecar.get("identity") or {},
        0,
        where=repr(str(table.directory)),
    )
    model.cache = None  # the grid's price of each step, no primitive creation charged
    decode_rows = []
    per_batch: dict[int, list[tuple[float, float, int]]] = {}
    for window in decode_windows(probe):
        batch, prompt = window["batch"], window["prompt_tokens"]
        price = sum(
            model.price_step(batch, batch * (prompt + j - 1), 0, 0) for j in window["tokens"]
        )
        per_batch.setdefault(batch, []).append((window["served_ms"], price, len(window["tokens"])))
    points = []
    for batch in sorted(per_batch):
        rows = per_batch[batch]
        steps = sum(n for _, _, n in rows)
        served = sum(s for s, _, _ in rows) / steps
        grid = sum(p for _, p, _ in rows) / steps
        points.append((batch, served - grid))
        decode_rows.append(
            {
                "batch": batch,
                "requests": len(rows),
                "steps": steps,
                "served_ms": round(served, 4),
                "grid_ms": round(grid, 4),
                "excess_ms": round(served - grid, 4),
            }
        )
    step_ms, token_ms = fit_step_token(points)
    ttft = probe[(probe["kind"] == "ttft") & (probe["chunk"] == 0)]
    if ttft.empty:
        raise DataIntegrityError("the probe has no ttft rows to price the admission from")
    ttft_rows = []
    excesses = []
    for _, group in ttft.groupby("prompt_tokens", sort=True):
        prompt = int(group["prompt_tokens"].iloc[0])
        grid = model.price_step(0, 0, 1, prompt) + step_ms + token_ms
        served = float(group["t_ms"].mean())
        excesses.extend((group["t_ms"] - grid).tolist())
        ttft_rows.append(
            {
                "prompt_tokens": prompt,
                "requests": len(group),
                "served_ms": round(served, 4),
                "grid_ms": round(grid, 4),
                "excess_ms": round(served - grid, 4),
            }
        )
    request_mean = sum(excesses) / len(excesses)
    return {
        "terms": {
            "step_ms": round(step_ms, 4),
            "token_ms": round(token_ms, 4),
            "request_ms": round(max(0.0, request_mean), 4),
        },
        "decode": decode_rows,
        "ttft": ttft_rows,
        "request_excess_mean_ms": round(request_mean, 4),
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(recording: Path, probe_path: Path, table_path: Path) -> dict[str, Any]:
    """The ``frontend_model.json`` object for ``recording`` (terms, figures, provenance)."""
    table = load_step_table(table_path)
    figures = derive(read_probe(probe_path), table)
    grid_file = table.directory / "grid_steps.parquet"
    passes = sorted(set(pd.read_csv(probe_path, usecols=["pass"])["pass"].astype(str)))
    return {
        "schema": {"name": FRONTEND_SCHEMA, "version": 1},
        "source": (
            f"probe {probe_path.parent.parent.name}/{probe_path.parent.name}/{probe_path.name} "
            f"(passes {', '.join(passes)}) priced by grid {table.directory.parent.name}/grid"
        ),
        **figures,
        "derived_from": {
            "probe": str(Path(probe_path).resolve().relative_to(recording.resolve().parent)),
            "probe_sha256": _sha256(Path(probe_path)),
            "grid": str(grid_file.resolve().relative_to(recording.resolve().parent)),
            "grid_sha256": _sha256(grid_file),
            "method": "qualification/engine/frontend.py (module docstring)",
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qualification.engine.frontend", description=__doc__.splitlines()[0]
    )
    parser.add_argument("recording", type=Path)
    parser.add_argument(
        "--probe", type=Path, help="probe CSV (default: RECORDING/frontend/probe.csv.gz)"
    )
    parser.add_argument("--table", type=Path, help="step table recording (default: RECORDING)")
    parser.add_argument("--out", type=Path, help="output (default: RECORDING/frontend/...json)")
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)
    out = args.out or args.recording / FRONTEND_FILE
    try:
        check_output_file(out, args.overwrite, "--out")
        data = build(
            args.recording, args.probe or args.recording / PROBE_FILE, args.table or args.recording
        )
        atomic_write_text(
            out, json.dumps(data, indent=1, sort_keys=True) + "\n", overwrite=args.overwrite
        )
    except AisimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(data["terms"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
