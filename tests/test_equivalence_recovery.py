"""Unit tests of the primitives of lib.equivalence's black-box recovery (chapter 01, the proof of Thm A.1
as an algorithm: class ``_Recoverer`` behind :func:`lib.equivalence.recover`).

Each primitive is checked on hand-built piecewise-linear black boxes whose folds are known in closed form
(kinks of a 1-D function, hyperplanes of single ReLUs), against values worked out by hand: the kink
positions, the hyperplane keys, the clipped line intervals, the orientation signs of synthetic gradients
and the number of queries a hand-traced run must make. Issue 16 (tests that bite).
"""

import numpy as np
import pytest

from lib import equivalence as E


def recoverer(f, d0, domain=(-1.0, 1.0), seed=0, n_lines=30, subset_search=True, max_layers=10,
              max_attempts=20):
    return E._Recoverer(f, d0, domain, seed, n_lines, subset_search, max_layers, max_attempts)


def full_level(d0):
    return E._Level(np.eye(d0), np.zeros(d0), np.zeros((0, d0)), np.zeros(0))


def kinked(kinks, jumps, slope=0.7, offset=0.2, scale=1.0):
    """1-D black box ``scale * (slope x + offset + sum_i jumps[i] relu(x - kinks[i]))`` (one output)."""
    k, j = np.asarray(kinks, float), np.asarray(jumps, float)
    return lambda X: scale * (slope * X[:, 0] + offset + np.maximum(X[:, :1] - k[None, :], 0.0) @ j)


# --- primitive B: breakpoints along a segment ---------------------------------------------------------

def _breaks(f, t0, t1, x0=(0.0,), v=(1.0,)):
    oracle = E.CountingOracle(f)
    R = recoverer(oracle, len(x0))
    before = oracle.n_queries
    out = R.breakpoints(np.array(x0, float), np.array(v, float), t0, t1)
    return sorted(out), oracle.n_queries - before


@pytest.mark.parametrize("scale", [1.0, 1e6])
def test_breakpoints_single_kink_and_affine_by_hand(scale):
    # one kink, affine on both sides: the lines through the two ends meet exactly at the kink; 4 end
    # values + 3 verification values = 7 queries. Affine: 4 end values + 1 midpoint = 5 queries, no kink.
    out, n = _breaks(kinked([0.31], [1.3], scale=scale), -0.9, 0.8)
    assert len(out) == 1 and abs(out[0] - 0.31) < 1e-8 and n == 7
    out, n = _breaks(kinked([], [], scale=scale), -1.0, 1.0)
    assert out == [] and n == 5
    # kinks 2.5e-6 from either end (just beyond the 2 dl guard, dl = 1e-6) are still found directly
    for k in (-0.9 + 2.5e-6, 0.8 - 2.5e-6):
        out, n = _breaks(kinked([k], [-2.1], scale=scale), -0.9, 0.8)
        assert len(out) == 1 and abs(out[0] - k) < 1e-8 and n == 7


def test_breakpoints_several_kinks_on_a_symmetric_segment():
    kinks = [-0.6, -0.1, 0.35, 0.72]
    for scale in (1.0, 1e6):
        out, _ = _breaks(kinked(kinks, [1.3, -2.1, 0.9, 1.7], scale=scale), -1.0, 1.0)
        assert len(out) == 4 and np.abs(np.array(out) - kinks).max() < 1e-8
    out, _ = _breaks(kinked([0.3, 0.30003], [1.3, -2.1]), -0.9, 0.8)   # two kinks 3e-5 apart
    assert len(out) == 2 and np.abs(np.array(out) - [0.3, 0.30003]).max() < 1e-10


@pytest.mark.parametrize("length", [2e-6, 5e-7])
def test_breakpoints_on_very_short_segments(length):
    # dl shrinks with the segment (1e-3 of its length): a kink in the middle is found with 7 queries
    k = 0.5 + length / 2
    out, n = _breaks(kinked([k], [1.3]), 0.5, 0.5 + length)
    assert len(out) == 1 and abs(out[0] - k) < 1e-12 and n == 7


def test_breakpoints_along_a_slanted_line_in_the_plane():
    w, b = np.array([0.6, -0.8]), 0.15
    f = lambda X: 2.0 * np.maximum(X @ w + b, 0.0) + X[:, 0]
    x0, v = np.array([0.1, 0.2]), np.array([0.6, 0.8])
    out, n = _breaks(f, -1.0, 1.0, x0, v)
    t_star = -(x0 @ w + b) / (v @ w)                      # where the line meets w.x + b = 0
    assert len(out) == 1 and abs(out[0] - t_star) < 1e-8 and n == 7


def test_breakpoints_tolerance_of_the_affine_test_by_hand():
    # f = 1 + h (relu(x + 0.3) - relu(x + 0.3 - 1e-6)) / 1e-6: flat at both ends of [-1, 1], a step of
    # height h before the midpoint 0. fscale = 1 + max|f| = 2 + h, so the affine test at the midpoint
    # accepts a deviation up to 1e-9 fscale (1 + |b - a|) = 6e-9 (+ O(h)).
    step = lambda h: kinked([-0.3, -0.3 + 1e-6], [h / 1e-6, -h / 1e-6], slope=0.0, offset=1.0)
    out, n = _breaks(step(3e-9), -1.0, 1.0)
    assert out == [] and n == 5                     # below the tolerance: taken as affine
    out, n = _breaks(step(7e-9), -1.0, 1.0)
    assert n > 5                                    # above it: searched further


@pytest.mark.parametrize("side", [-1, 1])
def test_breakpoints_verification_stays_inside_the_interval(side):
    # a 1e-5 segment (dl = 1e-8) with its kink 5e-8 from one end and another kink 5e-9 beyond that end,
    # outside the segment: the verification points must stay inside, so the kink is accepted at once
    t0, t1 = 0.5, 0.5 + 1e-5
    k, outside = (t0 + 5e-8, t0 - 5e-9) if side < 0 else (t1 - 5e-8, t1 + 5e-9)
    out, n = _breaks(kinked([k, outside], [1.3, -2.1]), t0, t1)
    assert len(out) == 1 and abs(out[0] - k) < 1e-12 and n == 7


