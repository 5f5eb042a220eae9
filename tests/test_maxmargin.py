"""Unit tests of lib.maxmargin (Chapter 2: inductive bias on orthogonally separable data)."""


import itertools

import numpy as np
import pytest
import torch
from scipy.optimize import linprog, minimize

from lib import maxmargin as mm

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def data():
    return mm.orthogonally_separable_gaussian(500, 20, seed=0)


def slsqp_max_margin(X):
    """An independent QP solver (SLSQP on the primal, polished on its active set) for cross-checking."""
    res = minimize(lambda w: w @ w, np.full(X.shape[1], 0.1), jac=lambda w: 2 * w, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda w: X @ w - 1, "jac": lambda w: X}],
                   options=dict(ftol=1e-16, maxiter=1000))
    XA = X[X @ res.x < 1 + 1e-6]
    return XA.T @ np.linalg.solve(XA @ XA.T, np.ones(len(XA)))


def exact_limit(w_plus, w_minus, p_plus=3, p_minus=2, seed=0):
    """The KKT point of Lemma B.6 (paper Lemma C.1): u, z >= 0 with ||u||^2 = 1/||w_+||, etc."""
    rng = np.random.default_rng(seed)
    u = np.r_[rng.uniform(0.5, 1, p_plus), np.zeros(p_minus)]
    z = np.r_[np.zeros(p_plus), rng.uniform(0.5, 1, p_minus)]
    u /= np.linalg.norm(u) * np.sqrt(np.linalg.norm(w_plus))
    z /= np.linalg.norm(z) * np.sqrt(np.linalg.norm(w_minus))
    W = np.outer(u, w_plus) + np.outer(z, w_minus)
    a = u * np.linalg.norm(w_plus) - z * np.linalg.norm(w_minus)
    return W, a


# ---- data and geometry -------------------------------------------------------------------------

def test_data_is_orthogonally_separable(data):
    X, y = data
    assert X.shape == (500, 20) and y.shape == (500,) and set(np.unique(y)) == {-1.0, 1.0}
    assert mm.is_orthogonally_separable(X, y)
    z = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    assert (X @ z >= 0).all() and ((X > 0) == (y[:, None] > 0)).all()
    X2, y2 = mm.orthogonally_separable_gaussian(500, 20, seed=0)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)


def test_data_bad_input():
    with pytest.raises(ValueError):
        mm.orthogonally_separable_gaussian(1, 20)
    with pytest.raises(ValueError):
        mm.orthogonally_separable_gaussian(10, 1)


def test_is_orthogonally_separable_detects_violations(data):
    X, y = data
    X_bad = X.copy()
    X_bad[np.flatnonzero(y < 0)[0]] = X[np.flatnonzero(y > 0)[0]] * -0.1 + 1.0  # positive overlap
    assert not mm.is_orthogonally_separable(X_bad, y)
    # against the definition, pair by pair: same class > 0, different classes <= 0
    rng = np.random.default_rng(3)
    verdicts = []
    for _ in range(300):
        Xr, yr = np.round(rng.normal(size=(5, 2)), 1), rng.permutation([1.0, 1.0, -1.0, -1.0, rng.choice([-1.0, 1.0])])
        G, same = Xr @ Xr.T, yr[:, None] == yr[None, :]
        brute = bool(np.all(G[same] > 0) and np.all(G[~same] <= 0))
        assert mm.is_orthogonally_separable(Xr, yr) == brute, (Xr, yr)
        verdicts.append(brute)
    assert 0 < sum(verdicts) < len(verdicts)  # both answers occur
    # orthogonal across classes is allowed (<= 0), orthogonal within a class is not (> 0 required)
    assert mm.is_orthogonally_separable(np.array([[1.0, 0], [0, 1]]), np.array([1, -1]))
    assert not mm.is_orthogonally_separable(np.array([[1.0, 0], [0, 1], [-1, -1]]), np.array([1, 1, -1]))


@pytest.mark.parametrize("X, y", [
    (np.array([[1.0, np.nan], [-1, 0]]), np.array([1, -1])),   # NaN
    (np.ones((2, 2)), np.array([1, 2])),                        # bad label
    (np.ones((2, 2)), np.array([1, 1])),                        # one class
    (np.ones((3, 2)), np.array([1, -1])),                       # length mismatch
    (np.ones(4), np.array([1, -1, 1, -1])),                     # 1-D X
    (np.empty((0, 2)), np.empty(0)),                            # empty
])
def test_is_orthogonally_separable_bad_input(X, y):
    with pytest.raises(ValueError):
        mm.is_orthogonally_separable(X, y)


def test_max_margin_matches_independent_qp_and_kkt(data):
    X, y = data
    for Xc in (X[y > 0], X[y < 0]):
        w, alpha = mm.max_margin(Xc, return_alpha=True)
        assert np.linalg.norm(w - slsqp_max_margin(Xc)) < 1e-8
        margins = Xc @ w
        assert abs(margins.min() - 1) < 1e-9                       # primal feasible, tight
        assert (alpha >= 0).all() and np.allclose(Xc.T @ alpha, w, atol=1e-12)   # dual, stationarity
        assert np.abs(alpha * (margins - 1)).max() < 1e-12          # complementary slackness


def test_max_margin_simple_cases():
    assert np.allclose(mm.max_margin(np.array([[2.0, 0.0]])), [0.5, 0.0])
    # two orthogonal unit points: w = (1, 1)
    assert np.allclose(mm.max_margin(np.eye(2)), [1.0, 1.0])
    # a point that is not a support vector does not change w
    assert np.allclose(mm.max_margin(np.array([[1.0, 0], [0, 1], [3, 3]])), [1.0, 1.0])


@pytest.mark.parametrize("X", [np.array([[1.0, 0], [-1, 0]]), np.zeros((1, 3)),
                               np.array([[1.0, 1], [-1, 0], [0, -1]])])
def test_max_margin_infeasible(X):
    with pytest.raises(ValueError, match="infeasible"):
        mm.max_margin(X)


@pytest.mark.parametrize("X", [np.array([1.0, 2.0]), np.array([[np.inf, 1.0]]), np.empty((0, 3)),
                               np.array([["a", "b"]]), np.array([[1 + 1j, 0]])])
def test_max_margin_bad_input(X):
    with pytest.raises(ValueError):
        mm.max_margin(X)


def test_pm_max_margin_sign_convention(data):
    X, y = data
    w_plus, w_minus = mm.pm_max_margin(X, y)
    assert (X[y > 0] @ w_plus).min() == pytest.approx(1, abs=1e-9)
    assert (X[y < 0] @ w_minus).min() == pytest.approx(1, abs=1e-9)   # not y_i x_i
    assert np.allclose(w_minus, mm.max_margin(X[y < 0]))
    cos = w_plus @ w_minus / np.linalg.norm(w_plus) / np.linalg.norm(w_minus)
    assert -0.95 < cos < -0.80          # the z-filter keeps w_+ away from -w_- (thesis §3.4.1)
    with pytest.raises(ValueError):
        mm.pm_max_margin(X, np.ones(len(y)))


