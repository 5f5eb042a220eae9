"""Shared fixtures: every test starts at the quick scale with seed offset 0 and 1 torch thread.

Hypothesis profiles (property-based tests): ``ci`` (the default: few examples per property, so that
``scripts/test.sh`` stays within its time) and ``thorough`` (many examples), selected with
``HYPOTHESIS_PROFILE=thorough``.

tqdm's bars take a lock on creation, by default a *multiprocessing* lock: one semaphore shared by every
process forked after it exists. Mutmut runs each mutant in a process forked from one server and kills
it when it runs out of time; a process killed while holding that lock leaves it held, and every later
mutant whose tests create a bar (``lib``'s trainers do, also with ``progress=False``) waits for it until
it is killed too, so mutmut counted surviving mutants as timeouts (found 2026-11-26: hung mutant
processes of lib/boolean.py waited on that semaphore, and mutants recorded as timeouts passed every test
when run by hand). Tests need no lock across processes: each process gets its own thread lock here.
"""

import os
import threading

import pytest
import torch
from hypothesis import HealthCheck, settings
from tqdm import std as tqdm_std

tqdm_std.tqdm.set_lock(threading.RLock())  # see the module docstring; tqdm.auto's classes inherit it

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
