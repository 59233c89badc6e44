"""Served engine steps as the engine runs them: a step table's prices plus what the engine does
to a served step that a benchmarked one did not see (docs/replay.md, "Served steps").

* **vLLM CPU, oneDNN matmul primitives** (``PrimitiveCache``). Every unquantized linear layer
  runs through a oneDNN handler (``vllm/model_executor/layers/utils.py``,
  ``dispatch_cpu_unquantized_gemm``: ``ops.create_onednn_mm(weight.t(), 32)``). The handler
  looks its matmul primitive up in a cache shared by every layer of one weight shape: a static
  class cache keyed by (N, K, dtype) holds one LRU per shape (``csrc/cpu/dnnl_helper.cpp``,
  ``get_matul_class_primitive_cache``), keyed by the input's row count M (the step's flattened
  token count), its row stride, and the bias (``MatMulPrimitiveHandler::get_matmul_cache``,
  ``MSizeCacheKey``), holding 32 entries (``DNNLPrimitiveCache``: a hit moves the key to the
  front, a miss creates the primitive and evicts the least recently used). Every weight shape
  sees the same M in a step, so one LRU of token counts says which steps create primitives.
* **vLLM GPU, CUDA graphs** (``capture_sizes``, ``padded_graph_size``). A batch of N tokens at
  most the largest captured size runs the graph captured for the smallest size >= N (the padding
  table of ``vllm/v1/cudagraph_dispatcher.py``, ``CudagraphDispatcher
  ._compute_bs_to_padded_graph_size``; ``dispatch``); above it the step runs eagerly. Uniform
  decode batches run full graphs, mixed batches piecewise graphs (``FULL_AND_PIECEWISE``), both
  padded. Default sizes: ``vllm/config/vllm.py``, ``VllmConfig._set_cudagraph_sizes``.

Pure and typed (compiled): the table's points come in as plain lists (the edge reads files).
"""

from __future__ import annotations

from typing import Final

#: Entries per weight shape of vLLM's oneDNN primitive cache (``create_onednn_mm(..., 32)``).
ONEDNN_CACHE_CAPACITY: Final = 32
#: vLLM's cap on the default largest CUDA-graph capture size.
MAX_DEFAULT_CAPTURE: Final = 512


class PrimitiveCache:
    """One LRU of step token counts, as vLLM's oneDNN M-size cache keeps it per weight shape:
    ``touch(tokens)`` says whether the step had to create its primitives (a miss)."""

    def __init__(self, capacity: int = ONEDNN_CACHE_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity: expected >= 1, got {capacity}")
        self.capacity = capacity
        self._order: list[int] = []  # most recently used first

    def touch(self, tokens: int) -> bool:
        """Use ``tokens``; True when it was not cached (creation paid), False on a hit."""
        order = self._order
        if tokens in order:
            order.remove(tokens)
            order.insert(0, tokens)
            return False
        if len(order) == self.capacity:
            order.pop()
        order.insert(0, tokens)
        return True

    def __contains__(self, tokens: int) -> bool:
        return tokens in self._order

    def warm(self, tokens: list[int]) -> None:
        """Use each of ``tokens`` in order (what ran before the replayed steps)."""
        for count in tokens:
            self.touch(count)


def creation_steps(token_counts: list[int], capacity: int = ONEDNN_CACHE_CAPACITY) -> list[bool]:
    """For each step of a sequence of step token counts, whether it creates primitives."""
    cache = PrimitiveCache(capacity)
    return [cache.touch(tokens) for tokens in token_counts]


def capture_sizes(
    max_num_seqs: int, max_num_batched_tokens: int, decode_query_len: int = 1
) -> list[int]:
    """vLLM's default CUDA-graph capture sizes: the largest is min(max_num_seqs x decode query
    length x 2, 512, max_num_batched_tokens); then 1, 2, 4, every multiple of 8 below 256 and
    every multiple of 16 from 256, up to it (``VllmConfig._set_cudagraph_sizes``)."""
    largest = min(max_num_seqs * decode_query_len * 2, MAX_DEFAULT_CAPTURE, max_num_batched_tokens)
    sizes = [size for size in (1, 2, 4) if size <= largest]
    if largest >= 8:
        sizes.extend(range(8, min(largest + 1, 256), 8))
    if largest >= 256:
        sizes.extend(range(256, largest + 1, 16))
    return sizes


def padded_graph_size(num_tokens: int, sizes: list[int]) -> int:
    """The captured size a step of ``num_tokens`` runs at: the smallest of ``sizes`` (ascending)
    >= ``num_tokens``; 0 when it exceeds the largest (the step runs eagerly, unpadded)."""
    for size in sizes:
        if size >= num_tokens:
            return size
    return 0


class StepSurface:
    """Row-wise piecewise-linear interpolation of step prices over (count, tokens per count):
    within the row of equal count linear in tokens per count, between rows linear in count.
    Outside the recorded box the coordinates are clamped (never extrapolated); every answer is
    counted in ``coverage`` as ``LABEL:table`` or ``LABEL:clamped``."""

    def __init__(self, points: list[tuple[int, float, float]], label: str) -> None:
        if not points:
            raise ValueError(f"{label}: no points")
        self.label = label
        rows: dict[int, list[tuple[float, float]]] = {}
        for count, per_request, latency in points:
            rows.setdefault(count, []).append((per_request, latency))
        self.counts: list[int] = sorted(rows)
        self.xs: dict[int, list[float]] = {}
        self.ys: dict[int, list[float]] = {}
        for count in self.counts:
            ordered = sorted(rows[count])
            self.xs[count] = [x for x, _ in ordered]
            self.ys[count] = [y for _, y in ordered]

    def _row(self, count: int, per_request: float) -> tuple[float, bool]:
        xs, ys = self.xs[count], self.ys[count]
        if per_request <= xs[0]:
            return ys[0], per_request == xs[0]
        if per_request >= xs[-1]:
            return ys[-1], per_request == xs[-1]
        for index in range(1, len(xs)):
            if per_request <= xs[index]:
                low, high = xs[index - 1], xs[index]
                weight = (per_request - low) / (high - low)
                return ys[index - 1] + weight * (ys[index] - ys[index - 1]), True
        return ys[-1], True  # unreachable: per_request < xs[-1]

    def price(self, count: int, tokens: float, coverage: dict[str, int]) -> float:
        per_request = tokens / count
        counts = self.counts
        if count <= counts[0] or count >= counts[-1]:
            edge = counts[0] if count <= counts[0] else counts[-1]
            value, inside = self._row(edge, per_request)
            inside = inside and count == edge
        else:
            upper = counts[-1]
            lower = counts[0]
            for candidate in counts:
                if candidate <= count:
                    lower = candidate
                if candidate >= count:
                    upper = candidate
                    break
            low, low_inside = self._row(lower, per_request)
            high, high_inside = self._row(upper, per_request)
            weight = 0.0 if upper == lower else (count - lower) / (upper - lower)
            value = low + weight * (high - low)
            inside = low_inside and high_inside
        key = f"{self.label}:{'table' if inside else 'clamped'}"
        coverage[key] = coverage.get(key, 0) + 1
        return value
