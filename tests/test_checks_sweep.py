"""lib.checks records what a statistical check compares; lib.sweep summarises margins over seeds."""

import json
from pathlib import Path

import numpy as np
import pytest

from lib import checks, sweep


@pytest.fixture(autouse=True)
def _fresh_records(monkeypatch):
    monkeypatch.delenv(checks.CHECKS_FILE_ENV, raising=False)
    checks.RECORDS.clear()


@pytest.mark.parametrize("value, op, threshold, expected", [
    (3.0, ">=", 1.0, 2.0), (3.0, ">", 1.0, 2.0), (0.25, "<=", 1.0, 0.75), (0.25, "<", 1.0, 0.75),
    (1.0, ">=", 1.0, 0.0), (-2.0, "<", -1.0, 1.0),
])
def test_margin_is_the_distance_on_the_passing_side(value, op, threshold, expected):
    assert checks.check("a", value, op, threshold) == pytest.approx(expected)
    rec = checks.RECORDS[-1]
    assert rec == {"check": "a", "value": value, "op": op, "threshold": threshold, "margin": pytest.approx(expected),
                   "passed": True, "n_values": 1}


@pytest.mark.parametrize("value, op, threshold", [(0.5, ">=", 1.0), (1.0, ">", 1.0), (2.0, "<=", 1.0),
                                                  (1.0, "<", 1.0)])
def test_failing_check_raises_after_recording(value, op, threshold):
    with pytest.raises(AssertionError, match=f"check failed: gain: {value} {op} {threshold}"):
        checks.check("gain", value, op, threshold)
    rec = checks.RECORDS[-1]
    assert rec["passed"] is False
    assert rec["margin"] == pytest.approx(-abs(value - threshold))


def test_arrays_record_the_element_closest_to_failing():
    assert checks.check("lower", [5.0, 2.0, 9.0], ">", 1.0) == pytest.approx(1.0)
    assert checks.RECORDS[-1]["value"] == 2.0 and checks.RECORDS[-1]["n_values"] == 3
    assert checks.check("upper", np.array([[0.1, 0.4], [0.3, 0.2]]), "<=", 0.5) == pytest.approx(0.1)
    assert checks.RECORDS[-1]["value"] == 0.4
    with pytest.raises(AssertionError):  # one bad element fails the whole array
        checks.check("lower", [5.0, 0.5, 9.0], ">", 1.0)
    assert checks.RECORDS[-1]["value"] == 0.5


def test_nan_fails_and_has_no_margin():
    with pytest.raises(AssertionError):
        checks.check("nan", [1.0, float("nan")], "<", 2.0)
    assert checks.RECORDS[-1]["margin"] is None and checks.RECORDS[-1]["passed"] is False


@pytest.mark.parametrize("kwargs, match", [
    ({"name": "", "value": 1, "op": ">", "threshold": 0}, "descriptive name"),
    ({"name": "x", "value": 1, "op": "=>", "threshold": 0}, "op must be"),
    ({"name": "x", "value": 1, "op": ">", "threshold": float("nan")}, "finite number"),
    ({"name": "x", "value": 1, "op": ">", "threshold": "1"}, "finite number"),
    ({"name": "x", "value": 1, "op": ">", "threshold": True}, "finite number"),
    ({"name": "x", "value": [], "op": ">", "threshold": 0}, "no values"),
])
def test_bad_input_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        checks.check(**kwargs)
    assert not checks.RECORDS


def test_records_go_to_the_checks_file(tmp_path, monkeypatch):
    path = tmp_path / "checks.jsonl"
    monkeypatch.setenv(checks.CHECKS_FILE_ENV, str(path))
    checks.begin("demo")
    checks.check("g", 2.0, ">=", 1.0)
    with pytest.raises(AssertionError):
        checks.check("h", 0.0, ">=", 1.0)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"chapter": "demo"}
    assert [(r["check"], r["margin"], r["passed"]) for r in lines[1:]] == [("g", 1.0, True), ("h", -1.0, False)]
    with pytest.raises(ValueError):
        checks.begin("")


@pytest.mark.parametrize("text, seeds", [("0-3", [0, 1, 2, 3]), ("5", [5]), ("0-1, 7,3", [0, 1, 3, 7]),
                                         ("", []), ("2-2,2", [2])])
