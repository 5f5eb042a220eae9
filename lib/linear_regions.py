"""Linear regions and exact local affine maps of ReLU networks (chapter 08_local_linearity).

Sattelberg (2026), *Local Linearity of ReLU Neural Networks*, Chapters 5-7. A ReLU network is
piecewise affine: fixing which hidden units are active (the *activation pattern*, one bit per unit)
turns it into one affine map ``f(x) = A x + c`` (the thesis' linear coefficients ``(J_i, y_i)``,
eq. 5.25), valid on the convex polytope of inputs with that pattern. This module computes both
exactly, in float64, on networks given as lists ``[(W_1, b_1), ..., (W_L, b_L)]`` of numpy arrays
(``W_l`` of shape ``(d_l, d_{l-1})``; hidden layers ReLU, or leaky ReLU with slope ``alpha``; the last
layer affine). The forward pass and patterns it builds on are :func:`lib.nets.forward_f64` and
:func:`lib.nets.activation_patterns`.

* :func:`local_affine` — the exact local map ``(A, c)`` at each input (eq. 5.25, no autograd);
* :func:`regions_2d` — every linear region of a 2-input net inside a box, exactly, by splitting
  convex polygons layer by layer (not a grid), with each region's pattern and local maps;
* :func:`regions_1d` — the same on an interval, for 1-input nets (the sine networks of §5.3);
* :func:`arrangement_bound` and :func:`region_bound` — the hyperplane-arrangement bound (5.15) and
  its product over layers for deep nets;
* :func:`zero_sets_2d` — the zero set of every hidden unit as line segments (lines in layer 1, bent
  lines in deeper layers, Fig. 6.7);
* :func:`grid_pattern_count` — how many distinct patterns a ``p x p`` grid sees (what a sampling
  method such as the thesis' cross-sections can find at most);
* :func:`boundary_segments_2d` — the zero set of one output on every region (the decision boundary of
  a 2-input classifier, exactly: one segment per region it crosses; Figs. 5.3 and 6.4);
* :func:`boundary_crossings_2d` — where that decision boundary crosses a hidden unit's zero set, and
  by how much it turns there (which first-layer lines shape a boundary, §6.2's "fourth line");
* :func:`xor_net` and :func:`circle_annulus` — the hand-built XOR net of eq. (5.11) and the circle
  versus annulus data of §4.2.1, which chapter 08's first section and its comparisons section share;
* :func:`torch_default_params`, :func:`torch_default_batched`, :func:`batched_params` — nets with
  PyTorch's default ``nn.Linear`` initialisation (the thesis trains PyTorch models and states no other),
  as numpy ``(W, b)`` lists or as a :class:`lib.nets.BatchedMLP` that :func:`lib.train.train_full_batch`
  trains many at once, and the trained models back as float64 lists.

**Pre-activations of exactly 0.** One convention throughout (the same as
:func:`lib.nets.activation_patterns` and :func:`lib.image_nets.activation_pattern`): a unit whose
pre-activation is exactly 0 counts as *active* (bit 1, slope 1). Both adjacent maps agree there, so
the value of ``f`` does not depend on it; only the reported pattern and Jacobian do. Autograd's
``relu'(0) = 0`` takes the other side.

Defined for chapter 08; :mod:`lib.equivalence` (chapter 01) uses the same splitting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

import numpy as np

from lib import validate as V
from lib.nets import activation_patterns, as_float64_inputs, as_float64_params, check_leak, leaky_np

__all__ = ["Region", "Interval", "local_affine", "regions_2d", "regions_1d", "polygon_area", "arrangement_bound",
           "region_bound", "grid_pattern_count", "pattern_string", "zero_sets_2d", "boundary_segments_2d",
           "boundary_crossings_2d",
           "torch_default_params", "torch_default_batched", "batched_params", "xor_net", "circle_annulus"]


@dataclass
class Region:
    """A linear region of a 2-input net: a convex polygon with one activation pattern.

    ``polygon`` (k, 2) vertices in counter-clockwise order; ``pattern`` the activation bits (True =
    active) of all hidden units, layers in order; ``pre`` per hidden layer the local pre-activation map
    ``(W_loc (d_l, 2), b_loc (d_l,))`` valid on the region; ``A`` (d_out, 2) and ``c`` (d_out,) the
    output's affine map on the region (valid on its closure).
    """
    polygon: np.ndarray
    pattern: tuple
    pre: list = field(default_factory=list)
    A: np.ndarray = None
    c: np.ndarray = None

    @property
    def area(self) -> float:
        return _signed_area(self.polygon)

    @property
    def centroid(self) -> np.ndarray:
        """The polygon's centroid (an interior point: regions are convex with non-zero area)."""
        P = self.polygon
        x, y = P[:, 0], P[:, 1]
        cross = x * np.roll(y, -1) - np.roll(x, -1) * y
        a = 0.5 * cross.sum()
        return np.array([((x + np.roll(x, -1)) * cross).sum(), ((y + np.roll(y, -1)) * cross).sum()]) / (6 * a)


