"""lib.annulus against independent computations: closed forms, an explicit facet list, grids."""

import itertools
import math

import numpy as np
import pytest

from lib.annulus import expanded_simplex, inradius, region_radii


def _simplex_net(n, c=1.0):
    """f = c - sum_i relu(u_i . x) with u_i the n+1 unit vectors to the vertices of a regular simplex."""
    U = np.eye(n + 1) - 1.0 / (n + 1)                   # e_i projected onto sum(x) = 0 ...
    basis = np.linalg.svd(U)[2][:n]                     # ... written in an orthonormal basis of it
    u = U @ basis.T
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return [(u, np.zeros(n + 1)), (-np.ones((1, n + 1)), np.array([c]))]


def _cross_net(n, L=1.0):
    """Positive region = the cross-polytope |x|_1 < L (width n+1: n coordinate units + one linear unit)."""
    W = np.vstack([np.eye(n), np.ones(n) / math.sqrt(n)])
    b = np.zeros(n + 1)
    b[-1] = 2 * L
    v = np.append(-2 / L * np.ones(n), math.sqrt(n) / L)
    return [(W, b), (v[None, :], np.array([1 - 2 * math.sqrt(n)]))]


def _f(params, X, alpha=0.0):
    (W, b), (v, c) = params
    Z = X @ np.asarray(W).T + b
    return np.where(Z > 0, Z, alpha * Z) @ np.asarray(v).reshape(-1) + float(np.asarray(c).reshape(-1)[0])


# ---------------------------------------------------------------- expanded_simplex
@pytest.mark.parametrize("n", range(2, 8))
def test_expanded_simplex_is_uniform_with_circumradius_one(n):
    V = expanded_simplex(n)
    assert V.shape == (n * (n + 1), n)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(V.mean(0), 0.0, atol=1e-12)
    D = np.linalg.norm(V[:, None] - V[None], axis=2)
    D[np.eye(len(V), dtype=bool)] = np.inf
    # uniform: every edge has length 1 (= the circumradius); each vertex has 2(n-1) neighbours at distance 1
    assert abs(D.min() - 1.0) < 1e-12
    np.testing.assert_array_equal((np.abs(D - 1) < 1e-9).sum(1), 2 * (n - 1))


def test_expanded_2_simplex_is_the_regular_hexagon():
    V = expanded_simplex(2)
    angles = np.sort(np.mod(np.degrees(np.arctan2(V[:, 1], V[:, 0])) - np.degrees(np.arctan2(V[0, 1], V[0, 0])), 360))
    np.testing.assert_allclose(angles, [0, 60, 120, 180, 240, 300], atol=1e-9)


@pytest.mark.parametrize("bad", [1, 0, -3, 2.0, "3", True])
def test_expanded_simplex_rejects_bad_dimension(bad):
    with pytest.raises(ValueError):
        expanded_simplex(bad)


# ---------------------------------------------------------------- inradius
@pytest.mark.parametrize("d", [2, 3, 4])
def test_inradius_of_cube_and_cross_polytope(d):
    cube = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    cross = np.vstack([np.eye(d), -np.eye(d)])
    assert abs(inradius(cube) - 1.0) < 1e-12
    assert abs(inradius(cross) - 1 / math.sqrt(d)) < 1e-12


def _explicit_facet_inradius(n):
    """The facets of conv{e_i - e_j} are sum_{i in S} x_i <= 1 (S nonempty, proper): distances from 0."""
    dists = []
    for k in range(1, n + 1):
        normal_sq = k - k * k / (n + 1)                  # |1_S projected onto sum(x) = 0|^2
        dists.append(1 / math.sqrt(normal_sq) / math.sqrt(2))  # / sqrt(2): circumradius sqrt(2) -> 1
    return min(dists)


@pytest.mark.parametrize("n", range(2, 8))
def test_inradius_of_expanded_simplex_against_table_4_1_and_facets(n):
    r = inradius(expanded_simplex(n))
    table = {2: 3 / 4, 3: 4 / 8, 4: 5 / 12, 5: 6 / 18, 6: 7 / 24, 7: 8 / 32}[n]   # Table 4.1, rho^2
    assert abs(r - math.sqrt(table)) < 1e-9
    assert abs(r - _explicit_facet_inradius(n)) < 1e-9
    eq_4_11 = math.sqrt(2 * (n + 1) / (n * (n + 2) + 0.5 * (1 - (-1) ** n)))
    assert abs(r - eq_4_11) < 1e-9


def test_inradius_is_below_every_support_value():
    """Brute force: for any direction u, the hull reaches max_v u.v >= inradius, with near-equality somewhere."""
    rng = np.random.default_rng(0)
    V = rng.standard_normal((40, 3))
    r = inradius(V)
    U = rng.standard_normal((200000, 3))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    support = (U @ V.T).max(1)
    assert support.min() >= r - 1e-12
    assert support.min() - r < 5e-3


def test_inradius_errors():
    square = np.array([[1.0, 1], [1, -1], [-1, 1], [-1, -1]])
    with pytest.raises(ValueError, match="not strictly inside"):
        inradius(square + 2.0)
    with pytest.raises(ValueError, match="not strictly inside"):
        inradius(square + np.array([1.0, 0.0]))  # origin on the boundary
    with pytest.raises(ValueError):
        inradius(np.array([[0.0, 0], [1, 1], [2, 2], [-1, -1]]))  # collinear
    with pytest.raises(ValueError):
        inradius(np.ones(5))
    with pytest.raises(ValueError):
        inradius(np.array([[np.nan, 0], [1, 1], [2, 0], [0, 3]]))


# ---------------------------------------------------------------- region_radii
@pytest.mark.parametrize("n, ratio", [(2, 2 / math.sqrt(3)), (3, math.sqrt(2))])
def test_simplex_nets_give_expanded_simplices(n, ratio):
    rho, R = region_radii(_simplex_net(n, c=1.0))
    # rho = the nearest facet sum_{i in S} u_i . x = 1: |u_i| = 1 (n = 2); |u_i + u_j| = 2/sqrt(3) (n = 3)
    assert abs(rho - {2: 1.0, 3: math.sqrt(3) / 2}[n]) < 1e-9
    assert abs(R / rho - ratio) < 1e-9


@pytest.mark.parametrize("n", [2, 3])
def test_cross_nets_give_square_and_octahedron(n):
    rho, R = region_radii(_cross_net(n, L=0.7))
    assert abs(R - 0.7) < 1e-9 and abs(rho - 0.7 / math.sqrt(n)) < 1e-9
    assert abs(R / rho - math.sqrt(n)) < 1e-9


def _grid_radii(params, lim, h, alpha=0.0):
    g = np.arange(-lim, lim + h / 2, h)
    X = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    pos = _f(params, X, alpha) > 0
    r = np.linalg.norm(X, axis=1)
    return r[~pos].min(), r[pos].max()


def _random_bounded_nets(count, alpha, seed):
    rng = np.random.default_rng(seed)
    nets = []
    while len(nets) < count:
        W = rng.standard_normal((3, 2))
        b = rng.normal(0, 0.3, 3)
        v = -np.abs(rng.normal(1, 0.3, 3))
        c = np.array([rng.uniform(0.5, 1.5) + float(np.maximum(b, alpha * b) @ -v)])
        p = [(W, b), (v[None, :], c)]
        try:
            rho, R = region_radii(p, negative_slope=alpha)
        except ValueError:
            continue
        if R / rho < 2.5:  # no needle-thin corners, which a grid resolves badly
            nets.append(p)
    return nets


