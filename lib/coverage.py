"""Each chapter's Coverage table: what of its document section the book reproduces, and what it does not.

Every chapter notebook ends with a Markdown section ``## Coverage`` holding one table, one row per
numbered table, figure, theorem/lemma/corollary and numbered equation of the part of the document
section the notebook covers:

    ## Coverage

    | item | where in this chapter | verdict | note |
    |---|---|---|---|
    | Table 4.1 | "Minimal networks" | reproduced | every entry to 4 digits |
    | Fig. 4.4 | — | not done | the hexagon is drawn in Fig. 4.3's panel instead |

The verdict is one of :data:`VERDICTS`; every verdict but "reproduced" needs a note saying what
differs or why it is not done ("not reproduced": the chapter ran it and the claim did not hold; "not
done": the chapter does not run it). The introduction page shows the per-chapter counts
(``_ext/book_html.py`` renders :func:`summary_markdown` where ``intro.md`` says
``{coverage-summary}``), and ``tests/test_coverage.py`` checks every notebook's table.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

VERDICTS = ("reproduced", "reproduced with a difference", "not reproduced", "not done")
HEADING = "## Coverage"
COLUMNS = ("item", "where in this chapter", "verdict", "note")


class CoverageError(ValueError):
    """A notebook's Coverage section is missing or malformed (the message names the notebook and row)."""


@dataclass(frozen=True)
class Row:
    """One document item and the chapter's verdict on it."""

    item: str
    where: str
    verdict: str
    note: str


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row ``| a | b |`` (an escaped ``\\|`` stays inside its cell)."""
    body = line.strip()
    if not (body.startswith("|") and body.endswith("|")):
        raise CoverageError(f"not a table row: {line!r}")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body[1:-1])]


def _plain(text: str) -> str:
    """A cell without Markdown emphasis: ``**reproduced**`` -> ``reproduced``."""
    return re.sub(r"[*_`]", "", text).strip()


def parse_table(markdown: str, where: str = "the Coverage section") -> list[Row]:
    """The rows of the first Markdown table in ``markdown``, checked against :data:`COLUMNS` and
    :data:`VERDICTS`. Raises :class:`CoverageError` naming ``where`` and the offending row."""
    if not isinstance(markdown, str):
        raise CoverageError(f"{where}: expected Markdown text, got {type(markdown).__name__}")
    lines = [ln for ln in markdown.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 3:
        raise CoverageError(f"{where}: no table with a header, a separator and at least one row")
    header = tuple(c.lower() for c in map(_plain, _cells(lines[0])))
    if header != COLUMNS:
        raise CoverageError(f"{where}: the table's columns must be {COLUMNS}, got {header}")
    if not all(re.fullmatch(r":?-{3,}:?", c) for c in _cells(lines[1])):
        raise CoverageError(f"{where}: the second line must separate the header: {lines[1]!r}")
    rows = []
    for line in lines[2:]:
        cells = _cells(line)
        if len(cells) != len(COLUMNS):
            raise CoverageError(f"{where}: row {line!r} has {len(cells)} cells, expected {len(COLUMNS)}")
        item, place, verdict, note = cells
        verdict = _plain(verdict).lower()
        if not _plain(item):
            raise CoverageError(f"{where}: a row without its document item: {line!r}")
        if verdict not in VERDICTS:
            raise CoverageError(f"{where}: {item!r} has verdict {verdict!r}; it must be one of {VERDICTS}")
        if verdict != "reproduced" and not _plain(note):
            raise CoverageError(f"{where}: {item!r} is {verdict!r} without a note saying what differs or why")
        rows.append(Row(item, place, verdict, note))
    return rows


def coverage_section(notebook: Path) -> str:
    """The Markdown cell of ``notebook`` that holds its ``## Coverage`` section, which must be the
    notebook's last section (no ``## `` heading after it)."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    headed = [(i, m) for i, m in enumerate(markdown) for ln in m.splitlines() if ln.startswith("## ")]
    if not headed or not headed[-1][1].lstrip().startswith(HEADING):
        last = headed[-1][1].splitlines()[0] if headed else "none"
        raise CoverageError(f"{Path(notebook).name}: its last section must be {HEADING!r} (last: {last!r})")
    return headed[-1][1]


def notebook_rows(notebook: Path) -> list[Row]:
    """The Coverage rows of one chapter notebook."""
    return parse_table(coverage_section(notebook), Path(notebook).name)


def chapter_of(notebook: Path) -> str:
    """The chapter number of a notebook: ``07_circle_vs_annulus_higher_dims.ipynb`` -> ``"07"``."""
    match = re.match(r"(\d\d)_", Path(notebook).name)
    if not match:
        raise CoverageError(f"{Path(notebook).name}: a chapter notebook's name starts with its number")
    return match.group(1)


def chapter_counts(chapters_dir: Path) -> dict[str, Counter]:
    """Per chapter number, the count of each verdict over all its notebooks (sections included)."""
    counts: dict[str, Counter] = {}
    for nb in sorted(Path(chapters_dir).glob("*.ipynb")):
        counts.setdefault(chapter_of(nb), Counter()).update(r.verdict for r in notebook_rows(nb))
    return counts


def _title(chapter: str, chapters_dir: Path) -> str:
    """The ``# `` title of the chapter's first notebook."""
    first = sorted(Path(chapters_dir).glob(f"{chapter}_*.ipynb"))[0]
    for cell in json.loads(first.read_text())["cells"]:
        for line in "".join(cell["source"]).splitlines():
            if cell["cell_type"] == "markdown" and line.startswith("# "):
                return line[2:].strip()
    return first.stem


def summary_markdown(chapters_dir: Path) -> str:
    """The introduction's table: per chapter, how many document items each verdict has."""
    counts = chapter_counts(chapters_dir)
    head = ["chapter", "items", *VERDICTS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total = Counter()
    for chapter, c in counts.items():
        total.update(c)
        lines.append(f"| {chapter} {_title(chapter, chapters_dir)} | {sum(c.values())} | "
                     + " | ".join(str(c[v]) for v in VERDICTS) + " |")
    lines.append(f"| **all chapters** | **{sum(total.values())}** | "
                 + " | ".join(f"**{total[v]}**" for v in VERDICTS) + " |")
    return "\n".join(lines)
