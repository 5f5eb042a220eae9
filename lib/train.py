"""Trainers: full-batch and minibatch gradient descent with a history and a progress bar.

One trainer serves single networks and :class:`lib.nets.BatchedMLP` ensembles alike: the loss
function may return a scalar or one loss per model (shape ``(n_models,)``); the sum is
differentiated, so each model receives exactly its own gradient, and the history keeps the vector.
The loop does nothing per step beyond what torch needs (logging every ``log_every`` steps, the
progress bar updated in chunks); ``python -m lib.benchmark`` measures that overhead.

Both trainers train on ``device`` (default :func:`lib.scale.current_device`, i.e. ``REPRO_DEVICE``:
the CPU at quick and full scale, CUDA at paper scale where there is one): the model and the data move
there for the loop, and the model goes back to the device it came from afterwards, so that the
chapter's numpy and plotting code sees CPU tensors. On the CPU nothing moves and nothing changes.

On CUDA :func:`train_minibatch` runs each step as one *device program* (issue 36, :mod:`lib.device_step`;
:func:`minibatch_step`): the batch orders are drawn on the device, the optimiser's state and the per-epoch
losses live there, and the steps are replayed as captured CUDA graphs. ``REPRO_STEP_MODE``
(:func:`lib.device_step.step_mode`) picks the path; the CPU keeps the host loop unless told otherwise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from lib import validate as V
from lib.device_step import DeviceAdam, DeviceSGD, StepRunner, gradients, seeded, step_mode
from lib.scale import on_device

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


def _unit_axis_variants(shape) -> set:
    """``shape`` itself, with a trailing axis of length 1 added, and without one if it ends in 1:
    one output per point may come as (..., n, 1) or (..., n)."""
    shape = tuple(shape)
    return {shape, shape + (1,)} | ({shape[:-1]} if shape and shape[-1] == 1 else set())


def _targets_like(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``y`` shaped like ``out`` (n_models, n, ...): per-model targets, or shared ones broadcast.

    ``y``'s shape must be ``out``'s or one model's ``out.shape[1:]``, up to a trailing axis of length
    1 on either side (targets ``(n,)`` for outputs ``(n_models, n, 1)``, also when n = 1); the same
    number of entries in another arrangement (``(n, 2)`` for ``(n_models, 2, n)``) is refused, not
    reshaped."""
    got = tuple(y.shape)
    if got in _unit_axis_variants(out.shape):
        return y.reshape(out.shape)
    if got in _unit_axis_variants(out.shape[1:]):
        return y.reshape(out.shape[1:]).expand_as(out)
    raise V.ArgumentValueError(f"y (targets) of shape {got} matches neither out (the outputs) of shape "
                               f"{tuple(out.shape)} nor one model's outputs {tuple(out.shape[1:])}")


def _check_outputs(out, y, labels: bool = False):
    out = V.tensor(out, "out", floating=True)
    if out.ndim < 2:
        raise V.ArgumentValueError(f"out must have shape (n_models, n, ...), got {V.describe(out)}")
    if labels:
        if out.ndim != 3 or out.shape[2] < 2:
            raise V.ArgumentValueError(f"out must be logits of shape (n_models, n, K >= 2), got {V.describe(out)}")
        V.tensor(y, "y", floating=False)
        if tuple(y.shape) not in ((out.shape[1],), tuple(out.shape[:2])):
            raise V.ArgumentValueError(f"y must have shape ({out.shape[1]},) or {tuple(out.shape[:2])} (from out "
                                       f"(n_models, n, K)), "
                                       f"got {V.describe(y)}")
        V.labels(y, "y", out.shape[2], classes_of="out")
    else:
        V.tensor(y, "y", floating=True)
    return out


