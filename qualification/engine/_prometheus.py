"""Prometheus text exposition: the per-run delta of an engine's counters, and reading it back.

vLLM keeps its metrics in one process-wide registry, so a served run's own counts are the scrape
after the run minus the scrape before it. ``counter_delta`` writes that difference in the same
text format (``# HELP``/``# TYPE`` lines kept; counters, histogram and summary samples are
differences, gauges are the value after the run), so any Prometheus text reader (issue 16's
acceptance reader, ``promtool``) consumes it. ``read_samples`` reads such a file back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from aisim.errors import DataIntegrityError

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\S+)?$")
#: Families whose samples accumulate (difference them); gauges and unknown are kept as they are.
_ACCUMULATING = ("counter", "histogram", "summary")


def _parse(text: str) -> tuple[list[str], dict[str, str]]:
    """Lines in order, and sample family -> type (from ``# TYPE``)."""
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                types[parts[2]] = parts[3]
    return text.splitlines(), types


def _family(name: str, types: dict[str, str]) -> str:
    for suffix in ("_total", "_created", "_bucket", "_count", "_sum"):
        if name.endswith(suffix) and name[: -len(suffix)] in types:
            return name[: -len(suffix)]
    return name


def _values(text: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match:
            values[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return values


def counter_delta(before: str, after: str, excluded: Sequence[tuple[str, str]] = ()) -> str:
    """``after`` with every accumulating sample replaced by ``after - before`` minus, for each
    ``(start, end)`` scrape pair in ``excluded``, ``end - start`` (work done between them that
    is not part of this window); ``_created`` timestamps are dropped (they are not counts)."""
    lines, types = _parse(after)
    previous = _values(before)
    gaps = [(_values(start), _values(end)) for start, end in excluded]
    out: list[str] = []
    for line in lines:
        if not line or line.startswith("#"):
            out.append(line)
            continue
        match = _SAMPLE.match(line)
        if match is None:
            out.append(line)
            continue
        name, labels, raw = match.group(1), match.group(2) or "", match.group(3)
        if name.endswith("_created"):
            continue
        kind = types.get(_family(name, types), "untyped")
        value = float(raw)
        if kind in _ACCUMULATING:
            key = name + labels
            value -= previous.get(key, 0.0)
            value -= sum(end.get(key, 0.0) - start.get(key, 0.0) for start, end in gaps)
        out.append(f"{name}{labels} {_format(value)}")
    return "\n".join(out) + "\n"


def _format(value: float) -> str:
    if math.isfinite(value) and value == int(value):
        return f"{int(value)}.0"
    return repr(value)


def read_samples(path: Path) -> dict[str, float]:
    """Sample ``name{labels}`` -> value of a text-exposition file, read by ``prometheus_client``'s
    parser (counters keep their ``_total`` name; ``_created`` timestamps are left out);
    DataIntegrityError naming the file when it is missing or does not parse, and the file and
    the sample when a value is NaN or infinite."""
    from prometheus_client.parser import text_string_to_metric_families

    from aisim.files import MAX_TRACE_BYTES, input_file_problem

    problem = input_file_problem(path, MAX_TRACE_BYTES)
    if problem == "file not found":
        raise DataIntegrityError(f"{str(path)!r}: metrics file is missing")
    if problem is not None:  # a folder or a FIFO (read_text raised IsADirectoryError / blocked)
        raise DataIntegrityError(f"{str(path)!r}: {problem}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataIntegrityError(f"{str(path)!r}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # was a UnicodeDecodeError traceback
        raise DataIntegrityError(
            f"{str(path)!r}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); expected Prometheus text exposition format"
        ) from None
    samples: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.endswith("_created"):
                    continue
                labels = ",".join(f'{key}="{value}"' for key, value in sample.labels.items())
                samples[sample.name + (f"{{{labels}}}" if labels else "")] = float(sample.value)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        detail = " ".join(str(exc).split())[:120]
        raise DataIntegrityError(
            f"{str(path)!r}: not Prometheus text exposition format ({detail})"
        ) from None
    for key, value in samples.items():
        if not math.isfinite(value):
            raise DataIntegrityError(
                f"{str(path)!r}: {key}: {value!r}; expected a finite number (an engine's "
                "counters and gauges are never NaN or infinite)"
            )
    return samples
