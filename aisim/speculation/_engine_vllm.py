"""vLLM's speculative-decoding counters read into ``MeasuredAcceptance`` (interpreted).

``SpecDecodingProm`` in ``vllm/v1/spec_decode/metrics.py`` registers the counters below, labelled
``model_name`` and ``engine`` (``PrometheusStatLogger``, ``vllm/v1/metrics/loggers.py``);
``SpecDecodingStats.observe_draft`` adds one to ``num_drafts`` per draft and one to positions
``0..a-1`` of a draft that accepted ``a`` tokens, so ``per_pos[i] / drafts`` is ``u_(i+1)``.
"""

from __future__ import annotations

from typing import Final

from aisim.errors import ConfigError
from aisim.speculation._acceptance import MAX_ACCEPTANCE_DEPTH
from aisim.speculation._engine_metrics import FORMAT_VLLM_PROMETHEUS, MeasuredAcceptance, SourceFile
from aisim.speculation._engine_series import (
    LabelSet,
    format_labels,
    prometheus_samples,
    select_series,
    whole_count,
)

VLLM_DRAFTS: Final = "vllm:spec_decode_num_drafts"
VLLM_DRAFT_TOKENS: Final = "vllm:spec_decode_num_draft_tokens"
VLLM_ACCEPTED: Final = "vllm:spec_decode_num_accepted_tokens"
VLLM_PER_POSITION: Final = "vllm:spec_decode_num_accepted_tokens_per_pos"
VLLM_COUNTERS: Final = (VLLM_DRAFTS, VLLM_DRAFT_TOKENS, VLLM_ACCEPTED, VLLM_PER_POSITION)


def measure_vllm(
    text: str,
    source: SourceFile,
    before: tuple[str, SourceFile] | None,
    wanted: dict[str, str],
    prefix: str,
) -> MeasuredAcceptance:
    """The selected series' counts: one scrape (counts since the engine started), or the
    window ``before -> source`` (a counter that went down, or a changed ``_created`` timestamp,
    is a restart and is refused)."""
    series, created = prometheus_samples(text, VLLM_COUNTERS, source.path, prefix)
    if not series:
        raise ConfigError(
            f"{prefix}{source.path!r}: no speculative-decoding metrics (vllm:spec_decode_*) in "
            f"this scrape; vLLM registers them only when it serves with a speculative config"
        )
    label_set = select_series(list(series), wanted, "vllm:spec_decode_*", source.path, prefix)
    values = dict(series[label_set])
    for key, value in values.items():
        whole_count(value, key, label_set, source.path, prefix)
    files: tuple[SourceFile, ...] = (source,)
    basis = "vLLM counters since the engine started (one scrape)"
    if before is not None:
        before_text, before_source = before
        old_series, old_created = prometheus_samples(
            before_text, VLLM_COUNTERS, before_source.path, prefix
        )
        window = f"{before_source.path!r} -> {source.path!r}"
        if label_set not in old_series:
            raise ConfigError(
                f"{prefix}{window}: the earlier scrape has no vllm:spec_decode_* series "
                f"{format_labels(label_set)}; both scrapes must come from one engine"
            )
        old_values = old_series[label_set]
        for key, value in values.items():
            old = whole_count(old_values.get(key, 0.0), key, label_set, before_source.path, prefix)
            if value < old:
                raise ConfigError(
                    f"{prefix}{window}: counter reset: {key}{format_labels(label_set)} went down "
                    f"from {old} to {int(value)} (the engine restarted between the scrapes, or "
                    f"they are in the wrong order: give the earlier scrape first); a window must "
                    f"lie within one engine lifetime"
                )
            values[key] = value - old
        for (created_set, key), stamp in created.items():
            old_stamp = old_created.get((created_set, key))
            if created_set == label_set and old_stamp is not None and old_stamp != stamp:
                raise ConfigError(
                    f"{prefix}{window}: counter reset: {key}_created{format_labels(label_set)} "
                    f"changed from {old_stamp!r} to {stamp!r} (the engine restarted between the "
                    f"scrapes); a window must lie within one engine lifetime"
                )
        files = (before_source, source)
        basis = "vLLM counters over the window between two scrapes"
    return _vllm_counts(values, label_set, files, basis, prefix)


