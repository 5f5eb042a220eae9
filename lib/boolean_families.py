"""Families of n-input Boolean functions and their training difficulty (Chapter 6, higher dimensions).

Source: Sattelberg (2026), *Local Linearity of ReLU Neural Networks*, §3.4.3 (Figs. 3.7-3.9). The thesis
compares three families of n-input functions: uniformly random functions, n-parity, and the 222
"four-input functions XORed with n-parity". It does not say how the four inputs sit among the n; we
use the natural reading g(x) = h(x1, .., x4) XOR parity(x1, .., xn), one h per NPN class of four
inputs (:func:`xor_parity_tables`). Truth tables follow :mod:`lib.boolean` (entry k = f at the corner
whose binary digits are k, x1 most significant).
"""

from __future__ import annotations

import numpy as np

from lib import boolean as B
from lib import validate as V

MAX_N = 12  # the training and Fourier code handle up to 2**12 corners


def _check_n(n, low: int = 1) -> int:
    return V.integer(n, "n (the number of inputs)", min=low, max=MAX_N)


def random_tables(n: int, count: int, seed: int) -> np.ndarray:
    """``count`` uniformly random n-input truth tables (rows), every entry a fair coin (Figs. 3.7-3.9)."""
    n = _check_n(n)
    if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 1:
        raise ValueError(f"count must be a positive int, got {count!r}")
    seed = V.seed(seed)
    return np.random.default_rng(seed).integers(0, 2, (int(count), 2 ** n)).astype(np.uint8)


def xor_parity_tables(n: int, ids=None) -> np.ndarray:
    """Tables of g(x) = h(x1..x4) XOR parity(x1..xn) for the four-input ids (default: the 222 NPN classes).

    The thesis' third family (§3.4.3); the embedding of h on the first four inputs is our choice.
    """
    n = _check_n(n, low=4)
    ids = B.npn_classes(4) if ids is None else ids
    h = B.truth_table(ids, 4)  # (F, 16); checks the ids
    corner = np.arange(2 ** n) >> (n - 4)  # the index of (x1..x4) within the 16 four-input corners
    return h[:, corner] ^ B.parity_table(n)[None, :]


def or_table(n: int) -> np.ndarray:
    """The n-input OR (0 only at the all-zero corner); the thesis' claimed entropy maximiser."""
    table = np.ones(2 ** _check_n(n), dtype=np.uint8)
    table[0] = 0
    return table


def bent_table(n: int) -> np.ndarray:
    """The inner-product bent function x1 x2 XOR x3 x4 XOR ... (n even): every |fhat(S)| = 2^(-n/2).

    Its Fourier entropy is n, the largest possible (Chapter 6, "Beyond the document").
    """
    n = _check_n(n, low=2)
    if n % 2:
        raise ValueError(f"bent functions need an even number of inputs, got n = {n}")
    bits = B.cube(n, pm=False)
    return (bits[:, 0::2] * bits[:, 1::2]).sum(1).astype(np.uint8) % 2


def parity_solvable(n: int, width: int, depth: int) -> bool:
    """Whether the swaps analysis guarantees that width x depth solves n-parity: n <= width**depth.

    Theorem 3.3.4 (saw-tooth networks); for depth 1 it is Theorem 3.3.2 with swaps(parity_n) = n.
    These are the outlined cells of Fig. 3.7.
    """
    n = _check_n(n)
    width, depth = V.positive_int(width, "width"), V.positive_int(depth, "depth")
    return int(n) <= int(width) ** int(depth)


def fourier_metrics(tables) -> dict:
    """Fourier degree, total influence and entropy of each table (eqs. 3.5-3.7, normalised spectrum)."""
    tables = np.atleast_2d(np.asarray(tables))
    B.check_tables(tables, max_n=MAX_N)
    return {"degree": B.degree(tables).astype(float), "influence": B.influence(tables),
            "entropy": B.fourier_entropy(tables)}


def xor_parity_metrics(n: int, ids=None) -> dict:
    """The same three metrics for h XOR parity_n in closed form from h alone (a check of Fig. 3.9).

    Multiplying by chi_[n] maps fhat_h(S) to the coefficient of [n] minus S, so the spectrum keeps its
    weights: degree = n - min{|S| : fhat_h(S) != 0}, influence = n - I(h), entropy = E(h).
    """
    n = _check_n(n, low=4)
    h = B.truth_table(B.npn_classes(4) if ids is None else ids, 4)
    coef = B.fourier(h)
    sizes = B.cube(4, pm=False).sum(1)
    low = np.where(np.abs(coef) > 1e-12, sizes[None, :], 99).min(1)
    return {"degree": (n - low).astype(float), "influence": n - B.influence(h), "entropy": B.fourier_entropy(h)}


def train_accuracy(tables, width: int, depth: int, alpha: float, trials: int, epochs: int,
                   lr: float = 0.025, seed: int = 0, progress: bool = True,
                   compact_every: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Train ``trials`` nets per table with :func:`lib.boolean.train_boolean_nets` (thesis §3.4).

    Returns (success, accuracy), both (F, trials): success = every corner right at some epoch;
    accuracy = the best fraction of the 2**n corners classified correctly over the epochs (Fig. 3.8's
    "points correctly classified", which the thesis does not say is final or best).
    """
    t, _ = B.check_tables(tables, max_n=MAX_N)
    return B.train_boolean_nets(t, width, depth, alpha, trials, epochs, lr=lr, seed=seed, progress=progress,
                                compact_every=compact_every, with_accuracy=True)
