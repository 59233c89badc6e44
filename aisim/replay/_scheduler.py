"""The scheduler interface: what replay asks of an engine's scheduler, one implementation per
backend (``_scheduler_vllm.VllmScheduler``, ``_scheduler_sglang.SglangScheduler``).

vLLM keeps its V1 scheduler behind an abstract class (``vllm/v1/core/sched/interface.py``,
``SchedulerInterface``: ``schedule()`` fills one step's batch, ``update_from_output()`` applies
the step's results). Replay has the same seam at its own grain: ``schedule`` fills a rank's
batch for the next pass (``RankState.complete`` applies the pass, which both backends share),
``on_idle`` is the backend's hook when a worker has nothing to run, and the backend's rules for
the mechanics the rank and the engine share (round width, prefix hits, P/D hand-off, the fast
path, request intake, attention-DP balance) are typed attributes set once by each
implementation. The worker calls the interface; nothing else asks which backend it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from aisim.replay._plan import SchedulerPlan
from aisim.replay._rank import RankRules, RankState


class Scheduler(ABC):
    """One backend's batching policy for the ranks of one worker (``plan``).

    ``rank_rules``: how the rank's shared mechanics behave on this backend (``RankRules``).
    ``prefill_pushes_kv``: on a disaggregated pair, whether the prefill pool pushes a finished
    prompt's KV to the decode pool, which takes the request in when the transfer ends (SGLang),
    or the decode pool is handed the request first and pulls the KV into blocks it allocates
    (vLLM's KV connector); read on the decode worker's scheduler.
    ``steady_stretches``: whether the worker's passes may be advanced as steady decode stretches
    (``_stretch``, which replays the vLLM-like planning rules only).
    ``skips_receives``: whether the worker honours ``SchedulerPlan.recv_interval`` (SGLang's
    ``SchedulerRecvSkipper``: new requests taken in every N passes).
    ``balances_attention_dp``: whether the worker honours ``SchedulerPlan.adp_balance``
    (TensorRT-LLM's attention-DP balance, modelled on the vLLM-like scheduler).
    """

    def __init__(
        self,
        plan: SchedulerPlan,
        rank_rules: RankRules,
        prefill_pushes_kv: bool,
        steady_stretches: bool,
        skips_receives: bool,
        balances_attention_dp: bool,
    ) -> None:
        self.plan = plan
        self.rank_rules = rank_rules
        self.prefill_pushes_kv = prefill_pushes_kv
        self.steady_stretches = steady_stretches
        self.skips_receives = skips_receives
        self.balances_attention_dp = balances_attention_dp

    @abstractmethod
    def schedule(self, rank: RankState) -> None:
        """Fill ``rank.batch`` for the pass starting at ``rank.now_ms`` (possibly empty)."""

    @abstractmethod
    def on_idle(self, rank: RankState) -> None:
        """The worker of ``rank`` has no pass to run."""
