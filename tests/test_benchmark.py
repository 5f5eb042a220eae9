"""lib.benchmark's speed-target machinery (the real targets are timed by `python -m lib.benchmark`)."""

import time

import numpy as np
import pytest
import torch

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
    # (public torch, public numpy, ours one, ours batched) x 2 rounds: the best of each is kept
    times = iter([0.2, 0.08, 0.1, 0.2, 0.3, 0.06, 0.05, 0.1])
    monkeypatch.setattr(benchmark, "time_public_style_loop", lambda steps: next(times))
    monkeypatch.setattr(benchmark, "time_public_style_loop_numpy", lambda steps: next(times))
    monkeypatch.setattr(benchmark, "time_ours_teacher_student", lambda steps, s: next(times))
    r = benchmark.run_teacher_student(steps=100, students=4, repeats=2)
    assert r["public_style_step_s"] == 0.2 / 100 and r["public_style_numpy_step_s"] == 0.06 / 100
    assert r["ours_one_step_s"] == 0.05 / 100 and r["ours_batched_student_step_s"] == 0.1 / 50 / 4
    assert r["speedup_one"] == 4.0 and r["speedup_batched"] == 0.2 / 100 / (0.1 / 200)
    assert r["speedup_one_numpy"] == 0.06 / 0.05 and r["speedup_batched_numpy"] == 0.06 / 100 / (0.1 / 200)
    assert (r["students"], r["steps"], r["repeats"]) == (4, 100, 2) and r["load_average"] >= 0
    flops = benchmark.TS_SIZES["batch"] * 2 * (100 * 50 + 50 * 50)            # forward alone, a lower bound
    assert r["gflops_ours_batched"] > flops / (0.1 / 200) / 1e9
    assert r["gflops_public_style_numpy"] / r["gflops_public_style"] == 0.2 / 0.06


def test_teacher_student_comparison_gives_torch_its_thread_count_back(monkeypatch):
    for name in ("time_public_style_loop", "time_public_style_loop_numpy"):
        monkeypatch.setattr(benchmark, name, lambda steps: 1.0)
    seen = []
    monkeypatch.setattr(benchmark, "time_ours_teacher_student", lambda steps, s: seen.append(torch.get_num_threads()) or 1.0)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        benchmark.run_teacher_student(steps=8, students=2, repeats=1)
        assert torch.get_num_threads() == 2 and seen == [1, 1]           # one thread inside, two after
        monkeypatch.setattr(benchmark, "time_public_style_loop", lambda steps: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            benchmark.run_teacher_student(steps=8, students=2, repeats=1)
        assert torch.get_num_threads() == 2                               # also when a timer fails
    finally:
        torch.set_num_threads(before)


def test_teacher_student_timers_run_a_few_steps():
    assert benchmark.time_public_style_loop(3) > 0 and benchmark.time_ours_teacher_student(3, 2) > 0
    assert benchmark.time_public_style_loop_numpy(3) > 0


def test_the_public_style_loop_in_numpy_is_the_torch_loop_and_an_sgd_step_of_its_batch():
    """Both re-typings of the public code's loop train the same student; one step of it is one SGD step of
    1/2 ||f* - f||^2 on the 16 rows random.choices draws, computed here by autograd on the plain nets."""
    import random

    _, A1, A2 = benchmark.public_style_loop(30, 4, "torch")
    _, B1, B2 = benchmark.public_style_loop(30, 4, "numpy")
    assert np.allclose(A1, B1, rtol=0, atol=1e-12) and np.allclose(A2, B2, rtol=0, atol=1e-12)
    W1_t, W2_t, W1_s, W2_s, X = (torch.from_numpy(a) for a in benchmark._public_style_setup(5))
    random.seed(5)
    x = X[random.choices(range(benchmark.TS_SIZES["N"]), k=16)]
    W1_s.requires_grad_(True)
    W2_s.requires_grad_(True)

    def f(W1, W2):
        h = torch.relu(x @ W1[:-1] + W1[-1])
        return h @ W2[:-1] + W2[-1]
    (0.5 * ((f(W1_t, W2_t) - f(W1_s, W2_s)) ** 2).sum(1).mean()).backward()
    _, C1, C2 = benchmark.public_style_loop(1, 5, "numpy")
    assert np.allclose(C1, (W1_s - 0.01 * W1_s.grad).detach().numpy(), rtol=0, atol=1e-15)
    assert np.allclose(C2, (W2_s - 0.01 * W2_s.grad).detach().numpy(), rtol=0, atol=1e-15)
    assert not np.allclose(C1, W1_s.detach().numpy())
    with pytest.raises(ValueError, match="backend must be 'torch' or 'numpy', got 'jax'"):
        benchmark.public_style_loop(1, 0, "jax")


def test_public_style_setup_is_the_public_codes_shapes_and_scales():
    W1_t, W2_t, W1_s, W2_s, X = benchmark._public_style_setup(0)
    d, m, n, C, N = 100, 10, 50, 50, 10_000
    assert W1_t.shape == (d + 1, m) and W2_t.shape == (m + 1, C) and W1_s.shape == (d + 1, n) and W2_s.shape == (n + 1, C)
    assert np.allclose(np.linalg.norm(W1_t[:-1], axis=0), 1.0) and X.shape == (N, d)
    assert abs(W1_s.std() - 0.005) < 0.0003 and abs(W2_s.std() - 0.005) < 0.0003 and abs(X.std() - 1.5) < 0.01
    assert not np.array_equal(benchmark._public_style_setup(1)[0], W1_t)


def test_ours_in_the_benchmark_trains_students_of_one_teacher_on_the_cpu(monkeypatch):
    from lib import teacher_student as TS
    calls = []
    real = TS.train_two_layer
    monkeypatch.setattr(TS, "train_two_layer", lambda *a, **k: calls.append((a, k)) or real(*a, **k))
    benchmark.time_ours_teacher_student(2, 3, seed=1)
    (teacher, student, X, steps, lr), kw = calls[0]
    assert teacher[0][0].shape == (10, 100) and student[0][0].shape == (3, 50, 100) and X.shape == (10_000, 100)
    assert (steps, lr, kw) == (2, 0.01, {"batch_size": 16, "seed": 1, "device": "cpu"})


@pytest.mark.parametrize("change, match", [
    (dict(name=3), r"SpeedTarget\.name must be a str"), (dict(setup=None), r"SpeedTarget\.setup must be callable"),
    (dict(target_s=0.0), r"SpeedTarget\.target_s must be a finite number > 0"),
    (dict(repeats=0), r"SpeedTarget\.repeats must be an int >= 1"), (dict(repeats=2.5), r"SpeedTarget\.repeats must be an int")])
def test_speed_target_checks_its_fields(change, match):
    args = dict(name="fast", chapter="00", setup=lambda: (lambda: None), target_s=0.05)
    benchmark.SpeedTarget(**args)
    with pytest.raises(ValueError, match=match):
        benchmark.SpeedTarget(**{**args, **change})
