"""Pruning over-parameterised networks (Chapter 6, section "Pruning": thesis §3.4.4 and §3.4.5).

Source: Sattelberg (2026), *Local Linearity of ReLU Neural Networks*, §3.4.4 (Tables 3.4 and 3.5,
Fig. 3.10) and §3.4.5 (Figs. 3.11 and 3.12).

* Wide pruning (Table 3.4): :func:`wide_pruning_table` runs :func:`lib.boolean.prune_and_finetune`
  with the thesis' stopping rule over a grid of widths and parity sizes.
* Deep pruning (Table 3.5): :class:`MaskedMLP` holds many leaky-ReLU MLPs of one padded shape with
  per-net node masks and per-net "linear" layers, so that every candidate removal of every pruning run
  is fine-tuned in one batch; :func:`deep_prune` is the heuristic (remove one node at a time, chosen
  with probability proportional to 1 / loss among removals that keep 100% accuracy).
* Image networks (§3.4.5): :class:`PrunableCNN` (three 3x3 conv + max-pool blocks and a linear layer,
  with channel and weight masks), :func:`train_cnn`, :func:`magnitude_prune` and :func:`channel_prune`.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from lib import boolean as B
from lib import validate as V
from lib.scale import as_device
from lib.train import train_minibatch


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (used for the quoted rates of §3.4.4)."""
    trials = V.positive_int(trials, "trials")
    successes = V.nonnegative_int(successes, "successes")
    z = V.positive(z, "z")
    if not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes!r} of {trials!r}")
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------------------------
# Wide pruning: Table 3.4
# --------------------------------------------------------------------------------------------

def wide_pruning_cell(n: int, width: int, parents: int, epochs: int, finetune_epochs: int,
                      alpha: float = 0.1, lr: float = 0.025, seed: int = 0, progress: bool = False) -> dict:
    """One cell of Table 3.4: train ``parents`` width-``width`` nets on n-parity, prune each solved one.

    Per solved parent: the smallest width p whose sub-networks (all C(width, p), each fine-tuned for
    ``finetune_epochs``) include a success, and how many succeed (the thesis' "p, r/C(w, p)").
    Returns ``solved_parents``, ``parents`` and ``per_parent`` (a list of (p, r, C(width, p))).
    """
    if not V.is_int(n) or not 1 <= n <= 12:
        raise ValueError(f"n must be an int in 1..12, got {n!r}")
    finetune_epochs = V.positive_int(finetune_epochs, "finetune_epochs")
    res = B.prune_and_finetune(B.parity_table(n), width, alpha, parents, epochs, lr=lr, seed=seed,
                               max_width=width, progress=progress, finetune_epochs=finetune_epochs,
                               record=False, stop_at_first=True)
    per_parent = []
    for i, p in enumerate(res["smallest"]):
        p = int(p)  # the full width always succeeds: the parent itself solves the task
        per_parent.append((p, int(res["solved"][p][i].sum()), math.comb(width, p)))
    return {"solved_parents": len(res["parents_used"]), "parents": parents, "per_parent": per_parent}


def best_cell_entry(cell: dict) -> tuple | None:
    """The parent with the smallest pruned width (ties: most successful sub-networks), or None.
    ``cell``: a :func:`wide_pruning_cell` result, whose ``"per_parent"`` lists (pruned width, successes)."""
    if not isinstance(cell, dict) or not isinstance(cell.get("per_parent"), list):
        raise TypeError(f"cell must be a wide_pruning_cell result (a dict with a 'per_parent' list), got {cell!r:.80}")
    if not cell["per_parent"]:
        return None
    return min(cell["per_parent"], key=lambda e: (e[0], -e[1]))


