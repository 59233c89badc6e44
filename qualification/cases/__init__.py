"""The parity case matrix: one suite per capability, each frozen in ``goldens/<suite>.json``.

``SUITE_NAMES`` is the one list of registered suites (in a fixed order); ``get_suite(name)``
imports a suite's module and returns its ``Suite``.
"""

from __future__ import annotations

import importlib

from qualification.cases._drafts import EAGLE3_LLAMA_8B, draft_config
from qualification.cases._suite import Case, Suite, make_cases, run_case, to_jsonable

#: Registered suites, each a module ``qualification.cases.<name>`` defining ``SUITE``.
SUITE_NAMES: tuple[str, ...] = (
    "catalogue",
    "speculation",
    "acceptance",
    "scaling",
    "roofline",
    "estimators",
    "replay",
)


def get_suite(name: str) -> Suite:
    """The registered suite ``name``; an unknown name is a ``KeyError`` listing the suites."""
    if name not in SUITE_NAMES:
        raise KeyError(f"unknown suite {name!r}; registered: {', '.join(SUITE_NAMES)}")
    module = importlib.import_module(f"qualification.cases.{name}")
    suite = module.SUITE
    if not isinstance(suite, Suite) or suite.name != name:
        raise TypeError(f"qualification.cases.{name}.SUITE must be the Suite named {name!r}")
    return suite


__all__ = [
    "SUITE_NAMES",
    "Case",
    "Suite",
    "get_suite",
    "make_cases",
    "run_case",
    "to_jsonable",
    "EAGLE3_LLAMA_8B",
    "draft_config",
]
