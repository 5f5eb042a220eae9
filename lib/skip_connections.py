"""Skip connections from hidden neurons to the output (chapter 10, section C; Nguyen 2019, Ch. 4 =
Nguyen, Mukkamala & Hein, ICLR 2019).

A base network (an MLP, :class:`SkipMLP`, or a CNN, :class:`SkipCNN`) keeps its own output layer, and
``M`` hidden neurons drawn uniformly from the pool of *all* its hidden neurons (any layer; the index is
fixed per seed and stored as a buffer) feed the ``m`` outputs through extra weights ``V`` (``M x m``,
zero at initialisation: our choice, so the initial outputs are those of the base net). Stacked over the
``N`` training samples, the skip neurons' outputs form the matrix Psi of eq. (4.1), ``Psi_ij = f_{p_j}(x_i)``,
and the output is ``G = F_{L-1} W_L^T + b_L + Psi V``. Lemma 4.3.2: for analytic, strictly increasing,
bounded activations (sigmoid) or softplus (4.2), ``rank Psi(U) = N`` for almost every ``U`` once ``M >= N``;
then (Thm 4.3.4) the loss has no bad local valleys, and fixing ``U`` and solving ``Psi V = Y`` fits any
labels ("rand", :func:`exact_readout`).

Both models carry a leading model axis: ``forward`` returns ``(n_models, n, m)``, so one
:func:`train_sgd` call (SGD + Nesterov momentum, lr divided by 10 at 50 % and 75 % of the epochs, as in
§4.4) trains several seeds or skip counts of :class:`SkipMLP` as batched matrix products. Ranks use the
Numerical-Recipes rule of :func:`lib.landscape.nr_rank`; losses the per-model cross-entropy of
:mod:`lib.train`. :func:`plane_losses` evaluates the loss on a random plane through a trained net (Fig.
4.4), all grid points at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from lib import validate as V
from lib.landscape import nr_rank
from lib.nets import _stacked_forward
from lib.train import History, _cross_entropy_per_model, cross_entropy_per_model

ACTIVATIONS = ("sigmoid", "softplus")
TRAIN_WHAT = ("all", "readout")

# Table 4.1 (CNN13 for MNIST) and the VGGs of Table 4.3 (FC layers shrunk from 4096 to 128) as layer
# lists: ("conv", channels, kernel, stride) with "same" padding, ("pool",) a 2x2 max-pool, ("fc", width).
CNN13 = (("conv", 64, 3, 1), ("conv", 64, 3, 1), ("conv", 64, 3, 2), ("conv", 128, 3, 1), ("conv", 128, 3, 1),
         ("conv", 128, 3, 2), ("conv", 256, 3, 1), ("conv", 256, 1, 1), ("conv", 256, 3, 2), ("conv", 256, 3, 1),
         ("conv", 256, 3, 2), ("conv", 256, 3, 1), ("conv", 256, 3, 2))
_VGG = {11: (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
        13: (64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
        16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")}


def vgg_layers(depth: int, mp2conv: bool = False, fc: int = 128) -> tuple:
    """VGG11/13/16 for CIFAR-10 as a layer list (Table 4.3: the two FC layers have ``fc`` = 128 units).
    ``mp2conv`` replaces every max-pool by a 2x2 convolution of stride 2 (Table 4.5) with as many channels as its
    input (ours: the thesis gives only "2×2 convolutional layers of stride 2"; like every convolution here it is
    followed by the activation and its outputs are hidden neurons of the skip pool)."""
    V.choice(depth, "depth", tuple(_VGG))
    fc = V.positive_int(fc, "fc")
    out, ch = [], 3
    for item in _VGG[depth]:
        if item == "M":
            out.append(("conv", ch, 2, 2) if mp2conv else ("pool",))
        else:
            out.append(("conv", item, 3, 1))
            ch = item
    return tuple(out) + (("fc", fc), ("fc", fc))


def activation(z: torch.Tensor, name: str, gamma: float = 20.0) -> torch.Tensor:
    """Sigmoid, or softplus ``log(1 + exp(gamma t)) / gamma`` (eq. 4.2; the thesis uses gamma = 20)."""
    V.tensor(z, "z", floating=True, nonempty=False)
    V.choice(name, "name (the activation)", ACTIVATIONS)
    return _act(z, name, V.positive(gamma, "gamma"))


def _act(z, name, gamma):
    return torch.sigmoid(z) if name == "sigmoid" else torch.nn.functional.softplus(z, beta=gamma, threshold=30.0)


def he_truncated_normal(shape, fan_in: int, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
    """The thesis' initialisation (§4.4, "standard Keras initialisation"): normal with mean 0 and variance
    ``2 / fan_in``, redrawn outside two standard deviations."""
    std = math.sqrt(2.0 / V.positive_int(fan_in, "fan_in"))
    return torch.nn.init.trunc_normal_(torch.empty(shape, dtype=dtype), 0.0, std, -2 * std, 2 * std, generator=gen)


def _skip_counts(n_skip, n_models: int, pool: int) -> list:
    counts = [V.nonnegative_int(n_skip, "n_skip")] * n_models if not isinstance(n_skip, (list, tuple)) else \
        [V.nonnegative_int(k, "n_skip[i]") for k in n_skip]
    if len(counts) != n_models or max(counts) > pool:
        raise V.ArgumentValueError(f"n_skip must give one count per model ({n_models}), each at most the "
                                   f"{pool} hidden neurons, got {n_skip!r}")
    return counts


class _SkipBase(torch.nn.Module):
    """What :class:`SkipMLP` and :class:`SkipCNN` share: the skip index, ``V`` and its mask, Psi."""

    def _init_skip(self, n_skip, gens: list, pool: int, n_out: int, dtype):
        n_models = len(gens)
        self.n_skip = _skip_counts(n_skip, n_models, pool)
        M = max(self.n_skip)
        self.register_buffer("skip_index", torch.stack([torch.randperm(pool, generator=g)[:M] for g in gens]))
        self.register_buffer("skip_mask", (torch.arange(M)[None, :] < torch.tensor(self.n_skip)[:, None]).to(dtype)[..., None])
        self.V = torch.nn.Parameter(torch.zeros(n_models, M, n_out, dtype=dtype))

    def readout_parameters(self) -> list:
        """The weights into the output units (``V`` and the base net's output layer): the only ones the
        "rand" variant trains (§4.4)."""
        return [self.V, *self._head()]

    def hidden(self, X: torch.Tensor) -> list:
        """The outputs of every hidden (conv or FC) layer, each of shape ``(n_models, n, units)``."""
        return [h.flatten(2) for h in self._hidden_and_output(self._input(X))[0]]

    def psi(self, X: torch.Tensor) -> torch.Tensor:
        """Psi of eq. (4.1): the skip neurons' outputs, shape ``(n_models, n, M)`` (columns beyond a model's
        own ``n_skip`` are zero)."""
        return self._outputs(self._input(X))[1]

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Logits of shape ``(n_models, n, m)``: the base net's output plus ``Psi V``."""
        return self._outputs(self._input(X))[0]

    def _outputs(self, X):
        hidden, out = self._hidden_and_output(X)
        pool = torch.cat([h.flatten(2) for h in hidden], 2)
        psi = torch.gather(pool, 2, self.skip_index[:, None, :].expand(-1, pool.shape[1], -1)) * self.skip_mask.transpose(1, 2)
        return out + psi @ self.V, psi


