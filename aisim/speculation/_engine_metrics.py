"""Acceptance measured by a serving engine: vLLM and SGLang metrics read into an AcceptanceProfile.

Interpreted, not compiled (it reads files, parses Prometheus text with ``prometheus_client`` and
computes binomial intervals with ``scipy``); the compiled core only ever sees the frozen
``AcceptanceProfile`` it returns. Sources (docs/speculation.md, "Acceptance from engine metrics"):

* ``vllm-prometheus``: a scrape of vLLM's ``/metrics``, or two differenced over a window
  (``_engine_vllm.py``);
* ``sglang-prometheus``, ``sglang-log``, ``sglang-requests``: ``_engine_sglang.py``.

Prometheus text parsing and series selection by label live in ``_engine_series.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aisim.errors import ConfigError
from aisim.speculation._acceptance import AcceptanceProfile
from aisim.speculation._engine_series import MAX_COUNT

FORMAT_VLLM_PROMETHEUS: Final = "vllm-prometheus"
FORMAT_SGLANG_PROMETHEUS: Final = "sglang-prometheus"
FORMAT_SGLANG_LOG: Final = "sglang-log"
FORMAT_SGLANG_REQUESTS: Final = "sglang-requests"
#: Every source format ``acceptance_from.format`` and ``--format`` accept.
FORMATS: Final = (
    FORMAT_VLLM_PROMETHEUS,
    FORMAT_SGLANG_PROMETHEUS,
    FORMAT_SGLANG_LOG,
    FORMAT_SGLANG_REQUESTS,
)


@dataclass(frozen=True)
class SourceFile:
    """One file a measurement was read from, with the SHA-256 of its bytes."""

    path: str
    sha256: str


@dataclass(frozen=True)
class MeasuredAcceptance:
    """What an engine reported about acceptance over one window, before any depth is applied.

    Count sources (vLLM, SGLang request histograms) fill ``drafts`` and ``accepted_at_least``
    (rounds that accepted at least ``i`` drafts, ``i = 1..K``); mean sources (SGLang's gauge and
    log lines) fill only ``acceptance_length`` (AL = 1 + E[a]). ``files`` is ``(scrape,)`` or
    ``(baseline, scrape)`` for a window between two scrapes. ``trailing_zeros``: the source
    omits the positions past the longest accept it saw (they accepted nothing), so its series may
    be shorter than the depth.
    """

    format: str
    files: tuple[SourceFile, ...]
    labels: tuple[tuple[str, str], ...]
    basis: str
    drafts: int | None = None
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    accepted_at_least: tuple[int, ...] | None = None
    acceptance_length: float | None = None
    windows: int | None = None
    trailing_zeros: bool = False

    @property
    def positions(self) -> int | None:
        """Draft positions the source reports counts for (``None`` for mean-only sources)."""
        return None if self.accepted_at_least is None else len(self.accepted_at_least)

    def counts(self, depth: int | None = None, path: str = "acceptance_from") -> list[int] | None:
        """Rounds that accepted at least ``i`` drafts, ``i = 1..depth`` (default depth: the
        positions reported); ``None`` for mean-only sources. A series longer than ``depth``, or
        shorter where the source reports every position, is a ``ConfigError``."""
        if self.accepted_at_least is None:
            return None
        where = f"{path}: {self._name()}"
        counts = list(self.accepted_at_least)
        positions = len(counts)
        if self.trailing_zeros and depth is None:
            raise ConfigError(
                f"{where}: this source omits the positions that accepted nothing, so it cannot "
                f"tell the depth; give it (--depth, or the speculation block's depth)"
            )
        if depth is not None and positions > depth:
            raise ConfigError(
                f"{where}: the per-position series has {positions} positions, longer than the "
                f"configured depth {depth} (the engine drafted {positions} tokens per round; "
                f"configure depth {positions} or measure the deployment you model)"
            )
        if depth is not None and positions < depth:
            if not self.trailing_zeros:
                raise ConfigError(
                    f"{where}: the per-position series has {positions} positions, shorter than "
                    f"the configured depth {depth}; the engine never reported acceptance beyond "
                    f"position {positions}"
                )
            counts.extend([0] * (depth - positions))
        return counts

    def profile(self, depth: int | None = None, path: str = "acceptance_from") -> AcceptanceProfile:
        """The acceptance profile at ``depth`` (default: the positions reported).

        Counts give the unconditional rates ``u_i = counts[i] / drafts`` (see ``counts``).
        Mean-only sources need ``depth`` and give the staircase of ``AL`` (docs/speculation.md).
        """
        counts = self.counts(depth, path)
        if counts is not None and self.drafts is not None:
            return AcceptanceProfile.from_unconditional(
                [count / self.drafts for count in counts], path
            )
        where = f"{path}: {self._name()}"
        length = self.acceptance_length
        if depth is None or length is None:
            raise ConfigError(
                f"{where}: this source reports only the mean acceptance length; give the depth "
                f"(--depth, or the speculation block's depth) to turn it into rates"
            )
        if length > depth + 1:
            raise ConfigError(
                f"{where}: acceptance length {length!r} is longer than depth {depth} allows "
                f"(at most {depth + 1}: the bonus token plus {depth} drafts)"
            )
        return AcceptanceProfile.from_acceptance_length(length, depth, path)

    def intervals(
        self, depth: int | None = None, confidence: float = 0.95
    ) -> list[dict[str, Any]] | None:
        """Per position ``i = 1..depth``: the count and Clopper-Pearson (exact binomial)
        intervals of the conditional rate (``k`` = rounds accepting >= i of ``n`` = rounds
        accepting >= i - 1) and of the unconditional rate (``n`` = drafts). Rounds are taken as
        independent trials. ``None`` for mean-only sources; a ``None`` interval where ``n = 0``."""
        counts = self.counts(depth)
        if counts is None or self.drafts is None:
            return None
        if max(self.drafts, *counts) > MAX_COUNT:
            # Sums of counts each within bounds (many SGLang requests) can still exceed it.
            raise ConfigError(
                f"{self.files[-1].path!r}: {max(self.drafts, *counts)} drafts or accepted tokens "
                f"in all, over {MAX_COUNT} (2**53, the largest count a float holds exactly)"
            )
        from scipy.stats import binomtest

        def interval(successes: int, trials: int) -> list[float] | None:
            if trials == 0:
                return None
            found = binomtest(successes, trials).proportion_ci(
                confidence_level=confidence, method="exact"
            )
            return [float(found.low), float(found.high)]

        result: list[dict[str, Any]] = []
        previous = self.drafts
        for index, count in enumerate(counts):
            result.append(
                {
                    "position": index + 1,
                    "accepted": count,
                    "conditional_trials": previous,
                    "conditional_ci": interval(count, previous),
                    "unconditional_ci": interval(count, self.drafts),
                }
            )
            previous = count
        return result

    def record(self) -> dict[str, Any]:
        """Provenance for summaries: format, files with SHA-256, series labels, counts."""
        files = [{"path": item.path, "sha256": item.sha256} for item in self.files]
        return {
            "format": self.format,
            "files": files,
            "labels": dict(self.labels),
            "basis": self.basis,
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted_tokens": self.accepted_tokens,
            "accepted_at_least": (
                None if self.accepted_at_least is None else list(self.accepted_at_least)
            ),
            "acceptance_length": self.acceptance_length,
            "windows": self.windows,
        }

    def _name(self) -> str:
        return " -> ".join(repr(item.path) for item in self.files) + f" ({self.format})"


# -- entry points ----------------------------------------------------------------------------------


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


def read_source(path: str | Path, prefix: str) -> tuple[str, SourceFile]:
    """The text of an engine source and its SHA-256; a missing or undecodable file is one
    ``ConfigError`` line."""
    from aisim._io import MAX_DOCUMENT_BYTES, check_path_text, read_input_bytes

    file = check_path_text(path, prefix.rstrip(": ") or "path")
    data = read_input_bytes(file, MAX_DOCUMENT_BYTES, f"{prefix}{str(file)!r}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{prefix}{str(file)!r}: not UTF-8 text (byte {exc.start}); expected a metrics "
            f"scrape, an SGLang log or SGLang request outputs"
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
