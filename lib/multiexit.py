"""Chapter 5: distillation-based training of multi-exit networks (Phuong 2021, Ch. 6 and App. E).

A multi-exit network has ``M`` classifier heads ("exits") along a shared trunk. Exit-wise training
(EW, eq. 6.7) averages the per-exit cross-entropies; distillation-based training (D, eqs. 6.1-6.5,
Algorithm 6.1) adds a temperature-scaled cross-entropy from the last exit (the teacher, *detached*) to
every earlier exit (the student path is not detached), with a temperature that is annealed upwards
whenever the tempered teacher is more confident than ``mu``. The semi-supervised variant (DS, eq. 6.6)
applies the distillation term to unlabelled points too.

For speed on a CPU, :class:`MultiExitCNN` holds ``n_models`` independent networks as grouped
convolutions, so that several seeds and both training methods run as one tensor computation; every
model has its own data, initialisation, temperature and loss.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lib import validate as V
from lib.device_step import DeviceSGD, StepRunner, gradients, seeded, step_mode
from lib.scale import ChapterScales, on_device

TEACHER_SETS = ("last", "later")


# --------------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class MultiExitConfig:
    """Every hyper-parameter of the multi-exit chapter (thesis §6.3.1; spec §3.1)."""

    data: str = "digits"          # "digits" (scikit-learn 8x8, offline) or "cifar100" (paper scale)
    n_per_class: int = 15         # DIGITS(X) / CIFAR(X): labelled images per class, validation included
    n_val_per_class: int = 5      # the CIFAR protocol's 50 validation images per class, scaled down
    pool_per_class: int = 100     # digits: per-class pool the subsets (and unlabelled data) come from
    in_ch: int = 1
    widths: tuple = (16, 32, 32, 64)   # one block per exit
    strides: tuple = (1, 2, 1, 2)
    n_classes: int = 10
    topk: int = 1                 # the thesis reports top-5 on 100 classes; top-1 on 10 classes
    epochs: int = 100
    batch_size: int = 64
    lr: float = 0.5               # thesis: 0.5 on the (1/M)-normalised loss
    momentum: float = 0.9
    weight_decay: float = 1e-4
    milestones: tuple = (0.5, 0.75)    # LR / 10 at these fractions of training (150/225 of 300 epochs)
    mu: float = 0.5               # confidence threshold of Algorithm 6.1
    tau_mult: float = 1.05        # temperature multiplier tau_*
    n_seeds: int = 30             # EW and D (quick: 30, so that the mean gains clear their checks with room)
    n_seeds_semi: int = 8         # DS (its seeds are the first EW and D seeds: paired comparisons)
    const_taus: tuple = (1.0, 4.0)     # Fig. 6.7 ablation: constant temperatures
    n_seeds_ablation: int = 1     # seeds for the temperature ablation
    n_seeds_teacher: int = 1      # seeds for the teacher ablation (App. E.1: a difference near zero needs many)
    data_sizes: tuple = ()        # data-size trend: X values (full scale)
    data_size_epochs: tuple = ()  # epochs for each X (larger X: more steps per epoch)
    timing_runs: int = 200        # Table E.1: repetitions per exit

    def __post_init__(self):
        count, rate = V.positive_int, V.positive
        V.config(self, {
            "data": V.one_of("digits", "cifar100"), "n_per_class": count, "n_val_per_class": V.nonnegative_int,
            "pool_per_class": count, "in_ch": count, "widths": V.each(count, min_len=1),
            "strides": V.each(count, min_len=1), "n_classes": lambda v, n: V.integer(v, n, min=2),
            "topk": count, "epochs": count, "batch_size": count, "lr": rate, "momentum": V.fraction,
            "weight_decay": V.nonnegative, "milestones": V.each(lambda v, n: V.fraction(v, n, high_open=False)),
            "mu": lambda v, n: V.real(v, n, min=0.0, max=1.0, min_open=True, max_open=True),
            "tau_mult": lambda v, n: V.real(v, n, min=1.0), "n_seeds": count, "n_seeds_semi": count,
            "const_taus": V.each(rate), "n_seeds_ablation": count, "n_seeds_teacher": count,
            "data_sizes": V.each(count), "data_size_epochs": V.each(count), "timing_runs": count})
        if self.n_val_per_class >= self.n_per_class:
            raise V.ArgumentValueError(f"MultiExitConfig.n_val_per_class must be < n_per_class (some images per "
                                       f"class must be left to train on), got {self.n_val_per_class} and "
                                       f"{self.n_per_class}")
        V.same_size(len(self.strides), "MultiExitConfig.strides", len(self.widths), "MultiExitConfig.widths",
                    "length (one stride per block)")
        V.same_size(len(self.data_size_epochs), "MultiExitConfig.data_size_epochs", len(self.data_sizes),
                    "MultiExitConfig.data_sizes", "length (one number of epochs per data size)")
        if self.topk > self.n_classes:
            raise V.ArgumentValueError(f"MultiExitConfig.topk must be <= n_classes, got {self.topk} and {self.n_classes}")


CONFIGS = ChapterScales(
    "multi_exit",
    quick=MultiExitConfig(),
    full=MultiExitConfig(n_seeds=30, n_seeds_semi=10, const_taus=(1.0, 2.0, 3.0, 4.0), n_seeds_ablation=5,
                         n_seeds_teacher=10, data_sizes=(15, 30, 50, 100), data_size_epochs=(100, 60, 40, 25)),
    paper=MultiExitConfig(data="cifar100", n_per_class=150, n_val_per_class=50, in_ch=3,
                          widths=(32, 64, 64, 128, 128, 256), strides=(1, 2, 1, 2, 1, 2), n_classes=100,
                          topk=5, epochs=300, n_seeds=3, n_seeds_semi=3, const_taus=(1.0, 2.0, 3.0, 4.0),
                          n_seeds_ablation=1, data_sizes=(150, 250, 350, 500),
                          data_size_epochs=(300, 300, 300, 300), timing_runs=1000),
)


# --------------------------------------------------------------------------------------------
# input validation


def _check_logits(logits) -> list:
    if not isinstance(logits, (list, tuple)) or len(logits) == 0:
        raise ValueError("logits must be a non-empty list of per-exit (n, K) tensors")
    shape = None
    for m, z in enumerate(logits):
        if not isinstance(z, torch.Tensor) or not z.is_floating_point():
            raise ValueError(f"exit {m + 1}: logits must be floating-point tensors, got {type(z).__name__}")
        if z.ndim < 2 or z.shape[-1] < 2 or z.shape[-2] == 0:
            raise ValueError(f"exit {m + 1}: logits must have shape (..., n, K) with n >= 1, K >= 2, got {tuple(z.shape)}")
        if shape is not None and z.shape != shape:
            raise ValueError(f"every exit's logits must have the same shape, got {tuple(shape)} and {tuple(z.shape)}")
        if not torch.isfinite(z).all():
            raise ValueError(f"exit {m + 1}: logits contain NaN or infinite values")
        shape = z.shape
    return list(logits)


def _check_tau(tau, lead_shape, name: str = "tau") -> torch.Tensor:
    if not isinstance(tau, torch.Tensor):
        V.array(tau, name, finite=False)  # a number or a numeric array (not a string or None)
    tau = torch.as_tensor(tau, dtype=torch.float32)
    if not torch.isfinite(tau).all() or (tau <= 0).any():
        raise ValueError(f"{name} must be positive and finite, got {tau}")
    try:
        if torch.broadcast_shapes(tau.shape, tuple(lead_shape)) != tuple(lead_shape):
            raise RuntimeError
    except RuntimeError:
        raise ValueError(f"tau of shape {tuple(tau.shape)} does not broadcast to the models' shape {tuple(lead_shape)}") from None
    return tau


def _teacher_sets(M: int, teachers: str) -> list[list[int]]:
    """T(m) of eq. (6.4) for m = 0..M-1 (0-based): 'last' = {M}, 'later' = {m+1..M}; T(M) is empty."""
    if teachers not in TEACHER_SETS:
        raise ValueError(f"teachers must be one of {TEACHER_SETS}, got {teachers!r}")
    if teachers == "last":
        return [[M - 1] if m < M - 1 else [] for m in range(M)]
    return [list(range(m + 1, M)) for m in range(M)]


def _as_array(a, name: str, ndim_min: int = 1) -> np.ndarray:
    """A finite non-empty float64 copy with at least ``ndim_min`` dimensions."""
    a = np.array(V.array(a, name))
    if a.ndim < ndim_min:
        raise V.ArgumentValueError(f"{name} must have at least {ndim_min} dimension(s), got shape {a.shape}")
    return a


# --------------------------------------------------------------------------------------------
# the objective (thesis eqs. 6.1-6.7)


def _check_weights(weights, shape) -> torch.Tensor | None:
    """Per-point weights of shape ``shape`` = ``(..., n)``: finite, non-negative, summing to 1 over n."""
    if weights is None:
        return None
    if not isinstance(weights, torch.Tensor) or not weights.is_floating_point() or weights.shape != shape:
        raise ValueError(f"weights must be a floating-point tensor of shape {tuple(shape)}, got "
                         f"{getattr(weights, 'dtype', type(weights).__name__)} {tuple(getattr(weights, 'shape', ()))}")
    if not torch.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("weights must be finite and non-negative")
    if not torch.allclose(weights.sum(-1), torch.ones((), dtype=weights.dtype), atol=1e-5):
        raise ValueError("weights must sum to 1 over the points of every model")
    return weights


def distillation_loss(logits, tau, teachers: str = "last", weights=None) -> torch.Tensor:
    """Eq. (6.4): (1/M) sum_m mean_{t in T(m)} tau^2 CE(softmax(z_t/tau).detach(), softmax(z_m/tau)).

    ``logits``: list of per-exit tensors of shape ``(n, K)`` (or ``(..., n, K)`` for a batch of models);
    ``tau``: the temperature (a number, or a tensor broadcasting to the leading model dimensions). The
    teacher's tempered output is a constant (detached); the student path keeps its gradient. The
    temperature is applied once to each side (spec pitfall 1). Averaged over the ``n`` points (or, with
    ``weights`` of shape ``(..., n)`` summing to 1, their weighted mean); exits without teachers
    contribute 0 but count in the 1/M normaliser.
    """
    logits = _check_logits(logits)
    M = len(logits)
    weights = _check_weights(weights, logits[0].shape[:-1])
    tau = _check_tau(tau, logits[0].shape[:-2]).to(logits[0].device)
    return _distillation(logits, tau, _teacher_sets(M, teachers), weights)


def _distillation(logits, tau, teacher_sets, weights):
    """Eq. (6.4) of checked arguments (:func:`distillation_loss`): ``tau`` a tensor on the logits' device,
    ``teacher_sets`` from :func:`_teacher_sets`; no host synchronisation (issue 36's device program)."""
    M, tau = len(logits), tau[..., None, None]
    total = torch.zeros(logits[0].shape[:-2], dtype=logits[0].dtype, device=logits[0].device)
    for m, T in enumerate(teacher_sets):
        if not T:
            continue
        log_student = F.log_softmax(logits[m] / tau, dim=-1)
        for t in T:
            teacher = F.softmax(logits[t].detach() / tau, dim=-1)
            per_point = -(teacher * log_student).sum(-1)
            ce = per_point.mean(-1) if weights is None else (weights * per_point).sum(-1)
            total = total + (tau[..., 0, 0] ** 2) * ce / len(T)
    return total / M


def multiexit_objective(logits, y, distill, tau=1.0, teachers: str = "last", dist_weights=None) -> torch.Tensor:
    """Eqs. (6.1)/(6.6)/(6.7): (1/M) sum_m CE over labelled points + ``distill`` x eq. (6.4) over all points.

    ``y``: labels of shape ``(..., n)``, ``-100`` for unlabelled points (semi-supervised, eq. 6.6: the CE
    is a mean over labelled points, the distillation a mean over all, or a weighted mean with
    ``dist_weights``, see :func:`distillation_loss`). ``distill``: 0/1 (or a tensor per model); 0 gives
    the exit-wise baseline (6.7).
    """
    logits = _check_logits(logits)
    if not isinstance(y, torch.Tensor) or y.dtype != torch.int64 or y.shape != logits[0].shape[:-1]:
        raise ValueError(f"y must be an int64 tensor of shape {tuple(logits[0].shape[:-1])}, got "
                         f"{getattr(y, 'dtype', type(y).__name__)} {tuple(getattr(y, 'shape', ()))}")
    K = logits[0].shape[-1]
    labelled = y != -100
    if ((y < 0) & labelled).any() or (y >= K).any():
        raise ValueError(f"y: labels must be in 0..{K - 1} (or -100 for unlabelled points)")
    if not labelled.any(-1).all():
        raise ValueError("every model needs at least one labelled point in the batch")
    weights = torch.as_tensor(distill)  # checked where it is (the trainer's is on the CPU: no device sync)
    if not bool((torch.isfinite(weights) & (weights >= 0)).all()):  # a NaN weight made the whole loss NaN
        raise V.ArgumentValueError(f"distill must be finite and >= 0 (0/1, or one weight per model), got {weights}")
    distill = torch.as_tensor(distill, dtype=logits[0].dtype, device=logits[0].device)
    ce = _exit_wise(logits, y)
    if not (distill != 0).any():
        return ce
    return ce + distill * distillation_loss(logits, tau, teachers, dist_weights)


def _exit_wise(logits, y):
    """Eq. (6.7) of checked arguments (:func:`multiexit_objective`): the mean over exits of each exit's CE over
    the labelled points; no host synchronisation (issue 36's device program)."""
    K, count = logits[0].shape[-1], (y != -100).sum(-1).to(logits[0].dtype)
    return sum(F.cross_entropy(z.reshape(-1, K), y.reshape(-1), reduction="none", ignore_index=-100)
               .reshape(y.shape).sum(-1) / count for z in logits) / len(logits)


def _anneal(zs, tau, active, mu, mult):
    """Algorithm 6.1's annealing check on teacher logits ``zs`` (each ``(n_models, n, K)``): the batch-mean max
    probability of the averaged teachers, plain (``conf``) and tempered (``adj``), and the temperatures after
    the check (tau * mult where ``active`` and adj > mu). Shared by :class:`TemperatureAnnealer` (host) and
    :func:`multiexit_step` (device program; no host synchronisation)."""
    conf = (sum(F.softmax(z, -1) for z in zs) / len(zs)).max(-1).values.mean(-1)
    adj = (sum(F.softmax(z / tau[:, None, None], -1) for z in zs) / len(zs)).max(-1).values.mean(-1)
    return conf, adj, torch.where(active & (adj > mu), tau * mult, tau)


class TemperatureAnnealer:
    """Temperature annealing of Algorithm 6.1: tau <- tau * mult whenever the batch-mean max probability
    of the tempered teacher, softmax(z_teacher / tau), exceeds ``mu``. tau never decreases.

    Holds one temperature per model (``n_models``); ``active`` (bool per model) switches annealing off
    for models trained at a constant temperature. Logs, per step, the raw teacher confidence (tau = 1),
    the temperature-adjusted confidence and tau (the three curves of Fig. 6.6).
    """

    def __init__(self, mu: float = 0.5, mult: float = 1.05, tau0=1.0, n_models: int = 1, active=True):
        mu = V.real(mu, "mu", min=0.0, max=1.0, min_open=True, max_open=True)
        mult = V.real(mult, "mult", min=1.0)
        n_models = V.positive_int(n_models, "n_models")
        if not 0 < mu < 1:
            raise ValueError(f"mu must be in (0, 1), got {mu!r}")
        if not mult >= 1 or not np.isfinite(mult):
            raise ValueError(f"mult must be a finite number >= 1 (tau never decreases), got {mult!r}")
        self.mu, self.mult = float(mu), float(mult)
        self.tau = _check_tau(tau0, (n_models,), "tau0").expand(n_models).clone()
        flags = V.array(active, "active", dtype=None, nonempty=False)
        if flags.shape not in ((), (n_models,)) or not np.isin(flags, (0, 1)).all():
            raise V.ArgumentValueError(f"active must be a bool or one bool (or 0/1) per model (n_models = "
                                       f"{n_models}), got {V.describe(active)}")
        self.active = torch.as_tensor(active, dtype=torch.bool).expand(n_models).clone()
        self.log = {"conf": [], "adj_conf": [], "tau": []}

    def step(self, teacher_logits) -> torch.Tensor:
        """One check per batch. ``teacher_logits``: ``(n, K)`` or ``(n_models, n, K)`` (the teachers' logits,
        averaged as probabilities when a list is given). Returns the temperatures for the next step."""
        zs = teacher_logits if isinstance(teacher_logits, (list, tuple)) else [teacher_logits]
        zs = [z.detach().float().cpu() for z in _check_logits(zs)]
        if zs[0].ndim == 2:
            zs = [z[None] for z in zs]
        if zs[0].shape[0] != len(self.tau):
            raise ValueError(f"expected logits for {len(self.tau)} models, got {zs[0].shape[0]}")
        conf, adj, new_tau = _anneal(zs, self.tau, self.active, self.mu, self.mult)
        self.log["conf"].append(conf.numpy().copy())
        self.log["adj_conf"].append(adj.numpy().copy())
        self.log["tau"].append(self.tau.numpy().copy())
        self.tau = new_tau
        return self.tau

    def history(self) -> dict:
        """The logged curves as arrays of shape ``(steps, n_models)``."""
        return {k: np.array(v) for k, v in self.log.items()}


# --------------------------------------------------------------------------------------------
# the network


class MultiExitCNN(nn.Module):
    """``n_models`` independent multi-exit CNNs (spec §3.1): stem ConvBNReLU, then one ConvBNReLU block
    per exit (``widths``, ``strides``); exit m = global average pooling + linear layer after block m.

    The models are grouped convolutions (``groups=n_models``), so each has its own weights and batch-norm
    statistics; ``seeds`` (one per model) fixes each model's initialisation (PyTorch's default uniform
    +-1/sqrt(fan_in)), so a model equals the same seed's model in any group. Input ``(n_models, B, C, H, W)``
    (each model its own batch) or ``(B, C, H, W)`` (the same batch for all); output: list of ``M`` logits
    tensors of shape ``(n_models, B, K)``.
    """

    def __init__(self, in_ch: int = 1, widths=(16, 32, 32, 64), strides=(1, 2, 1, 2), n_classes: int = 10,
                 seeds=(0,)):
        super().__init__()
        widths = tuple(V.positive_int(w, "widths[i]") for w in V.sequence(widths, "widths"))
        strides = tuple(V.positive_int(st, "strides[i]") for st in V.sequence(strides, "strides"))
        seeds = [V.seed(sd, "seeds[i]") for sd in V.sequence(seeds, "seeds")]
        in_ch, n_classes = V.positive_int(in_ch, "in_ch"), V.integer(n_classes, "n_classes", min=2)
        if not widths or len(widths) != len(strides) or any(w < 1 for w in widths) or any(s < 1 for s in strides):
            raise ValueError(f"widths and strides must be equally long lists of positive ints, got {widths}, {strides}")
        if in_ch < 1 or n_classes < 2 or not seeds:
            raise ValueError(f"need in_ch >= 1, n_classes >= 2 and at least one seed, got {in_ch}, {n_classes}, {seeds}")
        S = self.n_models = len(seeds)
        self.in_ch, self.n_classes, self.n_exits = in_ch, n_classes, len(widths)
        chans = (widths[0],) + widths
        blocks = [self._conv_bn(in_ch, widths[0], 1)]
        blocks += [self._conv_bn(chans[i], chans[i + 1], strides[i]) for i in range(len(widths))]
        self.blocks = nn.ModuleList(blocks)
        self.head_w = nn.ParameterList([nn.Parameter(torch.empty(S, w, n_classes)) for w in widths])
        self.head_b = nn.ParameterList([nn.Parameter(torch.empty(S, n_classes)) for _ in widths])
        self._init(seeds, chans)

    device_program = False  # True while lib.device_step's path trains it (issue 36): no per-batch input check

    def _conv_bn(self, cin, cout, stride):
        S = self.n_models
        return nn.Sequential(nn.Conv2d(S * cin, S * cout, 3, stride, 1, groups=S, bias=False),
                             nn.BatchNorm2d(S * cout), nn.ReLU())

    @torch.no_grad()
    def _init(self, seeds, chans):
        for i, s in enumerate(seeds):
            g = torch.Generator().manual_seed(s)
            uni = lambda shape, fan_in: (torch.rand(shape, generator=g) * 2 - 1) / fan_in ** 0.5  # noqa: E731
            for block in self.blocks:
                w = block[0].weight
                cout = w.shape[0] // self.n_models
                w[i * cout:(i + 1) * cout] = uni((cout, *w.shape[1:]), w[0].numel())
            for hw, hb in zip(self.head_w, self.head_b):
                hw[i] = uni(hw.shape[1:], hw.shape[1])
                hb[i] = uni(hb.shape[1:], hw.shape[1])

    def _stack(self, x):
        S = self.n_models
        if x.ndim == 4:
            x = x.unsqueeze(0).expand(S, *x.shape)
        if x.ndim != 5 or x.shape[0] != S or x.shape[2] != self.in_ch or x.shape[1] == 0:
            raise ValueError(f"input must be (B, {self.in_ch}, H, W) or ({S}, B, {self.in_ch}, H, W), got {tuple(x.shape)}")
        if not self.device_program and not torch.isfinite(x).all():  # (the device program checked X once)
            raise ValueError("input contains NaN or infinite values")
        B = x.shape[1]
        return x.transpose(0, 1).reshape(B, S * self.in_ch, *x.shape[3:])

    def _head(self, h, m):
        B, SC = h.shape[:2]
        pooled = h.mean((2, 3)).reshape(B, self.n_models, SC // self.n_models).transpose(0, 1)
        return torch.baddbmm(self.head_b[m][:, None, :], pooled, self.head_w[m])

    def forward_until(self, x, k: int, heads: str = "all"):
        """Evaluate the trunk up to block ``k`` and the exits 1..k (``heads="all"``, anytime mode) or only
        exit k (``heads="last"``, budget mode); returns the list of computed logits."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= self.n_exits:
            raise ValueError(f"k must be an int in 1..{self.n_exits}, got {k!r}")
        k = int(k)
        if heads not in ("all", "last"):
            raise ValueError(f"heads must be 'all' or 'last', got {heads!r}")
        h = self.blocks[0](self._stack(x))
        out = []
        for m in range(k):
            h = self.blocks[m + 1](h)
            if heads == "all" or m == k - 1:
                out.append(self._head(h, m))
        return out

    def forward(self, x):
        return self.forward_until(x, self.n_exits)


# --------------------------------------------------------------------------------------------
# data (the CIFAR(X) protocol of §6.3.1, on digits)


@functools.lru_cache(maxsize=1)
def _digits():
    from sklearn.datasets import load_digits

    digits = load_digits()
    return digits.images.astype(np.float32), digits.target


def digits_protocol(n_per_class: int, n_val_per_class: int, seed: int, pool_per_class: int = 100) -> dict:
    """DIGITS(X), the CIFAR(X) protocol of thesis §6.3.1 on scikit-learn's digits (spec §3.1).

    A fixed test set (every digit outside a per-class pool of ``pool_per_class`` images, chosen once
    with RandomState(12345)); per ``seed``, X = ``n_per_class`` pool images per class, of which
    ``n_val_per_class`` for validation, and the rest of the pool as unlabelled data. Images are
    standardised with the training set's scalar mean and std. Returns tensors ``train=(X, y)``,
    ``val=(X, y)``, ``unl=X``, ``test=(X, y)`` with images of shape ``(n, 1, 8, 8)``.
    """
    pool_per_class, seed = V.positive_int(pool_per_class, "pool_per_class"), V.seed(seed)
    n_per_class = V.positive_int(n_per_class, "n_per_class")
    n_val_per_class = V.positive_int(n_val_per_class, "n_val_per_class")
    if not (V.is_int(n_per_class) and V.is_int(n_val_per_class)
            and 1 <= n_val_per_class < n_per_class <= pool_per_class):
        raise ValueError("need ints 1 <= n_val_per_class < n_per_class <= pool_per_class, got "
                         f"{n_val_per_class}, {n_per_class}, {pool_per_class}")
    X, y = _digits()
    fixed = np.random.RandomState(12345)
    pools = [fixed.permutation(np.flatnonzero(y == c))[:pool_per_class] for c in range(10)]
    if min(len(p) for p in pools) < pool_per_class:
        raise ValueError(f"pool_per_class={pool_per_class} exceeds the smallest class of digits")
    test = np.setdiff1d(np.arange(len(y)), np.concatenate(pools))
    rng = np.random.RandomState(seed)
    parts = {"train": [], "val": [], "unl": []}
    for p in pools:
        p = rng.permutation(p)
        parts["val"].append(p[:n_val_per_class])
        parts["train"].append(p[n_val_per_class:n_per_class])
        parts["unl"].append(p[n_per_class:])
    idx = {k: np.concatenate(v) for k, v in parts.items()}
    mean, std = X[idx["train"]].mean(), X[idx["train"]].std()
    img = lambda i: torch.from_numpy((X[i] - mean) / std).unsqueeze(1)  # noqa: E731
    lab = lambda i: torch.from_numpy(y[i]).long()  # noqa: E731
    return {"train": (img(idx["train"]), lab(idx["train"])), "val": (img(idx["val"]), lab(idx["val"])),
            "unl": img(idx["unl"]), "test": (img(test), lab(test))}


def cifar100_protocol(n_per_class: int, n_val_per_class: int, seed: int) -> dict:
    """CIFAR(X) of thesis §6.3.1 (paper scale, downloads CIFAR-100): X training images per class from the
    official training set, ``n_val_per_class`` of them for validation, the rest of the 500 per class as
    unlabelled data, the official test set; same keys as :func:`digits_protocol`."""
    from lib.data import load_online

    split = load_online("cifar100")
    y = split.y_train.numpy()
    rng = np.random.RandomState(seed)
    parts = {"train": [], "val": [], "unl": []}
    for c in range(100):
        p = rng.permutation(np.flatnonzero(y == c))
        parts["val"].append(p[:n_val_per_class])
        parts["train"].append(p[n_val_per_class:n_per_class])
        parts["unl"].append(p[n_per_class:])
    idx = {k: torch.from_numpy(np.concatenate(v)) for k, v in parts.items()}
    mean = split.X_train[idx["train"]].mean((0, 2, 3), keepdim=True)
    std = split.X_train[idx["train"]].std((0, 2, 3), keepdim=True)
    norm = lambda t: (t - mean) / std  # noqa: E731
    return {"train": (norm(split.X_train[idx["train"]]), split.y_train[idx["train"]]),
            "val": (norm(split.X_train[idx["val"]]), split.y_train[idx["val"]]),
            "unl": norm(split.X_train[idx["unl"]]), "test": (norm(split.X_test), split.y_test)}


# --------------------------------------------------------------------------------------------
# training (Algorithm 6.1)


def _training_arguments(model, X, y, distill, cfg, const_tau, teachers, X_unl, order_seeds):
    """Check :func:`train_multiexit`'s arguments once; returns ``distill`` (one bool per model), the
    per-model constant temperatures (``None``: annealing) and the per-model batch-order seeds."""
    V.instance(model, "model", MultiExitCNN)
    V.instance(cfg, "cfg", MultiExitConfig)
    V.tensor(X, "X", floating=True)
    V.tensor(y, "y", floating=False)
    V.choice(teachers, "teachers", TEACHER_SETS)
    if X_unl is not None:
        V.tensor(X_unl, "X_unl", floating=True)
    if not isinstance(distill, (bool, list, tuple, np.ndarray, torch.Tensor)):
        raise V.ArgumentTypeError(f"distill must be a bool or one bool per model, got {V.describe(distill)}")
    S, n = model.n_models, X.shape[1] if X.ndim == 5 else 0
    if X.ndim != 5 or X.shape[0] != S or n == 0 or y.shape != (S, n) or y.dtype != torch.int64:
        raise ValueError(f"need X of shape ({S}, n, C, H, W) and int64 y of shape ({S}, n), got "
                         f"{tuple(X.shape)}, {tuple(y.shape)} {y.dtype}")
    V.labels(y, "y", model.n_classes)
    if X_unl is not None and (X_unl.ndim != 5 or X_unl.shape[0] != S or X_unl.shape[1] == 0):
        raise ValueError(f"X_unl must have shape ({S}, n_u, C, H, W), got {tuple(X_unl.shape)}")
    distill = torch.as_tensor(distill, dtype=torch.bool).expand(S)
    const_tau = [None] * S if const_tau is None else list(const_tau)
    if len(const_tau) != S:
        raise ValueError(f"const_tau needs one entry per model ({S}), got {len(const_tau)}")
    order_seeds = list(range(S)) if order_seeds is None else [int(s) for s in order_seeds]
    if len(order_seeds) != S:
        raise ValueError(f"order_seeds needs one entry per model ({S}), got {len(order_seeds)}")
    return distill, const_tau, order_seeds


def _optimiser(model: MultiExitCNN, cfg: MultiExitConfig, total: int):
    """The optimiser of thesis §6.3.1: SGD with Nesterov momentum and weight decay, the learning rate
    divided by 10 at the fractions ``cfg.milestones`` of the ``total`` training steps."""
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=True,
                          weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [int(f * total) for f in cfg.milestones], 0.1)
    return opt, sched


def _add_unlabelled(xb, yb, X_unl, rows, gens, n: int, dev):
    """Eq. (6.6) on a batch: append to every model's labelled batch as many of its unlabelled images
    (drawn with replacement from its generator) with label -100, and the distillation weights that give
    the batch's labelled points the total weight n/N' and its unlabelled points n_u/N' (N' = n + n_u)."""
    S, b = yb.shape
    u = torch.stack([torch.randint(X_unl.shape[1], (b,), generator=g) for g in gens]).to(dev)
    xb = torch.cat([xb, X_unl[rows, u]], 1)
    yb = torch.cat([yb, torch.full_like(yb, -100)], 1)
    share_unl = X_unl.shape[1] / (n + X_unl.shape[1])  # eq. (6.6): (n_u)/N'
    weights = torch.cat([torch.full((S, b), (1 - share_unl) / b, device=dev),
                         torch.full((S, b), share_unl / b, device=dev)], 1)
    return xb, yb, weights


def _training_step(model, opt, sched, annealer, xb, yb, distill, teachers, weights, teacher_ids):
    """One step of Algorithm 6.1 for every model: the loss of eq. (6.1)/(6.6)/(6.7) at the current
    temperatures (summed over the models, whose parameters are disjoint), an SGD step, a step of the
    learning-rate schedule and one annealing check on the teachers' logits. Returns the loss."""
    logits = model(xb)
    loss = multiexit_objective(logits, yb, distill.to(logits[0].dtype), annealer.tau, teachers, weights).sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    annealer.step([logits[t] for t in teacher_ids])
    return loss


def train_multiexit(model: MultiExitCNN, X, y, distill, cfg: MultiExitConfig, *, const_tau=None,
                    teachers: str = "last", X_unl=None, order_seeds=None, progress: bool = True, desc: str = ""):
    """Train every model of ``model`` with SGD (Nesterov, step LR) on eq. (6.7) or (6.1)/(6.6).

    ``X``: ``(n_models, n, C, H, W)``, ``y``: ``(n_models, n)``, each model's own training set.
    ``distill``: bool per model (False = exit-wise baseline). ``const_tau``: per model ``None``
    (annealing, Algorithm 6.1) or a constant temperature. ``X_unl``: per-model unlabelled images
    ``(n_models, n_u, ...)``: if given, each batch adds as many unlabelled images (drawn with
    replacement) as labelled ones, and the distillation term covers both with the weights of eq. (6.6),
    which averages it over all N' = n + n_u points: the batch's labelled points share the weight n/N'
    and its unlabelled points (n_u)/N', so that the batch loss estimates (6.6) without bias although
    half of the batch is labelled. An epoch is one pass
    over the labelled data. ``order_seeds`` (one int per model, default the model index) seeds each
    model's batch order: models compared in pairs (EW vs D on the same seed) share it, so that their
    difference is due to the objective alone. Returns the :class:`TemperatureAnnealer` (its log holds
    Fig. 6.6's curves). Chapter 5 trains every model of the chapter with it.
    """
    from tqdm.auto import tqdm

    distill, const_tau, order_seeds = _training_arguments(model, X, y, distill, cfg, const_tau, teachers,
                                                          X_unl, order_seeds)
    S, n = model.n_models, X.shape[1]
    tau0 = [1.0 if t is None else float(t) for t in const_tau]
    annealer = TemperatureAnnealer(cfg.mu, cfg.tau_mult, tau0, S, active=[t is None for t in const_tau])
    steps_per_epoch = -(-n // cfg.batch_size)
    total = cfg.epochs * steps_per_epoch
    opt, sched = _optimiser(model, cfg, total)
    gens = [torch.Generator().manual_seed(s) for s in order_seeds]
    teacher_ids = sorted({t for T in _teacher_sets(model.n_exits, teachers) for t in T})
    # REPRO_DEVICE (lib.scale.on_device): the CPU at quick and full scale, CUDA at paper scale where there
    # is one; the model goes back to where it was after training, also when it fails
    with on_device(model) as dev:
        if step_mode(dev) != "host":  # issue 36: CUDA's path, a device program
            _train_program(model, X.to(dev), y.to(dev), distill, cfg, teachers, X_unl, annealer, order_seeds,
                           step_mode(dev))
            model.eval()
            return annealer
        X, y = X.to(dev), y.to(dev)
        X_unl = None if X_unl is None else X_unl.to(dev)
        rows = torch.arange(S)[:, None].to(dev)
        model.train()
        bar = tqdm(total=total, desc=desc or "training", disable=not progress, leave=False)
        for epoch in range(cfg.epochs):
            perm = torch.stack([torch.randperm(n, generator=g) for g in gens])
            for b in range(steps_per_epoch):
                idx = perm[:, b * cfg.batch_size:(b + 1) * cfg.batch_size].to(dev)
                xb, yb, weights = X[rows, idx], y[rows, idx], None
                if X_unl is not None:
                    xb, yb, weights = _add_unlabelled(xb, yb, X_unl, rows, gens, n, dev)
                loss = _training_step(model, opt, sched, annealer, xb, yb, distill, teachers, weights, teacher_ids)
                bar.update()
            V.finite_loss(loss.detach(), f"{epoch + 1} (epoch)", cfg.lr)  # the epoch's last batch
        bar.close()
    model.eval()
    return annealer


def multiexit_step(model: MultiExitCNN, X, y, distill, cfg: MultiExitConfig, teachers: str, annealer, batch,
                   lr, log, X_unl=None):
    """One step of Algorithm 6.1 for every model as a device program (:mod:`lib.device_step`, issue 36), what
    :func:`_training_step` does on the host: the minibatch rows ``batch[0]`` (an ``(S, b)`` long tensor the host
    refills between steps), the loss at the temperatures ``annealer.tau`` (a tensor on the device, updated in
    place), a Nesterov SGD step at the rate ``lr`` (a 0-d tensor: the schedule changes it), and the annealing
    check, whose confidences and temperature go to row ``log[1]`` of ``log[0]`` (``(3, steps, S)``) on the device.
    Unlabelled images (eq. 6.6) are drawn on the device. Returns ``step()`` -> the loss (0-d tensor)."""
    S, n, dev = model.n_models, X.shape[1], X.device
    params, rows = list(model.parameters()), torch.arange(S, device=dev)[:, None]
    opt = DeviceSGD(params, lr, cfg.momentum, cfg.weight_decay, nesterov=True)
    sets = _teacher_sets(model.n_exits, teachers)
    teacher_ids = sorted({t for T in sets for t in T})
    distill = torch.as_tensor(distill, dtype=X.dtype).to(dev)
    active, buf, at = annealer.active.to(dev), log[0], log[1]

    def step():
        idx = batch[0]
        xb, yb, weights = X[rows, idx], y[rows, idx], None
        if X_unl is not None:
            share = X_unl.shape[1] / (n + X_unl.shape[1])  # eq. (6.6), as _add_unlabelled
            xb = torch.cat([xb, X_unl[rows, torch.randint(X_unl.shape[1], idx.shape, device=dev)]], 1)
            yb = torch.cat([yb, torch.full_like(yb, -100)], 1)
            weights = torch.cat([torch.full(idx.shape, (1 - share) / idx.shape[1], device=dev),
                                 torch.full(idx.shape, share / idx.shape[1], device=dev)], 1)
        logits = model(xb)
        loss = (_exit_wise(logits, yb) + distill * _distillation(logits, annealer.tau, sets, weights)).sum()
        opt.update(gradients(loss, params))
        with torch.no_grad():  # TemperatureAnnealer.step on the device
            conf, adj, new_tau = _anneal([logits[t].detach().float() for t in teacher_ids], annealer.tau, active,
                                         annealer.mu, annealer.mult)
            buf.index_copy_(1, at, torch.stack([conf, adj, annealer.tau])[:, None])
            at.add_(1)
            annealer.tau.copy_(new_tau)
        return loss.detach()
    return step


def _train_program(model, X, y, distill, cfg, teachers, X_unl, annealer, order_seeds, mode):
    """:func:`train_multiexit`'s loop on CUDA (``mode`` from :func:`lib.device_step.step_mode`): every epoch one
    permutation per model drawn on the device (seeded ``order_seeds[0]``; not the host loop's CPU generators, so
    a CUDA run's batches differ from a CPU run's), full batches replayed as a CUDA graph of
    :func:`multiexit_step` (a shorter last batch runs eagerly), the rate divided by 10 at the milestones, the
    annealing log brought home at the end."""
    S, n, bs, dev = model.n_models, X.shape[1], cfg.batch_size, X.device
    spe = -(-n // bs)
    total = cfg.epochs * spe
    milestones = [int(f * total) for f in cfg.milestones]
    lr = torch.full((), float(cfg.lr), device=dev)
    batch, log = [torch.zeros(S, bs, dtype=torch.long, device=dev)], (torch.zeros(3, total, S, device=dev),
                                                                       torch.zeros(1, dtype=torch.long, device=dev))
    annealer.tau = annealer.tau.to(dev)
    full_batch = batch[0]
    model.device_program, benchmark = True, torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True  # fixed shapes: cuDNN times its grouped convolutions once, in the warm-up
    model.train()
    try:
        with seeded(dev, order_seeds[0]):
            step = multiexit_step(model, X, y, distill, cfg, teachers, annealer, batch, lr, log,
                                  None if X_unl is None else X_unl.to(dev))
            runner = StepRunner(step, mode)
            for epoch in range(cfg.epochs):
                perm = torch.rand(S, n, device=dev).argsort(1)
                for b in range(spe):
                    if epoch * spe + b in milestones:  # MultiStepLR: /10 from each milestone on
                        lr.mul_(0.1 ** milestones.count(epoch * spe + b))
                    rows = perm[:, b * bs:(b + 1) * bs]
                    if rows.shape[1] == bs:
                        full_batch.copy_(rows)
                        loss = runner.run(1)
                    else:
                        batch[0] = rows
                        loss = step()
                        batch[0] = full_batch
                V.finite_loss(loss, f"{epoch + 1} (epoch)", cfg.lr)  # the epoch's last batch (one sync per epoch)
    finally:
        model.device_program, torch.backends.cudnn.benchmark = False, benchmark
    conf, adj, tau = log[0].cpu().numpy()
    annealer.log = {"conf": list(conf), "adj_conf": list(adj), "tau": list(tau)}
    annealer.tau = annealer.tau.cpu()


# --------------------------------------------------------------------------------------------
# evaluation: per exit, budget mode, anytime mode (§6.2.2)


@torch.no_grad()
def exit_probs(model: MultiExitCNN, X) -> np.ndarray:
    """Softmax outputs (tau = 1) of every exit, in eval mode: array ``(n_models, M, n, K)``. ``X``:
    ``(n, C, H, W)`` (the same images for every model) or ``(n_models, n, C, H, W)`` (each model its own,
    e.g. standardised with its own training statistics)."""
    V.instance(model, "model", MultiExitCNN)
    V.tensor(X, "X", floating=True)
    if X.ndim not in (4, 5):
        raise V.ArgumentValueError(f"X must have shape (n, C, H, W) or (n_models, n, C, H, W), got {tuple(X.shape)}")
    if X.ndim == 5 and X.shape[0] != model.n_models:
        raise V.ArgumentValueError(f"X of shape (n_models, n, C, H, W) must hold one batch per model of model "
                                   f"({model.n_models}), got {tuple(X.shape)}")
    model.eval()
    X = X.to(next(model.parameters()).device)
    return np.stack([F.softmax(z, -1).cpu().numpy() for z in model(X)], axis=1)


def _topk_correct(probs: np.ndarray, y: np.ndarray, topk: int) -> np.ndarray:
    top = np.argsort(-probs, axis=-1, kind="stable")[..., :topk]
    return (top == y[..., None]).any(-1)


def _check_probs(probs, y, topk):
    """``probs`` ``(..., M, n, K)`` with every entry a probability in [0, 1] (softmax outputs: a negative
    "probability" or one above 1 is a bug upstream, e.g. logits passed for probabilities), ``y`` integer
    labels of length n, ``topk`` in 1..K. Rows need not sum to 1 exactly (only ranks and averages are used)."""
    probs = _as_array(probs, "probs", 3)
    if (probs < 0).any() or (probs > 1).any():
        raise V.ArgumentValueError(f"probs must be probabilities in [0, 1], got values from {probs.min():.4g} "
                                   f"to {probs.max():.4g}")
    y = V.array(y, "y", dtype=None)
    if y.ndim != 1 or y.shape[0] != probs.shape[-2] or not np.issubdtype(y.dtype, np.integer):
        raise V.ArgumentValueError(f"y must be an integer vector of length {probs.shape[-2]} (the n of probs "
                                   f"(..., M, n, K)), got {y.dtype} {y.shape}")
    if (y < 0).any() or (y >= probs.shape[-1]).any():
        raise ValueError(f"y: labels must be in 0..{probs.shape[-1] - 1}")
    if not V.is_int(topk) or not 1 <= topk <= probs.shape[-1]:
        raise ValueError(f"topk must be an int in 1..{probs.shape[-1]}, got {topk!r}")
    return probs, y


def per_exit_accuracy(probs, y, topk: int = 1) -> np.ndarray:
    """Accuracy (%) of each exit: ``probs`` ``(..., M, n, K)`` -> ``(..., M)``."""
    probs, y = _check_probs(probs, y, topk)
    return 100.0 * _topk_correct(probs, y, topk).mean(-1)


def budget_mode_accuracy(val_acc, test_acc) -> np.ndarray:
    """Budget mode (§6.2.2): for every budget k, the test accuracy of the exit with the best validation
    accuracy among exits 1..k (ties: the earliest). Shapes ``(..., M)`` -> ``(..., M)``."""
    val_acc, test_acc = _as_array(val_acc, "val_acc"), _as_array(test_acc, "test_acc")
    if val_acc.shape != test_acc.shape:
        raise ValueError(f"val_acc and test_acc must have the same shape, got {val_acc.shape} and {test_acc.shape}")
    M = val_acc.shape[-1]
    best = np.stack([np.argmax(val_acc[..., :k], axis=-1) for k in range(1, M + 1)], axis=-1)
    return np.take_along_axis(test_acc, best, axis=-1)


def anytime_mode_accuracy(probs, y, topk: int = 1) -> np.ndarray:
    """Anytime mode (§6.2.2): accuracy (%) of the average of the first k exits' probabilities, for every
    k. ``probs`` ``(..., M, n, K)`` (softmax at tau = 1), ``y`` ``(n,)`` -> ``(..., M)``."""
    probs, y = _check_probs(probs, y, topk)
    M = probs.shape[-3]
    ensembles = np.cumsum(probs, axis=-3) / np.arange(1, M + 1)[:, None, None]
    return 100.0 * _topk_correct(ensembles, y, topk).mean(-1)


def mean_ci95(a, axis: int = 0):
    """Mean and 1.96 x standard error along ``axis`` (the thesis' "±"); needs at least two values."""
    a = _as_array(a, "a")
    axis = V.integer(axis, "axis", min=-a.ndim, max=a.ndim - 1)  # numpy's negative axes allowed
    n = a.shape[axis]
    if n < 2:
        raise ValueError(f"need at least two values along axis {axis} for an interval, got {n}")
    return a.mean(axis), 1.96 * a.std(axis, ddof=1) / np.sqrt(n)


@torch.no_grad()
def time_inference(model: MultiExitCNN, x, mode: str, k: int, n_runs: int = 200):
    """Table E.1: wall time (s) of one prediction with budget k: mean, std and median over ``n_runs``
    (the median is less sensitive than the mean to a few slow calls, but other processes on a shared
    machine still move it).

    Budget mode computes the trunk up to block k and exit k only; anytime mode computes exits 1..k and
    averages their probabilities.
    """
    V.instance(model, "model", MultiExitCNN)
    V.tensor(x, "x", floating=True, ndim=4)
    V.choice(mode, "mode", ("budget", "anytime"))
    if not V.is_int(n_runs) or n_runs < 2:
        raise ValueError(f"n_runs must be an int >= 2, got {n_runs!r}")
    model.eval()
    times = []
    for _ in range(n_runs + 1):
        t0 = time.perf_counter()
        if mode == "budget":
            F.softmax(model.forward_until(x, k, heads="last")[0], -1)
        else:
            torch.stack([F.softmax(z, -1) for z in model.forward_until(x, k)]).mean(0)
        times.append(time.perf_counter() - t0)
    times = np.array(times[1:])  # the first call warms up
    return float(times.mean()), float(times.std()), float(np.median(times))
