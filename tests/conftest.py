"""Shared fixtures: every test starts at the quick scale with seed offset 0 and 1 torch thread.

Hypothesis profiles (property-based tests): ``ci`` (the default: few examples per property, so that
``scripts/test.sh`` stays within its time) and ``thorough`` (many examples), selected with
``HYPOTHESIS_PROFILE=thorough``.
"""

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=10, deadline=2000, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _quick_scale(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "quick")
    monkeypatch.setenv("REPRO_SEED", "0")
    torch.set_num_threads(1)
