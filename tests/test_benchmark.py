"""lib.benchmark's speed-target machinery (the real targets are timed by `python -m lib.benchmark`)."""

import time

import pytest

from lib import benchmark


def test_time_best_keeps_the_smallest_time_after_a_warm_up():
    delays = iter([0.05, 0.03, 0.0, 0.02])  # warm-up, then three timed calls
    assert 0.0 <= benchmark.time_best(lambda: time.sleep(next(delays)), 3) < 0.01


def test_a_target_is_met_only_under_its_limit():
    fast = benchmark.SpeedTarget("fast", "00", lambda: (lambda: None), 0.05)
    slow = benchmark.SpeedTarget("slow", "00", lambda: (lambda: time.sleep(0.02)), 0.01)
    rows = benchmark.run_speed_targets(2, [fast, slow])
    assert [r["ok"] for r in rows] == [True, False]
    assert rows[1]["seconds"] >= 0.02 and rows[1]["target_s"] == 0.01


def test_targets_only_exit_code_follows_the_targets(monkeypatch, capsys):
    monkeypatch.setattr(benchmark, "SPEED_TARGETS",
                        [benchmark.SpeedTarget("slow", "00", lambda: (lambda: time.sleep(0.02)), 0.01)])
    assert benchmark.main(["--targets-only", "--repeats", "1"]) == 1
    assert "TOO SLOW" in capsys.readouterr().out


def test_repeats_must_be_positive():
    with pytest.raises(ValueError, match="repeats"):
        benchmark.run_speed_targets(0)


def test_every_chapter_target_names_its_chapter_and_a_positive_limit():
    assert benchmark.SPEED_TARGETS
    for t in benchmark.SPEED_TARGETS:
        assert t.target_s > 0 and t.chapter.isdigit() and f"ch. {t.chapter}" in t.name


def test_a_target_may_ask_for_more_calls():
    calls = []
    many = benchmark.SpeedTarget("many", "00", lambda: (lambda: calls.append(1)), 1.0, repeats=12)
    assert benchmark.run_speed_targets(2, [many])[0]["repeats"] == 12 and len(calls) == 13  # one warm-up


def test_teacher_student_comparison_reports_consistent_ratios(monkeypatch):
    times = iter([0.2, 0.1, 0.2, 0.3, 0.05, 0.1])   # (public, ours one, ours batched) x 2 repeats
    monkeypatch.setattr(benchmark, "time_public_style_loop", lambda steps: next(times))
    monkeypatch.setattr(benchmark, "time_ours_teacher_student", lambda steps, s: next(times))
    r = benchmark.run_teacher_student(steps=100, students=4, repeats=2)
    assert r["public_style_step_s"] == 0.2 / 100 and r["ours_one_step_s"] == 0.05 / 100
    assert r["ours_batched_student_step_s"] == 0.1 / 25 / 4
    assert r["speedup_one"] == 4.0 and r["speedup_batched"] == 0.2 / 100 / (0.1 / 100)


def test_teacher_student_timers_run_a_few_steps():
    assert benchmark.time_public_style_loop(3) > 0 and benchmark.time_ours_teacher_student(3, 2) > 0
