"""Every chapter notebook runs top to bottom at the current scale (quick in scripts/test.sh).

The semantics of ``pytest --nbval-lax``: a notebook fails when any of its cells raises (its assert
and ``check(...)`` cells are the checks); outputs are not compared. Each notebook runs once, in a
fresh kernel with ``chapters/`` as working directory (as in the book build), under the per-cell time
limit of ``lib.run`` (a stuck kernel fails the test within minutes, naming the cell). The executed
notebook is stored in the book's jupyter-cache, so ``scripts/build_book.sh`` after this test renders
it instead of executing it again (``lib.run`` explains when the cache is re-used and when not).
"""

import os
from pathlib import Path

import pytest

from lib.run import run_notebook, store_in_book_cache

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
# conftest.py pins REPRO_SCALE=quick and REPRO_SEED=0 for every test; a chapter runs at the REPRO_*
# settings pytest was started with (scripts/test.sh: quick; REPRO_SEED as the caller set it).
START_ENV = {k: v for k, v in os.environ.items() if k.startswith("REPRO_")}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chapter_runs(notebook, monkeypatch):
    for key in [k for k in os.environ if k.startswith("REPRO_")]:
        monkeypatch.delenv(key)
    for key, value in START_ENV.items():
        monkeypatch.setenv(key, value)
    run = run_notebook(notebook)  # raises NotebookFailed naming the cell
    store_in_book_cache(notebook, run)
    index, seconds = run.slowest
    print(f"{notebook.name}: {run.seconds:.1f} s, slowest cell {index}: {seconds:.1f} s")


def test_there_are_chapters():
    assert NOTEBOOKS, "no notebook in chapters/"