class SkipMLP(_SkipBase):
    """``n_models`` fully connected nets ``widths[0] -> ... -> widths[-1]`` (sigmoid or softplus hidden
    layers, linear output), each with ``n_skip`` skip neurons to the output (an int, or one count per
    model: 0 gives the plain net). Model ``i`` is initialised with ``seeds[i]`` (He truncated normal,
    zero biases, ``V = 0``); models with the same seed share their base net and skip index order."""

    def __init__(self, widths, seeds, n_skip, activation: str = "sigmoid", gamma: float = 20.0, dtype=torch.float32):
        super().__init__()
        widths = V.sequence(widths, "widths", min_len=3)
        widths = [V.positive_int(w, "widths[i]") for w in widths]
        seeds = [V.seed(s, "seeds[i]") for s in V.sequence(seeds, "seeds", min_len=1)]
        self.act, self.gamma = V.choice(activation, "activation", ACTIVATIONS), V.positive(gamma, "gamma")
        self.widths = widths
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(torch.stack(
            [he_truncated_normal((o, i), i, g, dtype) for g in gens])) for i, o in zip(widths[:-1], widths[1:]))
        self.biases = torch.nn.ParameterList(torch.nn.Parameter(torch.zeros(len(seeds), o, dtype=dtype)) for o in widths[1:])
        self._init_skip(n_skip, gens, sum(widths[1:-1]), widths[-1], dtype)

    def _head(self):
        return [self.weights[-1], self.biases[-1]]

    def _input(self, X, name: str = "X"):
        X = V.tensor(X, name, floating=True, nonempty=False)
        if X.ndim != 2 or X.shape[1] != self.widths[0]:
            raise V.ArgumentValueError(f"{name} must have shape (n, {self.widths[0]}), got {tuple(X.shape)}")
        return X.to(self.V.dtype)

    def _hidden_and_output(self, X):
        return _mlp_pass(list(self.weights), list(self.biases), X, self.act, self.gamma)


def _mlp_pass(weights, biases, X, act, gamma):
    """Hidden layers (each ``(S, n, w)``) and base output of stacked MLPs; ``X`` is ``(n, d)``: the batched
    forward pass of :func:`lib.nets.stacked_forward` with the sigmoid or softplus activation."""
    return _stacked_forward(weights, biases, X, lambda z: _act(z, act, gamma))