@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_region_radii_against_a_grid(alpha):
    h = 2e-3
    for p in _random_bounded_nets(4, alpha, seed=int(alpha * 10) + 1):
        rho, R = region_radii(p, negative_slope=alpha)
        lim = R * 1.05
        g_rho, g_R = _grid_radii(p, lim, h * lim, alpha)
        # grid points outside are at least rho away, and some are within one cell of rho; likewise for R
        assert rho <= g_rho + 1e-12 and g_rho - rho < 2 * h * lim
        assert g_R <= R + 1e-12 and R - g_R < 2 * h * lim


def test_region_radii_against_an_explicit_quadrilateral():
    """A net whose region is the quadrilateral with vertices on the two unit lines; vertices by hand."""
    # f = 1 + l(x) - relu(x1) * a - relu(x2) * b with l linear (unit 3 active over the region)
    a, bb, beta = 1.5, 2.5, np.array([0.4, 0.2])
    W = np.array([[1.0, 0.0], [0.0, 1.0], beta / np.linalg.norm(beta)])
    p = [(W, np.array([0.0, 0.0, 10.0])),
         (np.array([[-a, -bb, np.linalg.norm(beta)]]), np.array([1.0 - 10.0 * np.linalg.norm(beta)]))]
    # inside the region f = 1 + beta.x - a relu(x1) - b relu(x2); its zeros on the axes:
    verts = np.array([[1 / (a - beta[0]), 0], [-1 / beta[0], 0], [0, 1 / (bb - beta[1])], [0, -1 / beta[1]]])
    assert np.allclose(_f(p, verts), 0, atol=1e-12)
    order = [0, 2, 1, 3]
    P = verts[order]
    edge_d = []
    for i in range(4):
        A, B = P[i], P[(i + 1) % 4]
        t = np.clip(-A @ (B - A) / ((B - A) @ (B - A)), 0, 1)
        edge_d.append(np.linalg.norm(A + t * (B - A)))
    rho, R = region_radii(p)
    assert abs(R - np.linalg.norm(verts, axis=1).max()) < 1e-9
    assert abs(rho - min(edge_d)) < 1e-9


def test_region_radii_center_translation():
    p = _simplex_net(2)
    t = np.array([0.3, -1.2])
    (W, b), out = p
    moved = [(W, b - W @ t), out]
    np.testing.assert_allclose(region_radii(moved, center=t), region_radii(p), atol=1e-12)


def test_region_radii_errors():
    W = np.array([[1.0, 0], [0, 1], [1, 1]])
    unbounded = [(W, np.zeros(3)), (np.array([[-1.0, -1, 0]]), np.array([1.0]))]  # positive for x -> (-inf, -inf)
    with pytest.raises(ValueError, match="unbounded"):
        region_radii(unbounded)
    rank_one = [(np.array([[1.0, 0], [-1, 0], [2, 0]]), np.zeros(3)), (-np.ones((1, 3)), np.array([1.0]))]
    with pytest.raises(ValueError, match="unbounded"):
        region_radii(rank_one)
    with pytest.raises(ValueError, match="does not contain the center"):
        region_radii(_simplex_net(2), center=[5.0, 0.0])
    with pytest.raises(ValueError):
        region_radii([(np.ones((3, 4)), np.zeros(3)), (np.ones((1, 3)), np.zeros(1))])  # 4 inputs
    with pytest.raises(ValueError):
        region_radii([(np.ones((3, 2)), np.zeros(3))])  # no output layer
    with pytest.raises(ValueError):
        region_radii(_simplex_net(2), negative_slope=1.5)
    with pytest.raises(ValueError):
        region_radii(_simplex_net(2), center=[0.0])



def test_region_radii_of_a_non_convex_region_with_corners_nearest():
    """|x|_1 < 1 plus a saturating ramp in x2 (two more units) is a non-convex hexagon-like region with
    reflex corners; from centres near them the nearest boundary point is a corner, which only the
    projections onto faces of lower dimension find. Compared with a fine grid."""
    (W, b), (v, c) = _cross_net(2, L=1.0)
    W = np.vstack([W, [[0.0, 1.0], [0.0, 1.0]]])
    b = np.append(b, [-0.2, -0.3])
    v = np.append(v.ravel(), [6.0, -6.0])                 # +0.6 for x2 > 0.3, a ramp on 0.2 < x2 < 0.3
    p = [(W, b), (v[None, :], c)]
    h = 2.5e-3
    g = np.arange(-1.7, 1.7 + h / 2, h)
    X = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    pos = _f(p, X) > 0
    for center in ([0.0, 0.0], [0.75, 0.2], [-0.8, 0.22], [0.0, 0.9]):
        center = np.array(center)
        rho, R = region_radii(p, center=center)
        r = np.linalg.norm(X - center, axis=1)
        assert rho <= r[~pos].min() + 1e-12 and r[~pos].min() - rho < 2 * h
        assert r[pos].max() <= R + 1e-12 and R - r[pos].max() < 2 * h

def test_region_radii_of_non_convex_regions_against_a_grid():
    """Wider nets with output weights of both signs carve non-convex regions, whose nearest boundary point
    can be a corner rather than the foot of a perpendicular on an edge."""
    rng = np.random.default_rng(7)
    checked = corners = 0
    while checked < 3:
        h = 5
        W = rng.standard_normal((h, 2))
        b = rng.normal(0, 0.5, h)
        v = rng.normal(-1, 1.0, h)
        p = [(W, b), (v[None, :], np.array([1.0 - float(np.maximum(b, 0) @ v)]))]
        try:
            rho, R = region_radii(p)
        except ValueError:
            continue
        if R / rho > 4:
            continue
        lim = R * 1.05
        g_rho, g_R = _grid_radii(p, lim, 2e-3 * lim)
        assert rho <= g_rho + 1e-12 and g_rho - rho < 4e-3 * lim
        assert g_R <= R + 1e-12 and R - g_R < 4e-3 * lim
        checked += 1


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_sum_zero_basis_is_orthonormal_and_spans_the_sum_zero_hyperplane(n):
    from lib.annulus import sum_zero_basis
    B = sum_zero_basis(n)
    assert B.shape == (n, n + 1)
    np.testing.assert_allclose(B @ B.T, np.eye(n), atol=1e-12)          # orthonormal rows
    np.testing.assert_allclose(B.sum(axis=1), 0.0, atol=1e-12)         # inside sum(x) = 0
    P = np.eye(n + 1) - 1.0 / (n + 1)                                  # projector onto that hyperplane
    np.testing.assert_allclose(B.T @ B, P, atol=1e-12)                 # ... and spanning it


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "3"])
def test_sum_zero_basis_rejects_bad_dimension(bad):
    from lib.annulus import sum_zero_basis
    with pytest.raises(ValueError, match="sum_zero_basis needs an integer dimension n >= 1"):
        sum_zero_basis(bad)


# --- every error message, word for word (what a reader sees), and the edge cases behind them ----------

def _exact(message):
    """A pytest.raises pattern matching the whole message."""
    import re
    return "^" + re.escape(message) + "$"


def _hexagon():
    return _simplex_net(2)


