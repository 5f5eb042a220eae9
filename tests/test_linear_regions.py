"""Unit tests of lib.linear_regions and the float64 path of lib.nets (chapter 08_local_linearity).

Values are checked against independent computations: torch autograd Jacobians, the network's own
forward pass, a fine grid's activation patterns, polygon areas against the box, and small nets whose
regions are worked out by hand.
"""

import itertools

import numpy as np
import pytest
import torch

from lib import linear_regions as LR
from lib.nets import activation_patterns, forward_f64, preactivations_f64


def random_net(widths, seed, bias_std=0.5):
    rng = np.random.default_rng(seed)
    return [(rng.normal(0, np.sqrt(2.0 / a), (b, a)), rng.normal(0, bias_std, b)) for a, b in zip(widths[:-1], widths[1:])]


def autograd_affine(params, X, alpha=0.0):
    """Jacobian and offset at each point by torch autograd (float64), independent of local_affine."""
    P = [(torch.tensor(W), torch.tensor(b)) for W, b in params]

    def f(x):
        for W, b in P[:-1]:
            u = W @ x + b
            x = torch.where(u >= 0, u, alpha * u)
        return P[-1][0] @ x + P[-1][1]

    J = np.stack([torch.autograd.functional.jacobian(f, torch.tensor(x)).numpy() for x in X])
    out = np.stack([f(torch.tensor(x)).detach().numpy() for x in X])
    return J, out - np.einsum("nod,nd->no", J, X)


# ---------------------------------------------------------------------------------------------- nets
def test_forward_f64_by_hand():
    params = [(np.array([[1.0, 0.0], [0.0, -1.0]]), np.array([0.0, 0.5])), (np.array([[1.0, 2.0]]), np.array([-1.0]))]
    X = np.array([[0.3, 0.1], [-0.2, 1.0]])
    # unit 1: relu(x1); unit 2: relu(0.5 - x2); out = u1 + 2 u2 - 1
    np.testing.assert_allclose(forward_f64(params, X), [[0.3 + 0.8 - 1.0], [0.0 + 0.0 - 1.0]])
    np.testing.assert_allclose(forward_f64(params, X, alpha=0.1), [[0.1], [-0.02 - 0.1 - 1.0]])
    pre = preactivations_f64(params, X)
    np.testing.assert_allclose(pre[0], [[0.3, 0.4], [-0.2, -0.5]])
    assert activation_patterns(params, X).tolist() == [[True, True], [False, False]]


def test_float64_path_matches_torch_path():
    from lib.nets import init_mlp, mlp_forward
    tparams = init_mlp([3, 5, 4, 2], seed=0, dtype=torch.float64)
    for W, b in tparams:
        b.add_(0.3)
    X = np.random.default_rng(1).normal(size=(50, 3))
    np.testing.assert_allclose(forward_f64(tparams, X), mlp_forward(tparams, torch.tensor(X)).numpy(), atol=1e-12)


# ------------------------------------------------------------------------------------- local_affine
@pytest.mark.parametrize("widths,alpha", [((2, 5, 1), 0.0), ((3, 6, 4, 2), 0.0), ((4, 7, 5, 3), 0.1), ((1, 8, 8, 1), 0.0)])
def test_local_affine_matches_autograd_and_forward(widths, alpha):
    params = random_net(widths, seed=sum(widths))
    X = np.random.default_rng(0).normal(size=(40, widths[0]))
    A, c = LR.local_affine(params, X, alpha=alpha)
    assert A.shape == (40, widths[-1], widths[0]) and c.shape == (40, widths[-1])
    J, off = autograd_affine(params, X, alpha)
    np.testing.assert_allclose(A, J, atol=1e-12)
    np.testing.assert_allclose(c, off, atol=1e-12)
    np.testing.assert_allclose(np.einsum("nod,nd->no", A, X) + c, forward_f64(params, X, alpha), atol=1e-12)


def test_local_affine_holds_on_the_whole_region():
    params = random_net((2, 6, 6, 1), seed=3)
    X = np.random.default_rng(2).uniform(-1, 1, (200, 2))
    A, c = LR.local_affine(params, X)
    bits = activation_patterns(params, X)
    Y = X + 1e-5 * np.random.default_rng(3).normal(size=X.shape)
    same = (activation_patterns(params, Y) == bits).all(1)
    assert same.sum() > 150
    np.testing.assert_allclose(np.einsum("nod,nd->no", A, Y)[same] + c[same], forward_f64(params, Y[same]), atol=1e-12)


def test_local_affine_xor_net_by_hand():
    # thesis (5.11): v = [1, -2] relu([[1, 1], [1, 1]] x + [1, 0]) - 1
    xor = [(np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([1.0, 0.0])), (np.array([[1.0, -2.0]]), np.array([-1.0]))]
    A, c = LR.local_affine(xor, np.array([[-1.0, 0.5], [1.0, 1.0], [-3.0, 0.0]]))
    np.testing.assert_allclose(A[:, 0], [[1, 1], [-1, -1], [0, 0]])
    np.testing.assert_allclose(c[:, 0], [0, 0, -1])


@pytest.mark.parametrize("X", [np.zeros((3, 3)), np.zeros(2), np.zeros((0, 2)), np.array([[np.nan, 0.0]])])
def test_local_affine_rejects_bad_inputs(X):
    with pytest.raises(ValueError, match="X"):
        LR.local_affine(random_net((2, 3, 1), 0), X)


@pytest.mark.parametrize("params", [[], [(np.zeros((3, 2)), np.zeros(2))], [(np.zeros((3, 2)), np.zeros(3)), (np.zeros((1, 4)), np.zeros(1))],
                                    [(np.zeros(3), np.zeros(3))], "net"])
def test_bad_params_raise(params):
    with pytest.raises(ValueError):
        LR.local_affine(params, np.zeros((1, 2)))
    with pytest.raises(ValueError):
        LR.regions_2d(params, (-1, 1, -1, 1))


# --------------------------------------------------------------------------------------- regions_2d
@pytest.mark.parametrize("widths,box", [((2, 5, 1), (-1, 1, -1, 1)), ((2, 8, 8, 1), (-2, 1, -0.5, 3)),
                                        ((2, 6, 6, 6, 2), (-1.5, 1.5, -1.5, 1.5))])
