"""Tests for lib.leaky_1d (Chapter 6, pruning section): the exact minimum width of one-hidden-layer
leaky-ReLU nets on alternating points of a line, checked against a second algorithm (a linear program
over the output weights of nets with fixed kinks), against hand derivations, and by evaluating every
constructed net in float64."""

import itertools
from fractions import Fraction

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


# --- Values, not only signs (issue 37): the nets are evaluated with plain numpy, independently of
# lib.boolean, and their slopes between kinks and outputs at the kinks compared with the docstrings'
# promises, worked out here from the definitions.

def _plain_forward(net, x, alpha):
    """v(x) = b2 + sum_i a_i LReLU(w_i x + b_i) for a 1-D input, LReLU(z) = z if z > 0 else alpha z."""
    (W1, b1), (W2, b2) = net
    z = np.asarray(x, float)[:, None] * W1[:, 0][None, :] + b1[None, :]
    return np.where(z > 0, z, alpha * z) @ W2[0] + b2[0]


def _piece_slopes(net, alpha, kinks, lo, hi, step=1 / 64):
    """Slopes of v on a fine grid of [lo, hi], grouped by the linear piece (between consecutive kinks,
    or beyond the ends) each grid interval lies in; grid intervals that hold a kink are skipped."""
    x = np.arange(lo, hi + step / 2, step)
    v = _plain_forward(net, x, alpha)
    slopes = np.diff(v) / np.diff(x)
    edges = np.concatenate([[-np.inf], np.sort(kinks), [np.inf]])
    pieces = []
    for left, right in zip(edges[:-1], edges[1:]):
        inside = (x[:-1] >= left) & (x[1:] <= right)
        assert inside.sum() >= 3, (left, right)
        pieces.append(slopes[inside])
    return pieces


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.3, 0.7])
def test_interpolant_passes_through_the_targets_with_slopes_plus_minus_two(alpha):
    # Lemma A.2.1's interpolant (width = changes) of the targets -1, +1, -1, ... at x = 0..changes with a
    # kink at x = 0, 1, ..., changes - 1: it takes the target values at the points (so at every kink),
    # its slope between points j and j + 1 is target[j + 1] - target[j] = +2, -2, +2, ... (the last piece
    # goes on with the last of them), and left of x = 0, where every (right-facing) unit is on its leaky
    # side, the slope is alpha times the sum of the output weights = alpha times the last slope.
    for changes in range(1, 9):
        net = L.alternating_network(changes, alpha, changes)
        (W1, b1), (W2, b2) = net
        assert W1.shape == (changes, 1) and np.all(W1 == 1.0)
        kinks = -b1 / W1[:, 0]
        np.testing.assert_allclose(kinks, np.arange(changes), atol=1e-12)
        x = np.arange(changes + 1.0)
        np.testing.assert_allclose(_plain_forward(net, x, alpha), _signs(changes), atol=1e-9)
        pieces = _piece_slopes(net, alpha, kinks, -2.0, changes + 2.0)
        last = 2.0 * (-1) ** (changes - 1)
        expected = [alpha * last] + [2.0 * (-1) ** j for j in range(changes)]
        for j, (got, want) in enumerate(zip(pieces, expected)):
            np.testing.assert_allclose(got, want, atol=1e-9, err_msg=f"changes {changes}, piece {j}")
        # the output weights are the slope jumps at the kinks over (1 - alpha): -4, +4, ... after the first
        jumps = np.diff(expected)
        np.testing.assert_allclose(W2[0], jumps / (1 - alpha), atol=1e-9)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.3, 0.7])
def test_min_width_net_has_the_promised_slopes_zeros_and_facings(alpha):
    # Width changes - 1: piece j has slope m_j of alternating_slopes and its zero at j + 1/2 (between the
    # points j and j + 1); unit i faces right (W1 = +1) iff facing[i]; consecutive lines of opposite slope
    # meet between their zeros, so kink i lies in (i - 1/2, i + 1/2), where v equals both neighbouring lines.
    for changes in range(2, 11):
        found = L.alternating_slopes(changes, alpha)
        if found is None:
            continue
        m, facing = found
        m = [float(mj) for mj in m]
        net = L.alternating_network(changes, alpha, changes - 1)
        (W1, b1), (W2, b2) = net
        assert W1.shape == (changes - 1, 1)
        np.testing.assert_array_equal(W1[:, 0], [1.0 if right else -1.0 for right in facing])
        kinks = -b1 / W1[:, 0]
        assert np.all(np.diff(kinks) > 0)
        for i, t in enumerate(kinks, start=1):
            assert i - 0.5 < t < i + 0.5, (changes, i, t)
        pieces = _piece_slopes(net, alpha, kinks, -2.0, changes + 2.0)
        assert len(pieces) == len(m) == changes
        for j, (got, want) in enumerate(zip(pieces, m)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=f"changes {changes}, piece {j}")
        zeros = np.arange(changes) + 0.5
        np.testing.assert_allclose(_plain_forward(net, zeros, alpha), 0.0, atol=1e-9)
        at_kinks = _plain_forward(net, kinks, alpha)
        np.testing.assert_allclose(at_kinks, [m[i] * (t - zeros[i]) for i, t in enumerate(kinks, start=1)],
                                   atol=1e-9)
        np.testing.assert_allclose(at_kinks, [m[i - 1] * (t - zeros[i - 1]) for i, t in enumerate(kinks, start=1)],
                                   atol=1e-9)
        # a unit's jump in slope is (1 - alpha) times its output weight, whichever way it faces
        np.testing.assert_allclose(W2[0] * (1 - alpha), np.diff(m), rtol=1e-9, atol=1e-12)


