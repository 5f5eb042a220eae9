"""lib.sweep without executing a notebook: one run's environment, command and records (run_once), the
runs of a sweep and their progress lines (sweep), the summary's edge cases and its exact table, the
thin-check rule at its boundaries, the stored record and the command line (main).

Every notebook execution is faked (``subprocess.run`` of run_once, ``run_once`` of sweep, ``sweep`` of
main), so these tests take well under a second; expected values are written out by hand from the small
inputs (tests/test_checks_sweep.py holds the first tests of lib.checks and lib.sweep;
tests/test_sweep_notebooks.py the end-to-end runs that mutation testing leaves out).
"""

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from lib import checks, sweep


def _clone(tmp_path):
    """A minimal clone: lib/__init__.py (how repo_root recognises one) and an empty notebook."""
    root = tmp_path / "clone"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "__init__.py").touch()
    (root / "chapters").mkdir()
    nb = root / "chapters" / "t.ipynb"
    nb.touch()
    return root, nb


def _clock(monkeypatch, *times):
    """Make lib.sweep's time.perf_counter return ``times`` in turn."""
    it = iter(times)
    monkeypatch.setattr(sweep, "time", SimpleNamespace(perf_counter=lambda: next(it)))


def _rec(name, value, margin, op=">=", threshold=1.0, **extra):
    return {"check": name, "value": value, "op": op, "threshold": threshold, "margin": margin,
            "passed": margin is not None and margin >= 0, **extra}


# ---------------------------------------------------------------------------------------------- run_once

class _FakeChild:
    """Stands in for ``subprocess.run`` of a notebook execution: records the call, writes the check
    records a notebook would write into the file the environment names, returns the given outcome."""

    def __init__(self, returncode=0, stdout="", stderr="", lines=()):
        self.returncode, self.stdout, self.stderr, self.lines, self.calls = returncode, stdout, stderr, lines, []

    def __call__(self, cmd, **kwargs):
        self.calls.append((cmd, kwargs))
        path = Path(kwargs["env"][checks.CHECKS_FILE_ENV])
        assert path.is_absolute() and path.parent.is_dir(), path  # a file in run_once's temporary folder
        if self.lines:
            path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return SimpleNamespace(returncode=self.returncode, stdout=self.stdout, stderr=self.stderr)


def test_run_once_command_environment_and_records(tmp_path, monkeypatch):
    root, _ = _clone(tmp_path)
    nb = root / "chapters" / ".." / "chapters" / "t.ipynb"  # run_once hands lib.run the resolved path
    lines = [{"chapter": "demo"}, _rec("a", 3.0, 2.0), _rec("b", 0.5, -0.5)]
    child = _FakeChild(returncode=0, stderr="a warning on stderr", lines=lines)
    monkeypatch.setattr(sweep, "subprocess", SimpleNamespace(run=child))
    monkeypatch.setenv("REPRO_SCALE", "full")  # the run must override what the caller's shell has
    monkeypatch.setenv("REPRO_SEED", "99")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("KEEP_ME", "yes")
    _clock(monkeypatch, 100.0, 103.5)
    run = sweep.run_once(nb, seed=7, threads=3, cell_timeout=60)

    (cmd, kwargs), = child.calls
    records = Path(kwargs["env"][checks.CHECKS_FILE_ENV])
    tmp = records.parent
    assert cmd == [sys.executable, "-m", "lib.run", "--timeout", "60", "--out", str(tmp),
                   str((root / "chapters" / "t.ipynb").resolve())]
    env = kwargs.pop("env")
    assert kwargs == {"cwd": root.resolve(), "capture_output": True, "text": True}
    assert (env["REPRO_SCALE"], env["REPRO_SEED"], env["REPRO_THREADS"]) == ("quick", "7", "3")
    assert env["PYTHONPATH"] == str(root.resolve()) and env["KEEP_ME"] == "yes"
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"  # more than one thread: idle threads must not spin
    assert tmp.name.startswith("sweep-")  # a folder left by a killed sweep says where it came from
    assert not tmp.exists()  # removed on return

    assert (run.seed, run.threads, run.passed, run.wall_s) == (7, 3, True, 3.5)
    assert run.error == ""  # a passing run's stderr (warnings) is not an error
    assert run.chapter == "demo" and run.checks == lines[1:]


