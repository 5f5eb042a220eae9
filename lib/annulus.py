"""Exact geometry of the circle-versus-annulus problem (Chapter 7; Sattelberg 2026, Chapter 4).

A one-hidden-layer ReLU net of width n+1 can cut a bounded region out of n-dimensional space. Whether
it separates a ball of radius r1 from a shell starting at r2 depends on two radii of its positive
region about the centre: rho (the distance to the region's boundary) and R (the largest distance to a
point of the region); the net can do it when rho >= r1 and R <= r2, so the problem needs
r2 / r1 >= R / rho. This module computes

* :func:`expanded_simplex` -- the vertices of the uniform expanded n-simplex eS_n (circumradius 1),
  the width-(n+1) solution the document calls optimal (Table 4.1);
* :func:`inradius` -- the inradius about the origin of a convex hull, from its facets;
* :func:`region_radii` -- rho and R of the positive region of a one-hidden-layer (leaky) ReLU net with
  2 or 3 inputs, exactly: the region is a union of polytopes (one per activation pattern) and both
  radii are attained at computable points (R at a vertex of a piece, rho at the projection of the
  centre onto a face of the zero set), so no grid or ray search is involved.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["expanded_simplex", "inradius", "region_radii", "sum_zero_basis"]

_TOL = 1e-9


def sum_zero_basis(n: int) -> np.ndarray:
    """An orthonormal basis (the n rows) of the hyperplane sum(x) = 0 in R^(n+1): the Helmert vectors.

    :func:`expanded_simplex` writes its vertices in this basis; ``V @ sum_zero_basis(n)`` takes them
    back to R^(n+1) (chapter 07 does so to find the facets of eS_n). ValueError for n < 1."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"sum_zero_basis needs an integer dimension n >= 1, got {n!r}")
    n = int(n)
    B = np.zeros((n, n + 1))
    for k in range(1, n + 1):
        B[k - 1, :k] = 1.0
        B[k - 1, k] = -float(k)
        B[k - 1] /= np.sqrt(k * (k + 1.0))
    return B


