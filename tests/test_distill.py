"""Unit tests of lib.distill (Chapter 4: linear knowledge distillation)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from lib import distill as D


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    with threadpool_limits(1):
        yield


def iso(n, d, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal(d) / np.sqrt(d)


# ----------------------------------------------------------------------------- projection, labels, loss
def test_span_projection_is_orthogonal_projection():
    X, w = iso(4, 9)
    p = D.span_projection(X, w)
    np.testing.assert_allclose(p, X.T @ np.linalg.solve(X @ X.T, X @ w), atol=1e-12)
    np.testing.assert_allclose(X @ (w - p), 0, atol=1e-12)           # residual orthogonal to the rows
    np.testing.assert_allclose(D.span_projection(X, p), p, atol=1e-12)  # idempotent


def test_span_projection_full_rank_batched_stacked_and_rank_deficient():
    X, w = iso(12, 5)
    assert np.array_equal(D.span_projection(X, w), w)                 # n >= d: the teacher itself
    Xb, _ = iso(3 * 4 * 9, 1)
    Xb = Xb.reshape(3, 4, 9)
    W = np.random.default_rng(1).standard_normal((3, 9))
    batched = D.span_projection(Xb, W)
    for t in range(3):
        np.testing.assert_allclose(batched[t], D.span_projection(Xb[t], W[t]), atol=1e-14)
    np.testing.assert_allclose(D.span_projection(Xb[0], W), np.stack([D.span_projection(Xb[0], v) for v in W]),
                               atol=1e-14)
    Xr = np.vstack([Xb[0], Xb[0][:1] * 2.0])                           # a repeated direction: rank 4
    np.testing.assert_allclose(D.span_projection(Xr, W[0]), D.span_projection(Xb[0], W[0]), atol=1e-12)


@pytest.mark.parametrize("bad, err", [
    (np.zeros((0, 3)), "empty"), (np.full((2, 3), np.nan), "NaN"), (np.ones(3), "dimensions"),
    (np.array([["a", "b"]]), "numeric"), (np.ones((2, 4)), "d=4"),
])
def test_span_projection_bad_input(bad, err):
    with pytest.raises(ValueError, match=err):
        D.span_projection(bad, np.ones(3))


def test_labels_and_loss():
    X, w = iso(6, 4)
    y = D.soft_labels(X, w)
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-X @ w)))
    np.testing.assert_allclose(D.soft_labels(X, w, temperature=2.0), 1 / (1 + np.exp(-X @ w / 2)))
    assert set(np.unique(D.hard_labels(X, w))) <= {0.0, 1.0}
    assert abs(D.ce_loss(w, X, y)) < 1e-14                              # min of l^1 is 0, at the teacher
    assert D.ce_loss(np.zeros(4), X, y) > 0
    eps = 1e-6                                                          # gradient (D.4) vs finite differences
    w1 = np.random.default_rng(2).standard_normal(4)
    fd = [(D.ce_loss(w1 + eps * e, X, y) - D.ce_loss(w1 - eps * e, X, y)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(D.ce_grad(w1, X, y), fd, atol=1e-8)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        D.ce_loss(w, X, y + 1)
    with pytest.raises(ValueError, match="shape"):
        D.ce_grad(w, X, y[:-1])
    with pytest.raises(ValueError, match="temperature"):
        D.soft_labels(X, w, temperature=0)


# ----------------------------------------------------------------------------- Theorem 5.1
def test_train_linear_student_thm51_n_lt_d_and_n_ge_d():
    X, w = iso(10, 60)
    w_gd = D.train_linear_student(X, w, 400, D.default_lr(X))
    w_hat = D.span_projection(X, w)
    assert np.linalg.norm(w_gd - w_hat) < 1e-10 * np.linalg.norm(w_hat)
    X2, w2 = iso(40, 10, seed=1)
    w_gd2 = D.train_linear_student(X2, w2, 1500, D.default_lr(X2))
    assert np.linalg.norm(w_gd2 - w2) < 1e-10 * np.linalg.norm(w2)


def test_random_start_keeps_out_of_span_part():
    X, w = iso(10, 60)
    w_gd, h = D.train_linear_student(X, w, 400, D.default_lr(X), init_scale=1.0, seed=3, return_history=True)
    assert np.isclose(np.linalg.norm(h["w0"]), 1.0)
    pred = D.span_projection(X, w) + h["w0"] - D.span_projection(X, h["w0"])
    assert np.linalg.norm(w_gd - pred) < 1e-10 * np.linalg.norm(pred)
    assert h["path"].shape == (401, 60)


def test_gd_linear_batched_matches_single():
    X, w = iso(2 * 5 * 8, 1)
    X = X.reshape(2, 5, 8)
    W = np.random.default_rng(4).standard_normal((2, 8))
    y = D.soft_labels(X, W)
    lr = D.default_lr(X)
    wb = D.gd_linear(X, y, 50, lr)
    for t in range(2):
        np.testing.assert_allclose(wb[t], D.gd_linear(X[t], y[t], 50, lr[t]), atol=1e-14)


def test_newton_in_span_reaches_the_projection():
    X, w = iso(8, 30)
    np.testing.assert_allclose(D.newton_in_span(X, D.soft_labels(X, w)), D.span_projection(X, w), atol=1e-12)


@pytest.mark.parametrize("kwargs, err", [
    (dict(steps=0), "steps"), (dict(lr=-1.0), "lr"), (dict(depth=0), "depth"),
    (dict(init_scale=-1.0), "init_scale"), (dict(depth=2), "init_scale > 0"),
])
def test_train_linear_student_bad_input(kwargs, err):
    X, w = iso(5, 8)
    args = dict(steps=10, lr=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=err):
        D.train_linear_student(X, w, **args)


def test_train_linear_student_rejects_batches_and_divergence():
    X, w = iso(5, 8)
    with pytest.raises(ValueError, match="one transfer set"):
        D.train_linear_student(np.stack([X, X]), np.stack([w, w]), 10, 0.1)
    with pytest.raises(FloatingPointError, match="diverged"):
        D.train_linear_student(X, w * 50, 300, 1e3, depth=3, init_scale=0.5)


# ----------------------------------------------------------------------------- Theorem 5.2
def test_balanced_init_product_and_defect():
    w0 = np.random.default_rng(5).standard_normal(7)
    for depth in (1, 2, 3, 4):
        factors = D.balanced_rank1_init(w0, depth, width=4)
        np.testing.assert_allclose(D.end_to_end(factors), w0, atol=1e-14)
        assert D.balancedness_defect(factors) < 1e-14
    with pytest.raises(ValueError, match="nonzero"):
        D.balanced_rank1_init(np.zeros(3), 2, 4)


def test_deep_student_conservation_law_and_bound():
    X, w = iso(6, 30, seed=6)
    w *= 2 / np.linalg.norm(w)
    w_hat = D.span_projection(X, w)
    nh = np.linalg.norm(w_hat)
    r0 = 1e-2
    lr = D.default_lr(X, depth=2, target_norm=nh, factor=0.5)
    w_deep, h = D.train_linear_student(X, w, 3000, lr, depth=2, init_scale=r0, seed=1, return_history=True)
    assert np.linalg.norm(D.span_projection(X, w_deep) - w_hat) < 1e-6
    orth = lambda v: np.sum((v - D.span_projection(X, v)) ** 2)
    q_pred = D.predicted_orthogonal_residual(orth(h["w0"]), r0, nh, 2)
    assert abs(orth(w_deep) / q_pred - 1) < 0.02
    assert np.sum((w_deep - w_hat) ** 2) <= D.d40_bound(r0, nh, 2)
    assert D.ce_loss(h["w0"], X, D.soft_labels(X, w)) < D.ce_loss(np.zeros(30), X, D.soft_labels(X, w))  # (5.12)


def test_theory_formulas():
    # D.32 fixed point: q = q0 ((W^2 + q) / r0^2)^((L-1)/L)
    q = D.predicted_orthogonal_residual(1e-4, 0.02, 1.5, 3)
    assert np.isclose(q, 1e-4 * ((1.5 ** 2 + q) / 0.02 ** 2) ** (2 / 3), rtol=1e-12)
    assert D.predicted_orthogonal_residual(1e-4, 0.02, 1.5, 1) == 1e-4
    # requiring (D.40) < eps^2 is exactly (5.11)
    for L in (2, 3):
        r = D.init_norm_threshold(0.3, 1.2, L)
        assert np.isclose(D.d40_bound(r, 1.2, L), 0.3 ** 2, rtol=1e-10)
    with pytest.raises(ValueError, match="r0"):
        D.d40_bound(2.0, 1.0, 2)
    with pytest.raises(ValueError, match="q0"):
        D.predicted_orthogonal_residual(1.0, 0.1, 1.0, 2)
    with pytest.raises(ValueError, match="depth"):
        D.init_norm_threshold(0.1, 1.0, 0)


# ----------------------------------------------------------------------------- tasks, risk, bounds
def test_sampler_angles_follow_reverse_cdf():
    rng = np.random.default_rng(7)
    w = rng.standard_normal(12)
    X = D.sample_angle_task(20000, 12, D.poly_angle_quantile(2.0), rng, w)
    ang = D.unsigned_angle(w, X)
    for t in (0.2, 0.6, 1.0):
        assert abs(np.mean(ang >= t) - D.reverse_cdf(t, kappa=2.0)) < 0.015
    Xm = D.sample_angle_task(5000, 12, D.margin_angle_quantile(np.pi / 3), rng, w, size=2)
    assert Xm.shape == (2, 5000, 12) and D.unsigned_angle(w, Xm.reshape(-1, 12)).max() <= np.pi / 3 + 1e-12
    with pytest.raises(ValueError, match="kappa"):
        D.poly_angle_quantile(0.0)
    with pytest.raises(ValueError, match="beta0"):
        D.margin_angle_quantile(2.0)
    with pytest.raises(ValueError, match="exactly one"):
        D.reverse_cdf(0.1)
    with pytest.raises(ValueError, match="nonzero"):
        D.sample_angle_task(3, 4, D.poly_angle_quantile(1.0), rng, np.zeros(4))


@pytest.mark.parametrize("d, kappa", [(2, 1.0), (3, 0.5), (10, 1.0), (50, 2.0)])
def test_exact_risk_matches_monte_carlo(d, kappa):
    rng = np.random.default_rng(8)
    w_star = np.eye(d)[0]
    q = D.poly_angle_quantile(kappa)
    W = np.stack([w_star + 0.8 * rng.standard_normal(d), -w_star + 0.3 * rng.standard_normal(d)])
    X_test = D.sample_angle_task(100000, d, q, rng, w_star)
    exact, mc = D.transfer_risk_exact(W, w_star, d, q), D.transfer_risk_mc(W, w_star, X_test)
    assert np.all(np.abs(exact - mc) < 5 * np.sqrt(mc * (1 - mc) / len(X_test)) + 1e-3), (exact, mc)
    assert exact[1] > 0.5                                               # a student pointing away errs mostly
    assert D.transfer_risk_exact(w_star, w_star, d, q) == 0.0


def test_angles_and_risk_bad_input():
    with pytest.raises(ValueError, match="zero"):
        D.signed_angle(np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="lengths"):
        D.unsigned_angle(np.ones(3), np.ones(4))
    assert np.isclose(D.signed_angle([1.0, 0.0], [-1.0, 1e-9]), np.pi)
    assert D.unsigned_angle([1.0, 0.0], [1.0, 1e-13]) == pytest.approx(1e-13, rel=1e-6)
    with pytest.raises(ValueError, match="d=4"):
        D.transfer_risk_exact(np.ones(3), np.ones(3), 4, D.poly_angle_quantile(1.0))
    with pytest.raises(ValueError, match="same length"):
        D.transfer_risk_mc(np.ones(3), np.ones(3), np.ones((5, 4)))


def test_bounds():
    p = lambda t: D.reverse_cdf(t, kappa=1.0)
    b = D.risk_bound_519(p, 5)
    assert D.risk_bound_519(p, 5, tight=True) <= b <= 1.0
    assert D.risk_bound_519(p, 20) < b                                 # decreasing in n
    assert D.cor52_bound(1.0, 5) >= b                                  # Cor 5.2 relaxes (5.19)
    assert D.cor51_bound(0.5, 3) == 0.125 and D.cor52_bound(2.0, 1) == 1.0
    with pytest.raises(ValueError, match="gamma"):
        D.cor51_bound(1.5, 2)
    with pytest.raises(ValueError, match="p_fn"):
        D.risk_bound_519(lambda t: np.nan * t, 3)


# ----------------------------------------------------------------------------- learners
def test_hard_label_learners():
    rng = np.random.default_rng(9)
    w_star = np.eye(20)[0]
    X = D.sample_angle_task(6, 20, D.poly_angle_quantile(1.0), rng, w_star)
    w_svm = D.hard_margin_svm(X, w_star)
    s = np.where(X @ w_star >= 0, 1.0, -1.0)
    margins = s * (X @ w_svm)
    assert margins.min() >= 1 - 1e-9                                  # feasible, and tight somewhere
    assert np.isclose(margins.min(), 1.0, atol=1e-9)
    from scipy.optimize import minimize                                # KKT: compare with a generic solver
    ref = minimize(lambda v: v @ v, w_svm * 1.1, constraints=[{"type": "ineq", "fun": lambda v: s * (X @ v) - 1}],
                   method="SLSQP", options=dict(ftol=1e-14, maxiter=500)).x
    np.testing.assert_allclose(w_svm, ref, atol=1e-5)
    w_gd = D.train_hard_label_student(X, w_star, 2000)
    assert np.all(s * (X @ w_gd) > 0)
    x1 = X[:1]                                                         # n = 1: every learner points along +-x_1
    for v in (D.hard_margin_svm(x1, w_star), D.train_hard_label_student(x1, w_star, 10), D.span_projection(x1, w_star)):
        assert D.unsigned_angle(v, x1[0]) < 1e-12 and v @ w_star > 0
    X3 = rng.standard_normal((9, 3))                                    # n > d: still the max-margin vector
    w3 = np.array([1.0, -0.5, 0.2])
    s3 = np.where(X3 @ w3 >= 0, 1.0, -1.0)
    v3 = D.hard_margin_svm(X3, w3)
    ref3 = minimize(lambda v: v @ v, v3 * 1.1, constraints=[{"type": "ineq", "fun": lambda v: s3 * (X3 @ v) - 1}],
                    method="SLSQP", options=dict(ftol=1e-14, maxiter=500)).x
    np.testing.assert_allclose(v3, ref3, atol=1e-5)
    assert np.isclose((s3 * (X3 @ v3)).min(), 1.0, atol=1e-9)


def test_hard_margin_svm_is_maxmargin_on_signed_points_and_scale_free():
    # one home: the same vector as chapter 02's max_margin of the rows s_i x_i
    from lib.maxmargin import max_margin
    rng = np.random.default_rng(21)
    X, w = rng.standard_normal((12, 8)), rng.standard_normal(8)
    Z = X * np.where(X @ w >= 0, 1.0, -1.0)[:, None]
    np.testing.assert_allclose(D.hard_margin_svm(X, w), max_margin(Z), rtol=1e-9, atol=1e-12)
    # homogeneity: points 1e-6 as large need a vector 1e6 as long; max_margin's absolute test refuses the
    # unscaled problem (||w|| ~ 1e6), the rescaled one in hard_margin_svm does not
    with pytest.raises(ValueError, match="infeasible"):
        max_margin(Z * 1e-6)
    np.testing.assert_allclose(D.hard_margin_svm(X * 1e-6, w), 1e6 * D.hard_margin_svm(X, w), rtol=1e-8)
    np.testing.assert_allclose(D.hard_margin_svm(X * 1e3, 5 * w), 1e-3 * D.hard_margin_svm(X, w), rtol=1e-8)


def test_hard_margin_svm_refuses_an_answer_without_its_optimality_certificate(monkeypatch):
    import lib.maxmargin as MM
    X, w = np.array([[2.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.5]]), np.ones(3)
    good = MM.max_margin
    for bad in (lambda Z, return_alpha: (1.2 * good(Z, return_alpha=True)[0], good(Z, return_alpha=True)[1]),  # gap
                lambda Z, return_alpha: (0.9 * good(Z, return_alpha=True)[0], good(Z, return_alpha=True)[1]),  # infeasible
                lambda Z, return_alpha: (good(Z, return_alpha=True)[0], 1.01 * good(Z, return_alpha=True)[1])):
        monkeypatch.setattr(MM, "max_margin", bad)
        with pytest.raises(ValueError, match="failed its relative optimality test"):
            D.hard_margin_svm(X, w)
    # the solver's own inaccuracy at n > d (a few 1e-9, seen in chapter 04's sweep) passes; 1e-5 does not
    monkeypatch.setattr(MM, "max_margin", lambda Z, return_alpha: ((1 - 5e-9) * good(Z, return_alpha=True)[0],
                                                                   good(Z, return_alpha=True)[1]))
    np.testing.assert_allclose(D.hard_margin_svm(X, w), [0.5, 1.0, 2.0], rtol=1e-8)
    monkeypatch.setattr(MM, "max_margin", lambda Z, return_alpha: ((1 - 1e-5) * good(Z, return_alpha=True)[0],
                                                                   good(Z, return_alpha=True)[1]))
    with pytest.raises(ValueError, match="failed its relative optimality test"):
        D.hard_margin_svm(X, w)
    monkeypatch.setattr(MM, "max_margin", good)
    np.testing.assert_allclose(D.hard_margin_svm(X, w), [0.5, 1.0, 2.0], atol=1e-12)


def test_mc_risk_pvalues_against_binomial_sums():
    from math import comb
    def two_sided(k, n, p):
        pmf = [comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(n + 1)]
        return min(1.0, 2 * min(sum(pmf[:k + 1]), sum(pmf[k:])))
    n = 40
    exact = np.array([0.1, 0.1, 0.5, 0.02, 0.3, 0.0, 1.0])
    counts = np.array([0, 9, 20, 5, 12, 0, 40])
    got = D.mc_risk_pvalues(exact, counts / n, n)
    want = [two_sided(k, n, p) for k, p in zip(counts, exact)]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300)
    assert got[2] == 1.0 and got[5] == 1.0 and got[6] == 1.0
    assert D.mc_risk_pvalues(0.25, 0.5, 4).shape == ()
    # validity, by enumeration: under the exact risk, P[p-value <= alpha] <= alpha (what the Bonferroni check needs)
    from scipy.stats import binom
    for risk in (0.02, 0.1, 0.5):
        pv = D.mc_risk_pvalues(np.full(n + 1, risk), np.arange(n + 1) / n, n)
        for alpha in (1e-4, 1e-3, 0.01, 0.05, 0.3):
            assert binom.pmf(np.arange(n + 1), n, risk)[pv <= alpha].sum() <= alpha
    assert D.mc_risk_pvalues(0.0, 0.25, 4) == 0.0          # an error where none can happen


def test_w_delta_and_monotonicity_counts():
    X, w = iso(5, 12)
    w_hat = D.span_projection(X, w)
    g = np.random.default_rng(10).standard_normal(12)
    wd = D.w_delta(X, w_hat, 3.0, g)
    np.testing.assert_allclose(X @ wd, X @ w_hat, atol=1e-12)          # same logits: zero loss too
    assert np.isclose(np.linalg.norm(wd - w_hat), 3.0 * np.linalg.norm(w_hat))
    assert D.ce_loss(wd, X, D.soft_labels(X, w)) < 1e-12
    with pytest.raises(ValueError, match="orthogonal"):
        D.w_delta(X, w_hat, 1.0, X[0])
    c = D.monotonicity_counts(np.array([1.0, 1.0, 1.0]), np.array([0.5, 1.0 + 1e-9, 2.0]), tie_tol=1e-7)
    assert c == {"p_dec": 1 / 3, "p_tie": 1 / 3, "p_inc": 1 / 3}
    with pytest.raises(ValueError, match="shape"):
        D.monotonicity_counts(np.ones(2), np.ones(3))


def test_configs():
    assert D.CONFIGS.chapter == "distillation"
    assert D.CONFIGS.paper.bias_source == "mnist" and D.CONFIGS.quick.bias_source == "digits"
    # the fixed-budget learners are the same learners at every scale (the chapter compares quick and full rows)
    for name in ("hard_steps", "mono_hard_steps"):
        assert getattr(D.CONFIGS.quick, name) == getattr(D.CONFIGS.full, name) == getattr(D.CONFIGS.paper, name)


# ----------------------------------------------------------------------------- paper-scale shapes
def test_paper_scale_one_step():
    """One training step of every paper-scale training path, with the paper's shapes on synthetic data."""
    cfg = D.CONFIGS.paper
    rng = np.random.default_rng(11)
    X = rng.random((cfg.bias_n, 785))                   # MNIST 0/1: 784 pixels + constant, n = 100
    w = rng.standard_normal(785) / 28
    w1 = D.train_linear_student(X, w, 1, D.default_lr(X))
    assert w1.shape == (785,) and np.all(np.isfinite(w1))
    q = D.poly_angle_quantile(1.0)                     # Fig 5.3: d = 1000, n = 20
    Xg = D.sample_angle_task(cfg.geo_n, cfg.geo_d, q, rng, np.eye(cfg.geo_d)[0], size=2)
    assert D.train_hard_label_student(Xg, np.eye(cfg.geo_d)[0], 1).shape == (2, cfg.geo_d)
    Xd = rng.standard_normal((cfg.deep_n, cfg.deep_d))  # Thm 5.2 students
    for L in cfg.deep_depths:
        wd = D.train_linear_student(Xd, np.ones(cfg.deep_d), 1, 1e-3, depth=L, init_scale=cfg.deep_r0[-1],
                                    width=cfg.deep_width)
        assert wd.shape == (cfg.deep_d,) and np.all(np.isfinite(wd))


