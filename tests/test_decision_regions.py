"""Tests of lib.decision_regions (chapter 10, part D; thesis Ch. 5): values against hand-worked cases,
brute force (a flood fill, a reference SGD loop) and the thesis' closed forms."""

import math

import numpy as np
import pytest
import torch

from lib import decision_regions as DR
from lib.nets import forward_f64


def leaky(t, a):
    return t if t >= 0 else a * t


# ---------------------------------------------------------------------------------------------
# Theorem 5.2.3's conditions

@pytest.mark.parametrize("widths, expected", [
    ([2, 2, 2], True), ([2, 1, 5], True), ([3, 3, 2, 1, 7], True), ([2, 2], True),
    ([2, 3, 2], False), ([2, 1, 2, 2], False), ([4, 2, 3, 1], False)])
def test_is_pyramidal(widths, expected):
    assert DR.is_pyramidal(widths) is expected


def test_is_pyramidal_rejects_bad_widths():
    with pytest.raises(ValueError, match="widths"):
        DR.is_pyramidal([2])
    with pytest.raises(ValueError, match=r"widths\[i\]"):
        DR.is_pyramidal([2, 0, 1])


def test_theorem_conditions_of_the_examples():
    """Each necessity example breaks exactly one assumption (§5.3.1-5.3.4)."""
    want = {"(5.3)": (False, True, True), "(5.4)": (True, True, False), "(5.5)": (True, False, True),
            "width 3": (False, True, True)}
    for ex in (DR.example_53(), DR.example_54(), DR.example_55(), DR.width3_disconnected()):
        c = DR.theorem_523_conditions(ex.params, ex.alpha)
        key = next(k for k in want if ex.name.startswith(k))
        assert (c["pyramidal"], c["bijective"], c["full_rank"]) == want[key], ex.name
        assert c["holds"] is False


def test_theorem_conditions_hold_for_a_full_rank_leaky_pyramid():
    rng = np.random.default_rng(0)
    net = [(rng.standard_normal((2, 2)), rng.standard_normal(2)), (rng.standard_normal((3, 2)), np.zeros(3))]
    assert DR.theorem_523_conditions(net, 0.1) == {"pyramidal": True, "bijective": True, "full_rank": True,
                                                   "holds": True}
    # a rank-1 hidden layer (parallel rows) breaks full rank; the output layer's rank does not count
    low = [(np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros(2)), (np.zeros((3, 2)), np.zeros(3))]
    c = DR.theorem_523_conditions(low, 0.1)
    assert (c["full_rank"], c["holds"]) == (False, False)
    net_zero_out = [net[0], (np.zeros((3, 2)), np.zeros(3))]
    assert DR.theorem_523_conditions(net_zero_out, 0.1)["holds"] is True
    # a 3-row hidden layer of rank 2 = min(3, 2) is full rank
    wide = [(rng.standard_normal((3, 2)), np.zeros(3)), (rng.standard_normal((2, 3)), np.zeros(2))]
    c = DR.theorem_523_conditions(wide, 0.1)
    assert (c["pyramidal"], c["full_rank"], c["holds"]) == (False, True, False)


def test_theorem_conditions_errors():
    with pytest.raises(ValueError, match="alpha"):
        DR.theorem_523_conditions(DR.example_53().params, 1.5)
    with pytest.raises(ValueError, match="params"):
        DR.theorem_523_conditions("net", 0.1)


# ---------------------------------------------------------------------------------------------
# the examples: network values by hand, and the closed forms

def test_example_53_by_hand():
    ex = DR.example_53()
    assert ex.alpha == 0.5 and ex.target == 0
    # x = (1, 2): t = 3, h1 = 3, h2 = (3, -1.5), f = (2*3 + 3*(-1.5), 3 + 2*(-1.5) + 1) = (1.5, 1)
    # x = (-3, -2): t = -5, h1 = -2.5, h2 = (-1.25, 2.5), f = (-2.5 + 7.5, -1.25 + 5 + 1) = (5, 4.75)
    # x = (0, 0): f = (0, 1)
    X = np.array([[1.0, 2.0], [-3.0, -2.0], [0.0, 0.0]])
    np.testing.assert_allclose(forward_f64(ex.params, X, ex.alpha), [[1.5, 1.0], [5.0, 4.75], [0.0, 1.0]])
    assert list(ex.closed_form(X)) == [True, True, False]
    # the boundaries t = 2 and t = -4 are excluded
    assert list(ex.closed_form(np.array([[1.0, 1.0], [-2.0, -2.0], [1.0, 1.01], [-2.0, -2.01]]))) == \
        [False, False, True, True]


def test_example_54_by_hand():
    for alpha in (0.1, 0.3):
        ex = DR.example_54(alpha)
        assert ex.alpha == alpha
        for x1 in (-3.0, -0.5, 0.0, 0.7, 1.5, 2.0):
            f = forward_f64(ex.params, np.array([[x1, 5.0]]), alpha)[0]
            blue = leaky(x1 - 1, alpha) + leaky(-x1 - 1, alpha)
            np.testing.assert_allclose(f, [blue, -2 * alpha], atol=1e-15)
        assert list(ex.closed_form(np.array([[1.5, 0.0], [-1.5, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.2, 3.0]]))) == \
            [True, True, False, False, False]
    with pytest.raises(ValueError, match="alpha"):
        DR.example_54(0.0)
    with pytest.raises(ValueError, match="alpha"):
        DR.example_54(1.0)


def test_example_55_by_hand():
    ex = DR.example_55()
    assert ex.alpha == 0.0
    r = math.sqrt(2.0)
    for x in ([0.5, 0.4], [-1.0, 5.0], [2.0, -3.0], [0.9, 0.9], [-1.0, 3.7]):
        h = np.maximum(x, 0.0)
        u = np.array([h[0] + h[1] + r - 1, -h[0] + h[1] - 3]) / r
        g = np.maximum(u, 0.0)
        np.testing.assert_allclose(forward_f64(ex.params, np.array([x]))[0], [1 - g[0], -3 * g[1]], atol=1e-14)
    X = np.array([[0.5, 0.4], [-1.0, 5.0], [0.9, 0.9], [-1.0, 3.7], [0.0, 5.0], [1.0, 0.0], [-2.0, 4.0]])
    assert list(ex.closed_form(X)) == [True, True, False, False, True, False, False]