def expanded_simplex(n: int) -> np.ndarray:
    """Vertices of the uniform expanded n-simplex eS_n with circumradius 1, centred at the origin.

    eS_n is the convex hull of the n(n+1) vectors e_i - e_j (i != j) of R^(n+1) (the root polytope of
    type A_n), which lie in the hyperplane sum(x) = 0; they are written in an orthonormal basis of that
    hyperplane and scaled by 1/sqrt(2). Returns an array of shape (n*(n+1), n), rows ordered by (i, j).
    n = 2 gives the regular hexagon, n = 3 the cuboctahedron. ValueError for n < 2.
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 2:
        raise ValueError(f"expanded_simplex needs an integer dimension n >= 2, got {n!r}")
    n = int(n)
    pairs = [(i, j) for i in range(n + 1) for j in range(n + 1) if i != j]
    E = np.zeros((len(pairs), n + 1))
    for r, (i, j) in enumerate(pairs):
        E[r, i], E[r, j] = 1.0, -1.0
    return (E @ sum_zero_basis(n).T) / np.sqrt(2.0)


def inradius(vertices) -> float:
    """Radius of the largest ball about the origin inside the convex hull of ``vertices``.

    Computed from the facets: the hull's facet hyperplanes (Qhull, via ``scipy.spatial.ConvexHull``)
    are written as ``a . x <= h`` with unit normals ``a``; the ball of radius r about the origin is
    inside the hull iff r <= h for every facet, so the inradius is the smallest ``h``. ``vertices`` is
    an array (m, d) with d >= 2 and m > d points spanning R^d. Qhull's cost grows fast with d (the
    expanded 9-simplex takes seconds, the 10-simplex over a minute). ValueError when the origin is not
    strictly inside the hull, or the points are not full-dimensional.
    """
    from scipy.spatial import ConvexHull, QhullError

    V = _floats(vertices, "vertices")
    if V.ndim != 2 or V.shape[1] < 2 or V.shape[0] <= V.shape[1]:
        raise ValueError(f"vertices must be an (m, d) array with d >= 2 and m > d, got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError("vertices contain NaN or infinite values")
    try:
        hull = ConvexHull(V)
    except QhullError as err:
        raise ValueError(f"the points do not span a full-dimensional hull: {str(err).splitlines()[0]}") from None
    offsets = -hull.equations[:, -1] / np.linalg.norm(hull.equations[:, :-1], axis=1)
    r = float(offsets.min())
    scale = float(np.abs(V).max())
    if r <= _TOL * scale:
        raise ValueError(f"the origin is not strictly inside the convex hull (smallest facet distance {r:.3g})")
    return r


def _check_net(params, center, negative_slope):
    try:
        (W1, b1), (W2, b2) = params
    except (TypeError, ValueError):
        raise ValueError("params must be a list of two (W, b) pairs: one hidden layer and the output layer") from None
    arrays = [_floats(a, "params") for a in (W1, b1, W2, b2)]
    W1, b1, W2, b2 = arrays
    if W1.ndim != 2 or W1.shape[1] not in (2, 3):
        raise ValueError(f"the hidden weight matrix must have shape (width, 2) or (width, 3), got {W1.shape}")
    h, d = W1.shape
    if b1.shape != (h,) or W2.shape != (1, h) or b2.reshape(-1).shape != (1,):
        raise ValueError(f"params: shapes do not fit a one-output net of width {h}: b1 {b1.shape}, W2 {W2.shape}, b2 {b2.shape}")
    if h > 12:
        raise ValueError(f"hidden width {h} is too large for the pattern enumeration (at most 12)")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("params contain NaN or infinite values")
    c = np.zeros(d) if center is None else _floats(center, "center").reshape(-1)
    if c.shape != (d,) or not np.all(np.isfinite(c)):
        raise ValueError(f"center must be a finite point of R^{d}, got {center!r}")
    if not (0.0 <= _floats(negative_slope, "negative_slope") < 1.0):
        raise ValueError(f"negative_slope must be in [0, 1), got {negative_slope!r}")
    return W1, b1, W2.reshape(-1), float(b2.reshape(-1)[0]), c, float(negative_slope)


def _floats(value, name: str) -> np.ndarray:
    """``value`` as a float array; a TypeError naming ``name`` when it is not numeric (a string, None)."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numeric, got {value!r}") from None


def _solve_all(A: np.ndarray, rhs: np.ndarray, combos) -> np.ndarray:
    """Points where the rows ``combos`` of ``A x = rhs`` hold with equality (non-singular subsets only)."""
    if not combos:
        return np.zeros((0, A.shape[1]))
    idx = np.array(combos)
    M, r = A[idx], rhs[idx]
    ok = np.abs(np.linalg.det(M)) > 1e-12
    if not ok.any():
        return np.zeros((0, A.shape[1]))
    return np.linalg.solve(M[ok], r[ok][..., None])[..., 0]


def _rank(X: np.ndarray, scale: float) -> int:
    if len(X) == 0:
        return 0
    s = np.linalg.svd(X, compute_uv=False)
    return int((s > 1e-9 * max(1.0, scale)).sum())


