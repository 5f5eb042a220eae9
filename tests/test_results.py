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
        results.results_path("demo", "medium")


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
        setup(ChapterScales("demo", quick=1, full=2, paper=3))


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
