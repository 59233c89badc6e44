"""Trace files for tests: request rows written as the CSV or Mooncake JSONL trace a replay reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_trace(
    folder: Path, rows: list[dict[str, Any]], fmt: str, *, replace: Mapping[int, str] | None = None
) -> Path:
    """``rows`` (Mooncake fields, timestamps in ms) as ``folder/trace.csv`` (``arrival_s,
    prompt_tokens,output_tokens``) or ``folder/trace.jsonl`` (one JSON object a line);
    ``replace`` maps 1-based file line numbers to the text written there instead (a malformed
    line deep in a trace)."""
    if fmt == "csv":
        path = folder / "trace.csv"
        lines = ["arrival_s,prompt_tokens,output_tokens"]
        lines += [
            f"{row['timestamp'] / 1000},{row['input_length']},{row['output_length']}"
            for row in rows
        ]
    elif fmt == "jsonl":
        path = folder / "trace.jsonl"
        lines = [json.dumps(row) for row in rows]
    else:
        raise ValueError(f"fmt: expected 'csv' or 'jsonl', got {fmt!r}")
    for number, text in (replace or {}).items():
        lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")
    return path
