"""Run scales and seeds shared by every chapter (Chapter 0 introduces them).

``REPRO_SCALE`` picks the scale of a run:

* ``quick`` (default): what CI and the book build execute, about a minute per chapter on 2 CPU cores;
* ``full``: the largest reproduction that is feasible on a CPU (at most ~30 min per chapter);
  its metrics are committed under ``results/``;
* ``paper``: the source document's own scale (GPU and/or downloads; meant for Colab).

``REPRO_SEED`` (an integer, default 0) shifts every seed of a run, so that anyone can re-run a
chapter on fresh seeds: always derive seeds with :func:`seed` or :func:`seeds`.

``REPRO_THREADS`` (a positive integer, default 1) is the torch/BLAS thread count a chapter pins; a
different count changes the summation order the way another CPU does (``lib.sweep`` uses it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Generic, TypeVar

from lib import validate as V

SCALES = ("quick", "full", "paper")
SEED_STRIDE = 1000  # seeds of REPRO_SEED=k are k*1000 + i: disjoint from other k for i < 1000

T = TypeVar("T")


def current_scale() -> str:
    """The active scale, read from ``REPRO_SCALE`` (default ``quick``)."""
    value = os.environ.get("REPRO_SCALE", "quick").strip().lower() or "quick"
    if value not in SCALES:
        raise ValueError(f"REPRO_SCALE must be one of {SCALES}, got {value!r}")
    return value


def _env_int(name: str, default: int, minimum: int, kind: str) -> int:
    """The integer in environment variable ``name`` (``default`` if unset or blank), at least ``minimum``."""
    raw = os.environ.get(name, "").strip() or str(default)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a {kind} integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be a {kind} integer, got {value}")
    return value


def seed_offset() -> int:
    """The integer in ``REPRO_SEED`` (default 0) that shifts every seed of a run."""
    return _env_int("REPRO_SEED", 0, 0, "non-negative")


def seed(i: int = 0) -> int:
    """The ``i``-th seed of this run: ``REPRO_SEED * 1000 + i``."""
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < SEED_STRIDE:
        raise ValueError(f"seed index must be an int in [0, {SEED_STRIDE}), got {i!r}")
    return seed_offset() * SEED_STRIDE + i


def seeds(n: int) -> list[int]:
    """The first ``n`` seeds of this run (see :func:`seed`)."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= SEED_STRIDE:
        raise ValueError(f"number of seeds must be an int in [1, {SEED_STRIDE}], got {n!r}")
    return [seed(i) for i in range(n)]


def thread_count() -> int:
    """The thread count in ``REPRO_THREADS`` (default 1) that :func:`lib.notebook.setup` pins."""
    return _env_int("REPRO_THREADS", 1, 1, "positive")


def set_threads(n: int = 1) -> int:
    """Pin torch's intra-op threads and numpy's BLAS threads to ``n``; returns ``n``.

    One thread is fastest for the book's tiny networks and small matrices (several times faster
    than two on a loaded 2-core machine).
    """
    import torch
    from threadpoolctl import threadpool_limits

    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"thread count must be a positive int, got {n!r}")
    torch.set_num_threads(n)
    threadpool_limits(n)  # global limit for numpy/scipy BLAS and OpenMP pools
    return n


@dataclass(frozen=True)
class ChapterScales(Generic[T]):
    """One chapter's configuration at every scale; the same code path runs at each.

    Each of ``quick``, ``full`` and ``paper`` is a config object of the chapter's own (a frozen
    dataclass holding every hyper-parameter); ``.current`` is the one ``REPRO_SCALE`` selects.
    """

    chapter: str
    quick: T
    full: T
    paper: T

    def __post_init__(self):
        V.instance(self.chapter, "chapter", str, "a str (the chapter key)")
        if not self.chapter or not self.chapter.replace("_", "").isalnum():
            raise ValueError(f"chapter key must be a non-empty identifier, got {self.chapter!r}")
        kinds = {type(self.quick), type(self.full), type(self.paper)}
        if len(kinds) != 1:
            raise ValueError(f"quick, full and paper configs must share one type, got {kinds}")

    def for_scale(self, scale: str) -> T:
        """The config of ``scale`` (one of :data:`SCALES`)."""
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        return getattr(self, scale)

    @property
    def current(self) -> T:
        """The config of the active scale."""
        return self.for_scale(current_scale())


def banner(chapter: ChapterScales) -> str:
    """A one-paragraph description of the active scale and seeds, printed by every chapter."""
    V.instance(chapter, "chapter", ChapterScales)
    scale = current_scale()
    return (
        f"Chapter '{chapter.chapter}': scale = {scale!r}, seed offset REPRO_SEED = {seed_offset()}, "
        f"threads REPRO_THREADS = {thread_count()}.\n"
        f"Config: {chapter.current}\n"
        "Change with the environment variables REPRO_SCALE=quick|full|paper, REPRO_SEED=<int> and REPRO_THREADS=<int> "
        "(set them before starting Jupyter, or in Colab with os.environ before the bootstrap cell)."
    )
