"""Connected decision regions of narrow networks (chapter 10, part D; Nguyen 2019, thesis Ch. 5).

Def. 5.2.1: the decision region of class ``j`` is ``C_j = {x : f_j(x) > f_k(x) for all k != j}``.
Theorem 5.2.3: if the widths are pyramidal, ``d = n_0 >= n_1 >= ... >= n_{L-1}``, the activation is a
continuous bijection of R (the leaky ReLU, slope ``alpha > 0``) and ``W_1 .. W_{L-1}`` have full rank,
then every ``C_j`` is open and **connected** (:func:`theorem_523_conditions`).

The necessity examples of §5.3 as explicit networks with their closed-form regions
(:func:`example_53` non-pyramidal, :func:`example_54` low-rank ``W_1``, :func:`example_55` ReLU, and
:func:`width3_disconnected`, the tightness construction of §5.3.4 with width ``d + 1``); grid
membership (:func:`region_grid`, strict inequality as in Def. 5.2.1), connected components with
``scipy.ndimage.label``, split into those touching the window's edge and the
**edge-free** ones (:func:`components`): only an edge-free component certifies that a region is
disconnected, since an edge component may join another outside the window. :func:`bend_window`
gives, for a one-hidden-layer width-2 net in the plane, a window in which the region's connectivity is
exact. :func:`islands` and :func:`xor_margin` are the 2-D data sets of the spec's D3 (ours: the thesis
does not give its data), :func:`bands54` the distribution of Example (5.4), :func:`train_nets` trains many small leaky-ReLU nets of different widths at once.

Conventions as in ``lib.nets``: a network is a list of ``(W, b)`` with ``W`` of shape ``(d_out, d_in)``;
the thesis' ``W_l`` is the transpose of ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from scipy import ndimage

from lib import validate as V
from lib.landscape import leaky_inverse, nr_rank
from lib.linear_regions import _check_box, _clip, polygon_area, regions_2d
from lib.nets import BatchedMLP, as_float64_inputs, as_float64_params, check_leak, forward_f64, init_mlp
from lib.train import _cross_entropy_per_model  # the trainers' unchecked per-step loss

SQRT2 = math.sqrt(2.0)


# ---------------------------------------------------------------------------------------------
# the conditions of Theorem 5.2.3

def is_pyramidal(widths) -> bool:
    """Thm 5.2.3's width condition: ``widths = [d, n_1, ..., n_{L-1}, m]`` with ``d >= n_1 >= ... >=
    n_{L-1}`` (the output width ``m`` is free)."""
    widths = V.sequence(widths, "widths", min_len=2)
    widths = [V.positive_int(w, "widths[i]") for w in widths]
    hidden = widths[:-1]
    return all(a >= b for a, b in zip(hidden, hidden[1:]))


def theorem_523_conditions(params, alpha: float) -> dict:
    """Which assumptions of Thm 5.2.3 a network meets: ``pyramidal`` (:func:`is_pyramidal`),
    ``bijective`` (leaky slope ``alpha > 0``; ReLU is not), ``full_rank`` (every hidden ``W_l`` has
    Numerical-Recipes rank ``min`` of its shape), and ``holds`` (all three)."""
    params, alpha = as_float64_params(params), check_leak(alpha)
    widths = [params[0][0].shape[1]] + [W.shape[0] for W, _ in params]
    full = all(nr_rank(W)[0] == min(W.shape) for W, _ in params[:-1])
    out = {"pyramidal": is_pyramidal(widths), "bijective": alpha > 0.0, "full_rank": full}
    out["holds"] = out["pyramidal"] and out["bijective"] and out["full_rank"]
    return out


# ---------------------------------------------------------------------------------------------
# the examples of §5.3 with their closed forms

@dataclass(frozen=True)
class Example:
    """An explicit network of the thesis with the closed form of one of its decision regions:
    ``closed_form(X)`` is the boolean membership of the rows of ``X`` in ``C_target``."""
    name: str
    params: list
    alpha: float
    target: int
    closed_form: Callable


def _points(X) -> np.ndarray:
    return as_float64_inputs(X, 2)


def _c1_53(X):
    t = _points(X).sum(axis=1)
    return (t - 2.0 > 0) | (t + 4.0 < 0)


def _blue_54(X):
    return np.abs(_points(X)[:, 0]) > 1.0


def _c1_55(X):
    X = _points(X)
    x1, x2 = X[:, 0], X[:, 1]
    return ((x1 < 1) & (x2 < 1) & (x1 + x2 < 1)) | ((x2 > 4) & (2 * x1 - x2 + 4 < 0))


def example_53() -> Example:
    """Example (5.3), §5.3.1: the non-pyramidal 2-1-2-2 net with ``sigma(t) = max(0.5 t, t)``; its
    ``C_1 = {x_1 + x_2 > 2} u {x_1 + x_2 < -4}`` (two half-planes, disconnected; Fig. 5.2)."""
    params = [(np.array([[1.0, 1.0]]), np.zeros(1)),
              (np.array([[1.0], [-1.0]]), np.zeros(2)),
              (np.array([[2.0, 3.0], [1.0, 2.0]]), np.array([0.0, 1.0]))]
    return Example("(5.3) non-pyramidal 2-1-2-2", params, 0.5, 0, _c1_53)


def example_54(alpha: float = 0.1) -> Example:
    """Example (5.4), §5.3.2: a 2-2-2 leaky net whose ``W_1`` has rank 1; output 0 ("blue") is
    ``sigma(x_1 - 1) + sigma(-x_1 - 1)``, output 1 ("red") the constant ``-2 alpha``, so the blue
    region is ``{|x_1| > 1}`` (disconnected; on ``|x_1| <= 1`` the two outputs tie)."""
    alpha = V.real(alpha, "alpha (leaky-ReLU slope)", min=0.0, max=1.0, min_open=True, max_open=True)
    params = [(np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([-1.0, -1.0])),
              (np.array([[1.0, 1.0], [0.0, 0.0]]), np.array([0.0, -2.0 * alpha]))]
    return Example("(5.4) rank-1 W_1", params, alpha, 0, _blue_54)


def example_55() -> Example:
    """Example (5.5), §5.3.3: a pyramidal 2-2-2-2 **ReLU** net with full-rank weights whose ``C_1 =
    {x_1 < 1, x_2 < 1, x_1 + x_2 < 1} u {x_2 > 4, 2 x_1 - x_2 + 4 < 0}`` is disconnected (Fig. 5.4):
    Thm 5.2.3 needs a bijective activation."""
    params = [(np.eye(2), np.zeros(2)),
              (np.array([[1.0, 1.0], [-1.0, 1.0]]) / SQRT2, np.array([SQRT2 - 1.0, -3.0]) / SQRT2),
              (np.array([[-1.0, 0.0], [0.0, -3.0]]), np.array([1.0, 0.0]))]
    return Example("(5.5) pyramidal ReLU", params, 0.0, 0, _c1_55)


def width3_disconnected(alpha: float = 0.1) -> Example:
    """The tightness construction (spec D2, after §5.3.4): width ``3 = d + 1`` with **full-rank**
    ``W_1`` (rows ``(1, 0), (-1, 0), (0, 1)``, ``b_1 = (-1, -1, 0)``), blue ``= u_1 + u_2``, red ``= -2
    alpha``: the blue region is again ``{|x_1| > 1}``, two components, although every weight has full rank."""
    alpha = V.real(alpha, "alpha (leaky-ReLU slope)", min=0.0, max=1.0, min_open=True, max_open=True)
    params = [(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]]), np.array([-1.0, -1.0, 0.0])),
              (np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]), np.array([0.0, -2.0 * alpha]))]
    return Example("width 3 = d + 1, full rank", params, alpha, 0, _blue_54)


# ---------------------------------------------------------------------------------------------
# regions on a grid and their components

def region_masks(params, X, alpha: float, tol: float = 1e-9) -> np.ndarray:
    """Boolean ``(n, m)``: row ``i`` is in ``C_j`` iff ``f_j(x_i) > f_k(x_i) + tol`` for every ``k != j``
    (Def. 5.2.1 with a rounding margin ``tol >= 0``; points where two outputs tie belong to no region)."""
    tol = V.nonnegative(tol, "tol")
    F = forward_f64(params, X, alpha)
    m = F.shape[1]
    if m < 2:
        raise V.ArgumentValueError(f"params: a classifier needs at least 2 outputs, got {m}")
    out = np.empty(F.shape, bool)
    for j in range(m):
        others = np.delete(F, j, axis=1).max(axis=1)
        out[:, j] = F[:, j] > others + tol
    return out


def grid_points(box, res: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A ``res x res`` grid over ``box = (x1min, x1max, x2min, x2max)``, edges included: returns ``(xs,
    ys, X)`` with ``X`` of shape ``(res * res, 2)`` in row-major order (row ``i`` is ``x_2 = ys[i]``)."""
    x0, x1, y0, y1 = _check_box(box)
    res = V.integer(res, "res (grid points per axis)", min=3)
    xs, ys = np.linspace(x0, x1, res), np.linspace(y0, y1, res)
    XX, YY = np.meshgrid(xs, ys)
    return xs, ys, np.column_stack([XX.ravel(), YY.ravel()])