def test_extremal_sectors():
    X = np.array([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    y = np.array([1, 1, -1, -1])
    sp, sm = mm.extremal_sectors(X, y)
    # x_4 = (0,-1) has x_4.x_1 = 0 but x_4.x_2 < 0 -> -1; every positive touches x_3 -> -1
    assert sp.tolist() == [1, 1, -1, -1] and sm.tolist() == [-1, -1, 1, 1]
    X0 = np.array([[1.0, 0.0], [0.0, -1.0]])
    sp0, sm0 = mm.extremal_sectors(X0, np.array([1, -1]))
    assert sp0.tolist() == [1, 0] and sm0.tolist() == [0, 1]
    # beyond orthogonal separability (3.13) leaves a case open: x_3 = (1, 0.5) has inner products 1 and 0.5
    # with the positives, none negative; it gets -1 (off on every negative), not 0 (a hyperplane); x_4 is
    # orthogonal to the first positive only (and has 2 with the second) -> -1 as well; x_5 is orthogonal to
    # both positives -> 0
    X3 = np.array([[1.0, 0, 0], [0, 1, 0], [1, 0.5, 0], [0, 2, -1], [0, 0, -1]])
    y3 = np.array([1, 1, -1, -1, -1])
    sp3, sm3 = mm.extremal_sectors(X3, y3)
    assert sp3.tolist() == [1, 1, -1, -1, 0]
    # sigma_minus: neither positive is orthogonal to every negative (both have positive inner products) -> -1
    assert sm3.tolist() == [-1, -1, 1, 1, 1]
    assert sp3.dtype == np.int8 and sm3.dtype == np.int8
    with pytest.raises(ValueError):
        mm.extremal_sectors(X, y[:3])


def test_activation_patterns():
    W = np.array([[1.0, 0.0], [0.0, -1.0]])
    X = np.array([[1.0, 1.0], [-1.0, 0.0]])
    assert mm.activation_patterns(W, X).tolist() == [[1, -1], [-1, 0]]
    with pytest.raises(ValueError):
        mm.activation_patterns(W, np.ones((2, 3)))


# ---- networks and training ---------------------------------------------------------------------

def test_inits():
    W, a = mm.default_init([(100, 20), (1, 100)], n_models=3, seed=1, scale=0.05)
    assert W.shape == (3, 100, 20) and a.shape == (3, 100)
    assert W.abs().max() <= 0.05 / np.sqrt(20) and a.abs().max() <= 0.05 / 10
    assert torch.equal(W, mm.default_init([(100, 20), (1, 100)], 3, 1, 0.05)[0])
    Wb, ab = mm.balanced_init(2, 50, 20, lam=1e-3, seed=0)
    assert torch.allclose(Wb.norm(dim=2), ab.abs())
    with pytest.raises(ValueError):
        mm.default_init([(3, 2)], 1, 0, scale=0.0)
    with pytest.raises(ValueError):
        mm.balanced_init(1, 3, 2, lam=-1.0, seed=0)


def test_forwards_match_explicit_formulas():
    X = torch.randn(2, 7, 5, dtype=torch.float64)
    W, a = mm.default_init([(4, 5), (1, 4)], 2, 0, 1.0)
    out = mm.two_layer_forward([W, a], X)
    assert torch.allclose(out[1], torch.relu(X[1] @ W[1].T) @ a[1])
    params = mm.default_init(mm.residual_shapes(5, 4, 4), 2, 0, 1.0)
    h1 = X[0] @ params[0][0].T
    h2 = h1 + torch.relu(h1) @ params[1][0].T
    h3 = h2 + torch.relu(h2) @ params[2][0].T
    assert torch.allclose(mm.residual_forward(params, X)[0], torch.relu(h3) @ params[3][0])
    with pytest.raises(ValueError):
        mm.residual_shapes(5, 4, 1)


def test_train_sgd_decreases_loss_and_logs(data):
    X, y = data
    Xt, yt = torch.tensor(X[None]), torch.tensor(y[None])
    params = mm.default_init([(10, 20), (1, 10)], 1, 0, 1.0)
    before = torch.nn.functional.softplus(-yt * mm.two_layer_forward(params, Xt)).mean().item()
    log = mm.train_sgd(mm.two_layer_forward, params, Xt, yt, lr=0.1, batch_size=50, epochs=2, seed=0,
                       log_epochs=(0, 2), progress=False)
    after = torch.nn.functional.softplus(-yt * mm.two_layer_forward(params, Xt)).mean().item()
    assert after < before and set(log) == {0, 2} and torch.equal(log[2][0], params[0].detach())
    with pytest.raises(ValueError):
        mm.train_sgd(mm.two_layer_forward, params, Xt, yt, 0.1, 1000, 1, 0, progress=False)
    with pytest.raises(ValueError):
        mm.train_sgd(mm.two_layer_forward, params, Xt[0], yt, 0.1, 50, 1, 0, progress=False)
    with pytest.raises(ValueError):
        mm.train_sgd(mm.two_layer_forward, params, Xt, 2 * yt, 0.1, 50, 1, 0, progress=False)


def test_log_loss_is_stable():
    X = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    y = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    params = [torch.tensor([[[2.0, 0.0], [0.0, 3.0]]], dtype=torch.float64),
              torch.tensor([[1.5, -0.5]], dtype=torch.float64)]
    m = torch.tensor([3.0, 1.5], dtype=torch.float64)
    expected = torch.log(torch.nn.functional.softplus(-m).sum())
    assert torch.allclose(mm.log_loss(mm.two_layer_forward, params, X, y)[0], expected)
    huge = [(p * 1e4).requires_grad_() for p in params]      # margins ~1e8: log loss ~ -min margin
    val = mm.log_loss(mm.two_layer_forward, huge, X, y)[0]
    assert torch.isfinite(val) and val.item() == pytest.approx(-1.5e8, rel=1e-6)
    grads = torch.autograd.grad(val, huge)
    assert all(torch.isfinite(g).all() for g in grads)


def test_normalized_gd_grows_margin_and_keeps_balance(data):
    X, y = data
    Xt, yt = torch.tensor(X[None]), torch.tensor(y[None])
    params = mm.balanced_init(1, 8, 20, lam=1e-3, seed=0)
    log = mm.train_normalized_gd(mm.two_layer_forward, params, Xt, yt, [(0.02, 190), (0.01, 10)],
                                 log_steps=(0, 200), progress=False)
    W, a = (p.detach().numpy()[0] for p in params)
    assert set(log) == {0, 200}
    assert mm.log_loss(mm.two_layer_forward, params, Xt, yt).item() < np.log(500 * np.log(2)) - 0.02
    # Lemma B.4: |a_j| = ||w_j|| is conserved by gradient flow (up to the step size here)
    assert np.abs(np.abs(a) - np.linalg.norm(W, axis=1)).max() < 1e-3 * np.linalg.norm(W, axis=1).max()
    with pytest.raises(ValueError):
        mm.train_normalized_gd(mm.two_layer_forward, params, Xt, yt, [(-1.0, 1)])


# ---- metrics -----------------------------------------------------------------------------------

def test_metrics_at_the_exact_limit(data):
    """At the KKT point of Lemma B.6 every metric takes its predicted value exactly."""
    X, y = data
    w_plus, w_minus = mm.pm_max_margin(X, y)
    W, a = exact_limit(w_plus, w_minus)
    assert np.allclose(mm.neuron_alignment(W, a, w_plus, w_minus), 1)
    assert np.allclose(mm.neuron_alignment(W, a, w_plus, w_minus, mode="closest"), 1)
    R_W, R_a = mm.theorem_residuals(W, a, w_plus, w_minus)
    assert R_W < 1e-12 and R_a < 1e-12
    Xt = np.random.default_rng(0).standard_normal((100, 20))
    assert np.allclose(mm.normalized_output(W, a, Xt), mm.predicted_function(Xt, w_plus, w_minus))
    gamma_bar = (y * mm.normalized_output(W, a, X)).min()
    assert gamma_bar == pytest.approx(mm.gamma_star(w_plus, w_minus), rel=1e-9)
    assert mm.norm_split(W, a) == pytest.approx(np.linalg.norm(w_plus) / np.linalg.norm(w_minus))
    # swapping the output signs breaks the limit
    assert mm.theorem_residuals(W, -a, w_plus, w_minus)[0] > 0.5


def test_metrics_bad_input(data):
    X, y = data
    w_plus, w_minus = mm.pm_max_margin(X, y)
    W, a = exact_limit(w_plus, w_minus)
    with pytest.raises(ValueError):
        mm.neuron_alignment(W, a, w_plus, w_minus, mode="nearest")
    with pytest.raises(ValueError):
        mm.neuron_alignment(W, a[:-1], w_plus, w_minus)
    with pytest.raises(ValueError):
        mm.theorem_residuals(W, a, w_plus[:-1], w_minus)
    with pytest.raises(ValueError):
        mm.gamma_star(w_plus, np.full(20, np.nan))
    with pytest.raises(ValueError):
        mm.predicted_function(X[:, :3], w_plus, w_minus)
    with pytest.raises(ValueError):
        mm.normalized_output(W, a, X[:, :3])
    with pytest.raises(ValueError):
        mm.norm_split(W, np.abs(a))
    with pytest.raises(ValueError):
        mm.top_singular_values(W, k=0)
    with pytest.raises(ValueError):
        mm.project_top2(W[:1])


def test_singular_values_and_projection():
    rng = np.random.default_rng(0)
    W = np.outer(rng.uniform(1, 2, 30), [1.0, 0, 0]) + np.outer(rng.uniform(0, 1, 30), [0, 1.0, 0])
    sv = mm.top_singular_values(W, k=3)
    assert sv.shape == (3,) and sv[2] < 1e-12 < sv[1] <= sv[0]
    P = mm.project_top2(W)
    assert P.shape == (30, 2) and np.allclose(np.linalg.norm(P, axis=1), np.linalg.norm(W, axis=1))


def test_table31_cnn_shapes_and_training():
    net = mm.Table31CNN(image_size=8, seed=0)
    assert net.layers[6].in_features == 64 * 2 * 2 and net.layers[7].out_features == 1
    X = torch.randn(20, 1, 8, 8)
    y = torch.where(torch.arange(20) % 2 == 0, 1.0, -1.0)
    feats = net.features(X)
    assert len(feats) == 9 and feats[7].shape == (20, 128) and (feats[7] >= 0).all()
    losses = mm.train_adam(net, X, y, epochs=2, batch_size=8, progress=False)
    assert len(losses) == 2 and np.isfinite(losses).all()
    with pytest.raises(ValueError):
        net.features(torch.randn(2, 8, 8))
    with pytest.raises(ValueError):
        mm.Table31CNN(image_size=2)
    with pytest.raises(ValueError):
        mm.train_adam(net, X, 2 * y, epochs=1)


# ---- the paper-scale configuration: one training step with the paper's shapes ---------------------

def test_paper_scale_one_step():
    cfg = mm.CONFIGS.paper
    X, y = mm.orthogonally_separable_gaussian(cfg.n, cfg.d, seed=0)
    Xt, yt = torch.tensor(X[None]), torch.tensor(y[None])
    two = mm.default_init([(cfg.width, cfg.d), (1, cfg.width)], 1, 0, cfg.init_scale)
    mm.train_sgd(mm.two_layer_forward, two, Xt, yt, cfg.sgd_lr, cfg.sgd_batch, 1, 0, progress=False)
    mm.train_normalized_gd(mm.two_layer_forward, two, Xt, yt, [(cfg.ngd_schedule[0][0], 1)], progress=False)
    res = mm.default_init(mm.residual_shapes(cfg.d, cfg.width, cfg.resnet_depth), 1, 0, cfg.init_scale)
    mm.train_sgd(mm.residual_forward, res, Xt, yt, cfg.sgd_lr, cfg.sgd_batch, 1, 0, progress=False)
    assert all(torch.isfinite(p).all() for p in two + res)
    net = mm.Table31CNN(image_size=cfg.cnn_image_size, seed=0)
    assert net.layers[6].in_features == 3136                    # fc(3136, 128), Table 3.1
    Xi = torch.rand(cfg.cnn_batch, 1, cfg.cnn_image_size, cfg.cnn_image_size)
    yi = torch.where(torch.arange(cfg.cnn_batch) % 2 == 0, 1.0, -1.0)
    losses = mm.train_adam(net, Xi, yi, epochs=1, batch_size=cfg.cnn_batch, lr=cfg.cnn_lr, progress=False)
    assert np.isfinite(losses[0])


def test_two_layer_report(data):
    X, y = data
    w_plus, w_minus = mm.pm_max_margin(X, y)
    W, a = exact_limit(w_plus, w_minus)
    W = np.vstack([W, 1e-6 * np.ones((1, 20))])      # plus one tiny (dead-size) neuron
    a = np.r_[a, 1e-6]
    Xt = np.random.default_rng(1).standard_normal((200, 20))
    r = mm.two_layer_report(W, a, X, y, Xt)
    assert r["n_big"] == 5 and r["min_corr"] == pytest.approx(1) and r["pattern_frac"] == 1.0
    assert r["relF"] < 1e-6 and r["margin_ratio"] == pytest.approx(1, abs=1e-6)
    assert r["split"] == pytest.approx(r["split_pred"]) and r["sv_ratio_3"] < 1e-5
    assert r["imbalance"] < 1e-9
    assert r["median_corr_mean"] < 0.99                 # the class mean is not the max-margin direction
    with pytest.raises(ValueError):
        mm.two_layer_report(W, a, X, y[:-1], Xt)


# ---- extremal sectors and directions (Lemmas 3.1/3.2) -------------------------------------------

def _sampled_slack(X, sigma, n=200000, seed=0):
    """Sampling, an independent computation: random unit vectors (general position, so never on a
    hyperplane w.x_i = 0); returns how many have the pattern sigma and the best sampled
    min_i sigma_i w.x_i / ||x_i|| over those (the slack is at least that, and close to it in 2-D)."""
    U = np.random.default_rng(seed).standard_normal((n, X.shape[1]))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    P = U @ X.T
    inside = (np.sign(P) == sigma).all(axis=1)
    best = (sigma * P / np.linalg.norm(X, axis=1))[inside].min(axis=1).max() if inside.any() else 0.0
    return int(inside.sum()), float(best)


def _lp_strictly_feasible(X, sigma):
    """A second algorithm for the +-1 patterns: the LP max t s.t. sigma_i w.x_i >= t, -1 <= w_k <= 1."""
    d = X.shape[1]
    res = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.c_[-(sigma[:, None] * X), np.ones(len(X))],
                  b_ub=np.zeros(len(X)), bounds=[(-1, 1)] * d + [(None, None)], method="highs")
    return -res.fun > 1e-9


def _slsqp_slack(X, sigma):
    """A third: SLSQP on max t s.t. sigma_i w.x_i / ||x_i|| >= t, ||w|| <= 1, from several starts."""
    Xn = sigma[:, None] * X / np.linalg.norm(X, axis=1, keepdims=True)
    best = -np.inf
    for start in np.random.default_rng(0).standard_normal((5, X.shape[1])):
        v0 = np.r_[start / np.linalg.norm(start), 0.0]
        res = minimize(lambda v: -v[-1], v0, jac=lambda v: np.r_[np.zeros(len(v) - 1), -1.0], method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda v: Xn @ v[:-1] - v[-1]},
                                    {"type": "ineq", "fun": lambda v: 1 - v[:-1] @ v[:-1]}],
                       options=dict(ftol=1e-14, maxiter=500))
        best = max(best, -res.fun)
    return best


