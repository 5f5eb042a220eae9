"""Functional vs parametric equivalence of ReLU networks (chapter 01_parametric_equivalence).

Phuong (2021), *Underspecification in Deep Learning*, Chapter 2 and Appendix A (the thesis version of
Phuong & Lampert, ICLR 2020). Networks are lists ``[(W_1, b_1), ..., (W_L, b_L)]`` of numpy float64
arrays, ``W_l`` of shape ``(d_l, d_{l-1})``; hidden layers use ReLU (or leaky ReLU with ``alpha``),
the last layer is affine (eq. 1.3). The domain is the open box ``(lo, hi)^{d_0}``.

Sections of this module:

* networks and their symmetries: :func:`forward`, :func:`apply_symmetry`, :func:`random_symmetry`
  (eqs. 2.1-2.4), :func:`canonicalize`, :func:`align`, :func:`equivalent`;
* parameter Jacobian and its rank against the symmetry bound: :func:`param_jacobian`,
  :func:`jacobian_rank`, and the part of the deficit that dead or always-active units explain,
  :func:`jacobian_deficit`;
* the conditions of Thm 2.1: :func:`check_general` (Def. A.11), :func:`check_transparent` (Def. A.12);
* exact 2-D geometry: :func:`linear_regions_2d`, :func:`region_edges`, :func:`greedy_layers`
  (canonical representation and dependency graph, Defs. A.3-A.5, Lemma 2.3) and
  :func:`dependency_paths` (the paths of Lemma A.17 that Thm 2.1 needs, and the path rule);
* the theorem's construction :func:`identifiable_network` (Lemma A.17) and black-box recovery
  :func:`recover` (the proof of Thm A.1 turned into an algorithm; its parts are the classes
  ``_Probe`` (queries), ``_FoldSearch`` (R1-R2), ``_UnitTest`` (R3, R5), ``_Recoverer`` (the level
  recursion) and ``_next_level`` (R4));
* one hidden layer of any width (the chapter's Proposition, a bounded-domain form of known results on
  one-hidden-layer symmetries): :func:`flip_sets` (the only extra symmetries are sign flips of units
  whose output-weighted rows sum to zero), :func:`one_layer_network`, :func:`recover_one_hidden_layer`;
* the counterexamples of the chapter's "Which assumptions matter?" section: :func:`counterexample`.

The float64 forward pass, pre-activations and parameter validation are :mod:`lib.nets`'s
(``forward_f64``, ``preactivations_f64``, ``as_float64_params``; re-exported here as :func:`forward`
and :func:`preactivations`), and the polygon splitting is :func:`lib.linear_regions.regions_2d`: exact
geometry of a ReLU net has one home, shared with chapter 08.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment

from lib import validate as V
from lib.linear_regions import polygon_area as _area
from lib.linear_regions import regions_2d
from lib.nets import as_float64_inputs as _check_X
from lib.nets import as_float64_params as _check_params
from lib.nets import check_leak as _check_alpha
from lib.nets import forward_f64 as forward
from lib.nets import preactivations_f64 as preactivations

__all__ = [
    "RecoveryError", "CountingOracle", "forward", "preactivations", "widths_of", "apply_symmetry",
    "random_symmetry", "canonicalize", "align", "equivalent", "random_network", "param_jacobian",
    "jacobian_rank", "check_general", "check_transparent", "Region", "Edge", "linear_regions_2d",
    "region_edges", "lemma21_lengths", "greedy_layers", "dependency_paths", "identifiable_network", "recover",
    "jacobian_deficit", "flip_sets", "one_layer_network", "recover_one_hidden_layer",
    "counterexample", "COUNTEREXAMPLES",
]


class RecoveryError(RuntimeError):
    """:func:`recover` could not certify a network that reproduces the black box."""


# ----------------------------------------------------------------------------------------------
# Networks, validation, symmetries (eqs. 1.3, 2.1-2.4)
# ----------------------------------------------------------------------------------------------

def _check_domain(domain) -> tuple[float, float]:
    return V.interval(domain, "domain")


def widths_of(params) -> list[int]:
    """The architecture ``(d_0, d_1, ..., d_L)`` of a network."""
    params = _check_params(params)
    return [params[0][0].shape[1]] + [W.shape[0] for W, _ in params]


def random_network(widths, seed: int, bias_std: float = 0.5) -> list[tuple[np.ndarray, np.ndarray]]:
    """A He-normal network with ``N(0, bias_std^2)`` biases (the 'typical' nets of the chapter)."""
    widths = _check_widths(widths, non_increasing=False)
    seed, bias_std = V.seed(seed), V.nonnegative(bias_std, "bias_std")
    rng = np.random.default_rng(seed)
    return [(rng.normal(0.0, np.sqrt(2.0 / a), (b_, a)), rng.normal(0.0, bias_std, b_))
            for a, b_ in zip(widths[:-1], widths[1:])]


def _check_widths(widths, non_increasing: bool) -> list[int]:
    widths = [V.positive_int(w, "widths[i]") for w in V.sequence(widths, "widths")]
    if len(widths) < 2 or min(widths) < 1:
        raise ValueError(f"widths must have >= 2 positive entries (d_0, ..., d_L), got {widths}")
    if non_increasing:
        hidden = widths[1:-1]
        if len(hidden) == 0:
            raise ValueError("Thm 2.1 needs at least one hidden layer")
        if any(a < b for a, b in zip(widths[:-2], widths[1:-1])) or min(hidden) < 2:
            raise ValueError(f"Thm 2.1 needs d_0 >= d_1 >= ... >= d_(L-1) >= 2, got {widths}")
    return widths


def apply_symmetry(params, perms, scales):
    """Apply permutations ``P_l`` and diagonal scalings ``M_l`` to the hidden layers (eqs. 2.1-2.4).

    New unit ``j`` of hidden layer ``l`` is old unit ``perms[l][j]`` times ``scales[l][j]``; each
    ``perms[l]`` must be an integer array holding a permutation of ``range(d_l)`` (a float array, even
    ``[0., 1., 2.]``, is refused: it cannot index):
    ``W_l <- M_l P_l W_l P_{l-1}^{-1} M_{l-1}^{-1}``, ``b_l <- M_l P_l b_l``. Positive scales preserve the
    function; a negative scale does not (ReLU has no sign-flip symmetry).
    """
    params = _check_params(params)
    hidden = [W.shape[0] for W, _ in params[:-1]]
    perms, scales = V.sequence(perms, "perms"), V.sequence(scales, "scales")
    if len(perms) != len(hidden) or len(scales) != len(hidden):
        raise ValueError(f"need one permutation and one scale vector per hidden layer ({len(hidden)})")
    out, prev_p, prev_m = [], None, None
    for l, (W, b) in enumerate(params):
        if prev_p is not None:
            W = W[:, prev_p] / prev_m[None, :]
        if l < len(hidden):
            p = np.asarray(perms[l])
            m = np.asarray(scales[l], dtype=np.float64)
            if (p.shape != (hidden[l],) or not np.issubdtype(p.dtype, np.integer)
                    or sorted(p.tolist()) != list(range(hidden[l]))):
                raise ValueError(f"perms[{l}] must be a permutation of range({hidden[l]})")
            if m.shape != (hidden[l],) or not np.all(np.isfinite(m)) or np.any(m == 0):
                raise ValueError(f"scales[{l}] must be {hidden[l]} finite non-zero numbers")
            W, b = m[:, None] * W[p], m * b[p]
            prev_p, prev_m = p, m
        out.append((W, b))
    return out


def random_symmetry(params, seed: int, log_std: float = 0.5):
    """Random permutations and log-normal positive scales, one per hidden layer: ``(perms, scales)``."""
    params = _check_params(params)
    seed, log_std = V.seed(seed), V.nonnegative(log_std, "log_std")
    rng = np.random.default_rng(seed)
    hidden = [W.shape[0] for W, _ in params[:-1]]
    return ([rng.permutation(d) for d in hidden], [np.exp(rng.normal(0.0, log_std, d)) for d in hidden])


def canonicalize(params):
    """Unit-norm incoming ``(w, b)`` for every hidden unit, the scale pushed to the next layer.

    Two networks are equivalent up to positive rescaling iff their canonical forms are equal;
    a unit with zero incoming weights is left as it is.
    """
    params = _check_params(params)
    out, r_prev = [], None
    for l, (W, b) in enumerate(params):
        if r_prev is not None:
            W = W * r_prev[None, :]
        if l < len(params) - 1:
            r = np.sqrt((W ** 2).sum(1) + b ** 2)
            r = np.where(r > 0, r, 1.0)
            W, b, r_prev = W / r[:, None], b / r, r
        out.append((W, b))
    return out


def align(params_a, params_b):
    """Find ``P_l, M_l`` mapping network ``a`` onto ``b`` (eq. 2.5) and the residual error.

    Layer by layer, units are matched by the Hungarian method on ``|cos|`` of canonical rows, so that
    a sign-flipped unit is matched too and shows up as a negative scale. Returns ``(perms, scales,
    max_err)``: ``perms[l][j]`` is the unit of ``a`` that unit ``j`` of ``b`` corresponds to,
    ``scales[l][j]`` the least-squares factor ``M_l`` (negative if the unit is flipped), and
    ``max_err`` the max abs difference between the canonical forms of ``b`` and of ``a`` permuted.
    An all-zero unit (incoming weights and bias) matches an all-zero unit of the other net with scale 1,
    since its incoming weights fix no scale: two nets that differ by the rescaling of a zero unit and its
    outgoing weights (a P/M symmetry) then differ in those outgoing weights, and ``max_err`` shows it.
    """
    a, b = _check_params(params_a, "params_a"), _check_params(params_b, "params_b")
    if widths_of(a) != widths_of(b):
        raise ValueError(f"params_a and params_b: architectures differ: {widths_of(a)} vs {widths_of(b)}")
    ca, cb = canonicalize(a), canonicalize(b)
    perms, n_hidden = [], len(a) - 1
    for l in range(n_hidden):
        cur = apply_symmetry(ca, perms + [np.arange(W.shape[0]) for W, _ in ca[l:-1]],
                             [np.ones(W.shape[0]) for W, _ in ca[:-1]])
        Ra = np.hstack([cur[l][0], cur[l][1][:, None]])
        Rb = np.hstack([cb[l][0], cb[l][1][:, None]])
        na = np.linalg.norm(Ra, axis=1)[:, None]
        nb = np.linalg.norm(Rb, axis=1)[None, :]
        # |cos| of the rows; a pair with an all-zero row has |cos| 0 (guarding the product, not each
        # norm: 1e-300 * 1e-300 underflows to 0, and 0 / 0 made the matching fail on two zero rows)
        rows, cols = linear_sum_assignment(1.0 - np.abs(Ra @ Rb.T) / np.maximum(na * nb, 1e-300))
        p = np.empty(len(rows), dtype=int)
        p[cols] = rows
        perms.append(p)
    ones = [np.ones(W.shape[0]) for W, _ in a[:-1]]
    a_perm = apply_symmetry(a, perms, ones)
    scales, m_prev = [], None
    for l in range(n_hidden):
        Wa = a_perm[l][0] if m_prev is None else a_perm[l][0] / m_prev[None, :]
        Ra = np.hstack([Wa, a_perm[l][1][:, None]])
        Rb = np.hstack([b[l][0], b[l][1][:, None]])
        m = (Ra * Rb).sum(1) / np.maximum((Ra * Ra).sum(1), 1e-300)
        # an all-zero unit of a maps onto an all-zero unit of b by any scale: take 1 (its outgoing weights
        # are then compared as they are); onto a non-zero unit by none (0, as computed)
        m = np.where(~Ra.any(1) & ~Rb.any(1), 1.0, m)
        scales.append(m)
        m_prev = np.where(m != 0, m, 1.0)
    cap = canonicalize(a_perm)
    max_err = max(max(np.abs(Wa - Wb).max(), np.abs(ba - bb).max()) for (Wa, ba), (Wb, bb) in zip(cap, cb))
    return perms, scales, float(max_err)


def equivalent(params_a, params_b, atol: float = 1e-6) -> bool:
    """True iff ``b`` equals ``a`` up to permutations and *positive* scalings (eq. 2.5), within ``atol``.

    The canonical forms matching (``align``'s error <= ``atol``) already implies positive scales for any
    small ``atol``: canonical rows have unit norm, so a flipped unit leaves an error of about 2. The
    sign test below decides only for a large ``atol`` (or an all-zero unit, whose scale ``align`` sets to 1).
    Networks of different architectures (another input width included) are not equivalent: the answer is
    ``False``, not an error (chapter 01 compares a recovered network with the black box this way; pinned by
    a test). Each network is still checked on its own (``params_a``, ``params_b`` named).
    """
    atol = V.nonnegative(atol, "atol")
    a, b = _check_params(params_a, "params_a"), _check_params(params_b, "params_b")
    if [W.shape for W, _ in a] != [W.shape for W, _ in b]:
        return False
    _, scales, err = align(params_a, params_b)
    return bool(err <= atol and all(np.all(m > 0) for m in scales))


# ----------------------------------------------------------------------------------------------
# Parameter Jacobian (functional dimension, beyond the document)
# ----------------------------------------------------------------------------------------------

def param_jacobian(params, X, alpha: float = 0.0) -> np.ndarray:
    """Analytic ``d h_theta(x_n) / d theta`` for a scalar-output net: shape ``(n, #theta)``.

    Parameters are ordered ``W_1.ravel(), b_1, W_2.ravel(), b_2, ...``.
    """
    params, alpha = _check_params(params), _check_alpha(alpha)
    if params[-1][0].shape[0] != 1:
        raise ValueError("param_jacobian needs a scalar output (d_L = 1)")
    X = _check_X(X, params[0][0].shape[1])
    Zs, slopes = [X], []
    for W, b in params[:-1]:
        U = Zs[-1] @ W.T + b
        s = np.where(U >= 0, 1.0, alpha)
        slopes.append(s)
        Zs.append(U * s)
    delta, blocks = np.ones((X.shape[0], 1)), []
    for l in range(len(params) - 1, -1, -1):
        blocks.append(delta)
        blocks.append((delta[:, :, None] * Zs[l][:, None, :]).reshape(X.shape[0], -1))
        if l > 0:
            delta = (delta @ params[l][0]) * slopes[l - 1]
    return np.hstack(blocks[::-1])


def jacobian_rank(params, X, rel_tol: float = 1e-9, alpha: float = 0.0) -> tuple[int, int]:
    """``(rank J, #theta - sum_{l<L} d_l)``: the functional dimension and its bound under P/M symmetry."""
    rel_tol = V.positive(rel_tol, "rel_tol")
    J = param_jacobian(params, X, alpha)
    s = np.linalg.svd(J, compute_uv=False)
    rank = int((s > rel_tol * s[0]).sum()) if s[0] > 0 else 0
    return rank, J.shape[1] - sum(W.shape[0] for W, _ in _check_params(params)[:-1])


def jacobian_deficit(params, X, rel_tol: float = 1e-9) -> dict:
    """Split the Jacobian-rank deficit into the part that dead and always-active units explain, and the rest.

    Directions of parameter space along which ``h`` stays the same on ``X`` to first order, known in
    advance: the P/M scaling of each hidden unit (the ``sum_{l<L} d_l`` directions of the bound of
    :func:`jacobian_rank`); for a unit inactive at every point of ``X`` (dead), each of its incoming
    weights and bias and outgoing weights; for a unit active at every point (always active, so it acts
    linearly), the bias shift ``b_l[i] += t, b_{l+1} -= t W_{l+1}[:, i]`` (counterexamples 1 and 2 of
    the chapter). ``explained`` = dim(span of all these) - number of hidden units: the deficit these
    units account for; ``other`` = ``deficit - explained``: flat directions none of them accounts for.
    ``residual`` = ``max |J v| / (max |J| |v|)`` over the known directions ``v`` (0 up to rounding,
    since they are flat by construction). Used by chapter 01's functional-dimension study.
    """
    params = _check_params(params)
    rank, bound = jacobian_rank(params, X, rel_tol)
    J = param_jacobian(params, X)
    offsets, k = [], 0
    for W, b in params:
        offsets.append((k, k + W.size))            # where W_l and b_l start in the flat parameter vector
        k += W.size + b.size
    vecs, n_dead, n_active = [], 0, 0

    def unit_vec(entries):
        v = np.zeros(k)
        for idx, val in entries:
            v[idx] = val
        return v

    for l, U in enumerate(preactivations(params, X)):
        (W, b), (W_next, _) = params[l], params[l + 1]
        (w0, b0), (w1, b1) = offsets[l], offsets[l + 1]
        d_in, d_out = W.shape[1], W_next.shape[0]
        for i in range(W.shape[0]):
            incoming = [(w0 + i * d_in + j, W[i, j]) for j in range(d_in)] + [(b0 + i, b[i])]
            outgoing = [(w1 + r * W.shape[0] + i, -W_next[r, i]) for r in range(d_out)]
            vecs.append(unit_vec(incoming + outgoing))                      # the P/M scaling direction
            if np.all(U[:, i] < 0):
                n_dead += 1
                vecs += [unit_vec([(idx, 1.0)]) for idx, _ in incoming + outgoing]
            elif np.all(U[:, i] > 0):
                n_active += 1
                vecs.append(unit_vec([(b0 + i, 1.0)] + [(b1 + r, -W_next[r, i]) for r in range(d_out)]))
    K = np.array(vecs)
    s = np.linalg.svd(K, compute_uv=False)
    n_hidden = sum(W.shape[0] for W, _ in params[:-1])
    explained = int((s > rel_tol * s[0]).sum()) - n_hidden
    residual = float(np.abs(J @ K.T).max() / (np.abs(J).max() * np.abs(K).max(1).max()))
    return {"rank": rank, "bound": bound, "deficit": bound - rank, "explained": explained,
            "other": bound - rank - explained, "dead": n_dead, "always_active": n_active, "residual": residual}


# ----------------------------------------------------------------------------------------------
# Exact 2-D geometry: linear regions, zero sets, fold-set (Lemma 2.1), greedy layers (Algorithm G)
# ----------------------------------------------------------------------------------------------

@dataclass
class Region:
    """A linear region: convex polygon, activation pattern, local affine maps (valid on its closure)."""
    poly: np.ndarray                      # (k, 2) vertices, counter-clockwise
    pattern: tuple                        # activation bits of all hidden units, layer by layer
    pre: list = field(default_factory=list)  # per hidden layer: (W_loc (d_l, 2), b_loc (d_l,))
    out: tuple = ()                       # output affine map (W_loc (d_L, 2), b_loc (d_L,))


@dataclass
class Edge:
    """A polygon edge seen from one region: zero-set membership and whether ``h`` folds across it."""
    p: np.ndarray
    q: np.ndarray
    region: int
    neighbour: int                        # -1 on the domain boundary
    units: list                           # hidden units (layer, index), 1-based layer, zero on the edge
    fold: bool

    @property
    def length(self) -> float:
        return float(np.linalg.norm(self.q - self.p))


def linear_regions_2d(params, domain=(-1, 1), alpha: float = 0.0) -> list[Region]:
    """Exact linear regions of a 2-input net on the box ``domain^2`` by polygon splitting.

    The splitting is :func:`lib.linear_regions.regions_2d` (every polygon is cut by the local line of
    each unit of the next layer, so all zero sets of all hidden units lie on polygon edges; slivers
    with area < 1e-14 are dropped); here its regions are returned as this module's :class:`Region`.
    """
    lo, hi = _check_domain(domain)
    if _check_params(params)[0][0].shape[1] != 2:
        raise ValueError("params: linear_regions_2d needs a 2-input network")
    return [Region(r.polygon, r.pattern, r.pre, (r.A, r.c)) for r in regions_2d(params, (lo, hi, lo, hi), alpha)]


def region_edges(params, regions: list[Region], domain=(-1, 1), alpha: float = 0.0) -> list[Edge]:
    """All region edges with the hidden units vanishing on them and whether ``h`` folds across them.

    The neighbour across an edge is found by the activation pattern just outside its midpoint; a fold
    is an edge where the output gradient differs between the two sides (Def. A.8).
    """
    params = _check_params(params)
    lo, hi = _check_domain(domain)
    regions = _items(regions, "regions", Region)
    by_pattern = {r.pattern: k for k, r in enumerate(regions)}
    edges = []
    for k, r in enumerate(regions):
        P = r.poly
        for j in range(len(P)):
            p, q = P[j], P[(j + 1) % len(P)]
            d = q - p
            length = np.linalg.norm(d)
            if length < 1e-12:
                continue
            mid = 0.5 * (p + q)
            nu = np.array([d[1], -d[0]]) / length * (1.0 if _area(P) > 0 else -1.0)  # outward normal
            probe = mid + 1e-7 * nu
            units = []
            for l, (Wl, bl) in enumerate(r.pre, start=1):
                scale = 1e-9 * (1.0 + np.abs(Wl).sum(1) + np.abs(bl))
                hit = np.where((np.abs(Wl @ p + bl) <= scale) & (np.abs(Wl @ q + bl) <= scale))[0]
                units += [(l, int(i)) for i in hit]
            if np.any(probe <= lo) or np.any(probe >= hi):
                edges.append(Edge(p, q, k, -1, units, False))
                continue
            bits = tuple(bool(v) for U in preactivations(params, probe[None], alpha) for v in (U[0] >= 0))
            nb = by_pattern.get(bits, -1)
            g_here = r.out[0]
            g_there = regions[nb].out[0] if nb >= 0 else g_here
            fold = bool(np.abs(g_here - g_there).max() > 1e-9 * (1.0 + np.abs(g_here).max()))
            edges.append(Edge(p, q, k, nb, units, fold))
    return edges


def _items(value, name: str, cls) -> list:
    """``value`` as a list of ``cls`` objects (the output of :func:`linear_regions_2d` or
    :func:`region_edges`); a TypeError naming ``name`` otherwise."""
    value = V.sequence(value, name)
    if not all(isinstance(v, cls) for v in value):
        raise TypeError(f"{name} must be a list of {cls.__name__} objects, as lib.equivalence returns them")
    return value


def lemma21_lengths(edges: list[Edge]) -> dict:
    """Lengths of interior edges that are zero set only, fold only, or both (Lemma 2.1, eq. 2.7).

    Each interior edge is seen from its two regions, hence the factor 1/2.
    """
    out = {"zero_and_fold": 0.0, "zero_not_fold": 0.0, "fold_not_zero": 0.0}
    for e in _items(edges, "edges", Edge):
        if e.neighbour < 0:
            continue
        zero = bool(e.units)
        if zero and e.fold:
            out["zero_and_fold"] += 0.5 * e.length
        elif zero:
            out["zero_not_fold"] += 0.5 * e.length
        elif e.fold:
            out["fold_not_zero"] += 0.5 * e.length
    return out


def _orient_key(key):
    """A hyperplane key ``[n, c]`` (``n x + c = 0``) with its sign fixed: largest entry positive, so that
    the two orientations of one hyperplane get one key (``greedy_layers`` and the fold search of
    :func:`recover` compare keys entry by entry)."""
    return key * (1.0 if key[np.argmax(np.abs(key))] > 0 else -1.0)


def _line_key(p, q):
    """The key of the line through ``p`` and ``q`` (unit normal), oriented by :func:`_orient_key`."""
    d = q - p
    n = np.array([-d[1], d[0]]) / np.linalg.norm(d)
    return _orient_key(np.array([n[0], n[1], -n @ p]))


def _interval_union(iv: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out = []
    for s, t in sorted(iv):
        if out and s <= out[-1][1] + 1e-10:
            out[-1] = (out[-1][0], max(out[-1][1], t))
        else:
            out.append((s, t))
    return out


def _line_params(key, pts):
    """Coordinates of points along the line ``key`` (direction perpendicular to its normal)."""
    return pts @ np.array([-key[1], key[0]])


def _chord(key, poly) -> tuple[float, float] | None:
    """The segment of line ``key`` inside convex polygon ``poly`` as an interval, or None."""
    v = poly @ key[:2] + key[2]
    pts = [poly[k] for k in range(len(poly)) if abs(v[k]) < 1e-10]
    for k in range(len(poly)):
        j = (k + 1) % len(poly)
        if v[k] * v[j] < 0 and abs(v[k]) >= 1e-10 and abs(v[j]) >= 1e-10:
            pts.append(poly[k] + v[k] / (v[k] - v[j]) * (poly[j] - poly[k]))
    if len(pts) < 2:
        return None
    t = _line_params(key, np.array(pts))
    return (float(t.min()), float(t.max())) if t.max() - t.min() > 1e-12 else None


def greedy_layers(regions: list[Region], edges: list[Edge], max_order: int = 12) -> dict:
    """Canonical representation of the fold-set (greedy layer assignment, §2.4) and its dependency graph.

    Order 1: full lines inside the fold-set. Order k+1: pieces ``{x in P : w.x + c = 0}`` fully inside
    the fold-set, for each cell ``P`` of the partition by the pieces of order <= k (Defs. A.2-A.4).
    Edge ``H -> G`` of the dependency graph (Def. A.5) iff order(H) < order(G) and an end point of
    ``G`` lies on ``H`` (in its relative interior: pieces are open at their ends). Returns ``pieces`` (dicts with ``order``, ``segments``, ``layer`` = the true
    layer of the units vanishing there), ``graph`` (list of (parent, child)) and ``longest_path``
    (length of the longest directed path starting at each piece, Lemma 2.3).
    """
    regions, edges = _items(regions, "regions", Region), _items(edges, "edges", Edge)
    max_order = V.positive_int(max_order, "max_order")
    fold = [k for k, e in enumerate(edges) if e.fold]
    keys = {k: _line_key(edges[k].p, edges[k].q) for k in fold}
    order = {}
    pieces = []

    def find(parent, x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for k_order in range(1, max_order + 1):
        todo = [k for k in fold if k not in order]
        if not todo:
            break
        parent = list(range(len(regions)))
        for k, e in enumerate(edges):
            if e.neighbour >= 0 and order.get(k) is None:
                ra, rb = find(parent, e.region), find(parent, e.neighbour)
                parent[ra] = rb
        cells: dict[int, list[int]] = {}
        for r in range(len(regions)):
            cells.setdefault(find(parent, r), []).append(r)
        if k_order == 1:
            cells = {0: list(range(len(regions)))}       # order 1: full lines across the whole domain
        groups: list[tuple[int, np.ndarray, list[int]]] = []
        for k in todo:
            cell = 0 if k_order == 1 else find(parent, edges[k].region)
            for g in groups:
                if g[0] == cell and np.abs(g[1] - keys[k]).max() < 1e-7:
                    g[2].append(k)
                    break
            else:
                groups.append((cell, keys[k], [k]))
        new = []
        for cell, key, members in groups:
            chord = _interval_union([c for r in cells[cell] if (c := _chord(key, regions[r].poly))])
            covered = _interval_union([tuple(sorted(_line_params(key, np.array([edges[k].p, edges[k].q]))))
                                       for k in members])
            if abs(sum(t - s for s, t in chord) - sum(t - s for s, t in covered)) < 1e-8:
                new.append((key, members, covered))
        if not new:
            break
        for key, members, covered in new:
            for k in members:
                order[k] = k_order
            layers = [l for k in members for l, _ in edges[k].units]
            direction = np.array([-key[1], key[0]])
            foot = -key[2] * key[:2]
            pieces.append({"order": k_order, "key": key,
                           "segments": [(foot + s * direction, foot + t * direction) for s, t in covered],
                           "layer": int(np.bincount(layers).argmax()) if layers else 0})
    graph = []
    for gi, G in enumerate(pieces):
        ends = [pt for seg in G["segments"] for pt in seg]
        for hi_, H in enumerate(pieces):
            if H["order"] >= G["order"]:
                continue
            if any(_on_segments(pt, H["segments"]) for pt in ends):
                graph.append((hi_, gi))
    longest = [0] * len(pieces)
    for gi in sorted(range(len(pieces)), key=lambda i: -pieces[i]["order"]):
        longest[gi] = max([1 + longest[c] for p, c in graph if p == gi], default=0)
    return {"pieces": pieces, "graph": graph, "longest_path": longest,
            "unassigned_length": 0.5 * sum(edges[k].length for k in fold if k not in order)}


def _on_segments(pt, segments, tol: float = 1e-8) -> bool:
    """Is ``pt`` in the relative interior of one of the segments? (A piece is open at its ends.)"""
    for p, q in segments:
        d = q - p
        t = (pt - p) @ d / (d @ d)
        eps = tol / np.sqrt(d @ d)
        if eps < t < 1.0 - eps and np.linalg.norm(p + t * d - pt) < tol:
            return True
    return False


# ----------------------------------------------------------------------------------------------
# The conditions of Theorem 2.1: general (Def. A.11) and transparent (Def. A.12)
# ----------------------------------------------------------------------------------------------

def _indicator_tuples(dims, nontrivial: bool):
    for bits in itertools.product(*[list(itertools.product((0.0, 1.0), repeat=d)) for d in dims]):
        if nontrivial and any(sum(bb) == 0 for bb in bits):
            continue
        yield [np.array(bb) for bb in bits]


def check_general(params, domain=(-1, 1), max_products: int = 1 << 14) -> dict:
    """Check the three conditions of a *general* network (Def. A.11) and report their margins.

    * ``cond2`` (eq. 2.6 / A.16-A.17): for all ``k <= l`` and 0/1 diagonals, the rank of
      ``I_l W_l ... I_k W_k`` equals ``min(d_{k-1}, rank I_k, ..., rank I_l)``; margin = smallest
      relevant singular value (relative). Enumerates all indicator tuples (small nets only).
    * ``cond3`` (A.11): no two local linear pieces ``[w_i^l(I), b_i^l(I)]`` (A.14-A.15) are multiples
      of each other; margin = min distance between the unit pieces, up to sign (0 for a zero piece).
    * ``cond1`` (A.12, 2-input nets only): no local optimum of a pre-activation ``h_i^{1:l}`` has value
      0; margin = min ``|h_i^{1:l}|`` over its local optima at region vertices and on flat regions.
    Each condition holds if its margin exceeds 1e-9. For a network without exactly 2 inputs condition 1
    is not computed: ``cond1`` is ``None`` and ``margin1`` NaN (defined so, pinned by a test).
    """
    params = _check_params(params)
    max_products = V.positive_int(max_products, "max_products")
    widths = widths_of(params)
    L = len(params)
    n_prod = sum(2 ** sum(widths[k:l + 1]) for k in range(1, L + 1) for l in range(k, L + 1))
    if n_prod > max_products:
        raise ValueError(f"check_general enumerates {n_prod} indicator products (> {max_products}); "
                         "use a smaller network")
    margin2 = np.inf
    for k in range(1, L + 1):
        for l in range(k, L + 1):
            dims = widths[k:l + 1]
            for I in _indicator_tuples(dims, nontrivial=False):
                if l == L:
                    I[-1] = np.ones(widths[L])
                M = np.eye(widths[k - 1])
                for j, Ij in zip(range(k, l + 1), I):
                    M = Ij[:, None] * (params[j - 1][0] @ M)
                need = min([widths[k - 1]] + [int(Ij.sum()) for Ij in I])
                if need == 0:
                    continue
                s = np.linalg.svd(M, compute_uv=False)
                margin2 = min(margin2, s[need - 1] / max(1.0, s[0]) if len(s) >= need else 0.0)
    pieces = []
    for l in range(1, L):
        for I in _indicator_tuples(widths[1:l], nontrivial=True):
            w, c = params[0][0].copy(), params[0][1].copy()
            for j in range(1, l):
                w, c = params[j][0] @ (I[j - 1][:, None] * w), params[j][0] @ (I[j - 1] * c) + params[j][1]
            pieces += [np.append(w[i], c[i]) for i in range(widths[l])]
    margin3 = np.inf
    for u, v in itertools.combinations(pieces, 2):
        nu, nv = np.linalg.norm(u), np.linalg.norm(v)
        if nu < 1e-12 or nv < 1e-12:
            margin3 = 0.0
            continue
        uh, vh = u / nu, v / nv               # 2 sin(angle / 2): accurate for nearly parallel pieces
        margin3 = min(margin3, float(min(np.linalg.norm(uh - vh), np.linalg.norm(uh + vh))))
    margin1 = np.nan
    if widths[0] == 2:
        margin1 = _cond1_margin(params, domain)
    result = {"cond1": bool(margin1 > 1e-9) if widths[0] == 2 else None, "cond2": bool(margin2 > 1e-9),
              "cond3": bool(margin3 > 1e-9), "margin1": margin1, "margin2": float(margin2),
              "margin3": float(margin3)}
    result["general"] = bool(result["cond2"] and result["cond3"] and result["cond1"] is not False)
    return result


def _cond1_margin(params, domain) -> float:
    """Min ``|h_i^{1:l}|`` over the local optima of every pre-activation (condition 1, exact in 2-D).

    A PWL function has a local optimum at a vertex iff its directional derivatives along all edges
    leaving the vertex (the boundary rays of the sectors around it) have one sign; on a flat region
    every point is an optimum.
    """
    lo, hi = _check_domain(domain)
    vals, rays = [], {}
    for r in linear_regions_2d(params, domain):
        P = r.poly
        for Wl, bl in r.pre:            # flat pieces: a constant pre-activation is a local optimum
            flat = np.abs(Wl).max(1) < 1e-12
            vals += list(np.abs(Wl[flat] @ P[0] + bl[flat]))
        for k in range(len(P)):
            v = P[k]
            if np.any(v <= lo + 1e-9) or np.any(v >= hi - 1e-9):
                continue                # the domain is open: optima on its boundary do not count
            entry = rays.setdefault(tuple(np.round(v, 9)), {"value": np.concatenate([W @ v + b for W, b in r.pre]),
                                                               "slopes": []})
            grads = np.vstack([W for W, _ in r.pre])
            for w in (P[k - 1], P[(k + 1) % len(P)]):
                d = (w - v) / np.linalg.norm(w - v)
                entry["slopes"].append(grads @ d)
    for entry in rays.values():
        S = np.array(entry["slopes"])
        tol = 1e-12 * (1.0 + np.abs(S).max())
        opt = np.all(S >= -tol, axis=0) | np.all(S <= tol, axis=0)
        vals += list(np.abs(entry["value"][opt]))
    return float(min(vals)) if vals else np.inf


def check_transparent(params, domain=(-1, 1), n_samples: int = 20000, seed: int = 0) -> bool:
    """Every input has an active unit (``h_i^{1:l} >= 0``) in every hidden layer (Def. A.12).

    Exact for 2-input nets (no linear region has an all-inactive layer); otherwise checked on
    ``n_samples`` uniform points plus the corners of the box.
    """
    params = _check_params(params)
    lo, hi = _check_domain(domain)
    n_samples, seed = V.positive_int(n_samples, "n_samples"), V.seed(seed)
    d0 = params[0][0].shape[1]
    if d0 == 2:
        widths = widths_of(params)
        for r in linear_regions_2d(params, domain):
            start = 0
            for d in widths[1:-1]:
                if not any(r.pattern[start:start + d]):
                    return False
                start += d
        return True
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.uniform(lo, hi, (n_samples, d0)),
                   np.array(list(itertools.product((lo, hi), repeat=min(d0, 12))))[:, :d0]
                   if d0 <= 12 else np.zeros((0, d0))])
    return bool(all(np.all(U.max(1) >= 0) for U in preactivations(params, X)))


# ----------------------------------------------------------------------------------------------
# The construction of Lemma A.17 (identifiable networks)
# ----------------------------------------------------------------------------------------------

def identifiable_network(widths, seed: int, domain=(-1, 1), max_tries: int = 5000, paths: bool = False):
    """A network with non-increasing widths built after Lemma A.17; with ``paths=True`` one that has its paths.

    Layer by layer, on samples of the current all-on region ``U_l`` (the input-space image of
    ``P_l``, eq. A.48): unit 1 crosses ``U_l`` (A.43; for ``l >= 2`` its direction is close to
    ``(1, ..., 1)``, a hint towards meeting every facet ``z_i = 0`` of A.53); unit 2 is nearly
    antiparallel to unit 1, which makes the layer transparent (A.44); further units cross ``U_l`` (A.45).
    A draw is accepted if, on 20 000 samples and the box corners, every layer is transparent with
    margin 1e-3, every unit changes sign inside ``U_l`` by more than 0.05 either way, and ``U_L`` keeps
    at least 50 samples; with two inputs, transparency is also confirmed exactly on every linear region.
    Random weights make the network general with probability 1 (Claim, line 338).

    The draw does **not** enforce the dependency paths of Lemma A.17 (A.53) inside the domain, which
    Thm 2.1 needs, and often lacks them. ``paths=True`` (2-input networks only) keeps drawing until
    :func:`dependency_paths` confirms them exactly on every layer, so that the theorem applies.
    ``max_tries`` bounds the number of draws in both cases.
    """
    widths = _check_widths(widths, non_increasing=True)
    lo, hi = _check_domain(domain)
    seed, max_tries = V.seed(seed), V.positive_int(max_tries, "max_tries")
    paths = V.boolean(paths, "paths")
    if paths and widths[0] != 2:
        raise ValueError(f"paths: the dependency paths are checked exactly only for 2-input networks, got {widths}")
    for net in _lemma_a17_draws(widths, np.random.default_rng(int(seed)), (lo, hi), max_tries):
        if not paths or all(d["ok"] for d in dependency_paths(net, (lo, hi))):
            return net
    raise RuntimeError(f"no network accepted after {max_tries} draws for widths {widths}"
                       + (" with the dependency paths" if paths else ""))


def _lemma_a17_draws(widths, rng, domain, max_tries: int):
    """The accepted draws of :func:`identifiable_network`, in order, out of ``max_tries`` draws."""
    lo, hi = domain
    d0 = widths[0]
    corners = np.array(list(itertools.product((lo, hi), repeat=d0)), dtype=np.float64)
    X = np.vstack([rng.uniform(lo, hi, (20000, d0)), corners])
    for _ in range(max_tries):
        params, Z, on = [], X, np.ones(len(X), bool)
        for d in widths[1:-1]:
            for _ in range(50):                      # redraw this layer before starting over
                layer = _draw_layer(rng, Z, on, d, first=not params)
                if layer is not None:
                    break
            else:
                break
            W, b, U, on = layer
            params.append((W, b))
            Z = np.maximum(U, 0.0)
        else:
            d_out = widths[-1]
            W_out = rng.choice([-1.0, 1.0], (d_out, widths[-2])) * rng.uniform(0.5, 1.5, (d_out, widths[-2]))
            net = params + [(W_out, rng.normal(0.0, 0.5, d_out))]
            # samples can miss a small region where a layer is all off (seed 17000 of (2,2,2,2,1) did):
            # with two inputs, confirm transparency exactly over every linear region
            if d0 != 2 or check_transparent(net, domain):
                yield net


def dependency_paths(params, domain=(-1, 1)) -> list[dict]:
    """Lemma A.17's dependency paths, checked exactly on a 2-input network, one hidden layer at a time.

    Thm 2.1 needs them: the proof of Thm A.1 pins the units of layer ``l`` as the ``d_l`` hyperplanes of
    the fold-set of the truncation ``h^{l:L}`` that start directed paths of length ``L-1-l`` in its
    dependency graph (Lemma A.17 with A.53; Lemma 2.3 says only layer-``l`` hyperplanes can). Here the
    truncation is read in input space on ``U_l``, the open convex region where every unit of the layers
    before ``l`` is active (on it ``x -> z_{l-1}`` is affine, the input-space copy of ``P_l``, eq. A.48):
    the fold-set of ``h`` inside ``U_l`` gets its canonical representation and dependency graph
    (:func:`greedy_layers` on the linear regions inside ``U_l``, whose boundary counts as the domain's).

    Returns one dict per hidden layer ``l``: ``layer``; ``need`` = ``L-1-l``; ``lines``, the (true layer,
    longest path) of every order-1 piece (every full line of the fold-set in ``U_l``); ``selected``, the
    true layers of the lines whose longest path is ``>= need`` (the dependency-path rule of Lemma 2.3:
    it reads the fold-set only, and can pick no line of a deeper layer); and ``ok``, True iff the rule
    picks exactly the ``d_l`` units of layer ``l`` (the paths exist).
    """
    params = _check_params(params)
    widths = widths_of(params)
    if widths[0] != 2:
        raise ValueError("params: dependency_paths needs a 2-input network")
    regions = linear_regions_2d(params, domain)
    edges = region_edges(params, regions, domain)
    out, start, L = [], 0, len(params)
    for l in range(1, L):
        keep = {k: j for j, k in enumerate(k for k, r in enumerate(regions) if all(r.pattern[:start]))}
        sub_edges = [Edge(e.p, e.q, keep[e.region], keep.get(e.neighbour, -1), e.units,
                          e.fold and e.neighbour in keep) for e in edges if e.region in keep]
        g = greedy_layers([regions[k] for k in keep], sub_edges)
        lines = [(p["layer"], m) for p, m in zip(g["pieces"], g["longest_path"]) if p["order"] == 1]
        selected = sorted(layer for layer, m in lines if m >= L - 1 - l)
        out.append({"layer": l, "need": L - 1 - l, "lines": lines, "selected": selected,
                    "ok": selected == [l] * widths[l]})
        start += widths[l]
    return out


def _draw_layer(rng, Z, on, d, first: bool):
    """One layer of :func:`identifiable_network` on activations ``Z`` (all-on mask ``on``), or None."""
    dp = Z.shape[1]
    ZU = Z[on]
    w1 = rng.normal(size=dp) if first else 1.0 / np.sqrt(dp) + 0.3 * rng.normal(size=dp)
    w1 /= np.linalg.norm(w1)
    w2 = -w1 + 0.3 * rng.normal(size=dp) / np.sqrt(dp)
    rows = [w1, w2 / np.linalg.norm(w2)] + [v / np.linalg.norm(v) for v in rng.normal(size=(d - 2, dp))]
    qs = [rng.uniform(0.15, 0.4), rng.uniform(0.2, 0.8)] + list(rng.uniform(0.3, 0.7, d - 2))
    W = np.array(rows)
    b = np.array([-np.quantile(ZU @ w, q) for w, q in zip(rows, qs)])
    m = rng.uniform(0.5, 2.0, d)
    W, b = m[:, None] * W, m * b
    U = Z @ W.T + b
    UU = U[on]
    if U.max(1).min() < 1e-3 or np.any(UU.min(0) > -0.05) or np.any(UU.max(0) < 0.05):
        return None                                   # not transparent, or a unit misses U_l
    on = on & np.all(U > 0, axis=1)
    return None if on.sum() < 50 else (W, b, U, on)


# ----------------------------------------------------------------------------------------------
# Black-box recovery (Thm A.1's proof as an algorithm)
# ----------------------------------------------------------------------------------------------

class CountingOracle:
    """Wraps a black box ``f`` and counts the inputs it is queried on (``n_queries``)."""

    def __init__(self, f):
        V.callable_(f, "f")
        self.f, self.n_queries, self.n_calls = f, 0, 0

    def __call__(self, X):
        """``f(X)`` for a batch ``X`` of shape ``(n, d_0)`` (finite; n = 0 is a query of nothing)."""
        X = V.array(X, "X", ndim=2, nonempty=False)
        self.n_queries += X.shape[0]
        self.n_calls += 1
        return self.f(X)


@dataclass
class _Level:
    A: np.ndarray          # x -> activations of the recovered layers so far, affine on U
    a: np.ndarray
    G: np.ndarray          # U = {x in box : G x + g > 0} (unit-norm rows)
    g: np.ndarray


def _kink(a, b, Fa, Fb, sa, sb):
    """Where the line through ``(a, Fa)`` with slope ``sa`` meets the line through ``(b, Fb)`` with slope
    ``sb``: the position of the one kink of a piecewise-linear function with these end lines (used by
    ``_Probe.breakpoints`` along a segment and ``_FoldSearch.refine`` across a hyperplane; arrays work)."""
    return (Fb - Fa + sa * a - sb * b) / (sa - sb)


def _fit_affine(Z, Y):
    """Least-squares affine map ``Y ~ Z W^T + b`` (an output layer on the features ``Z``):
    ``(W, b, max abs residual)``. Used by ``_Recoverer.output_layer`` and :func:`recover_one_hidden_layer`."""
    Z1 = np.hstack([Z, np.ones((len(Z), 1))])
    sol, *_ = np.linalg.lstsq(Z1, Y, rcond=None)
    return sol[:-1].T, sol[-1], float(np.abs(Z1 @ sol - Y).max())


class _Probe:
    """Queries of the black box ``f`` for :func:`recover`, the primitives of its algorithm: the scalar
    projection ``F = f . c`` (a random unit ``c`` for several outputs), central-difference gradients,
    the breakpoints of ``F`` along a segment (primitive B), the probed region ``U`` of a level and the
    clipping of lines to it, the level of the whole box (:meth:`start_level`) and the certificate
    (:meth:`certify`). ``fscale = 1 + max |f|`` on 64 probe points sets every tolerance's scale;
    ``pool`` holds 20 000 uniform points of the box to start lines and pick test points from; ``log``
    collects why candidates failed (the message of :class:`RecoveryError`)."""

    ETA, H_FD = 1e-5, 1e-6

    def __init__(self, f, d0, domain, seed):
        self.f, self.d0 = f, d0
        self.lo, self.hi = domain
        self.rng = np.random.default_rng(seed)
        X = self.rng.uniform(self.lo, self.hi, (64, d0))
        Y = self._raw(X)
        self.d_out = Y.shape[1]
        self.c = self.rng.normal(size=self.d_out)
        self.c /= np.linalg.norm(self.c)
        self.fscale = 1.0 + np.abs(Y).max()
        self.pool = self.rng.uniform(self.lo, self.hi, (20000, d0))
        self.log: list[str] = []

    def start_level(self) -> _Level:
        """The level of the first hidden layer: ``z = x``, ``U`` = the whole box."""
        return _Level(np.eye(self.d0), np.zeros(self.d0), np.zeros((0, self.d0)), np.zeros(0))

    def certify(self, params) -> bool:
        """The certificate: does ``params`` reproduce ``f`` to 1e-7 ``fscale`` on 64, then 1000 fresh
        uniform points of the box? It is evidence, not a proof: a difference confined to a region that
        none of the 1064 points hits would pass."""
        for n in (64, 1000):
            X = self.rng.uniform(self.lo, self.hi, (n, self.d0))
            if np.abs(forward(params, X) - self._raw(X)).max() > 1e-7 * self.fscale:
                self.log.append(f"candidate {widths_of(params)} failed certification")
                return False
        return True

    def _raw(self, X):
        """``f(X)`` as a float64 array of shape ``(n, d_out)``; a ValueError on a wrong shape or NaN."""
        Y = np.asarray(self.f(X), dtype=np.float64)
        if Y.ndim == 1:
            Y = Y[:, None]
        if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
            raise ValueError(f"f must map (n, {self.d0}) inputs to (n,) or (n, d_L), got shape {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise ValueError("f returned NaN or infinite values")
        return Y

    def F(self, X):
        """The scalar projection ``f(X) . c`` (one value per row of ``X``)."""
        return self._raw(np.atleast_2d(X)) @ self.c

    def grads(self, P):
        """Central-difference gradients of the scalar projection at the rows of ``P``."""
        E = self.H_FD * np.eye(self.d0)
        pts = np.concatenate([P[:, None, :] + E[None], P[:, None, :] - E[None]], axis=1)
        v = self.F(pts.reshape(-1, self.d0)).reshape(len(P), 2 * self.d0)
        return (v[:, :self.d0] - v[:, self.d0:]) / (2 * self.H_FD)

    def inside(self, X, lv: _Level, margin: float):
        """Which rows of ``X`` lie in ``U`` of the level, at least ``margin`` inside the box and every half-space."""
        ok = np.all((X > self.lo + margin) & (X < self.hi - margin), axis=1)
        if len(lv.g):
            ok &= np.all(X @ lv.G.T + lv.g > margin, axis=1)
        return ok

    def breakpoints(self, x0, v, t0, t1):
        """Primitive B: the kinks ``t`` of ``F(x0 + t v)`` in ``(t0, t1)``, exact for a piecewise-linear ``F``.

        Bisection on the end slopes: where they agree and the midpoint is on the line, the piece is
        affine; where they differ and the two end lines meet inside, that point is accepted if ``F``
        there and ``1e-6`` either side lies on the lines (one kink); otherwise the interval is halved.
        """
        F = lambda ts: self.F(x0[None, :] + np.asarray(ts)[:, None] * v[None, :])
        dl = min(1e-6, 1e-3 * (t1 - t0))
        vals = F([t0, t0 + dl, t1 - dl, t1])
        tol_v = 1e-9 * self.fscale
        tol_s = 1e-6 * self.fscale
        out = []
        stack = [(t0, t1, vals[0], vals[3], (vals[1] - vals[0]) / dl, (vals[3] - vals[2]) / dl, 0)]
        while stack:
            a, b, Fa, Fb, sa, sb, depth = stack.pop()
            if abs(sa - sb) <= tol_s:
                tm = 0.5 * (a + b)
                if abs(F([tm])[0] - (Fa + sa * (tm - a))) <= tol_v * (1 + abs(b - a)):
                    continue
            else:
                ts = _kink(a, b, Fa, Fb, sa, sb)
                if a + 2 * dl < ts < b - 2 * dl:
                    e = min(1e-6, 0.25 * (ts - a), 0.25 * (b - ts))
                    fm, f0, fp = F([ts - e, ts, ts + e])
                    if (abs(f0 - (Fa + sa * (ts - a))) <= tol_v and abs(f0 - (Fb + sb * (ts - b))) <= tol_v
                            and abs(fm - (Fa + sa * (ts - e - a))) <= tol_v
                            and abs(fp - (Fb + sb * (ts + e - b))) <= tol_v):
                        out.append(ts)
                        continue
            if depth >= 40 or b - a < 1e-6:
                continue
            tm = 0.5 * (a + b)
            fl, fm, fr = F([tm - dl, tm, tm + dl])
            stack.append((a, tm, Fa, fm, sa, (fm - fl) / dl, depth + 1))
            stack.append((tm, b, fm, Fb, (fr - fm) / dl, sb, depth + 1))
        return out

    def _clip_line(self, x0, v, lv: _Level, margin):
        """The interval ``(t0, t1)`` of ``t`` for which ``x0 + t v`` lies in ``U``, ``margin`` inside."""
        t0, t1 = -np.inf, np.inf
        rows = [(e, self.hi - margin - x0 @ e) for e in np.eye(self.d0)]      # e.x < hi - margin
        rows += [(-e, x0 @ e - self.lo - margin) for e in np.eye(self.d0)]   # -e.x < -(lo + margin)
        rows += [(-G, x0 @ G + g - margin) for G, g in zip(lv.G, lv.g)]     # -G.x < g - margin
        for n, slack in rows:           # constraint n.(x0 + t v) <= n.x0 + slack
            s = n @ v
            if abs(s) < 1e-15:
                continue
            if s > 0:
                t1 = min(t1, slack / s)
            else:
                t0 = max(t0, slack / s)
        return t0, t1


class _FoldSearch(_Probe):
    """(R1)-(R2) of :func:`recover` on one level: the local hyperplanes of the folds met by ``n_lines``
    random lines inside ``U`` (clustered), and those of them that are folds all across ``U`` (the
    straight candidates for the level's units), sharpened to the exact fold."""

    def __init__(self, f, d0, domain, seed, n_lines):
        super().__init__(f, d0, domain, seed)
        self.n_lines = n_lines

    def fold_hyperplanes(self, lv: _Level):
        """(R1) ``(clusters, n_found)``: the local hyperplanes ``[n, c]`` (unit ``n``, largest entry positive)
        of the kinks met by ``n_lines`` random lines through ``U``, from the jump of the gradient across
        each, clustered to 1e-4; ``(None, 0)`` if ``U`` holds fewer than 10 pool points."""
        starts = self.pool[self.inside(self.pool, lv, 1e-3)]
        if len(starts) < 10:
            return None, 0
        found = []
        for _ in range(self.n_lines):
            x0 = starts[self.rng.integers(len(starts))]
            v = self.rng.normal(size=self.d0)
            v /= np.linalg.norm(v)
            t0, t1 = self._clip_line(x0, v, lv, 1e-4)
            if t1 - t0 < 1e-3:
                continue
            ts = self.breakpoints(x0, v, t0, t1)
            if not ts:
                continue
            P = x0[None, :] + np.array(ts)[:, None] * v[None, :]
            gp, gm = self.grads(P + self.ETA * v), self.grads(P - self.ETA * v)
            for p, dg in zip(P, gp - gm):
                nd = np.linalg.norm(dg)
                if nd < 1e-6 * self.fscale or abs(dg @ v) < 0.05 * nd:
                    continue
                n = dg / nd
                key = np.append(n, -n @ p)
                found.append(_orient_key(key))
        clusters: list[np.ndarray] = []
        for key in found:
            if not any(np.abs(key - c).max() < 1e-4 for c in clusters):
                clusters.append(key)
        return clusters, len(found)

    def points_on(self, key, lv: _Level, k: int):
        """Up to ``k`` test points on the hyperplane ``key`` inside ``U`` (projections of pool points)."""
        n, c = key[:-1], key[-1]
        X = self.pool[self.rng.permutation(len(self.pool))[:4000]]
        Q = X - (X @ n + c)[:, None] * n[None, :]
        Q = Q[self.inside(Q, lv, 1e-3)]
        return Q[:k]

    def is_full_fold(self, key, lv: _Level, k: int = 12) -> tuple[bool, np.ndarray]:
        """(R2) is ``key`` a fold at (90 % of) ``k`` test points across ``U``? ``(answer, test points)``."""
        Q = self.points_on(key, lv, k)
        if len(Q) < 4:
            return False, Q
        n, e = key[:-1], 1e-5
        offs = np.array([-2, -1, 0, 1, 2]) * e
        V = self.F((Q[:, None, :] + offs[None, :, None] * n[None, None, :]).reshape(-1, self.d0)).reshape(len(Q), 5)
        sl, sr = (V[:, 1] - V[:, 0]) / e, (V[:, 4] - V[:, 3]) / e
        tol_v = 1e-8 * self.fscale
        ok = ((np.abs(V[:, 1] + sl * e - V[:, 2]) <= tol_v) & (np.abs(V[:, 3] - sr * e - V[:, 2]) <= tol_v)
              & (np.abs(sl - sr) > 1e-6 * self.fscale))
        return bool(ok.mean() >= 0.9), Q

    def refine(self, key, Q):
        """Sharpen a hyperplane: exact kink positions along its normal near each test point, then fit."""
        n, tau, d = key[:-1], 1e-3, 1e-4
        ts = np.array([-tau, -tau + d, tau - d, tau])
        V = self.F((Q[:, None, :] + ts[None, :, None] * n[None, None, :]).reshape(-1, self.d0)).reshape(len(Q), 4)
        sa, sb = (V[:, 1] - V[:, 0]) / d, (V[:, 3] - V[:, 2]) / d
        live = np.abs(sa - sb) > 1e-6 * self.fscale
        with np.errstate(divide="ignore", invalid="ignore"):   # t is used only where live
            t = _kink(-tau, tau, V[:, 0], V[:, 3], sa, sb)
        live &= np.abs(t) < tau - 2 * d
        P = Q[live] + t[live, None] * n[None, :]
        if len(P) < self.d0 + 1:
            return key, Q
        while True:                              # fit; drop the worst point (near another fold); refit
            M = np.hstack([P, np.ones((len(P), 1))])
            v = np.linalg.svd(M)[2][-1]
            res = np.abs(M @ v) / np.linalg.norm(v[:-1])
            if res.max() <= 1e-9 or len(P) <= self.d0 + 2:
                break
            P = np.delete(P, np.argmax(res), axis=0)
        if res.max() > 1e-9:
            return key, Q
        v = v / np.linalg.norm(v[:-1])
        return v * np.sign(v[:-1] @ n), P

    def straight_candidates(self, lv: _Level, clusters):
        """(R2) the clustered hyperplanes that are folds all across ``U``, sharpened: ``(keys, test points)``."""
        cands, Qs = [], []
        for key in clusters:
            full, Q = self.is_full_fold(key, lv)
            if full and not any(np.abs(key - c).max() < 1e-3 for c in cands):
                key, Q = self.refine(key, Q)
                cands.append(key)
                Qs.append(Q)
        return cands, Qs


class _UnitTest(_FoldSearch):
    """(R3)+(R5) of :func:`recover`: which straight candidates are units of the level, and on which side
    each is active, by the zero-coefficient test of Thm A.1's proof."""

    def side_tests(self, cands, Qs):
        """Gradients just on both sides of each candidate, at its test points."""
        out = []
        for key, Q in zip(cands, Qs):
            n = key[:-1]
            out.append((self.grads(Q + self.ETA * n), self.grads(Q - self.ETA * n)))
        return out

    def orient(self, subset, cands, sides):
        """Zero-coefficient test of Thm A.1 for a subset: +1/-1 orientation per unit, or None."""
        N = np.array([cands[i][:-1] for i in subset])
        allg = np.vstack([np.vstack(s) for s in sides])
        coef_all, *_ = np.linalg.lstsq(N.T, allg.T, rcond=None)
        resid = np.linalg.norm(allg.T - N.T @ coef_all, axis=0)
        if np.any(resid > 1e-5 * (1.0 + np.linalg.norm(allg, axis=1))):
            return None                          # gradients leave span(subset): a unit is missing
        signs = []
        for pos, i in enumerate(subset):
            gp, gm = sides[i]
            cp, *_ = np.linalg.lstsq(N.T, gp.T, rcond=None)
            cm, *_ = np.linalg.lstsq(N.T, gm.T, rcond=None)
            ap, am = np.abs(cp[pos]), np.abs(cm[pos])
            big = np.maximum(ap, am)
            live = big > 1e-6 * self.fscale
            if live.sum() < 3:
                return None
            # A unit's coefficient on its inactive side is 0 up to the error of the central differences
            # and the solve: relative sizes up to 1.3e-4 on 200 plain (2,2,2,2,1) nets (the rounding, so
            # the size, differs between CPUs, whose BLAS kernels round differently); 1e-3 leaves a factor
            # of about 8 above that. A subset whose unit fails the test is skipped (never a wrong sign).
            small = np.minimum(ap, am)[live] <= 1e-3 * big[live]
            plus_on = (am <= ap)[live]
            if small.mean() < 0.8:
                return None
            frac = plus_on[small].mean()
            if 0.2 < frac < 0.8:
                return None
            signs.append(1.0 if frac >= 0.8 else -1.0)
        return signs


class _Recoverer(_UnitTest):
    """One run of :func:`recover` (Algorithm R; see its docstring): the level recursion with its subset
    search, the output layer, and the certificate (``_Probe.certify``) on every complete candidate. Its
    parts: :class:`_Probe` (queries, the certificate), :class:`_FoldSearch` (R1-R2), :class:`_UnitTest`
    (R3, R5) and :func:`_next_level` (R4). ``n_rejected`` and ``n_refused`` count the subsets the
    zero-coefficient test rejected and the candidates the certificate refused (``recover``'s ``stats``)."""

    def __init__(self, f, d0, domain, seed, n_lines, subset_search, max_layers, max_attempts):
        super().__init__(f, d0, domain, seed, n_lines)
        self.subset_search = subset_search
        self.max_layers, self.attempts_left = max_layers, max_attempts
        self.n_rejected = 0        # subsets that failed the zero-coefficient test (R5)
        self.n_refused = 0         # complete candidate networks that failed the certificate

    def run(self):
        """The first candidate network that passes :meth:`certify`, or :class:`RecoveryError` with the log."""
        for params in self.levels(self.start_level(), [], self.d0):
            if self.certify(params):
                return params
            self.n_refused += 1
            self.attempts_left -= 1
            if self.attempts_left <= 0:
                break
        raise RecoveryError("no reconstruction reproduced f on fresh points of the whole domain; "
                            + "; ".join(self.log[-6:]))

    def levels(self, lv: _Level, params, d_prev):
        """Yield complete candidate networks (the subset search of (R3); ``run`` certifies each)."""
        if len(params) > self.max_layers:
            self.log.append(f"more than {self.max_layers} hidden layers")
            return
        clusters, n_found = self.fold_hyperplanes(lv)
        if clusters is None:
            self.log.append(f"level {len(params) + 1}: all-on region too small to probe")
            return
        if n_found == 0:                                             # f is affine on U: output layer
            yield params + [self.output_layer(lv)]
            return
        cands, Qs = self.straight_candidates(lv, clusters)
        if not cands:
            self.log.append(f"level {len(params) + 1}: folds but no straight candidate in U")
            return
        sides = self.side_tests(cands, Qs)
        subsets = self.subsets(len(cands), d_prev, len(params) + 1)
        tried = 0
        for subset in subsets:
            signs = self.orient(subset, cands, sides)
            if signs is None:
                self.n_rejected += 1
                continue
            tried += 1
            rows = np.array([s * cands[i] for s, i in zip(signs, subset)])        # active where > 0
            W, b, nxt = _next_level(lv, rows)
            yield from self.levels(nxt, params + [(W, b)], len(subset))
            if self.attempts_left <= 0:
                return
        if tried == 0 and subsets:
            self.log.append(f"level {len(params) + 1}: no subset of {len(cands)} candidates passed the "
                            "zero-coefficient test")

    def subsets(self, n_cands: int, d_prev: int, level: int) -> list:
        """(R3) the candidate subsets to try at one level, largest first: with ``subset_search`` every subset
        of at most ``d_prev`` candidates (non-increasing widths); otherwise all candidates at once (the naive
        rule), or none, logged, if there are more than ``d_prev`` of them (a deeper fold masquerades as a
        hyperplane, Fig. 2.2)."""
        if self.subset_search:
            sizes = range(min(n_cands, d_prev), 0, -1)
            return [s for k in sizes for s in itertools.combinations(range(n_cands), k)]
        if n_cands > d_prev:
            self.log.append(f"level {level}: {n_cands} straight candidates > {d_prev} "
                            "(a deeper fold masquerades as a hyperplane)")
            return []
        return [tuple(range(n_cands))]

    def output_layer(self, lv: _Level):
        """f is affine on U: fit ``f = W_L z + b_L`` to function values at points of U (least squares).

        Values, not finite-difference gradients: ``z = A x + a`` can be badly conditioned on a thin U.
        """
        X = self.pool[self.inside(self.pool, lv, 1e-3)][:200]
        W, b, _ = _fit_affine(X @ lv.A.T + lv.a, self._raw(X))
        return W, b


def _next_level(lv: _Level, rows):
    """(R4) the layer whose units are the oriented hyperplanes ``rows`` (``[n, c]``, active where
    ``n x + c > 0``), and the next level: rows ``W_l = n A^+`` (``b`` to match), normalised to unit norm
    (a positive scaling), the affine map ``x -> z_l = W_l (A x + a) + b_l`` and ``U_{l+1}``, where every
    unit so far is active. Returns ``(W_l, b_l, next level)``."""
    Ap = np.linalg.pinv(lv.A)
    W = rows[:, :-1] @ Ap
    b = rows[:, -1] - W @ lv.a
    r = np.sqrt((W ** 2).sum(1) + b ** 2)
    W, b = W / r[:, None], b / r
    A_new, a_new = W @ lv.A, W @ lv.a + b
    nrm = np.linalg.norm(A_new, axis=1)
    return W, b, _Level(A_new, a_new, np.vstack([lv.G, A_new / nrm[:, None]]), np.concatenate([lv.g, a_new / nrm]))


def recover(f, input_dim: int, domain=(-1, 1), seed: int = 0, *, n_lines: int = 30,
            subset_search: bool = True, max_layers: int = 10, max_attempts: int = 20, stats: dict | None = None):
    """Recover architecture and parameters of a ReLU net from queries of its function alone.

    Algorithm (the proof of Thm A.1): keep the affine map ``x -> z_{l-1}`` of the recovered layers,
    exact on ``U_l`` = {all recovered units > 0}. (R1) find fold points along random lines in ``U_l``
    and their local hyperplanes from gradient jumps; (R2) keep hyperplanes that are folds everywhere
    in ``U_l``; (R3, ``subset_search``) try subsets of them (size <= the previous width) that pass
    (R5) the zero-coefficient test (the gradient has a zero coefficient for a unit on its inactive
    side), recursing; (R4) rows ``W_l = n A^+``, normalised; stop when ``f`` is affine on ``U_l``.
    A candidate is returned only if it reproduces ``f`` to 1e-7 (relative) on fresh points of the whole
    domain; otherwise :class:`RecoveryError` is raised, so a wrong network is never returned silently.
    With ``subset_search=False`` all straight candidates are taken as units (the naive rule that
    deeper folds masquerading as hyperplanes fool, Fig. 2.2). Wrap ``f`` in :class:`CountingOracle`
    to count queries.

    ``stats``: a dict to receive, whether the run succeeds or raises, which step rejected what:
    ``subsets_rejected`` (candidate subsets that failed the zero-coefficient test, at any level),
    ``certificate_refusals`` (complete candidate networks that failed the certificate) and ``log``.
    Chapter 01 reads them to show which step stops an impostor (the test) and when the certificate,
    the last guard, is needed (a black box outside the architecture).
    """
    V.callable_(f, "f")
    input_dim = V.positive_int(input_dim, "input_dim")
    n_lines = V.positive_int(n_lines, "n_lines")
    seed, subset_search = V.seed(seed), V.boolean(subset_search, "subset_search")
    max_layers, max_attempts = V.positive_int(max_layers, "max_layers"), V.positive_int(max_attempts, "max_attempts")
    domain = _check_domain(domain)
    if stats is not None:
        V.instance(stats, "stats", dict)
    R = _Recoverer(f, int(input_dim), domain, seed, n_lines, subset_search, max_layers, max_attempts)
    try:
        return R.run()
    finally:
        if stats is not None:
            stats.update(subsets_rejected=R.n_rejected, certificate_refusals=R.n_refused, log=list(R.log))


# ----------------------------------------------------------------------------------------------
# One hidden layer of any width: the sign flips are the only extra symmetries (chapter 01's Proposition)
# ----------------------------------------------------------------------------------------------

def _box_crossing(W, b, domain) -> np.ndarray:
    """For each row, does the hyperplane ``W[i] x + b[i] = 0`` cross the open box ``domain^{d_0}``?"""
    lo, hi = domain
    low = b + np.minimum(W * lo, W * hi).sum(1)
    high = b + np.maximum(W * lo, W * hi).sum(1)
    return (low < 0) & (high > 0)


def flip_sets(params, domain=(-1, 1), rel_tol: float = 1e-9, max_width: int = 16) -> dict:
    """The sign-flip subsets ``T`` of a one-hidden-layer net: ``sum_{i in T} W_2[:, i] W_1[i] = 0``.

    Proposition (one hidden layer, any width; chapter 01, proved there; a bounded-domain form of known
    results on one-hidden-layer symmetries, whose sources the chapter cites): if every hidden
    unit's hyperplane crosses the box, no two units share a hyperplane and no output column is zero,
    then the networks of the same architecture equal to ``params`` on the box are exactly the P/M
    images of the nets that flip the units of one such ``T`` (``W_1[i], b_1[i] -> -W_1[i], -b_1[i]``
    for ``i`` in ``T``, output bias ``+= sum_T W_2[:, i] b_1[i]``), because ``rho(-u) = rho(u) - u``.
    The empty ``T`` always qualifies; the net is identifiable up to P/M iff it is the only one, which
    ``d_1 <= d_0`` independent rows guarantee and random weights give with probability 1 at any width.

    Returns ``subsets`` (every qualifying ``T`` as a tuple, the empty one first, by enumerating all
    ``2^{d_1}``; a sum counts as zero below ``rel_tol`` times the largest ``|W_2[:, i] W_1[i]|``),
    ``margin`` (the smallest relative size of a non-empty subset's sum, 0 if one vanishes) and
    ``hypotheses`` (``crosses``, ``distinct``, ``outputs_nonzero``: the three conditions above).
    """
    params = _check_params(params)
    domain = _check_domain(domain)
    rel_tol = V.positive(rel_tol, "rel_tol")
    max_width = V.positive_int(max_width, "max_width")
    if len(params) != 2:
        raise ValueError(f"params: flip_sets needs a one-hidden-layer network, got widths {widths_of(params)}")
    (W, b), (W2, _) = params
    d1 = W.shape[0]
    if d1 > max_width:
        raise ValueError(f"params: {d1} hidden units means 2^{d1} subsets (> 2^{max_width}); use a narrower net")
    terms = np.einsum("ri,ij->irj", W2, W).reshape(d1, -1)      # row i: W_2[:, i] W_1[i], flattened
    scale = np.abs(terms).max()
    subsets, margin = [()], np.inf
    for k in range(1, d1 + 1):
        for T in itertools.combinations(range(d1), k):
            size = np.abs(terms[list(T)].sum(0)).max() / scale if scale > 0 else 0.0
            margin = min(margin, size)
            if size <= rel_tol:
                subsets.append(T)
    R = np.hstack([W, b[:, None]])
    R = R / np.linalg.norm(R, axis=1, keepdims=True)
    distinct = all(min(np.abs(R[i] - R[j]).max(), np.abs(R[i] + R[j]).max()) > rel_tol
                   for i, j in itertools.combinations(range(d1), 2))
    hyp = {"crosses": bool(_box_crossing(W, b, domain).all()), "distinct": bool(distinct),
           "outputs_nonzero": bool(np.all(np.abs(W2).max(0) > 0))}
    return {"subsets": subsets, "margin": float(margin), "hypotheses": hyp}


def one_layer_network(widths, seed: int, domain=(-1, 1)):
    """A one-hidden-layer net of any width whose hyperplanes all cross the box (the Proposition's case).

    Row ``i``: a uniformly random unit direction through a uniform point of the inner 80 % of the box,
    times a factor in (0.5, 2); output weights ``+-U(0.5, 1.5)``, output bias ``N(0, 0.5^2)``.
    """
    widths = _check_widths(widths, non_increasing=False)
    if len(widths) != 3:
        raise ValueError(f"widths must be (d_0, d_1, d_2) for one hidden layer, got {widths}")
    lo, hi = _check_domain(domain)
    seed = V.seed(seed)
    rng = np.random.default_rng(seed)
    d0, d1, d2 = widths
    W = rng.normal(size=(d1, d0))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    mid, half = 0.5 * (lo + hi), 0.4 * (hi - lo)
    b = -np.einsum("ij,ij->i", W, rng.uniform(mid - half, mid + half, (d1, d0)))
    m = rng.uniform(0.5, 2.0, d1)
    W2 = rng.choice([-1.0, 1.0], (d2, d1)) * rng.uniform(0.5, 1.5, (d2, d1))
    return [(m[:, None] * W, m * b), (W2, rng.normal(0.0, 0.5, d2))]


def recover_one_hidden_layer(f, input_dim: int, domain=(-1, 1), seed: int = 0, *, n_lines: int = 30) -> list:
    """Every one-hidden-layer net that reproduces the black box ``f``, up to P/M: the sign-flip search.

    For one hidden layer the zero-coefficient test of :func:`recover` needs ``d_1 <= d_0``; this search
    does not. (R1)-(R2) of :func:`recover` give the units' hyperplanes (every fold of such a net is a
    full hyperplane); each of the ``2^k`` orientations of the ``k`` hyperplanes is one candidate hidden
    layer, whose output layer is fitted by least squares to ``f`` on 2000 points of the whole box. The
    candidates that reproduce ``f`` (to 1e-7, relative, on those points and on fresh ones) are returned,
    one per sign-flip subset of :func:`flip_sets`: a list of length 1 means ``f`` determines the net up
    to P/M. Raises :class:`RecoveryError` if ``f`` has no fold or no orientation reproduces it.
    """
    V.callable_(f, "f")
    input_dim = V.positive_int(input_dim, "input_dim")
    n_lines, seed = V.positive_int(n_lines, "n_lines"), V.seed(seed)
    domain = _check_domain(domain)
    R = _FoldSearch(f, int(input_dim), domain, seed, n_lines)
    lv = R.start_level()
    clusters, n_found = R.fold_hyperplanes(lv)
    cands = R.straight_candidates(lv, clusters)[0] if n_found else []
    if not cands:
        raise RecoveryError("f has no fold that is a full hyperplane: no hidden unit to recover")
    rows = np.array(cands)
    X = R.rng.uniform(R.lo, R.hi, (2000, R.d0))
    Y = R._raw(X)
    nets = []
    for signs in itertools.product((1.0, -1.0), repeat=len(rows)):
        H = np.array(signs)[:, None] * rows
        W, b = H[:, :-1], H[:, -1]
        W_out, b_out, residual = _fit_affine(np.maximum(X @ W.T + b, 0.0), Y)
        if residual <= 1e-7 * R.fscale:
            net = [(W, b), (W_out, b_out)]
            if R.certify(net):
                nets.append(net)
    if not nets:
        raise RecoveryError(f"no orientation of the {len(rows)} hyperplanes found reproduces f")
    return nets


# ----------------------------------------------------------------------------------------------
# Counterexamples: functionally equal, parametrically different (chapter section "Which assumptions")
# ----------------------------------------------------------------------------------------------

COUNTEREXAMPLES = ("always_active", "dead_neuron", "width_one", "sign_flip_231", "non_transparent",
                   "leaky_sign_flip")


def counterexample(name: str, delta: float = 0.1):
    """``(theta, eta, alpha)``: two nets with equal functions on ``(-1, 1)^2`` that are not P/M-equivalent.

    * ``always_active``: a layer-1 unit positive on the whole box; bias shift by ``delta`` pushed into
      layer 2 (a continuous symmetry, Jacobian-rank deficit).
    * ``dead_neuron``: a layer-1 unit negative on the box; its outgoing weights are arbitrary.
    * ``width_one``: a (2,2,1,1) net whose width-1 layer must be always active to be transparent.
    * ``sign_flip_231``: (2,3,1) with ``a^T W = 0``: ``rho(u) = u + rho(-u)`` flips all rows (M = -I).
    * ``non_transparent``: (2,2,2,1) whose layer 2 is dead wherever a layer-1 unit is active; that
      unit's parameters can move freely.
    * ``leaky_sign_flip``: the sign flip for leaky ReLU (``alpha = 0.1``), where
      ``rho(-u) = rho(u) - (1 + alpha) u``.
    """
    V.choice(name, "name (the counterexample)", COUNTEREXAMPLES)
    try:
        value = V.real(delta, "delta")                  # any finite real number, numpy scalars included
    except ValueError:
        value = 0.0
    if not 0 < abs(value) <= 0.5:
        raise ValueError(f"delta must be a non-zero number with |delta| <= 0.5, got {delta!r}")
    delta = value
    A = lambda *rows: np.array(rows, dtype=np.float64)
    alpha = 0.0
    if name in ("always_active", "dead_neuron"):
        sign = 1.0 if name == "always_active" else -1.0
        theta = [(A([0.8, -0.6], [-0.5, -0.9]), A(sign * 2.0, 0.1)),
                 (A([1.0, -1.0], [-1.0, 0.5]), A(-1.5, 2.5)),
                 (A([1.0, -0.8]), A(0.1))]
        (W1, b1), (W2, b2), out = theta
        if name == "always_active":
            eta = [(W1, b1 + A(delta, 0.0)), (W2, b2 - W2[:, 0] * delta), out]
        else:
            W2e = W2.copy()
            W2e[:, 0] += A(0.5, -0.7)
            eta = [(W1, b1), (W2e, b2), out]
    elif name == "width_one":
        theta = [(A([0.8, -0.6], [-0.8, 0.65]), A(0.3, 0.4)), (A([0.6, 0.7]), A(0.5)), (A([1.3]), A(-0.2))]
        eta = [theta[0], (theta[1][0], theta[1][1] + delta), (theta[2][0], theta[2][1] - theta[2][0][:, 0] * delta)]
    elif name == "non_transparent":
        theta = [(A([1.0, 0.1], [-1.0, 0.2]), A(-0.5, -0.4)),
                 (A([2.0, -0.5], [3.0, -1.0]), A(-0.3, -0.6)),
                 (A([1.0, -0.7]), A(0.05))]
        (W1, b1), layer2, out = theta
        eta = [(W1 + A([0.0, 0.0], [0.2, -0.1]), b1 + A(0.0, -delta)), layer2, out]
    else:
        ang = np.deg2rad([0.0, 120.0, 240.0])
        W = np.stack([np.cos(ang), np.sin(ang)], 1)
        b, a = A(0.2, -0.1, 0.3), np.ones((1, 3))
        alpha = 0.1 if name == "leaky_sign_flip" else 0.0
        theta = [(W, b), (a, A(0.4))]
        eta = [(-W, -b), (a, A(0.4) + (1.0 + alpha) * a @ b)]
    return theta, eta, alpha
