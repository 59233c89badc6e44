"""Prometheus text exposition read into series, and one series selected by its labels.

Interpreted (``prometheus_client``'s parser); shared by the vLLM and SGLang readers.
"""

from __future__ import annotations

import math

from aisim.errors import ConfigError

#: A series' identity: its labels (``position`` excluded), sorted.
LabelSet = tuple[tuple[str, str], ...]
#: Largest count accepted: 2**53, the largest whole number every float above it cannot skip
#: (a counter exported as a float is no longer exact beyond it), far above any real engine's
#: (10**12 drafts is a year at 30,000 drafts/s). Larger counts broke the binomial intervals.
MAX_COUNT = 2**53


def prometheus_samples(
    text: str, names: tuple[str, ...], name: str, prefix: str
) -> tuple[dict[LabelSet, dict[str, float]], dict[tuple[LabelSet, str], float]]:
    """Samples of the metric families ``names`` by series: label set -> {metric: value}, where a
    per-position metric is keyed ``name[position]``; and the ``_created`` timestamps. The
    exposition format's ``_total`` suffix of counters is accepted and dropped."""
    from prometheus_client.parser import text_string_to_metric_families

    series: dict[LabelSet, dict[str, float]] = {}
    created: dict[tuple[LabelSet, str], float] = {}
    try:
        samples = [
            sample for family in text_string_to_metric_families(text) for sample in family.samples
        ]
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        detail = " ".join(str(exc).split())[:120]
        raise ConfigError(
            f"{prefix}{name!r}: not Prometheus text exposition format ({detail})"
        ) from None
    for sample in samples:
        metric, is_created = _metric_of(sample.name, names)
        if metric is None:
            continue
        labels = dict(sample.labels)
        position = labels.pop("position", None)
        label_set: LabelSet = tuple(sorted(labels.items()))
        key = metric if position is None else f"{metric}[{position}]"
        value = float(sample.value)
        if is_created:
            created[(label_set, key)] = value
            continue
        values = series.setdefault(label_set, {})
        if key in values:
            raise ConfigError(
                f"{prefix}{name!r}: {key}{format_labels(label_set)} appears twice in one scrape"
            )
        if not math.isfinite(value):
            raise ConfigError(
                f"{prefix}{name!r}: {key}{format_labels(label_set)} is {value!r}; counters and "
                f"gauges here must be finite numbers"
            )
        values[key] = value
    return series, created


def _metric_of(sample_name: str, names: tuple[str, ...]) -> tuple[str | None, bool]:
    for metric in names:
        if sample_name in (metric, metric + "_total"):
            return metric, False
        if sample_name == metric + "_created":
            return metric, True
    return None, False


def format_labels(label_set: LabelSet) -> str:
    """``{engine="0",model_name="m"}`` (``{}`` for a series without labels)."""
    return "{" + ",".join(f'{key}="{value}"' for key, value in label_set) + "}"


def select_series(
    found: list[LabelSet], wanted: dict[str, str], what: str, name: str, prefix: str
) -> LabelSet:
    """The one label set among ``found`` that carries every ``wanted`` label; none or several is
    a ``ConfigError`` listing the label sets found."""
    matching = [item for item in found if all(dict(item).get(k) == v for k, v in wanted.items())]
    if len(matching) == 1:
        return matching[0]
    listing = ", ".join(format_labels(item) for item in sorted(found))
    chosen = f" with labels {format_labels(tuple(sorted(wanted.items())))}" if wanted else ""
    if not matching:
        raise ConfigError(
            f"{prefix}{name!r}: no {what} series{chosen}; label sets found: {listing}"
        )
    raise ConfigError(
        f"{prefix}{name!r}: {len(matching)} {what} series{chosen}, so which one is ambiguous; "
        f"select one by label (--label KEY=VALUE, or acceptance_from.labels); label sets found: "
        f"{listing}"
    )


def whole_count(value: float, metric: str, label_set: LabelSet, name: str, prefix: str) -> int:
    """A counter value as a non-negative whole number (counters count drafts and tokens)."""
    if value < 0:
        raise ConfigError(
            f"{prefix}{name!r}: {metric}{format_labels(label_set)} is negative ({value!r}); "
            f"a counter never is"
        )
    if value != math.floor(value):
        raise ConfigError(
            f"{prefix}{name!r}: {metric}{format_labels(label_set)} is {value!r}; it counts "
            f"drafts or tokens, so it must be a whole number"
        )
    if value > MAX_COUNT:
        raise ConfigError(
            f"{prefix}{name!r}: {metric}{format_labels(label_set)} is {value!r}, over "
            f"{MAX_COUNT} (2**53, the largest count a float holds exactly)"
        )
    return int(value)
