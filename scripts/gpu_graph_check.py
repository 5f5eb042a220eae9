"""Issue 36: do the device programs train as the host loops do, on the device, when replayed as CUDA graphs?

CI has no GPU, so tests/test_paper_steps.py compares the device programs with the host loops on the CPU only
(REPRO_STEP_MODE=eager). This script repeats the comparisons that have an exact answer on the device at hand,
in every mode (host, eager, graph), on small shapes, and prints one JSON line per comparison:

* chapter 05, one full batch per epoch (the batch order cannot matter): weights and temperatures after 6
  epochs, annealing and a milestone included, against the host loop on the same device;
* chapter 09, full-batch GD (no random numbers): the deep students after 200 steps and a schedule change;
* chapter 09 with minibatches and chapter 03, no host loop to match (other random numbers): the graph's result
  against the eager device program's with the same seed (equal if the graph consumes the device generator's
  stream as eager steps do; reported, not checked);
* chapters 02, 06 (pruning CNN) and 07, lib.train's minibatch program: with its batch orders drawn from the
  host loop's CPU generator (a stand-in for torch.randperm, this check only) it must train as the host loop on
  the same device, minibatches and shorter last batches included; compared are the weights' changes from their
  start (relative to the largest change: 1e-3 for SGD, 1e-2 for Adam, whose updates of about lr per weight
  amplify rounding);

    python scripts/gpu_graph_check.py --device cuda|cpu [--json OUT.json]

The exit status is 1 if a comparison with an exact answer (05, 09) differs by more than its tolerance.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def ch05(mode, device):
    import torch

    from lib import multiexit as me

    cfg = replace(me.CONFIGS.quick, epochs=6, batch_size=16, mu=0.1)
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(3, 16, 1, 8, 8, generator=g), torch.randint(0, 10, (3, 16), generator=g)
    model = me.MultiExitCNN(1, cfg.widths, cfg.strides, 10, seeds=[0, 1, 2])
    annealer = me.train_multiexit(model, X, y, [False, True, True], cfg, const_tau=[None, None, 2.0], progress=False)
    return [*(v.detach().double().flatten() for v in model.state_dict().values()), annealer.tau.double()]


def ch09(mode, device, batch_size=None):
    import torch

    from lib import teacher_student as TS

    X = TS.gaussian_inputs(300, 20, 1.0, seed=0)
    teacher = TS.make_teacher_deep(20, [10, 15, 20], 20, X, seed=0)
    student = TS.make_student_deep(20, [20, 30, 40], 20, S=4, seed=1)
    net, _ = TS.train_deep(teacher, student, X, 200, {0: 0.05, 130: 0.02}, batch_size=batch_size, device=device)
    return [torch.as_tensor(a).flatten() for pair in net for a in pair]


def ch09_minibatches(mode, device):
    return ch09(mode, device, batch_size=16)


def ch03(mode, device):
    import torch

    from lib import mae

    g = torch.Generator().manual_seed(0)
    tok = torch.randint(4, 40, (64, 9), generator=g)
    tok[:, -1] = mae.EOS
    model = mae.SequenceMAE(tok, 40, latent_dim=4, emb=16, hidden=32, k=3, seed=0)
    trace = mae.train_mae(model, [2.0], steps=40, batch=16, log_every=10, device=device)
    _, elbo, mi = trace.as_arrays()
    return [torch.as_tensor(elbo).flatten().double(), torch.as_tensor(mi).flatten().double()]


class _HostOrders:
    """torch.randperm as lib.train's device program calls it (``randperm(n, device=...)``, no generator) drawn from
    a CPU generator seeded ``seed`` and moved: the host loop's orders (its ``torch.Generator().manual_seed(seed)``)."""

    def __init__(self, seed):
        import torch

        self.real, self.gen = torch.randperm, torch.Generator().manual_seed(seed)

    def __enter__(self):
        import torch

        def randperm(n, *args, generator=None, device=None, **kw):
            if generator is None and device is not None:
                return self.real(n, generator=self.gen).to(device)
            return self.real(n, *args, generator=generator, device=device, **kw)
        torch.randperm = randperm

    def __exit__(self, *exc):
        import torch

        torch.randperm = self.real


