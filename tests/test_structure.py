"""The book's structure: table of contents, notebook hygiene, the chapter anatomy (BOOK_DESIGN.md)."""

import ast
import json
import re
from collections import Counter
from pathlib import Path

import nbformat
import pytest
import yaml

from lib import coverage

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def _toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files, stack = [toc["root"]], list(toc.get("chapters", [])) + list(toc.get("parts", []))
    while stack:
        entry = stack.pop()
        if "file" in entry:
            files.append(entry["file"])
        stack += entry.get("chapters", []) + entry.get("sections", [])
    return files


def _code(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_there_are_chapters():
    assert CHAPTERS, "no chapter notebooks found"


def test_toc_and_chapters_agree():
    listed = {f for f in _toc_files() if f.startswith("chapters/")}
    present = {f"chapters/{p.stem}" for p in CHAPTERS}
    assert listed == present, f"only in _toc.yml: {listed - present}; only in chapters/: {present - listed}"
    for f in _toc_files():
        assert any((ROOT / f).with_suffix(s).exists() for s in (".md", ".ipynb")), f"{f} in _toc.yml does not exist"


def test_chapter_file_names_are_numbered():
    for p in CHAPTERS:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", p.name), p.name


@pytest.fixture(params=CHAPTERS, ids=lambda p: p.stem)
def nb(request):
    return nbformat.read(request.param, as_version=4)


def test_no_outputs_committed(nb):
    stored = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not stored, f"cells {stored} carry outputs or execution counts: strip them before committing"


def test_kernelspec_is_python3(nb):
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_first_code_cell_is_the_shared_bootstrap(nb):
    reference = _code(nbformat.read(CHAPTERS[0], as_version=4))[0].source
    assert _code(nb)[0].source == reference, "the bootstrap cell must be identical in every chapter"
    assert "# Bootstrap" in reference


def test_bootstrap_cell_is_hidden_in_the_book(nb):
    """The bootstrap is plumbing: the rendered book folds it away (a reader can still open it)."""
    assert "hide-input" in _code(nb)[0].metadata.get("tags", []), "tag the bootstrap cell 'hide-input'"


def test_bootstrap_url_matches_config():
    bootstrap = _code(nbformat.read(CHAPTERS[0], as_version=4))[0].source
    urls = re.findall(r'REPO_URL = "([^"]+)"', bootstrap)
    assert urls == [CONFIG["repository"]["url"]]


def test_chapter_anatomy(nb):
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert re.search(r"^# ", markdown, re.M), "a chapter starts with a '# ' title"
    assert re.search(r"^## Paper vs this book", markdown, re.M), "missing the 'Paper vs this book' section"
    assert re.search(r"^## Beyond the document", markdown, re.M), "missing the 'Beyond the document' section"
    code = [c.source for c in _code(nb)]
    calls = [n for s in code for n in ast.walk(_parse_cell(s)) if isinstance(n, ast.Call)]
    checks = [c for c in calls if _called_name(c) == "check"]
    assert checks, "no lib.checks.check call: a chapter's statistical checks go through it"
    for c in checks + [c for c in calls if _called_name(c) == "check_full_run"]:  # check(name, value, op, threshold): a stated quantity, comparison and threshold
        named = not (c.args and isinstance(c.args[0], ast.Constant) and not isinstance(c.args[0].value, str))
        assert len(c.args) + len(c.keywords) == 4 and named, \
            f"check(...) at line {c.lineno} must name its quantity and give value, op and threshold"
    asserts = [n for s in code for n in ast.walk(_parse_cell(s)) if isinstance(n, ast.Assert)]
    assert asserts, "no assert (the chapter's exact checks)"
    constant = [a.lineno for a in asserts if isinstance(a.test, ast.Constant)]
    assert not constant, f"asserts of a constant cannot fail (lines {constant})"
    assert any("paper_vs_ours(" in s for s in code), "the comparison table must come from lib.results.paper_vs_ours"
    hidden = [n for s in code for n in _undisplayed_tables(_parse_cell(s))]
    assert not hidden, f"paper_vs_ours(...) at lines {hidden} is not its cell's last statement: wrap it in display(...)"
    assert any("widgets." in s for s in code), "no ipywidgets control"
    assert any("save_results(" in s for s in code), "the chapter must save its full-scale metrics"


def _parse_cell(source: str) -> ast.Module:
    """A code cell as Python (IPython magics and shell lines blanked)."""
    return ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()))


