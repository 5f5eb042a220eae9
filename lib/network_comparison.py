"""Comparing networks by their local affine maps (chapter 08, section "comparisons").

Sattelberg (2026), *Local Linearity of ReLU Neural Networks*, Chapter 7. A ReLU network is affine on
the polytope around each input: ``v(x) = J x + y`` there (eq. 5.25). Chapter 7 stacks, for each output
``j``, the coefficient rows ``[J_j(x_i), y_j(x_i)]`` of sampled inputs into a matrix
``C_j in R^{p x (d+1)}`` (eq. 7.3; training inputs give ``C``, test inputs ``C~``) and compares
networks through these matrices. Everything here is plain numpy on those coefficients (float64):

* :func:`coefficient_matrices` — the matrices ``C_j`` of eq. 7.3 from local maps ``(J, y)``;
* :func:`affine_outputs`, :func:`predict`, :func:`accuracy` — each row used as the affine map of its
  own input, and the class it predicts;
* :func:`kmeans_centres`, :func:`compress` — the k-means compression of §7.2 (Figs. 7.2-7.4);
* :func:`affine_map`, :func:`relative_residual` — the least-squares map ``C_1 M ~ C_2`` of the
  affine-mapped representation performance, eq. 7.4 (§7.3.1, Figs. 7.5-7.9);
* :func:`msed` — the mean squared Euclidean distance with the normaliser of eqs. 7.5-7.6 (§7.3.2);
* :func:`linear_cka`, :func:`mean_cka` — linear centred kernel alignment, eq. 7.7 (§7.3.3), NaN where
  it is undefined (a linear network's centred coefficients are 0);
* :func:`cross_entropy` — the softmax cross-entropy ``H(p, q)`` of two networks' outputs, eqs. 7.8-7.9
  (§7.3.4), the chapter's control;
* :func:`similarity_matrix`, :func:`block_means` — a metric over all pairs of networks, and the mean
  similarity within and across families of architectures.

Shapes: ``J`` (N, o, d) and ``y`` (N, o) for N inputs of dimension d and o outputs; coefficient
matrices ``C`` (o, N, d+1), one ``C_j`` per output (``C[j]``).
"""

from __future__ import annotations

import numpy as np

from lib import validate as V

__all__ = ["coefficient_matrices", "affine_outputs", "predict", "accuracy", "kmeans_centres", "compress",
           "affine_map", "relative_residual", "msed", "linear_cka", "mean_cka", "cross_entropy",
           "similarity_matrix", "block_means"]


def _coefficients(C, name: str) -> np.ndarray:
    """``C`` as a float64 array (o, N, d+1) with d >= 1."""
    C = V.array(C, name, ndim=3)
    if C.shape[2] < 2:
        raise V.ArgumentValueError(f"{name} must have d+1 >= 2 columns (gradient entries and the offset y), "
                                   f"got shape {C.shape}")
    return C


def _same_shape(A: np.ndarray, B: np.ndarray, name_a: str, name_b: str, axes=(0, 1, 2)) -> None:
    if any(A.shape[a] != B.shape[a] for a in axes):
        raise V.ArgumentValueError(f"{name_a} and {name_b} must agree in axes {list(axes)}, "
                                   f"got shapes {A.shape} and {B.shape}")


def coefficient_matrices(J, y) -> np.ndarray:
    """The coefficient matrices ``C_j = [J_j(x_i), y_j(x_i)]_i`` of eq. 7.3, stacked as (o, N, d+1).

    ``J`` (N, o, d): the local Jacobians (row ``j`` = gradient of output ``j``); ``y`` (N, o): the local
    offsets ``v(x) - J x``. Row ``i`` of ``C[j]`` is the affine map output ``j`` uses at input ``i``.
    """
    J = V.array(J, "J", ndim=3)
    y = V.array(y, "y", ndim=2)
    if y.shape != J.shape[:2]:
        raise V.ArgumentValueError(f"y must have shape (N, o) = {J.shape[:2]} to match J, got {y.shape}")
    return np.concatenate([J, y[:, :, None]], axis=2).transpose(1, 0, 2).copy()