def test_width3_by_hand():
    ex = DR.width3_disconnected(0.2)
    assert [W.shape for W, _ in ex.params] == [(3, 2), (2, 3)]
    assert np.linalg.matrix_rank(ex.params[0][0]) == 2
    for x in ([1.5, -2.0], [0.3, 7.0], [-4.0, 1.0]):
        f = forward_f64(ex.params, np.array([x]), 0.2)[0]
        np.testing.assert_allclose(f, [leaky(x[0] - 1, 0.2) + leaky(-x[0] - 1, 0.2), -0.4], atol=1e-15)
    with pytest.raises(ValueError, match="alpha"):
        DR.width3_disconnected(-0.1)


@pytest.mark.parametrize("make", [DR.example_53, DR.example_54, DR.example_55, DR.width3_disconnected])
def test_closed_forms_agree_with_the_networks(make):
    ex = make()
    X = np.random.default_rng(1).uniform(-8, 8, size=(5000, 2))
    assert DR.agreement(ex, X) == 1.0
    # a wrong closed form is caught
    wrong = DR.Example(ex.name, ex.params, ex.alpha, ex.target, lambda Z: ~ex.closed_form(Z))
    assert DR.agreement(wrong, X) == 0.0
    other = DR.Example(ex.name, ex.params, ex.alpha, 1, ex.closed_form)
    assert DR.agreement(other, X) < 1.0


def test_agreement_errors():
    with pytest.raises(ValueError, match="example"):
        DR.agreement("ex", np.zeros((3, 2)))
    with pytest.raises(ValueError, match="X"):
        DR.agreement(DR.example_53(), np.zeros((3, 3)))


# ---------------------------------------------------------------------------------------------
# regions and components

def test_region_masks_strict_and_ties():
    # three constant outputs via zero weights: biases decide
    net = [(np.zeros((2, 2)), np.zeros(2)), (np.zeros((3, 2)), np.array([1.0, 1.0, 0.5]))]
    X = np.zeros((4, 2))
    assert not DR.region_masks(net, X, 0.1).any()  # outputs 0 and 1 tie: no region holds the points
    net = [(np.zeros((2, 2)), np.zeros(2)), (np.zeros((3, 2)), np.array([0.2, 1.0, 0.5]))]
    assert DR.region_masks(net, X, 0.1).tolist() == [[False, True, False]] * 4
    # tol: a lead of 0.5 is enough at tol 0.4, not at 0.5
    assert DR.region_masks(net, X, 0.1, tol=0.4)[:, 1].all()
    assert not DR.region_masks(net, X, 0.1, tol=0.5).any()
    # the default margin is tiny: a lead of 1e-6 counts
    net = [(np.zeros((2, 2)), np.zeros(2)), (np.zeros((2, 2)), np.array([0.0, 1e-6]))]
    assert DR.region_masks(net, X, 0.1).tolist() == [[False, True]] * 4


def test_region_masks_of_a_linear_classifier():
    # one hidden identity layer of positive inputs: f = (x1, x2); C_0 = {x1 > x2}
    net = [(np.eye(2), np.full(2, 10.0)), (np.eye(2), np.zeros(2))]
    X = np.random.default_rng(2).uniform(-5, 5, (300, 2))
    M = DR.region_masks(net, X, 0.0)
    assert (M[:, 0] == (X[:, 0] > X[:, 1])).all() and (M[:, 1] == (X[:, 1] > X[:, 0])).all()


