"""Run-wide percentiles beyond the exact buffer: the sketch stays within its stated relative
error of numpy's exact percentiles, merges exactly, and the summary says when it was used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import latencies

from aisim.replay._sketch import RELATIVE_ACCURACY, Distribution, QuantileSketch

quantiles = st.sampled_from([0.0, 0.01, 0.5, 0.9, 0.95, 0.99, 1.0])


@given(latencies, quantiles)
def test_sketch_within_relative_error_of_exact(values: list[float], q: float) -> None:
    sketch = QuantileSketch()
    for value in values:
        sketch.add(value)
    exact = float(np.percentile(np.asarray(values), q * 100.0))
    estimate = sketch.quantile(q)
    assert abs(estimate - exact) <= RELATIVE_ACCURACY * exact + 1e-12 * max(values)


@given(latencies, latencies)
def test_merge_equals_one_sketch_of_both(left: list[float], right: list[float]) -> None:
    a, b, both = QuantileSketch(), QuantileSketch(), QuantileSketch()
    for value in left:
        a.add(value)
        both.add(value)
    for value in right:
        b.add(value)
        both.add(value)
    a.merge(b)
    assert a.to_dict() == both.to_dict()
    assert QuantileSketch.from_dict(a.to_dict()).to_dict() == a.to_dict()


@given(st.lists(st.tuples(st.sampled_from([0.0, 2.5, 6.0, 6.0000001, 1e4]), st.integers(1, 9))))
def test_runs_of_equal_values_sketch_as_one_by_one(runs: list[tuple[float, int]]) -> None:
    """Distribution.to_sketch counts each run of equal values at once: the same sketch as
    adding every value (runs of a value may repeat, as a replay's gaps do)."""
    distribution = Distribution()
    one_by_one = QuantileSketch()
    for value, count in runs:
        for _ in range(count):
            distribution.add(value)
            one_by_one.add(value)
    assert distribution.to_sketch().to_dict() == one_by_one.to_dict()


def test_distribution_switches_to_the_sketch_past_its_limit() -> None:
    distribution = Distribution(exact_limit=100)
    for i in range(100):
        distribution.add(float(i + 1))
    assert distribution.exact and len(distribution.values) == 100
    distribution.add(101.0)
    assert not distribution.exact and distribution.values == []
    assert distribution.count == 101
    assert distribution.total == 101 * 102 / 2  # exact sum of 1..101: the mean stays exact
    sketch = distribution.to_sketch()
    assert abs(sketch.quantile(0.5) - 51.0) <= RELATIVE_ACCURACY * 51.0
    assert sketch.quantile(0.0) == 1.0 and sketch.quantile(1.0) == 101.0  # exact extremes


def test_mismatched_accuracy_does_not_merge() -> None:
    with pytest.raises(ValueError, match="cannot merge"):
        QuantileSketch(0.01).merge(QuantileSketch(0.02))


def test_summary_states_the_sketch_when_it_is_used() -> None:
    from aisim.config._replay import build_plan
    from aisim.replay._engine import Simulation
    from aisim.replay._summary import summarize

    requests = [{"timestamp": 10 * i, "input_length": 32, "output_length": 30} for i in range(20)]
    document = {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 400}},
                    "timing": {"type": "fixed", "prefill_ms": 7.0, "decode_ms": 3.0},
                }
            }
        },
    }
    plan, description = build_plan(document)
    result = Simulation(plan).run()
    exact = summarize(result, description).to_dict()
    assert "latency_percentiles" not in exact
    itl = np.asarray(result.recorder.itl.values)
    assert itl.size == 20 * 29
    # The same run with the ITL samples forced through a sketch (a limit of 10 samples).
    forced = Simulation(plan)
    forced.recorder.itl.exact_limit = 10
    sketched = summarize(forced.run(), description).to_dict()
    assert sketched["latency_percentiles"] == {
        "method": "sketch",
        "sketch": "ddsketch-logarithmic",
        "relative_accuracy": RELATIVE_ACCURACY,
        "exact_limit": 10,
        "sketched": ["itl"],
    }
    for label, percentile in (("median", 50), ("p90", 90), ("p99", 99)):
        reference = float(np.percentile(itl, percentile))
        assert abs(sketched[f"{label}_itl_ms"] - reference) <= RELATIVE_ACCURACY * reference
    assert sketched["mean_itl_ms"] == pytest.approx(exact["mean_itl_ms"], rel=1e-12)
    assert sketched["p99_ttft_ms"] == exact["p99_ttft_ms"]  # TTFT stayed exact


