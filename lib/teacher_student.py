"""Teacher-student ReLU networks and student specialisation (chapter 09; Tian 2020).

A fixed *teacher* network labels the inputs; an over-realised *student* (more hidden nodes than the
teacher) is trained on the teacher's outputs with the loss ½‖f*(x) − f(x)‖² (Eq. 2 of the paper).
The paper's theorems say that, once the gradient is small at every sample, each teacher node is
*specialised*: some student node is aligned with it. This module holds:

* the two-layer setting of the paper's experiments: :func:`make_teacher` (regular first layer,
  fan-out of node ``j`` scaled by ``(j+1)**-p``), :func:`make_student`, :func:`gaussian_inputs`;
* the batched trainer :func:`train_two_layer` (plain SGD or GD, float64, a leading axis of
  independent students trained in one tensor computation, a hand-written backward pass);
* the metrics: :func:`correlation_matrix`, :func:`best_correlation` (Pearson correlation of hidden
  activations), :func:`specialisation_steps`, :func:`fan_out_norms`, :func:`alignment`;
* Lemma 1, the recursive gradient rule, for any depth: :func:`recursive_gradients`;
* deep teachers (Fig. 6, Theorem 5): :func:`make_teacher_deep` (regular rows, median-tuned biases,
  standardised outputs), :func:`make_student_deep`, the batched trainer :func:`train_deep` and the
  per-layer measure :func:`layer_best_correlations`;
* Definition 7's data augmentations: :func:`axis_augment` and :func:`teacher_aware_augment`, and the
  public code's teacher-aware data set :func:`teacher_aware_inputs` (Fig. 9).

Networks are lists of ``(W, b)`` pairs with ``W`` of shape (out, in), ReLU on every hidden layer and
a linear output layer. A *batched* two-layer net carries a leading axis of ``S`` nets:
``W`` of shape (S, out, in) and ``b`` of shape (S, out).

Devices (issue 22): the trainers :func:`train_two_layer`, :func:`train_with_snapshots` and
:func:`train_deep` take ``device`` (default ``REPRO_DEVICE``, :func:`lib.scale.as_device`). On the CPU
(quick and full scale) the loop is numpy, exactly as before, so the committed numbers stay
bit-identical; on another device (CUDA at paper scale) the same loop runs on float64 torch tensors
there (:class:`_TorchOps`), with the minibatch indices still drawn by numpy on the CPU (the same draws)
and moved over a chunk at a time. Every result comes back to the CPU in the types it had before.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib import validate as V
from lib.device_step import StepRunner, seeded, step_mode
from lib.scale import as_device

__all__ = [
    "make_teacher", "discrete_distinct_rows", "make_student", "gaussian_inputs", "hidden_and_output", "correlation_matrix",
    "best_correlation", "train_two_layer", "train_with_snapshots", "specialisation_steps",
    "fan_out_norms", "alignment", "recursive_terms", "recursive_gradients", "axis_augment", "teacher_aware_augment",
    "teacher_aware_inputs", "prune_students", "two_layer_flops", "make_teacher_deep", "make_student_deep",
    "deep_activations", "layer_best_correlations", "train_deep",
]


# ----------------------------------------------------------------------------------------------
# networks and data

def _rng(seed):
    return np.random.default_rng(V.seed(seed))


CHOICES = (-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0)


def discrete_distinct_rows(rows: int, cols: int, seed: int = 0, choices=CHOICES) -> np.ndarray:
    """A (rows, cols) matrix whose entries are drawn uniformly from ``choices`` and whose rows are pairwise
    distinct and non-zero (the public code's ``init_separate_w``; Assumption 1: no two teacher weights
    co-linear is then almost sure for the normalised rows)."""
    rows, cols = V.positive_int(rows, "rows"), V.positive_int(cols, "cols")
    choices = V.array(choices, "choices", ndim=1)
    if len(np.unique(choices)) < 2:
        raise V.ArgumentValueError(f"choices must hold at least two distinct values, got {choices.tolist()}")
    rng = _rng(seed)
    for _ in range(1000):
        M = rng.choice(choices, size=(rows, cols))
        unit = M / np.maximum(np.linalg.norm(M, axis=1, keepdims=True), 1e-300)
        if (np.abs(M).sum(axis=1) > 0).all() and len(np.unique(unit.round(12), axis=0)) == rows:
            return M
    raise V.ArgumentValueError(f"could not draw {rows} distinct non-zero rows of length {cols} from {choices.tolist()}")


def make_teacher(d: int, m: int, C: int, p: float = 1.0, bias: float = -0.1, seed: int = 0) -> list:
    """A two-layer teacher ``[(W1 (m, d), b1 (m,)), (W2 (C, m), b2 (C,))]`` in float64, as the public code
    builds it (``recon_two_layer.py``, ``init``): entries drawn from {−1, −0.75, ..., 1}, the rows of ``W1``
    (one per teacher node) and of ``W2`` (one per output) pairwise distinct and non-zero
    (:func:`discrete_distinct_rows`, the code's ``init_separate_w(m, d)`` and ``init_separate_w(c, m)``),
    first-layer weights normalised to be *regular* (Definition 1: ``‖w̃_j‖ = 1``), every bias ``bias``
    (the code's −0.1). The fan-out of node ``j`` (column ``j`` of ``W2``, the paper's ``v*_j``) is divided
    by ``(j+1)**p``: ``p`` is the teacher polarity (Eq. 10; ``p = 0``: all nodes equally strong on
    average).
    """
    d, m, C = V.positive_int(d, "d"), V.positive_int(m, "m"), V.positive_int(C, "C")
    p = V.nonnegative(p, "p (the fan-out decay exponent)")
    bias = V.real(bias, "bias")
    seed = V.seed(seed)
    W1 = discrete_distinct_rows(m, d, seed)
    W1 /= np.linalg.norm(W1, axis=1, keepdims=True)
    W2 = discrete_distinct_rows(C, m, seed + 1) * (np.arange(1, m + 1, dtype=float) ** -p)[None, :]
    return [(W1, np.full(m, bias)), (W2, np.full(C, bias))]


def make_student(d: int, n: int, C: int, S: int | None = None, scale: float = 0.005, seed: int = 0) -> list:
    """A two-layer student with ``n`` hidden nodes: Gaussian weights times ``scale`` (the public code:
    0.005), biases 0, float64. ``S`` (an int) gives ``S`` independent students stacked on a leading axis;
    ``None`` one unbatched student."""
    d, n, C = V.positive_int(d, "d"), V.positive_int(n, "n"), V.positive_int(C, "C")
    scale = V.positive(scale, "scale")
    lead = () if S is None else (V.positive_int(S, "S"),)
    rng = _rng(seed)
    return [(scale * rng.standard_normal(lead + (n, d)), np.zeros(lead + (n,))),
            (scale * rng.standard_normal(lead + (C, n)), np.zeros(lead + (C,)))]


def gaussian_inputs(N: int, d: int, std: float = 1.5, seed: int = 0) -> np.ndarray:
    """``N`` inputs from N(0, std² I_d), float64 (the public code's σ = 1.5)."""
    N, d = V.positive_int(N, "N"), V.positive_int(d, "d")
    std = V.positive(std, "std")
    return std * _rng(seed).standard_normal((N, d))


def _check_net(net, name: str, single: bool = False, layers: int | None = 2) -> list:
    """``net`` as a list of float64 ``(W, b)`` numpy pairs with consistent shapes (``single``: no leading
    axis of nets allowed; ``layers``: the required number of layers, ``None`` for any)."""
    net = V.sequence(net, name, min_len=1)
    if layers is not None and len(net) != layers:
        raise V.ArgumentValueError(f"{name} must be a list of {layers} (W, b) pairs (a two-layer net), "
                                   f"got {len(net)} layer(s)")
    out = []
    lead = None
    for i, pair in enumerate(net):
        try:
            W, b = pair
        except (TypeError, ValueError):
            raise V.ArgumentTypeError(f"{name}[{i}] must be a (W, b) pair, got {V.describe(pair)}") from None
        W = V.array(W, f"{name}[{i}] W", ndim=(2, 3))
        b = V.array(b, f"{name}[{i}] b", ndim=(1, 2))
        if W.ndim != b.ndim + 1 or W.shape[:-1] != b.shape:
            raise V.ArgumentValueError(f"{name}[{i}]: b must have shape {W.shape[:-1]} to match W of shape "
                                       f"{W.shape}, got {b.shape}")
        this_lead = W.shape[:-2]
        if lead is None:
            lead = this_lead
        elif this_lead != lead:
            raise V.ArgumentValueError(f"{name}: every layer needs the same leading (batch) axes, got "
                                       f"{lead} and {this_lead}")
        if out and out[-1][0].shape[-2] != W.shape[-1]:
            raise V.ArgumentValueError(f"{name}[{i}] W has {W.shape[-1]} inputs but layer {i - 1} has "
                                       f"{out[-1][0].shape[-2]} outputs")
        out.append((W, b))
    if single and lead:
        raise V.ArgumentValueError(f"{name} must be a single net (W of shape (out, in)), got leading axes {lead}")
    return out


def hidden_and_output(net, X) -> tuple[np.ndarray, np.ndarray]:
    """Hidden ReLU activations and outputs of a two-layer net (batched or not) on inputs ``X`` (N, d):
    shapes (N, n) and (N, C), or (S, N, n) and (S, N, C) for a batched net."""
    net = _check_net(net, "net")
    (W1, b1), (W2, b2) = net
    X = V.array(X, "X", ndim=2)
    if X.shape[1] != W1.shape[-1]:
        raise V.ArgumentValueError(f"X must have {W1.shape[-1]} columns (the net's inputs), got {X.shape[1]}")
    H = np.maximum(X @ np.swapaxes(W1, -1, -2) + b1[..., None, :], 0.0)
    return H, H @ np.swapaxes(W2, -1, -2) + b2[..., None, :]


def two_layer_flops(d: int, n: int, C: int, batch: int) -> int:
    """Floating-point operations of one SGD step of a d-n-C student on ``batch`` samples (forward,
    backward and update; multiply-adds count 2), the count behind the benchmark's GFLOP/s."""
    d, n, C, batch = (V.positive_int(v, k) for v, k in ((d, "d"), (n, "n"), (C, "C"), (batch, "batch")))
    forward = 2 * batch * (d * n + n * C)
    backward = 2 * batch * n * C + 2 * batch * (n * C + d * n)  # dW2, g1 = g2 W2, dW1
    return forward + backward + 2 * (n * d + n + C * n + C)


# ----------------------------------------------------------------------------------------------
# correlation of hidden nodes (the paper's measure of specialisation)

def correlation_matrix(H_teacher, H_student) -> np.ndarray:
    """Pearson correlations (m, n) between the columns of ``H_teacher`` (N, m) and ``H_student`` (N, n).

    A column that is constant over the rows (a dead node) has correlation 0 with everything.
    """
    Ht = V.array(H_teacher, "H_teacher", ndim=2)
    Hs = V.array(H_student, "H_student", ndim=2)
    if Ht.shape[0] != Hs.shape[0]:
        raise V.ArgumentValueError(f"H_teacher and H_student must have the same number of rows (samples), "
                                   f"got {Ht.shape[0]} and {Hs.shape[0]}")
    def unit(H):
        Z = H - H.mean(axis=0)
        norm = np.linalg.norm(Z, axis=0)
        scale = np.abs(H).max(axis=0) * math.sqrt(H.shape[0])
        ok = norm > 1e-12 * np.maximum(scale, 1e-300)
        out = np.zeros_like(Z)
        out[:, ok] = Z[:, ok] / norm[ok]
        return out
    return unit(Ht).T @ unit(Hs)


def best_correlation(H_teacher, H_student) -> np.ndarray:
    """For each teacher node (column of ``H_teacher``, shape (N, m)) the largest Pearson correlation with
    any student node (column of ``H_student``, shape (N, n)): shape (m,). A constant column has
    correlation 0. ``ValueError`` when the row counts differ."""
    return correlation_matrix(H_teacher, H_student).max(axis=1)


def specialisation_steps(best_history, steps, threshold: float = 0.95) -> np.ndarray:
    """First step at which each teacher's best correlation exceeds ``threshold``.

    ``best_history``: array (..., T, m), the best correlation of each of ``m`` teachers at the ``T``
    recorded ``steps`` (increasing). Returns (..., m) floats, ``inf`` where it never does.
    """
    Bh = V.array(best_history, "best_history", ndim=(2, 3, 4))
    steps = V.array(steps, "steps", ndim=1)
    threshold = V.real(threshold, "threshold", min=-1.0, max=1.0)
    if Bh.shape[-2] != steps.shape[0]:
        raise V.ArgumentValueError(f"best_history has {Bh.shape[-2]} recorded steps but steps has {steps.shape[0]}")
    if (np.diff(steps) <= 0).any():
        raise V.ArgumentValueError("steps must be strictly increasing")
    above = Bh > threshold
    first = np.argmax(above, axis=-2)
    return np.where(above.any(axis=-2), steps[first], np.inf)


def fan_out_norms(net) -> np.ndarray:
    """‖v_k‖ of every hidden node of a two-layer net: the norms of the columns of ``W2`` (the node's
    outgoing weights), shape (n,) or (S, n)."""
    (_, _), (W2, _) = _check_net(net, "net")
    return np.linalg.norm(W2, axis=-2)


def alignment(w_teacher, b_teacher: float, w_student, b_student: float) -> tuple[float, float]:
    """Definition 3: ``(sin θ̃, |b − b*|)`` between a teacher node and a student node after rescaling both
    to regular weights (‖w̃‖ = 1; ReLU is positively homogeneous, so this changes no activation pattern)."""
    wt = V.array(w_teacher, "w_teacher", ndim=1)
    ws = V.array(w_student, "w_student", shape=wt.shape, agree="w_teacher")
    bt, bs = V.real(b_teacher, "b_teacher"), V.real(b_student, "b_student")
    nt, ns = np.linalg.norm(wt), np.linalg.norm(ws)
    if nt == 0 or ns == 0:
        raise V.ArgumentValueError("w_teacher and w_student must be non-zero to be rescaled to regular weights")
    cos = float(wt @ ws / (nt * ns))
    return math.sqrt(max(0.0, 1.0 - cos * cos)), abs(bs / ns - bt / nt)


def prune_students(student, keep) -> list:
    """The two-layer ``student`` with the fan-out (column of ``W2``) of every node with ``keep`` False set
    to 0 (Corollary 1: un-specialised nodes can be removed). ``keep``: booleans of shape (n,) or (S, n)."""
    (W1, b1), (W2, b2) = _check_net(student, "student")
    keep = V.array(keep, "keep", dtype=None)
    if keep.dtype != bool or keep.shape != W2.shape[:-2] + W2.shape[-1:]:
        raise V.ArgumentValueError(f"keep must be a boolean array of shape {W2.shape[:-2] + W2.shape[-1:]}, "
                                   f"got {V.describe(keep)}")
    return [(W1.copy(), b1.copy()), (W2 * keep[..., None, :], b2.copy())]


# ----------------------------------------------------------------------------------------------
# training

class _NumpyOps:
    """The trainers' array operations on the CPU (numpy; the committed numbers)."""

    @staticmethod
    def put(a):
        """A float64 numpy array as the loop's array (here: itself, no copy)."""
        return a

    @staticmethod
    def home(a):
        """A numpy copy on the CPU of a loop array (for snapshots and results)."""
        return a.copy()

    @staticmethod
    def copy(a):
        return a.copy()

    @staticmethod
    def empty(shape):
        return np.empty(shape)

    @staticmethod
    def ones(shape):
        return np.ones(shape)

    @staticmethod
    def mask(shape):
        """A boolean buffer (the ReLU gates)."""
        return np.empty(shape, dtype=bool)

    @staticmethod
    def relu(a, out=None):
        return np.maximum(a, 0.0, out=out)

    @staticmethod
    def positive(a, out):
        """``a > 0`` into the boolean buffer ``out``."""
        return np.greater(a, 0.0, out=out)

    @staticmethod
    def swap(a):
        """The last two axes swapped (a view)."""
        return np.swapaxes(a, -1, -2)

    @staticmethod
    def rows(parts):
        """The arrays ``parts`` stacked along their second-to-last axis (a new array)."""
        return np.concatenate(parts, axis=-2)

    @staticmethod
    def take(a, idx, out):
        """The rows ``idx`` (any shape) of the 2-D ``a`` into ``out`` (shape ``idx.shape + a.shape[1:]``)."""
        return np.take(a, idx, axis=0, out=out, mode="clip")   # indices are valid: no buffering

    matmul = staticmethod(np.matmul)
    subtract = staticmethod(np.subtract)

    @staticmethod
    def index(idx):
        """Row indices drawn by numpy, ready to index the loop's arrays."""
        return idx


class _TorchOps:
    """The same operations on float64 torch tensors on ``device`` (CUDA at paper scale, issue 22):
    inputs go there once, indices a chunk at a time, everything the loop creates is created there, and
    :meth:`home` brings results back to the CPU as numpy arrays."""

    def __init__(self, device):
        self.device = torch.device(device)

    def put(self, a):
        return torch.as_tensor(a, dtype=torch.float64).to(self.device)

    @staticmethod
    def home(a):
        return a.detach().to("cpu", copy=True).numpy()

    @staticmethod
    def copy(a):
        return a.clone()

    def empty(self, shape):
        return torch.empty(shape, dtype=torch.float64, device=self.device)

    def ones(self, shape):
        return torch.ones(shape, dtype=torch.float64, device=self.device)

    def mask(self, shape):
        return torch.empty(shape, dtype=torch.bool, device=self.device)

    @staticmethod
    def relu(a, out=None):
        if out is None:
            return torch.clamp_min(a, 0.0)
        return out.copy_(torch.clamp_min(a, 0.0))        # ``out`` may be a strided view

    @staticmethod
    def positive(a, out):
        return torch.gt(a, 0.0, out=out)

    @staticmethod
    def swap(a):
        return a.transpose(-1, -2)

    @staticmethod
    def rows(parts):
        return torch.cat(parts, dim=-2)

    @staticmethod
    def take(a, idx, out):
        torch.index_select(a, 0, idx.reshape(-1), out=out.view(-1, a.shape[1]))
        return out

    @staticmethod
    def matmul(a, b, out):
        return torch.matmul(a, b, out=out)

    @staticmethod
    def subtract(a, b, out):
        return torch.sub(a, b, out=out)

    def index(self, idx):
        return torch.from_numpy(idx).to(self.device)


def _ops(device):
    """The loop's operations for ``device`` (a ``torch.device``): numpy on the CPU, torch elsewhere."""
    return _NumpyOps if device.type == "cpu" else _TorchOps(device)


def _training_device(device):
    """``device`` checked by :func:`lib.scale.as_device` (``None``: ``REPRO_DEVICE``) before any work;
    MPS is refused too, as it has no float64, which these trainers need."""
    device = as_device(device)
    if device.type == "mps":
        raise V.ArgumentValueError("device is 'mps', which has no float64: the teacher-student trainers "
                                   "train in float64 on 'cpu' or 'cuda'")
    return device


def _index_batches(rng, N, S, B, steps, ops, chunk, per_step):
    """Each step's (S, B) minibatch row indices, drawn on the CPU by ``rng`` in the trainers' original
    order (``per_step``: one ``rng.integers`` call per step; else one call per ``chunk`` steps) and
    handed to the device ``chunk`` steps at a time (one transfer per chunk, not per step)."""
    for t0 in range(0, steps, chunk):
        k = min(chunk, steps - t0)
        idx = np.stack([rng.integers(N, size=(S, B)) for _ in range(k)]) if per_step \
            else rng.integers(N, size=(k, S, B))
        yield from ops.index(idx)


def _as_tensors(net):
    return [(torch.as_tensor(W, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)) for W, b in net]


def _check_pair(teacher, student, X):
    was_torch = isinstance(student[0][0], torch.Tensor) if isinstance(student, (list, tuple)) and student \
        and isinstance(student[0], (list, tuple)) and student[0] else False
    teacher = _check_net(teacher, "teacher")
    student = _check_net(student, "student")
    X = V.array(X, "X", ndim=2)
    (T1, _), (T2, _) = teacher
    (W1, _), (W2, _) = student
    if T1.shape[-1] != X.shape[1] or W1.shape[-1] != X.shape[1]:
        raise V.ArgumentValueError(f"X has {X.shape[1]} columns but the teacher takes {T1.shape[-1]} inputs "
                                   f"and the student {W1.shape[-1]}")
    if T2.shape[-2] != W2.shape[-2]:
        raise V.ArgumentValueError(f"teacher and student must have the same number of outputs, got "
                                   f"{T2.shape[-2]} and {W2.shape[-2]}")
    if T1.ndim == 3 and (W1.ndim != 3 or T1.shape[0] != W1.shape[0]):
        raise V.ArgumentValueError(f"a batched teacher of {T1.shape[0]} nets needs a student batch of the same "
                                   f"size, got student W of shape {W1.shape}")
    return teacher, student, X, was_torch


def _augmented(net, ops):
    """A (batched) two-layer net as the public code lays it out: per layer one (…, in + 1, out) array whose
    last row is the bias (``[W̃; b]``, the paper's ``W_l``), on the loop's device, contiguous."""
    return [ops.rows([ops.swap(ops.put(W)), ops.put(b)[..., None, :]]) for W, b in net]


def _plain(A):
    """A (…, in + 1, out) layer of :func:`_augmented` (a numpy array) back as ``(W (…, out, in), b (…, out))``."""
    return np.ascontiguousarray(np.swapaxes(A[..., :-1, :], -1, -2)), A[..., -1, :].copy()


def _train(teacher, student, X, steps, lr, batch_size, seed, record_at, ops=_NumpyOps):
    """The shared SGD/GD loop: float64, the hand-written backward of ½‖f* − f‖² averaged over the batch
    (Eq. 1), every layer in the public code's augmented layout (:func:`_augmented`: inputs carry a
    column of ones, so each layer is one matrix product and one update), preallocated buffers, with the
    array operations ``ops`` (:class:`_NumpyOps` on the CPU, :class:`_TorchOps` on another device).
    Returns the trained student and the snapshots at ``record_at``, as numpy arrays on the CPU."""
    unbatched = student[0][0].ndim == 2
    T1, T2 = _augmented(teacher, ops)                          # (…, d + 1, m), (…, m + 1, C)
    A1, A2 = _augmented(student, ops)                          # (S, d + 1, n), (S, n + 1, C): trained in place
    if unbatched:
        A1, A2 = A1[None], A2[None]
    N, d = X.shape
    Xa = ops.put(np.concatenate([X, np.ones((N, 1))], axis=1))   # [x; 1]
    (S, _, n), (m, C) = A1.shape, T2.shape[-2:]
    m -= 1
    per_student = T1.ndim == 3 and batch_size is not None
    B = N if batch_size is None else batch_size

    def teacher_out(x, hidden):
        """The teacher's outputs on ``x``, its hidden layer written into ``hidden`` (last column ones)."""
        ops.relu(x @ T1, out=hidden[..., :m])
        return hidden @ T2

    # one teacher (or GD): its outputs on all of X once; a batched teacher under SGD: on each minibatch
    Y = None if per_student else teacher_out(Xa, ops.ones(T1.shape[:-2] + (N, m + 1)))
    rng = np.random.default_rng(seed)
    record, snaps = set(record_at), {}

    def snapshot():
        net = [_plain(ops.home(A1)), _plain(ops.home(A2))]
        return [(W[0], b[0]) for W, b in net] if unbatched else net

    x, y = (ops.empty((S, B, d + 1)), ops.empty((S, B, C))) if batch_size is not None else (Xa, Y)
    hidden_t = ops.ones((S, B, m + 1)) if per_student else None
    z, ha, mask = ops.empty((S, B, n)), ops.ones((S, B, n + 1)), ops.mask((S, B, n))
    h = ha[..., :n]                                            # the student's hidden layer; [h; 1] = ha
    g2, g1 = ops.empty((S, B, C)), ops.empty((S, B, n))
    d1, d2 = ops.empty(A1.shape), ops.empty(A2.shape)
    W2T = ops.swap(A2[:, :n, :])                               # a view: it follows the in-place updates
    xT, haT = ops.swap(x), ops.swap(ha)
    step = lr / B
    batches = None if batch_size is None else _index_batches(rng, N, S, B, steps, ops, 1024, per_step=False)
    for t in range(steps):
        if t in record:
            snaps[t] = snapshot()
        if batch_size is not None:
            idx = next(batches)
            ops.take(Xa, idx, out=x)                               # (S, B, d + 1)
            if per_student:
                y = teacher_out(x, hidden_t)                       # (S, B, C)
            else:
                ops.take(Y, idx, out=y)
        ops.matmul(x, A1, out=z)                                   # pre-activations
        ops.relu(z, out=h)
        ops.matmul(ha, A2, out=g2)
        ops.subtract(y, g2, out=g2)                                # f* − f
        g2 *= step
        ops.matmul(g2, W2T, out=g1)
        g1 *= ops.positive(z, out=mask)                            # gated back-propagated gradient g_1
        ops.matmul(haT, g2, out=d2)                                # Eq. 1: Ẇ_2 = E[f_1 g_2ᵀ]
        A2 += d2
        ops.matmul(xT, g1, out=d1)                                 # Ẇ_1 = E[x g_1ᵀ]
        A1 += d1
        if (t + 1) % 256 == 0 or t + 1 == steps:
            V.finite_loss(A2.sum() + A1.sum(), t + 1, lr, what="student weights")
    if steps in record:
        snaps[steps] = snapshot()
    return snapshot(), snaps


def _checked_train_args(teacher, student, X, steps, lr, batch_size, seed, device):
    device = _training_device(device)
    teacher, student, X, was_torch = _check_pair(teacher, student, X)
    steps = V.nonnegative_int(steps, "steps")
    lr = V.positive(lr, "lr (the learning rate)")
    if batch_size is not None:
        batch_size = V.positive_int(batch_size, "batch_size")
    seed = V.seed(seed)
    return teacher, student, X, steps, lr, batch_size, seed, was_torch, _ops(device)


def _format(net, as_torch):
    return [(torch.as_tensor(W), torch.as_tensor(b)) for W, b in net] if as_torch else net


def train_two_layer(teacher, student, X, steps, lr, batch_size=16, seed=0, device=None):
    """Train a two-layer ReLU student on a two-layer ReLU teacher's outputs; returns the trained student.

    ``teacher`` and ``student`` are lists of (W, b) pairs (float64); the student may carry a leading
    axis of ``S`` independent students (W of shape (S, out, in), b of shape (S, out)), all trained
    against the same teacher (or, ours, against a teacher batched the same way: student ``s`` learns
    teacher ``s``). Plain SGD on the mean over the minibatch of ½‖teacher(x) − student(x)‖², each
    student drawing its own minibatches of ``batch_size`` rows with replacement from ``X``
    (``batch_size=None``: full-batch gradient descent). The gradient is written out by hand
    (Eq. 1: ``Ẇ = E[f_{l−1} g_lᵀ]``) and every student is updated in one batched tensor computation.
    Returns the student in the format it came in (numpy arrays, or tensors if tensors were given), on
    the CPU. ``device`` (default ``REPRO_DEVICE``; issue 22): where the loop runs, the CPU (numpy, the
    committed numbers) or e.g. CUDA at paper scale (torch, same minibatch draws); checked first.
    """
    teacher, student, X, steps, lr, batch_size, seed, was_torch, ops = _checked_train_args(
        teacher, student, X, steps, lr, batch_size, seed, device)
    with np.errstate(over="ignore", invalid="ignore"):   # a divergence raises TrainingDivergedError
        trained, _ = _train(teacher, student, X, steps, lr, batch_size, seed, (), ops)
    return _format(trained, was_torch)


def train_with_snapshots(teacher, student, X, steps, lr, record_at, batch_size=16, seed=0, device=None):
    """:func:`train_two_layer` that also returns copies of the student at the steps ``record_at``
    (0 = before training, ``steps`` = the end): ``(trained, {step: student})``, all on the CPU."""
    teacher, student, X, steps, lr, batch_size, seed, was_torch, ops = _checked_train_args(
        teacher, student, X, steps, lr, batch_size, seed, device)
    record_at = [V.nonnegative_int(s, "record_at step", max=steps) for s in V.sequence(record_at, "record_at")]
    with np.errstate(over="ignore", invalid="ignore"):
        trained, snaps = _train(teacher, student, X, steps, lr, batch_size, seed, record_at, ops)
    return _format(trained, was_torch), {k: _format(v, was_torch) for k, v in sorted(snaps.items())}


# ----------------------------------------------------------------------------------------------
# Lemma 1: the recursive gradient rule, any depth

def _forward_all(net, X):
    """Pre-activations z_l and activations f_l of every layer (ReLU hidden, linear output)."""
    zs, fs, f = [], [], X
    for i, (W, b) in enumerate(net):
        z = f @ W.T + b
        f = z if i == len(net) - 1 else np.maximum(z, 0.0)
        zs.append(z)
        fs.append(f)
    return zs, fs


def recursive_terms(teacher, student, X) -> list:
    """Lemma 1's terms at the inputs ``X`` (N, d), for every student layer ``l = 1..L``, built from
    Definition 2: a list of dicts with ``A`` (N, n_l + 1, m_l + 1) = ``V_lᵀ V*_l``, ``B`` (N, n_l + 1,
    n_l + 1) = ``V_lᵀ V_l``, the student's gates ``D`` (N, n_l) and the activations ``f_star`` (N, m_l + 1)
    and ``f`` (N, n_l + 1), augmented with the constant 1 (the paper's bias convention), so that
    ``g_l = D_l [A_l f*_l − B_l f_l]`` (Eq. 5; :func:`recursive_gradients`).

    ``V_L = V*_L = I`` and ``V_{l−1} = V_l D_l W_l`` (Eq. 3, in this module's (out, in) convention; the
    paper writes ``W_lᵀ``), with one more column that carries the biases, so that ``f_L = V_l [f_l; 1]``.
    Teacher and student are deep ReLU nets of the same depth with the same input and output sizes (any
    widths). ``A_l`` and ``B_l`` depend on ``x`` only through the gates of layers ``l + 1..L`` of both
    nets: they are piecewise constant (Corollary 2).
    """
    teacher = _check_net(teacher, "teacher", single=True, layers=None)
    student = _check_net(student, "student", single=True, layers=None)
    if len(teacher) != len(student):
        raise V.ArgumentValueError(f"teacher and student must have the same depth, got {len(teacher)} and "
                                   f"{len(student)} layers")
    X = V.array(X, "X", ndim=2)
    for name, net in (("teacher", teacher), ("student", student)):
        if net[0][0].shape[1] != X.shape[1]:
            raise V.ArgumentValueError(f"X has {X.shape[1]} columns but the {name} takes {net[0][0].shape[1]} inputs")
    if teacher[-1][0].shape[0] != student[-1][0].shape[0]:
        raise V.ArgumentValueError("teacher and student must have the same number of outputs")
    N, C, L = X.shape[0], student[-1][0].shape[0], len(student)
    zs, fs = _forward_all(student, X)
    zt, ft = _forward_all(teacher, X)

    def gates(z, last):
        return np.ones_like(z) if last else (z > 0).astype(float)

    eye = np.broadcast_to(np.eye(C), (N, C, C))
    Vs = np.concatenate([eye, np.zeros((N, C, 1))], axis=2)      # V_L (augmented with the bias column)
    Vt = Vs.copy()
    out = [None] * L
    for l in range(L, 0, -1):                                    # layers L, L-1, ..., 1
        Ds, Dt = gates(zs[l - 1], l == L), gates(zt[l - 1], l == L)
        out[l - 1] = {"A": np.einsum("nci,ncj->nij", Vs, Vt), "B": np.einsum("nci,ncj->nij", Vs, Vs), "D": Ds,
                      "f_star": np.concatenate([ft[l - 1], np.ones((N, 1))], axis=1),
                      "f": np.concatenate([fs[l - 1], np.ones((N, 1))], axis=1)}
        # V_{l-1} = V_l D_l W_l ; the bias column accumulates V_l D_l b_l
        (W, b), (Wt, bt) = student[l - 1], teacher[l - 1]
        Ms, Mt = Vs[:, :, :-1] * Ds[:, None, :], Vt[:, :, :-1] * Dt[:, None, :]
        Vs = np.concatenate([Ms @ W, (Vs[:, :, -1] + Ms @ b)[:, :, None]], axis=2)
        Vt = np.concatenate([Mt @ Wt, (Vt[:, :, -1] + Mt @ bt)[:, :, None]], axis=2)
    return out


def recursive_gradients(teacher, student, X) -> list:
    """Lemma 1 (Eq. 5): the back-propagated gradient ``g_l(x) = D_l(x)[A_l(x) f*_l(x) − B_l(x) f_l(x)]`` of
    every student layer ``l = 1..L`` at the inputs ``X`` (N, d), from the terms of :func:`recursive_terms`
    (the last row of ``A f* − B f`` belongs to the constant 1 and is dropped). Returns
    ``[g_1, ..., g_L]``, ``g_l`` of shape (N, n_l): ``g_l = −∂J/∂z_l`` for ``J = ½‖f*_L − f_L‖²`` and the
    pre-activations ``z_l``."""
    out = []
    for t in recursive_terms(teacher, student, X):
        g = np.einsum("nij,nj->ni", t["A"], t["f_star"]) - np.einsum("nij,nj->ni", t["B"], t["f"])
        out.append(t["D"] * g[:, :-1])
    return out


# ----------------------------------------------------------------------------------------------
# data sets of Definition 7 and Fig. 9

def axis_augment(X, delta: float) -> np.ndarray:
    """Definition 7(a), teacher-agnostic: ``X`` together with ``x ± delta e_u`` for every sample and every
    axis ``u``: (N (2d + 1), d) rows, the originals first, then for each sample its 2d neighbours
    ordered (+e_1, −e_1, +e_2, −e_2, ...)."""
    X = V.array(X, "X", ndim=2)
    delta = V.positive(delta, "delta")
    N, d = X.shape
    steps = np.zeros((2 * d, d))
    steps[0::2] = delta * np.eye(d)
    steps[1::2] = -delta * np.eye(d)
    return np.concatenate([X, (X[:, None, :] + steps[None]).reshape(N * 2 * d, d)])


def teacher_aware_augment(X, teacher, delta: float, eps: float) -> np.ndarray:
    """Definition 7(b), teacher-aware: ``X`` together with ``x ± delta w̃*_j`` for every sample within
    distance ``eps`` of teacher node ``j``'s boundary (``|w̃*_jᵀx + b*_j| / ‖w̃*_j‖ ≤ eps``), with
    ``w̃*_j`` normalised. Rows: the originals, then per teacher node ``j`` (in order) the ``+`` copies
    of its near-boundary samples followed by the ``−`` copies."""
    X = V.array(X, "X", ndim=2)
    (W1, b1), _ = _check_net(teacher, "teacher", single=True)
    if W1.shape[1] != X.shape[1]:
        raise V.ArgumentValueError(f"X has {X.shape[1]} columns but the teacher takes {W1.shape[1]} inputs")
    delta, eps = V.positive(delta, "delta"), V.positive(eps, "eps")
    norms = np.linalg.norm(W1, axis=1)
    parts = [X]
    for j in range(W1.shape[0]):
        u = W1[j] / norms[j]
        near = X[np.abs(X @ W1[j] + b1[j]) / norms[j] <= eps]
        parts += [near + delta * u, near - delta * u]
    return np.concatenate(parts)


def teacher_aware_inputs(teacher, N: int, std: float = 1.5, alpha=(1.0, 2.0), seed: int = 0) -> np.ndarray:
    """The public code's teacher-aware training set (``theory_suggest_train``, Fig. 9): for each of the
    ``m`` teacher nodes, ``ceil(N / 3m)`` Gaussian points projected onto the node's boundary hyperplane,
    plus copies shifted by ``± a w̃*_j`` with ``a ~ U[alpha]``; finally every point is rescaled to norm
    ``std √d``. Returns (3 m ceil(N / 3m), d)."""
    (W1, b1), _ = _check_net(teacher, "teacher", single=True)
    N = V.positive_int(N, "N")
    std = V.positive(std, "std")
    lo, hi = V.interval(alpha, "alpha")
    rng = _rng(seed)
    m, d = W1.shape
    k = math.ceil(N / (3 * m))
    parts = []
    for j in range(m):
        w = np.concatenate([W1[j], [b1[j]]])
        P = std * rng.standard_normal((k, d + 1))
        P[:, -1] = 1.0
        P = P - np.outer(P @ w, w) / (w @ w)          # onto the hyperplane w·[x; 1] = 0 (homogeneous)
        P = P[:, :-1] / P[:, -1:]
        a = rng.uniform(lo, hi, size=k)[:, None]
        parts += [P, P + a * W1[j], P - a * W1[j]]
    Xa = np.concatenate(parts)
    return Xa / np.linalg.norm(Xa, axis=1, keepdims=True) * std * math.sqrt(d)


# ----------------------------------------------------------------------------------------------
# deep teachers (Fig. 6, Theorem 5): any depth, batched over students

def _check_widths(widths, name: str = "widths") -> list:
    widths = V.sequence(widths, name, min_len=1)
    return [V.positive_int(w, f"{name}[{i}]") for i, w in enumerate(widths)]


def make_teacher_deep(d: int, widths, C: int, X_tune, seed: int = 0) -> list:
    """A deep ReLU teacher with hidden ``widths`` (the paper's Fig. 6: 50-75-100-125) and ``C`` linear
    outputs, built like the public code's multilayer teacher (``recon_multilayer.py``: ``init_w`` with
    ``init_separate_w``, ``normalize``, ``teacher_tune.tune_teacher`` and ``tune_teacher_last_layer``):
    every layer's rows drawn from {−1, −0.75, ..., 1}, pairwise distinct and non-zero
    (:func:`discrete_distinct_rows`), and normalised (regular, Definition 1); then *tuned* on the inputs
    ``X_tune`` (N, d) layer by layer from the bottom: each hidden node's bias is minus the median of its
    pre-activation (torch's median: the lower middle value for even N; so every teacher node is active
    on half of ``X_tune``, and the code's random initial biases cancel in this step), and every output is
    standardised to mean 0 and (unbiased, as ``torch.std``) standard deviation 1 on ``X_tune``. Float64
    list of (W, b) pairs, W of shape (out, in)."""
    d, C = V.positive_int(d, "d"), V.positive_int(C, "C")
    widths = _check_widths(widths)
    X_tune = V.array(X_tune, "X_tune", ndim=2)
    if X_tune.shape[1] != d:
        raise V.ArgumentValueError(f"X_tune must have d = {d} columns, got {X_tune.shape[1]}")
    if len(X_tune) < 2:
        raise V.ArgumentValueError(f"X_tune needs at least 2 rows to tune the teacher, got {len(X_tune)}")
    rng = _rng(seed)
    net, f = [], X_tune
    for n_in, n_out in zip([d] + widths, widths + [C]):
        W = discrete_distinct_rows(n_out, n_in, int(rng.integers(2 ** 31)))
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        z = f @ W.T
        if len(net) < len(widths):
            b = -np.sort(z, axis=0)[(len(z) - 1) // 2]
            f = np.maximum(z + b, 0.0)
        else:
            sd = z.std(axis=0, ddof=1)
            if not (sd > 0).all():
                raise V.ArgumentValueError("X_tune gives a constant teacher output: it needs more varied rows")
            W, b = W / sd[:, None], -z.mean(axis=0) / sd
        net.append((W, b))
    return net


def make_student_deep(d: int, widths, C: int, S: int | None = None, scale: float = 1.0, seed: int = 0) -> list:
    """A deep student with hidden ``widths``: PyTorch's default ``nn.Linear`` initialisation (weights and
    biases uniform in ±1/√fan_in) times ``scale``, float64. The default 1 is what the public code trains:
    ``recon_multilayer.py`` multiplies its student by ``student_scale_down = 0.1`` but then calls
    ``student.reset_parameters()`` at the start of every trial, which restores the default
    initialisation. ``S`` stacks ``S`` independent students on a leading axis (W of shape (S, out, in))."""
    d, C = V.positive_int(d, "d"), V.positive_int(C, "C")
    widths = _check_widths(widths)
    scale = V.positive(scale, "scale")
    lead = () if S is None else (V.positive_int(S, "S"),)
    rng = _rng(seed)
    net = []
    for n_in, n_out in zip([d] + widths, widths + [C]):
        r = scale / math.sqrt(n_in)
        net.append((rng.uniform(-r, r, lead + (n_out, n_in)), rng.uniform(-r, r, lead + (n_out,))))
    return net


def _deep_forward(net, x, ops=_NumpyOps):
    """Pre-activations and activations ``[x, f_1, ..., f_L]`` of a (batched) deep net; ``x`` (N, d) or
    (S, N, d); numpy arrays, or tensors with ``ops`` a :class:`_TorchOps`."""
    zs, fs = [], [x]
    for i, (W, b) in enumerate(net):
        z = fs[-1] @ ops.swap(W) + b[..., None, :]
        zs.append(z)
        fs.append(z if i == len(net) - 1 else ops.relu(z))
    return zs, fs


def deep_activations(net, X) -> tuple[list, np.ndarray]:
    """Hidden ReLU activations of every hidden layer and the outputs of a deep net (batched or not)
    on ``X`` (N, d): ``([f_1, ..., f_{L-1}], f_L)``, shapes (N, n_l) or (S, N, n_l)."""
    net = _check_net(net, "net", layers=None)
    X = V.array(X, "X", ndim=2)
    if X.shape[1] != net[0][0].shape[-1]:
        raise V.ArgumentValueError(f"X must have {net[0][0].shape[-1]} columns (the net's inputs), got {X.shape[1]}")
    _, fs = _deep_forward(net, X)
    return fs[1:-1], fs[-1]


def layer_best_correlations(teacher, student, X) -> list:
    """Theorem 5 / Fig. 6: for every hidden layer ``l``, each teacher node's best Pearson correlation with
    a student node *of the same layer* on the inputs ``X``: a list of arrays (m_l,) or, for a batched
    student, (S, m_l). Teacher (one net) and student need the same depth."""
    teacher = _check_net(teacher, "teacher", single=True, layers=None)
    student = _check_net(student, "student", layers=None)
    if len(teacher) != len(student):
        raise V.ArgumentValueError(f"teacher and student must have the same depth, got {len(teacher)} and "
                                   f"{len(student)} layers")
    Ht, _ = deep_activations(teacher, X)
    Hs, _ = deep_activations(student, X)
    out = []
    for ht, hs in zip(Ht, Hs):
        if hs.ndim == 2:
            out.append(best_correlation(ht, hs))
        else:
            out.append(np.stack([best_correlation(ht, h) for h in hs]))
    return out


def _train_deep(teacher, student, X, steps, lr, batch_size, seed, record_at, ops=_NumpyOps):
    """SGD/GD of a batched deep student: hand-written backward ``g_L = f* − f``,
    ``g_{l−1} = D_{l−1} W_lᵀ g_l`` (Eq. 15; Lemma 1 gives the same g_l) and ``Ẇ_l = E[g_l f_{l−1}ᵀ]`` (Eq. 1),
    with the array operations ``ops`` (numpy on the CPU, torch on another device); results as numpy."""
    unbatched = student[0][0].ndim == 2
    net = [(ops.put(W), ops.put(b)) for W, b in student]
    net = [(ops.copy(W[None]), ops.copy(b[None])) if unbatched else (ops.copy(W), ops.copy(b)) for W, b in net]
    X = ops.put(X)
    _, ft = _deep_forward([(ops.put(W), ops.put(b)) for W, b in teacher], X, ops)
    Y = ft[-1]
    S, N = net[0][0].shape[0], X.shape[0]
    rng = np.random.default_rng(seed)
    record, snaps = set(record_at), {}

    def snapshot():
        return [(ops.home(W[0]), ops.home(b[0])) if unbatched else (ops.home(W), ops.home(b)) for W, b in net]

    schedule = lr if isinstance(lr, dict) else {0: lr}
    # one rng call per step as before; staged a chunk at a time (at most ~2^24 indices) for the device
    batches = None if batch_size is None else _index_batches(
        rng, N, S, batch_size, steps, ops, max(1, min(1024, 2 ** 24 // (S * batch_size))), per_step=True)
    for t in range(steps):
        if t in schedule:
            lr = schedule[t]
            step = lr / (N if batch_size is None else batch_size)
        if t in record:
            snaps[t] = snapshot()
        if batch_size is None:
            x, y = X, Y
        else:
            idx = next(batches)
            x, y = X[idx], Y[idx]
        _deep_sgd_update(net, x, y, step, ops)
        if (t + 1) % 256 == 0 or t + 1 == steps:
            V.finite_loss(sum(W.sum() for W, _ in net), t + 1, lr, what="student weights")
    if steps in record:
        snaps[steps] = snapshot()
    return snapshot(), snaps


GRAPH_CHUNK = 64  # SGD steps per replayed CUDA graph of the deep students' device program (issue 36)


def deep_step(net, X, Y, batch_size, rate):
    """One step of :func:`_train_deep` as a device program (:mod:`lib.device_step`, issue 36): the batched net
    ``net`` (torch ``(W (S, out, in), b (S, out))`` pairs, updated in place), inputs ``X`` (N, d) and teacher
    outputs ``Y`` (N, C) resident on the device, each student's minibatch indices drawn there, and the rate
    ``rate`` (learning rate / batch size) a 0-d tensor, so that a schedule changes it without a new step.
    Returns ``step()``."""
    S, N = net[0][0].shape[0], X.shape[0]

    def step():
        if batch_size is None:
            x, y = X, Y
        else:
            idx = torch.randint(N, (S, batch_size), device=X.device)
            x, y = X[idx], Y[idx]
        _deep_sgd_update(net, x, y, rate, _TorchOps)
    return step


def _deep_sgd_update(net, x, y, step, ops):
    """One SGD step of the deep students on the minibatch ``(x, y)``, in place: backpropagation of the squared
    error by hand and ``W += step dW`` (``step``: learning rate / batch size, a float or a 0-d tensor). Shared
    by :func:`_train_deep` (numpy or torch on the host) and :func:`deep_step` (the device program)."""
    zs, fs = _deep_forward(net, x, ops)
    g = y - fs[-1]                                                # g_L = f*_L − f_L
    for l in range(len(net) - 1, -1, -1):
        W, b = net[l]
        dW = ops.swap(g) @ fs[l]
        db = g.sum(-2)
        if l:
            g = (g @ W) * (zs[l - 1] > 0)                         # g_{l−1} = D_{l−1} W_lᵀ g_l
        W += step * dW
        b += step * db


def _train_deep_program(teacher, student, X, steps, lr, batch_size, seed, record_at, device, mode):
    """:func:`_train_deep` on CUDA (issue 36): :func:`deep_step` run by a :class:`lib.device_step.StepRunner`
    (``mode``), a chunk of :data:`GRAPH_CHUNK` steps per CUDA graph; the host acts only at the schedule's
    steps and at ``record_at``. The minibatches are the device generator's (seeded ``seed``), not numpy's."""
    ops = _TorchOps(device)
    unbatched = student[0][0].ndim == 2
    net = [(ops.put(W)[None].clone(), ops.put(b)[None].clone()) if unbatched else (ops.put(W).clone(), ops.put(b).clone())
           for W, b in student]  # copies: on the CPU ops.put shares the caller's arrays, which the steps change in place
    Xd = ops.put(X)
    Y = _deep_forward([(ops.put(W), ops.put(b)) for W, b in teacher], Xd, ops)[1][-1]
    B, rate, snaps = X.shape[0] if batch_size is None else batch_size, ops.empty(()), {}

    def snapshot():
        return [(ops.home(W[0]), ops.home(b[0])) if unbatched else (ops.home(W), ops.home(b)) for W, b in net]

    with seeded(ops.device, seed):
        runner = StepRunner(deep_step(net, Xd, Y, batch_size, rate), mode, chunk=GRAPH_CHUNK)
        for t in sorted({0, steps, *record_at, *(k for k in lr if k < steps)}):
            runner.run(t - runner.done)
            if t in lr:
                rate.fill_(lr[t] / B)
            if t in record_at:
                snaps[t] = snapshot()
    V.finite_loss(sum(float(W.sum()) for W, _ in net), steps, lr, what="student weights")
    return snapshot(), snaps


def _lr_schedule(lr, steps: int) -> dict:
    """``lr`` (a number > 0, or a dict {first step: learning rate} whose first step is 0) as a checked
    dict {step: learning rate}."""
    if not isinstance(lr, dict):
        return {0: V.positive(lr, "lr (the learning rate)")}
    if 0 not in lr:
        raise V.ArgumentValueError(f"lr (a learning-rate schedule) must give the rate at step 0, got steps {sorted(lr)}")
    return {V.nonnegative_int(k, "lr schedule step"): V.positive(v, f"lr (the learning rate from step {k})")
            for k, v in sorted(lr.items())}


def train_deep(teacher, student, X, steps, lr, batch_size=64, seed=0, record_at=(), device=None) -> tuple[list, dict]:
    """Train a deep ReLU student (any depth, batched or not) on a deep teacher's outputs (Fig. 6): plain
    SGD on the minibatch mean of ½‖f*(x) − f(x)‖², each of the ``S`` students drawing its own minibatches
    of ``batch_size`` rows with replacement (``None``: full-batch GD), all ``S`` updated in one batched
    tensor computation with a hand-written backward pass. ``lr``: a learning rate, or a piecewise
    constant schedule ``{first step: rate}`` starting at step 0 (the public code's ``lr: "{0:0.2,20:0.1}"``
    is in epochs and for ``nn.MSELoss``, the mean over the ``C`` outputs: its rate ``r`` is ``2 r / C``
    here). Teacher and student have the same depth and
    input/output sizes; the teacher is one net. Returns ``(trained, {step: student})`` with copies of the
    student at the steps ``record_at`` (0 = before training), numpy on the CPU. ``device`` (default
    ``REPRO_DEVICE``; issue 22): where the loop runs, as in :func:`train_two_layer`; checked first."""
    device = _training_device(device)
    teacher = _check_net(teacher, "teacher", single=True, layers=None)
    student = _check_net(student, "student", layers=None)
    if len(teacher) != len(student):
        raise V.ArgumentValueError(f"teacher and student must have the same depth, got {len(teacher)} and "
                                   f"{len(student)} layers")
    X = V.array(X, "X", ndim=2)
    if teacher[0][0].shape[1] != X.shape[1] or student[0][0].shape[-1] != X.shape[1]:
        raise V.ArgumentValueError(f"X has {X.shape[1]} columns but the teacher takes {teacher[0][0].shape[1]} "
                                   f"inputs and the student {student[0][0].shape[-1]}")
    if teacher[-1][0].shape[0] != student[-1][0].shape[-2]:
        raise V.ArgumentValueError(f"teacher and student must have the same number of outputs, got "
                                   f"{teacher[-1][0].shape[0]} and {student[-1][0].shape[-2]}")
    steps = V.nonnegative_int(steps, "steps")
    lr = _lr_schedule(lr, steps)
    if batch_size is not None:
        batch_size = V.positive_int(batch_size, "batch_size")
    seed = V.seed(seed)
    record_at = [V.nonnegative_int(s, "record_at step", max=steps) for s in V.sequence(record_at, "record_at")]
    if step_mode(device) != "host":  # issue 36: CUDA's path (a device program)
        return _train_deep_program(teacher, student, X, steps, lr, batch_size, seed, record_at, device,
                                   step_mode(device))
    with np.errstate(over="ignore", invalid="ignore"):
        return _train_deep(teacher, student, X, steps, lr, batch_size, seed, record_at, _ops(device))
