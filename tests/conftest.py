"""Shared pytest setup: hypothesis settings profiles.

``ci`` (what tox selects through ``HYPOTHESIS_PROFILE=ci``): derandomized, so every run draws the
same examples (a fixed seed), bounded to 50 examples, no deadline (2 shared cores make timing
noisy), and failing examples printed as reproduction blobs.  ``dev``: 500 random examples for a
deeper local search.  Without ``HYPOTHESIS_PROFILE`` the ``ci`` profile is used, so a plain
``pytest`` run is as reproducible as CI.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=50,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    max_examples=500,
    deadline=None,
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