def test_breakpoints_keeps_searching_after_an_unresolvable_pair():
    # kinks 3e-6 apart cannot be separated before the intervals reach the 1e-6 resolution; the search
    # must still finish the rest of the segment (the kink at -0.5) and report only points near true kinks
    kinks = [-0.5, 0.3, 0.300003]
    out, n = _breaks(kinked(kinks, [0.9, 1.3, -2.1]), -0.9, 0.8)
    assert any(abs(t + 0.5) < 1e-8 for t in out)
    assert all(min(abs(t - k) for k in kinks) < 1e-6 for t in out)
    # and it stops there: halving 1.7 down to 1e-6 takes ~21 levels, and at each level at most two
    # intervals hold a kink of the pair, each costing at most 3 + 3 + 1 queries: a few hundred in all
    assert n < 1000


def test_breakpoints_affine_at_large_scale_despite_rounding():
    # f ~ 1e6: the end slopes differ by rounding (~1e-5), far below the slope tolerance 1e-6 fscale ~ 1
    out, n = _breaks(kinked([], [], slope=1.234567, offset=-0.3456, scale=1e6), -0.77, 0.93)
    assert out == [] and n == 5


@pytest.mark.parametrize("end", ["left", "right"])
def test_breakpoints_resolve_a_close_pair_near_either_end_of_a_long_segment(end):
    # a 256-long segment, kinks 3e-5 apart 1e-3 from one end: 20+ bisections towards that end separate them
    L = 256.0
    ks = [1e-3, 1e-3 + 3e-5] if end == "left" else [L - 1e-3 - 3e-5, L - 1e-3]
    out, _ = _breaks(kinked(ks, [0.5, -1.5], slope=0.0, offset=0.0), 0.0, L)
    assert len(out) == 2 and np.abs(np.array(out) - ks).max() < 1e-12


def test_breakpoints_tolerances_are_inclusive():
    # step black boxes, zero on the 64 probes in (-1, 1) (fscale = 1), with values chosen so that a bar is
    # met exactly: end slopes 0 and D / dl = 1e-6 = tol_s (dl = 1e-6 on [0, 10]); a midpoint deviation of
    # exactly tol_v (1 + |b - a|) on [2, 4]. Both count as affine: 4 end values + 1 midpoint, no kink.
    step = lambda at, h: (lambda X: np.where(X[:, 0] >= at, h, 0.0))
    D = 1e-12
    assert D / 1e-6 == 1e-6
    assert _breaks(step(10.0 - 0.5e-6, D), 0.0, 10.0) == ([], 5)
    assert _breaks(step(2.5, 1e-9 * 1.0 * (1 + abs(4.0 - 2.0))), 2.0, 4.0) == ([], 5)


# --- the line and region geometry ------------------------------------------------------------------------

def test_clip_line_by_hand():
    R = recoverer(lambda X: X[:, 0], 2, domain=(-1.0, 2.0))
    x0, v, m = np.array([0.2, -0.3]), np.array([0.6, 0.8]), 0.01
    t0, t1 = R._clip_line(x0, v, full_level(2), m)
    # box (-1 + m, 2 - m)^2: t1 = min((1.99 - 0.2) / 0.6, (1.99 + 0.3) / 0.8), t0 = max((-0.99 - 0.2) / 0.6,
    # (-0.99 + 0.3) / 0.8)
    assert t1 == pytest.approx(2.29 / 0.8, abs=1e-12) and t0 == pytest.approx(-0.69 / 0.8, abs=1e-12)
    # and the half-plane x1 + 0.1 > m of a level: x1 > -0.09, t > -0.29 / 0.6
    lv = E._Level(np.eye(2), np.zeros(2), np.array([[1.0, 0.0]]), np.array([0.1]))
    t0, t1 = R._clip_line(x0, v, lv, m)
    assert t0 == pytest.approx(-0.29 / 0.6, abs=1e-12) and t1 == pytest.approx(2.29 / 0.8, abs=1e-12)
    # a line along the first axis: the second axis' rows are parallel to it and skipped
    t0, t1 = R._clip_line(x0, np.array([1.0, 0.0]), full_level(2), m)
    assert t0 == pytest.approx(-1.19, abs=1e-12) and t1 == pytest.approx(1.79, abs=1e-12)
    t0, t1 = R._clip_line(x0, np.array([0.0, -1.0]), lv, m)
    assert t0 == pytest.approx(-2.29, abs=1e-12) and t1 == pytest.approx(0.69, abs=1e-12)
    # a start on the shrunk box' edge (y = 1 - 0.01, domain (-1, 1)), moving out by 1e-15 per unit:
    # that row is not parallel to the line (only |n.v| < 1e-15 is), so the line ends at t = 0
    R = recoverer(lambda X: X[:, 0], 2)
    t0, t1 = R._clip_line(np.array([0.2, 0.99]), np.array([1.0, 1e-15]), full_level(2), 0.01)
    assert t0 == pytest.approx(-1.19, abs=1e-12) and t1 == 0.0


def test_inside_is_the_open_shrunk_box_and_level_by_hand():
    R = recoverer(lambda X: X[:, 0], 2)
    X = np.array([[-0.75, 0.0], [0.75, 0.0], [0.0, -0.75], [-0.7499, 0.7499], [0.5, 0.5], [0.9, 0.0],
                  [-0.9, 0.0], [0.0, 0.9]])
    assert R.inside(X, full_level(2), 0.25).tolist() == [False, False, False, True, True, False, False, False]
    lv = E._Level(np.eye(2), np.zeros(2), np.array([[1.0, 0.0]]), np.array([0.5]))
    X = np.array([[-0.25, 0.0], [-0.3, 0.0], [-0.2, 0.1], [0.9, 0.0], [0.5, -0.6]])
    # x1 + 0.5 > 0.25 and the box: -0.25 sits on the level's boundary (0.25 exactly)
    assert R.inside(X, lv, 0.25).tolist() == [False, False, True, False, True]