def affine_outputs(C, X) -> np.ndarray:
    """Outputs (N, o) when row ``i`` of each ``C[j]`` is the affine map of input ``X[i]``:
    ``out[i, j] = C[j, i, :d] . X[i] + C[j, i, d]``.

    With a network's own coefficients this is the network itself (the maps are exact); with
    compressed or mapped coefficients it is the compressed or mapped classifier of §7.2 and §7.3.1.
    """
    C = _coefficients(C, "C")
    X = V.array(X, "X", ndim=2)
    if X.shape != (C.shape[1], C.shape[2] - 1):
        raise V.ArgumentValueError(f"X must have shape (N, d) = {(C.shape[1], C.shape[2] - 1)} to match C, "
                                   f"got {X.shape}")
    return np.einsum("jid,id->ij", C[:, :, :-1], X) + C[:, :, -1].T


def predict(outputs) -> np.ndarray:
    """Predicted classes: ``argmax_j`` of the outputs (N, o) for o >= 2 outputs (§7.2 step 5); for one
    output (a binary net trained with a logistic loss) class 1 where the output is > 0, else 0."""
    outputs = V.array(outputs, "outputs", ndim=2)
    if outputs.shape[1] == 1:
        return (outputs[:, 0] > 0).astype(np.int64)
    return outputs.argmax(axis=1)


def accuracy(outputs, labels) -> float:
    """Share of rows whose :func:`predict` class equals ``labels``."""
    outputs = V.array(outputs, "outputs", ndim=2)
    labels = V.array(V.labels(labels, "labels", max(outputs.shape[1], 2), n=outputs.shape[0]), "labels",
                     ndim=1, integer=True)
    return float((predict(outputs) == labels).mean())


def _flat(M: np.ndarray, tol: float) -> bool:
    """Whether the rows of ``M`` are all equal up to ``tol``: the column-centred matrix has norm at most
    ``tol`` times that of ``M`` (a linear network's coefficient rows, up to rounding)."""
    return bool(np.linalg.norm(M - M.mean(axis=0)) <= tol * np.linalg.norm(M))


FLAT_TOL = 1e-5
"""Relative spread below which a coefficient matrix counts as one repeated row (:func:`_flat`):
coefficients of float32 networks carry rounding noise of about 1e-7 relative."""


def _column_scale(C: np.ndarray, standardize: bool) -> np.ndarray:
    """Per-output column scales (o, 1, d+1): the columns' standard deviations (1 where a column is
    constant) if ``standardize``, else ones."""
    if not standardize:
        return np.ones((C.shape[0], 1, C.shape[2]))
    s = C.std(axis=1, keepdims=True)
    return np.where(s > 0, s, 1.0)


def kmeans_centres(C, k: int, seed: int = 0, n_init: int = 1, standardize: bool = False) -> list:
    """k-means centres of each output's coefficient rows (§7.2 step 2): a list of o arrays (k_j, d+1).

    scikit-learn's ``KMeans`` (Lloyd's algorithm, k-means++ initialisation, ``n_init`` restarts,
    ``random_state=seed``), one model per output. The thesis does not say which implementation,
    initialisation or scaling it used. Where a matrix has at most ``k`` distinct rows the centres are
    those rows (k-means then has zero cost; so ``k_j <= k``); where its rows are equal up to rounding
    (relative spread <= ``FLAT_TOL``: a linear network) the one centre is their mean, for every ``k``. With ``standardize`` the clustering runs on
    columns divided by their standard deviation (the offset ``y`` column is on another scale than
    the gradient entries); the centres are returned in the original units either way.
    """
    from sklearn.cluster import KMeans

    C = _coefficients(C, "C")
    k = V.positive_int(k, "k")
    seed = V.seed(seed)
    n_init = V.positive_int(n_init, "n_init")
    standardize = V.boolean(standardize, "standardize")
    scale = _column_scale(C, standardize)
    centres = []
    for j in range(C.shape[0]):
        Z = C[j] / scale[j]
        distinct = np.unique(Z, axis=0)
        if _flat(C[j], FLAT_TOL):
            found = Z.mean(axis=0, keepdims=True)
        elif len(distinct) <= k:
            found = distinct
        else:
            found = KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=seed).fit(Z).cluster_centers_
        centres.append(found * scale[j])
    return centres


