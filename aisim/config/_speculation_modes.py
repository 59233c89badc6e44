"""The speculation block's engine modes: vLLM's dynamic speculation length, SGLang's adaptive
speculation, the draft-heads configs (Medusa, MLP speculator), and the engine options aisim
does not model (each a one-line error that says so). Read by ``_speculation.resolve_speculation``;
the engine's source is the authority for every rule (docs/speculation.md cites file and
function).
"""

from __future__ import annotations

from typing import Any, Final

from aisim._fields import describe
from aisim.config._edge import integer, number
from aisim.config._speculation_models import SpeculationConfig
from aisim.errors import ConfigError
from aisim.speculation import AdaptiveSpeculation, AdaptiveTier, SchemeSpec

#: SGLang's ``DEFAULT_ADAPTIVE_CONFIG`` (``adaptive_spec_params.py``): batch-size tiers.
SGLANG_DEFAULT_ADAPTIVE_CONFIG: Final[dict[str, Any]] = {
    "1": {
        "candidate_steps": [1, 3, 5, 7],
        "up_hysteresis": 0.0,
        "down_hysteresis": -0.25,
        "ceiling_coeff": 0,
    },
    "8": {
        "candidate_steps": [0, 1, 3],
        "up_hysteresis": 0.0,
        "down_hysteresis": 0.0,
        "ceiling_coeff": 0,
    },
    "32": {
        "candidate_steps": [0, 1],
        "up_hysteresis": 0.0,
        "down_hysteresis": 0.0,
        "ceiling_coeff": 0,
    },
    "64": {
        "candidate_steps": [0],
        "up_hysteresis": 0.0,
        "down_hysteresis": 0.0,
        "ceiling_coeff": 0,
    },
}
#: ``AdaptiveStepSlot.__init__`` defaults for keys a tier (or the top level) leaves out.
_SLOT_DEFAULTS: Final[dict[str, float | int]] = {
    "ema_alpha": 0.2,
    "update_interval": 5,
    "warmup_batches": 10,
    "down_hysteresis": -0.25,
    "up_hysteresis": 0.0,
    "ceiling_coeff": 0,
}
_SLOT_KEYS: Final = ("candidate_steps", *_SLOT_DEFAULTS)


def draft_schedule(
    entries: list[tuple[int, int, int]],
    num_draft_tokens: int,
    spec: SchemeSpec,
    backend: str | None,
    path: str,
) -> list[list[int]]:
    """``num_speculative_tokens_per_batch_size`` (its entries checked by the model:
    ``ScheduleEntry``) checked as a whole as vLLM's ``validate_and_normalize_dynamic_sd_schedule``
    does, each K clamped to ``num_speculative_tokens`` as ``build_dynamic_sd_schedule_lookup``
    does, sorted by range."""
    where = f"{path}.num_speculative_tokens_per_batch_size"
    if backend is not None and backend != "vllm":
        raise ConfigError(
            f"{where}: dynamic speculation length by batch size is vLLM's "
            f"(SpeculativeConfig.num_speculative_tokens_per_batch_size), got backend {backend}"
        )
    if spec.kind not in ("mtp", "eagle3", "draft_model", "dflash", "dspark", "ngram"):
        raise ConfigError(f"{where}: kind {spec.kind} drafts no fixed chain to shorten")
    ordered = sorted(entries)
    previous_end = 0
    for low, high, _ in ordered:
        if low <= previous_end:
            raise ConfigError(f"{where}: batch-size ranges overlap at {low} (vLLM's rule)")
        previous_end = high
    if ordered[0][0] != 1:
        raise ConfigError(
            f"{where}: the first batch-size range must start at 1 (vLLM's rule), "
            f"got {ordered[0][0]}"
        )
    return [[low, high, min(count, num_draft_tokens)] for low, high, count in ordered]


def draft_length_lookup(schedule: list[list[int]], max_batch: int, max_drafts: int) -> list[int]:
    """vLLM's ``build_dynamic_sd_schedule_lookup`` (3-item form): ``lookup[b]`` is the draft
    length at batch size ``b`` (index 0 unused); gaps take the previous range's K, sizes past the
    last range take the last K, every K is capped at ``max_drafts``."""
    lookup = [0] * (max_batch + 1)
    next_batch = 1
    last: int | None = None
    for low, high, count in schedule:
        if low > next_batch and last is not None:
            for batch in range(next_batch, min(low, max_batch + 1)):
                lookup[batch] = min(max_drafts, last)
        for batch in range(max(low, next_batch), min(high, max_batch) + 1):
            lookup[batch] = min(max_drafts, count)
        next_batch = max(next_batch, high + 1)
        last = count
        if next_batch > max_batch:
            break
    if last is not None:
        for batch in range(next_batch, max_batch + 1):
            lookup[batch] = min(max_drafts, last)
    return lookup


