"""What a token count new to vLLM's CPU GEMM cache costs
(``.tox/engine/bin/python -m qualification.engine.probe_onednn``; needs vLLM, not the engine).

vLLM's CPU build runs every unquantized linear layer through oneDNN
(``vllm/model_executor/layers/utils.py``, ``dispatch_cpu_unquantized_gemm``:
``ops.create_onednn_mm(weight.t(), 32)``), whose matmul primitives are created per token count
M (the step's flattened tokens) and kept in a 32-entry LRU per weight shape
(``csrc/cpu/dnnl_helper.cpp``, ``MatMulPrimitiveHandler::get_matmul_cache``,
``DNNLPrimitiveCache``). A step at an M the cache does not hold creates a primitive for every
weight shape first. The step table's prefill points repeat the same M, a served trace's prompts
rarely do. This prints, for the projection shapes of each committed target (q/k/v, o, gate/up,
down: one call each, as one layer of one step), the median time at a new M, at the same M again
(cached), and their difference; ratios within one run (a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

#: (hidden, intermediate, heads, kv heads, head dim) of the committed target shapes.
SHAPES = {"llama-4x256": (256, 688, 4, 2, 64), "llama-8x512": (512, 1376, 8, 4, 64)}


def projections(
    hidden: int, inter: int, heads: int, kv: int, head_dim: int
) -> dict[str, tuple[int, int]]:
    """(K, N) of each projection of one layer."""
    return {
        "qkv": (hidden, (heads + 2 * kv) * head_dim),
        "o": (heads * head_dim, hidden),
        "gate_up": (hidden, 2 * inter),
        "down": (inter, hidden),
    }


#: New token counts timed: prompt-sized (a served prefill step's) and decode-sized (a decode
#: batch's, what a step table's first decode step at each batch size creates).
PROMPT_COUNTS = range(41, 241, 13)
DECODE_COUNTS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 24, 28, 32)


def probe(
    shape: tuple[int, int, int, int, int], torch: Any, ops: Any, counts: Any = PROMPT_COUNTS
) -> tuple[float, float]:
    """(median ms of one call per projection at a new M, the same at that M again), over the
    token counts ``counts`` (none of them used before in the process)."""
    shapes = projections(*shape)
    handlers = {
        name: ops.create_onednn_mm(torch.randn(n, k).t(), 32) for name, (k, n) in shapes.items()
    }
    inputs = {name: torch.randn(512, k) for name, (k, _) in shapes.items()}

    def step(tokens: int) -> float:
        start = time.perf_counter()
        for name in shapes:
            ops.onednn_mm(handlers[name], inputs[name][:tokens], None)
        return (time.perf_counter() - start) * 1000.0

    for tokens in (37, 101, 150, 201):  # the allocator's first touches, not measured
        step(tokens)
    new, cached = [], []
    for tokens in counts:  # none of them used above
        new.append(step(tokens))
        cached.append(step(tokens))
    return statistics.median(new), statistics.median(cached)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m qualification.engine.probe_onednn",
        description="What a token count new to vLLM's CPU GEMM (oneDNN) cache costs: per "
        "committed target shape, one GEMM per projection at a new token count against the same "
        "count cached. Needs vLLM (tox -e engine), not a running engine; takes no arguments.",
        epilog="example: .tox/engine/bin/python -m qualification.engine.probe_onednn",
    ).parse_args(argv)
    try:
        import torch
        from vllm import _custom_ops as ops
    except ImportError as exc:
        print(f"error: needs vLLM (tox -e engine): {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    for name, shape in SHAPES.items():
        # Decode-sized counts first: prompt-sized ones would not touch them, nor they those.
        for label, counts in (("decode-sized", DECODE_COUNTS), ("prompt-sized", PROMPT_COUNTS)):
            new, cached = probe(shape, torch, ops, counts)
            print(
                f"{name}: one GEMM per projection at a new {label} token count {new:.2f} ms, "
                f"cached {cached:.2f} ms, difference {new - cached:.2f} ms (x{new / cached:.2f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