def loss_plateaus(curve, window: int, rel_tol: float, min_length: int, floor: float = 0.05,
                  skip_start: bool = False) -> list[tuple]:
    """The long flat stretches of one loss curve: the saddles that Fig. 3.10 (thesis §3.4.4) describes.

    The thesis' width-3 sub-network "reduces to a saddle point where it stays for a long period, reduces
    to a different saddle point where it stays for a long period, and then finally reduces to a local
    minimum": two plateaus. Here epoch t is *flat* when the loss changes by less than the fraction
    ``rel_tol`` of itself over the next ``window`` epochs, ``|L(t + window) - L(t)| < rel_tol L(t)``, and
    ``L(t) > floor``. The relative test tells a saddle (the loss stays put at its level) from the slow
    approach to zero after a net has solved its task (the loss keeps shrinking by a steady fraction), which
    an absolute tolerance would count as a plateau. A plateau is a maximal run of flat epochs at least
    ``min_length`` long; two consecutive plateaus whose levels (median loss) differ by less than
    ``rel_tol`` times the larger are one plateau interrupted by a wobble and are merged. Returns
    ``(first epoch, last epoch, level)`` per plateau, in order (the last epoch of a run is that of its
    last flat epoch). With ``skip_start`` a plateau that begins at epoch 0 is dropped: that is the level the
    loss starts from, not a saddle it falls into (the thesis' curve "starts with maximum loss" and then
    reaches its two saddles). Chapter 6's pruning section counts the saddles (``skip_start=True``) on every
    successful width-3 sub-network, and the starting plateaus separately.
    """
    loss = V.array(curve, "curve", ndim=1)
    window = V.positive_int(window, "window")
    rel_tol = V.positive(rel_tol, "rel_tol")
    min_length = V.positive_int(min_length, "min_length")
    floor = V.real(floor, "floor")
    if not isinstance(skip_start, bool):
        raise ValueError(f"skip_start must be a bool, got {skip_start!r}")
    if len(loss) <= window:
        raise ValueError(f"curve must be longer than window ({window} epochs), got {len(loss)} epochs")
    flat = np.abs(loss[window:] - loss[:-window]) < rel_tol * np.abs(loss[:-window])
    flat &= loss[:-window] > floor
    runs, start = [], None
    for t, f in enumerate(np.append(flat, False)):  # a final False closes an open run
        if f and start is None:
            start = t
        elif not f and start is not None:
            if t - start >= min_length:
                runs.append([start, t - 1, float(np.median(loss[start:t]))])
            start = None
    merged = []
    for run in runs:
        if merged and abs(run[2] - merged[-1][2]) < rel_tol * max(abs(run[2]), abs(merged[-1][2])):
            first = merged[-1][0]
            merged[-1] = [first, run[1], float(np.median(loss[first:run[1] + 1]))]
        else:
            merged.append(run)
    return [tuple(r) for r in merged if not (skip_start and r[0] == 0)]


def wide_pruning_table(widths, ns, parents: int, epochs: int, finetune_epochs: int, seed_of,
                       alpha: float = 0.1, lr: float = 0.025, progress: bool = True) -> dict:
    """Table 3.4 analogue: :func:`wide_pruning_cell` for every (width, n) with n <= width + 1.

    ``seed_of(width, n)`` gives each cell's seed. Returns {(width, n): cell}.
    """
    from tqdm.auto import tqdm

    widths = [V.positive_int(w, "widths[i]") for w in V.sequence(widths, "widths")]
    ns = [V.positive_int(n, "ns[i]") for n in V.sequence(ns, "ns")]
    V.callable_(seed_of, "seed_of")
    V.positive_int(finetune_epochs, "finetune_epochs")
    V.positive(lr, "lr")
    cells = [(w, n) for w in widths for n in ns if n <= w + 1]
    if not cells:
        raise ValueError(f"no cell with n <= width + 1 in widths {widths!r}, ns {ns!r}")
    out = {}
    for w, n in tqdm(cells, desc="Table 3.4 cells", disable=not progress):
        out[(w, n)] = wide_pruning_cell(n, w, parents, epochs, finetune_epochs, alpha, lr, seed=seed_of(w, n))
    return out


# --------------------------------------------------------------------------------------------
# Deep pruning: Table 3.5
# --------------------------------------------------------------------------------------------

