"""Tests for lib.leaky_1d (Chapter 6, pruning section): the exact minimum width of one-hidden-layer
leaky-ReLU nets on alternating points of a line, checked against a second algorithm (a linear program
over the output weights of nets with fixed kinks), against hand derivations, and by evaluating every
constructed net in float64."""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from lib import boolean as B
from lib import leaky_1d as L


def _signs(changes):
    return np.array([(-1.0) ** (j + 1) for j in range(changes + 1)])


def _grid_feasible(changes, width, alpha):
    """Second algorithm: is there a width-``width`` net with kinks on a grid of the gaps (and beyond
    the ends), any facings, whose output has sign (-1)^(j+1) at x = j? One LP per placement over
    (c, a_1..a_k) with margins y_j v(j) >= 1 (scale-free, so >= 1 is no restriction)."""
    x = np.arange(changes + 1.0)
    y = _signs(changes)
    spots = [-0.5, changes + 0.5] + [j + f for j in range(changes) for f in (0.25, 0.5, 0.75)]
    for kinks in itertools.combinations(sorted(spots), width):
        for sigma in itertools.product((1.0, -1.0), repeat=width):
            z = np.array([[s * (xi - t) for s, t in zip(sigma, kinks)] for xi in x]).reshape(len(x), width)
            feats = np.hstack([np.ones((len(x), 1)), np.maximum(z, alpha * z)])
            res = linprog(np.zeros(width + 1), A_ub=-(y[:, None] * feats), b_ub=-np.ones(len(x)),
                          bounds=[(None, None)] * (width + 1), method="highs")
            if res.status == 0:
                return True
    return False


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5])
def test_min_width_agrees_with_grid_lp(alpha):
    for changes in range(1, 5):
        k = L.min_width_1d(changes, alpha)
        assert k in (changes - 1, changes)
        assert _grid_feasible(changes, k, alpha)  # the minimum is attained ...
        if k >= 1:
            assert not _grid_feasible(changes, k - 1, alpha)  # ... and one unit fewer never works


def test_min_width_hand_values():
    # Leaky (alpha > 0): one unit is monotone along the line, so 2 changes need 2 units; from 3 changes
    # on, s - 1 units suffice (e.g. -5 LReLU(x) + 10 LReLU(x - 1) + 2 for 3 changes).
    for alpha in (0.1, 0.5, 0.9):
        assert [L.min_width_1d(s, alpha) for s in range(9)] == [0, 1, 2, 2, 3, 4, 5, 6, 7]
    # ReLU: with 2 units the four facings give slopes that vanish somewhere, so 3 changes need 3;
    # from 4 changes on s - 1 suffice (the slopes 2, -1, 1, -1 with the last unit facing left).
    assert [L.min_width_1d(s, 0.0) for s in range(9)] == [0, 1, 2, 3, 3, 4, 5, 6, 7]
    assert L.alternating_slopes(3, 0.0) is None and L.alternating_slopes(2, 0.1) is None


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.3])
def test_alternating_network_classifies_in_float64(alpha):
    for changes in range(1, 11):
        for width in sorted({L.min_width_1d(changes, alpha), changes}):
            net = L.alternating_network(changes, alpha, width)
            assert net[0][0].shape == (width, 1)
            v = B.network_output(net, np.arange(changes + 1.0)[:, None], alpha)
            assert np.array_equal(np.sign(v), _signs(changes)), (changes, width, v)
            assert np.abs(v).min() > 1e-6


def test_slopes_satisfy_the_facing_equation():
    for alpha in (0.0, 0.1):
        for changes in range(2, 9):
            found = L.alternating_slopes(changes, alpha)
            if found is None:
                continue
            m, facing = found
            assert all(mj * (-1) ** j > 0 for j, mj in enumerate(m))
            d = [m[i] - m[i - 1] for i in range(1, len(m))]
            rhs = sum(alpha * di if right else -di for di, right in zip(d, facing))
            assert abs(float((1 - alpha) * m[0] - rhs)) < 1e-12


def test_lift_gives_parity_nets_of_the_1d_minimum_width():
    # n-parity along s = #ones = (x1 + ... + xn + n) / 2: n changes, so min_width_1d(n) units.
    for n in range(1, 9):
        net = L.lift(L.alternating_network(n, 0.1), np.full(n, 0.5), n / 2)
        v = B.network_output(net, B.cube(n), 0.1)
        assert np.array_equal(v > 0, B.parity_table(n).astype(bool)), n
        assert net[0][0].shape == (L.min_width_1d(n, 0.1), n)
    # the net of the issue: -5 LReLU(s) + 10 LReLU(s - 1) + 2 along s = x1 + x2 + x3, leak 0.1
    issue = L.lift([(np.array([[1.0], [1.0]]), np.array([0.0, -1.0])), (np.array([[-5.0, 10.0]]), np.array([2.0]))],
                   np.ones(3), 0.0)
    assert np.array_equal(B.network_output(issue, B.cube(3), 0.1) > 0, B.parity_table(3).astype(bool))


def test_bad_input():
    for bad in (-1, 1.5, "3", L.MAX_CHANGES + 1, None):
        with pytest.raises((ValueError, TypeError), match="changes"):
            L.min_width_1d(bad, 0.1)
    for bad in (1.0, -0.1, float("nan"), "0.1"):
        with pytest.raises((ValueError, TypeError), match="alpha"):
            L.alternating_slopes(3, bad)
    with pytest.raises(ValueError, match="changes"):
        L.alternating_network(0, 0.1)
    with pytest.raises(ValueError, match="width"):
        L.alternating_network(4, 0.1, width=2)
    with pytest.raises(ValueError, match="no width-2 net"):
        L.alternating_network(3, 0.0, width=2)
    net = L.alternating_network(3, 0.1)
    with pytest.raises((ValueError, TypeError), match="direction"):
        L.lift(net, np.ones((2, 2)), 0.0)
    with pytest.raises((ValueError, TypeError), match="offset"):
        L.lift(net, np.ones(3), float("nan"))
    with pytest.raises((ValueError, TypeError), match="params"):
        L.lift(net[:1], np.ones(3), 0.0)