# --- finite differences and the black-box wrapper ---------------------------------------------------------

def test_grads_and_side_tests_of_known_gradients():
    g = np.array([0.7, -1.9])
    R = recoverer(lambda X: X @ g + 0.3, 2)
    P = np.array([[0.1, 0.2], [-0.5, 0.4], [0.0, 0.0]])
    s = R.F(np.ones((1, 2)))[0] / (g.sum() + 0.3)               # the projection's sign (one output)
    assert abs(s) == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(R.grads(P), s * g[None, :], atol=1e-8)
    # one-sided gradients of 2 relu(x1 - 0.2) + 0.5 x2 across the fold x1 = 0.2 (an axis-aligned key)
    R = recoverer(lambda X: 2.0 * np.maximum(X[:, 0] - 0.2, 0.0) + 0.5 * X[:, 1], 2)
    s = np.sign(R.F(np.array([[0.9, 0.0]]))[0])
    Q = np.array([[0.2, -0.5], [0.2, 0.1], [0.2, 0.6]])
    (gp, gm), = R.side_tests([np.array([1.0, 0.0, -0.2])], [Q])
    assert np.allclose(gp, s * np.array([2.0, 0.5]), atol=1e-8)
    assert np.allclose(gm, s * np.array([0.0, 0.5]), atol=1e-8)


def test_recoverer_setup_projection_and_raw_outputs():
    f = lambda X: np.stack([X[:, 0] - X[:, 1], 2.0 * X[:, 1]], 1)
    oracle = E.CountingOracle(f)
    R = recoverer(oracle, 2, seed=3)
    assert oracle.n_calls == 1 and oracle.n_queries == 64             # one probe of 64 points
    assert R.d_out == 2 and R.pool.shape == (20000, 2)
    assert np.all(R.pool > -1) and np.all(R.pool < 1)
    X = np.array([[0.3, -0.2], [0.9, 0.5]])
    Y = f(X)
    F = R.F(X)
    assert np.allclose(F, Y @ R.c) and np.linalg.norm(R.c) == pytest.approx(1.0, abs=1e-12)
    # the same seed draws the same pool, projection and probe; another seed does not
    R2 = recoverer(f, 2, seed=3)
    assert np.array_equal(R.pool, R2.pool) and np.array_equal(R.c, R2.c)
    assert not np.array_equal(R.pool, recoverer(f, 2, seed=4).pool)
    # the scalar projection of a one-output box is +-f
    R1 = recoverer(lambda X: X[:, 0] * 3.0 - 1.0, 2)
    assert np.allclose(np.abs(R1.F(X)), np.abs(3.0 * X[:, 0] - 1.0), atol=1e-15)
    # outputs are cast to float64 whatever the box returns (float32, ints)
    R32 = recoverer(lambda X: (X[:, 0] * 3.0).astype(np.float32), 2)
    assert R32._raw(X).dtype == np.float64
    Ri = recoverer(lambda X: np.ones(len(X), dtype=np.int64), 2)
    assert Ri._raw(X).dtype == np.float64 and Ri.fscale == 2.0


def test_certify_tolerance_is_relative_to_the_scale_of_f():
    net = [(np.array([[1.0, -0.5]]), np.array([0.1])), (np.array([[0.0]]), np.array([0.0]))]
    shifted = lambda d: [net[0], (net[1][0], np.array([d]))]
    oracle = E.CountingOracle(lambda X: np.zeros(len(X)))             # f = 0: fscale = 1
    R = recoverer(oracle, 2)
    q = oracle.n_queries
    assert R.certify(shifted(0.5e-7))
    assert oracle.n_queries - q == 64 + 1000                         # two fresh batches: 64, 1000 points
    assert R.certify(shifted(1e-7))                                  # an error of exactly 1e-7 passes
    q = oracle.n_queries
    assert not R.certify(shifted(1.5e-7))                            # 1.5e-7 > 1e-7 * 1
    assert oracle.n_queries - q == 64                                # refused on the first batch
    assert "failed certification" in R.log[-1]
    big = E.CountingOracle(lambda X: np.full(len(X), 1000.0))       # f = 1000: fscale = 1001
    R = recoverer(big, 2)
    out = [(np.zeros((1, 2)), np.zeros(1)), (np.zeros((1, 1)), np.array([1000.0]))]
    assert R.certify([out[0], (out[1][0], np.array([1000.0 + 5e-5]))])   # 5e-5 < 1e-7 * 1001
    assert not R.certify([out[0], (out[1][0], np.array([1000.0 + 2e-4]))])


# --- (R2): full folds and their sharpening ---------------------------------------------------------------

KEY = np.array([0.6, 0.8, -0.3])                   # unit normal, offset: the fold 0.6 x + 0.8 y = 0.3


def relu_box(key=KEY, gain=1.5, absolute=False, scale=1.0):
    def f(X):
        u = gain * (X @ key[:-1] + key[-1])
        if absolute:                             # |u|: slopes -g, +g along the normal (they sum to 0)
            return scale * np.abs(u)
        return scale * (np.maximum(u, 0.0) + 0.3 * X[:, 0] - 0.1 * X[:, 1])
    return f


def on_plane(key, s, t=None, n=None):
    """Points ``p(s) - t n``: ``p(s)`` on the plane ``key`` (offset ``s`` along it), shifted by ``-t n``."""
    nrm, c = key[:-1], key[-1]
    p0, tang = -c * nrm, np.array([-nrm[1], nrm[0]])
    P = p0[None, :] + np.asarray(s, float)[:, None] * tang[None, :]
    if t is not None:
        P = P - np.asarray(t, float)[:, None] * n[None, :]
    return P


