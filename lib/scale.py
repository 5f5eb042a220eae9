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

``REPRO_DEVICE`` (issue 22) is the one device choice of the book: ``auto`` (default; at ``paper`` scale
CUDA if available, else the CPU; at ``quick`` and ``full`` scale always the CPU, where the book's tiny
nets run fastest), ``cpu``, ``cuda`` or ``mps``. :func:`current_device` resolves it; the trainers and
the paper-scale models train on it and hand results back on the CPU.

``REPRO_PAPER_SMOKE=1`` (with ``REPRO_SCALE=paper``) is a test-only switch, not a fourth scale: the
paper path runs end to end with tiny synthetic stand-ins for the downloads (:mod:`lib.data`) and the
paper configuration's step, epoch, seed and trial counts shrunk (:func:`smoke_config`), so that CI
executes every paper-only cell on a CPU. Its numbers mean nothing: the banner says so, and
:func:`lib.results.save_results` refuses to save them.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from lib import validate as V

SCALES = ("quick", "full", "paper")
DEVICES = ("auto", "cpu", "cuda", "mps")
#: The chapter key of every chapter notebook: its ``ChapterScales`` name and its folder under ``results/``
#: (``tests/test_scale.py`` checks the list against results/). A new chapter adds its key here.
CHAPTER_KEYS = (
    "how_to_read", "parametric_equivalence", "inductive_bias", "mutual_autoencoder", "distillation",
    "multi_exit", "boolean_swaps", "boolean_higher_dims", "boolean_pruning", "circle_vs_annulus",
    "circle_vs_annulus_higher_dims", "local_linearity", "local_linearity_image_networks",
    "local_linearity_comparisons", "student_specialisation", "student_specialisation_deep",
    "optimization_landscape", "optimization_landscape_sublevel_sets", "optimization_landscape_skip_connections",
    "optimization_landscape_decision_regions",
)
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


def device_choice() -> str:
    """The choice in ``REPRO_DEVICE`` (default ``auto``), one of :data:`DEVICES`."""
    value = os.environ.get("REPRO_DEVICE", "auto").strip().lower() or "auto"
    if value not in DEVICES:
        raise ValueError(f"REPRO_DEVICE must be one of {DEVICES}, got {value!r}")
    return value


def _available(kind: str) -> bool:
    import torch

    if kind == "cuda":
        return torch.cuda.is_available()
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def current_device():
    """The ``torch.device`` of this run (``REPRO_DEVICE``, see the module docstring).

    ``auto`` is CUDA only at ``paper`` scale (not in a smoke run) and only where CUDA is available;
    everywhere else the CPU, so quick and full runs give the CPU's numbers. An explicit ``cuda`` or
    ``mps`` that this machine lacks is a ``ValueError``, not a silent fall-back to the CPU.
    """
    import torch

    choice = device_choice()
    if choice == "auto":
        use_cuda = current_scale() == "paper" and not paper_smoke() and _available("cuda")
        return torch.device("cuda" if use_cuda else "cpu")
    if choice != "cpu" and not _available(choice):
        raise ValueError(f"REPRO_DEVICE={choice!r}, but this machine has no {choice} device "
                         "(use REPRO_DEVICE=auto or cpu)")
    return torch.device(choice)


def as_device(device=None, name: str = "device"):
    """``device`` as a ``torch.device``: ``None`` is :func:`current_device`; else ``"cpu"``,
    ``"cuda"``, ``"cuda:<k>"``, ``"mps"`` or a ``torch.device`` of one of those types, which this
    machine must have (a ``ValueError`` naming ``name`` otherwise)."""
    import torch

    if device is None:
        return current_device()
    if not isinstance(device, (str, torch.device)):
        raise V.ArgumentTypeError(f"{name} must be None, a str or a torch.device, got {V.describe(device)}")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        dev = None
    if dev is None or dev.type not in DEVICES[1:]:
        raise V.ArgumentValueError(f"{name} must be one of {DEVICES[1:]} (or cuda:<index>), got {device!r}")
    if dev.type != "cpu" and not _available(dev.type):
        raise V.ArgumentValueError(f"{name} is {device!r}, but this machine has no {dev.type} device")
    return dev