def test_region_masks_errors():
    single = [(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    with pytest.raises(ValueError, match="params: a classifier needs at least 2 outputs, got 1"):
        DR.region_masks(single, np.zeros((2, 2)), 0.1)
    with pytest.raises(ValueError, match="tol"):
        DR.region_masks(DR.example_53().params, np.zeros((2, 2)), 0.5, tol=-1.0)


def test_grid_points_order_and_edges():
    xs, ys, X = DR.grid_points((0.0, 2.0, -1.0, 1.0), 3)
    assert xs.tolist() == [0.0, 1.0, 2.0] and ys.tolist() == [-1.0, 0.0, 1.0]
    assert X.tolist() == [[0, -1], [1, -1], [2, -1], [0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]]
    with pytest.raises(ValueError, match="res"):
        DR.grid_points((0, 1, 0, 1), 2)
    with pytest.raises(ValueError, match="box"):
        DR.grid_points((1, 0, 0, 1), 5)


def test_region_grid_layout():
    # C_0 = {x1 > x2} on the grid of (0, 2) x (0, 1), res 3: [j, i, k] is the point (xs[k], ys[i])
    net = [(np.eye(2), np.full(2, 10.0)), (np.eye(2), np.zeros(2))]
    G = DR.region_grid(net, (0.0, 2.0, 0.0, 1.0), 3, 0.0)
    xs, ys = np.linspace(0, 2, 3), np.linspace(0, 1, 3)
    assert G.shape == (2, 3, 3)
    assert (G[0] == (xs[None, :] > ys[:, None])).all() and (G[1] == (ys[:, None] > xs[None, :])).all()


def flood_components(mask, connectivity):
    """Brute force: a breadth-first flood fill; returns (n_total, n_edge_free) where an edge-free piece
    must also hold a whole 2 x 2 cell of its own pixels."""
    h, w = mask.shape
    seen = np.zeros_like(mask)
    steps = [(1, 0), (-1, 0), (0, 1), (0, -1)]
    if connectivity == 8:
        steps += [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    total = edge_free = 0
    for i in range(h):
        for j in range(w):
            if mask[i, j] and not seen[i, j]:
                total += 1
                queue, seen[i, j], edge, pixels = [(i, j)], True, False, set()
                while queue:
                    a, b = queue.pop()
                    pixels.add((a, b))
                    edge |= a in (0, h - 1) or b in (0, w - 1)
                    for da, db in steps:
                        p, q = a + da, b + db
                        if 0 <= p < h and 0 <= q < w and mask[p, q] and not seen[p, q]:
                            seen[p, q] = True
                            queue.append((p, q))
                whole = any({(a + 1, b), (a, b + 1), (a + 1, b + 1)} <= pixels for a, b in pixels)
                edge_free += (not edge) and whole
    return total, edge_free


def test_components_by_hand():
    m = np.zeros((7, 7), bool)
    m[2:5, 2:5] = True      # an interior square
    m[0, :] = True          # the top edge
    m[6, 6] = True          # a corner pixel
    m[5, 0] = True          # an edge pixel
    m[1, 5] = True          # joins the top row
    n, free, labels = DR.components(m, 4)
    assert (n, free) == (4, 1)
    assert labels.shape == m.shape and labels[3, 3] > 0 and labels[3, 3] != labels[0, 0]
    # a diagonal chain: three pieces in 4-connectivity, one in 8; none holds a whole cell
    d = np.zeros((5, 5), bool)
    d[1, 1] = d[2, 2] = d[3, 1] = True
    assert DR.components(d, 4)[:2] == (3, 0)
    assert DR.components(d, 8)[:2] == (1, 0)
    d[1:3, 1:3] = True      # now a whole cell
    assert DR.components(d, 4)[:2] == (1, 1)
    assert DR.components(d)[:2] == (1, 1)  # 8 is the default
    d[2, 3] = False
    d[3, 3] = True          # joins only diagonally: a second piece in 4, without a cell
    assert DR.components(d, 4)[:2] == (2, 1) and DR.components(d, 8)[:2] == (1, 1)
    # the last row and column count as edge
    e = np.zeros((6, 7), bool)
    e[4:6, 2:4] = e[2:4, 5:7] = e[1:3, 1:3] = True
    assert DR.components(e, 4)[:2] == (3, 1)
    # a line of pixels, however long, holds no cell; a 2 x 2 block does
    line = np.zeros((5, 9), bool)
    line[2, 1:8] = True
    assert DR.components(line)[:2] == (1, 0)
    line[3, 4:6] = True
    assert DR.components(line)[:2] == (1, 1)
    assert DR.components(np.zeros((4, 4), bool))[:2] == (0, 0)


@pytest.mark.parametrize("connectivity", [4, 8])
def test_components_against_a_flood_fill(connectivity):
    rng = np.random.default_rng(3)
    for _ in range(30):
        m = rng.random((rng.integers(3, 15), rng.integers(3, 15))) < rng.uniform(0.2, 0.8)
        assert DR.components(m, connectivity)[:2] == flood_components(m, connectivity)


def test_components_errors():
    with pytest.raises(ValueError, match="mask must be a boolean array"):
        DR.components(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="mask"):
        DR.components(np.zeros(3, bool))
    with pytest.raises(ValueError, match="connectivity"):
        DR.components(np.zeros((3, 3), bool), 6)
    with pytest.raises(ValueError, match="connectivity"):
        DR.component_counts(DR.example_53().params, (-1, 1, -1, 1), 5, 0.5, connectivity=2)


def test_component_counts_of_the_examples():
    box = (-8, 8, -8, 8)
    for make in (DR.example_53, DR.example_55, DR.width3_disconnected, DR.example_54):
        ex = make()
        counts = DR.component_counts(ex.params, box, 161, ex.alpha)
        assert counts[ex.target] == (2, 0), ex.name   # two unbounded pieces, both touch the window's edge
    # inside |x1| <= 0.9 the blue region of the width-3 net is empty; red: one piece
    ex = DR.width3_disconnected()
    assert DR.component_counts(ex.params, (-0.9, 0.9, -3, 3), 41, ex.alpha) == [(0, 0), (0, 0)]
    # a bounded blue island: one hidden layer of 4 units, blue = -(sum of |x_i| - 1)
    island = [(np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1]]), np.zeros(4)),
              (np.array([[-1.0, -1, -1, -1], [0, 0, 0, 0]]), np.array([1.0, 0.0]))]
    assert DR.component_counts(island, (-3, 3, -3, 3), 61, 0.0) == [(1, 1), (1, 0)]
    assert DR.component_counts(island, (-0.5, 0.5, -3, 3), 61, 0.0) == [(1, 0), (2, 0)]


def test_bend_points_lie_on_the_boundary():
    rng = np.random.default_rng(4)
    for alpha in (0.1, 0.5):
        for _ in range(10):
            net = [(rng.standard_normal((2, 2)), rng.standard_normal(2)),
                   (rng.standard_normal((2, 2)), rng.standard_normal(2))]
            P = DR.bend_points(net, alpha)
            F = forward_f64(net, P, alpha)
            np.testing.assert_allclose(F[:, 0] - F[:, 1], 0.0, atol=1e-9)
            U = P @ net[0][0].T + net[0][1]
            assert abs(U[0, 0]) < 1e-9 and abs(U[1, 1]) < 1e-9
            lo0, hi0, lo1, hi1 = DR.bend_window(net, alpha, margin=0.5)
            assert hi0 - lo0 == pytest.approx(hi1 - lo1)
            assert (P[:, 0] >= lo0 + 0.5 - 1e-12).all() and (P[:, 0] <= hi0 - 0.5 + 1e-12).all()
            assert (P[:, 1] >= lo1 + 0.5 - 1e-12).all() and (P[:, 1] <= hi1 - 0.5 + 1e-12).all()
            # the window is as tight as the margin allows along one axis
            assert min(P[:, 0].min() - lo0, P[:, 1].min() - lo1) == pytest.approx(0.5)


def test_bend_points_by_hand():
    # W1 = I, b1 = 0, a = (1, 2), c = -1: u = (0, 0.5) and (1, 0)
    net = [(np.eye(2), np.zeros(2)), (np.array([[1.0, 2.0], [0.0, 0.0]]), np.array([-1.0, 0.0]))]
    np.testing.assert_allclose(DR.bend_points(net, 0.1), [[0.0, 0.5], [1.0, 0.0]])
    # c = +1: s^-1(-1/2) = -5 and s^-1(-1) = -10 at alpha 0.1
    net = [(np.eye(2), np.zeros(2)), (np.array([[1.0, 2.0], [0.0, 0.0]]), np.array([1.0, 0.0]))]
    np.testing.assert_allclose(DR.bend_points(net, 0.1), [[0.0, -5.0], [-10.0, 0.0]])
    assert DR.bend_window(net, 0.1, margin=1.0) == pytest.approx((-11.0, 1.0, -8.5, 3.5))
    assert DR.bend_window(net, 0.1) == pytest.approx((-11.0, 1.0, -8.5, 3.5))  # margin 1 by default
    # a shifted, sheared W1: x = W1^-1 (u - b1)
    W1, b1 = np.array([[2.0, 1.0], [0.0, 1.0]]), np.array([1.0, -1.0])
    net = [(W1, b1), (np.array([[1.0, 2.0], [0.0, 0.0]]), np.array([-1.0, 0.0]))]
    want = np.linalg.solve(W1, (np.array([[0.0, 0.5], [1.0, 0.0]]) - b1).T).T
    np.testing.assert_allclose(DR.bend_points(net, 0.1), want)


