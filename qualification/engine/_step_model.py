"""Price replay's passes from an engine step table (a separate recording of the same engine),
as the engine runs its served steps.

The table holds medians of timed engine steps: decode (or SD-round) steps at B requests of a
per-request context, and prefill steps at n requests of a per-request prompt length, timed at
a step token count new to the engine (phase ``prefill``) and, in newer grids, again at the same
count (phase ``prefill-cached``). The pricing itself is aisim's ``ServedStepModel``
(``aisim/fpm/_served_steps.py``): on vLLM's CPU platform a line per step kind fitted to every
timed step (``LinearStepCost``), elsewhere row-wise interpolation, clamped outside the grid and
counted;
a mixed step (chunked prefill beside decodes, one engine step) as decode + prefill - one step's
overhead (the table's cheapest decode step; ``vllm/v1/engine/core.py``, ``EngineCore.step``:
one scheduler pass, one model forward over the flattened tokens of every scheduled request, one
sampling pass), and what the engine does to a served step that a benchmarked one did not see:

* on vLLM's CPU platform, the oneDNN primitive cache (``aisim/fpm/_engine_steps.py``,
  ``PrimitiveCache``): a step whose token count is not among the last 32 pays primitive
  creation, priced as the table's prefill steps at a new token count minus the same steps
  cached (median over the points timed both ways; unknown, and not charged, on a table
  without cached prefill steps);
* on a CUDA platform with graphs on (``engine_settings.enforce_eager`` false), CUDA-graph
  padding to ``engine_settings.cudagraph_capture_sizes`` (default: vLLM's sizes from
  ``max_num_seqs`` and ``max_num_batched_tokens``).

The platform is ``engine_settings.platform`` (``cpu`` or ``cuda``); our recorder's
``identity.engine`` ``vllm-cpu`` says ``cpu``; a table that says neither gets neither model.

With SD on, the table may also hold plain decode steps (``ngram``: the rounds before any
n-gram matches, which draft nothing); they price replay's passes whose decode requests all drafted
nothing (``plain_decode_model``, ``speculation.undrafted_rounds``).
"""

from __future__ import annotations

from typing import Any

from aisim.fpm import FrontEndCost, served_step_model
from qualification.engine._recording import StepTable


class EngineStepModel:
    """A forward-pass model over an engine step table (duck-typed like ``aisim.fpm`` models:
    ``estimate_forward_pass_time_ms(metrics)``; it prices SD rounds natively). One per replay:
    the primitive-cache model follows the passes in the order they are priced. The model is
    aisim's ``ServedStepModel`` built by ``aisim.fpm._engine_step_files.served_step_model``,
    the same one ``aisim replay --step-table`` prices with."""

    name = "engine-step-table"
    prices_speculation_natively = True
    supports_draft_length = False

    def __init__(
        self,
        table: StepTable,
        draft_length: int,
        *,
        latency_column: str = "wall_ms",
        scale: float = 1.0,
        engine_model: bool = True,
        frontend: FrontEndCost | None = None,
        cache: Any = None,
        _served: Any = None,
    ) -> None:
        """``latency_column``: ``wall_ms`` (what a user sees; the default) or ``cpu_ms`` (the
        step's process CPU time), multiplied by ``scale`` (the drift-adjusted diagnostic).
        ``engine_model`` False prices with the table alone (no cache, no graph padding).
        ``frontend``: a serving front end's cost per step (the recording's front-end model).
        ``cache``: the primitive caches as the model of the engine's previous served run left
        them (``self.cache``; one engine process serves a recording's runs in turn), None for
        an empty one."""
        self.served = _served or served_step_model(
            [
                {str(key): value for key, value in row.items()}
                for row in table.steps.to_dict("records")
            ],
            table.settings,
            table.sidecar.get("identity") or {},
            draft_length,
            where=repr(str(table.directory)),
            latency_column=latency_column,
            scale=scale,
            engine_model=engine_model,
            frontend=frontend if engine_model else None,
            cache=cache,
            wake=table.wake if engine_model else None,
            admit=table.admit if engine_model else None,
        )
        served = self.served
        #: The primitive caches this model prices with (None off CPU): hand them to the model
        #: of the next run the same engine process served.
        self.cache = served.cache
        self.decode = served.decode
        self.prefill = served.prefill
        self.coverage = served.coverage
        self.decode_points = served.decode_points
        self.prefill_points = served.prefill_points
        self.platform = served.platform
        self.creation_ms = served.creation_ms
        self.capture_sizes = served.capture_sizes
        #: One engine step's fixed cost, counted once in a mixed step: the cheapest decode
        #: step (or SD round) of the table.
        self.step_overhead_ms = served.step_overhead_ms
        #: With SD: the same table's plain decode steps (rounds that drafted nothing), or None
        #: when it has none; it shares this model's coverage and primitive cache.
        self.plain_decode_model: EngineStepModel | None = (
            None
            if served.plain_decode_model is None
            else EngineStepModel(table, 0, _served=served.plain_decode_model)
        )

    @property
    def frontend(self) -> FrontEndCost | None:
        """The serving front end's cost per step the model prices with (None: none)."""
        return self.served.frontend

    @frontend.setter
    def frontend(self, value: FrontEndCost | None) -> None:
        self.served.frontend = value

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        return float(self.served.estimate_forward_pass_time_ms(metrics))

    def describe(self) -> dict[str, Any]:
        return dict(self.served.describe())
