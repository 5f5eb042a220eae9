"""Boolean functions, the swaps value and small ReLU networks that classify them (Chapter 6).

Source: Sattelberg (2026), *Local Linearity of ReLU Neural Networks*, Chapter 3 and Appendix A.1-A.4.

Conventions. A Boolean function of ``n`` inputs is a *truth table*: a sequence of ``2**n`` values in
{0, 1} whose entry ``k`` is f at the corner whose coordinates are the binary digits of ``k`` (x1 is the
most significant digit). Its *id* is the integer whose binary string, read most significant bit first,
is the table ``f(0..0) f(0..01) ... f(1..1)`` (the numbering of the thesis' Table 3.3 and Fig. 3.2).
Networks take corners in {-1, 1}^n (:func:`cube`) and return a logit whose sign is the class.

The swaps value (thesis eq. 3.10) is computed exactly through the chambers of the hyperplane
arrangement {w : d.w = 0}, d in {-1, 0, 1}^n: every generic projection w sorts the corners in one
order, all such orders are the *order types* of positive increasing weight vectors
(:func:`order_types`, OEIS A009997: 1, 1, 2, 14, 516) moved by the 2^n n! signed permutations of the
inputs (:func:`npn_transforms`), and the swaps value is the fewest class changes along any of them.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
import torch

from lib import validate as V
from lib.scale import as_device

MAX_EXACT_N = 5  # order types are enumerated up to n = 5 (516 of them); n = 6 has 124,187
_ORDER_TYPE_MAX_WEIGHT = {1: 1, 2: 2, 3: 4, 4: 10, 5: 32}  # enough to realise every order type
_ORDER_TYPE_COUNTS = {1: 1, 2: 1, 3: 2, 4: 14, 5: 516}  # OEIS A009997, certifies the enumeration


# --------------------------------------------------------------------------------------------
# Truth tables, corners, ids
# --------------------------------------------------------------------------------------------

def _check_n(n, max_n: int = MAX_EXACT_N) -> int:
    return V.integer(n, "n (the number of inputs)", min=1, max=max_n)


def check_tables(tables, max_n: int = MAX_EXACT_N, name: str = "tables") -> tuple[np.ndarray, int]:
    """Validate one truth table (1-D) or a batch (2-D, one per row); returns (uint8 array, n).

    ValueError (naming the argument ``name``) for an empty input, a length that is not a power of two
    (at least 2), more than ``2**max_n`` entries, NaN, or values outside {0, 1}; TypeError for
    something that is not an array of numbers.
    """
    max_n = V.positive_int(max_n, "max_n")
    what = f"{name} (truth table)"
    arr = V.array(tables, what, ndim=(1, 2), dtype=None, finite=False)
    length = arr.shape[-1]
    n = length.bit_length() - 1
    if length < 2 or length != 1 << n:
        raise V.ArgumentValueError(f"{what} must have a length that is a power of two 2**n with n >= 1, got {length}")
    if n > max_n:
        raise V.ArgumentValueError(f"{what}: truth tables of n = {n} inputs are not supported here (at most n = {max_n})")
    if np.issubdtype(arr.dtype, np.floating) and np.isnan(arr).any():
        raise V.ArgumentValueError(f"{what} contains NaN")
    if not np.isin(arr, (0, 1)).all():
        raise V.ArgumentValueError(f"{what} must hold only the values 0 or 1")
    return arr.astype(np.uint8), n


def cube(n: int, pm: bool = True) -> np.ndarray:
    """The 2**n corners in table order (row k = binary digits of k, x1 first), in {-1,1} or {0,1}.

    Chapter 6, §"Notation" (thesis §3.2).
    """
    n = _check_n(n, 16)
    bits = (np.arange(2 ** n)[:, None] >> np.arange(n - 1, -1, -1)[None, :]) & 1
    return (2 * bits - 1).astype(np.int64) if pm else bits.astype(np.int64)


def table_to_id(table) -> int:
    """The id of a truth table: its entries read as a binary number, f(0..0) most significant."""
    t, n = check_tables(table, max_n=6, name="table")
    if t.ndim != 1:
        raise ValueError("table_to_id takes one truth table")
    return int("".join(map(str, t.tolist())), 2)


def truth_table(ids, n: int) -> np.ndarray:
    """Truth tables (rows) of the functions with the given ids (inverse of :func:`table_to_id`)."""
    n = _check_n(n, 6)
    ids_arr = np.atleast_1d(V.array(ids, "ids", ndim=(0, 1), dtype=None))
    if ids_arr.size == 0 or not np.issubdtype(ids_arr.dtype, np.integer):
        raise ValueError(f"ids must be a non-empty integer array, got {ids!r}")
    if (ids_arr < 0).any() or (ids_arr >= 2 ** (2 ** n)).any():
        raise ValueError(f"ids must lie in [0, 2**{2 ** n}) for n = {n}")
    shifts = np.arange(2 ** n - 1, -1, -1, dtype=np.uint64)
    return ((ids_arr.astype(np.uint64)[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.uint8)


def parity_table(n: int) -> np.ndarray:
    """The truth table of n-parity (1 where an odd number of inputs are 1)."""
    return (cube(_check_n(n, 16), pm=False).sum(1) % 2).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# NPN transforms and canonical ids (thesis Theorem 3.3.1)
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _signed_permutations(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All 2^n n! signed permutations (perm, sign) and their corner-index maps T (x -> T x)."""
    X = cube(n)
    weights = 2 ** np.arange(n - 1, -1, -1)
    perms, signs, maps = [], [], []
    for perm in itertools.permutations(range(n)):
        for sign in itertools.product((1, -1), repeat=n):
            TX = X[:, list(perm)] * np.array(sign)  # (T x)_j = sign_j x_perm(j)
            perms.append(perm)
            signs.append(sign)
            maps.append(((TX + 1) // 2) @ weights)
    return np.array(perms), np.array(signs), np.array(maps)


def npn_transforms(n: int) -> np.ndarray:
    """Corner maps of the input negations-permutations: row t gives ``g = f[T[t]]`` (2^n n! rows)."""
    return _signed_permutations(_check_n(n))[2].copy()


def _id_permuters(n: int):
    """For each input-NP transform, lookup tables that map the id of f to the id of f o T (bytes)."""
    N = 2 ** n
    maps = _signed_permutations(n)[2]
    inv = np.argsort(maps, axis=1)  # corner c of f lands on corner inv[t, c] of g
    chunk = min(8, N)
    luts = []
    for start in range(0, N, chunk):
        corners = np.arange(start, start + chunk)
        byte_bits = (np.arange(2 ** chunk)[:, None] >> np.arange(chunk - 1, -1, -1)[None, :]) & 1
        target_bit = (N - 1 - inv[:, corners]).astype(np.int64)  # (T, chunk)
        lut = (byte_bits[None, :, :] << target_bit[:, None, :]).sum(-1)  # (T, 256)
        luts.append((N - start - chunk, lut.astype(np.int64)))
    return luts, chunk


def _transform_ids(ids: np.ndarray, luts, chunk: int, t: int) -> np.ndarray:
    mask = (1 << chunk) - 1
    out = np.zeros_like(ids)
    for shift, lut in luts:
        out |= lut[t][(ids >> shift) & mask]
    return out


@lru_cache(maxsize=None)
def npn_class_ids_all(n: int) -> np.ndarray:
    """Canonical NPN id of every function of n <= 4 inputs (index = id): min id over its class."""
    n = _check_n(n, 4)
    F = 2 ** (2 ** n)
    ids = np.arange(F, dtype=np.int64)
    luts, chunk = _id_permuters(n)
    best = np.minimum(ids, (F - 1) ^ ids)
    for t in range(len(luts[0][1])):
        g = _transform_ids(ids, luts, chunk, t)
        np.minimum(best, np.minimum(g, (F - 1) ^ g), out=best)
    best.setflags(write=False)
    return best


def npn_class_id(table) -> int:
    """The smallest id in f's NPN class (inputs negated/permuted, output negated); thesis Table 3.3."""
    t, n = check_tables(table, name="table")
    if t.ndim != 1:
        raise ValueError("npn_class_id takes one truth table; use npn_class_ids_all for all functions")
    if n <= 4:
        return int(npn_class_ids_all(n)[table_to_id(t)])
    G = t[npn_transforms(n)]
    G = np.concatenate([G, 1 - G])
    weights = [1 << (2 ** n - 1 - k) for k in range(2 ** n)]
    return min(int(sum(w for w, b in zip(weights, row) if b)) for row in G)


def npn_classes(n: int) -> np.ndarray:
    """The sorted canonical ids of all NPN classes of n <= 4 inputs (2, 4, 14, 222 of them)."""
    return np.unique(npn_class_ids_all(n))


# --------------------------------------------------------------------------------------------
# Order types and the exact swaps value (thesis §3.3.1, eqs. 3.8-3.10)
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def order_types(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Order types of {0,1}^n under generic weights 0 < w1 < ... < wn (Chapter 6, exact algorithm).

    Enumerates integer weight vectors up to a bound known to realise every type, keeps those whose
    2^n subset sums are distinct, and deduplicates the induced corner orders. Returns
    ``(weights (K, n), orders (K, 2**n))``; K = 1, 1, 2, 14, 516 (OEIS A009997), checked here.
    """
    n = _check_n(n)
    M = _ORDER_TYPE_MAX_WEIGHT[n]
    C = cube(n, pm=False)
    W = np.array(list(itertools.combinations(range(1, M + 1), n)), dtype=np.int64)
    sums = W @ C.T  # (combos, 2^n)
    srt = np.sort(sums, axis=1)
    generic = (np.diff(srt, axis=1) > 0).all(1)
    W, sums = W[generic], sums[generic]
    orders = np.argsort(sums, axis=1, kind="stable")
    _, first = np.unique(orders, axis=0, return_index=True)
    first = np.sort(first)
    if len(first) != _ORDER_TYPE_COUNTS[n]:
        raise RuntimeError(f"found {len(first)} order types for n={n}, expected {_ORDER_TYPE_COUNTS[n]}")
    return W[first], orders[first]


@lru_cache(maxsize=None)
def _swaps_setup(n: int):
    """Pair-disagreement formulation: per transform, the pair indices; per order type, its pairs."""
    N = 2 ** n
    _, signs, maps = _signed_permutations(n)
    keep = signs[:, 0] == 1  # negating every input reverses every order: half the transforms suffice
    maps_half = maps[keep]
    iu, ju = np.triu_indices(N, 1)
    pair_index = np.full((N, N), -1, dtype=np.int64)
    pair_index[iu, ju] = np.arange(len(iu))
    pair_index[ju, iu] = np.arange(len(iu))
    # transformed pair p=(i,j) of g = f o T is the pair (T i, T j) of f
    pair_perm = pair_index[maps_half[:, iu], maps_half[:, ju]]  # (T/2, P)
    _, orders = order_types(n)
    Q = np.zeros((len(iu), len(orders)), dtype=np.float32)
    for o, order in enumerate(orders):
        Q[pair_index[order[:-1], order[1:]], o] = 1.0
    return np.flatnonzero(keep), pair_perm, torch.from_numpy(Q), iu, ju


def change_counts(tables) -> np.ndarray:
    """Class changes of f along every chamber: array (F, 2^n n!/2, K) over (transform, order type).

    Entry [f, t, o] counts the changes of ``f o T_t`` along order type ``o``; the min is swaps(f).
    """
    t, n = check_tables(tables)
    T2 = np.atleast_2d(t)
    keep, pair_perm, Q, iu, ju = _swaps_setup(n)
    D = (T2[:, iu] != T2[:, ju]).astype(np.float32)  # (F, P) pair disagreements of f
    DT = torch.from_numpy(D[:, pair_perm])  # (F, T/2, P)
    return (DT @ Q).round().to(torch.int64).numpy()


def swaps_many(tables, batch: int = 8) -> np.ndarray:
    """Exact swaps values of many truth tables (rows) of n <= 5 inputs (Chapter 6, eq. 3.10)."""
    t, n = check_tables(tables)
    batch = V.positive_int(batch, "batch")
    T2 = np.atleast_2d(t)
    out = np.empty(len(T2), dtype=np.int64)
    for start in range(0, len(T2), batch):
        out[start:start + batch] = change_counts(T2[start:start + batch]).min(axis=(1, 2))
    return out


def swaps(table) -> int:
    """The swaps value of one Boolean function (thesis eq. 3.10), exactly, for n <= 5 inputs.

    ``table``: 2**n values in {0, 1}, entry k = f at the corner with binary digits k. The fewest
    class changes along any generic linear ordering of the cube's corners. For n <= 4 a lookup in
    :func:`swaps_all`; for n = 5 the branch and bound of :func:`swaps_branch_and_bound`.
    """
    t, n = check_tables(table, name="table")
    if t.ndim != 1:
        raise ValueError("swaps takes one truth table; use swaps_many for a batch")
    if n <= 4:
        return int(swaps_all(n)[table_to_id(t)])
    return swaps_branch_and_bound(t)


def _group_coordinates(n: int) -> list[int]:
    """Coordinates whose sub-cube bounds are computed for every chamber group (the cheap bound)."""
    return sorted({0, n // 2, n - 1})


@lru_cache(maxsize=None)
def _bb_setup(n: int):
    """Tables for the branch and bound (Chapter 6, Beyond the document).

    Order types are numbered so that those inducing the same order types on all 2n sub-cubes
    x_j = 0 / 1 (the same on both halves) form a contiguous *block*, and blocks with the same order
    types on the x1 and xn sub-cubes form a contiguous *group*. Returns a dict with ``maps`` (the
    input transforms kept), ``group_sub`` (groups, 2: sub-cube order types of x1, xn),
    ``group_blocks`` (start, count of each group's blocks), ``block_sub`` (blocks, n: sub-cube order
    type per coordinate), ``block_orders`` (start, count of each block's order types), ``sub_changes``
    (changes of every (n-1)-input function, by id, along every (n-1)-dimensional order type), and
    ``lut`` (chunks * 2^c * K,) uint32: for chunk k of c corners, chunk value v and order type o, the
    bits at the places that order o gives to the corners set in v. OR-ing the chunks of a function's
    id gives its table read along o; the changes are the popcount of ``x ^ (x >> 1)`` on the first
    2^n - 1 bits.
    """
    N = 2 ** n
    keep = _swaps_setup(n)[0]
    C = cube(n, pm=False)
    _, orders = order_types(n)
    _, sub_orders = order_types(n - 1)
    sub_key = {tuple(o): i for i, o in enumerate(sub_orders)}

    def restricted_type(order, j):  # order type of the sub-cube x_j = 0, coordinate j removed
        corners = order[C[order, j] == 0]
        low = 1 << (n - 1 - j)
        return sub_key[tuple((corners // (2 * low)) * low + corners % low)]

    sub = np.array([[restricted_type(o, j) for j in range(n)] for o in orders])
    outer = _group_coordinates(n)
    key = np.concatenate([sub[:, outer], sub], axis=1)
    renumber = np.lexsort(key.T[::-1])
    orders, sub, key = orders[renumber], sub[renumber], key[renumber]
    block_first = np.flatnonzero(np.r_[True, (np.diff(key, axis=0) != 0).any(1)])
    block_orders = np.stack([block_first, np.diff(np.r_[block_first, len(orders)])], 1)
    block_sub = sub[block_first]
    group_first = np.flatnonzero(np.r_[True, (np.diff(block_sub[:, outer], axis=0) != 0).any(1)])
    group_blocks = np.stack([group_first, np.diff(np.r_[group_first, len(block_first)])], 1)
    group_sub = block_sub[group_first][:, outer]
    sub_ids = np.arange(2 ** (N // 2), dtype=np.int64)
    bits = np.array([(sub_ids >> (N // 2 - 1 - k)) & 1 for k in range(N // 2)], dtype=np.int8)
    sub_changes = np.stack([(bits[o[:-1]] != bits[o[1:]]).sum(0) for o in sub_orders], 1).astype(np.int8)
    sub_id = np.zeros((N, 2 * n))  # table of f o T (0/1 row) @ sub_id = ids of its 2n restrictions
    for j in range(n):
        for b in (0, 1):
            sub_id[C[:, j] == b, 2 * j + b] = 2.0 ** np.arange(N // 2 - 1, -1, -1)
    c = min(8, N)  # corners per chunk of the id
    place = np.argsort(orders, axis=1)  # place[o, corner]
    values = (np.arange(2 ** c)[:, None] >> np.arange(c - 1, -1, -1)[None, :]) & 1  # (2^c, c)
    lut = np.stack([(values[None] << (N - 1 - place[:, None, k * c:(k + 1) * c])).sum(-1)
                    for k in range(N // c)])  # (chunks, K, 2^c)
    return dict(maps=_signed_permutations(n)[2][keep], group_sub=group_sub, group_blocks=group_blocks,
                block_sub=block_sub, block_orders=block_orders, sub_changes=sub_changes,
                lut=np.ascontiguousarray(lut.transpose(0, 2, 1)).astype(np.uint32).ravel(), chunk_bits=c,
                sub_id=sub_id, K=len(orders))


_POPCOUNT16 = np.array([bin(v).count("1") for v in range(2 ** 16)], dtype=np.int8)


def _chamber_changes(chunk_index, lut, n_bits: int, ti, oi):
    """Changes of the functions ``ti`` along the order types ``oi`` (one chamber per entry).

    ``chunk_index`` (chunks, functions): offset of each function's chunk values in ``lut``.
    """
    at = chunk_index[:, ti]  # (chunks, m): where each chamber's chunk values start in the table
    x = lut[at[0] + oi]
    for k in range(1, len(at)):
        x |= lut[at[k] + oi]
    x = (x ^ (x >> np.uint32(1))) & np.uint32((1 << (n_bits - 1)) - 1)
    return _POPCOUNT16[x & np.uint32(0xFFFF)] + _POPCOUNT16[x >> np.uint32(16)]


def _expand(starts_counts, idx):
    """For rows ``idx`` of a (start, count) table: the row of each item and the items themselves."""
    start, count = starts_counts[idx, 0], starts_counts[idx, 1]
    row = np.repeat(np.arange(len(idx)), count)
    return row, np.repeat(start - np.cumsum(count) + count, count) + np.arange(count.sum())


def swaps_branch_and_bound(table, chunk: int = 8192) -> int:
    """Exact swaps value of one function of 2 <= n <= 5 inputs by branch and bound (Chapter 6, Beyond).

    Every chamber is an input transform T (one of each pair reversed by negating all inputs) and an
    order type o; its count is the changes of f o T along o. Transforms that give the same function
    up to output negation have the same counts, so each distinct one is kept once (parity: one).
    Restricting an order to a sub-cube x_j = 0 or x_j = 1 never adds changes, so a chamber's count is
    at least the largest count of its 2n restrictions, read from a table of all (n-1)-input
    functions. A cheap bound from the x1 and xn sub-cubes (per group of order types) says which
    chambers can matter at each level; their full 2n-restriction bound (per block) says at which
    level they are counted, exactly (bit operations on the function's id), ``chunk`` at a time. The
    search stops when a count equals the level or the level reaches the best count found.
    """
    t, n = check_tables(table, name="table")
    if t.ndim != 1 or n < 2:
        raise ValueError("swaps_branch_and_bound takes one truth table of n >= 2 inputs")
    chunk = V.positive_int(chunk, "chunk")
    s = _bb_setup(n)
    N, c = 2 ** n, s["chunk_bits"]
    G = t.astype(np.float64)[s["maps"]]
    G = np.abs(G - G[:, :1])  # output negation keeps every count: fix f(T 0) = 0
    ids = np.unique((G @ 2.0 ** np.arange(N - 1, -1, -1)).astype(np.int64))  # float64 is exact here
    G = ((ids[:, None] >> np.arange(N - 1, -1, -1)) & 1).astype(np.float64)
    sub = s["sub_changes"][(G @ s["sub_id"]).astype(np.int64)]  # (T, 2n, K')
    sub = np.ascontiguousarray(np.maximum(sub[:, 0::2], sub[:, 1::2]).transpose(1, 0, 2))  # (n, T, K'): x_j = 0, 1
    gs, K1 = s["group_sub"], sub.shape[2]
    outer = _group_coordinates(n)
    cheap = sub[outer[0]][:, gs[:, 0]]
    for k, j in enumerate(outer[1:], 1):
        np.maximum(cheap, sub[j][:, gs[:, k]], out=cheap)
    cheap = cheap.ravel()  # (T * groups,)
    inner = [j for j in range(n) if j not in outer]
    middle = [sub[j].ravel() for j in inner]
    block_sub = [np.ascontiguousarray(s["block_sub"][:, j]) for j in inner]
    shifts = N - c * np.arange(1, N // c + 1)
    chunk_values = (ids[None, :] >> shifts[:, None]) & (2 ** c - 1)  # (chunks, T)
    chunk_index = (chunk_values + 2 ** c * np.arange(N // c)[:, None]) * s["K"]
    pt, pb, pl = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8)  # (t, block, bound) to do
    best = N
    for level in range(int(cheap.min()), N):
        if level >= best:
            break
        t_new, g_new = np.divmod(np.flatnonzero(cheap == level), len(gs))
        row, blocks = _expand(s["group_blocks"], g_new)
        t_new = t_new[row]
        full = np.full(len(blocks), level, dtype=np.int8)  # the x1 and xn sub-cubes give the level
        offset = t_new * K1
        for changes, types in zip(middle, block_sub):
            np.maximum(full, changes[offset + types[blocks]], out=full)
        pt, pb, pl = np.r_[pt, t_new], np.r_[pb, blocks], np.r_[pl, full]
        now = pl == level
        row, oi = _expand(s["block_orders"], pb[now])
        ti = pt[now][row]
        later = (pl > level) & (pl < best)
        pt, pb, pl = pt[later], pb[later], pl[later]
        for a in range(0, len(oi), chunk):
            counts = _chamber_changes(chunk_index, s["lut"], N, ti[a:a + chunk], oi[a:a + chunk])
            best = min(best, int(counts.min()))
            if best == level:
                break
    return best


@lru_cache(maxsize=None)
def swaps_all(n: int) -> np.ndarray:
    """Swaps value of every function of n <= 4 inputs (index = id), in one vectorised pass.

    First the fewest changes of every function along the K order types (bit operations on ids), then
    the min over the 2^n n! input transforms, applied to ids by byte lookup tables.
    """
    n = _check_n(n, 4)
    N, F = 2 ** n, 2 ** (2 ** n)
    ids = np.arange(F, dtype=np.int64)
    bits = [(ids >> (N - 1 - k)) & 1 for k in range(N)]
    _, orders = order_types(n)
    best_along_order = np.full(F, N, dtype=np.int64)
    for order in orders:
        changes = sum(bits[a] ^ bits[b] for a, b in zip(order[:-1], order[1:]))
        np.minimum(best_along_order, changes, out=best_along_order)
    luts, chunk = _id_permuters(n)
    best = best_along_order.copy()
    for t in range(len(luts[0][1])):
        np.minimum(best, best_along_order[_transform_ids(ids, luts, chunk, t)], out=best)
    best.setflags(write=False)
    return best


def best_projection(table) -> np.ndarray:
    """An integer direction w whose (generic) ordering of the ±1 corners achieves swaps(f)."""
    t, n = check_tables(table, name="table")
    if t.ndim != 1:
        raise ValueError("best_projection takes one truth table")
    counts = change_counts(t[None])[0]
    ti, oi = np.unravel_index(np.argmin(counts), counts.shape)
    perms, signs, _ = _signed_permutations(n)
    keep = _swaps_setup(n)[0]
    perm, sign = perms[keep[ti]], signs[keep[ti]]
    W_base, _ = order_types(n)
    # corner T x of f projects to x . w_base  =>  w_f[j] = sign_j * w_base[perm(j)]
    return (sign * W_base[oi][perm]).astype(np.int64)


def _changes_along_rows(G: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Class changes of every row of G (tables) along x -> x.w; inf where classes tie (w not in W)."""
    n = int(np.log2(G.shape[1]))
    proj = cube(n) @ w
    order = np.argsort(proj, kind="stable")
    p, labels = proj[order], G[:, order].astype(np.int64)
    starts = np.flatnonzero(np.r_[True, ~np.isclose(np.diff(p), 0.0, atol=1e-9)])
    lo = np.minimum.reduceat(labels, starts, axis=1)  # groups of tied corners are contiguous
    hi = np.maximum.reduceat(labels, starts, axis=1)
    changes = (lo[:, 1:] != lo[:, :-1]).sum(1).astype(float)
    changes[(lo != hi).any(1)] = math.inf
    return changes


def changes_along(table, w) -> float:
    """Class changes of f along the projection x -> x.w of the ±1 corners (eq. 3.10 summand).

    Tied corners form one group; a tie between different classes means w is not admissible
    (w not in the set W of eq. 3.8) and the result is ``inf``.
    """
    t, n = check_tables(table, max_n=16, name="table")
    w = V.array(w, "w (the direction)", shape=(n,), finite=False)
    if t.ndim != 1 or w.shape != (n,):
        raise ValueError(f"need one truth table and a direction of shape ({n},), got {t.shape}, {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("direction w contains NaN or infinite values")
    return float(_changes_along_rows(t[None], w)[0])


def thesis_case_weights(n: int) -> np.ndarray:
    """Weight vectors from the thesis' iterative case list (lines 790-800), one per case path.

    Each open interval is represented by its midpoint and 'above all' by the bound plus one. The list
    only compares w_i with w_{i-1} + w_1 + ... + w_k, so from n = 4 on it misses order types.
    """
    n = _check_n(n)
    paths = [[0.0], [1.0]]  # w1 = 0 or w1 > 0
    for i in range(2, n + 1):
        new = []
        for w in paths:
            prev = w[-1]
            bounds = [prev + sum(w[:k]) for k in range(0, i - 1)]  # b_0 = w_{i-1}, b_k adds w_1..w_k
            cands = [bounds[0]] + [bounds[-1] + 1.0]  # case 1 (equal) and case 5 (above all)
            cands += bounds[1:]  # case 3: equal to a prefix sum
            cands += [(a + b) / 2 for a, b in zip(bounds[:-1], bounds[1:])]  # cases 2 and 4
            new += [w + [c] for c in cands]
        paths = new
    return np.array(paths)


def thesis_swaps(tables):
    """Swaps value as the thesis' case-list algorithm computes it: min over its weights x NP moves.

    Tied corners must share a class (eq. 3.8). Both the change count and the tie violations are
    linear in the pair-disagreement vector of f, so all weights and transforms are one matmul.
    One table gives a float, a batch (rows) an array; compare with :func:`swaps` to see it fail.
    """
    t, n = check_tables(tables)
    T2 = np.atleast_2d(t)
    _, pair_perm, _, iu, ju = _swaps_setup(n)
    pair_index = {(int(i), int(j)): p for p, (i, j) in enumerate(zip(iu, ju))}
    pair = lambda a, b: pair_index[(min(a, b), max(a, b))]  # noqa: E731
    q_change, q_tie = np.zeros((len(iu), 0), np.float32), np.zeros((len(iu), 0), np.float32)
    for w in thesis_case_weights(n):
        proj = cube(n) @ w
        order = np.argsort(proj, kind="stable")
        groups = np.split(order, np.flatnonzero(~np.isclose(np.diff(proj[order]), 0.0, atol=1e-9)) + 1)
        change, tie = np.zeros((len(iu), 1)), np.zeros((len(iu), 1))
        for g, h in zip(groups[:-1], groups[1:]):
            change[pair(g[0], h[0])] = 1
        for g in groups:
            for a, b in zip(g[:-1], g[1:]):
                tie[pair(a, b)] = 1
        q_change, q_tie = np.hstack([q_change, change]), np.hstack([q_tie, tie])
    D = (T2[:, iu] != T2[:, ju]).astype(np.float32)[:, pair_perm]  # (F, transforms/2, pairs)
    counts = np.where(D @ q_tie > 0, math.inf, D @ q_change)
    best = counts.min(axis=(1, 2))
    return float(best[0]) if t.ndim == 1 else best


# --------------------------------------------------------------------------------------------
# Fourier-Walsh quantities (eqs. 3.5-3.7, normalised so that the squares sum to one)
# --------------------------------------------------------------------------------------------

def fourier(tables) -> np.ndarray:
    """Normalised Fourier-Walsh coefficients of F = 1 - 2 f: rows (F, 2**n), column S = subset bits.

    Uses fhat(S) = 2^-n sum_x F(x) chi_S(x) (the thesis prints eq. 3.5 without the 2^-n).
    """
    t, n = check_tables(tables, max_n=12)
    T2 = np.atleast_2d(t).astype(float)
    H = np.prod(np.where(cube(n, pm=False)[None, :, :].astype(bool), cube(n)[:, None, :], 1), axis=2)
    coef = (1 - 2 * T2) @ H / 2 ** n  # H[x, S] = chi_S(x), S indexed like corners
    return coef if t.ndim == 2 else coef[0]


def _subset_sizes(n: int) -> np.ndarray:
    return cube(n, pm=False).sum(1)


def degree(tables) -> np.ndarray:
    """Fourier degree: the largest |S| with a non-zero coefficient."""
    c = np.atleast_2d(fourier(tables))
    sizes = _subset_sizes(int(np.log2(c.shape[1])))
    return np.where(np.abs(c) > 1e-12, sizes[None, :], 0).max(1)


def influence(tables) -> np.ndarray:
    """Total influence I(f) = sum_S |S| fhat(S)^2 (eq. 3.6)."""
    c = np.atleast_2d(fourier(tables))
    return (c ** 2 * _subset_sizes(int(np.log2(c.shape[1])))[None, :]).sum(1)


def fourier_entropy(tables) -> np.ndarray:
    """Fourier entropy E(f) = sum_S fhat(S)^2 log2(1 / fhat(S)^2) (eq. 3.7)."""
    p = np.atleast_2d(fourier(tables)) ** 2
    return 0.0 - (np.where(p > 1e-15, p * np.log2(np.where(p > 1e-15, p, 1.0)), 0.0)).sum(1)


# --------------------------------------------------------------------------------------------
# Constructive networks (Theorem 3.3.2 / Lemma A.2.1, Theorems 3.3.3 / 3.3.4)
# --------------------------------------------------------------------------------------------

def _check_alpha(alpha) -> float:
    return V.slope(alpha, "alpha (the leak)")


def _check_layers(params) -> list:
    """``params`` as float64 ``[(W, b), ...]`` with chaining shapes and finite entries."""
    layers = V.sequence(params, "params", min_len=1)
    out = []
    for i, layer in enumerate(layers):
        if not isinstance(layer, (list, tuple)) or len(layer) != 2:
            raise V.ArgumentTypeError(f"params[{i}] must be a (W, b) pair, got {V.describe(layer)}")
        W = V.array(layer[0], f"params[{i}] W", ndim=2, nonempty=False)  # width 0: constant nets
        b = V.array(layer[1], f"params[{i}] b", shape=(W.shape[0],), nonempty=False)
        if i and W.shape[1] != out[-1][0].shape[0]:
            raise V.ArgumentValueError(f"params[{i}] W has {W.shape[1]} columns but layer {i - 1} has "
                                       f"{out[-1][0].shape[0]} units")
        out.append((W, b))
    return out


def network_output(params, X, alpha: float = 0.0) -> np.ndarray:
    """Output of ``[(W, b), ...]`` (W of shape (out, in)) with leaky ReLU max(z, alpha z), float64.

    A hidden layer of width 0 is allowed (:func:`swaps_network` of a constant function has one: the
    output is then the last bias). ``params`` and ``X`` must be finite.
    """
    alpha = _check_alpha(alpha)
    params = _check_layers(params)
    h = V.array(X, "X", ndim=2, shape=(None, params[0][0].shape[1]))
    for i, (W, b) in enumerate(params):
        h = h @ np.asarray(W, float).T + np.asarray(b, float)
        if i < len(params) - 1:
            h = np.maximum(h, alpha * h)
    return h[:, 0]


def interpolation_slopes(slopes, alpha: float) -> np.ndarray:
    """Output weights a with M a = slopes, M_ij = 1 (i <= j) or alpha (i > j): Lemma A.2.1 (A.13)."""
    s = V.array(slopes, "slopes", ndim=1)
    alpha = _check_alpha(alpha)
    k = len(s)
    M = np.where(np.arange(k)[:, None] >= np.arange(k)[None, :], 1.0, alpha)  # row j = segment j
    return np.linalg.solve(M, s)


def swaps_network(table, alpha: float = 0.0) -> list:
    """A one-hidden-layer (leaky) ReLU net of width swaps(f) classifying every corner (Thm 3.3.2).

    Projects the ±1 corners on :func:`best_projection`, groups them into the swaps(f)+1 runs of one
    class, and interpolates targets +-r_j at the run ends/centres (Lemma A.2.1) so that the piecewise
    linear output crosses zero exactly halfway between adjacent runs. Output > 0 means class 1.
    Returns ``[(W1 (s, n), b1 (s,)), (W2 (1, s), b2 (1,))]``.
    """
    alpha = _check_alpha(alpha)
    t, n = check_tables(table, name="table")
    if t.ndim != 1:
        raise ValueError("swaps_network takes one truth table")
    w = best_projection(t).astype(float)
    proj = cube(n) @ w
    order = np.argsort(proj, kind="stable")
    p, lab = proj[order], t[order].astype(int)
    cut = np.flatnonzero(np.diff(lab)) + 1  # first index of each new run
    s = len(cut)
    if s == 0:
        return [(np.zeros((0, n)), np.zeros(0)), (np.zeros((1, 0)), np.array([1.0 if lab[0] else -1.0]))]
    starts, ends = np.r_[0, cut], np.r_[cut - 1, len(p) - 1]
    y = (p[starts] + p[ends]) / 2  # run centres ...
    y[0], y[-1] = p[0], p[-1]  # ... except the outer runs, anchored at their extreme points
    mids = (p[ends[:-1]] + p[starts[1:]]) / 2  # zero crossings between runs
    mag = np.ones(s + 1)
    for j in range(s):  # linear between y_j and y_j+1, crossing zero at mids[j]
        mag[j + 1] = mag[j] * (y[j + 1] - mids[j]) / (mids[j] - y[j])
    targets = np.where(lab[starts] == 1, 1.0, -1.0) * mag
    a = interpolation_slopes(np.diff(targets) / np.diff(y), alpha)
    d = targets[0] - alpha * np.sum(a[1:] * (y[0] - y[1:s]))
    W1 = np.outer(np.ones(s), w)
    return [(W1, -y[:s].copy()), (a[None, :], np.array([d]))]


def sawtooth_network(width: int, depth: int, alpha: float = 0.0) -> list:
    """A width-w, depth-l (leaky) ReLU net R -> R whose output zig-zags w^l times on [0, 1] (Thm 3.3.3).

    Every hidden layer computes the w-tooth map g (slopes +-w, g(j/w) = j mod 2) of the previous
    layer's output, so the output is g^l - 1/2: w^l + 1 alternating sign regions on [0, 1].
    """
    alpha = _check_alpha(alpha)
    for name, v in (("width", width), ("depth", depth)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    knots = np.arange(width) / width
    c = interpolation_slopes(width * (-1.0) ** np.arange(width), alpha)
    d = alpha * np.sum(c * knots)  # makes g(0) = 0
    params = [(np.ones((width, 1)), -knots)]
    for _ in range(depth - 1):
        params.append((np.outer(np.ones(width), c), d - knots))
    params.append((c[None, :], np.array([d - 0.5])))
    return params


def parity_network(n: int, width: int, depth: int, alpha: float = 0.0) -> list:
    """Width-w, depth-l net solving n-parity on {-1,1}^n whenever n <= w^l (Theorem 3.3.4, App. A.4).

    Projects on the all-ones direction (k ones -> k / w^l) and feeds the saw-tooth net.
    """
    params = sawtooth_network(width, depth, alpha)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= width ** depth:
        raise ValueError(f"n must be an int in [1, width**depth = {width ** depth}], got {n!r}")
    scale = 1.0 / (2 * width ** depth)
    W1, b1 = params[0]
    params[0] = (W1 @ np.full((1, n), scale), b1 + n * scale)  # x -> (sum x + n) / (2 w^l)
    return params


# --------------------------------------------------------------------------------------------
# Training many small nets at once (thesis §3.4.1, §3.4.2)
# --------------------------------------------------------------------------------------------

INITS = ("he", "torch")  # weight initialisations of StackedMLP


class StackedMLP:
    """B independent leaky-ReLU MLPs with the nets axis last, trained without autograd.

    Hidden activations have shape (P, d, B). The first layer is one matmul (inputs are shared), the
    others a broadcast multiply-sum; both are much faster on CPU than thousands of tiny batched
    matmuls. Gradients are written by hand and Adam runs on one flat buffer, so an epoch costs a few
    dozen tensor ops. He-normal weights, PyTorch-default uniform biases (thesis §3.4); ``init="torch"``
    draws the weights as PyTorch's ``nn.Linear`` does, uniform on +-1/sqrt(fan_in) (Chapter 6, pruning
    section: does the initialisation explain the thesis' 2x2 rate on 4-parity?). The nets live on
    ``device`` (:func:`lib.scale.as_device`; default the CPU, where :class:`lib.pruning.MaskedMLP` keeps
    its masks); the weights are drawn on the CPU first, so every device starts from the same nets.
    """

    def __init__(self, widths, n_nets: int, alpha: float, seed: int, init: str = "he", device="cpu"):
        alpha = _check_alpha(alpha)
        V.choice(init, "init", INITS)
        widths = V.sequence(widths, "widths")
        if len(widths) < 2 or any(not V.is_int(w) or w < 1 for w in widths) or widths[-1] != 1:
            raise ValueError(f"widths must be >= 2 positive ints ending in 1, got {widths}")
        n_nets = V.positive_int(n_nets, "n_nets")
        seed = V.seed(seed)
        device = as_device(device)
        gen = torch.Generator().manual_seed(int(seed))
        self.alpha, self.widths = alpha, list(widths)
        shapes = []
        for d_in, d_out in zip(widths[:-1], widths[1:]):
            shapes += [(d_in, d_out, n_nets), (d_out, n_nets)]
        parts = []  # drawn on the CPU generator, so every device starts from the same weights
        for d_in, (W_shape, b_shape) in zip(widths[:-1], zip(shapes[::2], shapes[1::2])):
            if init == "he":
                parts.append(torch.randn(W_shape, generator=gen) * math.sqrt(2 / d_in))
            else:
                parts.append((torch.rand(W_shape, generator=gen) * 2 - 1) / math.sqrt(d_in))
            parts.append((torch.rand(b_shape, generator=gen) * 2 - 1) / math.sqrt(d_in))
        self._set_theta(torch.cat([v.reshape(-1) for v in parts]).to(device), shapes)

    def _set_theta(self, theta: torch.Tensor, shapes) -> None:
        """Make ``theta`` the flat weight vector: ``params`` are views of it with ``shapes`` (nets axis
        last), ``grad``/``grads`` a zero buffer laid out alike, on ``theta``'s device."""
        sizes = [math.prod(sh) for sh in shapes]
        self.theta, self.B = theta, shapes[0][-1]
        self.grad = torch.zeros_like(theta)
        self.params = [v.view(sh) for v, sh in zip(theta.split(sizes), shapes)]
        self.grads = [v.view(sh) for v, sh in zip(self.grad.split(sizes), shapes)]

    @property
    def device(self) -> torch.device:
        """Where the nets live (the ``device`` they were built on, issue 22)."""
        return self.theta.device

    def keep_nets(self, keep: torch.Tensor, *flat_states: torch.Tensor) -> list:
        """Drop the nets where ``keep`` is False, in place; returns the same subset of ``flat_states``.

        ``flat_states`` are vectors laid out like ``self.theta`` (e.g. Adam's moments).
        """
        shapes = [p.shape for p in self.params]
        sizes = [math.prod(sh) for sh in shapes]

        def subset(flat):
            return torch.cat([v.view(sh)[..., keep].reshape(-1) for v, sh in zip(flat.split(sizes), shapes)])

        out = [subset(f) for f in flat_states]
        self._set_theta(subset(self.theta), [(*sh[:-1], int(keep.sum())) for sh in shapes])
        return out

    def _act(self, z):
        return torch.maximum(z, self.alpha * z) if self.alpha > 0 else torch.relu(z)

    def forward(self, X: torch.Tensor, keep: bool = False):
        """Logits (P, B) for inputs X (P, d) shared by all nets (and the activations if ``keep``); ``X``:
        a finite floating-point tensor, an empty batch (P = 0) gives an empty result."""
        V.tensor(X, "X", shape=(None, self.widths[0]), floating=True, nonempty=False)
        Ws, bs = self.params[::2], self.params[1::2]
        P = X.shape[0]
        z = (X @ Ws[0].reshape(X.shape[1], -1)).view(P, *bs[0].shape) + bs[0]
        zs = [z]
        for W, b in zip(Ws[1:], bs[1:]):
            z = (self._act(z)[:, :, None, :] * W[None]).sum(1) + b[None]
            zs.append(z)
        return (z[:, 0, :], zs) if keep else z[:, 0, :]

    def backward(self, X: torch.Tensor, zs, dout: torch.Tensor) -> None:
        """Write the gradient of sum(dout * logits) into ``self.grad``."""
        Ws, gWs, gbs = self.params[::2], self.grads[::2], self.grads[1::2]
        dz = dout[:, None, :]  # (P, 1, B)
        for l in range(len(Ws) - 1, 0, -1):
            a = self._act(zs[l - 1])
            gWs[l].copy_((a[:, :, None, :] * dz[:, None, :, :]).sum(0))
            gbs[l].copy_(dz.sum(0))
            da = (dz[:, None, :, :] * Ws[l][None]).sum(2)
            dz = da * torch.where(zs[l - 1] > 0, 1.0, self.alpha)
        P = X.shape[0]
        gWs[0].view(X.shape[1], -1).copy_(X.T @ dz.reshape(P, -1))
        gbs[0].copy_(dz.sum(0))


def _adam_state(theta: torch.Tensor):
    return {"m": torch.zeros_like(theta), "v": torch.zeros_like(theta), "t": 0}


def _adam_step(theta, grad, state, lr, betas=(0.9, 0.999), eps=1e-8) -> None:
    """One Adam step in place (the same update as torch.optim.Adam)."""
    b1, b2 = betas
    state["t"] += 1
    t = state["t"]
    state["m"].mul_(b1).add_(grad, alpha=1 - b1)
    state["v"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
    denom = (state["v"].sqrt() / math.sqrt(1 - b2 ** t)).add_(eps)
    theta.addcdiv_(state["m"], denom, value=-lr / (1 - b1 ** t))


def _fit(model: StackedMLP, X: torch.Tensor, Y: torch.Tensor, epochs: int, lr: float, desc: str,
         progress: bool = True, compact_every: int | None = None, record: bool = False,
         best_accuracy: torch.Tensor | None = None):
    """Full-batch Adam on stacked nets with mean BCE per net; returns (solved at any epoch, curves).

    ``curves`` (epochs, nets) holds every net's loss per epoch when ``record`` (then no net is
    dropped); otherwise every ``compact_every`` epochs the solved nets leave the computation.
    ``best_accuracy`` (nets,), if given, is filled in place with each net's best fraction of correct
    points over the epochs (Chapter 6, higher dimensions: Figs. 3.8-3.9); it must be on the model's
    device. Trains on ``model.device`` (``X`` and ``Y`` are moved there); the results are numpy arrays.
    """
    from tqdm.auto import tqdm

    device = model.device
    X, Y = X.to(device), Y.to(device)
    target = Y > 0.5
    state = _adam_state(model.theta)
    solved = torch.zeros(model.B, dtype=torch.bool, device=device)
    active = torch.arange(model.B, device=device)  # nets still training
    curves = torch.empty(epochs, model.B, device=device) if record else None
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    for epoch in tqdm(range(epochs), desc=desc, disable=not progress, mininterval=1.0):
        out, zs = model.forward(X, keep=True)
        correct = (out > 0) == target
        now = correct.all(0)
        solved[active[now]] = True
        if best_accuracy is not None:
            best_accuracy[active] = torch.maximum(best_accuracy[active], correct.float().mean(0))
        if record:
            curves[epoch] = bce(out, Y, reduction="none").mean(0)
        model.backward(X, zs, (torch.sigmoid(out) - Y) / X.shape[0])  # d(mean BCE)/d logits
        _adam_step(model.theta, model.grad, state, lr)
        if epoch % 100 == 99:  # every 100 epochs: one pass over the flat weight vector
            V.finite_loss(model.theta, epoch + 1, lr, what="weights")
        if not record and compact_every and epoch % compact_every == compact_every - 1 and now.any():
            if now.all():
                break
            state["m"], state["v"] = model.keep_nets(~now, state["m"], state["v"])
            active, Y, target = active[~now], Y[:, ~now], target[:, ~now]
    else:
        V.finite_loss(model.theta, epochs, lr, what="weights")
        correct = (model.forward(X) > 0) == target
        solved[active[correct.all(0)]] = True
        if best_accuracy is not None:
            best_accuracy[active] = torch.maximum(best_accuracy[active], correct.float().mean(0))
    return solved.cpu().numpy(), (None if curves is None else curves.cpu().numpy())


def train_boolean_nets(tables, width: int, depth: int, alpha: float, trials: int, epochs: int,
                       lr: float = 0.025, seed: int = 0, progress: bool = True,
                       compact_every: int = 100, with_accuracy: bool = False, init: str = "he", device=None):
    """Train ``trials`` nets of shape width x depth on each truth table; success matrix (F, trials).

    Thesis §3.4.2 setting: inputs {-1,1}^n, full batch, BCE with logits, Adam (lr 0.025), up to
    ``epochs`` epochs; success = every corner classified correctly at some epoch. The loss is the
    *sum* over nets of each net's mean loss, so the stacked Adam equals independent runs. Every
    ``compact_every`` epochs the solved nets are removed from the computation (their result is
    final), which does not change any other net's trajectory. With ``with_accuracy`` it returns
    (success, accuracy), accuracy (F, trials) = each net's best fraction of corners right over the
    epochs (Chapter 6, higher dimensions: Figs. 3.8-3.9). ``init``: see :class:`StackedMLP`. The nets
    train on ``device`` (default ``REPRO_DEVICE``: the CPU at quick and full scale, CUDA at paper scale
    where there is one; issue 22); the weights start from the same CPU draws on every device.
    """
    t, n = check_tables(tables, max_n=12)
    lr, seed = V.positive(lr, "lr"), V.seed(seed)
    T2 = np.atleast_2d(t)
    compact_every, trials, epochs = (V.positive_int(compact_every, "compact_every"), V.positive_int(trials, "trials"),
                                     V.positive_int(epochs, "epochs"))
    width, depth = V.positive_int(width, "width"), V.positive_int(depth, "depth")
    device = as_device(device)
    F = len(T2)
    X = torch.tensor(cube(n), dtype=torch.float32)
    Y = torch.tensor(np.repeat(T2.T, trials, axis=1), dtype=torch.float32)  # (P, F * trials)
    model = StackedMLP([n] + [width] * depth + [1], F * trials, alpha, seed, init, device)
    best = torch.zeros(model.B, device=device) if with_accuracy else None
    solved, _ = _fit(model, X, Y, epochs, lr, f"n={n} {width}x{depth} alpha={alpha}", progress, compact_every,
                     best_accuracy=best)
    if with_accuracy:
        return solved.reshape(F, trials), best.cpu().numpy().reshape(F, trials)
    return solved.reshape(F, trials)


def subnetworks(model: StackedMLP, subsets, nets) -> StackedMLP:
    """Sub-networks of one-hidden-layer stacked nets: for each net in ``nets`` (parent-major) and each
    subset of hidden units (all of one size), a net keeping only those units and their weights, on
    the model's device."""
    V.instance(model, "model", StackedMLP)
    if len(model.params) != 4:
        raise ValueError("subnetworks needs one-hidden-layer nets")
    S = torch.as_tensor(V.array(subsets, "subsets (unit tuples of one size)", ndim=2, integer=True))
    p = torch.as_tensor(V.array(nets, "nets (net indices)", ndim=1, integer=True))
    if S.min() < 0 or S.max() >= model.widths[1]:
        raise ValueError(f"subsets: unit index out of range [0, {model.widths[1]})")
    if p.min() < 0 or p.max() >= model.B:
        raise ValueError(f"nets: net index out of range [0, {model.B})")
    C, k = S.shape
    U, n = len(p), model.widths[0]
    W1, b1, W2, b2 = model.params  # (n, w, B), (w, B), (w, 1, B), (1, B)
    child = StackedMLP([n, k, 1], U * C, model.alpha, seed=0, device=model.device)  # net = parent * C + subset
    units, p = S.reshape(-1).to(model.device), p.to(model.device)
    child.params[0].copy_(W1[:, units][:, :, p].reshape(n, C, k, U).permute(0, 2, 3, 1).reshape(n, k, -1))
    child.params[1].copy_(b1[units][:, p].reshape(C, k, U).permute(1, 2, 0).reshape(k, -1))
    child.params[2].copy_(W2[units][:, :, p].reshape(C, k, 1, U).permute(1, 2, 3, 0).reshape(k, 1, -1))
    child.params[3].copy_(b2[:, p].repeat_interleave(C, dim=1))
    return child


def prune_and_finetune(table, width: int, alpha: float, parents: int, epochs: int, lr: float = 0.025,
                       seed: int = 0, max_width: int = 3, progress: bool = True,
                       finetune_epochs: int | None = None, record: bool = True,
                       stop_at_first: bool = False, device=None) -> dict:
    """Exhaustive pruning of one-hidden-layer nets (thesis §3.4.4, Table 3.4, Fig. 3.10).

    Trains ``parents`` width-``width`` nets on ``table`` for ``epochs``; for every parent that ends
    classifying all corners, every sub-network keeping k <= ``max_width`` hidden units (all
    C(width, k) of them, with the parent's weights) is fine-tuned for ``finetune_epochs`` (default
    ``epochs``) with the same Adam, all in one batch. With ``stop_at_first`` (the thesis' loop) a
    parent's sub-networks of width k are tried only while none of a smaller width has succeeded.
    Returns ``parent_solved`` (parents,), ``parents_used`` (indices), ``smallest`` (used parents,):
    the smallest successful width (0: none up to ``max_width``), and per k: ``subsets[k]``,
    ``solved[k]`` (used parents, C(width, k); False where not tried), ``tried[k]`` (used parents,)
    and, when ``record``, ``curves[k]`` (finetune_epochs, used parents, C(width, k)), else None.
    All nets train on ``device`` (default ``REPRO_DEVICE``, as :func:`train_boolean_nets`).
    """
    t, n = check_tables(table, max_n=12, name="table")
    if t.ndim != 1:
        raise ValueError("prune_and_finetune takes one truth table")
    lr, seed = V.positive(lr, "lr"), V.seed(seed)
    width = V.positive_int(width, "width")
    max_width = V.positive_int(max_width, "max_width", max=width)
    parents, epochs = V.positive_int(parents, "parents"), V.positive_int(epochs, "epochs")
    finetune_epochs = epochs if finetune_epochs is None else V.positive_int(finetune_epochs, "finetune_epochs")
    device = as_device(device)
    X = torch.tensor(cube(n), dtype=torch.float32, device=device)
    labels = torch.tensor(t, dtype=torch.float32, device=device)[:, None]
    parent = StackedMLP([n, width, 1], parents, alpha, seed, device=device)
    _fit(parent, X, labels.repeat(1, parents), epochs, lr, f"parents width {width}", progress)
    parent_solved = ((parent.forward(X) > 0) == (labels > 0.5)).all(0).cpu().numpy()
    used = np.flatnonzero(parent_solved)
    smallest = np.zeros(len(used), dtype=int)
    result = {"parent_solved": parent_solved, "parents_used": used, "smallest": smallest, "subsets": {},
              "solved": {}, "tried": {}, "curves": {}}
    for k in range(1, max_width + 1):
        subsets = list(itertools.combinations(range(width), k))
        result["subsets"][k] = subsets
        tried = smallest == 0 if stop_at_first else np.ones(len(used), dtype=bool)
        if not tried.any():
            continue
        child = subnetworks(parent, subsets, used[tried])
        solved, curves = _fit(child, X, labels.repeat(1, child.B), finetune_epochs, lr,
                              f"sub-networks of width {k}", progress, compact_every=None if record else 100,
                              record=record)
        result["tried"][k] = tried
        result["solved"][k] = np.zeros((len(used), len(subsets)), dtype=bool)
        result["solved"][k][tried] = solved.reshape(-1, len(subsets))
        smallest[(smallest == 0) & result["solved"][k].any(1)] = k
        if record:
            result["curves"][k] = np.zeros((finetune_epochs, len(used), len(subsets)), dtype=np.float32)
            result["curves"][k][:, tried] = curves.reshape(finetune_epochs, -1, len(subsets))
        else:
            result["curves"][k] = None
    return result


def xor1d_local_optima(n_nets: int, steps: int = 500, lr: float = 0.1, seed: int = 0):
    """Train ``n_nets`` copies of v = o1 relu(w1 x+b1) + o2 relu(w2 x+b2) + c on 1-D XOR (§3.4.1).

    Points x = -1, 0, 0, 1 with targets -1, 1, 1, -1 (eq. 3.25, SSE loss), plain gradient descent,
    He-normal weights, zero biases. Returns (final losses (n_nets,), parameters dict of arrays).
    Runs on the CPU at every scale: the thesis' 1,000 two-unit nets take about a second there.
    """
    n_nets, steps = V.positive_int(n_nets, "n_nets"), V.positive_int(steps, "steps")
    lr, seed = V.positive(lr, "lr"), V.seed(seed)
    gen = torch.Generator().manual_seed(int(seed))
    w = (torch.randn(2, n_nets, generator=gen) * math.sqrt(2.0)).requires_grad_()
    o = (torch.randn(2, n_nets, generator=gen) * 1.0).requires_grad_()
    b = torch.zeros(2, n_nets, requires_grad=True)
    c = torch.zeros(n_nets, requires_grad=True)
    x = torch.tensor([-1.0, 0.0, 0.0, 1.0])[:, None, None]
    y = torch.tensor([-1.0, 1.0, 1.0, -1.0])[:, None]
    opt = torch.optim.SGD([w, o, b, c], lr=lr)

    def losses():
        v = (o * torch.relu(w * x + b)).sum(1) + c
        return ((v - y) ** 2).sum(0)

    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        losses().sum().backward()
        opt.step()
    with torch.no_grad():
        final = losses().numpy().copy()
    V.finite_loss(final, steps, lr)
    params = {k: v.detach().numpy().copy() for k, v in dict(w=w, o=o, b=b, c=c).items()}
    return final, params


def relu_sign_pattern(w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Region of Table 3.2: signs (>= 0) of b_i, b_i + w_i, b_i - w_i for both units, as 6-char strings."""
    w = V.array(w, "w", shape=(2, None))
    b = V.array(b, "b", shape=w.shape, agree="w")
    if w.shape != b.shape or w.ndim != 2 or w.shape[0] != 2:
        raise ValueError(f"w and b must both have shape (2, n_nets), got {w.shape} and {b.shape}")
    cols = [b[0], b[0] + w[0], b[0] - w[0], b[1], b[1] + w[1], b[1] - w[1]]
    signs = np.stack(cols, 1) >= 0
    return np.array(["".join("+" if s else "-" for s in row) for row in signs])


# --------------------------------------------------------------------------------------------
# Beyond the document: searching for large swaps values (n = 5)
# --------------------------------------------------------------------------------------------

def climb_max_swaps(n: int, restarts: int, seed: int = 0, max_steps: int = 30, sideways: int = 4,
                    progress: bool = True):
    """Steepest-ascent search for functions of n <= 5 inputs with a large swaps value (Chapter 6).

    Each restart starts from a uniformly random table and repeatedly moves to a best one of its 2^n
    single-entry flips (evaluated exactly, in one batch); up to ``sideways`` moves in a row may keep
    the value (plateaus are common). Returns ``(best_table, best_value, final value per restart)``.
    """
    from tqdm.auto import tqdm

    n = _check_n(n)
    restarts = V.positive_int(restarts, "restarts")
    seed = V.seed(seed)
    max_steps, sideways = V.nonnegative_int(max_steps, "max_steps"), V.nonnegative_int(sideways, "sideways")
    rng = np.random.default_rng(seed)
    flips = np.eye(2 ** n, dtype=np.uint8)
    best_table, best_value, finals = None, -1, []
    for _ in tqdm(range(restarts), desc=f"climbing n={n}", disable=not progress):
        table = rng.integers(0, 2, 2 ** n).astype(np.uint8)
        value, flat = swaps(table), 0
        for _ in range(max_steps):
            neighbours = table[None, :] ^ flips
            values = np.array([swaps(x) for x in neighbours])
            flat = flat + 1 if values.max() == value else 0
            if values.max() < value or flat > sideways:
                break
            table = neighbours[rng.choice(np.flatnonzero(values == values.max()))]
            value = int(values.max())
        finals.append(value)
        if value > best_value:
            best_table, best_value = table.copy(), value
    return best_table, best_value, np.array(finals)