def test_regions_partition_the_box(widths, box):
    params = random_net(widths, seed=len(widths))
    regs = LR.regions_2d(params, box)
    area = (box[1] - box[0]) * (box[3] - box[2])
    assert abs(sum(r.area for r in regs) - area) < 1e-9
    assert all(r.area > 0 for r in regs)                                        # counter-clockwise
    assert len({r.pattern for r in regs}) == len(regs)                          # one region per pattern
    for r in regs:
        P = r.polygon
        assert P.ndim == 2 and P.shape[1] == 2 and len(P) >= 3
        assert P[:, 0].min() >= box[0] - 1e-12 and P[:, 0].max() <= box[1] + 1e-12
        e = np.roll(P, -1, 0) - P                                               # convex: all turns left
        assert np.all(e[:, 0] * np.roll(e, -1, 0)[:, 1] - e[:, 1] * np.roll(e, -1, 0)[:, 0] > -1e-12)
        x = r.centroid
        assert tuple(activation_patterns(params, x[None])[0]) == r.pattern
        np.testing.assert_allclose(r.A @ x + r.c, forward_f64(params, x[None])[0], atol=1e-12)
        A, c = LR.local_affine(params, x[None])
        np.testing.assert_allclose(A[0], r.A, atol=1e-12)
        np.testing.assert_allclose(r.A @ P.T + r.c[:, None], forward_f64(params, P).T, atol=1e-9)  # closure


@pytest.mark.parametrize("seed", range(4))
def test_grid_patterns_are_a_subset_of_the_exact_regions(seed):
    params = random_net((2, 7, 7, 1), seed=10 + seed)
    box = (-1.3, 1.1, -0.9, 1.2)
    exact = {r.pattern for r in LR.regions_2d(params, box)}
    g = np.stack(np.meshgrid(np.linspace(box[0], box[1], 301)[1:-1], np.linspace(box[2], box[3], 301)[1:-1]), -1)
    seen = {tuple(b) for b in activation_patterns(params, g.reshape(-1, 2))}
    assert seen <= exact
    assert len(seen) >= 0.8 * len(exact)
    assert LR.grid_pattern_count(params, box, 300) <= len(exact)
    assert LR.grid_pattern_count(params, box, 5) < LR.grid_pattern_count(params, box, 300)


def test_one_hidden_layer_in_general_position_gives_the_arrangement_count():
    # three lines through a triangle around the origin: 7 regions (eq. 5.15), all bounded cases inside the box
    ang = np.deg2rad([90.0, 210.0, 330.0])
    W1 = np.stack([np.cos(ang), np.sin(ang)], 1)
    params = [(W1, np.full(3, 0.5)), (np.ones((1, 3)), np.zeros(1))]
    regs = LR.regions_2d(params, (-3, 3, -3, 3))
    assert len(regs) == 7 == LR.arrangement_bound(3, 2)
    # the central triangle (all units active) has area of the triangle with inradius 0.5
    tri = [r for r in regs if all(r.pattern)][0]
    assert len(tri.polygon) == 3 and abs(tri.area - 3 * np.sqrt(3) * 0.25) < 1e-12
    assert sorted(map(LR.pattern_string, (r.pattern for r in regs))) == sorted(
        "".join(map(str, b)) for b in itertools.product((0, 1), repeat=3) if any(b))


def test_xor_net_regions_by_hand():
    xor = [(np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([1.0, 0.0])), (np.array([[1.0, -2.0]]), np.array([-1.0]))]
    regs = {LR.pattern_string(r.pattern): r for r in LR.regions_2d(xor, (-2, 2, -2, 2))}
    assert set(regs) == {"11", "10", "00"}                                     # 01 is empty
    np.testing.assert_allclose(regs["11"].A, [[-1, -1]]); np.testing.assert_allclose(regs["11"].c, [0])
    np.testing.assert_allclose(regs["10"].A, [[1, 1]]); np.testing.assert_allclose(regs["10"].c, [0])
    np.testing.assert_allclose(regs["00"].A, [[0, 0]]); np.testing.assert_allclose(regs["00"].c, [-1])
    # band -1 <= x1 + x2 <= 0 inside the 4x4 box: area 16 - 2 * (3^2 / 2 + ... ) computed by hand
    assert abs(regs["10"].area - (0.5 * 4 ** 2 - 0.5 * 3 ** 2)) < 1e-12
    assert abs(regs["11"].area - 8.0) < 1e-12 and abs(regs["00"].area - 4.5) < 1e-12


def test_equivalence_uses_the_same_regions():
    from lib import equivalence as E
    net = random_net((2, 3, 3, 1), 5)
    a, b = E.linear_regions_2d(net), LR.regions_2d(net, (-1, 1, -1, 1))
    assert [r.pattern for r in a] == [r.pattern for r in b]
    assert all(np.array_equal(r.poly, s.polygon) for r, s in zip(a, b))


@pytest.mark.parametrize("box", [(1, -1, 0, 1), (0, 1), (0, 1, 0, np.inf), "box", (0, 0, 0, 1)])
def test_regions_2d_rejects_bad_boxes(box):
    with pytest.raises(ValueError, match="box"):
        LR.regions_2d(random_net((2, 3, 1), 0), box)


def test_regions_2d_needs_two_inputs():
    with pytest.raises(ValueError, match="2-input"):
        LR.regions_2d(random_net((3, 3, 1), 0), (-1, 1, -1, 1))


