"""Paper-path smoke tests (issue 22): every chapter whose paper scale differs from its full scale runs
end to end with its paper configuration on the CPU.

Each such notebook is executed by ``python -m lib.run --paper-smoke`` (two at a time, see
:data:`SMOKE_WORKERS`), that is like ``tests/test_chapters.py`` does, but at ``REPRO_SCALE=paper`` with
the test-only switch ``REPRO_PAPER_SMOKE=1`` (:mod:`lib.scale`): the downloads (MNIST, CIFAR-10/100,
IMDB) are replaced by tiny synthetic stand-ins of the right shapes (:func:`lib.data.smoke_online`), the
paper configuration's step, epoch, seed and trial counts are shrunk (:func:`lib.scale.smoke_config`),
and the chapter's claims are evaluated but only reported (:data:`lib.run.SMOKE_PREAMBLE`): a few steps on
random data cannot train anything. Any other error in any cell, in particular in the cells that only
the paper scale reaches, fails the test. What this cannot cover (the real downloads, a GPU, the
claims at paper scale) is listed in the README ("Running a chapter yourself", Colab).

Which chapters have a paper scale of their own is read from the notebooks themselves: their code up to
the ``setup(CONFIG)`` call runs in one subprocess, which reports ``CONFIG.paper != CONFIG.full``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lib.run import run_notebook

# Chapter executions, like tests/test_chapters.py: not run for each mutant of a mutation run.
pytestmark = pytest.mark.skipif("MUTANT_UNDER_TEST" in os.environ, reason="notebook executions do not judge mutants")
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))

# Runs the notebook's code cells up to its setup(CONFIG) call (lib.notebook.setup replaced by a stub
# that stops there) and prints {stem: [chapter key, paper config differs from full]} as JSON.
_SCALES_SCRIPT = r"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import lib.notebook

class _Stop(Exception):
    pass

found = {}
def _stub(chapter, threads=None):
    found["chapter"] = chapter
    raise _Stop

lib.notebook.setup = _stub
out = {}
for path in sys.argv[2:]:
    cells = ["".join(c["source"]) for c in json.load(open(path))["cells"] if c["cell_type"] == "code"]
    os.chdir(Path(path).parent)
    namespace = {"__name__": "__main__"}
    for source in cells:
        lines = [l for l in source.splitlines() if not l.lstrip().startswith(("%", "!"))]
        try:
            exec(compile("\n".join(lines), path, "exec"), namespace)
        except _Stop:
            break
    chapter = found.pop("chapter", None)
    out[Path(path).stem] = None if chapter is None else [chapter.chapter, chapter.paper != chapter.full]
print(json.dumps(out))
"""


def declared_scales() -> dict:
    """{notebook stem: [chapter key, whether its paper config differs from its full one]} (also used by
    scripts/gpu_check.sh)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_")}
    env.update(REPRO_SCALE="quick", MPLBACKEND="Agg")
    out = subprocess.run([sys.executable, "-c", _SCALES_SCRIPT, str(ROOT), *map(str, NOTEBOOKS)],
                         capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def paper_scales():
    return declared_scales()


def test_every_chapter_declares_its_scales(paper_scales):
    missing = [stem for stem, found in paper_scales.items() if found is None]
    assert not missing, f"no setup(CONFIG) call with a ChapterScales found in {missing}"
    assert any(differs for _, differs in paper_scales.values()), "no chapter has a paper scale of its own"


# The smoke runs execute SMOKE_WORKERS notebooks at a time, each in its own ``python -m lib.run
# --paper-smoke`` process (one torch thread per kernel): CI has two cores, and the runs are independent.
SMOKE_WORKERS = max(1, min(2, os.cpu_count() or 1))


@pytest.fixture(scope="module")
def smoke_runs(paper_scales, tmp_path_factory, request):
    """{stem: (exit status, output, executed notebook path, results mtime before, after)} of every selected
    chapter (``-k`` selects too) with a paper scale of its own, run SMOKE_WORKERS at a time."""
    from concurrent.futures import ThreadPoolExecutor

    out = tmp_path_factory.mktemp("paper-smoke")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRO_", "MPLBACKEND"))}  # inline figures

    def mtime(chapter):
        saved = ROOT / "results" / chapter / "paper.json"
        return saved.stat().st_mtime_ns if saved.exists() else None

    def run(path):
        chapter = paper_scales[path.stem][0]
        before = mtime(chapter)
        proc = subprocess.run([sys.executable, "-m", "lib.run", "--paper-smoke", "--out", str(out), str(path)],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        return path.stem, (proc.returncode, proc.stdout + proc.stderr, out / path.name, before, mtime(chapter))

    selected = {item.name for item in request.session.items}
    todo = [p for p in NOTEBOOKS if paper_scales[p.stem] and paper_scales[p.stem][1]
            and f"test_paper_path_smoke[{p.stem}]" in selected]
    with ThreadPoolExecutor(SMOKE_WORKERS) as pool:
        return dict(pool.map(run, todo))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_paper_path_smoke(notebook, paper_scales, smoke_runs):
    import nbformat

    chapter, differs = paper_scales[notebook.stem]
    if not differs:
        pytest.skip(f"{notebook.stem}: its paper config equals its full config (full scale is tested by the committed run)")
    status, output, executed, before, after = smoke_runs[notebook.stem]
    assert status == 0, output[-6000:]  # lib.run names the failing cell
    nb = nbformat.read(executed, as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "PAPER-SMOKE RUN (REPRO_PAPER_SMOKE=1" in text, "the banner must say that this is a smoke run"
    assert "device REPRO_DEVICE = auto -> cpu" in text
    assert after == before, "a smoke run must not save results"
    print(next(line for line in output.splitlines() if line.startswith(notebook.name + ":")))


def test_smoke_preamble_makes_claims_soft_but_keeps_errors(tmp_path, monkeypatch):
    import nbformat

    from lib.run import NotebookFailed

    monkeypatch.setenv("REPRO_SCALE", "paper")
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")
    cells = ["import sys; sys.path.insert(0, %r)" % str(ROOT),
             "from lib.checks import check\nassert 1 == 2, 'one is two'\nassert {}[1]\ncheck('c', 0.0, '>', 1.0)\n"
             "def f():\n    assert False, 'inside'\n    return 5\nprint('after', f())",
             "raise RuntimeError('a real error')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    path = tmp_path / "soft.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(NotebookFailed, match="(?s)cell 2 failed.*a real error"):
        run_notebook(path)
    nb.cells = nb.cells[:2]
    nbformat.write(nb, path)
    out = "".join(o.get("text", "") for o in run_notebook(path).notebook.cells[1].outputs)
    for text in ("claim not holding on the stand-in data: one is two", "KeyError: 1",
                 "check failed: c: 0.0 > 1.0 does not hold", "inside", "after 5"):
        assert text in out