def test_connected_in_the_bend_window():
    rng = np.random.default_rng(5)
    for _ in range(10):
        W1 = np.linalg.qr(rng.standard_normal((2, 2)))[0] * rng.uniform(0.5, 2)
        net = [(W1, rng.standard_normal(2)), (rng.standard_normal((2, 2)), rng.standard_normal(2))]
        counts = DR.component_counts(net, DR.bend_window(net, 0.1), 81, 0.1)
        assert [c[0] for c in counts] == [1, 1]


def test_bend_points_errors():
    good = [(np.eye(2), np.zeros(2)), (np.array([[1.0, 2.0], [0.0, 0.0]]), np.zeros(2))]
    with pytest.raises(ValueError, match="alpha .* must be > 0"):
        DR.bend_points(good, 0.0)
    with pytest.raises(ValueError, match="2-2-2 network"):
        DR.bend_points(DR.example_55().params, 0.1)
    with pytest.raises(ValueError, match="2-2-2 network"):
        DR.bend_points([(np.eye(2), np.zeros(2)), (np.ones((3, 2)), np.zeros(3))], 0.1)
    with pytest.raises(ValueError, match="W_1 must be invertible"):
        DR.bend_points([(np.ones((2, 2)), np.zeros(2)), good[1]], 0.1)
    for a in ([[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]]):
        with pytest.raises(ValueError, match="both hidden units"):
            DR.bend_points([(np.eye(2), np.zeros(2)), (np.array(a), np.zeros(2))], 0.1)
    with pytest.raises(ValueError, match="margin"):
        DR.bend_window(good, 0.1, margin=0.0)


# ---------------------------------------------------------------------------------------------
# data and training

def test_islands_and_xor_margin():
    X, y = DR.islands(500, seed=1)
    assert X.shape == (500, 2) and y.dtype == np.int64 and np.abs(X).max() <= 4
    d = np.minimum(np.linalg.norm(X - [2, 0], axis=1), np.linalg.norm(X + [2, 0], axis=1))
    assert (y == (d < 1.2)).all() and 0 < y.sum() < 500
    assert np.abs(X).max() > 3.9 and X.min() < -3.9  # it fills the box
    X2, y2 = DR.islands(500, seed=1)
    assert (X2 == X).all() and (y2 == y).all()
    assert not np.array_equal(DR.islands(500, seed=2)[0], X)
    Z, t = DR.xor_margin(700, seed=3)
    assert Z.shape == (700, 2) and t.dtype == np.int64
    assert (np.minimum(np.abs(Z[:, 0]), np.abs(Z[:, 1])) > 0.5).all() and np.abs(Z).max() <= 4
    assert (t == (Z[:, 0] * Z[:, 1] > 0)).all() and 250 < t.sum() < 450
    assert np.array_equal(DR.xor_margin(700, seed=3)[0], Z)
    assert DR.xor_margin(1)[0].shape == (1, 2) and DR.islands(1)[0].shape == (1, 2)
    for fn in (DR.islands, DR.xor_margin):
        with pytest.raises(ValueError, match="n"):
            fn(0)
        with pytest.raises(ValueError, match="seed"):
            fn(5, seed=-1)


def test_bands54():
    X, y = DR.bands54(401, seed=2)
    assert X.shape == (401, 2) and y.dtype == np.int64 and (y == 1).sum() == 200
    blue, red = X[y == 1], X[y == 0]
    assert ((np.abs(blue[:, 0]) >= 1) & (np.abs(blue[:, 0]) <= 2)).all() and (np.abs(red[:, 0]) <= 1).all()
    assert (np.abs(X[:, 1]) <= 0.5).all() and X[:, 1].min() < -0.45 and X[:, 1].max() > 0.45
    assert 60 < (blue[:, 0] > 0).sum() < 140 and red[:, 0].min() < -0.9 and red[:, 0].max() > 0.9
    assert 0 < y[:200].sum() < 200  # shuffled
    assert DR.bands54(3)[1].sum() == 1
    assert np.array_equal(DR.bands54(401, seed=2)[0], X)
    assert DR.bands54(2)[1].tolist() in ([0, 1], [1, 0])
    with pytest.raises(ValueError, match="n"):
        DR.bands54(1)
    with pytest.raises(ValueError, match="seed"):
        DR.bands54(5, seed=1.5)
    # the example's own network labels this data: blue region = {|x1| > 1} holds every blue point
    ex = DR.example_54()
    assert DR.region_masks(ex.params, blue, ex.alpha)[:, 0].all()