# -------------------------------------------------------------------------------- 1-D and the bounds
def test_regions_1d_by_hand_and_against_a_grid():
    # relu(x) - relu(x - 1): breakpoints 0 and 1 -> three pieces with slopes 0, 1, 0
    net = [(np.array([[1.0], [1.0]]), np.array([0.0, -1.0])), (np.array([[1.0, -1.0]]), np.array([0.0]))]
    pieces = LR.regions_1d(net, (-2, 3))
    assert [(p.lo, p.hi) for p in pieces] == [(-2, 0), (0, 1), (1, 3)]
    assert [float(p.A[0, 0]) for p in pieces] == [0.0, 1.0, 0.0]
    deep = random_net((1, 6, 6, 6, 1), 7)
    pieces = LR.regions_1d(deep, (-3, 3))
    assert abs(sum(p.hi - p.lo for p in pieces) - 6) < 1e-12
    x = np.linspace(-3, 3, 200001)[:, None]
    bits = activation_patterns(deep, x)
    changes = int((bits[1:] != bits[:-1]).any(1).sum())
    assert changes + 1 <= len(pieces)
    for p in pieces:
        m = np.array([[0.5 * (p.lo + p.hi)]])
        np.testing.assert_allclose(p.A @ m[0] + p.c, forward_f64(deep, m)[0], atol=1e-12)
    with pytest.raises(ValueError):
        LR.regions_1d(deep, (1, 0))
    with pytest.raises(ValueError, match="1-input"):
        LR.regions_1d(random_net((2, 3, 1), 0), (0, 1))


def test_bounds():
    assert LR.arrangement_bound(3, 2) == 7 == 1 + 3 + 3
    assert LR.arrangement_bound(2, 2) == 4 and LR.arrangement_bound(0, 2) == 1 and LR.arrangement_bound(5, 1) == 6
    assert LR.region_bound((2, 3)) == 7 and LR.region_bound((2, 3, 4)) == 7 * 11
    assert LR.region_bound((1, 10, 10)) == 11 * 11
    with pytest.raises(ValueError):
        LR.arrangement_bound(-1, 2)
    with pytest.raises(ValueError):
        LR.region_bound((2,))
    with pytest.raises(ValueError):
        LR.grid_pattern_count(random_net((2, 3, 1), 0), (-1, 1, -1, 1), 0)


def test_zero_sets_2d_lie_on_the_units_zero_sets():
    params = random_net((2, 5, 4, 1), 11)
    regs = LR.regions_2d(params, (-1, 1, -1, 1))
    first = LR.zero_sets_2d(regs, 1)
    assert len(first) <= 5 and all(len(s) == 3 for s in first)          # one straight segment per unit
    for layer in (1, 2):
        for unit, p, q in LR.zero_sets_2d(regs, layer):
            for t in (0.1, 0.5, 0.9):
                x = (1 - t) * p + t * q
                U = preactivations_f64(params, x[None])[layer - 1][0]
                assert abs(U[unit]) < 1e-9
    # each layer-1 segment spans the box: its end points lie on the boundary
    for _, p, q in first:
        for e in (p, q):
            assert np.isclose(np.abs(e).max(), 1.0)
    with pytest.raises(ValueError):
        LR.zero_sets_2d(regs, 3)


def test_leaky_patterns_match_the_leaky_regions():
    # a leaky slope changes deeper layers' inputs, so patterns must be computed with the same alpha
    params = random_net((2, 6, 6, 6, 1), 21)
    box = (-2, 2, -2, 2)
    regs = LR.regions_2d(params, box, alpha=0.3)
    exact = {r.pattern for r in regs}
    g = np.random.default_rng(0).uniform(-2, 2, (20000, 2))
    assert {tuple(b) for b in activation_patterns(params, g, alpha=0.3)} <= exact
    assert {tuple(b) for b in activation_patterns(params, g)} != {tuple(b) for b in activation_patterns(params, g, alpha=0.3)}
    assert LR.grid_pattern_count(params, box, 200, alpha=0.3) <= len(exact)
    for r in regs:
        x = r.centroid
        assert tuple(activation_patterns(params, x[None], alpha=0.3)[0]) == r.pattern
        np.testing.assert_allclose(r.A @ x + r.c, forward_f64(params, x[None], alpha=0.3)[0], atol=1e-12)


# ------------------------------------------------------------- closed forms and hand-worked small cases
def test_polygon_area_and_centroid_closed_forms():
    tri = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])                    # right triangle, legs 3
    assert LR.polygon_area(tri) == 4.5 and LR.polygon_area(tri[::-1]) == -4.5  # clockwise: negative
    np.testing.assert_allclose(LR.Region(tri, ()).centroid, [1.0, 1.0], atol=1e-15)  # mean of the vertices
    rect = np.array([[1.0, 3.0], [2.0, 3.0], [2.0, 7.0], [1.0, 7.0]])
    r = LR.Region(rect, (True,))
    assert r.area == 4.0
    np.testing.assert_allclose(r.centroid, [1.5, 5.0], atol=1e-15)            # the rectangle's centre
    # an L-shape (non-convex, to pin the shoelace weights): unit squares at (0,0), (1,0), (0,1)
    L = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [1.0, 1.0], [1.0, 2.0], [0.0, 2.0]])
    np.testing.assert_allclose(LR.Region(L, ()).centroid, [5 / 6, 5 / 6], atol=1e-15)
    with pytest.raises(ValueError, match=r"^P must be an array of shape \(n, 2\), got array of shape \(3,\)"):
        LR.polygon_area(np.zeros(3))


def test_pattern_string():
    assert LR.pattern_string((True, False, True)) == "101" and LR.pattern_string(()) == ""


def test_local_affine_takes_the_active_side_on_a_zero_set():
    # XOR net (5.11) at (-1, 0): unit 1 has pre-activation exactly 0 (active side), unit 2 is -1
    xor = [(np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([1.0, 0.0])), (np.array([[1.0, -2.0]]), np.array([-1.0]))]
    A, c = LR.local_affine(xor, np.array([[-1.0, 0.0]]))
    np.testing.assert_array_equal(A[0], [[1.0, 1.0]])   # the inactive side would give [[0, 0]] and c = -1
    np.testing.assert_array_equal(c[0], [0.0])
    # leaky, by hand: relu slope 1 for x >= 0, alpha for x < 0, then 3 * (.) + 2
    net = [(np.array([[1.0]]), np.array([0.0])), (np.array([[3.0]]), np.array([2.0]))]
    A, c = LR.local_affine(net, np.array([[-2.0], [0.0], [5.0]]), alpha=0.25)
    np.testing.assert_array_equal(A[:, 0, 0], [0.75, 3.0, 3.0])
    np.testing.assert_array_equal(c[:, 0], [2.0, 2.0, 2.0])


