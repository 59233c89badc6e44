"""Acceptance inputs at the edge: a raw config value (any JSON/YAML value) in one of the five
published forms -> a checked ``AcceptanceProfile``.

``acceptance_profile(form, value, depth, path)`` (the API's entry) checks the value's type and range (rates: a
list of 1..64 finite numbers in [0, 1]; a mean in [0, depth]; a length in [1, depth + 1]; an
i.i.d. rate in [0, 1]; the depth an integer in 1..64, integral floats accepted) and raises one
``ConfigError`` naming ``path``. The core's ``AcceptanceProfile.from_*`` take the typed numbers.
``block_acceptance`` reads the one acceptance input of a validated speculation block (a form
above, its types checked by the block's model and its ranges here, where the depth is known;
or an ``acceptance_from`` engine-metrics file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from aisim._fields import describe
from aisim.config._edge import check, integer, number
from aisim.config._speculation_models import AcceptanceFromConfig, Rates, SpeculationConfig
from aisim.errors import ConfigError
from aisim.speculation import (
    ACCEPTANCE_KEYS,
    MAX_ACCEPTANCE_DEPTH,
    SIMULATE_MATCH_EXPECTED,
    AcceptanceProfile,
    SchemeGeometry,
    SchemeSpec,
    sglang_simulated_profile,
    vllm_synthetic_profile,
)

#: Each form and the config field it is read from (the default ``path``).
FORM_FIELDS: Final = {
    "conditional": "acceptance_rates",
    "unconditional": "unconditional_acceptance_rates",
    "mean_accepted": "expected_accepted_tokens",
    "acceptance_length": "acceptance_length",
    "iid": "acceptance_rate",
}


def acceptance_profile(
    form: str, value: object, depth: object = None, path: str = ""
) -> AcceptanceProfile:
    """The profile of ``value`` given in ``form`` (``conditional``, ``unconditional``: a list of
    rates; ``mean_accepted``, ``acceptance_length``, ``iid``: one number at ``depth``)."""
    if form not in FORM_FIELDS:
        raise ConfigError(
            f"acceptance form: expected one of {', '.join(FORM_FIELDS)}, got {describe(form)}"
        )
    field = path or FORM_FIELDS[form]
    if form in ("conditional", "unconditional"):
        rates = tuple(check(Rates, value, field))
        if form == "conditional":
            return AcceptanceProfile.from_conditional(rates, field)
        return AcceptanceProfile.from_unconditional(rates, field)
    size = integer(depth, field + " (depth)", 1, MAX_ACCEPTANCE_DEPTH)
    if form == "mean_accepted":
        return AcceptanceProfile.from_mean_accepted(number(value, field, 0.0, size), size, field)
    if form == "acceptance_length":
        length = number(value, field, 1.0, size + 1)
        return AcceptanceProfile.from_acceptance_length(length, size, field)
    return AcceptanceProfile.from_iid(number(value, field, 0.0, 1.0), size, field)


ACCEPTANCE_FROM: Final = "acceptance_from"
#: Every key that gives a block its acceptance (at most one per block): the five forms, an
#: engine metrics file, a catalogue profile, vLLM's synthetic sampler, SGLang's simulated
#: length, a measured acceptance trace.
ACCEPTANCE_INPUTS: Final = ACCEPTANCE_KEYS + (
    ACCEPTANCE_FROM,
    "acceptance_profile",
    "synthetic_acceptance_rates",
    "synthetic_acceptance_length",
    "simulate_acc_len",
    "acceptance_trace",
)


def block_acceptance(
    block: SpeculationConfig,
    geometry: SchemeGeometry,
    spec: SchemeSpec,
    path: str,
    base_dir: str | Path | None,
) -> tuple[AcceptanceProfile | None, dict[str, Any] | None]:
    """The one acceptance form given (``nextn_accepted`` is the legacy spelling of
    ``expected_accepted_tokens``), converted at depth ``max_accepted_draft_tokens``, and the
    provenance record of an ``acceptance_from`` file (else ``None``)."""
    keys = ACCEPTANCE_INPUTS
    given = [key for key in keys if getattr(block, key) is not None]
    synthetic = block.rejection_sample_method == "synthetic"
    if not synthetic:
        stray = [key for key in given if key.startswith("synthetic_")]
        if stray:
            raise ConfigError(
                f"{path}.{stray[0]}: only valid with rejection_sample_method: synthetic "
                "(vLLM's rule)"
            )
    elif block.synthetic_acceptance_rates is None and block.synthetic_acceptance_length is None:
        raise ConfigError(
            f"{path}.rejection_sample_method: synthetic needs exactly one of "
            "synthetic_acceptance_rates or synthetic_acceptance_length (vLLM's rule)"
        )
    if block.simulate_acc_method is not None and block.simulate_acc_len is None:
        raise ConfigError(f"{path}.simulate_acc_method: only read with simulate_acc_len")
    legacy = block.nextn_accepted
    if legacy is not None:
        if spec.kind != "mtp":
            raise ConfigError(
                f"{path}.nextn_accepted: the legacy MTP acceptance is only for kind "
                f"mtp, got kind {spec.kind}; use expected_accepted_tokens"
            )
        canonical = block.expected_accepted_tokens
        if canonical is None:
            given.insert(0, "nextn_accepted")
        elif canonical != legacy:
            raise ConfigError(
                f"{path}.nextn_accepted ({describe(legacy)}) and "
                f"{path}.expected_accepted_tokens ({describe(canonical)}) disagree; give one"
            )
    if not given:
        return None, None
    if len(given) > 1:
        raise ConfigError(
            f"{path}.{given[0]} and {path}.{given[1]} are two acceptance "
            f"inputs; give exactly one of {', '.join(keys)}"
        )
    key = given[0]
    field = f"{path}.{key}"
    value = getattr(block, key)
    depth = geometry.max_accepted_draft_tokens
    if key == "acceptance_profile":
        from aisim.speculation import profile_acceptance, profile_entry

        entry = profile_entry(value, field)
        profile = profile_acceptance(value, spec.kind, depth, field)
        return profile, {"format": "profile", "name": value, "entry": entry}
    if key in ("synthetic_acceptance_rates", "synthetic_acceptance_length"):
        rates = None
        length = None
        if key == "synthetic_acceptance_rates":
            rates = tuple(value)
        else:
            length = number(value, field, 1.0, float(depth + 1))
        synthetic_profile = vllm_synthetic_profile(rates, length, depth, path)
        return synthetic_profile, {"format": "vllm-synthetic", key: value}
    if key == "simulate_acc_len":
        method = block.simulate_acc_method or SIMULATE_MATCH_EXPECTED
        simulated = number(value, field, 0.0, None)
        profile = sglang_simulated_profile(simulated, method, depth, path)
        return profile, {"format": "sglang-simulated", key: simulated, "method": method}
    if key == "acceptance_trace":
        from aisim.speculation import trace_acceptance

        return trace_acceptance(value.path, value.format, depth, field, base_dir)
    if isinstance(value, AcceptanceFromConfig):
        from aisim.speculation import acceptance_from_file

        loaded: tuple[AcceptanceProfile, dict[str, Any]] = acceptance_from_file(
            value.path, value.format, value.labels or {}, value.baseline, depth, field, base_dir
        )
        return loaded
    if key in ("expected_accepted_tokens", "nextn_accepted"):
        mean = number(value, field, 0.0, depth)
        return AcceptanceProfile.from_mean_accepted(mean, depth, field), None
    if key == "acceptance_length":
        length = number(value, field, 1.0, depth + 1)
        return AcceptanceProfile.from_acceptance_length(length, depth, field), None
    if key == "acceptance_rate":
        alpha = number(value, field, 0.0, 1.0)
        return AcceptanceProfile.from_iid(alpha, depth, field), None
    # The rates were checked with the block (1..64 probabilities); their count is the kind's.
    if key == "acceptance_rates":
        profile = AcceptanceProfile.from_conditional(tuple(value), field)
    else:
        profile = AcceptanceProfile.from_unconditional(tuple(value), field)
    if profile.depth != depth:
        raise ConfigError(
            f"{field}: kind {spec.kind} accepts at most {depth} drafts per round, so exactly "
            f"{depth} rates are expected, got {profile.depth}"
        )
    return profile, None