def reference_sgd(X, y, hidden, seed, alpha, epochs, lr, momentum, batch_size, halve_every, order_seed):
    """A plain loop: the same init, SGD with momentum (torch's update rule) and the halving schedule."""
    from lib.nets import init_mlp
    net = init_mlp([X.shape[1], *hidden, int(y.max()) + 1], seed, dtype=torch.float64)
    params = [p.clone().requires_grad_(True) for W, b in net for p in (W, b)]
    bufs = [torch.zeros_like(p) for p in params]
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    gen = torch.Generator().manual_seed(order_seed)
    for epoch in range(epochs):
        rate = lr * 0.5 ** (epoch // halve_every)
        order = torch.randperm(len(X), generator=gen)
        for i in range(0, len(X), batch_size):
            idx = order[i:i + batch_size]
            h = Xt[idx]
            for l in range(0, len(params) - 2, 2):
                h = torch.nn.functional.leaky_relu(h @ params[l].T + params[l + 1], alpha)
            out = h @ params[-2].T + params[-1]
            loss = torch.nn.functional.cross_entropy(out, yt[idx])
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g, buf in zip(params, grads, bufs):
                    buf.mul_(momentum).add_(g)
                    p.sub_(rate * buf)
    return [(params[l].detach().numpy(), params[l + 1].detach().numpy()) for l in range(0, len(params), 2)]


def test_train_nets_matches_a_reference_loop():
    X, y = DR.islands(60, seed=0)
    Xb, yb = np.stack([X, X]), np.stack([y, y])
    nets, errors = DR.train_nets(Xb, yb, [(3,), (5,)], [7, 8], alpha=0.2, epochs=5, lr=0.05, momentum=0.8,
                                 batch_size=16, halve_every=2)
    for net, h, s, e in zip(nets, [(3,), (5,)], [7, 8], errors):
        ref = reference_sgd(X, y, h, s, 0.2, 5, 0.05, 0.8, 16, 2, order_seed=7)
        assert [W.shape for W, _ in net] == [W.shape for W, _ in ref]
        for (W, b), (Wr, br) in zip(net, ref):
            np.testing.assert_allclose(W, Wr, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(b, br, rtol=1e-10, atol=1e-12)
        pred = forward_f64(net, X, 0.2).argmax(1)
        assert e == int((pred != y).sum())
    assert errors.dtype == np.int64


def test_train_nets_default_recipe_and_per_model_data():
    """Defaults: alpha 0.1, lr 0.1, momentum 0.9, batch 100, halving every 50 epochs; each model its data."""
    X1, y1 = DR.islands(120, seed=1)
    X2, y2 = DR.xor_margin(120, seed=2)
    nets, errors = DR.train_nets(np.stack([X1, X2]), np.stack([y1, y2]), [(2, 2), (4, 3)], [3, 4], epochs=3)
    for net, X, y, h, s, e in zip(nets, (X1, X2), (y1, y2), [(2, 2), (4, 3)], [3, 4], errors):
        ref = reference_sgd(X, y, h, s, 0.1, 3, 0.1, 0.9, 100, 50, order_seed=3)
        for (W, b), (Wr, br) in zip(net, ref):
            np.testing.assert_allclose(W, Wr, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(b, br, rtol=1e-10, atol=1e-12)
        assert e == int((forward_f64(net, X, 0.1).argmax(1) != y).sum())
    # the schedule halves after 50 epochs: 52 epochs match the reference only with it
    nets, _ = DR.train_nets(X1[None], y1[None], [(3,)], [0], epochs=52, batch_size=120)
    ref = reference_sgd(X1, y1, (3,), 0, 0.1, 52, 0.1, 0.9, 120, 50, order_seed=0)
    np.testing.assert_allclose(nets[0][0][0], ref[0][0], rtol=1e-8, atol=1e-10)


def test_train_nets_learns_islands_with_width_8():
    X, y = DR.islands(400, seed=0)
    nets, errors = DR.train_nets(np.stack([X] * 2), np.stack([y] * 2), [(2,), (8,)], [0, 0], epochs=150)
    assert errors[1] < errors[0]
    counts = DR.component_counts(nets[0], (-8, 8, -8, 8), 101, 0.1)
    assert all(free == 0 for _, free in counts)  # Thm 5.2.3 for the width-2 net


def test_train_nets_errors():
    X, y = DR.islands(20)
    Xb, yb = X[None], y[None]
    with pytest.raises(ValueError, match="X"):
        DR.train_nets(X, yb, [(2,)], [0])
    with pytest.raises(ValueError, match="y"):
        DR.train_nets(Xb, y, [(2,)], [0])
    with pytest.raises(ValueError, match="y must hold class indices"):
        DR.train_nets(Xb, np.zeros_like(yb), [(2,)], [0])
    with pytest.raises(ValueError, match="y must hold class indices"):
        DR.train_nets(Xb, yb - 1, [(2,)], [0])
    with pytest.raises(ValueError, match="y must hold class indices 0..K-1, each of them at least once"):
        DR.train_nets(Xb, yb * 2, [(2,)], [0])  # classes 0 and 2, no 1
    with pytest.raises(ValueError, match="hidden must give one tuple"):
        DR.train_nets(np.stack([X, X]), np.stack([y, y]), [(2,), (2, 2)], [0, 1])
    with pytest.raises(ValueError, match="hidden"):
        DR.train_nets(Xb, yb, [(2,), (3,)], [0])
    with pytest.raises(ValueError, match="hidden"):
        DR.train_nets(Xb, yb, [], [0])
    with pytest.raises(ValueError, match=r"hidden\[i\]\[l\]"):
        DR.train_nets(Xb, yb, [(0,)], [0])
    with pytest.raises(ValueError, match="seeds must give one seed per model"):
        DR.train_nets(Xb, yb, [(2,)], [0, 1])
    with pytest.raises(ValueError, match=r"seeds\[i\]"):
        DR.train_nets(Xb, yb, [(2,)], [-1])
    for kw, name in [({"alpha": 1.0}, "alpha"), ({"epochs": 0}, "epochs"), ({"lr": 0.0}, "lr"),
                     ({"momentum": 1.0}, "momentum"), ({"batch_size": 0}, "batch_size"),
                     ({"halve_every": 0}, "halve_every")]:
        with pytest.raises(ValueError, match=name):
            DR.train_nets(Xb, yb, [(2,)], [0], **kw)


def test_train_nets_stops_on_divergence():
    from lib.validate import TrainingDivergedError
    X, y = DR.islands(50)
    with pytest.raises(TrainingDivergedError, match="epoch"):
        DR.train_nets(X[None] * 1e150, y[None], [(3,)], [0], epochs=2, lr=1e10)


# ---------------------------------------------------------------------------------------------
# messages word for word (the start of each), defaults and plumbing

X1 = np.zeros((1, 4, 2))
Y1 = np.array([[0, 1, 0, 1]])


@pytest.mark.parametrize("call, start", [
    (lambda: DR.is_pyramidal([2]), r"widths must be"),
    (lambda: DR.is_pyramidal([2, 0, 1]), r"widths\[i\] must be an int >= 1"),
    (lambda: DR.theorem_523_conditions(DR.example_53().params, 1.5), r"alpha \(leaky-ReLU slope\) must be"),
    (lambda: DR.example_54(0.0), r"alpha \(leaky-ReLU slope\) must be a finite number > 0 and < 1, got 0\.0"),
    (lambda: DR.example_54(1.0), r"alpha \(leaky-ReLU slope\) must be a finite number > 0 and < 1, got 1\.0"),
    (lambda: DR.width3_disconnected(1.0), r"alpha \(leaky-ReLU slope\) must be a finite number > 0 and < 1"),
    (lambda: DR.width3_disconnected(0.0), r"alpha \(leaky-ReLU slope\) must be a finite number > 0 and < 1"),
    (lambda: DR.region_masks(DR.example_53().params, np.zeros((2, 2)), 0.5, tol=-1.0), r"tol must be a finite number >= 0"),
    (lambda: DR.region_masks([(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))], np.zeros((2, 2)), 0.1),
     r"params: a classifier needs at least 2 outputs, got 1$"),
    (lambda: DR.grid_points((0, 1, 0, 1), 2), r"res \(grid points per axis\) must be an int >= 3, got 2"),
    (lambda: DR.components(np.zeros((3, 3))), r"mask must be a boolean array, got dtype float64$"),
    (lambda: DR.components(np.zeros(3, bool)), r"mask must be an array with 2 dimensions"),
    (lambda: DR.components(np.zeros((3, 3), bool), 6), r"connectivity must be one of \(4, 8\), got 6"),
    (lambda: DR.component_counts(DR.example_53().params, (-1, 1, -1, 1), 5, 0.5, connectivity=2), r"connectivity must be one of"),
    (lambda: DR.agreement("ex", np.zeros((3, 2))), r"example must be"),
    (lambda: DR.agreement(DR.example_53(), np.zeros((3, 3))), r"X must be"),
    (lambda: DR.bend_points([(np.eye(2), np.zeros(2)), (np.eye(2), np.ones(2))], 0.0),
     r"alpha \(leaky-ReLU slope\) must be > 0: the bend points need the inverse activation$"),
    (lambda: DR.bend_points(DR.example_55().params, 0.1),
     r"params must be a 2-2-2 network \(one hidden layer of width 2\), got shapes \[\(2, 2\), \(2, 2\), \(2, 2\)\]$"),
    (lambda: DR.bend_points([(np.ones((2, 2)), np.zeros(2)), (np.eye(2), np.zeros(2))], 0.1),
     r"params: W_1 must be invertible and both hidden units must reach the boundary \(a = W_2\[0\] - W_2\[1\] = "),
    (lambda: DR.bend_window([(np.eye(2), np.zeros(2)), (np.array([[1.0, 2.0], [0.0, 0.0]]), np.zeros(2))], 0.1, margin=0),
     r"margin must be a finite number > 0"),
    (lambda: DR.islands(0), r"n must be an int >= 1, got 0"),
    (lambda: DR.xor_margin(0), r"n must be an int >= 1, got 0"),
    (lambda: DR.bands54(1), r"n must be an int >= 2, got 1"),
    (lambda: DR.islands(3, seed=-1), r"seed must be"),
    (lambda: DR.xor_margin(3, seed=-1), r"seed must be"),
    (lambda: DR.bands54(3, seed=-1), r"seed must be"),
    (lambda: DR.train_nets(np.zeros((4, 2)), Y1, [(2,)], [0]), r"X must be"),
    (lambda: DR.train_nets(X1, Y1[0], [(2,)], [0]), r"y must be"),
    (lambda: DR.train_nets(X1, Y1 * 2, [(2,)], [0]),
     r"y must hold class indices 0\.\.K-1, each of them at least once, K >= 2; got 2 distinct values from 0 to 2$"),
    (lambda: DR.train_nets(X1, Y1, [(2, 1)], [0, 1]), r"seeds must give one seed per model \(1\), got 2$"),
    (lambda: DR.train_nets(np.zeros((2, 4, 2)), np.stack([Y1[0]] * 2), [(2,), (2, 2)], [0, 1]),
     r"hidden must give one tuple of hidden widths per model, all of one depth \(2 models\), got \[\(2,\), \(2, 2\)\]$"),
    (lambda: DR.train_nets(X1, Y1, [(2,), (2,)], [0]), r"hidden must give one tuple of hidden widths per model"),
    (lambda: DR.train_nets(X1, Y1, [], [0]), r"hidden must"),
    (lambda: DR.train_nets(X1, Y1, [()], [0]), r"hidden\[i\] must"),
    (lambda: DR.train_nets(X1, Y1, [(0,)], [0]), r"hidden\[i\]\[l\] must be an int >= 1"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], [-1]), r"seeds\[i\] must be"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], 5), r"seeds must be"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], [0], alpha=1.0), r"alpha \(leaky-ReLU slope\) must be"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], [0], epochs=0), r"epochs must be an int >= 1"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], [0], batch_size=0), r"batch_size must be an int >= 1"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], [0], lr=0.0), r"lr \(the learning rate\) must be a finite number > 0"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], [0], momentum=1.0), r"momentum must be"),
    (lambda: DR.train_nets(X1, Y1, [(2,)], [0], halve_every=0), r"halve_every must be an int >= 1"),
])
def test_error_messages_word_for_word(call, start):
    with pytest.raises(ValueError, match="^" + start):
        call()


