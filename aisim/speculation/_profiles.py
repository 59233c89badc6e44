"""Published acceptance profiles: a catalogue of sourced numbers, selectable by name.

Every entry is a number somebody published, with where (repository, path and commit, or a
paper / model card) and under which conditions (engine, temperature, dataset, draft length) it
was measured; nothing here is fitted or guessed (docs/speculation.md, "Acceptance profiles").
``acceptance_profile: NAME`` in a speculation block turns an entry into an ``AcceptanceProfile``
at the block's depth (``profile_acceptance``); ``aisim speculation profiles`` lists them.

``spread`` says what the source publishes about uncertainty: a relative tolerance (vLLM's CI
asserts measured values within it), the raw counts behind a mean (drafts and accepted tokens),
or a published range. ``None``: the source gives a point value only.
"""

from __future__ import annotations

from typing import Any, Final

from aisim.errors import ConfigError
from aisim.speculation._acceptance import AcceptanceProfile

_VLLM_CI: Final = {
    "title": "vLLM CI: EAGLE3 acceptance length regression test (EAGLE3_MODEL_CONFIGS)",
    "repository": "vllm-project/vllm",
    "path": "tests/v1/spec_decode/test_acceptance_length.py",
    "commit": "029ba37503c59160eacf163dd50b3bb1a6cfe982",
}
_VLLM_CI_CONDITIONS: Final = (
    "vLLM offline LLM, temperature 0, MT-Bench (philschmid/mt-bench, 80 prompts, 256 output "
    "tokens), num_speculative_tokens 3; per-position values are vLLM's accepted_tokens_per_pos / "
    "num_drafts, i.e. unconditional rates"
)
_SPEC_BENCH: Final = {
    "title": "Spec-Bench leaderboard (A100), column '#Mean Accepted Tokens'",
    "repository": "hemingkx/Spec-Bench",
    "path": "Leaderboard.md",
    "commit": "09244ff33257f2cdde9422f0e382eba1f3b43a9e",
}
_SPEC_BENCH_CONDITIONS: Final = (
    "Spec-Bench's own implementations (not vLLM/SGLang), one A100 80GB, greedy decoding, FP16, "
    "batch size 1, Spec-Bench's six task categories; mean accepted tokens per decoding step "
    "(1.00 for plain decoding, so the acceptance length); the draft length is not given"
)
_SPECULATORS_MTP: Final = {
    "title": "vllm-project/speculators evaluation results, Qwen3.8-27B (MTP rows)",
    "repository": "vllm-project/speculators",
    "path": "examples/evaluate/results/qwen3_8_27b_dspark/mtp_{dataset}.csv",
    "commit": "8685273f70d55bac73695e6cb6650e1b2fa77f61",
}
_SPECULATORS_DSPARK: Final = {
    "title": "vllm-project/speculators evaluation results, Qwen3.8-27B (DSpark rows)",
    "repository": "vllm-project/speculators",
    "path": "examples/evaluate/results/qwen3_8_27b_dspark/dspark_{dataset}.csv",
    "commit": "01d6d4d4db618816429e354d11ba76268714ad0d",
}
_SPECULATORS_CONDITIONS: Final = (
    "vLLM 0.30.1rc1.dev418+g50319916a, 1x B200, TP 1, GuideLLM closed loop with 1 request in "
    "flight (row conc1), RedHatAI/speculator_benchmarks subset {dataset} via /v1/chat/"
    "completions, max_tokens 1024; temperature not stated (the server's default); acceptance "
    "length = 1 + num_accepted_tokens / num_drafts from vLLM /metrics counter deltas"
)
_NEBIUS: Final = {
    "title": "Model card nebius/EAGLE3-Llama-3.3-70B-Instruct, 'Comparison with Public Checkpoints'",
    "url": "https://huggingface.co/nebius/EAGLE3-Llama-3.3-70B-Instruct",
}
_NEBIUS_CONDITIONS: Final = (
    "measured by Nebius at temperature 1 with K = 7 draft tokens, 'with proper rejection "
    "sampling'; the engine is not stated"
)