def test_run_once_of_a_failing_run_keeps_the_tail_of_its_error_without_colours(tmp_path, monkeypatch):
    _, nb = _clone(tmp_path)
    _clock(monkeypatch, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0)
    coloured = "  \x1b[0;31mAssertionError\x1b[0m: check failed: \x1b[1mgain\x1b[0m  \n"
    monkeypatch.setattr(sweep, "subprocess", SimpleNamespace(run=_FakeChild(1, "stdout text", coloured)))
    run = sweep.run_once(nb, 0, 1, 10)
    assert not run.passed and run.error == "AssertionError: check failed: gain"
    assert run.chapter is None and run.checks == []  # it failed before writing any record

    monkeypatch.setattr(sweep, "subprocess", SimpleNamespace(run=_FakeChild(2, "  only stdout\n", "  \n")))
    assert sweep.run_once(nb, 0, 1, 10).error == "only stdout"  # nothing on stderr: stdout says why

    long = "Traceback\n" + "x" * 2000 + "END"
    monkeypatch.setattr(sweep, "subprocess", SimpleNamespace(run=_FakeChild(1, "out", long)))
    error = sweep.run_once(nb, 0, 1, 10).error
    assert len(error) == 1500 and error == "x" * 1497 + "END"  # the last 1500 characters


def test_run_once_single_thread_leaves_the_wait_policy_alone(tmp_path, monkeypatch):
    _, nb = _clone(tmp_path)
    child = _FakeChild()
    monkeypatch.setattr(sweep, "subprocess", SimpleNamespace(run=child))
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    sweep.run_once(nb, 0, 1, 10)
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    sweep.run_once(nb, 0, 2, 10)  # a policy the caller set is kept
    assert "OMP_WAIT_POLICY" not in child.calls[0][1]["env"] and child.calls[1][1]["env"]["OMP_WAIT_POLICY"] == "ACTIVE"


# ---------------------------------------------------------------------------------------------- sweep

class _FakeRuns:
    """Stands in for run_once: records its arguments, returns the prepared Run of each seed."""

    def __init__(self, runs=None):
        self.runs, self.calls = runs or {}, []

    def __call__(self, notebook, seed, threads, cell_timeout):
        self.calls.append((notebook, seed, threads, cell_timeout))
        return self.runs.get((seed, threads)) or sweep.Run(seed, threads, passed=True, wall_s=1.0)


@pytest.fixture
def pools(monkeypatch):
    """The worker counts of the thread pools sweep opens (one per batch)."""
    seen = []

    class Pool(sweep.ThreadPoolExecutor):
        def __init__(self, max_workers):
            seen.append(max_workers)
            super().__init__(max_workers)

    monkeypatch.setattr(sweep, "ThreadPoolExecutor", Pool)
    return seen


def test_sweep_defaults_runs_in_order_and_progress_lines(tmp_path, monkeypatch, pools):
    _, nb = _clone(tmp_path)
    fake = _FakeRuns({
        (3, 1): sweep.Run(3, 1, passed=True, wall_s=12.4, checks=[
            _rec("a", 3.0, 2.0), _rec("nan", float("nan"), None), _rec("c", 1.123456, 0.123456)]),
        (1, 1): sweep.Run(1, 1, passed=False, wall_s=7.0, error="Traceback\nValueError: bad thing\nmore", checks=[
            _rec("nan", float("nan"), None)]),
        (0, 2): sweep.Run(0, 2, passed=True, wall_s=0.4),
    })
    monkeypatch.setattr(sweep, "run_once", fake)
    lines = []
    runs = sweep.sweep(nb, [3, 1], alt_seeds=[0], progress=lines.append)
    assert fake.calls == [(nb, 3, 1, 600), (nb, 1, 1, 600), (nb, 0, 2, 600)]  # threads 1, then 2; 600 s a cell
    assert pools == [2, 1]  # two one-thread runs at once on the default 2 jobs, two-thread runs one at a time
    assert [(r.seed, r.threads) for r in runs] == [(3, 1), (1, 1), (0, 2)] and runs[0] is fake.runs[(3, 1)]
    assert lines == ["t.ipynb seed 3 threads 1: pass in 12 s; smallest margin 0.123 (c)",
                     "t.ipynb seed 1 threads 1: FAIL: ValueError: bad thing in 7 s",
                     "t.ipynb seed 0 threads 2: pass in 0 s"]

    fake.calls.clear()
    assert [r.seed for r in sweep.sweep(nb, [5], progress=lines.append)] == [5]  # no alt seeds by default
    assert fake.calls == [(nb, 5, 1, 600)]


