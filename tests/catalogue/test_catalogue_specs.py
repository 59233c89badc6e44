"""Catalogue geometry against published figures and hand-derived KV sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aisim.catalogue import gpu_names, model_names
from aisim.config import get_gpu, get_model
from aisim.errors import ConfigError


@pytest.mark.parametrize(
    ("name", "published_billions", "tolerance"),
    [
        # Parameter counts as published on each model card.
        ("Qwen/Qwen3-0.6B", 0.6, 0.01),
        ("Qwen/Qwen3-8B", 8.2, 0.01),
        ("meta-llama/Meta-Llama-3.1-8B", 8.03, 0.005),
        ("meta-llama/Meta-Llama-3.1-70B", 70.6, 0.01),
        ("Qwen/Qwen3-30B-A3B", 30.5, 0.01),
        ("mistralai/Mixtral-8x7B-v0.1", 46.7, 0.01),
        ("deepseek-ai/DeepSeek-V3", 671.0, 0.01),
        ("deepseek-ai/DeepSeek-R1", 671.0, 0.01),
    ],
)
def test_parameter_counts_match_published_sizes(
    name: str, published_billions: float, tolerance: float
) -> None:
    billions = get_model(name).num_parameters / 1e9
    assert billions == pytest.approx(published_billions, rel=tolerance)


def test_kv_bytes_per_token_hand_derived() -> None:
    # Llama-3.1-8B: 32 layers x (K and V) x 8 KV heads x 128 head dim x 2 bytes (bf16).
    assert get_model("meta-llama/Meta-Llama-3.1-8B").kv_bytes_per_token == 32 * 2 * 8 * 128 * 2
    # DeepSeek-V3 (MLA): 61 layers x (512 latent + 64 rope) x 2 bytes.
    assert get_model("deepseek-ai/DeepSeek-V3").kv_bytes_per_token == 61 * (512 + 64) * 2


def test_families_drive_scheme_gates() -> None:
    assert get_model("Qwen/Qwen3-8B").family == "llama"
    assert get_model("meta-llama/Meta-Llama-3.1-8B").is_llama_like
    assert get_model("Qwen/Qwen3-30B-A3B").family == "moe"
    assert get_model("deepseek-ai/DeepSeek-V3").family == "mla"


def test_short_names_and_aliases() -> None:
    assert get_model("qwen3-8b").name == "Qwen/Qwen3-8B"
    assert get_gpu("h100").name == "h100_sxm"
    assert get_gpu("H200_SXM").hbm_bytes_per_s == 4.8e12
    assert "gb200" in gpu_names()
    assert len(model_names()) == 11


def test_user_model_file(tmp_path: Path) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 512,
        "vocab_size": 1000,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    spec = get_model(str(path))
    assert spec.head_dim == 64
    assert spec.kv_bytes_per_token == 4 * 2 * 2 * 64 * 2


def test_user_gpu_file(tmp_path: Path) -> None:
    path = tmp_path / "mygpu.yaml"
    path.write_text(
        "bf16_dense_flops: 1.0e15\nhbm_bytes_per_s: 3.0e12\nhbm_capacity_bytes: 8.0e10\n"
    )
    gpu = get_gpu(str(path))
    assert gpu.name == "mygpu"
    assert gpu.bf16_flops == 1e15


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("not-a-model", "model: unknown model 'not-a-model'"),
        (42, "model: expected a model name"),
        (
            {"hidden_size": 256, "num_attention_heads": 4},
            "model.num_hidden_layers: required field is missing",
        ),
        ({"hidden_size": True, "num_attention_heads": 4}, "model.hidden_size: expected an integer"),
        (
            {"hidden_size": "wide", "num_attention_heads": 4},
            "model.hidden_size: expected an integer",
        ),
    ],
)
def test_bad_models_name_the_field(value: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        get_model(value)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("tpu9", "hardware: unknown hardware 'tpu9'"),
        ({"bf16_dense_flops": 1e15}, "hardware.hbm_bytes_per_s: required field is missing"),
        ({"bf16_dense_flops": float("nan"), "hbm_bytes_per_s": 1.0}, "expected a finite number"),
    ],
)
def test_bad_gpus_name_the_field(value: object, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_gpu(value)
    assert fragment in str(info.value)


def test_a_hardware_path_that_is_not_a_readable_file_is_named_as_a_file(tmp_path: Path) -> None:
    """A misspelt 'my_gpu.yaml' or a folder used to read 'unknown hardware ...; built-in: ...',
    as if a GPU name had been given."""
    (tmp_path / "gpus").mkdir()
    cases = {
        str(tmp_path / "my_gpu.yaml"): f"hardware: hardware file not found: "
        f"{str(tmp_path / 'my_gpu.yaml')!r}",
        str(tmp_path / "gpus"): f"hardware: hardware {str(tmp_path / 'gpus')!r}: is a folder, "
        "not a file",
    }
    for given, message in cases.items():
        with pytest.raises(ConfigError) as info:
            get_gpu(given)
        assert str(info.value) == message


def test_catalogue_specs_are_frozen_and_never_shared_mutable() -> None:
    # A newcomer's trial: this assignment used to change every later estimate in the process.
    import dataclasses

    model = get_model("Qwen/Qwen3-8B")
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.num_layers = 1  # type: ignore[misc]
    assert get_model("Qwen/Qwen3-8B").num_layers == 36
    gpu = get_gpu("h100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.hbm_bytes_per_s = 1.0  # type: ignore[misc]
    changed = dataclasses.replace(model, num_layers=1)
    assert (changed.num_layers, get_model("Qwen/Qwen3-8B").num_layers) == (1, 36)


def test_user_model_files_are_strict(tmp_path: Path) -> None:
    """Numeric strings and zero geometry in a user's config.json are errors (issue 17); only
    the built-in rows, copied as text, are typed on load."""
    config = {
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": "2",
        "vocab_size": 1000,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ConfigError) as info:
        get_model(str(path))
    assert str(info.value) == (
        "model.num_key_value_heads: expected an integer in 1..16777216, got '2' (str)"
    )
    path.write_text(json.dumps({**config, "num_key_value_heads": 2, "head_dim": 0}))
    with pytest.raises(ConfigError) as info:
        get_model(str(path))
    assert str(info.value) == "model.head_dim: expected an integer in 1..16777216, got 0"


def test_user_gpu_files_are_strict_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("bf16_dense_flops: '1e15'\nhbm_bytes_per_s: 3.0e12\nhbm_capacity_bytes: 8e10\n")
    with pytest.raises(ConfigError) as info:
        get_gpu(str(path))
    assert str(info.value) == (
        "hardware.bf16_dense_flops: expected a finite number in 0.0..1e+20, got '1e15' (str)"
    )
    path.write_text("bf16_dense_flops: 1e-300\nhbm_bytes_per_s: 3.0e12\nhbm_capacity_bytes: 8e10\n")
    with pytest.raises(ConfigError) as info:
        get_gpu(str(path))
    assert str(info.value) == "hardware: bf16_dense_flops and hbm_bytes_per_s must be >= 1"


def test_yaml_reads_short_exponents_as_numbers() -> None:
    """YAML 1.2 reads 1e15 and 1.0e15 as numbers; PyYAML alone returns the strings."""
    from aisim._io import parse_yaml_text

    loaded = parse_yaml_text("[1e15, 1.0e15, 2E-3, 1.0e+15, 12, e5, 1e5x]", "f")
    assert loaded == [1e15, 1e15, 0.002, 1e15, 12, "e5", "1e5x"]


def test_shared_cost_terms_are_frozen() -> None:
    import dataclasses

    from aisim.catalogue._costs import IDEAL_TERMS, MEASURED_TERMS

    for terms in (MEASURED_TERMS, IDEAL_TERMS):
        with pytest.raises(dataclasses.FrozenInstanceError):
            terms.kernel_overhead_s = 0.0  # type: ignore[misc]


def test_an_integer_beyond_any_float_is_a_range_error(tmp_path: Path) -> None:
    # Found by the fuzz campaign: 10**400 as a GPU figure made float() raise OverflowError.
    path = tmp_path / "g.yaml"
    path.write_text(
        f"bf16_dense_flops: {10**400}\nhbm_bytes_per_s: 3.0e12\nhbm_capacity_bytes: 8\n"
    )
    with pytest.raises(ConfigError) as info:
        get_gpu(str(path))
    assert str(info.value) == (
        "hardware.bf16_dense_flops: expected a finite number in 0.0..1e+20, got 1e+400"
    )


def test_builtin_specs_are_what_the_file_parser_makes_of_the_published_rows() -> None:
    """The built-in specs are typed in aisim/catalogue/_data.py; the published config.json /
    gpus.csv rows they came from are kept as data, and the edge's parser must turn each into
    exactly the built-in spec (an independent path: the parser fills the Hugging Face defaults)."""
    from aisim.catalogue import builtin_gpu, builtin_model

    sources = json.loads((Path(__file__).parent / "data" / "builtin_sources.json").read_text())
    assert sorted(row["model"] for row in sources["models"]) == model_names()
    assert sorted(row["system"] for row in sources["gpus"]) == gpu_names()
    for row in sources["models"]:
        assert get_model({**row, "name": row["model"]}) == builtin_model(row["model"])
    for row in sources["gpus"]:
        assert get_gpu(row) == builtin_gpu(row["system"])


def test_hardware_files_reject_unknown_fields() -> None:
    with pytest.raises(ConfigError) as info:
        get_gpu({"bf16_dense_flops": 1e15, "hbm_bytes_per_s": 3e12, "hbm_capacity": 8e10})
    assert str(info.value) == (
        "hardware: unknown field(s) hbm_capacity; allowed: bf16_dense_flops, fp4_dense_flops, "
        "fp8_dense_flops, "
        "hbm_bytes_per_s, hbm_capacity_bytes, nvlink_bytes_per_s_per_gpu, sm_version, system, "
        "tdp_w"
    )
