"""Test-session setup: Hypothesis profiles (test helpers live in ``simstack.testing``).

Hypothesis runs derandomised by default (the same examples on every run, so CI is
reproducible); ``HYPOTHESIS_PROFILE=explore`` searches fresh random examples, more of them.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("ci", derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("explore", max_examples=1000, print_blob=True, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