def test_sector_is_feasible_matches_sampling_in_2d():
    """Full-dimensional sectors in R^2 against sampling: a sector that sampled directions reach has a
    slack at least their best one (and within 1e-3 of it); a sector none reaches has slack 0."""
    X2 = np.array([[1.0, 0], [0, 1], [1, 1], [-1, 2]])
    seen = {True: 0, False: 0}
    for sigma in itertools.product((-1, 1), repeat=4):
        sigma = np.array(sigma)
        ok, slack = mm.sector_is_feasible(X2, sigma, return_slack=True)
        hits, best = _sampled_slack(X2, sigma)
        assert ok == (hits > 0) == (slack > 0) == _lp_strictly_feasible(X2, sigma), sigma
        assert best - 1e-12 <= slack <= best + 1e-3, (sigma, slack, best)
        seen[ok] += 1
    assert seen[True] == 8 and seen[False] == 8   # 4 lines through 0 cut the plane into 8 sectors


def test_sector_is_feasible_is_full_dimensional_only():
    """A zero entry on a non-zero x_i is a hyperplane: non-empty (w = (0, 1) lies in it) but of measure
    zero, so not full-dimensional (the old equality test counted it); sampling never lands there."""
    X2 = np.array([[1.0, 0], [0, 1], [1, 1], [-1, 2]])
    for sigma in ([0, 1, 1, 1], [1, -1, 0, -1], [0, 0, 0, 0]):
        assert mm.sector_is_feasible(X2, np.array(sigma), return_slack=True) == (False, 0.0)
        assert _sampled_slack(X2, np.array(sigma))[0] == 0
    assert (np.array([0, 1, 1, 1]) == np.sign(np.array([0.0, 1]) @ X2.T)).all()   # that hyperplane is not empty
    # a zero row: sign(w.0) = 0 always, so sigma 0 there leaves the rest free and sigma != 0 empties the sector
    Xz = np.vstack([X2, np.zeros(2)])
    assert mm.sector_is_feasible(Xz, np.array([1, 1, 1, 1, 0]), return_slack=True) == \
        mm.sector_is_feasible(X2, np.array([1, 1, 1, 1]), return_slack=True)
    assert mm.sector_is_feasible(Xz, np.array([1, 1, 1, 1, 1]), return_slack=True) == (False, 0.0)
    assert mm.sector_is_feasible(np.zeros((2, 3)), np.array([0, 0]), return_slack=True) == (True, 1.0)
    assert mm.sector_is_feasible(X2, [1, 1, 1, 1]) is True


def test_sector_slack_matches_slsqp_and_lp(data):
    """In R^20 (where sampling cannot reach thin sectors) the slack equals an independent SLSQP optimum,
    and the boolean an LP's. The patterns: the labels of orthogonally separable data (a wide sector),
    of the same data with noise (not orthogonally separable), random signs (mostly empty), and the
    pattern of a random direction (non-empty by construction)."""
    rng = np.random.default_rng(1)
    X, y = data
    Xs = X[:60] + 0.6 * rng.standard_normal((60, 20))
    cases = [(X[:80], np.sign(y[:80])), (X[:80], -np.sign(y[:80])), (Xs, np.sign(y[:60])), (Xs, -np.sign(y[:60])),
             (Xs, rng.choice([-1.0, 1.0], 60)), (Xs, np.sign(Xs @ rng.standard_normal(20)))]
    outcomes = []
    for Xc, sigma in cases:
        ok, slack = mm.sector_is_feasible(Xc, sigma, return_slack=True)
        assert ok == _lp_strictly_feasible(Xc, sigma) == (slack > 0)
        assert slack == pytest.approx(max(_slsqp_slack(Xc, sigma), 0.0), abs=1e-6)
        outcomes.append(ok)
    assert outcomes[:2] == [True, True] and outcomes[-1] and not outcomes[4]
    with pytest.raises(ValueError):
        mm.sector_is_feasible(X[:4], np.array([1, 2, 0, 1]))
    with pytest.raises(ValueError):
        mm.sector_is_feasible(X[:4], np.array([1, 0, 1]))
    with pytest.raises(ValueError, match=r"^return_slack must be"):
        mm.sector_is_feasible(X[:4], np.ones(4), return_slack="yes")


def test_G_value():
    X = np.array([[1.0, 0], [0, 1], [-1, -1]])
    y = np.array([1, 1, -1])
    W = np.array([[1.0, 0], [-1, 0], [0.6, 0.8]])
    assert np.allclose(mm.G_value(W, X, y), [0.5, -0.5, 0.7])
    with pytest.raises(ValueError):
        mm.G_value(np.ones((2, 3)), X, y)


def test_extremal_directions_orthogonally_separable(data):
    """Lemma 3.2: exactly one positive and one negative extremal direction; for these data they are
    the normalised class sums, inside the sectors sigma+- of eqs. (3.13)/(3.14)."""
    X, y = data
    for sign, sigma in zip((1, -1), mm.extremal_sectors(X, y)):
        dirs, counts, unresolved = mm.extremal_directions(X, sign * y, n_starts=200, seed=0)
        assert dirs.shape == (1, 20) and counts.tolist() == [200] and unresolved == 0
        mean = X[y == sign].sum(0)
        assert np.allclose(dirs[0], mean / np.linalg.norm(mean), atol=1e-12)
        assert (mm.activation_patterns(dirs, X)[0] == sigma).all()


def test_extremal_directions_match_a_2d_scan():
    """In R^2 the strict local maxima of G on the circle can be found by scanning angles (an
    independent computation). The fixed-point search finds exactly those inside a sector; maxima on
    a sector boundary (some w.x_i = 0, a kink of G) it leaves unresolved, as documented."""
    theta = np.linspace(-np.pi, np.pi, 200001)[:-1]
    U = np.c_[np.cos(theta), np.sin(theta)]
    n_interior = []
    for k, y in enumerate([np.array([1, 1, -1, 1, -1, 1]), np.array([1, -1, 1, -1, 1, -1])] * 4):
        X = np.random.default_rng(k).standard_normal((6, 2))
        G = mm.G_value(U, X, y)
        is_max = (G > np.roll(G, 1)) & (G > np.roll(G, -1)) & (G > 0)
        interior = U[is_max][np.abs(U[is_max] @ X.T).min(axis=1) > 1e-3]
        dirs, counts, unresolved = mm.extremal_directions(X, y, n_starts=400, seed=0)
        assert len(dirs) == len(interior) and counts.sum() + unresolved == 400
        for u in interior:
            assert np.max(dirs @ u) > 1 - 1e-8
        n_interior.append(len(interior))
    assert max(n_interior) >= 2  # the scan covers data with several extremal directions
    with pytest.raises(ValueError):
        mm.extremal_directions(X, y, n_starts=0)