@pytest.mark.parametrize("params, message", [
    ([1, 2, 3], "params must be a list of two (W, b) pairs: one hidden layer and the output layer"),
    ([(np.ones((3, 4)), np.zeros(3)), (np.ones((1, 3)), np.zeros(1))],
     "the hidden weight matrix must have shape (width, 2) or (width, 3), got (3, 4)"),
    ([(np.ones((3, 1)), np.zeros(3)), (np.ones((1, 3)), np.zeros(1))],
     "the hidden weight matrix must have shape (width, 2) or (width, 3), got (3, 1)"),
    ([(np.ones((3, 2)), np.zeros(4)), (np.ones((1, 3)), np.zeros(1))],
     "params: shapes do not fit a one-output net of width 3: b1 (4,), W2 (1, 3), b2 (1,)"),
    ([(np.ones((3, 2)), np.zeros(3)), (np.ones((1, 4)), np.zeros(1))],
     "params: shapes do not fit a one-output net of width 3: b1 (3,), W2 (1, 4), b2 (1,)"),
    ([(np.ones((3, 2)), np.zeros(3)), (np.ones((1, 3)), np.zeros(2))],
     "params: shapes do not fit a one-output net of width 3: b1 (3,), W2 (1, 3), b2 (2,)"),
    ([(np.ones((13, 2)), np.zeros(13)), (np.ones((1, 13)), np.zeros(1))],
     "hidden width 13 is too large for the pattern enumeration (at most 12)"),
    ([(np.full((3, 2), np.nan), np.zeros(3)), (np.ones((1, 3)), np.zeros(1))], "params contain NaN or infinite values"),
    ([(np.ones((3, 2)), np.zeros(3)), (np.ones((1, 3)), np.array([np.inf]))], "params contain NaN or infinite values"),
])
def test_region_radii_bad_params_messages(params, message):
    with pytest.raises(ValueError, match=_exact(message)):
        region_radii(params)


def test_region_radii_bad_center_and_slope_messages():
    with pytest.raises(ValueError, match=_exact("center must be a finite point of R^2, got [0.0, 0.0, 0.0]")):
        region_radii(_hexagon(), center=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=_exact("center must be a finite point of R^2, got [0.0, nan]")):
        region_radii(_hexagon(), center=[0.0, float("nan")])
    for bad in (1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=_exact(f"negative_slope must be in [0, 1), got {bad!r}")):
            region_radii(_hexagon(), negative_slope=bad)
    zero_row = [(np.array([[1.0, 0], [0, 1], [0, 0], [-1, -1]]), np.zeros(4)), (-np.ones((1, 4)), np.array([1.0]))]
    with pytest.raises(ValueError, match=_exact("a hidden unit has zero input weights")):
        region_radii(zero_row)
    rank_one = [(np.array([[1.0, 0], [-1, 0], [2, 0]]), np.zeros(3)), (-np.ones((1, 3)), np.array([1.0]))]
    with pytest.raises(ValueError, match=_exact("the region is unbounded: the hidden units do not span the input "
                                                "space, so f is constant along a direction")):
        region_radii(rank_one)
    W = np.array([[1.0, 0], [0, 1], [1, 1]])
    unbounded = [(W, np.zeros(3)), (np.array([[-1.0, -1, 0]]), np.array([1.0]))]
    with pytest.raises(ValueError, match=_exact("the region {f > 0} is unbounded")):
        region_radii(unbounded)


def test_region_radii_accepts_other_shapes_of_the_same_net():
    """A centre given as a row (1, d) and an output bias of shape (1, 1) mean the same net and point;
    the result is the same, with no warning (no array-to-scalar conversion)."""
    import warnings
    (W, b), (v, c) = _hexagon()
    want = region_radii(_hexagon())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = region_radii([(W, b), (v, np.array([[float(np.ravel(c)[0])]]))], center=[[0.0, 0.0]])
    np.testing.assert_allclose(got, want, rtol=0, atol=0)


def test_region_radii_width_twelve_is_allowed():
    """The pattern enumeration takes up to 12 units: a regular 12-gon net, R/rho = 1/cos(pi/12)."""
    t = 2 * np.pi * np.arange(12) / 12
    U = np.stack([np.cos(t), np.sin(t)], 1)
    rho, R = region_radii([(U, np.zeros(12)), (-np.ones((1, 12)), np.array([1.0]))])
    assert R / rho == pytest.approx(1 / np.cos(np.pi / 12), rel=1e-9)


def test_region_radii_centre_test_uses_relu_at_zero():
    """Outside the hexagon where two units are each 0.6 (> 0 but < 1) active: f(center) = 1 - 1.2 < 0."""
    u = _hexagon()[0][0]
    x = 1.2 * (u[0] + u[1]) / np.linalg.norm(u[0] + u[1])       # on the bisector of units 0 and 1
    np.testing.assert_allclose(u[:2] @ x, [0.6, 0.6], atol=1e-12)
    with pytest.raises(ValueError, match=r"does not contain the center .* \(f\(center\) = -0\.2\)"):
        region_radii(_hexagon(), center=x)


def test_region_radii_leaky_units_with_biases_inside_check():
    """f = -sum leaky_0.5(u_i . x - 0.2) over the hexagon directions: at the origin every unit is at -0.2,
    so f(0) = -3 * 0.5 * (-0.2) = 0.3 > 0 (the region contains the origin) and far away f -> -inf
    (bounded). Compared with a grid."""
    U = _hexagon()[0][0]
    p = [(U, np.full(3, -0.2)), (-np.ones((1, 3)), np.array([0.0]))]
    rho, R = region_radii(p, negative_slope=0.5)
    h = 2e-3
    g = np.arange(-2.0, 2.0 + h / 2, h)
    X = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    Z = X @ U.T - 0.2
    f = -np.where(Z > 0, Z, 0.5 * Z).sum(1)
    r = np.linalg.norm(X, axis=1)
    assert abs(r[f <= 0].min() - rho) < 2 * h and abs(r[f > 0].max() - R) < 2 * h


def test_solve_all_and_rank_edge_cases():
    from lib.annulus import _rank, _solve_all
    A = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    assert _solve_all(A, np.zeros(3), []).shape == (0, 2)                   # no combination
    assert _solve_all(A, np.zeros(3), [(0, 1)]).shape == (0, 2)             # only a singular one
    np.testing.assert_allclose(_solve_all(A, np.array([1.0, 0, 3]), [(0, 1), (0, 2)]), [[1.0, 3.0]])
    assert _rank(np.zeros((0, 2)), 1.0) == 0
    assert _rank(np.array([[1.0, 1.0]]), 1.0) == 1
    assert _rank(np.array([[1.0, 1.0], [2.0, 2.0 + 1e-6]]), 1.0) == 2


def test_sum_zero_basis_raises_no_warning():
    import warnings
    from lib.annulus import sum_zero_basis
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sum_zero_basis(4)


@pytest.mark.parametrize("V, message", [
    (np.array([[1.0], [2.0], [-1.0]]), "vertices must be an (m, d) array with d >= 2 and m > d, got shape (3, 1)"),
    (np.array([[1.0, 0.0], [0.0, 1.0]]), "vertices must be an (m, d) array with d >= 2 and m > d, got shape (2, 2)"),
    (np.array([[1.0, 0.0], [0.0, np.nan], [-1.0, -1.0]]), "vertices contain NaN or infinite values"),
])
def test_inradius_messages(V, message):
    with pytest.raises(ValueError, match=_exact(message)):
        inradius(V)