@pytest.mark.parametrize("n", [2, 5, 20])
def test_bound_519_and_its_tight_form_match_their_closed_forms(n):
    # kappa = 1: p(beta) = 1 - x and p(pi/2 - beta) = x with x = 2 beta / pi, so (5.19) is
    # min_x 1 - x + x^n, attained at x = n^(-1/(n-1)), and the proof's tight form min_x 1 - x + x^(n+1),
    # attained at x = (n+1)^(-1/n): a bound equal to the loose one would fail the second line.
    p = lambda t: D.reverse_cdf(t, kappa=1.0)
    x = n ** (-1 / (n - 1))
    assert D.risk_bound_519(p, n, nbeta=20001) == pytest.approx(1 - x + x ** n, abs=1e-7)
    x = (n + 1) ** (-1 / n)
    assert D.risk_bound_519(p, n, nbeta=20001, tight=True) == pytest.approx(1 - x + x ** (n + 1), abs=1e-7)


def test_corollary_bounds_match_their_formulas_at_hand_worked_points():
    assert D.cor52_bound(1.0, 100) == pytest.approx((1 + np.log(100)) / 100, rel=1e-12)
    assert D.cor52_bound(0.5, 16) == pytest.approx((1 + np.log(16) ** 0.5) / 4, rel=1e-12)
    assert D.cor51_bound(0.9, 10) == pytest.approx(0.9 ** 10, rel=1e-12)