class MaskedMLP(B.StackedMLP):
    """Stacked leaky-ReLU MLPs [n, w, ..., w, 1] (nets axis last, as :class:`lib.boolean.StackedMLP`)
    with per-net node masks and per-net linear layers.

    ``mask[l]`` (w, N) switches hidden nodes of layer l off (their output is zero, so they get no
    gradient); ``linear[l]`` (N,) makes hidden layer l the identity, which is how a layer is removed:
    it merges into the next one (:func:`architecture`). The activation of layer l is ``z * s`` with
    slope ``s = mask * (1 if linear or z > 0 else alpha)``, so the hand-written backward is exact.
    Weights, masks and layer flags live on ``device`` (default the CPU; issue 22).
    """

    def __init__(self, n_in: int, width: int, depth: int, n_nets: int, alpha: float, seed: int, device="cpu"):
        depth = V.positive_int(depth, "depth")
        n_in, width = V.positive_int(n_in, "n_in"), V.positive_int(width, "width")
        super().__init__([n_in] + [width] * depth + [1], n_nets, alpha, seed, device=device)
        self.mask = torch.ones(depth, width, n_nets, device=self.device)
        self.linear = torch.zeros(depth, n_nets, dtype=torch.bool, device=self.device)

    def _slopes(self, zs):
        return [m * torch.where(lin | (z > 0), 1.0, self.alpha) for z, m, lin in zip(zs, self.mask, self.linear)]

    def forward(self, X: torch.Tensor, keep: bool = False):
        """Logits (P, B) for inputs X (P, n) shared by all nets (and the pre-activations if ``keep``); ``X``:
        a finite floating-point tensor, an empty batch (P = 0) gives an empty result."""
        V.tensor(X, "X", shape=(None, self.widths[0]), floating=True, nonempty=False)
        Ws, bs = self.params[::2], self.params[1::2]
        P = X.shape[0]
        z = (X @ Ws[0].reshape(X.shape[1], -1)).view(P, *bs[0].shape) + bs[0]
        zs = [z]
        for l, (W, b) in enumerate(zip(Ws[1:], bs[1:])):
            s = self.mask[l] * torch.where(self.linear[l] | (z > 0), 1.0, self.alpha)
            z = ((z * s)[:, :, None, :] * W[None]).sum(1) + b[None]
            zs.append(z)
        return (z[:, 0, :], zs) if keep else z[:, 0, :]

    def backward(self, X: torch.Tensor, zs, dout: torch.Tensor) -> None:
        """Write the gradient of sum(dout * logits) into ``self.grad``."""
        Ws, gWs, gbs = self.params[::2], self.grads[::2], self.grads[1::2]
        slopes = self._slopes(zs[:-1])
        dz = dout[:, None, :]  # (P, 1, B)
        for l in range(len(Ws) - 1, 0, -1):
            a = zs[l - 1] * slopes[l - 1]
            gWs[l].copy_((a[:, :, None, :] * dz[:, None, :, :]).sum(0))
            gbs[l].copy_(dz.sum(0))
            dz = (dz[:, None, :, :] * Ws[l][None]).sum(2) * slopes[l - 1]
        P = X.shape[0]
        gWs[0].view(X.shape[1], -1).copy_(X.T @ dz.reshape(P, -1))
        gbs[0].copy_(dz.sum(0))

    def select(self, index, device=None) -> "MaskedMLP":
        """A new MaskedMLP holding copies of the nets ``index`` (with their masks), on ``device``
        (default: where this one lives)."""
        index = torch.as_tensor(self._net_indices(index, "index"), device=self.device)
        new = MaskedMLP(self.widths[0], self.widths[1], len(self.mask), len(index), self.alpha, seed=0,
                        device=self.device if device is None else device)
        for mine, theirs in zip(self.params, new.params):
            theirs.copy_(mine[..., index])
        new.mask, new.linear = self.mask[..., index].to(new.device), self.linear[:, index].to(new.device)
        return new

    def _net_indices(self, index, name: str) -> np.ndarray:
        """``index`` as a non-empty 1-D int64 array of net indices in [0, B)."""
        index = V.array(index, name, ndim=1, integer=True)
        if index.min() < 0 or index.max() >= self.B:
            raise V.ArgumentValueError(f"{name} must hold net indices in [0, {self.B}), got {index.tolist()}")
        return index

    def assign(self, rows, other: "MaskedMLP") -> None:
        """Overwrite nets ``rows`` with all nets of ``other`` (same shape), masks included."""
        rows = torch.as_tensor(self._net_indices(rows, "rows"), device=self.device)
        V.instance(other, "other", MaskedMLP)
        for mine, theirs in zip(self.params, other.params):
            mine[..., rows] = theirs
        self.mask[..., rows], self.linear[:, rows] = other.mask, other.linear