def compress(C_train, C_test, k: int, seed: int = 0, n_init: int = 1, standardize: bool = False) -> np.ndarray:
    """The k-means compression of §7.2: each test row of ``C_test`` replaced by its nearest centre.

    Centres come from :func:`kmeans_centres` on ``C_train`` (steps 1-2); nearness is the Euclidean
    distance between coefficient rows in R^{d+1} (over ``[J, y]``, not over inputs; with
    ``standardize``, in the standardised units the clustering used) (step 3). Returns the compressed
    coefficients (o, N_test, d+1); :func:`affine_outputs` turns them into outputs (step 4) and
    :func:`predict` into classes (step 5). ``k = 1`` gives one affine map per output, a linear
    classifier.
    """
    C_train = _coefficients(C_train, "C_train")
    C_test = _coefficients(C_test, "C_test")
    _same_shape(C_train, C_test, "C_train", "C_test", axes=(0, 2))
    centres = kmeans_centres(C_train, k, seed=seed, n_init=n_init, standardize=standardize)
    scale = _column_scale(C_train, standardize)
    out = np.empty_like(C_test)
    for j, cen in enumerate(centres):
        Z, Q = C_test[j] / scale[j], cen / scale[j]
        d2 = (Z * Z).sum(1)[:, None] - 2 * Z @ Q.T + (Q * Q).sum(1)[None, :]
        out[j] = cen[d2.argmin(axis=1)]
    return out


def affine_map(C_source, C_target, rcond: float = 1e-10) -> np.ndarray:
    """Least-squares maps ``M_j = argmin ||C_source[j] M - C_target[j]||_F`` (eq. 7.4), shape (o, d+1, d+1).

    One map per output, fitted on the training coefficients of both networks (same inputs, same
    order). The minimum-norm solution via the pseudo-inverse, with singular values below
    ``rcond`` times the largest treated as zero (a linear network's matrix has rank 1, and rank-
    deficient matrices need the minimum-norm solve). ``C_target`` may carry a leading axis of several
    targets (T, o, N, d+1); the maps then have shape (T, o, d+1, d+1), at the cost of one
    pseudo-inverse. Apply a map to test coefficients with ``C_test @ M``.
    """
    C_source = _coefficients(C_source, "C_source")
    C_target = V.array(C_target, "C_target", ndim=(3, 4))
    _same_shape(C_source, C_target[(0,) * (C_target.ndim - 3)], "C_source", "C_target")
    rcond = V.positive(rcond, "rcond", max=1.0)
    return np.linalg.pinv(C_source, rcond=rcond) @ C_target


def relative_residual(C_source, M, C_target) -> float:
    """``||C_source M - C_target||_F / ||C_target||_F`` over all outputs together (eq. 7.4's fit).

    At most 1 for the least-squares ``M`` (``M = 0`` already gives 1); 0 for an exact map."""
    C_source = _coefficients(C_source, "C_source")
    C_target = _coefficients(C_target, "C_target")
    _same_shape(C_source, C_target, "C_source", "C_target")
    dd = C_source.shape[2]
    M = V.array(M, "M", shape=(C_source.shape[0], dd, dd))
    norm = np.linalg.norm(C_target)
    if norm == 0:
        raise V.ArgumentValueError("C_target must not be all zeros (the residual is relative to its norm)")
    return float(np.linalg.norm(C_source @ M - C_target) / norm)


def _normaliser(C: np.ndarray, name: str) -> float:
    a = float(C.max())
    if a == 0:
        raise V.ArgumentValueError(f"{name} has largest entry 0: the normaliser a = max C of eq. 7.5 is 0, "
                                   "so MSED is undefined")
    return a


def msed(C_a, C_b) -> float:
    """Mean squared Euclidean distance of eq. 7.6 between two networks' test coefficients (o, p, d+1).

    Each network's coefficients are divided by ``a = max_{j,i,k} C_{j,i,k}`` (eq. 7.5), the largest
    entry (signed, as the thesis writes it; not the largest absolute value), which makes the metric
    invariant to a positive rescaling of either network's outputs. Then
    ``1 / (o p (d+1)) * sum_j ||C_a[j] / a_a - C_b[j] / a_b||_F^2``. (The thesis writes 10 for o, its
    number of classes.) A network whose largest entry is negative gets its signs flipped by the
    division, a flaw of eq. 7.5 kept as written; a largest entry of 0 raises.
    """
    C_a = _coefficients(C_a, "C_a")
    C_b = _coefficients(C_b, "C_b")
    _same_shape(C_a, C_b, "C_a", "C_b")
    return float(np.mean((C_a / _normaliser(C_a, "C_a") - C_b / _normaliser(C_b, "C_b")) ** 2))