def test_parse_seeds(text, seeds):
    assert sweep.parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["a", "3-1", "-1", "1-x"])
def test_parse_seeds_rejects_nonsense(text):
    with pytest.raises(ValueError):
        sweep.parse_seeds(text)


def _run(seed, threads, passed, values):
    recs = [{"check": name, "value": v, "op": ">=", "threshold": 1.0, "margin": v - 1.0, "passed": v >= 1.0}
            for name, v in values.items()]
    return sweep.Run(seed, threads, passed=passed, chapter="demo", checks=recs, error="" if passed else "boom")


def test_summary_finds_the_smallest_margin_and_its_seed():
    runs = [_run(0, 1, True, {"a": 3.0, "b": 1.5}), _run(1, 1, True, {"a": 2.0, "b": 1.1}),
            _run(2, 2, False, {"a": 4.0, "b": 0.9})]
    s = sweep.summarise(runs)
    assert (s["runs"], s["passes"]) == (3, 2)
    assert s["failed_runs"] == [{"seed": 2, "threads": 2, "error": "boom"}]
    a, b = s["checks"]["a"], s["checks"]["b"]
    assert a["min_margin"] == pytest.approx(1.0) and a["min_margin_seed"] == 1 and a["failures"] == 0
    assert a["value_mean"] == pytest.approx(3.0) and a["value_sd"] == pytest.approx(1.0)
    assert a["min_margin_over_sd"] == pytest.approx(1.0) and a["mean_margin_over_sd"] == pytest.approx(2.0)
    assert b["min_margin"] == pytest.approx(-0.1) and (b["min_margin_seed"], b["min_margin_threads"]) == (2, 2)
    assert b["failures"] == 1
    assert b["value_sd"] == pytest.approx(np.std([1.5, 1.1, 0.9], ddof=1))
    table = sweep.format_summary(Path("x.ipynb"), s)
    assert table.index("| b |") < table.index("| a |")  # thinnest margin (relative to the spread) first
    assert "seed 2 (threads 2) failed: boom" in table


def test_full_run_checks_are_named_marked_and_reported_as_constant(monkeypatch):
    monkeypatch.setattr(checks, "RECORDS", [])
    assert checks.check_full_run("gain", [3.0, 2.0], ">=", 1.0) == pytest.approx(1.0)
    rec = checks.RECORDS[-1]
    assert rec["check"] == "[full run] gain" and rec["committed"] is True and rec["value"] == 2.0
    checks.check_full_run("[full run] twice", 2.0, ">=", 1.0)  # the prefix is not doubled
    assert checks.RECORDS[-1]["check"] == "[full run] twice"
    checks.check("plain", 2.0, ">=", 1.0)
    assert "committed" not in checks.RECORDS[-1]
    with pytest.raises(AssertionError, match=r"\[full run\] bad: 0.5 >= 1.0"):
        checks.check_full_run("bad", 0.5, ">=", 1.0)
    runs = [sweep.Run(s, 1, passed=True, chapter="demo", checks=[
        {"check": "[full run] g", "value": 2.0, "op": ">=", "threshold": 1.0, "margin": 1.0, "passed": True,
         "committed": True}]) for s in range(3)]
    c = sweep.summarise(runs)["checks"]["[full run] g"]
    assert c["committed"] and c["constant"] and not c["thin"]
    assert c["value_sd"] is None and c["min_margin_over_sd"] is None and c["mean_margin_over_sd"] is None
    assert "constant (committed full run)" in sweep.format_summary(Path("x.ipynb"), sweep.summarise(runs))


