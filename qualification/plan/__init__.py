"""The qualification plan: a release's acceptance criteria, validated at load."""

from qualification.plan._load import DEFAULT_PLAN, load_plan, parse_plan
from qualification.plan._metrics import CHECKS, DATASET_CHECKS, ENGINE_FIGURES, FILE_CHECKS, Metric
from qualification.plan._model import Bootstrap, Criterion, DatasetEntry, KnownGap, Plan, anchor

__all__ = [
    "CHECKS",
    "DATASET_CHECKS",
    "DEFAULT_PLAN",
    "FILE_CHECKS",
    "Bootstrap",
    "Criterion",
    "DatasetEntry",
    "KnownGap",
    "Metric",
    "Plan",
    "anchor",
    "load_plan",
    "parse_plan",
    "ENGINE_FIGURES",
]