def fit_masked(model: MaskedMLP, X: torch.Tensor, y: torch.Tensor, epochs: int, lr: float = 0.025,
               desc: str = "fine-tune", progress: bool = False):
    """Full-batch Adam on all nets (:func:`lib.boolean._fit`: each net trains independently), on the
    model's device.

    Returns (solved: (N,) bool, 100% accuracy at the end; loss: (N,) final mean BCE), on the CPU.
    """
    V.instance(model, "model", MaskedMLP)
    V.tensor(X, "X", floating=True, shape=(None, model.widths[0]))
    V.tensor(y, "y", floating=True)
    if y.numel() != X.shape[0]:
        raise V.ArgumentValueError(f"y must hold one label per row of X ({X.shape[0]}), got {V.describe(y)}")
    epochs, lr = V.positive_int(epochs, "epochs"), V.positive(lr, "lr")
    X, Y = X.to(model.device), y.reshape(-1, 1).expand(-1, model.B).contiguous().to(model.device)
    B._fit(model, X, Y, epochs, lr, desc, progress)
    out = model.forward(X)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(out, Y, reduction="none").mean(0)
    return ((out > 0) == (Y > 0.5)).all(0).cpu(), loss.cpu()


def _check_mask(mask, linear) -> None:
    V.tensor(mask, "mask", ndim=2)
    V.tensor(linear, "linear", ndim=1, nonempty=False)
    V.same_size(tuple(mask.shape[:1]), "mask (depth, w)", tuple(linear.shape), "linear (depth,)",
                "depth (one linear flag per layer)")
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise V.ArgumentValueError(f"mask must hold only 0 and 1, got {V.describe(mask)}")


def architecture(mask: torch.Tensor, linear: torch.Tensor, n_in: int) -> tuple:
    """The widths (input, hidden..., 1) of one masked net (``mask`` (depth, w), ``linear`` (depth,))
    after merging its linear layers away."""
    _check_mask(mask, linear)
    n_in = V.positive_int(n_in, "n_in")
    hidden = [int(m.sum()) for m, lin in zip(mask, linear) if not lin]
    return (n_in, *hidden, 1)


def pruned_network(model: MaskedMLP, net: int) -> list:
    """Net ``net`` of ``model`` as an explicit ``[(W, b), ...]`` (W of shape (out, in), the convention
    of :func:`lib.boolean.network_output`): dead units dropped, linear layers merged into the next
    layer. Computes exactly the same function on every input (Table 3.5's reported architectures)."""
    V.instance(model, "model", MaskedMLP)
    net = V.integer(net, "net (index)", min=0, max=model.B - 1)
    Ws = [W[..., net].double() for W in model.params[::2]]
    bs = [b[..., net].double() for b in model.params[1::2]]
    P, q = torch.eye(model.widths[0], dtype=torch.float64), torch.zeros(model.widths[0], dtype=torch.float64)
    prev = torch.arange(model.widths[0])
    layers = []
    for l, (W, b) in enumerate(zip(Ws, bs)):
        live = torch.nonzero(model.mask[l, :, net]).flatten() if l < len(model.mask) else torch.tensor([0])
        Wl, bl = W[prev][:, live], b[live]
        P, q = P @ Wl, q @ Wl + bl
        if l < len(model.mask) and bool(model.linear[l, net]):
            prev = live
            continue
        layers.append((P.T.numpy(), q.numpy()))
        P, q, prev = torch.eye(len(live), dtype=torch.float64), torch.zeros(len(live), dtype=torch.float64), live
    return layers


def removal_candidates(mask: torch.Tensor, linear: torch.Tensor) -> list:
    """Every single removal allowed in one net: ("node", layer, unit) for a live unit of a nonlinear
    layer with >= 2 live units, and ("layer", layer) for a nonlinear layer when >= 2 remain."""
    _check_mask(mask, linear)
    live_layers = [l for l in range(len(linear)) if not linear[l]]
    out = []
    for l in live_layers:
        units = torch.nonzero(mask[l]).flatten().tolist()
        if len(units) >= 2:
            out += [("node", l, u) for u in units]
        if len(live_layers) >= 2:
            out.append(("layer", l))
    return out