def rotated_key(key, angle, shift):
    c, s = np.cos(angle), np.sin(angle)
    n = np.array([[c, -s], [s, c]]) @ key[:-1]
    return np.append(n, key[-1] + shift)


@pytest.mark.parametrize("absolute", [False, True])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_refine_sharpens_a_rough_key_to_the_exact_fold(absolute, sign):
    rough = sign * rotated_key(KEY, 2e-4, 1e-4)
    n = rough[:-1]
    t = np.array([3e-4, -2e-4, 5e-4, -6e-4, 1e-4, 7e-4])          # kink offsets along n, all < 8e-4
    Q = on_plane(KEY, [-0.5, -0.3, -0.1, 0.1, 0.3, 0.5], t, n)
    R = recoverer(relu_box(absolute=absolute), 2)
    key, P = R.refine(rough, Q)
    assert np.allclose(key, sign * KEY, atol=1e-9)                 # exact fold, oriented like the rough key
    assert len(P) == 6 and np.abs(P @ KEY[:-1] + KEY[-1]).max() < 1e-10


def test_refine_on_an_axis_aligned_fold():
    true = np.array([0.0, 1.0, -0.3])
    rough = rotated_key(true, 3e-4, -2e-4)
    Q = on_plane(true, [-0.6, -0.2, 0.2, 0.6], [2e-4, -3e-4, 4e-4, 1e-4], rough[:-1])
    R = recoverer(relu_box(true), 2)
    key, P = R.refine(rough, Q)
    assert np.allclose(key, true, atol=1e-9) and len(P) == 4


def _refine_case(t, extra=None, far=0):
    """Points with kinks at offsets ``t`` along the rough key's normal; ``extra``: index of a point next to
    a second fold (its kink estimate is wrong); ``far``: points with no kink within tau = 1e-3."""
    rough = rotated_key(KEY, 2e-4, 1e-4)
    n = rough[:-1]
    s = np.linspace(-0.5, 0.5, len(t))
    Q = on_plane(KEY, s, t, n)
    base = relu_box()
    f = base
    if extra is not None:
        x_star = Q[extra, 0] + 4e-4 * n[0]                          # a vertical fold 4e-4 along n from Q
        f = lambda X: base(X) + 0.8 * np.maximum(X[:, 0] - x_star, 0.0)
    if far:
        Q = np.vstack([Q, on_plane(KEY, np.linspace(-0.4, 0.4, far), np.full(far, 0.2), n)])
    return recoverer(f, 2), rough, Q


def test_refine_point_counts_and_outliers():
    # d0 + 1 = 3 clean points are enough; a kink at 7.5e-4 (inside tau - 2 d = 8e-4) counts
    R, rough, Q = _refine_case([3e-4, -2e-4, 7.5e-4])
    key, P = R.refine(rough, Q)
    assert np.allclose(key, KEY, atol=1e-9) and len(P) == 3
    # a kink at 9.5e-4 (beyond tau - 2 d: the stencil straddles it) is not used
    R, rough, Q = _refine_case([3e-4, -2e-4, 1e-4, 9.5e-4])
    key, P = R.refine(rough, Q)
    assert np.allclose(key, KEY, atol=1e-9) and len(P) == 3
    # d0 = 2 points: too few to check a fit, the rough key and the points come back unchanged
    R, rough, Q = _refine_case([3e-4, -2e-4])
    key, P = R.refine(rough, Q)
    assert key is rough and P is Q
    # five points, one next to another fold: it is dropped, four remain and fit exactly
    R, rough, Q = _refine_case([3e-4, -2e-4, 1e-4, -1e-4, 2e-4], extra=2)
    key, P = R.refine(rough, Q)
    assert np.allclose(key, KEY, atol=1e-9) and len(P) == 4
    # six points, one outlier: five remain (the loop stops as soon as the fit is exact)
    R, rough, Q = _refine_case([3e-4, -2e-4, 1e-4, -1e-4, 2e-4, 4e-4], extra=4)
    key, P = R.refine(rough, Q)
    assert np.allclose(key, KEY, atol=1e-9) and len(P) == 5
    # four = d0 + 2 points, one outlier: no point may be dropped, the fit is refused
    R, rough, Q = _refine_case([3e-4, -2e-4, 1e-4, -1e-4], extra=1)
    key, P = R.refine(rough, Q)
    assert key is rough and P is Q
    # points with no kink near them are not live and do not enter the fit
    R, rough, Q = _refine_case([3e-4, -2e-4, 1e-4], far=5)
    key, P = R.refine(rough, Q)
    assert np.allclose(key, KEY, atol=1e-9) and len(P) == 3


# --- (R5): the zero-coefficient test on synthetic gradients ----------------------------------------------

N0, N1 = np.array([0.6, 0.8, 0.0]), np.array([0.0, 0.6, 0.8])
N2 = np.cross(N0, N1) / np.linalg.norm(np.cross(N0, N1))        # a direction outside span(N0, N1)
CANDS = [np.append(N0, 0.1), np.append(N1, -0.2)]


def unit_sides(unit, plus, minus, other=0.7):
    """Gradients at test points of one candidate: its own coefficient ``plus[j]`` just on the + side and
    ``minus[j]`` just on the - side, the other unit's coefficient ``other`` on both."""
    own, oth = (N0, N1) if unit == 0 else (N1, N0)
    g = lambda c: np.array([ci * own + other * oth for ci in c])
    return g(plus), g(minus)


def orient(sides0, sides1=None, f=lambda X: np.zeros(len(X))):
    sides1 = sides1 or unit_sides(1, [0.0] * 6, [1.2, 0.9, 1.1, 1.3, 0.8, 1.0])   # active on the - side
    return recoverer(f, 3).orient((0, 1), CANDS, [sides0, sides1])


