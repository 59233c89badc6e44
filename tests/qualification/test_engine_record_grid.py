"""The grid recorder times every prefill point at a step token count the engine has not
scheduled before (vLLM's CPU GEMMs cache one primitive per count, so a served prompt's prefill
mostly pays its creation). A scripted stand-in for the engine; no vLLM needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from qualification.engine._record import GridSpec, new_token_count_length, record_grid
from qualification.engine._vllm import StepRecord


@pytest.mark.parametrize(
    ("batch", "length", "budget", "seen", "expected"),
    [
        (1, 32, 512, set(), 32),
        (1, 32, 512, {32}, 31),  # the shorter first on a tie
        (1, 32, 512, {32, 31}, 33),
        (2, 128, 512, {256}, 127),  # 2 x 127 = 254
        (4, 128, 512, {512, 508}, 126),  # 129 would be 516 > 512: 126 x 4 = 504
        (1, 2, 2, {1, 2}, 2),  # every candidate seen: the length itself
    ],
)
def test_new_token_count_length(
    batch: int, length: int, budget: int, seen: set[int], expected: int
) -> None:
    assert new_token_count_length(batch, length, budget, seen) == expected


class _Options:
    num_speculative_tokens = 0
    speculative_method: str | None = None
    max_num_batched_tokens = 512


class ScriptedEngine:
    """FCFS, chunked prefill within a 512-token budget, one token per decode, no SD. Steps
    are numbered: a step's ``start_ms`` is its index in ``history`` (its token counts)."""

    def __init__(self) -> None:
        self.options = _Options()
        self.token_counts_seen: set[int] = set()
        self.history: list[int] = []
        self.requests: list[dict[str, Any]] = []

    def prometheus_text(self) -> str:
        return ""

    def reset_prefix_cache(self) -> None:
        pass

    def add(self, request_id: str, prompt: list[int], output_tokens: int) -> None:
        self.requests.append(
            {"id": request_id, "prompt": len(prompt), "out": output_tokens, "done": 0, "emitted": 0}
        )

    def has_work(self) -> bool:
        return bool(self.requests)

    def drafts(self, request: dict[str, Any]) -> int:
        """Drafts the request verifies in this decode step, all accepted (none: no SD)."""
        return 0

    def step(self, clock: Any) -> tuple[StepRecord | None, dict[str, tuple[int, bool]]]:
        index = float(len(self.history))
        record = StepRecord(index, index + 0.5, 0, 0, 0, 0, 0, 0, 0, 0, [])
        budget = self.options.max_num_batched_tokens
        for request in self.requests:
            if request["done"] >= request["prompt"]:  # decoding
                drafts = self.drafts(request)
                record.num_decode_requests += 1
                record.decode_kv_tokens += request["done"]
                record.draft_tokens += drafts
                request["done"] += 1 + drafts
                request["emitted"] += 1 + drafts
                budget -= 1 + drafts
            elif budget > 0:
                chunk = min(request["prompt"] - request["done"], budget)
                record.num_prefill_requests += 1
                record.prefill_tokens += chunk
                request["done"] += chunk
                budget -= chunk
                if request["done"] == request["prompt"]:
                    request["emitted"] += 1
            else:
                continue
            record.request_ids.append(request["id"])
        record.scheduled_tokens = (
            record.prefill_tokens + record.num_decode_requests + record.draft_tokens
        )
        state = {r["id"]: (r["emitted"], r["emitted"] >= r["out"]) for r in self.requests}
        self.requests = [r for r in self.requests if r["emitted"] < r["out"]]
        self.history.append(record.scheduled_tokens)
        self.token_counts_seen.add(record.scheduled_tokens)
        return record, state


def _record(engine: ScriptedEngine, spec: GridSpec, out: Path, common: dict[str, Any]) -> Path:
    return record_grid(
        engine,  # type: ignore[arg-type]
        spec,
        out,
        common,
        seed=0,
        vocab=1000,
        overwrite=False,
        progress=lambda _: None,
    )


def test_every_prefill_point_is_timed_at_a_new_token_count(tmp_path: Path) -> None:
    engine = ScriptedEngine()
    # Earlier work (e.g. a served run) already scheduled the nominal 128- and 32-token counts.
    engine.token_counts_seen.update({32, 128})
    spec = GridSpec((1, 2), (64,), (1, 2), (32, 128), repetitions=3, warmup=1)
    grid = _record(engine, spec, tmp_path, {"evidence_type": "engine-measurement"})
    rows = pd.read_parquet(grid / "grid_steps.parquet")
    prefill = rows[rows["phase"] == "prefill"]
    # 4 points x 3 passes timed, plus one warm-up each in the first pass.
    assert len(prefill) == 16
    for start, tokens in zip(prefill["start_ms"], prefill["scheduled_tokens"], strict=True):
        index = int(start)
        assert engine.history[index] == tokens
        assert tokens not in engine.history[:index] and tokens not in {32, 128}
    # Points keep their nominal names and contexts; the tokens stay near them.
    b1c128 = prefill[prefill["point_id"] == "prefill-b1-c128"]
    assert set(b1c128["context_tokens"]) == {128}
    assert all(120 <= tokens <= 136 for tokens in b1c128["scheduled_tokens"])
    b2c32 = prefill[prefill["point_id"] == "prefill-b2-c32"]
    assert all(tokens % 2 == 0 and 56 <= tokens <= 72 for tokens in b2c32["scheduled_tokens"])


