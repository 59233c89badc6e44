"""The fuzz campaign against aisim's input contract (issue 17): structure-aware mutations of
valid configs, traces and command lines (``_seeds``, ``_mutate``), run in-process in a worker
(``_worker``) and judged, counted and minimised (``_campaign``). ``python -m qualification.fuzz``
runs a profile; docs/qualification.md "Fuzz campaign" describes it."""

from __future__ import annotations

from qualification.fuzz._campaign import CLASSES, Executor, Outcome, Tally, classify
from qualification.fuzz._mutate import Case, Mutation, build, cases
from qualification.fuzz._seeds import SEEDS, Seed

__all__ = [
    "CLASSES",
    "SEEDS",
    "Case",
    "Executor",
    "Mutation",
    "Outcome",
    "Seed",
    "Tally",
    "build",
    "cases",
    "classify",
]
