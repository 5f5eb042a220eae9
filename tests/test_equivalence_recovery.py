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