@pytest.mark.parametrize("values, thin", [
    ([5.0, 6.0, 7.0], False),         # sd 1: mean margin 5 sd, smallest 4 sd
    ([1.5] + [10.0] * 30, True),      # mean margin 5.7 sd, but the smallest only 0.33 sd
    ([1.9, 2.0, 2.1], False),         # mean margin 10 sd, smallest 9 sd
    ([1.2, 1.5, 1.8], True),          # mean margin 1.67 sd
    ([1.0, 1.0, 1.0], False),         # no spread: constant, not thin
    ([0.9, 1.0, 1.0], True),          # a failing run is always thin
])
def test_thin_checks_are_flagged(values, thin):
    runs = [_run(i, 1, v >= 1.0, {"a": v}) for i, v in enumerate(values)]
    c = sweep.summarise(runs)["checks"]["a"]
    sd = np.std(values, ddof=1)
    if sd:  # the rule, recomputed: mean >= 4 sd and worst >= 2 sd inside the threshold 1.0
        expected = (np.mean(values) - 1.0) / sd < 4 or (min(values) - 1.0) / sd < 2 or min(values) < 1.0
    else:
        expected = min(values) < 1.0
    assert c["thin"] is thin is bool(expected)
    table = sweep.format_summary(Path("x.ipynb"), sweep.summarise(runs))
    assert ("THIN (1;" in table) is thin


def test_sweep_refuses_a_missing_notebook(tmp_path):
    with pytest.raises(ValueError, match="ipynb"):
        sweep.sweep(tmp_path / "missing.ipynb", [0])
    with pytest.raises(ValueError, match="not inside a clone"):
        sweep.repo_root(tmp_path / "x.ipynb")


def test_headline_names_the_exception():
    error = ("x.ipynb: FAILED: NotebookFailed: x.ipynb, cell 3 failed\nTraceback ...\n"
             "AssertionError: check failed: gain: 0.5 >= 1.0 does not hold\n--- cell 3 begins:\ncheck(...)\nfailed: x.ipynb")
    assert sweep.headline(error) == "AssertionError: check failed: gain: 0.5 >= 1.0 does not hold"
    assert sweep.headline("just text") == "just text" and sweep.headline("") == ""


def test_write_record_refuses_a_dirty_tree_and_stores_the_sweep(tmp_path, monkeypatch):
    import lib.results

    path = tmp_path / "clone" / "chapters" / "t.ipynb"  # write_record needs the clone, not a notebook to run
    path.parent.mkdir(parents=True)
    path.touch()
    (tmp_path / "clone" / "lib").symlink_to(Path(__file__).resolve().parent.parent / "lib")
    runs = [_run(0, 1, True, {"a": 3.0}), _run(1, 2, True, {"a": 2.0})]
    summary = sweep.summarise(runs)
    monkeypatch.setattr(lib.results, "git_commit", lambda: "abc123-dirty")
    with pytest.raises(SystemExit, match="uncommitted"):
        sweep.write_record(path, runs, summary, 1.0, allow_dirty=False)
    monkeypatch.setattr(lib.results, "git_commit", lambda: "abc123")
    out = sweep.write_record(path, runs, summary, 1.0, allow_dirty=False)
    assert out == tmp_path / "clone" / "results" / "demo" / "seeds.json"
    rec = json.loads(out.read_text())
    assert rec["notebook"] == "chapters/t.ipynb" and rec["chapter"] == "demo"
    assert rec["provenance"]["scale"] == "quick" and rec["provenance"]["threads"] == [1, 2]
    assert [(r["seed"], r["threads"], r["checks"]) for r in rec["runs"]] == [(0, 1, {"a": 3.0}), (1, 2, {"a": 2.0})]
    assert rec["summary"]["checks"]["a"]["min_margin"] == pytest.approx(1.0)
    runs[1].chapter = "other"
    with pytest.raises(SystemExit, match="chapter key"):
        sweep.write_record(path, runs, summary, 1.0, allow_dirty=False)


def test_run_once_sets_the_run_environment(tmp_path, monkeypatch):
    """Each run gets quick scale, its seed and threads, a checks file; multi-thread runs wait passively."""
    import subprocess

    seen = []

    def fake_run(cmd, cwd, env, capture_output, text):
        seen.append(env)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(sweep.subprocess, "run", fake_run)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    nb = Path(__file__).resolve().parent.parent / "chapters" / "00_how_to_read.ipynb"
    for threads in (1, 2):
        assert sweep.run_once(nb, seed=7, threads=threads, cell_timeout=60).passed
    one, two = seen
    assert (one["REPRO_SCALE"], one["REPRO_SEED"], one["REPRO_THREADS"]) == ("quick", "7", "1")
    assert two["REPRO_THREADS"] == "2" and two["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in one and one[sweep.CHECKS_FILE_ENV]