def test_alternating_slopes_hand_values_and_odd_leaks():
    # The facing equation of the module docstring, also for leaks with long binary expansions (alpha is
    # read as a fraction of denominator <= 10^9, so the slopes must satisfy it to float precision).
    for alpha in (0.0, 0.123456789, 1 / 3, 0.95):
        for changes in range(1, 10):
            found = L.alternating_slopes(changes, alpha)
            if found is None:
                assert L.min_width_1d(changes, alpha) == changes
                continue
            m, facing = found
            assert len(m) == changes and len(facing) == changes - 1
            assert all(mj * (-1) ** j > 0 for j, mj in enumerate(m))
            d = [m[i] - m[i - 1] for i in range(1, len(m))]
            rhs = sum(alpha * di if right else -di for di, right in zip(d, facing))
            assert abs(float((1 - alpha) * m[0] - rhs)) < 1e-9 * max(abs(float(x)) for x in m)
    # one change: width 0 is a constant, which cannot change sign (the facing equation reads (1 - a) m_0 = 0)
    assert L.alternating_slopes(1, 0.2) is None and L.alternating_slopes(0, 0.2) is None
    # 3 changes by hand: the first facings tried, (right, right), give kappa = (-a, -a) and the facing
    # equation (1 - a) m_0 = a (m_2 - m_0), i.e. m_0 = a m_2: with u_j = (-1)^j m_j the coefficients are
    # e = (1 - a + a, -a + a, -a) = (1, 0, -a), and u = (1 / 1, 1 (free), 1 / a) balances them.
    for a in (Fraction(1, 2), Fraction(1, 10), Fraction(3, 7)):
        m, facing = L.alternating_slopes(3, float(a))
        assert facing == (True, True) and m == [1, -1, 1 / a], (a, m)
        assert (1 - a) * m[0] == a * (m[2] - m[0])


@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_lift_is_the_composition_with_the_projection(alpha):
    rng = np.random.default_rng(0)
    net = L.alternating_network(5, alpha)
    d, offset = rng.normal(size=3), 0.37
    X = rng.normal(size=(50, 3))
    lifted = L.lift(net, d, offset)
    np.testing.assert_allclose(B.network_output(lifted, X, alpha), _plain_forward(net, X @ d + offset, alpha),
                               atol=1e-12)
    assert lifted[0][0].shape == (net[0][0].shape[0], 3)


def test_error_messages_name_the_argument_exactly():
    # the messages themselves (a test matching only a substring lets a garbled argument name through)
    with pytest.raises(ValueError, match=r"^changes \(class changes along the line\) must be an int >= 0 and <= 16, got 17$"):
        L.min_width_1d(17, 0.1)
    assert L.min_width_1d(16, 0.1) == 15  # the largest count the exhaustive test takes
    with pytest.raises(ValueError, match=r"^alpha \(the leak\) must be"):
        L.min_width_1d(3, 1.0)
    with pytest.raises(ValueError, match=r"^changes must be >= 1: a net with no sign change is a constant$"):
        L.alternating_network(0, 0.1)
    for bad in (2, 5):  # width must be changes - 1 or changes
        with pytest.raises(ValueError, match=rf"^width must be an int >= 3 and <= 4, got {bad}$"):
            L.alternating_network(4, 0.1, width=bad)
    net = L.alternating_network(3, 0.1)
    with pytest.raises(ValueError, match=r"^direction must be"):
        L.lift(net, np.ones((2, 2)), 0.0)
    with pytest.raises(ValueError, match=r"^offset must be"):
        L.lift(net, np.ones(3), float("nan"))
    with pytest.raises(ValueError, match=r"^params must have a hidden layer \(at least two \(W, b\) layers\), got 1$"):
        L.lift(net[:1], np.ones(3), 0.0)
    with pytest.raises(ValueError, match=r"^params\[0\] W must be an array of shape \(n, 1\)"):
        L.lift([(np.ones((2, 2)), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))], np.ones(3), 0.0)


def test_nets_are_float64_and_the_leak_is_read_as_a_fraction():
    for changes, alpha in ((4, 0.1), (5, 0.0), (3, 0.3)):
        for width in (L.min_width_1d(changes, alpha), changes):
            for W, b in L.alternating_network(changes, alpha, width):
                assert W.dtype == np.float64 and b.dtype == np.float64, (changes, alpha, width)
    # alpha is read as the nearest fraction of denominator <= 10^9 (so 0.123456789 exactly, not the float's
    # binary expansion nor a coarser fraction); with facings (right, right), m = (1, -1, 1 / alpha)
    m, facing = L.alternating_slopes(3, 0.123456789)
    assert facing == (True, True) and m[2] == Fraction(10 ** 9, 123456789)
