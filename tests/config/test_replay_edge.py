"""The replay edge validates a config once, typed all the way down, and hands the readers the
frozen models: each value is looked up or resolved once per replay, and every relative path is
taken from the folder of the file that names it (issue 27, one validation pass)."""

from __future__ import annotations

import cProfile
import json
import pstats
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from aisim import ConfigError
from aisim.config import best_available, run_replay
from aisim.config._catalogue import get_gpu, get_model
from aisim.config._edge import validate
from aisim.config._replay import build_plan
from aisim.config._replay_models import (
    FixedCapacity,
    RateLoad,
    ReplayFile,
    SglangScheduler,
    SyntheticSource,
    UniformLength,
    VllmScheduler,
)
from aisim.config._speculation import resolve_speculation
from aisim.config._speculation_models import (
    DraftModelFile,
    MedusaFile,
    MtpParams,
    SpeculationConfig,
)
from aisim.traffic import MAX_TOKENS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def _disaggregated_mtp(timing: dict[str, object]) -> dict[str, object]:
    """P/D on SGLang with the engine's MTP block shared by the workers (the decode pool
    speculates), both pools priced by ``timing``."""
    return {
        "traffic": {
            "seed": 7,
            "source": {
                "type": "synthetic",
                "num_requests": 5,
                "prompt_tokens": 256,
                "output_tokens": 16,
            },
            "load": {"type": "poisson", "rate_rps": 4.0},
        },
        "engine": {
            "model": "Qwen/Qwen3-8B",
            "hardware": "h100_sxm",
            "backend": "sglang",
            "speculation": {"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": [0.8, 0.6]},
            "workers": {
                "prefill": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 400000}},
                    "timing": timing,
                },
                "decode": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 400000}},
                    "timing": timing,
                },
            },
        },
    }


