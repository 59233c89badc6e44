"""Print query throughput of the estimators and the roofline's Qwen3-8B decode figures.

    python -m qualification.bench.bench_fpm [--queries N]

Figures, not assertions: the numpy rule path on an STP table (``estimate_many`` with d = 3),
the same queries one by one through the scalar rule path, the scalar roofline, and roofline
decode-step predictions for Qwen3-8B on h100/h200 at B in {1, 8, 64}, K in {1k, 8k} per request.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import aisim
from aisim.config import best_available
from aisim.fpm import ForwardPassMetrics, estimate_many, table_from_points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1_000_000)
    args = parser.parse_args()
    count = max(args.queries, 10)
    build = "compiled" if aisim.__compiled__ else "pure"
    points = [
        {"batch_size": b, "total_kv_tokens": k, "latency_ms": 1.0 + 0.3 * b + 1e-4 * k}
        for b in (1, 2, 4, 8, 16, 32, 64, 128)
        for k in (0, 4096, 16384, 65536, 262144, 1048576)
    ]
    table = table_from_points(points)
    rng = np.random.default_rng(0)
    batch = rng.integers(1, 33, count)
    kv = rng.integers(0, 1_048_577, count)
    start = time.perf_counter()
    estimate_many(table, batch, kv, 3)
    vector_qps = count / (time.perf_counter() - start)
    scalar_count = min(count, 20_000)
    pairs = list(zip(batch[:scalar_count].tolist(), kv[:scalar_count].tolist(), strict=True))
    start = time.perf_counter()
    for b, k in pairs:
        table.estimate_forward_pass_time_ms(ForwardPassMetrics(b, k), draft_length=3)
    scalar_qps = scalar_count / (time.perf_counter() - start)
    roofline = best_available({"model": "Qwen/Qwen3-8B", "hardware": "h100"})
    start = time.perf_counter()
    for b, k in pairs:
        roofline.estimate_forward_pass_time_ms(ForwardPassMetrics(b, k))
    roofline_qps = scalar_count / (time.perf_counter() - start)
    print(f"aisim {aisim.__version__} ({build} build)")
    print(f"rule on an STP table, numpy path:  {vector_qps:12,.0f} queries/s ({count} queries)")
    print(f"rule on an STP table, scalar path: {scalar_qps:12,.0f} queries/s")
    print(f"roofline via best_available:       {roofline_qps:12,.0f} queries/s")
    print("roofline decode step, Qwen3-8B, TP1 (ms): B, then K per request 1024 / 8192")
    for hardware in ("h100_sxm", "h200_sxm"):
        model = best_available({"model": "Qwen/Qwen3-8B", "hardware": hardware})
        for b in (1, 8, 64):
            cells = [
                model.estimate_forward_pass_time_ms(ForwardPassMetrics(b, b * k))
                for k in (1024, 8192)
            ]
            print(f"  {hardware} B={b:<3d} {cells[0]:8.3f} {cells[1]:8.3f}")


if __name__ == "__main__":
    main()
