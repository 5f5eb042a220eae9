"""Same scale and seed give identical numbers on the same machine: run Chapter 0 twice and compare."""

import re
from pathlib import Path

from lib.run import run_notebook

NOTEBOOK = Path(__file__).resolve().parent.parent / "chapters" / "00_how_to_read.ipynb"
TIMING = re.compile(r"wall time|\d+(\.\d+)?\s*s\b")  # lines that report elapsed time legitimately differ


def _stdout(nb) -> list[str]:
    lines = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and out.name == "stdout":
                lines += out.text.splitlines()
            elif out.output_type in ("execute_result", "display_data") and "text/markdown" in out.data:
                lines += out.data["text/markdown"].splitlines()
    return [line for line in lines if not TIMING.search(line)]


def _run():
    # a fresh kernel in chapters/, under lib.run's per-cell time limit (a stuck kernel fails the test
    # in minutes, naming the cell, instead of hanging)
    return _stdout(run_notebook(NOTEBOOK).notebook)


def test_chapter_0_twice_gives_identical_numbers():
    first, second = _run(), _run()
    assert any("seeds classify all four corners" in line for line in first)
    assert first == second