# ----------------------------------------------------------------------------- Newton limit at n >= d, Lemma D.3, Thm D.4
def test_newton_batched_full_rank_reaches_the_teacher_and_matches_one_by_one():
    rng = np.random.default_rng(3)
    w = rng.standard_normal(6)
    X = rng.standard_normal((4, 15, 6))
    y = D.soft_labels(X, w)
    batched = D.newton_in_span(X, y)
    np.testing.assert_allclose(batched, np.broadcast_to(w, (4, 6)), atol=1e-10)      # n >= d: w_* itself
    for t in range(4):
        np.testing.assert_allclose(D.newton_in_span(X[t], y[t]), batched[t], atol=1e-10)
    # its gradient vanishes (an independent optimality check, not the closed form)
    np.testing.assert_allclose(D.ce_grad(batched, X, y), 0, atol=1e-12)


def test_newton_batched_n_lt_d_is_set_by_set_projection():
    rng = np.random.default_rng(4)
    w = rng.standard_normal(9)
    X = rng.standard_normal((3, 4, 9))
    np.testing.assert_allclose(D.newton_in_span(X, D.soft_labels(X, w)), D.span_projection(X, w), atol=1e-11)


def test_newton_damping_on_a_far_minimiser():
    # teacher of norm 12: logits up to ~30, where an undamped Newton step from 0 overshoots;
    # the damped iteration still reaches w_* (gradient ~0, loss at its minimum 0)
    rng = np.random.default_rng(5)
    w = 12 * np.array([1.0, -0.5, 0.25])
    X = rng.standard_normal((2, 30, 3))
    y = D.soft_labels(X, w)
    got = D.newton_in_span(X, y, iters=60)
    np.testing.assert_allclose(got, np.broadcast_to(w, got.shape), rtol=1e-7)
    assert np.all(D.ce_loss(got, X, y) < 1e-12)


def test_newton_iters_cap_is_respected():
    rng = np.random.default_rng(6)
    w = rng.standard_normal(5)
    X = rng.standard_normal((2, 12, 5))
    one = D.newton_in_span(X, D.soft_labels(X, w), iters=1)
    assert np.linalg.norm(one - w) > 1e-6          # one step is not yet the limit
    with pytest.raises(ValueError, match="iters"):
        D.newton_in_span(X, D.soft_labels(X, w), iters=0)


def test_lemma_d3_angle_value_and_bound_holds():
    assert D.lemma_d3_angle(0.5, 2.0) == pytest.approx(np.sqrt(np.pi / 2), rel=1e-14)
    assert D.lemma_d3_angle(0.0, 1.0) == 0.0
    rng = np.random.default_rng(7)
    for _ in range(200):               # the lemma's claim, on random pairs inside its assumption
        w = rng.standard_normal(4)
        v = w + rng.uniform(0, 0.5) * np.linalg.norm(w) * rng.standard_normal(4) / 2
        eps = np.linalg.norm(v - w)
        if eps <= np.linalg.norm(w) / 2:
            assert D.signed_angle(w, v) <= D.lemma_d3_angle(eps, np.linalg.norm(w)) + 1e-12
    with pytest.raises(ValueError, match=r"eps <= \|\|w\|\| / 2"):
        D.lemma_d3_angle(0.6, 1.0)
    with pytest.raises(ValueError, match="w_norm"):
        D.lemma_d3_angle(0.1, 0.0)


def test_thmD4_bound_by_brute_force_and_limits():
    p = lambda t: D.reverse_cdf(t, kappa=1.0)
    n, eps, wn = 5, 0.01, 1.0
    delta = np.sqrt(2 * np.pi * eps / wn)
    beta = np.linspace(0, np.pi / 2 - delta, 200001)
    brute = np.min(p(beta) + p(np.pi / 2 - delta - beta) ** n)
    assert D.thmD4_bound(p, n, eps, wn) == pytest.approx(brute, abs=1e-5)
    assert D.thmD4_bound(p, n, 1e-14, wn) == pytest.approx(D.risk_bound_519(p, n), abs=1e-5)
    assert D.thmD4_bound(p, n, eps, wn) > D.risk_bound_519(p, n)     # approximate students: a weaker bound
    assert D.thmD4_bound(p, n, 0.5, 1.0) == 1.0                      # delta > pi/2: no admissible beta
    with pytest.raises(ValueError, match="p_fn"):
        D.thmD4_bound(lambda t: np.nan * t, n, eps, wn)


def test_newton_batched_rank_deficient_n_ge_d_projects_set_by_set():
    # n >= d points that span only a 3-dimensional subspace: not the full-rank batched path, the limit is
    # the projection onto that span (Thm 5.1 with rank < d), not the teacher
    rng = np.random.default_rng(8)
    B = rng.standard_normal((3, 6))
    X = rng.standard_normal((2, 9, 3)) @ B
    w = rng.standard_normal(6)
    got = D.newton_in_span(X, D.soft_labels(X, w))
    np.testing.assert_allclose(got, D.span_projection(X, w), atol=1e-10)
    assert np.linalg.norm(got[0] - w) > 0.1


# ----------------------------------------------------------------------------- bad input of Lemma D.3 and Thm D.4 (issue 17)
def _P1(t):
    return D.reverse_cdf(t, kappa=1.0)