def test_relative_normalized_gd_step(data):
    """relative=True: each model's first step has length eta ||theta|| along -grad log(loss)."""
    X, y = data
    Xt, yt = torch.tensor(np.stack([X[:100], X[100:200]])), torch.tensor(np.stack([y[:100], y[100:200]]))
    params = mm.default_init(mm.residual_shapes(20, 10, 4), 2, seed=0, scale=0.5)
    before = [p.detach().clone() for p in params]
    grads = torch.autograd.grad(mm.log_loss(mm.residual_forward, params, Xt, yt).sum(), params)
    mm.train_normalized_gd(mm.residual_forward, params, Xt, yt, [(0.01, 1)], progress=False, relative=True)
    for s in range(2):
        step = torch.cat([(p.detach()[s] - b[s]).ravel() for p, b in zip(params, before)])
        theta = torch.cat([b[s].ravel() for b in before])
        g = torch.cat([gr[s].ravel() for gr in grads])
        assert float(step.norm() / theta.norm()) == pytest.approx(0.01, rel=1e-9)
        assert float(-step @ g / step.norm() / g.norm()) == pytest.approx(1.0, abs=1e-12)
    loss0 = mm.log_loss(mm.residual_forward, params, Xt, yt).sum().item()
    mm.train_normalized_gd(mm.residual_forward, params, Xt, yt, [(0.01, 50)], progress=False, relative=True)
    assert mm.log_loss(mm.residual_forward, params, Xt, yt).sum().item() < loss0
    with pytest.raises(TypeError):
        mm.train_normalized_gd(mm.residual_forward, params, Xt, yt, [(0.01, 1)], relative="yes")


def test_sampler_redraws_when_the_first_points_share_a_label():
    # seed 0, d = 3: the first 12 kept points all had label +1, and appending more points could never
    # change them (the sampler looped forever before the fix)
    X, y = mm.orthogonally_separable_gaussian(12, 3, seed=0)
    z = np.array([1.0, -1.0, 1.0])
    assert set(y) == {-1.0, 1.0} and X.shape == (12, 3)
    assert np.all(y[:, None] * X >= 0) and np.all(X @ z >= 0)  # +1 in the first orthant, -1 opposite


# ---- every error message names its argument (what a user reads) --------------------------------

_X = np.array([[1.0, 0.5], [0.5, 1.0], [-1.0, -0.5], [-0.5, -1.0]])
_y = np.array([1.0, 1.0, -1.0, -1.0])
_W = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
_a = np.array([1.0, 1.0, -1.0])
_P = lambda: mm.default_init([(3, 2), (1, 3)], 2, 0, 0.1)  # noqa: E731
_Xt = torch.tensor(_X).expand(2, -1, -1)
_yt = torch.tensor(_y).expand(2, -1)
_MM_BAD = [
    (lambda: mm.max_margin("abc"), r"^X must be"),
    (lambda: mm.max_margin(np.ones(3)), r"^X must be an array with 2 dimensions"),
    (lambda: mm.G_value(np.ones(3), _X, _y), r"^W must be an array with 2 dimensions"),
    (lambda: mm.pm_max_margin(_X, _y[:3]), r"^y must have shape \(4,\) \(one label per row of X\), got \(3,\)$"),
    (lambda: mm.pm_max_margin(_X, [1.0, 2.0, -1.0, -1.0]), r"^y must contain only the labels \+1 and -1$"),
    (lambda: mm.pm_max_margin(_X, [1.0, float("nan"), -1.0, -1.0]), r"^y must contain only the labels \+1 and -1$"),
    (lambda: mm.pm_max_margin(_X, np.ones(4)), r"^y must contain both classes \(\+1 and -1\)$"),
    (lambda: mm.pm_max_margin(_X, "abcd"), r"^y must be"),
    (lambda: mm.gamma_star([1.0, 0.0], [0.0]), r"^w_minus must be an array of shape \(2,\)"),
    (lambda: mm.gamma_star("ab", [0.0, 1.0]), r"^w_plus must be"),
    (lambda: mm.norm_split(_W, [1.0, 1.0]), r"^a must be a finite vector with one entry per row of W \(3\), got"),
    (lambda: mm.norm_split(_W, [1.0, float("nan"), 1.0]), r"^a must be a finite vector with one entry per row of W \(3\)"),
    (lambda: mm.norm_split(_W, np.ones(3)), r"^norm_split needs neurons with both signs of a$"),
    (lambda: mm.orthogonally_separable_gaussian(1, 3), r"^n must be"),
    (lambda: mm.orthogonally_separable_gaussian(5, 1), r"^d must be"),
    (lambda: mm.orthogonally_separable_gaussian(5, 3, seed=-1), r"^seed must be"),
    (lambda: mm.is_orthogonally_separable(_X, _y, tol=-1.0), r"^tol must be"),
    (lambda: mm.max_margin(np.array([[1.0], [-1.0]])), r"^infeasible: no w satisfies X @ w >= 1"),
    (lambda: mm.activation_patterns(np.ones((2, 3)), _X), r"^W has 3 columns but X has 2$"),
    (lambda: mm.G_value(np.ones((2, 3)), _X, _y), r"^W has 3 columns but X has 2$"),
    (lambda: mm.sector_is_feasible(_X, [1.0, 1.0, 2.0, 0.0]), r"^sigma must hold only -1, 0 and 1, got"),
    (lambda: mm.sector_is_feasible(_X, [1.0, 1.0]), r"^sigma must be an array of shape \(4,\)"),
    (lambda: mm.extremal_directions(_X, _y, n_starts=0), r"^n_starts must be"),
    (lambda: mm.extremal_directions(_X, _y, max_iter=0), r"^max_iter must be"),
    (lambda: mm.extremal_directions(_X, _y, seed="x"), r"^seed must be"),
    (lambda: mm.default_init([(3, 2)], 2, 0, 0.0), r"^scale must be"),
    (lambda: mm.default_init([(3, 2)], 0, 0, 0.1), r"^n_models must be"),
    (lambda: mm.default_init([(3, 2)], 2, -1, 0.1), r"^seed must be"),
    (lambda: mm.default_init([], 2, 0, 0.1), r"^shapes must be"),
    (lambda: mm.default_init([3], 2, 0, 0.1), r"^shapes\[0\] must be a pair \(d_out, d_in\), got 3$"),
    (lambda: mm.default_init([(3, 2), (0, 3)], 2, 0, 0.1), r"^shapes\[1\] d_out must be"),
    (lambda: mm.default_init([(3, 0)], 2, 0, 0.1), r"^shapes\[0\] d_in must be"),
    (lambda: mm.balanced_init(2, 3, 2, 0.0, 0), r"^lam must be"),
    (lambda: mm.balanced_init(0, 3, 2, 0.1, 0), r"^n_models must be"),
    (lambda: mm.balanced_init(2, 0, 2, 0.1, 0), r"^width must be"),
    (lambda: mm.balanced_init(2, 3, 0, 0.1, 0), r"^d must be"),
    (lambda: mm.balanced_init(2, 3, 2, 0.1, -1), r"^seed must be"),
    (lambda: mm.two_layer_forward(_P()[:1], _Xt), r"^params must be"),
    (lambda: mm.two_layer_forward([_P()[0], "a"], _Xt), r"^params\[1\] must be a torch.Tensor"),
    (lambda: mm.two_layer_forward([_P()[0].long(), _P()[1]], _Xt), r"^params\[0\] must be a floating-point tensor"),
    (lambda: mm.two_layer_forward([_P()[0][0], _P()[1]], _Xt), r"^params\[0\] must be W of shape \(S, p, d\), got"),
    (lambda: mm.two_layer_forward(_P() + [_P()[1]], _Xt), r"^params must be \[W \(S, p, d\), a \(S, p\)\], got shapes \[\(2, 3, 2\), \(2, 3\), \(2, 3\)\]$"),
    (lambda: mm.two_layer_forward(_P(), torch.ones(4, 3, dtype=torch.float64)),
     r"^X must have 2 columns \(the d of params\[0\]\), got"),
    (lambda: mm.two_layer_forward(_P(), torch.ones(4, dtype=torch.float64)), r"^X must be an array with 2 or 3 dimensions"),
    (lambda: mm.residual_shapes(2, 3, 1), r"^depth must be"),
    (lambda: mm.residual_shapes(0, 3, 2), r"^d must be"),
    (lambda: mm.residual_shapes(2, 0, 2), r"^width must be"),
    (lambda: mm.log_loss(mm.two_layer_forward, _P(), _Xt[:1], _yt), r"^X must be \(2, n, d\) and y \(2, n\) for 2 models, got"),
    (lambda: mm.log_loss(mm.two_layer_forward, _P(), _Xt, _yt * 2), r"^X must be finite and y must hold labels \+-1$"),
    (lambda: mm.log_loss(None, _P(), _Xt, _yt), r"^forward must be"),
    (lambda: mm.train_sgd(mm.two_layer_forward, _P(), _Xt, _yt, 0.0, 2, 1, 0, progress=False), r"^lr must be"),
    (lambda: mm.train_sgd(mm.two_layer_forward, _P(), _Xt, _yt, 0.1, 5, 1, 0, progress=False), r"^batch_size must be"),
    (lambda: mm.train_sgd(mm.two_layer_forward, _P(), _Xt, _yt, 0.1, 2, -1, 0, progress=False), r"^epochs must be"),
    (lambda: mm.train_sgd(mm.two_layer_forward, _P(), _Xt, _yt, 0.1, 2, 1, -1, progress=False), r"^seed must be"),
    (lambda: mm.train_sgd(3, _P(), _Xt, _yt, 0.1, 2, 1, 0, progress=False), r"^forward must be"),
    (lambda: mm.train_normalized_gd(mm.two_layer_forward, _P(), _Xt, _yt, [], progress=False), r"^schedule must be"),
    (lambda: mm.train_normalized_gd(mm.two_layer_forward, _P(), _Xt, _yt, [0.1], progress=False),
     r"^schedule must list \(eta, steps\) pairs, got"),
    (lambda: mm.train_normalized_gd(mm.two_layer_forward, _P(), _Xt, _yt, [(0.0, 2)], progress=False), r"^schedule eta must be"),
    (lambda: mm.train_normalized_gd(mm.two_layer_forward, _P(), _Xt, _yt, [(0.1, -2)], progress=False), r"^schedule steps must be"),
    (lambda: mm.train_normalized_gd(mm.two_layer_forward, _P(), _Xt, _yt, [(0.1, 2)], relative="x", progress=False),
     r"^relative must be"),
    (lambda: mm.train_normalized_gd("f", _P(), _Xt, _yt, [(0.1, 2)], progress=False), r"^forward must be"),
    (lambda: mm.neuron_alignment(_W, _a, [1.0, 0.0], [0.0, 1.0], mode="x"), r"^mode must be one of"),
    (lambda: mm.normalized_output(_W, _a, np.ones((2, 3))), r"^X has 3 columns but W has 2$"),
    (lambda: mm.top_singular_values(_W, k=0), r"^k must be"),
    (lambda: mm.project_top2(np.ones((1, 2))), r"^W needs at least 2 rows and 2 columns, got \(1, 2\)$"),
    (lambda: mm.Table31CNN(image_size=3), r"^image_size must be an int >= 4, got 3$"),
    (lambda: mm.Table31CNN(image_size=8, fc_scale=0.0), r"^fc_scale must be"),
    (lambda: mm.Table31CNN(image_size=8, seed=-1), r"^seed must be"),
    (lambda: mm.Table31CNN(image_size=8)(torch.ones(2, 8, 8)), r"^X must be images of shape \(n, 1, H, W\), got \(2, 8, 8\)$"),
    (lambda: mm.Table31CNN(image_size=8)("abc"), r"^X must be a torch.Tensor"),
    (lambda: mm.train_adam("m", torch.ones(2, 1, 8, 8), torch.ones(2), 1, progress=False), r"^model must be a torch.nn.Module"),
    (lambda: mm.train_adam(mm.Table31CNN(8), "abc", torch.ones(2), 1, progress=False), r"^X must be"),
    (lambda: mm.train_adam(mm.Table31CNN(8), torch.ones(2, 1, 8, 8), "abc", 1, progress=False), r"^y must be"),
    (lambda: mm.train_adam(mm.Table31CNN(8), torch.ones(2, 1, 8, 8), torch.ones(2), 0, progress=False), r"^epochs must be"),
    (lambda: mm.train_adam(mm.Table31CNN(8), torch.ones(2, 1, 8, 8), torch.ones(2), 1, batch_size=0, progress=False),
     r"^batch_size must be"),
    (lambda: mm.train_adam(mm.Table31CNN(8), torch.ones(2, 1, 8, 8), torch.ones(2), 1, lr=0.0, progress=False), r"^lr must be"),
    (lambda: mm.train_adam(mm.Table31CNN(8), torch.ones(2, 1, 8, 8), torch.ones(2), 1, seed=-1, progress=False), r"^seed must be"),
    (lambda: mm.train_adam(mm.Table31CNN(8), torch.ones(2, 1, 8, 8), torch.ones(3), 1, progress=False),
     r"^X and y must be non-empty, of equal length, with labels \+-1$"),
    (lambda: mm.two_layer_report(_W, _a, _X, _y, np.ones((2, 3))), r"^X_test must have 2 columns like X, got"),
    (lambda: mm.two_layer_report(_W, _a, _X, _y, _X, big=1.5), r"^big must be"),
]