def test_sweep_passes_its_settings_and_sizes_the_pools(tmp_path, monkeypatch, pools):
    _, nb = _clone(tmp_path)
    fake = _FakeRuns()
    monkeypatch.setattr(sweep, "run_once", fake)
    sweep.sweep(nb, [0, 1], threads=2, alt_seeds=[4], alt_threads=4, jobs=3, cell_timeout=5, progress=lambda m: None)
    assert fake.calls == [(nb, 0, 2, 5), (nb, 1, 2, 5), (nb, 4, 4, 5)]
    assert pools == [1, 1]  # 3 jobs // 2 threads = 1 run at a time; 3 // 4 = 0, but at least one
    pools.clear()
    sweep.sweep(nb, [0], threads=1, alt_threads=1, jobs=1, cell_timeout=1, progress=lambda m: None)  # all 1: allowed
    assert pools == [1, 1]


@pytest.mark.parametrize("bad", [{"jobs": 0}, {"threads": 0}, {"alt_threads": 0}, {"cell_timeout": 0},
                                 {"jobs": -1, "cell_timeout": -1}])
def test_sweep_refuses_non_positive_settings(tmp_path, monkeypatch, bad):
    _, nb = _clone(tmp_path)
    monkeypatch.setattr(sweep, "run_once", _FakeRuns())
    with pytest.raises(ValueError) as err:
        sweep.sweep(nb, [0], **bad)
    assert str(err.value) == "jobs, threads, alt_threads and cell_timeout must be positive"


def test_sweep_refuses_what_is_not_an_existing_notebook(tmp_path, monkeypatch):
    root, _ = _clone(tmp_path)
    monkeypatch.setattr(sweep, "run_once", _FakeRuns())
    text = root / "chapters" / "t.txt"
    text.touch()
    for path in (text, root / "chapters" / "missing.ipynb"):
        with pytest.raises(ValueError, match=re.escape(f"expected an existing .ipynb notebook, got {path}")):
            sweep.sweep(path, [0])


# ---------------------------------------------------------------------------------------------- summarise

def test_summary_of_a_single_run_has_no_spread():
    c = sweep.summarise([sweep.Run(5, 2, passed=True, checks=[_rec("a", 3.0, 2.0)])])["checks"]["a"]
    assert (c["runs"], c["min_margin"], c["min_margin_seed"], c["min_margin_threads"]) == (1, 2.0, 5, 2)
    assert c["value_mean"] == 3.0 and c["value_sd"] is None
    assert c["min_margin_over_sd"] is None and c["mean_margin_over_sd"] is None
    assert c["constant"] is True and c["thin"] is False and c["committed"] is False


def test_summary_of_two_runs_measures_their_spread():
    runs = [sweep.Run(0, 1, passed=True, checks=[_rec("a", 3.0, 2.0)]),
            sweep.Run(4, 1, passed=True, checks=[_rec("a", 2.0, 1.0)])]
    c = sweep.summarise(runs)["checks"]["a"]
    # sd of {3, 2} = 1 / sqrt(2); mean 2.5 is 1.5 above the threshold 1, the worst run 1.0
    assert c["value_sd"] == pytest.approx(2 ** -0.5) and c["value_mean"] == pytest.approx(2.5)
    assert c["mean_margin_over_sd"] == pytest.approx(1.5 * 2 ** 0.5)
    assert c["min_margin_over_sd"] == pytest.approx(2 ** 0.5) and c["min_margin_seed"] == 4
    assert c["constant"] is False and c["thin"] is True