def test_inradius_flat_hull_message_names_qhull():
    with pytest.raises(ValueError, match=r"^the points do not span a full-dimensional hull: QH\d+"):
        inradius(np.array([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))


def test_inradius_origin_on_the_boundary_of_a_large_hull_is_refused():
    """The origin 5e-10 inside an edge of a 200-wide square: on the boundary within the tolerance, which
    scales with the hull's size."""
    V = np.array([[-5e-10, -100.0], [-5e-10, 100.0], [200.0, -100.0], [200.0, 100.0]])
    with pytest.raises(ValueError):
        inradius(V)
    assert inradius(V - [1.0, 0.0]) == pytest.approx(1.0 + 5e-10)


def test_expanded_simplex_message():
    with pytest.raises(ValueError, match=_exact("expanded_simplex needs an integer dimension n >= 2, got 1")):
        expanded_simplex(1)


# ================================================================ chapter 07's nets, polygons, rays and polytopes
from lib.annulus import (ball_volume, crossing_units, cross_net, escape_ray, exit_distances,  # noqa: E402
                         expanded_simplex_facets, polish_ratio, polygon_radii, polytope_radii, quad_net,
                         region_polygon, relu_sum_net, relu_sum_polytope, simplex_net, lines_net)
from lib.annulus_training import ball_vs_shell  # noqa: E402
from lib.nets import forward_f64  # noqa: E402


def _fv(params, X, alpha=0.0):
    return forward_f64(params, np.asarray(X, float), alpha)[:, 0]


def _hex_lines_net(t, c=1.0, angles=(90.0, 210.0, 330.0)):
    """c - sum relu(u_i . x - t) with unit u_i at the given angles (Fig. 4.4's triangle for t > 0)."""
    return lines_net(angles, t, c)


# ---------------------------------------------------------------- expanded_simplex_facets, ball_volume
@pytest.mark.parametrize("n", range(2, 9))
def test_expanded_simplex_facets_by_type_against_the_explicit_distances(n):
    got = expanded_simplex_facets(n)
    assert sorted(got) == list(range(1, n + 1))
    for k, d in got.items():
        normal_sq = k - k * k / (n + 1)                      # |1_S projected onto sum(x) = 0|^2
        assert abs(d - 1 / math.sqrt(normal_sq) / math.sqrt(2)) < 1e-12, (n, k)
    assert abs(min(got.values()) - inradius(expanded_simplex(n))) < 1e-9 if n <= 6 else True


def test_expanded_simplex_facets_are_tight_on_the_vertices():
    """Every vertex satisfies sum_{i in S} x_i <= h for the returned distances (brute force over all S)."""
    from lib.annulus import sum_zero_basis
    n = 4
    Vh = expanded_simplex(n) @ sum_zero_basis(n)
    got = expanded_simplex_facets(n)
    for k in range(1, n + 1):
        for S in itertools.combinations(range(n + 1), k):
            normal = np.zeros(n + 1)
            normal[list(S)] = 1.0
            normal -= normal.mean()
            assert (Vh @ normal).max() / np.linalg.norm(normal) == pytest.approx(got[k], abs=1e-12)


@pytest.mark.parametrize("bad", [1, 0, 2.5, True, "4"])
def test_expanded_simplex_facets_rejects_bad_dimension(bad):
    with pytest.raises(ValueError, match="expanded_simplex_facets needs an integer dimension n >= 2"):
        expanded_simplex_facets(bad)


def test_ball_volume_against_the_recursion_and_small_cases():
    assert ball_volume(1, 0.7) == pytest.approx(1.4, rel=1e-13)
    assert ball_volume(2, 0.7) == pytest.approx(math.pi * 0.49, rel=1e-13)
    assert ball_volume(3, 2.0) == pytest.approx(4 / 3 * math.pi * 8, rel=1e-13)
    v = {0: 1.0, 1: 2.0}                                        # unit balls: V_n = 2 pi / n V_(n-2)
    for n in range(2, 41):
        v[n] = 2 * math.pi / n * v[n - 2]
        assert ball_volume(n, 1.0) == pytest.approx(v[n], rel=1e-12), n
        assert ball_volume(n, 1.3) == pytest.approx(v[n] * 1.3 ** n, rel=1e-12), n
    assert ball_volume(5, 0.0) == 0.0
    assert ball_volume(400, 3.0) > 0 and math.isfinite(ball_volume(400, 3.0))   # no overflow in logs


def test_ball_volume_monte_carlo_in_four_dimensions():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400000, 4))
    share = (np.linalg.norm(X, axis=1) < 1).mean()
    se = math.sqrt(share * (1 - share) / len(X)) * 16
    assert abs(share * 16 - ball_volume(4, 1.0)) < 4 * se


@pytest.mark.parametrize("n, r, match", [(0, 1.0, "n >= 1"), (2, -1.0, "r .the radius. must be a finite number >= 0"),
                                         (2, float("nan"), "finite number >= 0"), (2, "x", "must be a real number"),
                                         (True, 1.0, "n >= 1")])
def test_ball_volume_errors(n, r, match):
    with pytest.raises(ValueError, match=match):
        ball_volume(n, r)


# ---------------------------------------------------------------- the constructions
@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_simplex_net_units_form_a_regular_simplex(n):
    (W, b), (v, c) = simplex_net(n, c=0.8)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0, atol=1e-12)
    G = W @ W.T
    np.testing.assert_allclose(G[~np.eye(n + 1, dtype=bool)], -1.0 / n, atol=1e-12)
    np.testing.assert_allclose(b, 0.0)
    np.testing.assert_allclose(v, -np.ones((1, n + 1)))
    assert c.tolist() == [0.8]
    X = np.random.default_rng(n).standard_normal((50, n))
    np.testing.assert_allclose(_fv(simplex_net(n, 0.8), X), 0.8 - np.maximum(X @ W.T, 0).sum(1), atol=1e-12)


@pytest.mark.parametrize("n", [2, 3])
def test_simplex_net_has_the_same_region_as_an_independent_construction(n):
    assert region_radii(simplex_net(n, 1.3)) == pytest.approx(region_radii(_simplex_net(n, 1.3)), abs=1e-12)


@pytest.mark.parametrize("bad, match", [(dict(n=1), "n >= 2"), (dict(n=3, c=0.0), "c .the output bias.* must be a finite number > 0"),
                                        (dict(n=3, c=-1.0), "region is empty unless c > 0"), (dict(n=3, c="1"), "real number")])
def test_simplex_net_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        simplex_net(**bad)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_cross_net_is_a_third_of_one_minus_the_l1_norm_inside(n):
    L = 0.6
    p = cross_net(n, L)
    rng = np.random.default_rng(n)
    X = rng.uniform(-L, L, (4000, n))
    X = X[np.abs(X).sum(1) < 1.2 * L]
    np.testing.assert_allclose(_fv(p, X), (1 - np.abs(X).sum(1) / L) / 3, atol=1e-12)
    far = rng.standard_normal((2000, n)) * 10 * L
    far = far[np.abs(far).sum(1) > L]
    assert (_fv(p, far) < 0).all()                                  # negative outside: the region is the cross-polytope
    (W, b), (v, c) = p
    np.testing.assert_allclose(v, -1.0)
    np.testing.assert_allclose(c, 1.0)
    U = rng.standard_normal((300, n))
    np.testing.assert_allclose(exit_distances(p, U), L * np.linalg.norm(U, axis=1) / np.abs(U).sum(1), rtol=1e-12)
    boundary = U / np.linalg.norm(U, axis=1, keepdims=True) * exit_distances(p, U)[:, None]
    assert crossing_units(p, boundary).tolist() == [True] * n + [False]
    rho, R = region_radii(p) if n <= 3 else polytope_radii(W, b) if n <= 4 else (L / math.sqrt(n), L)
    assert (rho, R) == pytest.approx((L / math.sqrt(n), L), abs=1e-12)