@pytest.mark.parametrize("i", range(len(_MM_BAD)))
def test_error_messages_name_the_argument(i):
    call, pattern = _MM_BAD[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


def test_metrics_by_hand_away_from_the_limit():
    # w_+ = (1, 0), w_- = (0, 2); neurons (1, 1) with a > 0, (0, 3) and (2, 0) with a < 0
    W, a = np.array([[1.0, 1.0], [0.0, 3.0], [2.0, 0.0]]), np.array([1.0, -1.0, -1.0])
    wp, wm = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    r2 = 1 / np.sqrt(2)
    assert np.allclose(mm.neuron_alignment(W, a, wp, wm), [r2, 1.0, 0.0])
    assert np.allclose(mm.neuron_alignment(W, a, wp, wm, mode="closest"), [r2, 1.0, 1.0])
    # ||W||_F^2 = 15; u_0 = 1/sqrt 15, z_1 = (6/sqrt 15)/4, z_2 = 0; the residual rows are
    # (0, 1)/sqrt 15, 0 and (2, 0)/sqrt 15, so R_W = sqrt(5/15)
    s = np.sqrt(15)
    R_W, R_a = mm.theorem_residuals(W, a, wp, wm)
    assert R_W == pytest.approx(np.sqrt(5 / 15))
    want_a = np.array([1, -1, -1]) / np.sqrt(3) - np.array([1 / s, -3 / s, 0.0])
    assert R_a == pytest.approx(np.linalg.norm(want_a))
    # x = (1, 1): relu(W x) = (2, 3, 2), times a = -3, over ||W||^2 + ||a||^2 = 18
    assert mm.normalized_output(W, a, [[1.0, 1.0]]).tolist() == pytest.approx([-1 / 6])
    assert mm.norm_split(W, a) == pytest.approx(2 / 13)
    assert mm.gamma_star(wp, wm) == pytest.approx(1 / 6)
    assert mm.predicted_function([[1.0, 1.0], [3.0, -1.0]], wp, wm).tolist() == pytest.approx([-1 / 6, 3 / 6])
    assert mm.top_singular_values([[3.0, 0.0], [0.0, 4.0]]).tolist() == pytest.approx([4.0, 3.0])
    assert mm.top_singular_values([[3.0, 0.0], [0.0, 4.0]], k=1).tolist() == pytest.approx([4.0])
    assert np.allclose(mm.project_top2([[3.0, 0.0], [0.0, 4.0]]), [[0.0, 3.0], [4.0, 0.0]])
    assert np.allclose(mm.project_top2([[-3.0, 0.0], [0.0, -4.0]]), [[0.0, -3.0], [-4.0, 0.0]])  # signs: sum of each v >= 0


def test_extremal_directions_defaults():
    # n_starts 1000, seed 0, max_iter 50 by default; in R^2 with two points both classes are found
    X, y = np.array([[1.0, 0.2], [-0.3, 1.0]]), np.array([1.0, -1.0])
    d, c, u = mm.extremal_directions(X, y)
    d0, c0, u0 = mm.extremal_directions(X, y, n_starts=1000, seed=0, max_iter=50)
    assert np.array_equal(d, d0) and np.array_equal(c, c0) and u == u0 and c.sum() + u == 1000
    assert np.allclose(d, [X[0] / np.linalg.norm(X[0])])  # G's maximum: along the positive point
    assert not np.array_equal(c, mm.extremal_directions(X, y, seed=1)[1])


def test_inits_fill_their_ranges():
    W, a = mm.default_init([(50, 16), (1, 50)], n_models=2, seed=3, scale=0.4)
    bound_W, bound_a = 0.4 / 4, 0.4 / np.sqrt(50)  # U(+-scale / sqrt(fan_in))
    for p, bound in ((W, bound_W), (a, bound_a)):
        assert p.dtype == torch.float64 and p.requires_grad
        p = p.detach()
        assert -bound <= float(p.min()) < -0.9 * bound and 0.9 * bound < float(p.max()) <= bound
        assert abs(float(p.mean())) < 0.1 * bound
    Wb, ab = mm.balanced_init(2, 40, 3, lam=0.25, seed=1)
    assert Wb.shape == (2, 40, 3) and ab.shape == (2, 40) and Wb.requires_grad and ab.requires_grad
    assert torch.allclose(Wb.norm(dim=2), torch.full((2, 40), 0.25, dtype=torch.float64))
    assert set(ab.detach().unique().tolist()) == {-0.25, 0.25}
    # directions spread over the sphere: each coordinate takes both signs
    assert (Wb.detach().reshape(-1, 3).min(0).values < 0).all() and (Wb.detach().reshape(-1, 3).max(0).values > 0).all()


# ---- issue 16: one training step against autograd; the trainers' bookkeeping by hand ---------------------

def _tiny_batch(S=2, n=6, d=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(S, n, d, generator=g, dtype=torch.float64)
    y = torch.where(torch.rand(S, n, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    y[:, 0], y[:, 1] = 1.0, -1.0
    return X, y


def test_train_sgd_one_step_is_a_gradient_step_on_the_mean_logistic_loss():
    X, y = _tiny_batch()
    params = mm.default_init([(4, 3), (1, 4)], 2, seed=1, scale=1.0)
    before = [p.detach().clone() for p in params]
    # batch = n: one step per epoch over a permutation of all points, so the step is the full-batch gradient
    loss = torch.nn.functional.softplus(-y * mm.two_layer_forward(params, X)).mean(1).sum()
    grads = torch.autograd.grad(loss, params)
    log = mm.train_sgd(mm.two_layer_forward, params, X, y, lr=0.3, batch_size=6, epochs=1, seed=0,
                       log_epochs=(1,), progress=False)
    for p, b, g in zip(params, before, grads):
        assert torch.allclose(p.detach(), b - 0.3 * g, atol=1e-12)
    assert list(log) == [1] and all(torch.equal(s, p.detach()) for s, p in zip(log[1], params))


def test_train_sgd_batches_drop_the_remainder_and_shuffle_per_model(monkeypatch):
    X, y = _tiny_batch(n=8)
    params = mm.default_init([(4, 3), (1, 4)], 2, seed=1, scale=1.0)
    seen = []

    def forward(p, Xb):
        seen.append(Xb.detach().clone())
        return mm.two_layer_forward(p, Xb)

    mm.train_sgd(forward, params, X, y, lr=0.1, batch_size=3, epochs=2, seed=5, progress=False)
    assert [b.shape[1] for b in seen] == [3, 3, 3, 3]  # 8 points: two batches of 3 per epoch, 2 points left out
    # each model draws its own permutation: argsort of uniform numbers, one row per model
    gen = torch.Generator().manual_seed(5)
    for e in range(2):
        perm = torch.argsort(torch.rand(2, 8, generator=gen), dim=1)
        for s in range(2):
            assert torch.equal(torch.cat([seen[2 * e][s], seen[2 * e + 1][s]]), X[s, perm[s, :6]])


def test_train_normalized_gd_step_is_eta_times_the_gradient_of_log_loss():
    X, y = _tiny_batch()
    params = mm.default_init([(4, 3), (1, 4)], 2, seed=2, scale=1.0)
    before = [p.detach().clone() for p in params]
    total = mm.log_loss(mm.two_layer_forward, params, X, y).sum()
    grads = torch.autograd.grad(total, params)
    log = mm.train_normalized_gd(mm.two_layer_forward, params, X, y, [(0.05, 1), (0.5, 0)], log_steps=(1, 2),
                                 progress=False)
    for p, b, g in zip(params, before, grads):
        assert torch.allclose(p.detach(), b - 0.05 * g, atol=1e-12)
    assert list(log) == [1]  # a phase of 0 steps adds none
    # the schedule's phases follow each other: step 2 uses the second eta
    params = [b.clone().requires_grad_() for b in before]
    mm.train_normalized_gd(mm.two_layer_forward, params, X, y, [(0.05, 1), (0.2, 1)], progress=False)
    mid = [b - 0.05 * g for b, g in zip(before, grads)]
    mid = [m.requires_grad_() for m in mid]
    g2 = torch.autograd.grad(mm.log_loss(mm.two_layer_forward, mid, X, y).sum(), mid)
    assert all(torch.allclose(p.detach(), m.detach() - 0.2 * g, atol=1e-12) for p, m, g in zip(params, mid, g2))


def test_log_loss_moderate_margins_and_both_branches():
    X = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], dtype=torch.float64)
    y = torch.tensor([[1.0, -1.0, 1.0]], dtype=torch.float64)
    W = torch.tensor([[[20.0, 0.0], [0.0, 2.0]]], dtype=torch.float64)
    a = torch.tensor([[2.0, -1.0]], dtype=torch.float64)
    m = torch.tensor([40.0, 2.0, 38.0], dtype=torch.float64)  # margins y h(x): two above 30, one below
    want = torch.log(torch.log1p(torch.exp(-m)).sum())
    assert mm.log_loss(mm.two_layer_forward, [W, a], X, y)[0].item() == pytest.approx(want.item(), rel=1e-12)
    assert mm.log_loss(mm.two_layer_forward, [W * 0, a], X, y)[0].item() == pytest.approx(np.log(3 * np.log(2)), rel=1e-12)


def test_forwards_share_X_and_residual_shapes():
    X = torch.randn(5, 3, dtype=torch.float64)
    W, a = mm.default_init([(4, 3), (1, 4)], 2, 0, 1.0)
    out = mm.two_layer_forward([W, a], X)
    assert out.shape == (2, 5) and torch.allclose(out[1], torch.relu(X @ W[1].T) @ a[1])
    assert mm.residual_shapes(3, 4, 2) == [(4, 3), (1, 4)]
    assert mm.residual_shapes(3, 4, 4) == [(4, 3), (4, 4), (4, 4), (1, 4)]
    params = mm.default_init(mm.residual_shapes(3, 4, 2), 2, 0, 1.0)
    assert torch.allclose(mm.residual_forward(params, X)[0], torch.relu(X @ params[0][0].T) @ params[1][0])
    f32 = mm.default_init([(2, 3)], 1, 0, 1.0, dtype=torch.float32)[0]
    assert f32.dtype == torch.float32 and f32.shape == (1, 2, 3)
    Wb, ab = mm.balanced_init(1, 3, 2, lam=0.5, seed=0, dtype=torch.float32)
    assert Wb.dtype == ab.dtype == torch.float32


def test_table31_cnn_layers_init_and_features():
    net = mm.Table31CNN(image_size=12, fc_scale=0.5, seed=3)
    convs = [l for l in net.layers if isinstance(l, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size[0], c.stride[0], c.padding[0]) for c in convs] == \
        [(32, 3, 1, 1), (32, 3, 1, 1), (32, 5, 2, 2), (64, 3, 1, 1), (64, 3, 1, 1), (64, 5, 2, 2)]
    assert net.layers[6].in_features == 64 * 3 * 3 and net.layers[7].in_features == 128  # 12 -> 6 -> 3
    for fc in net.layers[6:]:
        bound = 0.5 / fc.in_features ** 0.5  # PyTorch's U(+-1/sqrt(fan_in)) times fc_scale
        assert fc.weight.abs().max() <= bound and fc.weight.abs().max() > 0.9 * bound
        assert fc.bias.abs().max() <= bound
    w0 = convs[0].weight.abs().max()  # the convs keep PyTorch's default, U(+-1/sqrt(fan_in)), fan_in = 9
    assert 0.9 / 3 < w0 <= 1 / 3
    assert torch.equal(mm.Table31CNN(image_size=12, fc_scale=0.5, seed=3).layers[7].weight, net.layers[7].weight)
    X = torch.randn(4, 1, 12, 12)
    feats = net.features(X)
    assert torch.equal(feats[0], X.flatten(1)) and len(feats) == 9
    h = X
    for i, layer in enumerate(net.layers):
        h = layer(h.flatten(1) if isinstance(layer, torch.nn.Linear) else h)
        h = torch.relu(h) if i < 7 else h
        assert torch.allclose(feats[i + 1], h.flatten(1), atol=1e-6), i
    assert (feats[-1] < 0).any()  # no ReLU on the output
    assert torch.allclose(net(X), feats[-1][:, 0]) and net(X).shape == (4,)
    assert net.features(torch.empty(0, 1, 12, 12))[-1].shape == (0, 1)
    # pre_activation=True: layer l before its ReLU, computed by hand (Fig. 3.3's h^{1:l}, eq. 3.30)
    pre, h = net.features(X, pre_activation=True), X
    assert torch.equal(pre[0], X.flatten(1)) and len(pre) == 9
    for i, layer in enumerate(net.layers):
        z = layer(h.flatten(1) if isinstance(layer, torch.nn.Linear) else h)
        assert torch.allclose(pre[i + 1], z.flatten(1), atol=1e-6), i
        assert torch.allclose(torch.relu(pre[i + 1]) if i < 7 else pre[i + 1], feats[i + 1], atol=1e-6), i
        h = torch.relu(z) if i < 7 else z
    assert all((p < 0).any() for p in pre[1:8])  # the ReLU has not been applied
    with pytest.raises(ValueError, match="^pre_activation must be a bool"):
        net.features(X, pre_activation=1)


def test_train_adam_first_epoch_loss_is_the_initial_loss():
    net = mm.Table31CNN(image_size=8, seed=0)
    X = torch.randn(10, 1, 8, 8)
    y = torch.where(torch.arange(10) % 3 == 0, 1.0, -1.0)
    with torch.no_grad():
        want = torch.nn.functional.softplus(-y * net(X)).mean().item()
    losses = mm.train_adam(net, X, y, epochs=1, batch_size=10, progress=False)
    assert losses[0] == pytest.approx(want, rel=1e-6)
    # two batches of 6 and 4: the epoch loss is the point-weighted mean of the batch losses
    net = mm.Table31CNN(image_size=8, seed=0)
    seen = []
    orig = net.forward
    net.forward = lambda Xb: (seen.append(len(Xb)), orig(Xb))[1]
    mm.train_adam(net, X, y, epochs=1, batch_size=6, progress=False)
    assert seen == [6, 4]
    assert next(net.parameters()).device.type == "cpu"


def test_two_layer_report_by_hand():
    # w_+ = e1 and w_- = e2 for X = e1 (+1), e2 (-1) in R^3; neurons 2 e1 (a = 1), e2 (a = -2), (0.1, 0.1, 0)
    # (a = 0.1): a rank-2 W
    X, y = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), np.array([1.0, -1.0])
    W, a = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.1, 0.1, 0.0]]), np.array([1.0, -2.0, 0.1])
    r = mm.two_layer_report(W, a, X, y, X, big=0.3)
    assert r["n_big"] == 2 and r["min_corr"] == pytest.approx(1.0) and r["frac_corr_09"] == pytest.approx(2 / 3)
    assert r["median_corr_all"] == pytest.approx(1.0) and r["pattern_frac"] == 1.0
    assert r["split"] == pytest.approx(4.0) and r["split_pred"] == pytest.approx(1.0)
    assert r["imbalance"] == pytest.approx(3.0)  # |a^2 - ||w||^2| / ||w||^2: 3/4 and 3
    sv = np.linalg.svd(W, compute_uv=False)
    assert r["sv_ratio_2"] == pytest.approx(sv[1] / sv[0]) and r["sv_ratio_3"] == pytest.approx(0.0, abs=1e-12)
    # h(e1) = 2 + 0.01, h(e2) = -2 + ...: normalised by ||W||^2 + ||a||^2 = 5.02 + 5.01; gamma* = 1/4
    norm2 = 5.02 + 5.01
    margin = min(2.01 / norm2, (2 - 0.01) / norm2)
    assert r["margin_ratio"] == pytest.approx(margin / 0.25)
    r_all = mm.two_layer_report(W, a, X, y, X, big=0.0)
    assert r_all["n_big"] == 3


