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
