"""Same scale and seed give identical numbers on the same machine: run Chapter 0 twice and compare."""

import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

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
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return _stdout(nb)


def test_chapter_0_twice_gives_identical_numbers():
    first, second = _run(), _run()
    assert any("seeds classify all four corners" in line for line in first)
    assert first == second