def test_lines_net_puts_unit_lines_at_the_angles():
    p = lines_net([0.0, 90.0, 225.0], [0.1, 0.2, 0.3], c=2.0)
    (W, b), (v, c) = p
    np.testing.assert_allclose(W, [[1, 0], [0, 1], [-math.sqrt(0.5), -math.sqrt(0.5)]], atol=1e-12)
    np.testing.assert_allclose(b, [-0.1, -0.2, -0.3])
    assert c.tolist() == [2.0] and v.tolist() == [[-1.0, -1.0, -1.0]]
    np.testing.assert_allclose(lines_net([10, 130, 250], 0.25)[0][1], [-0.25] * 3)     # one common offset
    for angles, offsets in (([], 0.1), ([0, 90], [0.1, 0.2, 0.3]), ([0, float("nan")], 0.1), ([[0, 90]], 0.1),
                            ([0, 90], [[0.1, 0.2]])):
        with pytest.raises(ValueError, match="angles and offsets must be finite vectors"):
            lines_net(angles, offsets)


@pytest.mark.parametrize("bad, match", [(dict(n=1), "n >= 2"), (dict(n=2, L=0.0), "L .the cross-polytope's radius. must be a finite number > 0")])
def test_cross_net_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        cross_net(**bad)


def test_quad_net_is_the_hand_built_quadrilateral():
    a, bb, beta = 1.5, 2.5, np.array([0.4, 0.2])
    p = quad_net(np.eye(2), (a, bb), beta)
    X = np.random.default_rng(0).uniform(-1, 1, (500, 2))
    want = 1 + X @ beta - a * np.maximum(X[:, 0], 0) - bb * np.maximum(X[:, 1], 0)   # inside |x| < 10
    np.testing.assert_allclose(_fv(p, X), want, atol=1e-12)
    P = region_polygon(p)
    verts = np.array([[1 / (a - beta[0]), 0], [0, 1 / (bb - beta[1])], [-1 / beta[0], 0], [0, -1 / beta[1]]])
    assert len(P) == 4
    for q in verts:
        assert np.linalg.norm(P - q, axis=1).min() < 1e-9
    assert quad_net(np.eye(2), (a, bb), beta, far=20.0)[0][1].tolist() == [0.0, 0.0, 20.0]


@pytest.mark.parametrize("args, match", [((np.eye(3), (1, 1), (1, 1)), "shape"), ((np.eye(2), (1, 1, 1), (1, 1)), "shape"),
                                         ((np.eye(2), (1, 1), (0, 0)), "beta .* must not be zero"),
                                         ((np.eye(2), (1, np.nan), (1, 1)), "must be finite"),
                                         ((np.eye(2), (1, 1), (1, 1), 0.0), "far .the third unit's offset. must be"),
                                         ((np.eye(2), ((1, 1),), (1, 1)), "shape"), ((np.eye(2), (1, 1), ((1, 1),)), "shape")])
def test_quad_net_errors(args, match):
    with pytest.raises(ValueError, match=match):
        quad_net(*args)


def test_relu_sum_net_is_c_minus_a_sum_of_relus_and_checks_its_arguments():
    rng = np.random.default_rng(1)
    W, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    X = rng.standard_normal((30, 3))
    np.testing.assert_allclose(_fv(relu_sum_net(W, b, 2.5), X), 2.5 - np.maximum(X @ W.T + b, 0).sum(1), atol=1e-12)
    p = relu_sum_net(W, b)
    W[0, 0] = 99.0                                                # a copy: the net does not change with W
    assert p[0][0][0, 0] != 99.0 and p[1][1].tolist() == [1.0]
    for bad in [(np.ones(3), np.ones(3)), (np.ones((3, 2)), np.ones(2)), (np.full((3, 2), np.nan), np.ones(3)),
                (np.ones((3, 2)), np.ones((3, 1)))]:
        with pytest.raises(ValueError, match="finite .width, n. array"):
            relu_sum_net(*bad)
    with pytest.raises(ValueError, match="c .the output bias. must be a finite number"):
        relu_sum_net(np.ones((3, 2)), np.ones(3), float("inf"))
    with pytest.raises(TypeError, match="W must be numeric"):
        relu_sum_net("W", np.ones(3))


# ---------------------------------------------------------------- region_polygon, polygon_radii
def test_region_polygon_of_the_regular_hexagon_and_the_square():
    P = region_polygon(simplex_net(2))
    assert P.shape == (6, 2)
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 2 / math.sqrt(3), atol=1e-12)
    ang = np.sort(np.degrees(np.arctan2(P[:, 1], P[:, 0])) % 360)
    np.testing.assert_allclose(np.diff(ang), 60.0, atol=1e-9)
    S = region_polygon(cross_net(2, L=0.7))
    assert S.shape == (4, 2)
    for q in ([0.7, 0], [0, 0.7], [-0.7, 0], [0, -0.7]):
        assert np.linalg.norm(S - q, axis=1).min() < 1e-12
    area2 = np.sum(S[:, 0] * np.roll(S[:, 1], -1) - np.roll(S[:, 0], -1) * S[:, 1])
    assert area2 == pytest.approx(2 * 2 * 0.7 ** 2)             # counter-clockwise: positive area


def _inside(P, X):
    """Point in polygon by the winding number (independent of region_polygon's own tests)."""
    w = np.zeros(len(X))
    for A, B in zip(P, np.roll(P, -1, axis=0)):
        a, b = A - X, B - X
        w += np.arctan2(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0], (a * b).sum(1))
    return np.abs(w) > np.pi


@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_region_polygon_against_a_grid_and_region_radii(alpha):
    nets = _random_bounded_nets(5, alpha, seed=11 + int(10 * alpha))
    for p in nets:
        P = region_polygon(p, negative_slope=alpha)
        rho, R = region_radii(p, negative_slope=alpha)
        np.testing.assert_allclose(polygon_radii(P), (rho, R), atol=1e-9)
        np.testing.assert_allclose(_fv(p, P, alpha), 0.0, atol=1e-9)       # corners on the zero set
        g = np.linspace(-R * 1.1, R * 1.1, 161)
        X = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
        f = _fv(p, X, alpha)
        far = np.abs(f) > 1e-2
        assert (_inside(P, X[far]) == (f[far] > 0)).all()
        assert len(P) in (4, 5, 6)


def test_region_polygon_drops_points_on_straight_edges_and_takes_a_centre():
    (W, b), (v, c) = cross_net(2, 1.0)
    # a fourth unit whose line crosses the square but with output weight 0: no corner there
    p = [(np.vstack([W, [[1.0, 1.0]]]), np.append(b, 0.1)), (np.append(v.ravel(), 0.0)[None, :], c)]
    assert len(region_polygon(p)) == 4
    t = np.array([0.2, -0.1])
    moved = [(W, b - W @ t), (v, c)]
    np.testing.assert_allclose(region_polygon(moved, center=t), region_polygon(cross_net(2, 1.0)) + t, atol=1e-12)


def test_region_polygon_of_a_four_unit_diamond():
    """Four units in two opposite pairs: sum relu(+-x_i) < 0.5 is the diamond |x1| + |x2| < 0.5."""
    W = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    p = relu_sum_net(W, np.zeros(4), 0.5)
    P = region_polygon(p)
    np.testing.assert_allclose(sorted(np.abs(P).max(1)), [0.5] * 4, atol=1e-12)


def test_region_polygon_errors():
    with pytest.raises(ValueError, match=r"shape \(width, 2\), got \(4, 3\)"):
        region_polygon(simplex_net(3))
    W = np.array([[1.0, 0], [0, 1], [1, 1]])
    with pytest.raises(ValueError, match="unbounded"):
        region_polygon([(W, np.zeros(3)), (np.array([[-1.0, -1, 0]]), np.array([1.0]))])
    with pytest.raises(ValueError, match="does not contain the center"):
        region_polygon(simplex_net(2), center=[3.0, 0.0])