@pytest.mark.parametrize("call, err, pattern", [
    (lambda: D.lemma_d3_angle(-0.1, 1.0), ValueError, r"^eps must be a finite number >= 0, got -0.1$"),
    (lambda: D.lemma_d3_angle(float("nan"), 1.0), ValueError, r"^eps must be"),
    (lambda: D.lemma_d3_angle("0.1", 1.0), TypeError, r"^eps must be a real number"),
    (lambda: D.lemma_d3_angle(0.1, 0.0), ValueError, r"^w_norm must be a finite number > 0, got 0.0$"),
    (lambda: D.lemma_d3_angle(0.1, float("inf")), ValueError, r"^w_norm must be"),
    (lambda: D.lemma_d3_angle(0.1, None), TypeError, r"^w_norm must be a real number"),
    (lambda: D.lemma_d3_angle(0.6, 1.0), ValueError, r"^Lemma D.3 needs eps <= \|\|w\|\| / 2, got eps=0.6 and \|\|w\|\|=1.0$"),
    (lambda: D.thmD4_bound(None, 5, 0.01, 1.0), TypeError, r"^p_fn must be"),
    (lambda: D.thmD4_bound(3, 5, 0.01, 1.0), TypeError, r"^p_fn must be"),
    (lambda: D.thmD4_bound(_P1, 0, 0.01, 1.0), ValueError, r"^n must be an int >= 1, got 0$"),
    (lambda: D.thmD4_bound(_P1, 2.5, 0.01, 1.0), TypeError, r"^n must be an int"),
    (lambda: D.thmD4_bound(_P1, 5, 0.01, 1.0, nbeta=0), ValueError, r"^nbeta must be an int >= 1"),
    (lambda: D.thmD4_bound(_P1, 5, -1.0, 1.0), ValueError, r"^eps must be a finite number >= 0"),
    (lambda: D.thmD4_bound(_P1, 5, "x", 1.0), TypeError, r"^eps must be a real number"),
    (lambda: D.thmD4_bound(_P1, 5, 0.01, 0.0), ValueError, r"^w_hat_norm must be a finite number > 0, got 0.0$"),
    (lambda: D.thmD4_bound(_P1, 5, 0.01, -1.0), ValueError, r"^w_hat_norm must be"),
    (lambda: D.thmD4_bound(_P1, 5, 0.01, float("nan")), ValueError, r"^w_hat_norm must be"),
    (lambda: D.thmD4_bound(_P1, 5, 0.01, "0.1"), TypeError, r"^w_hat_norm must be a real number"),
    (lambda: D.thmD4_bound(_P1, 5, 0.6, 1.0), ValueError, r"^Lemma D.3 needs eps <= \|\|w\|\| / 2"),
    (lambda: D.thmD4_bound(lambda t: t[:1], 5, 0.01, 1.0), ValueError, r"^p_fn must map an array of angles"),
])
def test_lemma_d3_and_thmD4_bad_input_names_the_argument(call, err, pattern):
    with pytest.raises(err, match=pattern):
        call()


