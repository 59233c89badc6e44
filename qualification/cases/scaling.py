"""Scaling-rule suite: the STP->SD rule on ``table`` estimators across d, B, K_total, per-request
KV lists and attention-DP ranks (widened metrics, factor, STP reference), the published oracle,
and every rejected query (prefill/mixed work, invalid d, outside the envelope, overflow)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qualification.cases._fpm import decode, detailed, table
from qualification.cases._suite import Suite, make_cases

Row = tuple[str, dict[str, Any]]


def _rows() -> list[Row]:
    rows: list[Row] = []
    for batch in (1, 2, 4, 8, 16, 64):
        for kv in (64, 4096, 65536):
            rows.append(
                (f"grid/stp/B{batch}/K{kv}", {"table": "grid", "metrics": decode(batch, kv)})
            )
            for d in range(1, 6):
                rows.append(
                    (
                        f"grid/d{d}/B{batch}/K{kv}",
                        {"table": "grid", "metrics": decode(batch, kv), "draft_length": d},
                    )
                )
    for d in range(1, 6):
        rows.append(
            (
                f"oracle/B2-K64/d{d}",
                {"table": "oracle", "metrics": decode(2, 64), "draft_length": d},
            )
        )
    rows.append(("oracle/B8-K64/stp", {"table": "oracle", "metrics": decode(8, 64)}))
    kv_lists = {
        "one-1000": [1000],
        "7-9-11": [7, 9, 11],
        "ones": [1, 1, 1, 1],
        "uneven": [4097, 3, 100000],
        "zeros": [0, 0],
    }
    for name, lengths in kv_lists.items():
        for d in (1, 3, 5):
            rank = {**decode(len(lengths), sum(lengths)), "past_kv_lengths": lengths}
            rows.append(
                (f"kv-list/{name}/d{d}", {"table": "grid", "metrics": rank, "draft_length": d})
            )
    ranks = {
        "two-ranks": [decode(4, 4096), decode(8, 1024)],
        "rank-and-idle": [decode(16, 65536), decode(0, 0)],
        "four-ranks": [decode(1, 64), decode(2, 128), decode(4, 256), decode(8, 512)],
    }
    for name, spec in ranks.items():
        rows.append((f"ranks/{name}/stp", {"table": "grid", "metrics": spec}))
        for d in (2, 4):
            rows.append(
                (f"ranks/{name}/d{d}", {"table": "grid", "metrics": spec, "draft_length": d})
            )
    bad_d: dict[str, Any] = {
        "0": 0,
        "negative": -1,
        "bool": True,
        "fraction": 2.5,
        "string": "3",
        "null-list": [3],
    }
    for name, value in bad_d.items():
        rows.append(
            (
                f"error/draft-length-{name}",
                {"table": "grid", "metrics": decode(2, 64), "draft_length": value},
            )
        )
    rows += [
        (
            "draft-length-integral-float",
            {"table": "grid", "metrics": decode(2, 64), "draft_length": 3.0},
        ),
        (
            "error/prefill-with-d",
            {
                "table": "grid",
                "metrics": {"num_prefill_requests": 1, "sum_prefill_tokens": 512},
                "draft_length": 2,
            },
        ),
        (
            "error/mixed-with-d",
            {
                "table": "grid",
                "metrics": {**decode(2, 64), "num_prefill_requests": 1, "sum_prefill_tokens": 512},
                "draft_length": 2,
            },
        ),
        (
            "error/widened-batch-outside-envelope",
            {"table": "grid", "metrics": decode(128, 4096), "draft_length": 4},
        ),
        (
            "error/kv-outside-envelope",
            {"table": "grid", "metrics": decode(2, 2_000_000), "draft_length": 1},
        ),
        ("error/stp-outside-envelope", {"table": "grid", "metrics": decode(600, 64)}),
        ("error/overflow", {"table": "grid", "metrics": decode(2**61, 64), "draft_length": 5}),
        (
            "error/kv-list-length-mismatch",
            {
                "table": "grid",
                "metrics": {**decode(3, 10), "past_kv_lengths": [5, 5]},
                "draft_length": 1,
            },
        ),
        (
            "error/kv-list-sum-mismatch",
            {
                "table": "grid",
                "metrics": {**decode(2, 11), "past_kv_lengths": [5, 5]},
                "draft_length": 1,
            },
        ),
        ("error/negative-requests", {"table": "grid", "metrics": decode(-1, 0)}),
        ("error/kv-without-requests", {"table": "grid", "metrics": decode(0, 64)}),
        ("error/no-ranks", {"table": "grid", "metrics": []}),
    ]
    return rows


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    return detailed(table(inputs["table"]), inputs)


SUITE = Suite(
    name="scaling",
    description="STP->SD scaling rule on table estimators: d, B, K, KV lists, ranks, rejections",
    cases=make_cases(_rows()),
    evaluate=evaluate,
)
