"""Shared pytest set-up: hypothesis profiles (derandomized under CI) and thread limits."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Two xdist workers share two cores: keep BLAS and torch from oversubscribing them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