def region_radii(params, center=None, *, negative_slope: float = 0.0):
    """``(rho, R)`` of the positive region ``{x : f(x) > 0}`` of a one-hidden-layer ReLU net about ``center``.

    ``params`` is ``[(W1, b1), (W2, b2)]`` (float64 numpy; W1 of shape (width, n) with n = 2 or 3, W2 of
    shape (1, width)): ``f(x) = W2 relu(W1 x + b1) + b2``; ``negative_slope`` > 0 makes the units leaky.
    ``center`` defaults to the origin. rho is the distance from ``center`` to the region's boundary
    (the zero set of f), R the largest distance from ``center`` to a point of the region's closure.

    On each activation pattern p the net is affine, ``f = a_p . x + c_p``, on the cell
    ``C_p = {x : s_i (w_i . x + b_i) >= 0}``. The closure of the region is the union of the pieces
    ``C_p & {f_p >= 0}`` that have interior points, so R is the largest distance to a vertex of such a
    piece (vertices: intersections of n of the width + 1 hyperplanes). The boundary is the union of
    ``{f_p = 0} & C_p``, and the nearest point of each is the projection of ``center`` onto the affine
    hull of one of its faces, so rho is the smallest distance over the feasible projections. A piece
    with interior that also has a recession direction makes the region unbounded.

    ValueError when ``params`` is not such a net, when the region is unbounded, or when ``center`` is not
    in the region.
    """
    W, b, v, c0, c, alpha = _check_net(params, center, negative_slope)
    h, d = W.shape
    f_center = float(v @ np.where(W @ c + b > 0, W @ c + b, alpha * (W @ c + b)) + c0)
    scale = float(np.abs(W).sum(1).max() * (1 + np.abs(c).max()) + np.abs(b).max() + abs(c0))
    if not f_center > _TOL * scale:
        raise ValueError(f"the region {{f > 0}} does not contain the center {c.tolist()} (f(center) = {f_center:.3g})")
    if _rank(W, float(np.abs(W).max())) < d:
        raise ValueError("the region is unbounded: the hidden units do not span the input space, so f is "
                         "constant along a direction")
    # Work in coordinates centred at `center`, with unit-normal hyperplanes.
    bc = W @ c + b
    norms = np.linalg.norm(W, axis=1)
    if np.any(norms == 0):
        raise ValueError("a hidden unit has zero input weights")
    Wn, bn = W / norms[:, None], bc / norms
    R, rho = 0.0, np.inf
    for pattern in itertools.product((0, 1), repeat=h):
        on = np.array(pattern, dtype=bool)
        sign = np.where(on, 1.0, -1.0)
        slope = np.where(on, 1.0, alpha)
        a = (v * slope) @ W
        cp = float((v * slope) @ bc + c0)
        G, g = sign[:, None] * Wn, sign * bn           # the cell: G x + g >= 0
        na = float(np.linalg.norm(a))
        flat = na <= 1e-12 * scale
        tol = _TOL * max(1.0, scale)
        # --- R: vertices of the positive piece C_p & {f_p >= 0}
        if flat:
            if cp <= tol:
                rows = None  # f_p <= 0 on the whole cell: no interior point of the region here
            else:
                rows = (G, g)
        else:
            rows = (np.vstack([G, a / na]), np.append(g, cp / na))
        if rows is not None:
            A, off = rows
            m = len(A)
            pts = _solve_all(A, -off, list(itertools.combinations(range(m), d)))
            pts = pts[np.all(pts @ A.T + off >= -tol, axis=1)] if len(pts) else pts
            if len(pts):
                if d == 2:
                    cand = np.array([[-r[1], r[0]] for r in A])
                else:
                    cand = np.array([np.cross(A[i], A[j]) for i, j in itertools.combinations(range(m), 2)])
                cand = cand[np.linalg.norm(cand, axis=1) > 1e-9]
                cand = cand / np.linalg.norm(cand, axis=1, keepdims=True)
                cand = np.vstack([cand, -cand])
                rays = cand[np.all(cand @ A.T >= -1e-12, axis=1)]
                spread = np.vstack([pts - pts[0], rays])
                if _rank(spread, 1.0) == d:  # the piece has interior points
                    if len(rays):
                        raise ValueError("the region {f > 0} is unbounded")
                    R = max(R, float(np.linalg.norm(pts, axis=1).max()))
        # --- rho: distance to {f_p = 0} & C_p
        if flat and abs(cp) > tol:
            continue
        eq_first = [] if flat else [(a / na, cp / na)]
        for k in range(0, d - len(eq_first) + 1):
            for S in itertools.combinations(range(h), k):
                E = [e for e in eq_first] + [(G[i], g[i]) for i in S]
                if not E:
                    x = np.zeros(d)
                else:
                    A = np.array([e[0] for e in E])
                    off = np.array([e[1] for e in E])
                    gram = A @ A.T
                    if abs(np.linalg.det(gram)) < 1e-12:
                        continue
                    x = -A.T @ np.linalg.solve(gram, off)   # projection of 0 onto {A x + off = 0}
                if np.all(G @ x + g >= -tol):
                    rho = min(rho, float(np.linalg.norm(x)))
    if not np.isfinite(rho) or R == 0.0:
        raise ValueError("could not locate the region's boundary (degenerate net)")
    return rho, R
