"""Issue 36: do the device programs train as the host loops do, on the device, when replayed as CUDA graphs?

CI has no GPU, so tests/test_paper_steps.py compares the device programs with the host loops on the CPU only
(REPRO_STEP_MODE=eager). This script repeats the comparisons that have an exact answer on the device at hand,
in every mode (host, eager, graph), on small shapes, and prints one JSON line per comparison:

* chapter 05, one full batch per epoch (the batch order cannot matter): weights and temperatures after 6
  epochs, annealing and a milestone included, against the host loop on the same device;
* chapter 09, full-batch GD (no random numbers): the deep students after 200 steps and a schedule change;
* chapter 09 with minibatches and chapter 03, no host loop to match (other random numbers): the graph's result
  against the eager device program's with the same seed (equal if the graph consumes the device generator's
  stream as eager steps do; reported, not checked).

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


CHECKS = {"05 six-exit CNN, full batches": (ch05, "host", 2e-3), "09 deep students, full-batch GD": (ch09, "host", 1e-9),
          "09 deep students, minibatches, same seed": (ch09_minibatches, "eager", None),
          "03 SequenceMAE, same seed": (ch03, "eager", None)}


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
