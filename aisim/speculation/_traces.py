"""Acceptance from traces: measured accepted drafts per request and round, replayed exactly.

Two formats (docs/speculation.md, "Acceptance from traces"), one JSON object per line:

* ``jsonl``: ``{"request_id": "r0", "accepted": [2, 0, 3, ...]}``, the accepted drafts of each
  of the request's decode rounds in order (bonus token excluded), optionally with
  ``"drafted": [3, 3, 3, ...]``, the drafts proposed in each round (0: an undrafted round);
  without it every round drafts the block's full chain.
* ``vllm-request-metrics``: ``{"request_id": "r0", "spec_token_acceptance_counts": [c0, c1,
  ..., cK]}``, vLLM's per-request counts (``RequestMetrics.spec_token_acceptance_counts`` in
  ``vllm/sequence.py``: ``c0`` the request's SD steps, ``c_i`` the steps that accepted at least
  ``i`` drafts). They give a request's rounds as a multiset, not in order: aisim replays them
  in a fixed order (most accepted first).

Interpreted (it reads files); replay gets plain ``{request_id: [accepted, ...]}`` lists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from aisim._fields import describe
from aisim.errors import ConfigError
from aisim.speculation._acceptance import AcceptanceProfile

TRACE_JSONL: Final = "jsonl"
TRACE_VLLM_REQUEST_METRICS: Final = "vllm-request-metrics"
TRACE_FORMATS: Final = (TRACE_JSONL, TRACE_VLLM_REQUEST_METRICS)
#: Bounds every loop over a trace (rounds per request, requests per file).
MAX_TRACE_ROUNDS: Final = 1 << 22
MAX_TRACE_REQUESTS: Final = 1 << 22


class AcceptanceTrace:
    """Per-request accepted drafts (and, when given, drafted counts) per decode round."""

    def __init__(
        self, accepted: dict[str, list[int]], drafted: dict[str, list[int]] | None
    ) -> None:
        self.accepted = accepted
        self.drafted = drafted

    @property
    def rounds(self) -> int:
        return sum(len(rounds) for rounds in self.accepted.values())


def read_trace(text: str, name: str, format: str, depth: int, where: str) -> AcceptanceTrace:
    """Parse and check a trace's text (from file ``name``): every accepted count in
    ``0..min(drafted, depth)``."""
    accepted: dict[str, list[int]] = {}
    drafted: dict[str, list[int]] = {}
    with_drafted = False
    if format not in TRACE_FORMATS:
        raise ConfigError(
            f"{where}.format: expected one of {', '.join(TRACE_FORMATS)}, got {format!r}"
        )
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        at = f"{where}: {name!r} line {number}"
        try:
            item = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{at}: not JSON ({exc.msg})") from None
        except RecursionError:  # thousands of nested brackets
            raise ConfigError(f"{at}: not JSON (nested too deeply)") from None
        except ValueError as exc:  # an integer past Python's 4300 digits
            from aisim._text import value_error_text

            raise ConfigError(f"{at}: not JSON ({value_error_text(exc)})") from None
        if not isinstance(item, dict):
            raise ConfigError(f"{at}: expected a JSON object, got {describe(item)}")
        request = item.get("request_id")
        if isinstance(request, int) and not isinstance(request, bool):
            request = str(request)
        if not isinstance(request, str) or not request:
            raise ConfigError(f"{at}.request_id: expected a string, got {describe(request)}")
        if request in accepted:
            raise ConfigError(f"{at}.request_id: {request!r} appears twice")
        if len(accepted) >= MAX_TRACE_REQUESTS:
            raise ConfigError(f"{at}: more than {MAX_TRACE_REQUESTS} requests")
        if format == TRACE_JSONL:
            rounds = _counts(item.get("accepted"), f"{at}.accepted", depth)
            given = item.get("drafted")
            if given is not None:
                with_drafted = True
                proposed = _counts(given, f"{at}.drafted", depth)
                if len(proposed) != len(rounds):
                    raise ConfigError(
                        f"{at}.drafted: {len(proposed)} rounds, but accepted has {len(rounds)}"
                    )
                for index, (taken, offered) in enumerate(zip(rounds, proposed, strict=True)):
                    if taken > offered:
                        raise ConfigError(
                            f"{at}.accepted[{index}]: {taken} accepted of {offered} drafted"
                        )
                drafted[request] = proposed
            accepted[request] = rounds
        else:
            accepted[request] = _from_counts(
                item.get("spec_token_acceptance_counts"),
                f"{at}.spec_token_acceptance_counts",
                depth,
            )
    if not accepted:
        raise ConfigError(f"{where}: {name!r} holds no requests")
    if with_drafted and len(drafted) != len(accepted):
        raise ConfigError(f"{where}: give drafted for every request or for none")
    return AcceptanceTrace(accepted, drafted if with_drafted else None)


def _counts(value: object, where: str, depth: int) -> list[int]:
    if not isinstance(value, list) or len(value) > MAX_TRACE_ROUNDS:
        raise ConfigError(
            f"{where}: expected a list of at most {MAX_TRACE_ROUNDS} integers, got {describe(value)}"
        )
    result: list[int] = []
    for index, count in enumerate(value):
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= depth:
            raise ConfigError(
                f"{where}[{index}]: expected an integer in 0..{depth} (the block's depth), "
                f"got {describe(count)}"
            )
        result.append(count)
    return result


def _from_counts(value: object, where: str, depth: int) -> list[int]:
    """vLLM's per-request counts -> the request's rounds (most accepted first)."""
    counts = _counts_any(value, where)
    if not counts:
        raise ConfigError(f"{where}: expected [steps, at_least_1, ...], got an empty list")
    if len(counts) - 1 > depth:
        # Positions past the depth may only be zero.
        if any(counts[depth + 1 :]):
            raise ConfigError(
                f"{where}: counts accepted drafts at position {len(counts) - 1}, deeper than "
                f"the block's depth {depth}"
            )
        counts = counts[: depth + 1]
    rounds: list[int] = []
    for position in range(len(counts) - 1, -1, -1):
        above = counts[position + 1] if position + 1 < len(counts) else 0
        exactly = counts[position] - above
        if exactly < 0:
            raise ConfigError(
                f"{where}: counts must not increase with the position, got {counts[position]} "
                f"then {above}"
            )
        rounds.extend([position] * exactly)
    if len(rounds) > MAX_TRACE_ROUNDS:
        raise ConfigError(f"{where}: more than {MAX_TRACE_ROUNDS} rounds")
    return rounds


def _counts_any(value: object, where: str) -> list[int]:
    if not isinstance(value, list) or len(value) > 65:
        raise ConfigError(f"{where}: expected a list of counts, got {describe(value)}")
    result: list[int] = []
    for index, count in enumerate(value):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"{where}[{index}]: expected a count >= 0, got {describe(count)}")
        result.append(count)
    return result


def trace_profile(trace: AcceptanceTrace, depth: int, where: str) -> AcceptanceProfile:
    """The empirical profile of a trace's drafted rounds: ``u_i`` = rounds accepting at least
    ``i`` drafts / drafted rounds (rounds drafting nothing are left out, as vLLM counts)."""
    at_least = [0] * depth
    total = 0
    for request, rounds in trace.accepted.items():
        offered = None if trace.drafted is None else trace.drafted[request]
        for index, taken in enumerate(rounds):
            if offered is not None and offered[index] == 0:
                continue
            total += 1
            for position in range(taken):
                at_least[position] += 1
    if total == 0:
        raise ConfigError(f"{where}: the trace has no drafted round")
    return AcceptanceProfile.from_unconditional([count / total for count in at_least], where)


def trace_acceptance(
    path: str, format: str, depth: int, where: str, base_dir: str | Path | None
) -> tuple[AcceptanceProfile, dict[str, Any]]:
    """A block's ``acceptance_trace``: its empirical profile and a provenance record whose
    ``_trace`` entry (an ``AcceptanceTrace``) the resolver hands to replay."""
    from aisim.speculation._engine_measure import read_source

    file = Path(path)
    if not file.is_absolute() and base_dir is not None:
        file = Path(base_dir) / file
    text, source = read_source(file, f"{where}: ", "an acceptance trace (JSON lines)")
    trace = read_trace(text, path, format, depth, where)
    record: dict[str, Any] = {
        "format": f"trace:{format}",
        "files": [{"path": path, "sha256": source.sha256}],
        "requests": len(trace.accepted),
        "rounds": trace.rounds,
        "_trace": trace,
    }
    return trace_profile(trace, depth, where), record
