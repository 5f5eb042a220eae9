"""Exact geometry of the circle-versus-annulus problem (Chapter 7; Sattelberg 2026, Chapter 4).

A one-hidden-layer ReLU net of width n+1 can cut a bounded region out of n-dimensional space. Whether
it separates a ball of radius r1 from a shell starting at r2 depends on two radii of its positive
region about the centre: rho (the distance to the region's boundary) and R (the largest distance to a
point of the region); the net can do it when rho >= r1 and R <= r2, so the problem needs
r2 / r1 >= R / rho. This module holds

* the document's optimal shapes: :func:`expanded_simplex` (the vertices of the uniform expanded
  n-simplex eS_n, Table 4.1) with :func:`expanded_simplex_facets` (its facet distances by type,
  Eq. 4.6), and the hand-built nets whose regions they are: :func:`simplex_net` (hexagon,
  cuboctahedron, eS_n), :func:`cross_net` (square, octahedron, hyperoctahedron), :func:`quad_net`
  (any convex quadrilateral about the centre), :func:`relu_sum_net` (``c - sum relu(W x + b)``) and
  :func:`lines_net` (lines at given angles: the triangle-to-hexagon expansion of Fig. 4.4);
* exact radii of a net's region: :func:`region_radii` (2 or 3 inputs, by enumerating activation
  patterns), :func:`region_polygon` (the boundary polygon of a 2-D region, for vertex counts) and
  :func:`polygon_radii`; in any dimension :func:`exit_distances` (the exact distance to the boundary
  along given rays) and :func:`crossing_units` (which units' hyperplanes pass through the region);
* why width n+1: :func:`escape_ray`, a ray along which a width-<=n net never decreases (so its positive
  region, if not empty, is unbounded);
* the optimisation beyond the document: for the nets ``1 - sum relu(W x + b)`` the region is the
  polytope ``{x : sum_{i in S} (w_i . x + b_i) <= 1 for every S}`` (:func:`relu_sum_polytope`), whose
  radii :func:`polytope_radii` computes exactly and :func:`polish_ratio` minimises;
* :func:`inradius` (a generic convex-hull inradius, Qhull) and :func:`ball_volume` (Eq. 4.14).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from lib import validate as V

__all__ = ["sum_zero_basis", "expanded_simplex", "expanded_simplex_facets", "inradius", "ball_volume",
           "relu_sum_net", "simplex_net", "cross_net", "lines_net", "quad_net", "region_radii", "region_polygon",
           "polygon_radii", "escape_ray", "exit_distances", "crossing_units", "relu_sum_polytope",
           "polytope_radii", "polish_ratio"]

_TOL = 1e-9


# ------------------------------------------------------------------------------------------------
# The expanded simplex and volumes (Table 4.1, Eqs. 4.6-4.14)

def _dimension(n, name: str, low: int) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < low:
        raise ValueError(f"{name} needs an integer dimension n >= {low}, got {n!r}")
    return int(n)


def sum_zero_basis(n: int) -> np.ndarray:
    """An orthonormal basis (the n rows) of the hyperplane sum(x) = 0 in R^(n+1): the Helmert vectors.

    :func:`expanded_simplex` writes its vertices in this basis; ``V @ sum_zero_basis(n)`` takes them
    back to R^(n+1) (:func:`expanded_simplex_facets` does so to find the facets of eS_n). ValueError
    for n < 1."""
    n = _dimension(n, "sum_zero_basis", 1)
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
    n = _dimension(n, "expanded_simplex", 2)
    pairs = [(i, j) for i in range(n + 1) for j in range(n + 1) if i != j]
    E = np.zeros((len(pairs), n + 1))
    for r, (i, j) in enumerate(pairs):
        E[r, i], E[r, j] = 1.0, -1.0
    return (E @ sum_zero_basis(n).T) / np.sqrt(2.0)


def expanded_simplex_facets(n: int) -> dict[int, float]:
    """Distance from the centre to the facets of eS_n (circumradius 1), by facet type ``k = 1..n``.

    For each nonempty proper subset S of the n+1 coordinates of R^(n+1), ``sum_{i in S} x_i <= h_S``
    with ``h_S = max_v sum_{i in S} v_i`` over the vertices is a supporting hyperplane; it is a facet
    when n affinely independent vertices attain it (checked). The type is ``k = |S|``; subsets of one
    size are permutations of each other, so one S per k is enough. Returns ``{k: distance}``; chapter
    07 compares it with the thesis' Eq. 4.6 per type and takes the smallest as Table 4.1's inradius.
    The distances are computed from :func:`expanded_simplex`'s vertices, not from a formula."""
    n = _dimension(n, "expanded_simplex_facets", 2)
    Vh = expanded_simplex(n) @ sum_zero_basis(n)            # the vertices back in R^(n+1)
    out = {}
    for k in range(1, n + 1):
        S = np.zeros(n + 1)
        S[:k] = 1.0
        normal = S - S.mean()                                  # 1_S projected onto sum(x) = 0
        h = float((Vh @ normal).max())
        tight = Vh[np.abs(Vh @ normal - h) < 1e-12]
        if np.linalg.matrix_rank(tight - tight[0], tol=1e-9) != n - 1:
            raise AssertionError(f"sum over {k} coordinates is not a facet of eS_{n}")  # cannot happen
        out[k] = h / float(np.linalg.norm(normal))
    return out


