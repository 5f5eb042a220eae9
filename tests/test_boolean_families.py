"""Unit tests of lib.boolean_families (Chapter 6, higher dimensions: thesis §3.4.3, Figs. 3.7-3.9)."""

import numpy as np
import pytest
import torch

from lib import boolean as B
from lib import boolean_families as BF


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def test_random_tables_are_seeded_fair_coins():
    a, b = BF.random_tables(6, 50, seed=3), BF.random_tables(6, 50, seed=3)
    assert a.shape == (50, 64) and a.dtype == np.uint8 and np.array_equal(a, b)
    assert not np.array_equal(a, BF.random_tables(6, 50, seed=4))
    assert set(np.unique(a)) == {0, 1} and abs(a.mean() - 0.5) < 0.05


def test_xor_parity_embedding():
    tables = BF.xor_parity_tables(6)
    assert tables.shape == (222, 64)
    parity6 = B.parity_table(6)
    # class 0 (the constant) gives parity itself; every row XOR parity depends on x1..x4 only
    assert np.array_equal(tables[0], parity6)
    h = tables ^ parity6
    assert np.array_equal(h, np.repeat(B.truth_table(B.npn_classes(4), 4), 4, axis=1))
    assert np.array_equal(BF.xor_parity_tables(4, [27030])[0], np.zeros(16))  # parity XOR parity


def test_fourier_metrics_of_known_functions():
    m = BF.fourier_metrics(np.stack([B.parity_table(6), BF.or_table(6), BF.bent_table(6)]))
    assert m["degree"].tolist() == [6, 6, 6]
    assert np.allclose(m["influence"], [6, 6 * 2 * 2 ** -6, 3])  # OR: each input pivotal at 2 of 64
    assert np.allclose(m["entropy"][[0, 2]], [0, 6])  # parity one coefficient, bent flat spectrum
    assert 0 < m["entropy"][1] < 6


def test_xor_parity_metrics_closed_form_matches():
    for n in (4, 5, 7):
        direct = BF.fourier_metrics(BF.xor_parity_tables(n))
        closed = BF.xor_parity_metrics(n)
        for key in ("degree", "influence", "entropy"):
            assert np.allclose(direct[key], closed[key], atol=1e-9), (n, key)


def test_parity_solvable_is_the_swaps_prediction():
    assert BF.parity_solvable(10, 10, 1) and not BF.parity_solvable(10, 9, 1)
    assert BF.parity_solvable(10, 4, 2) and not BF.parity_solvable(10, 3, 2)
    assert BF.parity_solvable(10, 2, 4) and not BF.parity_solvable(10, 2, 3)
    for n in range(1, 9):  # the constructive saw-tooth networks of Theorem 3.3.4 agree
        for width, depth in [(2, 1), (2, 2), (3, 1), (2, 3)]:
            if BF.parity_solvable(n, width, depth):
                out = B.network_output(B.parity_network(n, width, depth, 0.1), B.cube(n), 0.1)
                assert np.all((out > 0) == (B.parity_table(n) == 1))


def test_train_accuracy_learns_and_matches_train_boolean_nets():
    tables = np.stack([B.parity_table(3), BF.or_table(3)])
    success, acc = BF.train_accuracy(tables, 4, 1, 0.1, 6, 400, seed=5, progress=False)
    assert success.shape == acc.shape == (2, 6)
    assert np.all(acc[success] == 1.0) and np.all(acc[~success] < 1.0) and np.all(acc >= 0.5 - 1e-9)
    assert success[1].all()  # OR is linearly separable
    reference = B.train_boolean_nets(tables, 4, 1, 0.1, 6, 400, seed=5, progress=False)
    assert np.array_equal(success, reference)  # same seed, same nets, same trajectories


def test_best_accuracy_is_monotone_in_epochs():
    tables = BF.random_tables(5, 4, seed=0)
    _, short = BF.train_accuracy(tables, 3, 2, 0.1, 3, 50, seed=1, progress=False)
    _, long = BF.train_accuracy(tables, 3, 2, 0.1, 3, 300, seed=1, progress=False)
    assert np.all(long >= short - 1e-7)


def test_paper_scale_one_step():
    # Fig. 3.7 at the thesis' scale: 10 inputs, the largest grid shape, one epoch on synthetic tables
    tables = np.concatenate([B.parity_table(10)[None], BF.random_tables(10, 2, seed=0)])
    success, acc = BF.train_accuracy(tables, 10, 5, 0.1, 2, 1, progress=False)
    assert success.shape == (3, 2) and np.all((acc > 0) & (acc <= 1))


