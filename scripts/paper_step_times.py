"""Time per optimisation step of the book's paper-scale models on one device (issues 22 and 36).

The README's "In Colab" section estimates each chapter's paper-scale time as time per training step x
the paper configuration's step count. This script measures the first factor on the device at hand
(``--device cpu`` or ``cuda``), through the book's own ``lib`` models and trainers, on random stand-in
data of the paper's shapes (no downloads), and multiplies it by the step counts it reads from the paper
configurations (``lib`` configs, and the chapters' own config cells for chapters 06, 07 and 09). The
products are estimates, not measurements: they ignore evaluation, data loading and everything between
the training calls.

Per case: the model and the data are built on the CPU as the chapter builds them; one trainer call of
one step warms up (CUDA context, kernels); then calls of more steps are timed until one takes at least
``MIN_TIMED_S`` or the case's share of ``--budget`` is spent, and, time permitting, one call of twice as
many steps, whose difference from the first gives the marginal seconds per step (free of each call's
fixed costs: building the model, moving the data, capturing a CUDA graph). Per step it reports the wall
seconds and the process's CPU seconds (``time.process_time``; on CUDA the context is set to sleep, not
spin, while the host waits, so that CPU time is the host's work): a step bound by the host has CPU time
equal to its wall time. The cases whose trainer has a device program (issue 36, ``lib.device_step``:
chapters 03, 05 and 09's deep students; chapters 02, 06's pruning CNNs and 07 through lib.train's
minibatch program) are measured once per ``--modes`` value of ``REPRO_STEP_MODE``
(``host``: the original loop; ``eager``: the device program without graphs; ``graph``: replayed CUDA
graphs, the default on CUDA), side by side. ``--flops`` adds each step's FLOPs and the device's measured
float32 matrix-product rate, whose quotient is the arithmetic bound beside each estimate.

    python scripts/paper_step_times.py --device cpu|cuda [--json OUT.json] [--budget SECONDS] [--only TEXT ...]
                                       [--modes host eager graph ...] [--flops]

A failing case prints its error and the others still run; the exit status is 1 if any case failed.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import math
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MIN_TIMED_S = 0.5      # a timed call shorter than this is repeated with more steps
TARGET_S = 2.0         # aim of a timed call
MAX_STEPS_PER_EPOCH = 16   # stand-in data sets hold at most this many batches (epochs repeat them)


@dataclass
class Case:
    name: str
    make_run: object        # () -> run(steps) -> actual optimiser steps taken (builds data once)
    paper_steps: int | None
    counted: str            # what paper_steps counts
    program: bool = False   # the trainer has a device program (lib.device_step, issue 36): measured per --modes
    graph_steps: int = 1    # fewest steps of a timed call in graph/compile mode (so that it reaches the replayed graphs)


def notebook_names(stem: str, names: tuple) -> dict:
    """Execute only the top-level definitions of ``names`` from chapter ``stem``'s code cells (the
    chapter's config dataclass, its ``ChapterScales`` and similar), so that step counts follow the notebook."""
    from dataclasses import dataclass as dc

    from lib.scale import ChapterScales

    cells = json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text())["cells"]
    ns = {"dataclass": dc, "ChapterScales": ChapterScales, "math": math}
    found = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in tree.body:
            defined = {node.name} if isinstance(node, (ast.ClassDef, ast.FunctionDef)) else (
                {t.id for t in node.targets if isinstance(t, ast.Name)} if isinstance(node, ast.Assign) else set())
            if defined & set(names):
                exec(compile(ast.Module([node], []), f"{stem}.ipynb", "exec"), ns)
                found |= defined
    missing = set(names) - found
    if missing:
        raise LookupError(f"chapters/{stem}.ipynb defines no {sorted(missing)} at the top level of a code cell")
    return ns


