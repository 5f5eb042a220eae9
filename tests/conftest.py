"""Shared fixtures: every test starts at the quick scale with seed offset 0 and 1 torch thread."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _quick_scale(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "quick")
    monkeypatch.setenv("REPRO_SEED", "0")
    torch.set_num_threads(1)
