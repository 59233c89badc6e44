"""The seven sources of uncertainty a prediction interval can include, each switchable.

* ``acceptance``: the acceptance rates are uncertain (binomial counts from an engine's metrics,
  or rates observed over a stated number of rounds); each replica samples its rates.
* ``cost``: each estimator's step prices are off by an amount the committed qualification
  evidence measured (``cost_errors.v1.json``); each replica samples multiplicative factors.
* ``simulation``: the seeds (Poisson arrivals and synthetic lengths, the acceptance draws);
  each replica runs with its own.
* ``repeat``: the engine's run-to-run repeat noise (the same trace served again moves its
  figures; measured on the engine recordings' repeated runs, ``cost_errors.v1.json``
  ``repeat_samples``); each replica multiplies its figures by one measured run's deviation.
* ``drift``: the step price drifts in time within a run (the host's speed, measured as the
  correlation of consecutive served steps' price errors, ``cost_errors.v1.json``
  ``step_correlation``); each replica draws its per-step scatter as a process correlated in
  time instead of independently per step. Needs ``cost`` (it shapes the cost source's per-step
  draws).
* ``frontend``: a serving front end's terms (``aisim.fpm.FrontEndCost``: per engine step, per
  streaming request, per request before the engine) measured on another recording than the
  replay's step table are those of another hour (``cost_errors.v1.json``
  ``frontend_samples``: the probed recordings' terms); each replica of such a replay takes
  one probed recording's terms.
* ``overhead``: the per-request overhead before the first token that a caller prices on top of
  the replay (the public GPU fit's per-engine ``request_overhead_ms``: client and server work
  before the engine's first step) is off by as much as it was on the served points it was
  fitted on (``cost_errors.v1.json`` ``overhead_samples``: measured minus predicted median
  TTFT, the overhead refitted without the point); each replica adds one point's error to its
  TTFT and E2E.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aisim.errors import ConfigError

SOURCE_NAMES: Final = (
    "acceptance",
    "cost",
    "simulation",
    "repeat",
    "drift",
    "frontend",
    "overhead",
)


@dataclass(frozen=True)
class Sources:
    """Which sources a Monte Carlo run samples (a source switched off keeps the point value)."""

    acceptance: bool = True
    cost: bool = True
    simulation: bool = True
    repeat: bool = True
    drift: bool = True
    frontend: bool = True
    overhead: bool = True

    @staticmethod
    def parse(text: str, path: str = "--sources") -> Sources:
        """``all``, ``none`` or a comma list of ``acceptance``, ``cost``, ``simulation``,
        ``repeat``, ``drift``, ``frontend``, ``overhead``."""
        spelled = text.strip()
        if spelled == "all":
            return Sources()
        if spelled == "none":
            return Sources(False, False, False, False, False, False, False)
        allowed = f"expected all, none or a comma list of {', '.join(SOURCE_NAMES)}"
        names = [name.strip() for name in spelled.split(",")]
        unknown = [name for name in names if name and name not in SOURCE_NAMES]
        if unknown or names == [""]:
            raise ConfigError(f"{path}: {allowed}, got {text!r}")
        # 'cost,' and 'cost,cost' were read as 'cost': a slip in the list went unseen.
        if "" in names:
            raise ConfigError(f"{path}: empty item in {text!r}; {allowed}")
        repeated = next((name for i, name in enumerate(names) if name in names[:i]), None)
        if repeated is not None:
            raise ConfigError(f"{path}: {repeated!r} repeated in {text!r}; name each source once")
        return Sources(
            "acceptance" in names,
            "cost" in names,
            "simulation" in names,
            "repeat" in names,
            "drift" in names,
            "frontend" in names,
            "overhead" in names,
        )

    def names(self) -> list[str]:
        """The sources switched on, in ``SOURCE_NAMES`` order."""
        return [name for name in SOURCE_NAMES if getattr(self, name)]
