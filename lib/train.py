"""Trainers: full-batch and minibatch gradient descent with a history and a progress bar.

One trainer serves single networks and :class:`lib.nets.BatchedMLP` ensembles alike: the loss
function may return a scalar or one loss per model (shape ``(n_models,)``); the sum is
differentiated, so each model receives exactly its own gradient, and the history keeps the vector.
The loop does nothing per step beyond what torch needs (logging every ``log_every`` steps, the
progress bar updated in chunks); ``python -m lib.benchmark`` measures that overhead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

OPTIMIZERS = ("sgd", "adam")


@dataclass
class History:
    """Losses logged during training: ``steps[i]`` and ``loss[i]`` (a float or one per model)."""

    steps: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    wall_time_s: float = 0.0

    def losses(self) -> np.ndarray:
        """Logged losses as an array of shape ``(n_logs,)`` or ``(n_logs, n_models)``."""
        return np.array([np.asarray(l) for l in self.loss], dtype=float)

    @property
    def final_loss(self):
        """The last logged loss (a float, or an array with one entry per model)."""
        if not self.loss:
            raise ValueError("history is empty: nothing was logged")
        last = np.asarray(self.loss[-1], dtype=float)
        return float(last) if last.ndim == 0 else last


def _targets_like(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``y`` shaped like ``out`` (n_models, n, ...): per-model targets, or shared ones broadcast."""
    if y.numel() == out.numel():
        return y.reshape(out.shape)
    if y.numel() * out.shape[0] == out.numel():
        return y.reshape(out.shape[1:]).expand_as(out)
    raise ValueError(f"targets of shape {tuple(y.shape)} match neither the outputs {tuple(out.shape)} "
                     f"nor one model's outputs {tuple(out.shape[1:])}")


def mse_per_model(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean squared error over all but the leading (model) axis: shape ``(n_models,)``."""
    return ((out - _targets_like(out, y)) ** 2).flatten(1).mean(1)


def logistic_per_model(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Logistic loss ``log(1 + exp(-y f))`` for labels ``y`` in {-1, +1}, per model."""
    return torch.nn.functional.softplus(-_targets_like(out, y) * out).flatten(1).mean(1)


def cross_entropy_per_model(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Softmax cross-entropy of logits ``(n_models, n, K)`` against class indices, per model."""
    M, n, K = out.shape
    y = y.expand(M, n) if y.ndim == 1 else y
    return torch.nn.functional.cross_entropy(out.reshape(M * n, K), y.reshape(M * n),
                                             reduction="none").reshape(M, n).mean(1)


def make_optimizer(params, optimizer: str = "sgd", lr: float = 0.1, momentum: float = 0.0,
                   weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """``sgd`` (optionally with momentum) or ``adam`` over ``params``."""
    if not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"learning rate must be a finite positive number, got {lr!r}")
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")


def _check_data(X: torch.Tensor, y: torch.Tensor) -> None:
    for name, t in (("X", X), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.numel() == 0:
            raise ValueError(f"{name} is empty")
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} contains NaN or infinite values")
    if not X.is_floating_point():
        raise ValueError(f"X must be floating point, got dtype {X.dtype}")


def _check_count(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def train_full_batch(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, loss_fn, steps: int,
                     lr: float, optimizer: str = "sgd", momentum: float = 0.0, weight_decay: float = 0.0,
                     log_every: int | None = None, progress: bool = True, desc: str = "train") -> History:
    """Full-batch gradient descent on ``loss_fn(model(X), y)`` for ``steps`` steps.

    ``log_every`` defaults to ``steps // 100`` (about 100 logged points); the step after the last one
    is always logged, so ``history.final_loss`` is the loss of the trained model.
    """
    _check_data(X, y)
    steps = _check_count("steps", steps)
    log_every = _check_count("log_every", log_every or max(1, steps // 100))
    opt = make_optimizer(model.parameters(), optimizer, lr, momentum, weight_decay)
    hist = History()
    start = time.perf_counter()
    with tqdm(total=steps, desc=desc, disable=not progress, mininterval=0.5, leave=False) as bar:
        for step in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(X), y)
            (loss.sum() if loss.ndim else loss).backward()
            opt.step()
            if step % log_every == 0:
                hist.steps.append(step)
                hist.loss.append(loss.detach().clone())
                bar.update(log_every if step else 1)
        with torch.no_grad():
            hist.steps.append(steps)
            hist.loss.append(loss_fn(model(X), y).detach().clone())
    hist.loss = [l.numpy() if l.ndim else float(l) for l in hist.loss]
    hist.wall_time_s = time.perf_counter() - start
    return hist


def train_minibatch(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, loss_fn, epochs: int,
                    batch_size: int, lr: float, seed: int = 0, optimizer: str = "sgd",
                    momentum: float = 0.0, weight_decay: float = 0.0, progress: bool = True,
                    desc: str = "train", on_epoch_end=None) -> History:
    """Minibatch SGD/Adam over shuffled rows of ``X`` (first axis), one history point per epoch.

    ``on_epoch_end(epoch, model)`` may be given to evaluate or anneal between epochs (Chapter 5).
    """
    _check_data(X, y)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same number of rows, got {X.shape[0]} and {y.shape[0]}")
    epochs, batch_size = _check_count("epochs", epochs), _check_count("batch_size", batch_size)
    opt = make_optimizer(model.parameters(), optimizer, lr, momentum, weight_decay)
    gen = torch.Generator().manual_seed(int(seed))
    hist, n = History(), X.shape[0]
    start = time.perf_counter()
    for epoch in tqdm(range(epochs), desc=desc, disable=not progress, leave=False):
        order, total = torch.randperm(n, generator=gen), 0.0
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(X[idx]), y[idx])
            (loss.sum() if loss.ndim else loss).backward()
            opt.step()
            total = total + loss.detach() * len(idx)
        hist.steps.append(epoch + 1)
        mean = total / n
        hist.loss.append(mean.numpy() if mean.ndim else float(mean))
        if on_epoch_end is not None:
            on_epoch_end(epoch, model)
    hist.wall_time_s = time.perf_counter() - start
    return hist