def test_summary_of_a_check_that_went_nan():
    runs = [sweep.Run(0, 1, passed=True, checks=[_rec("a", 3.0, 2.0)]),
            sweep.Run(6, 2, passed=False, checks=[_rec("a", float("nan"), None)]),
            sweep.Run(2, 1, passed=True, checks=[_rec("a", 2.0, 1.0)])]
    c = sweep.summarise(runs)["checks"]["a"]
    assert c["min_margin"] is None and (c["min_margin_seed"], c["min_margin_threads"]) == (6, 2)
    assert c["failures"] == 1 and c["value_mean"] is None and c["value_sd"] is None
    assert c["min_margin_over_sd"] is None and c["mean_margin_over_sd"] is None
    assert c["thin"] is True


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_summary_of_a_margin_too_large_for_a_float(monkeypatch):
    """lib.checks records no margin when value - threshold overflows (the values themselves are finite):
    the summary has a spread (itself too large for a float) but no smallest margin to divide by it, and
    calls the check thin."""
    monkeypatch.setattr(checks, "RECORDS", [])
    monkeypatch.delenv(checks.CHECKS_FILE_ENV, raising=False)
    runs = []
    for seed, value in enumerate([9e307, 8e307]):
        checks.check("huge", value, ">=", -1e308)
        runs.append(sweep.Run(seed, 1, passed=True, checks=[checks.RECORDS[-1]]))
    assert [r.checks[0]["margin"] for r in runs] == [None, None]
    c = sweep.summarise(runs)["checks"]["huge"]
    assert c["min_margin"] is None and c["value_sd"] > 0
    assert c["min_margin_over_sd"] is None and c["thin"] is True


def test_summary_constant_means_committed_or_no_spread():
    def summary(values, **extra):
        runs = [sweep.Run(i, 1, passed=True, checks=[_rec("a", v, v - 1.0, **extra)]) for i, v in enumerate(values)]
        return sweep.summarise(runs)["checks"]["a"]

    assert summary([2.0, 3.0])["constant"] is False
    assert summary([2.0, 2.0])["constant"] is True and summary([2.0, 2.0])["value_sd"] == 0.0
    assert summary([2.0, 2.0], committed=True)["constant"] is True


# ---------------------------------------------------------------------------------------------- is_thin

def _summary_row(min_margin=1.0, value_sd=1.0, mean_sds=10.0, min_sds=10.0, **extra):
    return {"min_margin": min_margin, "value_sd": value_sd, "mean_margin_over_sd": mean_sds,
            "min_margin_over_sd": min_sds, **extra}


@pytest.mark.parametrize("row, thin", [
    (_summary_row(), False),
    (_summary_row(mean_sds=4.0, min_sds=2.0), False),         # exactly at the rule: enough room
    (_summary_row(mean_sds=3.999, min_sds=2.0), True),
    (_summary_row(mean_sds=4.0, min_sds=1.999), True),
    (_summary_row(mean_sds=None, min_sds=5.0), True),         # a spread but no mean margin: not shown safe
    (_summary_row(min_margin=None, value_sd=None), True),     # a run without a margin (NaN) is a failure
    (_summary_row(min_margin=-0.5, value_sd=None, committed=True), True),  # a failing committed check too
    (_summary_row(min_margin=0.0, value_sd=None), False),     # no spread, on the threshold: constant
    (_summary_row(mean_sds=1.0, min_sds=1.0, committed=True), False),  # the committed full run has no spread
])
def test_is_thin_at_the_boundaries(row, thin):
    assert sweep.is_thin(row) is thin


# ---------------------------------------------------------------------------------------------- the table