def test_alpha_defaults_of_the_examples():
    assert DR.example_54().alpha == 0.1 and DR.width3_disconnected().alpha == 0.1
    assert DR.example_54().params[1][1][1] == pytest.approx(-0.2)
    assert DR.width3_disconnected(0.4).params[1][1].tolist() == pytest.approx([0.0, -0.8])
    assert DR.example_53().name.startswith("(5.3)") and DR.example_55().target == 0


def test_edge_free_needs_a_cell_away_from_every_edge():
    for corner in [(slice(0, 2), slice(3, 5)), (slice(6, 8), slice(3, 5)), (slice(3, 5), slice(0, 2)),
                   (slice(3, 5), slice(6, 8))]:
        m = np.zeros((8, 8), bool)
        m[corner] = True            # a 2 x 2 block on one edge: top, bottom, left, right
        assert DR.components(m, 4)[:2] == (1, 0), corner
        assert DR.components(m, 8)[:2] == (1, 0), corner
    m = np.zeros((8, 8), bool)
    m[1:3, 1:3] = True
    assert DR.components(m)[:2] == (1, 1)


def test_component_counts_passes_connectivity_and_tol(monkeypatch):
    seen = []
    real = DR.components

    def spy(mask, connectivity=8):
        seen.append(connectivity)
        return real(mask, connectivity)

    monkeypatch.setattr(DR, "components", spy)
    ex = DR.example_53()
    DR.component_counts(ex.params, (-3, 3, -3, 3), 9, ex.alpha, connectivity=4)
    DR.component_counts(ex.params, (-3, 3, -3, 3), 9, ex.alpha)
    assert seen == [4, 4, 8, 8]
    # tol reaches region_masks: at tol 1e6 no point is in any region
    assert DR.component_counts(ex.params, (-3, 3, -3, 3), 9, ex.alpha, tol=1e6) == [(0, 0), (0, 0)]
    G = DR.region_grid(ex.params, (-3, 3, -3, 3), 9, ex.alpha, tol=1e6)
    assert not G.any()


