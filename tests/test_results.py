import json

import numpy as np
import pytest

from lib import results

REAL_GIT_COMMIT = results.git_commit  # the autouse fixture below replaces it during each test

@pytest.fixture(autouse=True)
def _clean_commit(monkeypatch):
    """Full-scale saves below run from a clean commit, whatever state the developer's tree is in."""
    monkeypatch.setattr(results, "git_commit", lambda: "0123abc")
    monkeypatch.delenv("REPRO_ALLOW_DIRTY", raising=False)


def test_quick_scale_never_writes(tmp_path):
    assert results.save_results("demo", {"a": 1}, seeds=[0], wall_time_s=1.0, root=tmp_path) is None
    assert not any(tmp_path.iterdir())


def test_full_scale_round_trip_with_provenance(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "full")
    metrics = {"acc": np.float32(0.5), "curve": np.arange(3), "nested": {"x": [np.int64(2)]}, "nan": float("nan")}
    path = results.save_results("demo", metrics, seeds=[0, 1], wall_time_s=12.345, config={"k": 1}, root=tmp_path)
    assert path == tmp_path / "demo" / "full.json"
    rec = results.load_results("demo", "full", root=tmp_path)
    assert rec["metrics"] == {"acc": 0.5, "curve": [0, 1, 2], "nested": {"x": [2]}, "nan": None}
    prov = rec["provenance"]
    assert prov["scale"] == "full" and prov["seeds"] == [0, 1] and prov["wall_time_s"] == 12.345
    for key in ("git_commit", "date_utc", "machine"):
        assert prov[key]
    assert rec["config"] == "{'k': 1}"
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # no temporary left over
    assert path.stat().st_mode & 0o777 == 0o644


def test_failed_write_leaves_old_file(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "full")
    results.save_results("demo", {"a": 1}, seeds=[0], wall_time_s=1.0, root=tmp_path)
    with pytest.raises(ValueError, match="cannot store"):
        results.save_results("demo", {"a": object()}, seeds=[0], wall_time_s=1.0, root=tmp_path)
    assert json.loads((tmp_path / "demo" / "full.json").read_text())["metrics"] == {"a": 1}


def test_load_missing_is_none(tmp_path):
    assert results.load_results("absent", root=tmp_path) is None


@pytest.mark.parametrize("kwargs,match", [
    ({"metrics": {}}, "non-empty dict"),
    ({"metrics": [1]}, "non-empty dict"),
    ({"wall_time_s": float("nan")}, "wall_time_s"),
    ({"chapter": "bad/name"}, "chapter key"),
])
def test_save_rejects_bad_input(tmp_path, monkeypatch, kwargs, match):
    monkeypatch.setenv("REPRO_SCALE", "full")
    args = {"chapter": "demo", "metrics": {"a": 1}, "seeds": [0], "wall_time_s": 1.0, "root": tmp_path} | kwargs
    with pytest.raises(ValueError, match=match):
        results.save_results(**args)


def test_results_path_rejects_unknown_scale():
    with pytest.raises(ValueError, match="scale must be one of"):
        results.results_path("how_to_read", "medium")


def test_table_markdown():
    md = results.paper_vs_ours_markdown([
        {"quantity": "acc", "paper": 0.91234, "this_run": 0.9, "full": None, "note": "a|b"},
        {"quantity": "ok", "paper": True, "this_run": 3},
    ])
    lines = md.splitlines()
    assert lines[0].startswith("| Quantity | Document | This run")
    assert "| acc | 0.912 | 0.9 | — | a\\|b |" in lines
    assert "| ok | yes | 3 | — | — |" in lines
    assert results.paper_vs_ours([{"quantity": "q"}]).data.startswith("| Quantity")


@pytest.mark.parametrize("rows", [[], [{"paper": 1}], [{"quantity": "q", "typo": 1}], ["q"]])
def test_table_rejects_bad_rows(rows):
    with pytest.raises(ValueError):
        results.paper_vs_ours_markdown(rows)


