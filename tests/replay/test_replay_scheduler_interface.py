"""The scheduler interface (docs/design.md#replay): one implementation per backend, picked once by
the worker; no other replay module asks which backend it is."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from aisim.replay import SCHEDULER_SGLANG, SCHEDULER_VLLM, SchedulerPlan
from aisim.replay._scheduler import Scheduler
from aisim.replay._scheduler_sglang import SglangScheduler
from aisim.replay._scheduler_vllm import VllmScheduler
from aisim.replay._worker import scheduler_for

REPLAY = Path(__file__).resolve().parents[2] / "aisim" / "replay"


def _plan(kind: str) -> SchedulerPlan:
    return SchedulerPlan(kind, 4096, 128, True, 0.7, 0.1, 0.001)


def test_each_backend_is_one_implementation_of_the_interface() -> None:
    assert type(scheduler_for(_plan(SCHEDULER_VLLM))) is VllmScheduler
    assert type(scheduler_for(_plan(SCHEDULER_SGLANG))) is SglangScheduler
    assert isinstance(scheduler_for(_plan(SCHEDULER_SGLANG)), Scheduler)
    with pytest.raises(ValueError, match="scheduler kind: expected one of vllm, sglang, got 'x'"):
        scheduler_for(_plan("x"))


def test_the_backend_rules_are_the_engines() -> None:
    # vLLM (vllm/v1/core/sched/scheduler.py, Scheduler.schedule) verifies every draft, checks
    # free blocks before touching prefix hits, and its decode pool pulls the prompt KV; SGLang
    # clamps a round to the remaining output, its prefill server sends the first token with
    # the KV it pushes (docs/replay.md cites each).
    vllm = scheduler_for(_plan(SCHEDULER_VLLM))
    sglang = scheduler_for(_plan(SCHEDULER_SGLANG))
    assert (vllm.rank_rules.clamp_rounds, sglang.rank_rules.clamp_rounds) == (False, True)
    assert (vllm.rank_rules.check_fit_before_touch, sglang.rank_rules.check_fit_before_touch) == (
        True,
        False,
    )
    assert (
        vllm.rank_rules.prefill_sends_first_token,
        sglang.rank_rules.prefill_sends_first_token,
    ) == (False, True)
    assert (vllm.prefill_pushes_kv, sglang.prefill_pushes_kv) == (False, True)
    assert (vllm.steady_stretches, sglang.steady_stretches) == (True, False)
    # SGLang's SchedulerRecvSkipper; TensorRT-LLM's attention-DP balance on the vLLM-like one.
    assert (vllm.skips_receives, sglang.skips_receives) == (False, True)
    assert (vllm.balances_attention_dp, sglang.balances_attention_dp) == (True, False)


def test_only_the_worker_picks_the_backend_by_name() -> None:
    # The plan module defines the names (and the lookahead rule the config edge uses), the KV
    # sizing check names the user's budget field by them, the worker maps a name to its
    # implementation; the simulation modules go through the interface (SGLang's idle reset is
    # checked in test_replay_sglang_admission.py, the hand-off in test_replay_disaggregated.py).
    offenders = []
    for path in sorted(REPLAY.glob("*.py")):
        if path.name in ("_plan.py", "_worker.py", "_kv_sizing.py", "__init__.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in ("SCHEDULER_VLLM", "SCHEDULER_SGLANG"):
                offenders.append(f"{path.name}:{node.lineno} {node.id}")
            if isinstance(node, ast.Attribute) and node.attr == "is_sglang":
                offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert offenders == []