def _entry(
    name: str,
    method: str,
    target: str,
    draft: str | None,
    dataset: str,
    engine: str,
    temperature: float | None,
    num_draft_tokens: int | None,
    acceptance_length: float | None,
    unconditional_rates: list[float] | None,
    spread: dict[str, Any] | None,
    source: dict[str, str],
    conditions: str,
    locator: str,
    conditional_rate: float | None = None,
    note: str | None = None,
    curve: list[list[float]] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": name,
        "method": method,
        "target": target,
        "draft": draft,
        "dataset": dataset,
        "engine": engine,
        "temperature": temperature,
        "num_draft_tokens": num_draft_tokens,
        "acceptance_length": acceptance_length,
        "unconditional_rates": unconditional_rates,
        "conditional_rate": conditional_rate,
        "acceptance_length_by_draft_tokens": curve,
        "spread": spread,
        "source": {**source, "locator": locator},
        "conditions": conditions,
        "note": note,
    }
    return record


def _vllm_ci(
    key: str,
    target: str,
    draft: str,
    length: float | None,
    rates: list[float],
    locator: str,
    rtol: float,
    note: str | None = None,
) -> dict[str, Any]:
    return _entry(
        f"vllm-ci/eagle3/{key}/mt-bench",
        "eagle3",
        target,
        draft,
        "MT-Bench (philschmid/mt-bench)",
        "vllm",
        0.0,
        3,
        length,
        rates,
        {"kind": "relative_tolerance", "value": rtol, "of": "each per-position rate"},
        _VLLM_CI,
        _VLLM_CI_CONDITIONS,
        locator,
        note=note,
    )


def _spec_bench(method: str, key: str, size: str, length: float, name: str) -> dict[str, Any]:
    return _entry(
        f"spec-bench/{key}/vicuna-{size}-v1.3",
        method,
        f"lmsys/vicuna-{size}-v1.3",
        None,
        "Spec-Bench (all six categories)",
        "Spec-Bench reference implementation",
        0.0,
        None,
        length,
        None,
        None,
        _SPEC_BENCH,
        _SPEC_BENCH_CONDITIONS,
        f"section 'Leaderboard on A100', table Vicuna-{size.upper()}-v1.3, row {name}",
    )


def _speculators(
    method: str, dataset: str, k: int, drafts: int, accepted: int, draft: str | None
) -> dict[str, Any]:
    source = _SPECULATORS_MTP if method == "mtp" else _SPECULATORS_DSPARK
    return _entry(
        f"speculators/{method}/qwen3.8-27b/{dataset.lower().replace('_', '-')}",
        method,
        "Qwen/Qwen3.8-27B",
        draft,
        f"RedHatAI/speculator_benchmarks, subset {dataset}",
        "vllm",
        None,
        k,
        1.0 + accepted / drafts,
        None,
        {"kind": "counts", "num_drafts": drafts, "num_accepted_tokens": accepted},
        {**source, "path": source["path"].format(dataset=dataset)},
        _SPECULATORS_CONDITIONS.format(dataset=dataset),
        "row point=conc1, columns num_drafts and num_accepted_tokens",
    )


def _nebius(key: str, draft: str, target: str, dataset: str, length: float) -> dict[str, Any]:
    return _entry(
        f"nebius-card/eagle3/{key}/{dataset.lower()}",
        "eagle3",
        target,
        draft,
        dataset,
        "not stated",
        1.0,
        7,
        length,
        None,
        None,
        _NEBIUS,
        _NEBIUS_CONDITIONS,
        f"table 'Comparison with Public Checkpoints', row {draft}, column {dataset} (tau)",
    )


_INFERENCEX_CONDITIONS: Final = (
    "InferenceX golden AL curve: SPEED-Bench Qualitative split, coding category (80 prompts), "
    "output_len 4096, {sampling}, {engine}; AL = 1 + accepted draft tokens / verification "
    "drafts from the engine's counters, rounded to 2 decimals; one cell per draft length"
)


