"""lib.smoke: the paper smoke run's shrunk configs (issue 22)."""

from dataclasses import dataclass

import pytest

from lib import smoke

def test_smoke_count_by_hand():
    assert [smoke.smoke_count(c) for c in (0, 1, 2, 3, 999, 1000, 1001, 2000, 2001, 4000, 20000)] == \
        [0, 1, 2, 2, 2, 2, 2, 2, 3, 4, 20]
    counts = list(range(0, 5000, 7))
    shrunk = [smoke.smoke_count(c) for c in counts]
    assert shrunk == sorted(shrunk) and all(s <= c for s, c in zip(shrunk, counts))  # monotone, never more
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="^c \\(a count\\) must be an int >= 0, got"):
            smoke.smoke_count(bad)


@dataclass(frozen=True)
class Big:
    steps: int = 10000
    check_step: int = 4000
    n_seeds: int = 32
    width: int = 256
    d: int = 30
    lr: float = 0.01
    flag: bool = True
    schedule: tuple = ((0.1, 3000),)
    n_recovery: int = 50
    nets_per_config: int = 100
    data: str = "mnist"


def test_smoke_config_shrinks_counts_only(monkeypatch):
    small = smoke.smoke_config(Big())
    assert small == Big(steps=10, check_step=4, n_seeds=2, n_recovery=2, nets_per_config=2)
    monkeypatch.setitem(smoke.SMOKE_OVERRIDES, "demo", {"schedule": ((0.1, 3),), "steps": 5})
    assert smoke.smoke_config(Big(), "demo") == Big(steps=5, check_step=4, n_seeds=2, n_recovery=2,
                                                     nets_per_config=2, schedule=((0.1, 3),))
    assert smoke.smoke_config({"steps": 100}) == {"steps": 100}     # no dataclass: unchanged
    assert smoke.smoke_config(Big) is Big
    with pytest.raises(TypeError, match="^chapter must be a str"):
        smoke.smoke_config(Big(), 3)


def test_smoke_count_fields():
    hit = ["steps", "normal_steps", "epochs", "n_seeds", "seeds", "trials", "bias_draws", "rn_sets",
           "n5_restarts", "deep_runs", "nets", "w6_parents", "parity_copies", "table_finetune", "path_seqs",
           "n5_sample", "cnn_score_samples", "opt_evals", "sine_extra", "sine_cap", "xor_trained",
           "opt_random_starts", "check_step", "early", "nets_per_config",
           "n_recovery", "n_general", "n_lemma21", "n_impostor", "n_fdim", "n_one_layer", "n_random",
           "n_eval", "n_minimal", "n_two", "n_deep", "n_xor_deep"]
    miss = ["n", "d", "N", "width", "batch", "n_train", "n_test", "n_classes", "stepsize", "epochs_x",
            "in_ch", "m", "grid_n", "n_fdim_points", "cnn_batch", "sets_x", "xsteps", "points_per_stage", "n_per_class"]
    assert [f for f in hit if not smoke.SMOKE_COUNT_FIELD.search(f)] == []
    assert [f for f in miss if smoke.SMOKE_COUNT_FIELD.search(f)] == []




def test_quick_overrides_and_paper_only_chapters(monkeypatch):
    quick = Big(steps=7, check_step=3, n_seeds=5, width=8, schedule=((0.5, 9),))
    monkeypatch.setitem(smoke.SMOKE_OVERRIDES, "q", {"steps": smoke.QUICK, "width": 4})
    assert smoke.smoke_config(Big(), "q", quick) == Big(steps=7, check_step=4, n_seeds=2, width=4,
                                                        n_recovery=2, nets_per_config=2)
    with pytest.raises(ValueError, match="^the smoke override of q.steps keeps the quick value: pass quick$"):
        smoke.smoke_config(Big(), "q")
    # a paper-only experiment (fields n_*): the rest is the quick config, the experiment's counts shrink
    monkeypatch.setitem(smoke.SMOKE_PAPER_ONLY, "p", "n_")
    assert smoke.smoke_config(Big(), "p", quick) == Big(steps=7, check_step=3, n_seeds=2, width=8,
                                                        schedule=((0.5, 9),), n_recovery=2)
    with pytest.raises(ValueError, match="^the smoke config of p keeps the quick values: pass quick$"):
        smoke.smoke_config(Big(), "p")


def test_a_smoke_run_saves_nothing_and_needs_no_clean_tree(tmp_path, monkeypatch, capsys):
    from lib import results

    monkeypatch.setenv("REPRO_SCALE", "paper")
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")
    monkeypatch.delenv("REPRO_ALLOW_DIRTY", raising=False)
    monkeypatch.setattr(results, "git_commit", lambda root=None: "abc-dirty")
    assert results.require_clean_tree() == "abc-dirty"                  # nothing will be saved
    assert results.save_results("demo", {"x": 1.0}, seeds=[0], wall_time_s=1.0, root=tmp_path) is None
    assert capsys.readouterr().out == (
        "paper-smoke run: results not saved (a smoke run of the paper path is no result; "
        "unset REPRO_PAPER_SMOKE for a real paper-scale run)\n")
    assert not any(tmp_path.iterdir())
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "0")                       # a real paper run still refuses
    with pytest.raises(results.DirtyTreeError):
        results.require_clean_tree()
    with pytest.raises(results.DirtyTreeError):
        results.save_results("demo", {"x": 1.0}, seeds=[0], wall_time_s=1.0, root=tmp_path)
    monkeypatch.setattr(results, "git_commit", lambda root=None: "abc")  # clean: a real paper run saves
    assert results.save_results("demo", {"x": 1.0}, seeds=[0], wall_time_s=1.0, root=tmp_path) == \
        tmp_path / "demo" / "paper.json"