def test_orient_reads_the_active_side_of_each_unit():
    on_plus = unit_sides(0, [1.0, 0.8, 1.2, 0.9, 1.1, 1.4], [0.0] * 6)
    assert orient(on_plus) == [1.0, -1.0]
    assert orient(unit_sides(0, [0.0] * 6, [1.0, 0.8, 1.2, 0.9, 1.1, 1.4])) == [-1.0, -1.0]
    # a unit with the same coefficient on both sides is no unit of this layer
    assert orient(unit_sides(0, [1.0] * 6, [1.0] * 6)) is None
    # half its points say +, half say -: no orientation
    assert orient(unit_sides(0, [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0])) is None


def test_orient_residual_outside_the_span_of_the_subset():
    p0, m0 = unit_sides(0, [1.0, 0.8, 1.2, 0.9, 1.1, 1.4], [0.0] * 6)
    p1, m1 = unit_sides(1, [0.0] * 6, [1.2, 0.9, 1.1, 1.3, 0.8, 1.0])
    # every gradient leaves the span by 0.8 of its own tolerance 1e-5 (1 + |g|): still a valid subset
    leak = lambda G, r: G + r * 1e-5 * (1.0 + np.linalg.norm(G, axis=1))[:, None] * N2[None, :]
    assert orient((leak(p0, 0.8), leak(m0, 0.8)), (leak(p1, 0.8), leak(m1, 0.8))) == [1.0, -1.0]
    # one gradient leaves it by 1.25 of its tolerance: a unit is missing from the subset
    p0b = p0.copy()
    p0b[2] = leak(p0[2:3], 1.25)[0]
    assert orient((p0b, m0), (p1, m1)) is None


def test_orient_live_points_and_ratio_thresholds():
    # three live points are enough, two are not (the others have no coefficient on either side)
    assert orient(unit_sides(0, [1.0, 0.8, 1.2, 0.0, 0.0, 0.0], [0.0] * 6)) == [1.0, -1.0]
    assert orient(unit_sides(0, [1.0, 0.8, 0.0, 0.0, 0.0, 0.0], [0.0] * 6)) is None
    # a coefficient counts as zero up to 1e-3 of the other side's: 5e-3 next to 10 is zero
    assert orient(unit_sides(0, [10.0] * 5, [5e-3] * 5)) == [1.0, -1.0]
    # live means above 1e-6 fscale: with f ~ 1000 (fscale 1001), coefficients 1e-5 are not live
    big = lambda X: np.full(len(X), 1000.0)
    assert orient(unit_sides(0, [1.0, 1.0, 1.0, 1e-5, 1e-5, 1e-5], [0.0, 0.0, 0.0, 1e-5, 1e-5, 1e-5]),
                  f=big) == [1.0, -1.0]


def test_orient_fractions_at_the_bounds():
    # 4 of 5 live points have a zero coefficient on one side (the bar is 80 %): valid, sign from those 4
    assert orient(unit_sides(0, [1.0] * 5, [0.0] * 4 + [1.0])) == [1.0, -1.0]
    # of 5 zero-coefficient points, 4 are active on + (80 %): +1; only 1 is (20 %): -1
    assert orient(unit_sides(0, [1.0] * 4 + [0.0], [0.0] * 4 + [1.0])) == [1.0, -1.0]
    assert orient(unit_sides(0, [1.0] + [0.0] * 4, [0.0] + [1.0] * 4)) == [-1.0, -1.0]


# --- (R2): is a hyperplane a fold all across U? ---------------------------------------------------------

def test_is_full_fold_accepts_exact_folds_only():
    R = recoverer(relu_box(), 2)
    full, Q = R.is_full_fold(KEY, full_level(2))
    assert full and len(Q) == 12 and np.abs(Q @ KEY[:-1] + KEY[-1]).max() < 1e-12
    assert R.inside(Q, full_level(2), 1e-3).all()
    assert not R.is_full_fold(KEY + np.array([0.0, 0.0, 5e-6]), full_level(2))[0]   # 5e-6 off the fold
    true = np.array([0.0, 1.0, -0.3])                                             # axis-aligned fold
    assert recoverer(relu_box(true), 2).is_full_fold(true, full_level(2))[0]
    # a hyperplane that is no fold, for f of size ~1e6: finite-difference noise is no slope jump
    R = recoverer(relu_box(scale=1e6), 2)
    assert not R.is_full_fold(np.array([0.8, -0.6, 0.1]), full_level(2))[0]


def test_is_full_fold_point_counts_and_the_90_percent_bar():
    R = recoverer(relu_box(), 2)
    R.pool = on_plane(KEY, [-0.4, -0.1, 0.2, 0.5])                       # 4 test points: enough
    full, Q = R.is_full_fold(KEY, full_level(2))
    assert full and len(Q) == 4
    R.pool = on_plane(KEY, [-0.4, -0.1, 0.2])                            # 3: too few, not a full fold
    full, Q = R.is_full_fold(KEY, full_level(2))
    assert not full and len(Q) == 3
    # f = relu(y + relu(x - 0.5)): y = 0 is a fold for x < 0.5 only; 9 of 10 test points there: 90 %
    R = recoverer(lambda X: np.maximum(X[:, 1] + np.maximum(X[:, 0] - 0.5, 0.0), 0.0), 2)
    xs = [-0.8, -0.6, -0.45, -0.3, -0.15, 0.0, 0.1, 0.25, 0.4, 0.7]
    R.pool = np.array([[x, 0.0] for x in xs])
    full, Q = R.is_full_fold(np.array([0.0, 1.0, 0.0]), full_level(2), k=12)
    assert full and len(Q) == 10
    R.pool = np.array([[x, 0.0] for x in xs[1:] + [0.8]])              # 8 of 10: no
    assert not R.is_full_fold(np.array([0.0, 1.0, 0.0]), full_level(2))[0]