def region_grid(params, box, res: int, alpha: float, tol: float = 1e-9) -> np.ndarray:
    """The decision regions on a grid: boolean ``(m, res, res)``, ``[j, i, k]`` = grid point
    ``(xs[k], ys[i])`` lies in ``C_j`` (:func:`region_masks`)."""
    _, _, X = grid_points(box, res)
    masks = region_masks(params, X, alpha, tol)
    return masks.T.reshape(masks.shape[1], res, res)


def components(mask, connectivity: int = 8) -> tuple[int, int, np.ndarray]:
    """Connected components of a boolean 2-D mask (``scipy.ndimage.label``). Returns ``(n_total,
    n_edge_free, labels)``.

    A component is *edge-free* when none of its pixels lies on the mask's border **and** it contains at
    least one whole grid cell (a 2 x 2 block of its pixels). Only such pieces certify that a region is
    disconnected: a piece touching the border of the window may join another one outside it (spec
    Pitfall 6), and a piece without a whole cell is a region thinner than the grid's spacing, which the grid
    samples as a broken chain of pixels (the tip of a sharp corner, a sliver between two nearly parallel
    boundaries).

    ``connectivity``: 8 (default) joins diagonal neighbours, 4 does not. Two pieces of one region merge
    under 8 only across a gap narrower than a grid cell, so 8 is the conservative choice for certifying a
    disconnection; 4 splits the broken chains of thin parts into more pieces (measured in the chapter)."""
    mask = V.array(mask, "mask", ndim=2, dtype=None)
    if mask.dtype != bool:
        raise V.ArgumentTypeError(f"mask must be a boolean array, got dtype {mask.dtype}")
    connectivity = V.choice(connectivity, "connectivity", (4, 8))
    structure = np.ones((3, 3), bool) if connectivity == 8 else None
    labels, n = ndimage.label(mask, structure=structure)
    border = np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]])
    cell = mask[:-1, :-1] & mask[1:, :-1] & mask[:-1, 1:] & mask[1:, 1:]
    whole = np.setdiff1d(labels[:-1, :-1][cell], border)
    return int(n), int(whole.size), labels


