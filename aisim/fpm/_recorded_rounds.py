"""Recorder SD-round tables (``aisim.sd_rounds`` v1) as ``measured_round`` estimators.

Not compiled (plain column lists from a verified file, ``statistics.median``). The recorder
(``qualification.record``) writes one row per timed round; here the rounds of each recorded
configuration (d, B, K_total) reduce to the median of their ``duration_ms`` (every round kept,
flagged outliers included: the median is the statistic the recorder itself reports), and each
recorded d becomes one estimator. Its identity comes from the sidecar's ``identity``:

* ``kind`` = ``draft.kind``; ``draft_length`` = d; ``timing_scope`` = ``round``
  (``duration_ms`` is d draft steps + one verification); ``role`` = ``decode`` (decode-only
  rounds, no prefill work beside them);
* ``draft_identity``: null for ``mtp`` (aisim's convention: an MTP head is identified by its
  target); for a drafter with its own network ``recorded-geometry:<draft.geometry_sha256>``,
  the recorder's hash, which no speculation block resolves to: such a table is refused with the
  mismatch shown, until exported under an explicit identity with ``write_table_file``;
* ``model``: the catalogue name of the recorded ``preset`` when the catalogue geometry equals the
  recorded target geometry, else ``recorded-target:<target.geometry_sha256>``; ``hardware`` =
  ``<device type>:<device name>`` (never a catalogue GPU: a query naming hardware is refused);
  ``tensor_parallel`` = the device count (when recorded). ``backend`` is not stated (plain
  PyTorch, neither vLLM nor SGLang). The draft geometry hash may be absent for mtp/ngram only;
* provenance only (never compared): ``target_geometry_sha256``, ``draft_geometry_sha256``,
  ``evidence_type``, ``timing_metric``, ``dtype``.

Any malformed value is a ``DataIntegrityError`` naming the file and the field.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from typing import Any, Final

from aisim.errors import ConfigError, DataIntegrityError
from aisim.fpm._inputs import integral, read_points
from aisim.fpm._measured import ROUND_SCOPE, MeasuredRoundModel

#: The role a recorded round answers for: decode-only passes.
RECORDED_ROLE: Final = "decode"
#: Drafter kinds aisim identifies by the target alone (``draft_identity`` null).
TARGET_BOUND_KINDS: Final = ("mtp", "ngram")
#: Recorder target-geometry keys compared with the catalogue model of the same preset name.
GEOMETRY_KEYS: Final = (
    "num_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "vocab_size",
    "tie_word_embeddings",
)


def recorded_round_models(
    table: Mapping[str, list[Any]],
    sidecar: Mapping[str, Any],
    source: str,
    name_row: Callable[[int], str] = "row {}".format,
) -> list[MeasuredRoundModel]:
    """One ``measured_round`` estimator per recorded d, in increasing d.

    ``table`` holds the verified ``draft_length``, ``batch_size``, ``total_kv_tokens`` and
    ``duration_ms`` columns; ``sidecar`` the file's (already checked) sidecar.
    """
    where = repr(source)
    rounds: dict[int, dict[tuple[int, int], list[float]]] = {}
    for index in range(len(table["duration_ms"])):
        try:
            depth = integral(table["draft_length"][index])
            batch = integral(table["batch_size"][index])
            kv = integral(table["total_kv_tokens"][index])
            duration = float(table["duration_ms"][index])
        except (TypeError, ValueError):
            raise DataIntegrityError(
                f"{where}: {name_row(index)}: draft_length/batch_size/total_kv_tokens must be "
                "integers and duration_ms a number"
            ) from None
        if depth < 1:
            raise DataIntegrityError(
                f"{where}: {name_row(index)}: draft_length {depth} is not >= 1"
            )
        rounds.setdefault(depth, {}).setdefault((batch, kv), []).append(duration)
    if not rounds:
        raise DataIntegrityError(f"{where}: no recorded rounds")
    base = recorded_identity(sidecar, where)
    models: list[MeasuredRoundModel] = []
    for depth in sorted(rounds):
        points = [
            (batch, kv, float(statistics.median(durations)))
            for (batch, kv), durations in sorted(rounds[depth].items())
        ]
        identity = {**base, "draft_length": depth}
        label = f"{source} (d={depth})"
        try:
            models.append(MeasuredRoundModel(_checked(points), identity, sidecar["sha256"], label))
        except ConfigError as exc:
            raise DataIntegrityError(f"{where}: d={depth}: {exc}") from None
    return models


def _checked(points: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    return read_points(
        [{"batch_size": b, "total_kv_tokens": k, "latency_ms": ms} for b, k, ms in points],
        "points",
    )


def recorded_identity(sidecar: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The measured-round identity (without ``draft_length``) of a recorder sidecar."""
    recorded = _section(sidecar, "identity", where)
    draft = _section(recorded, "draft", where, "identity")
    target = _section(recorded, "target", where, "identity")
    device = _section(recorded, "device", where, "identity")
    kind = _text(draft, "kind", where, "identity.draft")
    target_hash = _text(target, "geometry_sha256", where, "identity.target")
    draft_hash: str | None = None
    draft_identity: str | None = None
    if kind not in TARGET_BOUND_KINDS or "geometry_sha256" in draft:
        draft_hash = _text(draft, "geometry_sha256", where, "identity.draft")
    if kind not in TARGET_BOUND_KINDS:
        draft_identity = f"recorded-geometry:{draft_hash}"
    device_name = (
        f"{_text(device, 'type', where, 'identity.device')}:"
        f"{_text(device, 'name', where, 'identity.device')}"
    )
    timing = recorded.get("timing")
    identity: dict[str, Any] = {
        "kind": kind,
        "draft_identity": draft_identity,
        "timing_scope": ROUND_SCOPE,
        "role": RECORDED_ROLE,
        "model": _target_model(recorded.get("preset"), target.get("geometry"), target_hash),
        "hardware": device_name,
        "target_geometry_sha256": target_hash,
        "draft_geometry_sha256": draft_hash,
        "evidence_type": str(sidecar.get("evidence_type", "local-measurement")),
        "timing_metric": str(timing.get("metric")) if isinstance(timing, dict) else None,
        "dtype": str(recorded.get("dtype")),
    }
    if "count" in device:
        count = device["count"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise DataIntegrityError(
                f"{where}: sidecar identity.device.count: expected an integer >= 1, got {count!r}"
            )
        identity["tensor_parallel"] = count
    return identity


def _target_model(preset: object, geometry: object, target_hash: str) -> str:
    """The catalogue name when the preset names a catalogue model of the recorded geometry."""
    fallback = f"recorded-target:{target_hash}"
    if not isinstance(preset, str) or not isinstance(geometry, dict):
        return fallback
    from aisim.catalogue import builtin_model

    spec = builtin_model(preset)
    if spec is None:
        return fallback
    catalogue = dict(spec.geometry_items())
    if all(key in geometry and catalogue.get(key) == geometry[key] for key in GEOMETRY_KEYS):
        return spec.name
    return fallback


def _section(mapping: Mapping[str, Any], key: str, where: str, base: str = "") -> dict[str, Any]:
    value = mapping.get(key)
    if not isinstance(value, dict):
        field = f"{base}.{key}" if base else key
        raise DataIntegrityError(f"{where}: sidecar {field}: expected a JSON object, got {value!r}")
    return value


def _text(mapping: Mapping[str, Any], key: str, where: str, base: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value:
        raise DataIntegrityError(
            f"{where}: sidecar {base}.{key}: expected a non-empty string, got {value!r}"
        )
    return value
