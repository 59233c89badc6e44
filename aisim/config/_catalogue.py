"""Model and hardware inputs: a catalogue name, a file, or a mapping -> a frozen spec.

``ModelFile`` is a Hugging Face style ``config.json`` (the fields aisim prices; the many others
such a file carries are ignored) and ``HardwareFile`` a GPU's ``gpus.csv`` columns as a YAML or
JSON mapping (unknown fields rejected). ``get_model`` / ``get_gpu`` resolve what a user gives
(``--model``, ``engine.hardware``, ...): a built-in name from ``aisim.catalogue``, a file path
(read here: the catalogue does no I/O) or a mapping. ``aisim schema model|hardware`` prints the
JSON Schemas.

Sizes are integers in 1..``MAX_GEOMETRY`` where a zero is meaningless (layers, hidden size,
heads, KV heads, head_dim, intermediate size, vocabulary) and in 0..``MAX_GEOMETRY`` where zero
means "absent" (experts, MLA ranks, MTP layers); the bound keeps every derived byte and FLOP
count finite as a float. GPU figures are finite and at most ``MAX_GPU_FIGURE``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, ClassVar, Final, TypeVar

from pydantic import ConfigDict, Field

from aisim._fields import describe, join_path
from aisim._io import check_path_text, parse_json_text, parse_yaml_text
from aisim.catalogue import (
    DTYPE_BYTES,
    LLAMA_LIKE_MODEL_TYPES,
    MAX_GEOMETRY,
    MAX_GPU_FIGURE,
    GpuSpec,
    ModelSpec,
    builtin_gpu,
    builtin_model,
    gpu_names,
    model_names,
)
from aisim.config._edge import Choice, EdgeModel, Integer, Number, OrNone, check_input, validate
from aisim.errors import ConfigError

T = TypeVar("T")

Size = Annotated[int, Integer(1, MAX_GEOMETRY)]
MaybeSize = Annotated[int | None, OrNone(Integer(1, MAX_GEOMETRY))]
MaybeCount = Annotated[int | None, OrNone(Integer(0, MAX_GEOMETRY))]
Figure = Annotated[float, Number(0.0, MAX_GPU_FIGURE)]
MaybeFigure = Annotated[float | None, OrNone(Number(0.0, MAX_GPU_FIGURE))]
Dtype = Annotated[str | None, OrNone(Choice(*sorted(DTYPE_BYTES)))]


#: The ``model_type`` values the cost model prices: the dense Llama block shape
#: (``LLAMA_LIKE_MODEL_TYPES``), mixture-of-experts (experts from the config's expert counts)
#: and MLA (DeepSeek's latent KV). Any other architecture would be priced as a dense Llama,
#: silently, so it is refused.
MOE_MODEL_TYPES: Final = ("qwen2_moe", "qwen3_moe", "mixtral", "deepseek_v2", "deepseek_v3")
KNOWN_MODEL_TYPES: Final = (*LLAMA_LIKE_MODEL_TYPES, *MOE_MODEL_TYPES)


class ModelFile(EdgeModel):
    """The ``config.json`` fields that set a decoder's cost (JSON numbers and booleans; a numeric
    string such as ``"8"`` is an error). A ``null`` or absent optional field takes its
    Hugging Face default."""

    model_config = ConfigDict(
        extra="ignore", frozen=True, strict=True, allow_inf_nan=False, protected_namespaces=()
    )
    edge_ignores_unknown: ClassVar[bool] = True
    edge_null_is_absent: ClassVar[bool] = True

    model_type: Annotated[str | None, Field(description="architecture family")] = None
    hidden_size: Size
    num_attention_heads: Size
    head_dim: MaybeSize = Field(None, description="default hidden_size / num_attention_heads")
    num_experts: MaybeCount = None
    num_local_experts: MaybeCount = None
    n_routed_experts: MaybeCount = None
    tie_word_embeddings: bool | None = None
    torch_dtype: Dtype = Field(None, description="default bfloat16")
    num_hidden_layers: Size
    intermediate_size: MaybeSize = Field(None, description="default 4 x hidden_size")
    num_key_value_heads: MaybeSize = Field(None, description="default num_attention_heads")
    vocab_size: Size
    num_experts_per_tok: MaybeCount = None
    moe_intermediate_size: MaybeCount = None
    n_shared_experts: MaybeCount = None
    first_k_dense_replace: MaybeCount = None
    kv_lora_rank: MaybeCount = None
    q_lora_rank: MaybeCount = None
    qk_nope_head_dim: MaybeCount = None
    qk_rope_head_dim: MaybeCount = None
    v_head_dim: MaybeCount = None
    num_nextn_predict_layers: MaybeCount = None
    max_position_embeddings: MaybeCount = None
    layer_types: Annotated[
        list[str] | None,
        Field(description="hybrid models: each layer's 'linear_attention' or 'full_attention'"),
    ] = None
    full_attention_interval: Annotated[
        int | None,
        OrNone(Integer(1, MAX_GEOMETRY)),
        Field(description="hybrid models without layer_types: every N-th layer is full attention"),
    ] = None
    linear_num_key_heads: MaybeCount = None
    linear_num_value_heads: MaybeCount = None
    linear_key_head_dim: MaybeCount = None
    linear_value_head_dim: MaybeCount = None
    mamba_ssm_dtype: Annotated[
        str | None,
        OrNone(Choice(*sorted(DTYPE_BYTES))),
        Field(description="linear-attention recurrent state dtype; default torch_dtype"),
    ] = None
    attn_output_gate: Annotated[
        bool | None, Field(description="gated full attention (default: true for qwen3_5_text)")
    ] = None
    rms_norm_eps: Annotated[
        float | None, OrNone(Number(0.0, 1.0)), Field(description="RMSNorm epsilon")
    ] = None
    name: Annotated[str | None, Field(description="the model's name in results")] = None

    def to_spec(self, name: str, path: str) -> ModelSpec:
        """The frozen ``ModelSpec`` (Hugging Face defaults filled in)."""
        hidden = self.hidden_size
        heads = self.num_attention_heads
        if self.head_dim is None and hidden % heads != 0:
            raise ConfigError(
                f"{join_path(path, 'head_dim')}: required when hidden_size ({hidden}) is not "
                f"divisible by num_attention_heads ({heads})"
            )
        kv_heads = _or(self.num_key_value_heads, heads)
        if kv_heads > heads or heads % kv_heads:
            # Grouped-query attention shares each KV head among heads / kv_heads query heads.
            raise ConfigError(
                f"{join_path(path, 'num_key_value_heads')}: expected a divisor of "
                f"num_attention_heads ({heads}), got {kv_heads}"
            )
        model_type = _or(self.model_type, "llama")
        if model_type not in KNOWN_MODEL_TYPES:
            raise ConfigError(
                f"{join_path(path, 'model_type')}: unknown architecture {model_type!r}; priced "
                f"are {', '.join(KNOWN_MODEL_TYPES)} (set model_type: llama to price a dense "
                "decoder of the Llama block shape as one)"
            )
        intermediate = _or(self.intermediate_size, 4 * hidden)
        linear_layers = self._linear_layers(path)
        linear_heads = (
            self.linear_num_key_heads,
            self.linear_num_value_heads,
            self.linear_key_head_dim,
            self.linear_value_head_dim,
        )
        if linear_layers > 0 and any(value is None or value < 1 for value in linear_heads):
            raise ConfigError(
                f"{join_path(path, 'linear_num_value_heads')}: a model with linear-attention "
                "layers needs linear_num_key_heads, linear_num_value_heads, linear_key_head_dim "
                "and linear_value_head_dim (integers >= 1)"
            )
        gate = _or(self.attn_output_gate, model_type == "qwen3_5_text")
        experts = max(
            _or(self.num_experts, 0), _or(self.num_local_experts, 0), _or(self.n_routed_experts, 0)
        )
        if model_type in MOE_MODEL_TYPES:
            self._check_experts(model_type, experts, path)
        return ModelSpec(
            name=name,
            model_type=model_type,
            num_layers=self.num_hidden_layers,
            hidden_size=hidden,
            intermediate_size=intermediate,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=_or(self.head_dim, hidden // heads),
            vocab_size=self.vocab_size,
            tie_word_embeddings=_or(self.tie_word_embeddings, False),
            num_experts=experts,
            experts_per_token=_or(self.num_experts_per_tok, 0),
            # Mixtral-style configs size experts with intermediate_size.
            moe_intermediate_size=_or(self.moe_intermediate_size, intermediate if experts else 0),
            num_shared_experts=_or(self.n_shared_experts, 0),
            first_dense_layers=_or(self.first_k_dense_replace, 0),
            kv_lora_rank=_or(self.kv_lora_rank, 0),
            q_lora_rank=_or(self.q_lora_rank, 0),
            qk_nope_head_dim=_or(self.qk_nope_head_dim, 0),
            qk_rope_head_dim=_or(self.qk_rope_head_dim, 0),
            v_head_dim=_or(self.v_head_dim, 0),
            num_nextn_predict_layers=_or(self.num_nextn_predict_layers, 0),
            dtype_bytes=DTYPE_BYTES[_or(self.torch_dtype, "bfloat16")],
            max_position_embeddings=_or(self.max_position_embeddings, 0),
            linear_attention_layers=linear_layers,
            linear_num_key_heads=_or(self.linear_num_key_heads, 0) if linear_layers else 0,
            linear_num_value_heads=_or(self.linear_num_value_heads, 0) if linear_layers else 0,
            linear_key_head_dim=_or(self.linear_key_head_dim, 0) if linear_layers else 0,
            linear_value_head_dim=_or(self.linear_value_head_dim, 0) if linear_layers else 0,
            linear_state_dtype_bytes=(
                DTYPE_BYTES[self.mamba_ssm_dtype]
                if linear_layers and self.mamba_ssm_dtype is not None
                else 0
            ),
            attention_output_gate=gate,
        )

    def _check_experts(self, model_type: str, experts: int, path: str) -> None:
        """A mixture-of-experts architecture states its experts and routes each token to 1..all
        of them: without experts it would be priced as a dense model, with 0 routed experts as
        one whose MLP is free, with more than there are as reading weights that do not exist."""
        if experts < 1:
            field = "n_routed_experts" if model_type.startswith("deepseek") else "num_experts"
            if model_type == "mixtral":
                field = "num_local_experts"
            raise ConfigError(
                f"{join_path(path, field)}: a {model_type} model needs its expert count (an "
                f"integer >= 1), got {getattr(self, field)!r}"
            )
        if self.moe_intermediate_size == 0:
            raise ConfigError(
                f"{join_path(path, 'moe_intermediate_size')}: expected an integer >= 1 (an "
                "expert's MLP width; leave it out for intermediate_size), got 0"
            )
        routed = self.num_experts_per_tok
        if routed is None or not 1 <= routed <= experts:
            raise ConfigError(
                f"{join_path(path, 'num_experts_per_tok')}: expected an integer in 1..{experts} "
                f"(the experts a token is routed to, at most the {experts} experts), got {routed!r}"
            )

    def _linear_layers(self, path: str) -> int:
        """How many layers are Gated DeltaNet linear attention: ``layer_types`` (one entry per
        layer), else ``full_attention_interval`` N (Hugging Face Qwen3-Next / Qwen3.5: layer i is
        full attention when (i + 1) % N == 0), else none."""
        layers = self.num_hidden_layers
        if self.layer_types is not None:
            kinds = self.layer_types
            if len(kinds) != layers:
                raise ConfigError(
                    f"{join_path(path, 'layer_types')}: expected {layers} entries (one per "
                    f"layer, num_hidden_layers), got {len(kinds)}"
                )
            for index, kind in enumerate(kinds):
                if kind not in ("linear_attention", "full_attention"):
                    raise ConfigError(
                        f"{join_path(path, f'layer_types[{index}]')}: expected "
                        f"'linear_attention' or 'full_attention', got {kind!r}"
                    )
            return sum(1 for kind in kinds if kind == "linear_attention")
        interval = self.full_attention_interval
        if interval is None or interval <= 1:
            return 0
        return layers - layers // interval


class HardwareFile(EdgeModel):
    """One accelerator's vendor peak figures: the ``gpus.csv`` columns as a YAML/JSON mapping
    (numbers; a numeric string is an error; ``null`` is a field left out)."""

    edge_null_is_absent: ClassVar[bool] = True

    system: Annotated[str | None, Field(description="the GPU's name in results")] = None
    bf16_dense_flops: Figure
    fp8_dense_flops: MaybeFigure = None
    hbm_bytes_per_s: Figure
    hbm_capacity_bytes: Figure
    nvlink_bytes_per_s_per_gpu: MaybeFigure = None
    tdp_w: MaybeFigure = None
    sm_version: MaybeFigure = None
    fp4_dense_flops: MaybeFigure = None

    def to_spec(self, name: str, path: str) -> GpuSpec:
        """The frozen ``GpuSpec``; FLOP/s and bandwidth of at least 1 keep every time finite."""
        if self.bf16_dense_flops < 1.0 or self.hbm_bytes_per_s < 1.0:
            raise ConfigError(f"{path}: bf16_dense_flops and hbm_bytes_per_s must be >= 1")
        return GpuSpec(
            name=name,
            bf16_flops=self.bf16_dense_flops,
            fp8_flops=_or(self.fp8_dense_flops, 0.0),
            hbm_bytes_per_s=self.hbm_bytes_per_s,
            hbm_capacity_bytes=int(self.hbm_capacity_bytes),
            nvlink_bytes_per_s=_or(self.nvlink_bytes_per_s_per_gpu, 0.0),
            tdp_w=_or(self.tdp_w, 0.0),
            sm_version=int(_or(self.sm_version, 0.0)),
            fp4_flops=_or(self.fp4_dense_flops, 0.0),
        )


def _or(value: T | None, default: T) -> T:
    return default if value is None else value


def model_spec(mapping: object, name: str, path: str = "model") -> ModelSpec:
    """A ``ModelSpec`` from a ``config.json`` mapping; one ``ConfigError`` under ``path``."""
    spec = validate(ModelFile, mapping, path).to_spec(name, path)
    check_input(mapping, path)
    return spec


def gpu_spec(mapping: object, name: str, path: str = "hardware") -> GpuSpec:
    """A ``GpuSpec`` from a mapping of the ``gpus.csv`` columns; one ``ConfigError``."""
    spec = validate(HardwareFile, mapping, path).to_spec(name, path)
    check_input(mapping, path)
    return spec


def _relative_to(file: Path, base_dir: Path | None) -> Path:
    """``file``, a relative one taken from ``base_dir`` (the folder of the file naming it)."""
    return file if base_dir is None or file.is_absolute() else base_dir / file


def _read_text(file: Path, path: str, what: str, read_as: str | None = None) -> str:
    """The file's UTF-8 text; a missing, unreadable or binary file is one ``ConfigError``
    (``what`` names it: ``"model config"``; ``read_as`` in 'cannot read ...', default
    ``what``)."""
    from aisim._io import MAX_DOCUMENT_BYTES, input_file_problem, read_input_bytes

    problem = input_file_problem(file, MAX_DOCUMENT_BYTES)
    if problem == "file not found":
        raise ConfigError(f"{path}: {what} file not found: {str(file)!r}")
    try:
        return read_input_bytes(file, MAX_DOCUMENT_BYTES, f"{path}: {what} {str(file)!r}").decode(
            "utf-8"
        )
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: cannot read {read_as or what} {str(file)!r}: {' '.join(str(exc).split())}"
        ) from None


def check_tensor_parallel(tensor: int, model: ModelSpec, field: str) -> None:
    """``tensor`` GPUs can split ``model``'s attention heads evenly; else a ``ConfigError`` at
    ``field`` listing the divisors. vLLM refuses the same deployment
    (``ModelConfig.verify_with_parallel_config``): each GPU holds heads / TP whole heads."""
    heads = model.num_attention_heads
    if tensor >= 1 and heads % tensor != 0:
        small = [d for d in range(1, math.isqrt(heads) + 1) if heads % d == 0]
        divisors = ", ".join(str(d) for d in sorted({*small, *(heads // d for d in small)}))
        raise ConfigError(
            f"{field}: {tensor} does not divide the {heads} attention heads of {model.name} "
            f"(each GPU must hold whole heads); expected one of {divisors}"
        )


def get_model(name_or_path: object, path: str = "model", base_dir: Path | None = None) -> ModelSpec:
    """A built-in model by name (case-insensitive short names allowed), a ``config.json`` path
    (or the folder holding one; a relative one is taken from ``base_dir``, the folder of the
    file that names it, default the working directory), a config mapping, a validated
    ``ModelFile``, or a ``ModelSpec`` as is."""
    if isinstance(name_or_path, ModelSpec):
        return name_or_path
    if isinstance(name_or_path, ModelFile):
        return name_or_path.to_spec(name_or_path.name or "custom", path)
    if isinstance(name_or_path, dict):
        name = name_or_path.get("name")
        return model_spec(name_or_path, name if isinstance(name, str) else "custom", path)
    if not isinstance(name_or_path, str):
        raise ConfigError(
            f"{path}: expected a model name or config.json path, got {describe(name_or_path)}"
        )
    builtin = builtin_model(name_or_path)
    if builtin is not None:
        return builtin
    file = _relative_to(check_path_text(name_or_path, path), base_dir)
    if file.suffix == ".json" or file.is_file() or file.is_dir():
        if file.is_dir():
            file = file / "config.json"
        text = _read_text(file, path, "model config")
        mapping = parse_json_text(text, f"{path}: model config {str(file)!r}")
        return model_spec(mapping, name_or_path, path)
    raise ConfigError(
        f"{path}: unknown model {name_or_path!r}; built-in models: {', '.join(model_names())} "
        "(or give a path to a config.json)"
    )


def get_gpu(name_or_path: object, path: str = "hardware", base_dir: Path | None = None) -> GpuSpec:
    """A built-in GPU by name (``h100`` == ``h100_sxm``), a JSON/YAML file path (a relative one
    is taken from ``base_dir``, as ``get_model`` does), a mapping, a validated ``HardwareFile``,
    or a ``GpuSpec`` as is."""
    if isinstance(name_or_path, GpuSpec):
        return name_or_path
    if isinstance(name_or_path, HardwareFile):
        return name_or_path.to_spec(name_or_path.system or "custom", path)
    if isinstance(name_or_path, dict):
        name = name_or_path.get("system")
        return gpu_spec(name_or_path, name if isinstance(name, str) else "custom", path)
    if not isinstance(name_or_path, str):
        raise ConfigError(f"{path}: expected a GPU name or file path, got {describe(name_or_path)}")
    builtin = builtin_gpu(name_or_path)
    if builtin is not None:
        return builtin
    file = _relative_to(check_path_text(name_or_path, path), base_dir)
    # A name with a file's suffix, or anything there, is a file to read: a missing one, a
    # folder or a FIFO is named as such, not as an unknown GPU name.
    if file.suffix.lower() in (".json", ".yaml", ".yml") or os.path.lexists(file):
        text = _read_text(file, path, "hardware", "hardware file")
        source = f"{path}: hardware file {str(file)!r}"
        if file.suffix.lower() == ".json":
            mapping = parse_json_text(text, source)
        else:
            mapping = parse_yaml_text(text, source)
        return gpu_spec(mapping, file.stem, path)
    raise ConfigError(
        f"{path}: unknown hardware {name_or_path!r}; built-in: {', '.join(gpu_names())} "
        "(or give a path to a YAML/JSON file with the gpus.csv columns)"
    )