# ---- documented defaults (a call without the argument equals the call with the documented value) --------

def test_defaults():
    X, y = mm.orthogonally_separable_gaussian()
    X2, y2 = mm.orthogonally_separable_gaussian(500, 20, seed=0)
    assert X.shape == (500, 20) and np.array_equal(X, X2) and np.array_equal(y, y2)
    # tol 0: an inner product of exactly 0 is "across" (allowed between classes, not within)
    Xo, yo = np.array([[1.0, 0.0], [0.0, 1.0], [0.3, -0.5]]), np.array([1.0, -1.0, 1.0])  # within: 0.3
    assert mm.is_orthogonally_separable(Xo, yo) and not mm.is_orthogonally_separable(Xo, yo, tol=0.4)
    assert mm.is_orthogonally_separable(Xo, yo, tol=0.0)
    assert not mm.is_orthogonally_separable(np.array([[1.0, 0.0], [0.1, 1.0], [-1.0, 0.1]]), yo)
    W = np.random.default_rng(0).standard_normal((15, 12))
    assert np.array_equal(mm.top_singular_values(W), np.linalg.svd(W, compute_uv=False)[:10])
    net = mm.Table31CNN()
    assert net.layers[6].in_features == 3136
    ref = mm.Table31CNN(image_size=28, fc_scale=0.05, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), ref.parameters()))
    bound = 0.05 / 3136 ** 0.5
    assert bound * 0.9 < net.layers[6].weight.abs().max() <= bound