def _undisplayed_tables(cell: ast.Module) -> list[int]:
    """Lines of ``paper_vs_ours(...)`` statements that Jupyter does not show: a bare expression renders
    only as the cell's last top-level statement (elsewhere it needs ``display(...)``)."""
    last = cell.body[-1] if cell.body else None
    return [n.lineno for n in ast.walk(cell) if isinstance(n, ast.Expr) and n is not last
            and isinstance(n.value, ast.Call) and _called_name(n.value) == "paper_vs_ours"]


def _called_name(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def test_anatomy_rejects_constant_asserts_and_unstated_checks():
    bad = _parse_cell("assert True\ncheck(0.5, '>=', 0.1)\n%time x = 1")
    assert [a.test.value for a in ast.walk(bad) if isinstance(a, ast.Assert)] == [True]
    call = next(n for n in ast.walk(bad) if isinstance(n, ast.Call))
    assert _called_name(call) == "check" and len(call.args) == 3  # a check without its name: refused above


def test_undisplayed_tables_are_found():
    assert _undisplayed_tables(_parse_cell("rows = []\npaper_vs_ours(rows)\nprint(1)")) == [2]
    assert _undisplayed_tables(_parse_cell("if x:\n    paper_vs_ours(rows)\ny = 1")) == [2]
    assert _undisplayed_tables(_parse_cell("rows = []\npaper_vs_ours(rows)")) == []
    assert _undisplayed_tables(_parse_cell("display(paper_vs_ours(rows))\nprint(1)")) == []


def test_execution_config_is_explicit():
    execute = CONFIG["execute"]
    assert execute["raise_on_error"] is True and int(execute["timeout"]) >= 60
    assert CONFIG["launch_buttons"]["colab_url"].startswith("https://colab.research.google.com")


def test_requirements_pin_torch_and_jupyter_book_1():
    req = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^torch==2\.13\.0$", req, re.M)
    assert re.search(r"^jupyter-book>=1\.0\.4\.post1,<2$", req, re.M)


def test_committed_results_have_provenance():

    for path in (ROOT / "results").glob("*/*.json"):
        record = json.loads(path.read_text())
        if path.parent.name == "gpu_check":  # scripts/gpu_check.sh's step times: their own provenance
            assert {"commit", "date", "device", "device_name", "torch", "results"} <= record.keys(), path
            continue
        if path.name == "seeds.json":  # a seed sweep (lib.sweep) is of the quick scale
            assert record["provenance"]["scale"] == "quick", path
        elif path.stem.endswith("_draws"):  # quick-scale per-draw evidence a chapter reads (made by the script beside it)
            assert record["provenance"]["scale"] == "quick" and (path.parent / f"{path.stem}.py").exists(), path
        else:
            assert record["provenance"]["scale"] == path.stem != "quick", path
        for key in ("seeds", "git_commit", "date_utc", "machine", "wall_time_s"):
            assert key in record["provenance"], (path, key)


# Notebooks whose code changed after their committed seed sweep and whose new sweep has not run yet
# (one sweep takes 10-30 min of both cores; the session of 2026-11-27 could run those of chapters 07-10
# and 06's two shorter notebooks only, and 09's showed one thin check, fixed after it). Each passed one run at the default seed, but
# its checks are not verified over seeds 0-19 and two threads: the currency test below is an expected
# failure for them (strict: the entry must go as soon as the sweep is committed), and the room test,
# which would read the old sweep, is skipped.
# README, "Not yet verified", says the same to readers; issue 32 stays open while this is not empty.
SWEEP_PENDING = {}


def _chapters_expecting_failure(pending: dict, why: str):
    """CHAPTERS as pytest params, those in ``pending`` marked as strict expected failures (``why``: reason)."""
    return [pytest.param(p, id=p.stem, marks=pytest.mark.xfail(strict=True, reason=f"{why}: {pending[p.stem]}"))
            if p.stem in pending else pytest.param(p, id=p.stem) for p in CHAPTERS]


# Notebooks whose committed sweep is of their current code but has a check without the room the rule
# asks for, the fix not yet swept: the room test is a strict expected failure for them.
ROOM_PENDING = {}


def test_pending_sweeps_name_chapters():
    assert set(SWEEP_PENDING) | set(ROOM_PENDING) <= {p.stem for p in CHAPTERS}
    assert not set(SWEEP_PENDING) & set(ROOM_PENDING)


@pytest.mark.parametrize("path", _chapters_expecting_failure(SWEEP_PENDING, "seed sweep pending after"))
def test_seed_sweep_is_recorded_and_current(path):
    """Every chapter notebook has a committed seed sweep (lib.sweep) of its current version: 20 seeds
    on one thread and 5 on two, all passing, from a clean commit."""
    import subprocess

    records = [json.loads(p.read_text()) for p in (ROOT / "results").glob("*/seeds.json")]
    mine = [r for r in records if r["notebook"] == f"chapters/{path.name}"]
    assert len(mine) <= 1, f"more than one seeds.json names {path.name}"
    if not mine:  # shown in the test report; the definition of done asks for one (README, "Writing a chapter")
        pytest.skip(f"no seed sweep recorded yet for {path.name}: python -m lib.sweep chapters/{path.name} --write")
    rec = mine[0]
    runs = {(r["seed"], r["threads"]): r["passed"] for r in rec["runs"]}
    assert {s for s, t in runs if t == 1} >= set(range(20)) and {s for s, t in runs if t == 2} >= set(range(5)), \
        "the sweep must cover seeds 0-19 on one thread and 0-4 on two"
    assert all(runs.values()), [k for k, ok in runs.items() if not ok]
    assert all(c["min_margin"] is not None and c["min_margin"] >= 0 for c in rec["summary"]["checks"].values())
    commit = rec["provenance"]["git_commit"]
    assert not commit.endswith("-dirty") and commit != "unknown", commit
    shown = subprocess.run(["git", "show", f"{commit}:chapters/{path.name}"], cwd=ROOT, capture_output=True, text=True)
    if shown.returncode == 0:  # in a clone with history: the sweep must be of the notebook's code as it is now
        assert _code_sources(nbformat.reads(shown.stdout, as_version=4)) == _code_sources(nbformat.read(path, 4)), \
            f"{path.name}'s code changed since its seed sweep at {commit[:8]}: re-run python -m lib.sweep {path} --write"


@pytest.mark.parametrize("path", _chapters_expecting_failure(ROOM_PENDING, "thin"))
def test_seed_sweep_checks_have_room_against_the_spread(path):
    """Issue 32: every statistical check of the committed sweep has its mean value at least
    lib.sweep.MEAN_MARGIN_SDS seed-to-seed sds inside its threshold and its worst run at least
    SMALLEST_MARGIN_SDS; checks of the committed full run are constant (same value in every run).
    The numbers are recomputed here from the per-run values, not read from the sweep's summary."""

    import numpy as np

    if path.stem in SWEEP_PENDING:
        pytest.skip(f"{path.name}: its committed sweep is of older code; the new one is pending (SWEEP_PENDING)")

    from lib.checks import FULL_RUN_PREFIX
    from lib.sweep import MEAN_MARGIN_SDS, SMALLEST_MARGIN_SDS

    mine = [json.loads(p.read_text()) for p in (ROOT / "results").glob("*/seeds.json")]
    mine = [r for r in mine if r["notebook"] == f"chapters/{path.name}"]
    if not mine:
        pytest.skip(f"no seed sweep recorded yet for {path.name}")
    rec, thin = mine[0], []
    for name, c in rec["summary"]["checks"].items():
        values = np.array([run["checks"][name] for run in rec["runs"] if name in run["checks"]], dtype=float)
        assert len(values) == len(rec["runs"]), f"{name}: recorded in {len(values)} of {len(rec['runs'])} runs"
        if name.startswith(FULL_RUN_PREFIX):
            assert c.get("committed") and np.ptp(values) == 0, f"{name}: a full-run check must be constant"
            continue
        assert not c.get("committed"), f"{name}: a check of the committed full run must be named {FULL_RUN_PREFIX!r}..."
        sd = values.std(ddof=1)
        if sd == 0:
            continue
        sign = 1.0 if c["op"] in (">=", ">") else -1.0
        mean_room = sign * (values.mean() - c["threshold"]) / sd
        worst_room = min(sign * (values - c["threshold"])) / sd
        if mean_room < MEAN_MARGIN_SDS or worst_room < SMALLEST_MARGIN_SDS:
            thin.append(f"{name}: mean {mean_room:.2f} sd, smallest {worst_room:.2f} sd")
    assert not thin, f"{len(thin)} thin checks in the seed sweep of {path.name}: " + "; ".join(thin)


def _code_sources(nb):
    """What a seed sweep depends on: the code cells' sources, in order. Prose and cell tags (such as the
    bootstrap's 'hide-input') do not change what a run computes, so editing them keeps a sweep current."""
    return [c.source for c in _code(nb)]


def test_sweep_currency_sees_code_and_ignores_prose():
    nb = nbformat.read(CHAPTERS[0], as_version=4)
    prose = nbformat.from_dict(nb)
    for c in prose.cells:
        if c.cell_type == "markdown":
            c.source += "\nAn extra sentence."
        c.metadata["tags"] = ["an-extra-tag"]
    assert _code_sources(prose) == _code_sources(nb)
    code = nbformat.from_dict(nb)
    _code(code)[-1].source += "\nx = 1"
    assert _code_sources(code) != _code_sources(nb)


# --- Coverage tables (lib.coverage; issue 32) ---------------------------------------------------------

@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_ends_with_its_coverage_table(path):
    rows = coverage.notebook_rows(path)
    assert rows, f"{path.name}: the Coverage table has no rows"
    items = [r.item for r in rows]
    assert len(items) == len(set(items)), f"{path.name}: items listed twice: {[i for i in items if items.count(i) > 1]}"


def _verdicts_by_regex(path: Path) -> list[str]:
    """An independent count: the third cell of every table row after the last '## Coverage' heading."""
    cells = json.loads(path.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    section = text[text.rindex("\n## Coverage") if "\n## Coverage" in text else text.index("## Coverage"):]
    rows = [ln for ln in section.splitlines() if ln.startswith("|")][2:]
    return [re.sub(r"[*_`]", "", re.split(r"(?<!\\)\|", ln)[3]).strip().lower() for ln in rows]


def test_the_introduction_shows_the_counts_of_the_tables():
    assert "```{coverage-summary}" in (ROOT / "intro.md").read_text(), "intro.md must render the coverage summary"
    shown = coverage.summary_markdown(ROOT / "chapters")
    by_chapter: dict[str, Counter] = {}
    for path in CHAPTERS:
        by_chapter.setdefault(path.name[:2], Counter()).update(_verdicts_by_regex(path))
    for chapter, counts in by_chapter.items():
        line = next(ln for ln in shown.splitlines() if ln.startswith(f"| {chapter} "))
        numbers = [int(x) for x in line.strip("|").split("|")[1:]]
        assert numbers == [sum(counts.values())] + [counts[v] for v in coverage.VERDICTS], (chapter, line, counts)
