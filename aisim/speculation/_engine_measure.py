"""Acceptance from an engine source: read the file, detect its format, and dispatch to the vLLM
or SGLang reader (``_engine_vllm.py``, ``_engine_sglang.py``), which build the
``MeasuredAcceptance`` records of ``_engine_metrics.py``. Interpreted, not compiled."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError
from aisim.speculation._acceptance import AcceptanceProfile
from aisim.speculation._engine_metrics import (
    FORMAT_SGLANG_LOG,
    FORMAT_SGLANG_PROMETHEUS,
    FORMAT_SGLANG_REQUESTS,
    FORMAT_VLLM_PROMETHEUS,
    FORMATS,
    MeasuredAcceptance,
    SourceFile,
)


def measure_engine_acceptance(
    path: str | Path,
    format: str | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    baseline: str | Path | None = None,
    where: str = "",
) -> MeasuredAcceptance:
    """Read one engine source (``format`` one of ``FORMATS``; ``None`` detects it from the
    text). ``labels`` select one series where a scrape or log holds several; ``baseline`` is an
    earlier vLLM scrape, so the window is ``path - baseline``. ``where`` prefixes errors (a
    config field path); every problem is one ``ConfigError`` line."""
    prefix = f"{where}: " if where else ""
    wanted = dict(labels or {})
    text, source = read_source(path, prefix)
    chosen = format if format is not None else detect_format(text, source.path, prefix)
    if chosen not in FORMATS:
        raise ConfigError(f"{prefix}format: expected one of {', '.join(FORMATS)}, got {chosen!r}")
    if baseline is not None and chosen != FORMAT_VLLM_PROMETHEUS:
        raise ConfigError(
            f"{prefix}{source.path!r}: a baseline scrape (a window between two scrapes) applies "
            f"to {FORMAT_VLLM_PROMETHEUS} counters only; {chosen} is read as one file"
        )
    if chosen == FORMAT_VLLM_PROMETHEUS:
        from aisim.speculation._engine_vllm import measure_vllm

        if baseline is None:
            return measure_vllm(text, source, None, wanted, prefix)
        before_text, before = read_source(baseline, prefix)
        return measure_vllm(text, source, (before_text, before), wanted, prefix)
    from aisim.speculation import _engine_sglang

    readers: dict[str, Callable[[str, SourceFile, dict[str, str], str], MeasuredAcceptance]] = {
        FORMAT_SGLANG_PROMETHEUS: _engine_sglang.measure_prometheus,
        FORMAT_SGLANG_LOG: _engine_sglang.measure_log,
        FORMAT_SGLANG_REQUESTS: _engine_sglang.measure_requests,
    }
    return readers[chosen](text, source, wanted, prefix)


def load_engine_acceptance(
    path: str | Path,
    format: str | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    baseline: str | Path | None = None,
    depth: int | None = None,
) -> AcceptanceProfile:
    """The frozen acceptance profile an engine source reports (see
    ``measure_engine_acceptance``), at ``depth`` (default: the positions reported)."""
    measured = measure_engine_acceptance(path, format, labels=labels, baseline=baseline)
    return measured.profile(depth, str(path))


def acceptance_from_file(
    path: str,
    format: str,
    labels: Mapping[str, str],
    baseline: str | None,
    depth: int,
    where: str,
    base_dir: str | Path | None = None,
) -> tuple[AcceptanceProfile, dict[str, Any]]:
    """A speculation block's validated ``acceptance_from`` (``where`` is its field path):
    the profile at ``depth`` and its provenance record (the files as the config wrote them, with
    the SHA-256 of their bytes). Relative paths are taken from ``base_dir``."""
    given = [path] if baseline is None else [baseline, path]
    measured = measure_engine_acceptance(
        _config_path(path, base_dir),
        format,
        labels=labels,
        baseline=None if baseline is None else _config_path(baseline, base_dir),
        where=where,
    )
    record = measured.record()
    for item, text in zip(record["files"], given, strict=True):
        item["path"] = text
    return measured.profile(depth, where), record


def _config_path(text: str, base_dir: str | Path | None) -> Path:
    file = Path(text)
    if not file.is_absolute() and base_dir is not None:
        file = Path(base_dir) / file
    return file


def read_source(
    path: str | Path,
    prefix: str,
    expected: str = "a metrics scrape, an SGLang log or SGLang request outputs",
) -> tuple[str, SourceFile]:
    """The text of an engine source (or of what ``expected`` names) and its SHA-256; a missing
    or undecodable file is one ``ConfigError`` line."""
    from aisim._io import MAX_DOCUMENT_BYTES, check_path_text, read_input_bytes

    file = check_path_text(path, prefix.rstrip(": ") or "path")
    data = read_input_bytes(file, MAX_DOCUMENT_BYTES, f"{prefix}{str(file)!r}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{prefix}{str(file)!r}: not UTF-8 text (byte {exc.start}); expected {expected}"
        ) from None
    return text, SourceFile(str(file), hashlib.sha256(data).hexdigest())


def detect_format(text: str, name: str, prefix: str = "") -> str:
    """The format of an engine source, told from its text (for the CLI; configs name it)."""
    found: list[str] = []
    if "vllm:spec_decode_" in text:
        found.append(FORMAT_VLLM_PROMETHEUS)
    if "sglang:spec_accept_length" in text:
        found.append(FORMAT_SGLANG_PROMETHEUS)
    if not found and "Decode batch" in text and "accept len:" in text:
        found.append(FORMAT_SGLANG_LOG)
    if not found and "spec_accept_histogram" in text and text.lstrip().startswith(("{", "[")):
        found.append(FORMAT_SGLANG_REQUESTS)
    if len(found) == 1:
        return found[0]
    if found:
        raise ConfigError(
            f"{prefix}{name!r}: holds both {' and '.join(found)} metrics; give --format"
        )
    raise ConfigError(
        f"{prefix}{name!r}: no speculative-decoding metrics found (no vllm:spec_decode_* "
        f"counter, no sglang:spec_accept_length gauge, no SGLang 'accept len:' decode log line, "
        f"no SGLang spec_accept_histogram); is speculative decoding on? (--format names a "
        f"format)"
    )