@pytest.mark.parametrize("call", [
    lambda: BF.random_tables(0, 3, 0),
    lambda: BF.random_tables(13, 3, 0),
    lambda: BF.random_tables(4, 0, 0),
    lambda: BF.random_tables(4.0, 3, 0),
    lambda: BF.xor_parity_tables(3),
    lambda: BF.xor_parity_tables(5, [2 ** 16]),
    lambda: BF.or_table(-1),
    lambda: BF.bent_table(5),
    lambda: BF.parity_solvable(10, 0, 2),
    lambda: BF.parity_solvable(10, 2, True),
    lambda: BF.fourier_metrics([0, 1, 1]),
    lambda: BF.xor_parity_metrics(2),
    lambda: BF.train_accuracy([0, 1, 2, 0], 2, 1, 0.1, 1, 1),
    lambda: BF.train_accuracy([0, 1, 1, 0], 2, 0, 0.1, 1, 1),
    lambda: BF.train_accuracy([0, 1, 1, 0], 2, 1, 0.1, 1, 0),
    lambda: BF.train_accuracy([0, 1, 1, 0], 2, 1, 1.5, 1, 1),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


# ---- every error message names its argument (what a user reads) --------------------------------

_BF_BAD = [
    (lambda: BF.random_tables(0, 2, 0), r"^n \(the number of inputs\) must be"),
    (lambda: BF.random_tables(3, 0, 0), r"^count must be a positive int, got 0$"),
    (lambda: BF.random_tables(3, True, 0), r"^count must be a positive int, got True$"),
    (lambda: BF.random_tables(3, 2.0, 0), r"^count must be a positive int, got 2.0$"),
    (lambda: BF.random_tables(3, 2, -1), r"^seed must be"),
    (lambda: BF.xor_parity_tables(3), r"^n \(the number of inputs\) must be an int >= 4"),
    (lambda: BF.xor_parity_tables(5, ids=[70000]), r"^ids must lie in \[0, 2\*\*16\) for n = 4$"),
    (lambda: BF.or_table(0), r"^n \(the number of inputs\) must be"),
    (lambda: BF.bent_table(1), r"^n \(the number of inputs\) must be"),
    (lambda: BF.bent_table(3), r"^bent functions need an even number of inputs, got n = 3$"),
    (lambda: BF.parity_solvable(3, 0, 1), r"^width must be"),
    (lambda: BF.parity_solvable(3, 2, 0), r"^depth must be"),
    (lambda: BF.fourier_metrics([0, 1, 1]), r"^tables \(truth table\) must have a length that is a power of two"),
    (lambda: BF.xor_parity_metrics(2), r"^n \(the number of inputs\) must be an int >= 4"),
    (lambda: BF.xor_parity_metrics(5, ids=[-1]), r"^ids must lie in \[0, 2\*\*16\) for n = 4$"),
    (lambda: BF.train_accuracy([0, 1, 2, 0], 2, 1, 0.1, 1, 1), r"^tables \(truth table\) must hold only the values 0 or 1$"),
    (lambda: BF.train_accuracy([0, 1, 1, 0], 2, 1, 0.1, 1, 1, lr=0.0, progress=False), r"^lr must be"),
    (lambda: BF.train_accuracy([0, 1, 1, 0], 2, 1, 0.1, 1, 1, compact_every=0, progress=False),
     r"^compact_every must be an int >= 1, got 0$"),
]


@pytest.mark.parametrize("i", range(len(_BF_BAD)))
def test_error_messages_name_the_argument(i):
    call, pattern = _BF_BAD[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


def test_small_families_by_hand():
    assert BF.or_table(2).tolist() == [0, 1, 1, 1]
    # x1 x2 XOR x3 x4 on the corners in B.cube order (x1 the most significant bit)
    bits = [[(i >> 3) & 1, (i >> 2) & 1, (i >> 1) & 1, i & 1] for i in range(16)]
    assert BF.bent_table(4).tolist() == [(a * b) ^ (c * d) for a, b, c, d in bits]
    assert BF.parity_solvable(4, 2, 2) and not BF.parity_solvable(5, 2, 2) and BF.parity_solvable(3, 3, 1)
    t = BF.random_tables(3, 5, 7)
    assert t.shape == (5, 8) and t.dtype == np.uint8 and set(np.unique(t)) <= {0, 1}
    # h = the all-zero function: g is plain 5-parity; h = x1 (id of table 0^8 1^8): g = x1 XOR parity
    g = BF.xor_parity_tables(5, ids=[0, B.table_to_id(np.repeat([0, 1], 8))])
    assert (g[0] == B.parity_table(5)).all()
    x1 = np.repeat([0, 1], 16)
    assert (g[1] == (x1 ^ B.parity_table(5))).all()


def test_train_accuracy_defaults_are_the_thesis_setting():
    # defaults: Adam lr 0.025, seed 0 (train_boolean_nets' own), every epoch's best accuracy returned
    tables = np.stack([B.parity_table(2), BF.or_table(2)])
    success, acc = BF.train_accuracy(tables, 2, 1, 0.1, 3, 60, progress=False)
    ref_s, ref_a = B.train_boolean_nets(tables, 2, 1, 0.1, 3, 60, lr=0.025, seed=0, progress=False,
                                        compact_every=100, with_accuracy=True)
    assert np.array_equal(success, ref_s) and np.array_equal(acc, ref_a)
    other = B.train_boolean_nets(tables, 2, 1, 0.1, 3, 60, lr=0.025, seed=1, progress=False, with_accuracy=True)
    assert not np.array_equal(acc, other[1])  # the seed matters, so the comparison above can fail


def test_family_edge_cases():
    assert BF.bent_table(2).tolist() == [0, 0, 0, 1] and BF.bent_table(4).dtype == np.uint8  # n = 2: AND
    assert BF.or_table(1).tolist() == [0, 1] and BF.or_table(3).dtype == np.uint8
    g = BF.xor_parity_tables(4, ids=[B.table_to_id(B.parity_table(4))])  # n = 4 is allowed: h XOR parity_4
    assert g.tolist() == [[0] * 16]
    m = BF.xor_parity_metrics(4, ids=[0])  # h = 0: g = parity_4, degree 4, influence 4, entropy 0
    assert m["degree"].tolist() == [4.0] and m["influence"].tolist() == pytest.approx([4.0])
    assert m["entropy"].tolist() == pytest.approx([0.0], abs=1e-12)
    one = BF.random_tables(3, 1, 0)
    assert one.shape == (1, 8) and np.array_equal(one, BF.random_tables(3, 1, 0))
    assert BF.random_tables(2, np.int64(2), 0).shape == (2, 4)


def test_parity_solvable_power_and_input_bound():
    assert BF.parity_solvable(8, 2, 3) and not BF.parity_solvable(9, 2, 3)  # 2**3 = 8 (not 2 * 3)
    with pytest.raises(ValueError, match=rf"^n \(the number of inputs\) must be an int >= 1 and <= {BF.MAX_N}, got 13$"):
        BF.parity_solvable(BF.MAX_N + 1, 2, 1)


def test_input_size_bound_and_single_tables():
    # tables of 13 inputs (2**13 entries) are refused before any work; a single 1-D table is one row
    big = np.zeros(2 ** (BF.MAX_N + 1), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"^tables \(truth table\): truth tables of n = 13 inputs are not supported here \(at most n = 12\)$"):
        BF.fourier_metrics(big)
    with pytest.raises(ValueError, match=r"^tables \(truth table\): truth tables of n = 13 inputs are not supported here \(at most n = 12\)$"):
        BF.train_accuracy(big, 2, 1, 0.1, 1, 1, progress=False)
    m = BF.fourier_metrics([0, 1, 1, 0])                    # XOR: degree 2, influence 2, entropy 0
    assert m["degree"].tolist() == [2.0] and m["influence"].tolist() == pytest.approx([2.0])
    assert m["entropy"].tolist() == pytest.approx([0.0], abs=1e-12)
    assert BF.parity_solvable(4, 2, 2) is True and BF.parity_solvable(5, 2, 2) is False


def test_train_accuracy_shows_progress_by_default(capsys):
    BF.train_accuracy(np.array([[0, 1, 1, 0]]), 2, 1, 0.1, 1, 2)
    assert "n=2 2x1" in capsys.readouterr().err          # the progress bar's label
    BF.train_accuracy(np.array([[0, 1, 1, 0]]), 2, 1, 0.1, 1, 2, progress=False)
    assert capsys.readouterr().err == ""


def test_xor_parity_metrics_by_hand():
    # h = x1 (one coefficient, on {1}): g = x1 XOR parity_n has its one coefficient on {2..n}: degree n - 1,
    # influence n - 1, entropy 0; h = x1 AND x2 has coefficients on {}, {1}, {2}, {1,2}: lowest |S| = 0
    x1 = B.table_to_id(np.repeat([0, 1], 8))
    and12 = B.table_to_id(np.repeat([0, 0, 0, 1], 4))
    m = BF.xor_parity_metrics(6, ids=[x1, and12])
    assert m["degree"].tolist() == [5.0, 6.0]
    assert m["influence"].tolist() == pytest.approx([5.0, 6 - 1.0])    # I(x1 AND x2) = 2 * 1/2
    assert m["entropy"][0] == pytest.approx(0.0, abs=1e-12) and m["entropy"][1] == pytest.approx(2.0)
