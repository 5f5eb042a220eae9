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