def test_points_on_uses_at_most_4000_pool_points():
    R = recoverer(relu_box(), 2)
    R.rng = np.random.default_rng(7)
    perm = np.random.default_rng(7).permutation(4001)
    n = KEY[:-1]
    pool = np.tile(on_plane(KEY, [5.0]) + 0.3 * n, (4001, 1))          # projections far outside the box
    pool[perm[4000]] = on_plane(KEY, [0.1])[0] + 0.3 * n               # the one inside: 4001st drawn
    R.pool = pool
    assert len(R.points_on(KEY, full_level(2), 12)) == 0
    R.rng = np.random.default_rng(7)
    pool[perm[3999]] = pool[perm[4000]]                                # now the 4000th: used
    Q = R.points_on(KEY, full_level(2), 12)
    assert len(Q) == 1 and np.allclose(Q[0], on_plane(KEY, [0.1])[0], atol=1e-12)


def test_output_layer_fits_an_affine_box_in_the_level_coordinates():
    M, m = np.array([[0.5, -1.0], [2.0, 0.3]]), np.array([0.1, -0.4])
    oracle = E.CountingOracle(lambda X: X @ M.T + m)
    R = recoverer(oracle, 2)
    A, a = np.array([[1.0, 0.5], [-0.2, 1.0]]), np.array([0.3, -0.1])
    lv = E._Level(A, a, np.zeros((0, 2)), np.zeros(0))
    q = oracle.n_queries
    W, b = R.output_layer(lv)
    assert oracle.n_queries - q == 200                                  # 200 points of U
    Wt = M @ np.linalg.inv(A)                                            # f = M x + m = Wt (A x + a) + bt
    assert np.allclose(W, Wt, atol=1e-10) and np.allclose(b, m - Wt @ a, atol=1e-10)


# --- (R1): fold points along lines and their local hyperplanes ---------------------------------------------

def test_fold_hyperplanes_in_one_dimension_by_hand():
    # in 1-D every line is the whole segment and crosses each kink once: n_found = kinks x lines
    R = recoverer(kinked([0.31], [1.3]), 1, n_lines=7)
    clusters, n_found = R.fold_hyperplanes(full_level(1))
    assert n_found == 7 and len(clusters) == 1 and np.allclose(clusters[0], [1.0, -0.31], atol=1e-8)
    R = recoverer(kinked([-0.4, 0.31], [1.3, -0.8]), 1, n_lines=7)
    clusters, n_found = R.fold_hyperplanes(full_level(1))
    assert n_found == 14 and len(clusters) == 2
    assert np.allclose(sorted(c[1] for c in clusters), [-0.31, 0.4], atol=1e-8)
    assert all(c[0] == pytest.approx(1.0, abs=1e-12) for c in clusters)   # largest entry made positive


def test_fold_hyperplanes_needs_ten_start_points():
    R = recoverer(kinked([0.31], [1.3]), 1, n_lines=3)
    R.pool = np.linspace(-0.9, 0.9, 10)[:, None]
    clusters, n_found = R.fold_hyperplanes(full_level(1))
    assert n_found == 3 and len(clusters) == 1
    R.pool = np.linspace(-0.9, 0.9, 9)[:, None]
    assert R.fold_hyperplanes(full_level(1)) == (None, 0)


class _Lines:
    """A stand-in for the random generator of ``fold_hyperplanes``: chosen start points and directions."""

    def __init__(self, starts, dirs):
        self.starts, self.dirs = iter(starts), iter(dirs)

    def integers(self, n):
        return next(self.starts)

    def normal(self, size):
        return np.array(next(self.dirs), float)


def test_fold_hyperplanes_on_chosen_lines():
    # folds x = 0.2, y = 0.105, y = 0.095 and 0.6 (x - 0.20002) + 0.8 (y + 0.5) = 0. Line A runs nearly
    # along x through (-0.5, 0.1), between the two y-folds (0.005 away); B along x at y = -0.5 (two kinks
    # 2e-5 apart); C nearly along y through (0.19, 0), meeting x = 0.2 at a grazing angle (|n.v| < 0.05:
    # that point is skipped); D nearly along -y through (-0.3, 0). Fold points: A 2, B 2, C 3, D 3.
    f = lambda X: (np.maximum(X[:, 0] - 0.2, 0.0) + 0.7 * np.maximum(X[:, 1] - 0.105, 0.0)
                   + 0.5 * np.maximum(0.095 - X[:, 1], 0.0)
                   + 0.9 * np.maximum(0.6 * (X[:, 0] - 0.20002) + 0.8 * (X[:, 1] + 0.5), 0.0))
    R = recoverer(f, 2, n_lines=4)
    R.pool = np.vstack([[[-0.5, 0.1], [0.0, -0.5], [0.19, 0.0], [-0.3, 0.0]], np.full((8, 2), 0.5)])
    R.rng = _Lines([0, 1, 2, 3], [(1.0, 1e-3), (3.0, 0.0), (0.03, 1.0), (0.1, -1.0)])
    clusters, n_found = R.fold_hyperplanes(full_level(2))
    want = [np.array([1.0, 0.0, -0.2]), np.array([0.0, 1.0, -0.105]), np.array([0.0, 1.0, -0.095]),
            np.array([0.6, 0.8, 0.8 * 0.5 - 0.6 * 0.20002])]
    assert n_found == 10 and len(clusters) == 4
    for w in want:                      # each once, its largest entry positive
        assert min(np.abs(c - w).max() for c in clusters) < 1e-7


# --- Algorithm R: the level recursion, its log and the attempt budget ----------------------------------------

PREFIX = "no reconstruction reproduced f on fresh points of the whole domain; "


def _fails(f, d0, **kw):
    R = recoverer(f, d0, **kw)
    with pytest.raises(E.RecoveryError) as err:
        R.run()
    return R, str(err.value)