@dataclass
class Interval:
    """A linear region of a 1-input net: ``[lo, hi]``, its pattern and the output map ``a * x + c``."""
    lo: float
    hi: float
    pattern: tuple
    A: np.ndarray = None     # (d_out, 1)
    c: np.ndarray = None     # (d_out,)


def pattern_string(pattern) -> str:
    """Activation bits (bools, or 0/1) as the thesis writes them, e.g. ``"10"`` (an empty pattern gives ``""``)."""
    bits = V.array(pattern, "pattern", ndim=1, nonempty=False, dtype=None)
    if not np.isin(bits, (0, 1)).all():
        raise V.ArgumentValueError(f"pattern must hold activation bits (bools or 0/1), got {V.describe(pattern)}")
    return "".join("1" if b else "0" for b in bits)


def polygon_area(P) -> float:
    """Signed area of a polygon (positive for counter-clockwise vertices; shoelace formula).
    ``P``: a finite (k, 2) array of vertices, k >= 1."""
    return _signed_area(V.array(P, "P", shape=(None, 2)))


def _signed_area(P: np.ndarray) -> float:
    """:func:`polygon_area` without the argument checks, for the inner loop of :func:`regions_2d`."""
    x, y = P[:, 0], P[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def local_affine(params, X, alpha: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The exact local affine map of the network at each row of ``X`` (eq. 5.25).

    Returns ``A`` of shape ``(N, d_out, d)`` (the input Jacobian, rows = outputs: ``J[out, in]``) and
    ``c`` of shape ``(N, d_out)`` with ``f(x) = A[n] @ x + c[n]`` on the whole activation region of
    ``x = X[n]`` (so ``c = f(x) - J x``, not ``f(x)``). Built by masking: with ``s_l`` the slopes of
    layer ``l`` at ``x`` (1 active, ``alpha`` inactive), ``A = W_L S_{L-1} W_{L-1} ... S_1 W_1``. At a
    unit with pre-activation exactly 0 the active side is taken (either side's map is valid there).
    ValueError if ``params`` or ``X`` have the wrong shapes.
    """
    params, alpha = as_float64_params(params), check_leak(alpha)
    X = as_float64_inputs(X, params[0][0].shape[1])
    A = np.broadcast_to(np.eye(X.shape[1]), (X.shape[0],) + (X.shape[1],) * 2)
    c = np.zeros((X.shape[0], X.shape[1]))
    Z = X
    for W, b in params[:-1]:
        U = Z @ W.T + b
        s = np.where(U >= 0, 1.0, alpha)
        A = s[:, :, None] * np.einsum("mk,nkd->nmd", W, A)
        c = s * (c @ W.T + b)
        Z = leaky_np(U, alpha)
    W, b = params[-1]
    return np.einsum("mk,nkd->nmd", W, A), c @ W.T + b


def _clip(P: np.ndarray, w: np.ndarray, c: float, tol: float) -> np.ndarray:
    """Part of convex polygon ``P`` where ``w.x + c >= 0`` (Sutherland-Hodgman, one half-plane).

    Values within ``tol`` of 0 count as 0, so a line through a vertex does not create slivers. The
    vertex order (counter-clockwise) is kept.
    """
    v = P @ w + c
    v = np.where(np.abs(v) <= tol, 0.0, v)
    out = []
    for k in range(len(P)):
        j = (k + 1) % len(P)
        if v[k] >= 0:
            out.append(P[k])
        if (v[k] > 0 and v[j] < 0) or (v[k] < 0 and v[j] > 0):
            t = v[k] / (v[k] - v[j])
            out.append(P[k] + t * (P[j] - P[k]))
    return np.array(out) if len(out) >= 3 else np.zeros((0, 2))


def _check_box(box) -> tuple[float, float, float, float]:
    try:
        xmin, xmax, ymin, ymax = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError(f"box must be (xmin, xmax, ymin, ymax), got {box!r}") from None
    if not all(np.isfinite([xmin, xmax, ymin, ymax])) or not (xmin < xmax and ymin < ymax):
        raise ValueError(f"box must be finite with xmin < xmax and ymin < ymax, got {box!r}")
    return xmin, xmax, ymin, ymax


def regions_2d(params, box, alpha: float = 0.0, min_area: float = 1e-14) -> list[Region]:
    """Every linear region of a 2-input ReLU net inside ``box = (xmin, xmax, ymin, ymax)``, exactly.

    Algorithm (polygon splitting layer by layer): start from the box with the identity map. For each
    hidden layer, on each current polygon the layer's pre-activations are affine (``W (A x + a) + b``
    with the polygon's local map ``x -> A x + a`` of the previous layer's output), so each unit's zero
    set there is a line; cut the polygon by each unit's line in turn, keep the pieces with area above
    ``min_area``, and give each piece its bits and its new local map (rows of inactive units scaled by
    ``alpha``). Every region of constant pattern is convex (an intersection of half-planes, by
    induction over layers), so the pieces after the last hidden layer are exactly the regions, one per
    pattern. Vertices are counter-clockwise; areas sum to the box area up to rounding.
    """
    params, alpha = as_float64_params(params), check_leak(alpha)
    xmin, xmax, ymin, ymax = _check_box(box)
    if params[0][0].shape[1] != 2:
        raise ValueError(f"regions_2d needs a 2-input network, got {params[0][0].shape[1]} inputs")
    min_area = V.nonnegative(min_area, "min_area")
    reach = max(abs(xmin), abs(xmax), abs(ymin), abs(ymax))
    poly = np.array([[xmin, ymin], [xmax, ymin], [xmax, ymax], [xmin, ymax]], dtype=np.float64)
    regions = [(poly, (), [], np.eye(2), np.zeros(2))]
    for W, b in params[:-1]:
        new = []
        for P, bits, pre, A, a in regions:
            Wl, bl = W @ A, W @ a + b
            tol = 1e-12 * (1.0 + np.abs(Wl).sum(1) * reach + np.abs(bl))
            pieces = [(P, ())]
            for i in range(W.shape[0]):
                nxt = []
                for Q, qb in pieces:
                    for sign in (1.0, -1.0):
                        R = _clip(Q, sign * Wl[i], sign * bl[i], tol[i])
                        if len(R) and abs(_signed_area(R)) > min_area:
                            nxt.append((R, qb + (sign > 0,)))
                pieces = nxt
            for Q, qb in pieces:
                s = np.where(np.array(qb), 1.0, alpha)
                new.append((Q, bits + qb, pre + [(Wl, bl)], s[:, None] * Wl, s * bl))
        regions = new
    W, b = params[-1]
    return [Region(P, bits, pre, W @ A, W @ a + b) for P, bits, pre, A, a in regions]


def regions_1d(params, interval, alpha: float = 0.0, min_length: float = 1e-12) -> list[Interval]:
    """Every linear region of a 1-input ReLU net on ``interval = (lo, hi)``, exactly, left to right.

    The 1-D analogue of :func:`regions_2d`: each interval is cut at the zero of every unit's local
    pre-activation (an affine function of ``x`` there). Pieces shorter than ``min_length`` are dropped.
    """
    params, alpha = as_float64_params(params), check_leak(alpha)
    lo, hi = V.interval(interval, "interval")
    min_length = V.nonnegative(min_length, "min_length")
    if params[0][0].shape[1] != 1:
        raise ValueError(f"regions_1d needs a 1-input network, got {params[0][0].shape[1]} inputs")
    pieces = [(lo, hi, (), np.ones(1), np.zeros(1))]          # local map of the layer output: x -> A x + a
    for W, b in params[:-1]:
        new = []
        for s0, t0, bits, A, a in pieces:
            Wl, bl = W @ A, W @ a + b                          # (d_l,), (d_l,)
            cuts = [s0, t0]
            for w, c in zip(Wl, bl):
                if w != 0:
                    z = -c / w
                    if s0 + min_length < z < t0 - min_length:
                        cuts.append(z)
            cuts = sorted(cuts)
            for s, t in zip(cuts[:-1], cuts[1:]):
                if t - s <= min_length:
                    continue
                u = Wl * (0.5 * (s + t)) + bl
                on = u >= 0
                k = np.where(on, 1.0, alpha)
                new.append((s, t, bits + tuple(bool(v) for v in on), k * Wl, k * bl))
        pieces = new
    W, b = params[-1]
    return [Interval(s, t, bits, (W @ A)[:, None], W @ a + b) for s, t, bits, A, a in pieces]


def arrangement_bound(k: int, n: int) -> int:
    """Most regions ``k`` hyperplanes cut ``R^n`` into: ``sum_{i <= n} C(k, i)`` (eq. 5.15, Zaslavsky)."""
    for name, v in (("k", k), ("n", n)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {v!r}")
    return sum(comb(int(k), i) for i in range(int(n) + 1))


def region_bound(widths) -> int:
    """Upper bound on the regions of a ReLU net ``widths = (d_0, d_1, ..., d_{L-1})`` (hidden only).

    The product over hidden layers of the arrangement bound ``sum_{j <= d_0} C(d_l, j)`` (Serra et al.
    2018, the form the thesis quotes from [14]: polynomial in width, exponential in depth).
    """
    widths = V.sequence(widths, "widths")
    if len(widths) < 2:
        raise ValueError(f"widths must list the input dimension and at least one hidden width, got {widths!r}")
    widths = [V.positive_int(w, f"widths[{i}]") for i, w in enumerate(widths)]
    out = 1
    for w in widths[1:]:
        out *= arrangement_bound(w, widths[0])
    return out


def grid_pattern_count(params, box, p: int, alpha: float = 0.0) -> int:
    """Distinct activation patterns on the ``p x p`` grid of cell centres of ``box`` (a sampling count).

    Every pattern seen is the pattern of an exact region (or of a boundary, if a grid point lies exactly
    on a zero set; cell centres of generic nets do not), so this never exceeds ``len(regions_2d(...))``.
    """
    xmin, xmax, ymin, ymax = _check_box(box)
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool) or p < 1:
        raise ValueError(f"p must be a positive int, got {p!r}")
    gx = xmin + (np.arange(p) + 0.5) * (xmax - xmin) / p
    gy = ymin + (np.arange(p) + 0.5) * (ymax - ymin) / p
    G = np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2)
    bits = activation_patterns(params, G, alpha)
    return int(len(np.unique(np.packbits(bits, axis=1), axis=0))) if bits.shape[1] else 1


def _convex_hull(P: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull of points (Andrew's monotone chain)."""
    P = np.unique(P, axis=0)
    if len(P) < 3:
        return P

    def half(points):
        out = []
        for q in points:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (q[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (q[0] - out[-2][0])) <= 0:
                out.pop()
            out.append(q)
        return out

    lower, upper = half(P), half(P[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _chord(P: np.ndarray, w: np.ndarray, c: float):
    """The segment of the line ``w.x + c = 0`` inside convex polygon ``P``, or None."""
    v = P @ w + c
    pts = []
    for k in range(len(P)):
        j = (k + 1) % len(P)
        if v[k] == 0:
            pts.append(P[k])
        elif v[k] * v[j] < 0:
            pts.append(P[k] + v[k] / (v[k] - v[j]) * (P[j] - P[k]))
    if len(pts) < 2:
        return None
    pts = np.array(pts)
    d = np.array([-w[1], w[0]])
    t = pts @ d
    p, q = pts[np.argmin(t)], pts[np.argmax(t)]
    return (p, q) if np.linalg.norm(q - p) > 1e-12 else None


def _check_regions(regions) -> None:
    """``regions`` must be :func:`regions_2d`'s output (a non-empty list of :class:`Region`)."""
    if not isinstance(regions, (list, tuple)) or not regions or not all(isinstance(r, Region) for r in regions):
        raise ValueError("regions must be a non-empty list of regions_2d's Region objects")


def _check_layer(regions, layer) -> None:
    """``layer`` must name a hidden layer (1-based) of the net whose ``regions`` these are."""
    n_layers = len(regions[0].pre)
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= layer <= n_layers:
        raise ValueError(f"layer must be an int in [1, {n_layers}], got {layer!r}")


def _check_output(regions, output) -> None:
    """``output`` must name an output unit (0-based) of the net whose ``regions`` these are."""
    n_out = regions[0].A.shape[0]
    if not isinstance(output, (int, np.integer)) or isinstance(output, bool) or not 0 <= output < n_out:
        raise ValueError(f"output must be an int in [0, {n_out}), got {output!r}")


def zero_sets_2d(regions: list, layer: int) -> list:
    """Zero sets of the units of hidden ``layer`` (1-based) as segments ``(unit, p, q)``.

    On each cell of the partition by layers ``< layer`` (the union of the regions that share those
    bits, a convex polygon) a layer-``layer`` unit's pre-activation is affine, so its zero set there is
    one straight segment; across cells it bends (the "bent hyperplanes" of Fig. 6.7). ``regions`` is
    the output of :func:`regions_2d`.
    """
    _check_regions(regions)
    _check_layer(regions, layer)
    start = sum(len(b) for _, b in regions[0].pre[:layer - 1])
    cells: dict = {}
    for r in regions:
        cells.setdefault(r.pattern[:start], []).append(r)
    out = []
    for members in cells.values():
        hull = _convex_hull(np.vstack([r.polygon for r in members]))
        Wl, bl = members[0].pre[layer - 1]
        for i in range(len(bl)):
            seg = _chord(hull, Wl[i], bl[i])
            if seg is not None:
                out.append((i, seg[0], seg[1]))
    return out


def boundary_segments_2d(regions: list, output: int = 0) -> list:
    """The zero set of output ``output`` inside every region, as segments ``(region index, p, q)``.

    On a region the output is the affine map ``A[output] . x + c[output]``, so its zero set there is
    one straight segment (or nothing): for a 2-input classifier these segments are its decision
    boundary, exactly, with one segment per region the boundary crosses (a hexagon crosses six regions
    of a 1x3 net, §6.2). A region on which the map is constant (zero gradient) contributes nothing.
    ``regions`` is the output of :func:`regions_2d`.
    """
    _check_regions(regions)
    _check_output(regions, output)
    out = []
    for i, r in enumerate(regions):
        w, c = r.A[output], float(r.c[output])
        if not np.any(w):
            continue
        seg = _chord(r.polygon, w, c)
        if seg is not None:
            out.append((i, seg[0], seg[1]))
    return out


def boundary_crossings_2d(regions: list, layer: int = 1, output: int = 0, tol: float = 1e-9) -> list:
    """Where the decision boundary crosses the zero set of a unit of hidden ``layer``: ``(unit, point, turn)``.

    The boundary (:func:`boundary_segments_2d`) is a chain of straight segments, one per region; it
    bends only where it leaves a region, i.e. on some unit's zero set. For each end of a segment that
    lies on the zero set of unit ``unit`` of ``layer`` (``|pre-activation| <= tol`` times its scale),
    reported once, from the side where the unit is active, ``turn`` is the angle in radians between the
    boundary's directions on the two sides: the angle between the output's gradients on the region and
    on the region across (the same pattern with that unit's bit flipped). It is 0 where the unit does
    not bend the boundary, and ``nan`` where the region across is not in ``regions`` (the crossing sits
    on a corner where two zero sets meet) or its gradient is 0. §6.2 (chapter 08) counts the
    first-layer lines a 3x8 net's boundary crosses: three form the "triangle" of the 1x3 net, and the
    thesis says a fourth joins later. ``regions`` is the output of :func:`regions_2d`.
    """
    _check_regions(regions)
    _check_layer(regions, layer)
    _check_output(regions, output)
    tol = V.nonnegative(tol, "tol")
    start = sum(len(b) for _, b in regions[0].pre[:layer - 1])
    index = {r.pattern: i for i, r in enumerate(regions)}
    out = []
    for i, p, q in boundary_segments_2d(regions, output):
        r = regions[i]
        Wl, bl = r.pre[layer - 1]
        for x in (p, q):
            scale = 1.0 + np.abs(Wl) @ np.abs(x) + np.abs(bl)
            for unit in np.nonzero((np.abs(Wl @ x + bl) <= tol * scale) & np.array(r.pattern[start:start + len(bl)]))[0]:
                across = list(r.pattern)
                across[start + unit] = False
                out.append((int(unit), x, _turn(r.A[output], regions, index.get(tuple(across)), output)))
    return out


def _turn(g: np.ndarray, regions: list, j, output: int) -> float:
    """Angle (radians) between gradient ``g`` and output ``output``'s gradient on ``regions[j]``
    (``nan`` if ``j`` is None or that gradient is 0)."""
    if j is None or not np.any(regions[j].A[output]):
        return float("nan")
    h = regions[j].A[output]
    return float(np.arccos(np.clip(g @ h / (np.linalg.norm(g) * np.linalg.norm(h)), -1.0, 1.0)))


def torch_default_params(widths, seed: int) -> list:
    """A ReLU MLP ``widths = (d_0, ..., d_L)`` with PyTorch's default ``nn.Linear`` initialisation,
    as float64 numpy ``[(W, b), ...]``: every weight and bias uniform in ``(-1/sqrt(fan_in),
    1/sqrt(fan_in))``, drawn layer by layer (W then b) from ``np.random.default_rng(seed)``.

    The thesis trains PyTorch models and names no other initialisation (§5.3, §6.1), so chapter 08's
    random and trained 1-D and 2-D nets start from this one. The draws are numpy's, so a net is the
    same on every machine; :func:`torch_default_batched` trains nets that start from it.
    """
    widths = V.sequence(widths, "widths")
    if len(widths) < 2:
        raise ValueError(f"widths must list at least an input and an output width, got {widths!r}")
    widths = [V.positive_int(w, f"widths[{i}]") for i, w in enumerate(widths)]
    rng = np.random.default_rng(V.seed(seed))
    out = []
    for a, b in zip(widths[:-1], widths[1:]):
        bound = 1.0 / np.sqrt(a)
        out.append((rng.uniform(-bound, bound, (b, a)), rng.uniform(-bound, bound, b)))
    return out


def torch_default_batched(widths, seeds, leak: float = 0.0):
    """A :class:`lib.nets.BatchedMLP` of ``len(seeds)`` float32 nets, net ``m`` starting from
    ``torch_default_params(widths, seeds[m])``; hidden units ReLU, or leaky ReLU with slope ``leak``.

    Train it with :func:`lib.train.train_full_batch` (one loss per net: the nets do not interact) and
    read the nets back with :func:`batched_params`. Chapter 08 trains its sine nets (Table 5.1) and
    its circle/annulus nets (§6.2) this way.
    """
    import torch

    from lib.nets import BatchedMLP

    seeds = V.sequence(seeds, "seeds", min_len=1)
    leak = V.slope(leak, "leak (leaky-ReLU slope)")
    nets = [torch_default_params(widths, V.seed(s, f"seeds[{i}]")) for i, s in enumerate(seeds)]
    model = BatchedMLP([int(w) for w in widths], seeds=[0] * len(seeds), activation="leaky_relu" if leak > 0 else "relu",
                       negative_slope=leak if leak > 0 else 0.01)
    with torch.no_grad():
        for l, (W, b) in enumerate(zip(model.weights, model.biases)):
            W.copy_(torch.as_tensor(np.stack([net[l][0] for net in nets])))
            b.copy_(torch.as_tensor(np.stack([net[l][1] for net in nets])))
    return model


def batched_params(model) -> list:
    """Every net of a :class:`lib.nets.BatchedMLP` as a float64 ``[(W, b), ...]`` list (for the exact
    geometry of this module; float32 weights are exact in float64)."""
    from lib.nets import BatchedMLP

    V.instance(model, "model", BatchedMLP, "a lib.nets.BatchedMLP")
    return [[(W.double().numpy(), b.double().numpy()) for W, b in model.model_params(m)] for m in range(model.n_models)]


def xor_net() -> list:
    """The hand-built XOR network of eq. (5.11) (= (5.21)) as a float64 ``[(A, b), (w, c)]`` list:
    ``v(x) = w^T ReLU(A x + b) + c`` with ``A = [[1, 1], [1, 1]]``, ``b = [1, 0]``, ``w = [1, -2]``, ``c = -1``,
    i.e. ``v = ReLU(s + 1) - 2 ReLU(s) - 1`` with ``s = x_1 + x_2``, as printed in the thesis (Ch. 5).

    Chapter 08 uses it in its first section (eqs. 5.11-5.15, 5.22, Fig. 5.2) and in its comparisons
    section (Fig. 7.5, where 1/2 is added to the output bias so that the sign classifies). A fresh list
    of fresh arrays on every call, so a caller may change it."""
    return [(np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([1.0, 0.0])), (np.array([[1.0, -2.0]]), np.array([-1.0]))]


def circle_annulus(n, seed) -> tuple[np.ndarray, np.ndarray]:
    """The circle versus annulus data of §4.2.1 as chapter 08 uses it (§6.2, Figs. 6.1/6.4; Fig. 7.2):
    ``n // 2`` points uniform in the disc of radius 0.5 (label +1) and the rest uniform in the annulus
    between ``0.5 sqrt(2)`` and 1 (label -1), drawn by :func:`lib.annulus_training.ball_vs_shell` from
    ``np.random.default_rng(seed)``, each coordinate then divided by its standard deviation (the thesis
    normalises its data; not centred, as the thesis' "standard deviation one"). Returns ``X`` (n, 2) float64
    and ``y`` (n,) in {+1, -1}. The two coordinates' scales agree only for large ``n`` (the chapter's 1,000):
    for a handful of points a coordinate's standard deviation can be tiny, and the scaled points no longer
    lie as a disc inside an annulus."""
    from lib.annulus_training import ball_vs_shell

    n = V.integer(n, "n", min=2)
    rng = np.random.default_rng(V.seed(seed))
    X, y = ball_vs_shell(2, n, 0.5, 0.5 * np.sqrt(2), 1.0, rng)
    return X[:, 0] / X[:, 0].std(0), y[:, 0]
