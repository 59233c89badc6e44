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
* **oneDNN's own primitive cache** (``backing``). On a miss the handler builds a primitive
  descriptor and constructs ``dnnl::matmul(desc)`` (``csrc/cpu/dnnl_helper.cpp``,
  ``MatMulPrimitiveHandler::get_matmul_cache``, the creator passed to ``get_or_create``);
  oneDNN looks that primitive up in its global, process-wide LRU of created primitives
  (oneDNN's "primitive cache": ``ONEDNN_PRIMITIVE_CACHE_CAPACITY``, default 1024 primitives)
  before generating (JIT-compiling) its kernel. An M the process created before and vLLM's
  LRU of 32 has since evicted is re-created from that cache without the kernel generation the
  step table's creation cost times (``lookup`` says ``recreated``); only an M new to both
  pays it (``created``). A Llama decoder step runs four weight shapes at the step's M
  (``qkv_proj``, ``o_proj``, ``gate_up_proj``, ``down_proj``), so the global cache holds
  1024 / 4 = 256 token counts (``onednn_primitive_cache``).
* **vLLM GPU, CUDA graphs** (``capture_sizes``, ``padded_graph_size``). A batch of N tokens at
  most the largest captured size runs the graph captured for the smallest size >= N (the padding
  table of ``vllm/v1/cudagraph_dispatcher.py``, ``CudagraphDispatcher
  ._compute_bs_to_padded_graph_size``; ``dispatch``); above it the step runs eagerly. Uniform
  decode batches run full graphs, mixed batches piecewise graphs (``FULL_AND_PIECEWISE``), both
  padded. Default sizes: ``vllm/config/vllm.py``, ``VllmConfig._set_cudagraph_sizes``.

Pure and typed (compiled): the table's points come in as plain lists (the edge reads files).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Final

#: Entries per weight shape of vLLM's oneDNN primitive cache (``create_onednn_mm(..., 32)``).
ONEDNN_CACHE_CAPACITY: Final = 32
#: oneDNN's global primitive cache: primitives kept per process (its default capacity).
ONEDNN_GLOBAL_CAPACITY: Final = 1024
#: Weight shapes a Llama decoder step runs through oneDNN at the step's token count M.
DECODER_GEMM_SHAPES: Final = 4
#: ``PrimitiveCache.lookup`` answers: vLLM's LRU held M; M re-created from oneDNN's global
#: cache; M created from scratch (the kernel generated: the step table's creation cost).
HIT: Final = "hit"
RECREATED: Final = "recreated"
CREATED: Final = "created"
#: vLLM's cap on the default largest CUDA-graph capture size.
MAX_DEFAULT_CAPTURE: Final = 512


class PrimitiveCache:
    """One LRU of step token counts, as vLLM's oneDNN M-size cache keeps it per weight shape:
    ``touch(tokens)`` says whether the step had to create its primitives (a miss). With a
    ``backing`` cache (oneDNN's global primitive cache, consulted only on a miss here),
    ``lookup`` says whether a miss re-created the primitives from it or created them anew."""

    def __init__(
        self, capacity: int = ONEDNN_CACHE_CAPACITY, backing: PrimitiveCache | None = None
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity: expected >= 1, got {capacity}")
        self.capacity = capacity
        self.backing = backing
        self._order: list[int] = []  # most recently used first

    def lookup(self, tokens: int) -> str:
        """Use ``tokens``: ``HIT`` when this cache held it; on a miss ``RECREATED`` when the
        backing cache held it, else ``CREATED`` (also without a backing cache). The backing
        cache is used (and its recency updated) only on a miss here, as oneDNN's is."""
        if not self.touch(tokens):
            return HIT
        if self.backing is not None and not self.backing.touch(tokens):
            return RECREATED
        return CREATED

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


def onednn_primitive_cache(gemm_shapes: int = DECODER_GEMM_SHAPES) -> PrimitiveCache:
    """vLLM's LRU of 32 token counts per weight shape, backed by oneDNN's global primitive
    cache (1024 primitives, ``gemm_shapes`` of them per token count)."""
    if gemm_shapes < 1:
        raise ValueError(f"gemm_shapes: expected >= 1, got {gemm_shapes}")
    return PrimitiveCache(
        ONEDNN_CACHE_CAPACITY, PrimitiveCache(max(1, ONEDNN_GLOBAL_CAPACITY // gemm_shapes))
    )


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


class StepPrice(ABC):
    """A step price over (count, tokens): decode steps or SD rounds over (requests, past KV in
    total), prefill steps over (requests, prompt tokens in total). ``intercept_ms`` is what a
    step of this kind costs with nothing in it, the part a mixed step pays once."""

    def __init__(self, label: str, intercept_ms: float) -> None:
        self.label = label
        self.intercept_ms = intercept_ms

    @abstractmethod
    def price(self, count: int, tokens: float, coverage: dict[str, int]) -> float:
        """The price in milliseconds of a step of ``count`` requests over ``tokens``."""


class LinearStepCost(StepPrice):
    """A step price linear in what the step computes, fitted to every timed step of a kind
    (vLLM on CPU runs every step eagerly: one pass of each weight GEMM over the step's M tokens
    through oneDNN, and the CPU attention kernel's work per request is its (aligned) KV length,
    summed over the causal query tiles of a prompt; docs/replay.md, "Served steps"):

    * ``decode`` (decode steps or SD rounds): ``a + b x requests + c x past KV tokens``;
    * ``prefill``: ``a + b x prompt tokens + c x prompt tokens^2 / requests`` (the causal
      attention of requests of equal length).

    The coefficients minimise the squared *relative* error over the samples (each step's
    noise is roughly proportional to its length) and are all >= 0: every subset of the terms
    is fitted and the best fit whose coefficients are all non-negative kept (an exhaustive
    non-negative least squares over at most 3 terms). Prices outside the sampled box
    (requests, tokens per request) are the same line, counted as ``LABEL:fit-outside``."""

    def __init__(self, samples: list[tuple[int, float, float]], label: str, kind: str) -> None:
        """``samples``: (count, total tokens, ms) per timed step; ``kind``: decode or prefill."""
        if kind not in ("decode", "prefill"):
            raise ValueError(f"kind: expected decode or prefill, got {kind!r}")
        if not samples:
            raise ValueError(f"{label}: no samples")
        self.kind = kind
        rows = [self.features(count, tokens) for count, tokens, _ in samples]
        targets = [latency for _, _, latency in samples]
        self.coefficients: list[float] = fit_non_negative(rows, targets)
        super().__init__(label, self.coefficients[0])
        self.count_range = (min(s[0] for s in samples), max(s[0] for s in samples))
        per_request = [s[1] / s[0] for s in samples]
        self.per_request_range = (min(per_request), max(per_request))

    def features(self, count: int, tokens: float) -> list[float]:
        if self.kind == "decode":
            return [1.0, float(count), tokens]
        return [1.0, tokens, tokens * tokens / count]

    def price(self, count: int, tokens: float, coverage: dict[str, int]) -> float:
        value = 0.0
        for weight, feature in zip(self.coefficients, self.features(count, tokens), strict=True):
            value += weight * feature
        per_request = tokens / count
        inside = (
            self.count_range[0] <= count <= self.count_range[1]
            and self.per_request_range[0] <= per_request <= self.per_request_range[1]
        )
        key = f"{self.label}:{'fit' if inside else 'fit-outside'}"
        coverage[key] = coverage.get(key, 0) + 1
        return value


def _dot(weights: list[float], features: list[float]) -> float:
    total = 0.0
    for weight, feature in zip(weights, features, strict=True):
        total += weight * feature
    return total


def fit_non_negative(rows: list[list[float]], targets: list[float]) -> list[float]:
    """Coefficients >= 0 of the line through (rows, targets) with errors relative to the line:
    minimises sum(((row . c) - target) / (row . c))^2 by iteratively reweighted least squares
    (first pass weighted by the targets, then twice by the previous fit), each pass the least
    squares fit of every non-empty subset of the columns, the best whose coefficients are all
    >= 0 (columns left out are 0). Weighting by the line, not by the targets, keeps the fit
    the expected step (a target-weighted fit leans towards the fast steps). Targets must be
    > 0. Deterministic (fixed subset order)."""
    scales = list(targets)
    best: list[float] = [0.0] * len(rows[0])
    for _ in range(3):
        best = _fit_subsets(rows, targets, scales)
        fitted = [_dot(best, row) for row in rows]
        if any(not value > 0.0 for value in fitted):
            break
        scales = fitted
    return best


def _fit_subsets(rows: list[list[float]], targets: list[float], scales: list[float]) -> list[float]:
    width = len(rows[0])
    best: list[float] = [0.0] * width
    best_error = -1.0
    for mask in range(1, 1 << width):
        chosen = [column for column in range(width) if mask >> column & 1]
        solved = _weighted_least_squares(rows, targets, scales, chosen)
        if solved is None or any(value < 0.0 for value in solved):
            continue
        full = [0.0] * width
        for column, value in zip(chosen, solved, strict=True):
            full[column] = value
        error = 0.0
        for row, target, scale in zip(rows, targets, scales, strict=True):
            error += ((_dot(full, row) - target) / scale) ** 2
        if best_error < 0.0 or error < best_error:
            best, best_error = full, error
    return best


def _weighted_least_squares(
    rows: list[list[float]], targets: list[float], scales: list[float], columns: list[int]
) -> list[float] | None:
    """Solve the normal equations of the relative least squares fit on ``columns`` (Gaussian
    elimination with partial pivoting); None when they are singular."""
    size = len(columns)
    matrix = [[0.0] * (size + 1) for _ in range(size)]
    for row, target, scale in zip(rows, targets, scales, strict=True):
        weight = 1.0 / (scale * scale)
        for i in range(size):
            left = row[columns[i]] * weight
            for j in range(size):
                matrix[i][j] += left * row[columns[j]]
            matrix[i][size] += left * target
    magnitude = [abs(matrix[i][i]) for i in range(size)]
    for pivot in range(size):
        best = pivot
        for index in range(pivot + 1, size):
            if abs(matrix[index][pivot]) > abs(matrix[best][pivot]):
                best = index
        if not abs(matrix[best][pivot]) > 1e-12 * magnitude[pivot]:
            return None
        matrix[pivot], matrix[best] = matrix[best], matrix[pivot]
        for index in range(size):
            if index != pivot:
                factor = matrix[index][pivot] / matrix[pivot][pivot]
                for column in range(pivot, size + 1):
                    matrix[index][column] -= factor * matrix[pivot][column]
    return [matrix[i][size] / matrix[i][i] for i in range(size)]


class StepSurface(StepPrice):
    """Row-wise piecewise-linear interpolation of step prices over (count, tokens per count):
    within the row of equal count linear in tokens per count, between rows linear in count.
    Outside the recorded box the coordinates are clamped (never extrapolated); every answer is
    counted in ``coverage`` as ``LABEL:table`` or ``LABEL:clamped``."""

    def __init__(self, points: list[tuple[int, float, float]], label: str) -> None:
        if not points:
            raise ValueError(f"{label}: no points")
        super().__init__(label, min(latency for _, _, latency in points))
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