def test_markdown_table_checks_row_length():
    assert results.markdown_table(["a", "b"], [[1, 0.5]]).splitlines()[2] == "| 1 | 0.5 |"
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        results.markdown_table(["a", "b"], [[1]])


@pytest.fixture
def commit(monkeypatch):
    """Pretend the repository is at a given commit (``commit("abc-dirty")`` for uncommitted changes)."""
    def set_commit(value):
        monkeypatch.setattr(results, "git_commit", lambda: value)
    return set_commit


@pytest.mark.parametrize("scale", ["full", "paper"])
def test_full_and_paper_runs_refuse_a_dirty_tree(tmp_path, monkeypatch, commit, scale):
    monkeypatch.setenv("REPRO_SCALE", scale)
    monkeypatch.delenv("REPRO_ALLOW_DIRTY", raising=False)
    commit("abc123-dirty")
    with pytest.raises(results.DirtyTreeError, match="REPRO_ALLOW_DIRTY=1"):
        results.save_results("demo", {"a": 1}, seeds=[0], wall_time_s=1.0, root=tmp_path)
    assert not (tmp_path / "demo").exists()
    path = results.save_results("demo", {"a": 1}, seeds=[0], wall_time_s=1.0, root=tmp_path, allow_dirty=True)
    assert json.loads(path.read_text())["provenance"]["git_commit"] == "abc123-dirty"
    monkeypatch.setenv("REPRO_ALLOW_DIRTY", "1")
    assert results.require_clean_tree() == "abc123-dirty"
    with pytest.raises(results.DirtyTreeError):
        results.require_clean_tree(allow_dirty=False)  # the argument wins over the environment
    commit("abc123")
    monkeypatch.delenv("REPRO_ALLOW_DIRTY")
    assert results.require_clean_tree() == "abc123"


def test_quick_runs_accept_a_dirty_tree(commit):
    commit("abc123-dirty")
    assert results.require_clean_tree() == "abc123-dirty"


def test_setup_refuses_a_dirty_full_run_before_training(monkeypatch, commit):
    from lib.notebook import setup
    from lib.scale import ChapterScales

    monkeypatch.setenv("REPRO_SCALE", "full")
    monkeypatch.delenv("REPRO_ALLOW_DIRTY", raising=False)
    commit("abc123-dirty")
    with pytest.raises(results.DirtyTreeError):
        setup(ChapterScales("how_to_read", quick=1, full=2, paper=3))


def test_git_commit_ignores_run_outputs_under_results(tmp_path):
    """A finished full run's results/<chapter>/full.json must not make the next chapter's run 'dirty'."""
    import subprocess

    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (tmp_path / "results" / "a").mkdir(parents=True)
    (tmp_path / "results" / "a" / "full.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("commit", "-q", "-m", "init")
    head = git("rev-parse", "HEAD")
    assert REAL_GIT_COMMIT(tmp_path) == head
    (tmp_path / "results" / "a" / "full.json").write_text('{"new": 1}')
    assert REAL_GIT_COMMIT(tmp_path) == head
    (tmp_path / "code.py").write_text("x = 2\n")
    assert REAL_GIT_COMMIT(tmp_path) == head + "-dirty"


# ---- what the record holds, exactly (mutation testing found these unpinned) ------------------------

def test_record_file_layout_and_provenance(tmp_path, monkeypatch, capsys):
    import os
    import platform

    import torch

    monkeypatch.setenv("REPRO_SCALE", "full")
    monkeypatch.setenv("REPRO_SEED", "7")
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "new" / "results")  # parents created on demand
    replaced = []
    real_replace = os.replace
    monkeypatch.setattr(results.os, "replace", lambda src, dst: (replaced.append(src), real_replace(src, dst)))
    path = results.save_results("how_to_read", {"b": 1, "a": True}, seeds=[3], wall_time_s=1.23456)
    assert capsys.readouterr().out == "saved results/how_to_read/full.json\n"
    assert os.path.dirname(replaced[0]) == str(path.parent)  # the temporary sits beside the target (atomic rename)
    text = path.read_text()
    record = json.loads(text)
    assert text == json.dumps(record, indent=1, sort_keys=True) + "\n"
    assert list(record) == ["chapter", "config", "metrics", "provenance"]
    assert record["chapter"] == "how_to_read" and record["config"] is None and record["metrics"] == {"a": True, "b": 1}
    prov = record["provenance"]
    assert prov["date_utc"].endswith("+00:00")
    assert {k: prov[k] for k in ("scale", "seed_offset", "seeds", "git_commit", "wall_time_s")} == \
        {"scale": "full", "seed_offset": 7, "seeds": [3], "git_commit": "0123abc", "wall_time_s": 1.235}
    assert prov["machine"] == {"platform": platform.platform(), "processor": platform.machine(),
                               "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                               "python": platform.python_version(), "torch": torch.__version__,
                               "numpy": np.__version__}
    results.save_results("how_to_read", {"b": 2}, seeds=[3], wall_time_s=1.0)  # the directory exists now: fine
    assert results.load_results("how_to_read")["metrics"] == {"b": 2}