def _inferencex(
    name: str,
    method: str,
    target: str,
    draft: str | None,
    mode: str,
    curve: dict[int, float],
    path: str,
    commit: str,
    run: str,
    sampling: str,
    engine: str,
    counts: tuple[int, int] | None = None,
) -> dict[str, Any]:
    ks = sorted(curve)
    spread: dict[str, Any] | None = None
    if counts is not None:
        spread = {"kind": "counts", "num_drafts": counts[0], "num_accepted_tokens": counts[1]}
    return _entry(
        f"inferencex/{method}/{name}/{mode}",
        method,
        target,
        draft,
        f"SPEED-Bench coding ({mode.replace('-', ' ')})",
        "sglang" if engine.startswith("SGLang") else "vllm",
        1.0,
        ks[0] if len(ks) == 1 else None,
        curve[ks[0]] if len(ks) == 1 else None,
        None,
        spread,
        {
            "title": f"InferenceX golden_al_distribution ({run})",
            "repository": "SemiAnalysisAI/InferenceX",
            "path": path,
            "commit": commit,
        },
        _INFERENCEX_CONDITIONS.format(sampling=sampling, engine=engine),
        f"key {mode.replace('-', '_')}: num_speculative_tokens -> golden AL",
        curve=[[float(k), curve[k]] for k in ks] if len(ks) > 1 else None,
    )


_MINIMAX: Final = "temperature 1.0, top_p 0.95, top_k 40"
_MINIMAX_ENGINE: Final = "vLLM EAGLE3 on B300"
_MINIMAX_COMMIT: Final = "ce4e6f073750328525786d1e799f86c3745abf90"
_DSV4_COMMIT: Final = "1a3739748e76ef2b2d0814914a36d0c6c7b9dff0"
_QWEN38_COMMIT: Final = "5625e8038c3a35460e1c8ef3e561909b08dbd2a7"

