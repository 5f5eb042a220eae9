"""Data and batched models for training the circle-versus-annulus problem (Chapter 07 and its
higher-dimensions section; Sattelberg 2026, §4.2).

* :func:`ball_vs_shell` -- independent training sets: half the points uniform in the ball of radius r1
  (class +1), half uniform in the shell r2 <= |x| <= r3 (class -1), radii drawn uniform in *volume*;
* :class:`LeakEnsemble` -- many one-hidden-layer nets trained as one batched model, each with its own
  leak (0 = ReLU), each on its own data set (inputs shaped (n, nets, d), rows first, so that
  :func:`lib.train.train_minibatch` shuffles points, not nets);
* :func:`train_ball_vs_shell` -- Adam on such an ensemble, each net with its own loss (BCE on logits or
  MSE on the +-1 labels), and :func:`sign_accuracy`, the share of points each net classifies right.

The exact geometry of the regions such nets cut out is in :mod:`lib.annulus`.
"""

from __future__ import annotations

import numpy as np
import torch

from lib import validate as V
from lib.nets import BatchedMLP
from lib.scale import as_device
from lib.train import train_minibatch

__all__ = ["ball_vs_shell", "LeakEnsemble", "train_ball_vs_shell", "sign_accuracy"]


def ball_vs_shell(n_dim: int, n_points: int, r1: float, r2: float, r3: float, rng,
                  n_sets: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``n_sets`` independent data sets, ``X`` of shape (n_points, n_sets, n_dim) and labels ``y`` of
    shape (n_points, n_sets): the first n_points // 2 rows uniform in the ball |x| < r1 (label +1), the
    rest uniform in the shell r2 <= |x| <= r3 (label -1).

    Uniform in volume: a radius is (U(a^n, b^n))^(1/n), a direction uniform on the sphere (a
    normalised Gaussian vector), as the spec asks (uniform radii would crowd the centre). ``rng`` is a
    ``numpy.random.Generator``. Used by chapter 07 (Fig. 4.2, Tables 4.2-4.3) and its
    higher-dimensions section (Fig. 4.8)."""
    n_dim = V.positive_int(n_dim, "n_dim")
    n_points = V.integer(n_points, "n_points", min=2)
    n_sets = V.positive_int(n_sets, "n_sets")
    r1 = V.positive(r1, "r1 (the ball's radius)")
    r2 = V.positive(r2, "r2 (the shell's inner radius)")
    r3 = V.positive(r3, "r3 (the shell's outer radius)")
    if not r1 <= r2 < r3:
        raise ValueError(f"the radii must satisfy r1 <= r2 < r3 (ball inside the gap inside the shell), "
                         f"got r1={r1}, r2={r2}, r3={r3}")
    V.instance(rng, "rng", np.random.Generator, "a numpy.random.Generator (np.random.default_rng(seed))")
    half = n_points // 2

    def radial(lo: float, hi: float, k: int) -> np.ndarray:
        r = rng.uniform(lo ** n_dim, hi ** n_dim, size=(k, n_sets)) ** (1 / n_dim)
        u = rng.standard_normal((k, n_sets, n_dim))
        return u / np.linalg.norm(u, axis=2, keepdims=True) * r[..., None]

    X = np.concatenate([radial(0.0, r1, half), radial(r2, r3, n_points - half)])
    y = np.concatenate([np.ones((half, n_sets)), -np.ones((n_points - half, n_sets))])
    return X, y


class LeakEnsemble(BatchedMLP):
    """:class:`lib.nets.BatchedMLP` with one leak per net (``slopes``, each in [0, 1); 0 is ReLU).

    ``forward`` takes X of shape (n, nets, d) -- rows first, one data set per net -- and returns
    (nets, n) for a one-output net (the last layer's single output), (nets, n, d_L) otherwise. Net m
    starts from ``init_mlp(widths, seeds[m])`` (He), like BatchedMLP."""

    def __init__(self, widths, seeds, slopes):
        super().__init__(widths, seeds=V.sequence(seeds, "seeds", min_len=1), activation="leaky_relu")
        slopes = V.array(slopes, "slopes", ndim=1, shape=(self.n_models,))
        if (slopes < 0).any() or (slopes >= 1).any():
            raise ValueError(f"slopes (one leak per net) must lie in [0, 1), got {slopes.min()}..{slopes.max()}")
        self.register_buffer("slopes", torch.as_tensor(slopes, dtype=self.weights[0].dtype).view(-1, 1, 1))

    device_program = False  # True while lib.train's device program trains it (issue 36): no per-batch finiteness check

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        V.tensor(X, "X", ndim=3, floating=True, nonempty=False, finite=not self.device_program)
        if X.shape[1] != self.n_models or X.shape[2] != self.widths[0]:
            raise ValueError(f"X must have shape (n, {self.n_models} nets, {self.widths[0]} inputs), "
                             f"got {tuple(X.shape)}")
        if X.dtype != self.weights[0].dtype:
            raise V.ArgumentTypeError(f"X must have the nets' dtype ({self.weights[0].dtype}), got {V.describe(X)}")
        h = X.transpose(0, 1)
        for l, (W, b) in enumerate(zip(self.weights, self.biases)):
            h = torch.baddbmm(b.unsqueeze(1), h, W.transpose(1, 2))
            if l < len(self.weights) - 1:
                h = torch.maximum(h, self.slopes * h)          # leaky ReLU with the net's own slope (< 1)
        return h[..., 0] if h.shape[-1] == 1 else h


def train_ball_vs_shell(X: torch.Tensor, y: torch.Tensor, slopes, bce, *, epochs: int, batch_size: int,
                        lr: float, seed: int, net_seeds, width: int | None = None) -> LeakEnsemble:
    """Train one one-hidden-layer net per data set with Adam and return the trained :class:`LeakEnsemble`.

    ``X``: (n, nets, d) float32 tensor (already scaled; the nets are float32, and their forward refuses another dtype), ``y``: (n, nets) labels +-1; ``slopes``: one leak
    per net; ``bce``: one bool per net, True for binary cross-entropy on the logit (softplus(-y f)),
    False for the squared error (f - y)^2 (§4.2.1's two losses); ``width``: hidden width, default d + 1
    (the minimal width of §4.1). Every net's loss is its own batch mean; their sum is minimised, so the
    nets do not interact. ``seed`` orders the minibatches, ``net_seeds[m]`` initialises net m. On CUDA
    :func:`lib.train.train_minibatch` runs the steps as a device program (issue 36) whose batch orders are drawn
    on the device's generator: a CUDA run trains on other batches than a CPU run.
    Chapter 07 trains Tables 4.2-4.3 and, in its higher-dimensions section, Fig. 4.8 with it."""
    V.tensor(X, "X", ndim=3, floating=True)
    V.tensor(y, "y", shape=tuple(X.shape[:2]), floating=True, agree="X")
    if not bool(((y == 1) | (y == -1)).all()):
        raise ValueError("y (the labels) must hold only +1 and -1")
    d = X.shape[2]
    width = d + 1 if width is None else V.positive_int(width, "width")
    bce = V.array(bce, "bce (one bool per net: BCE or MSE)", ndim=1, shape=(X.shape[1],), dtype=None,
                  agree="X's nets")
    if bce.dtype != bool:
        raise ValueError(f"bce (one bool per net: BCE or MSE) must be an array of bools, got dtype {bce.dtype}")
    device = as_device(None)  # REPRO_DEVICE (CUDA at paper scale where there is one): the loss's mask lives there
    loss_fn = _per_net_loss(torch.tensor(bce, dtype=X.dtype, device=device))
    model = LeakEnsemble([d, width, 1], seeds=V.sequence(net_seeds, "net_seeds", min_len=1), slopes=slopes)
    train_minibatch(model, X, y, loss_fn, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed,
                    optimizer="adam", progress=False, device=device)
    return model


def _per_net_loss(is_bce: torch.Tensor):
    """:func:`train_ball_vs_shell`'s loss: per net its batch mean of BCE on the logit (``is_bce`` 1) or of the
    squared error (0); ``loss_fn(out (nets, batch), yb (batch, nets)) -> (nets,)``. (A function of its own so
    that ``tests/test_paper_steps.py`` traces the same loss in chapter 07's device-program step.)"""

    def loss_fn(out, yb):                                        # out (nets, batch), yb (batch, nets)
        yb = yb.T
        mse = ((out - yb) ** 2).mean(1)
        bce_loss = torch.nn.functional.softplus(-yb * out).mean(1)   # BCE on logits for labels +-1
        return is_bce * bce_loss + (1 - is_bce) * mse
    return loss_fn


@torch.no_grad()
def sign_accuracy(model: LeakEnsemble, X: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Per net, the share of the points of its data set (``X`` (n, nets, d), ``y`` (n, nets) of +-1)
    on which sign(f(x)) equals the label: an array (nets,). f(x) = 0 counts as wrong. ``X`` has the model's
    dtype (float32 for the nets of :func:`train_ball_vs_shell`)."""
    V.instance(model, "model", LeakEnsemble)
    V.tensor(X, "X", ndim=3, floating=True)
    V.tensor(y, "y", shape=tuple(X.shape[:2]), floating=True, agree="X")
    return (torch.sign(model(X)) == y.T).double().mean(1).numpy()
