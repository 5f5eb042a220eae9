"""Measure the trainer and the chapters' speed targets (README, "Performance"): ``python -m lib.benchmark``.

1. Batched vs loop: 64 independent 2-16-1 ReLU nets, 1000 full-batch steps each, trained as one
   :class:`lib.nets.BatchedMLP` and then one by one with the same trainer; the speed-up must be >= 10x.
2. Trainer overhead: :func:`lib.train.train_full_batch` vs a bare torch loop on the same model and
   data; the ratio must stay <= 1.2.
Both are measured side by side in one process with 1 torch thread (see :func:`run`).
4. Teacher-student trainer (chapter 09, informational: printed with its targets and part of the
   overall PASS, not a :class:`SpeedTarget`): :func:`lib.teacher_student.train_two_layer` against a plain
   loop written the way the public code (``luckmatters``, ``recon_two_layer.py``) works, one seed at a
   time with a hand-written float64 forward and backward, on its configuration (d = 100, m = 10, 5x,
   50 outputs, batch 16), both as written (torch) and re-typed in numpy; see :func:`run_teacher_student`.
3. Speed targets of the chapters' exact algorithms (:data:`SPEED_TARGETS`): each is timed
   best-of-``repeats`` and must stay under its target. The chapters print these times beside the
   target but do not assert them (a reader's slow laptop must not turn a chapter red); this is where
   they are checked.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from lib import validate as V
from lib.data import synthetic_2d
from lib.nets import BatchedMLP
from lib.train import logistic_per_model, make_optimizer, train_full_batch

WIDTHS = [2, 16, 1]


def _data():
    d = synthetic_2d("xor", 400, seed=0)
    return d.X_train, d.y_train.float() * 2 - 1


def time_batched(n_models: int, steps: int) -> float:
    """Seconds to train ``n_models`` nets as one batched computation."""
    X, y = _data()
    model = BatchedMLP(WIDTHS, seeds=range(n_models))
    return train_full_batch(model, X, y, logistic_per_model, steps, lr=0.5, progress=False).wall_time_s


def time_loop(n_models: int, steps: int) -> float:
    """Seconds to train the same nets one after another with the same trainer."""
    X, y = _data()
    start = time.perf_counter()
    for m in range(n_models):
        train_full_batch(BatchedMLP(WIDTHS, seeds=[m]), X, y, logistic_per_model, steps, lr=0.5,
                         progress=False)
    return time.perf_counter() - start


def time_bare_loop(steps: int) -> float:
    """Seconds for the plainest torch loop on one 2-16-1 net (the reference for the overhead)."""
    X, y = _data()
    model = BatchedMLP(WIDTHS, seeds=[0])
    opt = make_optimizer(model.parameters(), "sgd", 0.5)
    start = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        logistic_per_model(model(X), y).sum().backward()
        opt.step()
    return time.perf_counter() - start


def time_trainer(steps: int) -> float:
    """Seconds for :func:`train_full_batch` on the same net and data as :func:`time_bare_loop`."""
    X, y = _data()
    model = BatchedMLP(WIDTHS, seeds=[0])
    start = time.perf_counter()
    train_full_batch(model, X, y, logistic_per_model, steps, lr=0.5, progress=True)  # as chapters use it
    return time.perf_counter() - start


@dataclass(frozen=True)
class SpeedTarget:
    """One timed call of a chapter's algorithm: ``setup()`` builds the inputs (not timed) and returns
    the zero-argument call that is timed."""
    name: str
    chapter: str
    setup: Callable[[], Callable[[], object]]
    target_s: float
    repeats: int | None = None  # timed calls (default: the run's ``repeats``); more for a thin margin

    def __post_init__(self):
        V.config(self, {"name": V.of_type(str), "chapter": V.of_type(str), "setup": V.callable_,
                        "target_s": V.positive})
        if self.repeats is not None:
            V.positive_int(self.repeats, "SpeedTarget.repeats")


def _max_margin_500x20():
    """Chapter 02: the max-margin vector of 500 points in R^20 (one class of a Gaussian data set,
    mirrored into the first orthant so that all 500 points constrain it)."""
    from lib.maxmargin import max_margin, orthogonally_separable_gaussian

    X = np.abs(orthogonally_separable_gaussian(500, 20, seed=0)[0])
    return lambda: max_margin(X)


def _recover_3321():
    """Chapter 01: black-box recovery of a (3,3,2,1) network from queries of its function alone. The
    set-up checks once that the recovery is exact (a fast wrong answer would not count)."""
    from lib.equivalence import equivalent, forward, identifiable_network, recover

    theta = identifiable_network((3, 3, 2, 1), 0)
    call = lambda: recover(lambda X: forward(theta, X), 3, seed=0, n_lines=30)
    if not equivalent(theta, call()):
        raise RuntimeError("the benchmark's (3,3,2,1) recovery is not P/M-equivalent to the network")
    return call


def _swaps_five_inputs(bits: str | None):
    """Chapter 06: the exact swaps value of one five-input function (branch and bound): ``bits`` is the
    truth table as a 32-character string, ``None`` for 5-parity. The set-up fills the cached tables
    (about 1 s, once per process) and checks the value against the plain matrix product."""
    def setup():
        from lib.boolean import parity_table, swaps, swaps_many, truth_table

        table = parity_table(5) if bits is None else truth_table(int(bits, 2), 5)[0]
        if swaps(table) != int(swaps_many(table[None])[0]):
            raise RuntimeError("the benchmark's swaps value disagrees with the matrix product")
        return lambda: swaps(table)
    return setup


SPEED_TARGETS = [
    SpeedTarget("black-box recovery of a (3,3,2,1) net (ch. 01)", "01", _recover_3321, 1.0),
    SpeedTarget("max-margin vector, 500 x 20 (ch. 02)", "02", _max_margin_500x20, 5e-3),
    SpeedTarget("swaps of 5-parity (ch. 06)", "06", _swaps_five_inputs(None), 5e-3, repeats=100),
    SpeedTarget("swaps of the swaps-9 five-input function (ch. 06)", "06",
                _swaps_five_inputs("00110111001010100110010111110000"), 5e-3, repeats=100),
    SpeedTarget("swaps of the costliest five-input function found (ch. 06)", "06",
                _swaps_five_inputs("00110111001010100110110111110000"), 5e-3, repeats=100),
]


def time_best(call: Callable[[], object], repeats: int) -> float:
    """Smallest wall time of ``repeats`` calls after one warm-up call (the least disturbed run)."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def run_speed_targets(repeats: int = 5, targets=None) -> list[dict]:
    """Each target's best time (default: all of :data:`SPEED_TARGETS`), with 1 torch thread, and
    whether it meets its target."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    torch.set_num_threads(1)
    rows = []
    for t in SPEED_TARGETS if targets is None else targets:
        n = t.repeats or repeats
        seconds = time_best(t.setup(), n)
        rows.append({"name": t.name, "seconds": seconds, "target_s": t.target_s, "ok": seconds < t.target_s,
                     "repeats": n})
    return rows


def run(n_models: int = 64, steps: int = 1000, repeats: int = 7) -> dict:
    """Timings and the two ratios the README reports.

    The one-by-one loop is long and the speed-up large, so batched vs loop is timed once; the
    overhead pair is short and close, so it is timed ``repeats`` times, alternating the two, and the
    minimum of each is kept (the least disturbed run on a shared machine).
    """
    torch.set_num_threads(1)
    batched, loop = time_batched(n_models, steps), time_loop(n_models, steps)
    pairs = [(time_bare_loop(steps), time_trainer(steps)) for _ in range(repeats)]
    bare, trainer = min(p[0] for p in pairs), min(p[1] for p in pairs)
    return {"batched_s": batched, "loop_s": loop, "speedup": loop / batched,
            "bare_loop_s": bare, "trainer_s": trainer, "overhead_ratio": trainer / bare}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7, help="repeats of the overhead pair and of each speed target")
    parser.add_argument("--targets-only", action="store_true", help="time only the chapters' speed targets")
    args = parser.parse_args(argv)
    speed = run_speed_targets(args.repeats)
    for row in speed:
        print(f"{row['name']}: {_fmt_s(row['seconds'])} best of {row['repeats']} (target < {_fmt_s(row['target_s'])})"
              f" {'ok' if row['ok'] else 'TOO SLOW'}")
    targets_ok = all(row["ok"] for row in speed)
    if args.targets_only:
        print("PASS" if targets_ok else "FAIL")
        return 0 if targets_ok else 1
    r = run(args.models, args.steps, args.repeats)
    print(f"{args.models} nets x {args.steps} steps: batched {r['batched_s']:.2f} s, one by one "
          f"{r['loop_s']:.2f} s -> speed-up {r['speedup']:.1f}x (target >= 10x)")
    print(f"one net x {args.steps} steps: bare torch loop {r['bare_loop_s']:.3f} s, train_full_batch "
          f"{r['trainer_s']:.3f} s -> ratio {r['overhead_ratio']:.2f} (target <= 1.2)")
    t = run_teacher_student(repeats=5)
    print(f"teacher-student (ch. 09), d=100 m=10 5x C=50 batch 16, float64, best of {t['repeats']}, load "
          f"{t['load_average']:.1f}: public-style loop (one seed) as written (torch) "
          f"{1e6 * t['public_style_step_s']:.0f} us/step, re-typed in numpy {1e6 * t['public_style_numpy_step_s']:.0f} "
          f"us/step; ours, one student {1e6 * t['ours_one_step_s']:.0f} us/step -> {t['speedup_one']:.1f}x / "
          f"{t['speedup_one_numpy']:.1f}x (target >= 1x); ours, {t['students']} students at once "
          f"{1e6 * t['ours_batched_student_step_s']:.1f} us per student-step ({t['gflops_ours_batched']:.1f} GFLOP/s) "
          f"-> {t['speedup_batched']:.1f}x / {t['speedup_batched_numpy']:.1f}x (target >= 3x against both)")
    ok = r["speedup"] >= 10 and r["overhead_ratio"] <= 1.2 and targets_ok \
        and min(t["speedup_one"], t["speedup_one_numpy"]) >= 1 \
        and min(t["speedup_batched"], t["speedup_batched_numpy"]) >= 3
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


TS_SIZES = dict(d=100, m=10, multi=5, C=50, batch=16, N=10_000)


def _public_style_setup(seed: int):
    """The public code's shapes in its layout: teacher and student weights with a bias row (``(in + 1,
    out)``), the teacher's first layer normalised, the student drawn at scale 0.005, training inputs
    N(0, 1.5²), float64 numpy arrays (the torch loop converts them)."""
    d, m, n, C, N = (TS_SIZES[k] for k in ("d", "m", "multi", "C", "N"))
    rng = np.random.default_rng(seed)
    W1_t = rng.standard_normal((d + 1, m))
    W1_t[:-1] /= np.linalg.norm(W1_t[:-1], axis=0)
    W2_t = rng.standard_normal((m + 1, C))
    W1_s = 0.005 * rng.standard_normal((d + 1, n * m))
    W2_s = 0.005 * rng.standard_normal((n * m + 1, C))
    return W1_t, W2_t, W1_s, W2_s, 1.5 * rng.standard_normal((N, d))


def public_style_loop(steps: int, seed: int = 0, backend: str = "torch") -> tuple[float, object, object]:
    """``steps`` SGD steps of one student, written the way the public code's ``recon_two_layer.py`` trains
    (its loop as written, re-typed, not imported: it needs CUDA and hydra): weights with a bias row, a
    column of ones concatenated to every batch, the teacher's forward recomputed each step,
    boolean-mask gating, a hand-written float64 backward, ``random.choices`` minibatches of 16 rows.
    ``backend``: ``"torch"`` (the code as written: torch tensors) or ``"numpy"`` (the same statements in
    numpy, without torch's per-call overhead on these small matrices). Returns the seconds of the loop
    and the student's two weight matrices ``(d + 1, n)`` and ``(n + 1, C)`` as numpy arrays."""
    import random

    if backend not in ("torch", "numpy"):
        raise ValueError(f"backend must be 'torch' or 'numpy', got {backend!r}")
    B, N = TS_SIZES["batch"], TS_SIZES["N"]
    arrays = _public_style_setup(seed)
    if backend == "torch":
        arrays = tuple(torch.from_numpy(a) for a in arrays)
        ones, cat = (lambda k: torch.ones(k, 1, dtype=torch.float64)), (lambda p: torch.cat(p, dim=1))
    else:
        ones, cat = (lambda k: np.ones((k, 1))), (lambda p: np.concatenate(p, axis=1))
    W1_t, W2_t, W1_s, W2_s, X_train = arrays
    random.seed(seed)
    rows = list(range(N))

    def forward(X, W1, W2):
        one = ones(X.shape[0])
        X = cat([X, one])
        h1 = cat([X @ W1, one])
        off = h1 < 0
        h1[off] = 0
        return X, h1, off, h1 @ W2

    start = time.perf_counter()
    for _ in range(steps):
        X = X_train[random.choices(rows, k=B), :]
        X = X.clone() if backend == "torch" else X.copy()
        _, _, _, out_t = forward(X, W1_t, W2_t)
        X_aug, h1_s, off_s, out_s = forward(X, W1_s, W2_s)
        g2 = out_t - out_s
        dW2 = h1_s.T @ g2
        g1 = g2 @ W2_s.T
        g1[off_s] = 0
        dW1 = X_aug.T @ g1[:, :-1]
        dW1 /= B
        dW2 /= B
        W1_s += 0.01 * dW1
        W2_s += 0.01 * dW2
    seconds = time.perf_counter() - start
    return seconds, np.asarray(W1_s), np.asarray(W2_s)


def time_public_style_loop(steps: int, seed: int = 0) -> float:
    """Seconds for ``steps`` steps of :func:`public_style_loop` as the public code runs it (torch)."""
    return public_style_loop(steps, seed, "torch")[0]


def time_public_style_loop_numpy(steps: int, seed: int = 0) -> float:
    """Seconds for ``steps`` steps of :func:`public_style_loop` re-typed in numpy: the second baseline of
    chapter 09's speed table."""
    return public_style_loop(steps, seed, "numpy")[0]


def time_ours_teacher_student(steps: int, students: int, seed: int = 0) -> float:
    """Seconds for ``steps`` SGD steps of ``students`` students of one teacher trained at once by
    :func:`lib.teacher_student.train_two_layer` (same sizes as :func:`time_public_style_loop`; each
    student draws its own minibatches)."""
    from lib import teacher_student as TS

    d, m, multi, C, B, N = (TS_SIZES[k] for k in ("d", "m", "multi", "C", "batch", "N"))
    teacher = TS.make_teacher(d, m, C, seed=seed)
    student = TS.make_student(d, m * multi, C, S=students, seed=seed + 1)
    X = TS.gaussian_inputs(N, d, seed=seed + 2)
    start = time.perf_counter()
    TS.train_two_layer(teacher, student, X, steps, 0.01, batch_size=B, seed=seed, device="cpu")
    return time.perf_counter() - start


def run_teacher_student(steps: int = 2000, students: int = 32, repeats: int = 3) -> dict:
    """Chapter 09's speed table: per-step times of the public-style loop (one seed) as written (torch)
    and re-typed in numpy, and of ours with 1 and ``students`` students (``steps // 2`` steps; setting up
    a run, e.g. the teacher's outputs on the training set, is timed too), each the best of ``repeats``
    rounds that run the four one after the other (1 thread); the speed-ups per student-step against both
    baselines, the GFLOP/s (:func:`lib.teacher_student.two_layer_flops`) and the load average during the
    measurement (the machine may be shared). Torch's thread count is set back to what it was."""
    import os

    from threadpoolctl import threadpool_limits

    from lib import teacher_student as TS

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            runs = [(time_public_style_loop(steps), time_public_style_loop_numpy(steps),
                     time_ours_teacher_student(steps, 1), time_ours_teacher_student(steps // 2, students))
                    for _ in range(repeats)]
    finally:
        torch.set_num_threads(threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    public, public_np = min(r[0] for r in runs) / steps, min(r[1] for r in runs) / steps
    one = min(r[2] for r in runs) / steps
    many = min(r[3] for r in runs) / (steps // 2) / students
    flops = TS.two_layer_flops(TS_SIZES["d"], TS_SIZES["m"] * TS_SIZES["multi"], TS_SIZES["C"], TS_SIZES["batch"])
    return {"public_style_step_s": public, "public_style_numpy_step_s": public_np, "ours_one_step_s": one,
            "ours_batched_student_step_s": many, "students": students, "steps": steps, "repeats": repeats,
            "speedup_one": public / one, "speedup_batched": public / many,
            "speedup_one_numpy": public_np / one, "speedup_batched_numpy": public_np / many,
            "gflops_public_style": flops / public / 1e9, "gflops_public_style_numpy": flops / public_np / 1e9,
            "gflops_ours_one": flops / one / 1e9, "gflops_ours_batched": flops / many / 1e9, "load_average": load}


def _fmt_s(seconds: float) -> str:
    return f"{1e3 * seconds:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


if __name__ == "__main__":
    sys.exit(main())