PROFILES: Final[tuple[dict[str, Any], ...]] = (
    _vllm_ci(
        "llama-3.1-8b-instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
        2.60,
        [0.7296, 0.5208, 0.3545],
        "Eagle3ModelConfig id llama3-8b-eagle3",
        0.05,
    ),
    _vllm_ci(
        "qwen3-8b",
        "Qwen/Qwen3-8B",
        "RedHatAI/Qwen3-8B-speculator.eagle3",
        2.26,
        [0.6541, 0.3993, 0.2020],
        "Eagle3ModelConfig id qwen3-8b-eagle3",
        0.05,
    ),
    _vllm_ci(
        "gpt-oss-20b",
        "openai/gpt-oss-20b",
        "RedHatAI/gpt-oss-20b-speculator.eagle3",
        2.56,
        [0.7165, 0.5120, 0.3337],
        "Eagle3ModelConfig id gpt-oss-20b-eagle3",
        0.05,
    ),
    _vllm_ci(
        "gpt-oss-20b-rocm",
        "openai/gpt-oss-20b",
        "RedHatAI/gpt-oss-20b-speculator.eagle3",
        None,
        [0.7040, 0.4820, 0.3350],
        "Eagle3ModelConfig id gpt-oss-20b-eagle3, rocm_expected_acceptance_lengths_per_pos",
        0.05,
        "the per-position rates vLLM's CI expects on ROCm; no separate ROCm length is published",
    ),
    _vllm_ci(
        "qwen3-vl-30b-a3b-instruct-fp8",
        "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8",
        "nm-testing/Speculator-Qwen3-30B-MOE-VL-Eagle3",
        1.35,
        [0.2900, 0.0620, 0.0115],
        "Eagle3ModelConfig id qwen3-30b-moe-vl-eagle3",
        0.15,
    ),
    _nebius(
        "llama-3.1-8b-instruct",
        "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "meta-llama/Llama-3.1-8B-Instruct",
        "MT-bench",
        2.77,
    ),
    _nebius(
        "llama-3.1-8b-instruct",
        "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "meta-llama/Llama-3.1-8B-Instruct",
        "HumanEval",
        3.49,
    ),
    _nebius(
        "llama-3.1-8b-instruct",
        "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "meta-llama/Llama-3.1-8B-Instruct",
        "GSM8K",
        3.34,
    ),
    _nebius(
        "llama-3.3-70b-instruct",
        "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3",
        "meta-llama/Llama-3.3-70B-Instruct",
        "MT-bench",
        2.88,
    ),
    _nebius(
        "llama-3.3-70b-instruct",
        "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3",
        "meta-llama/Llama-3.3-70B-Instruct",
        "HumanEval",
        3.62,
    ),
    _nebius(
        "llama-3.3-70b-instruct",
        "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3",
        "meta-llama/Llama-3.3-70B-Instruct",
        "GSM8K",
        3.29,
    ),
    _speculators("mtp", "HumanEval", 2, 9581, 11993, None),
    _speculators("mtp", "math_reasoning", 2, 9415, 14205, None),
    _speculators("dspark", "HumanEval", 7, 8858, 21225, "RedHatAI/Qwen3.8-27B-speculator.dspark"),
    _speculators(
        "dspark", "math_reasoning", 7, 8566, 30746, "RedHatAI/Qwen3.8-27B-speculator.dspark"
    ),
    _entry(
        "deepseek-v3-report/mtp/deepseek-v3/various",
        "mtp",
        "deepseek-ai/DeepSeek-V3",
        None,
        "various generation topics (not itemized)",
        "DeepSeek's own inference stack",
        None,
        1,
        None,
        None,
        {"kind": "range", "low": 0.85, "high": 0.90, "of": "the rate of the one MTP draft"},
        {
            "title": "DeepSeek-V3 Technical Report (arXiv 2412.19437)",
            "url": "https://arxiv.org/abs/2412.19437",
        },
        "one MTP module (depth 1); 'the acceptance rate of the second token prediction ranges "
        "between 85% and 90% across various generation topics'; temperature not stated",
        "the multi-token prediction evaluation paragraph (speculative decoding with the MTP module)",
        conditional_rate=0.875,
        note="the profile's point value 0.875 is the midpoint of the published 85-90 % range",
    ),
    _spec_bench("ngram", "pld", "7b", 1.73, "PLD"),
    _spec_bench("ngram", "pld", "13b", 1.68, "PLD"),
    _spec_bench("ngram", "pld", "33b", 1.55, "PLD"),
    _spec_bench("draft_model", "sps", "7b", 2.28, "SpS"),
    _spec_bench("draft_model", "sps", "13b", 2.18, "SpS"),
    _spec_bench("draft_model", "sps", "33b", 2.01, "SpS"),
    _spec_bench("medusa", "medusa", "7b", 2.32, "Medusa"),
    _spec_bench("medusa", "medusa", "13b", 2.39, "Medusa"),
    _spec_bench("medusa", "medusa", "33b", 2.33, "Medusa"),
    _inferencex(
        "minimax-m3",
        "eagle3",
        "MiniMax-M3",
        "Inferact/MiniMax-M3-EAGLE3",
        "thinking-on",
        {1: 1.78, 2: 2.38, 3: 2.83, 4: 3.11, 5: 3.35, 6: 3.45, 7: 3.53, 8: 3.74},
        "golden_al_distribution/minimaxm3_eagle3.yaml",
        _MINIMAX_COMMIT,
        "actions run 28061204145",
        _MINIMAX,
        _MINIMAX_ENGINE,
    ),
    _inferencex(
        "minimax-m3",
        "eagle3",
        "MiniMax-M3",
        "Inferact/MiniMax-M3-EAGLE3",
        "thinking-off",
        {1: 1.84, 2: 2.52, 3: 2.93, 4: 3.41, 5: 3.59, 6: 3.57, 7: 3.85, 8: 4.06},
        "golden_al_distribution/minimaxm3_eagle3.yaml",
        _MINIMAX_COMMIT,
        "actions run 28061204145",
        _MINIMAX,
        _MINIMAX_ENGINE,
    ),
    _inferencex(
        "minimax-m3-gqa",
        "eagle3",
        "MiniMax-M3",
        "Inferact/MiniMax-M3-EAGLE3-GQA",
        "thinking-on",
        {1: 1.79, 2: 2.39, 3: 2.78, 4: 3.02, 5: 3.21, 6: 3.30, 7: 3.52, 8: 3.51},
        "golden_al_distribution/minimaxm3_eagle3_gqa.yaml",
        _MINIMAX_COMMIT,
        "actions run 29784780049",
        _MINIMAX,
        _MINIMAX_ENGINE,
    ),
    _inferencex(
        "minimax-m3-gqa",
        "eagle3",
        "MiniMax-M3",
        "Inferact/MiniMax-M3-EAGLE3-GQA",
        "thinking-off",
        {1: 1.83, 2: 2.46, 3: 2.97, 4: 3.29, 5: 3.72, 6: 3.76, 7: 3.75, 8: 3.93},
        "golden_al_distribution/minimaxm3_eagle3_gqa.yaml",
        _MINIMAX_COMMIT,
        "actions run 29784780049",
        _MINIMAX,
        _MINIMAX_ENGINE,
    ),
    _inferencex(
        "deepseek-v4-pro",
        "dspark",
        "DeepSeek-V4-Pro (DSpark)",
        None,
        "thinking-on",
        {1: 1.86, 2: 2.55, 3: 3.08, 4: 3.43, 5: 3.74, 6: 3.82, 7: 3.86, 8: 3.75},
        "golden_al_distribution/dsv4_dspark_probabilistic.yaml",
        _DSV4_COMMIT,
        "actions run 31279568355",
        "temperature 1.0, draft_sample_method probabilistic",
        "vLLM DSpark on B300",
    ),
    _inferencex(
        "deepseek-v4-pro",
        "dspark",
        "DeepSeek-V4-Pro (DSpark)",
        None,
        "thinking-off",
        {1: 1.93, 2: 2.76, 3: 3.47, 4: 4.10, 5: 4.52, 6: 4.87, 7: 4.94, 8: 4.94},
        "golden_al_distribution/dsv4_dspark_probabilistic.yaml",
        _DSV4_COMMIT,
        "actions run 31279568355",
        "temperature 1.0, draft_sample_method probabilistic",
        "vLLM DSpark on B300",
    ),
    _inferencex(
        "qwen3.8-27b-bf16",
        "mtp",
        "Qwen/Qwen3.8-27B",
        None,
        "thinking-on",
        {3: 2.52},
        "golden_al_distribution/qwen3.827b_bf16_mtp.yaml",
        _QWEN38_COMMIT,
        "actions run 35490571863",
        "production sampling, enable_thinking true",
        "vLLM nightly-cd10ed6f native MTP, TP 1",
        counts=(84995, 128899),
    ),
    _inferencex(
        "qwen3.8-27b-fp8",
        "mtp",
        "Qwen/Qwen3.8-27B-FP8",
        None,
        "thinking-on",
        {3: 2.51},
        "golden_al_distribution/qwen3.827b_fp8_mtp.yaml",
        _QWEN38_COMMIT,
        "actions run 35491616007",
        "production sampling, enable_thinking true",
        "vLLM nightly-cd10ed6f native MTP, TP 1",
        counts=(87994, 133034),
    ),
    _inferencex(
        "qwen3.8-27b-awq-int4",
        "mtp",
        "qwen3.8-27b (AWQ-INT4-g128)",
        None,
        "thinking-on",
        {7: 3.67},
        "golden_al_distribution/qwen3.8_mtp.yaml",
        "4b2d885b44d6ff13dfa9667cabf94db166c84c58",
        "rahulunair/qwen38-agentx evidence",
        "temperature 1.0, top_p 0.95, top_k 20",
        "SGLang 0.0.0.dev15740 native MTP on four Intel Arc Pro B70",
        counts=(55993, 149574),
    ),
)

