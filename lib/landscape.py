"""The optimisation landscape of networks with a wide layer (chapter 10; Nguyen 2019, Ch. 2 and 3).

Part A (thesis Ch. 2): a layer of width ``n >= N`` makes the feature matrix ``F`` (one row per training
sample) full rank, so a linear read-out fits any labels exactly. :func:`nr_rank` (the Numerical-Recipes
rank), :func:`random_features`, :func:`exact_fit`, the constructive proof of Thm 2.4.4
(:func:`triangular_features`), the gradient sandwich of Lemma 2.4.9 (:func:`grad_sandwich`) and a tiny
CNN for Table 2.2 in miniature (:func:`tiny_cnn`, :func:`train_square`, :func:`cnn_feature_ranks`).

Part B (thesis Ch. 3): the explicit path of Thm 3.4.9 between two leaky-ReLU networks inside a sublevel
set (:func:`sublevel_path`), the rank repair of Lemmas 3.4.10/3.4.14 (:func:`rank_repair_path`) and the
descent path of Thm 3.4.17(1) (:func:`descent_path`).

Conventions: a network is a list of ``(W, b)`` pairs of float64 arrays with ``W`` of shape
``(d_out, d_in)``, as everywhere in the book (``lib.nets``): ``x -> W_L s(... s(W_1 x + b_1) ...) + b_L``.
The thesis writes ``W_l`` of shape ``(n_{l-1}, n_l)`` and ``F_l = s(F_{l-1} W_l + 1 b_l^T)``: its ``W_l``
is the transpose of ours. Stacked over the samples, ``F_l = s(F_{l-1} W_l^T + b_l)`` here.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib import validate as V
from lib.nets import as_float64_params, check_leak, leaky_np, preactivations_f64
from lib.scale import on_device

ACTIVATIONS = ("sigmoid", "tanh", "softplus", "leaky_relu", "relu", "linear")


# ---------------------------------------------------------------------------------------------
# data and ranks

def nr_threshold(svals, shape) -> float:
    """The Numerical-Recipes rank threshold (Press 2007, §2.6.1; the thesis' Table 2.2): singular values
    of an ``m x n`` matrix at or below ``0.5 * sqrt(m + n + 1) * s_max * eps`` (float64 ``eps``) count as
    zero. ``svals``: the singular values (any order; an empty spectrum gives 0), ``shape``: ``(m, n)``.
    The one home of the rule: :func:`nr_rank` and chapter 10's spectra (Table 2.2 in miniature, Lemma
    4.3.2's Psi) use it."""
    s = V.array(svals, "svals", ndim=1, nonempty=False)
    shape = V.sequence(shape, "shape", min_len=2)
    if len(shape) != 2:
        raise V.ArgumentValueError(f"shape must be (m, n), got {shape!r}")
    m, n = (V.positive_int(k, "shape[i]") for k in shape)
    if np.any(s < 0):
        raise V.ArgumentValueError("svals: singular values are non-negative")
    return 0.5 * math.sqrt(m + n + 1.0) * (float(s.max()) if s.size else 0.0) * np.finfo(np.float64).eps


def nr_rank(A) -> tuple[int, np.ndarray]:
    """Numerical rank of a matrix by the Numerical-Recipes rule (:func:`nr_threshold`): the number of
    singular values above the threshold. Returns ``(rank, svals)`` with the singular values in
    decreasing order."""
    A = V.array(A, "A", ndim=2)
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > nr_threshold(s, A.shape))), s