def _table_runs():
    """Five checks in three runs (the third fails) whose summary rows are worked out by hand below."""
    values = {"a": [3.0, 2.0, 4.0], "b": [1.5, 1.5, 1.5], "c": [10.0, 11.0, 12.5], "d": [1.0, 2.0, 3.0],
              "[full run] e": [2.0, 2.0, 2.0]}
    runs = []
    for i, (seed, threads) in enumerate([(0, 1), (1, 1), (2, 2)]):
        recs = [_rec(name, v[i], v[i] - 1.0, **({"committed": True} if name.startswith("[full") else {}))
                for name, v in values.items()]
        runs.append(sweep.Run(seed, threads, passed=seed != 2, checks=recs,
                              error="Traceback ...\nRuntimeError: boom" if seed == 2 else ""))
    return runs


EXPECTED_TABLE = """\
### t.ipynb: 2 of 3 runs pass

| check | op | threshold | runs | failures | smallest margin | seed (threads) | value mean | value sd \
| smallest margin / sd | mean margin / sd | room |
|---|---|---|---|---|---|---|---|---|---|---|---|
| d | >= | 1 | 3 | 0 | 0 | 0 (1) | 2 | 1 | 0 | 1 | THIN |
| a | >= | 1 | 3 | 0 | 1 | 1 (1) | 3 | 1 | 1 | 2 | THIN |
| c | >= | 1 | 3 | 0 | 9 | 0 (1) | 11.17 | 1.258 | 7.152 | 8.08 | ok |
| b | >= | 1 | 3 | 0 | 0.5 | 0 (1) | 1.5 | 0 | — | — | constant (no spread) |
| [full run] e | >= | 1 | 3 | 0 | 1 | 0 (1) | 2 | — | — | — | constant (committed full run) |

THIN (2; need mean margin >= 4 sd and smallest >= 2 sd): d; a

seed 2 (threads 2) failed: RuntimeError: boom"""


def test_format_summary_table_written_out():
    """c: mean 11.1667, sd 1.2583 (sqrt(3.1667 / 2)), smallest margin 9 = 7.152 sd, mean margin 10.1667 =
    8.08 sd; d's smallest margin 0 sorts before a's 1 sd; checks without a ratio (b, e) come last."""
    assert sweep.format_summary(Path("chapters/t.ipynb"), sweep.summarise(_table_runs())) == EXPECTED_TABLE


def test_room_column():
    assert sweep._room({"thin": True, "committed": True, "value_sd": None}) == "THIN"
    assert sweep._room({"thin": False, "committed": True, "value_sd": None}) == "constant (committed full run)"
    assert sweep._room({"thin": False, "value_sd": 0.0}) == "constant (no spread)"
    assert sweep._room({"thin": False, "value_sd": 0.3}) == "ok"


# ---------------------------------------------------------------------------------------------- small helpers

def test_headline_is_cut_at_300_characters():
    assert sweep.headline("Traceback\nValueError: " + "x" * 400 + "\n  ") == "ValueError: " + "x" * 288


@pytest.mark.parametrize("text, message", [
    ("a", "seeds must look like '0-19' or '0,3,7', got 'a'"),
    ("1,-1", "seeds must look like '0-19' or '0,3,7', got '1,-1'"),
    ("0, 3-1", "bad seed range '3-1' in '0, 3-1': need 0 <= first <= last"),
])
def test_parse_seeds_says_what_it_expected(text, message):
    with pytest.raises(ValueError) as err:
        sweep.parse_seeds(text)
    assert str(err.value) == message


# ---------------------------------------------------------------------------------------------- write_record