def component_counts(params, box, res: int, alpha: float, tol: float = 1e-9,
                     connectivity: int = 8) -> list[tuple[int, int]]:
    """``(n_total, n_edge_free)`` of every class's decision region on a ``res x res`` grid over ``box``
    (:func:`region_grid`, :func:`components`)."""
    V.choice(connectivity, "connectivity", (4, 8))
    return [components(mask, connectivity)[:2] for mask in region_grid(params, box, res, alpha, tol)]


# ---------------------------------------------------------------------------------------------
# exact decision regions of a piecewise-linear net in the plane (no grid)

@dataclass(frozen=True)
class ExactRegion:
    """Class ``cls``'s decision region inside ``box``, exactly (:func:`exact_region`).

    ``pieces``: the closures of ``C_cls`` intersected with each linear region of the net, convex polygons
    (counter-clockwise vertices); ``labels[i]``: the component of piece ``i``; ``n_components``: the
    connected components of ``C_cls`` inside the box; ``edge_free``: how many of them stay away from the
    box's border (each is a whole bounded component of ``C_cls``: a certificate that the region is
    disconnected, or bounded); ``links``: the shared edges that join two pieces, as ``(i, j, midpoint)``."""
    pieces: list
    labels: np.ndarray
    n_components: int
    edge_free: int
    links: list


