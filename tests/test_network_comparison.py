"""lib.network_comparison (chapter 08, network comparisons; Sattelberg Ch. 7): every function checked
against an independent computation (a hand-worked case, a brute force, a second formula, an invariance)."""

import numpy as np
import pytest
from scipy.special import log_softmax, softmax
from scipy.stats import entropy, ortho_group

from lib import network_comparison as NC
from lib.linear_regions import local_affine
from lib.nets import forward_f64


def _mlp(widths, s):
    rng = np.random.default_rng(s)
    return [(rng.normal(size=(b, a)) / np.sqrt(a), rng.normal(size=b)) for a, b in zip(widths[:-1], widths[1:])]


def _blobs(centres, n, spread, s):
    rng = np.random.default_rng(s)
    centres = np.asarray(centres, float)
    lab = np.arange(n) % len(centres)
    return centres[lab] + spread * rng.normal(size=(n, centres.shape[1])), lab


# --- coefficient matrices, outputs, predictions -------------------------------------------------

def test_coefficient_matrices_by_hand():
    J = np.arange(12.0).reshape(2, 3, 2)          # N=2 inputs, o=3 outputs, d=2
    y = np.array([[100.0, 101, 102], [200, 201, 202]])
    C = NC.coefficient_matrices(J, y)
    assert C.shape == (3, 2, 3)
    assert C[1, 0].tolist() == [2.0, 3.0, 101.0]   # output 1, input 0: J[0, 1] then y[0, 1]
    assert C[2, 1].tolist() == [10.0, 11.0, 202.0]
    C[0, 0, 0] = -1                                # a copy, not a view
    assert J[0, 0, 0] == 0


def test_affine_outputs_reproduce_the_network():
    net = _mlp([3, 7, 6, 4], 0)
    X = np.random.default_rng(1).normal(size=(50, 3))
    A, c = local_affine(net, X)
    out = NC.affine_outputs(NC.coefficient_matrices(A, c), X)
    assert out.shape == (50, 4)
    assert np.abs(out - forward_f64(net, X)).max() < 1e-12


def test_affine_outputs_by_hand():
    C = np.array([[[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]]])   # o=1, N=2, d=2
    X = np.array([[1.0, 1.0], [2.0, 4.0]])
    assert NC.affine_outputs(C, X).tolist() == [[6.0], [-3.5]]


def test_predict_and_accuracy():
    out = np.array([[0.1, 0.9, 0.3], [2.0, -1.0, 1.0], [0.0, 0.0, 5.0]])
    assert NC.predict(out).tolist() == [1, 0, 2]
    assert NC.accuracy(out, [1, 0, 0]) == pytest.approx(2 / 3)
    one = np.array([[0.5], [-0.2], [0.0]])         # one output: class 1 iff > 0
    assert NC.predict(one).tolist() == [1, 0, 0]
    assert NC.accuracy(one, np.array([1, 1, 0])) == pytest.approx(2 / 3)
    assert NC.accuracy(one, [0, 1, 1]) == 0.0


# --- k-means compression (§7.2) -----------------------------------------------------------------

def test_k1_centre_is_the_mean_and_compression_is_one_map():
    rng = np.random.default_rng(2)
    C = rng.normal(size=(3, 40, 4))
    cen = NC.kmeans_centres(C, 1)
    for j in range(3):
        assert cen[j].shape == (1, 4) and np.allclose(cen[j][0], C[j].mean(0), atol=1e-12)
    Ct = rng.normal(size=(3, 7, 4))
    comp = NC.compress(C, Ct, 1)
    assert np.allclose(comp, C.mean(1, keepdims=True).repeat(7, 1), atol=1e-12)


def test_few_distinct_rows_are_kept_exactly():
    rows = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [3.0, 3.0, 0.0]])
    C = rows[np.arange(30) % 3][None]
    for k in (3, 5):
        cen = NC.kmeans_centres(C, k)[0]
        assert sorted(map(tuple, cen)) == sorted(map(tuple, rows))
    # test rows that are training rows map to themselves
    Ct = rows[[2, 0, 1, 1]][None]
    assert np.array_equal(NC.compress(C, Ct, 3), Ct)
    # k = 2 < 3 distinct rows: k-means proper, two centres
    assert NC.kmeans_centres(C, 2)[0].shape == (2, 3)