def _calls(run: Callable[[], object], *functions: Callable[..., object]) -> list[int]:
    """How many times each of ``functions`` (interpreted config-edge functions) ran in ``run``."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        run()
    finally:
        profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    counts = []
    for function in functions:
        code = function.__code__
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        counts.append(stats[key][1] if key in stats else 0)
    return counts


def test_one_replay_resolves_speculation_and_looks_the_model_up_once() -> None:
    # Before the typed edge (commit 324a011): 2 resolutions of the engine's block (one per
    # worker, the prefill one thrown away), 3 model and GPU lookups (the engine's, then one per
    # worker's timing block, which best_available validated again from a rebuilt mapping) and
    # 23 validate() calls (each block and each worker slice validated by its reader). Now the
    # config tree is validated once (the MTP params by the kind's model, inside that pass).
    config = _disaggregated_mtp({"type": "estimator", "estimator": "roofline"})
    counts = _calls(lambda: build_plan(config), resolve_speculation, get_model, get_gpu, validate)
    assert counts == [1, 1, 1, 1]


def test_the_readers_get_typed_blocks_validated_once() -> None:
    config = _disaggregated_mtp({"type": "fixed", "prefill_ms": 40.0, "decode_ms": 12.0})
    root = validate(ReplayFile, config)
    # The speculation's params are read by the model of its kind.
    assert root.engine.speculation is not None
    assert isinstance(root.engine.speculation.params, MtpParams)
    assert root.engine.speculation.params.depth == 2
    decode = root.engine.workers.decode
    assert decode is not None and decode.kv_cache is not None
    assert isinstance(decode.kv_cache.capacity, FixedCapacity)
    # The scheduler block is read by the model of the engine's backend.
    sglang = _disaggregated_mtp({"type": "fixed", "prefill_ms": 40.0, "decode_ms": 12.0})
    sglang["engine"]["workers"]["decode"]["scheduler"] = {"max_running_requests": 8}  # type: ignore[index]
    scheduler = validate(ReplayFile, sglang).engine.workers.decode.scheduler  # type: ignore[union-attr]
    assert isinstance(scheduler, SglangScheduler) and scheduler.max_running_requests == 8
    sglang["engine"]["backend"] = "vllm"  # type: ignore[index]
    sglang["engine"]["workers"]["decode"]["scheduler"] = {"max_sequences": 8}  # type: ignore[index]
    scheduler = validate(ReplayFile, sglang).engine.workers.decode.scheduler  # type: ignore[union-attr]
    assert isinstance(scheduler, VllmScheduler) and scheduler.max_sequences == 8
    with pytest.raises(ConfigError) as caught:
        sglang["engine"]["workers"]["decode"]["scheduler"] = {"max_running_requests": 8}  # type: ignore[index]
        validate(ReplayFile, sglang)
    assert str(caught.value) == (
        "engine.workers.decode.scheduler: unknown field(s) max_running_requests for backend "
        "vllm; allowed: attention_dp_batching_wait_iters, attention_dp_enable_balance, "
        "attention_dp_time_out_iters, chunked_prefill, max_batched_tokens, max_sequences"
    )


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (
            ("kv_cache", "capacity"),
            {"type": "fixed", "blocks": 0},
            "engine.workers.decode.kv_cache.capacity.blocks: expected an integer in "
            "1..1099511627776, got 0",
        ),
        (
            ("kv_cache", "capacity"),
            {"type": "fixd", "blocks": 8},
            "engine.workers.decode.kv_cache.capacity.type: expected one of fixed, default, "
            "got 'fixd'",
        ),
        (
            ("timing",),
            {"type": "fixed", "prefill_ms": -1.0, "decode_ms": 1.0},
            "engine.workers.decode.timing.prefill_ms: expected a finite number in "
            "0.0..4294967296.0, got -1.0",
        ),
        (
            ("scheduler",),
            {"init_new_token_ratio": 0.5, "min_new_token_ratio": 0.6},
            "engine.workers.decode.scheduler.min_new_token_ratio: expected a finite number in "
            "0.0..0.5, got 0.6",
        ),
        (
            ("timing",),
            {"type": "estimator", "model": 3},
            "engine.workers.decode.timing.model: expected a model name or config.json path, "
            "got 3 (int)",
        ),
    ],
)
def test_a_bad_value_deep_in_a_worker_names_its_full_path(
    where: tuple[str, ...], value: object, message: str
) -> None:
    config = _disaggregated_mtp({"type": "fixed", "prefill_ms": 40.0, "decode_ms": 12.0})
    block = config["engine"]["workers"]["decode"]  # type: ignore[index]
    for key in where[:-1]:
        block = block[key]
    block[where[-1]] = value
    with pytest.raises(ConfigError) as caught:
        build_plan(config)
    assert str(caught.value) == message


def test_relative_model_and_hardware_paths_resolve_against_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cfg/replay.yaml names a config.json and a hardware file beside it; run from the parent
    # folder (where neither is), they are the files beside the config (the tables' case is
    # test_edge_gaps.py). Before the typed edge both were looked up in the working directory.
    folder = tmp_path / "cfg"
    folder.mkdir()
    shutil.copy(EXAMPLES / "model" / "config.json", folder / "config.json")
    shutil.copy(EXAMPLES / "hardware" / "my_gpu.yaml", folder / "my_gpu.yaml")
    config = _disaggregated_mtp({"type": "estimator", "estimator": "roofline"})
    engine = config["engine"]
    assert isinstance(engine, dict)
    engine["model"] = "config.json"
    engine["hardware"] = "my_gpu.yaml"
    engine["backend"] = "vllm"
    del engine["speculation"]
    (folder / "replay.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    result = run_replay("cfg/replay.yaml").summary
    assert result["completed_requests"] == 5
    assert (result["config"]["model"], result["config"]["hardware"]) == ("config.json", "my_gpu")
    # The same config with absolute paths gives the same replay (the names in results are the
    # paths as given).
    engine["model"] = str(folder / "config.json")
    engine["hardware"] = str(folder / "my_gpu.yaml")
    absolute = run_replay(config).summary
    assert {**absolute, "config": None} == {**result, "config": None}
    # A mapping's relative paths are taken from base_dir; without one, from the working
    # directory, where there is no such file.
    engine["model"] = "config.json"
    from_base = run_replay(config, base_dir=folder).summary
    assert {**from_base, "config": None} == {**result, "config": None}
    with pytest.raises(ConfigError) as caught:
        run_replay(config)
    assert str(caught.value).startswith("engine.model: model config file not found: ")


def _fixed_timing_config() -> dict[str, object]:
    return _disaggregated_mtp({"type": "fixed", "prefill_ms": 40.0, "decode_ms": 12.0})


def test_traffic_blocks_are_typed_by_their_type() -> None:
    config = _fixed_timing_config()
    traffic = config["traffic"]
    assert isinstance(traffic, dict)
    traffic["source"]["prompt_tokens"] = {"type": "uniform", "min": 16, "max": 64}
    root = validate(ReplayFile, config)
    assert isinstance(root.traffic.source, SyntheticSource)
    assert isinstance(root.traffic.source.prompt_tokens, UniformLength)
    assert root.traffic.source.output_tokens == 16  # a number is the length itself
    assert isinstance(root.traffic.load, RateLoad) and root.traffic.load.rate_rps == 4.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"prompt_tokens": {"type": "uniform", "min": 300, "max": 200}},
            f"traffic.source.prompt_tokens.max: expected an integer in 300..{MAX_TOKENS}, got 200",
        ),
        (
            {"prompt_tokens": {"type": "gamma", "mean": 3}},
            "traffic.source.prompt_tokens.type: expected one of fixed, uniform, normal, "
            "lognormal, got 'gamma'",
        ),
        (
            {"prompt_tokens": "long"},
            "traffic.source.prompt_tokens: expected a mapping, got 'long' (str)",
        ),
        (
            {"type": "poisson"},
            "traffic.source.type: expected one of synthetic, trace, agentic, got 'poisson'",
        ),
    ],
)
def test_a_bad_traffic_value_names_its_full_path(change: dict[str, object], message: str) -> None:
    config = _fixed_timing_config()
    traffic = config["traffic"]
    assert isinstance(traffic, dict)
    traffic["source"].update(change)
    with pytest.raises(ConfigError) as caught:
        build_plan(config)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # Types are checked with the block; the range, which depends on the kind's depth,
        # once the depth is known (2 here: 0..2 accepted drafts, a length in 1..3).
        (
            "acceptance_length",
            "long",
            "engine.workers.decode.speculation.acceptance_length: expected a number, got "
            "'long' (str)",
        ),
        (
            "acceptance_length",
            3.5,
            "engine.workers.decode.speculation.acceptance_length: expected a finite number in "
            "1.0..3.0, got 3.5",
        ),
        (
            "num_speculative_tokens_per_batch_size",
            [[4, 2, 2]],
            "engine.workers.decode.speculation.num_speculative_tokens_per_batch_size[0]: "
            "batch-size range start 4 is above its end 2",
        ),
        (
            "num_speculative_tokens_per_batch_size",
            [[1, 8, 2], [9, 70000, 1]],
            "engine.workers.decode.speculation.num_speculative_tokens_per_batch_size[1][1]: "
            "expected an integer in 1..65536, got 70000",
        ),
    ],
)
def test_a_bad_speculation_value_names_its_full_path(
    field: str, value: object, message: str
) -> None:
    config = _fixed_timing_config()
    engine = config["engine"]
    assert isinstance(engine, dict)
    engine["backend"] = "vllm"
    block = {"kind": "mtp", "params": {"depth": 2}, field: value}
    if field != "acceptance_length":
        block["acceptance_rates"] = [0.8, 0.6]
    engine["workers"]["decode"]["speculation"] = block
    with pytest.raises(ConfigError) as caught:
        build_plan(config)
    assert str(caught.value) == message


def test_an_estimator_file_takes_its_relative_model_path_from_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    shutil.copy(EXAMPLES / "model" / "config.json", folder / "config.json")
    (folder / "estimator.yaml").write_text(
        "model: config.json\nhardware: h100_sxm\nestimator: roofline\n"
    )
    monkeypatch.chdir(tmp_path)
    estimator = best_available("cfg/estimator.yaml")
    assert estimator.name == "roofline"
    with pytest.raises(ConfigError) as caught:
        best_available({"model": 3})
    assert str(caught.value) == "model: expected a model name or config.json path, got 3 (int)"


_EAGLE3_DRAFT = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 1,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}


def test_a_model_drafters_config_is_read_by_its_model_with_the_block() -> None:
    block = {"kind": "eagle3", "params": {"num_speculative_tokens": 3}}
    typed = validate(SpeculationConfig, {**block, "draft_config": _EAGLE3_DRAFT}, "speculation")
    assert isinstance(typed.draft, DraftModelFile)
    assert (typed.draft.hidden_size, typed.draft.draft_vocab_size) == (4096, None)
    # Only a model drafter's config is a model's config.json.
    assert validate(SpeculationConfig, {"kind": "mtp"}, "speculation").draft is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # The target's rules for the draft's numbers (rms_norm_eps in 0..1, no numeric strings).
        (
            "rms_norm_eps",
            "1e-5",
            "expected a finite number in 0.0..1.0, got '1e-5' (str)",
        ),
        ("rms_norm_eps", -9.2e18, "expected a finite number in 0.0..1.0, got -9.2e+18"),
        ("draft_vocab_size", 0, "expected an integer in 1..16777216, got 0"),
        ("block_size", "16", "expected an integer in 1..65, got '16' (str)"),
    ],
)
def test_a_bad_draft_config_number_names_its_full_path_in_a_replay(
    field: str, value: object, message: str
) -> None:
    config = _fixed_timing_config()
    engine = config["engine"]
    assert isinstance(engine, dict)
    engine["backend"] = "vllm"
    engine["model"] = "meta-llama/Meta-Llama-3.1-8B"
    engine["workers"]["decode"]["speculation"] = {
        "kind": "eagle3",
        "params": {"num_speculative_tokens": 3},
        "acceptance_rates": [0.8, 0.6, 0.4],
        "draft_config": {**_EAGLE3_DRAFT, field: value},
    }
    with pytest.raises(ConfigError) as caught:
        build_plan(config)
    assert str(caught.value) == f"engine.workers.decode.speculation.draft_config.{field}: {message}"


def test_a_heads_drafters_config_is_read_by_its_model_with_the_block() -> None:
    heads = {"num_heads": 3, "num_hidden_layers": 1, "hidden_size": 4096, "vocab_size": 32000}
    typed = validate(
        SpeculationConfig, {"kind": "medusa", "draft_config": {**heads, "extra": 1}}, "speculation"
    )
    assert isinstance(typed.heads, MedusaFile) and typed.draft is None
    assert (typed.heads.count(), typed.heads.geometry()) == (
        3,
        [["num_heads", 3], ["num_hidden_layers", 1], ["hidden_size", 4096], ["vocab_size", 32000]],
    )
    del heads["num_hidden_layers"]
    with pytest.raises(ConfigError) as caught:
        validate(SpeculationConfig, {"kind": "medusa", "draft_config": heads}, "speculation")
    assert str(caught.value) == (
        "speculation.draft_config.num_hidden_layers: kind medusa needs the heads' config.json "
        "with num_heads, num_hidden_layers, hidden_size, vocab_size"
    )


def test_a_relative_draft_model_path_resolves_against_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cfg/replay.yaml names its draft model as draft/config.json beside it; run from the parent
    # folder, the roofline prices that draft (before, the path was looked up in the working
    # directory, found nothing, and the roofline refused the drafter as having no geometry).
    folder = tmp_path / "cfg"
    (folder / "draft").mkdir(parents=True)
    draft = {**_EAGLE3_DRAFT, "num_hidden_layers": 2, "vocab_size": 151936}
    (folder / "draft" / "config.json").write_text(json.dumps(draft))
    config = _disaggregated_mtp({"type": "estimator", "estimator": "roofline"})
    engine = config["engine"]
    assert isinstance(engine, dict)
    engine["backend"] = "vllm"
    engine["speculation"] = {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 2},
        "draft_model_path": "draft/config.json",
        "acceptance_rates": [0.8, 0.6],
    }
    (folder / "replay.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    result = run_replay("cfg/replay.yaml").summary
    assert result["completed_requests"] == 5
    # The same draft named by an absolute path gives the same replay.
    engine["speculation"]["draft_model_path"] = str(folder / "draft" / "config.json")  # type: ignore[index]
    absolute = run_replay(config).summary
    assert {**absolute, "config": None} == {**result, "config": None}