class SkipCNN(_SkipBase):
    """One CNN (``layers`` as in :data:`CNN13` or :func:`vgg_layers`) on images ``in_shape = (C, H, W)``
    with ``n_skip`` skip neurons drawn from all its conv and FC outputs (Tables 4.1-4.5; pooling outputs are
    not in the pool). Model axis of length 1, so :func:`train_sgd` trains it like a :class:`SkipMLP`."""

    def __init__(self, layers, in_shape, n_out: int, seed: int, n_skip: int, activation: str = "sigmoid",
                 gamma: float = 20.0, dtype=torch.float32):
        super().__init__()
        layers = V.sequence(layers, "layers", min_len=1)
        in_shape = tuple(V.positive_int(s, "in_shape[i]") for s in V.sequence(in_shape, "in_shape", min_len=3))
        if len(in_shape) != 3:
            raise V.ArgumentValueError(f"in_shape must be (channels, height, width), got {in_shape}")
        n_out = V.positive_int(n_out, "n_out")
        gen = torch.Generator().manual_seed(V.seed(seed))
        self.act, self.gamma = V.choice(activation, "activation", ACTIVATIONS), V.positive(gamma, "gamma")
        self.in_shape, mods, shape, pool = in_shape, [], in_shape, 0
        for spec in layers:
            if spec[0] == "pool":
                mods.append(torch.nn.MaxPool2d(2, ceil_mode=True))
                shape = (shape[0], -(-shape[1] // 2), -(-shape[2] // 2))
                continue
            if spec[0] == "conv":
                _, ch, k, s = spec
                mods.append(torch.nn.Conv2d(shape[0], ch, k, s, padding=(k - 1) // 2, dtype=dtype))
                fan_in = shape[0] * k * k
                shape = (ch, (shape[1] + 2 * mods[-1].padding[0] - k) // s + 1, (shape[2] + 2 * mods[-1].padding[0] - k) // s + 1)
            elif spec[0] == "fc":
                fan_in = int(np.prod(shape))
                mods.append(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(fan_in, spec[1], dtype=dtype)))
                shape = (spec[1], 1, 1)
            else:
                raise V.ArgumentValueError(f"layers: unknown layer {spec!r} (conv, pool or fc)")
            lin = mods[-1] if spec[0] == "conv" else mods[-1][1]
            with torch.no_grad():
                lin.weight.copy_(he_truncated_normal(lin.weight.shape, fan_in, gen, dtype))
                lin.bias.zero_()
            pool += int(np.prod(shape))
        self.layers, self.kinds = torch.nn.ModuleList(mods), [s[0] for s in layers]
        self.head = torch.nn.Linear(int(np.prod(shape)), n_out, dtype=dtype)
        with torch.no_grad():
            self.head.weight.copy_(he_truncated_normal(self.head.weight.shape, self.head.in_features, gen, dtype))
            self.head.bias.zero_()
        self.n_hidden = pool
        self._init_skip(n_skip, [gen], pool, n_out, dtype)

    def _head(self):
        return list(self.head.parameters())

    def _input(self, X, name: str = "X"):
        X = V.tensor(X, name, floating=True, nonempty=False)
        if X.ndim != 4 or tuple(X.shape[1:]) != self.in_shape:
            raise V.ArgumentValueError(f"{name} must have shape (n, {', '.join(map(str, self.in_shape))}), "
                                       f"got {tuple(X.shape)}")
        return X.to(self.V.dtype)

    def _hidden_and_output(self, X):
        hidden, h = [], X
        for kind, mod in zip(self.kinds, self.layers):
            h = mod(h)
            if kind != "pool":
                h = _act(h, self.act, self.gamma)
                hidden.append(h.flatten(1).unsqueeze(0))
        return hidden, self.head(h.flatten(1)).unsqueeze(0)


def _check_model(model):
    return V.instance(model, "model", _SkipBase, "a SkipMLP or SkipCNN")


def accuracy(model, X, y, chunk: int = 1024) -> np.ndarray:
    """Fraction of rows of ``X`` whose arg-max logit is the label, one per model: shape ``(n_models,)``.
    Evaluated ``chunk`` rows at a time (a paper-scale CNN cannot hold 55,000 images' features at once)."""
    _check_model(model)
    y = V.labels(V.tensor(y, "y", floating=False, ndim=1), "y", model.V.shape[2])
    X = V.tensor(X, "X", floating=True)
    with torch.no_grad():
        pred = torch.cat([model(Xc).argmax(2) for Xc in X.split(V.positive_int(chunk, "chunk"))], 1)
    if pred.shape[1] != y.shape[0]:
        raise V.ArgumentValueError(f"y must have one label per row of X ({pred.shape[1]}), got {y.shape[0]}")
    return (pred == y.to(pred.device)).double().mean(1).cpu().numpy()


@dataclass
class SkipHistory(History):
    """:class:`lib.train.History` (one point per epoch) plus the training accuracy per epoch and model."""

    train_acc: list = field(default_factory=list)


def random_shift(X, max_shift: int, gen: torch.Generator, fill: str = "zeros") -> torch.Tensor:
    """The augmentation of Table 4.4 (after Zagoruyko & Komodakis 2016): pad the images ``X``
    ``(n, C, H, W)`` by ``max_shift`` pixels on each side and crop a random ``H x W`` window from each.
    ``fill``: ``"zeros"`` (the miniature's, ours) or ``"reflect"`` (Zagoruyko & Komodakis' "filling missing
    pixels with reflections of original image", the edge pixel not repeated; needs ``max_shift`` < ``H``, ``W``).
    (The thesis also flips CIFAR images horizontally; digits are not mirror-symmetric, so we do not.)"""
    X = V.tensor(X, "X", floating=True, ndim=4)
    V.instance(gen, "gen", torch.Generator, "a torch.Generator")
    s = V.nonnegative_int(max_shift, "max_shift")
    n, C, H, W = X.shape
    if V.choice(fill, "fill", ("zeros", "reflect")) == "reflect" and s >= min(H, W):
        raise V.ArgumentValueError(f"max_shift must be smaller than the images' height and width ({H}, {W}) "
                                   f"for fill='reflect', got {s}")
    P = torch.nn.functional.pad(X, (s, s, s, s)) if fill == "zeros" else torch.nn.functional.pad(X, (s, s, s, s), mode="reflect")
    dy, dx = torch.randint(0, 2 * s + 1, (2, n), generator=gen)
    rows, cols = dy[:, None] + torch.arange(H), dx[:, None] + torch.arange(W)
    return P[torch.arange(n)[:, None, None, None], torch.arange(C)[None, :, None, None], rows[:, None, :, None],
             cols[:, None, None, :]]


def train_sgd(model, X, y, epochs: int, batch_size: int, lr: float, seed: int = 0, train: str = "all",
              momentum: float = 0.9, nesterov: bool = True, milestones=(0.5, 0.75), track_accuracy: bool = False,
              augment=None) -> SkipHistory:
    """Minibatch SGD with Nesterov momentum on the mean cross-entropy of every model at once (§4.4: lr
    divided by 10 after each fraction of the ``epochs`` in ``milestones``). ``train="readout"`` trains only
    the weights into the outputs (``V`` and the base net's output layer): the thesis' "rand" variant, a
    convex problem. One history point per epoch (the epoch's mean loss per model); ``track_accuracy`` also
    records the full training accuracy after each epoch (on the un-augmented data). ``augment(X_batch, gen)``,
    if given, transforms each minibatch (e.g. :func:`random_shift`). A NaN/inf loss raises
    :class:`lib.validate.TrainingDivergedError`."""
    _check_model(model)
    X = V.tensor(X, "X", floating=True)
    y = V.tensor(y, "y", floating=False)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise V.ArgumentValueError(f"y must hold one label per row of X ({X.shape[0]}), got shape {tuple(y.shape)}")
    epochs, batch_size = V.positive_int(epochs, "epochs"), V.positive_int(batch_size, "batch_size")
    lr, momentum = V.positive(lr, "lr (the learning rate)"), V.fraction(momentum, "momentum")
    milestones = [V.fraction(f, "milestones[i]", low_open=True) for f in V.sequence(milestones, "milestones")]
    V.choice(train, "train", TRAIN_WHAT)
    V.labels(y, "y", model.V.shape[2])
    if augment is not None:
        V.callable_(augment, "augment")
    gen = torch.Generator().manual_seed(V.seed(seed))
    params = model.readout_parameters() if train == "readout" else list(model.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum, nesterov=bool(nesterov) and momentum > 0)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, sorted({max(1, int(round(f * epochs))) for f in milestones}), 0.1)
    hist, n = SkipHistory(), X.shape[0]
    for epoch in range(epochs):
        total = 0.0
        for idx in torch.randperm(n, generator=gen).split(batch_size):
            opt.zero_grad(set_to_none=True)
            Xb = X[idx] if augment is None else augment(X[idx], gen)
            loss = _cross_entropy_per_model(model(Xb), y[idx])
            loss.sum().backward()
            opt.step()
            total = total + loss.detach() * len(idx)
        sched.step()
        hist.steps.append(epoch + 1)
        hist.loss.append((total / n).cpu().numpy())
        V.finite_loss(hist.loss[-1], f"{epoch + 1} (epoch)", lr)
        if track_accuracy:
            hist.train_acc.append(accuracy(model, X, y))
    return hist


def psi_ranks(model, X) -> list:
    """``(rank, singular values)`` of each model's Psi (only its own ``n_skip`` columns) on the rows of ``X``
    by the Numerical-Recipes rule (:func:`lib.landscape.nr_rank`), computed in the model's dtype and then
    float64 (Lemma 4.3.2: rank N almost surely once ``n_skip >= N``)."""
    _check_model(model)
    X = V.tensor(X, "X", floating=True)
    with torch.no_grad():
        psi = model.psi(X).double().cpu().numpy()
    return [nr_rank(psi[k][:, :model.n_skip[k]]) if model.n_skip[k] else (0, np.zeros(0)) for k in range(psi.shape[0])]


def exact_readout(model, X, y) -> np.ndarray:
    """The "rand" algorithm of Thm 4.3.4 (1), exactly: with ``U`` fixed, set ``V`` (in place) to the
    minimum-norm solution of ``Psi V = Y - (base output)``, ``Y`` the one-hot labels, in float64; returns
    the relative residual ``||Psi V - R||_F / ||R||_F`` per model (0 up to rounding when rank Psi = N)."""
    _check_model(model)
    X = V.tensor(X, "X", floating=True)
    y = V.labels(V.tensor(y, "y", floating=False, ndim=1), "y", model.V.shape[2])
    res = []
    with torch.no_grad():
        G0 = model(X).double()
        psi = model.psi(X).double()
        if y.shape[0] != psi.shape[1]:
            raise V.ArgumentValueError(f"y must hold one label per row of X ({psi.shape[1]}), got {y.shape[0]}")
        R = torch.nn.functional.one_hot(y.to(psi.device), model.V.shape[2]).double() - G0 + psi @ model.V.double()
        for k, m in enumerate(model.n_skip):
            Vk = torch.linalg.lstsq(psi[k, :, :m].cpu(), R[k].cpu(), driver="gelsd").solution
            model.V[k].zero_()
            model.V[k, :m] = Vk.to(model.V.dtype)
            res.append(float(torch.linalg.norm(psi[k, :, :m].cpu() @ Vk - R[k].cpu()) / torch.linalg.norm(R[k])))
    return np.array(res)


def fit_readout(model, X, y, margin: float = 1.0, max_iter: int = 2000, chunk: int = 20) -> dict:
    """The "rand" read-out trained until it fits the training set (chapter 10, Table 4.3): with ``U`` fixed,
    full-batch L-BFGS (strong Wolfe line search, float64) on the mean cross-entropy of every model of a
    :class:`SkipMLP` over its read-out (``V`` and the base net's output layer, a convex problem), from their
    current values, until every training sample's margin (its label's logit minus the largest other logit)
    is at least ``margin`` in every model, or ``max_iter`` iterations (checked every ``chunk``). The thesis'
    rand reaches 100 % training accuracy after 300 epochs of SGD on ``V``; ours stops short of it after its
    few epochs (:func:`train_sgd` with ``train="readout"``), and this finishes the fit, so that test
    accuracies are compared at full training accuracy. The model's read-out is set in place (in its dtype:
    the margin keeps the float32 copy's predictions). Returns ``iterations`` and ``margin`` (the smallest per
    model, float64 array)."""
    V.instance(model, "model", SkipMLP, "a SkipMLP")
    X = model._input(V.tensor(X, "X", floating=True))
    y = V.labels(V.tensor(y, "y", floating=False, ndim=1), "y", model.V.shape[2], n=X.shape[0], rows_of="X")
    margin = V.positive(margin, "margin")
    max_iter, chunk = V.positive_int(max_iter, "max_iter"), V.positive_int(chunk, "chunk")
    with torch.no_grad():
        hidden, psi = model._hidden_and_output(X)[0][-1].double(), model.psi(X).double()
    parts = [t.detach().double().clone().requires_grad_(True) for t in (model.V, model.weights[-1], model.biases[-1])]
    opt = torch.optim.LBFGS(parts, lr=1.0, max_iter=chunk, history_size=20, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-12, tolerance_change=0.0)
    rows, y = torch.arange(len(y)), y.to(psi.device)

    def logits():
        Vr, W, b = parts
        return torch.baddbmm(b.unsqueeze(1), hidden, W.transpose(1, 2)) + psi @ Vr

    def closure():
        opt.zero_grad()
        loss = _cross_entropy_per_model(logits(), y).sum()
        loss.backward()
        return loss

    done = 0
    while True:
        with torch.no_grad():
            G = logits()
            own = G[:, rows, y]
            G[:, rows, y] = -torch.inf
            worst = (own - G.max(2).values).min(1).values
        if bool((worst >= margin).all()) or done >= max_iter:
            break
        opt.step(closure)
        done += chunk
    with torch.no_grad():
        for dst, src in zip((model.V, model.weights[-1], model.biases[-1]), parts):
            dst.copy_(src)
    return {"iterations": done, "margin": worst.cpu().numpy()}


def _readout_parts(model, X, k: int):
    """Float64 numpy ``(Psi, base)`` of model ``k`` on ``X``: its skip neurons' outputs (all ``max(n_skip)``
    columns, in the order of its skip index) and the base net's own output (the logits without ``Psi V``)."""
    with torch.no_grad():
        psi = model.psi(X)[k].double()
        base = model(X)[k].double() - psi @ model.V[k].double()
    return psi.cpu().numpy(), base.cpu().numpy()


def readout_sweep(model, X, y, X_test, y_test, sizes, k: int = 0) -> dict:
    """The "rand" algorithm (Thm 4.3.4 (1)) as the number of skip neurons varies: for each ``M`` in ``sizes``,
    the minimum-norm least-squares read-out ``V`` on the first ``M`` skip neurons of model ``k`` (its
    ``U`` fixed), ``Psi[:, :M] V = onehot(y) - base`` (float64, LAPACK gelsd), and its accuracies. For
    ``M < N`` it is a least-squares fit, for ``M >= N`` (and ``rank Psi = N``) an interpolant; at ``M = N``
    the system is square and its smallest singular value, hence the read-out's norm, is at its worst
    (the interpolation peak, chapter 10). ``V`` of the model is not changed. Returns a dict of arrays over
    ``sizes``: ``M``, ``train_acc``, ``test_acc``, ``sigma_min`` (the ``min(N, M)``-th singular value of
    ``Psi[:, :M]``) and ``v_norm`` (Frobenius norm of ``V``)."""
    _check_model(model)
    k = V.integer(k, "k (the model index)", min=0, max=model.V.shape[0] - 1)
    X, X_test = V.tensor(X, "X", floating=True), V.tensor(X_test, "X_test", floating=True)
    model._input(X, "X"), model._input(X_test, "X_test")  # the model's input shape, before y counts X's rows
    m = model.V.shape[2]
    y = V.labels(V.tensor(y, "y", floating=False, ndim=1), "y", m, n=X.shape[0], rows_of="X").cpu().numpy()
    y_test = V.labels(V.tensor(y_test, "y_test", floating=False, ndim=1), "y_test", m, n=X_test.shape[0], rows_of="X_test").cpu().numpy()
    sizes = [V.positive_int(M, "sizes[i]", max=model.n_skip[k]) for M in V.sequence(sizes, "sizes", min_len=1)]
    psi, base = _readout_parts(model, X, k)
    psi_t, base_t = _readout_parts(model, X_test, k)
    R = np.eye(m)[y] - base
    out = {key: [] for key in ("M", "train_acc", "test_acc", "sigma_min", "v_norm")}
    for M in sizes:
        Vm, _, _, sv = np.linalg.lstsq(psi[:, :M], R, rcond=None)
        out["M"].append(M)
        out["train_acc"].append(float(np.mean((base + psi[:, :M] @ Vm).argmax(1) == y)))
        out["test_acc"].append(float(np.mean((base_t + psi_t[:, :M] @ Vm).argmax(1) == y_test)))
        out["sigma_min"].append(float(sv[min(psi.shape[0], M) - 1]))
        out["v_norm"].append(float(np.linalg.norm(Vm)))
    return {key: np.array(v) for key, v in out.items()}


def _ce_np(G, y) -> float:
    G = G - G.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(G).sum(axis=1)) - G[np.arange(len(y)), y]))