def test_write_record_layout_rounding_and_provenance(tmp_path, monkeypatch):
    import lib.results

    root, nb = _clone(tmp_path)
    monkeypatch.setenv("REPRO_SCALE", "full")  # the record is of the quick scale whatever the shell says
    runs = [sweep.Run(0, 1, passed=True, wall_s=12.34, chapter="demo", checks=[_rec("a", 3.0, 2.0)]),
            sweep.Run(3, 2, passed=False, wall_s=3.06, chapter="demo", error="boom", checks=[_rec("a", 0.5, -0.5)])]
    summary = sweep.summarise(runs)
    monkeypatch.setattr(lib.results, "git_commit", lambda: "abc123-dirty")
    with pytest.raises(SystemExit) as err:
        sweep.write_record(nb, runs, summary, 1.0, allow_dirty=False)
    assert str(err.value) == ("refusing to write seeds.json from a tree with uncommitted changes "
                              "(commit first, or pass --allow-dirty for a record marked -dirty)")
    path = sweep.write_record(nb, runs, summary, 2.0, allow_dirty=True)
    assert sweep.write_record(nb, runs, summary, 2.0, allow_dirty=True) == path  # its folder exists now: fine
    assert path == root / "results" / "demo" / "seeds.json"
    text = path.read_text()
    rec = json.loads(text)
    assert rec["runs"] == [
        {"seed": 0, "threads": 1, "passed": True, "wall_s": 12.3, "error": "", "checks": {"a": 3.0}},
        {"seed": 3, "threads": 2, "passed": False, "wall_s": 3.1, "error": "boom", "checks": {"a": 0.5}}]
    prov = rec["provenance"]
    assert (prov["scale"], prov["seeds"], prov["threads"], prov["git_commit"]) == ("quick", [0, 3], [1, 2], "abc123-dirty")
    # one space a level, keys sorted (small diffs between sweeps), a final newline
    assert re.findall(r'^ "(\w+)":', text, flags=re.M) == ["chapter", "notebook", "provenance", "runs", "summary"]
    assert text.startswith('{\n "chapter": "demo",\n "notebook": "chapters/t.ipynb",\n') and text.endswith("}\n")


# ---------------------------------------------------------------------------------------------- main

class _Stdout:
    """sys.stdout that remembers what had been flushed."""

    def __init__(self):
        self.text, self.flushed = "", ""

    def write(self, s):
        self.text += s
        return len(s)

    def flush(self):
        self.flushed = self.text


def _runs_of(name):
    """A sweep's runs by notebook name: 'good' passes with room, 'failed' has a failing run, 'thin' is thin."""
    good = [[_rec("g", v, v - 1.0)] for v in (10.0, 10.5, 11.0)]
    values = {"good": good, "failed": good, "thin": [[_rec("g", v, v - 1.0)] for v in (1.5, 2.5, 3.0)]}[name]
    return [sweep.Run(i, 1, passed=not (name == "failed" and i == 1), wall_s=1.0, chapter="demo", checks=recs,
                      error="RuntimeError: x" if name == "failed" and i == 1 else "") for i, recs in enumerate(values)]


@pytest.fixture
def cli(monkeypatch):
    """main with sweep and write_record faked: records their arguments, checks what was flushed.
    A test calls ``cli.capture()`` first (pytest sets its own sys.stdout after the fixtures ran)."""
    out = _Stdout()
    calls = SimpleNamespace(sweep=[], write=[], out=out, runs={},
                            capture=lambda: monkeypatch.setattr(sys, "stdout", out))

    def fake_sweep(nb, seeds, threads, alt, alt_threads, jobs, cell_timeout, progress):
        calls.sweep.append((nb, seeds, threads, alt, alt_threads, jobs, cell_timeout))
        progress(f"{nb.name}: progress")
        assert out.flushed.endswith(f"{nb.name}: progress\n")  # a long sweep's log shows each run as it ends
        calls.runs[nb] = _runs_of(nb.stem)
        return calls.runs[nb]

    def fake_write(nb, runs, summary, wall_s, allow_dirty):
        assert out.flushed.endswith(sweep.format_summary(nb, summary) + "\n\n")  # the table is out first
        calls.write.append((nb, runs, summary, wall_s, allow_dirty))
        return Path("results/demo/seeds.json")

    monkeypatch.setattr(sweep, "sweep", fake_sweep)
    monkeypatch.setattr(sweep, "write_record", fake_write)
    return calls


def test_main_defaults(cli, monkeypatch):
    cli.capture()
    _clock(monkeypatch, 0.0, 1.0, 0.0, 1.0)
    assert sweep.main(["good.ipynb", "sub/good.ipynb"]) == 0
    default = (list(range(20)), 1, [0, 1, 2, 3, 4], 2, 2, 600)
    assert cli.sweep == [(Path("good.ipynb"), *default), (Path("sub/good.ipynb"), *default)]
    assert cli.write == []  # no --write, no record
    table = sweep.format_summary(Path("good.ipynb"), sweep.summarise(_runs_of("good")))
    assert table.startswith("### good.ipynb: 3 of 3 runs pass")
    assert cli.out.text == ("good.ipynb: progress\n" + "\n" + table + "\n\n") * 2