def model_device(model):
    """The device of ``model``'s first parameter (the CPU for a model without parameters): where a
    model's methods make their tensors, and where a trainer puts it back (:func:`on_device`)."""
    import torch

    V.instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    first = next(model.parameters(), None)
    return torch.device("cpu") if first is None else first.device


def on_device(model, device=None):
    """A ``with`` block that trains ``model`` on ``device``: the model moves there, and back to where it
    was when the block ends, also when the block raises; ``as`` gives the ``torch.device``. ``model``
    and ``device`` (:func:`as_device`; ``None``: ``REPRO_DEVICE``) are checked here, before anything
    moves. Every device-aware trainer of the book (issue 22) trains inside one."""
    home = model_device(model)
    return _moved(model, as_device(device), home)


@contextmanager
def _moved(model, device, home):
    try:
        model.to(device)
        yield device
    finally:
        model.to(home)


def paper_smoke() -> bool:
    """Whether ``REPRO_PAPER_SMOKE`` (``0``/``1``, default ``0``) asks for a paper-path smoke run.

    Only meaningful with ``REPRO_SCALE=paper``; set with any other scale it is a ``ValueError``, so that
    a smoke run can never pass for a quick or full one.
    """
    raw = os.environ.get("REPRO_PAPER_SMOKE", "").strip() or "0"
    if raw not in ("0", "1"):
        raise ValueError(f"REPRO_PAPER_SMOKE must be 0 or 1, got {raw!r}")
    if raw == "1" and current_scale() != "paper":
        raise ValueError(f"REPRO_PAPER_SMOKE=1 needs REPRO_SCALE=paper (a smoke run of the paper path), "
                         f"got REPRO_SCALE={current_scale()!r}")
    return raw == "1"


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
        if self.chapter not in CHAPTER_KEYS:
            raise ValueError(f"chapter key must be one of lib.scale.CHAPTER_KEYS (a new chapter adds its key "
                             f"there), got {self.chapter!r}")
        kinds = {type(self.quick), type(self.full), type(self.paper)}
        if len(kinds) != 1:
            raise ValueError(f"quick, full and paper configs must share one type, got {kinds}")

    def for_scale(self, scale: str) -> T:
        """The config of ``scale`` (one of :data:`SCALES`); in a paper smoke run (:func:`paper_smoke`)
        the paper config with its counts shrunk (:func:`lib.smoke.smoke_config`)."""
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        if scale == "paper" and paper_smoke():
            from lib.smoke import smoke_config

            return smoke_config(self.paper, self.chapter, self.quick)
        return getattr(self, scale)

    @property
    def current(self) -> T:
        """The config of the active scale."""
        return self.for_scale(current_scale())


def banner(chapter: ChapterScales) -> str:
    """A one-paragraph description of the active scale and seeds, printed by every chapter."""
    V.instance(chapter, "chapter", ChapterScales)
    scale = current_scale()
    smoke = (
        "PAPER-SMOKE RUN (REPRO_PAPER_SMOKE=1, a test of the code path, not a result): synthetic stand-ins "
        "for the downloads and a few steps; its numbers mean nothing and nothing is saved under results/.\n"
        if paper_smoke() else "")
    return (
        f"{smoke}Chapter '{chapter.chapter}': scale = {scale!r}, seed offset REPRO_SEED = {seed_offset()}, "
        f"threads REPRO_THREADS = {thread_count()}, device REPRO_DEVICE = {device_choice()} -> {current_device()}.\n"
        f"Config: {chapter.current}\n"
        "Change with the environment variables REPRO_SCALE=quick|full|paper, REPRO_SEED=<int>, REPRO_THREADS=<int> "
        "and REPRO_DEVICE=auto|cpu|cuda|mps "
        "(set them before starting Jupyter, or in Colab with os.environ before the bootstrap cell)."
    )