def test_every_prefill_point_is_timed_again_at_the_same_cached_token_count(tmp_path: Path) -> None:
    engine = ScriptedEngine()
    spec = GridSpec((1,), (64,), (1, 2), (32, 128), repetitions=2, warmup=1)
    grid = _record(engine, spec, tmp_path, {"evidence_type": "engine-measurement"})
    rows = pd.read_parquet(grid / "grid_steps.parquet")
    novel = rows[rows["phase"] == "prefill"]
    cached = rows[rows["phase"] == "prefill-cached"]
    assert len(cached) == len(novel) == 4 * 2 + 4
    for (_, new), (_, again) in zip(novel.iterrows(), cached.iterrows(), strict=True):
        # Right after its point at a new count, the same count once more: cached this time.
        assert again["point_id"] == new["point_id"].replace("prefill-", "prefill-cached-")
        assert again["scheduled_tokens"] == new["scheduled_tokens"]
        index = int(again["start_ms"])
        assert engine.history[index] == again["scheduled_tokens"]
        assert again["scheduled_tokens"] in engine.history[:index]
        assert again["warmup"] == new["warmup"]


class _NgramOptions(_Options):
    num_speculative_tokens = 3
    speculative_method = "ngram"


class ScriptedNgramEngine(ScriptedEngine):
    """As ``ScriptedEngine``, with an n-gram drafter: a request drafts nothing in its first
    ``UNDRAFTED`` decode rounds, then 3 drafts a round, all accepted."""

    UNDRAFTED = 2

    def __init__(self) -> None:
        super().__init__()
        self.options = _NgramOptions()

    def drafts(self, request: dict[str, Any]) -> int:
        rounds = request.setdefault("rounds", 0)
        request["rounds"] = rounds + 1
        return 0 if rounds < self.UNDRAFTED else 3


def test_ngram_grid_times_undrafted_steps_as_plain_decode_points(tmp_path: Path) -> None:
    engine = ScriptedNgramEngine()
    spec = GridSpec((1, 2), (64,), (1,), (32,), repetitions=2, warmup=1)
    common = {
        "evidence_type": "engine-measurement",
        "identity": {},
        "engine_settings": {"speculative_method": "ngram"},
    }
    grid = _record(engine, spec, tmp_path, common)
    rows = pd.read_parquet(grid / "grid_steps.parquet")
    plain = rows[rows["phase"] == "decode"]
    sd = rows[rows["phase"] == "sd"]
    # Every request's first two rounds draft nothing: per point and pass one warm-up step and
    # one timed step, both the first two decode steps after the prefill.
    assert sorted(set(plain["point_id"])) == ["decode-b1-c64", "decode-b2-c64"]
    assert len(plain) == 2 * 2 * 2
    assert list(plain["warmup"]) == [True, False] * 4
    assert (plain["num_draft_tokens"] == 0).all()
    assert (plain["scheduled_tokens"] == plain["batch_size"]).all()
    # SD rounds are timed only where every request drafted its 3 tokens.
    assert (sd["scheduled_tokens"] == 4 * sd["batch_size"]).all()
    assert sorted(set(sd["point_id"])) == ["sd-b1-c64-d3", "sd-b2-c64-d3"]
    # The plain points become aisim STP points beside the measured SD rounds.
    stp = pd.read_parquet(grid / "stp_points.parquet")
    assert sorted(stp["batch_size"]) == [1, 2]
    assert (grid / "sd_rounds.measured.parquet").exists()


def test_the_host_note_and_the_cpu_affinity_go_into_the_sidecar(tmp_path: Path) -> None:
    import json
    import os

    note = "pinned: the engine alone on CPU 1"
    spec = GridSpec((1,), (64,), (1,), (32,), repetitions=1, warmup=0)
    common = {"evidence_type": "engine-measurement", "host": {"note": note}}
    grid = _record(ScriptedEngine(), spec, tmp_path, common)
    host = json.loads((grid / "grid_steps.parquet.json").read_text(encoding="utf-8"))["host"]
    assert host["note"] == note
    for moment in ("before", "after"):
        assert host[moment]["cpu_affinity"] == sorted(os.sched_getaffinity(0))


def test_an_empty_host_note_is_left_out_of_the_command() -> None:
    import argparse

    from qualification.engine._cli import add_arguments, command_line

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    plain = command_line(parser.parse_args(["--out", "x"]))
    assert "--host-note" not in plain
    noted = command_line(parser.parse_args(["--out", "x", "--host-note", "pinned to CPU 1"]))
    assert "--host-note 'pinned to CPU 1'" in noted


def test_the_default_recording_times_what_the_served_runs_need(tmp_path: Path) -> None:
    # Issue 23: decode below the shortest prompt's context (16 <= 32), prefill steps of one, two
    # and four prompts, 100 requests per served run, three served runs.
    import argparse

    from qualification.engine._cli import add_arguments, check_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--out", str(tmp_path / "rec")])
    _, _, _, grid, trace = check_arguments(args)
    assert grid.contexts == (16, 64, 256, 512) and trace.prompt_min == 32
    assert grid.prefill_batches == (1, 2, 4)
    assert grid.prefill_lengths == (16, 64, 128, 384)
    assert (trace.num_requests, args.served_runs) == (100, 3)
