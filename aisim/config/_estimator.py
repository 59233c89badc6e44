"""The estimator config edge: ``best_available(config)`` validates, loads, then selects.

Keys (the same appear under a replay worker's ``timing``):

* ``model`` (catalogue name, config.json path or mapping), ``hardware`` (catalogue name, file or
  mapping), ``backend`` (``vllm``/``sglang``, default ``vllm``), ``tensor_parallel`` (default 1);
* ``speculation``: a speculation block (or a ``ResolvedSpeculation``), optional;
* ``estimator``: ``auto`` (default) | ``roofline`` | ``roofline_ideal`` (the pure bound, only by
  name) | ``table`` | ``regression`` | ``measured_round``; ``fallback_policy``: ``deny``
  (default) | ``allow``;
* data: ``tables`` (paths of table files; a recorder ``sd_rounds.parquet`` gives one
  measured-round table per recorded draft length), ``points`` (in-memory STP point mappings) and
  ``measured_rounds`` (a list of ``{points, identity}`` mappings);
* ``role`` (``aggregated``/``prefill``/``decode``, default ``aggregated``) and ``timing_scope``
  (default ``round``): part of the identity measured rounds must match;
* ``deployment``: ``weights`` (``bf16``/``fp16``/``fp8``/``fp4``), ``kv_cache``
  (``bf16``/``fp16``/``fp8``), ``expert_parallel``, ``attention_data_parallel``,
  ``activation_scales`` (fp8 only: ``group``/``token``/``static``/``tensor``; default: the
  checkpoint's dtype, no EP, no attention DP, ``group``); the roofline prices them
  (``aisim.catalogue._deployment``).

The choice itself (measured_round > table > regression > roofline) is the core's
``aisim.fpm.select_estimator``; see docs/estimators.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from aisim._io import check_path_text
from aisim.catalogue import (
    ACTIVATION_SCALES,
    CHECKPOINT,
    KV_PRECISIONS,
    WEIGHT_PRECISIONS,
    Deployment,
    GpuSpec,
    ModelSpec,
)
from aisim.config._catalogue import (
    HardwareFile,
    ModelFile,
    check_tensor_parallel,
    get_gpu,
    get_model,
)
from aisim.config._edge import Choice, EdgeModel, Integer, NameOr, OrNone, check_input, validate
from aisim.config._speculation import resolve_speculation
from aisim.config._speculation_models import SpeculationConfig
from aisim.errors import ConfigError
from aisim.fpm import (
    ESTIMATORS,
    MeasuredRoundModel,
    SelectedModel,
    TableModel,
    load_table_models,
    measured_rounds_from_points,
    select_estimator,
    table_from_points,
)
from aisim.speculation import ResolvedSpeculation

#: In-memory table rows (``batch_size``, ``total_kv_tokens``, ``latency_ms``, ...): read by the
#: table reader of ``aisim.fpm``, which reads the rows of a table file too (one reader, one set
#: of messages for both).
Points = list[dict[str, Any]]


class MeasuredRoundsConfig(EdgeModel):
    """One in-memory measured SD-round table: its points and its identity."""

    points: Points | None = None
    identity: dict[str, Any] | None = None


class DeploymentConfig(EdgeModel):
    """Precision and parallelism beyond tensor parallelism (``Deployment``)."""

    weights: Annotated[str | None, OrNone(Choice(*WEIGHT_PRECISIONS))] = None
    kv_cache: Annotated[str | None, OrNone(Choice(*KV_PRECISIONS))] = None
    expert_parallel: Annotated[int, Integer(1, 1024)] = 1
    attention_data_parallel: Annotated[int, Integer(1, 1024)] = 1
    activation_scales: Annotated[str | None, OrNone(Choice(*ACTIVATION_SCALES))] = None

    def to_deployment(self) -> Deployment:
        return Deployment(
            self.weights or "",
            self.kv_cache or "",
            self.expert_parallel,
            self.attention_data_parallel,
            self.activation_scales or "",
        )


class EstimatorConfig(EdgeModel):
    """What ``best_available`` (and a replay worker's ``timing``) reads."""

    model: (
        Annotated[str | ModelFile | ModelSpec, NameOr("a model name or config.json path")] | None
    ) = None
    hardware: Annotated[str | HardwareFile | GpuSpec, NameOr("a GPU name or file path")] | None = (
        None
    )
    backend: Annotated[str, Choice("vllm", "sglang")] = "vllm"
    tensor_parallel: Annotated[int, Integer(1, 1024)] = 1
    estimator: Annotated[str, Choice(*ESTIMATORS)] = "auto"
    fallback_policy: Annotated[str, Choice("deny", "allow")] = "deny"
    role: Annotated[str, Choice("aggregated", "prefill", "decode")] = "aggregated"
    timing_scope: str = "round"
    speculation: (
        Annotated[
            SpeculationConfig | ResolvedSpeculation,
            NameOr("a speculation block (a mapping)"),
            WithJsonSchema(
                {"type": "object", "description": "a speculation block: aisim schema speculation"}
            ),
        ]
        | None
    ) = None
    tables: (
        Annotated[
            list[Any],
            BeforeValidator(lambda value: [value] if isinstance(value, str) else value),
            WithJsonSchema(
                {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
            ),
        ]
        | None
    ) = None
    points: Points | None = None
    measured_rounds: list[MeasuredRoundsConfig] | None = None
    deployment: DeploymentConfig | None = None


def best_available(
    config: object, path: str = "", *, base_dir: str | os.PathLike[str] | None = None
) -> SelectedModel:
    """The estimator ``config`` selects (see the module docstring); ``ConfigError`` if none.

    ``config`` may also be a YAML/JSON file path; its relative table paths are then resolved
    against the file's folder. For a mapping they resolve against ``base_dir`` (the folder of
    the file that holds the mapping), else the working directory. ``model``, ``hardware`` and
    ``speculation`` may be given resolved (``ModelSpec``, ``GpuSpec``, ``ResolvedSpeculation``):
    they are taken as they are.
    """
    folder = "" if base_dir is None else os.fspath(base_dir)
    if isinstance(config, str):
        from aisim._io import load_config_file

        folder = os.path.dirname(config)
        config = load_config_file(config)
    block = validate(EstimatorConfig, config, path)
    base = Path(folder) if folder else None
    model_spec: ModelSpec | None = None
    if block.model is not None:
        model_spec = get_model(block.model, _join(path, "model"), base)
        check_tensor_parallel(block.tensor_parallel, model_spec, _join(path, "tensor_parallel"))
    gpu: GpuSpec | None = None
    if block.hardware is not None:
        gpu = get_gpu(block.hardware, _join(path, "hardware"), base)
    # The only role gate (ngram *replay* on vllm only) is replay's, which resolves its worker
    # speculation with the role itself; an estimate of ngram on sglang is allowed
    # (docs/design.md#speculation-kinds), so ngram is resolved here without the role. Other
    # kinds keep it (gate messages name it).
    raw = block.speculation
    resolved: ResolvedSpeculation | None = None
    if isinstance(raw, ResolvedSpeculation):
        resolved = raw
    elif raw is not None:
        is_ngram = raw.kind == "ngram"
        resolved = resolve_speculation(
            raw,
            model=model_spec,
            backend=block.backend,
            role=None if is_ngram else block.role,
            path=_join(path, "speculation"),
            tensor_parallel=block.tensor_parallel,
            base_dir=base,
        )
    stp, measured = _checked_data(block, path, folder, model_spec, resolved)
    check_input(config, path)
    return _select(
        block,
        path,
        model_spec,
        gpu,
        block.backend,
        block.tensor_parallel,
        block.role,
        resolved,
        stp,
        measured,
        base,
    )


@dataclass(frozen=True)
class WorkerDefaults:
    """What a replay worker's ``timing`` block takes from the engine and the worker unless it
    names its own: the engine's model, GPU and backend, the worker's tensor parallelism and
    role, its resolved speculation (``None``: the worker does not speculate) and the folder
    relative paths are taken from (the replay config's)."""

    model: ModelSpec | None
    gpu: GpuSpec | None
    backend: str
    tensor_parallel: int
    role: str
    speculation: ResolvedSpeculation | None
    base_dir: Path | None


def worker_estimator(
    block: EstimatorConfig, path: str, defaults: WorkerDefaults, *, speculating: bool = True
) -> SelectedModel:
    """The estimator of a replay worker's validated ``timing`` block: its own fields where it
    gives them, else ``defaults`` (resolved once by the replay edge, used as they are).
    ``speculating=False``: the same estimator without speculation (the plain decode passes of
    an n-gram worker)."""
    given = block.model_fields_set
    folder = "" if defaults.base_dir is None else os.fspath(defaults.base_dir)
    model_spec = defaults.model
    if "model" in given:
        model_spec = None
        if block.model is not None:
            model_spec = get_model(block.model, _join(path, "model"), defaults.base_dir)
    gpu = defaults.gpu
    if "hardware" in given:
        gpu = None
        if block.hardware is not None:
            gpu = get_gpu(block.hardware, _join(path, "hardware"), defaults.base_dir)
    backend = block.backend if "backend" in given else defaults.backend
    tensor = block.tensor_parallel if "tensor_parallel" in given else defaults.tensor_parallel
    if model_spec is not None and "tensor_parallel" in given:
        check_tensor_parallel(tensor, model_spec, _join(path, "tensor_parallel"))
    role = block.role if "role" in given else defaults.role
    given_speculation = block.speculation
    resolved: ResolvedSpeculation | None = None
    if not speculating:
        resolved = None
    elif isinstance(given_speculation, ResolvedSpeculation):
        resolved = given_speculation
    elif given_speculation is not None:
        resolved = resolve_speculation(
            given_speculation,
            model=model_spec,
            backend=backend,
            # ngram is estimated on any backend (see best_available); replay's gate is the
            # worker's own speculation.
            role=None if given_speculation.kind == "ngram" else role,
            path=_join(path, "speculation"),
            tensor_parallel=tensor,
            base_dir=defaults.base_dir,
        )
    else:
        resolved = defaults.speculation
    stp, measured = _checked_data(block, path, folder, model_spec, resolved)
    return _select(
        block,
        path,
        model_spec,
        gpu,
        backend,
        tensor,
        role,
        resolved,
        stp,
        measured,
        defaults.base_dir,
    )


def _checked_data(
    block: EstimatorConfig,
    path: str,
    folder: str,
    model_spec: ModelSpec | None,
    resolved: ResolvedSpeculation | None,
) -> tuple[list[TableModel], list[MeasuredRoundModel]]:
    if resolved is not None and resolved.enabled and model_spec is None:
        raise ConfigError(f"{_join(path, 'model')}: a speculation scheme needs the target model")
    return _load_data(block, path, folder)


def _select(
    block: EstimatorConfig,
    path: str,
    model_spec: ModelSpec | None,
    gpu: GpuSpec | None,
    backend: str,
    tensor_parallel: int,
    role: str,
    resolved: ResolvedSpeculation | None,
    stp: list[TableModel],
    measured: list[MeasuredRoundModel],
    base_dir: Path | None,
) -> SelectedModel:
    return select_estimator(
        model_spec,
        gpu,
        backend,
        tensor_parallel,
        resolved,
        _draft_spec(resolved, base_dir),
        block.estimator,
        block.fallback_policy,
        role,
        block.timing_scope,
        stp,
        measured,
        path,
        _deployment(block.deployment, path),
    )


def _deployment(config: DeploymentConfig | None, path: str) -> Deployment:
    if config is None:
        return CHECKPOINT
    if config.activation_scales and config.weights != "fp8":
        raise ConfigError(
            f"{_join(path, 'deployment.activation_scales')}: {config.activation_scales!r} needs "
            f"weights 'fp8' (got {config.weights or 'the checkpoint dtype'!r}); the fp8 "
            "activation scales are one of " + ", ".join(ACTIVATION_SCALES)
        )
    return config.to_deployment()


def _join(base: str, name: str) -> str:
    return f"{base}.{name}" if base else name


def _draft_spec(resolved: ResolvedSpeculation | None, base_dir: Path | None) -> ModelSpec | None:
    """The drafter's geometry: from draft_config, else the model ``draft_model_path`` names (a
    catalogue name, or a config.json path: a relative one is taken from ``base_dir``, the folder
    of the config file that names it, as every other relative path of that file)."""
    if resolved is None or not resolved.enabled:
        return None
    if resolved.draft_model is not None:
        return resolved.draft_model
    name = resolved.draft_model_path
    if name is None:
        return None
    try:
        draft: ModelSpec = get_model(name, "speculation.draft_model_path", base_dir)
    except ConfigError:
        return None
    return draft


def _load_data(
    block: EstimatorConfig, path: str, base_dir: str
) -> tuple[list[TableModel], list[MeasuredRoundModel]]:
    """Tables, in-memory points and measured rounds; relative paths resolve against
    ``base_dir`` (the config file's folder) when the config came from a file."""
    stp: list[TableModel] = []
    measured: list[MeasuredRoundModel] = []
    if block.tables is not None:
        for index, file in enumerate(block.tables):
            field = f"{_join(path, 'tables')}[{index}]"
            check_path_text(file, field)
            named = os.path.join(base_dir, file) if base_dir else file
            for loaded in load_table_models(named, field=field):
                if isinstance(loaded, MeasuredRoundModel):
                    measured.append(loaded)
                else:
                    stp.append(loaded)
    if block.points is not None:
        stp.append(table_from_points(block.points))
    for entry in block.measured_rounds or []:
        measured.append(measured_rounds_from_points(entry.points, identity=entry.identity))
    return stp, measured