def _margin(A, c, cls: int, X) -> np.ndarray:
    """``f_cls(x) - max_{k != cls} f_k(x)`` for the affine outputs ``f(x) = A x + c`` at the rows of ``X``."""
    F = np.atleast_2d(X) @ A.T + c
    return F[:, cls] - np.delete(F, cls, axis=1).max(axis=1)


def _shared_midpoints(P, Q, eps: float) -> list:
    """Midpoints of the segments of positive length that two convex polygons share on their boundaries."""
    out = []
    for a in range(len(P)):
        p, d = P[a], P[(a + 1) % len(P)] - P[a]
        length = math.hypot(*d)
        if length <= eps:
            continue
        u = d / length
        for b in range(len(Q)):
            r, s = Q[b] - p, Q[(b + 1) % len(Q)] - p
            if abs(u[0] * r[1] - u[1] * r[0]) > eps or abs(u[0] * s[1] - u[1] * s[0]) > eps:
                continue  # not on the line of P's edge
            lo, hi = max(0.0, min(r @ u, s @ u)), min(length, max(r @ u, s @ u))
            if hi - lo > eps:
                out.append(p + 0.5 * (lo + hi) * u)
    return out


def exact_region(params, box, alpha: float, cls: int, tol: float = 1e-9) -> ExactRegion:
    """The decision region ``C_cls`` (Def. 5.2.1) of a 2-input leaky-ReLU (or ReLU) net inside ``box``,
    computed exactly from the net's linear regions (:func:`lib.linear_regions.regions_2d`), not on a grid.

    On each linear region ``R`` the outputs are affine, so ``C_cls`` ∩ ``R`` is convex: ``R`` cut by the
    half-planes ``f_cls >= f_k``. A cut piece on which the outputs tie (the margin ``f_cls - max_k f_k``
    is ``<= tol`` at its centroid) is dropped: the margin is concave on the piece, so if it is positive
    anywhere it is positive at every interior point. Two pieces in neighbouring regions belong to one
    component when they share a boundary segment of positive length whose midpoint has margin ``> tol``
    (again by concavity along the segment, that midpoint test is exact). A component is *edge-free* when
    none of its vertices lies on the box's border (within ``1e-9`` of the box's size): it is then a whole
    bounded component of ``C_cls``. Resolution: pieces of area below ``1e-14`` are not resolved
    (``regions_2d``'s limit), against a grid cell of ``(box width / resolution)^2``.
    """
    params, alpha = as_float64_params(params), check_leak(alpha)
    x0, x1, y0, y1 = _check_box(box)
    m = params[-1][0].shape[0]
    if m < 2:
        raise V.ArgumentValueError(f"params: a classifier needs at least 2 outputs, got {m}")
    cls = V.integer(cls, "cls (the class)", min=0, max=m - 1)
    tol = V.nonnegative(tol, "tol")
    eps = 1e-9 * max(x1 - x0, y1 - y0)
    pieces, maps = [], []
    for r in regions_2d(params, box, alpha):
        P = r.polygon
        for k in range(m):
            if k != cls and len(P):
                w, c = r.A[cls] - r.A[k], r.c[cls] - r.c[k]
                P = _clip(P, w, c, 1e-12 * (1.0 + np.abs(w).sum() * max(abs(x0), abs(x1), abs(y0), abs(y1)) + abs(c)))
        if len(P) and abs(polygon_area(P)) > 1e-14 and _margin(r.A, r.c, cls, P.mean(axis=0))[0] > tol:
            pieces.append(P)
            maps.append((r.A, r.c))
    parent = list(range(len(pieces)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    links = []
    if pieces:
        lo = np.array([P.min(axis=0) for P in pieces]) - eps
        hi = np.array([P.max(axis=0) for P in pieces]) + eps
        near = np.all((lo[:, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[:, None, :]), axis=2)
        for i, j in zip(*np.nonzero(np.triu(near, 1))):
            for mid in _shared_midpoints(pieces[i], pieces[j], eps):
                if _margin(*maps[i], cls, mid)[0] > tol:
                    links.append((int(i), int(j), mid))
                    parent[root(i)] = root(j)
                    break
    roots = [root(i) for i in range(len(pieces))]
    _, labels = np.unique(roots, return_inverse=True) if pieces else (None, np.zeros(0, int))
    n = int(labels.max()) + 1 if pieces else 0
    on_edge = np.zeros(n, bool)
    for P, lab in zip(pieces, labels):
        if np.any((np.abs(P[:, 0] - x0) <= eps) | (np.abs(P[:, 0] - x1) <= eps)
                  | (np.abs(P[:, 1] - y0) <= eps) | (np.abs(P[:, 1] - y1) <= eps)):
            on_edge[lab] = True
    return ExactRegion(pieces, labels, n, int(np.sum(~on_edge)), links)


def exact_counts(params, box, alpha: float, tol: float = 1e-9) -> list[tuple[int, int]]:
    """``(n_components, n_edge_free)`` of every class's decision region inside ``box``, exactly
    (:func:`exact_region`); the exact counterpart of :func:`component_counts`."""
    params = as_float64_params(params)
    return [(r.n_components, r.edge_free) for r in
            (exact_region(params, box, alpha, j, tol) for j in range(params[-1][0].shape[0]))]


def agreement(example: Example, X) -> float:
    """Fraction of the points ``X`` (shape ``(n, 2)``) where the network's region ``C_target``
    (:func:`region_masks`) and the closed form agree."""
    V.instance(example, "example", Example)
    X = _points(X)
    net = region_masks(example.params, X, example.alpha)[:, example.target]
    return float(np.mean(net == example.closed_form(X)))


def bend_points(params, alpha: float) -> np.ndarray:
    """The bend points of the decision boundary of a 2-2-2 leaky net (spec D2): with ``u = W_1 x + b_1``
    and the boundary ``a_1 s(u_1) + a_2 s(u_2) + c = 0`` (``a = W_2[0] - W_2[1]``, ``c = b_2[0] -
    b_2[1]``), they are ``u = (0, s^-1(-c / a_2))`` and ``(s^-1(-c / a_1), 0)``, mapped back by ``x =
    W_1^-1 (u - b_1)``. Returns the two points as rows of a ``(2, 2)`` array."""
    params, alpha = as_float64_params(params), check_leak(alpha)
    if alpha == 0.0:
        raise V.ArgumentValueError("alpha (leaky-ReLU slope) must be > 0: the bend points need the inverse activation")
    shapes = [W.shape for W, _ in params]
    if shapes != [(2, 2), (2, 2)]:
        raise V.ArgumentValueError(f"params must be a 2-2-2 network (one hidden layer of width 2), got shapes {shapes}")
    (W1, b1), (W2, b2) = params
    a, c = W2[0] - W2[1], b2[0] - b2[1]
    if nr_rank(W1)[0] < 2 or a[0] == 0.0 or a[1] == 0.0:
        raise V.ArgumentValueError("params: W_1 must be invertible and both hidden units must reach the "
                                   f"boundary (a = W_2[0] - W_2[1] = {a} without zeros)")
    U = np.array([[0.0, float(leaky_inverse(-c / a[1], alpha))], [float(leaky_inverse(-c / a[0], alpha)), 0.0]])
    return np.linalg.solve(W1, (U - b1).T).T


def bend_window(params, alpha: float, margin: float = 1.0) -> tuple[float, float, float, float]:
    """A square box containing both :func:`bend_points` at distance ``>= margin`` from its edges. Inside
    any convex window that contains them, each region of a 2-2-2 leaky net with invertible ``W_1`` is
    connected (the boundary is one piecewise-linear curve whose two kinks lie inside), so the grid
    there must show exactly one component per region."""
    P = bend_points(params, alpha)
    margin = V.positive(margin, "margin")
    centre = P.mean(axis=0)
    half = np.abs(P - centre).max() + margin
    return (centre[0] - half, centre[0] + half, centre[1] - half, centre[1] + half)


# ---------------------------------------------------------------------------------------------
# data (spec D3; ours) and training many small nets at once

def _uniform_box(n: int, seed: int, lim: float = 4.0) -> np.ndarray:
    return np.random.default_rng(V.seed(seed)).uniform(-lim, lim, size=(V.positive_int(n, "n"), 2))


def islands(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points uniform on ``[-4, 4]^2``, label 1 ("blue") iff within radius 1.2 of ``(+-2, 0)``:
    the Bayes blue region has two bounded components (spec D3, our stand-in for Fig. 5.5's data)."""
    X = _uniform_box(n, seed)
    d = np.minimum(np.hypot(X[:, 0] - 2.0, X[:, 1]), np.hypot(X[:, 0] + 2.0, X[:, 1]))
    return X, (d < 1.2).astype(np.int64)


def xor_margin(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points uniform on ``[-4, 4]^2`` with ``min(|x_1|, |x_2|) > 0.5`` (rejection sampling),
    label 1 ("blue") iff ``x_1 x_2 > 0``: two unbounded blue quadrants (spec D3)."""
    n, rng = V.positive_int(n, "n"), np.random.default_rng(V.seed(seed))
    out = np.empty((0, 2))
    while len(out) < n:
        X = rng.uniform(-4.0, 4.0, size=(2 * n, 2))
        out = np.vstack([out, X[np.minimum(np.abs(X[:, 0]), np.abs(X[:, 1])) > 0.5]])
    out = out[:n]
    return out, (out[:, 0] * out[:, 1] > 0).astype(np.int64)


def bands54(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The distribution of Example (5.4) / Fig. 5.3: ``n // 2`` "blue" points (label 1, as in :func:`islands`)
    uniform on ``x_1 in [-2, -1] u [1, 2]``, the rest "red" (label 0) uniform on ``x_1 in [-1, 1]``, all with ``x_2`` uniform
    on ``[-1/2, 1/2]`` (equal class sizes: the thesis does not give its priors)."""
    n, rng = V.integer(n, "n", min=2), np.random.default_rng(V.seed(seed))
    n_blue = n // 2
    x1 = np.concatenate([rng.uniform(1.0, 2.0, n_blue) * rng.choice([-1.0, 1.0], n_blue),
                         rng.uniform(-1.0, 1.0, n - n_blue)])
    X = np.column_stack([x1, rng.uniform(-0.5, 0.5, n)])
    y = np.concatenate([np.ones(n_blue, np.int64), np.zeros(n - n_blue, np.int64)])
    order = rng.permutation(n)
    return X[order], y[order]


def _padded(params, widths):
    """A net with hidden widths <= ``widths``, zero-padded to them (zero units stay zero under SGD)."""
    out = []
    for l, (W, b) in enumerate(params):
        Wp = torch.zeros(widths[l + 1], widths[l], dtype=torch.float64)
        bp = torch.zeros(widths[l + 1], dtype=torch.float64)
        Wp[:W.shape[0], :W.shape[1]], bp[:b.shape[0]] = W, b
        out.append((Wp, bp))
    return out


def train_nets(X, y, hidden, seeds, alpha: float = 0.1, epochs: int = 300, lr: float = 0.1,
               momentum: float = 0.9, batch_size: int = 100, halve_every: int = 50):
    """Train ``M`` leaky-ReLU classifiers at once (one ``lib.nets.BatchedMLP``, float64): model ``i`` has
    hidden widths ``hidden[i]`` (a tuple; all of the same depth), is initialised like
    ``lib.nets.init_mlp([d, *hidden[i], K], seeds[i])`` and sees the data ``X[i]`` (``X``: ``(M, n, d)``,
    ``y``: ``(M, n)`` integer labels ``0..K-1``, every class present). Minibatch SGD with momentum on the cross-entropy, the
    learning rate halved every ``halve_every`` epochs (the thesis' Fig. 5.5 recipe); the narrower models
    are zero-padded, and their padding units get no gradient. Returns ``(nets, errors)``: the trained nets
    as float64 numpy ``(W, b)`` lists of their own widths, and each model's count of misclassified rows."""
    X = V.array(X, "X", ndim=3)
    y = V.array(y, "y", shape=(X.shape[0], X.shape[1]), integer=True, agree="X")
    M, n, d = X.shape
    K = int(y.max()) + 1
    if y.min() < 0 or K < 2 or np.unique(y).size != K:
        raise V.ArgumentValueError(f"y must hold class indices 0..K-1, each of them at least once, K >= 2; got "
                                   f"{np.unique(y).size} distinct values from {y.min()} to {y.max()}")
    hidden = [tuple(V.positive_int(w, "hidden[i][l]") for w in V.sequence(h, "hidden[i]", min_len=1))
              for h in V.sequence(hidden, "hidden", min_len=M)]
    if len(hidden) != M or len({len(h) for h in hidden}) != 1:
        raise V.ArgumentValueError(f"hidden must give one tuple of hidden widths per model, all of one depth "
                                   f"({M} models), got {hidden}")
    seeds = [V.seed(s, "seeds[i]") for s in V.sequence(seeds, "seeds")]
    if len(seeds) != M:
        raise V.ArgumentValueError(f"seeds must give one seed per model ({M}), got {len(seeds)}")
    alpha = V.slope(alpha, "alpha (leaky-ReLU slope)")
    epochs, batch_size = V.positive_int(epochs, "epochs"), V.positive_int(batch_size, "batch_size")
    lr, momentum = V.positive(lr, "lr (the learning rate)"), V.fraction(momentum, "momentum")
    halve_every = V.positive_int(halve_every, "halve_every")
    widths = [d, *[max(h[l] for h in hidden) for l in range(len(hidden[0]))], K]
    model = BatchedMLP(widths, seeds=seeds, activation="leaky_relu", negative_slope=alpha, dtype=torch.float64)
    with torch.no_grad():
        for i, (h, s) in enumerate(zip(hidden, seeds)):
            own = init_mlp([d, *h, K], s, dtype=torch.float64)
            for l, (W, b) in enumerate(_padded(own, widths)):
                model.weights[l][i].copy_(W)
                model.biases[l][i].copy_(b)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=halve_every, gamma=0.5)
    gen = torch.Generator().manual_seed(seeds[0])
    for epoch in range(epochs):
        order = torch.randperm(n, generator=gen)
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            opt.zero_grad(set_to_none=True)
            loss = _cross_entropy_per_model(model(Xt[:, idx]), yt[:, idx]).sum()
            loss.backward()
            opt.step()
        V.finite_loss(loss.detach() / M, f"{epoch + 1} (epoch)", lr)
        sched.step()
    with torch.no_grad():
        errors = (model(Xt).argmax(-1) != yt).sum(1).numpy()
    nets = []
    for i, h in enumerate(hidden):
        full = [(W.numpy(), b.numpy()) for W, b in model.model_params(i)]
        dims = [d, *h, K]
        nets.append([(W[:dims[l + 1], :dims[l]].copy(), b[:dims[l + 1]].copy()) for l, (W, b) in enumerate(full)])
    return nets, errors.astype(np.int64)