def test_provenance_states_the_scale_it_is_given():
    assert results.provenance([0], 1.0, "paper")["scale"] == "paper"
    assert results.provenance([0], 1.0)["scale"] == "quick"


@pytest.mark.parametrize("call,match", [
    (lambda: results.provenance([-1], 1.0), r"^seeds\[i\] "),
    (lambda: results.provenance(3, 1.0), r"^seeds "),
    (lambda: results.provenance([0], -1.0), r"^wall_time_s "),
    (lambda: results.provenance([0], 1.0, "huge"), r"^scale "),
    (lambda: results.save_results("demo", {"a": 1}, seeds=[-1], wall_time_s=1.0), r"^seeds\[i\] "),
    (lambda: results.save_results("demo", {"a": 1}, seeds=3, wall_time_s=1.0), r"^seeds "),
    (lambda: results.save_results("demo", {"a": 1}, seeds=[0], wall_time_s=-1.0), r"^wall_time_s "),
    (lambda: results.save_results("demo", {}, seeds=[0], wall_time_s=1.0), r"^metrics must be a non-empty dict$"),
    (lambda: results.results_path(3), r"^chapter must be a str \(the chapter key\), got 3$"),
    (lambda: results.results_path("_"), r"^chapter key must be a non-empty identifier like 'boolean_swaps', got '_'$"),
    (lambda: results.format_value(1.0, 0), r"^digits "),
    (lambda: results.markdown_table([], []), r"^header "),
    (lambda: results.markdown_table(["a"], [], digits=0), r"^digits "),
    (lambda: results.markdown_table(["a"], 5), r"^rows must be an iterable of rows, got 5$"),
    (lambda: results.paper_vs_ours_markdown(5), r"^rows "),
    (lambda: results.paper_vs_ours_markdown([{"quantity": "q"}], digits=0), r"^digits "),
    (lambda: results.paper_vs_ours_markdown([]), r"^rows: paper_vs_ours needs at least one row$"),
    (lambda: results.paper_vs_ours_markdown([{"paper": 1}]), r"^row 0 must be a dict with at least a 'quantity' key"),
    (lambda: results.paper_vs_ours_markdown([{"quantity": "q", "x": 1}]), r"^row 0 has unknown keys \['x'\]"),
    (lambda: results._to_jsonable(object()), r"^cannot store a value of type object in results JSON$"),
])
def test_error_messages_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_to_jsonable_takes_tensors_and_refuses_look_alikes():
    import torch

    assert results._to_jsonable({"t": torch.tensor([[1.5, 2.0]]), 3: (np.int8(4),)}) == {"t": [[1.5, 2.0]], "3": [4]}

    class OnlyTolist:
        def tolist(self):
            return [1]

    class OnlyDtype:
        dtype = "float32"

    for value in (OnlyTolist(), OnlyDtype()):
        with pytest.raises(ValueError, match=f"type {type(value).__name__} "):
            results._to_jsonable(value)