_BY_NAME: Final[dict[str, dict[str, Any]]] = {entry["name"]: entry for entry in PROFILES}


def profile_names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def profile_depths(name: str) -> list[int] | None:
    """The draft lengths ``name`` was published at (``None``: not published, any depth the
    length fits)."""
    entry = _BY_NAME[name]
    curve = entry["acceptance_length_by_draft_tokens"]
    if curve is not None:
        return [int(point[0]) for point in curve]
    published = entry["num_draft_tokens"]
    return None if published is None else [int(published)]


def profile_entry(name: object, path: str = "acceptance_profile") -> dict[str, Any]:
    """The catalogue entry called ``name`` (a fresh copy); ``ConfigError`` naming the close
    names when there is none."""
    if not isinstance(name, str) or name not in _BY_NAME:
        hint = ""
        if isinstance(name, str):
            stem = name.split("/")[0]
            close = [known for known in _BY_NAME if known.startswith(stem + "/")]
            if close:
                hint = f"; names under {stem}/: {', '.join(close)}"
        raise ConfigError(
            f"{path}: unknown acceptance profile {name!r}{hint} "
            "(aisim speculation profiles lists all)"
        )
    return _copy(_BY_NAME[name])


def _copy(entry: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in entry.items():
        if isinstance(value, dict):
            result[key] = dict(value)
        elif isinstance(value, list):
            result[key] = list(value)
        else:
            result[key] = value
    return result


def profile_acceptance(name: object, kind: str, depth: int, path: str) -> AcceptanceProfile:
    """The ``AcceptanceProfile`` of catalogue entry ``name`` for a block of ``kind`` that accepts
    at most ``depth`` drafts per round.

    The entry's method must be the block's kind. A curve (length by draft length) applies at
    its published lengths, each the staircase of its length. Published per-position rates and a
    length
    published at a draft length K apply at depth K only; a length published without its draft
    length is the staircase at the block's depth (which must reach ``AL - 1``); a published
    conditional rate of a depth-1 chain applies at depth 1.
    """
    entry = _BY_NAME[name] if isinstance(name, str) and name in _BY_NAME else None
    if entry is None:
        profile_entry(name, path)  # raises with the hint
        raise AssertionError("unreachable")
    method = entry["method"]
    if method != kind:
        raise ConfigError(
            f"{path}: profile {name!r} was measured with method {method}, not kind {kind}"
        )
    curve = entry["acceptance_length_by_draft_tokens"]
    if curve is not None:
        for point in curve:
            if int(point[0]) == depth:
                return AcceptanceProfile.from_acceptance_length(float(point[1]), depth, path)
        published_ks = ", ".join(str(int(point[0])) for point in curve)
        raise ConfigError(
            f"{path}: profile {name!r} was published at {published_ks} draft tokens per round; "
            f"this block accepts at most {depth}"
        )
    published = entry["num_draft_tokens"]
    if published is not None and published != depth:
        raise ConfigError(
            f"{path}: profile {name!r} was measured with {published} draft tokens per round; "
            f"this block accepts at most {depth} (acceptance does not transfer across draft "
            "lengths: give num_speculative_tokens/depth "
            f"{published} or another profile)"
        )
    rates = entry["unconditional_rates"]
    if rates is not None:
        return AcceptanceProfile.from_unconditional([float(rate) for rate in rates], path)
    conditional = entry["conditional_rate"]
    if conditional is not None:
        return AcceptanceProfile.from_conditional([float(conditional)], path)
    length = float(entry["acceptance_length"])
    if length - 1.0 > depth:
        raise ConfigError(
            f"{path}: profile {name!r} has acceptance length {length:g}, more than a block "
            f"accepting at most {depth} drafts per round can reach ({depth + 1})"
        )
    return AcceptanceProfile.from_acceptance_length(length, depth, path)