def _deltas(model, train, seed):
    """The parameters' changes from their start after ``train()``, run with the host loop's batch orders."""
    import torch

    start = [p.detach().clone() for p in model.parameters()]
    with _HostOrders(seed):
        train()
    return [(p.detach() - s).double().flatten() for p, s in zip(model.parameters(), start)]


def _images(n, classes, seed=0, side=8, ch=1):
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, ch, side, side, generator=g), torch.randint(0, classes, (n,), generator=g)


def ch06_pruning(mode, device):
    """lib.pruning.train_cnn (SGD, momentum, weight decay): 3 epochs of 46 images in batches of 10 (the last of 6)."""
    from lib import pruning as P

    X, y = _images(46, 10)
    model = P.PrunableCNN(1, 8, 8, seed=0)
    return _deltas(model, lambda: P.train_cnn(model, X, y, 3, batch_size=10, lr=0.05, seed=3), 3)


def ch02_adam(mode, device):
    """lib.maxmargin.train_adam: 2 epochs of 37 8x8 images in batches of 10 (the last of 7)."""
    from lib import maxmargin as mm

    X, y = _images(37, 2, seed=1)
    model = mm.Table31CNN(image_size=8, seed=0)
    return _deltas(model, lambda: mm.train_adam(model, X, y.float() * 2 - 1, 2, 10, 1e-3, seed=1, progress=False,
                                                device=device), 1)


def ch07_ensemble(mode, device):
    """lib.annulus_training.train_ball_vs_shell's trainer: 3 epochs of Adam, 60 nets on 40 points, batches of 10."""
    import numpy as np
    import torch

    from lib import annulus_training as AT
    from lib.train import train_minibatch

    X, y = AT.ball_vs_shell(2, 40, 0.5, 0.7, 1.0, np.random.default_rng(0), n_sets=60)
    X, y = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    model = AT.LeakEnsemble([2, 3, 1], seeds=list(range(60)), slopes=[0.0, 0.1, 0.2] * 20)
    loss = AT._per_net_loss(torch.tensor([1.0, 0.0] * 30, device=device))
    return _deltas(model, lambda: train_minibatch(model, X, y, loss, 3, 10, 0.01, seed=2, optimizer="adam",
                                                  progress=False, device=device), 2)


CHECKS = {"05 six-exit CNN, full batches": (ch05, "host", 2e-3), "09 deep students, full-batch GD": (ch09, "host", 1e-9),
          "09 deep students, minibatches, same seed": (ch09_minibatches, "eager", None),
          "03 SequenceMAE, same seed": (ch03, "eager", None),
          "06 pruning CNN, host loop's orders": (ch06_pruning, "host", 1e-3),
          "02 Table 3.1 CNN, host loop's orders": (ch02_adam, "host", 1e-2),
          "07 ensemble, host loop's orders": (ch07_ensemble, "host", 1e-2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), required=True)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    # full float32 in convolutions and products (no TF32): the comparisons test the programs, not the rounding
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    os.environ["REPRO_DEVICE"] = args.device
    modes = ("host", "eager", "graph") if args.device == "cuda" else ("host", "eager")
    rows, failed = [], False
    for name, (fn, reference, tol) in CHECKS.items():
        out = {}
        for mode in modes:
            os.environ["REPRO_STEP_MODE"] = mode
            try:
                out[mode] = [t.cpu() for t in fn(mode, args.device)]
            except Exception as exc:
                out[mode] = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
        for mode in modes:
            if mode == reference:
                continue
            row = {"check": name, "mode": mode, "against": reference, "tolerance": tol}
            a, b = out[reference], out[mode]
            if isinstance(a, str) or isinstance(b, str):
                row["error"] = a if isinstance(a, str) else b
                failed = True
            else:
                scale = max(float(t.abs().max()) for t in a)
                row["max_abs_difference"] = max(float((u - v).abs().max()) for u, v in zip(a, b))
                row["relative_to_largest"] = row["max_abs_difference"] / max(scale, 1e-30)
                if tol is not None and not row["relative_to_largest"] <= tol:
                    row["failed"], failed = True, True
            print(json.dumps(row), flush=True)
            rows.append(row)
    os.environ.pop("REPRO_STEP_MODE", None)
    if args.json:
        import datetime

        from lib.results import git_commit

        args.json.write_text(json.dumps({
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": git_commit(ROOT), "device": args.device, "torch": torch.__version__,
            "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
            "results": rows}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