def test_train_adam_defaults():
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(130, 1, 8, 8, generator=g), torch.where(torch.rand(130, generator=g) < 0.5, -1.0, 1.0)
    runs = []
    for kwargs in ({}, dict(batch_size=128, lr=1e-3, seed=0, device=None)):
        net = mm.Table31CNN(image_size=8, seed=1)
        losses = mm.train_adam(net, X, y, epochs=1, progress=False, **kwargs)
        runs.append((losses, [p.detach().clone() for p in net.parameters()]))
    assert runs[0][0] == runs[1][0] and all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))
    net = mm.Table31CNN(image_size=8, seed=1)
    assert mm.train_adam(net, X, y, epochs=1, batch_size=129, progress=False) != runs[0][0]


def test_two_layer_report_every_key_by_hand():
    # positives e1, (1, 0, 1); negatives e2, (0, 1, -1): w_+ = e1, w_- = e2 (the margin constraints w1 >= 1,
    # w1 + w3 >= 1 resp. w2 >= 1, w2 - w3 >= 1), class means (1, 0, 1/2) and (0, 1, -1/2), gamma* = 1/4
    X = np.array([[1.0, 0, 0], [1, 0, 1], [0, 1, 0], [0, 1, -1]])
    y = np.array([1.0, 1, -1, -1])
    W = np.array([[1.2, 0, 1.6], [0, 1.5, 0], [0.4, 0, 0.3]])  # norms 2, 1.5 and 0.5 (small), rank 3
    a = np.array([1.0, -2.0, 0.1])
    wp, wm = mm.pm_max_margin(X, y)
    assert np.allclose(wp, [1, 0, 0]) and np.allclose(wm, [0, 1, 0])
    r = mm.two_layer_report(W, a, X, y, X, big=0.3)
    norms = np.array([2.0, 1.5, 0.5])
    cos = np.array([0.6, 1.0, 0.8])  # each neuron with w_+ (a > 0) or w_- (a < 0)
    mp, mn = np.array([1, 0, 0.5]), np.array([0, 1, -0.5])
    cos_mean = np.array([W[0] @ mp / norms[0] / np.linalg.norm(mp), W[1] @ mn / norms[1] / np.linalg.norm(mn)])
    theta2 = (W ** 2).sum() + (a ** 2).sum()
    h = np.maximum(X @ W.T, 0) @ a / theta2
    f_star = 0.25 * (np.maximum(X @ wp, 0) - np.maximum(X @ wm, 0))
    sv = np.linalg.svd(W, compute_uv=False)
    want = {"n_big": 2, "min_corr": 0.6, "median_corr": 0.8, "frac_corr_09": 1 / 3,
            "median_corr_all": 0.8, "median_corr_mean": cos_mean.mean(),
            "relF": np.linalg.norm(h - f_star) / np.linalg.norm(f_star), "margin_ratio": (y * h).min() / 0.25,
            "split": norms[0] ** 2 / norms[1] ** 2, "split_pred": 1.0, "sv_ratio_2": sv[1] / sv[0],
            "sv_ratio_3": sv[2] / sv[0],
            # neuron 1's pattern (+, +, 0, -) is the extremal sector sigma_+ = (1, 1, 0, -1); neuron 2's
            # (0, 0, +, +) misses sigma_- = (0, -1, 1, 1)
            "pattern_frac": 0.5,
            "imbalance": max(abs(1 - 4) / 4, abs(4 - 2.25) / 2.25)}
    for key, value in want.items():
        assert r[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    assert (r["R_W"], r["R_a"]) == pytest.approx(mm.theorem_residuals(W, a, wp, wm))
    assert set(r) == set(want) | {"R_W", "R_a"}
    # a neuron exactly at big * the largest norm is not big (0.5 = 0.25 * 2)
    assert mm.two_layer_report(W, a, X, y, X, big=0.25)["n_big"] == 2
    assert mm.two_layer_report(W, a, X, y, X, big=0.2)["n_big"] == 3


def test_trainers_name_the_step_and_rate_at_which_the_loss_diverged():
    # a forward giving NaN: normalised GD checks its log-loss every 100 steps and at the last one, naming
    # that step's eta; SGD checks every epoch. A custom forward (no unchecked twin) is used as given.
    X, y = _tiny_batch()
    h = lambda p, Xb: (torch.relu(Xb @ p[0].transpose(1, 2)) * p[1][:, None]).sum(-1)  # noqa: E731
    nan_forward = lambda p, Xb: h(p, Xb) * float("nan")  # noqa: E731
    params = mm.default_init([(4, 3), (1, 4)], 2, seed=0, scale=1.0)
    with pytest.raises(mm.V.TrainingDivergedError, match=r"^the training log-loss became NaN or infinite by step 100 with lr=0\.2:"):
        mm.train_normalized_gd(nan_forward, params, X, y, [(0.1, 99), (0.2, 1), (0.3, 150)], progress=False)
    params = mm.default_init([(4, 3), (1, 4)], 2, seed=0, scale=1.0)
    with pytest.raises(mm.V.TrainingDivergedError, match=r"by step 7 with lr=0\.5:"):
        mm.train_normalized_gd(nan_forward, params, X, y, [(0.1, 2), (0.5, 5)], progress=False)
    params = mm.default_init([(4, 3), (1, 4)], 2, seed=0, scale=1.0)
    with pytest.raises(mm.V.TrainingDivergedError, match=r"^the training loss became NaN or infinite by step 1 \(epoch\) with lr=0\.1:"):
        mm.train_sgd(nan_forward, params, X, y, 0.1, 3, 4, 0, progress=False)
    # a finite custom forward trains like the built-in one
    ok = [mm.default_init([(4, 3), (1, 4)], 2, seed=0, scale=1.0) for _ in range(2)]
    mm.train_normalized_gd(h, ok[0], X, y, [(0.1, 3)], progress=False)
    mm.train_normalized_gd(mm.two_layer_forward, ok[1], X, y, [(0.1, 3)], progress=False)
    assert all(torch.allclose(a, b) for a, b in zip(*ok))


def test_train_adam_inputs_learning_rate_and_epoch_loss(monkeypatch):
    g = torch.Generator().manual_seed(2)
    X, y = torch.randn(10, 1, 8, 8, generator=g), torch.where(torch.arange(10) % 3 == 0, 1.0, -1.0)
    net = mm.Table31CNN(image_size=8, seed=0)
    with torch.no_grad():
        init_loss = torch.nn.functional.softplus(-y * net(X)).mean().item()
    # lists and float64 arrays are converted; with a negligible lr every batch sees the initial weights, so
    # the epoch loss (batches of 6 and 4, weighted by their sizes) is the initial full-batch loss
    losses = mm.train_adam(net, X.double().numpy(), y.tolist(), epochs=1, batch_size=6, lr=1e-12, progress=False)
    assert losses[0] == pytest.approx(init_loss, rel=1e-5)
    one = mm.train_adam(mm.Table31CNN(image_size=8, seed=0), X[:1], y[:1], epochs=1, progress=False)  # one image
    assert len(one) == 1
    # the learning rate is used: lr = 0.05 and the default 1e-3 train different weights
    nets = [mm.Table31CNN(image_size=8, seed=0) for _ in range(2)]
    mm.train_adam(nets[0], X, y, epochs=1, progress=False)
    mm.train_adam(nets[1], X, y, epochs=1, lr=0.05, progress=False)
    assert not torch.equal(nets[0].layers[7].weight, nets[1].layers[7].weight)
    # a NaN output stops training, naming the epoch and the learning rate
    bad = mm.Table31CNN(image_size=8, seed=0)
    monkeypatch.setattr(bad, "forward", lambda Xb: mm.Table31CNN.forward(bad, Xb) * float("nan"))
    with pytest.raises(mm.V.TrainingDivergedError, match=r"^the training loss became NaN or infinite by step 1 \(epoch\) with lr=0\.002:"):
        mm.train_adam(bad, X, y, epochs=3, lr=0.002, progress=False)


def test_theorem_residuals_neuron_with_zero_output_weight():
    # a = 0 belongs to neither group: u = z = 0, so its whole (normalised) row is residual
    W, a = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.0, -1.0])
    R_W, R_a = mm.theorem_residuals(W, a, np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert R_W == pytest.approx(1 / np.sqrt(2)) and R_a == pytest.approx(1 - 1 / np.sqrt(2))


def test_smallest_data_and_images_and_the_z_filter():
    X, y = mm.orthogonally_separable_gaussian(2, 2, seed=1)
    assert X.shape == (2, 2) and set(y) == {-1.0, 1.0} and mm.is_orthogonally_separable(X, y)
    X, y = mm.orthogonally_separable_gaussian(500, 20, seed=0)
    z = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    assert ((X @ z >= 0) & (X @ z < 1)).sum() > 10  # the filter is x.z >= 0, not a margin
    assert mm.Table31CNN(image_size=4).layers[6].in_features == 64  # 4 -> 2 -> 1
    # a = 0 counts with the negative neurons in "respective" mode (a > 0 selects w_+)
    cos = mm.neuron_alignment([[1.0, 0.0]], [0.0], [1.0, 0.0], [0.0, 1.0])
    assert cos.tolist() == [0.0]


def test_sampler_without_the_z_filter():
    """z_filter=False keeps every point x = s|g| of the same random stream: orthogonally separable, but
    about half the points have x.z < 0; with the filter none has, and the default is the filter."""
    z = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    X, y = mm.orthogonally_separable_gaussian(400, 20, seed=3, z_filter=False)
    assert X.shape == (400, 20) and mm.is_orthogonally_separable(X, y)
    assert 0.35 < np.mean(X @ z < 0) < 0.65 and ((X > 0) == (y[:, None] > 0)).all()
    # the same stream: the first kept point of the filtered data is the first point with x.z >= 0
    Xf, yf = mm.orthogonally_separable_gaussian(400, 20, seed=3)
    first = np.flatnonzero(X @ z >= 0)[0]
    assert np.array_equal(Xf[0], X[first]) and yf[0] == y[first] and (Xf @ z >= 0).all()
    assert np.array_equal(Xf, mm.orthogonally_separable_gaussian(400, 20, seed=3, z_filter=True)[0])
    with pytest.raises(ValueError, match=r"^z_filter must be"):
        mm.orthogonally_separable_gaussian(10, 3, z_filter="no")


@pytest.mark.parametrize("change, match", [
    (dict(n=None), r"InductiveBiasConfig\.n must be an int"), (dict(width=0), r"InductiveBiasConfig\.width must be an int >= 1"),
    (dict(sgd_batch="50"), r"InductiveBiasConfig\.sgd_batch must be an int"),
    (dict(init_scale=-0.05), r"InductiveBiasConfig\.init_scale must be"),
    (dict(ngd_schedule=()), r"InductiveBiasConfig\.ngd_schedule must be a sequence of at least 1"),
    (dict(ngd_schedule=((0.005, 0),)), r"InductiveBiasConfig\.ngd_schedule\[0\]\[1\] must be an int >= 1"),
    (dict(resnet_ngd_schedule=((0.02,),)), r"InductiveBiasConfig\.resnet_ngd_schedule\[0\] must be a tuple of 2"),
    (dict(cnn_data="cifar"), r"InductiveBiasConfig\.cnn_data must be one of"),
    (dict(eta_sweep=(0.008, -1.0)), r"InductiveBiasConfig\.eta_sweep\[1\] must be")])
def test_config_fields_are_checked_at_construction(change, match):
    with pytest.raises(ValueError, match=match):
        mm.InductiveBiasConfig(**change)


def test_forwards_and_trainers_compare_X_and_params():
    W, a = torch.randn(2, 4, 3, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    X = torch.randn(2, 6, 3, dtype=torch.float64)
    y = torch.ones(2, 6, dtype=torch.float64)
    y[:, ::2] = -1
    grad = lambda *p: [q.clone().requires_grad_() for q in p]  # noqa: E731
    assert mm.two_layer_forward([W, a], X[:1]).shape == (2, 6)  # one batch shared by the models
    cases = [(lambda: mm.two_layer_forward([W, a], torch.randn(3, 6, 3, dtype=torch.float64)),
              r"^X of shape \(S, n, d\) must hold one batch per model of params \(S = 2\)"),
             (lambda: mm.two_layer_forward([W, a], X.float()), r"^X must have the dtype of params \(torch.float64\)"),
             (lambda: mm.train_sgd(mm.two_layer_forward, grad(W, a), X[..., :2], y, 0.1, 2, 1, 0, progress=False),
              r"^X must have 3 columns \(the d of params\[0\]\)"),
             (lambda: mm.train_sgd(mm.two_layer_forward, grad(W, a[:, :3]), X, y, 0.1, 2, 1, 0, progress=False),
              r"^params must be \[W \(S, p, d\), a \(S, p\)\], got shapes \[\(2, 4, 3\), \(2, 3\)\]"),
             (lambda: mm.train_sgd(mm.two_layer_forward, [W, a], X, y, 0.1, 2, 1, 0, progress=False),
              r"^params must require gradients"),
             (lambda: mm.train_normalized_gd(mm.two_layer_forward, [W, a], X, y, ((0.1, 1),), progress=False),
              r"^params must require gradients"),
             (lambda: mm.residual_forward([W, torch.randn(2, 4, 3, dtype=torch.float64), a], X),
              r"^params must be \[W1 \(S, p, d\), W2.. \(S, p, p\), W_L \(S, p\)\]"),
             (lambda: mm.log_loss(mm.residual_forward, [W, a[:, :3]], X, y), r"^params must be \[W1")]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
    res = mm.default_init(mm.residual_shapes(3, 4, 3), 2, 0, 1.0)
    assert mm.residual_forward(res, X).shape == (2, 6)


def test_degenerate_directions_and_neurons():
    """Zero vectors that would be divided by their norm are refused; a zero neuron's cosine is defined as 0."""
    W = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    a = np.array([1.0, 1.0, -1.0])
    wp, wm = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert mm.neuron_alignment(W, a, wp, wm).tolist() == [1.0, 0.0, 1.0]  # the zero neuron: 0
    zero = np.zeros(2)
    for call, match in [(lambda: mm.neuron_alignment(W, a, zero, wm), r"^w_plus must be a non-zero vector"),
                        (lambda: mm.neuron_alignment(W, a, wp, zero), r"^w_minus must be a non-zero vector"),
                        (lambda: mm.theorem_residuals(np.zeros((3, 2)), a, wp, wm), r"^W must be a non-zero matrix"),
                        (lambda: mm.theorem_residuals(W, np.zeros(3), wp, wm), r"^a must be a non-zero vector"),
                        (lambda: mm.theorem_residuals(W, a, zero, wm), r"^w_plus must be a non-zero"),
                        (lambda: mm.theorem_residuals(W, a, wp, zero), r"^w_minus must be a non-zero"),
                        (lambda: mm.norm_split(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([1.0, -1.0])),
                         r"^W's rows of the neurons with a_j < 0 must not all be zero")]:
        with pytest.raises(ValueError, match=match):
            call()
    assert np.isfinite(mm.theorem_residuals(W, a, wp, wm)).all()
    assert mm.norm_split(np.array([[0.0, 0.0], [0.0, 2.0]]), np.array([1.0, -1.0])) == 0.0  # defined: 0 / 4


def test_vectors_name_what_they_must_agree_with():
    with pytest.raises(ValueError, match=r"^w_minus must be an array of shape \(3,\) to agree with w_plus"):
        mm.gamma_star(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match=r"^w_plus must be an array of shape \(2,\) to agree with the columns of X or W"):
        mm.theorem_residuals(np.ones((3, 2)), np.array([1.0, -1.0, 1.0]), np.ones(3), np.ones(2))


def _split_share_brute(P, signs, quantile):
    """Independent: the share for 200,000 directions on a grid, the outer points chosen by sorting."""
    r = np.linalg.norm(P, axis=1)
    keep = np.argsort(r)[int(np.floor(quantile * (len(r) - 1))) + 1:]  # strictly above the quantile (distinct norms)
    t = np.linspace(0, 2 * np.pi, 200_000, endpoint=False)
    agree = np.sign(P[keep] @ np.stack([np.cos(t), np.sin(t)])) == np.sign(signs[keep])[:, None]
    return agree.mean(axis=0).max()


def test_sign_split_share_against_a_grid_of_directions():
    rng = np.random.default_rng(3)
    for trial in range(30):
        n = int(rng.integers(5, 40))
        P = rng.normal(size=(n, 2)) * rng.uniform(0.1, 2, size=(n, 1))
        signs = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 2, n)
        if trial % 3 == 0:  # a planted split: sign = side of a random line, then a few flipped
            u = rng.normal(size=2)
            signs = np.sign(P @ u) * rng.uniform(0.5, 2, n)
            signs[: trial % 4] *= -1
        q = float(rng.choice([0.0, 0.25, 0.5, 0.75]))
        assert mm.sign_split_share(P, signs, q) == pytest.approx(_split_share_brute(P, signs, q), abs=1e-12)


def test_sign_split_share_cases():
    # two outer groups of opposite sign on either side of the origin and an inner mixed blob: 1 at the median,
    # and lower once the inner points count
    outer = np.array([[3.0, 0.1], [3.1, -0.2], [2.9, 0.0], [-3.0, 0.2], [-2.8, -0.1], [-3.2, 0.0]])
    inner = np.array([[0.1, 0.0], [-0.1, 0.05], [0.0, 0.1], [0.05, -0.1], [0.02, 0.03], [-0.04, -0.02]])
    P = np.vstack([outer, inner])
    signs = np.array([1, 1, 1, -1, -1, -1, 1, 1, -1, -1, 1, -1.0])
    assert mm.sign_split_share(P, signs, 0.5) == 1.0
    assert mm.sign_split_share(P, signs, 0.0) < 1.0
    # (quantile 0 keeps the points above the smallest norm: a fifth point near 0 is the one left out)
    near0 = [[0.01, 0.0]]
    # the groups need not be opposite: two sign-pure groups at 90 degrees are split by a line as well
    assert mm.sign_split_share(np.array(near0 + [[1.0, 0.0], [1.1, 0.05], [0.05, 1.0], [0.0, 1.2]]),
                               [-1, 1, 1, -1, -1], 0.0) == 1.0
    # one sign on both sides of the origin cannot be split by a line: at best half of it
    assert mm.sign_split_share(np.array(near0 + [[1.0, 0.0], [-1.02, 0.0], [1.01, 0.101], [-1.03, -0.103]]),
                               [1, 1, 1, -1, -1], 0.0) == 0.5
    # only the outer points count: flipping an inner sign changes nothing
    flipped = signs.copy()
    flipped[8] *= -1
    assert mm.sign_split_share(P, flipped, 0.5) == 1.0


@pytest.mark.parametrize("call, message", [
    (lambda: mm.sign_split_share(np.ones((3, 3)), [1, 1, 1]), r"^P must have 2 columns"),
    (lambda: mm.sign_split_share(np.ones((3, 2)), [1, 1]), r"^signs must have one entry per row of P \(3\), got 2$"),
    (lambda: mm.sign_split_share(np.eye(2), [1, 0]), r"^signs must be non-zero"),
    (lambda: mm.sign_split_share(np.eye(2), [1, -1], quantile=1.0), r"^quantile must be"),
    (lambda: mm.sign_split_share(np.eye(2), [1, -1]), r"^no point lies outside"),
])
def test_sign_split_share_refuses_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
