"""Built-in model and GPU catalogues (copied from public facts), extensible by user files."""

from __future__ import annotations

from aisim._fields import describe
from aisim._io import (
    check_path_text,
    float_text_problem,
    int_text_problem,
    parse_json_text,
    parse_yaml_text,
)
from aisim.catalogue._data import GPU_ROWS, MODEL_ROWS
from aisim.catalogue._specs import GpuSpec, ModelSpec
from aisim.errors import ConfigError


def _typed(row: dict[str, str]) -> dict[str, object]:
    """A catalogue row (all text, as copied from the sources) with its numbers and booleans
    typed, so the parsers can refuse numeric strings in users' files."""
    typed: dict[str, object] = {}
    for key, text in row.items():
        value: object = text
        if text in ("True", "False"):
            value = text == "True"
        elif int_text_problem(text) is None:
            value = int(text)
        elif float_text_problem(text) is None:
            value = float(text)
        typed[key] = value
    return typed


_MODELS: dict[str, ModelSpec] = {
    row["model"]: ModelSpec.from_hf_config(_typed(row), row["model"]) for row in MODEL_ROWS
}
_GPUS: dict[str, GpuSpec] = {
    row["system"]: GpuSpec.from_mapping(_typed(row), row["system"]) for row in GPU_ROWS
}
# Short spellings users type: "h100" for "h100_sxm", "Qwen3-8B" for "Qwen/Qwen3-8B".
_GPU_ALIASES: dict[str, str] = {name.split("_")[0]: name for name in _GPUS}
_MODEL_ALIASES: dict[str, str] = {name.split("/")[-1].lower(): name for name in _MODELS}


def model_names() -> list[str]:
    return sorted(_MODELS)


def gpu_names() -> list[str]:
    return sorted(_GPUS)


def get_model(name_or_path: object, path: str = "model") -> ModelSpec:
    """A catalogue model by name (case-insensitive short names allowed), a ``config.json`` path,
    or a config mapping."""
    if isinstance(name_or_path, ModelSpec):
        return name_or_path
    if isinstance(name_or_path, dict):
        return ModelSpec.from_hf_config(name_or_path, str(name_or_path.get("name", "custom")), path)
    if not isinstance(name_or_path, str):
        raise ConfigError(
            f"{path}: expected a model name or config.json path, got {describe(name_or_path)}"
        )
    if name_or_path in _MODELS:
        return _MODELS[name_or_path]
    alias = _MODEL_ALIASES.get(name_or_path.split("/")[-1].lower())
    if alias is not None:
        return _MODELS[alias]
    file = check_path_text(name_or_path, path)
    if file.suffix == ".json" or file.is_file() or file.is_dir():
        if file.is_dir():
            file = file / "config.json"
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: model config file not found: {str(file)!r}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path}: cannot read model config {str(file)!r}: {' '.join(str(exc).split())}"
            ) from None
        mapping = parse_json_text(text, f"{path}: model config {str(file)!r}")
        return ModelSpec.from_hf_config(mapping, name_or_path, path)
    raise ConfigError(
        f"{path}: unknown model {name_or_path!r}; built-in models: {', '.join(model_names())} "
        "(or give a path to a config.json)"
    )


def get_gpu(name_or_path: object, path: str = "hardware") -> GpuSpec:
    """A catalogue GPU by name (``h100`` == ``h100_sxm``), a JSON/YAML file path, or a mapping."""
    if isinstance(name_or_path, GpuSpec):
        return name_or_path
    if isinstance(name_or_path, dict):
        return GpuSpec.from_mapping(name_or_path, str(name_or_path.get("system", "custom")), path)
    if not isinstance(name_or_path, str):
        raise ConfigError(f"{path}: expected a GPU name or file path, got {describe(name_or_path)}")
    key = name_or_path.lower()
    if key in _GPUS:
        return _GPUS[key]
    if key in _GPU_ALIASES:
        return _GPUS[_GPU_ALIASES[key]]
    file = check_path_text(name_or_path, path)
    if file.is_file():
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path}: cannot read hardware file {str(file)!r}: {' '.join(str(exc).split())}"
            ) from None
        source = f"{path}: hardware file {str(file)!r}"
        if file.suffix.lower() == ".json":
            mapping = parse_json_text(text, source)
        else:
            mapping = parse_yaml_text(text, source)
        return GpuSpec.from_mapping(mapping, file.stem, path)
    raise ConfigError(
        f"{path}: unknown hardware {name_or_path!r}; built-in: {', '.join(gpu_names())} "
        "(or give a path to a YAML/JSON file with the gpus.csv columns)"
    )


__all__ = ["GpuSpec", "ModelSpec", "get_gpu", "get_model", "gpu_names", "model_names"]
