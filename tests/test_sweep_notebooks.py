"""lib.sweep end to end: notebooks executed per seed in fresh kernels (seconds each, so mutation
testing leaves this file out; tests/test_checks_sweep.py holds the unit tests of lib.checks and lib.sweep)."""

from pathlib import Path

import nbformat

from lib import sweep


def _notebook(tmp_path, body):
    """A tiny clone: lib/ (a link to the real package) and chapters/t.ipynb running ``body``."""
    root = tmp_path / "clone"
    (root / "chapters").mkdir(parents=True)
    (root / "lib").symlink_to(Path(__file__).resolve().parent.parent / "lib")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(body)]
    path = root / "chapters" / "t.ipynb"
    nbformat.write(nb, path)
    return path


def test_sweep_runs_a_notebook_per_seed_and_collects_checks(tmp_path):
    path = _notebook(tmp_path, "import os\nfrom lib import checks\nchecks.begin('tiny')\n"
                               "s = int(os.environ['REPRO_SEED'])\n"
                               "checks.check('seed plus threads', s + int(os.environ['REPRO_THREADS']), '>=', 2)\n")
    runs = sweep.sweep(path, [0, 1, 3], threads=1, alt_seeds=[0], alt_threads=2, jobs=2, progress=lambda m: None)
    assert [(r.seed, r.threads, r.passed) for r in runs] == [(0, 1, False), (1, 1, True), (3, 1, True), (0, 2, True)]
    assert all(r.chapter == "tiny" for r in runs)
    assert "check failed: seed plus threads" in runs[0].error
    s = sweep.summarise(runs)["checks"]["seed plus threads"]
    assert (s["min_margin"], s["min_margin_seed"], s["runs"]) == (-1.0, 0, 4)


def test_sweep_reports_a_failing_cell_without_colour_codes(tmp_path):
    path = _notebook(tmp_path, "raise ValueError('broken on purpose')")
    (run,) = sweep.sweep(path, [0], alt_seeds=[], progress=lambda m: None)
    assert not run.passed and "ValueError: broken on purpose" in run.error and "\x1b[" not in run.error