def test_region_masks_default_tol_is_tiny_but_positive():
    # outputs tie up to 1e-12: the default margin 1e-9 excludes the point, a zero margin does not
    net = [(np.zeros((2, 2)), np.zeros(2)), (np.zeros((2, 2)), np.array([0.0, 1e-12]))]
    X = np.zeros((1, 2))
    assert not DR.region_masks(net, X, 0.1).any()
    assert DR.region_masks(net, X, 0.1, tol=0.0).tolist() == [[False, True]]


def test_xor_margin_draws_in_batches_of_2n():
    """The sampler's protocol: batches of 2n uniform draws, the accepted ones in order, the first n kept."""
    n, seed = 50, 7
    rng = np.random.default_rng(seed)
    acc = np.empty((0, 2))
    while len(acc) < n:
        Z = rng.uniform(-4.0, 4.0, size=(2 * n, 2))
        acc = np.vstack([acc, Z[np.minimum(np.abs(Z[:, 0]), np.abs(Z[:, 1])) > 0.5]])
    X, _ = DR.xor_margin(n, seed)
    np.testing.assert_array_equal(X, acc[:n])
    Xi, _ = DR.islands(n, seed)
    np.testing.assert_array_equal(Xi, np.random.default_rng(seed).uniform(-4.0, 4.0, size=(n, 2)))


def test_bands54_draw_protocol():
    """Blue magnitudes, then their signs, then red x_1, then all x_2, then one shuffle (one generator)."""
    n, seed = 11, 3
    rng = np.random.default_rng(seed)
    mag, sign = rng.uniform(1.0, 2.0, 5), rng.choice([-1.0, 1.0], 5)
    red = rng.uniform(-1.0, 1.0, 6)
    x2 = rng.uniform(-0.5, 0.5, 11)
    order = rng.permutation(11)
    X = np.column_stack([np.concatenate([mag * sign, red]), x2])[order]
    y = np.array([1] * 5 + [0] * 6)[order]
    Xb, yb = DR.bands54(n, seed)
    np.testing.assert_array_equal(Xb, X)
    np.testing.assert_array_equal(yb, y)


def test_sampler_default_seeds_are_zero():
    for fn in (DR.islands, DR.xor_margin, DR.bands54):
        a, b = fn(20), fn(20, 0)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_example_names_and_width3_weights_exactly():
    names = [e.name for e in (DR.example_53(), DR.example_54(), DR.example_55(), DR.width3_disconnected())]
    assert names == ["(5.3) non-pyramidal 2-1-2-2", "(5.4) rank-1 W_1", "(5.5) pyramidal ReLU", "width 3 = d + 1, full rank"]
    (W1, b1), (W2, b2) = DR.width3_disconnected(0.25).params
    assert W1.tolist() == [[1, 0], [-1, 0], [0, 1]] and b1.tolist() == [-1, -1, 0]  # the spec's D2 weights
    assert W2.tolist() == [[1, 1, 0], [0, 0, 0]] and b2.tolist() == [0, -0.5]


def test_closed_form_55_excludes_its_boundaries():
    """On each boundary line the outputs tie: neither the closed form nor the (open) region holds the point."""
    ex = DR.example_55()
    on = np.array([[1.0, -5.0], [-5.0, 1.0], [0.5, 0.5], [1.0, 6.0]])
    assert not ex.closed_form(on).any()
    assert not DR.region_masks(ex.params, on, 0.0)[:, 0].any()
    inside = np.array([[0.999, -5.0], [-5.0, 0.999], [0.499, 0.5], [0.999, 6.0]])
    assert ex.closed_form(inside).all() and DR.region_masks(ex.params, inside, 0.0)[:, 0].all()


def test_train_nets_default_epochs_and_empty_hidden_message():
    X, y = DR.islands(20, seed=4)
    y[:2] = [0, 1]
    a, ea = DR.train_nets(X[None], y[None], [(2,)], [1], batch_size=20)
    b, eb = DR.train_nets(X[None], y[None], [(2,)], [1], batch_size=20, epochs=300)
    assert all(np.array_equal(W, V_) for (W, _), (V_, _) in zip(a[0], b[0])) and ea.tolist() == eb.tolist()
    with pytest.raises(ValueError, match=r"^hidden must be a sequence of at least 1 item\(s\), got list \[\]$"):
        DR.train_nets(X1, Y1, [], [0])


# ---------------------------------------------------------------------------------------------
# exact decision regions (issue 34: connectivity from the linear regions, not a grid)

def _v_net(alpha=0.1):
    """Blue output s(x_1) + s(-x_1) = (1 - alpha) |x_1|, red 0: blue is {x_1 != 0}, two half-planes that touch
    along x_1 = 0 where the outputs tie."""
    return [(np.array([[1.0, 0.0], [-1.0, 0.0]]), np.zeros(2)), (np.array([[1.0, 1.0], [0.0, 0.0]]), np.zeros(2))]


def _diamond_net(alpha=0.1):
    """Blue 1 - (|x_1| + |x_2|) (built from four leaky units), red 0: blue is the open diamond |x_1| + |x_2| < 1."""
    W1 = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    return [(W1, np.zeros(4)), (np.array([[-1.0, -1.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]]) / (1 - alpha), np.array([1.0, 0.0]))]


@pytest.mark.parametrize("make, expected", [(DR.example_53, (2, 0)), (lambda: DR.example_54(0.1), (2, 0)),
                                            (DR.example_55, (2, 0)), (lambda: DR.width3_disconnected(0.1), (2, 0))])
def test_exact_region_of_the_examples(make, expected):
    ex = make()
    r = DR.exact_region(ex.params, (-8, 8, -8, 8), ex.alpha, ex.target)
    assert (r.n_components, r.edge_free) == expected and len(r.labels) == len(r.pieces)


def test_exact_region_needs_the_margin_at_the_shared_edge():
    # the two blue half-planes share the edge x_1 = 0, on which the outputs tie: two components, not one
    r = DR.exact_region(_v_net(), (-2, 3, -1, 1), 0.1, 0)
    assert r.n_components == 2 and r.edge_free == 0 and len(r.pieces) == 2 and r.links == []
    red = DR.exact_region(_v_net(), (-2, 3, -1, 1), 0.1, 1)
    assert red.n_components == 0 and red.pieces == []