def test_table_cells_exactly():
    table = results.markdown_table(["x", "y|z"], [[True, "a\nb|c"], [False, 1.23456]], digits=2)
    assert table == "| x | y|z |\n|---|---|\n| yes | a b\\|c |\n| no | 1.2 |"
    assert results.markdown_table(["only"], [[None]]) == "| only |\n|---|\n| — |"
    md = results.paper_vs_ours_markdown([{"quantity": "q", "paper": 0.123456, "note": "n"}], digits=2)
    assert md.splitlines()[2] == "| q | 0.12 | — | — | n |"


def test_git_commit_outside_a_repository_is_unknown_and_untracked_files_do_not_count(tmp_path):
    import subprocess

    assert REAL_GIT_COMMIT(tmp_path) == "unknown"
    run = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()
    run("init", "-q")
    run("config", "user.email", "t@example.org")
    run("config", "user.name", "t")
    (tmp_path / "code.py").write_text("x = 1\n")
    run("add", ".")
    run("commit", "-q", "-m", "init")
    (tmp_path / "scratch.txt").write_text("not tracked")
    assert REAL_GIT_COMMIT(tmp_path) == run("rev-parse", "HEAD")


def test_dirty_refusal_says_how_to_proceed(monkeypatch, commit):
    monkeypatch.setenv("REPRO_SCALE", "full")
    commit("abc-dirty")
    with pytest.raises(results.DirtyTreeError, match="set REPRO_ALLOW_DIRTY=1 for a record marked -dirty$"):
        results.require_clean_tree()


def test_defaults_of_the_path_and_the_table(tmp_path):
    assert results.results_path("how_to_read") == results.RESULTS_DIR / "how_to_read" / "full.json"
    for unknown in ("demo", "boolean_swap"):  # no such chapter: the book's results/ refuses it, a given root not
        with pytest.raises(ValueError, match=r"^chapter must be one of lib.scale.CHAPTER_KEYS to use the book's results/"):
            results.results_path(unknown)
        with pytest.raises(ValueError, match="CHAPTER_KEYS"):
            results.load_results(unknown)
        with pytest.raises(ValueError, match="CHAPTER_KEYS"):
            results.save_results(unknown, {"a": 1}, seeds=[0], wall_time_s=1.0)
    assert results.results_path("demo", "paper", root=tmp_path) == tmp_path / "demo" / "paper.json"
    data = results.paper_vs_ours([{"quantity": "q", "paper": 0.123456}]).data
    assert "| 0.123 |" in data


def test_quick_save_says_why_and_a_failed_write_cleans_up(tmp_path, monkeypatch, capsys):
    results.save_results("demo", {"a": 1}, seeds=[0], wall_time_s=1.0, root=tmp_path)
    assert capsys.readouterr().out == "quick scale: results not saved (a 'quick' run never writes under results/)\n"
    monkeypatch.setenv("REPRO_SCALE", "full")
    path = results.save_results("demo", {"a": 1}, seeds=[0], wall_time_s=1.0, root=tmp_path)
    assert capsys.readouterr().out == f"saved {path}\n"  # an explicit root is printed whole

    def broken_dump(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(results.json, "dump", broken_dump)
    with pytest.raises(OSError, match="disk full"):
        results.save_results("demo", {"a": 2}, seeds=[0], wall_time_s=1.0, root=tmp_path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["full.json"]  # temporary removed, old file kept


def test_three_significant_digits_by_default():
    assert results.format_value(0.123456) == "0.123"
    assert results.markdown_table(["v"], [[0.123456]]).endswith("| 0.123 |")