def test_recover_logs_why_each_level_stopped():
    # a two-hidden-layer net with max_layers = 1: the second layer is refused (and max_layers = 2 suffices)
    net = E.identifiable_network((2, 2, 2, 1), 1)
    R, msg = _fails(lambda X: E.forward(net, X), 2, max_layers=1)
    assert msg.startswith(PREFIX + "more than 1 hidden layers")
    got = recoverer(lambda X: E.forward(net, X), 2, max_layers=2).run()
    assert E.widths_of(got) == [2, 2, 2, 1]
    # a domain narrower than the probing margin: nothing to probe
    R, msg = _fails(lambda X: X[:, 0] + np.maximum(X[:, 1], 0.0), 2, domain=(0.0, 1e-3))
    assert msg == PREFIX + "level 1: all-on region too small to probe"
    with pytest.raises(E.RecoveryError, match="no hidden unit to recover"):
        E.recover_one_hidden_layer(lambda X: X[:, 0] + np.maximum(X[:, 1], 0.0), 2, domain=(0.0, 1e-3))
    # relu(relu(x) + y - 0.5): its folds bend (x = 0 only where y > 0.5): no straight candidate
    R, msg = _fails(lambda X: np.maximum(np.maximum(X[:, 0], 0.0) + X[:, 1] - 0.5, 0.0), 2)
    assert msg == PREFIX + "level 1: folds but no straight candidate in U"
    # three hyperplanes in the plane (sign_flip_231): the naive rule refuses, the subset search finds no
    # subset with zero coefficients
    theta, _, _ = E.counterexample("sign_flip_231")
    R, msg = _fails(lambda X: E.forward(theta, X), 2, subset_search=False)
    assert msg == PREFIX + "level 1: 3 straight candidates > 2 (a deeper fold masquerades as a hyperplane)"
    R, msg = _fails(lambda X: E.forward(theta, X), 2)
    assert msg == PREFIX + "level 1: no subset of 3 candidates passed the zero-coefficient test"
    # a (2, 3, 1) net: one subset's second level has an empty all-on region
    net = E.one_layer_network((2, 3, 1), 1)
    R, msg = _fails(lambda X: E.forward(net, X), 2)
    assert "level 2: all-on region too small to probe" in R.log


def test_recover_widths_one_and_the_naive_rule_at_full_width():
    net = [(np.array([[0.6, -0.8]]), np.array([0.1])), (np.array([[1.5]]), np.array([-0.2]))]
    got = recoverer(lambda X: E.forward(net, X), 2).run()                 # a width-1 layer: subsets of size 1
    assert E.widths_of(got) == [2, 1, 1] and E.equivalent(net, got)
    net = E.one_layer_network((2, 2, 1), 3)                              # 2 candidates = d0: the naive rule
    got = recoverer(lambda X: E.forward(net, X), 2, subset_search=False).run()
    assert E.widths_of(got) == [2, 2, 1] and E.equivalent(net, got)


def test_recovered_hidden_rows_are_normalised():
    # (R4): each recovered hidden unit (W_l[i], b_l[i]) is scaled to unit norm (a positive scaling, so the
    # function is unchanged)
    net = E.identifiable_network((3, 3, 2, 1), 1)
    got = recoverer(lambda X: E.forward(net, X), 3).run()
    for W, b in got[:-1]:
        assert np.allclose(np.sqrt((W ** 2).sum(1) + b ** 2), 1.0, atol=1e-12)
    X = np.random.default_rng(5).uniform(-1, 1, (2000, 3))
    assert np.abs(E.forward(got, X) - E.forward(net, X)).max() < 1e-6


def test_recover_attempt_budget_and_error_message():
    # an extra fold near the edge: both candidates of the recursion fail certification
    net = E.identifiable_network((2, 2, 2, 1), 1)
    f = lambda X: E.forward(net, X)[:, 0] + 0.5 * np.maximum(X[:, 0] - 0.9, 0.0)
    failed = lambda R: sum(line.endswith("failed certification") for line in R.log)
    for budget, tried in ((1, 1), (2, 2), (3, 2)):                  # min(budget, candidates = 2)
        R, msg = _fails(f, 2, max_attempts=budget)
        assert failed(R) == tried
    assert R.attempts_left == 1
    # the message carries the last six log lines, "; "-separated
    R = recoverer(f, 2, max_attempts=2)
    R.log = [f"old {i}" for i in range(5)]
    with pytest.raises(E.RecoveryError) as err:
        R.run()
    assert str(err.value) == (PREFIX + "old 1; old 2; old 3; old 4; candidate [2, 2, 2, 1] failed certification; "
                              "candidate [2, 2, 1] failed certification")


def test_refine_ignores_rounding_noise_of_a_large_box():
    # f ~ 1e6: at points with no kink near them the one-sided slopes differ by rounding only (below the
    # 1e-6 fscale bar), so those 20 points stay out of the fit
    rough = rotated_key(KEY, 2e-4, 1e-4)
    n = rough[:-1]
    Q = np.vstack([on_plane(KEY, [-0.5, 0.0, 0.5], [3e-4, -2e-4, 1e-4], n),
                   on_plane(KEY, np.linspace(-0.4, 0.4, 20), np.full(20, 0.2), n)])
    key, P = recoverer(relu_box(scale=1e6), 2).refine(rough, Q)
    assert np.allclose(key, KEY, atol=1e-9) and len(P) == 3