def test_fig_4_4_expansion_of_a_triangle_is_a_hexagon_with_parallel_opposite_sides():
    for t in (0.3, 0.1, 0.0):
        P = region_polygon(_hex_lines_net(t, c=1.0))
        assert len(P) == 6
        E = np.roll(P, -1, axis=0) - P
        lengths = np.linalg.norm(E, axis=1)
        for i in range(3):                                       # opposite edges are antiparallel
            cross = E[i, 0] * E[i + 3, 1] - E[i, 1] * E[i + 3, 0]
            assert abs(cross) < 1e-9 * lengths[i] * lengths[i + 3]
        # long and short edges alternate; their ratio is (c + 2t + ...)/...: 1 exactly when t = 0
        if t == 0.0:
            np.testing.assert_allclose(lengths, lengths[0], rtol=1e-12)
        else:
            assert lengths.max() / lengths.min() > 1 + t


def test_polygon_radii_of_a_triangle_and_errors():
    T = np.array([[2.0, 0.0], [-1.0, math.sqrt(3)], [-1.0, -math.sqrt(3)]])   # equilateral, centred
    rho, R = polygon_radii(T)
    assert R == pytest.approx(2.0) and rho == pytest.approx(1.0)          # inradius half the circumradius
    assert polygon_radii(T, center=[1.0, 0.0]) == pytest.approx((0.5, math.sqrt(7)))  # off centre
    rho_c, R_c = polygon_radii(T + 5.0, center=[5.0, 5.0])
    assert (rho_c, R_c) == pytest.approx((rho, R))
    # the nearest point of an edge can be its end: a thin wedge seen from beside its tip
    W = np.array([[0.0, 0.0], [10.0, 1.0], [10.0, -1.0]])
    assert polygon_radii(W, center=[-1.0, 0.0])[0] == pytest.approx(1.0)
    for bad in (np.ones((2, 2)), np.ones((4, 3)), np.array([[0, 0], [1, np.nan], [0, 1.0]])):
        with pytest.raises(ValueError, match="k >= 3 corners"):
            polygon_radii(bad)
    with pytest.raises(ValueError, match="center must be a finite point of R\\^2"):
        polygon_radii(T, center=[0.0, 1.0, 2.0])


# ---------------------------------------------------------------- escape_ray, exit_distances, crossing_units
@pytest.mark.parametrize("n, h, alpha", [(2, 2, 0.0), (2, 1, 0.0), (3, 3, 0.1), (3, 2, 0.0), (5, 5, 0.3), (4, 4, 0.0)])
def test_escape_ray_never_decreases_f(n, h, alpha):
    rng = np.random.default_rng(10 * n + h)
    for _ in range(5):
        p = [(rng.standard_normal((h, n)), rng.standard_normal(h)), (rng.standard_normal((1, h)), rng.standard_normal(1))]
        d = escape_ray(p)
        assert abs(np.linalg.norm(d) - 1) < 1e-12
        X0 = rng.standard_normal((20, n)) * 2
        t = np.linspace(0, 50, 201)
        F = np.array([_fv(p, X0 + s * d, alpha) for s in t])          # (t, points)
        assert (np.diff(F, axis=0) >= -1e-9).all()


def test_escape_ray_of_a_rank_deficient_net_is_a_constant_direction():
    p = [(np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]]), np.zeros(3)), (np.array([[1.0, -3.0, 2.0]]), np.zeros(1))]
    d = escape_ray(p)
    X = np.random.default_rng(0).standard_normal((10, 3))
    np.testing.assert_allclose(_fv(p, X + 7 * d), _fv(p, X), atol=1e-12)


def test_escape_ray_errors():
    with pytest.raises(ValueError, match="needs a width h <= n .* got width 3 on R\\^2"):
        escape_ray(simplex_net(2))
    with pytest.raises(ValueError, match="params must be a list of two"):
        escape_ray([(np.eye(2), np.zeros(2))])


@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_exit_distances_against_a_fine_march_along_each_ray(alpha):
    rng = np.random.default_rng(5)
    for p in _random_bounded_nets(3, alpha, seed=21):
        U = rng.standard_normal((40, 2))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        d = exit_distances(p, U, negative_slope=alpha)
        t = np.linspace(0, 1.0, 20001)[1:]
        for u, dist in zip(U, d):
            f = _fv(p, np.outer(t * 2 * dist, u), alpha)
            first = t[np.argmax(f <= 0)] * 2 * dist
            assert abs(first - dist) < 2 * dist / 20000 + 1e-12
        np.testing.assert_allclose(_fv(p, U * d[:, None], alpha), 0.0, atol=1e-9)


def test_exit_distances_closed_forms_centre_and_unbounded_rays():
    # the hexagon net c - sum relu(u_i . x): along u, f = c - t sum relu(u_i . u)
    U = np.random.default_rng(2).standard_normal((50, 2))
    p = simplex_net(2, c=1.7)
    W = p[0][0]
    Un = U / np.linalg.norm(U, axis=1, keepdims=True)
    np.testing.assert_allclose(exit_distances(p, U), 1.7 / np.maximum(Un @ W.T, 0).sum(1), rtol=1e-12)
    t = np.array([0.3, 0.2])
    moved = [(W, -W @ t), p[1]]
    np.testing.assert_allclose(exit_distances(moved, U, center=t), exit_distances(p, U), rtol=1e-12)
    # a width-2 net in the plane: unbounded along its escape ray, and positive beyond every kink
    q = [(np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros(2)), (np.array([[-1.0, -1.0]]), np.array([1.0]))]
    d = exit_distances(q, np.vstack([escape_ray(q), [1.0, 0.0], [1.0, 1.0]]))
    assert d[0] == np.inf and d[1] == pytest.approx(1.0) and d[2] == pytest.approx(1 / math.sqrt(2))
    # leaky ReLU: where both units are below zero the leak makes f grow again along (-1, -1)
    assert exit_distances(q, [[-1.0, -1.0]], negative_slope=0.1)[0] == np.inf
    # f = 1 - lrelu(x) + 2 lrelu(x - 1) on the line: to the right the zero is at the kink x = 1; to the left
    # (no kink at t > 0) f = 1 - 2 alpha - alpha t for leaky units, constant 1 for ReLU
    p1 = [(np.array([[1.0], [1.0]]), np.array([0.0, -1.0])), (np.array([[-1.0, 2.0]]), np.array([1.0]))]
    assert exit_distances(p1, [[1.0]])[0] == pytest.approx(1.0, abs=1e-12)
    assert exit_distances(p1, [[-1.0]], negative_slope=0.1)[0] == pytest.approx(8.0, abs=1e-12)
    assert exit_distances(p1, [[-1.0]])[0] == np.inf
    assert exit_distances(p1, [[-3.0], [2.0]], negative_slope=0.25)[0] == pytest.approx(2.0, abs=1e-12)


def test_exit_distances_errors():
    p = simplex_net(3)
    with pytest.raises(ValueError, match=r"directions must be a finite \(m, 3\) array"):
        exit_distances(p, np.ones((4, 2)))
    with pytest.raises(ValueError, match="directions contain a zero vector"):
        exit_distances(p, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="does not contain the center"):
        exit_distances(p, np.ones((1, 3)), center=[5.0, 5.0, 5.0])
    with pytest.raises(ValueError, match=r"directions must be a finite"):
        exit_distances(p, np.empty((0, 3)))