#: Canonical JSON of a replay whose five latency statistics all went through the sketch: the
#: summary and every sketch's buckets. Both builds must reproduce it byte for byte (tox ``py``
#: and ``compiled`` run this test), so the sketch path is compiled == pure. Regenerate with
#: ``AISIM_UPDATE_SKETCH_GOLDEN=1 pytest tests/replay/test_replay_sketch.py -k golden`` and
#: review the diff.
SKETCH_GOLDEN = Path(__file__).parent / "data" / "sketched_replay.json"
#: Samples kept exactly before the forced switch to the sketch (the run has 120 requests).
FORCED_LIMIT = 16


def sketch_document() -> dict[str, Any]:
    requests = [
        {
            "timestamp": 37 * i,
            "input_length": 40 + (97 * i) % 600,
            "output_length": 5 + (31 * i) % 90,
        }
        for i in range(120)
    ]
    worker = {
        "kv_cache": {"capacity": {"type": "fixed", "blocks": 300}},
        "timing": {"type": "fixed", "prefill_ms": 7.3, "decode_ms": 3.1},
    }
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "workers": {"aggregated": worker},
            "speculation": {
                "kind": "mtp",
                "params": {"depth": 3},
                "acceptance_rates": [0.8, 0.6, 0.4],
                "seed": 5,
            },
        },
    }


def forced_sketch_run(limit: int) -> tuple[Any, dict[str, Any]]:
    from aisim.config._replay import build_plan
    from aisim.replay._engine import Simulation
    from aisim.replay._summary import summarize

    plan, description = build_plan(sketch_document())
    simulation = Simulation(plan)
    log = simulation.log
    for distribution in (
        log.ttft,
        log.time_to_second_token,
        log.tpot,
        log.e2e_latency,
        simulation.recorder.itl,
    ):
        distribution.exact_limit = limit
    result = simulation.run()
    return result, summarize(result, description).to_dict()


def test_sketched_replay_matches_its_golden_in_both_builds() -> None:
    import os

    from aisim._io import canonical_json
    from aisim.replay._summary import distributions

    result, summary = forced_sketch_run(FORCED_LIMIT)
    document = {
        "summary": summary,
        "sketches": {name: d.to_sketch().to_dict() for name, d in distributions(result).items()},
    }
    text = canonical_json(document)
    if os.environ.get("AISIM_UPDATE_SKETCH_GOLDEN") == "1":
        SKETCH_GOLDEN.write_text(text, encoding="utf-8")
    assert summary["latency_percentiles"]["sketched"] == [
        "ttft",
        "time_to_second_token",
        "tpot",
        "e2e_latency",
        "itl",
    ]
    assert text == SKETCH_GOLDEN.read_text(encoding="utf-8")


def test_sketched_replay_percentiles_within_the_stated_error_of_exact() -> None:
    """The same replay with exact buffers: every sketched percentile is within the relative
    accuracy the summary states of numpy's exact percentile of the same samples."""
    exact_result, exact = forced_sketch_run(10**9)
    _, sketched = forced_sketch_run(FORCED_LIMIT)
    assert "latency_percentiles" not in exact
    accuracy = sketched["latency_percentiles"]["relative_accuracy"]
    assert accuracy == RELATIVE_ACCURACY
    from aisim.replay._summary import distributions

    for name, distribution in distributions(exact_result).items():
        samples = np.asarray(distribution.values)
        assert samples.size > FORCED_LIMIT, name
        for label, percentile in (("median", 50), ("p90", 90), ("p95", 95), ("p99", 99)):
            reference = float(np.percentile(samples, percentile))
            value = sketched[f"{label}_{name}_ms"]
            assert abs(value - reference) <= accuracy * reference + 1e-9, (name, label)
        assert sketched[f"mean_{name}_ms"] == pytest.approx(exact[f"mean_{name}_ms"], rel=1e-12)
