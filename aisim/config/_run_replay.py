"""``run_replay(config)``: a replay config (mapping or YAML/JSON file) validated at the edge,
simulated by the core (``aisim.replay.run``), returned as a ``ReplayResult``."""

from __future__ import annotations

import copy
import dataclasses
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from aisim.config._replay import build_plan
from aisim.errors import ConfigError
from aisim.replay import PassModel, ReplayResult, RequestSink, TokenRows, run


def run_replay(
    config: object,
    *,
    progress: Callable[[int, int, float], None] | None = None,
    progress_every: int = 50000,
    base_dir: Path | None = None,
    per_token: bool | None = None,
    request_sink: RequestSink | None = None,
    token_sink: TokenRows | None = None,
    forward_pass_model: object | None = None,
    admission_ms: float = 0.0,
) -> ReplayResult:
    """Replay ``config`` (a mapping of the docs/design.md#replay shape, or a YAML/JSON file path;
    relative trace paths in a file resolve against the file's folder, in a mapping against
    ``base_dir``, default the working directory).

    ``progress(events, completed_requests, now_ms)`` is called every ``progress_every`` events;
    ``per_token``, ``request_sink`` and ``token_sink`` stream the outputs (``aisim.replay.run``).
    Raises ``ConfigError`` for invalid configs (before the first event) and ``SimulationError``
    if a run makes no progress.

    ``forward_pass_model`` prices every worker's passes instead of the config's ``timing``
    blocks: any object with ``estimate_forward_pass_time_ms(metrics)`` (one
    ``aisim.fpm.ForwardPassMetrics`` per rank, or a list of them) and a boolean
    ``prices_speculation_natively`` (True: it prices whole SD rounds; False: it also needs
    ``supports_draft_length`` and a ``draft_length`` argument). With
    ``speculation.undrafted_rounds`` a model that prices SD rounds natively also needs
    ``plain_decode_model``, the same kind of object pricing plain decode steps. ``aisim qualify
    engine`` prices with a recorded engine step table this way.

    ``admission_ms``: a serving front end's cost per request before the engine sees it
    (``aisim.fpm.FrontEndCost.request_ms`` of a step table's front-end model): every request
    reaches the scheduler that long after it arrives; its TTFT and E2E count from its arrival.
    ``aisim replay --step-table`` and ``aisim qualify engine`` pass the model's term.
    """
    if isinstance(config, (str, os.PathLike)):
        from aisim._io import load_config_file

        source = config
        config = load_config_file(source, "config")
        base_dir = Path(source).resolve().parent
    if (
        isinstance(admission_ms, bool)
        or not isinstance(admission_ms, (int, float))
        or not math.isfinite(admission_ms)
        or admission_ms < 0
    ):
        raise ConfigError(f"admission_ms: {admission_ms!r} is not a finite number of ms >= 0")
    plan, description = build_plan(config, base_dir)
    if forward_pass_model is not None:
        plan, description = with_forward_pass_model(plan, description, forward_pass_model)
    if admission_ms > 0:
        plan = dataclasses.replace(plan, admission_ms=float(admission_ms))
        description = copy.deepcopy(description)
        description["admission_ms"] = float(admission_ms)
    return run(
        plan,
        description,
        progress=progress,
        progress_every=progress_every,
        per_token=per_token,
        request_sink=request_sink,
        token_sink=token_sink,
    )


def with_forward_pass_model(
    plan: Any, description: dict[str, Any], model: object
) -> tuple[Any, dict[str, Any]]:
    """``plan`` with every worker priced by ``model`` (see ``run_replay``)."""
    from aisim.fpm import ForwardPassMetrics
    from aisim.replay import PassPricer

    if not callable(getattr(model, "estimate_forward_pass_time_ms", None)):
        raise ConfigError(
            f"forward_pass_model: expected an object with estimate_forward_pass_time_ms(metrics), "
            f"got {type(model).__name__}"
        )
    native = getattr(model, "prices_speculation_natively", None)
    if not isinstance(native, bool):
        raise ConfigError(
            f"forward_pass_model.prices_speculation_natively: expected True or False, got "
            f"{native!r}"
        )
    speculating = any(worker.speculation.enabled for worker in plan.workers)
    trees = any(
        worker.speculation.enabled
        and worker.speculation.verify_width != worker.speculation.draft_length + 1
        for worker in plan.workers
    )
    if trees and not native:
        raise ConfigError(
            "forward_pass_model: the config replays an EAGLE tree, and the STP->SD scaling rule "
            "prices chains only; give a model that prices SD rounds natively"
        )
    if native and any(worker.speculation.varies for worker in plan.workers):
        raise ConfigError(
            "forward_pass_model: the draft length varies per round (a batch-size table, an "
            "adaptive policy or a trace), but this model prices whole SD rounds of the full "
            "length natively; give a model with supports_draft_length instead"
        )
    if speculating and not native and getattr(model, "supports_draft_length", False) is not True:
        raise ConfigError(
            "forward_pass_model: the config speculates, and this model neither prices SD rounds "
            "natively nor applies the STP->SD scaling rule (supports_draft_length)"
        )
    plain = None
    if native and any(worker.speculation.undrafted_rounds > 0 for worker in plan.workers):
        plain = getattr(model, "plain_decode_model", None)
        if plain is None or not callable(getattr(plain, "estimate_forward_pass_time_ms", None)):
            raise ConfigError(
                "forward_pass_model.plain_decode_model: the config has speculation."
                "undrafted_rounds, and this model prices only whole SD rounds; give it a "
                "plain_decode_model (an object with estimate_forward_pass_time_ms(metrics)) "
                "that prices the passes whose decode requests all drafted nothing"
            )
    # Checked above to have the PassModel method (and so has the plain model).
    pricer = PassPricer.from_model(
        cast(PassModel, model), ForwardPassMetrics, native, plain_model=plain
    )
    workers = [dataclasses.replace(worker, pricer=pricer) for worker in plan.workers]
    name = getattr(model, "name", type(model).__name__)
    description = copy.deepcopy(description)
    description["forward_pass_model"] = str(name)
    return dataclasses.replace(plan, workers=workers), description