def readout_descent(model, X, y, k: int = 0, target: float = 1e-3, n_points: int = 21, seed: int = 0) -> dict:
    """Thm 4.3.4 (2) and (4) at the current weights of model ``k``, which needs ``rank Psi = N``: the loss
    (mean cross-entropy, float64) along the segment ``V(lambda) = (1 - lambda) V + lambda V*`` to a read-out
    with ``Psi V* + base = s onehot(y)``, ``s`` the scale whose loss is ``target`` (the loss is convex in ``V``,
    so it never rises above the start's: no bad valley), and the second derivative of the loss along a random
    direction of ``V`` at ``lambda = 0`` (positive: the point is no local maximum). Returns a dict with
    ``lambdas``, ``losses``, ``rank`` (of Psi, NR rule), ``s`` and ``curvature``."""
    _check_model(model)
    k = V.integer(k, "k (the model index)", min=0, max=model.V.shape[0] - 1)
    X = V.tensor(X, "X", floating=True)
    model._input(X, "X")  # the model's input shape, before y counts X's rows
    m = model.V.shape[2]
    y = V.labels(V.tensor(y, "y", floating=False, ndim=1), "y", m, n=X.shape[0], rows_of="X").cpu().numpy()
    target = V.positive(target, "target")
    n_points = V.integer(n_points, "n_points", min=2)
    psi, base = _readout_parts(model, X, k)
    psi = psi[:, :model.n_skip[k]]
    rank = nr_rank(psi)[0] if psi.shape[1] else 0
    if rank < psi.shape[0]:
        raise V.ArgumentValueError(f"model: rank Psi = {rank} < N = {psi.shape[0]} (Thm 4.3.4 needs full rank; "
                                   "use at least N skip neurons)")
    V0 = model.V[k, :psi.shape[1]].detach().double().cpu().numpy()
    s = math.log((m - 1) / math.expm1(target))
    V_star = np.linalg.lstsq(psi, s * np.eye(m)[y] - base, rcond=None)[0]
    lambdas = np.linspace(0.0, 1.0, n_points)
    losses = np.array([_ce_np(base + psi @ ((1 - t) * V0 + t * V_star), y) for t in lambdas])
    D = np.random.default_rng(V.seed(seed)).standard_normal(V0.shape)
    G, U = base + psi @ V0, psi @ D
    P = np.exp(G - G.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    curvature = float(np.mean(np.einsum("ij,ij->i", U * U, P) - np.einsum("ij,ij->i", U, P) ** 2))
    return {"lambdas": lambdas, "losses": losses, "rank": rank, "s": s, "curvature": curvature}


def filter_normalised_direction(params, gen: torch.Generator) -> list:
    """A Gaussian direction in parameter space scaled row by row to the norms of ``params``' rows (Li et
    al. 2018, "filter normalisation"; the thesis' Fig. 4.4 does not say which it used). Each tensor's last
    axis is the input axis of a row; 1-D tensors (biases) get a zero direction."""
    out = []
    for p in V.sequence(params, "params", min_len=1):
        p = V.tensor(p, "params[i]", floating=True)
        if p.ndim < 2:
            out.append(torch.zeros_like(p))
            continue
        d = torch.randn(p.shape, generator=gen, dtype=p.dtype)
        out.append(d * p.norm(dim=-1, keepdim=True) / d.norm(dim=-1, keepdim=True).clamp_min(1e-30))
    return out


def plane_losses(model, X, y, span: float = 1.0, resolution: int = 21, seed: int = 0, k: int = 0) -> tuple:
    """The mean cross-entropy of model ``k`` of a :class:`SkipMLP` on the plane ``theta + a d1 + b d2``,
    ``a, b`` on a ``resolution x resolution`` grid over ``[-span, span]`` (Fig. 4.4), with two
    filter-normalised directions of ``V`` and the weights (:func:`filter_normalised_direction`; ``V`` is
    normalised per output unit, the model's own skip-neuron count kept). All grid points are evaluated as
    one stack of networks. Returns ``(grid, losses)`` with ``losses[i, j]`` at ``(a, b) = (grid[i], grid[j])``."""
    V.instance(model, "model", SkipMLP, "a SkipMLP")
    k = V.integer(k, "k (the model index)", min=0, max=model.V.shape[0] - 1)
    X = model._input(V.tensor(X, "X", floating=True))
    y = V.labels(V.tensor(y, "y", floating=False, ndim=1), "y", model.V.shape[2], n=X.shape[0], rows_of="X")
    span, res = V.positive(span, "span"), V.positive_int(resolution, "resolution")
    gen = torch.Generator().manual_seed(V.seed(seed))
    m = model.n_skip[k]
    theta = [W[k].detach() for W in model.weights] + [b[k].detach() for b in model.biases] + ([model.V[k, :m].detach().T] if m else [])
    d1, d2 = filter_normalised_direction(theta, gen), filter_normalised_direction(theta, gen)
    grid = torch.linspace(-span, span, res, dtype=theta[0].dtype)
    A, B = (g.reshape(-1) for g in torch.meshgrid(grid, grid, indexing="ij"))
    L, losses = len(model.weights), []
    with torch.no_grad():
        for a, b in zip(A.split(64), B.split(64)):
            stack = [t + a.view(-1, *[1] * t.ndim) * u + b.view(-1, *[1] * t.ndim) * w for t, u, w in zip(theta, d1, d2)]
            hidden, out = _mlp_pass(stack[:L], stack[L:2 * L], X, model.act, model.gamma)
            if m:  # the plain net (no skip neurons) has no V
                out = out + torch.cat(hidden, 2)[:, :, model.skip_index[k, :m]] @ stack[-1].transpose(1, 2)
            losses.append(_cross_entropy_per_model(out, y))
    return grid.numpy(), torch.cat(losses).reshape(res, res).numpy()


def check_paper_config_step(layers, in_shape, n_out: int, n_skip: int, batch: int = 2, seed: int = 0) -> float:
    """One SGD step of a paper-scale skip model (e.g. :data:`CNN13` on 1x28x28 with N = 55,000 skip
    neurons) on random data of the paper's shapes; returns the loss (a smoke test that the path runs)."""
    model = SkipCNN(layers, in_shape, n_out, seed, n_skip)
    gen = torch.Generator().manual_seed(V.seed(seed))
    X = torch.rand((V.positive_int(batch, "batch"), *model.in_shape), generator=gen)
    y = torch.randint(0, n_out, (batch,), generator=gen)
    return float(train_sgd(model, X, y, 1, batch, 0.01, seed).loss[0][0])


# ---------------------------------------------------------------------------------------------------
# The paper path (REPRO_SCALE=paper only): the thesis' Tables 4.2-4.5 with its own architectures and data.

class SkipDenseNet(_SkipBase):
    """DenseNet-121 for CIFAR-10 (Table 4.3; Huang et al. 2017: growth rate ``growth`` = 32, dense blocks of
    ``blocks`` = (6, 12, 24, 16) bottleneck layers BN-act-1x1 conv (4 x growth)-BN-act-3x3 conv (growth),
    transitions BN-act-1x1 conv halving the channels-2x2 average pool, then BN-act, global average pool and a
    linear layer) with the sigmoid or softplus activation, written with torch only. The stem is the CIFAR one
    (a 3x3 convolution to 2 x growth channels, no pooling): the thesis says its DenseNets pool only after the
    first dense block, which the ImageNet stem (7x7 conv, max-pool) would not. The ``n_skip`` skip neurons are
    drawn from the first dense block only (Table 4.3's caption): the outputs of every activation inside it
    (both of each of its layers), ``sum_i (2 growth + i growth + 4 growth) H W`` units. Convolutions and the
    head are initialised like :class:`SkipCNN` (He truncated normal, no conv biases, as in DenseNet), the
    batch norms at weight 1, bias 0. Model axis of length 1. Call ``.eval()`` before evaluating it (batch
    statistics in training mode, running statistics in eval mode)."""

    def __init__(self, in_shape, n_out: int, seed: int, n_skip: int, activation: str = "sigmoid", gamma: float = 20.0,
                 growth: int = 32, blocks=(6, 12, 24, 16), dtype=torch.float32):
        super().__init__()
        in_shape = tuple(V.positive_int(s, "in_shape[i]") for s in V.sequence(in_shape, "in_shape", min_len=3))
        if len(in_shape) != 3:
            raise V.ArgumentValueError(f"in_shape must be (channels, height, width), got {in_shape}")
        n_out, growth = V.positive_int(n_out, "n_out"), V.positive_int(growth, "growth")
        blocks = [V.positive_int(b, "blocks[i]") for b in V.sequence(blocks, "blocks", min_len=1)]
        if min(in_shape[1:]) < 2 ** (len(blocks) - 1):
            raise V.ArgumentValueError(f"in_shape must be at least 2**(len(blocks) - 1) = {2 ** (len(blocks) - 1)} pixels "
                                       f"high and wide (each of the {len(blocks) - 1} transitions halves them), got {in_shape}")
        gen = torch.Generator().manual_seed(V.seed(seed))
        self.act, self.gamma = V.choice(activation, "activation", ACTIVATIONS), V.positive(gamma, "gamma")
        self.in_shape = in_shape
        conv = lambda i, o, k: self._conv(i, o, k, gen, dtype)  # noqa: E731
        bn = lambda c: torch.nn.BatchNorm2d(c, dtype=dtype)  # noqa: E731
        ch = 2 * growth
        self.stem = conv(in_shape[0], ch, 3)
        self.blocks, self.transitions = torch.nn.ModuleList(), torch.nn.ModuleList()
        for b, n_layers in enumerate(blocks):
            layers = torch.nn.ModuleList()
            for _ in range(n_layers):
                layers.append(torch.nn.ModuleList([bn(ch), conv(ch, 4 * growth, 1), bn(4 * growth), conv(4 * growth, growth, 3)]))
                ch += growth
            self.blocks.append(layers)
            if b < len(blocks) - 1:
                self.transitions.append(torch.nn.ModuleList([bn(ch), conv(ch, ch // 2, 1)]))
                ch //= 2
        self.final_bn = bn(ch)
        self.head = torch.nn.Linear(ch, n_out, dtype=dtype)
        with torch.no_grad():
            self.head.weight.copy_(he_truncated_normal(self.head.weight.shape, ch, gen, dtype))
            self.head.bias.zero_()
        self.n_hidden = sum(2 * growth + i * growth + 4 * growth for i in range(blocks[0])) * in_shape[1] * in_shape[2]
        self._init_skip(n_skip, [gen], self.n_hidden, n_out, dtype)

    @staticmethod
    def _conv(c_in, c_out, k, gen, dtype):
        c = torch.nn.Conv2d(c_in, c_out, k, padding=(k - 1) // 2, bias=False, dtype=dtype)
        with torch.no_grad():
            c.weight.copy_(he_truncated_normal(c.weight.shape, c_in * k * k, gen, dtype))
        return c

    def _head(self):
        return list(self.head.parameters())

    _input = SkipCNN._input

    def _hidden_and_output(self, X):
        a = lambda t: _act(t, self.act, self.gamma)  # noqa: E731
        hidden, h = [], self.stem(X)
        for b, layers in enumerate(self.blocks):
            for bn1, conv1, bn2, conv2 in layers:
                a1 = a(bn1(h))
                a2 = a(bn2(conv1(a1)))
                if b == 0:
                    hidden += [a1.flatten(1).unsqueeze(0), a2.flatten(1).unsqueeze(0)]
                h = torch.cat([h, conv2(a2)], 1)
            if b < len(self.transitions):
                bn_t, conv_t = self.transitions[b]
                h = torch.nn.functional.avg_pool2d(conv_t(a(bn_t(h))), 2)
        h = a(self.final_bn(h)).mean((2, 3))
        return hidden, self.head(h).unsqueeze(0)


# Tables 4.2-4.5's architectures: CNN13 (Table 4.1), the VGGs with 128-unit FC layers (Table 4.3), their
# mp2conv variants (Table 4.5) and DenseNet-121 (Table 4.3).
PAPER_ARCHS = ("cnn13", "vgg11", "vgg13", "vgg16", "densenet121", "vgg11-mp2conv", "vgg13-mp2conv", "vgg16-mp2conv")


def paper_model(arch: str, in_shape, n_out: int, seed: int, n_skip: int, activation: str = "sigmoid"):
    """The model of one line of Tables 4.2-4.5: ``arch`` one of :data:`PAPER_ARCHS`, with ``n_skip`` skip
    neurons (0: the original network)."""
    V.choice(arch, "arch", PAPER_ARCHS)
    if arch == "densenet121":
        return SkipDenseNet(in_shape, n_out, seed, n_skip, activation)
    layers = CNN13 if arch == "cnn13" else vgg_layers(int(arch[3:5]), mp2conv=arch.endswith("-mp2conv"))
    return SkipCNN(layers, in_shape, n_out, seed, n_skip, activation)


def flip_crop(X, gen: torch.Generator, pad: int = 4, p_flip: float = 0.5) -> torch.Tensor:
    """The C-10+ augmentation of Tables 4.4 and 4.5 (Zagoruyko & Komodakis 2016, as the thesis' App. 4.6.1
    cites it): each image of ``X`` ``(n, C, H, W)`` padded by ``pad`` pixels on each side with reflections of
    the image (their "filling missing pixels with reflections of original image"; the thesis itself says only
    "4 pixel padding"), a random ``H x W`` crop (:func:`random_shift`), then mirrored left-right with
    probability ``p_flip``; all draws from ``gen``. ``pad`` must be smaller than ``H`` and ``W``."""
    X = V.tensor(X, "X", floating=True, ndim=4)
    V.instance(gen, "gen", torch.Generator, "a torch.Generator")
    p_flip = V.fraction(p_flip, "p_flip", high_open=False)
    pad = V.nonnegative_int(pad, "pad")
    if pad >= min(X.shape[2], X.shape[3]):
        raise V.ArgumentValueError(f"pad must be smaller than the images' height and width {tuple(X.shape[2:])} "
                                   f"(reflection padding), got {pad}")
    out = random_shift(X, pad, gen, fill="reflect")
    flip = (torch.rand(X.shape[0], generator=gen) < p_flip).to(X.device)
    return torch.where(flip[:, None, None, None], out.flip(3), out)


VARIANTS = ("orig", "skip-rand", "skip-SGD")


def paper_rows_dir(chapter: str):
    """Where :func:`run_table_row` keeps the rows of Tables 4.2-4.5 as each one finishes (``save_dir``), so
    that a crash, a session limit or a cell time-out loses at most the row in progress and a re-run loads
    the finished ones instead of training them again: ``results/<chapter>/paper_rows/`` in a real paper-scale
    run; in a paper-smoke run a fresh temporary folder, removed at exit (the code path runs, nothing is kept:
    a smoke run's numbers are no result); ``None`` at the quick and full scales (no paper rows run there)."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    from lib.results import results_path
    from lib.scale import current_scale, paper_smoke

    path = results_path(chapter, "paper")  # checks the chapter key
    if current_scale() != "paper":
        return None
    if paper_smoke():
        tmp = tempfile.mkdtemp(prefix="paper_rows_smoke_")
        atexit.register(shutil.rmtree, tmp, True)
        return Path(tmp)
    return path.parent / "paper_rows"


def _row_file(save_dir, arch, variant, activation, augment):
    from pathlib import Path

    V.instance(save_dir, "save_dir", (str, Path), "a folder (str or pathlib.Path) or None")
    return Path(save_dir) / f"{arch}_{variant}_{activation}_{'c10plus' if augment else 'plain'}.json"


def _save_row(path, record: dict) -> None:
    """``record`` as JSON at ``path``, atomically (a temporary file in the same folder, then renamed)."""
    import json
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, indent=1, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run_table_row(arch: str, activation: str, variant: str, X, y, X_test, y_test, seeds, epochs: int, lr: float,
                  batch_size: int, augment: bool = False, momentum: float = 0.9, chunk: int = 256,
                  save_dir=None) -> dict:
    """One cell group of Tables 4.2-4.5: ``arch`` (:func:`paper_model`) with ``activation``, trained and
    evaluated once per seed (ours: each seed draws the weights, the skip neurons and the batch order; the
    thesis' ± is "over 8 random choices of the subset of N neurons"). ``variant``:
    ``orig`` (no skip neurons; only the first seed: the thesis gives one number), ``skip-SGD`` (``N = len(X)``
    skip neurons, every weight trained) or ``skip-rand`` (the same skip model, only the weights into the
    outputs trained on its frozen random features: U is frozen and batch norm keeps its initial statistics;
    ours: the same lr, epochs and schedule as skip-SGD, the thesis gives none for it).
    Training: :func:`train_sgd` (SGD + Nesterov ``momentum``, lr divided by 10 at 50 % and 75 % of ``epochs``,
    §4.4) on ``X``, with the C-10+ augmentation :func:`flip_crop` if ``augment``. Models are built on the CPU
    and trained on ``X``'s device. Returns per-seed arrays ``train`` (accuracy on the un-augmented ``X``) and
    ``test`` (on ``X_test``), ``seeds`` and ``diverged``: a seed whose loss became NaN/inf is recorded with NaN
    accuracies and the run goes on (one diverged seed must not end a paper run of days). Every argument is
    checked before the first training (a bad test set must not surface after hours of it).
    ``save_dir`` (a folder, e.g. :func:`paper_rows_dir`'s; ``None``: keep nothing): the finished row is saved
    there as JSON (with its settings and provenance) at once, and a later call with the same row and
    settings returns the saved row without training; a saved row of other settings is an error (delete its
    file to run it again)."""
    V.choice(arch, "arch", PAPER_ARCHS)
    V.choice(activation, "activation", ACTIVATIONS)
    V.choice(variant, "variant", VARIANTS)
    X, X_test = V.tensor(X, "X", floating=True, ndim=4), V.tensor(X_test, "X_test", floating=True, ndim=4)
    if X_test.shape[1:] != X.shape[1:]:
        raise V.ArgumentValueError(f"X_test must hold images of X's shape {tuple(X.shape[1:])}, got {tuple(X_test.shape[1:])}")
    V.labels(V.tensor(y, "y", floating=False, ndim=1), "y", 10, n=X.shape[0], rows_of="X")
    V.labels(V.tensor(y_test, "y_test", floating=False, ndim=1), "y_test", 10, n=X_test.shape[0], rows_of="X_test")
    seeds = [V.seed(s, "seeds[i]") for s in V.sequence(seeds, "seeds", min_len=1)]
    epochs, batch_size = V.positive_int(epochs, "epochs"), V.positive_int(batch_size, "batch_size")
    lr, momentum = V.positive(lr, "lr (the learning rate)"), V.fraction(momentum, "momentum")
    augment, chunk = V.boolean(augment, "augment"), V.positive_int(chunk, "chunk")
    seeds = seeds[:1] if variant == "orig" else seeds
    settings = {"arch": arch, "activation": activation, "variant": variant, "augment": augment, "seeds": seeds,
                "epochs": epochs, "lr": lr, "batch_size": batch_size, "momentum": momentum,
                "n_train": X.shape[0], "n_test": X_test.shape[0], "in_shape": list(X.shape[1:])}
    path = None if save_dir is None else _row_file(save_dir, arch, variant, activation, augment)
    if path is not None and path.exists():
        import json

        with open(path) as fh:
            saved = json.load(fh)
        if saved.get("settings") != settings:
            raise V.ArgumentValueError(f"save_dir holds {path.name}, a row saved with other settings "
                                       f"({saved.get('settings')}, now {settings}): delete it to run the row again")
        print(f"  {path.name}: loaded the saved row (not trained again)", flush=True)
        return {k: np.array([math.nan if v is None else v for v in saved["row"][k]]) if k in ("train", "test")
                else np.array(saved["row"][k]) for k in ("train", "test", "seeds", "diverged")}
    if path is not None:
        from lib.results import require_clean_tree

        require_clean_tree()  # at paper scale, before hours of training: the saved row names its commit
    import time

    t0 = time.perf_counter()
    out = {"train": [], "test": [], "seeds": seeds, "diverged": []}
    for s in seeds:
        model = paper_model(arch, tuple(X.shape[1:]), 10, s, 0 if variant == "orig" else X.shape[0], activation).to(X.device)
        if variant == "skip-rand":
            model.eval().requires_grad_(False)
            for p in model.readout_parameters():
                p.requires_grad_(True)
        try:
            train_sgd(model, X, y, epochs, batch_size, lr, seed=s, train="readout" if variant == "skip-rand" else "all",
                      momentum=momentum, augment=flip_crop if augment else None)
        except V.TrainingDivergedError:
            out["diverged"].append(True)
            out["train"].append(math.nan)
            out["test"].append(math.nan)
            continue
        out["diverged"].append(False)
        model.eval()
        out["train"].append(float(accuracy(model, X, y, chunk)[0]))
        out["test"].append(float(accuracy(model, X_test, y_test, chunk)[0]))
    if path is not None:
        from lib.results import _to_jsonable, provenance

        _save_row(path, {"settings": settings, "row": _to_jsonable(out),
                         "provenance": provenance(seeds, time.perf_counter() - t0)})
    return {k: np.array(v) for k, v in out.items()}


# The thesis' Tables 4.2-4.5 as printed (test or train accuracy in %): per table its data set, its columns
# (activation, "test" or "train", augmented: the C-10+ column) and its lines (architecture, variant) with one
# value per column; "-" is a cell the thesis did not run (so neither do we), None a line it does not have (Table
# 4.2's rand line is ours: the same CNN13 as a random feature generator).
_C10 = (("sigmoid", "test", False), ("sigmoid", "train", False), ("softplus", "test", False), ("softplus", "train", False))
_C10_PLUS = (("sigmoid", "test", False), ("sigmoid", "test", True), ("softplus", "test", False), ("softplus", "test", True))
THESIS_TABLES = {
    "4.2": {"data": "mnist", "columns": (("sigmoid", "test", False), ("softplus", "test", False)), "lines": {
        ("cnn13", "orig"): ("11.35", "99.20"), ("cnn13", "skip-rand"): None,
        ("cnn13", "skip-SGD"): ("98.40 ± 0.07", "99.14 ± 0.04")}},
    "4.3": {"data": "cifar10", "columns": _C10, "lines": {
        ("vgg11", "orig"): ("10", "10", "78.92", "100"),
        ("vgg11", "skip-rand"): ("62.81 ± 0.39", "100", "64.49 ± 0.38", "100"),
        ("vgg11", "skip-SGD"): ("72.51 ± 0.35", "100", "80.57 ± 0.40", "100"),
        ("vgg13", "orig"): ("10", "10", "80.84", "100"),
        ("vgg13", "skip-rand"): ("61.50 ± 0.34", "100", "61.42 ± 0.40", "100"),
        ("vgg13", "skip-SGD"): ("70.24 ± 0.39", "100", "81.94 ± 0.40", "100"),
        ("vgg16", "orig"): ("10", "10", "81.33", "100"),
        ("vgg16", "skip-rand"): ("61.57 ± 0.41", "100", "61.46 ± 0.34", "100"),
        ("vgg16", "skip-SGD"): ("70.61 ± 0.36", "100", "81.91 ± 0.24", "100"),
        ("densenet121", "orig"): ("86.41", "100", "89.31", "100"),
        ("densenet121", "skip-rand"): ("52.07 ± 0.48", "100", "55.39 ± 0.48", "100"),
        ("densenet121", "skip-SGD"): ("81.47 ± 1.03", "100", "86.76 ± 0.49", "100")}},
    "4.4": {"data": "cifar10", "columns": _C10_PLUS, "lines": {
        ("vgg11", "orig"): ("10", "10", "78.92", "88.62"),
        ("vgg11", "skip-rand"): ("62.81 ± 0.39", "-", "64.49 ± 0.38", "-"),
        ("vgg11", "skip-SGD"): ("72.51 ± 0.35", "85.55 ± 0.09", "80.57 ± 0.40", "89.32 ± 0.16"),
        ("vgg13", "orig"): ("10", "10", "80.84", "90.58"),
        ("vgg13", "skip-rand"): ("61.50 ± 0.34", "-", "61.42 ± 0.40", "-"),
        ("vgg13", "skip-SGD"): ("70.24 ± 0.39", "86.48 ± 0.32", "81.94 ± 0.40", "91.06 ± 0.12"),
        ("vgg16", "orig"): ("10", "10", "81.33", "90.68"),
        ("vgg16", "skip-rand"): ("61.57 ± 0.41", "-", "61.46 ± 0.34", "-"),
        ("vgg16", "skip-SGD"): ("70.61 ± 0.36", "86.42 ± 0.31", "81.91 ± 0.24", "91.00 ± 0.22"),
        ("densenet121", "orig"): ("86.41", "90.93", "89.31", "94.20"),
        ("densenet121", "skip-rand"): ("52.07 ± 0.48", "-", "55.39 ± 0.48", "-"),
        ("densenet121", "skip-SGD"): ("81.47 ± 1.03", "90.32 ± 0.50", "86.76 ± 0.49", "93.23 ± 0.42")}},
    "4.5": {"data": "cifar10", "columns": _C10_PLUS, "lines": {
        ("vgg11-mp2conv", "orig"): ("10", "10", "74.53", "88.80"),
        ("vgg11-mp2conv", "skip-rand"): ("53.65 ± 0.66", "-", "55.51 ± 0.43", "-"),
        ("vgg11-mp2conv", "skip-SGD"): ("64.45 ± 0.31", "80.15 ± 0.59", "76.18 ± 0.58", "89.93 ± 0.19"),
        ("vgg13-mp2conv", "orig"): ("10", "10", "74.04", "90.37"),
        ("vgg13-mp2conv", "skip-rand"): ("53.45 ± 0.23", "-", "53.33 ± 0.67", "-"),
        ("vgg13-mp2conv", "skip-SGD"): ("63.53 ± 0.37", "82.40 ± 0.23", "75.58 ± 0.77", "91.04 ± 0.20"),
        ("vgg16-mp2conv", "orig"): ("10", "10", "74.00", "90.38"),
        ("vgg16-mp2conv", "skip-rand"): ("53.83 ± 0.30", "-", "55.34 ± 0.64", "-"),
        ("vgg16-mp2conv", "skip-SGD"): ("65.77 ± 0.67", "83.06 ± 0.34", "76.52 ± 0.78", "91.00 ± 0.23")}},
}


def _table_lines(table: str, archs) -> tuple:
    V.choice(table, "table", tuple(THESIS_TABLES))
    archs = [V.choice(a, "archs[i]", PAPER_ARCHS) for a in V.sequence(archs, "archs")]
    spec = THESIS_TABLES[table]
    return spec, [(line, vals) for line, vals in spec["lines"].items() if line[0] in archs]


def table_runs(table: str, archs, activations=ACTIVATIONS) -> list:
    """The trainings that Table ``table`` (a key of :data:`THESIS_TABLES`) needs for its lines whose
    architecture is in ``archs`` and its columns of ``activations``: distinct ``(arch, variant, activation,
    augmented)`` keys for :func:`run_table_row`, one per cell group the thesis ran (a train and a test column
    share a run)."""
    spec, lines = _table_lines(table, archs)
    activations = [V.choice(a, "activations[i]", ACTIVATIONS) for a in V.sequence(activations, "activations")]
    runs = []
    for (arch, variant), vals in lines:
        for (act, _, aug), val in zip(spec["columns"], vals or [None] * len(spec["columns"])):
            if val != "-" and act in activations and (arch, variant, act, aug) not in runs:
                runs.append((arch, variant, act, aug))
    return runs


def _pm(a) -> str:
    """Mean ± sample sd in % of the finite entries of ``a``, saying how many seeds diverged (NaN)."""
    a = 100 * np.asarray(a, dtype=float)
    ok = a[np.isfinite(a)]
    text = "diverged" if len(ok) == 0 else f"{ok.mean():.2f}" if len(ok) == 1 else f"{ok.mean():.2f} ± {ok.std(ddof=1):.2f}"
    return text + (f" ({len(a) - len(ok)} of {len(a)} diverged)" if 0 < len(ok) < len(a) else "")


def table_markdown(table: str, results: dict, archs) -> tuple:
    """``(header, rows)`` for :func:`lib.results.markdown_table`: Table ``table``'s lines (those of ``archs``),
    each cell "ours / the thesis'" in % (ours: mean ± sample sd over the seeds, as the thesis reports them;
    "not run" where ``results``, keyed like :func:`table_runs`, has no entry; "—" where the thesis has none)."""
    spec, lines = _table_lines(table, archs)
    V.instance(results, "results", dict, "a dict")
    need = sorted({what for _, what, _ in spec["columns"]})  # Table 4.2 prints test accuracies only
    for key, run in results.items():
        V.instance(run, f"results[{key!r}]", dict, "a dict (a run_table_row result)")
        if not set(need) <= set(run):
            raise V.ArgumentValueError(f"results[{key!r}] must have the keys {need} for Table {table} (a run_table_row "
                                       f"result), got {sorted(run)}")
    header = ["model"] + [f"{act} {'C-10+ ' if aug else ''}{what} % (ours / thesis)" for act, what, aug in spec["columns"]]
    rows = []
    for (arch, variant), vals in lines:
        cells = []
        for (act, what, aug), val in zip(spec["columns"], vals or ["—"] * len(spec["columns"])):
            run = results.get((arch, variant, act, aug))
            ours = "—" if val == "-" else ("not run" if run is None else _pm(run[what]))
            cells.append(f"{ours} / {'—' if val == '-' else val}")
        rows.append([f"{arch} {variant}", *cells])
    return header, rows