def adaptive_policy(
    block: SpeculationConfig,
    spec: SchemeSpec,
    steps: int,
    is_chain: bool,
    backend: str | None,
    path: str,
) -> AdaptiveSpeculation | None:
    """SGLang's ``--speculative-adaptive`` with its config (``speculative_adaptive_config``, the
    JSON file's content; SGLang's ``DEFAULT_ADAPTIVE_CONFIG`` when absent), checked as
    ``adaptive_unsupported_reason`` and ``_load_adaptive_config`` do; ``None`` when off."""
    config = block.speculative_adaptive_config
    if not block.speculative_adaptive:
        for key in ("speculative_adaptive_config", "cuda_graph_bs"):
            if getattr(block, key) is not None:
                raise ConfigError(f"{path}.{key}: only read with speculative_adaptive: true")
        return None
    where = f"{path}.speculative_adaptive"
    if backend is not None and backend != "sglang":
        raise ConfigError(
            f"{where}: adaptive speculation is SGLang's (--speculative-adaptive), got backend "
            f"{backend}"
        )
    if spec.kind not in ("mtp", "eagle3"):
        raise ConfigError(
            f"{where}: SGLang adapts EAGLE/EAGLE3 (and MTP, which runs as EAGLE) only, "
            f"got kind {spec.kind}"
        )
    if not is_chain:
        raise ConfigError(f"{where}: SGLang supports adaptive speculation with topk 1 only")
    raw = SGLANG_DEFAULT_ADAPTIVE_CONFIG if config is None else config
    config_path = f"{path}.speculative_adaptive_config"
    strategy = raw.get("strategy", "ema")
    if strategy == "throughput_aware":
        raise ConfigError(
            f"{config_path}.strategy: SGLang's throughput_aware adaptive strategy (profiled "
            "step costs) is not modelled by aisim; use the ema strategy"
        )
    if strategy != "ema":
        raise ConfigError(
            f"{config_path}.strategy: expected ema or throughput_aware, got {describe(strategy)}"
        )
    top: dict[str, float | int] = {}
    for key, default in _SLOT_DEFAULTS.items():
        top[key] = _slot_value(raw.get(key, default), key, f"{config_path}.{key}")
    tiers: list[AdaptiveTier] = []
    for key, entry in raw.items():
        if not key.isdigit():
            if key != "strategy" and key not in _SLOT_DEFAULTS:
                raise ConfigError(
                    f"{config_path}.{key}: unknown key; SGLang reads batch-size tiers "
                    f'("1", "8", ...), strategy and {", ".join(_SLOT_DEFAULTS)}'
                )
            continue
        tier_path = f"{config_path}.{key}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{tier_path}: expected a mapping, got {describe(entry)}")
        unknown = sorted(name for name in entry if name not in _SLOT_KEYS)
        if unknown:
            raise ConfigError(
                f"{tier_path}: unknown field(s) {', '.join(unknown)}; allowed: "
                f"{', '.join(_SLOT_KEYS)}"
            )
        candidates = entry.get("candidate_steps")
        if (
            not isinstance(candidates, list)
            or not candidates
            or not all(
                isinstance(step, int) and not isinstance(step, bool) and 0 <= step <= 64
                for step in candidates
            )
        ):
            raise ConfigError(
                f"{tier_path}.candidate_steps: expected a non-empty list of integers in 0..64, "
                f"got {describe(candidates)}"
            )
        slots = {
            name: (
                _slot_value(entry[name], name, f"{tier_path}.{name}")
                if name in entry
                else top[name]
            )
            for name in _SLOT_DEFAULTS
        }
        tiers.append(
            AdaptiveTier(
                int(key),
                candidates,
                float(slots["ema_alpha"]),
                int(slots["update_interval"]),
                int(slots["warmup_batches"]),
                float(slots["down_hysteresis"]),
                float(slots["up_hysteresis"]),
                float(slots["ceiling_coeff"]),
            )
        )
    if not tiers:
        raise ConfigError(
            f"{config_path}: needs at least one batch-size tier such as "
            '{"1": {"candidate_steps": [1, 3, 7]}} (SGLang\'s rule)'
        )
    deepest = max(max(tier.candidate_steps) for tier in tiers)
    if deepest > steps:
        raise ConfigError(
            f"{config_path}: a candidate of {deepest} steps drafts deeper than this block "
            f"({steps}); SGLang sizes its buffers for the deepest candidate, and aisim needs the "
            f"acceptance of every position: give the block {deepest} steps (depth) and an "
            f"acceptance for {deepest} positions"
        )
    if block.cuda_graph_bs is not None and not block.cuda_graph_bs:
        raise ConfigError(f"{path}.cuda_graph_bs: expected a non-empty list of batch sizes")
    # Tiers sorted by batch size; AdaptiveStepRouter.set_cuda_graph_bs keeps the sizes sorted.
    return AdaptiveSpeculation(steps, tiers, block.cuda_graph_bs)


def _slot_value(value: object, key: str, path: str) -> float | int:
    if key in ("update_interval", "warmup_batches"):
        return integer(value, path, 1 if key == "update_interval" else 0, 1 << 20)
    if key == "ema_alpha":
        return number(value, path, 0.0, 1.0)
    return number(value, path, -64.0, 64.0)


#: Engine options aisim reads and refuses: what it would need to model them.
def reject_unmodelled(block: SpeculationConfig, spec: SchemeSpec, path: str) -> None:
    """One-line errors for engine options aisim does not model (never a silent default)."""
    if block.enable_adaptive_verification:
        raise ConfigError(
            f"{path}.enable_adaptive_verification: vLLM's adaptive verification (DSpark: the "
            "verify budget sized per request from the drafter's confidence) is not modelled by "
            "aisim; remove it or set it to false"
        )
    if block.rejection_sample_method == "block":
        raise ConfigError(
            f"{path}.rejection_sample_method: vLLM's block verification (Sun et al.) is not "
            "modelled by aisim; use standard (give an acceptance input) or synthetic"
        )