# ----------------------------------------------------------------------------- every error message, in full (what a user reads)
def _bad_calls():
    """One bad call per checked argument of every public function, with the whole message it must raise:
    the argument's name, what was expected and what it got (issue 17); the patterns are anchored, so a
    message with a changed name or wording fails."""
    X = np.random.default_rng(0).standard_normal((6, 4))
    w = np.array([1.0, 0.5, -0.5, 0.2])
    y = np.array([0.1, 0.9, 0.5, 0.3, 0.7, 0.2])
    Xb, q, rng = np.stack([X, X]), D.poly_angle_quantile(1.0), np.random.default_rng(0)
    P1 = _P1
    return [
        (lambda: D.span_projection(np.ones(3), w), r"^X must be an array with 2 or 3 dimensions \(2-D or 3-D\), got array of shape \(3,\) and dtype float64$"),
        (lambda: D.span_projection(X, np.ones((2,2,4))), r"^w must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(2, 2, 4\) and dtype float64$"),
        (lambda: D.span_projection(X, np.ones(5)), r"^w has 5 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.span_projection(np.zeros((3, 4)), w), r"^X is all zeros: its span is \{0\}$"),
        (lambda: D.span_projection(Xb, np.ones(5)), r"^w has 5 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.span_projection(Xb, np.ones((3, 4))), r"^w: a batch of weights \(3, 4\) needs X of shape \(T, n, d\) with the same T, got \(2, 6, 4\)$"),
        (lambda: D.span_projection(Xb, np.ones((2,2,4))), r"^w must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(2, 2, 4\) and dtype float64$"),
        (lambda: D.soft_labels(np.ones(4), w), r"^X must be an array with 2 or 3 dimensions \(2-D or 3-D\), got array of shape \(4,\) and dtype float64$"),
        (lambda: D.soft_labels(X, np.ones((2,2,4))), r"^w_teacher must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(2, 2, 4\) and dtype float64$"),
        (lambda: D.soft_labels(X, np.ones(3)), r"^w_teacher has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.soft_labels(X, w, temperature=0.0), r"^temperature must be a finite number > 0, got 0\.0$"),
        (lambda: D.hard_labels(X, np.ones(3)), r"^w_teacher has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.hard_labels(np.ones((2,2,2,4)), w), r"^X must be an array with 2 or 3 dimensions \(2-D or 3-D\), got array of shape \(2, 2, 2, 4\) and dtype float64$"),
        (lambda: D.ce_loss(np.ones(3), X, y), r"^w has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.ce_loss(w, X, y[:-1]), r"^y must have shape \(6,\) \(one label per row of X, whose shape is \(6, 4\).*\), got \(5,\)$"),
        (lambda: D.ce_loss(w, X, y + 1), r"^labels y must lie in \[0, 1\]$"),
        (lambda: D.ce_loss(w, X, -y), r"^labels y must lie in \[0, 1\]$"),
        (lambda: D.ce_loss(w, X, np.ones((1,1,6))), r"^y must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(1, 1, 6\) and dtype float64$"),
        (lambda: D.ce_grad(np.ones(3), X, y), r"^w has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.ce_grad(w, X, y[:-1]), r"^y must have shape \(6,\) \(one label per row of X, whose shape is \(6, 4\).*\), got \(5,\)$"),
        (lambda: D.default_lr(np.ones(4)), r"^X must be an array with 2 or 3 dimensions \(2-D or 3-D\), got array of shape \(4,\) and dtype float64$"),
        (lambda: D.default_lr(X, depth=0), r"^depth must be an int >= 1, got 0$"),
        (lambda: D.default_lr(X, factor=0.0), r"^factor must be a finite number > 0, got 0\.0$"),
        (lambda: D.default_lr(np.zeros((3,4))), r"^X is all zeros: no step size makes sense$"),
        (lambda: D.default_lr(X, depth=2), r"^depth >= 2 needs target_norm \(the norm of the expected limit\)$"),
        (lambda: D.default_lr(X, depth=2, target_norm=-1.0), r"^target_norm must be a finite number > 0, got -1\.0$"),
        (lambda: D.gd_linear(np.ones(4), y, 5, 0.1), r"^X must be an array with 2 or 3 dimensions \(2-D or 3-D\), got array of shape \(4,\) and dtype float64$"),
        (lambda: D.gd_linear(X, y[:-1], 5, 0.1), r"^y must have shape \(6,\) \(one label per row of X, whose shape is \(6, 4\).*\), got \(5,\)$"),
        (lambda: D.gd_linear(X, y, 0, 0.1), r"^steps must be an int >= 1, got 0$"),
        (lambda: D.gd_linear(X, y, 5, 'a'), r"^lr must be a numeric array, got str 'a'$"),
        (lambda: D.gd_linear(X, y, 5, np.ones((2,2))), r"^lr must be a scalar or one step per transfer set, got shape \(2, 2\)$"),
        (lambda: D.gd_linear(X, y, 5, np.ones(2)), r"^lr must be a scalar or one step per transfer set, got shape \(2,\)$"),
        (lambda: D.gd_linear(X, y, 5, -0.1), r"^lr must be positive and finite$"),
        (lambda: D.gd_linear(X, y, 5, np.nan), r"^lr must be positive and finite$"),
        (lambda: D.gd_linear(X, y, 5, 0.1, w0=np.ones(3)), r"^w0 has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.balanced_rank1_init(np.ones((2,2)), 2, 3), r"^w0 must be an array with 1 dimensions \(1-D\), got array of shape \(2, 2\) and dtype float64$"),
        (lambda: D.balanced_rank1_init(w, 0, 3), r"^depth must be an int >= 1, got 0$"),
        (lambda: D.balanced_rank1_init(w, 2, 0), r"^width must be an int >= 1, got 0$"),
        (lambda: D.balanced_rank1_init(np.zeros(4), 2, 3), r"^w0 must be nonzero \(zero is a stationary point of the deep linear flow\)$"),
        (lambda: D.end_to_end([]), r"^factors must be a sequence of at least 1 item\(s\), got list \[\]$"),
        (lambda: D.end_to_end('ab'), r"^factors must be a list or tuple, got str 'ab'$"),
        (lambda: D.end_to_end([np.ones(3)]), r"^factors\[0\] must be an array with 2 dimensions \(2-D\), got array of shape \(3,\) and dtype float64$"),
        (lambda: D.end_to_end([np.ones((3, 4)), np.ones((1, 2))]), r"^factors\[1\] has 2 columns but factors\[0\] has 3 rows$"),
        (lambda: D.balancedness_defect([np.ones((3, 4)), np.ones((1, 2))]), r"^factors\[1\] has 2 columns but factors\[0\] has 3 rows$"),
        (lambda: D.train_linear_student(Xb, np.stack([w, w]), 5, 0.1), r"^train_linear_student takes one transfer set X of shape \(n, d\)$"),
        (lambda: D.train_linear_student(X, np.ones(3), 5, 0.1), r"^w_teacher has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.train_linear_student(np.ones(4), w, 5, 0.1), r"^X must be an array with 2 or 3 dimensions \(2-D or 3-D\), got array of shape \(4,\) and dtype float64$"),
        (lambda: D.train_linear_student(X, w, 0, 0.1), r"^steps must be an int >= 1, got 0$"),
        (lambda: D.train_linear_student(X, w, 5, 0.0), r"^lr must be a finite number > 0, got 0\.0$"),
        (lambda: D.train_linear_student(X, w, 5, 0.1, depth=0), r"^depth must be an int >= 1, got 0$"),
        (lambda: D.train_linear_student(X, w, 5, 0.1, init_scale=-1.0), r"^init_scale must be a finite number >= 0, got -1\.0$"),
        (lambda: D.train_linear_student(X, w, 5, 0.1, seed=-1), r"^seed must be an int >= 0, got -1$"),
        (lambda: D.train_linear_student(X, w, 5, 0.1, depth=2), r"^a deep linear student \(depth >= 2\) needs init_scale > 0: w = 0 is a saddle$"),
        (lambda: D.train_linear_student(X, w, 5, 0.1, depth=2, init_scale=0.1, width=0), r"^width must be an int >= 1, got 0$"),
        (lambda: D.predicted_orthogonal_residual('a', 0.1, 1.0, 2), r"^q0 must be a real number, got str 'a'$"),
        (lambda: D.predicted_orthogonal_residual(0.001, 0.0, 1.0, 2), r"^r0 must be a finite number > 0, got 0\.0$"),
        (lambda: D.predicted_orthogonal_residual(0.001, 0.1, 0.0, 2), r"^w_hat_norm must be a finite number > 0, got 0\.0$"),
        (lambda: D.predicted_orthogonal_residual(0.001, 0.1, 1.0, 0), r"^depth must be an int >= 1, got 0$"),
        (lambda: D.predicted_orthogonal_residual(-0.001, 0.1, 1.0, 2), r"^q0 must lie in \[0, r0\^2\], got -0\.001$"),
        (lambda: D.predicted_orthogonal_residual(0.02, 0.1, 1.0, 2), r"^q0 must lie in \[0, r0\^2\], got 0\.02$"),
        (lambda: D.d40_bound(0.0, 1.0, 2), r"^r0 must be a finite number > 0, got 0\.0$"),
        (lambda: D.d40_bound(0.1, 0.0, 2), r"^w_hat_norm must be a finite number > 0, got 0\.0$"),
        (lambda: D.d40_bound(0.1, 1.0, 0), r"^depth must be an int >= 1, got 0$"),
        (lambda: D.d40_bound(1.0, 1.0, 2), r"^\(D\.40\) needs r0 = \|\|w\(0\)\|\| < \|\|w_hat\|\| \(condition \(5\.11\)\)$"),
        (lambda: D.init_norm_threshold(0.0, 1.0, 2), r"^eps must be a finite number > 0, got 0\.0$"),
        (lambda: D.init_norm_threshold(0.1, 0.0, 2), r"^w_hat_norm must be a finite number > 0, got 0\.0$"),
        (lambda: D.init_norm_threshold(0.1, 1.0, 0), r"^depth must be an int >= 1, got 0$"),
        (lambda: D.newton_in_span(np.ones(4), y), r"^X must be an array with 2 or 3 dimensions \(2-D or 3-D\), got array of shape \(4,\) and dtype float64$"),
        (lambda: D.newton_in_span(X, y[:-1]), r"^y must have shape \(6,\) \(one label per row of X, whose shape is \(6, 4\).*\), got \(5,\)$"),
        (lambda: D.newton_in_span(X, y, iters=0), r"^iters must be an int >= 1, got 0$"),
        (lambda: D.train_hard_label_student(X, np.ones(3), 5), r"^w_teacher has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.train_hard_label_student(X, w, 0), r"^steps must be an int >= 1, got 0$"),
        (lambda: D.train_hard_label_student(X, w, 5, lr=-1.0), r"^lr must be positive and finite$"),
        (lambda: D.hard_margin_svm(X, np.zeros(4)), r"^w_teacher must be nonzero \(it labels the points\)$"),
        (lambda: D.hard_margin_svm(X[:3], np.ones(3)), r"^w_teacher has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.hard_margin_svm(np.vstack([X[:2], np.zeros((1, 4))]), w), r"^hard_margin_svm: no w separates the points with a margin \(infeasible"),
        (lambda: D.mc_risk_pvalues(np.ones(2) / 2, np.ones(3) / 2, 10), r"^exact and mc must have the same shape, got \(2,\) and \(3,\)$"),
        (lambda: D.mc_risk_pvalues(1.5, 0.5, 10), r"^exact must hold risks in \[0, 1\], got 1\.5$"),
        (lambda: D.mc_risk_pvalues(0.5, -0.5, 10), r"^mc must hold risks in \[0, 1\], got -0\.5$"),
        (lambda: D.mc_risk_pvalues(0.5, 0.55, 10), r"^mc must be error counts divided by n_test=10, got 0\.55$"),
        (lambda: D.mc_risk_pvalues(0.5, 0.5, 0), r"^n_test must be an int >= 1, got 0$"),
        (lambda: D.w_delta(X[:2], np.ones(3), 1.0, w), r"^w_hat has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.w_delta(X[:2], w, 1.0, np.ones(3)), r"^g has 3 entries but the points of X have d=4 \(X must be \(n, d\): rows are points\)$"),
        (lambda: D.w_delta(X[:2], w, 'a', w), r"^delta must be a real number, got str 'a'$"),
        (lambda: D.w_delta(X[:2], w, 1.0, X[0]), r"^g has no component orthogonal to the data span \(n >= rank\?\)$"),
        (lambda: D.poly_angle_quantile(0.0), r"^kappa must be a finite number > 0, got 0\.0$"),
        (lambda: D.margin_angle_quantile(0.0), r"^beta0 must be a finite number > 0, got 0\.0$"),
        (lambda: D.margin_angle_quantile(2.0), r"^beta0 must lie in \(0, pi/2\], got 2\.0$"),
        (lambda: D.reverse_cdf(0.1), r"^give exactly one of kappa and beta0$"),
        (lambda: D.reverse_cdf(0.1, kappa=1.0, beta0=0.5), r"^give exactly one of kappa and beta0$"),
        (lambda: D.reverse_cdf(np.ones((2,2)), kappa=1.0), r"^theta must be an array with 0 or 1 dimensions \(0-D or 1-D\), got array of shape \(2, 2\) and dtype float64$"),
        (lambda: D.reverse_cdf(-0.1, kappa=1.0), r"^theta must lie in \[0, pi/2\]$"),
        (lambda: D.reverse_cdf(1.6, kappa=1.0), r"^theta must lie in \[0, pi/2\]$"),
        (lambda: D.reverse_cdf(0.1, kappa=0.0), r"^kappa must be a finite number > 0, got 0\.0$"),
        (lambda: D.reverse_cdf(0.1, beta0=0.0), r"^beta0 must be a finite number > 0, got 0\.0$"),
        (lambda: D.sample_angle_task(0, 4, q, rng, w), r"^n must be an int >= 1, got 0$"),
        (lambda: D.sample_angle_task(5, 0, q, rng, w), r"^d must be an int >= 1, got 0$"),
        (lambda: D.sample_angle_task(5, 1, q, rng, np.ones(1)), r"^angle tasks need d >= 2$"),
        (lambda: D.sample_angle_task(5, 4, q, rng, np.ones((2, 2))), r"^w_teacher must be an array with 1 dimensions \(1-D\), got array of shape \(2, 2\) and dtype float64$"),
        (lambda: D.sample_angle_task(5, 4, q, rng, np.ones(3)), r"^w_teacher must be a nonzero vector of length d=4$"),
        (lambda: D.sample_angle_task(5, 4, q, rng, w, size=0), r"^size must be an int >= 1, got 0$"),
        (lambda: D.sample_angle_task(5, 4, 3, rng, w), r"^quantile must be callable, got 3$"),
        (lambda: D.sample_angle_task(5, 4, q, 0, w), r"^rng must be a numpy Generator \(np\.random\.default_rng\(seed\)\), got 0$"),
        (lambda: D.signed_angle(np.ones((2,2,2)), w), r"^u must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(2, 2, 2\) and dtype float64$"),
        (lambda: D.signed_angle(w, np.ones((2,2,2))), r"^v must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(2, 2, 2\) and dtype float64$"),
        (lambda: D.signed_angle(w, np.ones(3)), r"^u and v are vectors of different lengths: \(4,\) and \(3,\)$"),
        (lambda: D.signed_angle(w, np.zeros(4)), r"^angles are undefined for zero vectors$"),
        (lambda: D.unsigned_angle(np.zeros(4), w), r"^angles are undefined for zero vectors$"),
        (lambda: D.transfer_risk_exact(w, w, 0, q), r"^d must be an int >= 1, got 0$"),
        (lambda: D.transfer_risk_exact(w, w, 4, q, ngrid=0), r"^ngrid must be an int >= 1, got 0$"),
        (lambda: D.transfer_risk_exact(w, w, 4, 3), r"^quantile must be callable, got 3$"),
        (lambda: D.transfer_risk_exact(np.ones((2,2,4)), w, 4, q), r"^w must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(2, 2, 4\) and dtype float64$"),
        (lambda: D.transfer_risk_exact(w, np.ones((2,4)), 4, q), r"^w_teacher must be an array with 1 dimensions \(1-D\), got array of shape \(2, 4\) and dtype float64$"),
        (lambda: D.transfer_risk_exact(w[:1], w[:1], 1, q), r"^angle tasks need d >= 2$"),
        (lambda: D.transfer_risk_exact(w, w, 5, q), r"^w has 4 entries but d=5$"),
        (lambda: D.transfer_risk_mc(w, w, np.ones(4)), r"^X_test must be an array with 2 dimensions \(2-D\), got array of shape \(4,\) and dtype float64$"),
        (lambda: D.transfer_risk_mc(np.ones((2,2,4)), w, X), r"^w must be an array with 1 or 2 dimensions \(1-D or 2-D\), got array of shape \(2, 2, 4\) and dtype float64$"),
        (lambda: D.transfer_risk_mc(w, np.ones((2,4)), X), r"^w_teacher must be an array with 1 dimensions \(1-D\), got array of shape \(2, 4\) and dtype float64$"),
        (lambda: D.transfer_risk_mc(w, np.ones(3), X), r"^w, w_teacher and the rows of X_test must have the same length$"),
        (lambda: D.risk_bound_519(P1, 0), r"^n must be an int >= 1, got 0$"),
        (lambda: D.risk_bound_519(P1, 5, nbeta=0), r"^nbeta must be an int >= 1, got 0$"),
        (lambda: D.risk_bound_519(3, 5), r"^p_fn must be callable, got 3$"),
        (lambda: D.risk_bound_519(lambda t: t[:1], 5), r"^p_fn must map an array of angles to finite values of the same shape$"),
        (lambda: D.cor51_bound(1.5, 2), r"^gamma must be a finite number >= 0 and <= 1, got 1\.5$"),
        (lambda: D.cor51_bound(0.5, 0), r"^n must be an int >= 1, got 0$"),
        (lambda: D.cor52_bound(0.0, 2), r"^kappa must be a finite number > 0, got 0\.0$"),
        (lambda: D.cor52_bound(1.0, 0), r"^n must be an int >= 1, got 0$"),
        (lambda: D.monotonicity_counts(np.ones((2,2)), np.ones(2)), r"^angle_before must be an array with 1 dimensions \(1-D\), got array of shape \(2, 2\) and dtype float64$"),
        (lambda: D.monotonicity_counts(np.ones(2), np.ones((2,2))), r"^angle_after must be an array with 1 dimensions \(1-D\), got array of shape \(2, 2\) and dtype float64$"),
        (lambda: D.monotonicity_counts(np.ones(2), np.ones(3)), r"^angle_before and angle_after differ in shape: \(2,\) vs \(3,\)$"),
        (lambda: D.monotonicity_counts(np.ones(2), np.ones(2), tie_tol=-1.0), r"^tie_tol must be a finite number >= 0, got -1\.0$"),
        (lambda: D.gd_linear(100 * X, y, 3, 1e308), r"^gradient descent diverged: lower lr \(see default_lr\)$"),
        (lambda: D.gd_linear(X, y, 5, np.inf), r"^lr must be positive and finite$"),
    ]


_DI_BAD = _bad_calls()


@pytest.mark.parametrize("i", range(len(_DI_BAD)))
def test_error_messages_name_the_argument(i):
    call, pattern = _DI_BAD[i]
    with pytest.raises((ValueError, TypeError, FloatingPointError), match=pattern):
        call()


# ----------------------------------------------------------------------------- boundaries and defaults, by hand
def test_angle_task_boundaries_by_hand():
    # beta0 = pi/2 is allowed (the interval is (0, pi/2]); a margin task's quantile is beta0 * u
    assert D.margin_angle_quantile(np.pi / 2)(np.array([0.0, 1.0])).tolist() == [0.0, np.pi / 2]
    assert D.margin_angle_quantile(1.2)(0.5) == pytest.approx(0.6, rel=1e-15)
    # theta = pi/2 (up to a 1e-12 rounding slack) is the end of [0, pi/2]: p = 0 there, also for kappa < 1
    assert D.reverse_cdf(np.pi / 2 + 1e-12, kappa=0.5) == 0.0
    assert D.reverse_cdf(np.pi / 2, beta0=1.0) == 0.0 and D.reverse_cdf(0.25, beta0=1.0) == 0.75
    assert D.reverse_cdf(np.pi / 4, kappa=2.0) == pytest.approx(0.25, rel=1e-15)


def test_bound_grids_default_to_2001_angles():
    # the chapter's bounds are the minima over 2001 angles (a step of pi/4000); a finer or coarser grid moves
    # the minimum in its 8th digit, which is how the grid size is pinned here
    p = lambda t: D.reverse_cdf(t, kappa=1.0)
    assert D.risk_bound_519(p, 5) == D.risk_bound_519(p, 5, nbeta=2001) != D.risk_bound_519(p, 5, nbeta=2002)
    assert D.thmD4_bound(p, 5, 0.01, 1.0) == D.thmD4_bound(p, 5, 0.01, 1.0, nbeta=2001) \
        != D.thmD4_bound(p, 5, 0.01, 1.0, nbeta=2002)


def test_bounds_accept_exact_fractions_from_p_fn():
    # p_fn may return any sequence of real numbers (here exact fractions): it is read as floats
    from fractions import Fraction
    half = lambda t: [Fraction(1, 2)] * len(t)
    assert D.risk_bound_519(half, 3) == 0.5 + 0.5 ** 3
    assert D.thmD4_bound(half, 3, 0.01, 1.0) == 0.5 + 0.5 ** 3


def test_thmD4_near_and_at_delta_pi_over_2():
    # delta = sqrt(2 pi eps / ||w||) = pi/2 exactly at eps/||w|| = pi/8: the only admissible angle is
    # beta = 0, so the bound is p(0) + p(0)^n (a constant p = 0.3 gives 0.3 + 0.3^4); beyond it, 1
    const = lambda t: np.full(np.shape(t), 0.3)
    assert D.thmD4_bound(const, 4, np.pi / 8, 1.0) == pytest.approx(0.3 + 0.3 ** 4, rel=1e-15)
    assert D.thmD4_bound(const, 4, np.pi / 8 * 1.0001, 1.0) == 1.0
    # delta = sqrt(0.6 pi) = 1.37 in (pi/3, pi/2): still a bound, by brute force over beta in [0, pi/2 - delta]
    p = lambda t: D.reverse_cdf(t, kappa=1.0)
    delta = np.sqrt(0.6 * np.pi)
    beta = np.linspace(0, np.pi / 2 - delta, 100001)
    assert D.thmD4_bound(p, 3, 0.3, 1.0) == pytest.approx(np.min(p(beta) + p(np.pi / 2 - delta - beta) ** 3), abs=1e-6)


def test_monotonicity_counts_at_the_tie_boundary_and_default_tolerance():
    t = 2.0 ** -10                                         # exactly representable: |diff| = t is a tie
    assert D.monotonicity_counts(np.ones(3), np.array([1 - t, 1.0, 1 + t]), tie_tol=t) == \
        {"p_dec": 0.0, "p_tie": 1.0, "p_inc": 0.0}
    c = D.monotonicity_counts(np.ones(4), np.array([1 - 1e-3, 1 - 1e-9, 1 + 1e-9, 1 + 1e-3]))  # default 1e-7
    assert c == {"p_dec": 0.25, "p_tie": 0.5, "p_inc": 0.25}


# ----------------------------------------------------------------------------- learners: hand-worked and batched cases
def test_hard_margin_svm_hand_worked_orthogonal_points_and_batches():
    # orthogonal points: the constraints decouple and w = sum_i s_i x_i / ||x_i||^2 (each margin exactly 1);
    # the second point lies on the teacher's boundary (w_teacher . x = 0), which counts as label 1
    X = np.array([[2.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.5]])
    wt = np.array([1.0, 1.0, 1.0])
    np.testing.assert_allclose(D.hard_margin_svm(X, wt), [0.5, 1.0, 2.0], atol=1e-12)     # signs +, -, +
    on_boundary = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(D.hard_margin_svm(on_boundary, np.eye(3)[0]), [1.0, 1.0, 0.0], atol=1e-12)
    assert D.hard_margin_svm(X, wt).shape == (3,)                                          # n = d is allowed
    rng = np.random.default_rng(12)
    Xb, W = rng.standard_normal((3, 4, 7)), rng.standard_normal((3, 7))
    per_set = np.stack([D.hard_margin_svm(Xb[t], W[t]) for t in range(3)])
    np.testing.assert_allclose(D.hard_margin_svm(Xb, W), per_set, atol=1e-12)
    np.testing.assert_allclose(D.hard_margin_svm(Xb, W[0]), np.stack([D.hard_margin_svm(x, W[0]) for x in Xb]),
                               atol=1e-12)
    assert not np.allclose(per_set[1], D.hard_margin_svm(Xb[1], W[0]))                     # the teacher matters


def test_newton_in_span_passes_iters_to_each_set():
    rng = np.random.default_rng(13)
    X, w = rng.standard_normal((2, 3, 8)), 3 * rng.standard_normal(8)
    y = D.soft_labels(X, w)
    one = D.newton_in_span(X, y, iters=1)                   # n < d: set by set, one Newton step each
    np.testing.assert_allclose(one, np.stack([D.newton_in_span(X[t], y[t], iters=1) for t in range(2)]), atol=1e-14)
    assert np.all(np.linalg.norm(one - D.span_projection(X, w), axis=1) > 1e-3)


def test_w_delta_direction_batches_and_degenerate_g():
    rng = np.random.default_rng(14)
    X, w_hat, g = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    w_hat[1] *= 5.0                                         # different norms per set
    g[0] *= 100.0
    wd = D.w_delta(X, w_hat, 0.5, g)
    np.testing.assert_allclose(wd, np.stack([D.w_delta(X[t], w_hat[t], 0.5, g[t]) for t in range(2)]), atol=1e-12)
    for t in range(2):  # a step of length 0.5 ||w_hat|| orthogonal to the data, along the out-of-span part of g
        step = wd[t] - w_hat[t]
        np.testing.assert_allclose(X[t] @ step, 0, atol=1e-10)
        assert np.linalg.norm(step) == pytest.approx(0.5 * np.linalg.norm(w_hat[t]), rel=1e-12)
        assert step @ g[t] == pytest.approx(np.linalg.norm(step) * np.linalg.norm(g[t] - D.span_projection(X[t], g[t])),
                                            rel=1e-12)          # Cauchy-Schwarz with equality: parallel, same sign
    with pytest.raises(ValueError, match=r"^g has no component orthogonal to the data span"):
        D.w_delta(X[0], w_hat[0], 0.5, np.zeros(6))
    with pytest.raises(ValueError, match=r"^g has no component orthogonal to the data span"):
        D.w_delta(X[0], w_hat[0], 0.5, 1e6 * X[0, 0])       # in the span, at any scale


# ----------------------------------------------------------------------------- exact risk, Monte-Carlo risk and angles by closed forms
def _gaussian_angle_quantile(d):
    """Quantile of the unsigned angle between w_* and an isotropic Gaussian x in R^d: cos^2 ~ Beta(1/2, (d-1)/2)."""
    from scipy import special
    return lambda u: np.arccos(np.sqrt(special.betaincinv(0.5, (d - 1) / 2, np.asarray(u, float))))


@pytest.mark.parametrize("d", [3, 4, 7, 30])
def test_exact_risk_of_isotropic_gaussian_data_is_angle_over_pi(d):
    # isotropic Gaussian data is an angle task, and there the risk of 1{w.x >= 0} is the classic phi / pi
    # (x's projection on span(w, w_*) is an isotropic 2-D Gaussian), for acute and obtuse phi
    rng = np.random.default_rng(d)
    w_star = rng.standard_normal(d)
    W = np.stack([w_star + s * rng.standard_normal(d) for s in (0.1, 0.7, 3.0)] + [-w_star + 0.5 * rng.standard_normal(d)])
    phi = D.signed_angle(W, w_star)
    got = D.transfer_risk_exact(W, w_star, d, _gaussian_angle_quantile(d), ngrid=20000)
    np.testing.assert_allclose(got, phi / np.pi, atol=2e-5)
    assert got[-1] > 0.5 and isinstance(D.transfer_risk_exact(W[0], w_star, d, _gaussian_angle_quantile(d)), float)


def test_exact_risk_in_two_dimensions_counts_midpoints_exactly():
    # d = 2, kappa = 1: a = (pi/2)(1 - u) and the risk is P[a > pi/2 - phi] / 2 = P[u < 2 phi / pi] / 2; with
    # 2 phi / pi = 0.3 exactly 300 of the 1000 midpoints (k + 1/2) / 1000 lie below it: risk 0.15 = phi / pi
    phi = 0.15 * np.pi
    w = np.array([np.cos(phi), np.sin(phi)])
    q = D.poly_angle_quantile(1.0)
    assert D.transfer_risk_exact(w, np.array([1.0, 0.0]), 2, q, ngrid=1000) == pytest.approx(0.15, abs=1e-15)
    assert D.transfer_risk_exact(-w, np.array([1.0, 0.0]), 2, q, ngrid=1000) == pytest.approx(0.85, abs=1e-15)
    assert D.transfer_risk_exact(np.array([0.0, 1.0]), np.array([1.0, 0.0]), 2, q, ngrid=1000) == pytest.approx(0.5)


def test_monte_carlo_risk_by_hand_with_points_on_the_boundary():
    # w.x = 0 counts as the positive class for both the student and the teacher
    X_test = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    teacher = np.array([1.0, 0.0])                    # labels 1, 1, 0, 1
    assert D.transfer_risk_mc(np.array([1.0, 1.0]), teacher, X_test) == 0.25     # 1, 1, 0, 0
    got = D.transfer_risk_mc(np.array([[1.0, 1.0], [-1.0, 0.0]]), teacher, X_test)  # second: 0, 1, 1, 1
    assert got.tolist() == [0.25, 0.5]


def test_angles_by_hand():
    t = np.array([0.1, 1.0, 2.0, 3.0])
    v = np.stack([np.cos(t), np.sin(t), np.zeros(4)], 1) * np.array([[2.0], [0.5], [1.0], [7.0]])
    u = np.array([3.0, 0.0, 0.0])
    np.testing.assert_allclose(D.signed_angle(u, v), t, atol=1e-15)
    np.testing.assert_allclose(D.signed_angle(v, u), t, atol=1e-15)
    np.testing.assert_allclose(D.unsigned_angle(v, np.tile(u, (4, 1))), np.minimum(t, np.pi - t), atol=1e-15)
    with pytest.raises(ValueError, match=r"^angles are undefined for zero vectors$"):
        D.unsigned_angle(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([1.0, 1.0]))


# ----------------------------------------------------------------------------- angle tasks: exact geometry of the sampler
def test_sample_angle_task_puts_every_point_at_the_quantile_angle():
    rng = np.random.default_rng(15)
    w = 3.0 * rng.standard_normal(5)
    seen = []

    def quantile(u):                                    # records what the sampler feeds it
        seen.append(np.array(u))
        return np.full(np.shape(u), 0.3)

    X = D.sample_angle_task(4000, 5, quantile, rng, w, size=2)
    assert X.shape == (2, 4000, 5) and seen[0].shape == (2, 4000) and 0 <= seen[0].min() and seen[0].max() < 1
    np.testing.assert_allclose(D.unsigned_angle(w, X.reshape(-1, 5)), 0.3, atol=1e-12)
    s = np.sign(X.reshape(-1, 5) @ w)                   # nu ~ N(0, 1): either side of the teacher, |x| = |nu|
    assert abs(s.mean()) < 0.05
    assert np.mean(np.sum(X ** 2, -1)) == pytest.approx(1.0, abs=0.05)
    X2 = D.sample_angle_task(3, 2, D.margin_angle_quantile(0.5), rng, np.array([0.0, 2.0]))   # d = 2 is allowed
    assert X2.shape == (3, 2) and np.all(D.unsigned_angle(np.array([0.0, 1.0]), X2) <= 0.5 + 1e-12)


# ----------------------------------------------------------------------------- projection, labels, loss and step size by hand
def test_span_projection_batched_paths():
    rng = np.random.default_rng(16)
    full = rng.standard_normal((2, 7, 4))                      # n >= d, rank d: w itself, exactly
    W = rng.standard_normal((2, 4))
    assert np.array_equal(D.span_projection(full, W), W)
    assert np.array_equal(D.span_projection(full[:, :4], W), W)    # n = d
    mixed = full.copy()
    mixed[1] = rng.standard_normal((7, 2)) @ rng.standard_normal((2, 4))   # rank 2 < d
    got = D.span_projection(mixed, W[0])                       # one w for every set (broadcast)
    assert np.array_equal(got[0], W[0])
    B = np.linalg.svd(mixed[1])[2][:2]                         # orthonormal basis of the rank-2 row span
    np.testing.assert_allclose(got[1], B.T @ (B @ W[0]), atol=1e-12)
    thin = rng.standard_normal((2, 3, 6))
    thin[1, 2] = thin[1, 0] + thin[1, 1]                       # n < d, rank 2: the stacked QR is refused
    got = D.span_projection(thin, W[:, :1] * np.ones(6))
    for t in range(2):
        np.testing.assert_allclose(got[t], D.span_projection(thin[t], W[t, :1] * np.ones(6)), atol=1e-12)
        np.testing.assert_allclose(thin[t] @ (W[t, :1] * np.ones(6) - got[t]), 0, atol=1e-12)


def test_labels_loss_and_step_size_by_hand():
    X = np.array([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    assert D.hard_labels(X, np.array([1.0, -1.0])).tolist() == [1.0, 0.0, 1.0]   # w.x = 0 is label 1
    # l^1 at w = 0 is log 2 minus the mean binary entropy of the labels
    assert D.ce_loss(np.zeros(2), X, np.array([0.0, 1.0, 1.0])) == pytest.approx(np.log(2), rel=1e-15)
    assert D.ce_loss(np.zeros(2), X, np.full(3, 0.5)) == pytest.approx(0.0, abs=1e-16)
    Xb = np.stack([X, 2 * X])
    loss = D.ce_loss(np.zeros((2, 2)), Xb, np.array([[0.0, 1.0, 1.0], [0.5, 0.5, 0.5]]))
    np.testing.assert_allclose(loss, [np.log(2), 0.0], atol=1e-15)
    # lambda_max(X^T X) = 9, n = 3: 4n / lambda_max = 4/3; deep: divided by L ||w||^(2(L-1)/L)
    assert D.default_lr(X) == pytest.approx(4 / 3, rel=1e-15) and isinstance(D.default_lr(X), float)
    assert D.default_lr(X, factor=0.5) == pytest.approx(2 / 3, rel=1e-15)
    assert D.default_lr(X, depth=2, target_norm=4.0) == pytest.approx(4 / 3 / (2 * 4.0), rel=1e-14)
    assert D.default_lr(X, depth=3, target_norm=8.0) == pytest.approx(4 / 3 / (3 * 16.0), rel=1e-14)
    np.testing.assert_allclose(D.default_lr(Xb), [4 / 3, 1 / 3], rtol=1e-15)


def test_gd_linear_start_record_and_per_set_steps():
    rng = np.random.default_rng(17)
    X = rng.standard_normal((2, 5, 3))
    y = D.soft_labels(X, rng.standard_normal((2, 3)))
    w0 = np.array([0.3, -0.2, 0.1])
    lr = np.array([0.5, 0.2])
    w, path = D.gd_linear(X, y, 4, lr, w0=w0, record=True)
    assert path.shape == (5, 2, 3) and np.array_equal(path[0], np.stack([w0, w0])) and np.array_equal(path[-1], w)
    for t in range(2):                                 # each set with its own step, from the same start
        np.testing.assert_allclose(w[t], D.gd_linear(X[t], y[t], 4, lr[t], w0=w0), atol=1e-15)
        np.testing.assert_allclose(path[1, t], w0 - lr[t] * D.ce_grad(w0, X[t], y[t]), atol=1e-15)
    with pytest.raises(ValueError, match=r"^lr must be a scalar or one step per transfer set, got shape \(3,\)$"):
        D.gd_linear(X, y, 4, np.ones(3))


# ----------------------------------------------------------------------------- deep linear students against autograd
@pytest.mark.parametrize("depth", [2, 3])
def test_deep_student_steps_match_autograd(depth):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(18)
    X, w = rng.standard_normal((5, 4)), rng.standard_normal(4)
    lr, width = 0.3, 3
    w_deep, h = D.train_linear_student(X, w, 3, lr, depth=depth, init_scale=0.5, seed=2, width=width,
                                       return_history=True)
    assert np.linalg.norm(h["w0"]) == pytest.approx(0.5, rel=1e-14)
    Ws = [torch.tensor(W, requires_grad=True) for W in D.balanced_rank1_init(h["w0"], depth, width)]
    Xt, yt = torch.tensor(X), torch.tensor(D.soft_labels(X, w))
    ends = []
    for _ in range(4):
        prod = Ws[0]
        for W in Ws[1:]:
            prod = W @ prod
        ends.append(prod.detach().numpy().ravel().copy())
        z = Xt @ prod[0]
        loss = torch.mean(torch.logaddexp(torch.zeros_like(z), z) - yt * z)
        grads = torch.autograd.grad(loss, Ws)
        with torch.no_grad():
            Ws = [(W - lr * g).requires_grad_() for W, g in zip(Ws, grads)]
    np.testing.assert_allclose(h["path"], np.stack(ends), atol=1e-13)
    assert np.array_equal(h["path"][-1], w_deep) and h["path"].shape == (4, 4)
    assert 0 <= h["balancedness_defect"] < 1e-2            # GD keeps the factors nearly balanced (5.13)


def test_linear_student_random_start_is_seeded_and_scaled():
    X, w = iso(4, 9)
    _, h1 = D.train_linear_student(X, w, 2, 0.1, init_scale=0.25, seed=5, return_history=True)
    _, h2 = D.train_linear_student(X, w, 2, 0.1, init_scale=0.25, seed=5, return_history=True)
    _, h3 = D.train_linear_student(X, w, 2, 0.1, init_scale=0.25, seed=6, return_history=True)
    assert np.linalg.norm(h1["w0"]) == pytest.approx(0.25, rel=1e-14) and np.array_equal(h1["w0"], h2["w0"])
    assert not np.allclose(h1["w0"], h3["w0"]) and np.array_equal(h1["path"][0], h1["w0"])
    assert "balancedness_defect" not in h1
    assert np.array_equal(D.train_linear_student(X, w, 2, 0.1), D.gd_linear(X, D.soft_labels(X, w), 2, 0.1))


def test_balanced_factors_shapes_and_equal_norms():
    w0 = np.array([3.0, 4.0])                              # ||w0|| = 5
    for depth in (1, 2, 3):
        F = D.balanced_rank1_init(w0, depth, width=4)
        assert [W.shape for W in F] == ([(1, 2)] if depth == 1 else [(4, 2)] + [(4, 4)] * (depth - 2) + [(1, 4)])
        for W in F:                                        # rank one, each of Frobenius norm ||w0||^(1/L)
            assert np.linalg.norm(W) == pytest.approx(5.0 ** (1 / depth), rel=1e-14)
            assert np.linalg.matrix_rank(W) == 1
    assert D.balancedness_defect([np.ones((2, 3))]) == 0.0
    unbalanced = [np.array([[2.0, 0.0]]).T @ np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]])]   # (2,2) then (1,2)
    assert D.balancedness_defect(unbalanced) == pytest.approx(3.0, rel=1e-15)   # ||diag(1,0) - diag(4,0)||_F


def test_theory_bounds_by_hand_and_at_their_edges():
    # (D.40) with L = 2, r0 = 1/4, ||w_hat|| = 1: r0 ||w_hat||^2 / (||w_hat|| - r0) = 1/3
    assert D.d40_bound(0.25, 1.0, 2) == pytest.approx(1 / 3, rel=1e-15)
    assert D.d40_bound(0.125, 1.0, 3) == pytest.approx(0.25 / 0.75, rel=1e-14)    # r0^(2/3) = 1/4
    # (5.11) with L = 1: eps ||w_hat|| / sqrt(eps^2 + ||w_hat||^2), i.e. 3 * 4 / 5
    assert D.init_norm_threshold(3.0, 4.0, 1) == pytest.approx(2.4, rel=1e-15)
    # (D.32): q0 = r0^2 is allowed (the start lies wholly out of the span), beyond it is not; q0 = 0 stays 0
    q = D.predicted_orthogonal_residual(0.01, 0.1, 1.0, 2)
    assert q == pytest.approx(0.01 * np.sqrt((1.0 + q) / 0.01), rel=1e-12)
    with pytest.raises(ValueError, match=r"^q0 must lie in \[0, r0\^2\]"):
        D.predicted_orthogonal_residual(0.01 * (1 + 1e-10), 0.1, 1.0, 2)
    assert D.predicted_orthogonal_residual(0.0, 0.1, 1.0, 3) == 0.0
    q = D.predicted_orthogonal_residual(0.81, 0.9, 1.0, 4)     # a root above the first bracket [0, 1]
    assert q > 1 and q == pytest.approx(0.81 * ((1.0 + q) / 0.81) ** 0.75, rel=1e-12)


def test_predicted_residual_golden_ratio_tiny_roots_and_the_r0_boundary():
    # q0 = r0 = ||w_hat|| = 1, L = 2: q = sqrt(1 + q), the golden ratio
    assert D.predicted_orthogonal_residual(1.0, 1.0, 1.0, 2) == pytest.approx((1 + np.sqrt(5)) / 2, rel=1e-14)
    # a tiny root is found to full relative precision: q0 = 1e-20, r0 = 1e-10: q = 1e-10 sqrt(1 + q)
    q = D.predicted_orthogonal_residual(1e-20, 1e-10, 1.0, 2)
    assert q == pytest.approx(1e-10 * np.sqrt(1 + 1e-10), rel=1e-13)
    # q0 may reach r0^2 (up to a 1e-12 rounding slack), not beyond
    for q0 in (0.25, 0.25 * (1 + 1e-13), 0.25 * (1 + 1e-12)):
        assert D.predicted_orthogonal_residual(q0, 0.5, 2.0, 3) > q0


@pytest.mark.parametrize("change, match", [
    (dict(iso_d=2.5), r"DistillConfig\.iso_d must be an int"), (dict(rn_sets=0), r"DistillConfig\.rn_sets must be an int >= 1"),
    (dict(deep_lr_factor=0.0), r"DistillConfig\.deep_lr_factor must be"), (dict(tie_tol=-1e-7), r"DistillConfig\.tie_tol must be"),
    (dict(bias_source="cifar"), r"DistillConfig\.bias_source must be one of"),
    (dict(rn_ns=(1, 0)), r"DistillConfig\.rn_ns\[1\] must be an int >= 1"),
    (dict(bias_deltas=(0, -10)), r"DistillConfig\.bias_deltas\[1\] must be"),
    (dict(geo_kappas=()), r"DistillConfig\.geo_kappas must be a sequence of at least 1")])
def test_config_fields_are_checked_at_construction(change, match):
    with pytest.raises(ValueError, match=match):
        D.DistillConfig(**change)


@pytest.mark.parametrize("fn", [lambda X, y: D.gd_linear(X, y, 3, 0.1), D.newton_in_span])
def test_X_of_the_wrong_layout_names_X_and_y(fn):
    """X transposed ((d, n) for (n, d)): the labels no longer match its rows; the error names both."""
    X = np.random.default_rng(0).standard_normal((5, 3))
    y = np.full(5, 0.5)
    with pytest.raises(ValueError, match=r"^y must have shape \(3,\) \(one label per row of X, whose shape is \(3, 5\)"):
        fn(X.T, y)


def test_vectors_that_must_agree_are_named():
    w = np.array([1.0, 0.5, -0.5, 0.2])
    with pytest.raises(ValueError, match=r"^w and w_teacher must agree in length \(both in R\^d\), got 4 and 3"):
        D.transfer_risk_exact(w, w[:3], 4, D.poly_angle_quantile(1.0))