def test_exact_region_bounded_component_is_edge_free():
    r = DR.exact_region(_diamond_net(), (-2, 2, -2, 2), 0.1, 0)
    assert (r.n_components, r.edge_free) == (1, 1) and len(r.pieces) == 4 and len(r.links) >= 3
    assert sum(abs(DR.polygon_area(P)) for P in r.pieces) == pytest.approx(2.0)  # the diamond's area
    inner = DR.exact_region(_diamond_net(), (-0.3, 0.3, -0.3, 0.3), 0.1, 0)
    assert (inner.n_components, inner.edge_free) == (1, 0)
    assert DR.exact_counts(_diamond_net(), (-2, 2, -2, 2), 0.1) == [(1, 1), (1, 0)]  # blue bounded, red around it


def test_exact_region_pieces_are_the_region_at_random_points():
    rng = np.random.default_rng(3)
    for trial in range(5):
        net = [(rng.standard_normal((3, 2)), rng.standard_normal(3)), (rng.standard_normal((2, 3)), rng.standard_normal(2)),
               (rng.standard_normal((3, 2)), rng.standard_normal(3))]
        X = rng.uniform(-3, 3, (400, 2))
        masks = DR.region_masks(net, X, 0.2)
        for cls in range(3):
            r = DR.exact_region(net, (-3, 3, -3, 3), 0.2, cls)
            inside = np.zeros(len(X), bool)
            for P in r.pieces:  # convex, counter-clockwise: inside iff left of every edge
                E = np.roll(P, -1, axis=0) - P
                cross = E[:, 0][None, :] * (X[:, 1][:, None] - P[:, 1][None, :]) - E[:, 1][None, :] * (X[:, 0][:, None] - P[:, 0][None, :])
                inside |= np.all(cross >= -1e-12, axis=1)
            assert np.array_equal(inside, masks[:, cls]), (trial, cls)


def test_exact_and_grid_components_agree_on_a_coarse_net():
    net = [(np.array([[1.0, 0.3], [-0.2, 1.0]]), np.array([0.5, -0.3])), (np.array([[1.0, -1.0], [-0.5, 0.8]]), np.array([0.2, 0.0]))]
    exact = DR.exact_counts(net, (-4, 4, -4, 4), 0.1)
    grid = DR.component_counts(net, (-4, 4, -4, 4), 401, 0.1)
    assert exact == grid


def test_exact_region_errors():
    with pytest.raises(ValueError, match="cls"):
        DR.exact_region(_v_net(), (-1, 1, -1, 1), 0.1, 2)
    with pytest.raises(ValueError, match="box"):
        DR.exact_region(_v_net(), (1, -1, -1, 1), 0.1, 0)
    with pytest.raises(ValueError, match="at least 2 outputs"):
        DR.exact_region([(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))], (-1, 1, -1, 1), 0.1, 0)
    with pytest.raises(ValueError, match="tol"):
        DR.exact_region(_v_net(), (-1, 1, -1, 1), 0.1, 0, tol=-1.0)


def test_exact_region_defaults_links_and_labels():
    r = DR.exact_region(_diamond_net(), (-2, 2, -2, 2), 0.1, 0)
    same = DR.exact_region(_diamond_net(), (-2, 2, -2, 2), 0.1, 0, tol=1e-9)
    assert r.n_components == same.n_components and len(r.links) == len(same.links)
    assert set(r.labels.tolist()) == {0} and all(0 <= i < j < len(r.pieces) for i, j, _ in r.links)
    for i, j, mid in r.links:  # each link's midpoint lies on the boundary of both pieces, inside the diamond
        assert abs(mid).sum() < 1.0
    # a tie margin: with tol above the margin every piece is dropped
    assert DR.exact_region(_diamond_net(), (-2, 2, -2, 2), 0.1, 0, tol=2.0).n_components == 0
    # a box inside one piece: one component touching the edge
    assert DR.exact_counts(_diamond_net(), (0.1, 0.2, 0.1, 0.2), 0.1) == [(1, 0), (0, 0)]


def test_margin_and_shared_midpoints_by_hand():
    A, c = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]), np.array([0.0, 0.5, 0.0])
    X = np.array([[2.0, 1.0], [0.0, 0.0]])
    assert np.allclose(DR._margin(A, c, 0, X), [2.0 - 1.5, 0.0 - 0.5])
    assert np.allclose(DR._margin(A, c, 1, X[0]), [1.5 - 2.0])
    P = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0]])
    Q = np.array([[2.0, 1.0], [3.0, 1.0], [3.0, 3.0], [2.0, 3.0]])  # shares x = 2, 1 <= y <= 2 with P
    mids = DR._shared_midpoints(P, Q, 1e-9)
    assert len(mids) == 1 and np.allclose(mids[0], [2.0, 1.5])
    assert DR._shared_midpoints(P, Q + [0.0, 1.0], 1e-9) == []  # touch at the corner (2, 2) only
    assert DR._shared_midpoints(P, Q + [1e-3, 0.0], 1e-9) == []  # parallel, apart
    assert len(DR._shared_midpoints(P, Q + [1e-10, 0.0], 1e-9)) == 1  # within eps of the line
    R = np.array([[0.0, 0.0], [0.0, 0.0], [2.0, 0.0], [2.0, 2.0]])  # a degenerate (zero-length) edge is skipped
    assert len(DR._shared_midpoints(R, np.array([[0.0, 0.0], [2.0, 0.0], [1.0, -1.0]]), 1e-9)) == 1


def test_exact_region_edge_rule_uses_the_box_size():
    big = DR.exact_region(_diamond_net(), (-1.0 - 1e-6, 1.0 + 1e-6, -2, 2), 0.1, 0)
    assert (big.n_components, big.edge_free) == (1, 1)  # the diamond's tips stay 1e-6 inside: edge-free
    touch = DR.exact_region(_diamond_net(), (-1.0, 1.0, -2, 2), 0.1, 0)
    assert (touch.n_components, touch.edge_free) == (1, 0)  # its tips on the edge
    for box in ((-1.0, 2.0, -2, 2), (-2.0, 1.0, -2, 2), (-2, 2, -1.0, 2.0), (-2, 2, -2.0, 1.0)):
        assert DR.exact_region(_diamond_net(), box, 0.1, 0).edge_free == 0, box