def test_crossing_units_of_the_simplex_and_a_shifted_unit():
    n = 4
    p = simplex_net(n)
    U = np.random.default_rng(0).standard_normal((500, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    B = U * exit_distances(p, U)[:, None]
    assert crossing_units(p, B).all()
    (W, b), out = p
    far = [(np.vstack([W, W[:1]]), np.append(b, -5.0)), (np.append(out[0], -1.0)[None, :], out[1])]
    B2 = U * exit_distances(far, U)[:, None]                          # a sixth unit, off on the whole region
    np.testing.assert_allclose(B2, B, atol=1e-12)                     # (u_0 . x < 1 there): the same region
    assert crossing_units(far, B2).tolist() == [True] * 5 + [False]
    with pytest.raises(ValueError, match=r"points must be a finite \(m, 4\) array"):
        crossing_units(p, np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"points must be a finite \(m, 4\) array with m >= 1"):
        crossing_units(p, np.ones((0, 4)))


# ---------------------------------------------------------------- relu_sum_polytope, polytope_radii, polish_ratio
def test_relu_sum_polytope_is_the_sublevel_set():
    rng = np.random.default_rng(3)
    W, b = rng.standard_normal((4, 3)), rng.normal(0, 0.2, 4)
    A, r = relu_sum_polytope(W, b)
    assert A.shape == (15, 3) and r.shape == (15,)
    X = rng.standard_normal((3000, 3))
    inside = np.maximum(X @ W.T + b, 0).sum(1) <= 1
    np.testing.assert_array_equal((X @ A.T <= r).all(1), inside)


@pytest.mark.parametrize("d", [2, 3])
def test_polytope_radii_agrees_with_region_radii(d):
    rng = np.random.default_rng(d)
    done = 0
    while done < 6:
        W, b = rng.standard_normal((d + 1, d)), rng.normal(-0.2, 0.3, d + 1)
        try:
            got = polytope_radii(W, b)
        except ValueError:
            continue
        np.testing.assert_allclose(got, region_radii(relu_sum_net(W, b)), rtol=1e-9)
        done += 1


def test_polytope_radii_of_the_optimal_shapes_and_errors():
    W3 = simplex_net(3)[0][0]
    rho, R = polytope_radii(W3, np.zeros(4))
    assert R / rho == pytest.approx(math.sqrt(2), abs=1e-12)
    K = 4.0                                  # the octahedron with another linear unit than cross_net's
    octa_W = np.vstack([2 * np.eye(3), -np.ones((1, 3))]) / (1 + K)
    rho, R = polytope_radii(octa_W, np.array([0, 0, 0, K / (1 + K)]))
    assert (rho, R) == pytest.approx((1 / math.sqrt(3), 1.0), abs=1e-12)
    with pytest.raises(ValueError, match="origin is not strictly inside"):
        polytope_radii(W3, np.array([1.0, 0, 0, 0]))
    with pytest.raises(ValueError, match="do not positively span"):
        polytope_radii(np.array([[1.0, 0], [0, 1], [1, 1]]), np.zeros(3))
    with pytest.raises(ValueError, match="do not positively span"):
        polytope_radii(np.array([[1.0, 0], [-1, 0], [2, 0]]), np.zeros(3))       # rank one
    with pytest.raises(ValueError, match="2 to 4 columns"):
        polytope_radii(np.ones((3, 5)), np.zeros(3))
    with pytest.raises(ValueError, match="at most 10"):
        relu_sum_polytope(np.ones((11, 2)), np.zeros(11))
    with pytest.raises(ValueError, match="b a finite vector of length width"):
        polytope_radii(W3, np.zeros((4, 1)))


@pytest.mark.parametrize("n, target", [(2, 2 / math.sqrt(3)), (3, math.sqrt(2))])
def test_polish_ratio_returns_to_the_expanded_simplex_from_a_nearby_start(n, target):
    rng = np.random.default_rng(n)
    W = simplex_net(n)[0][0] + rng.normal(0, 0.01, (n + 1, n))
    b = rng.normal(0, 0.01, n + 1)
    out = polish_ratio(W, b)
    assert out["start_ratio"] > target + 1e-3
    assert out["ratio"] == pytest.approx(target, abs=1e-9)
    rho, R = polytope_radii(out["W"], out["b"])
    assert R / rho == pytest.approx(out["ratio"], abs=1e-12) and rho == pytest.approx(1.0, abs=1e-9)
    assert 1 <= out["steps"] <= 60


def test_polish_ratio_stops_after_max_steps_and_checks_arguments():
    W = simplex_net(2)[0][0] + 0.05
    out = polish_ratio(W, np.zeros(3), max_steps=1)
    assert out["steps"] == 1 and out["ratio"] <= out["start_ratio"]
    with pytest.raises(ValueError, match="max_steps must be an int >= 1"):
        polish_ratio(W, np.zeros(3), max_steps=0)
    with pytest.raises(ValueError, match="delta .the trust region's half-width. must be a finite number > 0"):
        polish_ratio(W, np.zeros(3), delta=0.0)


# ---------------------------------------------------------------- edge cases that pin details of the algorithms
def _two_diamonds():
    """f = h(x1) - |x2| with h = 1 - |x1| + 2.4 relu(x1 - 2) - 2.8 relu(x1 - 3): positive on two separate
    diamond-like regions, |x1| < 1 and about x1 = 3 (where h peaks at 0.4)."""
    W = np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1], [1, 0], [1, 0]])
    b = np.array([0.0, 0, 0, 0, -2, -3])
    v = np.array([[-1.0, -1, -1, -1, 2.4, -2.8]])
    return [(W, b), (v, np.array([1.0]))]


def test_region_polygon_picks_the_component_about_the_centre():
    p = _two_diamonds()
    A = region_polygon(p)
    np.testing.assert_allclose(sorted(map(tuple, np.round(A, 12))), [(-1, 0), (0, -1), (0, 1), (1, 0)], atol=1e-12)
    B = region_polygon(p, center=[3.0, 0.0])
    assert B[:, 0].min() > 2.5 and B[:, 0].max() < 3.5 and len(B) == 4
    np.testing.assert_allclose(_fv(p, B), 0.0, atol=1e-12)
    # region_radii measures the whole region {f > 0}: its R reaches the far component
    assert region_radii(p)[1] == pytest.approx(np.abs(B[:, 0]).max(), abs=1e-9)


def test_relu_sum_net_copies_b_and_quad_net_default_offset():
    W, b = np.eye(2), np.array([0.1, 0.2])
    p = relu_sum_net(W, b)
    b[0] = 9.0
    assert p[0][1].tolist() == [0.1, 0.2]
    q = quad_net(np.eye(2), (2.0, 2.0), (0.5, 0.5))
    assert q[0][1].tolist() == [0.0, 0.0, 10.0] and q[1][1][0] == pytest.approx(1 - 10 * math.sqrt(0.5))


def test_polygon_radii_with_a_repeated_corner():
    S = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])   # a zero-length edge
    assert polygon_radii(S) == pytest.approx((math.sqrt(0.5), 1.0))


def test_crossing_units_needs_both_strict_signs():
    """A unit whose line only touches the square at a corner (x1 = L) does not cross it."""
    L = 0.8
    (W, b), (v, c) = cross_net(2, L)
    p = [(np.vstack([W, [1.0, 0.0]]), np.append(b, -L)), (np.append(v.ravel(), -1.0)[None, :], c)]
    U = np.vstack([[1.0, 0.0], np.random.default_rng(0).standard_normal((200, 2))])
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    B = U * exit_distances(p, U)[:, None]
    assert np.isclose(B[0], [L, 0.0]).all()
    assert crossing_units(p, B).tolist() == [True, True, False, False]