def _deep_prune_step(current: MaskedMLP, active: np.ndarray, runs: list, X: torch.Tensor, y: torch.Tensor,
                     finetune_epochs: int, lr: float, rng: np.random.Generator) -> bool:
    """One step of :func:`deep_prune` for every active run at once, in place.

    Fine-tunes every single removal of :func:`removal_candidates` of every active run; each run keeps one
    removal that keeps 100% accuracy, drawn with probability proportional to 1 / (loss after fine-tuning),
    with its fine-tuned weights (``current`` and ``runs[r]["steps"]`` change), or is marked inactive when
    none does. Returns False when no active run has a candidate left (nothing was tried).
    """
    idx = np.flatnonzero(active)
    mask, linear = current.mask.cpu(), current.linear.cpu()  # one copy per step, read entry by entry
    cands = [(r, c) for r in idx for c in removal_candidates(mask[..., r], linear[:, r])]
    if not cands:
        return False
    trial = current.select([r for r, _ in cands])
    with torch.no_grad():
        for j, (_, c) in enumerate(cands):
            if c[0] == "node":
                trial.mask[c[1], c[2], j] = 0.0
            else:
                trial.linear[c[1], j] = True
    ok, loss = fit_masked(trial, X, y, finetune_epochs, lr)
    ok, loss = ok.numpy(), loss.numpy()
    chosen = []
    for r in idx:
        js = [j for j, (rr, _) in enumerate(cands) if rr == r and ok[j]]
        if not js:
            active[r] = False
            continue
        score = 1.0 / np.maximum(loss[js], 1e-12)
        chosen.append((r, js[rng.choice(len(js), p=score / score.sum())]))
        runs[r]["steps"] += 1
    if chosen:
        rows, picks = [r for r, _ in chosen], [j for _, j in chosen]
        current.assign(rows, trial.select(picks))
    return True


def deep_prune(n: int, width: int, depth: int, trainings: int, prunings: int, epochs: int,
               finetune_epochs: int, alpha: float = 0.1, lr: float = 0.025, seed: int = 0,
               progress: bool = True, max_steps: int | None = None, device=None) -> dict:
    """Heuristic deep pruning of width x depth nets on n-parity (thesis §3.4.4, Table 3.5).

    Trains ``trainings`` nets; each one that solves n-parity is pruned ``prunings`` times
    independently. A step fine-tunes (``finetune_epochs`` of Adam) every single removal of
    :func:`removal_candidates` for every run at once; among removals that keep 100% accuracy one is
    drawn with probability proportional to 1 / (loss after fine-tuning) and kept (with its fine-tuned
    weights); a run stops when no removal keeps 100% accuracy. Returns ``trained_solved``
    (trainings,), ``runs`` (a list of dicts: ``training`` index, ``steps`` taken, final ``architecture``,
    the explicit merged ``network``, whether it ``solves`` n-parity (float64) and its ``max_deviation``
    from the masked net's logits on the corners). The nets train on ``device`` (default ``REPRO_DEVICE``:
    the CPU at quick and full scale, CUDA at paper scale where there is one; issue 22); the search and
    the report run on the CPU.
    """
    from tqdm.auto import tqdm

    if not V.is_int(n) or not 1 <= n <= 12:
        raise ValueError(f"n must be an int in 1..12, got {n!r}")
    lr, seed = V.positive(lr, "lr"), V.seed(seed)
    for name, v in (("trainings", trainings), ("prunings", prunings), ("epochs", epochs),
                    ("finetune_epochs", finetune_epochs)):
        if not V.is_int(v) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    device = as_device(device)
    X = torch.tensor(B.cube(n), dtype=torch.float32)
    y = torch.tensor(B.parity_table(n), dtype=torch.float32)[None]
    parents = MaskedMLP(n, width, depth, trainings, alpha, seed, device=device)
    solved, _ = fit_masked(parents, X, y, epochs, lr, f"train {width}x{depth}", progress)
    trained_solved = solved.numpy()
    good = np.flatnonzero(trained_solved)
    runs = [{"training": int(t), "steps": 0} for t in good for _ in range(prunings)]
    if not runs:
        return {"trained_solved": trained_solved, "runs": []}
    current = parents.select(np.repeat(good, prunings))
    active = np.ones(len(runs), dtype=bool)
    rng = np.random.default_rng(seed)
    limit = max_steps or depth * width
    bar = tqdm(total=limit, desc=f"deep pruning n={n}", disable=not progress)
    for _ in range(limit):
        if not _deep_prune_step(current, active, runs, X, y, finetune_epochs, lr, rng):
            break
        bar.update(1)
        if not active.any():
            break
    bar.close()
    current = current.select(range(current.B), device="cpu")  # the report reads the nets entry by entry
    cube = B.cube(n)
    for r, run in enumerate(runs):
        run["architecture"] = architecture(current.mask[..., r], current.linear[:, r], n)
        net = pruned_network(current, r)
        run["network"] = net
        out = B.network_output(net, cube, alpha)
        run["solves"] = bool(((out > 0) == (B.parity_table(n) == 1)).all())
        run["max_deviation"] = float(np.abs(out - current.forward(X)[:, r].double().numpy()).max())
    return {"trained_solved": trained_solved, "runs": runs}


