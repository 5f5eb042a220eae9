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
    with pytest.raises(ValueError, match="n <= d"):
        D.hard_margin_svm(rng.standard_normal((5, 3)), np.ones(3))


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
