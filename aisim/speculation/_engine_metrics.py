"""Acceptance measured by a serving engine: vLLM and SGLang metrics read into an AcceptanceProfile.

Interpreted, not compiled (it reads files, parses Prometheus text with ``prometheus_client`` and
computes binomial intervals with ``scipy``); the compiled core only ever sees the frozen
``AcceptanceProfile`` it returns. Sources (docs/speculation.md, "Acceptance from engine metrics"):

* ``vllm-prometheus``: a scrape of vLLM's ``/metrics``, or two differenced over a window
  (``_engine_vllm.py``);
* ``sglang-prometheus``, ``sglang-log``, ``sglang-requests``: ``_engine_sglang.py``.

Prometheus text parsing and series selection by label live in ``_engine_series.py``. This
module holds the shared records (formats, ``SourceFile``, ``MeasuredAcceptance``); reading a
source and dispatching on its format is ``_engine_measure.py``, which imports the readers, so
no reader imports back into it.
"""

from __future__ import annotations

from dataclasses import dataclass
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
