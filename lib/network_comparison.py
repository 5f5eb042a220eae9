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
  similarity within and across families of architectures;
* :func:`read_heatmap` — the thesis' Fig. 7.9 (CIFAR affine-map accuracies, :data:`FIG_7_9_TEXT`), the
  one heat map whose numbers survive in the extracted text, read cell by cell and checked against the
  target nets' own accuracies (:data:`TABLE_7_1`), so that garbled cells are marked, not used.

Shapes: ``J`` (N, o, d) and ``y`` (N, o) for N inputs of dimension d and o outputs; coefficient
matrices ``C`` (o, N, d+1), one ``C_j`` per output (``C[j]``).
"""

from __future__ import annotations

import numpy as np

from lib import validate as V

__all__ = ["coefficient_matrices", "affine_outputs", "predict", "accuracy", "kmeans_centres", "compress",
           "affine_map", "mapped_coefficients", "cka_matrix", "relative_residual", "msed", "linear_cka", "mean_cka", "cross_entropy",
           "similarity_matrix", "block_means", "THESIS_NETS", "TABLE_7_1", "FIG_7_9_TEXT", "HEATMAP_STATUS",
           "read_heatmap"]


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
    labels = V.array(V.labels(labels, "labels", max(outputs.shape[1], 2), n=outputs.shape[0], rows_of="outputs",
                                  classes_of="outputs"), "labels",
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


def mapped_coefficients(C_source_train, C_source_test, C_target_train, rcond: float = 1e-10):
    """``C_source_test @ affine_map(C_source_train, C_target_train, rcond)`` (eq. 7.4 applied to the
    source's test coefficients), computed as ``(C_source_test @ pinv(C_source_train)) @ C_target_train``
    so that the ``(d+1) x (d+1)`` maps are never formed: at 3,072 pixels (chapter 08's paper path,
    Figs. 7.8/7.9 on MNIST and CIFAR-10) ten of them take 750 MB per pair of nets. The shapes are those
    of :func:`affine_map`'s arguments (``(n_out, N_train, d+1)`` and ``(n_out, N_test, d+1)``); returns
    ``(n_out, N_test, d+1)``. ``C_target_train`` may also be a list (or tuple) of several targets' matrices (one
    pseudo-inverse for all, and no stacked copy of them): the result is then the list of their mapped
    coefficients, in that order. Computed on :func:`lib.scale.current_device` (a GPU at paper scale where
    there is one), returned as numpy arrays."""
    A = _coefficients(C_source_train, "C_source_train")
    T = _coefficients(C_source_test, "C_source_test")
    many = isinstance(C_target_train, (list, tuple))
    targets = C_target_train if many else [C_target_train]
    if not targets:
        raise V.ArgumentValueError("C_target_train must not be an empty list")
    targets = [_coefficients(B, "C_target_train" + (f"[{i}]" if many else "")) for i, B in enumerate(targets)]
    for i, B in enumerate(targets):
        _same_shape(A, B, "C_source_train", "C_target_train" + (f"[{i}]" if many else ""))
    _same_shape(A, T, "C_source_train", "C_source_test", axes=(0, 2))
    rcond = V.positive(rcond, "rcond", max=1.0)
    # in float64 torch on REPRO_DEVICE (the CPU but at paper scale on a GPU, where the ten SVDs of a 4,000 x 3,073
    # matrix per net, about a minute each on one CPU core, take seconds); rtol is numpy's rcond
    import torch

    from lib.scale import current_device

    dev = current_device()
    P = torch.from_numpy(T).to(dev) @ torch.linalg.pinv(torch.from_numpy(A).to(dev), rtol=rcond)
    out = [(P @ torch.from_numpy(B).to(dev)).cpu().numpy() for B in targets]
    return out if many else out[0]


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


def cka_matrix(Cs, tol: float = FLAT_TOL) -> np.ndarray:
    """``similarity_matrix(Cs, mean_cka)`` for many columns: the same linear CKA (eq. 7.7, mean over
    outputs, NaN where a centred matrix vanishes) from each network's centred Gram matrices ``K_j =
    X_j X_j^T`` (p x p; ``||Y^T X||_F^2 = <K_X, K_Y>_F``), formed once per network, instead of ``(d+1) x
    (d+1)`` products per pair: at 3,073 columns (chapter 08's paper path, Figs. 7.12/7.13 on MNIST and
    CIFAR-10) those cost some 10^13 operations for 14 networks. ``Cs``: a list of coefficient arrays
    ``(o, p, d+1)`` of the same ``o`` and ``p``; returns ``(n, n)``."""
    Cs = V.sequence(Cs, "Cs", min_len=1)
    Cs = [_coefficients(C, f"Cs[{i}]") for i, C in enumerate(Cs)]
    for i, C in enumerate(Cs[1:], start=1):
        _same_shape(Cs[0], C, "Cs[0]", f"Cs[{i}]", axes=(0, 1))
    tol = V.nonnegative(tol, "tol")
    grams, flat = [], []
    for C in Cs:
        Xc = C - C.mean(axis=1, keepdims=True)
        K = Xc @ Xc.transpose(0, 2, 1)
        grams.append(K / np.linalg.norm(K, axis=(1, 2), keepdims=True).clip(min=1e-300))
        flat.append(any(_flat(C[j], tol) for j in range(C.shape[0])))
    S = np.array([[float(np.mean(np.sum(a * b, axis=(1, 2)))) for b in grams] for a in grams])
    S[np.array(flat)[:, None] | np.array(flat)[None, :]] = np.nan
    return S


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


# ------------------------------------------------------------------------------------------------
# The thesis' own numbers (Table 7.1 = Table 6.1, Fig. 7.9), for the chapter's "Paper vs this book"
# ------------------------------------------------------------------------------------------------
THESIS_NETS = tuple(f"{n} {o}" for o in ("SGD", "Adamw") for n in (
    "linear", "dense 1", "dense 2", "simple 1", "simple 2", "complex 1", "complex 2", "resnet18", "resnet152", "inceptionv3"))
"""The 20 networks of Table 7.1 and Figs. 7.8-7.17, in the order of the heat maps' columns (all SGD nets, then
all AdamW nets; the thesis spells the optimiser "Adamw")."""

TABLE_7_1 = {  # network: (SGD MNIST, Adamw MNIST, SGD CIFAR, Adamw CIFAR), percent (Table 7.1 = Table 6.1)
    "linear": (88.89, 86.83, 25.43, 31.66), "dense 1": (96.76, 97.43, 51.01, 47.55),
    "dense 2": (96.91, 97.24, 50.24, 48.41), "simple 1": (97.80, 98.86, 68.14, 67.03),
    "simple 2": (97.89, 98.90, 66.34, 67.58), "complex 1": (97.73, 98.95, 61.72, 70.55),
    "complex 2": (97.86, 98.81, 62.50, 71.33), "resnet18": (96.64, 96.43, 80.52, 80.15),
    "resnet152": (89.67, 91.12, 83.94, 82.57), "inceptionv3": (91.54, 91.34, 77.05, 77.05)}
"""Table 7.1 of the thesis (test accuracies in percent, one seed per network)."""

FIG_7_9_TEXT = """inceptionv3 Adamw	12.53% -12.9%	16.23% 34.8%	16.08% 34.2%	13.86% 54.3%	14.11% 52.2%	13.75% 48.0%	13.46% 49.0%	14.21% 66.3%	12.49% 71.5%	37.74% 39.3%	15.30% -16.4%	13.67% -33.9%	13.55% -34.9%	15.32% 51.7%	15.56% 52.0%	17.41% 53.1%	17.70% 53.6%	19.21% 60.9%	13.44% 69.1%	77.05%
resnet152 Adamw	12.12% -13.3%	13.90% 37.1%	13.87% 36.4%	10.95% 57.2%	11.26% 55.1%	10.84% 50.9%	11.07% 51.4%	11.00% 69.5%	18.38% 65.6%	10.44% 66.6%	14.41% -17.2%	12.22% -35.3%	12.14% -36.3%	11.01% -56.0%	11.45% -56.1%	12.45% -58.1%	11.96% -59.4%	13.25% -66.9%	82.57%	12.11% -54.9%
resnet18 Adamw	14.30% -11.1%	21.37% 29.6%	20.99% 29.2%	17.42% 50.7%	16.80% 49.5%	15.95% 46.4%	15.08% 47.4%	61.48% -19.0%	15.79% 68.2%	18.54% 58.5%	18.30% -13.4%	16.00% -31.6%	16.19% -32.2%	20.41% -46.6%	21.20% -46.4%	25.11% -45.4%	25.85% -45.5%	80.15%	15.55% -67.0%	21.61% -55.4%
complex 2 Adamw	23.10% -2.3%	39.61% -11.4%	39.15% -11.1%	44.87% 23.3%	42.23% -24.1%	39.42% -22.3%	39.00% -23.5%	38.04% -42.5%	18.59% 65.3%	26.70% 50.3%	28.93% -2.7%	31.60% -16.0%	32.09% -16.3%	47.97% -19.1%	45.63% -21.9%	50.58% -20.0%	71.33%	37.91% -42.2%	16.12% -66.5%	25.68% -51.4%
complex 1 Adamw	22.40% -3.0%	39.30% -11.7%	38.93% -11.3%	45.23% 22.9%	43.34% -23.0%	40.72% -21.0%	40.17% -22.3%	37.61% -42.9%	18.87% 65.1%	26.72% 50.3%	28.35% -3.3%	31.47% -16.1%	32.74% -15.7%	46.94% -20.1%	45.03% -22.6%	70.55%	50.67% 20.7%	37.96% -42.2%	16.28% -66.3%	26.09% -51.0%
simple 2 Adamw	23.02% -2.4%	38.09% -12.9%	37.80% -12.4%	44.87% 23.3%	42.23% -24.1%	39.42% -22.3%	39.00% -23.5%	38.04% -42.5%	18.59% 65.3%	26.70% 50.3%	28.93% -2.7%	31.60% -16.0%	32.09% -16.3%	47.97% -19.1%	45.63% -21.9%	50.58% -20.0%	71.33%	37.91% -42.2%	16.12% -66.5%	25.68% -51.4%
simple 1 Adamw	23.61% -1.8%	39.18% -11.8%	38.43% -11.8%	44.87% 23.3%	42.23% -24.1%	39.42% -22.3%	39.00% -23.5%	38.04% -42.5%	18.59% 65.3%	26.70% 50.3%	29.02% -2.6%	31.90% -15.7%	31.98% -16.4%	47.03% -25.7%	40.41% -27.1%	42.75% -26.2%	43.69% -45.5%	34.91% -45.2%	14.73% -68.6%	23.61% -53.4%
dense 2 Adamw	25.43% 0.0%	48.61% -2.4%	47.71% -2.5%	53.88% 34.4%	52.52% -33.0%	47.43% -30.9%	47.43% -31.2%	53.88% -53.0%	52.52% 68.6%	50.57% 56.5%	31.66% 0.0%	42.80% -4.8%	48.41%	51.04% 36.0%	28.52% -38.1%	28.92% -41.6%	29.68% -41.6%	27.82% -52.3%	13.05% -69.5%	19.78% -57.3%
dense 1 Adamw	25.43% 0.0%	48.74% -2.3%	47.89% -2.4%	53.88% 34.4%	52.52% -33.0%	47.43% -30.9%	47.43% -31.2%	53.88% -53.0%	52.52% 68.6%	50.57% 56.5%	31.66% 0.0%	47.55% -4.6%	43.77%	51.98% 37.0%	29.10% -38.5%	29.60% -40.9%	30.11% -41.2%	26.19% -54.0%	13.96% -68.6%	20.16% -56.9%
linear Adamw	25.43% 0.0%	30.07% -20.8%	29.45% -20.8%	14.36% 53.8%	13.79% 52.5%	14.36% 47.4%	13.70% 48.8%	13.78% 66.7%	13.37% 70.6%	11.92% 65.1%	31.66% 0.0%	25.01% -22.5%	25.41% -23.0%	15.21% 51.8%	16.28% -51.3%	14.84% 55.7%	14.41% -56.9%	16.64% -63.5%	14.29% -68.3%	13.20% -63.8%
inceptionv3 SGD	17.11% -8.3%	20.47% 30.5%	20.41% 29.6%	20.52% 47.6%	20.17% 46.2%	20.47% 41.2%	19.78% 42.7%	19.39% 61.1%	16.07% 67.9%	77.05%	19.25% -12.4%	18.25% 29.3%	17.54% 30.9%	19.51% 47.5%	10.51% 48.1%	19.30% 51.2%	19.30% 52.0%	18.36% 61.8%	15.17% 67.4%	47.98% -29.1%
resnet152 SGD	17.47% -8.0%	20.82% 30.2%	20.92% 29.3%	19.85% 48.3%	19.79% 46.6%	19.42% 42.3%	18.96% 43.5%	18.27% 62.3%	16.29% 60.3%	83.94%	19.87% -11.8%	18.44% 29.1%	18.98% 29.4%	18.51% 48.5%	19.43% 48.1%	18.00% 52.5%	18.07% 53.3%	17.18% 63.0%	28.98% -53.6%	16.70% -60.4%
resnet18 SGD	20.38% -5.1%	27.28% -23.7%	27.29% -22.9%	23.89% 44.2%	23.76% 42.6%	22.46% 39.3%	21.78% 40.7%	80.52%	18.02% 65.9%	22.59% 54.5%	25.48% -6.2%	21.49% -26.1%	22.21% -26.2%	25.53% -41.5%	26.05% -41.5%	27.94% -42.6%	27.51% -43.8%	64.88% -15.3%	15.80% -66.8%	19.56% -57.5%
complex 2 SGD	24.55% -0.9%	45.94% -5.1%	45.63% -4.6%	60.98% -7.2%	60.11% -6.2%	59.02% -2.7%	62.50%	38.31% -42.2%	19.22% -64.7%	27.72% -49.8%	31.40% -0.3%	38.69% -8.9%	39.93% -8.5%	54.38% -12.7%	54.07% -13.5%	58.16% -12.4%	56.67% -14.7%	37.33% -42.8%	17.15% -65.4%	25.29% -51.8%
complex 1 SGD	25.25% -0.2%	45.50% -5.5%	44.38% -5.9%	60.81% -7.3%	59.59% -6.8%	61.72%	60.40%	38.53% -42.0%	19.90% 64.0%	28.05% 49.0%	31.23% -0.4%	38.44% -9.1%	40.08% -8.3%	54.85% -12.2%	53.95% -13.6%	58.16% -12.4%	56.57% -14.8%	37.63% -42.5%	17.46% -65.1%	26.18% -50.9%
simple 2 SGD	25.06% -0.4%	45.77% -5.2%	44.81% -5.4%	63.02% -5.1%	66.34%	56.09% -5.6%	56.15% -6.3%	39.07% -41.4%	21.15% 62.8%	28.31% 48.7%	31.30% -0.4%	39.04% -8.5%	39.96% -8.5%	56.23% -10.8%	55.12% -12.5%	57.03% -13.5%	56.92% -14.4%	38.52% -41.6%	18.15% -64.4%	26.60% -50.4%
simple 1 SGD	25.02% -0.4%	45.62% -5.4%	44.79% -5.5%	68.14%	61.19% -5.1%	55.75% -6.0%	56.80% -5.7%	39.03% -41.5%	20.82% 63.1%	28.66% 48.4%	31.50% -0.2%	39.19% -8.4%	40.47% -7.9%	56.80% -10.2%	54.98% -12.6%	57.42% -13.1%	57.24% -14.1%	38.42% -41.7%	17.67% -64.7%	27.02% -50.0%
dense 2 SGD	25.43% 0.0%	49.01% -2.0%	50.24%	51.52% 36.6%	30.70% -35.6%	29.01% -32.7%	28.82% -33.7%	26.48% 54.0%	14.49% 69.5%	20.51% 56.5%	31.66% 0.0%	41.47% -6.1%	42.81% -5.6%	38.71% 38.3%	27.40% -40.2%	28.25% -42.3%	28.40% -42.8%	26.16% -54.0%	13.25% -69.3%	18.29% -58.8%
dense 1 SGD	25.43% 0.0%	51.01% -2.4%	47.83% -2.4%	51.90% 36.2%	31.35% -35.0%	28.62% -33.1%	29.08% -33.4%	26.73% 53.8%	15.80% 68.1%	20.83% 56.1%	31.66% 0.0%	42.17% -5.4%	43.18% -5.2%	39.24% 37.8%	27.44% -40.1%	28.87% -41.7%	29.15% -42.2%	26.32% -53.8%	13.15% -68.4%	19.31% -57.7%
linear SGD	25.43% 0.0%	30.17% -20.8%	29.59% -20.6%	14.26% 53.9%	13.89% 52.4%	14.30% 47.4%	13.73% 48.8%	13.38% 67.1%	13.34% 70.6%	11.73% 65.3%	31.66% 0.0%	25.00% -22.6%	25.31% -23.1%	15.26% 51.8%	16.30% -51.3%	14.78% 55.8%	14.39% -56.9%	16.45% -63.7%	13.91% -68.7%	12.50% -64.5%
"""
"""Fig. 7.9 (CIFAR test accuracy after mapping the linear coefficients of the row's net onto the column's), as the
PDF-to-text extraction of the thesis gives it: one line per source net ("network mapped from", listed from
inceptionv3 Adamw down to linear SGD), then 20 tab-separated cells in the column order of :data:`THESIS_NETS`;
a cell is "accuracy% change%" (the change from the target's own accuracy, in points) or, on the diagonal, the
bare accuracy. The extraction garbled parts of it (repeated rows, lost signs, misplaced cells):
:func:`read_heatmap` finds them."""

HEATMAP_STATUS = ("consistent", "sign lost", "inconsistent", "repeated", "diagonal", "misplaced")


def _cell_numbers(cell: str) -> list:
    try:
        return [float(v.rstrip("%")) for v in cell.split()]
    except ValueError:
        raise V.ArgumentValueError(f"a heat-map cell must hold 'acc%' or 'acc% change%', got {cell!r}") from None


def read_heatmap(text: str = FIG_7_9_TEXT, dataset: str = "CIFAR", tol: float = 0.06) -> dict:
    """Read an extracted heat map of affine-mapped accuracies (Figs. 7.8-7.9) and check every cell.

    ``text``: one line per source net, ``name<TAB>cell<TAB>...`` with one cell per target in the order of
    :data:`THESIS_NETS` (see :data:`FIG_7_9_TEXT`); ``dataset``: ``"CIFAR"`` or ``"MNIST"``, whose
    Table 7.1 column gives each target's own accuracy ``T``. A cell ``a% d%`` is

    * ``consistent`` if ``a - T = d`` within ``tol`` points (the rounding of a and d),
    * ``sign lost`` if ``a - T = -d`` instead (the extraction dropped a minus sign),
    * ``inconsistent`` if neither holds,
    * ``repeated`` (overriding the three above) if the same text stands in the same column of another
      row while ``a`` is not ``T`` itself: two different nets mapped onto one target do not give the
      same accuracy to 0.01 points, so one of the rows is a copy (mapping onto a linear net can give
      ``T`` exactly, which is not flagged);

    a bare ``a%`` is ``diagonal`` when it stands in the source's own column and equals its accuracy,
    otherwise ``misplaced``. Returns a dict of arrays indexed ``[source, target]`` in the order of
    :data:`THESIS_NETS` (20 x 20): ``value`` and ``change`` (NaN where absent; for ``sign lost``
    cells ``change`` has the sign restored, i.e. ``a - T``), ``status`` (strings; ``""`` where the row
    has no cell), and ``usable``, True for ``consistent`` and ``sign lost`` cells.
    """
    text = V.instance(text, "text", str, "the extracted text of a heat map")
    dataset = V.choice(dataset, "dataset", ("CIFAR", "MNIST"))
    tol = V.nonnegative(tol, "tol")
    n = len(THESIS_NETS)
    index = {name: i for i, name in enumerate(THESIS_NETS)}
    own = np.array([TABLE_7_1[name.rsplit(" ", 1)[0]][(2 if dataset == "CIFAR" else 0) + name.endswith("Adamw")]
                    for name in THESIS_NETS])
    value, change = np.full((n, n), np.nan), np.full((n, n), np.nan)
    status, raw = np.full((n, n), "", dtype=object), np.full((n, n), "", dtype=object)
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split("\t") if c.strip()]
        if not cells or cells[0] not in index:
            raise V.ArgumentValueError(f"each line must start with a network of THESIS_NETS, got {line[:40]!r}")
        if len(cells) - 1 > n:
            raise V.ArgumentValueError(f"row {cells[0]!r} has {len(cells) - 1} cells, more than the {n} targets")
        i = index[cells[0]]
        for t, cell in enumerate(cells[1:]):
            nums = _cell_numbers(cell)
            raw[i, t], value[i, t] = cell, nums[0]
            if len(nums) == 1:
                status[i, t] = "diagonal" if t == i and abs(nums[0] - own[t]) <= tol else "misplaced"
                continue
            d = nums[1]
            diff = nums[0] - own[t]
            status[i, t] = ("consistent" if abs(diff - d) <= tol else "sign lost" if abs(diff + d) <= tol
                            else "inconsistent")
            change[i, t] = diff if status[i, t] != "inconsistent" else d
    for t in range(n):
        for i in range(n):
            if status[i, t] in ("consistent", "sign lost", "inconsistent") and abs(value[i, t] - own[t]) > tol \
                    and any(raw[k, t] == raw[i, t] for k in range(n) if k != i):
                status[i, t] = "repeated"
    usable = np.isin(status.astype(str), ["consistent", "sign lost"])
    return {"value": value, "change": change, "status": status, "usable": usable, "own": own}