def _check_arch(arch) -> list:
    return [V.positive_int(w, "arch[i]") for w in V.sequence(arch, "arch (widths input, ..., output)", min_len=2)]


def architecture_size(arch) -> tuple:
    """Sort key for pruned architectures: (hidden nodes, hidden layers)."""
    arch = _check_arch(arch)
    return (sum(arch[1:-1]), len(arch) - 2)


def parity_bound_ok(arch) -> bool:
    """Whether the saw-tooth construction (Theorem 3.3.4 / its product form) reaches n-parity with
    these hidden widths: prod(widths) >= n, the number of linear pieces a composition of saw-tooths
    of w_1, ..., w_l units can alternate through (2x2 handles n <= 4)."""
    arch = _check_arch(arch)
    return math.prod(arch[1:-1]) >= arch[0]


# --------------------------------------------------------------------------------------------
# Image networks: §3.4.5
# --------------------------------------------------------------------------------------------

class PrunableCNN(torch.nn.Module):
    """Three blocks of 3x3 conv (padding 1) + ReLU + 2x2 max-pool, then a linear layer (thesis §3.4.5).

    ``channel_mask[l]`` (channels,) switches whole conv channels off (structural pruning);
    ``weight_mask`` holds one 0/1 tensor per weight tensor (magnitude pruning). Both are applied in
    the forward pass, so a pruned weight stays zero during fine-tuning.
    """

    def __init__(self, in_channels: int, image_size: int, channels: int = 32, classes: int = 10,
                 seed: int = 0):
        super().__init__()
        for name, v in (("in_channels", in_channels), ("image_size", image_size), ("channels", channels),
                        ("classes", classes)):
            if not V.is_int(v) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if image_size < 8:
            raise ValueError(f"image_size must be >= 8 (three 2x2 pools), got {image_size}")
        seed = V.seed(seed)
        side = image_size // 8
        with torch.random.fork_rng(devices=[]):  # PyTorch-default init, seeded without touching the global RNG
            torch.manual_seed(int(seed))
            self.convs = torch.nn.ModuleList(
                [torch.nn.Conv2d(in_channels if i == 0 else channels, channels, 3, padding=1) for i in range(3)])
            self.fc = torch.nn.Linear(channels * side * side, classes)
        self.side = side
        for i in range(3):
            self.register_buffer(f"channel_mask{i}", torch.ones(channels))
        self.weight_masks = [torch.ones_like(p) for p in self.prunable()]

    device_program = False  # True while lib.train's device program trains it (issue 36): no per-batch finiteness check

    def _apply(self, fn, *args, **kwargs):
        """Move or cast the weight masks with the module (``.to(device)``, ``.cpu()``, ``.double()``), as
        if they were buffers: at paper scale the trainers move the net to CUDA (issue 22), and a mask left
        on the CPU would meet a CUDA weight in :meth:`forward`."""
        super()._apply(fn, *args, **kwargs)
        self.weight_masks = [fn(m) for m in self.weight_masks]
        return self

    def prunable(self) -> list:
        """The weight tensors counted and pruned (conv kernels and the linear matrix; not biases)."""
        return [c.weight for c in self.convs] + [self.fc.weight]

    def channel_masks(self) -> list:
        return [getattr(self, f"channel_mask{i}") for i in range(3)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(n, classes)`` of finite floating-point images ``x`` of shape ``(n, in_channels, H, W)``;
        an empty batch gives an empty result."""
        V.tensor(x, "x", shape=(None, self.convs[0].in_channels, None, None), floating=True, nonempty=False,
                 finite=not self.device_program)  # (a device program checked its data once: issue 36)
        if x.shape[2] // 8 != self.side or x.shape[3] // 8 != self.side:  # three 2x2 pools, then the linear layer
            raise V.ArgumentValueError(f"x must hold images of the model's size (H // 8 = W // 8 = {self.side}), "
                                       f"got {V.describe(x)}")
        wm = self.weight_masks
        for i, (conv, cm) in enumerate(zip(self.convs, self.channel_masks())):
            x = torch.nn.functional.conv2d(x, conv.weight * wm[i], conv.bias, padding=1)
            x = torch.nn.functional.max_pool2d(torch.relu(x) * cm[None, :, None, None], 2)
        return torch.nn.functional.linear(x.flatten(1), self.fc.weight * wm[3], self.fc.bias)

    def remaining_weights(self) -> int:
        """Weights that are still in use: unmasked, in live channels (in and out) of every layer."""
        cms = self.channel_masks()
        total = 0
        for i, (w, wm) in enumerate(zip(self.prunable(), self.weight_masks)):
            live = wm.clone()
            if i < 3:
                live = live * cms[i][:, None, None, None]
                if i > 0:
                    live = live * cms[i - 1][None, :, None, None]
            else:
                live = live * cms[2].repeat_interleave(self.side * self.side)[None, :]
            total += int(live.sum())
        return total

    def total_weights(self) -> int:
        return sum(p.numel() for p in self.prunable())

    def channels(self) -> tuple:
        """Live channels per conv layer (the annotations of Figs. 3.11/3.12)."""
        return tuple(int(m.sum()) for m in self.channel_masks())


def as_images(X: torch.Tensor, image_size: int | None = None) -> torch.Tensor:
    """Images as (N, C, H, W): flat 8x8 digits (N, 64) and MNIST (N, 28, 28) gain a channel axis."""
    V.tensor(X, "X", ndim=(2, 3, 4), floating=True)
    if image_size is not None:
        image_size = V.positive_int(image_size, "image_size")
    if X.ndim == 2:
        side = image_size or int(round(math.sqrt(X.shape[1])))
        if side * side != X.shape[1]:
            raise V.ArgumentValueError(f"X: cannot read rows of {X.shape[1]} features as square images")
        return X.reshape(-1, 1, side, side)
    if X.ndim == 3:
        return X[:, None]
    if X.ndim == 4:
        return X
    raise ValueError(f"expected images of 2, 3 or 4 dims, got shape {tuple(X.shape)}")


def train_cnn(model: PrunableCNN, X: torch.Tensor, y: torch.Tensor, epochs: int, batch_size: int = 40,
              lr: float = 0.001, momentum: float = 0.9, weight_decay: float = 1e-4, seed: int = 0,
              progress: bool = False, desc: str = "train CNN") -> list:
    """Minibatch SGD with cross-entropy (thesis §3.4.5: lr 0.001, batch 40, momentum 0.9, weight decay
    1e-4, 30 epochs) through :func:`lib.train.train_minibatch`; masked weights and channels stay zero
    (the masks act in the forward pass). Returns the mean loss of every epoch. On CUDA the steps run as
    :func:`lib.train.train_minibatch`'s device program (issue 36), whose batch orders are drawn on the device's
    generator: a CUDA run trains on other batches than a CPU run."""
    _check_images(model, X, y)
    hist = train_minibatch(model, X, y, torch.nn.functional.cross_entropy, epochs, batch_size, lr, seed=seed,
                           optimizer="sgd", momentum=momentum, weight_decay=weight_decay, progress=progress,
                           desc=desc)
    return hist.loss


def _check_images(model, X, y, xname: str = "X", yname: str = "y") -> None:
    """A model, finite images (N, C, H, W) and N integer labels in [0, classes) (once per call)."""
    V.instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    V.tensor(X, xname, ndim=4, floating=True)
    V.tensor(y, yname, ndim=1, floating=False)
    if X.shape[0] != y.shape[0]:
        raise V.ArgumentValueError(f"{yname} must hold one label per image of {xname} ({X.shape[0]}), "
                                   f"got {V.describe(y)}")
    classes = getattr(getattr(model, "fc", None), "out_features", None)
    V.labels(y, yname, classes)


@torch.no_grad()
def evaluate(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int = 2000) -> tuple:
    """(mean cross-entropy, accuracy) of ``model`` on (X, y): finite inputs, integer labels in
    ``[0, classes)``; the first batch's outputs give the number of classes of a model without ``fc``."""
    V.instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    V.tensor(X, "X", floating=True)
    V.tensor(y, "y", ndim=1, floating=False)
    if X.ndim == 0 or X.shape[0] != y.shape[0]:
        raise V.ArgumentValueError(f"y must hold one label per row of X ({X.shape[0] if X.ndim else 0}), "
                                   f"got {V.describe(y)}")
    V.labels(y, "y", getattr(getattr(model, "fc", None), "out_features", None))
    batch_size = V.positive_int(batch_size, "batch_size")
    model.eval()
    loss, correct = 0.0, 0
    for i in range(0, len(y), batch_size):
        out = model(X[i:i + batch_size])
        loss += float(torch.nn.functional.cross_entropy(out, y[i:i + batch_size], reduction="sum"))
        correct += int((out.argmax(1) == y[i:i + batch_size]).sum())
    return loss / len(y), correct / len(y)


def magnitude_prune(model: PrunableCNN, fraction_removed: float) -> PrunableCNN:
    """A copy of ``model`` with the smallest ``fraction_removed`` of all prunable weights (global,
    by magnitude) masked to zero (thesis §3.4.5, magnitude-of-weights pruning)."""
    V.instance(model, "model", PrunableCNN)
    fraction_removed = V.fraction(fraction_removed, "fraction_removed")
    new = copy.deepcopy(model)
    weights = torch.cat([(p * m).detach().abs().flatten() for p, m in zip(new.prunable(), new.weight_masks)])
    k = int(round(fraction_removed * weights.numel()))
    if k > 0:
        threshold = torch.kthvalue(weights, k).values
        new.weight_masks = [m * ((p.detach().abs() > threshold) & (m > 0)).float()
                            for p, m in zip(new.prunable(), new.weight_masks)]
    return new


def channel_prune(model: PrunableCNN, X: torch.Tensor, y: torch.Tensor, X_test: torch.Tensor,
                  y_test: torch.Tensor, finetune_epochs: int = 1, min_accuracy: float = 0.0,
                  score_samples: int | None = None, seed: int = 0, progress: bool = True, **sgd) -> list:
    """Structural channel pruning (thesis §3.4.5): repeatedly remove the conv channel whose removal
    gives the lowest training loss, fine-tune ``finetune_epochs`` with the thesis' SGD, and record
    (channels per layer, remaining weight fraction, test accuracy); stop when the test accuracy falls
    below ``min_accuracy`` or a layer would lose its last channel. ``score_samples`` scores removals
    on a fixed random subset of the training set (all of it when None). Returns the list of records,
    starting with the unpruned model.
    """
    from tqdm.auto import tqdm

    finetune_epochs = V.nonnegative_int(finetune_epochs, "finetune_epochs")
    V.instance(model, "model", PrunableCNN)
    _check_images(model, X, y)
    _check_images(model, X_test, y_test, "X_test", "y_test")
    min_accuracy = V.real(min_accuracy, "min_accuracy", min=0.0, max=1.0)
    seed = V.seed(seed)
    if score_samples is not None:
        score_samples = V.positive_int(score_samples, "score_samples")
    model = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(int(seed))
    if score_samples is not None and score_samples < len(y):
        pick = torch.randperm(len(y), generator=gen)[:score_samples]
        Xs, ys = X[pick], y[pick]
    else:
        Xs, ys = X, y
    total = model.total_weights()
    record = lambda: {"channels": model.channels(), "fraction": model.remaining_weights() / total,  # noqa: E731
                      "accuracy": evaluate(model, X_test, y_test)[1]}
    history = [record()]
    steps = sum(model.channels()) - 3
    for step in tqdm(range(steps), desc="channel pruning", disable=not progress):
        best = None
        for l, cm in enumerate(model.channel_masks()):
            if cm.sum() <= 1:
                continue
            for c in torch.nonzero(cm).flatten().tolist():
                cm[c] = 0.0
                loss = evaluate(model, Xs, ys)[0]
                cm[c] = 1.0
                if best is None or loss < best[0]:
                    best = (loss, l, c)
        if best is None:
            break
        model.channel_masks()[best[1]][best[2]] = 0.0
        if finetune_epochs:
            train_cnn(model, X, y, finetune_epochs, seed=seed + 1 + step, **sgd)
        history.append(record())
        if history[-1]["accuracy"] < min_accuracy:
            break
    return history