def spe_and_epochs(steps: int) -> tuple:
    """(batches per stand-in epoch, epochs) giving at least ``steps`` steps."""
    spe = min(steps, MAX_STEPS_PER_EPOCH)
    return spe, -(-steps // spe)


# --------------------------------------------------------------------------------------------
# the cases


def case_ch02(device):
    """Chapter 02: the Table 3.1 CNN on MNIST 0/1 shapes, Adam via lib.maxmargin.train_adam."""
    import torch

    from lib import maxmargin as mm

    cfg = mm.CONFIGS.paper
    n_train = 5923 + 6742  # MNIST's training images of digits 0 and 1 (what the chapter's filter keeps)
    bs = cfg.cnn_batch

    last = n_train % bs or bs  # the paper's epochs end in a shorter batch (12,665 = 98 x 128 + 121): so do these

    def make():
        g = torch.Generator().manual_seed(0)
        X = torch.randn(MAX_STEPS_PER_EPOCH * bs, 1, cfg.cnn_image_size, cfg.cnn_image_size, generator=g)
        y = torch.randint(0, 2, (len(X),), generator=g).float() * 2 - 1

        def run(steps):
            spe, epochs = spe_and_epochs(steps)
            rows = (spe - 1) * bs + last
            model = mm.Table31CNN(image_size=cfg.cnn_image_size, seed=0)
            mm.train_adam(model, X[:rows], y[:rows], epochs, bs, cfg.cnn_lr, seed=0, progress=False, device=device)
            return spe * epochs
        return run

    return [Case(f"02 Table 3.1 CNN, 1x{cfg.cnn_image_size}x{cfg.cnn_image_size}, batch {bs}", make,
                 cfg.cnn_epochs * -(-n_train // bs),
                 f"{cfg.cnn_epochs} epochs x ceil({n_train}/{bs}), one model (each epoch's last batch of {last})",
                 program=True, graph_steps=4 * MAX_STEPS_PER_EPOCH)]


def case_ch05(device):
    """Chapter 05: the thesis' six-exit CNN on CIFAR-100 shapes, lib.multiexit.train_multiexit
    (device from REPRO_DEVICE, which main() sets)."""
    import torch

    from lib import multiexit as me

    cfg = me.CONFIGS.paper
    bs, K = cfg.batch_size, cfg.n_classes
    n_of = lambda X: (X - cfg.n_val_per_class) * K  # noqa: E731  training images of CIFAR(X)
    spe = lambda n: -(-n // bs)  # noqa: E731
    S, A = cfg.n_seeds, cfg.n_seeds_ablation
    main_specs = ([(s, False, None) for s in range(S)] + [(s, True, None) for s in range(S)]
                  + [(s, True, T) for T in cfg.const_taus for s in range(A)])
    # model-steps of batch bs, as chapter 05's run_group calls train the groups: main (EW + D + constant T),
    # DS (its batches hold as many unlabelled images as labelled ones: counted twice), later teachers,
    # and the data-size groups (EW + D) for every X other than the main one
    groups = [(len(main_specs), cfg.epochs * spe(n_of(cfg.n_per_class)), 1),
              (cfg.n_seeds_semi, cfg.epochs * spe(n_of(cfg.n_per_class)), 2),
              (cfg.n_seeds_teacher, cfg.epochs * spe(n_of(cfg.n_per_class)), 1)]
    groups += [(2 * S, ep * spe(n_of(X)), 1) for X, ep in zip(cfg.data_sizes, cfg.data_size_epochs)
               if not (X == cfg.n_per_class and ep == cfg.epochs)]
    model_steps = sum(m * st * w for m, st, w in groups)
    counted = ("model-steps of all groups (" + " + ".join(f"{m}x{st}" + ("x2" if w == 2 else "") for m, st, w in groups)
               + ")")

    def maker(specs):
        def make():
            M = len(specs)
            g = torch.Generator().manual_seed(0)
            X = torch.randn(M, MAX_STEPS_PER_EPOCH * bs, cfg.in_ch, 32, 32, generator=g)
            y = torch.randint(0, K, (M, MAX_STEPS_PER_EPOCH * bs), generator=g)

            def run(steps):
                n_spe, epochs = spe_and_epochs(steps)
                model = me.MultiExitCNN(cfg.in_ch, cfg.widths, cfg.strides, K, seeds=[s for s, _, _ in specs])
                me.train_multiexit(model, X[:, :n_spe * bs], y[:, :n_spe * bs], [d for _, d, _ in specs],
                                   replace(cfg, epochs=epochs), const_tau=[t for _, _, t in specs],
                                   order_seeds=[s for s, _, _ in specs], progress=False)
                return n_spe * epochs
            return run
        return make

    shape = f"{cfg.in_ch}x32x32, batch {bs}"
    return [Case(f"05 six-exit CNN, 1 model, {shape}", maker([(0, True, None)]), model_steps, counted, program=True),
            Case(f"05 six-exit CNN, main group of {len(main_specs)} models, {shape}", maker(main_specs),
                 -(-model_steps // len(main_specs)), f"the model-steps above / {len(main_specs)} "
                 "(groups of other sizes counted per model)", program=True)]


def case_ch06(device):
    """Chapter 06, pruning: the CNNs of thesis §3.4.5 on MNIST and CIFAR-10 shapes, lib.pruning.train_cnn
    (lib.train.train_minibatch; device from REPRO_DEVICE, which main() sets)."""
    import torch

    from lib import pruning as P

    cfg = notebook_names("06_boolean_swaps_pruning", ("PruningConfig", "CONFIG"))["CONFIG"].paper
    shapes = {"mnist": (1, 28, 60000), "cifar10": (3, 32, 50000)}  # channels, side, training images
    bs = cfg.cnn_batch
    sgd = dict(lr=cfg.cnn_lr, momentum=cfg.cnn_momentum, weight_decay=cfg.cnn_weight_decay, batch_size=bs)
    cases = []
    for name in cfg.cnn_data:
        ch, side, n = shapes[name]

        def make(ch=ch, side=side):
            g = torch.Generator().manual_seed(0)
            X = torch.randn(MAX_STEPS_PER_EPOCH * bs, ch, side, side, generator=g)
            y = torch.randint(0, 10, (len(X),), generator=g)

            def run(steps):
                spe, epochs = spe_and_epochs(steps)
                net = P.PrunableCNN(ch, side, cfg.cnn_channels, seed=0)
                P.train_cnn(net, X[:spe * bs], y[:spe * bs], epochs, seed=0, **sgd)
                return spe * epochs
            return run

        per_epoch = -(-n // bs)
        cases.append(Case(f"06 pruning CNN ({cfg.cnn_channels} channels), {name}: {ch}x{side}x{side}, batch {bs}",
                          make, (cfg.cnn_epochs + len(cfg.cnn_removed)) * per_epoch,
                          f"({cfg.cnn_epochs} training + {len(cfg.cnn_removed)} magnitude fine-tuning epochs) x "
                          f"ceil({n}/{bs}); channel pruning adds up to {3 * cfg.cnn_channels - 3} x {per_epoch} "
                          "more (one epoch per removed channel, stops early)", program=True,
                          graph_steps=4 * MAX_STEPS_PER_EPOCH))
    return cases


def case_ch06_boolean(device):
    """Chapter 06 and its higher-dimensions section: stacked leaky-ReLU nets trained full batch on the
    corners by lib.boolean.train_boolean_nets, at the largest shape of the thesis' grid (10 x 5). A step
    is one epoch with every net still training (no solved net leaves), so it bounds the other shapes'
    steps from above, and the estimates are upper bounds."""
    import numpy as np

    from lib import boolean as B

    main = notebook_names("06_boolean_swaps", ("THESIS_GRID", "CPU_GRID", "BooleanConfig", "CONFIG"))["CONFIG"].paper
    dims = notebook_names("06_boolean_swaps_higher_dims", ("HigherDimsConfig", "CONFIG"))["CONFIG"].paper
    width, depth = max(w for w, _ in main.shapes), max(d for _, d in main.shapes)
    n_main = len(B.npn_classes(4))
    tables_dims = np.random.default_rng(0).integers(0, 2, (dims.parity_copies + dims.grid_random, 2 ** dims.grid_n))

    def maker(tables, trials):
        def make():
            def run(steps):
                B.train_boolean_nets(tables, width, depth, 0.1, trials, steps, seed=0, progress=False,
                                     compact_every=steps + 1, device=device)
                return steps
            return run
        return make

    shapes_main = len(main.alphas) * len(main.shapes)
    shapes_dims = len(dims.widths) * len(dims.depths)
    return [Case(f"06 {n_main * main.trials:,} stacked {width}x{depth} nets, 4 inputs (16 corners)",
                 maker(B.truth_table(B.npn_classes(4), 4), main.trials), shapes_main * main.epochs,
                 f"{shapes_main} (alpha, shape) runs x {main.epochs} epochs at most (Fig. 3.5 grid; smaller shapes "
                 "cost less and solved nets leave the computation)"),
            Case(f"06 higher dimensions: {len(tables_dims) * dims.grid_trials:,} stacked {width}x{depth} nets, "
                 f"{dims.grid_n} inputs ({2 ** dims.grid_n:,} corners)", maker(tables_dims, dims.grid_trials),
                 shapes_dims * dims.epochs, f"Fig. 3.7 grid: {shapes_dims} shapes x {dims.epochs} epochs at most "
                 "(Figs. 3.8-3.9 come on top)")]


def case_ch07(device):
    """Chapter 07: the BatchedMLP (LeakEnsemble) of Tables 4.2-4.3, every (loss, leak, normalise)
    configuration x nets_per_config nets as one ensemble, Adam via lib.annulus_training.train_ball_vs_shell
    (lib.train.train_minibatch; device from REPRO_DEVICE, which main() sets)."""
    import numpy as np
    import torch

    from lib.annulus_training import ball_vs_shell, train_ball_vs_shell

    ns = notebook_names("07_circle_vs_annulus", ("AnnulusConfig", "CONFIG", "CONFIGS"))
    cfg, configs = ns["CONFIG"].paper, ns["CONFIGS"]
    M = len(configs) * cfg.nets_per_config
    which = np.repeat(np.arange(len(configs)), cfg.nets_per_config)
    bce = np.array([configs[i][0] == "BCE" for i in which])
    leak = np.array([configs[i][1] for i in which])
    norm = np.array([configs[i][2] for i in which])
    X, y = ball_vs_shell(2, cfg.n_samples, 0.5, 0.5 * math.sqrt(2), 1.0, np.random.default_rng(0),
                        n_sets=M)  # the radii of §4.2.1: r1 = 0.5, r2 = r1 sqrt(2), r3 = 2 r1
    scale = np.where(norm, 1 / X.std(axis=(0, 2)), 1.0)
    Xt = torch.tensor(X * scale[None, :, None], dtype=torch.float32)
    yt = torch.tensor(y, dtype=torch.float32)
    cases = []
    for bs in cfg.batch_sizes:
        per_epoch = -(-cfg.n_samples // bs)

        def make(bs=bs, per_epoch=per_epoch):
            def run(steps):
                epochs = -(-steps // per_epoch)  # the real data set: n_samples points per net
                train_ball_vs_shell(Xt, yt, leak, bce, epochs=epochs, batch_size=bs, lr=cfg.lr, seed=0,
                                    net_seeds=list(range(M)))
                return epochs * per_epoch
            return run

        cases.append(Case(f"07 ensemble of {M} nets (2-{2 + 1}-1), {cfg.n_samples} points, batch {bs}", make,
                          cfg.epochs * per_epoch, f"{cfg.epochs} epochs x ceil({cfg.n_samples}/{bs})", program=True,
                          graph_steps=max(200, 4 * per_epoch)))
    return cases


def case_ch03(device):
    """Chapter 03, §4.6.3: the IMDB SequenceMAE (bidirectional-LSTM encoder and recognition network, LSTM
    decoder over the paper's vocabulary) on random sentences of the paper's length, lib.mae.train_mae."""
    import torch

    from lib import mae

    cfg = mae.CONFIGS.paper
    vocab = cfg.imdb_vocab + len(mae.SPECIALS)
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(3, cfg.imdb_max_tokens + 1, (MAX_STEPS_PER_EPOCH * cfg.imdb_batch,), generator=g)
    tokens = torch.full((len(lengths), cfg.imdb_max_tokens + 1), mae.PAD, dtype=torch.long)
    for i, n in enumerate(lengths.tolist()):  # as lib.mae.encode_sentences lays them out: words, <eos>, <pad>s
        tokens[i, :n] = torch.randint(len(mae.SPECIALS), vocab, (n,), generator=g)
        tokens[i, n] = mae.EOS

    def make():
        def run(steps):
            model = mae.SequenceMAE(tokens, vocab, latent_dim=cfg.imdb_latent, emb=cfg.imdb_emb,
                                    hidden=cfg.imdb_hidden, k=cfg.resample_k, seed=0)
            mae.train_mae(model, [cfg.imdb_targets[0]], C=cfg.imdb_C, steps=steps, lr=cfg.imdb_lr,
                          batch=cfg.imdb_batch, seed=0, device=device)
            return steps
        return run

    models = 1 + len(cfg.imdb_targets)  # the VAE and one MAE per target
    return [Case(f"03 IMDB SequenceMAE, vocabulary {vocab:,}, {cfg.imdb_max_tokens + 1} tokens, batch "
                 f"{cfg.imdb_batch}", make, models * cfg.imdb_steps,
                 f"{models} models (VAE + {len(cfg.imdb_targets)} MAEs) x {cfg.imdb_steps} steps", program=True,
                 graph_steps=200)]  # a call's fixed costs (model, graph capture) are seconds: time past them


def case_ch09_deep(device):
    """Chapter 09, deep teachers (Fig. 6): cfg.seeds deep students of over-realisation cfg.multi trained as
    one batch by lib.teacher_student.train_deep (SGD, minibatches drawn on the CPU, the loop on ``device``)."""
    from lib import teacher_student as TS

    cfg = notebook_names("09_student_specialisation_deep", ("DeepConfig", "code_rate", "CONFIG"))["CONFIG"].paper
    X = TS.gaussian_inputs(min(cfg.ns), cfg.d, cfg.std, seed=0)
    teacher = TS.make_teacher_deep(cfg.d, cfg.teacher, cfg.C, X, seed=0)
    widths = [cfg.multi * w for w in cfg.teacher]

    def make():
        def run(steps):
            student = TS.make_student_deep(cfg.d, widths, cfg.C, S=cfg.seeds, scale=cfg.scale, seed=0)
            TS.train_deep(teacher, student, X, steps, cfg.lr, batch_size=cfg.batch, seed=0, device=device)
            return steps
        return run

    def steps_for(N):  # the notebook's steps_for: cfg.steps, or cfg.epochs passes over N samples
        return cfg.epochs * math.ceil(N / cfg.batch) if cfg.epochs else cfg.steps

    runs = [steps_for(N) for N in cfg.ns] + [steps_for(max(cfg.ns))] * len(cfg.beyond_multis)
    return [Case(f"09 deep students, {cfg.seeds} x {cfg.d}-{'-'.join(map(str, widths))}-{cfg.C}, batch {cfg.batch}",
                 make, sum(runs),
                 f"{len(runs)} runs ({len(cfg.ns)} data sizes N = {', '.join(map(str, cfg.ns))}, then "
                 f"{len(cfg.beyond_multis)} other over-realisations at the largest N, whose students are narrower or "
                 f"wider): {' + '.join(f'{r:,}' for r in runs)} steps"
                 + (f" ({cfg.epochs} epochs of ceil(N/{cfg.batch}) each)" if cfg.epochs else ""), program=True)]


# cheap cases first: a case's share of the budget grows by what the earlier ones left over
BUILDERS = (case_ch02, case_ch06, case_ch07, case_ch09_deep, case_ch06_boolean, case_ch05, case_ch03)


# --------------------------------------------------------------------------------------------
# measuring and reporting


def _timed(run, steps, sync):
    """One call of ``steps`` steps: (steps taken, wall seconds, process CPU seconds)."""
    t1, c1 = time.perf_counter(), time.process_time()
    taken = run(steps)
    sync()
    return taken, time.perf_counter() - t1, time.process_time() - c1


def measure(run, share: float, sync, min_steps: int = 1) -> dict:
    """Warm up with one step, then time calls of growing step counts within ``share`` seconds; then, if time
    is left, one call of twice as many steps: the difference of the two calls gives the *marginal* seconds per
    step (wall and process CPU), free of each call's fixed costs (building the model, moving the data, capturing
    a CUDA graph), which the estimates use where it was measured. A timed call takes at least ``min_steps``."""
    t0 = time.perf_counter()
    run(1)
    sync()
    warm = time.perf_counter() - t0
    if warm > share:
        return {"skipped": f"the warm-up step alone took {warm:.2f} s, over this case's share of {share:.1f} s"}
    per_step, best = warm, None
    while True:
        left = share - (time.perf_counter() - t0)
        if left < per_step:
            break
        steps = max(min_steps, int(min(TARGET_S, left) / per_step))
        taken, elapsed, cpu = _timed(run, steps, sync)
        per_step = elapsed / taken
        # process CPU time too: on a loaded CPU it is inflated less than the wall time
        best = {"s_per_step": per_step, "timed_steps": taken, "timed_s": elapsed, "cpu_s_per_step": cpu / taken}
        if elapsed >= MIN_TIMED_S:
            break
    if best is None:
        return {"skipped": f"no time left for a timed call after the {warm:.2f} s warm-up (share {share:.1f} s)"}
    best["warmup_s"] = warm
    if share - (time.perf_counter() - t0) > 2.5 * best["timed_s"]:
        taken2, elapsed2, cpu2 = _timed(run, 2 * best["timed_steps"], sync)
        if taken2 > best["timed_steps"] and elapsed2 > best["timed_s"]:
            extra = taken2 - best["timed_steps"]
            best.update(marginal_s_per_step=(elapsed2 - best["timed_s"]) / extra,
                        marginal_cpu_s_per_step=max(0.0, cpu2 - best["cpu_s_per_step"] * best["timed_steps"]) / extra,
                        second_timed_steps=taken2, second_timed_s=elapsed2)
    return best


def step_flops(run) -> int | None:
    """Floating-point operations of one step (``torch.utils.flop_counter``: matrix products and convolutions,
    forward and backward), counted on a call of one step (or of the fewest steps the case's trainer takes: one
    epoch for chapter 07, per step then); None if the counter fails."""
    try:
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            taken = run(1)
        return int(counter.get_total_flops()) // max(1, taken)
    except Exception as exc:  # a measurement aid only
        print(f"  (FLOP count failed: {type(exc).__name__}: {exc})", file=sys.stderr)
        return None


def matmul_rate(device: str, sync) -> float:
    """The device's measured float32 rate (FLOP/s) on 4096 x 4096 matrix products at torch's default precision
    settings (the bound beside the estimates: a step's FLOPs / this rate)."""
    import torch

    a = torch.randn(4096, 4096, device=device)
    b = torch.randn(4096, 4096, device=device)
    a @ b
    sync()
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        a @ b
        reps += 1
        if device == "cuda" and reps % 10:
            continue
        sync()
    sync()
    return 2 * 4096 ** 3 * reps / (time.perf_counter() - t0)


def blocking_sync() -> str:
    """Make the CUDA primary context *sleep* while the host waits for the GPU (CU_CTX_SCHED_BLOCKING_SYNC), before
    torch creates it, so that process CPU time counts the host's work and not spin-waiting; what happened."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        set_flags = getattr(cuda, "cuDevicePrimaryCtxSetFlags_v2", None) or cuda.cuDevicePrimaryCtxSetFlags
        dev = ctypes.c_int()
        for call in (lambda: cuda.cuInit(0), lambda: cuda.cuDeviceGet(ctypes.byref(dev), 0),
                     lambda: set_flags(dev, 4)):  # 4 = CU_CTX_SCHED_BLOCKING_SYNC
            rc = call()
            if rc:
                return f"not set (CUDA driver error {rc})"
        return "blocking sync (CU_CTX_SCHED_BLOCKING_SYNC)"
    except (OSError, AttributeError) as exc:
        return f"not set ({exc})"


def under_autocast(run, device: str):
    """``run`` with every call under ``torch.autocast(device, bfloat16)`` (float32 ops only; float64 stays)."""
    import torch

    def wrapped(steps):
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            return run(steps)
    return wrapped


def human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


def cpu_name() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), required=True)
    ap.add_argument("--json", type=Path, help="also write the results (and the environment) to this file")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of measuring in all (default 60)")
    ap.add_argument("--autocast", choices=("none", "bf16"), default="none",
                    help="run every trainer call under torch.autocast(bfloat16): the mixed-precision benchmark "
                         "of issue 22 (speed only; the book's trainers do not use it)")
    ap.add_argument("--only", nargs="+", metavar="TEXT",
                    help="measure only the cases whose name contains one of these texts (e.g. --only stacked)")
    ap.add_argument("--modes", nargs="+", choices=("auto", "host", "eager", "graph", "compile"),
                    help="REPRO_STEP_MODE values to measure the cases with a device program under (issue 36; "
                         "default: auto, i.e. graph on CUDA and host on the CPU); the other cases run as they are")
    ap.add_argument("--flops", action="store_true",
                    help="count each case's FLOPs per step (torch.utils.flop_counter) and measure the device's "
                         "float32 matrix-product rate: the arithmetic bound beside the estimates")
    args = ap.parse_args(argv)
    if args.budget <= 0:
        ap.error(f"--budget must be positive, got {args.budget}")
    return args


def run_case(case, mode, args, share, sync) -> dict:
    """Measure one case under REPRO_STEP_MODE=``mode`` (None: as it is) within ``share`` seconds."""
    row = {"case": case.name, "mode": mode or "", "paper_steps": case.paper_steps, "paper_steps_counted": case.counted}
    saved = os.environ.get("REPRO_STEP_MODE")
    from lib.device_step import FALLBACKS

    FALLBACKS.clear()
    if mode:
        os.environ["REPRO_STEP_MODE"] = mode
    try:
        t0 = time.perf_counter()
        run = case.make_run()
        if args.autocast == "bf16":
            run = under_autocast(run, args.device)
        row.update(measure(run, share - (time.perf_counter() - t0), sync,
                           case.graph_steps if mode in ("graph", "compile") else 1))
        if args.flops and "s_per_step" in row:
            row["flops_per_step"] = step_flops(run)
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    finally:
        if FALLBACKS:  # a failed CUDA graph capture: these steps ran eagerly
            row["graph_fallbacks"] = sorted(set(FALLBACKS))
        if saved is None:
            os.environ.pop("REPRO_STEP_MODE", None)
        else:
            os.environ["REPRO_STEP_MODE"] = saved
    per_step = row.get("marginal_s_per_step", row.get("s_per_step"))
    if per_step is not None and case.paper_steps:
        row["estimated_s"] = per_step * case.paper_steps
    return row


def report(results, args, rate):
    """The Markdown table (and the notes) on stdout."""
    print("\n| case | device | path | s/step | CPU s/step | CPU / wall | paper steps | estimated time | arithmetic bound |"
          "\n|---|---|---|---|---|---|---|---|---|")
    for r in results:
        steps = f"{r['paper_steps']:,}" if r.get("paper_steps") else "—"
        if "s_per_step" not in r:
            why = f"FAILED: {r['error']}" if "error" in r else f"skipped: {r.get('skipped')}"
            print(f"| {r['case']} | {args.device} | {r.get('mode') or '—'} | {why} | | | {steps} | | |")
            continue
        wall = r.get("marginal_s_per_step", r["s_per_step"])
        cpu = r.get("marginal_cpu_s_per_step", r["cpu_s_per_step"])
        est = human(r["estimated_s"]) if "estimated_s" in r else "—"
        bound = "—"
        if rate and r.get("flops_per_step") and r.get("paper_steps"):
            bound = human(r["flops_per_step"] * r["paper_steps"] / rate)
        path = (r.get("mode") or "—") + (" (capture failed: ran eagerly)" if r.get("graph_fallbacks") else "")
        print(f"| {r['case']} | {args.device} | {path} | {wall:.4g} | {cpu:.4g} | {cpu / wall:.2f} | "
              f"{steps} | {est} | {bound} |")
    print("\ns/step and CPU s/step: the marginal seconds per step between two timed calls where both ran, else one "
          "call's mean. Paper steps counted:")
    for r in results:
        if r.get("paper_steps_counted") and r.get("mode") in ("", "host", "auto"):
            print(f"- {r['case']}: {r['paper_steps_counted']}")


def main(argv=None) -> int:
    args = parse_args(argv)
    sched = blocking_sync() if args.device == "cuda" else "—"  # before torch touches CUDA
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: this machine has no CUDA device (torch.cuda.is_available() is False); "
              "use --device cpu", file=sys.stderr)
        return 2
    os.environ["REPRO_DEVICE"] = args.device  # for the trainers that read it (lib.scale.current_device)
    from lib.scale import set_threads, thread_count

    threads = set_threads(thread_count())
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else cpu_name()

    cases, results, failed = [], [], False
    for build in BUILDERS:
        try:
            cases += build(args.device)
        except Exception as exc:  # one broken chapter must not cost the others' measurements
            failed = True
            print(f"{build.__name__}: FAILED to set up: {type(exc).__name__}: {exc}", file=sys.stderr)
            traceback.print_exc()
            results.append({"case": build.__name__, "error": f"{type(exc).__name__}: {exc}"})
    if args.only:
        cases = [case for case in cases if any(text in case.name for text in args.only)]
        if not cases:
            print(f"--only {args.only}: no case's name contains any of these", file=sys.stderr)
            return 2
    jobs = [(case, mode) for case in cases for mode in ((args.modes or ["auto"]) if case.program else [None])]
    rate = matmul_rate(args.device, sync) if args.flops else None
    start = time.perf_counter()
    for i, (case, mode) in enumerate(jobs):
        share = (args.budget - (time.perf_counter() - start)) / (len(jobs) - i)
        row = run_case(case, mode, args, share, sync)
        failed |= "error" in row
        status = row.get("error") or row.get("skipped") or f"{row.get('marginal_s_per_step', row['s_per_step']):.4g} s/step"
        print(f"[{time.perf_counter() - start:5.1f} s] {case.name}{f' [{mode}]' if mode else ''}: {status}",
              file=sys.stderr, flush=True)
        results.append(row)
    report(results, args, rate)
    print(f"\ndevice {device_name}, torch {torch.__version__}, {threads} CPU thread(s), autocast {args.autocast}, "
          f"CUDA scheduling {sched}, float32 matmul rate {rate / 1e12 if rate else float('nan'):.1f} TFLOP/s, "
          f"{time.perf_counter() - start:.1f} s of measuring")

    if args.json:
        from lib.results import git_commit

        commit = git_commit(ROOT)  # with -dirty if tracked files changed; 'unknown' outside a repository
        args.json.write_text(json.dumps({
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": args.device, "device_name": device_name, "torch": torch.__version__,
            "python": platform.python_version(), "threads": threads, "budget_s": args.budget, "autocast": args.autocast,
            "only": args.only, "modes": args.modes, "cuda_scheduling": sched, "matmul_flops_per_s": rate,
            "commit": commit, "results": results}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
