"""Linear knowledge distillation (Chapter 4; Phuong 2021, Ch. 5 and App. D).

A linear teacher ``w_teacher`` labels a transfer set with soft labels ``sigmoid(w_teacher . x)``;
a linear (``depth=1``) or deep linear (``depth>=2``) student minimises the normalised cross-entropy
(5.1) by gradient descent. The functions here compute what the student learns (Thms 5.1/5.2), its
transfer risk (5.4) — exactly for rotation-invariant "angle tasks" — the risk bounds (Thm 5.3,
Cors 5.1/5.2), hard-label learners for comparison, and the monotonicity index (5.34).

Orientation: **rows are points**. ``X`` has shape ``(n, d)``; the thesis's data matrix is ``X.T``.
Functions marked *batched* also accept a stack of transfer sets ``X`` of shape ``(T, n, d)`` with
weights of shape ``(T, d)``. Everything is float64 numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

import numpy as np
from scipy import optimize, special, stats

from lib import maxmargin
from lib import validate as V
from lib.scale import ChapterScales

__all__ = [
    "span_projection", "soft_labels", "hard_labels", "ce_loss", "ce_grad", "default_lr",
    "gd_linear", "train_linear_student", "newton_in_span", "train_hard_label_student",
    "hard_margin_svm", "mc_risk_pvalues", "balanced_rank1_init", "end_to_end", "balancedness_defect",
    "predicted_orthogonal_residual", "d40_bound", "init_norm_threshold", "poly_angle_quantile",
    "margin_angle_quantile", "reverse_cdf", "sample_angle_task", "unsigned_angle", "signed_angle",
    "transfer_risk_exact", "transfer_risk_mc", "risk_bound_519", "lemma_d3_angle", "thmD4_bound",
    "cor51_bound", "cor52_bound",
    "w_delta", "monotonicity_counts", "DistillConfig", "CONFIGS",
]


# ----------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class DistillConfig:
    """Every hyper-parameter of Chapter 4 (thesis Ch. 5). Names: ``iso_*`` Thm 5.1 on isotropic data,
    ``deep_*`` Thm 5.2, ``rn_*`` risk vs n (Thm 5.3), ``margin_*`` Cor. 5.1, ``path_*`` Lemma 5.1,
    ``geo_*`` Fig. 5.3, ``bias_*`` Fig. 5.4, ``mono_*`` Fig. 5.5, ``dim_*`` beyond the document."""

    iso_d: int = 1000                 # Thm 5.1, n < d: isotropic Gaussian data
    iso_n: int = 20
    iso_steps: int = 500              # GD steps at lr = 4n / lambda_max
    big_d: int = 50                   # Thm 5.1, n >= d
    big_n: int = 100
    big_steps: int = 2000
    deep_d: int = 100                 # Thm 5.2
    deep_n: int = 20
    deep_width: int = 10
    deep_depths: tuple = (2, 3)
    deep_r0: tuple = (1e-1, 1e-2, 1e-3)
    deep_steps: int = 6000
    deep_ge_d: int = 20               # Thm 5.2 (5.14): deep students with n >= d (isotropic data)
    deep_ge_n: int = 60
    deep_lr_factor: float = 0.25      # (D.32) holds to ~1% at this step, to ~2% at twice it (GD, not flow)
    rn_d: int = 100                   # risk vs n (Thm 5.3, Cor. 5.2)
    rn_kappas: tuple = (0.5, 1.0, 2.0)
    rn_ns: tuple = (1, 2, 5, 10, 20, 50, 99, 100, 150)
    rn_sets: int = 100                # transfer sets per (kappa, n) for distillation
    hard_sets: int = 30               # transfer sets per (kappa, n) for the GD learners (soft and hard labels)
    hard_steps: int = 300             # budget of GD on soft and on hard labels (the same at every scale)
    newton_sets: int = 30             # transfer sets per (kappa, n >= d) for the Newton limit
    low_d: int = 5                    # low-dimensional panel
    margin_betas_deg: tuple = (40, 60, 80)   # Cor. 5.1
    margin_ns: tuple = (1, 2, 3, 5, 8)
    margin_sets: int = 300
    ks_points: int = 100_000          # Fig. 5.1: sampled angles per task for the sampler's KS control
    path_d: int = 50                  # Lemma 5.1 along random sequences
    path_seqs: int = 60               # (60: the max-margin increase fraction has room against the seed spread)
    geo_d: int = 1000                 # Fig. 5.3: d = 1000 (thesis §5.4.1)
    geo_n: int = 20                   # n = 20 (thesis §5.4.1)
    geo_kappas: tuple = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
    geo_sets: int = 100
    mc_sets: int = 5                  # Monte-Carlo cross-check of the exact risk
    mc_test: int = 10000
    bias_source: str = "digits"       # Fig. 5.4: "digits" (offline) or "mnist" (paper, online)
    bias_n: int = 10                  # thesis §5.4.2: n = 100 on MNIST (the paper scale); digits need n < rank 51
    bias_deltas: tuple = tuple(range(0, 100, 10))   # delta in {0, 10, ..., 90} (thesis §5.4.2)
    bias_draws: int = 50
    mono_d: int = 100                 # Fig. 5.5: kappa = 1, d = 100, n = 5 (thesis §5.4.3)
    mono_n: int = 5
    mono_kappa: float = 1.0
    mono_sets: int = 300              # thesis §5.4.3: 1000 transfer sets (the full and paper scales)
    mono_deltas: tuple = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)   # Fig. 5.5's caption (thesis)
    mono_hard_steps: int = 500
    tie_tol: float = 1e-7
    dim_ds: tuple = (6, 10, 30, 100, 300, 1000)   # beyond: risk vs dimension (d > dim_n)
    dim_n: int = 5
    dim_kappa: float = 1.0
    dim_sets: int = 200

    def __post_init__(self):
        # every int field is a size or a count (>= 1), every float field a rate or scale (> 0)
        rules = {f.name: (V.positive_int if f.type in ("int", int) else V.positive)
                 for f in fields(self) if f.type in ("int", int, "float", float)}
        counts, rates = V.each(V.positive_int, min_len=1), V.each(V.positive, min_len=1)
        rules.update(tie_tol=V.nonnegative, bias_source=V.one_of("digits", "mnist"), deep_depths=counts,
                     deep_r0=rates, rn_kappas=rates, rn_ns=counts, margin_betas_deg=rates, margin_ns=counts,
                     geo_kappas=rates, bias_deltas=V.each(V.nonnegative, min_len=1), mono_deltas=rates,
                     dim_ds=counts)
        V.config(self, rules)


CONFIGS = ChapterScales(
    "distillation",
    quick=DistillConfig(),
    full=DistillConfig(deep_steps=8000, rn_sets=1000, hard_sets=300, newton_sets=300, margin_sets=1000, path_seqs=200,
                       geo_sets=1000, geo_kappas=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0),
                       mc_sets=20, mc_test=100000, bias_draws=200, mono_sets=1000, dim_sets=1000),
    paper=DistillConfig(deep_steps=8000, rn_sets=1000, hard_sets=1000, newton_sets=1000, margin_sets=1000,
                        path_seqs=200, geo_sets=1000, mc_sets=20, mc_test=100000,
                        bias_source="mnist", bias_n=100, bias_draws=100, mono_sets=1000, dim_sets=1000),
)


# ----------------------------------------------------------------------------- input checks
def _data_and_weight(X, w, wname: str = "w"):
    """Check a (possibly batched) data matrix and a matching weight vector; returns float64 copies."""
    X = V.array(X, "X", ndim=(2, 3))
    w = V.array(w, wname, ndim=(1, 2))
    d = X.shape[-1]
    if w.shape[-1] != d:
        raise V.ArgumentValueError(f"{wname} has {w.shape[-1]} entries but the points of X have d={d} "
                                   "(X must be (n, d): rows are points)")
    if w.ndim == 2 and (X.ndim != 3 or w.shape[0] != X.shape[0]):
        raise V.ArgumentValueError(f"{wname}: a batch of weights {w.shape} needs X of shape (T, n, d) with the same T, "
                                   f"got {X.shape}")
    return X, w


def _labels(y, X) -> np.ndarray:
    y = V.array(y, "y", ndim=(1, 2))
    if y.shape != X.shape[:-1]:
        raise V.ArgumentValueError(f"y must have shape {X.shape[:-1]} (one label per row of X, whose shape is "
                                   f"{X.shape}: X is (n, d) or (T, n, d), rows are points), got {y.shape}")
    if np.any(y < 0) or np.any(y > 1):
        raise ValueError("labels y must lie in [0, 1]")
    return y


def _matvec(X, w):
    """Logits ``X w`` for one set or a batch of sets."""
    if X.ndim == 2:
        return X @ w
    return (X @ w[..., None])[..., 0] if w.ndim == 2 else X @ w


# ----------------------------------------------------------------------------- what the student learns
def _span_basis(X) -> np.ndarray:
    """Orthonormal rows spanning the row span of ``X`` (SVD with a rank tolerance)."""
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    if s[0] == 0:
        raise ValueError("X is all zeros: its span is {0}")
    return vt[s > s[0] * max(X.shape) * np.finfo(float).eps]


def span_projection(X, w) -> np.ndarray:
    """Orthogonal projection of ``w`` onto the row span of ``X`` (the GD limit (5.6), Thm 5.1). *Batched*;
    with one ``X`` of shape ``(n, d)``, ``w`` may also be a stack ``(k, d)`` of vectors to project.

    Uses an SVD with a rank tolerance, so it is exact also for rank-deficient data (digits) and
    returns ``w`` itself when the rows span R^d (the case n >= d of (5.6)).
    """
    X = V.array(X, "X", ndim=(2, 3))
    if X.ndim == 2:  # one data set; w may be one vector (d,) or a stack of vectors (k, d)
        w = V.array(w, "w", ndim=(1, 2))
        if w.shape[-1] != X.shape[1]:
            raise ValueError(f"w has {w.shape[-1]} entries but the points of X have d={X.shape[1]} "
                             "(X must be (n, d): rows are points)")
        basis = _span_basis(X)
        return w.copy() if basis.shape[0] == X.shape[1] else (w @ basis.T) @ basis
    X, w = _data_and_weight(X, w)
    w = np.broadcast_to(w, X.shape[:1] + w.shape[-1:])
    tol = max(X.shape[1:]) * np.finfo(float).eps
    if X.shape[1] >= X.shape[2]:                             # n >= d: w itself if every set has rank d
        s = np.linalg.svd(X, compute_uv=False)
        if np.all(s[:, -1] > s[:, 0] * tol):
            return w.copy()
    else:                                                    # n < d: stacked QR, if clearly full rank
        Q, R = np.linalg.qr(np.swapaxes(X, 1, 2))
        r = np.abs(np.diagonal(R, axis1=1, axis2=2))
        if np.all(r.min(1) > r.max(1) * 1e3 * tol):
            return (Q @ (np.swapaxes(Q, 1, 2) @ w[..., None]))[..., 0]
    _, s, vt = np.linalg.svd(X, full_matrices=False)        # general case: stacked SVD with a rank cut
    keep = s > s[:, :1] * tol
    coef = np.where(keep, (vt @ w[..., None])[..., 0], 0.0)
    proj = (coef[:, None, :] @ vt)[:, 0, :]
    full_rank = keep.sum(1) == X.shape[2]
    return np.where(full_rank[:, None], w, proj)             # rank d: w itself, exactly (5.6)


def soft_labels(X, w_teacher, temperature: float = 1.0) -> np.ndarray:
    """Soft labels ``sigmoid(w_teacher . x / T)`` of the rows of ``X`` (Sec. 5.2). *Batched.*"""
    X, w_teacher = _data_and_weight(X, w_teacher, "w_teacher")
    return special.expit(_matvec(X, w_teacher) / V.positive(temperature, "temperature"))


def hard_labels(X, w_teacher) -> np.ndarray:
    """Hard labels ``1{w_teacher . x >= 0}`` (the teacher h*, Sec. 5.2). *Batched.*"""
    X, w_teacher = _data_and_weight(X, w_teacher, "w_teacher")
    return (_matvec(X, w_teacher) >= 0).astype(np.float64)


def ce_loss(w, X, y) -> np.ndarray | float:
    """Normalised cross-entropy l^1(w) of (5.1): mean CE minus its minimum (mean binary entropy of y). *Batched.*"""
    X, w = _data_and_weight(X, w)
    y = _labels(y, X)
    z = _matvec(X, w)
    loss = np.mean(np.logaddexp(0.0, z) - y * z - special.entr(y) - special.entr(1 - y), axis=-1)
    return float(loss) if loss.ndim == 0 else loss


def ce_grad(w, X, y) -> np.ndarray:
    """Gradient (D.4) of l^1: ``X^T (sigmoid(Xw) - y) / n`` — it lies in the row span of X. *Batched.*"""
    X, w = _data_and_weight(X, w)
    return _grad(w, X, _labels(y, X))


def _grad(w, X, y):
    """:func:`ce_grad` without input checks, for the inner loops of gradient descent."""
    r = special.expit(_matvec(X, w)) - y
    return (r[..., None, :] @ X)[..., 0, :] / X.shape[-2]


def default_lr(X, depth: int = 1, target_norm: float | None = None, factor: float = 1.0):
    """A stable GD step ``factor * 4n / lambda_max(X^T X)`` (l^1 is lambda_max/(4n)-smooth). *Batched.*

    For ``depth >= 2`` it is further divided by ``depth * target_norm**(2(depth-1)/depth)``, the
    preconditioner of the induced end-to-end flow (D.22) at the target (Sec. 5.3.1, Thm 5.2).
    """
    X = V.array(X, "X", ndim=(2, 3))
    depth = V.positive_int(depth, "depth")
    lam = np.linalg.norm(X, ord=2, axis=(-2, -1)) ** 2
    if np.any(lam == 0):
        raise ValueError("X is all zeros: no step size makes sense")
    lr = V.positive(factor, "factor") * 4 * X.shape[-2] / lam
    if depth > 1:
        if target_norm is None:
            raise ValueError("depth >= 2 needs target_norm (the norm of the expected limit)")
        lr = lr / (depth * V.positive(target_norm, "target_norm") ** (2 * (depth - 1) / depth))
    return float(lr) if np.ndim(lr) == 0 else lr


def gd_linear(X, y, steps: int, lr, w0=None, record: bool = False):
    """Plain gradient descent on l^1 for a directly parameterised student (L = 1). *Batched.*

    Returns ``w`` (and the array of all iterates, shape ``(steps + 1, ..., d)``, if ``record``).
    Soft labels give distillation (Thm 5.1); 0/1 labels give the hard-label learner.
    """
    X = V.array(X, "X", ndim=(2, 3))
    y = _labels(y, X)
    steps = V.positive_int(steps, "steps")
    lr = V.array(lr, "lr", finite=False)
    if lr.ndim > 1 or (lr.ndim == 1 and (X.ndim != 3 or lr.shape[0] != X.shape[0])):
        raise ValueError(f"lr must be a scalar or one step per transfer set, got shape {lr.shape}")
    if not np.all(np.isfinite(lr)) or np.any(lr <= 0):
        raise ValueError("lr must be positive and finite")
    w = np.zeros(X.shape[:-2] + X.shape[-1:]) if w0 is None else _data_and_weight(X, w0, "w0")[1].copy()
    if w.shape != X.shape[:-2] + X.shape[-1:]:
        w = np.broadcast_to(w, X.shape[:-2] + X.shape[-1:]).copy()
    step = lr[..., None] if lr.ndim == 1 else lr
    path = [w.copy()] if record else None
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            w -= step * _grad(w, X, y)
            if record:
                path.append(w.copy())
    if not np.all(np.isfinite(w)):
        raise FloatingPointError("gradient descent diverged: lower lr (see default_lr)")
    return (w, np.stack(path)) if record else w


# ----------------------------------------------------------------------------- deep linear students
def balanced_rank1_init(w0, depth: int, width: int) -> list[np.ndarray]:
    """Balanced (5.13) rank-one factors ``W_l = c u_l u_{l-1}^T`` whose product is ``w0^T`` (Thm 5.2).

    ``c = ||w0||^(1/L)``; hidden unit vectors are the first basis vectors. Shapes: ``W_1`` is
    ``(width, d)``, middle ones ``(width, width)``, ``W_L`` is ``(1, width)``.
    """
    w0 = V.array(w0, "w0", ndim=(1,))
    depth = V.positive_int(depth, "depth")
    width = V.positive_int(width, "width")
    norm = np.linalg.norm(w0)
    if norm == 0:
        raise ValueError("w0 must be nonzero (zero is a stationary point of the deep linear flow)")
    c = norm ** (1.0 / depth)
    dims = [w0.size] + [width] * (depth - 1) + [1]
    units = [w0 / norm] + [np.eye(h)[0] for h in dims[1:]]
    return [c * np.outer(units[l + 1], units[l]) for l in range(depth)]


def _check_factors(factors) -> list:
    """A non-empty list of finite 2-D factors whose shapes chain (checked, not converted)."""
    factors = V.sequence(factors, "factors", min_len=1)
    for l, W in enumerate(factors):
        W = V.array(W, f"factors[{l}]", ndim=2)
        if l and W.shape[1] != np.shape(factors[l - 1])[0]:
            raise V.ArgumentValueError(f"factors[{l}] has {W.shape[1]} columns but factors[{l - 1}] has "
                                       f"{np.shape(factors[l - 1])[0]} rows")
    return factors


def end_to_end(factors) -> np.ndarray:
    """The end-to-end vector ``w`` with ``w^T = W_L ... W_1`` (5.2)."""
    return _end_to_end(_check_factors(factors))


def _end_to_end(factors) -> np.ndarray:
    """:func:`end_to_end` without the checks (the inner loop of the deep student)."""
    prod = factors[0]
    for W in factors[1:]:
        prod = W @ prod
    return prod.ravel()


def balancedness_defect(factors) -> float:
    """``max_l ||W_{l+1}^T W_{l+1} - W_l W_l^T||_F`` (zero for balanced factors, (5.13))."""
    factors = _check_factors(factors)
    if len(factors) < 2:
        return 0.0
    return float(max(np.linalg.norm(factors[l + 1].T @ factors[l + 1] - factors[l] @ factors[l].T)
                     for l in range(len(factors) - 1)))


def _deep_linear_gd(factors, X, y, steps, lr, record):
    """GD on the factors of a deep linear student; dl/dW_l = A_l^T g^T B_l^T with A_l, B_l the
    products above/below layer l and g the end-to-end gradient (D.4)."""
    path = [_end_to_end(factors)] if record else None
    for _ in range(steps):
        if not all(np.all(np.isfinite(W)) for W in factors):
            raise FloatingPointError("gradient descent diverged: lower lr (see default_lr)")
        below = [np.eye(X.shape[1])]
        for W in factors[:-1]:
            below.append(W @ below[-1])
        above = [np.ones((1, 1))]
        for W in reversed(factors[1:]):
            above.append(above[-1] @ W)
        above = above[::-1]
        g = _grad((above[0] @ factors[0]).ravel(), X, y)
        factors = [W - lr * above[l].T @ g[None, :] @ below[l].T for l, W in enumerate(factors)]
        if record:
            path.append(_end_to_end(factors))
    return factors, path


def train_linear_student(X, w_teacher, steps: int, lr: float, depth: int = 1, init_scale: float = 0.0,
                         seed: int = 0, width: int = 10, return_history: bool = False):
    """End-to-end weight vector after ``steps`` of GD on the soft-label cross-entropy (5.1)-(5.3).

    ``depth=1``: a linear student started at 0 (Thm 5.1) or, if ``init_scale > 0``, at a random
    vector of that norm (the optimisation-bias experiment). ``depth>=2``: a deep linear network of
    hidden ``width`` with a balanced rank-one start of norm ``init_scale`` (5.13), its sign chosen so
    that (5.12) holds (Thm 5.2). With ``return_history`` also returns a dict with ``w0``, the iterates
    ``path`` (shape ``(steps + 1, d)``) and, for deep students, the final ``balancedness_defect``.
    """
    X, w_teacher = _data_and_weight(X, w_teacher, "w_teacher")
    if X.ndim != 2 or w_teacher.ndim != 1:
        raise ValueError("train_linear_student takes one transfer set X of shape (n, d)")
    steps = V.positive_int(steps, "steps")
    lr = V.positive(lr, "lr")
    depth = V.positive_int(depth, "depth")
    init_scale = V.nonnegative(init_scale, "init_scale")
    seed = V.seed(seed)
    if depth > 1 and init_scale == 0:
        raise ValueError("a deep linear student (depth >= 2) needs init_scale > 0: w = 0 is a saddle")
    y = soft_labels(X, w_teacher)
    direction = np.random.default_rng(seed).standard_normal(X.shape[1])
    w0 = init_scale * direction / np.linalg.norm(direction)
    history = {"w0": w0}
    if depth == 1:
        w, path = gd_linear(X, y, steps, lr, w0=w0, record=True)
    else:
        if ce_loss(w0, X, y) >= ce_loss(np.zeros_like(w0), X, y):
            w0 = -w0  # condition (5.12): the start must beat the saddle at 0
        history["w0"] = w0
        with np.errstate(over="ignore", invalid="ignore"):
            factors, path = _deep_linear_gd(balanced_rank1_init(w0, depth, width), X, y, steps, lr, True)
        if not np.all(np.isfinite(_end_to_end(factors))):
            raise FloatingPointError("gradient descent diverged: lower lr (see default_lr)")
        w, path = _end_to_end(factors), np.stack(path)
        history["balancedness_defect"] = balancedness_defect(factors)
    history["path"] = path
    return (w, history) if return_history else w


def predicted_orthogonal_residual(q0: float, r0: float, w_hat_norm: float, depth: int) -> float:
    """Limit of the squared out-of-span norm q predicted by the conservation law (D.32).

    Solves ``q = q0 * ((||w_hat||^2 + q) / r0^2)^((L-1)/L)``, the fixed point reached once the
    in-span part has converged to ``w_hat`` (App. D.3). Returns ``q0`` for ``depth=1``.
    """
    q0, r0 = V.real(q0, "q0"), V.positive(r0, "r0")
    w_hat_norm = V.positive(w_hat_norm, "w_hat_norm")
    depth = V.positive_int(depth, "depth")
    if not np.isfinite(q0) or q0 < 0 or q0 > r0 ** 2 * (1 + 1e-12):
        raise ValueError(f"q0 must lie in [0, r0^2], got {q0!r}")
    if depth == 1 or q0 == 0:
        return q0
    e = (depth - 1) / depth
    f = lambda q: q - q0 * ((w_hat_norm ** 2 + q) / r0 ** 2) ** e
    hi = max(q0, 1.0) * w_hat_norm ** 2
    while f(hi) < 0:
        hi *= 2.0
        if hi > 1e300:
            raise ValueError("no finite residual: r0 is too large compared with ||w_hat||")
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=1e-14))


def d40_bound(r0: float, w_hat_norm: float, depth: int) -> float:
    """Bound (D.40) on ``limsup ||w(t) - w_hat||^2``: ``r0^(2/L) ||w_hat||^2 / (||w_hat||^(2/L) - r0^(2/L))``."""
    r0, w_hat_norm = V.positive(r0, "r0"), V.positive(w_hat_norm, "w_hat_norm")
    depth = V.positive_int(depth, "depth")
    if r0 >= w_hat_norm:
        raise ValueError("(D.40) needs r0 = ||w(0)|| < ||w_hat|| (condition (5.11))")
    a, b = r0 ** (2 / depth), w_hat_norm ** (2 / depth)
    return a * w_hat_norm ** 2 / (b - a)


def init_norm_threshold(eps: float, w_hat_norm: float, depth: int) -> float:
    """Largest admissible ``||w(0)||`` in (5.11): ``min(||w_hat||, eps^L ||w_hat|| / (eps^2 + ||w_hat||^2)^(L/2))``."""
    eps, w_hat_norm = V.positive(eps, "eps"), V.positive(w_hat_norm, "w_hat_norm")
    depth = V.positive_int(depth, "depth")
    return min(w_hat_norm, eps ** depth * w_hat_norm / (eps ** 2 + w_hat_norm ** 2) ** (depth / 2))


# ----------------------------------------------------------------------------- learners
def _newton(Z, y, iters):
    """Damped Newton on the soft-label cross-entropy for a stack of coordinate matrices ``Z (T, n, k)``
    of full column rank (n >= k): backtracking halves each set's step until its loss does not increase (plain
    Newton from 0 can overshoot on ill-conditioned sets). Stops after ``iters`` steps or once every
    set's step is below 1e-12 of its iterate (quadratic convergence then leaves rounding-level errors);
    on badly conditioned sets the steps stay at the rounding floor that ``cond(Z)`` sets."""
    c = np.zeros(Z.shape[:1] + Z.shape[2:])
    loss = lambda c: np.mean(np.logaddexp(0.0, _matvec(Z, c)) - y * _matvec(Z, c), axis=-1)
    f = loss(c)
    for _ in range(iters):
        p = special.expit(_matvec(Z, c))
        # the Newton step (Z^T S Z)^-1 Z^T (p - y), S = diag(p(1-p)), as the least-squares solution of
        # S^(1/2) Z step = S^(-1/2) (p - y) by QR: its error grows with cond(Z), not cond(Z)^2
        sq = np.sqrt(p * (1 - p))
        Q, R = np.linalg.qr(Z * sq[..., None])
        step = np.linalg.solve(R, np.swapaxes(Q, 1, 2) @ ((p - y) / sq)[..., None])[..., 0]
        t = np.ones(len(c))
        for _ in range(40):
            f_new = loss(c - t[:, None] * step)
            worse = f_new > f + 1e-12 * np.abs(f)
            if not np.any(worse):
                break
            t = np.where(worse, t / 2, t)
        c, f = c - t[:, None] * step, f_new
        if np.all(np.linalg.norm(step, axis=1) <= 1e-12 * np.maximum(1.0, np.linalg.norm(c, axis=1))):
            break
    return c


def newton_in_span(X, y, iters: int = 30) -> np.ndarray:
    """The limit of GD from 0 on l^1, by damped Newton in span coordinates ``w = Q c`` (Thm 5.1).

    Useful where plain GD is slow (ill-conditioned angle tasks, Sec. 5.4.1). *Batched*: a stack
    ``X (T, n, d)`` of sets is solved set by set, or all at once in R^d when every set has rank d
    (n >= d, where the limit is the teacher itself and nothing is projected).
    """
    X = V.array(X, "X", ndim=(2, 3))
    y = _labels(y, X)
    iters = V.positive_int(iters, "iters")
    if X.ndim == 3:
        n, d = X.shape[1:]
        if n >= d and np.all(np.linalg.matrix_rank(X) == d):
            return _newton(X, y, iters)
        return np.stack([newton_in_span(Xt, yt, iters) for Xt, yt in zip(X, y)])
    basis = _span_basis(X)
    return basis.T @ _newton((X @ basis.T)[None], y[None], iters)[0]


def train_hard_label_student(X, w_teacher, steps: int, lr=None) -> np.ndarray:
    """The hard-label learner of this book: GD from 0 on the cross-entropy with the teacher's 0/1
    labels, same student and budget as distillation (Sec. 5.4; the thesis leaves it open). *Batched.*

    ``lr`` defaults to :func:`default_lr`. Its direction tends to :func:`hard_margin_svm` as steps grow.
    """
    X, w_teacher = _data_and_weight(X, w_teacher, "w_teacher")
    return gd_linear(X, hard_labels(X, w_teacher), steps, default_lr(X) if lr is None else lr)


# Relative tolerance of hard_margin_svm's optimality certificate (KKT, duality gap). The NNLS solver reaches a
# relative accuracy of a few 1e-9 at n > d: in chapter 04's seed sweep of 310ca58 a tolerance of 1e-9 refused
# correct answers in 4 of 25 runs (worst margin deficit 4.3e-9, gap 3.3e-9, among 6,500 solves per run, the next
# worst 2e-11). 1e-6 leaves 200 times that and still refuses an answer 1e-5 off (tests/test_distill.py).
SVM_RTOL = 1e-6


def hard_margin_svm(X, w_teacher) -> np.ndarray:
    """Homogeneous hard-margin SVM on the teacher's hard labels: ``min ||w|| s.t. s_i w.x_i >= 1`` with
    ``s_i = sign(w_teacher . x_i)`` (+1 on the boundary). The limit direction of hard-label GD (Soudry et
    al. 2018), for any ``n`` (the data are separable by the teacher). *Batched.*

    The problem is chapter 02's max-margin vector of the rows ``z_i = s_i x_i``, solved once in the book by
    :func:`lib.maxmargin.max_margin` (one NNLS, Lawson and Hanson's least-distance program). Two things are
    added here, because that solver decides infeasibility and accuracy with absolute thresholds (1e-10),
    which a small margin (``||w||`` of 10^5, seen at ``n >= d`` on the angle tasks) would trip:

    * the rows are rescaled by ``||w_teacher|| / min_i z_i.w_teacher`` before solving (the teacher is
      feasible, so the scaled solution has norm <= 1 and the solver works at unit scale; by homogeneity
      ``w = s w'``), or by the largest row norm when a point lies on the teacher's boundary;
    * the answer is accepted only with a *relative* optimality certificate: every margin
      ``s_i w.x_i >= 1 - SVM_RTOL`` and the duality gap ``|sum(alpha) - ||w||^2| <= SVM_RTOL ||w||^2``
      (``w = Z^T alpha``, ``alpha >= 0``: complementary slackness), else a ``ValueError``.
    """
    X, w_teacher = _data_and_weight(X, w_teacher, "w_teacher")
    if X.ndim == 3:
        return np.stack([hard_margin_svm(Xt, w_teacher if w_teacher.ndim == 1 else w_teacher[t])
                         for t, Xt in enumerate(X)])
    if not np.any(w_teacher):
        raise ValueError("w_teacher must be nonzero (it labels the points)")
    Z = X * np.where(X @ w_teacher >= 0, 1.0, -1.0)[:, None]
    gamma = float(np.min(Z @ w_teacher)) / np.linalg.norm(w_teacher)   # the teacher's own margin
    norms = np.linalg.norm(Z, axis=1)
    scale = 1.0 / gamma if gamma > 1e-12 * norms.max() else 1.0 / norms.max()
    try:
        w, alpha = maxmargin.max_margin(Z * scale, return_alpha=True)
    except ValueError as err:
        raise ValueError(f"hard_margin_svm: no w separates the points with a margin ({err})") from None
    sq = float(w @ w)
    if (Z @ w).min() * scale < 1 - SVM_RTOL or abs(alpha.sum() - sq) > SVM_RTOL * sq:
        raise ValueError(f"hard_margin_svm: the max-margin solution failed its relative optimality test "
                         f"(smallest margin {(Z @ w).min() * scale:.3g}, duality gap {abs(alpha.sum() - sq) / sq:.2g})")
    return w * scale


def w_delta(X, w_hat, delta: float, g) -> np.ndarray:
    """Learner ``w_hat + delta ||w_hat|| q / ||q||`` with ``q`` the part of ``g`` orthogonal to the data
    span (Sec. 5.4.2): a zero-loss minimiser with less optimisation bias. *Batched.*"""
    X, w_hat = _data_and_weight(X, w_hat, "w_hat")
    _, g = _data_and_weight(X, g, "g")
    delta = V.real(delta, "delta")
    q = g - span_projection(X, g)
    qn = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(qn <= 1e-12 * np.linalg.norm(g, axis=-1, keepdims=True)):
        raise ValueError("g has no component orthogonal to the data span (n >= rank?)")
    return w_hat + delta * np.linalg.norm(w_hat, axis=-1, keepdims=True) * q / qn


# ----------------------------------------------------------------------------- angle tasks and risk
def poly_angle_quantile(kappa: float) -> Callable[[np.ndarray], np.ndarray]:
    """Quantile of the angle ``a`` with ``P[a >= theta] = (1 - 2 theta / pi)^kappa`` (Sec. 5.4.1)."""
    kappa = V.positive(kappa, "kappa")
    return lambda u: np.pi / 2 * (1 - np.asarray(u, dtype=float) ** (1 / kappa))


def margin_angle_quantile(beta0: float) -> Callable[[np.ndarray], np.ndarray]:
    """Quantile of ``a ~ U[0, beta0]``: a task with angular margin ``pi/2 - beta0`` (Cor. 5.1)."""
    beta0 = V.positive(beta0, "beta0")
    if beta0 > np.pi / 2:
        raise ValueError(f"beta0 must lie in (0, pi/2], got {beta0}")
    return lambda u: beta0 * np.asarray(u, dtype=float)


def reverse_cdf(theta, kappa: float | None = None, beta0: float | None = None) -> np.ndarray:
    """``p(theta) = P[angle(w_*, x) >= theta]`` (5.17) of the polynomial (kappa) or margin (beta0) task."""
    if (kappa is None) == (beta0 is None):
        raise ValueError("give exactly one of kappa and beta0")
    theta = V.array(theta, "theta", ndim=(0, 1))
    if np.any(theta < 0) or np.any(theta > np.pi / 2 + 1e-12):
        raise ValueError("theta must lie in [0, pi/2]")
    if kappa is not None:
        return np.clip(1 - 2 * theta / np.pi, 0, 1) ** V.positive(kappa, "kappa")
    beta0 = V.positive(beta0, "beta0")
    return np.clip(1 - theta / beta0, 0, 1)


def sample_angle_task(n: int, d: int, quantile, rng, w_teacher, size: int | None = None) -> np.ndarray:
    """Points ``x = nu (cos a w_hat_* + sin a u)`` of a rotation-invariant angle task (Sec. 5.4.1).

    ``a = quantile(U)``, ``u`` uniform on the unit sphere of the complement of ``w_teacher``,
    ``nu ~ N(0, 1)``. Returns ``(n, d)`` or, with ``size=T``, ``(T, n, d)``.
    """
    n, d = V.positive_int(n, "n"), V.positive_int(d, "d")
    if d < 2:
        raise ValueError("angle tasks need d >= 2")
    w_teacher = V.array(w_teacher, "w_teacher", ndim=(1,))
    if w_teacher.size != d or not np.any(w_teacher):
        raise ValueError(f"w_teacher must be a nonzero vector of length d={d}")
    shape = (n,) if size is None else (V.positive_int(size, "size"), n)
    V.callable_(quantile, "quantile")
    V.instance(rng, "rng", np.random.Generator, "a numpy Generator (np.random.default_rng(seed))")
    e = w_teacher / np.linalg.norm(w_teacher)
    a = quantile(rng.random(shape))
    u = rng.standard_normal(shape + (d,))
    u -= (u @ e)[..., None] * e
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    nu = rng.standard_normal(shape)
    return nu[..., None] * (np.cos(a)[..., None] * e + np.sin(a)[..., None] * u)


def _cos_sin(u, v):
    """Cosine and sine of the angle between (stacks of) vectors; the sine from the orthogonal part,
    so that small angles are accurate (arccos of a cosine is not, near 0)."""
    u = V.array(u, "u", ndim=(1, 2))
    v = V.array(v, "v", ndim=(1, 2))
    if u.shape[-1] != v.shape[-1]:
        raise V.ArgumentValueError(f"u and v are vectors of different lengths: {u.shape} and {v.shape}")
    nu, nv = np.linalg.norm(u, axis=-1), np.linalg.norm(v, axis=-1)
    if np.any(nu == 0) or np.any(nv == 0):
        raise ValueError("angles are undefined for zero vectors")
    uh, vh = u / nu[..., None], v / nv[..., None]
    cos = np.sum(uh * vh, axis=-1)
    sin = np.linalg.norm(vh - cos[..., None] * uh, axis=-1)
    return cos, sin


def signed_angle(u, v) -> np.ndarray:
    """``alpha(u, v) in [0, pi]`` (5.28). Accepts stacks of vectors (last axis)."""
    cos, sin = _cos_sin(u, v)
    return np.arctan2(sin, cos)


def unsigned_angle(u, v) -> np.ndarray:
    """``alpha_bar(u, v) in [0, pi/2]`` (5.16), the angle ignoring sign. Accepts stacks of vectors."""
    cos, sin = _cos_sin(u, v)
    return np.arctan2(sin, np.abs(cos))


def transfer_risk_exact(w, w_teacher, d: int, quantile, ngrid: int = 4000) -> np.ndarray:
    """Exact transfer risk (5.4) of ``1{w.x >= 0}`` on a rotation-invariant angle task.

    With ``phi`` the signed angle between ``w`` and ``w_teacher`` and test points at angle ``a``:
    ``R = E_a[ I_{(1 - cot a cot phi)/2}((d-2)/2, (d-2)/2) ]`` for ``phi <= pi/2`` (the student's
    error direction is a uniform coordinate of the (d-2)-sphere), ``1 - R(pi - phi)`` beyond, and
    ``p(pi/2 - phi) / 2`` for ``d = 2``. Midpoint quadrature over ``ngrid`` quantile levels.
    Accepts a stack of students ``w`` of shape ``(T, d)``.
    """
    d = V.positive_int(d, "d")
    ngrid = V.positive_int(ngrid, "ngrid")
    V.callable_(quantile, "quantile")
    V.array(w, "w", ndim=(1, 2))
    V.array(w_teacher, "w_teacher", ndim=1)
    V.same_size(np.shape(w)[-1], "w", np.shape(w_teacher)[-1], "w_teacher", "length (both in R^d)")
    if d < 2:
        raise ValueError("angle tasks need d >= 2")
    phi = np.atleast_1d(signed_angle(w, w_teacher))
    if np.shape(w)[-1] != d:
        raise ValueError(f"w has {np.shape(w)[-1]} entries but d={d}")
    flip = phi > np.pi / 2
    phi_acute = np.where(flip, np.pi - phi, phi)
    a = quantile((np.arange(ngrid) + 0.5) / ngrid)
    if d == 2:
        risk = np.mean(a[None, :] > np.pi / 2 - phi_acute[:, None], axis=1) / 2
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.cos(a)[None, :] * np.cos(phi_acute)[:, None]
            s = np.sin(a)[None, :] * np.sin(phi_acute)[:, None]
            t = np.where(s > 0, -c / np.where(s > 0, s, 1.0), -np.inf)  # error iff coordinate < t
        x = np.clip((1 + t) / 2, 0, 1)
        cdf = (x >= 1).astype(float)
        inside = (x > 0) & (x < 1)                           # betainc only where it is not 0 or 1
        cdf[inside] = special.betainc((d - 2) / 2, (d - 2) / 2, x[inside])
        risk = cdf.mean(axis=1)
    risk = np.where(flip, 1 - risk, risk)
    return float(risk[0]) if np.ndim(w) == 1 else risk


def transfer_risk_mc(w, w_teacher, X_test) -> np.ndarray:
    """Monte-Carlo transfer risk: fraction of test rows where ``1{w.x>=0}`` and the teacher disagree.
    Accepts a stack of students ``w`` of shape ``(T, d)``."""
    X_test = V.array(X_test, "X_test", ndim=(2,))
    w = V.array(w, "w", ndim=(1, 2))
    w_teacher = V.array(w_teacher, "w_teacher", ndim=(1,))
    if w.shape[-1] != X_test.shape[1] or w_teacher.size != X_test.shape[1]:
        raise ValueError("w, w_teacher and the rows of X_test must have the same length")
    teacher = X_test @ w_teacher >= 0
    risk = np.mean((X_test @ w.T >= 0) != teacher[:, None], axis=0) if w.ndim == 2 else \
        np.mean((X_test @ w >= 0) != teacher)
    return float(risk) if w.ndim == 1 else risk


def mc_risk_pvalues(exact, mc, n_test: int) -> np.ndarray:
    """Two-sided exact binomial p-values of Monte-Carlo risks ``mc`` (error fractions on ``n_test`` fresh
    test points each) against the exact risks ``exact`` they estimate (Fig. 5.3's cross-check).

    If ``exact`` is right, ``n_test * mc`` is Binomial(``n_test``, ``exact``); the p-value is
    ``min(1, 2 min(P[K <= k], P[K >= k]))``. The smallest of ``T`` such p-values is below ``alpha / T``
    with probability at most ``alpha``, whatever the dependence between them (Bonferroni): the chapter's
    threshold for the largest deviation. Exact binomial tails, not normal ones: at ``kappa = 1`` an
    estimate rests on a handful of errors.
    """
    exact = V.array(exact, "exact", ndim=(0, 1))
    mc = V.array(mc, "mc", ndim=(0, 1))
    n_test = V.positive_int(n_test, "n_test")
    if exact.shape != mc.shape:
        raise ValueError(f"exact and mc must have the same shape, got {exact.shape} and {mc.shape}")
    for name, v in (("exact", exact), ("mc", mc)):
        if np.any(v < 0) or np.any(v > 1):
            raise ValueError(f"{name} must hold risks in [0, 1], got {v}")
    k = np.rint(mc * n_test)
    if np.any(np.abs(k - mc * n_test) > 1e-6 * n_test):
        raise ValueError(f"mc must be error counts divided by n_test={n_test}, got {mc}")
    lower, upper = stats.binom.cdf(k, n_test, exact), stats.binom.sf(k - 1, n_test, exact)
    return np.minimum(1.0, 2 * np.minimum(lower, upper))


# ----------------------------------------------------------------------------- bounds
def risk_bound_519(p_fn, n: int, nbeta: int = 2001, tight: bool = False) -> float:
    """Thm 5.3 bound ``min_beta p(beta) + p(pi/2 - beta)^n`` (5.19) on a beta grid; ``tight=True``
    uses the proof's sharper ``p(beta) + (1 - p(beta)) p(pi/2 - beta)^n`` (App. D.4)."""
    n = V.positive_int(n, "n")
    nbeta = V.positive_int(nbeta, "nbeta")
    V.callable_(p_fn, "p_fn")
    beta = np.linspace(0, np.pi / 2, nbeta)
    pb, pc = np.asarray(p_fn(beta), float), np.asarray(p_fn(np.pi / 2 - beta), float)
    if pb.shape != beta.shape or not np.all(np.isfinite(pb)):
        raise ValueError("p_fn must map an array of angles to finite values of the same shape")
    return float(np.min(pb + (1 - pb if tight else 1.0) * pc ** n))


def lemma_d3_angle(eps: float, w_norm: float) -> float:
    """Lemma D.3: ``||w - v|| <= eps <= ||w|| / 2`` implies ``alpha(w, v) <= sqrt(2 pi eps / ||w||)``."""
    eps, w_norm = V.nonnegative(eps, "eps"), V.positive(w_norm, "w_norm")
    if eps > w_norm / 2:
        raise ValueError(f"Lemma D.3 needs eps <= ||w|| / 2, got eps={eps} and ||w||={w_norm}")
    return float(np.sqrt(2 * np.pi * eps / w_norm))


def thmD4_bound(p_fn, n: int, eps: float, w_hat_norm: float, nbeta: int = 2001) -> float:
    """Thm D.4 (approximate distillation): ``min_beta p(beta) + p(pi/2 - delta - beta)^n`` over
    ``beta in [0, pi/2 - delta]``, with ``delta`` of :func:`lemma_d3_angle` (D.43)."""
    n, nbeta = V.positive_int(n, "n"), V.positive_int(nbeta, "nbeta")
    V.callable_(p_fn, "p_fn")
    eps, w_hat_norm = V.nonnegative(eps, "eps"), V.positive(w_hat_norm, "w_hat_norm")
    delta = lemma_d3_angle(eps, w_hat_norm)
    if delta > np.pi / 2:
        return 1.0  # no admissible beta: the statement is empty, and a risk is at most 1
    beta = np.linspace(0, np.pi / 2 - delta, nbeta)
    pb, pc = np.asarray(p_fn(beta), float), np.asarray(p_fn(np.pi / 2 - delta - beta), float)
    if pb.shape != beta.shape or not np.all(np.isfinite(pb)):
        raise ValueError("p_fn must map an array of angles to finite values of the same shape")
    return float(np.min(pb + pc ** n))


def cor51_bound(gamma: float, n: int) -> float:
    """Cor. 5.1 (large margin): ``gamma^n`` with ``gamma = p(pi/2 - beta)`` where ``p(beta) = 0``."""
    gamma = V.real(gamma, "gamma", min=0.0, max=1.0)
    return gamma ** V.positive_int(n, "n")


def cor52_bound(kappa: float, n: int) -> float:
    """Cor. 5.2 (polynomial p): ``(1 + (log n)^kappa) / n^kappa`` (5.21)."""
    kappa = V.positive(kappa, "kappa")
    n = V.positive_int(n, "n")
    return (1 + np.log(n) ** kappa) / n ** kappa


# ----------------------------------------------------------------------------- monotonicity (5.34)
def monotonicity_counts(angle_before, angle_after, tie_tol: float = 1e-7) -> dict:
    """Fractions of added points that decrease / leave (within ``tie_tol``) / increase the angle to the
    teacher; ``p_dec`` is the monotonicity index m of (5.34) with ties counted as no decrease."""
    before = V.array(angle_before, "angle_before", ndim=(1,))
    after = V.array(angle_after, "angle_after", ndim=(1,))
    if before.shape != after.shape:
        raise V.ArgumentValueError(f"angle_before and angle_after differ in shape: {before.shape} vs {after.shape}")
    tie_tol = V.nonnegative(tie_tol, "tie_tol")
    diff = after - before
    return {"p_dec": float(np.mean(diff < -tie_tol)), "p_tie": float(np.mean(np.abs(diff) <= tie_tol)),
            "p_inc": float(np.mean(diff > tie_tol))}
