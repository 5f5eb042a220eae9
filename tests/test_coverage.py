"""lib.coverage: parsing the chapters' Coverage tables and counting their verdicts (the book's own
chapters are checked in tests/test_structure.py, which mutation testing leaves out)."""

import re
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from lib import coverage as C

GOOD = """## Coverage

Some words first.

| item | where in this chapter | verdict | note |
|---|---|---|---|
| Table 4.1 | "Minimal networks" | reproduced | |
| Fig. 4.4 | — | not done | drawn in Fig. 4.3's panel instead |
| Thm 2 \\| Lemma 3 | "Checks" | **reproduced with a difference** | 3 of 4 seeds |
| Eq. (5.1) | "Checks" | not reproduced | measured 0.68 against the claimed <= 0.6 |
"""


def test_a_good_table_parses_into_rows():
    rows = C.parse_table(GOOD)
    assert [r.item for r in rows] == ["Table 4.1", "Fig. 4.4", "Thm 2 | Lemma 3", "Eq. (5.1)"]
    assert [r.verdict for r in rows] == ["reproduced", "not done", "reproduced with a difference", "not reproduced"]
    assert rows[0].where == '"Minimal networks"' and rows[0].note == ""
    assert rows[3].note == "measured 0.68 against the claimed <= 0.6"


@pytest.mark.parametrize("bad, match", [
    (GOOD.replace("| verdict |", "| outcome |"), "columns must be"),
    (GOOD.replace("| reproduced | |", "| done | |"), "'Table 4.1' has verdict 'done'"),
    (GOOD.replace("| not done | drawn in Fig. 4.3's panel instead |", "| not done | |"),
     "'Fig. 4.4' is 'not done' without a note"),
    (GOOD.replace("| 3 of 4 seeds |", "| |"), "is 'reproduced with a difference' without a note"),
    (GOOD.replace("| Table 4.1 |", "| |"), "a row without its document item"),
    (GOOD.replace("| Table 4.1 | \"Minimal networks\" | reproduced | |", "| Table 4.1 | reproduced | |"),
     "has 3 cells, expected 4"),
    (GOOD.replace("|---|---|---|---|", "| a | b | c | d |"), "must separate the header"),
    ("## Coverage\n\nNo table at all.\n", "no table"),
    ("| item | where in this chapter | verdict | note |\n|---|---|---|---|\n", "no table"),
    (GOOD.replace("| Table 4.1 |", "Table 4.1 |"), None),  # a row without its leading bar is not a row
    (3, "expected Markdown text"),
])
def test_bad_tables_are_refused_with_the_reason(bad, match):
    if match is None:  # the broken line is not part of the table: the rest still parses
        assert [r.item for r in C.parse_table(bad)][0] == "Fig. 4.4"
        return
    with pytest.raises(C.CoverageError, match=re.escape(match)):
        C.parse_table(bad, "demo.ipynb")


def _nb(tmp_path, name, *markdown):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(m) for m in markdown] + [nbformat.v4.new_code_cell("x = 1")]
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_the_coverage_section_must_be_the_last_section(tmp_path):
    ok = _nb(tmp_path, "01_a.ipynb", "# Title", "## Checks\n\ntext", GOOD)
    assert len(C.notebook_rows(ok)) == 4
    late = _nb(tmp_path, "01_b.ipynb", "# Title", GOOD, "## Closing note\n\ntext")
    with pytest.raises(C.CoverageError, match="01_b.ipynb: its last section must be '## Coverage'.*Closing note"):
        C.notebook_rows(late)
    with pytest.raises(C.CoverageError, match="last: 'none'"):
        C.notebook_rows(_nb(tmp_path, "01_c.ipynb", "# Title only"))


def test_counts_are_per_chapter_over_its_sections(tmp_path):
    _nb(tmp_path, "01_a.ipynb", "# First chapter", GOOD)
    _nb(tmp_path, "01_b_section.ipynb", "# Its section", GOOD.replace("not reproduced", "reproduced"))
    _nb(tmp_path, "02_c.ipynb", "# Second", GOOD)
    counts = C.chapter_counts(tmp_path)
    assert counts == {"01": Counter({"reproduced": 3, "not done": 2, "reproduced with a difference": 2,
                                     "not reproduced": 1}),
                      "02": Counter({"reproduced": 1, "not done": 1, "reproduced with a difference": 1,
                                     "not reproduced": 1})}
    table = C.summary_markdown(tmp_path).splitlines()
    assert table[0] == "| chapter | items | reproduced | reproduced with a difference | not reproduced | not done |"
    assert table[2] == "| 01 First chapter | 8 | 3 | 2 | 1 | 2 |"
    assert table[3] == "| 02 Second | 4 | 1 | 1 | 1 | 1 |"
    assert table[4] == "| **all chapters** | **12** | **4** | **3** | **2** | **3** |"
    with pytest.raises(C.CoverageError, match="starts with its number"):
        C.chapter_of(Path("intro.ipynb"))