def test_orient_bounds_are_inclusive_where_the_solve_is_exact():
    # axis-aligned normals: the least-squares coefficients are the gradient entries, bit for bit, so the
    # bars can be met exactly (f = 0: fscale = 1). A coefficient of exactly 1e-6 fscale is not live; one of
    # exactly 1e-3 of the other side's counts as zero.
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    cands = [np.append(e1, 0.1), np.append(e2, -0.2)]
    grad = lambda own, oth, c: np.array([ci * own + 0.5 * oth for ci in c])
    minus_side = (grad(e2, e1, [0.0] * 5), grad(e2, e1, [1.0] * 5))
    R = recoverer(lambda X: np.zeros(len(X)), 3)
    assert R.fscale == 1.0
    plus = (grad(e1, e2, [1.0, 1.0, 1.0, 1e-6]), grad(e1, e2, [0.0, 0.0, 0.0, 1e-6]))
    assert R.orient((0, 1), cands, [plus, minus_side]) == [1.0, -1.0]
    plus = (grad(e1, e2, [1.0] * 5), grad(e1, e2, [1e-3] * 5))
    assert R.orient((0, 1), cands, [plus, minus_side]) == [1.0, -1.0]


# --- the small shared helpers: key orientation, kink of two lines, affine fit, start level --------------------

def test_orient_key_makes_the_largest_entry_positive():
    for key, want in (([0.6, -0.8, 0.1], [-0.6, 0.8, -0.1]), ([0.6, 0.8, -0.1], [0.6, 0.8, -0.1]),
                      ([0.1, 0.2, -3.0], [-0.1, -0.2, 3.0]), ([-0.5, 0.0, 0.5], [0.5, 0.0, -0.5])):
        np.testing.assert_array_equal(E._orient_key(np.array(key)), want)   # ties: the first largest decides
    # both orientations of a hyperplane get one key, as greedy_layers and the fold search compare them
    k = np.array([0.3, -0.9, 0.2, 0.1])
    np.testing.assert_array_equal(E._orient_key(k), E._orient_key(-k))


def test_kink_of_two_end_lines_by_hand():
    # f(t) = 2 + 0.5 t left of the kink, 1 - t right of it: they meet where 2 + 0.5 t = 1 - t, t = -2/3
    a, b = -1.0, 1.0
    Fa, Fb = 2 + 0.5 * a, 1 - b
    assert E._kink(a, b, Fa, Fb, 0.5, -1.0) == pytest.approx(-2.0 / 3.0, abs=1e-15)
    # arrays: one kink per row; an f = |t - c| has its kink at c
    c = np.array([-0.4, 0.0, 0.7])
    got = E._kink(-1.0, 1.0, np.abs(-1.0 - c), np.abs(1.0 - c), -np.ones(3), np.ones(3))
    np.testing.assert_allclose(got, c, atol=1e-15)


def test_fit_affine_recovers_an_exact_map_and_reports_the_residual():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(50, 3))
    W, b = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]]), np.array([0.25, -1.0])
    Wf, bf, res = E._fit_affine(Z, Z @ W.T + b)
    assert np.allclose(Wf, W, atol=1e-12) and np.allclose(bf, b, atol=1e-12) and res < 1e-12
    Y = Z @ W.T + b
    Y[7, 1] += 1.0                                     # one outlier: the residual shows it
    assert 0.5 < E._fit_affine(Z, Y)[2] < 1.0


def test_start_level_is_the_whole_box_and_certify_lives_on_the_probe():
    f = lambda X: np.maximum(X[:, 0] - 0.2, 0.0)
    P = E._FoldSearch(f, 3, (-1.0, 1.0), 0, 5)           # the one-hidden-layer search uses it directly
    lv = P.start_level()
    assert np.array_equal(lv.A, np.eye(3)) and np.array_equal(lv.a, np.zeros(3))
    assert lv.G.shape == (0, 3) and lv.g.shape == (0,)
    assert P.inside(np.array([[0.99, -0.99, 0.0]]), lv, 1e-3).all()
    good = [(np.array([[1.0, 0.0, 0.0]]), np.array([-0.2])), (np.array([[1.0]]), np.array([0.0]))]
    bad = [(np.array([[1.0, 0.0, 0.0]]), np.array([-0.25])), (np.array([[1.0]]), np.array([0.0]))]
    assert P.log == [] and P.certify(good) and not P.certify(bad)
    assert P.log == ["candidate [3, 1, 1] failed certification"]


def test_recover_stats_count_what_each_step_rejected():
    # a (2,2,2,1) net: recovered with nothing refused by the certificate
    net = E.identifiable_network((2, 2, 2, 1), 1)
    st = {"old": 1}
    got = E.recover(lambda X: E.forward(net, X), 2, seed=1, stats=st)
    assert E.equivalent(net, got)
    assert st["certificate_refusals"] == 0 and st["old"] == 1 and isinstance(st["log"], list)
    # the same run through the class: the counters are what stats reports
    R = recoverer(lambda X: E.forward(net, X), 2, seed=1)
    R.run()
    assert (R.n_rejected, R.n_refused) == (st["subsets_rejected"], 0)
    # an extra fold near the edge: every candidate fails the certificate; stats are filled before the raise
    f = lambda X: E.forward(net, X)[:, 0] + 0.5 * np.maximum(X[:, 0] - 0.9, 0.0)
    st = {}
    with pytest.raises(E.RecoveryError):
        E.recover(f, 2, seed=0, max_attempts=3, stats=st)
    assert st["certificate_refusals"] == sum(line.endswith("failed certification") for line in st["log"]) == 2
    # two full lines, every subset made to fail the zero-coefficient test: {0, 1}, {0}, {1} are rejected, and
    # no network is ever completed, so the certificate refuses none; the naive rule tries {0, 1} only
    g = lambda X: np.maximum(X[:, 0] - 0.2, 0.0) + np.maximum(X[:, 1] + 0.3, 0.0)
    for subset_search, rejected in ((True, 3), (False, 1)):
        R = recoverer(g, 2, seed=1, subset_search=subset_search)
        R.orient = lambda subset, cands, sides: None
        with pytest.raises(E.RecoveryError):
            R.run()
        assert (R.n_rejected, R.n_refused) == (rejected, 0)
    with pytest.raises(TypeError, match=r"^stats must be a dict"):
        E.recover(lambda X: X[:, 0], 2, stats=[])
