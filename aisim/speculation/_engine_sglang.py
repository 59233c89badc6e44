"""SGLang's acceptance sources, read into ``MeasuredAcceptance`` (interpreted, not compiled).

What SGLang really emits (``python/sglang/srt/``):

* ``sglang-prometheus``: the gauge ``sglang:spec_accept_length`` (``metrics/collector.py``,
  ``SchedulerMetricsCollector``; labels ``model_name``, ``engine_type``, ``tp_rank``, ``pp_rank``
  and ``dp_rank`` under DP). ``SchedulerMetricsMixin.log_decode_stats`` sets it every
  ``decode_log_interval`` decode batches to ``spec_num_accepted_tokens / spec_num_forward_ct``
  over that window, where ``update_spec_metrics`` adds ``accepted + bs`` and ``bs``: the mean
  acceptance length AL = 1 + E[a] of the last window. No counts, so no interval.
* ``sglang-log``: the same figure in the scheduler's log line ``Decode batch, ..., accept len:
  X.XX, accept rate: ...`` (older builds: ``Decode batch. ...``); a log prefix such as
  ``[2025-06-20 10:00:00 DP1 TP0]`` gives the labels ``dp``/``tp``/``pp``/``ep``.
* ``sglang-requests``: finished requests' ``meta_info.spec_accept_histogram``
  (``TokenizerManager._calculate_spec_decoding_metrics``), filled by
  ``Req.update_spec_acceptance_histogram``: entry ``n`` counts the verify steps of the request
  that accepted exactly ``n`` draft tokens (the list ends at the longest accept seen). Summed over
  requests these are counts, exactly like vLLM's per-position counters.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from aisim.errors import ConfigError
from aisim.speculation._engine_metrics import (
    FORMAT_SGLANG_LOG,
    FORMAT_SGLANG_PROMETHEUS,
    FORMAT_SGLANG_REQUESTS,
    MeasuredAcceptance,
    SourceFile,
)
from aisim.speculation._engine_series import (
    MAX_COUNT,
    LabelSet,
    prometheus_samples,
    select_series,
)

SGLANG_ACCEPT_LENGTH: Final = "sglang:spec_accept_length"
_ACCEPT_LEN: Final = re.compile(r"Decode batch.*?accept len: ([^,\s]+)")
_PREFIX: Final = re.compile(r"^\s*\[([^\]]*)\]")
_RANK: Final = re.compile(r"\b(DP|TP|PP|EP|CP)(\d+)\b")
#: Longest acceptance histogram read (bounds the per-position loops).
MAX_HISTOGRAM: Final = 65


def measure_prometheus(
    text: str, source: SourceFile, wanted: dict[str, str], prefix: str
) -> MeasuredAcceptance:
    """One scrape's ``sglang:spec_accept_length`` gauge (the last decode-log window's AL)."""
    series, _ = prometheus_samples(text, (SGLANG_ACCEPT_LENGTH,), source.path, prefix)
    if not series:
        raise ConfigError(
            f"{prefix}{source.path!r}: no speculative-decoding metric ({SGLANG_ACCEPT_LENGTH}) "
            f"in this scrape; SGLang exports it when started with --enable-metrics"
        )
    label_set = select_series(list(series), wanted, SGLANG_ACCEPT_LENGTH, source.path, prefix)
    length = series[label_set][SGLANG_ACCEPT_LENGTH]
    _check_length(length, f"{SGLANG_ACCEPT_LENGTH} is", source.path, prefix)
    return MeasuredAcceptance(
        FORMAT_SGLANG_PROMETHEUS,
        (source,),
        label_set,
        "SGLang gauge sglang:spec_accept_length: the mean acceptance length of the last "
        "decode-log window before the scrape (no counts, so no interval)",
        acceptance_length=length,
        windows=1,
    )


def measure_log(
    text: str, source: SourceFile, wanted: dict[str, str], prefix: str
) -> MeasuredAcceptance:
    """The mean of the ``accept len`` figures of SGLang's decode log lines (one series)."""
    by_series: dict[LabelSet, list[float]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = _ACCEPT_LEN.search(line)
        if match is None:
            continue
        try:
            length = float(match.group(1))
        except ValueError:
            raise ConfigError(
                f"{prefix}{source.path!r}:{number}: 'accept len: {match.group(1)}' is not a number"
            ) from None
        _check_length(length, "accept len is", f"{source.path}:{number}", prefix)
        head = _PREFIX.match(line)
        ranks = _RANK.findall(head.group(1)) if head else []
        label_set: LabelSet = tuple(sorted((kind.lower(), rank) for kind, rank in ranks))
        by_series.setdefault(label_set, []).append(length)
    if not by_series:
        raise ConfigError(
            f"{prefix}{source.path!r}: no SGLang decode log line with 'accept len:' (SGLang "
            f"prints one every decode_log_interval batches when speculative decoding is on)"
        )
    label_set = select_series(list(by_series), wanted, "SGLang decode-log", source.path, prefix)
    lengths = by_series[label_set]
    return MeasuredAcceptance(
        FORMAT_SGLANG_LOG,
        (source,),
        label_set,
        f"mean of {len(lengths)} SGLang decode-log windows' 'accept len' (unweighted: the log "
        f"does not say how many rounds each window holds; no counts, so no interval)",
        acceptance_length=math.fsum(lengths) / len(lengths),
        windows=len(lengths),
    )


def measure_requests(
    text: str, source: SourceFile, wanted: dict[str, str], prefix: str
) -> MeasuredAcceptance:
    """Summed ``meta_info.spec_accept_histogram`` of SGLang request outputs (a JSON array, one
    object, or JSON lines; each a ``/generate`` response, a batch of them, or a ``meta_info``)."""
    if wanted:
        raise ConfigError(
            f"{prefix}{source.path!r}: labels select a series in a scrape or a log; "
            f"{FORMAT_SGLANG_REQUESTS} has none (put one deployment's requests in the file)"
        )
    totals: list[int] = []
    requests = 0
    for record, where in _json_records(text, source.path, prefix):
        histogram = _histogram(record, where, prefix)
        if histogram is None:
            continue
        requests += 1
        if len(totals) < len(histogram):
            totals.extend([0] * (len(histogram) - len(totals)))
        for index, count in enumerate(histogram):
            totals[index] += count
    if requests == 0:
        raise ConfigError(
            f"{prefix}{source.path!r}: no request carries meta_info.spec_accept_histogram "
            f"(SGLang adds it to a finished request's meta_info when speculative decoding is on)"
        )
    drafts = sum(totals)
    if drafts == 0:
        raise ConfigError(
            f"{prefix}{source.path!r}: the acceptance histograms of {requests} requests are all "
            f"zero: no verify step to measure"
        )
    at_least = tuple(sum(totals[index:]) for index in range(1, len(totals)))
    return MeasuredAcceptance(
        FORMAT_SGLANG_REQUESTS,
        (source,),
        (),
        f"SGLang per-request acceptance histograms (meta_info.spec_accept_histogram) of "
        f"{requests} requests; positions past the longest accept seen accepted nothing",
        drafts=drafts,
        accepted_tokens=sum(index * count for index, count in enumerate(totals)),
        accepted_at_least=at_least,
        windows=requests,
        trailing_zeros=True,
    )


def _check_length(length: float, what: str, name: str, prefix: str) -> None:
    if length == 0.0:
        raise ConfigError(
            f"{prefix}{name!r}: {what} 0: SGLang reports 0 before its first speculative decode "
            f"batch and when speculative decoding is off; measure after serving traffic"
        )
    if not math.isfinite(length) or length < 1.0:
        raise ConfigError(
            f"{prefix}{name!r}: {what} {length!r}; an acceptance length (bonus token included) "
            f"is a finite number >= 1"
        )


def _json_records(text: str, name: str, prefix: str) -> list[tuple[Any, str]]:
    """Top-level JSON values: the whole text as one value, else one per non-blank line."""
    try:
        whole = json.loads(text)
    except RecursionError:
        raise ConfigError(f"{prefix}{name!r}: JSON nested too deeply") from None
    except ValueError:  # not one JSON document (JSON lines), or a number past int's limit
        whole = None
    else:
        return [(item, f"{name}[{index}]") for index, item in enumerate(_flatten(whole))]
    records: list[tuple[Any, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, json.JSONDecodeError):
                detail = exc.msg
            elif isinstance(exc, RecursionError):
                detail = "nested too deeply"
            else:
                from aisim._text import value_error_text

                detail = value_error_text(exc)[:80]
            raise ConfigError(
                f"{prefix}{name!r}:{number}: not JSON ({detail}); expected SGLang request "
                f"outputs as a JSON array or JSON lines"
            ) from None
        records.extend((item, f"{name}:{number}") for item in _flatten(value))
    return records


def _flatten(value: Any) -> list[Any]:
    """A batch response (a list) is several requests; anything else is one."""
    return list(value) if isinstance(value, list) else [value]


def _histogram(record: Any, where: str, prefix: str) -> list[int] | None:
    if not isinstance(record, dict):
        raise ConfigError(
            f"{prefix}{where}: expected a request output (a JSON object with meta_info), got "
            f"{type(record).__name__}"
        )
    meta = record.get("meta_info", record)
    if not isinstance(meta, dict):
        raise ConfigError(f"{prefix}{where}.meta_info: expected a JSON object")
    raw = meta.get("spec_accept_histogram")
    if raw is None:
        return None
    field = f"{where}.meta_info.spec_accept_histogram"
    if not isinstance(raw, list) or len(raw) > MAX_HISTOGRAM:
        raise ConfigError(
            f"{prefix}{field}: expected a list of at most {MAX_HISTOGRAM} counts (entry n: verify "
            f"steps that accepted n drafts), got {str(raw)[:60]}"
        )
    counts: list[int] = []
    for index, item in enumerate(raw):
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise ConfigError(f"{prefix}{field}[{index}]: expected a count, got {item!r}")
        if not math.isfinite(item) or item < 0 or item != math.floor(item):
            raise ConfigError(
                f"{prefix}{field}[{index}]: expected a non-negative whole count, got {item!r}"
            )
        if item > MAX_COUNT:
            raise ConfigError(
                f"{prefix}{field}[{index}]: {item!r} is over {MAX_COUNT} (2**53, the largest "
                "count a float holds exactly)"
            )
        counts.append(int(item))
    return counts