def test_regions_2d_min_area_and_single_cuts_by_hand():
    # one unit x1 - 0.5 on [-1, 1]^2: the two rectangles, areas 3 and 1, maps 0 and x1 - 0.5 (+1)
    net = [(np.array([[1.0, 0.0]]), np.array([-0.5])), (np.array([[1.0]]), np.array([1.0]))]
    regs = {LR.pattern_string(r.pattern): r for r in LR.regions_2d(net, (-1, 1, -1, 1))}
    assert set(regs) == {"0", "1"}
    assert regs["1"].area == pytest.approx(1.0, abs=1e-14) and regs["0"].area == pytest.approx(3.0, abs=1e-14)
    np.testing.assert_allclose(regs["1"].A, [[1.0, 0.0]]); np.testing.assert_allclose(regs["1"].c, [0.5])
    np.testing.assert_allclose(regs["0"].A, [[0.0, 0.0]]); np.testing.assert_allclose(regs["0"].c, [1.0])
    W_loc, b_loc = regs["1"].pre[0]
    np.testing.assert_allclose(W_loc, [[1.0, 0.0]]); np.testing.assert_allclose(b_loc, [-0.5])
    assert sorted(map(tuple, np.round(regs["1"].polygon, 12))) == [(0.5, -1.0), (0.5, 1.0), (1.0, -1.0), (1.0, 1.0)]
    big = LR.regions_2d(net, (-1, 1, -1, 1), min_area=2.0)                   # the area-1 piece is dropped
    assert [LR.pattern_string(r.pattern) for r in big] == ["0"]
    assert LR.regions_2d(net, (-1, 1, -1, 1), min_area=5.0) == []
    # leaky: the inactive side keeps slope alpha
    leaky = {LR.pattern_string(r.pattern): r for r in LR.regions_2d(net, (-1, 1, -1, 1), alpha=0.2)}
    np.testing.assert_allclose(leaky["0"].A, [[0.2, 0.0]]); np.testing.assert_allclose(leaky["0"].c, [0.9])
    # a line through two corners of the box (x1 = x2) splits it into two triangles of area 2, no slivers
    diag = [(np.array([[1.0, -1.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([0.0]))]
    regs = LR.regions_2d(diag, (-1, 1, -1, 1))
    assert sorted(len(r.polygon) for r in regs) == [3, 3] and all(abs(r.area - 2.0) < 1e-14 for r in regs)
    # a line along the box edge x1 = 1 leaves one region: the whole box, inactive side only
    edge = [(np.array([[1.0, 0.0]]), np.array([-1.0])), (np.array([[1.0]]), np.array([0.0]))]
    regs = LR.regions_2d(edge, (-1, 1, -1, 1))
    assert [LR.pattern_string(r.pattern) for r in regs] == ["0"] and regs[0].area == pytest.approx(4.0)


def test_regions_1d_by_hand_edge_cases():
    # two units with the same breakpoint 0.5 (x - 0.5 and 2x - 1): two pieces, not three
    net = [(np.array([[1.0], [2.0]]), np.array([-0.5, -1.0])), (np.array([[1.0, 1.0]]), np.array([0.0]))]
    pieces = LR.regions_1d(net, (0, 1))
    assert [(p.lo, p.hi, p.pattern) for p in pieces] == [(0, 0.5, (False, False)), (0.5, 1, (True, True))]
    assert [float(p.A[0, 0]) for p in pieces] == [0.0, 3.0] and [float(p.c[0]) for p in pieces] == [0.0, -1.5]
    assert [(p.lo, p.hi) for p in LR.regions_1d(net, (0, 1), min_length=0)] == [(0, 0.5), (0.5, 1)]  # no empty piece
    assert pieces[0].A.shape == (1, 1) and pieces[0].c.shape == (1,)
    # a unit with zero input weight (constant, active) never cuts; a breakpoint within min_length of an end neither
    flat = [(np.array([[0.0], [1.0]]), np.array([1.0, -1e-13])), (np.array([[1.0, 1.0]]), np.array([0.0]))]
    pieces = LR.regions_1d(flat, (0, 1))
    assert [(p.lo, p.hi, p.pattern) for p in pieces] == [(0, 1, (True, True))]
    pieces = LR.regions_1d(flat, (0, 1), min_length=1e-14)                   # now the cut at 1e-13 counts
    assert [(p.lo, p.hi) for p in pieces] == [(0, 1e-13), (1e-13, 1)]
    assert [p.pattern for p in pieces] == [(True, False), (True, True)]
    # the same near the right end: a breakpoint at 1 - 1e-13 is ignored with the default min_length
    right = [(np.array([[1.0]]), np.array([-(1 - 1e-13)])), (np.array([[1.0]]), np.array([0.0]))]
    assert len(LR.regions_1d(right, (0, 1))) == 1 and len(LR.regions_1d(right, (0, 1), min_length=1e-15)) == 2
    # leaky slopes, by hand: relu_alpha(x) on (-1, 2), alpha 0.25 -> slopes 0.25 then 1, offsets 0
    pieces = LR.regions_1d([(np.ones((1, 1)), np.zeros(1)), (np.ones((1, 1)), np.zeros(1))], (-1, 2), alpha=0.25)
    assert [(p.lo, p.hi, float(p.A[0, 0]), float(p.c[0])) for p in pieces] == [(-1, 0, 0.25, 0.0), (0, 2, 1.0, 0.0)]
    with pytest.raises(ValueError, match=r"^regions_1d needs a 1-input network, got 2 inputs$"):
        LR.regions_1d(random_net((2, 3, 1), 0), (0, 1))
    with pytest.raises(ValueError, match="^interval"):
        LR.regions_1d(net, (1, 0))


def test_grid_pattern_count_by_hand():
    # one unit x1 - t on the unit square; a 2 x 2 grid has cell centres x1 = 0.25, 0.75
    def unit(t):
        return [(np.array([[1.0, 0.0]]), np.array([-t])), (np.array([[1.0]]), np.array([0.0]))]
    assert LR.grid_pattern_count(unit(0.3), (0, 1, 0, 1), 2) == 2
    assert LR.grid_pattern_count(unit(0.2), (0, 1, 0, 1), 2) == 1           # both centres right of 0.2
    assert LR.grid_pattern_count(unit(0.8), (0, 1, 0, 1), 2) == 1           # both left of 0.8
    assert LR.grid_pattern_count(unit(0.7), (0, 1, 0, 1), 2) == 2
    assert LR.grid_pattern_count(unit(0.7), (0, 1, 0, 1), 1) == 1           # one centre, 0.5
    assert LR.grid_pattern_count(unit(2.3), (2, 3, 0, 1), 2) == 2           # shifted box: centres 2.25, 2.75
    assert LR.grid_pattern_count(unit(2.2), (2, 3, 0, 1), 2) == 1
    # the same along x2 (the second grid axis), and a box of other height
    def horiz(t):
        return [(np.array([[0.0, 1.0]]), np.array([-t])), (np.array([[1.0]]), np.array([0.0]))]
    assert LR.grid_pattern_count(horiz(2.0), (0, 1, 1, 3), 2) == 2          # centres x2 = 1.5, 2.5
    assert LR.grid_pattern_count(horiz(1.4), (0, 1, 1, 3), 2) == 1
    assert LR.grid_pattern_count(horiz(1.6), (0, 1, 1, 2), 2) == 2          # centres 1.25, 1.75
    assert LR.grid_pattern_count(horiz(1.6), (0, 1, 1.6, 2), 2) == 1        # centres 1.7, 1.9
    # two units, a 3 x 3 grid: x1 >= 0.4 and x2 >= 0.6 on centres 1/6, 1/2, 5/6 -> all four patterns
    two = [(np.eye(2), np.array([-0.4, -0.6])), (np.ones((1, 2)), np.zeros(1))]
    assert LR.grid_pattern_count(two, (0, 1, 0, 1), 3) == 4
    # no hidden layer: one (empty) pattern
    assert LR.grid_pattern_count([(np.ones((1, 2)), np.zeros(1))], (0, 1, 0, 1), 4) == 1
    with pytest.raises(ValueError, match=r"^p must be a positive int, got 0$"):
        LR.grid_pattern_count(unit(0.3), (0, 1, 0, 1), 0)
    with pytest.raises(ValueError, match=r"^p must be a positive int, got True$"):
        LR.grid_pattern_count(unit(0.3), (0, 1, 0, 1), True)
    with pytest.raises(ValueError, match=r"^p must be a positive int, got 2.0$"):
        LR.grid_pattern_count(unit(0.3), (0, 1, 0, 1), 2.0)


def test_convex_hull_and_chord_by_hand():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    pts = np.vstack([square[[2, 0, 3, 1]], [[0.5, 0.5], [0.5, 0.0], [1.0, 0.3], [0.2, 0.7]]])  # interior + edge points
    hull = LR._convex_hull(pts)
    assert hull.tolist() == [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]  # counter-clockwise, no edge points
    assert LR._convex_hull(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]])).tolist() == [[0.0, 0.0], [1.0, 2.0]]
    assert LR._convex_hull(np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])).tolist() == [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    # chords of the unit square
    p, q = LR._chord(square, np.array([1.0, 0.0]), -0.25)                      # x1 = 0.25
    assert sorted([p.tolist(), q.tolist()]) == [[0.25, 0.0], [0.25, 1.0]]
    p, q = LR._chord(square, np.array([1.0, -1.0]), 0.0)                       # the diagonal, through 2 vertices
    assert sorted([p.tolist(), q.tolist()]) == [[0.0, 0.0], [1.0, 1.0]]
    p, q = LR._chord(square, np.array([1.0, 1.0]), -0.5)                       # x1 + x2 = 0.5: cuts two edges
    np.testing.assert_allclose(sorted([p.tolist(), q.tolist()]), [[0.0, 0.5], [0.5, 0.0]])
    assert LR._chord(square, np.array([1.0, 0.0]), -2.0) is None               # misses the square
    assert LR._chord(square, np.array([1.0, 1.0]), 0.0) is None                # touches one corner only
    assert LR._chord(square, np.array([1.0, 1.0]), -1e-13) is None             # a chord shorter than 1e-12


def test_zero_sets_2d_are_complete_on_a_grid():
    """Every sign change of a unit's pre-activation between neighbouring grid points lies next to one of
    that unit's segments (the segments are found, not only correct where found)."""
    params = random_net((2, 4, 3, 1), 12)
    regs = LR.regions_2d(params, (-1, 1, -1, 1))
    g = np.linspace(-1, 1, 81)
    G = np.stack(np.meshgrid(g, g), -1)                                         # (81, 81, 2), [iy, ix]
    h = g[1] - g[0]
    for layer in (1, 2):
        segs = LR.zero_sets_2d(regs, layer)
        U = preactivations_f64(params, G.reshape(-1, 2))[layer - 1].reshape(81, 81, -1)
        for unit in range(U.shape[2]):
            mine = [(p, q) for i, p, q in segs if i == unit]
            s = U[:, :, unit] >= 0
            mids = np.vstack([((G[:, 1:] + G[:, :-1]) / 2)[s[:, 1:] != s[:, :-1]],
                              ((G[1:] + G[:-1]) / 2)[s[1:] != s[:-1]]])
            assert len(mids) == 0 or mine
            for m in mids:
                dist = min(np.linalg.norm(m - (p + np.clip((m - p) @ (q - p) / ((q - p) @ (q - p)), 0, 1) * (q - p)))
                           for p, q in mine)
                assert dist <= h, (layer, unit, m, dist)
    assert len(LR.zero_sets_2d(regs, 1)) == sum(
        np.ptp(np.sign(preactivations_f64(params, np.array([[-1, -1], [1, -1], [1, 1], [-1, 1.0]]))[0][:, i])) > 0
        for i in range(4))                                                      # layer 1: a segment iff the line meets the box


def test_linear_regions_error_messages():
    net = random_net((2, 3, 1), 0)
    with pytest.raises(ValueError, match=r"^box must be \(xmin, xmax, ymin, ymax\), got \(0, 1\)$"):
        LR.regions_2d(net, (0, 1))
    with pytest.raises(ValueError, match=r"^box must be finite with xmin < xmax and ymin < ymax, got \(1, 0, 0, 1\)$"):
        LR.regions_2d(net, (1, 0, 0, 1))
    with pytest.raises(ValueError, match=r"^box must be finite with xmin < xmax and ymin < ymax, got \(0, 1, 1, 1\)$"):
        LR.regions_2d(net, (0, 1, 1, 1))
    with pytest.raises(ValueError, match=r"^box must be finite"):
        LR.regions_2d(net, (0, np.nan, 0, 1))
    with pytest.raises(ValueError, match=r"^regions_2d needs a 2-input network, got 3 inputs$"):
        LR.regions_2d(random_net((3, 3, 1), 0), (0, 1, 0, 1))
    for bad, why in ((-1.0, "a finite number >= 0, got -1.0"), ("0", "a real number, got str '0'"), (np.inf, "a finite")):
        with pytest.raises(ValueError, match=rf"^min_area must be {why}"):
            LR.regions_2d(net, (0, 1, 0, 1), min_area=bad)
    with pytest.raises(ValueError, match=r"^min_length must be a finite number >= 0, got -1.0"):
        LR.regions_1d(random_net((1, 3, 1), 0), (0, 1), min_length=-1.0)
    assert len(LR.regions_2d(net, (0, 1, 0, 1), min_area=0)) >= 1                # 0 (an int) is allowed
    for k, n, name in ((-1, 2, "k"), (2, -1, "n"), (True, 2, "k"), (2, 1.0, "n")):
        with pytest.raises(ValueError, match=rf"^{name} must be a non-negative int, got"):
            LR.arrangement_bound(k, n)
    assert LR.arrangement_bound(np.int64(4), np.int64(1)) == 5 and LR.arrangement_bound(3, 0) == 1
    assert LR.arrangement_bound(2, 5) == 4                                    # C(2, i) = 0 for i > 2
    with pytest.raises(ValueError, match=r"^widths\[1\] must be"):
        LR.region_bound((2, 0))
    with pytest.raises(ValueError, match=r"^widths must list the input dimension and at least one hidden width, got \[2\]$"):
        LR.region_bound((2,))
    regs = LR.regions_2d(random_net((2, 3, 2, 1), 1), (-1, 1, -1, 1))
    for layer in (0, 3, 1.0):
        with pytest.raises(ValueError, match=rf"^layer must be an int in \[1, 2\], got {layer}$"):
            LR.zero_sets_2d(regs, layer)
    for bad in ([], [1, 2], regs + ["x"]):
        with pytest.raises(ValueError, match=r"^regions must be a non-empty list of regions_2d's Region objects$"):
            LR.zero_sets_2d(bad, 1)


# ------------------------------------------------------------------- boundary segments (decision boundary)
def test_boundary_segments_lie_on_the_zero_set_inside_their_regions():
    params = random_net((2, 6, 5, 1), seed=41)
    regs = LR.regions_2d(params, (-2, 2, -2, 2))
    segs = LR.boundary_segments_2d(regs)
    assert segs
    for i, p, q in segs:
        for t in (0.0, 0.3, 1.0):
            x = p + t * (q - p)
            assert abs(forward_f64(params, x[None])[0, 0]) <= 1e-9          # on the zero set
            assert (activation_patterns(params, (x + 1e-9 * (regs[i].centroid - x))[None])[0] == regs[i].pattern).all()
    # independent: the regions whose vertices take both signs are exactly the ones with a segment
    crossing = {i for i, r in enumerate(regs)
                if (r.polygon @ r.A[0] + r.c[0]).min() < -1e-9 and (r.polygon @ r.A[0] + r.c[0]).max() > 1e-9}
    assert {i for i, _, _ in segs} == crossing


def test_boundary_of_a_hand_built_hexagon_net():
    # three lines through the corners of a triangle around 0; the output bends at each: six segments
    ang = np.array([0.0, 2 * np.pi / 3, 4 * np.pi / 3])
    W1, b1 = np.stack([np.cos(ang), np.sin(ang)], 1), np.full(3, -0.5)
    params = [(W1, b1), (np.full((1, 3), -1.0), np.array([0.6]))]
    regs = LR.regions_2d(params, (-3, 3, -3, 3))
    segs = LR.boundary_segments_2d(regs)
    assert len(regs) == 7 and len(segs) == 6
    ends = np.array([p for _, p, q in segs] + [q for _, p, q in segs])
    assert np.allclose(np.linalg.norm(ends, axis=1).std(), 0, atol=0.2)   # the vertices lie near one circle
    # a constant output (zero gradient) has no boundary segment, and output 1 of a 2-output net is read
    two = [(W1, b1), (np.vstack([np.full((1, 3), -1.0), np.zeros((1, 3))]), np.array([0.6, 1.0]))]
    assert LR.boundary_segments_2d(LR.regions_2d(two, (-3, 3, -3, 3)), output=1) == []
    assert len(LR.boundary_segments_2d(LR.regions_2d(two, (-3, 3, -3, 3)), output=0)) == 6


def test_boundary_segments_bad_input():
    regs = LR.regions_2d(random_net((2, 3, 1), 0), (-1, 1, -1, 1))
    with pytest.raises(ValueError, match="^regions must be a non-empty list of regions_2d's Region objects$"):
        LR.boundary_segments_2d([])
    with pytest.raises(ValueError, match=r"^output must be an int in \[0, 1\), got 1$"):
        LR.boundary_segments_2d(regs, 1)
    with pytest.raises(ValueError, match=r"^output must be an int in \[0, 1\), got True$"):
        LR.boundary_segments_2d(regs, True)


# ---------------------------------------------------------------- PyTorch's default initialisation
def test_torch_default_params_are_uniform_with_the_fan_in_bound():
    net = LR.torch_default_params((400, 300, 2), seed=5)
    assert [(W.shape, b.shape) for W, b in net] == [((300, 400), (300,)), ((2, 300), (2,))]
    for (W, b), fan_in in zip(net, (400, 300)):
        bound = 1 / np.sqrt(fan_in)
        assert np.abs(W).max() <= bound and np.abs(b).max() <= bound
    W = net[0][0]
    assert W.std() == pytest.approx(1 / np.sqrt(400) / np.sqrt(3), rel=0.02)   # uniform(-a, a) has std a / sqrt(3)
    assert abs(W.mean()) < 1e-3
    # independent draw: the same generator, W then b, layer by layer
    rng = np.random.default_rng(5)
    np.testing.assert_array_equal(net[0][0], rng.uniform(-1 / 20, 1 / 20, (300, 400)))
    np.testing.assert_array_equal(net[0][1], rng.uniform(-1 / 20, 1 / 20, 300))
    assert not np.array_equal(LR.torch_default_params((3, 4, 1), 1)[0][0], LR.torch_default_params((3, 4, 1), 2)[0][0])


def test_torch_default_batched_starts_from_those_params_and_trains_them_apart():
    from lib.train import mse_per_model, train_full_batch
    seeds = [3, 8, 11]
    model = LR.torch_default_batched((2, 5, 4, 1), seeds, leak=0.1)
    nets = LR.batched_params(model)
    X = np.random.default_rng(0).normal(size=(30, 2))
    for net, s in zip(nets, seeds):
        ref = LR.torch_default_params((2, 5, 4, 1), s)
        for (W, b), (Wr, br) in zip(net, ref):
            np.testing.assert_allclose(W, Wr, atol=1e-7)    # the float32 copy
            np.testing.assert_allclose(b, br, atol=1e-7)
    out = model(torch.tensor(X, dtype=torch.float32)).detach().double().numpy()
    for m, net in enumerate(nets):
        np.testing.assert_allclose(out[m], forward_f64(net, X, alpha=0.1), atol=1e-5)   # leaky slope 0.1 used
    assert np.abs(out[0] - forward_f64(nets[0], X)).max() > 1e-4                          # ...not plain ReLU
    relu = LR.torch_default_batched((2, 5, 1), [1])
    np.testing.assert_allclose(relu(torch.tensor(X, dtype=torch.float32)).detach().double().numpy()[0],
                               forward_f64(LR.batched_params(relu)[0], X), atol=1e-5)
    # trained as one batch, a net ends where it ends when trained alone
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(np.sin(X[:, :1]), dtype=torch.float32)
    both = LR.torch_default_batched((2, 5, 1), [1, 2])
    alone = LR.torch_default_batched((2, 5, 1), [2])
    train_full_batch(both, Xt, yt, mse_per_model, 50, 0.05, progress=False)
    train_full_batch(alone, Xt, yt, mse_per_model, 50, 0.05, progress=False)
    for (W, b), (Wa, ba) in zip(LR.batched_params(both)[1], LR.batched_params(alone)[0]):
        np.testing.assert_allclose(W, Wa, atol=1e-6)


def test_torch_default_bad_input():
    with pytest.raises(ValueError, match="^widths must list at least an input and an output width"):
        LR.torch_default_params([3], 0)
    with pytest.raises(ValueError, match=r"widths\[1\]"):
        LR.torch_default_params([3, 0, 1], 0)
    with pytest.raises(ValueError, match="seed"):
        LR.torch_default_params([3, 2, 1], -1)
    with pytest.raises(ValueError, match="seeds"):
        LR.torch_default_batched([3, 2, 1], [])
    with pytest.raises(ValueError, match="leak"):
        LR.torch_default_batched([3, 2, 1], [0], leak=1.5)
    with pytest.raises(ValueError, match="model"):
        LR.batched_params("not a model")


def test_pattern_string_and_zero_sets_refuse_what_is_not_a_bit_or_a_layer():
    assert LR.pattern_string([True, False]) == LR.pattern_string(np.array([1, 0])) == "10"
    for bad in ([2, 0], [0.5], [-1]):
        with pytest.raises(ValueError, match=r"^pattern must hold activation bits"):
            LR.pattern_string(bad)
    regs = LR.regions_2d(random_net((2, 3, 2, 1), 1), (-1, 1, -1, 1))
    assert len(LR.zero_sets_2d(regs, np.int64(1))) == len(LR.zero_sets_2d(regs, 1)) > 0
    for bad in (True, False, 1.0, 3):
        with pytest.raises(ValueError, match=r"^layer must be an int in \[1, 2\]"):
            LR.zero_sets_2d(regs, bad)


# ------------------------------------------------------------------- boundary crossings (which lines bend the boundary)
def _crossings(regs, layer=1):
    return sorted((u, tuple(np.round(x, 9)), t) for u, x, t in LR.boundary_crossings_2d(regs, layer))


def test_boundary_crossings_of_hand_built_nets():
    # v = relu(x1) + relu(x2) - 1: the boundary is x1 = 1 (x2 < 0), x1 + x2 = 1 (both > 0), x2 = 1 (x1 < 0);
    # it crosses unit 1's line x2 = 0 at (1, 0) and unit 0's line x1 = 0 at (0, 1), turning by 45 degrees at each
    eye = (np.eye(2), np.zeros(2))
    regs = LR.regions_2d([eye, (np.ones((1, 2)), np.array([-1.0]))], (-2, 2, -2, 2))
    got = _crossings(regs)
    assert [(u, x) for u, x, _ in got] == [(0, (0.0, 1.0)), (1, (1.0, 0.0))]
    assert np.allclose([t for _, _, t in got], np.pi / 4, atol=1e-12)
    # leaky slope 0.5: across x2 = 0 the gradient goes from (1, 1) to (1, 0.5)
    regs = LR.regions_2d([eye, (np.ones((1, 2)), np.array([-1.0]))], (-2, 2, -2, 2), alpha=0.5)
    want = np.arccos(1.5 / (np.sqrt(2) * np.sqrt(1.25)))
    got = LR.boundary_crossings_2d(regs)
    assert len(got) == 2 and all(abs(t - want) <= 1e-12 for _, _, t in got)
    # a second layer: u = relu(h1 - 0.5) (zero set x1 = 0.5 where x1 > 0), v = u + h2 - 1. The boundary is
    # x1 + x2 = 1.5 for x1 > 0.5, x2 > 0 and x2 = 1 for x1 < 0.5: it turns by 45 degrees on u's zero set at (0.5, 1),
    # by 45 degrees on x2 = 0 at (1.5, 0), and crosses x1 = 0 at (0, 1) without turning
    # (layer 2's unit 1, relu(h2 + 5), is active on the whole box and carries h2 to the output)
    deep = [eye, (np.eye(2), np.array([-0.5, 5.0])), (np.ones((1, 2)), np.array([-6.0]))]
    regs = LR.regions_2d(deep, (-2, 2, -2, 2))
    first, second = _crossings(regs, 1), _crossings(regs, 2)
    assert [(u, x) for u, x, _ in first] == [(0, (0.0, 1.0)), (1, (1.5, 0.0))]
    assert abs(first[0][2]) <= 1e-12 and abs(first[1][2] - np.pi / 4) <= 1e-12
    assert [(u, x) for u, x, _ in second] == [(0, (0.5, 1.0))] and abs(second[0][2] - np.pi / 4) <= 1e-12


def test_boundary_crossings_match_the_bends_of_the_boundary():
    # independent: every end of a boundary segment inside the box is a bend point; the pre-activation of the
    # reported unit vanishes there (by the forward pass), the turn equals the angle between the boundary's
    # directions on the two sides (from the segments themselves), and each crossing inside the box is found once
    params = random_net((2, 5, 4, 1), seed=7)
    params[-1] = (params[-1][0], params[-1][1] - forward_f64(params, np.zeros((1, 2)))[0])   # boundary through 0
    box = (-2, 2, -2, 2)
    regs = LR.regions_2d(params, box)
    segs = LR.boundary_segments_2d(regs)
    inner = [x for _, p, q in segs for x in (p, q) if np.all(np.abs(x) < 2 - 1e-9)]
    assert len(inner) >= 4
    found = LR.boundary_crossings_2d(regs, 1) + [(-1 - u, x, t) for u, x, t in LR.boundary_crossings_2d(regs, 2)]
    assert len(found) == len(inner) // 2                    # each inner bend is the end of two segments
    pre = preactivations_f64(params, np.array([x for _, x, _ in found]))
    for k, (u, x, t) in enumerate(found):
        value = pre[0][k, u] if u >= 0 else pre[1][k, -1 - u]
        assert abs(value) <= 1e-9
        ends = [(p, q) for _, p, q in segs if min(np.linalg.norm(p - x), np.linalg.norm(q - x)) <= 1e-9]
        assert len(ends) == 2
        d = [q - p for p, q in ends]
        ang = np.arccos(np.clip(abs(d[0] @ d[1]) / (np.linalg.norm(d[0]) * np.linalg.norm(d[1])), -1, 1))
        assert abs(min(t, np.pi - t) - ang) <= 1e-7


def test_boundary_crossings_bad_input():
    regs = LR.regions_2d(random_net((2, 3, 2, 1), 0), (-1, 1, -1, 1))
    with pytest.raises(ValueError, match="^regions must be a non-empty list of regions_2d's Region objects$"):
        LR.boundary_crossings_2d([1])
    with pytest.raises(ValueError, match=r"^layer must be an int in \[1, 2\], got 3$"):
        LR.boundary_crossings_2d(regs, 3)
    with pytest.raises(ValueError, match=r"^output must be an int in \[0, 1\), got 1$"):
        LR.boundary_crossings_2d(regs, 1, 1)
    with pytest.raises(ValueError, match=r"^tol must be"):
        LR.boundary_crossings_2d(regs, 1, 0, -1.0)


# ---------------------------------------------------------------------------------------------------------------
# The shared data and nets of chapter 08 (eq. 5.11, §4.2.1's circle versus annulus)

def test_xor_net_is_eq_5_11():
    """(5.11) as the closed form v = ReLU(s + 1) - 2 ReLU(s) - 1, s = x1 + x2, on random points and the
    corners; (5.13): A x + b = [0.5, -0.5] at x = (-1, 0.5)."""
    net = LR.xor_net()
    X = np.random.default_rng(0).uniform(-3, 3, (500, 2))
    s = X.sum(1)
    by_hand = np.maximum(s + 1, 0) - 2 * np.maximum(s, 0) - 1
    assert np.array_equal(forward_f64(net, X)[:, 0], by_hand)
    corners = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    assert forward_f64(net, corners)[:, 0].tolist() == [-1.0, 0.0, 0.0, -2.0]
    assert preactivations_f64(net, np.array([[-1.0, 0.5]]))[0][0].tolist() == [0.5, -0.5]
    assert [W.shape for W, _ in net] == [(2, 2), (1, 2)] and all(W.dtype == np.float64 for W, _ in net)


def test_xor_net_is_fresh_on_every_call():
    a = LR.xor_net()
    a[-1][1][0] += 0.5
    a[-1] = (a[-1][0], a[-1][1] + 1)
    assert LR.xor_net()[-1][1].tolist() == [-1.0]


def test_circle_annulus_against_its_draws():
    """The same points as drawing the radii (uniform in area) and directions by hand from the same generator,
    in ball_vs_shell's order, then dividing each coordinate by its standard deviation."""
    n, s = 10, 123
    X, y = LR.circle_annulus(n, s)
    rng = np.random.default_rng(s)
    parts = []
    for lo, hi in ((0.0, 0.5), (0.5 * np.sqrt(2), 1.0)):
        r = np.sqrt(rng.uniform(lo ** 2, hi ** 2, size=(n // 2, 1)))
        u = rng.standard_normal((n // 2, 1, 2))
        parts.append((u / np.linalg.norm(u, axis=2, keepdims=True) * r[..., None])[:, 0])
    raw = np.concatenate(parts)
    assert np.allclose(X, raw / raw.std(0), rtol=0, atol=1e-12)
    assert y.tolist() == [1.0] * 5 + [-1.0] * 5


def test_circle_annulus_geometry():
    X, y = LR.circle_annulus(2000, 4)
    assert X.shape == (2000, 2) and y.shape == (2000,)
    assert np.allclose(X.std(0), 1.0)
    # the disc's points are inside every annulus point, whatever the normalisation (the two scales differ little)
    assert np.linalg.norm(X[y > 0], axis=1).max() < np.linalg.norm(X[y < 0], axis=1).min()
    assert (y == 1).sum() == 1000 and set(np.unique(y)) == {-1.0, 1.0}
    assert np.array_equal(LR.circle_annulus(2000, 4)[0], X)


def test_circle_annulus_bad_input():
    with pytest.raises(ValueError, match="^n must be"):
        LR.circle_annulus(1, 0)
    with pytest.raises(TypeError, match="^n must be"):
        LR.circle_annulus(10.5, 0)
    with pytest.raises(ValueError, match="^seed must be"):
        LR.circle_annulus(10, -1)
