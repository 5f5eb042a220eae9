"""Exact minimum width of one-hidden-layer leaky-ReLU nets that classify alternating points on a line
(Chapter 6, pruning section: Table 3.4 against the swaps bounds of thesis §3.3.2).

A Boolean function with swaps value s projects onto a line as s + 1 runs of alternating class, so
the smallest one-hidden-layer net that classifies s + 1 alternating points on the line is a width
that always suffices for the function (Theorem 3.3.2 proves width s; the text before it says s - 1).
This module computes that smallest width exactly, for any leak alpha in [0, 1).

Why it is exact. A net v(x) = c + sum_i a_i LReLU(sigma_i (x - t_i)) with k units is piecewise linear
with at most k kinks, so at most k + 1 linear pieces, each with at most one transversal zero: s sign
changes need k >= s - 1. When k = s - 1, every piece holds exactly one crossing, so the slopes
m_0, ..., m_k strictly alternate in sign; conversely, any strictly alternating slopes and any zeros
z_j in the gaps between the points give a continuous piecewise-linear function with the right signs
(consecutive lines of opposite slope meet between their zeros, which is where the kinks go). Which
piecewise-linear functions are nets? A unit facing right (sigma = +1) adds slope alpha*a left of its
kink and a right of it, one facing left (sigma = -1) adds -a and -alpha*a; either way its jump is
d_i = (1 - alpha) a_i. So the slopes of a net satisfy the single linear equation

    (1 - alpha) m_0 = alpha * sum_{i facing right} d_i - sum_{i facing left} d_i,   d_i = m_i - m_{i-1},

and every slope sequence that satisfies it for some choice of facings is realised. Writing
u_j = (-1)^j m_j > 0 (first slope positive; the negated net covers the other sign), the equation is
sum_j e_j u_j = 0 with coefficients e_j that depend only on the facings, and it has a solution with
all u_j > 0 exactly when some e_j > 0 and some e_j < 0 (or all are 0). That is a finite test over the
2^k facings, done here in rational arithmetic (:func:`alternating_slopes`); if no facing passes,
width s - 1 is impossible and width s is the minimum (Lemma A.2.1's interpolant has width s).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from lib import validate as V

MAX_CHANGES = 16  # 2^(changes - 1) facings are tried: keep the exhaustive test small


def _check(changes, alpha) -> tuple[int, Fraction]:
    changes = V.integer(changes, "changes (class changes along the line)", min=0, max=MAX_CHANGES)
    return changes, Fraction(V.slope(alpha, "alpha (the leak)")).limit_denominator(10 ** 9)


def _sign_coefficients(facing_right, alpha: Fraction) -> list:
    """The e_j of the module docstring: the facing equation as sum_j e_j u_j = 0, u_j = (-1)^j m_j."""
    kappa = [-alpha if right else Fraction(1) for right in facing_right]  # coefficient of d_i
    k = len(kappa)
    c = [(1 - alpha) - (kappa[0] if k else 0)]
    c += [kappa[j - 1] - kappa[j] for j in range(1, k)]
    if k:
        c.append(kappa[-1])
    return [cj * (-1) ** j for j, cj in enumerate(c)]


def alternating_slopes(changes: int, alpha: float):
    """Slopes and unit facings of a width-(changes - 1) leaky net with ``changes`` sign changes.

    Returns (slopes m_0..m_k as Fractions, facings as a tuple of bools: True = facing right) with
    m_0 > 0 and strictly alternating signs, or None when no width-(changes - 1) net exists (the
    exact test of the module docstring).
    """
    changes, a = _check(changes, alpha)
    if changes == 0:
        return None  # a constant needs no unit at all: there is no width -1
    k = changes - 1
    for facing in itertools.product((True, False), repeat=k):
        e = _sign_coefficients(facing, a)
        pos = sum(x for x in e if x > 0)
        neg = -sum(x for x in e if x < 0)
        if pos and neg:
            u = [1 / pos if x > 0 else 1 / neg if x < 0 else Fraction(1) for x in e]
        elif not pos and not neg:
            u = [Fraction(1)] * len(e)
        else:
            continue
        return [uj * (-1) ** j for j, uj in enumerate(u)], facing
    return None


def min_width_1d(changes: int, alpha: float) -> int:
    """Smallest width of a one-hidden-layer leaky-ReLU net (leak ``alpha``) that classifies
    ``changes`` + 1 points of alternating class on a line: ``changes`` - 1 when
    :func:`alternating_slopes` finds slopes, else ``changes`` (0 for a constant)."""
    changes, _ = _check(changes, alpha)
    if changes == 0:
        return 0
    return changes - 1 if alternating_slopes(changes, alpha) is not None else changes


def alternating_network(changes: int, alpha: float, width: int | None = None) -> list:
    """An explicit net ``[(W1 (k, 1), b1), (W2 (1, k), b2)]`` (the convention of
    :func:`lib.boolean.network_output`) whose output is negative at x = 0, 2, 4, ... and positive at
    x = 1, 3, ... for x = 0..changes.

    ``width`` defaults to :func:`min_width_1d`. Width ``changes`` - 1 uses the slopes of
    :func:`alternating_slopes` with zeros at the half-integers; width ``changes`` is Lemma A.2.1's
    interpolant of the targets -1, +1, ... with a kink at each of the first ``changes`` points.
    """
    changes, a = _check(changes, alpha)
    if changes == 0:
        raise V.ArgumentValueError("changes must be >= 1: a net with no sign change is a constant")
    width = min_width_1d(changes, alpha) if width is None else V.integer(width, "width", min=changes - 1,
                                                                        max=changes)
    if width == changes:
        from lib.boolean import interpolation_slopes

        targets = np.array([(-1.0) ** (j + 1) for j in range(changes + 1)])
        out = interpolation_slopes(np.diff(targets), float(alpha))
        W1, b1 = np.ones((width, 1)), -np.arange(width, dtype=float)
        return [(W1, b1), (out[None, :], np.array([targets[0] - float(alpha) * out @ (0 - np.arange(width))]))]
    found = alternating_slopes(changes, alpha)
    if found is None:
        raise V.ArgumentValueError(f"no width-{width} net with {changes} sign changes for alpha = {alpha}")
    m, facing = found
    z = [Fraction(2 * j + 1, 2) for j in range(changes)]  # zero of piece j, between points j and j + 1
    kinks = [(m[i - 1] * z[i - 1] - m[i] * z[i]) / (m[i - 1] - m[i]) for i in range(1, changes)]
    out = [(m[i] - m[i - 1]) / (1 - a) for i in range(1, changes)]
    sigma = [1 if right else -1 for right in facing]

    def unit_sum(x):  # sum_i a_i LReLU(sigma_i (x - t_i)), exactly
        return sum(o * max(s * (x - t), a * s * (x - t)) for o, s, t in zip(out, sigma, kinks))

    c = -unit_sum(z[0])  # v(z_0) = 0
    W1 = np.array([[float(s)] for s in sigma])
    b1 = np.array([float(-s * t) for s, t in zip(sigma, kinks)])
    return [(W1, b1), (np.array([[float(o) for o in out]]), np.array([float(c)]))]


def lift(params: list, direction, offset: float) -> list:
    """A 1-D net composed with the projection x -> direction . x + offset (the first layer absorbs
    it), e.g. n-parity from :func:`alternating_network` with direction (1/2, ..., 1/2), offset n/2."""
    from lib.nets import as_float64_params

    layers = as_float64_params(params)
    if len(layers) < 2:
        raise V.ArgumentValueError(f"params must have a hidden layer (at least two (W, b) layers), got {len(layers)}")
    d = V.array(direction, "direction", ndim=1)
    offset = V.real(offset, "offset")
    W1 = V.array(layers[0][0], "params[0] W", ndim=2, shape=(None, 1))
    b1 = V.array(layers[0][1], "params[0] b", shape=(W1.shape[0],))
    return [(W1 @ d[None, :], W1[:, 0] * offset + b1), *layers[1:]]