def test_separated_blobs_give_their_means():
    means = [[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [0.0, 10.0, 5.0]]
    Z, lab = _blobs(means, 300, 0.1, 3)
    cen = NC.kmeans_centres(Z[None], 3, seed=1, n_init=3)[0]
    truth = np.array([Z[lab == c].mean(0) for c in range(3)])
    order = [int(np.argmin(((cen - t) ** 2).sum(1))) for t in truth]
    assert sorted(order) == [0, 1, 2]
    assert np.allclose(cen[order], truth, atol=1e-9)


def test_nearest_centre_assignment_brute_force():
    rng = np.random.default_rng(4)
    C = rng.normal(size=(2, 200, 3))
    Ct = 2 * rng.normal(size=(2, 60, 3))
    for standardize in (False, True):
        comp = NC.compress(C, Ct, 6, seed=0, standardize=standardize)
        cen = NC.kmeans_centres(C, 6, seed=0, standardize=standardize)
        for j in range(2):
            s = C[j].std(0) if standardize else np.ones(3)
            for i in range(60):
                dist = [np.linalg.norm((Ct[j, i] - c) / s) for c in cen[j]]
                assert np.array_equal(comp[j, i], cen[j][int(np.argmin(dist))])


def test_standardize_changes_which_column_is_clustered():
    # Column 0: two tight groups at -1 and +1. Column 1: structureless, 10x larger spread.
    rng = np.random.default_rng(5)
    n = 400
    col0 = np.where(np.arange(n) % 2 == 0, -1.0, 1.0) + 0.01 * rng.normal(size=n)
    col1 = 10 * rng.uniform(-1, 1, n)
    C = np.c_[col0, col1][None]
    raw = NC.kmeans_centres(C, 2, n_init=5)[0]
    std = NC.kmeans_centres(C, 2, n_init=5, standardize=True)[0]
    assert abs(raw[0, 1] - raw[1, 1]) > 5 and abs(raw[0, 0] - raw[1, 0]) < 0.5      # split along column 1
    assert abs(std[0, 0] - std[1, 0]) > 1.9 and abs(std[0, 1] - std[1, 1]) < 3      # split along column 0
    # centres come back in the original units: they are (close to) the groups' means
    assert np.allclose(sorted(std[:, 0]), [col0[col0 < 0].mean(), col0[col0 > 0].mean()], atol=1e-9)


def test_standardize_leaves_a_constant_column_alone():
    rng = np.random.default_rng(6)
    C = np.c_[rng.normal(size=50), np.full(50, 3.0)][None]
    cen = NC.kmeans_centres(C, 1, standardize=True)[0]
    assert np.allclose(cen, [[C[0, :, 0].mean(), 3.0]], atol=1e-12)


def test_a_linear_network_keeps_its_map_for_every_k():
    # equal rows up to float rounding (relative 1e-12): one centre, the rows' mean, for every k
    rng = np.random.default_rng(7)
    row = rng.normal(size=5)
    C = (row + 1e-12 * rng.normal(size=(80, 5)))[None]
    for k in (1, 2, 50):
        cen = NC.kmeans_centres(C, k)[0]
        assert cen.shape == (1, 5) and np.allclose(cen[0], C[0].mean(0), atol=1e-15)
    # rows that differ by 1e-3 relative are not flat: k-means splits them
    C2 = (row + 1e-3 * np.abs(row).max() * rng.normal(size=(80, 5)))[None]
    assert NC.kmeans_centres(C2, 2)[0].shape == (2, 5)


def test_flat_threshold_is_relative_spread():
    M = np.ones((10, 3))
    M[0, 0] += 3e-5 * np.sqrt(10)            # centred norm about 2.8e-5 * sqrt(10) vs norm sqrt(30)
    rel = np.linalg.norm(M - M.mean(0)) / np.linalg.norm(M)
    assert NC._flat(M, rel * 1.01) and not NC._flat(M, rel * 0.99)
    assert NC._flat(np.zeros((4, 2)), 0.0)
    assert NC.FLAT_TOL == 1e-5


def test_compression_on_a_relu_net_with_enough_clusters_is_exact():
    # a 2-D ReLU net sampled on a grid has few distinct maps: k >= regions reproduces the net exactly
    net = _mlp([2, 3, 2], 8)
    g = np.linspace(-2, 2, 21)
    X = np.array([[a, b] for a in g for b in g])
    A, c = local_affine(net, X)
    C = NC.coefficient_matrices(A, c)
    n_maps = max(len(np.unique(C[j], axis=0)) for j in range(2))
    out = NC.affine_outputs(NC.compress(C, C, n_maps), X)
    assert np.abs(out - forward_f64(net, X)).max() < 1e-12
    assert np.abs(NC.affine_outputs(NC.compress(C, C, 1), X) - forward_f64(net, X)).max() > 0.1   # one map: not the net


# --- affine maps (7.4) ----------------------------------------------------------------------------

def test_affine_map_recovers_a_planted_map():
    rng = np.random.default_rng(9)
    C1 = rng.normal(size=(3, 50, 4))
    M_true = rng.normal(size=(3, 4, 4))
    M = NC.affine_map(C1, C1 @ M_true)
    assert M.shape == (3, 4, 4) and np.allclose(M, M_true, atol=1e-10)
    assert NC.relative_residual(C1, M, C1 @ M_true) < 1e-12


def test_affine_map_is_least_squares_and_batched():
    rng = np.random.default_rng(10)
    C1, T = rng.normal(size=(2, 30, 3)), rng.normal(size=(4, 2, 30, 3))
    Ms = NC.affine_map(C1, T)
    assert Ms.shape == (4, 2, 3, 3)
    for t in range(4):
        for j in range(2):
            ref = np.linalg.lstsq(C1[j], T[t, j], rcond=None)[0]
            assert np.allclose(Ms[t, j], ref, atol=1e-10)
        assert np.allclose(NC.affine_map(C1, T[t]), Ms[t], atol=1e-12)
        # at most 1 (M = 0 gives 1), and the least-squares residual is that of lstsq
        r = NC.relative_residual(C1, Ms[t], T[t])
        ref_r = np.sqrt(sum(np.linalg.norm(C1[j] @ Ms[t, j] - T[t, j]) ** 2 for j in range(2))) / np.linalg.norm(T[t])
        assert r == pytest.approx(ref_r, rel=1e-12) and 0 < r < 1
        assert NC.relative_residual(C1, np.zeros((2, 3, 3)), T[t]) == pytest.approx(1.0)


def test_affine_map_minimum_norm_and_rcond():
    # a rank-1 source (a linear net): the minimum-norm solution, as lstsq gives it
    rng = np.random.default_rng(11)
    u, row = rng.normal(size=40), rng.normal(size=3)
    C1 = np.outer(np.ones(40), row)[None]
    C2 = rng.normal(size=(1, 40, 3))
    M = NC.affine_map(C1, C2)
    assert np.allclose(M[0], np.linalg.lstsq(C1[0], C2[0], rcond=None)[0], atol=1e-10)
    # tiny noise (1e-13 relative) on a rank-1 matrix is cut by rcond = 1e-10, not by rcond = 1e-15
    noisy = C1 + 1e-13 * rng.normal(size=C1.shape)
    cut = NC.affine_map(noisy, C2)
    kept = NC.affine_map(noisy, C2, rcond=1e-15)
    assert np.linalg.norm(cut) < 10 * np.linalg.norm(M) and np.linalg.norm(kept) > 1e6 * np.linalg.norm(M)
    # a map onto itself reproduces the coefficients exactly even when rank-deficient
    C3 = np.concatenate([np.outer(u, row), np.outer(u, row) * 2], 0)[None]
    assert np.allclose(C3 @ NC.affine_map(C3, C3), C3, atol=1e-10)


def test_mapping_onto_a_linear_net_gives_multiples_of_its_map():
    rng = np.random.default_rng(12)
    C1 = rng.normal(size=(2, 60, 4))
    lin = rng.normal(size=(2, 1, 4)).repeat(60, 1)       # every row the same map per output
    M = NC.affine_map(C1, lin)
    mapped = rng.normal(size=(2, 9, 4)) @ M
    for j in range(2):
        s = np.linalg.svd(mapped[j], compute_uv=False)
        assert s[1] < 1e-10 * s[0]
        cos = mapped[j] @ lin[j, 0] / (np.linalg.norm(mapped[j], axis=1) * np.linalg.norm(lin[j, 0]))
        assert np.allclose(np.abs(cos), 1, atol=1e-10)


# --- MSED (7.5-7.6) ---------------------------------------------------------------------------------

def test_msed_by_hand():
    A = np.array([[[1.0, 2.0], [4.0, 0.0]]])          # max 4
    B = np.array([[[2.0, 2.0], [0.0, 1.0]]])          # max 2
    # A/4 = [[.25,.5],[1,0]], B/2 = [[1,1],[0,.5]] -> squared diffs .5625,.25,1,.25 -> mean 0.515625
    assert NC.msed(A, B) == pytest.approx(0.515625, abs=1e-15)
    assert NC.msed(B, A) == pytest.approx(0.515625, abs=1e-15)


def test_msed_properties():
    rng = np.random.default_rng(13)
    A, B = rng.normal(size=(3, 20, 5)), rng.normal(size=(3, 20, 5))
    assert NC.msed(A, A) == 0.0
    assert NC.msed(A, B) == pytest.approx(NC.msed(B, A), abs=1e-15)
    assert NC.msed(2 * A, B) == pytest.approx(NC.msed(A, B), abs=1e-12)      # positive logit scaling
    assert NC.msed(A, 7.5 * A) == pytest.approx(0.0, abs=1e-25)
    # the normaliser is the signed maximum (eq. 7.5), not the largest |entry|
    neg = np.array([[[-1.0, -4.0], [0.5, -2.0]]])   # max 0.5, max |.| 4
    ref = np.mean((neg / 0.5 - A[:1, :2, :2] / A[:1, :2, :2].max()) ** 2)
    assert NC.msed(neg, A[:1, :2, :2]) == pytest.approx(ref, rel=1e-12)
    with pytest.raises(ValueError, match="C_b has largest entry 0"):
        NC.msed(A, -np.abs(B) * np.array([0.0, 1, 1, 1, 1]))


# --- CKA (7.7) ----------------------------------------------------------------------------------------

def _cka_kernel_form(X, Y):
    # the HSIC form (Kornblith et al. 2019, eq. 2 with linear kernels): an independent computation
    n = X.shape[0]
    H = np.eye(n) - 1.0 / n
    K, L = H @ X @ X.T @ H, H @ Y @ Y.T @ H
    return np.sum(K * L) / (np.linalg.norm(K) * np.linalg.norm(L))


def test_cka_matches_the_kernel_form_and_its_invariances():
    rng = np.random.default_rng(14)
    X, Y = rng.normal(size=(30, 4)), rng.normal(size=(30, 6)) + rng.normal(size=(30, 1))
    v = NC.linear_cka(X, Y)
    assert v == pytest.approx(_cka_kernel_form(X, Y), rel=1e-10)
    assert 0 < v < 1
    assert NC.linear_cka(X, X) == pytest.approx(1.0, abs=1e-12)
    Q = ortho_group.rvs(4, random_state=15)
    assert NC.linear_cka(X @ Q, 3 * Y) == pytest.approx(v, abs=1e-12)
    assert NC.linear_cka(Y, X) == pytest.approx(v, abs=1e-12)
    # column centring: adding a constant row offset changes nothing
    assert NC.linear_cka(X + 5.0, Y - 2.0) == pytest.approx(v, abs=1e-12)


def test_cka_is_nan_for_a_linear_network():
    rng = np.random.default_rng(16)
    Y = rng.normal(size=(20, 3))
    flat = np.tile(rng.normal(size=3), (20, 1)) * (1 + 1e-9 * rng.normal(size=(20, 1)))
    assert np.isnan(NC.linear_cka(flat, Y)) and np.isnan(NC.linear_cka(Y, flat))
    assert np.isnan(NC.linear_cka(np.zeros((20, 3)), Y))
    # tol = 0 computes the (noise-driven) number instead
    assert np.isfinite(NC.linear_cka(flat, Y, tol=0.0))


def test_mean_cka_averages_outputs_and_propagates_nan():
    rng = np.random.default_rng(17)
    A, B = rng.normal(size=(3, 25, 4)), rng.normal(size=(3, 25, 4))
    assert NC.mean_cka(A, B) == pytest.approx(np.mean([_cka_kernel_form(A[j], B[j]) for j in range(3)]), rel=1e-10)
    A[1] = A[1, :1]
    assert np.isnan(NC.mean_cka(A, B))
    assert NC.mean_cka(B, B) == pytest.approx(1.0, abs=1e-12)


# --- cross-entropy (7.8-7.9) --------------------------------------------------------------------------

def test_cross_entropy_against_scipy():
    rng = np.random.default_rng(18)
    P, Q = 3 * rng.normal(size=(40, 10)), 3 * rng.normal(size=(40, 10))
    ref = np.mean([-(softmax(P[i]) * log_softmax(Q[i])).sum() for i in range(40)])
    assert NC.cross_entropy(P, Q) == pytest.approx(ref, rel=1e-12)
    assert NC.cross_entropy(P, P) == pytest.approx(np.mean(entropy(softmax(P, axis=1), axis=1)), rel=1e-12)
    assert NC.cross_entropy(P, Q) > NC.cross_entropy(P, P)                   # Gibbs
    assert abs(NC.cross_entropy(P, Q) - NC.cross_entropy(Q, P)) > 1e-3       # not symmetric


def test_cross_entropy_by_hand_and_stable():
    # p = (1/2, 1/2), q = (e/(1+e), 1/(1+e)): H = log(1 + e) - 1/2
    assert NC.cross_entropy([[0.0, 0.0]], [[1.0, 0.0]]) == pytest.approx(np.log(1 + np.e) - 0.5, rel=1e-14)
    big = np.array([[1000.0, 0.0, -1000.0]])
    assert NC.cross_entropy(big, big) == pytest.approx(0.0, abs=1e-12)
    assert NC.cross_entropy(big, big[:, ::-1]) == pytest.approx(2000.0, rel=1e-12)
    assert NC.cross_entropy(big + 7.0, big) == pytest.approx(0.0, abs=1e-12)   # softmax shift invariance


# --- matrices and blocks -------------------------------------------------------------------------------

def test_similarity_matrix_orientation():
    S = NC.similarity_matrix([1.0, 2.0, 5.0], lambda a, b: 10 * a + b)
    assert S.tolist() == [[11, 12, 15], [21, 22, 25], [51, 52, 55]]


def test_block_means_by_hand():
    S = np.array([[9.0, 1.0, 2.0, 3.0],
                  [4.0, 9.0, 5.0, np.nan],
                  [6.0, 7.0, 9.0, 8.0],
                  [0.5, 1.5, 2.5, 9.0]])
    fam = ["a", "a", "b", "b"]
    within, across = NC.block_means(S, fam, skip_nan=True)
    assert within == pytest.approx((1 + 4 + 8 + 2.5) / 4)
    assert across == pytest.approx((2 + 3 + 5 + 6 + 7 + 0.5 + 1.5) / 7)
    w1, a1 = NC.block_means(np.ones((3, 3)) * np.nan, ["x", "y", "z"], skip_nan=True)
    assert np.isnan(w1) and np.isnan(a1)
    w2, a2 = NC.block_means(S, np.array([1, 1, 2, 2]), True)
    assert (w2, a2) == (within, across)
    S[1, 3] = 4.0
    assert NC.block_means(S, fam) == pytest.approx(((1 + 4 + 8 + 2.5) / 4, (2 + 3 + 5 + 6 + 7 + 0.5 + 1.5 + 4) / 8))
    with pytest.raises(ValueError, match=r"S must be finite \(NaN only with skip_nan=True\)"):
        NC.block_means(np.where(np.eye(4) > 0, np.nan, S), fam)
    with pytest.raises(ValueError, match="S must be finite apart from NaN"):
        NC.block_means(np.where(np.eye(4) > 0, np.inf, S), fam, skip_nan=True)


# --- bad input -----------------------------------------------------------------------------------------

def test_bad_input_names_the_argument():
    C = np.ones((2, 5, 3))
    with pytest.raises(ValueError, match=r"y must have shape \(N, o\)"):
        NC.coefficient_matrices(np.ones((5, 2, 2)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="C must have d\\+1 >= 2 columns"):
        NC.affine_outputs(np.ones((2, 5, 1)), np.ones((5, 0)))
    with pytest.raises(ValueError, match=r"X must have shape \(N, d\) = \(5, 2\)"):
        NC.affine_outputs(C, np.ones((5, 3)))
    with pytest.raises(ValueError, match=r"X must have shape \(N, d\) = \(5, 2\)"):
        NC.affine_outputs(C, np.ones((4, 2)))
    with pytest.raises(ValueError, match="labels"):
        NC.accuracy(np.ones((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="labels"):
        NC.accuracy(np.ones((2, 2)), [0, 2])
    with pytest.raises(ValueError, match="k must"):
        NC.kmeans_centres(C, 0)
    with pytest.raises(ValueError, match=r"C_train and C_test must agree in axes \[0, 2\]"):
        NC.compress(C, np.ones((2, 5, 4)), 1)
    with pytest.raises(ValueError, match=r"C_train and C_test must agree"):
        NC.compress(C, np.ones((3, 5, 3)), 1)
    NC.compress(C, np.ones((2, 7, 3)), 1)                 # test rows may differ in number
    with pytest.raises(ValueError, match=r"C_source and C_target must agree in axes \[0, 1, 2\]"):
        NC.affine_map(C, np.ones((2, 4, 3)))
    with pytest.raises(ValueError, match=r"C_source and C_target must agree"):
        NC.affine_map(C, np.ones((6, 2, 4, 3)))
    with pytest.raises(ValueError, match="rcond"):
        NC.affine_map(C, C, rcond=2.0)
    with pytest.raises(ValueError, match="M must"):
        NC.relative_residual(C, np.ones((2, 3, 2)), C)
    with pytest.raises(ValueError, match="C_target must not be all zeros"):
        NC.relative_residual(C, np.ones((2, 3, 3)), 0 * C)
    with pytest.raises(ValueError, match="C_source and C_target must agree"):
        NC.relative_residual(C, np.ones((2, 3, 3)), np.ones((2, 4, 3)))
    with pytest.raises(ValueError, match="C_a and C_b must agree"):
        NC.msed(C, np.ones((2, 4, 3)))
    with pytest.raises(ValueError, match="C_a has largest entry 0"):
        NC.msed(0 * C, C)
    with pytest.raises(ValueError, match="X and Y must have the same number of rows"):
        NC.linear_cka(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="tol"):
        NC.linear_cka(np.ones((3, 2)), np.ones((3, 2)), tol=-1.0)
    with pytest.raises(ValueError, match=r"C_a and C_b must agree in axes \[0, 1\]"):
        NC.mean_cka(C, np.ones((2, 4, 3)))
    assert np.isfinite(NC.mean_cka(np.random.default_rng(0).normal(size=(2, 5, 3)),
                                   np.random.default_rng(1).normal(size=(2, 5, 7))))
    with pytest.raises(ValueError, match="logits_p and logits_q must have the same shape"):
        NC.cross_entropy(np.ones((3, 2)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="metric"):
        NC.similarity_matrix([1], None)
    with pytest.raises(ValueError, match="items"):
        NC.similarity_matrix([], lambda a, b: 0.0)
    with pytest.raises(ValueError, match="S must be a square matrix"):
        NC.block_means(np.ones((2, 3)), ["a", "b"])
    with pytest.raises(ValueError, match=r"families must give one label per row of S \(2\)"):
        NC.block_means(np.ones((2, 2)), ["a"])


def test_kmeans_keeps_distinct_rows_bit_for_bit():
    # k equal to the number of distinct rows: the rows themselves, not k-means means of copies of them
    # (a mean of ten copies of 0.1 is 0.09999999999999999)
    rows = np.array([[0.1, 0.7, -0.3], [0.3, 0.1, 0.9], [-0.7, 0.2, 0.1]])
    C = rows[np.arange(30) % 3][None]
    cen = NC.kmeans_centres(C, 3)[0]
    assert sorted(map(tuple, cen)) == sorted(map(tuple, rows))


def test_shape_checks_see_every_axis():
    C = np.ones((2, 5, 3))
    for other in (np.ones((3, 5, 3)), np.ones((2, 5, 4)), np.ones((2, 4, 3))):
        with pytest.raises(ValueError, match=r"C_a and C_b must agree in axes \[0, 1, 2\]"):
            NC.msed(C, other)
        with pytest.raises(ValueError, match=r"C_source and C_target must agree in axes \[0, 1, 2\]"):
            NC.relative_residual(C, np.ones((2, 3, 3)), other)
    with pytest.raises(ValueError, match=r"C_a and C_b must agree in axes \[0, 1\]"):
        NC.mean_cka(C, np.ones((3, 5, 3)))
    with pytest.raises(ValueError, match=r"C_train and C_test must agree in axes \[0, 2\]"):
        NC.compress(C, np.ones((3, 5, 3)), 1)
    with pytest.raises(ValueError, match=r"C_source and C_target must agree in axes \[0, 1, 2\]"):
        NC.affine_map(C, np.ones((3, 5, 3)))
    with pytest.raises(ValueError, match=r"got shapes \(2, 5, 3\) and \(3, 5, 3\)"):
        NC.msed(C, np.ones((3, 5, 3)))


# --- argument names and dimensions in the messages (each argument's own check, anchored) ---------------

_C = np.ones((2, 5, 3))
_BAD_ARGS = [  # (call, the argument that is wrong, what its message must say)
    (lambda: NC.coefficient_matrices(np.ones((5, 2)), np.ones((5, 2))), "J", "an array with 3 dimensions"),
    (lambda: NC.coefficient_matrices(np.ones((5, 2, 2)), np.ones(5)), "y", "an array with 2 dimensions"),
    (lambda: NC.affine_outputs(np.ones(3), np.ones((5, 2))), "C", "an array with 3 dimensions"),
    (lambda: NC.affine_outputs(_C, np.ones(10)), "X", "an array with 2 dimensions"),
    (lambda: NC.predict(np.ones(3)), "outputs", "an array with 2 dimensions"),
    (lambda: NC.accuracy(np.ones(3), [0, 1, 1]), "outputs", "an array with 2 dimensions"),
    (lambda: NC.accuracy(np.ones((3, 2)), [0, 5, 1]), "labels", "class indices >= 0 and < 2"),
    (lambda: NC.accuracy(np.ones((3, 2)), np.ones((1, 3))), "labels", "an array with 1 dimensions"),
    (lambda: NC.kmeans_centres(np.ones(3), 1), "C", "an array with 3 dimensions"),
    (lambda: NC.kmeans_centres(_C, 1, n_init=0), "n_init", "an int >= 1"),
    (lambda: NC.kmeans_centres(_C, 1, standardize="x"), "standardize", "a bool"),
    (lambda: NC.compress(np.ones(3), _C, 1), "C_train", "an array with 3 dimensions"),
    (lambda: NC.compress(_C, np.ones(3), 1), "C_test", "an array with 3 dimensions"),
    (lambda: NC.affine_map(np.ones(3), _C), "C_source", "an array with 3 dimensions"),
    (lambda: NC.affine_map(_C, np.ones((5, 3))), "C_target", "an array with 3 or 4 dimensions"),
    (lambda: NC.affine_map(_C, _C, rcond=0.0), "rcond", "a finite number > 0"),
    (lambda: NC.relative_residual(np.ones(3), np.ones((2, 3, 3)), _C), "C_source", "an array with 3 dimensions"),
    (lambda: NC.relative_residual(_C, np.ones((2, 3, 3)), np.ones(3)), "C_target", "an array with 3 dimensions"),
    (lambda: NC.msed(np.ones(3), _C), "C_a", "an array with 3 dimensions"),
    (lambda: NC.msed(_C, np.ones(3)), "C_b", "an array with 3 dimensions"),
    (lambda: NC.linear_cka(np.ones(3), np.ones((3, 2))), "X", "an array with 2 dimensions"),
    (lambda: NC.linear_cka(np.ones((3, 2)), np.ones(3)), "Y", "an array with 2 dimensions"),
    (lambda: NC.linear_cka(np.ones((3, 2)), np.ones((3, 2)), tol=-1.0), "tol", ">= 0"),
    (lambda: NC.mean_cka(np.ones(3), _C), "C_a", "an array with 3 dimensions"),
    (lambda: NC.mean_cka(_C, np.ones(3)), "C_b", "an array with 3 dimensions"),
    (lambda: NC.cross_entropy(np.ones(3), np.ones((3, 2))), "logits_p", "an array with 2 dimensions"),
    (lambda: NC.cross_entropy(np.ones((3, 2)), np.ones(3)), "logits_q", "an array with 2 dimensions"),
    (lambda: NC.similarity_matrix([], lambda a, b: 0.0), "items", "a sequence of at least 1"),
    (lambda: NC.similarity_matrix([1.0], 3), "metric", "callable"),
    (lambda: NC.block_means(np.ones(3), ["a"]), "S", "an array with 2 dimensions"),
    (lambda: NC.block_means(np.eye(2), ["a", "b"], skip_nan="x"), "skip_nan", "a bool"),
    (lambda: NC.block_means(np.eye(2), 3), "families", "a list or tuple"),
]


@pytest.mark.parametrize("call, arg, what", _BAD_ARGS, ids=[f"{i}-{a}" for i, (_, a, _) in enumerate(_BAD_ARGS)])
def test_each_argument_is_named_in_its_error(call, arg, what):
    with pytest.raises(ValueError) as err:
        call()
    msg = str(err.value)
    assert msg.startswith(f"{arg} must be") and what in msg, msg


def test_messages_in_full():
    with pytest.raises(ValueError, match=r"C_a has largest entry 0: the normaliser a = max C of eq\. 7\.5 is 0, so MSED is undefined$"):
        NC.msed(-np.ones((1, 2, 2)) + np.eye(2)[None], np.ones((1, 2, 2)))
    with pytest.raises(ValueError, match=r"^C_target must not be all zeros \(the residual is relative to its norm\)$"):
        NC.relative_residual(_C, np.ones((2, 3, 3)), 0 * _C)
    with pytest.raises(ValueError, match=r"^y must have shape \(N, o\) = \(5, 2\) to match J, got \(5, 3\)$"):
        NC.coefficient_matrices(np.ones((5, 2, 4)), np.ones((5, 3)))
    with pytest.raises(ValueError, match=r"got array of shape \(2, 2\) and dtype float64$"):
        NC.block_means(np.array([[1.0, np.inf], [1.0, 1.0]]), ["a", "b"])


# --- behaviour details that the value tests above do not reach -----------------------------------------

def test_standardize_uses_the_spread_of_every_column():
    # both columns spread less than 1: standardising still rescales them (column 1 dominates raw distances)
    rng = np.random.default_rng(21)
    n = 400
    col0 = 0.1 * np.where(np.arange(n) % 2 == 0, -1.0, 1.0) + 0.001 * rng.normal(size=n)
    col1 = 0.9 * rng.uniform(-1, 1, n)
    C = np.c_[col0, col1][None]
    raw = NC.kmeans_centres(C, 2, n_init=5)[0]
    std = NC.kmeans_centres(C, 2, n_init=5, standardize=True)[0]
    assert abs(raw[0, 1] - raw[1, 1]) > 0.5 and abs(std[0, 0] - std[1, 0]) > 0.19


def test_more_outputs_than_rows():
    C = np.random.default_rng(22).normal(size=(4, 2, 3))        # 4 outputs, 2 sampled inputs
    assert [c.shape for c in NC.kmeans_centres(C, 1)] == [(1, 3)] * 4
    assert NC.compress(C, C, 2).shape == (4, 2, 3)


def test_log_softmax_is_stable_per_row():
    # rows of very different size: a shift by the global maximum would underflow the second row
    P = np.array([[1000.0, 0.0], [0.0, 1.0]])
    ref = -np.mean([(softmax(r) * log_softmax(r)).sum() for r in P])
    assert NC.cross_entropy(P, P) == pytest.approx(ref, rel=1e-12)


def test_predict_returns_integer_classes():
    assert NC.predict(np.array([[0.5], [-1.0]])).dtype == np.int64
    assert NC.predict(np.array([[0.5, 1.0], [-1.0, 2.0]])).dtype.kind == "i"


def test_one_target_with_a_leading_axis():
    rng = np.random.default_rng(23)
    C1, C2 = rng.normal(size=(2, 20, 3)), rng.normal(size=(2, 20, 3))
    assert np.allclose(NC.affine_map(C1, C2[None])[0], NC.affine_map(C1, C2), atol=1e-12)


def test_block_means_without_finite_entries_warns_nothing():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w, a = NC.block_means(np.full((2, 2), np.nan), ["a", "a"], skip_nan=True)
    assert np.isnan(w) and np.isnan(a)


def _cost(C, cen):
    return sum(((C[j][:, None, :] - cen[j][None]) ** 2).sum(-1).min(1).sum() for j in range(len(cen)))


def test_kmeans_defaults_and_restarts():
    C = np.random.default_rng(26).normal(size=(2, 300, 4))
    Ct = np.random.default_rng(25).normal(size=(2, 40, 4))
    default = NC.kmeans_centres(C, 8)
    explicit = NC.kmeans_centres(C, 8, seed=0, n_init=1)
    assert all(np.array_equal(a, b) for a, b in zip(default, explicit))
    assert not all(np.array_equal(a, b) for a, b in zip(default, NC.kmeans_centres(C, 8, seed=1)))
    assert not all(np.array_equal(a, b) for a, b in zip(default, NC.kmeans_centres(C, 8, n_init=2)))
    assert np.array_equal(NC.compress(C, Ct, 8), NC.compress(C, Ct, 8, seed=0, n_init=1))
    assert not np.array_equal(NC.compress(C, Ct, 8), NC.compress(C, Ct, 8, seed=1))
    assert not np.array_equal(NC.compress(C, Ct, 8), NC.compress(C, Ct, 8, n_init=2))
    # more restarts never do worse (the best of n_init runs) and here do better
    assert _cost(C, NC.kmeans_centres(C, 8, n_init=6)) < _cost(C, NC.kmeans_centres(C, 8, n_init=1)) - 1e-9


# ------------------------------------------------------------------------- the thesis' heat maps
def _row(source, cells):
    return source + "\t" + "\t".join(cells)


def test_read_heatmap_classifies_every_kind_of_cell():
    own = {n: NC.TABLE_7_1[n.rsplit(" ", 1)[0]][2 + n.endswith("Adamw")] for n in NC.THESIS_NETS}
    T = [own[n] for n in NC.THESIS_NETS]
    lin, d1 = T[0], T[1]
    rows = [
        # linear SGD: exact change, then a lost sign, an inconsistent cell, its own diagonal
        _row("linear SGD", [f"{lin:.2f}%", f"{d1 - 2.5:.2f}% 2.5%", f"{T[2] - 1.0:.2f}% -3.0%"]),
        _row("dense 1 SGD", [f"{lin:.2f}% 0.0%", f"{d1:.2f}%", f"{T[2] - 1.0:.2f}% -1.0%", f"{T[3]:.2f}%"]),
        _row("dense 2 SGD", [f"{lin:.2f}% 0.0%", f"{d1 - 7.0:.2f}% -7.0%", f"{T[2] - 1.0:.2f}% -1.0%"]),
    ]
    h = NC.read_heatmap("\n".join(rows))
    st = h["status"]
    assert st[0, 0] == "diagonal" and st[0, 1] == "sign lost" and st[0, 2] == "inconsistent"
    assert st[1, 0] == "consistent" and st[1, 1] == "diagonal" and st[1, 3] == "misplaced"
    assert st[2, 1] == "consistent"
    assert st[1, 2] == "repeated" and st[2, 2] == "repeated"      # the same text twice in one column
    assert st[1, 0] == st[2, 0] == "consistent"                    # ...but the target's own accuracy is no copy
    assert h["change"][0, 1] == pytest.approx(-2.5) and h["change"][0, 2] == pytest.approx(-3.0)
    assert h["value"][0, 1] == pytest.approx(d1 - 2.5) and np.isnan(h["value"][0, 5]) and st[0, 5] == ""
    assert h["usable"][0, 1] and h["usable"][1, 0] and not h["usable"][0, 2] and not h["usable"][1, 2]
    assert not h["usable"][0, 0] and not h["usable"][1, 3]
    np.testing.assert_allclose(h["own"], T)
    # MNIST reads Table 7.1's MNIST columns
    m = NC.read_heatmap(_row("dense 1 Adamw", ["88.89% 2.06%"]), dataset="MNIST")
    assert m["own"][0] == 88.89 and m["own"][11] == 97.43 and m["status"][11, 0] == "inconsistent"
    assert NC.read_heatmap(_row("linear SGD", ["86.83% -2.06%"]), dataset="MNIST")["status"][0, 0] == "consistent"


def test_read_heatmap_of_the_thesis_figure_7_9():
    h = NC.read_heatmap()
    st = h["status"]
    assert (st != "").all()                                         # 20 full rows of 20 cells
    # its diagonal: 13 bare accuracies where they belong; the complex 2 Adamw row is a copy of another
    assert (np.diagonal(st) == "diagonal").sum() == 13
    i = NC.THESIS_NETS.index
    assert st[i("simple 2 Adamw"), i("complex 2 Adamw")] == "misplaced"
    assert (st[i("simple 2 Adamw"), 3:10] == "repeated").all()
    # the linear-SGD column reads consistently: 0.0 from dense and linear sources, losses from the others
    col = h["change"][:, 0]
    assert h["usable"][:, 0].all()                                  # (its own cell reads "25.43% 0.0%")
    assert all(col[i(f"{n} {o}")] == 0.0 for n in ("linear", "dense 1", "dense 2") for o in ("SGD", "Adamw"))
    assert col[i("complex 1 Adamw")] == pytest.approx(-3.03, abs=0.01)
    assert col[i("resnet152 Adamw")] == pytest.approx(12.12 - 25.43)


def test_read_heatmap_bad_input():
    with pytest.raises(ValueError, match="^text must be the extracted text of a heat map"):
        NC.read_heatmap(3)
    with pytest.raises(ValueError, match="^each line must start with a network of THESIS_NETS"):
        NC.read_heatmap("lenet SGD\t1.0%")
    with pytest.raises(ValueError, match="has 21 cells, more than the 20 targets"):
        NC.read_heatmap(_row("linear SGD", ["1.0%"] * 21))
    with pytest.raises(ValueError, match="^a heat-map cell must hold 'acc%' or 'acc% change%', got 'n/a'"):
        NC.read_heatmap(_row("linear SGD", ["n/a"]))
    with pytest.raises(ValueError, match="dataset"):
        NC.read_heatmap(dataset="ImageNet")
    with pytest.raises(ValueError, match="tol"):
        NC.read_heatmap(tol=-1.0)


# ------------------------------------------------------------- mapped coefficients (chapter 08's paper path)
def test_mapped_coefficients_equal_the_formed_maps():
    rng = np.random.default_rng(11)
    A, T = rng.normal(size=(3, 20, 6)), rng.normal(size=(3, 7, 6))
    Bs = [rng.normal(size=(3, 20, 6)) for _ in range(2)]
    one = NC.mapped_coefficients(A, T, Bs[0])
    assert one.shape == (3, 7, 6)
    assert np.abs(one - T @ NC.affine_map(A, Bs[0])).max() < 1e-12
    many = NC.mapped_coefficients(A, T, Bs)
    assert isinstance(many, list) and len(many) == 2
    assert all(np.abs(m - T @ NC.affine_map(A, B)).max() < 1e-12 for m, B in zip(many, Bs))
    # fewer rows than columns: the minimum-norm map, as affine_map's (a rank-deficient source)
    A2, T2, B2 = rng.normal(size=(2, 4, 9)), rng.normal(size=(2, 3, 9)), rng.normal(size=(2, 4, 9))
    assert np.abs(NC.mapped_coefficients(A2, T2, B2) - T2 @ NC.affine_map(A2, B2)).max() < 1e-10
    # a net mapped onto itself keeps the test rows that lie in the span of its training rows
    T3 = rng.normal(size=(3, 5, 20)) @ A
    assert np.abs(NC.mapped_coefficients(A, T3, A) - T3).max() < 1e-9


@pytest.mark.parametrize("call, match", [
    (lambda: NC.mapped_coefficients(np.zeros((2, 5, 4)), np.zeros((2, 3, 4)), []), r"^C_target_train must not be an empty list"),
    (lambda: NC.mapped_coefficients(np.zeros((2, 5, 4)), np.zeros((2, 3, 4)), np.zeros((2, 6, 4))), r"^C_source_train and C_target_train must agree"),
    (lambda: NC.mapped_coefficients(np.zeros((2, 5, 4)), np.zeros((2, 3, 4)), [np.zeros((2, 5, 4)), np.zeros((2, 5, 3))]),
     r"^C_source_train and C_target_train\[1\] must agree"),
    (lambda: NC.mapped_coefficients(np.zeros((2, 5, 4)), np.zeros((2, 3, 5)), np.zeros((2, 5, 4))), r"^C_source_train and C_source_test must agree"),
    (lambda: NC.mapped_coefficients(np.zeros((2, 5, 4)), np.zeros((3, 4)), np.zeros((2, 5, 4))), r"^C_source_test must"),
    (lambda: NC.mapped_coefficients(np.zeros((2, 5, 4)), np.zeros((2, 3, 4)), np.zeros((2, 5, 4)), rcond=0), r"^rcond must"),
])
def test_mapped_coefficients_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cka_matrix_equals_mean_cka_pair_by_pair():
    rng = np.random.default_rng(12)
    Cs = [rng.normal(size=(3, 15, 7)) for _ in range(3)]
    Cs.append(Cs[0] @ ortho_group.rvs(7, random_state=1) * 2.5)                 # CKA 1 with Cs[0]
    Cs.append(np.broadcast_to(rng.normal(size=(3, 1, 7)), (3, 15, 7)).copy())   # a linear net: equal rows, NaN
    S = NC.cka_matrix(Cs)
    ref = NC.similarity_matrix(Cs, NC.mean_cka)
    assert S.shape == (5, 5)
    assert (np.isnan(S) == np.isnan(ref)).all() and np.isnan(S[4]).all() and np.isnan(S[:, 4]).all()
    assert np.nanmax(np.abs(S - ref)) < 1e-12 and abs(S[0, 3] - 1) < 1e-12


@pytest.mark.parametrize("call, match", [
    (lambda: NC.cka_matrix([]), r"^Cs must"),
    (lambda: NC.cka_matrix([np.zeros((2, 5))]), r"^Cs\[0\] must"),
    (lambda: NC.cka_matrix([np.ones((2, 5, 3)), np.ones((2, 4, 3))]), r"^Cs\[0\] and Cs\[1\] must agree"),
    (lambda: NC.cka_matrix([np.ones((2, 5, 3))], tol=-1), r"^tol must"),
])
def test_cka_matrix_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- review s6-08, finding 12: the digits path's identities that test the Jacobians, at the paper's shapes

def _paper_coefficients(arch, seed, X):
    import torch  # noqa: F401  (lib.image_nets needs it)

    from lib import image_nets as I

    net = I.make_net(arch, seed, I.PAPER_SHAPE)
    return net, NC.coefficient_matrices(*I.local_coefficients(net, X))


def test_paper_linear_net_k1_centres_are_its_weights_and_bias():
    from torch import nn

    X = np.random.default_rng(5).normal(size=(20, 3072))
    net, C = _paper_coefficients("linear", 9, X)
    lin = [m for m in net.modules() if isinstance(m, nn.Linear)]
    assert len(lin) == 1
    Wb = np.concatenate([lin[0].weight.detach().double().numpy(), lin[0].bias.detach().double().numpy()[:, None]], 1)
    assert C.shape == (10, 20, 3073)
    centres = NC.compress(C[:, :12], C[:, 12:], k=1)
    assert np.abs(centres - Wb[:, None, :]).max() <= 1e-9 * np.abs(Wb).max()


def test_paper_cka_is_nan_exactly_where_a_linear_net_is_involved():
    X = np.random.default_rng(6).normal(size=(12, 3072))
    Cs = [_paper_coefficients(a, s, X)[1] for a, s in [("linear", 1), ("dense", 2), ("linear", 3), ("simple", 4)]]
    S = NC.cka_matrix(Cs)
    lin = np.array([True, False, True, False])
    assert (np.isnan(S) == (lin[:, None] | lin[None, :])).all()
    assert np.abs(np.diag(S)[~lin] - 1).max() < 1e-12


def test_mapped_coefficients_takes_a_tuple_of_targets():
    rng = np.random.default_rng(13)
    A, T = rng.normal(size=(2, 9, 5)), rng.normal(size=(2, 4, 5))
    Bs = (rng.normal(size=(2, 9, 5)), rng.normal(size=(2, 9, 5)))
    out = NC.mapped_coefficients(A, T, Bs)
    assert isinstance(out, list) and all(np.abs(o - NC.mapped_coefficients(A, T, B)).max() < 1e-12 for o, B in zip(out, Bs))