def mse_per_model(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean squared error over all but the leading (model) axis: shape ``(n_models,)``.

    ``out`` ``(n_models, n, ...)`` and ``y`` (per model or shared) must be finite floating tensors.
    The trainers of this module call the unchecked ``_mse_per_model`` per step (their data were
    checked once)."""
    _check_outputs(out, y)
    return _mse_per_model(out, y)


def _mse_per_model(out, y):
    return ((out - _targets_like(out, y)) ** 2).flatten(1).mean(1)


def logistic_per_model(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Logistic loss ``log(1 + exp(-y f))`` for labels ``y`` in {-1, +1}, per model (checked as in
    :func:`mse_per_model`)."""
    _check_outputs(out, y)
    return _logistic_per_model(out, y)


def _logistic_per_model(out, y):
    return torch.nn.functional.softplus(-_targets_like(out, y) * out).flatten(1).mean(1)


def cross_entropy_per_model(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Softmax cross-entropy of logits ``(n_models, n, K)`` against class indices, per model.

    ``y``: an integer tensor ``(n,)`` (shared) or ``(n_models, n)`` with indices in ``[0, K)``."""
    _check_outputs(out, y, labels=True)
    return _cross_entropy_per_model(out, y)


def _cross_entropy_per_model(out, y):
    M, n, K = out.shape
    y = y.expand(M, n) if y.ndim == 1 else y
    return torch.nn.functional.cross_entropy(out.reshape(M * n, K), y.reshape(M * n),
                                             reduction="none").reshape(M, n).mean(1)


# the trainers call these per step without re-checking data they checked once at their boundary
_UNCHECKED = {mse_per_model: _mse_per_model, logistic_per_model: _logistic_per_model,
              cross_entropy_per_model: _cross_entropy_per_model}


def make_optimizer(params, optimizer: str = "sgd", lr: float = 0.1, momentum: float = 0.0,
                   weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """``sgd`` (optionally with momentum) or ``adam`` over ``params``.

    ``lr`` > 0, ``momentum`` in [0, 1), ``weight_decay`` >= 0, all finite; ``params`` a non-empty
    iterable of tensors (or of torch parameter-group dicts)."""
    lr = V.positive(lr, "lr (the learning rate)")
    momentum = V.fraction(momentum, "momentum")
    weight_decay = V.nonnegative(weight_decay, "weight_decay")
    V.choice(optimizer, "optimizer", OPTIMIZERS)
    if isinstance(params, torch.Tensor) or not hasattr(params, "__iter__") or isinstance(params, (str, bytes)):
        raise V.ArgumentTypeError(f"params must be an iterable of tensors, got {V.describe(params)}")
    params = list(params)
    if not params or not all(isinstance(p, (torch.Tensor, dict)) for p in params):
        raise V.ArgumentValueError(f"params must be a non-empty iterable of tensors, got {V.describe(params)}")
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")


def _check_data(model, X: torch.Tensor, y: torch.Tensor, loss_fn):
    """Once per training call: the model, finite non-empty data, a callable loss; returns the loss
    function the loop calls (the unchecked twin of this module's own losses)."""
    V.instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    V.tensor(X, "X", floating=True)
    V.tensor(y, "y")
    V.callable_(loss_fn, "loss_fn")
    try:
        return _UNCHECKED.get(loss_fn, loss_fn)
    except TypeError:  # an unhashable callable
        return loss_fn


def train_full_batch(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, loss_fn, steps: int,
                     lr: float, optimizer: str = "sgd", momentum: float = 0.0, weight_decay: float = 0.0,
                     log_every: int | None = None, progress: bool = True, desc: str = "train",
                     device=None) -> History:
    """Full-batch gradient descent on ``loss_fn(model(X), y)`` for ``steps`` steps.

    ``log_every`` defaults to ``steps // 100`` (about 100 logged points); the step after the last one
    is always logged, so ``history.final_loss`` is the loss of the trained model. Each logged loss is
    checked: a NaN or infinite loss stops training with :class:`lib.validate.TrainingDivergedError`
    naming the step (within ``log_every`` steps of the first bad one) and the learning rate.
    ``device``: where to train (see the module docstring; ``None`` is ``REPRO_DEVICE``).
    """
    loss_fn = _check_data(model, X, y, loss_fn)
    steps = V.positive_int(steps, "steps")
    log_every = max(1, steps // 100) if log_every is None else V.positive_int(log_every, "log_every")
    with on_device(model, device) as device:
        opt = make_optimizer(model.parameters(), optimizer, lr, momentum, weight_decay)
        return _full_batch_loop(model, X.to(device), y.to(device), loss_fn, steps, lr, log_every, opt,
                                progress, desc)


def _full_batch_loop(model, X, y, loss_fn, steps, lr, log_every, opt, progress, desc) -> History:
    """The loop of :func:`train_full_batch` (arguments checked, everything on one device)."""
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
                V.finite_loss(hist.loss[-1], step, lr)
                bar.update(log_every if step else 1)
        with torch.no_grad():
            hist.steps.append(steps)
            hist.loss.append(loss_fn(model(X), y).detach().clone())
            V.finite_loss(hist.loss[-1], steps, lr)
    hist.loss = [l.cpu().numpy() if l.ndim else float(l) for l in hist.loss]
    hist.wall_time_s = time.perf_counter() - start
    return hist


def train_minibatch(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, loss_fn, epochs: int,
                    batch_size: int, lr: float, seed: int = 0, optimizer: str = "sgd",
                    momentum: float = 0.0, weight_decay: float = 0.0, progress: bool = True,
                    desc: str = "train", on_epoch_end=None, device=None) -> History:
    """Minibatch SGD/Adam over shuffled rows of ``X`` (first axis), one history point per epoch.

    ``on_epoch_end(epoch, model)`` may be given to evaluate or anneal between epochs (Chapter 5).
    Each epoch's mean loss is checked: NaN or inf stops training with
    :class:`lib.validate.TrainingDivergedError` naming the epoch and the learning rate.
    ``device``: where to train (see the module docstring; ``None`` is ``REPRO_DEVICE``). ``on_epoch_end``
    sees the model on ``device``.

    Two paths, chosen by :func:`lib.device_step.step_mode` (``REPRO_STEP_MODE``; by default the host loop
    on the CPU and the device program on CUDA). The host loop draws each epoch's order on a CPU generator
    seeded ``seed``, the same on every device. The device program (issue 36, :func:`_minibatch_program`)
    draws the orders on the device's own generator (seeded ``seed``), so that **a CUDA run trains on other
    batches than a CPU run** (other random numbers, not only other rounding); its epoch losses stay on the
    device and are read once at the end, where a NaN or inf is reported for the first epoch that had one
    (training went on to the end); with ``on_epoch_end`` each epoch's loss is read and checked before the
    callback, which runs on the host between the captured steps and may change the parameters and buffers
    *in place* (a callback that replaces a parameter tensor is not seen by the captured steps).
    """
    loss_fn = _check_data(model, X, y, loss_fn)
    if X.ndim == 0 or y.ndim == 0 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same number of rows, got {tuple(X.shape)} and {tuple(y.shape)}")
    epochs, batch_size = V.positive_int(epochs, "epochs"), V.positive_int(batch_size, "batch_size")
    seed = V.seed(seed)
    if on_epoch_end is not None:
        V.callable_(on_epoch_end, "on_epoch_end")
    with on_device(model, device) as device:
        opt = make_optimizer(model.parameters(), optimizer, lr, momentum, weight_decay)
        if step_mode(device) != "host":  # issue 36: CUDA's path, a device program
            return _program_history(model, X.to(device), y.to(device), loss_fn, epochs, batch_size, seed,
                                    _device_optimizer(model, optimizer, lr, momentum, weight_decay), lr,
                                    progress, desc, on_epoch_end, step_mode(device))
        return _minibatch_loop(model, X.to(device), y.to(device), loss_fn, epochs, batch_size, lr, seed, opt,
                               progress, desc, on_epoch_end)


def _minibatch_loop(model, X, y, loss_fn, epochs, batch_size, lr, seed, opt, progress, desc,
                    on_epoch_end) -> History:
    """The loop of :func:`train_minibatch` (arguments checked, everything on one device)."""
    gen = torch.Generator().manual_seed(int(seed))
    hist, n = History(), X.shape[0]
    start = time.perf_counter()
    for epoch in tqdm(range(epochs), desc=desc, disable=not progress, leave=False):
        order, total = torch.randperm(n, generator=gen), 0.0
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size].to(X.device)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(X[idx]), y[idx])
            (loss.sum() if loss.ndim else loss).backward()
            opt.step()
            total = total + loss.detach() * len(idx)
        hist.steps.append(epoch + 1)
        mean = total / n
        hist.loss.append(mean.cpu().numpy() if mean.ndim else float(mean))
        V.finite_loss(hist.loss[-1], f"{epoch + 1} (epoch)", lr)
        if on_epoch_end is not None:
            on_epoch_end(epoch, model)
    hist.wall_time_s = time.perf_counter() - start
    return hist


# --------------------------------------------------------------------------------------------
# train_minibatch as a device program (issue 36): lib.maxmargin.train_adam shares it

GRAPH_CHUNK = 64          # most steps per replayed CUDA graph of the minibatch device program
AHEAD = 2                 # replayed graphs the host queues beyond the one the GPU runs (StepRunner's ``ahead``)
ORDER_ENTRIES = 2 ** 24   # most row indices (epochs x rows) of batch orders held on the device at once


def minibatch_step(model, X, y, loss_fn, opt, orders, counter, totals, batch_size: int, last: bool = False):
    """One step of :func:`train_minibatch` as a device program (:mod:`lib.device_step`, issue 36): nothing is
    read back to the host and every tensor it touches stays where it is, so that the step can be captured
    as a CUDA graph and replayed.

    ``X``, ``y``: the ``n`` training rows on the device. ``orders`` ``(B, n)`` long: row ``e % B`` is epoch
    ``e``'s order of the rows (the host redraws it every ``B`` epochs); ``counter``: a 0-d long tensor, the
    steps taken so far, which the step advances; step ``counter`` is batch ``b = counter % s`` of epoch
    ``e = counter // s`` (``s = ceil(n / batch_size)`` steps per epoch) and takes the rows
    ``orders[e % B, b batch_size : (b + 1) batch_size]``; ``last``: the step of an epoch's last batch when
    ``batch_size`` does not divide ``n`` (its ``n % batch_size`` rows), which the host runs after the epoch's
    full batches. ``totals`` ``(epochs, ...)``: per epoch the sum of each batch's loss times its number of
    rows, as the host loop sums it (the step adds its own to row ``e``). ``loss_fn(model(X[idx]), y[idx])``
    (a scalar or one loss per model, whose sum is differentiated) and ``opt`` (:class:`lib.device_step.DeviceSGD`
    or :class:`~lib.device_step.DeviceAdam` over the parameters) as in the host loop. Returns ``step()`` -> the
    batch's loss (detached)."""
    n, dev = X.shape[0], X.device
    per_epoch = -(-n // batch_size)
    rows = n - (per_epoch - 1) * batch_size if last else batch_size
    flat, offsets, B = orders.view(-1), torch.arange(rows, device=dev), orders.shape[0]

    def step():
        epoch = torch.div(counter, per_epoch, rounding_mode="floor")
        idx = flat[(epoch % B) * n + (counter - epoch * per_epoch) * batch_size + offsets]
        loss = loss_fn(model(X[idx]), y[idx])
        opt.update(gradients(loss.sum() if loss.ndim else loss, opt.params))
        with torch.no_grad():
            totals.index_add_(0, epoch.reshape(1), (loss.detach() * rows).unsqueeze(0))
            counter.add_(1)
        return loss.detach()
    return step


def _device_optimizer(model, optimizer: str, lr: float, momentum: float, weight_decay: float):
    """:func:`make_optimizer`'s optimiser (arguments checked there) as a :mod:`lib.device_step` one."""
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer == "adam":
        return DeviceAdam(params, lr, weight_decay=weight_decay)
    return DeviceSGD(params, torch.tensor(float(lr), dtype=params[0].dtype, device=params[0].device), momentum,
                     weight_decay)


def _chunk(steps: int) -> int:
    """Steps per captured graph for runs of ``steps`` steps: the size ``c <= GRAPH_CHUNK`` with the fewest
    replays (``steps // c`` graphs of ``c`` steps, then ``steps % c`` of one step)."""
    if steps < 1:
        return 1
    return min(range(min(GRAPH_CHUNK, steps), 0, -1), key=lambda c: steps // c + steps % c)


def _loss_shape(model, X, y, loss_fn, rows: int):
    """Shape and dtype of one batch's loss, from a forward of the first ``rows`` rows without side effects (no
    gradient, no random numbers drawn, buffers such as batch-norm statistics restored)."""
    saved = [b.detach().clone() for b in model.buffers()]
    with torch.no_grad(), torch.random.fork_rng(devices=[X.device] if X.device.type == "cuda" else []):
        loss = loss_fn(model(X[:rows]), y[:rows])
        for b, old in zip(model.buffers(), saved):
            b.copy_(old)
    return tuple(loss.shape), loss.dtype


def _set_device_program(modules, on: bool) -> None:
    """``device_program`` of each module that has one (its forward then skips the per-batch input checks that
    read a value back to the host: the program checked its data once)."""
    for m in modules:
        m.device_program = on


def _minibatch_program(model, X, y, loss_fn, epochs: int, batch_size: int, seed: int, opt, mode: str,
                       progress: bool = False, desc: str = "train", on_epoch_end=None, lr=None) -> torch.Tensor:
    """The device program of :func:`train_minibatch` (and :func:`lib.maxmargin.train_adam`), arguments checked,
    ``X``, ``y`` and the model on one device, ``mode`` from :func:`lib.device_step.step_mode`: returns the
    per-epoch sums of batch loss x rows, ``(epochs, ...)``, on the CPU (read once, at the end).

    Inside :func:`lib.device_step.seeded` ``(device, seed)`` the host draws every epoch's order on the device
    (``torch.randperm``, ``B`` epochs at a time, at most :data:`ORDER_ENTRIES` indices), then replays
    :func:`minibatch_step`: all steps of a block of epochs in one :class:`lib.device_step.StepRunner` call when
    every batch is full and there is no callback (graphs of up to :data:`GRAPH_CHUNK` steps, the host
    :data:`AHEAD` replays ahead of the GPU at most), else epoch by epoch (the full batches, then the last
    batch's own step, then ``on_epoch_end`` after checking the epoch's loss)."""
    dev, n = X.device, X.shape[0]
    per_epoch, tail = -(-n // batch_size), n % batch_size
    full, epochwise = per_epoch - (1 if tail else 0), bool(tail) or on_epoch_end is not None
    block = max(1, min(epochs, ORDER_ENTRIES // n))
    shape, dtype = _loss_shape(model, X, y, loss_fn, min(batch_size, n))
    orders = torch.empty(block, n, dtype=torch.long, device=dev)
    counter = torch.zeros((), dtype=torch.long, device=dev)
    totals = torch.zeros((epochs, *shape), dtype=dtype, device=dev)
    flagged = [m for m in model.modules() if hasattr(m, "device_program")]

    def runner(last: bool, steps: int):
        step = minibatch_step(model, X, y, loss_fn, opt, orders, counter, totals, batch_size, last)
        return StepRunner(step, mode, chunk=_chunk(steps), ahead=AHEAD)

    _set_device_program(flagged, True)
    try:
        with seeded(dev, seed), tqdm(total=epochs, desc=desc, disable=not progress, leave=False) as bar:
            runs = ([(runner(False, full if epochwise else block * full), full)] if full else []) + \
                   ([(runner(True, 1), 1)] if tail else [])
            for first in range(0, epochs, block):
                stop = min(epochs, first + block)
                for r in range(stop - first):
                    orders[r] = torch.randperm(n, device=dev)
                if not epochwise:
                    runs[0][0].run((stop - first) * full)
                    bar.update(stop - first)
                    continue
                for epoch in range(first, stop):
                    for run, steps in runs:
                        run.run(steps)
                    bar.update()
                    if on_epoch_end is not None:
                        V.finite_loss(totals[epoch], f"{epoch + 1} (epoch)", lr)
                        _set_device_program(flagged, False)
                        on_epoch_end(epoch, model)
                        _set_device_program(flagged, True)
    finally:
        _set_device_program(flagged, False)
    return totals.cpu()


def _program_history(model, X, y, loss_fn, epochs, batch_size, seed, opt, lr, progress, desc, on_epoch_end,
                     mode) -> History:
    """:func:`train_minibatch`'s history from :func:`_minibatch_program`: each epoch's mean loss (its sum / n, as
    the host loop divides it), checked in order, so that a NaN or inf names the first epoch that had one."""
    start = time.perf_counter()
    sums = _minibatch_program(model, X, y, loss_fn, epochs, batch_size, seed, opt, mode, progress, desc,
                              on_epoch_end, lr)
    hist = History()
    for epoch, mean in enumerate(sums / X.shape[0]):
        hist.steps.append(epoch + 1)
        hist.loss.append(mean.numpy() if mean.ndim else float(mean))
        V.finite_loss(hist.loss[-1], f"{epoch + 1} (epoch)", lr)
    hist.wall_time_s = time.perf_counter() - start
    return hist