def test_main_options_write_and_exit_status(cli, monkeypatch):
    cli.capture()
    _clock(monkeypatch, 100.0, 107.5)
    argv = ["thin.ipynb", "--seeds", "3,1", "--threads", "4", "--alt-seeds", "", "--alt-threads", "3", "--jobs", "5",
            "--cell-timeout", "77", "--write"]
    assert sweep.main(argv) == 1  # every run passed, but a check is thin
    assert cli.sweep == [(Path("thin.ipynb"), [1, 3], 4, [], 3, 5, 77)]
    (nb, runs, summary, wall_s, allow_dirty), = cli.write
    assert (nb, wall_s, allow_dirty) == (Path("thin.ipynb"), 7.5, False) and runs is cli.runs[nb]
    assert summary["passes"] == 3 and summary["checks"]["g"]["thin"] is True
    assert cli.out.text.endswith("\n\nwrote results/demo/seeds.json\n")

    _clock(monkeypatch, 0.0, 2.0)
    assert sweep.main(["good.ipynb", "--seeds", "", "--alt-seeds", "0-1", "--write", "--allow-dirty"]) == 0
    assert cli.sweep[-1] == (Path("good.ipynb"), [], 1, [0, 1], 2, 2, 600) and cli.write[-1][3:] == (2.0, True)


@pytest.mark.parametrize("names, status", [(["good"], 0), (["failed"], 1), (["failed", "good"], 1),
                                           (["good", "failed"], 1), (["good", "thin"], 1)])
def test_main_exit_status_is_one_when_a_run_failed_or_a_check_is_thin(cli, names, status):
    cli.capture()
    assert sweep.main([f"{n}.ipynb" for n in names]) == status


@pytest.mark.parametrize("argv", [["a.ipynb", "--seeds", "", "--alt-seeds", ""], ["a.ipynb", "--seeds", " , "]])
def test_main_refuses_to_run_no_seeds(cli, capsys, argv):
    if "--alt-seeds" not in argv:
        argv = argv + ["--alt-seeds", ""]
    with pytest.raises(SystemExit) as err:
        sweep.main(argv)
    assert err.value.code == 2 and cli.sweep == []
    assert capsys.readouterr().err.strip().endswith("error: no seeds to run")


def test_main_help_shows_the_docstring_and_every_default(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no wrapping: each help text on one line
    out = _Stdout()
    monkeypatch.setattr(sys, "stdout", out)
    with pytest.raises(SystemExit) as err:
        sweep.main(["--help"])
    assert err.value.code == 0
    text = out.text
    # the module docstring, its example lines kept as written
    assert "\n    python -m lib.sweep chapters/05_multi_exit.ipynb                 # seeds 0-19, then 0-4 on 2 threads\n" in text
    assert "notebooks [notebooks ...]" in text
    for option, help_text in [
        ("--seeds SEEDS", "REPRO_SEED values run on --threads (default 0-19)"),
        ("--threads THREADS", "thread count of the main runs (default 1)"),
        ("--alt-seeds ALT_SEEDS", "seeds run again on --alt-threads (default 0-4; '' skips)"),
        ("--alt-threads ALT_THREADS", "thread count of those runs (default 2)"),
        ("--jobs JOBS", "cores to use (one-thread runs go this many at once)"),
        ("--cell-timeout CELL_TIMEOUT", "seconds a cell may run before the run fails (default 600: two-thread runs "
                                        "on a busy 2-core machine ran single cells for over 300 s)"),
        ("--write", "store results/<chapter>/seeds.json"),
        ("--allow-dirty", "with --write: accept uncommitted changes"),
    ]:
        assert re.search(rf"^  {re.escape(option)}\s+{re.escape(help_text)}$", text, flags=re.M), option