def linear_cka(X, Y, tol: float = FLAT_TOL) -> float:
    """Linear CKA of eq. 7.7 with mean-centred columns: ``||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F)``.

    ``X`` (p, m) and ``Y`` (p, m') hold the same p samples in rows (Kornblith et al. 2019). Invariant
    to orthogonal transforms and isotropic scaling of either argument; 1 for ``Y = X``. Returns NaN when
    it is undefined: when a centred matrix vanishes, i.e. its norm is at most ``tol`` times that of
    the uncentred matrix (or the matrix is 0). A linear network's coefficient rows are all equal, so
    its centred matrix is 0 and CKA is 0/0; coefficients of float32 networks carry rounding noise of
    about 1e-7 relative, which would otherwise give an arbitrary number.
    """
    X = V.array(X, "X", ndim=2)
    Y = V.array(Y, "Y", ndim=2)
    if X.shape[0] != Y.shape[0]:
        raise V.ArgumentValueError(f"X and Y must have the same number of rows (samples), got {X.shape} and {Y.shape}")
    tol = V.nonnegative(tol, "tol")
    if _flat(X, tol) or _flat(Y, tol):
        return float("nan")
    Xc, Yc = X - X.mean(axis=0), Y - Y.mean(axis=0)
    return float(np.linalg.norm(Yc.T @ Xc) ** 2 / (np.linalg.norm(Xc.T @ Xc) * np.linalg.norm(Yc.T @ Yc)))


def mean_cka(C_a, C_b, tol: float = FLAT_TOL) -> float:
    """Mean over outputs ``j`` of :func:`linear_cka` ``(C_a[j], C_b[j])`` (§7.3.3); NaN if any is NaN."""
    C_a = _coefficients(C_a, "C_a")
    C_b = _coefficients(C_b, "C_b")
    _same_shape(C_a, C_b, "C_a", "C_b", axes=(0, 1))
    return float(np.mean([linear_cka(C_a[j], C_b[j], tol) for j in range(C_a.shape[0])]))


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def cross_entropy(logits_p, logits_q) -> float:
    """Mean over inputs of ``H(p, q) = -sum_i p_i log q_i`` with ``p = softmax(logits_p)`` and
    ``q = softmax(logits_q)`` (eqs. 7.8-7.9): the cross-entropy of network q's outputs relative to
    network p's. Not symmetric; ``H(p, p)`` is the mean entropy of p, and ``H(p, q) >= H(p, p)``
    (Gibbs' inequality). Rows are inputs, columns classes (N, o)."""
    logits_p = V.array(logits_p, "logits_p", ndim=2)
    logits_q = V.array(logits_q, "logits_q", ndim=2)
    if logits_p.shape != logits_q.shape:
        raise V.ArgumentValueError(f"logits_p and logits_q must have the same shape, got {logits_p.shape} "
                                   f"and {logits_q.shape}")
    lp = _log_softmax(logits_p)
    return float(-(np.exp(lp) * _log_softmax(logits_q)).sum(axis=1).mean())


def similarity_matrix(items, metric) -> np.ndarray:
    """``S[r, c] = metric(items[r], items[c])`` for every ordered pair (the diagonal included), as a
    float array (n, n); rows are the first ("from") network, columns the second ("to")."""
    items = V.sequence(items, "items", min_len=1)
    metric = V.callable_(metric, "metric")
    return np.array([[float(metric(a, b)) for b in items] for a in items])


def block_means(S, families, skip_nan: bool = False) -> tuple[float, float]:
    """Mean of the off-diagonal entries of ``S`` (n, n) within families and across families.

    ``families``: one label per network (e.g. ``"dense"`` for both dense copies under both
    optimisers). Within: pairs ``r != c`` with equal labels; across: pairs with different labels.
    With ``skip_nan`` NaN entries (an undefined CKA) are left out, and a block with no finite entry
    gives NaN; otherwise ``S`` must be finite.
    """
    skip_nan = V.boolean(skip_nan, "skip_nan")
    S = V.array(S, "S", ndim=2, finite=False)
    if not np.isfinite(S[~np.isnan(S)] if skip_nan else S).all():
        raise V.ArgumentValueError(f"S must be finite{' apart from NaN' if skip_nan else ' (NaN only with skip_nan=True)'}, "
                                   f"got {V.describe(S)}")
    if S.shape[0] != S.shape[1]:
        raise V.ArgumentValueError(f"S must be a square matrix, got shape {S.shape}")
    families = V.sequence(families, "families")
    if len(families) != S.shape[0]:
        raise V.ArgumentValueError(f"families must give one label per row of S ({S.shape[0]}), got {len(families)}")
    f = np.array([str(x) for x in families])
    same = f[:, None] == f[None, :]
    off = ~np.eye(len(f), dtype=bool)
    out = []
    for mask in (same & off, ~same):
        vals = S[mask]
        vals = vals[~np.isnan(vals)]
        out.append(float(vals.mean()) if vals.size else float("nan"))
    return out[0], out[1]
