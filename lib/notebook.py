"""Helpers for the chapter notebooks: set-up banner, showing tested code, timing the chapter."""

from __future__ import annotations

import inspect
import time

from lib.plotting import use_book_style
from lib import checks
from lib.results import require_clean_tree
from lib.scale import ChapterScales, banner, current_scale, set_threads, thread_count


def setup(chapter: ChapterScales, threads: int | None = None) -> "Stopwatch":
    """Start a chapter: pin torch threads, apply the figure style, print the scale banner.

    At full and paper scale it refuses a tree with uncommitted changes (``REPRO_ALLOW_DIRTY=1`` allows it),
    since the results it saves must name the commit that made them.
    ``threads`` defaults to ``REPRO_THREADS`` (1 unless set). Starts the chapter's record of checks
    (:mod:`lib.checks`). Returns a running :class:`Stopwatch` that the chapter's last cell reports.
    """
    if not isinstance(chapter, ChapterScales):
        raise ValueError(f"setup expects the chapter's ChapterScales, got {type(chapter).__name__}")
    require_clean_tree()  # a full or paper run fails here, not after training, if it could not save
    set_threads(thread_count() if threads is None else threads)
    checks.begin(chapter.chapter)
    use_book_style()
    print(banner(chapter))
    return Stopwatch()


def show_source(obj):
    """Display the source code of a function or class, so the notebook shows the tested code itself."""
    from IPython.display import Markdown

    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        raise ValueError(f"show_source expects a function, method or class, got {type(obj).__name__}")
    module = inspect.getmodule(obj).__name__
    return Markdown(f"`{module}.{obj.__qualname__}`:\n\n```python\n{inspect.getsource(obj).rstrip()}\n```")


class Stopwatch:
    """Wall-clock timer for a chapter (the definition of done asks for the quick-scale time)."""

    def __init__(self):
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def report(self, budget_s: float | None = None) -> float:
        """Print the elapsed time and scale; at quick scale also the budget it must stay under."""
        scale = current_scale()
        msg = f"Chapter wall time: {self.elapsed:.1f} s at scale {scale!r}"
        if budget_s is not None and scale == "quick":
            msg += f" (quick-scale budget: {budget_s:.0f} s on the 2-core CI machine)"
        print(msg)
        return self.elapsed