def digits_data(n: int, noise_std: float = math.sqrt(1e-5), seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` scikit-learn digits (8x8, pixels scaled to [0, 1], a random subset drawn with ``seed``) with
    Gaussian noise of standard deviation ``noise_std`` added (Assumption 2.4.1: the border pixels of
    the digits are constant, so without noise the samples' patches are not distinct). Returns ``(X, y)``."""
    from sklearn.datasets import load_digits

    n = V.positive_int(n, "n", max=1797)
    noise_std = V.nonnegative(noise_std, "noise_std")
    rng = np.random.default_rng(V.seed(seed))
    data = load_digits()
    idx = rng.permutation(len(data.target))[:n]
    X = data.data[idx] / 16.0
    return X + noise_std * rng.standard_normal(X.shape), data.target[idx].astype(np.int64)


def gaussian_points(N: int, d: int, seed: int = 0) -> np.ndarray:
    """``N`` standard Gaussian points in ``R^d`` (float64, shape ``(N, d)``)."""
    N, d = V.positive_int(N, "N"), V.positive_int(d, "d")
    return np.random.default_rng(V.seed(seed)).standard_normal((N, d))


def random_labels(N: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``N`` uniformly random labels in ``0..m-1`` and their one-hot matrix: ``(y, Y)``."""
    N, m = V.positive_int(N, "N"), V.positive_int(m, "m")
    y = np.random.default_rng(V.seed(seed)).integers(0, m, N)
    return y, np.eye(m)[y]


def activate(Z, activation: str, alpha: float = 0.1) -> np.ndarray:
    """An activation applied entrywise (float64): one of :data:`ACTIVATIONS`; ``alpha`` is the
    leaky-ReLU slope (used only by ``"leaky_relu"``)."""
    Z = V.array(Z, "Z", nonempty=False)
    V.choice(activation, "activation", ACTIVATIONS)
    alpha = V.real(alpha, "alpha", min=0.0, min_open=True, max=1.0, max_open=True)
    return _act(Z, activation, alpha)


def _sigmoid(Z):
    """The logistic sigmoid ``1 / (1 + e^{-z})`` in float64, written as ``(1 + tanh(z/2)) / 2`` (no overflow
    for large ``|z|``): the one numpy sigmoid of this module (features, Lemma 2.4.9, Lemma 2.6.2)."""
    return 0.5 * (1.0 + np.tanh(0.5 * Z))


def _act(Z, activation, alpha=0.1):
    if activation == "sigmoid":
        return _sigmoid(Z)
    if activation == "tanh":
        return np.tanh(Z)
    if activation == "softplus":
        return np.logaddexp(0.0, Z)
    if activation == "leaky_relu":
        return leaky_np(Z, alpha)
    if activation == "relu":
        return np.maximum(Z, 0.0)
    return Z


def random_features(X, width: int, activation: str, seed: int = 0, alpha: float = 0.1) -> np.ndarray:
    """The feature matrix ``F = s(X W^T + b)`` (shape ``(N, width)``) of one random layer: ``W`` and
    ``b`` i.i.d. standard Gaussian, ``W`` scaled by ``1/sqrt(d)`` so pre-activations are of order 1."""
    X = V.array(X, "X", ndim=2)
    width = V.positive_int(width, "width")
    V.choice(activation, "activation", ACTIVATIONS)
    alpha = V.real(alpha, "alpha", min=0.0, min_open=True, max=1.0, max_open=True)
    rng = np.random.default_rng(V.seed(seed))
    W = rng.standard_normal((width, X.shape[1])) / math.sqrt(X.shape[1])
    b = rng.standard_normal(width)
    return _act(X @ W.T + b, activation, alpha)


def relu_layer_draws(X, width: int, n_draws: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n_draws`` random ReLU layers of ``width`` units on ``X`` (:func:`random_features`, draw ``i`` with
    seed ``10_000 * seed + i``, so that nearby seeds do not share draws): the NR rank of each feature matrix ``F_1`` and its number of *live* units (columns
    that are not zero on every sample). A dead unit adds nothing to the rank, so ``rank < N`` whenever
    fewer than ``N`` units live; chapter 10 measures whether the converse holds. Returns ``(ranks, live)``."""
    X = V.array(X, "X", ndim=2)
    width, n_draws, seed = V.positive_int(width, "width"), V.positive_int(n_draws, "n_draws", max=10_000), V.seed(seed)
    ranks, live = [], []
    for i in range(n_draws):
        F = random_features(X, width, "relu", seed=10_000 * seed + i)
        ranks.append(nr_rank(F)[0])
        live.append(int(np.count_nonzero(np.abs(F).max(axis=0) > 0)))
    return np.array(ranks), np.array(live)


def exact_fit(F, Y) -> tuple[np.ndarray, float]:
    """Least-squares read-out ``lam = argmin ||F lam - Y||_F`` (minimum norm, LAPACK gelsd) and the
    relative residual ``||F lam - Y||_F / ||Y||_F`` (Cor. 2.4.6: 0 when ``rank F = N``).

    ``Y = 0`` is fitted exactly by ``lam = 0``: its relative residual is defined as 0 (not 0/0)."""
    F = V.array(F, "F", ndim=2)
    Y = V.array(Y, "Y", ndim=2, shape=(F.shape[0], None), agree="F")
    lam = np.linalg.lstsq(F, Y, rcond=None)[0]
    norm = np.linalg.norm(Y)
    return lam, float(np.linalg.norm(F @ lam - Y) / norm) if norm > 0 else 0.0


# ---------------------------------------------------------------------------------------------
# Table 2.1, Fig. 2.1, Definition 2.3.1: widths of convolutional layers and the matrix U_k = M_k(W_k)

def conv_widths(in_shape, layers) -> list:
    """The output shapes ``(H, W, C)`` of a stack of layers on an ``in_shape = (H, W, C)`` input (Table 2.1:
    ``n_k = H W C``). ``layers``: ``("conv", kernel, stride, padding, channels)`` or ``("pool", kernel,
    stride)`` (channels kept); output side ``(side + 2 padding - kernel) // stride + 1``."""
    shape = tuple(V.positive_int(v, "in_shape[i]") for v in V.sequence(in_shape, "in_shape", min_len=3))
    if len(shape) != 3:
        raise V.ArgumentValueError(f"in_shape must be (H, W, C), got {shape}")
    out = []
    for spec in V.sequence(layers, "layers", min_len=1):
        spec = tuple(V.sequence(spec, "layers[i]", min_len=1))
        if spec[0] == "conv" and len(spec) == 5:
            k, st, pad, ch = (V.positive_int(spec[1], "kernel"), V.positive_int(spec[2], "stride"),
                              V.nonnegative_int(spec[3], "padding"), V.positive_int(spec[4], "channels"))
        elif spec[0] == "pool" and len(spec) == 3:
            k, st, pad, ch = V.positive_int(spec[1], "kernel"), V.positive_int(spec[2], "stride"), 0, shape[2]
        else:
            raise V.ArgumentValueError(f"layers: expected ('conv', kernel, stride, padding, channels) or "
                                       f"('pool', kernel, stride), got {spec!r}")
        h, w = ((side + 2 * pad - k) // st + 1 for side in shape[:2])
        if h < 1 or w < 1:
            raise V.ArgumentValueError(f"layers: {spec!r} does not fit its {shape[0]} x {shape[1]} input")
        shape = (h, w, ch)
        out.append(shape)
    return out


def conv_matrix_1d(W, n_in: int, stride: int = 1) -> np.ndarray:
    """The full weight matrix ``U = M(W)`` (shape ``(n_in, P T)``) of a 1-D convolution without padding
    whose ``T`` filters of length ``l`` are the columns of ``W`` (``(l, T)``), as in the worked example of
    §2.3 (Definition 2.3.1, eq. 2.1): column ``h = p T + t`` (0-based patch ``p``, filter ``t``) holds filter
    ``t`` at the rows of patch ``p``, so that the layer's pre-activation is ``x U + b``."""
    W = V.array(W, "W", ndim=2)
    n_in, stride = V.positive_int(n_in, "n_in"), V.positive_int(stride, "stride")
    l, T = W.shape
    if l > n_in:
        raise V.ArgumentValueError(f"W: filters of length {l} do not fit an input of {n_in}")
    P = (n_in - l) // stride + 1
    U = np.zeros((n_in, P * T))
    for p in range(P):
        U[p * stride:p * stride + l, p * T:(p + 1) * T] = W
    return U


# ---------------------------------------------------------------------------------------------
# Thm 2.4.4: the constructive proof

def triangular_features(X, a, scale: float, beta: float = 1.0, activation: str = "relu") -> tuple[np.ndarray, np.ndarray]:
    """The matrix ``A(scale)`` of the proof of Thm 2.4.4 (eq. 2.10): one unit per sample ``j``, with
    weight ``w = -scale * a`` and bias ``scale * <a, x_j> + beta``, so that
    ``A_ij = s(scale * <a, x_j - x_i> + beta)``, after sorting the samples by ``<a, x_i>`` (the greedy
    order 2.11). As ``scale -> +inf`` the entries below the diagonal tend to ``s(-inf) = 0`` and the
    diagonal is ``s(beta)``, so ``det A -> s(beta)^N`` (2.13). Returns ``(A, order)``, ``order`` the
    sample order used (its rows and columns)."""
    X = V.array(X, "X", ndim=2)
    a = V.array(a, "a", shape=(X.shape[1],), agree="X")
    scale = V.real(scale, "scale")
    beta = V.real(beta, "beta")
    V.choice(activation, "activation", ("relu", "sigmoid", "softplus"))
    p = X @ a
    if len(np.unique(p)) < len(p):
        raise V.ArgumentValueError("a: the projections <a, x_i> must be pairwise distinct (pick another direction)")
    order = np.argsort(p)
    p = p[order]
    return _act(scale * (p[None, :] - p[:, None]) + beta, activation), order


# ---------------------------------------------------------------------------------------------
# Lemma 2.4.9: the gradient sandwich (fully connected sigmoid net, square loss 1/2 ||F_L - Y||^2)

def grad_sandwich(params, X, Y, k: int) -> tuple[float, float, float]:
    """Lemma 2.4.9 for a fully connected sigmoid network (linear output) and the square loss
    ``Phi = 1/2 ||F_L - Y||_F^2`` (a sum, as in the thesis): returns ``(lower, grad, upper)`` with
    ``grad = ||dPhi/dW_{k+1}||_F`` by autograd and

        lower = s_min(F_k) * prod_{l=k+1}^{L-1} s_min(W_{l+1}) * min|s'(G_l)| * ||F_L - Y||_F,
        upper = s_max(F_k) * prod_{l=k+1}^{L-1} s_max(W_{l+1}) * max|s'(G_l)| * ||F_L - Y||_F,

    ``k`` the hidden layer (1-based) with ``n_k >= N`` and widths non-increasing above it (Assumption
    2.4.7); ``s_min`` of an ``(N, n_k)`` or ``(n_{l+1}, n_l)`` matrix is its smallest of min(shape)
    singular values."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    Y = V.array(Y, "Y", ndim=2, shape=(X.shape[0], params[-1][0].shape[0]), agree="X and params")
    L = len(params)
    k = V.integer(k, "k", min=1, max=L - 1)
    widths = [W.shape[0] for W, _ in params]
    if widths[k - 1] < X.shape[0]:
        raise V.ArgumentValueError(f"k: layer {k} has {widths[k - 1]} units, fewer than N = {X.shape[0]} "
                                   "(Lemma 2.4.9 needs n_k >= N)")
    if any(widths[l] > widths[l - 1] for l in range(k, L)):
        raise V.ArgumentValueError(f"params: the widths above layer {k} must be non-increasing, got {widths}")
    F = sigmoid_outputs(params, X)
    grad = float(np.linalg.norm(autograd_gradient(params, X, Y, k)))
    res = float(np.linalg.norm(F[-1] - Y))
    s = np.linalg.svd(F[k - 1], compute_uv=False)
    lower, upper = s[-1] if s.size >= X.shape[0] else 0.0, s[0]
    for l in range(k + 1, L):  # l = k+1 .. L-1 (1-based hidden layers above k): s'(G_l) = F_l (1 - F_l)
        dsig = F[l - 1] * (1.0 - F[l - 1])
        sw = np.linalg.svd(params[l][0], compute_uv=False)
        lower *= sw[-1] * dsig.min()
        upper *= sw[0] * dsig.max()
    return float(lower * res), grad, float(upper * res)


def sigmoid_outputs(params, X) -> list:
    """The outputs ``[F_1, ..., F_{L-1}, F_L]`` (2.4) of a fully connected sigmoid network with a linear
    output layer on the rows of ``X``, float64 (the nets of Lemma 2.4.9 and Thm 2.4.11)."""
    params = as_float64_params(params)
    F = [V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))]
    for W, b in params[:-1]:
        F.append(_sigmoid(F[-1] @ W.T + b))
    W, b = params[-1]
    return F[1:] + [F[-1] @ W.T + b]


def sigmoid_mlp(widths, seed: int = 0) -> torch.nn.Sequential:
    """A fully connected float64 torch network ``widths[0] -> ... -> widths[-1]`` with sigmoid hidden layers
    and a linear output (torch's default initialisation, seeded): the nets of Lemma 2.4.9 and of Thm
    2.4.10-2.4.12 in chapter 10. :func:`mlp_params` reads it as a ``(W, b)`` list; :func:`train_square`
    trains it."""
    widths = [V.positive_int(w, "widths[i]") for w in V.sequence(widths, "widths", min_len=2)]
    torch.manual_seed(V.seed(seed))
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(torch.nn.Sigmoid())
    return torch.nn.Sequential(*layers).double()


def mlp_params(model: torch.nn.Sequential) -> list:
    """The ``(W, b)`` float64 numpy copies of the linear layers of a :func:`sigmoid_mlp` (``W`` of shape
    ``(d_out, d_in)``, the book's convention)."""
    V.instance(model, "model", torch.nn.Sequential)
    out = [(m.weight.detach().cpu().double().numpy().copy(), m.bias.detach().cpu().double().numpy().copy())
           for m in model if isinstance(m, torch.nn.Linear)]
    if not out:
        raise V.ArgumentValueError("model: no torch.nn.Linear layer in it")
    return out


def autograd_gradient(params, X, Y, k: int) -> np.ndarray:
    """The gradient of ``Phi = 1/2 ||F_L - Y||_F^2`` (sigmoid hidden layers, linear output) with respect to
    ``W_{k+1}`` by torch autograd, float64, same shape as ``W_{k+1}``: the independent computation that
    :func:`backprop_gradient` (Lemma 2.6.2) is compared with, entry by entry."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    Y = V.array(Y, "Y", ndim=2, shape=(X.shape[0], params[-1][0].shape[0]), agree="X and params")
    k = V.integer(k, "k", min=0, max=len(params) - 1)
    Ws = [torch.tensor(W, requires_grad=True) for W, _ in params]
    Z = torch.tensor(X)
    for l, (W, (_, b)) in enumerate(zip(Ws, params)):
        Z = Z @ W.T + torch.tensor(b)
        if l < len(params) - 1:
            Z = torch.sigmoid(Z)
    (0.5 * ((Z - torch.tensor(Y)) ** 2).sum()).backward()
    return Ws[k].grad.numpy().copy()


def global_minimum(widths, X, y, seed: int = 0) -> list:
    """A global minimum with zero loss of the square loss (2.6) for one-hot targets ``Y = onehot(y)``, built
    as in the proof of Thm 2.4.11(2) for a sigmoid network ``widths = [d, n_1, m]`` (Case 1, ``k = L - 1``)
    or ``[d, n_1, n_2, m]`` with ``n_2 >= m`` (Case 2, ``k = L - 2``): the first layer is random
    (:func:`sigmoid_mlp`'s initialisation with ``seed``) and must give ``rank F_1 = N`` (``n_1 >= N``).
    Case 1: ``W_2 = (F_1^+ Y)^T``. Case 2: a random class code ``E`` (``m x n_2``, entries in (0.1, 0.9)),
    ``W_2 = (F_1^+ logit(E[y]))^T`` so that ``F_2 = E[y]``, and ``W_3 = (E^+)^T`` so that ``F_3 = Y``.
    Returns the network as float64 ``(W, b)`` pairs (zero biases above the first layer)."""
    widths = [V.positive_int(w, "widths[i]") for w in V.sequence(widths, "widths", min_len=3)]
    if len(widths) not in (3, 4):
        raise V.ArgumentValueError(f"widths must be [d, n_1, m] or [d, n_1, n_2, m] (Cases 1 and 2), got {widths}")
    X = V.array(X, "X", ndim=2, shape=(None, widths[0]))
    y = _labels(y, widths[-1], X.shape[0])
    m, N = widths[-1], X.shape[0]
    if len(widths) == 4 and widths[2] < m:
        raise V.ArgumentValueError(f"widths: Case 2 needs n_2 >= m = {m}, got {widths}")
    first = mlp_params(sigmoid_mlp(widths[:2] + [1], seed))[0]
    F1 = _sigmoid(X @ first[0].T + first[1])
    if nr_rank(F1)[0] < N:
        raise V.ArgumentValueError(f"widths: rank F_1 < N = {N} (Thm 2.4.11 needs n_1 >= N and a generic first layer)")
    Y = np.eye(m)[y]
    if len(widths) == 3:
        return [first, ((np.linalg.pinv(F1) @ Y).T.copy(), np.zeros(m))]
    E = np.random.default_rng(V.seed(seed)).uniform(0.1, 0.9, (m, widths[2]))
    D = E[y]
    W2 = (np.linalg.pinv(F1) @ np.log(D / (1.0 - D))).T.copy()
    return [first, (W2, np.zeros(widths[2])), (np.linalg.pinv(E).T.copy(), np.zeros(m))]


def backprop_gradient(params, X, Y, k: int) -> np.ndarray:
    """The gradient of ``Phi = 1/2 ||F_L - Y||_F^2`` with respect to ``W_{k+1}`` by the backpropagation
    formulas of Lemma 2.6.2 (sigmoid hidden layers, linear output), in numpy: ``Delta_L = F_L - Y``,
    ``Delta_l = (Delta_{l+1} W_{l+1}) * s'(G_l)``, and ``grad W_{k+1} = (F_k^T Delta_{k+1})^T`` (the thesis'
    proof misprints ``F_L^T``). Same shape as ``W_{k+1}``; ``k`` in ``0..L-1`` (``F_0 = X``)."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    Y = V.array(Y, "Y", ndim=2, shape=(X.shape[0], params[-1][0].shape[0]), agree="X and params")
    k = V.integer(k, "k", min=0, max=len(params) - 1)
    F = [X] + sigmoid_outputs(params, X)
    delta = F[-1] - Y
    for l in range(len(params) - 1, k, -1):
        s = F[l]
        delta = (delta @ params[l][0]) * s * (1.0 - s)
    return (F[k].T @ delta).T


# ---------------------------------------------------------------------------------------------
# Table 2.2 in miniature: a tiny CNN (conv 3x3 -> max-pool 2 -> conv 2x2 -> FC), sigmoid

def tiny_cnn(T1: int, seed: int = 0, T3: int = 20, n_out: int = 10, side: int = 8) -> torch.nn.Sequential:
    """The mini CNN of Table 2.2 for ``side x side`` one-channel images (float64): conv 3x3 with ``T1``
    filters (no padding: ``(side-2)^2 * T1`` units, layer 1), max-pool 2 (layer 2), conv 2x2 with
    ``T3`` filters (layer 3), sigmoid after each conv, a linear output layer of ``n_out`` units."""
    T1, T3, n_out = V.positive_int(T1, "T1"), V.positive_int(T3, "T3"), V.positive_int(n_out, "n_out")
    side = V.integer(side, "side", min=6)
    torch.manual_seed(V.seed(seed))
    after_pool = (side - 2) // 2
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, T1, 3), torch.nn.Sigmoid(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(T1, T3, 2), torch.nn.Sigmoid(), torch.nn.Flatten(),
        torch.nn.Linear(T3 * (after_pool - 1) ** 2, n_out)).double()


def cnn_feature_ranks(model: torch.nn.Sequential, X) -> dict:
    """NR rank and smallest singular value of the CNN's feature matrices ``F_1`` (after the first conv)
    and ``F_3`` (after the second conv), ``X`` of shape ``(N, side*side)``."""
    V.instance(model, "model", torch.nn.Sequential)
    X = V.array(X, "X", ndim=2)
    side = int(round(math.sqrt(X.shape[1])))
    if side * side != X.shape[1]:
        raise V.ArgumentValueError(f"X: rows must be square images, got {X.shape[1]} pixels")
    out = {}
    with torch.no_grad():
        Z = torch.tensor(X).reshape(-1, 1, side, side)
        F1 = model[1](model[0](Z))
        F3 = model[4](model[3](model[2](F1)))
    for name, F in (("F1", F1), ("F3", F3)):
        r, s = nr_rank(F.reshape(len(X), -1).numpy())
        out[name] = {"rank": r, "size": int(F[0].numel()), "sigma_min": float(s[min(len(X), s.size) - 1])}
    return out


def train_square(model: torch.nn.Module, X, Y, steps: int, lr: float = 3e-3, device=None) -> list:
    """Full-batch Adam on the mean square loss ``||f(X) - Y||^2 / (2N)`` with a cosine learning-rate
    decay, float64; returns the loss per step. ``X``: ``(N, side*side)`` images for a CNN made by
    :func:`tiny_cnn` or ``(N, d)`` vectors for any other module.

    Trains on ``device`` (default ``REPRO_DEVICE``: the CPU at quick and full scale, CUDA at paper scale
    where there is one; issue 22) inside :func:`lib.scale.on_device`, which moves the model back afterwards.
    """
    V.instance(model, "model", torch.nn.Module)
    X = V.array(X, "X", ndim=2)
    Y = V.array(Y, "Y", ndim=2, shape=(X.shape[0], None), agree="X")
    steps, lr = V.positive_int(steps, "steps"), V.positive(lr, "lr")
    Xt = torch.tensor(X)
    if isinstance(model, torch.nn.Sequential) and isinstance(model[0], torch.nn.Conv2d):
        side = int(round(math.sqrt(X.shape[1])))
        if side * side != X.shape[1]:
            raise V.ArgumentValueError(f"X must hold flattened square images (side * side columns) for a CNN, "
                                       f"got {X.shape[1]} columns")
        Xt = Xt.reshape(-1, 1, side, side)
    with on_device(model, device) as device:
        Xt, Yt = Xt.to(device), torch.tensor(Y).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        hist = []
        for step in range(steps):
            opt.zero_grad()
            out = model(Xt)
            if step == 0 and out.shape != Yt.shape:  # (checked on the first step's output: no extra pass)
                raise V.ArgumentValueError(f"Y must have the shape of the model's outputs on X, "
                                           f"{tuple(out.shape)}, got {Y.shape}")
            loss = 0.5 * ((out - Yt) ** 2).sum() / len(X)
            loss.backward()
            opt.step()
            sched.step()
            hist.append(float(loss.detach()))
            V.finite_loss(hist[-1], step, lr)
    return hist


# ---------------------------------------------------------------------------------------------
# Part B: leaky-ReLU networks, cross-entropy

def _slope(alpha) -> float:
    return V.real(alpha, "alpha (leaky-ReLU slope)", min=0.0, min_open=True, max=1.0, max_open=True)


def leaky_inverse(Z, alpha: float):
    """The inverse of the leaky ReLU ``max(alpha t, t)``, entrywise: ``t`` where ``t >= 0``, ``t / alpha``
    elsewhere (Assumption 3.4.1: the activation is a bijection of R; ``alpha`` in (0, 1)). Used by the map
    ``h`` of Lemma 3.4.6 here and by the bend points of chapter 10's decision regions
    (:func:`lib.decision_regions.bend_points`)."""
    return _leaky_inv(V.array(Z, "Z", nonempty=False), _slope(alpha))


def _leaky_inv(Z, alpha):
    return np.where(Z >= 0, Z, Z / alpha)


def _outputs(params, X, alpha):
    """Post-activation outputs of every layer ``[F_1, ..., F_{L-1}, F_L]`` (F_L linear) and the
    hidden pre-activations ``[G_1, ..., G_{L-1}]``, from :func:`lib.nets.preactivations_f64` (the book's
    one float64 forward pass)."""
    pre = preactivations_f64(params, X, alpha)
    feats = [leaky_np(G, alpha) for G in pre]
    W, b = params[-1]
    feats.append((feats[-1] if feats else X) @ W.T + b)
    return feats, pre


def layer_outputs(params, X, alpha: float = 0.2) -> list:
    """The outputs ``[F_1, ..., F_{L-1}, F_L]`` of every layer of a leaky-ReLU network on ``X`` (hidden
    layers after the activation, the last one linear), float64."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    return _outputs(params, X, check_leak(alpha))[0]


def _labels(y, m: int, N: int) -> np.ndarray:
    """``y`` as a 1-D int64 array of ``N`` class indices in ``0..m-1`` (a ValueError naming ``y`` otherwise)."""
    y = np.asarray(V.labels(y, "y", m, n=N, rows_of="X"), dtype=np.int64)
    if y.ndim != 1:
        raise V.ArgumentValueError(f"y must be a 1-D array of {N} labels, got shape {y.shape}")
    return y


def _ce(out, y):
    out = out - out.max(axis=1, keepdims=True)
    lse = np.log(np.exp(out).sum(axis=1))
    return float(np.mean(lse - out[np.arange(len(y)), y]))


def cross_entropy_loss(params, X, y, alpha: float = 0.2) -> float:
    """Mean cross-entropy (1.1) of a leaky-ReLU network (slope ``alpha``) on ``(X, y)``, float64."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    y = _labels(y, params[-1][0].shape[0], X.shape[0])
    return _ce(_outputs(params, X, check_leak(alpha))[0][-1], y)


def init_net(widths, seed: int = 0) -> list:
    """A random network of the given widths ``[d, n_1, ..., n_L]`` (He normal weights, zero biases),
    as a list of float64 ``(W, b)`` pairs."""
    widths = [V.positive_int(w, "widths") for w in V.sequence(widths, "widths", min_len=2)]
    rng = np.random.default_rng(V.seed(seed))
    return [(rng.standard_normal((o, i)) * math.sqrt(2.0 / i), np.zeros(o)) for i, o in zip(widths, widths[1:])]


def train_ce_gd(params, X, y, alpha: float = 0.2, lr: float = 0.5, steps: int = 300) -> tuple[list, list]:
    """Full-batch gradient descent on the mean cross-entropy of a leaky-ReLU network, float64 (torch
    autograd). Returns ``(trained params, loss per step)``."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    y = _labels(y, params[-1][0].shape[0], X.shape[0])
    alpha, lr, steps = check_leak(alpha), V.positive(lr, "lr"), V.positive_int(steps, "steps")
    ts = [torch.tensor(p, requires_grad=True) for layer in params for p in layer]
    Xt, yt = torch.tensor(X), torch.tensor(y)
    hist = []
    for step in range(steps):
        Z = Xt
        for l in range(0, len(ts) - 2, 2):
            Z = torch.nn.functional.leaky_relu(Z @ ts[l].T + ts[l + 1], alpha)
        loss = torch.nn.functional.cross_entropy(Z @ ts[-2].T + ts[-1], yt)
        grads = torch.autograd.grad(loss, ts)
        with torch.no_grad():
            for t, g in zip(ts, grads):
                t -= lr * g
        hist.append(float(loss.detach()))
        V.finite_loss(hist[-1], step, lr)
    out = [t.detach().numpy().copy() for t in ts]
    return [(out[i], out[i + 1]) for i in range(0, len(out), 2)], hist


def gradient_norm(params, X, y, alpha: float = 0.2) -> float:
    """Euclidean norm of the gradient of the mean cross-entropy with respect to all weights and
    biases of a leaky-ReLU network (torch autograd, float64)."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    y = _labels(y, params[-1][0].shape[0], X.shape[0])
    alpha = check_leak(alpha)
    ts = [torch.tensor(p, requires_grad=True) for layer in params for p in layer]
    Z = torch.tensor(X)
    for l in range(0, len(ts) - 2, 2):
        Z = torch.nn.functional.leaky_relu(Z @ ts[l].T + ts[l + 1], alpha)
    loss = torch.nn.functional.cross_entropy(Z @ ts[-2].T + ts[-1], torch.tensor(y))
    return float(torch.sqrt(sum((g ** 2).sum() for g in torch.autograd.grad(loss, ts))))


def straight_line_losses(params_a, params_b, X, y, alpha: float = 0.2, n_points: int = 101) -> np.ndarray:
    """The loss along the straight segment ``(1 - t) * params_a + t * params_b`` at ``n_points``
    equally spaced ``t`` in [0, 1]."""
    params_a, params_b = as_float64_params(params_a, "params_a"), as_float64_params(params_b, "params_b")
    _same_shapes(params_a, params_b)
    n_points = V.integer(n_points, "n_points", min=2)
    return np.array([cross_entropy_loss([((1 - t) * Wa + t * Wb, (1 - t) * ba + t * bb)
                                         for (Wa, ba), (Wb, bb) in zip(params_a, params_b)], X, y, alpha)
                     for t in np.linspace(0.0, 1.0, n_points)])


def _same_shapes(params_a, params_b):
    sa = [W.shape for W, _ in params_a]
    sb = [W.shape for W, _ in params_b]
    if sa != sb:
        raise V.ArgumentValueError(f"params_b must have the same layer shapes as params_a: {sa} vs {sb}")


def yhat_scale(m: int, target: float) -> float:
    """The smallest scale ``s`` with ``phi(s * onehot) = log(1 + (m - 1) e^{-s}) <= target`` (the
    cross-entropy of the scaled one-hot targets, for every sample alike): eq. (3.8) for CE."""
    m = V.integer(m, "m", min=2)
    target = V.positive(target, "target")
    return float(max(0.0, math.log((m - 1) / math.expm1(target))))


def _h(layers, A, X1pinv, alpha, kernels=None, w=0.0):
    """The map ``h`` of Lemma 3.4.6 (k = L): the first layer ``(W_1, b_1)`` that makes the network with
    layers 2..L fixed to ``layers`` output ``A`` on the data, plus ``w`` times the kernel parts
    ``kernels = [K_0, K_1, ..., K_{L-2}]`` (stage A of the path, ``w = 1 - lambda``)."""
    B = A
    for i in range(len(layers) - 1, -1, -1):  # layers[i] is layer i+2; B becomes B_{i+1}
        W, b = layers[i]
        pre = B if i == len(layers) - 1 else _leaky_inv(B, alpha)
        B = (pre - b) @ np.linalg.pinv(W.T)
        if kernels is not None and w != 0.0:
            B = B + w * kernels[i + 1]
    U = X1pinv @ _leaky_inv(B, alpha)
    if kernels is not None and w != 0.0:
        U = U + w * kernels[0]
    return U[:-1].T.copy(), U[-1].copy()


def _kernels(params, X, X1pinv, alpha):
    """Kernel parts of stage A: ``K_{l-1} = F_{l-1} - (s^{-1}(F_l) - b_l) pinv(W_l^T)`` for l = 2..L
    (``s^{-1}`` = identity at the output) and ``K_0 = [W_1; b_1^T] - pinv([X, 1]) G_1``."""
    feats, pre = _outputs(params, X, alpha)
    L = len(params)
    ks = [None] * L
    for l in range(2, L + 1):  # 1-based layer l: input F_{l-1} = feats[l-2], output pre-activation
        W, b = params[l - 1]
        G = feats[-1] if l == L else pre[l - 1]
        ks[l - 1] = feats[l - 2] - (G - b) @ np.linalg.pinv(W.T)
    W1, b1 = params[0]
    ks[0] = np.vstack([W1.T, b1[None, :]]) - X1pinv @ pre[0]
    return ks, feats[-1]


def _check_path_inputs(params_a, params_b, X, y, alpha):
    params_a, params_b = as_float64_params(params_a, "params_a"), as_float64_params(params_b, "params_b")
    _same_shapes(params_a, params_b)
    alpha = _slope(alpha)
    if alpha <= 0:  # pragma: no cover  (the slope validation already refuses it)
        raise V.ArgumentValueError("alpha must be > 0")
    widths = [W.shape[0] for W, _ in params_a]
    if len(widths) < 2 or any(w1 <= w2 for w1, w2 in zip(widths, widths[1:])):
        raise V.ArgumentValueError(f"params_a: the widths n_1 > n_2 > ... > n_L must be strictly decreasing "
                                   f"(Thm 3.4.9), got {widths}")
    X = V.array(X, "X", ndim=2, shape=(None, params_a[0][0].shape[1]))
    N = X.shape[0]
    y = _labels(y, widths[-1], N)
    rank = nr_rank(X)[0]
    if rank < N:
        raise V.ArgumentValueError(f"X: rank X = {rank} < N = {N}; Thm 3.4.9 needs linearly independent "
                                   "samples (N <= d)")
    for name, params in (("params_a", params_a), ("params_b", params_b)):
        for l, (W, _) in enumerate(params[1:], start=2):
            if nr_rank(W)[0] < W.shape[0]:
                raise V.ArgumentValueError(f"{name}: W_{l} is rank deficient (Property 3.4.5 fails); repair it "
                                           "first (Lemma 3.4.7)")
    return params_a, params_b, X, y, alpha


def _copy_net(params) -> list:
    return [(W.copy(), b.copy()) for W, b in params]


def _stage_a(params, X, X1pinv, alpha, lams) -> list:
    """Stage A of Thm 3.4.9's path: only ``(W_1, b_1)`` moves, from ``params`` to the h-point
    ``h(theta_{2..L}, F_L)``, as ``h`` plus ``(1 - lambda)`` times the kernel parts (:func:`_kernels`); the
    output ``F_L`` stays put. The first network is ``params`` itself (the kernel parts make ``h`` at
    ``lambda = 0`` equal to it up to rounding; if they are wrong the path jumps at its first step, which
    the chapter's continuity check sees once the jump exceeds about a third of that step's own motion)."""
    K, F = _kernels(params, X, X1pinv, alpha)
    layers = params[1:]
    out = [[_h(layers, F, X1pinv, alpha, K, 1.0 - t)] + _copy_net(layers) for t in lams]
    out[0] = _copy_net(params)
    return out


def _stage_output(layers, F_start, F_end, X1pinv, alpha, lams) -> list:
    """Stage C of Thm 3.4.9's path: layers 2..L fixed to ``layers``, the first layer is ``h`` of the output
    moving on a straight line from ``F_start`` to ``F_end``, so the loss is convex along it (3.8)."""
    return [[_h(layers, (1 - t) * F_start + t * F_end, X1pinv, alpha)] + _copy_net(layers) for t in lams]


def sublevel_path_with_info(params_a, params_b, X, y, alpha: float = 0.2, points_per_stage: int = 50):
    """:func:`sublevel_path` and what the construction used: returns ``(path, info)``, ``info`` a dict
    with ``stage`` (per path point: "A", "B", "C1", "C2", "A'"), ``s`` (the scale of
    ``Yhat = s * onehot(y)``), ``phi_yhat`` (its loss) and ``min_sv`` (the smallest singular value of
    any ``W_l``, l >= 2, along stage B)."""
    params_a, params_b, X, y, alpha = _check_path_inputs(params_a, params_b, X, y, alpha)
    n = V.integer(points_per_stage, "points_per_stage", min=2)
    N, m = X.shape[0], params_a[-1][0].shape[0]
    X1pinv = np.linalg.pinv(np.hstack([X, np.ones((N, 1))]))
    Fa, Fb = _outputs(params_a, X, alpha)[0][-1], _outputs(params_b, X, alpha)[0][-1]
    loss_a, loss_b = _ce(Fa, y), _ce(Fb, y)
    s = yhat_scale(m, 0.5 * min(loss_a, loss_b))
    Yhat = s * np.eye(m)[y]
    lams = np.linspace(0.0, 1.0, n)
    la, lb = params_a[1:], params_b[1:]
    stage_a = _stage_a(params_a, X, X1pinv, alpha, lams)
    stage_b, min_sv = [], np.inf
    for t in lams:
        layers = [((1 - t) * Wa + t * Wb, (1 - t) * ba + t * bb) for (Wa, ba), (Wb, bb) in zip(la, lb)]
        min_sv = min(min_sv, min(np.linalg.svd(W, compute_uv=False)[-1] for W, _ in layers))
        stage_b.append([_h(layers, Fa, X1pinv, alpha)] + _copy_net(layers))
    stage_c1 = _stage_output(lb, Fa, Yhat, X1pinv, alpha, lams)
    stage_c2 = _stage_output(lb, Fb, Yhat, X1pinv, alpha, lams)[::-1]
    stage_a2 = _stage_a(params_b, X, X1pinv, alpha, lams)[::-1]
    path, stage = list(stage_a), ["A"] * n
    for name, part in (("B", stage_b), ("C1", stage_c1), ("C2", stage_c2), ("A'", stage_a2)):
        path += part[1:]  # each stage starts where the previous one ended
        stage += [name] * (n - 1)
    return path, {"stage": stage, "s": s, "phi_yhat": _ce(Yhat, y), "min_sv": float(min_sv)}


def sublevel_path(params_a, params_b, X, y, alpha: float = 0.2, points_per_stage: int = 50) -> list:
    """The path of Theorem 3.4.9 between two leaky-ReLU networks inside the sublevel set of the larger
    endpoint loss (mean cross-entropy).

    ``params_a``, ``params_b``: networks with the same strictly decreasing widths ``n_1 > ... > n_L``
    (``n_L = m`` classes), lists of float64 ``(W, b)`` pairs with ``W`` of shape ``(d_out, d_in)`` (the
    book's convention; the thesis' ``W_l`` is our ``W.T``), leaky-ReLU slope ``alpha`` in (0, 1);
    ``X`` of shape ``(N, d)`` with rank N; ``y`` labels in ``0..m-1``. Every ``W_l``, ``l >= 2``, must
    have full rank (Property 3.4.5; trained or random networks have it almost surely).

    Stages (``points_per_stage`` points each, junctions shared):
      A:  only ``(W_1, b_1)`` moves, to ``h(theta_{2..L}, F_L)`` (Lemma 3.4.6, made explicit: the
          pre-images plus ``(1 - lambda)`` times their kernel parts); the output ``F_L`` is constant.
      B:  layers 2..L move on straight lines to those of ``params_b`` (full rank along the way, Prop.
          3.4.8), the first layer following as ``h(., F_L)``; the output stays ``F_L``.
      C1: the output moves on a straight line from ``F_L`` to ``Yhat = s * onehot(y)``, with ``s``
          chosen so that ``phi(Yhat) = min(endpoint losses) / 2``: by convexity the loss stays below
          the start's.
      C2, A': the same two stages from ``params_b``, run backwards.
    Returns the list of networks, from a copy of ``params_a`` to a copy of ``params_b``. ValueError
    when the assumptions fail (widths not decreasing, rank X < N, alpha <= 0, a rank-deficient W_l).
    """
    return sublevel_path_with_info(params_a, params_b, X, y, alpha, points_per_stage)[0]


def path_steps(path) -> np.ndarray:
    """The Euclidean lengths of the steps between consecutive networks of a path (all weights and biases
    of a network as one vector), float64, ``len(path) - 1`` values. A path is continuous when its largest
    step shrinks as it is sampled more finely (chapter 10 compares, step by step, ``points_per_stage`` = n
    and 16n - 15)."""
    nets = V.sequence(path, "path", min_len=2)
    flat = []
    for i, net in enumerate(nets):
        net = as_float64_params(net, f"path[{i}]")
        flat.append(np.concatenate([np.concatenate([W.ravel(), b]) for W, b in net]))
    if len({f.size for f in flat}) != 1:
        raise V.ArgumentValueError("path: every network must have the same layer shapes")
    return np.linalg.norm(np.diff(np.array(flat), axis=0), axis=1)


# ---------------------------------------------------------------------------------------------
# Lemmas 3.4.10, 3.4.14, 3.4.15: paths that keep a layer's output to the next layer fixed

def _independent_columns(F):
    """A maximal set ``I`` of linearly independent columns of ``F`` (QR with column pivoting, NR rank)
    and the rest, both sorted."""
    from scipy.linalg import qr

    r = nr_rank(F)[0]
    piv = qr(F, pivoting=True, mode="r")[1]
    return np.sort(piv[:r]), np.sort(piv[r:])


def _move_readout(F, Vout, keep, n_pts: int) -> list:
    """Lemma 3.4.10: ``n_pts - 1`` read-outs after ``Vout`` (``(p, n)``) along which ``F Vout^T`` stays
    fixed, the last of which puts zero weight on every column outside ``keep`` (``rank F[:, keep] = rank F``):
    with ``F[:, rest] = F[:, keep] E``, ``Vout_keep + lambda Vout_rest E^T`` and ``(1 - lambda) Vout_rest``."""
    rest = np.setdiff1d(np.arange(F.shape[1]), keep)
    E = np.linalg.lstsq(F[:, keep], F[:, rest], rcond=None)[0]
    out = []
    for t in np.linspace(0.0, 1.0, n_pts)[1:]:
        Vt = Vout.copy()
        Vt[:, keep] = Vout[:, keep] + t * Vout[:, rest] @ E.T
        Vt[:, rest] = (1 - t) * Vout[:, rest]
        out.append(Vt)
    out[-1][:, rest] = 0.0  # exactly zero at lambda = 1
    return out


def _segment(W_from, W_to, n_pts: int) -> list:
    """The straight segment from ``W_from`` to ``W_to`` without its first point (``n_pts - 1`` matrices)."""
    return [(1 - t) * W_from + t * W_to for t in np.linspace(0.0, 1.0, n_pts)[1:]]


def rank_repair_path(X, W, b, Vout, alpha: float = 0.2, seed: int = 0, points_per_stage: int = 20) -> list:
    """Lemma 3.4.14: from a hidden layer ``F = s(X W^T + b)`` (``W``: ``(n, d)``, ``n >= N``, ``s`` the
    leaky ReLU of slope ``alpha`` in [0, 1), 0 the ReLU) with ``rank F < N`` and its read-out ``Vout``
    (``(p, n)``, output ``Z = F Vout^T``), a path of triples ``(W, b, Vout)`` along which ``Z`` is unchanged
    and at whose end ``rank F = N`` (almost surely).

    First the read-out moves (Lemma 3.4.10, :func:`_move_readout`): with ``I`` a maximal set of
    independent columns of ``F``, the weights of the other units move onto those in ``I``, after which
    ``Z`` does not depend on the other units. Then those units are moved, one at a time, on a straight line
    to a random new weight and bias (Lemma 3.4.11: for a leaky ReLU almost surely each raises the rank by
    one; for the ReLU a new unit can be dead on every sample, and the next one is tried) until
    ``rank F = N``. Returns the list of triples (``points_per_stage`` per move)."""
    X = V.array(X, "X", ndim=2)
    W = V.array(W, "W", ndim=2, shape=(None, X.shape[1]), agree="X")
    b = V.array(b, "b", shape=(W.shape[0],), agree="W")
    Vout = V.array(Vout, "Vout", ndim=2, shape=(None, W.shape[0]), agree="W")
    alpha = check_leak(alpha)
    n_pts = V.integer(points_per_stage, "points_per_stage", min=2)
    rng = np.random.default_rng(V.seed(seed))
    N, n = X.shape[0], W.shape[0]
    if n < N:
        raise V.ArgumentValueError(f"W: the layer has {n} units, fewer than N = {N} (Lemma 3.4.14 needs n >= N)")
    if len({tuple(row) for row in X}) < N:
        raise V.ArgumentValueError("X: the samples must be distinct (Assumption 3.4.4)")
    F = leaky_np(X @ W.T + b, alpha)
    path = [(W.copy(), b.copy(), Vout.copy())]
    if nr_rank(F)[0] == N:
        return path
    I, rest = _independent_columns(F)
    path += [(W.copy(), b.copy(), Vt) for Vt in _move_readout(F, Vout, I, n_pts)]
    Wc, bc, Vc = path[-1]
    scale = np.linalg.norm(W, axis=1).mean() or 1.0
    for j in rest:
        if nr_rank(leaky_np(X @ Wc.T + bc, alpha))[0] == N:
            break
        w_new, b_new = rng.standard_normal(X.shape[1]) * scale, rng.standard_normal() * (np.abs(b).mean() + 1.0)
        w_old, b_old = Wc[j].copy(), bc[j]
        for t in np.linspace(0.0, 1.0, n_pts)[1:]:
            Wc, bc = Wc.copy(), bc.copy()
            Wc[j], bc[j] = (1 - t) * w_old + t * w_new, (1 - t) * b_old + t * b_new
            path.append((Wc, bc, Vc))
    return path


def copy_step_path(X, W, Vout, W_target, alpha: float = 0.2, points_per_stage: int = 10) -> list:
    """Lemma 3.4.15 (the "copy step"): with ``n >= 2N`` units and full-rank features ``F = s(X W^T)`` and
    ``F' = s(X W_target^T)`` (``rank N`` both; ``X`` may carry a column of ones for the bias), a path of
    pairs ``(W, Vout)`` from ``(W, Vout)`` to ``(W_target, V')`` along which ``Z = F Vout^T`` is unchanged.

    With ``I`` and ``I'`` N independent columns of ``F`` and ``F'`` (Lemma 3.4.10 moves a read-out onto
    any such set): (1) the read-out moves onto ``I``; (2) the free units outside ``I`` take copies of the
    target's units ``I'`` (those of ``I'`` outside ``I`` at their own places, the others at spare places;
    ``n >= 2N`` makes room); (3) the read-out moves onto the copies; (4) the units of ``I' ∩ I``, now free,
    move to their targets, so that ``W[I'] = W_target[I']``; (5) the read-out moves onto ``I'``; (6) every
    other unit moves to its target. Each move is ``points_per_stage`` points."""
    X = V.array(X, "X", ndim=2)
    W = V.array(W, "W", ndim=2, shape=(None, X.shape[1]), agree="X")
    W_target = V.array(W_target, "W_target", shape=W.shape)
    Vout = V.array(Vout, "Vout", ndim=2, shape=(None, W.shape[0]), agree="W")
    alpha = check_leak(alpha)
    n_pts = V.integer(points_per_stage, "points_per_stage", min=2)
    N, n = X.shape[0], W.shape[0]
    if n < 2 * N:
        raise V.ArgumentValueError(f"W: the layer has {n} units, fewer than 2N = {2 * N} (Lemma 3.4.15)")
    feats = lambda M: leaky_np(X @ M.T, alpha)  # noqa: E731
    for name, M in (("W", W), ("W_target", W_target)):
        if nr_rank(feats(M))[0] < N:
            raise V.ArgumentValueError(f"{name}: its features have rank < N = {N}; repair them first "
                                       "(rank_repair_path, Lemma 3.4.14)")
    I, _ = _independent_columns(feats(W))
    It, _ = _independent_columns(feats(W_target))
    free = np.setdiff1d(np.arange(n), I)
    K, J = np.intersect1d(It, free), np.intersect1d(It, I)
    slots = np.setdiff1d(free, K)[:len(J)]
    path = [(W.copy(), Vout.copy())]

    def read_onto(keep):
        Wc, Vc = path[-1]
        path.extend((Wc.copy(), Vt) for Vt in _move_readout(feats(Wc), Vc, keep, n_pts))

    def move_units(goal):
        Wc, Vc = path[-1]
        path.extend((Wt, Vc.copy()) for Wt in _segment(Wc, goal, n_pts))

    read_onto(I)                                                  # (1)
    goal = path[-1][0].copy()
    goal[K], goal[slots] = W_target[K], W_target[J]
    move_units(goal)                                              # (2)
    read_onto(np.union1d(K, slots))                               # (3)
    goal = path[-1][0].copy()
    goal[J] = W_target[J]
    move_units(goal)                                              # (4)
    read_onto(It)                                                 # (5)
    move_units(W_target.copy())                                   # (6)
    path[-1] = (W_target.copy(), path[-1][1])
    return path


# ---------------------------------------------------------------------------------------------
# Thm 3.4.13, 3.4.16, 3.4.17: descent and connecting paths with one (or every) wide layer

def _layer_path(params, l, triples) -> list:
    """Networks along a path of layer-``l`` triples ``(W_l, b_l, W_{l+1})`` (0-based ``l``; the rest fixed)."""
    out = []
    for W, b, Wn in triples:
        net = _copy_net(params)
        net[l] = (W.copy(), b.copy())
        net[l + 1] = (Wn.copy(), params[l + 1][1].copy())
        out.append(net)
    return out


def _repair_layer(params, X, l, alpha, seed, n_pts) -> list:
    """Lemma 3.4.14 applied to hidden layer ``l`` (0-based) of a network, with the next layer's weights as
    the read-out: networks from ``params`` to one whose layer-``l`` features have rank N, output fixed."""
    Z = X if l == 0 else _outputs(params, X, alpha)[0][l - 1]
    (W, b), (Wn, _) = params[l], params[l + 1]
    return _layer_path(params, l, rank_repair_path(Z, W, b, Wn, alpha, seed, n_pts))


def _copy_layer(params, target, X, l, alpha, n_pts) -> list:
    """Lemma 3.4.15 applied to hidden layer ``l``: networks from ``params`` to one whose layer ``l`` equals
    ``target``'s (the next layer's weights move as the read-out), output fixed. Layers below ``l`` must
    already agree (the copy step is on the common features of layer ``l - 1``)."""
    Z = X if l == 0 else _outputs(params, X, alpha)[0][l - 1]
    Z1 = np.hstack([Z, np.ones((len(Z), 1))])
    (W, b), (Wn, _) = params[l], params[l + 1]
    Wt, bt = target[l]
    pairs = copy_step_path(Z1, np.hstack([W, b[:, None]]), Wn, np.hstack([Wt, bt[:, None]]), alpha, n_pts)
    return _layer_path(params, l, [(U[:, :-1], U[:, -1], Vn) for U, Vn in pairs])


def _net_inputs(params, X, y, alpha, name="params"):
    """Validated float64 network, inputs (distinct rows: Assumption 3.4.4), labels and slope in [0, 1)."""
    params = as_float64_params(params, name)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    y = _labels(y, params[-1][0].shape[0], X.shape[0])
    if len({tuple(row) for row in X}) < X.shape[0]:
        raise V.ArgumentValueError("X: the samples must be distinct (Assumption 3.4.4)")
    return params, X, y, check_leak(alpha)


def _need_width(params, N, need, layers, theorem):
    widths = [W.shape[0] for W, _ in params]
    if len(widths) < 2 or min(widths[l] for l in layers) < need * N:
        raise V.ArgumentValueError(f"params: {theorem} needs at least {need} N = {need * N} units in hidden "
                                   f"layer(s) {[l + 1 for l in layers]}, got widths {widths}")


def valley_descent_path(params, X, y, alpha: float = 0.2, k: int = 1, target: float = 1e-3, seed: int = 0,
                        points_per_stage: int = 50) -> tuple[list, dict]:
    """Thm 3.4.13(1) made explicit: from any leaky-ReLU network with a wide layer ``k`` (1-based,
    ``n_k >= N``, ``k <= L - 2``) and strictly decreasing widths above it (``n_{k+1} > ... > n_L``), a path on which the
    loss never increases and which ends at loss ``<= target``; unlike Thm 3.4.9, ``N`` may exceed ``d``.

    Stages: "repair" (Lemma 3.4.14 on layer ``k``, the loss constant: ``rank F_k = N`` afterwards);
    "A" (stage A of Thm 3.4.9's path on the sub-network above layer ``k``, whose data are ``F_k``:
    constant loss); "C" (the output moves on a straight line to ``Yhat = s onehot(y)`` with ``phi(Yhat) =
    target``: convex, so never above the start). Returns ``(path, info)`` with ``info["stage"]`` per
    point and ``info["s"]``."""
    params, X, y, alpha = _net_inputs(params, X, y, alpha)
    L = len(params)
    k = V.integer(k, "k (the wide layer)", min=1, max=L - 1)
    target = V.positive(target, "target")
    n = V.integer(points_per_stage, "points_per_stage", min=2)
    N, widths = X.shape[0], [W.shape[0] for W, _ in params]
    if alpha == 0.0:
        raise V.ArgumentValueError("alpha (leaky-ReLU slope) must be > 0: Thm 3.4.13 needs an invertible activation")
    if widths[k - 1] < N or any(a <= b for a, b in zip(widths[k:], widths[k + 1:])):
        raise V.ArgumentValueError(f"params: Thm 3.4.13 needs n_k >= N = {N} and n_(k+1) > ... > n_L, got widths "
                                   f"{widths} with k = {k}")
    if k > L - 2:
        raise V.ArgumentValueError(f"k (the wide layer) must be <= L - 2 = {L - 2}: stage A moves the first layer of "
                                   f"the sub-network above layer k, which needs at least 2 layers, got k = {k}")
    path = _repair_layer(params, X, k - 1, alpha, seed, n)
    stage = ["repair"] * len(path)
    below, sub = path[-1][:k], path[-1][k:]
    Fk = _outputs(path[-1], X, alpha)[0][k - 1]
    for l, (W, _) in enumerate(sub[1:], start=k + 2):
        if nr_rank(W)[0] < W.shape[0]:
            raise V.ArgumentValueError(f"params: W_{l} is rank deficient (Property 3.4.5); Lemma 3.4.7 would "
                                       "repair it, which is not implemented")
    X1pinv = np.linalg.pinv(np.hstack([Fk, np.ones((N, 1))]))
    lams = np.linspace(0.0, 1.0, n)
    F_out = _outputs(path[-1], X, alpha)[0][-1]
    m = widths[-1]
    s = yhat_scale(m, target)
    parts = (("A", _stage_a(sub, Fk, X1pinv, alpha, lams)),
             ("C", _stage_output(sub[1:], F_out, s * np.eye(m)[y], X1pinv, alpha, lams)))
    for name, part in parts:
        path += [_copy_net(below) + net for net in part[1:]]
        stage += [name] * (n - 1)
    return path, {"stage": stage, "s": s}


def wide_first_layer_path(params_a, params_b, X, y, alpha: float = 0.2, seed: int = 0,
                          points_per_stage: int = 20) -> tuple[list, dict]:
    """Thm 3.4.16(1) made explicit: two leaky-ReLU networks with ``n_1 >= 2N`` and ``n_2 > ... > n_L`` (``L >= 3``) are
    joined by a path on which the loss never exceeds the larger endpoint loss (``N`` may exceed ``d``).

    Stages: "repair" (Lemma 3.4.14 on layer 1 of ``params_a``), "copy" (Lemma 3.4.15: its first layer
    becomes ``params_b``'s, ``W_2`` moving as the read-out; constant loss), then Thm 3.4.9's path
    (:func:`sublevel_path_with_info`, stages "A".."A'") on the sub-network of layers 2..L, whose data are
    the common features ``F_1``, and "repair'" (``params_b``'s own repair, backwards). Returns
    ``(path, info)`` with ``info["stage"]`` per point."""
    params_a, X, y, alpha = _net_inputs(params_a, X, y, alpha, "params_a")
    params_b = as_float64_params(params_b, "params_b")
    _same_shapes(params_a, params_b)
    _need_width(params_a, X.shape[0], 2, [0], "Thm 3.4.16")
    n = V.integer(points_per_stage, "points_per_stage", min=2)
    if alpha == 0.0:
        raise V.ArgumentValueError("alpha (leaky-ReLU slope) must be > 0: Thm 3.4.16 needs an invertible activation")
    if len(params_a) < 3:
        raise V.ArgumentValueError(f"params_a: Thm 3.4.9's path on layers 2..L needs L >= 3 layers, got "
                                   f"{len(params_a)}")
    seed = V.seed(seed)
    rep_a = _repair_layer(params_a, X, 0, alpha, seed, n)
    rep_b = _repair_layer(params_b, X, 0, alpha, seed + 1, n)
    copy = _copy_layer(rep_a[-1], rep_b[-1], X, 0, alpha, n)
    first = copy[-1][0]
    F1 = _outputs(rep_b[-1], X, alpha)[0][0]
    sub, info = sublevel_path_with_info(copy[-1][1:], rep_b[-1][1:], F1, y, alpha, n)
    path = rep_a + copy[1:] + [[(first[0].copy(), first[1].copy())] + net for net in sub[1:]] + rep_b[::-1][1:]
    stage = ["repair"] * len(rep_a) + ["copy"] * (len(copy) - 1) + info["stage"][1:] + ["repair'"] * (len(rep_b) - 1)
    return path, {"stage": stage, "s": info["s"]}


def wide_relu_path(params_a, params_b, X, y, alpha: float = 0.0, seed: int = 0,
                   points_per_stage: int = 10) -> tuple[list, dict]:
    """Thm 3.4.17(2) made explicit: two ReLU (``alpha = 0``) or leaky-ReLU networks whose hidden layers all
    have at least ``2N`` units are joined by a path on which the loss never exceeds the larger endpoint loss.

    Layer by layer, from the first hidden layer up: both networks repair the layer's features to rank N
    (Lemma 3.4.14, "repair"), then ``params_a``'s layer becomes ``params_b``'s by the copy step (Lemma
    3.4.15, "copy"); all of this keeps the output fixed. Once every hidden layer agrees, the output layer
    ``(W_L, b_L)`` moves on a straight line ("segment"): the loss is convex in it, so never above the
    larger endpoint. ``params_b``'s repairs are walked backwards at the end. Returns ``(path, info)``."""
    params_a, X, y, alpha = _net_inputs(params_a, X, y, alpha, "params_a")
    params_b = as_float64_params(params_b, "params_b")
    _same_shapes(params_a, params_b)
    _need_width(params_a, X.shape[0], 2, range(len(params_a) - 1), "Thm 3.4.17(2)")
    seed = V.seed(seed)
    n = V.integer(points_per_stage, "points_per_stage", min=2)
    path_a, stage_a, path_b = [_copy_net(params_a)], ["start"], [_copy_net(params_b)]
    for l in range(len(params_a) - 1):
        for side, s_ in ((path_a, seed + 2 * l), (path_b, seed + 2 * l + 1)):
            side += _repair_layer(side[-1], X, l, alpha, s_, n)[1:]
        stage_a += ["repair"] * (len(path_a) - len(stage_a))
        for which in (path_a[-1], path_b[-1]):
            Z = X if l == 0 else _outputs(which, X, alpha)[0][l - 1]
            if nr_rank(leaky_np(Z @ which[l][0].T + which[l][1], alpha))[0] < X.shape[0]:
                raise V.ArgumentValueError(f"the repair of hidden layer {l + 1} did not reach rank N (a ReLU unit "
                                           "can stay dead): try another seed")
        path_a += _copy_layer(path_a[-1], path_b[-1], X, l, alpha, n)[1:]
        stage_a += ["copy"] * (len(path_a) - len(stage_a))
    (Wa, ba), (Wb, bb) = path_a[-1][-1], path_b[-1][-1]
    for t in np.linspace(0.0, 1.0, n)[1:]:
        path_a.append(_copy_net(path_b[-1][:-1]) + [((1 - t) * Wa + t * Wb, (1 - t) * ba + t * bb)])
    stage_a += ["segment"] * (n - 1)
    path = path_a + path_b[::-1][1:]
    return path, {"stage": stage_a + ["repair'"] * (len(path_b) - 1)}


def descent_path(params, X, y, alpha: float = 0.2, target: float = 1e-3, n_points: int = 51) -> tuple[list, float]:
    """Thm 3.4.17(1): from a network whose last hidden layer has ``rank F_{L-1} = N``, the segment
    ``W_L(lambda) = (1 - lambda) W_L + lambda W_L*`` with ``F_{L-1} W_L*^T + b_L = Yhat = s * onehot(y)``.
    The loss ``phi((1 - lambda) F_L + lambda Yhat)`` is convex in lambda; ``s`` is the larger of the
    scale reaching loss ``target`` and ``2 max|F_L|``, which makes its derivative at lambda = 1
    non-positive, so the loss is non-increasing all the way. Returns ``(networks, s)``."""
    params = as_float64_params(params)
    X = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    m = params[-1][0].shape[0]
    y = _labels(y, m, X.shape[0])
    alpha, target = check_leak(alpha), V.positive(target, "target")
    n_points = V.integer(n_points, "n_points", min=2)
    if m < 2:
        raise V.ArgumentValueError("params: the output layer needs at least 2 classes")
    feats, _ = _outputs(params, X, alpha)
    F, out = feats[-2], feats[-1]
    rank = nr_rank(F)[0]
    if rank < X.shape[0]:
        raise V.ArgumentValueError(f"params: rank F_(L-1) = {rank} < N = {X.shape[0]}; repair it first "
                                   "(rank_repair_path, Lemma 3.4.14)")
    s = max(yhat_scale(m, target), 2.0 * float(np.abs(out).max()))
    WL, bL = params[-1]
    W_star = np.linalg.lstsq(F, s * np.eye(m)[y] - bL, rcond=None)[0].T
    nets = []
    for t in np.linspace(0.0, 1.0, n_points):
        nets.append([(W.copy(), b.copy()) for W, b in params[:-1]] + [((1 - t) * WL + t * W_star, bL.copy())])
    return nets, s