def _vllm_counts(
    values: dict[str, float],
    label_set: LabelSet,
    files: tuple[SourceFile, ...],
    basis: str,
    prefix: str,
) -> MeasuredAcceptance:
    name = files[-1].path if len(files) == 1 else f"{files[0].path} -> {files[-1].path}"
    shown = format_labels(label_set)
    missing = [metric for metric in VLLM_COUNTERS[:3] if metric not in values]
    if missing:
        raise ConfigError(
            f"{prefix}{name!r}: series {shown} lacks {', '.join(missing)} (vLLM v1 exports "
            f"{', '.join(VLLM_COUNTERS)})"
        )
    drafts = int(values[VLLM_DRAFTS])
    draft_tokens = int(values[VLLM_DRAFT_TOKENS])
    accepted = int(values[VLLM_ACCEPTED])
    positions = _positions(values, label_set, name, prefix)
    if drafts == 0:
        raise ConfigError(
            f"{prefix}{name!r}: vllm:spec_decode_num_drafts{shown} is 0 in this window: the "
            f"engine ran no speculative rounds, so there is no acceptance to measure"
        )
    if accepted > draft_tokens:
        raise ConfigError(
            f"{prefix}{name!r}: {shown} accepted {accepted} tokens of {draft_tokens} drafted; "
            f"accepted can never exceed drafted"
        )
    previous, previous_name = drafts, "num_drafts"
    for index, count in enumerate(positions):
        if count > previous:
            raise ConfigError(
                f"{prefix}{name!r}: {VLLM_PER_POSITION}{shown} position {index} is {count}, "
                f"more than {previous_name} ({previous}); a draft reaches position i only "
                f"through position i-1"
            )
        previous, previous_name = count, f"position {index}"
    if positions and sum(positions) != accepted:
        raise ConfigError(
            f"{prefix}{name!r}: {shown} per-position accepted counts sum to {sum(positions)} "
            f"but vllm:spec_decode_num_accepted_tokens is {accepted}; vLLM adds both in one step "
            f"(a torn scrape, or series from different engines)"
        )
    if len(positions) > MAX_ACCEPTANCE_DEPTH:
        raise ConfigError(
            f"{prefix}{name!r}: {len(positions)} draft positions; at most "
            f"{MAX_ACCEPTANCE_DEPTH} are supported"
        )
    if not positions:
        # vLLM builds before the per-position counter: only the mean is known.
        return MeasuredAcceptance(
            FORMAT_VLLM_PROMETHEUS,
            files,
            label_set,
            basis + "; no per-position counter, so only the mean",
            drafts=drafts,
            draft_tokens=draft_tokens,
            accepted_tokens=accepted,
            acceptance_length=1.0 + accepted / drafts,
        )
    return MeasuredAcceptance(
        FORMAT_VLLM_PROMETHEUS,
        files,
        label_set,
        basis,
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        accepted_at_least=tuple(positions),
    )


def _positions(values: dict[str, float], label_set: LabelSet, name: str, prefix: str) -> list[int]:
    found: dict[int, int] = {}
    for key, value in values.items():
        if not key.startswith(VLLM_PER_POSITION + "["):
            continue
        label = key[len(VLLM_PER_POSITION) + 1 : -1]
        if not label.isdigit():
            raise ConfigError(
                f"{prefix}{name!r}: {VLLM_PER_POSITION}{format_labels(label_set)} has "
                f'position="{label}"; expected 0, 1, 2, ...'
            )
        found[int(label)] = int(value)
    if sorted(found) != list(range(len(found))):
        raise ConfigError(
            f"{prefix}{name!r}: {VLLM_PER_POSITION}{format_labels(label_set)} has positions "
            f"{sorted(found)}; expected 0..{len(found) - 1} with none missing"
        )
    return [found[index] for index in range(len(found))]
