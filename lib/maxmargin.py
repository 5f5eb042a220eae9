"""Max-margin vectors and the two-phase dynamics of bias-free ReLU nets (Chapter 2).

Chapter 2 reproduces Phuong (2021), Chapter 3 (= Phuong & Lampert, ICLR 2021): on orthogonally
separable data a two-layer ReLU net trained from a small initialisation converges to a combination
of two max-margin neurons, ``w_+`` and ``w_-`` (thesis eqs. 3.6/3.7 = paper eqs. 6/7). This module
holds the exact geometry (max-margin vectors by Lawson-Hanson LDP, extremal sectors), the bias-free
networks of the experiments as batched tensors (many seeds in one computation), their trainers
(minibatch SGD as in the document, loss-normalised GD for the asymptotic regime) and the metrics
that compare a trained net with the theorem.

Batched networks are lists of tensors with a leading "model" axis ``S``; data are ``(S, n, d)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import nnls
from tqdm.auto import tqdm

from lib import validate
from lib import validate as V
from lib.device_step import step_mode
from lib.scale import ChapterScales, on_device

# --------------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class InductiveBiasConfig:
    """Every hyper-parameter of Chapter 2 (thesis §3.4; paper §5 and App. D)."""

    n: int = 500                 # training points (thesis §3.4.1)
    d: int = 20                  # input dimension
    width: int = 100             # neurons p
    init_scale: float = 0.05     # "we multiply all weights by 0.05"
    n_seeds: int = 5             # data + init seeds for the two-layer experiments
    filter_sets: int = 50        # data sets drawn with and without the z filter (what it changes)
    sgd_lr: float = 0.1          # SGD on the mean BCE, as in the document
    sgd_batch: int = 50
    sgd_epochs: int = 500
    ngd_schedule: tuple = ((0.005, 600), (0.0015, 300))   # loss-normalised GD: (eta, steps) phases
    neg_scale: float = 3.0       # negative class multiplied by this (norm-split check)
    resnet_depth: int = 4        # thesis eq. (3.30), L = 4
    resnet_epochs: int = 100
    resnet_seeds: int = 5        # residual nets trained at once (one per data set)
    cnn_data: str = "digits"     # "digits" (scikit-learn 8x8) or "mnist" (paper scale, online)
    cnn_image_size: int = 8      # digits are upsampled to this size (28 = Table 3.1 shapes)
    # quick scale (8x8 digits): 240 Adam steps (40 epochs left 1 to 5 of the 270 training images wrong at 10
    # seeds of 20; 80 fitted all at 8 seeds of a pilot, the 4 worst included); the document: 50 epochs of MNIST
    cnn_epochs: int = 80
    cnn_batch: int = 128
    cnn_lr: float = 1e-3
    sweep_scales: tuple = (0.01, 0.05, 0.3, 1.0, 3.0)   # init-scale sweep (beyond the document)
    sweep_epochs: int = 200
    sweep_shifts: tuple = (0.0, 0.4, 0.55, 0.7, 0.8, 0.95)  # negatives shifted towards the positives
    eta_sweep: tuple = (0.008, 0.004, 0.002)   # loss-normalised GD step sizes at one normalised time
    eta_sweep_time: float = 2.4                # that time, eta * steps
    resnet_ngd_schedule: tuple = ((0.02, 400),)  # relative-step normalised GD of the residual net

    def __post_init__(self):
        count, rate = V.positive_int, V.positive
        schedule = V.each(V.items(rate, count), min_len=1)  # (eta, steps) phases
        V.config(self, {
            "n": V.positive_int, "d": count, "width": count, "init_scale": rate, "n_seeds": count,
            "filter_sets": count, "sgd_lr": rate, "sgd_batch": count, "sgd_epochs": count,
            "ngd_schedule": schedule, "neg_scale": rate, "resnet_depth": count, "resnet_epochs": count,
            "resnet_seeds": count, "cnn_data": V.one_of("digits", "mnist"), "cnn_image_size": count,
            "cnn_epochs": count, "cnn_batch": count, "cnn_lr": rate, "sweep_scales": V.each(rate, min_len=1),
            "sweep_epochs": count, "sweep_shifts": V.each(V.real), "eta_sweep": V.each(rate),
            "eta_sweep_time": rate, "resnet_ngd_schedule": schedule})


CONFIGS = ChapterScales(
    "inductive_bias",
    quick=InductiveBiasConfig(),
    full=InductiveBiasConfig(n_seeds=10, ngd_schedule=((0.003, 1500), (0.001, 1500)), resnet_epochs=500,
                             resnet_seeds=10,
                             cnn_image_size=28, cnn_epochs=30, sweep_epochs=500,
                             eta_sweep=(0.008, 0.004, 0.002, 0.001), resnet_ngd_schedule=((0.01, 1600),)),
    paper=InductiveBiasConfig(n_seeds=10, ngd_schedule=((0.003, 1500), (0.001, 1500)), resnet_epochs=500,
                              resnet_seeds=10, cnn_data="mnist", cnn_image_size=28, cnn_epochs=50, sweep_epochs=500,
                              eta_sweep=(0.008, 0.004, 0.002, 0.001), resnet_ngd_schedule=((0.01, 1600),)),
)

# --------------------------------------------------------------------------------------------
# input validation


def _as_matrix(X, name: str = "X") -> np.ndarray:
    """A finite non-empty (n, d) array as a float64 copy."""
    return np.array(V.array(X, name, ndim=2))


def _as_labels(y, n: int) -> np.ndarray:
    y = V.array(y, "y", dtype=None, finite=False, nonempty=False)
    if y.shape != (n,):
        raise V.ArgumentValueError(f"y must have shape ({n},) (one label per row of X), got {y.shape}")
    if not np.issubdtype(y.dtype, np.number) or not np.isin(y, (-1, 1)).all():
        raise ValueError("y must contain only the labels +1 and -1")
    if not ((y == 1).any() and (y == -1).any()):
        raise ValueError("y must contain both classes (+1 and -1)")
    return y.astype(np.float64)


def _as_vector(w, d: int | None, name: str, agree: str = "the columns of X or W") -> np.ndarray:
    return V.array(w, name, shape=(d,), agree=agree if d is not None else None)


def _as_neurons(W, a):
    """``W`` (p, d) and ``a`` with p entries; ``a`` may come in any shape holding p numbers (a row
    or column of a torch layer), it is flattened."""
    W = _as_matrix(W, "W")
    a = V.array(a, "a", finite=False).reshape(-1)
    if a.shape != (W.shape[0],) or not np.isfinite(a).all():
        raise ValueError(f"a must be a finite vector with one entry per row of W ({W.shape[0]}), "
                         f"got shape {a.shape}")
    return W, a


# --------------------------------------------------------------------------------------------
# data and exact geometry (thesis §3.1-3.3)


def orthogonally_separable_gaussian(n: int = 500, d: int = 20, seed: int = 0, z_filter: bool = True):
    """The synthetic data of thesis §3.4.1 (paper §5.1): ``(X (n, d), y (n,))`` in float64.

    A Gaussian point is kept with label +1 if it lies in the first orthant and ``x.z >= 0``, with
    label -1 if it lies in the opposite orthant and ``x.z >= 0``, where ``z = [1, -1, 1, -1, ...]``.
    Sampled exactly as ``x = s|g|`` with a fair random sign ``s`` and the same ``z`` filter
    (rejection from the full Gaussian would accept one point in ~2^d). ``z_filter=False`` drops the
    filter (Chapter 2 measures what it changes); the points are then drawn from the same stream.
    """
    n, d = V.integer(n, "n", min=2), V.integer(d, "d", min=2)
    seed = V.seed(seed)
    z_filter = V.boolean(z_filter, "z_filter")
    rng = np.random.default_rng(seed)
    z = np.where(np.arange(d) % 2 == 0, 1.0, -1.0)
    X, y = np.empty((0, d)), np.empty(0)
    while len(y) < n or len(np.unique(y[:n])) < 2:
        if len(y) >= n:  # the first n points share one label: draw afresh (appending cannot change them)
            X, y = np.empty((0, d)), np.empty(0)
        s = rng.choice([-1.0, 1.0], size=2 * n)
        x = s[:, None] * np.abs(rng.standard_normal((2 * n, d)))
        keep = x @ z >= 0 if z_filter else np.ones(2 * n, dtype=bool)
        X, y = np.vstack([X, x[keep]]), np.concatenate([y, s[keep]])
    return X[:n], y[:n]


def is_orthogonally_separable(X, y, tol: float = 0.0) -> bool:
    """Thesis eq. (3.1) / paper eq. (1): ``x_i.x_j > tol`` within a class and ``<= tol`` across
    (``tol`` a finite number >= 0)."""
    tol = V.nonnegative(tol, "tol")
    X = _as_matrix(X)
    y = _as_labels(y, X.shape[0])
    G = X @ X.T
    same = y[:, None] == y[None, :]
    return bool((G[same] > tol).all() and (G[~same] <= tol).all())


def max_margin(X, *, return_alpha: bool = False):
    """Minimum-norm ``w`` with ``X @ w >= 1`` (no bias): one class of thesis eqs. (3.6)/(3.7).

    Solved exactly as a least-distance program (Lawson & Hanson 1974, ch. 23) with one NNLS:
    ``u = argmin_{u>=0} ||[X^T; 1^T] u - e_{d+1}||``, ``r = [X^T; 1^T] u - e_{d+1}``,
    ``w = -r[:d] / r[d]``. The dual weights ``alpha = u / -r[d]`` satisfy ``w = X^T alpha``,
    ``alpha >= 0`` and complementary slackness (returned with ``return_alpha=True``).
    Raises ValueError when no such ``w`` exists (0 lies in the convex hull of the rows).
    """
    X = _as_matrix(X)
    m, d = X.shape
    E = np.vstack([X.T, np.ones((1, m))])
    f = np.zeros(d + 1)
    f[-1] = 1.0
    u, rnorm = nnls(E, f, maxiter=50 * (m + d))
    r = E @ u - f
    if rnorm < 1e-10 or -r[-1] < 1e-10:
        raise ValueError("infeasible: no w satisfies X @ w >= 1 (0 is in the convex hull of the rows)")
    w = -r[:d] / r[-1]
    alpha = u / -r[-1]
    return (w, alpha) if return_alpha else w


def pm_max_margin(X, y):
    """The positive and negative max-margin vectors ``(w_plus, w_minus)``, thesis eqs. (3.6)/(3.7).

    Both satisfy ``w.x_i >= 1`` on their *own* class: ``w_minus`` points into the negative class
    (it is not the SVM on ``y_i x_i``).
    """
    X = _as_matrix(X)
    y = _as_labels(y, X.shape[0])
    return max_margin(X[y > 0]), max_margin(X[y < 0])


def extremal_sectors(X, y):
    """The extremal sectors ``(sigma_plus, sigma_minus)`` of thesis eqs. (3.13)/(3.14) (Lemma 3.2).

    ``sigma_plus[j]`` is +1 on positives, 0 on negatives orthogonal to every positive (``x_j.x_i = 0``
    exactly) and -1 on the other negatives; ``sigma_minus`` mirrors it. On orthogonally separable data
    this is (3.13)/(3.14) word for word (a negative that is not orthogonal to all positives has a
    negative inner product with one). Elsewhere (3.13) leaves a negative with a positive inner product
    with some positive and a negative one with none undefined; it gets -1 here, "the neuron is off on
    every negative", the property the proof of Theorem 3.1 uses (eq. 3.15). So on data in general
    position ``sigma_plus = y`` and ``sigma_minus = -y`` (Chapter 2's shift sweep asks whether they are
    non-empty, :func:`sector_is_feasible`).
    """
    X = _as_matrix(X)
    y = _as_labels(y, X.shape[0])
    G = X @ X.T

    def sector(cls):
        own = y == cls
        sigma = np.where(own, 1, -1).astype(np.int8)
        sigma[~own & (G[:, own] == 0).all(axis=1)] = 0
        return sigma

    return sector(1.0), sector(-1.0)


def activation_patterns(W, X) -> np.ndarray:
    """``sign(w_j . x_i)`` as an int8 array of shape ``(p, n)`` (the sector of each neuron, Def. 3.1)."""
    W, X = _as_matrix(W, "W"), _as_matrix(X)
    if W.shape[1] != X.shape[1]:
        raise ValueError(f"W has {W.shape[1]} columns but X has {X.shape[1]}")
    return np.sign(W @ X.T).astype(np.int8)


def sector_is_feasible(X, sigma, *, return_slack: bool = False):
    """Whether the sector ``S_sigma = {w : sign(w.x_i) = sigma_i}`` (thesis Def. 3.1) is *full-dimensional*:
    an open set of directions, which a neuron in general position can occupy.

    Chapter 2 asks this before asserting that trained neurons are, or are not, in a sector: a sector
    of measure zero (some ``sigma_i = 0`` for a non-zero ``x_i``) or an empty one holds no trained
    neuron, so an in-sector fraction there says nothing. The *slack* of the sector is the largest
    ``gamma`` such that some unit ``w`` has ``sigma_i w.x_i / ||x_i|| >= gamma`` for every ``i`` with
    ``sigma_i != 0``: the sine of the angular radius of the widest cone inside ``S_sigma``. It is
    ``1 / ||w*||`` for the max-margin vector ``w*`` of the rows ``sigma_i x_i / ||x_i||``
    (:func:`max_margin`), and 0 when that does not exist (0 in their convex hull), when a non-zero
    ``x_i`` has ``sigma_i = 0``, or when a zero ``x_i`` has ``sigma_i != 0`` (then ``S_sigma`` is
    empty). Sectors thinner than ``max_margin``'s infeasibility tolerance (a slack of about 1e-5)
    count as not full-dimensional. Returns the bool, or ``(bool, slack)`` with ``return_slack=True``.
    """
    X = _as_matrix(X)
    sigma = V.array(sigma, "sigma", shape=(X.shape[0],), agree="X")
    if not np.isin(sigma, (-1, 0, 1)).all():
        raise V.ArgumentValueError(f"sigma must hold only -1, 0 and 1, got {V.describe(sigma)}")
    return_slack = V.boolean(return_slack, "return_slack")
    norms = np.linalg.norm(X, axis=1)
    if ((sigma == 0) != (norms == 0)).any():
        slack = 0.0      # a hyperplane w.x_i = 0 (measure zero), or sign(w.0) = 0 != sigma_i (empty)
    elif (sigma == 0).all():
        slack = 1.0      # only zero rows: every direction has the pattern
    else:
        keep = sigma != 0
        try:
            slack = float(1.0 / np.linalg.norm(max_margin(sigma[keep, None] * X[keep] / norms[keep, None])))
        except ValueError:
            slack = 0.0
    return (slack > 0, slack) if return_slack else slack > 0


def G_value(W, X, y) -> np.ndarray:
    """``G(w) = -sum_i l_i'(0) relu(w.x_i) = 1/2 sum_i y_i relu(w.x_i)`` for the logistic loss (thesis
    eq. 3.12), for every row ``w`` of ``W``; its local extrema on the unit sphere are the extremal
    directions of Lemma 3.1 (Def. 3.2)."""
    W, X = _as_matrix(W, "W"), _as_matrix(X)
    y = _as_labels(y, X.shape[0])
    if W.shape[1] != X.shape[1]:
        raise ValueError(f"W has {W.shape[1]} columns but X has {X.shape[1]}")
    return 0.5 * np.maximum(W @ X.T, 0) @ y


def extremal_directions(X, y, n_starts: int = 1000, seed: int = 0, max_iter: int = 50):
    """The positive extremal directions (Def. 3.2: strict local maxima of ``G``, eq. 3.12, on the
    sphere) that lie inside a sector; call with ``-y`` for the negative ones (local minima of ``G``).

    Inside a sector with pattern ``sigma``, ``G(w) = v_sigma.w`` with ``v_sigma = 1/2 sum_{sigma_i=1}
    y_i x_i``, whose strict maximum on the sphere is ``v_sigma / ||v_sigma||``. So ``w`` is such a
    direction iff ``w = v_sigma(w) / ||v_sigma(w)||`` and no ``w.x_i`` is 0: a fixed point of the map
    ``w -> v_sigma(w) / ||v_sigma(w)||``. The map is iterated from ``n_starts`` random unit vectors.
    Lemma 3.2 (Chapter 2 tests it) says orthogonally separable data have exactly one.
    Returns ``(directions (k, d), counts (k,), n_unresolved)``: the distinct fixed points (cosine
    above ``1 - 1e-9`` counts as the same), how many starts reached each, and how many starts reached
    none (no active point left, or no fixed point within ``max_iter`` steps, e.g. because the
    maximum lies on a sector boundary, where ``G`` has a kink).
    """
    X = _as_matrix(X)
    y = _as_labels(y, X.shape[0])
    n_starts, max_iter = V.positive_int(n_starts, "n_starts"), V.positive_int(max_iter, "max_iter")
    rng = np.random.default_rng(V.seed(seed))
    W = rng.standard_normal((n_starts, X.shape[1]))
    tol = 1e-12 * np.linalg.norm(X, axis=1).max()
    P = W @ X.T
    for _ in range(max_iter):
        active = P > 0
        Vs = 0.5 * (active * y) @ X
        norms = np.linalg.norm(Vs, axis=1, keepdims=True)
        W = Vs / np.where(norms > 0, norms, 1.0)
        P = W @ X.T
        done = (norms[:, 0] > 0) & ((P > 0) == active).all(axis=1)
        if done.all():
            break
    fixed = done & (np.abs(P).min(axis=1) > tol)
    directions, counts = [], []
    for w in W[fixed]:
        match = [k for k, u in enumerate(directions) if w @ u > 1 - 1e-9]
        if match:
            counts[match[0]] += 1
        else:
            directions.append(w)
            counts.append(1)
    return np.reshape(directions, (-1, X.shape[1])), np.array(counts, dtype=int), int(n_starts - fixed.sum())


# --------------------------------------------------------------------------------------------
# batched bias-free networks (thesis eqs. 3.2 and 3.30) and their trainers


def default_init(shapes, n_models: int, seed: int, scale: float, dtype=torch.float64):
    """PyTorch's default ``nn.Linear`` init, ``U(+-1/sqrt(fan_in))``, times ``scale``, for ``n_models``.

    ``shapes`` lists ``(d_out, d_in)``; a ``d_out`` of 1 gives a vector per model. This is the
    document's "multiply all weights by 0.05" initialisation (thesis §3.4.1).
    """
    scale, n_models = V.positive(scale, "scale"), V.positive_int(n_models, "n_models")
    seed = V.seed(seed)
    shapes = V.sequence(shapes, "shapes", min_len=1)
    for i, sh in enumerate(shapes):
        if not isinstance(sh, (list, tuple)) or len(sh) != 2:
            raise V.ArgumentTypeError(f"shapes[{i}] must be a pair (d_out, d_in), got {V.describe(sh)}")
        V.positive_int(sh[0], f"shapes[{i}] d_out"), V.positive_int(sh[1], f"shapes[{i}] d_in")
    gen = torch.Generator().manual_seed(int(seed))
    params = []
    for d_out, d_in in shapes:
        bound = scale / math.sqrt(d_in)
        shape = (n_models, d_in) if d_out == 1 else (n_models, d_out, d_in)
        params.append(((torch.rand(shape, generator=gen, dtype=dtype) * 2 - 1) * bound).requires_grad_())
    return params


def balanced_init(n_models: int, width: int, d: int, lam: float, seed: int, dtype=torch.float64):
    """The near-zero balanced init of thesis §3.1: ``w_j = lam v_j/||v_j||``, ``a_j = +-lam``."""
    lam = validate.positive(lam, "lam")  # (the name V is this function's random matrix)
    n_models, width, d = (validate.positive_int(v, k) for v, k in ((n_models, "n_models"), (width, "width"), (d, "d")))
    seed = validate.seed(seed)
    gen = torch.Generator().manual_seed(int(seed))
    V = torch.randn(n_models, width, d, generator=gen, dtype=dtype)
    W = lam * V / V.norm(dim=2, keepdim=True)
    a = lam * (torch.randint(0, 2, (n_models, width), generator=gen) * 2 - 1).to(dtype)
    return [W.requires_grad_(), a.requires_grad_()]


def _check_params(params, n_min: int = 2) -> list:
    params = V.sequence(params, "params", min_len=n_min)
    for i, p in enumerate(params):
        V.tensor(p, f"params[{i}]", floating=True)
    if params[0].ndim != 3:
        raise V.ArgumentValueError(f"params[0] must be W of shape (S, p, d), got {V.describe(params[0])}")
    return params


def _check_inputs(params, X) -> None:
    V.tensor(X, "X", floating=True, ndim=(2, 3))
    if X.shape[-1] != params[0].shape[-1]:
        raise V.ArgumentValueError(f"X must have {params[0].shape[-1]} columns (the d of params[0]), "
                                   f"got {V.describe(X)}")
    if X.ndim == 3 and X.shape[0] not in (1, params[0].shape[0]):
        raise V.ArgumentValueError(f"X of shape (S, n, d) must hold one batch per model of params (S = "
                                   f"{params[0].shape[0]}) or one shared batch, got {V.describe(X)}")
    if X.dtype != params[0].dtype:
        raise V.ArgumentTypeError(f"X must have the dtype of params ({params[0].dtype}), got {V.describe(X)}")


def _check_two_layer(params) -> None:
    if len(params) != 2 or params[1].shape != params[0].shape[:2]:
        raise V.ArgumentValueError(f"params must be [W (S, p, d), a (S, p)], got shapes "
                                   f"{[tuple(p.shape) for p in params]}")


def _check_residual(params) -> None:
    S, p = params[0].shape[:2]
    if any(tuple(Wl.shape) != (S, p, p) for Wl in params[1:-1]) or tuple(params[-1].shape) != (S, p):
        raise V.ArgumentValueError(f"params must be [W1 (S, p, d), W2.. (S, p, p), W_L (S, p)] with S = {S}, "
                                   f"p = {p}, got shapes {[tuple(q.shape) for q in params]}")


def two_layer_forward(params, X: torch.Tensor) -> torch.Tensor:
    """``h(x) = a^T relu(W x)`` (thesis eq. 3.2) for ``S`` models: ``W (S,p,d)``, ``a (S,p)``, ``X (S,n,d)``
    (or ``(n, d)`` shared). Checks its arguments; the trainers call the unchecked twin per step."""
    params = _check_params(params)
    _check_two_layer(params)
    _check_inputs(params, X)
    return _two_layer_forward(params, X)


def _two_layer_forward(params, X):
    W, a = params
    return (torch.relu(X @ W.transpose(1, 2)) * a.unsqueeze(1)).sum(-1)


def residual_forward(params, X: torch.Tensor) -> torch.Tensor:
    """The residual net of thesis eq. (3.30): ``h1 = W1 x``, ``h_l = h_{l-1} + W_l relu(h_{l-1})``,
    output ``W_L relu(h_{L-1})``; params ``[W1 (S,p,d), W2.. (S,p,p), W_L (S,p)]``."""
    params = _check_params(params)
    _check_residual(params)
    _check_inputs(params, X)
    return _residual_forward(params, X)


def _residual_forward(params, X):
    h = X @ params[0].transpose(1, 2)
    for Wl in params[1:-1]:
        h = h + torch.relu(h) @ Wl.transpose(1, 2)
    return (torch.relu(h) * params[-1].unsqueeze(1)).sum(-1)


def residual_shapes(d: int, width: int, depth: int):
    """Layer shapes ``(d_out, d_in)`` of the depth-``depth`` residual net of eq. (3.30)."""
    d, width = V.positive_int(d, "d"), V.positive_int(width, "width")
    depth = V.integer(depth, "depth", min=2)
    return [(width, d)] + [(width, width)] * (depth - 2) + [(1, width)]


_UNCHECKED = {}  # public forward -> its unchecked twin (filled below the definitions)
_STRUCTURE = {}  # public forward -> the check of its params' shapes (filled below the definitions)


def _check_batch(params, X, y, forward=None, train: bool = False):
    """``X`` (S, n, d) and ``y`` (S, n) for the ``S`` models of ``params`` (of the book's ``forward``'s
    structure; with ``train`` every parameter must require a gradient), ``X`` in their dtype."""
    params = _check_params(params, 1)
    if forward in _STRUCTURE:
        _STRUCTURE[forward](params)
    if train and not all(p.requires_grad for p in params):
        raise V.ArgumentValueError("params must require gradients (p.requires_grad_(); default_init and "
                                   "balanced_init return them so)")
    X = V.tensor(X, "X", convert=True)
    y = V.tensor(y, "y", convert=True)
    S = params[0].shape[0]
    if X.ndim != 3 or X.shape[0] != S or y.shape != X.shape[:2]:
        raise ValueError(f"X must be ({S}, n, d) and y ({S}, n) for {S} models, got "
                         f"{tuple(X.shape)} and {tuple(y.shape)}")
    if X.shape[-1] != params[0].shape[-1]:
        raise V.ArgumentValueError(f"X must have {params[0].shape[-1]} columns (the d of params[0]), "
                                   f"got {V.describe(X)}")
    if not torch.isfinite(X).all() or not bool(((y == 1) | (y == -1)).all()):
        raise ValueError("X must be finite and y must hold labels +-1")
    dtype = params[0].dtype
    return X.to(dtype), y.to(dtype)


def _snapshot(params):
    return [p.detach().clone() for p in params]


def train_sgd(forward, params, X, y, lr: float, batch_size: int, epochs: int, seed: int,
              log_epochs=(), progress: bool = True):
    """Minibatch SGD on the *mean* logistic loss of each model, as in thesis §3.4.1 (bs 50, lr 0.1).

    Every model draws its own shuffle each epoch. Returns ``{epoch: params snapshot}`` for the
    epochs in ``log_epochs`` (0 = init); ``params`` are updated in place.
    """
    V.callable_(forward, "forward")
    X, y = _check_batch(params, X, y, forward, train=True)
    S, n = y.shape
    lr, seed = V.positive(lr, "lr"), V.seed(seed)
    batch_size = V.positive_int(batch_size, "batch_size", max=n)
    epochs = V.nonnegative_int(epochs, "epochs")
    forward = _UNCHECKED.get(forward, forward)
    gen = torch.Generator().manual_seed(int(seed))
    rows = torch.arange(S)[:, None]
    log = {0: _snapshot(params)} if 0 in log_epochs else {}
    for epoch in tqdm(range(1, epochs + 1), desc="SGD epochs", disable=not progress, leave=False):
        perm = torch.argsort(torch.rand(S, n, generator=gen), dim=1)
        Xe, ye = X[rows, perm], y[rows, perm]
        for start in range(0, n - batch_size + 1, batch_size):
            out = forward(params, Xe[:, start:start + batch_size])
            loss = torch.nn.functional.softplus(-ye[:, start:start + batch_size] * out).mean(1).sum()
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p -= lr * g
        V.finite_loss(loss.detach(), f"{epoch} (epoch)", lr)  # the epoch's last minibatch loss
        if epoch in log_epochs:
            log[epoch] = _snapshot(params)
    return log


def log_loss(forward, params, X, y) -> torch.Tensor:
    """``log sum_i log(1 + exp(-y_i h(x_i)))`` per model, stable for huge margins (float64).

    Uses ``log softplus(-m) = -m`` for ``m > 30`` (error < 1e-13) inside a logsumexp.
    """
    V.callable_(forward, "forward")
    _check_batch(params, X, y, forward)
    return _log_loss(forward, params, X, y)


def _log_loss(forward, params, X, y):
    m = y * forward(params, X)
    small = torch.log(torch.nn.functional.softplus(-m.clamp(max=30.0)))
    return torch.logsumexp(torch.where(m > 30.0, -m, small), dim=1)


def train_normalized_gd(forward, params, X, y, schedule, log_steps=(), progress: bool = True,
                        relative: bool = False):
    """Loss-normalised full-batch GD, ``theta <- theta - eta grad(loss)/loss`` (Lyu & Li 2020).

    A time change of gradient flow on the summed loss (3.3): early on it is GD with learning rate
    ``eta / (n log 2)``; late it takes the steps gradient flow needs exponentially long for.
    ``schedule`` lists ``(eta, steps)`` phases (a smaller final ``eta`` removes the step-size
    oscillation between the two neuron groups). Runs in the log domain (:func:`log_loss`).
    With ``relative=True`` every model instead takes the step ``eta ||theta|| g / ||g||``
    (``g = grad log(loss)``, norms over all of that model's parameters): another time change of
    gradient flow, for nets that are not 2-homogeneous. In the residual net (3.30) the margin grows
    like ``||theta||^4``, so the loss-normalised step grows like ``||theta||^3`` and diverges
    (Chapter 2's long residual run).
    Returns ``{step: params snapshot}`` for the (global) steps in ``log_steps``.
    """
    V.callable_(forward, "forward")
    X, y = _check_batch(params, X, y, forward, train=True)
    pairs = V.sequence(schedule, "schedule", min_len=1)
    if any(not isinstance(p, (list, tuple)) or len(p) != 2 for p in pairs):
        raise V.ArgumentTypeError(f"schedule must list (eta, steps) pairs, got {V.describe(schedule)}")
    schedule = [(V.positive(eta, "schedule eta"), V.nonnegative_int(steps, "schedule steps")) for eta, steps in pairs]
    schedule = [(float(eta), int(steps)) for eta, steps in schedule]
    relative = V.boolean(relative, "relative")
    forward = _UNCHECKED.get(forward, forward)
    etas = [eta for eta, steps in schedule for _ in range(steps)]
    log = {0: _snapshot(params)} if 0 in log_steps else {}
    for step in tqdm(range(1, len(etas) + 1), desc="normalised GD", disable=not progress, leave=False):
        total = _log_loss(forward, params, X, y).sum()
        grads = torch.autograd.grad(total, params)
        with torch.no_grad():
            factor = etas[step - 1] * (_relative_factor(params, grads) if relative else torch.ones(1, dtype=total.dtype))
            for p, g in zip(params, grads):
                p -= factor.reshape(-1, *[1] * (g.ndim - 1)) * g
        if step % 100 == 0 or step == len(etas):
            V.finite_loss(total.detach(), step, etas[step - 1], what="log-loss")
        if step in log_steps:
            log[step] = _snapshot(params)
    return log


def _relative_factor(params, grads) -> torch.Tensor:
    """``||theta|| / ||g||`` per model (leading axis): the scale of the relative step of
    :func:`train_normalized_gd`."""
    sq = lambda ts: sum((t.reshape(t.shape[0], -1) ** 2).sum(1) for t in ts)
    return torch.sqrt(sq(params) / sq(grads))


# --------------------------------------------------------------------------------------------
# comparing a trained two-layer net with Theorem 3.1 / Corollary 3.1 (single model, numpy)


def _nonzero(v: np.ndarray, name: str, what: str = "a non-zero vector") -> np.ndarray:
    """``v`` if it has a non-zero entry: a direction or a norm to divide by (a zero one would give NaN)."""
    if not v.any():
        raise V.ArgumentValueError(f"{name} must be {what} (it is divided by its norm), got all zeros")
    return v


def neuron_alignment(W, a, w_plus, w_minus, mode: str = "respective") -> np.ndarray:
    """Cosine of each neuron with its max-margin direction: ``w_+`` if ``a_j > 0`` else ``w_-``
    (``mode="respective"``, Fig. 3.1c) or the closer of the two (``mode="closest"``, Fig. 3.2g).

    A neuron with all-zero incoming weights has no direction: its cosine is defined as 0 (pinned by a test);
    an all-zero ``w_plus`` or ``w_minus`` is refused."""
    W, a = _as_neurons(W, a)
    w_plus, w_minus = (_nonzero(_as_vector(v, W.shape[1], n), n) for v, n in ((w_plus, "w_plus"), (w_minus, "w_minus")))
    Wn = W / np.maximum(np.linalg.norm(W, axis=1, keepdims=True), 1e-300)
    cp, cm = Wn @ (w_plus / np.linalg.norm(w_plus)), Wn @ (w_minus / np.linalg.norm(w_minus))
    V.choice(mode, "mode", ("respective", "closest"))
    if mode == "respective":
        return np.where(a > 0, cp, cm)
    return np.maximum(cp, cm)


def theorem_residuals(W, a, w_plus, w_minus):
    """``(R_W, R_a)``: distances of ``W/||W||_F`` and ``a/||a||`` to the limits (3.8)/(3.9), with the
    best ``u, z >= 0`` (``u_j`` for ``a_j > 0``, ``z_j`` for ``a_j < 0``). All-zero ``W``, ``a``, ``w_plus``
    or ``w_minus`` are refused (each is divided by its norm)."""
    W, a = _as_neurons(W, a)
    W, a = _nonzero(W, "W", "a non-zero matrix"), _nonzero(a, "a")
    w_plus = _nonzero(_as_vector(w_plus, W.shape[1], "w_plus"), "w_plus")
    w_minus = _nonzero(_as_vector(w_minus, W.shape[1], "w_minus"), "w_minus")
    Wn = W / np.linalg.norm(W)
    u = np.where(a > 0, np.maximum(Wn @ w_plus, 0) / (w_plus @ w_plus), 0.0)
    z = np.where(a < 0, np.maximum(Wn @ w_minus, 0) / (w_minus @ w_minus), 0.0)
    R_W = np.linalg.norm(Wn - np.outer(u, w_plus) - np.outer(z, w_minus))
    R_a = np.linalg.norm(a / np.linalg.norm(a) - (u * np.linalg.norm(w_plus) - z * np.linalg.norm(w_minus)))
    return float(R_W), float(R_a)


def gamma_star(w_plus, w_minus) -> float:
    """The limit normalised margin ``1 / (2(||w_+|| + ||w_-||))`` (this book's constant for Cor. 3.1)."""
    w_plus = _as_vector(w_plus, None, "w_plus")
    w_minus = _as_vector(w_minus, w_plus.shape[0], "w_minus", "w_plus")
    return float(1.0 / (2.0 * (np.linalg.norm(w_plus) + np.linalg.norm(w_minus))))


def predicted_function(X, w_plus, w_minus) -> np.ndarray:
    """``f*(x) = gamma* (relu(w_+.x) - relu(w_-.x))``: the limit of ``h(x)/||theta||^2`` (Cor. 3.1 with
    the constants ``u = z = gamma*`` derived in Chapter 2)."""
    X = _as_matrix(X)
    w_plus, w_minus = _as_vector(w_plus, X.shape[1], "w_plus"), _as_vector(w_minus, X.shape[1], "w_minus")
    return gamma_star(w_plus, w_minus) * (np.maximum(X @ w_plus, 0) - np.maximum(X @ w_minus, 0))


def normalized_output(W, a, X) -> np.ndarray:
    """``h_theta(x) / ||theta||^2`` with ``||theta||^2 = ||W||_F^2 + ||a||^2`` (Cor. 3.1, eq. 3.10)."""
    W, a = _as_neurons(W, a)
    X = _as_matrix(X)
    if X.shape[1] != W.shape[1]:
        raise ValueError(f"X has {X.shape[1]} columns but W has {W.shape[1]}")
    return np.maximum(X @ W.T, 0) @ a / (np.sum(W * W) + a @ a)


def norm_split(W, a) -> float:
    """``||W_+||_F^2 / ||W_-||_F^2`` over neurons with ``a_j > 0`` vs ``a_j < 0``; the limit is
    ``||w_+|| / ||w_-||`` (this book's constant, Chapter 2)."""
    W, a = _as_neurons(W, a)
    sq = np.sum(W * W, axis=1)
    if not ((a > 0).any() and (a < 0).any()):
        raise ValueError("norm_split needs neurons with both signs of a")
    if not sq[a < 0].any():
        raise V.ArgumentValueError("W's rows of the neurons with a_j < 0 must not all be zero (the ratio's "
                                   "denominator), got all zeros")
    return float(sq[a > 0].sum() / sq[a < 0].sum())


def top_singular_values(W, k: int = 10) -> np.ndarray:
    """The ``k`` largest singular values of ``W`` (Figs. 3.1a, 3.2a-c, 3.4a)."""
    W = _as_matrix(W, "W")
    k = V.positive_int(k, "k")
    return np.linalg.svd(W, compute_uv=False)[:k]


def project_top2(W) -> np.ndarray:
    """Rows of ``W`` projected on its top two right singular vectors, shape ``(p, 2)`` (Fig. 3.1b)."""
    W = _as_matrix(W, "W")
    if min(W.shape) < 2:
        raise ValueError(f"W needs at least 2 rows and 2 columns, got {W.shape}")
    Vt = np.linalg.svd(W, full_matrices=False)[2]
    sign = np.sign(Vt[:2].sum(axis=1, keepdims=True)) + (Vt[:2].sum(axis=1, keepdims=True) == 0)
    return W @ (sign * Vt[:2]).T


def sign_split_share(P, signs, quantile: float = 0.5) -> float:
    """How well one line through the origin splits the outer points of ``P`` by ``signs`` (Fig. 3.4b, chapter 02).

    ``P`` (n, 2): rows of W7 projected by :func:`project_top2`; ``signs`` (n,): the outer weights W8, of which
    only the sign counts. The outer points are those whose norm exceeds the ``quantile`` of the norms. Returns
    the largest share of them that lies on the side ``sign(<p, u>) = sign(signs)`` of a line with normal
    ``u``, over all ``u`` (exact: the share changes only where ``u`` is perpendicular to a point, so the
    arcs between those angles are tried at their midpoints). 1 means the outer rows fall into two groups
    by the sign of W8, whatever a clustering makes of them; random signs give about 0.6 to 0.7.
    """
    P = _as_matrix(P, "P")
    if P.shape[1] != 2:
        raise ValueError(f"P must have 2 columns (projected rows), got {P.shape[1]}")
    s = np.sign(V.array(signs, "signs", ndim=1))
    if s.shape != (len(P),):
        raise V.ArgumentValueError(f"signs must have one entry per row of P ({len(P)}), got {s.shape[0]}")
    if not s.all():
        raise ValueError("signs must be non-zero (a zero outer weight has no sign)")
    quantile = V.fraction(quantile, "quantile")
    r = np.linalg.norm(P, axis=1)
    outer = r > np.quantile(r, quantile)
    if not outer.any():
        raise ValueError("no point lies outside the quantile of the norms (all points have the same norm)")
    Po, so = P[outer], s[outer]
    cuts = np.sort(np.mod(np.arctan2(Po[:, 1], Po[:, 0])[:, None] + [np.pi / 2, -np.pi / 2], 2 * np.pi).ravel())
    mids = cuts + np.diff(cuts, append=cuts[0] + 2 * np.pi) / 2
    U = np.stack([np.cos(mids), np.sin(mids)], axis=1)
    return float((np.sign(Po @ U.T) == so[:, None]).mean(axis=0).max())


# --------------------------------------------------------------------------------------------
# beyond orthogonal separability: the CNN of Table 3.1 (thesis §3.4.3 = paper App. D)

TABLE_3_1 = (("conv", 32, 3, 1, 1), ("conv", 32, 3, 1, 1), ("conv", 32, 5, 2, 2),
             ("conv", 64, 3, 1, 1), ("conv", 64, 3, 1, 1), ("conv", 64, 5, 2, 2),
             ("fc", 128), ("fc", 1))


class Table31CNN(torch.nn.Module):
    """Thesis Table 3.1 (paper Table 1): six convs, fc(64 s^2, 128), fc(128, 1), ReLU after layers
    1-7, with biases. For 28x28 inputs ``s = 7`` (fc(3136, 128)); for 8x8 digits ``s = 2``.
    The two fc layers start at PyTorch's default init times ``fc_scale`` (0.05 in the document)."""

    def __init__(self, image_size: int = 28, fc_scale: float = 0.05, seed: int = 0):
        super().__init__()
        if not (V.is_int(image_size) and image_size >= 4):
            raise ValueError(f"image_size must be an int >= 4, got {image_size!r}")
        fc_scale, seed = V.positive(fc_scale, "fc_scale"), V.seed(seed)
        torch.manual_seed(int(seed))
        layers, channels, size = [], 1, image_size
        for kind, *spec in TABLE_3_1:
            if kind == "conv":
                out, k, s, p = spec
                layers.append(torch.nn.Conv2d(channels, out, k, s, p))
                channels, size = out, (size + 2 * p - k) // s + 1
            else:
                fan_in = channels * size * size if not isinstance(layers[-1], torch.nn.Linear) \
                    else layers[-1].out_features
                layers.append(torch.nn.Linear(fan_in, spec[0]))
                with torch.no_grad():
                    layers[-1].weight.mul_(fc_scale)
                    layers[-1].bias.mul_(fc_scale)
        self.layers = torch.nn.ModuleList(layers)

    device_program = False  # True while train_adam's device program trains it (issue 36): no per-batch finiteness check

    def features(self, X: torch.Tensor, pre_activation: bool = False) -> list:
        """``[x, h^{1:1}(x), ..., h^{1:7}(x), h(x)]``: input, layers 1-7, output (Fig. 3.3).

        With ``pre_activation=True`` layer ``l`` is ``W_l rho(h^{1:l-1}) + b_l`` before its ReLU: the
        thesis's ``h^{1:l}`` (eq. 3.30, where ``rho`` is applied next), whose inner products Fig. 3.3
        shows and which can be negative; with ``False`` (the default, used by ``forward``) it is the
        post-ReLU output. ``X``: finite floating-point images; an empty batch gives empty features."""
        V.tensor(X, "X", floating=True, nonempty=False, finite=not self.device_program)  # (see device_program)
        if not isinstance(pre_activation, bool):
            raise ValueError(f"pre_activation must be a bool, got {pre_activation!r}")
        if X.ndim != 4 or X.shape[1] != 1:
            raise ValueError(f"X must be images of shape (n, 1, H, W), got {tuple(X.shape)}")
        feats, h = [X.flatten(1)], X
        for i, layer in enumerate(self.layers):
            if isinstance(layer, torch.nn.Linear):
                h = h.flatten(1)
            z = layer(h)
            h = torch.relu(z) if i < len(self.layers) - 1 else z
            feats.append((z if pre_activation else h).flatten(1))
        return feats

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.features(X)[-1][:, 0]


def train_adam(model, X, y, epochs: int, batch_size: int = 128, lr: float = 1e-3, seed: int = 0,
               progress: bool = True, device=None) -> list:
    """Adam on the mean logistic loss (binary cross-entropy), thesis §3.4.3; returns the epoch losses.

    Trains on ``device`` (default ``REPRO_DEVICE``: the CPU at quick and full scale, CUDA at paper scale
    where there is one) inside :func:`lib.scale.on_device`, which moves the model back afterwards.
    On CUDA (:func:`lib.device_step.step_mode`, ``REPRO_STEP_MODE``) the loop is a device program (issue 36,
    :func:`lib.train.minibatch_step`): the batch orders are drawn on the device's generator seeded ``seed``,
    so that **a CUDA run trains on other batches than a CPU run**, and the epoch losses are read once at the
    end (a NaN or inf is reported for the first epoch that had one, after training went on to the end).
    """
    V.instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    V.tensor(X, "X", convert=True, ndim=(2, 3, 4))  # points (n, d) or images (n, H, W) / (n, C, H, W)
    V.tensor(y, "y", convert=True, ndim=1)
    epochs, batch_size = V.positive_int(epochs, "epochs"), V.positive_int(batch_size, "batch_size")
    lr, seed = V.positive(lr, "lr"), V.seed(seed)
    X, y = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)
    if X.shape[0] != y.shape[0] or X.shape[0] == 0 or not bool(((y == 1) | (y == -1)).all()):
        raise ValueError("X and y must be non-empty, of equal length, with labels +-1")
    with on_device(model, device) as device:
        X, y = X.to(device), y.to(device)
        if step_mode(device) != "host":  # issue 36: CUDA's path, a device program
            return _train_adam_program(model, X, y, epochs, batch_size, lr, seed, progress, step_mode(device))
        gen = torch.Generator().manual_seed(int(seed))
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        losses = []
        for _ in tqdm(range(epochs), desc="Adam epochs", disable=not progress, leave=False):
            total = torch.zeros((), device=device)
            for idx in torch.randperm(len(y), generator=gen).split(batch_size):
                idx = idx.to(device)
                loss = _logistic_mean(model(X[idx]), y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.detach() * len(idx)
            losses.append(float(total) / len(y))
            V.finite_loss(losses[-1], f"{len(losses)} (epoch)", lr)
    return losses


def _logistic_mean(out, yb):
    """The mean logistic loss of one batch, as :func:`train_adam`'s host loop computes it."""
    return torch.nn.functional.softplus(-yb * out).mean()


def _train_adam_program(model, X, y, epochs, batch_size, lr, seed, progress, mode) -> list:
    """:func:`train_adam` as :func:`lib.train.train_minibatch`'s device program (issue 36): the same steps (Adam,
    the mean logistic loss of each batch, every epoch a fresh order of the rows, the last batch shorter),
    orders drawn on the device. Returns the epoch losses as the host loop computes them (sum / n)."""
    from lib.train import _device_optimizer, _program_history

    return _program_history(model, X, y, _logistic_mean, epochs, batch_size, seed,
                            _device_optimizer(model, "adam", lr, 0.0, 0.0), lr, progress, "Adam epochs", None,
                            mode).loss


def two_layer_report(W, a, X, y, X_test, big: float = 0.1) -> dict:
    """Every Chapter 2 metric of one trained two-layer net against Theorem 3.1 / Corollary 3.1.

    "Big" neurons have ``||w_j|| > big * max_k ||w_k||`` (the others are the dead set J_0 or not yet
    grown). Keys: ``min_corr`` / ``median_corr`` (big neurons vs their respective ``w_+-``),
    ``frac_corr_09`` and ``median_corr_all`` (all neurons, as in Fig. 3.1c), ``median_corr_mean`` (big
    neurons vs their class mean, the phase-1 direction), ``R_W``, ``R_a`` (eqs. 3.8/3.9), ``relF``
    (relative L2 distance of ``h/||theta||^2`` to ``f*`` on ``X_test``), ``margin_ratio`` (normalised
    margin over ``gamma*``), ``split`` and ``split_pred`` (norm split and ``||w_+||/||w_-||``),
    ``sv_ratio_2``, ``sv_ratio_3`` (sigma_2/sigma_1, sigma_3/sigma_1), ``pattern_frac`` (big
    neurons whose activation pattern is their extremal sector, Lemma 3.3), ``imbalance`` (largest
    ``|a_j^2 - ||w_j||^2| / ||w_j||^2`` over big neurons; 0 under gradient flow from a balanced
    init, Lemma B.4), ``n_big``.
    """
    W, a = _as_neurons(W, a)
    X = _as_matrix(X)
    y = _as_labels(y, X.shape[0])
    X_test = _as_matrix(X_test, "X_test")
    if X_test.shape[1] != X.shape[1]:
        raise V.ArgumentValueError(f"X_test must have {X.shape[1]} columns like X, got {V.describe(X_test)}")
    big = V.fraction(big, "big")
    w_plus, w_minus = pm_max_margin(X, y)
    norms = np.linalg.norm(W, axis=1)
    is_big = norms > big * norms.max()
    corr = neuron_alignment(W, a, w_plus, w_minus)
    means = {1: X[y > 0].mean(0), -1: X[y < 0].mean(0)}
    corr_mean = neuron_alignment(W, a, means[1], means[-1])
    R_W, R_a = theorem_residuals(W, a, w_plus, w_minus)
    f_star = predicted_function(X_test, w_plus, w_minus)
    rel_f = np.linalg.norm(normalized_output(W, a, X_test) - f_star) / np.linalg.norm(f_star)
    margin = (y * normalized_output(W, a, X)).min()
    sv = top_singular_values(W, 3)
    sigma_plus, sigma_minus = extremal_sectors(X, y)
    target = np.where(a[:, None] > 0, sigma_plus[None, :], sigma_minus[None, :])
    in_sector = (activation_patterns(W, X) == target).all(axis=1)
    return {
        "min_corr": float(corr[is_big].min()), "median_corr": float(np.median(corr[is_big])),
        "frac_corr_09": float((corr > 0.9).mean()), "median_corr_all": float(np.median(corr)),
        "median_corr_mean": float(np.median(corr_mean[is_big])), "R_W": R_W, "R_a": R_a,
        "relF": float(rel_f), "margin_ratio": float(margin / gamma_star(w_plus, w_minus)),
        "split": norm_split(W[is_big], a[is_big]),
        "split_pred": float(np.linalg.norm(w_plus) / np.linalg.norm(w_minus)),
        "sv_ratio_2": float(sv[1] / sv[0]), "sv_ratio_3": float(sv[2] / sv[0]),
        "pattern_frac": float(in_sector[is_big].mean()), "n_big": int(is_big.sum()),
        "imbalance": float(np.max(np.abs(a[is_big] ** 2 - norms[is_big] ** 2) / norms[is_big] ** 2)),
    }


_UNCHECKED.update({two_layer_forward: _two_layer_forward, residual_forward: _residual_forward})
_STRUCTURE.update({two_layer_forward: _check_two_layer, residual_forward: _check_residual})