def ball_volume(n: int, r) -> float:
    """Volume of the n-ball of radius r, ``pi^(n/2) r^n / Gamma(n/2 + 1)`` (Eq. 4.14), computed in logs so
    that large n neither overflows nor underflows before the end. ValueError for n < 1 or r < 0."""
    from scipy.special import gammaln

    n = _dimension(n, "ball_volume", 1)
    r = V.nonnegative(r, "r (the radius)")
    if r == 0.0:
        return 0.0
    return math.exp(n / 2 * math.log(math.pi) + n * math.log(r) - float(gammaln(n / 2 + 1)))


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

    P = _floats(vertices, "vertices")
    if P.ndim != 2 or P.shape[1] < 2 or P.shape[0] <= P.shape[1]:
        raise ValueError(f"vertices must be an (m, d) array with d >= 2 and m > d, got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError("vertices contain NaN or infinite values")
    try:
        hull = ConvexHull(P)
    except QhullError as err:
        raise ValueError(f"the points do not span a full-dimensional hull: {str(err).splitlines()[0]}") from None
    offsets = -hull.equations[:, -1] / np.linalg.norm(hull.equations[:, :-1], axis=1)
    r = float(offsets.min())
    scale = float(np.abs(P).max())
    if r <= _TOL * scale:
        raise ValueError(f"the origin is not strictly inside the convex hull (smallest facet distance {r:.3g})")
    return r


# ------------------------------------------------------------------------------------------------
# Hand-built nets (Figs. 4.1-4.5): f(x) = W2 relu(W1 x + b1) + b2 as [(W1, b1), (W2, b2)]

def relu_sum_net(W, b, c: float = 1.0) -> list:
    """The net ``f(x) = c - sum_i relu(w_i . x + b_i)`` (rows ``w_i`` of ``W``, all output weights -1).

    Its positive region is convex (f is concave). With unit rows at 120 degrees and ``b = -t`` it is the
    hexagon that expands the triangle of the three lines ``w_i . x = t`` (Fig. 4.4; regular for t = 0).
    ValueError for a W that is not a finite 2-D array, a b of the wrong length, or a non-finite c."""
    W, b = _floats(W, "W"), _floats(b, "b")
    if W.ndim != 2 or b.shape != (W.shape[0],) or not (np.isfinite(W).all() and np.isfinite(b).all()):
        raise ValueError(f"W must be a finite (width, n) array and b a finite vector of length width, "
                         f"got shapes {W.shape} and {b.shape}")
    c = V.real(c, "c (the output bias)")
    return [(W.copy(), b.copy()), (-np.ones((1, W.shape[0])), np.array([c]))]


def simplex_net(n: int, c: float = 1.0) -> list:
    """Width n+1: ``f = c - sum_i relu(u_i . x)`` with ``u_i`` the unit vectors to the vertices of a
    regular n-simplex. Its region is the uniform expanded simplex eS_n: the regular hexagon (n = 2,
    R/rho = 2/sqrt(3), Eq. 4.2) and the cuboctahedron (n = 3, sqrt(2), Eq. 4.4). ValueError for n < 2
    or c <= 0 (then the region is empty)."""
    n = _dimension(n, "simplex_net", 2)
    c = V.positive(c, "c (the output bias; the region is empty unless c > 0)")
    u = np.eye(n + 1) @ sum_zero_basis(n).T                 # e_i in the sum-zero hyperplane's basis
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return relu_sum_net(u, np.zeros(n + 1), c)


def quad_net(W2x2, a, beta, far: float = 10.0) -> list:
    """Width 3, two inputs: units along the rows of ``W2x2`` (lines through the centre) with output
    weights ``-a``, and a third unit ``relu(beta_hat . x + far)``, active on the region, that adds the
    linear part ``beta . x``. Inside, ``f = 1 + beta . x - a_1 relu(w_1 . x) - a_2 relu(w_2 . x)``: one
    edge per cone of the two lines, a convex quadrilateral with its vertices on them (Fig. 4.3). The
    third unit is what the thesis calls necessary so that f is not constant where both others are off.
    ValueError for shapes other than (2, 2), 2 and 2, or beta = 0."""
    W, a, beta = _floats(W2x2, "W2x2"), _floats(a, "a"), _floats(beta, "beta")
    if W.shape != (2, 2) or a.shape != (2,) or beta.shape != (2,):
        raise ValueError(f"quad_net needs W2x2 of shape (2, 2), a and beta of length 2, got {W.shape}, "
                         f"{a.shape}, {beta.shape}")
    far = V.positive(far, "far (the third unit's offset)")
    if not np.isfinite(W).all() or not np.isfinite(a).all() or not np.isfinite(beta).all():
        raise ValueError("W2x2, a and beta must be finite")
    nb = float(np.linalg.norm(beta))
    if not nb > 0:
        raise ValueError("beta (the linear part) must not be zero")
    Wf = np.vstack([W, beta / nb])
    return [(Wf, np.array([0.0, 0.0, far])), (np.array([[-a[0], -a[1], nb]]), np.array([1.0 - far * nb]))]


def cross_net(n: int, L: float = 1.0) -> list:
    """Width n+1: the net ``1 - sum_i relu(2 x_i / 3L) - relu((2L - sum_i x_i) / 3L)`` (n coordinate units
    and one unit active on the whole region), which is ``(1 - |x|_1 / L) / 3`` where the last unit is on
    (``2 relu(x_i) - x_i = |x_i|``), so its region is the cross-polytope ``|x|_1 < L``: the square (n = 2,
    Eq. 4.1), the octahedron (n = 3, Eq. 4.3) and the hyperoctahedron (Eq. 4.5), R/rho = sqrt(n). The
    last unit gives f the linear part without which it would be constant where the coordinate units are
    all off (§4.1.3). All output weights are -1, so it is a :func:`relu_sum_net` like :func:`simplex_net`
    and both optimal shapes lie in the family :func:`polish_ratio` searches. ValueError for n < 2 or L <= 0."""
    n = _dimension(n, "cross_net", 2)
    L = V.positive(L, "L (the cross-polytope's radius)")
    W = np.vstack([2 * np.eye(n), -np.ones((1, n))]) / (3 * L)
    b = np.append(np.zeros(n), 2.0 / 3.0)
    return relu_sum_net(W, b, 1.0)


def lines_net(angles, offsets, c: float = 1.0) -> list:
    """``f = c - sum_i relu(u_i . x - t_i)`` with unit vectors ``u_i`` at ``angles`` (degrees) in the plane
    and offsets ``t_i``: the lines ``u_i . x = t_i`` are the units' kinks. Three lines at 120 degrees with
    a common offset t > 0 bound an equilateral triangle (inradius t) that the region expands into a
    hexagon (Fig. 4.4); t = 0 gives the regular hexagon. Chapter 07's widget moves these lines.
    ValueError when ``angles`` and ``offsets`` are not finite vectors of one length."""
    a, t = _floats(angles, "angles"), _floats(offsets, "offsets")
    if t.ndim == 0:
        t = np.full(a.shape, float(t))
    if a.ndim != 1 or a.size == 0 or t.shape != a.shape or not (np.isfinite(a).all() and np.isfinite(t).all()):
        raise ValueError(f"angles and offsets must be finite vectors (offsets: one number or one per angle), "
                         f"got {angles!r} and {offsets!r}")
    r = np.radians(a)
    return relu_sum_net(np.stack([np.cos(r), np.sin(r)], 1), -t, c)


# ------------------------------------------------------------------------------------------------
# Exact radii of the positive region of a one-hidden-layer net

def _floats(value, name: str) -> np.ndarray:
    """``value`` as a float array; a TypeError naming ``name`` when it is not numeric (a string, None)."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numeric, got {value!r}") from None


def _check_net(params, center, negative_slope, dims=(2, 3)):
    try:
        (W1, b1), (W2, b2) = params
    except (TypeError, ValueError):
        raise ValueError("params must be a list of two (W, b) pairs: one hidden layer and the output layer") from None
    arrays = [_floats(a, "params") for a in (W1, b1, W2, b2)]
    W1, b1, W2, b2 = arrays
    if W1.ndim != 2 or (dims is not None and W1.shape[1] not in dims):
        shapes = " or ".join(f"(width, {d})" for d in dims) if dims else "(width, n)"
        raise ValueError(f"the hidden weight matrix must have shape {shapes}, got {W1.shape}")
    h, d = W1.shape
    if b1.shape != (h,) or W2.shape != (1, h) or b2.reshape(-1).shape != (1,):
        raise ValueError(f"params: shapes do not fit a one-output net of width {h}: b1 {b1.shape}, W2 {W2.shape}, b2 {b2.shape}")
    if dims is not None and h > 12:
        raise ValueError(f"hidden width {h} is too large for the pattern enumeration (at most 12)")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("params contain NaN or infinite values")
    c = np.zeros(d) if center is None else _floats(center, "center").reshape(-1)
    if c.shape != (d,) or not np.all(np.isfinite(c)):
        raise ValueError(f"center must be a finite point of R^{d}, got {center!r}")
    if not (0.0 <= _floats(negative_slope, "negative_slope") < 1.0):
        raise ValueError(f"negative_slope must be in [0, 1), got {negative_slope!r}")
    return W1, b1, W2.reshape(-1), float(b2.reshape(-1)[0]), c, float(negative_slope)


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


class _Region:
    """A checked net centred at ``center`` with unit-normal hyperplanes: the shared set-up of
    :func:`region_radii` and :func:`region_polygon` (the checks and errors are theirs)."""

    def __init__(self, params, center, negative_slope, dims=(2, 3)):
        W, b, v, c0, c, alpha = _check_net(params, center, negative_slope, dims)
        self.h, self.d = W.shape
        z = W @ c + b                                          # pre-activations at the centre
        f_center = float(v @ np.where(z > 0, z, alpha * z) + c0)
        self.scale = float(np.abs(W).sum(1).max() * (1 + np.abs(c).max()) + np.abs(b).max() + abs(c0))
        if not f_center > _TOL * self.scale:
            raise ValueError(f"the region {{f > 0}} does not contain the center {c.tolist()} (f(center) = {f_center:.3g})")
        if _rank(W, float(np.abs(W).max())) < self.d:
            raise ValueError("the region is unbounded: the hidden units do not span the input space, so f is "
                             "constant along a direction")
        norms = np.linalg.norm(W, axis=1)
        if np.any(norms == 0):
            raise ValueError("a hidden unit has zero input weights")
        self.W, self.bc, self.v, self.c0, self.center, self.alpha = W, z, v, c0, c, alpha
        self.Wn, self.bn = W / norms[:, None], z / norms
        self.tol = _TOL * max(1.0, self.scale)

    def pieces(self):
        """Per activation pattern: ``(G, g, a, cp)``, the cell ``G x + g >= 0`` (unit normals, centred
        coordinates) on which ``f = a . x + cp``."""
        for pattern in itertools.product((0, 1), repeat=self.h):
            on = np.array(pattern, dtype=bool)
            slope = np.where(on, 1.0, self.alpha)
            sign = np.where(on, 1.0, -1.0)
            a = (self.v * slope) @ self.W
            cp = float((self.v * slope) @ self.bc + self.c0)
            yield sign[:, None] * self.Wn, sign * self.bn, a, cp

    def flat(self, a) -> bool:
        return float(np.linalg.norm(a)) <= 1e-12 * self.scale


def _recession_rays(A: np.ndarray, d: int) -> np.ndarray:
    """Unit directions r with ``A r >= 0`` among the candidate edge directions of ``{A x + off >= 0}``
    (2-D: the lines' directions; 3-D: cross products of two normals), both orientations."""
    m = len(A)
    if d == 2:
        cand = np.array([[-r[1], r[0]] for r in A])
    else:
        cand = np.array([np.cross(A[i], A[j]) for i, j in itertools.combinations(range(m), 2)])
    cand = cand[np.linalg.norm(cand, axis=1) > 1e-9]
    cand = cand / np.linalg.norm(cand, axis=1, keepdims=True)
    cand = np.vstack([cand, -cand])
    return cand[np.all(cand @ A.T >= -1e-12, axis=1)]


def _far_vertex(reg: _Region, G, g, a, cp) -> float:
    """The largest distance from the centre to a vertex of the positive piece ``C_p & {f_p >= 0}`` (0 if
    the piece has no interior point); ValueError if the piece is unbounded."""
    if reg.flat(a):
        if cp <= reg.tol:
            return 0.0                   # f_p <= 0 on the whole cell: no interior point of the region here
        A, off = G, g
    else:
        na = float(np.linalg.norm(a))
        A, off = np.vstack([G, a / na]), np.append(g, cp / na)
    pts = _solve_all(A, -off, list(itertools.combinations(range(len(A)), reg.d)))
    pts = pts[np.all(pts @ A.T + off >= -reg.tol, axis=1)] if len(pts) else pts
    if not len(pts):
        return 0.0
    rays = _recession_rays(A, reg.d)
    if _rank(np.vstack([pts - pts[0], rays]), 1.0) < reg.d:
        return 0.0                       # a piece without interior points
    if len(rays):
        raise ValueError("the region {f > 0} is unbounded")
    return float(np.linalg.norm(pts, axis=1).max())


def _nearest_zero(reg: _Region, G, g, a, cp) -> float:
    """The smallest distance from the centre to ``{f_p = 0} & C_p``: the nearest point of a polyhedron
    is the projection of the centre onto the affine hull of one of its faces, so try every face."""
    if reg.flat(a):
        if abs(cp) > reg.tol:
            return np.inf
        eq_first = []
    else:
        na = float(np.linalg.norm(a))
        eq_first = [(a / na, cp / na)]
    best = np.inf
    for k in range(0, reg.d - len(eq_first) + 1):
        for S in itertools.combinations(range(reg.h), k):
            E = eq_first + [(G[i], g[i]) for i in S]
            if not E:
                x = np.zeros(reg.d)
            else:
                A = np.array([e[0] for e in E])
                off = np.array([e[1] for e in E])
                gram = A @ A.T
                if abs(np.linalg.det(gram)) < 1e-12:
                    continue
                x = -A.T @ np.linalg.solve(gram, off)       # projection of 0 onto {A x + off = 0}
            if np.all(G @ x + g >= -reg.tol):
                best = min(best, float(np.linalg.norm(x)))
    return best


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
    reg = _Region(params, center, negative_slope)
    R, rho = 0.0, np.inf
    for G, g, a, cp in reg.pieces():
        R = max(R, _far_vertex(reg, G, g, a, cp))
        rho = min(rho, _nearest_zero(reg, G, g, a, cp))
    if not np.isfinite(rho) or R == 0.0:
        raise ValueError("could not locate the region's boundary (degenerate net)")
    return rho, R


# ------------------------------------------------------------------------------------------------
# The boundary polygon of a 2-D region (vertex counts: quadrilateral or hexagon)

def _zero_segment(reg: _Region, G, g, a, cp):
    """The segment ``{f_p = 0} & C_p`` of one pattern (centred coordinates), or None if it is empty or a
    point; ValueError if it is a ray or a line (then the boundary, hence the region, is unbounded)."""
    if reg.flat(a):
        return None
    na2 = float(a @ a)
    x0 = -cp * a / na2
    t = np.array([-a[1], a[0]]) / math.sqrt(na2)
    k, m = G @ t, G @ x0 + g                                   # G (x0 + s t) + g = k s + m >= 0
    lo, hi = -np.inf, np.inf
    for ki, mi in zip(k, m):
        if abs(ki) <= 1e-12:
            if mi < -reg.tol:
                return None
        elif ki > 0:
            lo = max(lo, -mi / ki)
        else:
            hi = min(hi, -mi / ki)
    if not hi - lo > reg.tol:
        return None
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("the region {f > 0} is unbounded")
    return x0 + lo * t, x0 + hi * t


def _chain(segments, tol):
    """Closed loops from segments that meet end to end (either orientation)."""
    left = list(range(len(segments)))
    loops = []
    while left:
        first = segments[left.pop(0)]
        loop, end = [first[0], first[1]], first[1]
        while True:
            dists = [(min(np.linalg.norm(segments[i][0] - end), np.linalg.norm(segments[i][1] - end)), i) for i in left]
            if not dists:
                break
            dmin, i = min(dists)
            if dmin > tol:
                break
            left.remove(i)
            p, q = segments[i]
            end = q if np.linalg.norm(p - end) <= np.linalg.norm(q - end) else p
            loop.append(end)
        if np.linalg.norm(loop[-1] - loop[0]) > tol:
            raise ValueError("the zero set does not close into a polygon (degenerate net)")
        loops.append(np.array(loop[:-1]))
    return loops


def _corners(P: np.ndarray) -> np.ndarray:
    """The polygon ``P`` without the points where it goes straight on (collinear neighbours), and
    counter-clockwise."""
    keep = []
    for i in range(len(P)):
        e1, e2 = P[i] - P[i - 1], P[(i + 1) % len(P)] - P[i]
        cross = e1[0] * e2[1] - e1[1] * e2[0]
        if abs(cross) > 1e-9 * np.linalg.norm(e1) * np.linalg.norm(e2):
            keep.append(i)
    Q = P[keep]
    area2 = float(np.sum(Q[:, 0] * np.roll(Q[:, 1], -1) - np.roll(Q[:, 0], -1) * Q[:, 1]))
    return Q if area2 > 0 else Q[::-1]


def _winds_around_origin(P: np.ndarray) -> bool:
    angles = np.arctan2(P[:, 1], P[:, 0])
    turn = np.diff(np.append(angles, angles[0]))
    turn = (turn + np.pi) % (2 * np.pi) - np.pi
    return abs(turn.sum()) > np.pi


def region_polygon(params, center=None, *, negative_slope: float = 0.0) -> np.ndarray:
    """The boundary of the 2-D region ``{f > 0}`` about ``center``: its corners, counter-clockwise, shape (k, 2).

    The boundary is the union of the segments ``{f_p = 0} & C_p`` over the activation patterns p (f is
    affine on each cell); they are joined end to end into closed polygons, the one winding around the
    centre with the smallest area is the boundary of the centre's component, and points where two
    segments continue in a straight line (crossing a unit whose line does not bend f's zero set) are
    dropped, so ``len(result)`` is the polygon's number of vertices: 4 for a quadrilateral, 6 for a
    hexagon (§4.1.1). Chapter 07 counts them on trained nets and draws Fig. 4.4 with them.
    ValueError as for :func:`region_radii`, for a net with other than 2 inputs, or a degenerate one.
    """
    reg = _Region(params, center, negative_slope, dims=(2,))
    segments = [s for piece in reg.pieces() if (s := _zero_segment(reg, *piece)) is not None]
    if not segments:
        raise ValueError("could not locate the region's boundary (degenerate net)")
    loops = [P for P in _chain(segments, 1e3 * reg.tol) if len(P) >= 3 and _winds_around_origin(P)]
    if not loops:
        raise ValueError("no boundary polygon winds around the center (degenerate net)")
    area = [abs(float(np.sum(P[:, 0] * np.roll(P[:, 1], -1) - np.roll(P[:, 0], -1) * P[:, 1]))) for P in loops]
    return _corners(loops[int(np.argmin(area))]) + reg.center


def polygon_radii(P, center=None) -> tuple[float, float]:
    """``(rho, R)`` of a polygon (corners in order) about ``center`` (default the origin), by elementary
    geometry: rho the smallest distance to an edge, R the largest distance to a corner. An independent
    check of :func:`region_radii` in 2-D. ValueError for fewer than 3 corners of 2 coordinates."""
    P = _floats(P, "P")
    if P.ndim != 2 or P.shape[1] != 2 or len(P) < 3 or not np.isfinite(P).all():
        raise ValueError(f"P must be a finite (k, 2) array of k >= 3 corners, got shape {P.shape}")
    c = np.zeros(2) if center is None else _floats(center, "center").reshape(-1)
    if c.shape != (2,) or not np.isfinite(c).all():
        raise ValueError(f"center must be a finite point of R^2, got {center!r}")
    P = P - c
    d = []
    for A, B in zip(P, np.roll(P, -1, axis=0)):
        e = B - A
        t = float(np.clip(-A @ e / (e @ e), 0, 1)) if e @ e > 0 else 0.0
        d.append(float(np.linalg.norm(A + t * e)))
    return min(d), float(np.linalg.norm(P, axis=1).max())


# ------------------------------------------------------------------------------------------------
# Any dimension: why width n+1, exits along rays, units that cross the region

def escape_ray(params) -> np.ndarray:
    """A unit direction d along which ``f(x + t d)`` never decreases (t >= 0, from every x), for a
    one-hidden-layer (leaky) ReLU net of width h <= n on R^n. Hence its positive region, if not empty,
    contains a ray from each of its points and is unbounded: a bounded region needs width n + 1 (§4).

    If the h rows of W1 do not span R^n, d is in their null space and f is constant along it. Otherwise
    h = n, W1 is invertible, and ``d = W1^{-1} s`` with ``s_i = sign(v_i)`` (+1 for v_i = 0): the i-th
    pre-activation moves by ``t s_i`` and ``v_i act(z_i + t s_i)`` is nondecreasing in t for every
    monotone activation (ReLU or leaky). ValueError if the width exceeds n or params is not a net."""
    W, b, v, c0, _, _ = _check_net(params, None, 0.0, dims=None)
    h, n = W.shape
    if h > n:
        raise ValueError(f"escape_ray needs a width h <= n (the number of inputs); got width {h} on R^{n}")
    if _rank(W, float(np.abs(W).max())) < n:
        d = np.linalg.svd(W)[2][-1]                              # the last right-singular vector: W d = 0
    else:
        d = np.linalg.solve(W, np.where(v < 0, -1.0, 1.0))
    return d / np.linalg.norm(d)


def exit_distances(params, directions, center=None, *, negative_slope: float = 0.0) -> np.ndarray:
    """Along each unit ray ``center + t u`` (t >= 0), the first t where ``f <= 0``: exact, any input
    dimension and width. f is piecewise linear in t with a kink where a unit's pre-activation changes
    sign, so f is evaluated at the kinks in order and the first sign change is solved linearly; beyond
    the last kink f has a constant slope, and ``inf`` means it stays positive (the region is unbounded in
    that direction). ``directions``: array (m, n), rows normalised here. Chapter 07 draws Fig. 4.5 with
    it and, in higher dimensions, measures the shape of trained regions. ValueError if ``center`` is not
    in the region or a direction is zero."""
    W, b, v, c0, c, alpha = _check_net(params, center, negative_slope, dims=None)
    U = _floats(directions, "directions")
    if U.ndim != 2 or U.shape[1] != W.shape[1] or len(U) == 0 or not np.isfinite(U).all():
        raise ValueError(f"directions must be a finite (m, {W.shape[1]}) array with m >= 1, got shape {U.shape}")
    norms = np.linalg.norm(U, axis=1)
    if np.any(norms == 0):
        raise ValueError("directions contain a zero vector")
    U = U / norms[:, None]
    z0, slope_z = W @ c + b, U @ W.T                             # pre-activation z0 + t * slope_z
    act = lambda Z: np.where(Z > 0, Z, alpha * Z)               # noqa: E731
    f0 = float(act(z0) @ v + c0)
    if not f0 > 0:
        raise ValueError(f"the region {{f > 0}} does not contain the center {c.tolist()} (f(center) = {f0:.3g})")
    with np.errstate(divide="ignore", invalid="ignore"):
        kinks = np.where(slope_z != 0, -z0 / slope_z, np.inf)
    kinks = np.sort(np.where(kinks > 0, kinks, np.inf), axis=1)                   # (m, h)
    T = np.concatenate([np.zeros((len(U), 1)), kinks], axis=1)                   # t = 0 and the kinks
    Tf = np.where(np.isfinite(T), T, 0.0)
    F = act(z0 + Tf[..., None] * slope_z[:, None, :]) @ v + c0                   # f at those t, (m, h + 1)
    finite = np.isfinite(T)
    below = finite & (F <= 0)
    out = np.full(len(U), np.inf)
    rows = np.flatnonzero(below.any(axis=1))
    j = np.argmax(below[rows], axis=1)                          # the first kink where f <= 0 (j >= 1: f(0) > 0)
    t_at, t_prev, f_at, f_prev = T[rows, j], T[rows, j - 1], F[rows, j], F[rows, j - 1]
    out[rows] = t_prev + f_prev * (t_at - t_prev) / (f_prev - f_at)
    rest = np.flatnonzero(~below.any(axis=1))                    # no sign change up to the last kink
    last = finite[rest].sum(axis=1) - 1
    t_last, f_last = T[rest, last], F[rest, last]
    beyond = z0 + (t_last + 1.0)[:, None] * slope_z[rest]        # signs after the last kink
    s_end = (np.where(beyond > 0, 1.0, alpha) * slope_z[rest]) @ v
    with np.errstate(divide="ignore"):
        out[rest] = np.where(s_end < 0, t_last + f_last / -s_end, np.inf)
    return out


def crossing_units(params, points, center=None) -> np.ndarray:
    """Which hidden units' hyperplanes pass through the region: unit i crosses when its pre-activation
    takes both signs (strictly) among the centre and ``points`` (rows; e.g. the boundary points
    ``center + exit_distance * u`` of many rays, so that the segments from the centre to them lie in a
    region that is star-shaped about it). A bool array (width,). In two dimensions a region crossed by 2
    lines is a quadrilateral and by 3 a hexagon; in n dimensions n crossing units is the hyperoctahedron's
    pattern (its extra unit is active on the whole region) and n + 1 the expanded simplex's. ValueError
    for points of the wrong shape."""
    W, b, _, _, c, _ = _check_net(params, center, 0.0, dims=None)
    X = _floats(points, "points")
    if X.ndim != 2 or X.shape[1] != W.shape[1] or len(X) == 0 or not np.isfinite(X).all():
        raise ValueError(f"points must be a finite (m, {W.shape[1]}) array with m >= 1, got shape {X.shape}")
    Z = np.vstack([W @ c + b, X @ W.T + b])
    return (Z > 0).any(axis=0) & (Z < 0).any(axis=0)


# ------------------------------------------------------------------------------------------------
# The polytope of a net 1 - sum relu(W x + b), its exact radii, and the minimisation of R / rho

def _subsets(h: int) -> np.ndarray:
    return np.array([[1.0 if (m >> i) & 1 else 0.0 for i in range(h)] for m in range(1, 2 ** h)])


def _check_wb(W, b, max_dim: int | None = None):
    W, b = _floats(W, "W"), _floats(b, "b")
    if W.ndim != 2 or b.shape != (W.shape[0],) or not (np.isfinite(W).all() and np.isfinite(b).all()):
        raise ValueError(f"W must be a finite (width, n) array and b a finite vector of length width, "
                         f"got shapes {W.shape} and {b.shape}")
    if W.shape[0] > 10:
        raise ValueError(f"width {W.shape[0]} is too large for the subset enumeration (at most 10)")
    if max_dim is not None and not 2 <= W.shape[1] <= max_dim:
        raise ValueError(f"W must have 2 to {max_dim} columns (the input dimension), got {W.shape[1]}")
    return W, b


def relu_sum_polytope(W, b) -> tuple[np.ndarray, np.ndarray]:
    """The half-spaces ``A x <= r`` whose intersection is ``{x : sum_i relu(w_i . x + b_i) <= 1}``, the
    closed region of the net ``1 - sum relu(W x + b)`` (:func:`relu_sum_net` with c = 1).

    ``sum_i relu(z_i) = max_S sum_{i in S} z_i`` over the subsets S of the units, so the region is
    ``sum_{i in S} (w_i . x + b_i) <= 1`` for every nonempty S: ``A = 1_S W``, ``r = 1 - 1_S b``, one row
    per S (2^width - 1 rows). Every concave width-h net's region is of this form (fold each output
    weight into its unit and divide by the output bias), so this is the family :func:`polish_ratio`
    searches. ValueError for bad shapes or a width above 10."""
    W, b = _check_wb(W, b)
    S = _subsets(W.shape[0])
    return S @ W, 1.0 - S @ b


def _positively_spanning(W: np.ndarray) -> bool:
    """Whether the rows of W positively span R^n: rank n and a strictly positive dependence (LP)."""
    from scipy.optimize import linprog

    h, n = W.shape
    if _rank(W, float(np.abs(W).max())) < n:
        return False
    res = linprog(np.zeros(h), A_eq=W.T, b_eq=np.zeros(n), bounds=[(1.0, None)] * h, method="highs")
    return res.status == 0


def polytope_radii(W, b) -> tuple[float, float]:
    """``(rho, R)`` about the origin of the region ``{sum_i relu(w_i . x + b_i) <= 1}`` (exact).

    rho is the smallest distance from the origin to the hyperplanes of :func:`relu_sum_polytope` (a ball
    about the origin lies inside an intersection of half-spaces iff it lies inside each), R the largest
    norm of a vertex (intersections of n of the hyperplanes that satisfy all the others). The region is
    bounded iff the units' weight vectors positively span R^n (the recession cone is ``{d : W d <= 0}``).
    Inputs of 2 to 4 dimensions. ValueError if the origin is not strictly inside (``sum relu(b) >= 1``)
    or the region is unbounded."""
    W, b = _check_wb(W, b, max_dim=4)
    A, r = relu_sum_polytope(W, b)
    if not r.min() > 0:
        raise ValueError(f"the origin is not strictly inside the region (sum relu(b) = {1 - r.min():.3g} >= 1)")
    if not _positively_spanning(W):
        raise ValueError("the region is unbounded: the units' weight vectors do not positively span R^n")
    n = W.shape[1]
    rho = float((r / np.linalg.norm(A, axis=1)).min())
    P = _solve_all(A, r, list(itertools.combinations(range(len(A)), n)))
    P = P[(P @ A.T <= r + 1e-9 * (1 + np.abs(r).max())).all(axis=1)]
    return rho, float(np.linalg.norm(P, axis=1).max())


def _vertex_triples(A, r, tol):
    """The n-subsets of rows whose intersection point satisfies every row (within ``tol``)."""
    n = A.shape[1]
    combos = np.array(list(itertools.combinations(range(len(A)), n)))
    M = A[combos]
    ok = np.abs(np.linalg.det(M)) > 1e-10
    P = np.linalg.solve(M[ok], r[combos[ok]][..., None])[..., 0]
    return combos[ok][(P @ A.T - r).max(axis=1) <= tol]


def _slsqp_step(theta, shape, S, delta, tol):
    """One trust-region step of :func:`polish_ratio`: minimise R^2 subject to rho >= 1, with the vertex
    set of the current polytope held fixed (each vertex a smooth function of (W, b)), within +-delta."""
    from scipy.optimize import minimize

    h, n = shape

    def planes(z):
        W, b = z[:h * n].reshape(h, n), z[h * n:h * n + h]
        return S @ W, 1.0 - S @ b

    A, r = planes(theta)
    triples = _vertex_triples(A, r, tol)

    def vertex_sq(z):
        A, r = planes(z)
        M = A[triples]
        if (np.abs(np.linalg.det(M)) < 1e-12).any():
            return np.full(len(triples), 1e6)
        return (np.linalg.solve(M, r[triples][..., None])[..., 0] ** 2).sum(1)

    def rho_margin(z):
        A, r = planes(z)
        return r / np.linalg.norm(A, axis=1) - 1.0

    s0 = float(vertex_sq(theta).max())
    cons = [dict(type="ineq", fun=lambda z: z[-1] - vertex_sq(z[:-1])), dict(type="ineq", fun=lambda z: rho_margin(z[:-1]))]
    bounds = [(t - delta, t + delta) for t in theta] + [(0.0, None)]
    res = minimize(lambda z: z[-1], np.append(theta, s0), method="SLSQP", constraints=cons, bounds=bounds,
                   options=dict(maxiter=100, ftol=1e-15))
    return res.x[:-1]


def polish_ratio(W, b, *, max_steps: int = 60, delta: float = 0.05) -> dict:
    """Minimise R / rho about the origin over the nets ``1 - sum relu(W x + b)``, starting from (W, b).

    R / rho is a max over vertices divided by a min over facets: not smooth where two vertices or two
    facets tie, which is exactly where the optimal shapes sit (and where Nelder-Mead stalls). So each
    step fixes the current polytope's vertices, each a smooth function of (W, b) (the solution of n
    hyperplane equations), and solves ``min R^2 s.t. every facet distance >= 1`` (rho = 1 fixes the
    scale) with SLSQP inside a box of half-width ``delta``; the step is kept if the exact ratio
    (:func:`polytope_radii`) fell by more than 1e-12, and the box grows, otherwise the box shrinks by
    4, until three steps in a row fail or after ``max_steps`` steps. A local method: chapter 07 first shows it returns to the cuboctahedron
    (sqrt 2) and the octahedron (sqrt 3) from nearby starts, then runs it from random starts.
    Returns ``dict(W, b, ratio, start_ratio, steps)``. ValueError as for :func:`polytope_radii`."""
    W, b = _check_wb(W, b, max_dim=4)
    max_steps = V.positive_int(max_steps, "max_steps")
    delta = V.positive(delta, "delta (the trust region's half-width)")
    rho, R = polytope_radii(W, b)
    h, n = W.shape
    S = _subsets(h)
    theta, best, start = np.concatenate([W.ravel() * rho, b]), R / rho, R / rho
    steps = failed = 0
    while steps < max_steps and failed < 3:
        steps += 1
        cand = _slsqp_step(theta, (h, n), S, delta, 1e-6 * (1 + np.abs(theta).max()))
        try:
            c_rho, c_R = polytope_radii(cand[:h * n].reshape(h, n), cand[h * n:])
        except ValueError:
            c_rho, c_R = 1.0, np.inf
        if c_R / c_rho < best - 1e-12:
            theta, best, delta = np.concatenate([cand[:h * n] * c_rho, cand[h * n:]]), c_R / c_rho, min(2 * delta, 0.5)
            failed = 0
        else:
            delta, failed = delta / 4, failed + 1
    return dict(W=theta[:h * n].reshape(h, n), b=theta[h * n:].copy(), ratio=float(best), start_ratio=float(start),
                steps=steps)