def test_polish_ratio_at_an_optimum_stops_after_three_failed_steps():
    out = polish_ratio(simplex_net(2)[0][0], np.zeros(3))
    assert out["steps"] == 3 and out["ratio"] == pytest.approx(2 / math.sqrt(3), abs=1e-12)
    assert out["ratio"] == out["start_ratio"]


# ---------------------------------------------------------------- chapter 07's exact guards (issue 33)
# These held whatever a run trained, so they were assertions in the notebooks that could not fail at run
# time; here they test lib.annulus (and the chapter's transcription of Table 4.2) against the thesis.
TABLE_4_1 = {2: (3, 4), 3: (4, 8), 4: (5, 12), 5: (6, 18), 6: (7, 24), 7: (8, 32), 8: (9, 40), 9: (10, 50),
             10: (11, 60)}                              # the thesis' Table 4.1: rho = sqrt(a / b) at R = 1


def _eq_4_11(n):
    """The thesis' Eq. 4.11: the inradius of eS_n at circumradius 1."""
    return math.sqrt(2 * (n + 1) / (n * (n + 2) + 0.5 * (1 - (-1) ** n)))


def _eq_4_12(n):
    """The thesis' Eq. 4.12: R / rho of eS_n."""
    return math.sqrt((n * (n + 2) + 0.5 * (1 - (-1) ** n)) / (2 * (n + 1)))


@pytest.mark.parametrize("n", range(2, 11))
def test_expanded_simplex_facets_give_table_4_1_and_eq_4_11_at_circumradius_one(n):
    """Chapter 07's Table 4.1 (n = 2..10): the vertices lie at distance 1 (so the facet distances are the
    inradius at R = 1), and the nearest facet is Table 4.1's sqrt(a/b) and the thesis' Eq. 4.11."""
    np.testing.assert_allclose(np.linalg.norm(expanded_simplex(n), axis=1), 1.0, rtol=0, atol=1e-12)
    rho = min(expanded_simplex_facets(n).values())
    a, b = TABLE_4_1[n]
    assert rho == pytest.approx(math.sqrt(a / b), abs=1e-12)
    assert rho == pytest.approx(_eq_4_11(n), abs=1e-12)
    assert _eq_4_12(n) == pytest.approx(1 / rho, abs=1e-12)


def _hyperoctahedron_radii(n):
    """(rho, R) of cross_net(n)'s region from its exit distances: R along an axis, rho along a diagonal
    (the nearest facet of |x|_1 < 1 is x . (1, ..., 1) = 1)."""
    D = np.vstack([np.eye(n)[0], np.ones(n)])
    R, rho = exit_distances(cross_net(n, L=1.0), D / np.linalg.norm(D, axis=1, keepdims=True))
    return rho, R


@pytest.mark.parametrize("n", range(2, 11))
def test_rho_of_the_expanded_simplex_over_the_hyperoctahedron_at_equal_circumradius(n):
    """Chapter 07's Eq. 4.13 (reversed by the chapter): at equal R the expanded simplex has the larger
    inradius, rho_eS / rho_ho = sqrt(n) / q_n (Eqs. 4.5 and 4.12) > 1, from lib's two shapes."""
    rho_ho, R_ho = _hyperoctahedron_radii(n)
    assert (rho_ho, R_ho) == pytest.approx((1 / math.sqrt(n), 1.0), abs=1e-12)
    ratio = min(expanded_simplex_facets(n).values()) / rho_ho           # both at R = 1
    assert ratio == pytest.approx(math.sqrt(n) / _eq_4_12(n), abs=1e-12)
    assert ratio > 1.0


def test_rho_ratio_of_the_two_shapes_tends_to_sqrt_2():
    """The closed form checked above against lib for n <= 10, in large n: sqrt(n) / q_n -> sqrt(2) from
    below (the notebook's table reads n = 1000: within 1e-3)."""
    assert abs(math.sqrt(1000) / _eq_4_12(1000) - math.sqrt(2)) < 1e-3
    gaps = [math.sqrt(n) / _eq_4_12(n) - math.sqrt(2) for n in (10, 100, 1000, 10000)]
    assert all(a < b < 0 for a, b in zip(gaps, gaps[1:]))


@pytest.mark.parametrize("n", range(4, 9))
def test_cross_net_classifies_the_higher_dimensional_ball_versus_shell(n):
    """Chapter 07's higher-dimensions section: with r2 = sqrt(n) r1 the hyperoctahedron net
    cross_net(n, sqrt(n) r1) puts every ball point inside and every shell point outside
    (|x|_1 <= sqrt(n) |x|_2 < sqrt(n) r1 in the ball, |x|_1 >= |x|_2 >= r2 in the shell), so each
    threshold of Fig. 4.8 is reachable by a width-(n + 1) net. Sampled as the section samples, plus the
    worst points: the ball's diagonal just inside r1 and the shell's axes just outside r2."""
    r1 = 0.5
    r2 = math.sqrt(n) * r1
    X, y = ball_vs_shell(n, 4000, r1, r2, math.sqrt(2) * r2, np.random.default_rng(n), n_sets=3)
    X, y = X.reshape(-1, n), y.reshape(-1)
    worst_in = np.ones((1, n)) / math.sqrt(n) * r1 * (1 - 1e-9)
    worst_out = np.vstack([np.eye(n), -np.eye(n)]) * r2 * (1 + 1e-9)
    X = np.vstack([X, worst_in, worst_out])
    y = np.concatenate([y, [1.0], -np.ones(2 * n)])
    inside = _fv(cross_net(n, L=math.sqrt(n) * r1), X) > 0
    np.testing.assert_array_equal(inside, y > 0)
    np.testing.assert_array_equal(inside, np.abs(X).sum(1) < math.sqrt(n) * r1)


def _notebook_tables(name="07_circle_vs_annulus.ipynb"):
    """The chapter's transcription of the thesis' Tables 4.2 and 4.3, read from its code cell (ast)."""
    import ast
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parent.parent / "chapters" / name).read_text())
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "TABLE_42 = {" in "".join(cell["source"]):
            for node in ast.parse("".join(cell["source"])).body:
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in ("TABLE_42", "TABLE_43"):
                    found[node.targets[0].id] = ast.literal_eval(node.value)
    return found["TABLE_42"], found["TABLE_43"]


def test_the_chapters_table_4_2_has_its_lowest_bests_at_leak_0_and_batch_1000():
    """§4.2.1: "All individual hyperparameter choices have high performance in at least one full
    hyperparameter selection except for ... a leak value of zero and batch sizes of 1,000": in the
    chapter's transcription of Table 4.2 (36 configurations, keys (loss, leak, batch, normalise)) the
    two factor values whose best configuration is lowest are leak 0 and batch 1000."""
    t42, t43 = _notebook_tables()
    assert len(t42) == 36 and set(t42) == set(itertools.product(("MSE", "BCE"), (0, 0.01, 0.1), (10, 100, 1000),
                                                                (False, True)))
    position = {"loss": 0, "leak": 1, "batch": 2, "norm": 3}
    best = {(f, v): max(s for k, s in t42.items() if k[position[f]] == v) for f, v in t43}
    assert sorted(best, key=best.get)[:2] == [("batch", 1000), ("leak", 0)]
    assert best[("batch", 1000)] == 63 and best[("leak", 0)] == 69           # the thesis' two lowest bests
    assert min(v for k, v in best.items() if k not in (("batch", 1000), ("leak", 0))) == 82
