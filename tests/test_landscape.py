"""Tests of lib.landscape against independent computations (chapter 10, parts A and B)."""

import math

import numpy as np
import pytest
import torch

from lib import landscape as LS
from lib import validate as V
from lib.nets import forward_f64, preactivations_f64


def ce_independent(params, X, y, alpha):
    """Mean cross-entropy by lib.nets' float64 forward pass and torch's cross_entropy."""
    out = forward_f64(params, X, alpha)
    return float(torch.nn.functional.cross_entropy(torch.tensor(out), torch.tensor(np.asarray(y))))


def small_problem(seed=0, N=6, d=12, widths=(8, 5, 3)):
    X = LS.gaussian_points(N, d, seed)
    y = np.random.default_rng(seed + 1).integers(0, widths[-1], N)
    pa = LS.init_net([d, *widths], seed + 2)
    pb = LS.init_net([d, *widths], seed + 3)
    rng = np.random.default_rng(seed + 4)
    pa = [(W, rng.standard_normal(b.shape) * 0.3) for W, b in pa]
    pb = [(W, rng.standard_normal(b.shape) * 0.3) for W, b in pb]
    return X, y, pa, pb


# ------------------------------------------------------------------ ranks and data

@pytest.mark.parametrize("r", [1, 3, 7])
def test_nr_rank_matches_numpy_on_known_rank(r):
    rng = np.random.default_rng(r)
    A = rng.standard_normal((9, r)) @ rng.standard_normal((r, 12))
    rank, s = LS.nr_rank(A)
    assert rank == r == np.linalg.matrix_rank(A)
    assert np.allclose(s, np.linalg.svd(A, compute_uv=False))
    assert np.all(np.diff(s) <= 0)


def test_nr_rank_threshold_is_the_numerical_recipes_one():
    eps = np.finfo(float).eps
    thr = 0.5 * math.sqrt(3 + 3 + 1) * eps  # sigma_max = 1, a 3x3 matrix
    assert LS.nr_rank(np.diag([1.0, 1.5 * thr, 0.0]))[0] == 2
    assert LS.nr_rank(np.diag([1.0, 0.5 * thr, 0.0]))[0] == 1
    assert LS.nr_rank(np.diag([1.0, 0.99 * thr, 0.3]))[0] == 2


def test_nr_rank_rejects_vectors():
    with pytest.raises(ValueError, match="A"):
        LS.nr_rank(np.ones(3))


def test_digits_data_range_noise_and_errors():
    X, y = LS.digits_data(50, noise_std=0.0, seed=1)
    assert X.shape == (50, 64) and y.shape == (50,)
    assert X.min() >= 0 and X.max() <= 1 and set(np.unique(y)) <= set(range(10))
    assert np.allclose(X * 16, np.round(X * 16))  # no noise: the raw 0..16 pixel values / 16
    Xn, yn = LS.digits_data(50, noise_std=0.1, seed=1)
    assert np.array_equal(yn, y) and 0.05 < np.std(Xn - X) < 0.15
    assert LS.nr_rank(LS.digits_data(200, seed=0)[0])[0] == 64  # noise makes the constant pixels vary
    with pytest.raises(ValueError, match="n"):
        LS.digits_data(1798)
    with pytest.raises(ValueError, match="noise_std"):
        LS.digits_data(5, noise_std=-1.0)


def test_gaussian_points_and_random_labels():
    X = LS.gaussian_points(4, 3, seed=2)
    assert X.shape == (4, 3) and np.array_equal(X, LS.gaussian_points(4, 3, seed=2))
    y, Y = LS.random_labels(30, 4, seed=3)
    assert Y.shape == (30, 4) and np.array_equal(Y.argmax(1), y) and np.all(Y.sum(1) == 1)
    assert y.min() >= 0 and y.max() <= 3
    with pytest.raises(ValueError, match="m"):
        LS.random_labels(3, 0)
    with pytest.raises(ValueError, match="N"):
        LS.gaussian_points(0, 3)


def test_activate_closed_forms():
    z = np.array([-3.0, -0.5, 0.0, 0.7, 4.0])
    assert np.allclose(LS.activate(z, "sigmoid"), 1 / (1 + np.exp(-z)))
    assert np.allclose(LS.activate(z, "tanh"), np.tanh(z))
    assert np.allclose(LS.activate(z, "softplus"), np.log(1 + np.exp(z)))
    assert np.allclose(LS.activate(z, "leaky_relu", 0.3), [-0.9, -0.15, 0.0, 0.7, 4.0])
    assert np.allclose(LS.activate(z, "relu"), [0, 0, 0, 0.7, 4.0])
    assert np.array_equal(LS.activate(z, "linear"), z)
    with pytest.raises(ValueError, match="activation"):
        LS.activate(z, "gelu")
    with pytest.raises(ValueError, match="alpha"):
        LS.activate(z, "leaky_relu", 0.0)


def test_random_features_rank_pattern_and_formula():
    X = LS.gaussian_points(30, 4, seed=5)
    assert LS.random_features(X, 50, "linear", seed=1).shape == (30, 50)
    assert LS.nr_rank(LS.random_features(X, 50, "linear", seed=1))[0] == 5  # d + 1
    assert LS.nr_rank(LS.random_features(X, 20, "sigmoid", seed=1))[0] == 20
    assert LS.nr_rank(LS.random_features(X, 40, "tanh", seed=1))[0] == 30
    rng = np.random.default_rng(7)
    W = rng.standard_normal((6, 4)) / 2.0
    b = rng.standard_normal(6)
    assert np.allclose(LS.random_features(X, 6, "relu", seed=7), np.maximum(X @ W.T + b, 0))
    with pytest.raises(ValueError, match="width"):
        LS.random_features(X, 0, "relu")


def test_exact_fit_against_projection():
    rng = np.random.default_rng(0)
    F, Y = rng.standard_normal((10, 4)), rng.standard_normal((10, 3))
    lam, res = LS.exact_fit(F, Y)
    Q, _ = np.linalg.qr(F)
    assert np.isclose(res, np.linalg.norm(Y - Q @ Q.T @ Y) / np.linalg.norm(Y))
    assert np.allclose(F.T @ (F @ lam - Y), 0, atol=1e-10)  # normal equations
    assert LS.exact_fit(rng.standard_normal((5, 8)), Y[:5])[1] < 1e-12
    with pytest.raises(ValueError, match="Y"):
        LS.exact_fit(F, Y[:4])


# ------------------------------------------------------------------ Thm 2.4.4

def test_triangular_features_formula_and_limit():
    X = LS.gaussian_points(7, 3, seed=1)
    a = np.array([1.0, -0.5, 0.2])
    A, order = LS.triangular_features(X, a, 2.0, 0.5, "sigmoid")
    p = X @ a
    assert np.all(np.diff(p[order]) > 0)
    i, j = 2, 5
    assert np.isclose(A[i, j], 1 / (1 + np.exp(-(2.0 * (p[order][j] - p[order][i]) + 0.5))))
    gap = np.diff(np.sort(p)).min()
    R, _ = LS.triangular_features(X, a, 5.0 / gap, 1.0, "relu")
    assert np.all(np.tril(R, -1) == 0) and np.all(np.diag(R) == 1.0)
    assert np.all(R[np.triu_indices(7, 1)] > 1.0)
    small, _ = LS.triangular_features(X, a, 1e-3, 1.0, "relu")
    assert small[np.tril_indices(7, -1)].min() > 0.9


def test_triangular_features_errors():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    with pytest.raises(ValueError, match="distinct"):
        LS.triangular_features(X, np.array([1.0, 1.0]), 1.0)
    with pytest.raises(ValueError, match="a"):
        LS.triangular_features(X, np.ones(3), 1.0)
    with pytest.raises(ValueError, match="activation"):
        LS.triangular_features(X, np.array([1.0, 0.3]), 1.0, activation="tanh")


# ------------------------------------------------------------------ Lemma 2.4.9

def sig(z):
    return 1 / (1 + np.exp(-z))


def manual_gradient(params, X, Y, k):
    """Backprop of Lemma 2.6.2 in numpy: grad_{W_{k+1}} = (F_k^T Delta_{k+1})^T."""
    F, G = [X], []
    for W, b in params[:-1]:
        G.append(F[-1] @ W.T + b)
        F.append(sig(G[-1]))
    out = F[-1] @ params[-1][0].T + params[-1][1]
    delta = out - Y
    for l in range(len(params) - 1, k, -1):  # down to Delta_{k+1}
        s = sig(G[l - 1])
        delta = (delta @ params[l][0]) * s * (1 - s)
    return (F[k].T @ delta).T, out


def test_grad_sandwich_matches_backprop_and_bounds():
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((6, 4)), rng.standard_normal((6, 2))
    params = [(rng.standard_normal((o, i)), rng.standard_normal(o)) for i, o in [(4, 9), (9, 5), (5, 3), (3, 2)]]
    lower, grad, upper = LS.grad_sandwich(params, X, Y, 1)
    g, _ = manual_gradient(params, X, Y, 1)
    assert np.isclose(grad, np.linalg.norm(g))
    for k in range(4):  # Lemma 2.6.2 in lib against torch autograd, every layer
        Ws = [torch.tensor(W, requires_grad=True) for W, _ in params]
        Z = torch.tensor(X)
        for l in range(3):
            Z = torch.sigmoid(Z @ Ws[l].T + torch.tensor(params[l][1]))
        (0.5 * ((Z @ Ws[3].T + torch.tensor(params[3][1]) - torch.tensor(Y)) ** 2).sum()).backward()
        assert np.allclose(LS.backprop_gradient(params, X, Y, k), Ws[k].grad.numpy())
    with pytest.raises(ValueError, match="k"):
        LS.backprop_gradient(params, X, Y, 4)
    assert 0 < lower <= grad <= upper


def test_grad_sandwich_last_hidden_layer_is_exact_form():
    rng = np.random.default_rng(4)
    X, Y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    params = [(rng.standard_normal((8, 3)), rng.standard_normal(8)), (rng.standard_normal((2, 8)), rng.standard_normal(2))]
    lower, grad, upper = LS.grad_sandwich(params, X, Y, 1)
    F1 = sig(X @ params[0][0].T + params[0][1])
    out = F1 @ params[1][0].T + params[1][1]
    s = np.linalg.svd(F1, compute_uv=False)
    r = np.linalg.norm(out - Y)
    assert np.isclose(lower, s[4] * r) and np.isclose(upper, s[0] * r)
    assert np.isclose(grad, np.linalg.norm(F1.T @ (out - Y)))


def test_grad_sandwich_errors():
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    narrow = [(rng.standard_normal((4, 3)), np.zeros(4)), (rng.standard_normal((2, 4)), np.zeros(2))]
    with pytest.raises(ValueError, match="fewer than N"):
        LS.grad_sandwich(narrow, X, Y, 1)
    growing = [(rng.standard_normal((7, 3)), np.zeros(7)), (rng.standard_normal((3, 7)), np.zeros(3)),
               (rng.standard_normal((5, 3)), np.zeros(5)), (rng.standard_normal((2, 5)), np.zeros(2))]
    with pytest.raises(ValueError, match="non-increasing"):
        LS.grad_sandwich(growing, X, Y, 1)
    with pytest.raises(ValueError, match="k"):
        LS.grad_sandwich(growing, X, Y, 4)


# ------------------------------------------------------------------ tiny CNN

def test_tiny_cnn_shapes_ranks_and_training():
    X, y = LS.digits_data(40, seed=0)
    net = LS.tiny_cnn(2, seed=0)
    assert net(torch.tensor(X).reshape(-1, 1, 8, 8)).shape == (40, 10)
    ranks = LS.cnn_feature_ranks(net, X)
    assert ranks["F1"]["size"] == 72 and ranks["F3"]["size"] == 80
    assert ranks["F1"]["rank"] == 40 and ranks["F3"]["rank"] == 40
    with torch.no_grad():
        F1 = torch.sigmoid(net[0](torch.tensor(X).reshape(-1, 1, 8, 8))).reshape(40, -1).numpy()
    assert np.isclose(ranks["F1"]["sigma_min"], np.linalg.svd(F1, compute_uv=False)[39])
    hist = LS.train_square(net, X, np.eye(10)[y], 30, lr=1e-2)
    assert len(hist) == 30 and hist[-1] < 0.75 * hist[0]
    with pytest.raises(ValueError, match="square"):
        LS.cnn_feature_ranks(net, X[:, :60])
    with pytest.raises(ValueError, match="T1"):
        LS.tiny_cnn(0)


class _SpySequential(torch.nn.Sequential):
    """Records where it is moved (``Module.to``)."""

    def to(self, *args, **kwargs):
        self.moves.append(torch.device(args[0]))
        return super().to(*args, **kwargs)


def test_train_square_trains_on_repro_device_and_returns_the_model_home(monkeypatch):
    """Issue 22: REPRO_DEVICE=cpu and auto (and an explicit device="cpu") give identical numbers on a
    CPU-only machine; the model goes to the device first and back to the CPU afterwards."""
    X = LS.gaussian_points(6, 3, seed=1)
    Y = np.random.default_rng(2).standard_normal((6, 2))
    runs = []
    for env, arg in (("auto", None), ("cpu", None), ("auto", "cpu"), ("cpu", torch.device("cpu"))):
        monkeypatch.setenv("REPRO_DEVICE", env)
        torch.manual_seed(0)
        model = _SpySequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
        model.moves = []
        hist = LS.train_square(model, X, Y, 5, lr=1e-2, device=arg)
        assert model.moves == [torch.device("cpu")] * 2        # to the device, then home
        runs.append((hist, [p.detach().clone() for p in model.parameters()]))
    for hist, params in runs[1:]:
        assert hist == runs[0][0] and all(torch.equal(a, b) for a, b in zip(params, runs[0][1]))
    assert runs[0][0][-1] < runs[0][0][0]
    model.moves = []
    with pytest.raises(V.TrainingDivergedError):
        LS.train_square(model, X, Y * 1e200, 3, lr=1e200)
    assert model.moves == [torch.device("cpu")] * 2            # home after a failure too
    model.moves = []
    with pytest.raises(ValueError, match="^device must be one of"):
        LS.train_square(model, X, Y, 1, device="gpu")
    monkeypatch.setenv("REPRO_DEVICE", "tpu")
    with pytest.raises(ValueError, match="^REPRO_DEVICE must be one of"):
        LS.train_square(model, X, Y, 1)
    assert model.moves == []                          # a bad device is refused before anything moves


def test_train_square_on_a_plain_mlp():
    X = LS.gaussian_points(10, 3, seed=1)
    Y = np.random.default_rng(2).standard_normal((10, 2))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 20), torch.nn.Tanh(), torch.nn.Linear(20, 2)).double()
    with torch.no_grad():
        start = 0.5 * ((model(torch.tensor(X)) - torch.tensor(Y)) ** 2).sum().item() / 10
    hist = LS.train_square(model, X, Y, 200, lr=1e-2)
    assert hist[0] == pytest.approx(start, rel=1e-12)  # the loss before the first step, 1/(2N) ||f - Y||^2
    with torch.no_grad():
        final = 0.5 * ((model(torch.tensor(X)) - torch.tensor(Y)) ** 2).sum().item() / 10
    assert final < hist[0] / 2
    with pytest.raises(ValueError, match="steps"):
        LS.train_square(model, X, Y, 0)


# ------------------------------------------------------------------ Part B helpers

def test_cross_entropy_and_layer_outputs_against_lib_nets():
    X, y, pa, _ = small_problem()
    assert np.isclose(LS.cross_entropy_loss(pa, X, y, 0.2), ce_independent(pa, X, y, 0.2))
    outs = LS.layer_outputs(pa, X, 0.3)
    pre = preactivations_f64(pa, X, 0.3)
    assert len(outs) == 3
    assert np.allclose(outs[0], np.where(pre[0] >= 0, pre[0], 0.3 * pre[0]))
    assert np.allclose(outs[-1], forward_f64(pa, X, 0.3))
    with pytest.raises(ValueError, match="y"):
        LS.cross_entropy_loss(pa, X, np.full(len(y), 3), 0.2)


def test_init_net_and_train_ce_gd():
    net = LS.init_net([5, 4, 3], seed=1)
    assert [W.shape for W, _ in net] == [(4, 5), (3, 4)] and all(np.all(b == 0) for _, b in net)
    assert np.isclose(np.std(LS.init_net([400, 300], seed=2)[0][0]), math.sqrt(2 / 400), rtol=0.05)
    X, y, pa, _ = small_problem(1)
    trained, hist = LS.train_ce_gd(pa, X, y, 0.2, 0.1, 50)
    assert np.isclose(hist[0], ce_independent(pa, X, y, 0.2))
    assert ce_independent(trained, X, y, 0.2) < hist[0]
    # one explicit GD step compared with finite differences of the loss
    one, _ = LS.train_ce_gd(pa, X, y, 0.2, 1e-3, 1)
    W, b = pa[2]
    e = np.zeros_like(W)
    e[1, 2] = 1e-6
    plus = [pa[0], pa[1], (W + e, b)]
    minus = [pa[0], pa[1], (W - e, b)]
    fd = (ce_independent(plus, X, y, 0.2) - ce_independent(minus, X, y, 0.2)) / 2e-6
    assert np.isclose((W[1, 2] - one[2][0][1, 2]) / 1e-3, fd, rtol=1e-5)
    with pytest.raises(ValueError, match="lr"):
        LS.train_ce_gd(pa, X, y, 0.2, -1.0, 5)


def test_gradient_norm_against_finite_differences():
    X, y, pa, _ = small_problem(2, N=4, d=3, widths=(3, 2))
    flat = np.concatenate([p.ravel() for layer in pa for p in layer])

    def unflat(v):
        out, i = [], 0
        for W, b in pa:
            out.append((v[i:i + W.size].reshape(W.shape), v[i + W.size:i + W.size + b.size]))
            i += W.size + b.size
        return out

    h = 1e-6
    g = np.array([(ce_independent(unflat(flat + h * e), X, y, 0.2) - ce_independent(unflat(flat - h * e), X, y, 0.2)) / (2 * h)
                  for e in np.eye(flat.size)])
    assert np.isclose(LS.gradient_norm(pa, X, y, 0.2), np.linalg.norm(g), rtol=1e-5)


def test_straight_line_losses_endpoints_and_midpoint():
    X, y, pa, pb = small_problem(3)
    line = LS.straight_line_losses(pa, pb, X, y, 0.2, 5)
    assert len(line) == 5
    assert np.isclose(line[0], ce_independent(pa, X, y, 0.2)) and np.isclose(line[-1], ce_independent(pb, X, y, 0.2))
    mid = [(0.5 * (Wa + Wb), 0.5 * (ba + bb)) for (Wa, ba), (Wb, bb) in zip(pa, pb)]
    assert np.isclose(line[2], ce_independent(mid, X, y, 0.2))
    with pytest.raises(ValueError, match="same layer shapes"):
        LS.straight_line_losses(pa, LS.init_net([12, 9, 5, 3], 0), X, y)


def test_yhat_scale_solves_the_ce_equation():
    for m, target in [(2, 0.1), (3, 1e-4), (10, 2e-3)]:
        s = LS.yhat_scale(m, target)
        assert np.isclose(math.log1p((m - 1) * math.exp(-s)), target)
        Yhat = s * np.eye(m)[[0, 1, m - 1]]
        ce = float(torch.nn.functional.cross_entropy(torch.tensor(Yhat), torch.tensor([0, 1, m - 1])))
        assert np.isclose(ce, target)
    assert LS.yhat_scale(3, 5.0) == 0.0  # log 3 < 5: s = 0 already reaches it
    with pytest.raises(ValueError, match="m"):
        LS.yhat_scale(1, 0.1)
    with pytest.raises(ValueError, match="target"):
        LS.yhat_scale(3, 0.0)


# ------------------------------------------------------------------ Thm 3.4.9: the path

def test_sublevel_path_stays_below_the_larger_endpoint_loss():
    X, y, pa, pb = small_problem(4)
    n = 12
    path, info = LS.sublevel_path_with_info(pa, pb, X, y, 0.2, n)
    assert len(path) == 5 * (n - 1) + 1 == len(info["stage"])
    assert all(np.array_equal(W, Wa) and np.array_equal(b, ba) for (W, b), (Wa, ba) in zip(path[0], pa))
    assert all(np.array_equal(W, Wb) and np.array_equal(b, bb) for (W, b), (Wb, bb) in zip(path[-1], pb))
    losses = np.array([ce_independent(p, X, y, 0.2) for p in path])
    la, lb = ce_independent(pa, X, y, 0.2), ce_independent(pb, X, y, 0.2)
    assert losses.max() <= max(la, lb) + 1e-9
    stage = np.array(info["stage"])
    assert list(dict.fromkeys(stage)) == ["A", "B", "C1", "C2", "A'"]
    # stages A and B: the network output itself is unchanged
    pick = lambda names: [path[i] for i in np.where(np.isin(stage, names))[0]]
    for p in pick(["A", "B"]):
        assert np.allclose(forward_f64(p, X, 0.2), forward_f64(pa, X, 0.2), atol=1e-9)
    for p in pick(["A'"]):
        assert np.allclose(forward_f64(p, X, 0.2), forward_f64(pb, X, 0.2), atol=1e-9)
    # in stage A only the first layer moves; at the end of B layers 2..L are those of params_b
    for p in pick(["A"]):
        assert all(np.array_equal(W, Wa) for (W, _), (Wa, _) in zip(p[1:], pa[1:]))
    end_b = path[int(np.where(stage == "B")[0][-1])]
    assert all(np.allclose(W, Wb) and np.allclose(b, bb) for (W, b), (Wb, bb) in zip(end_b[1:], pb[1:]))
    # C1 ends (and C2 begins) at the network outputting Yhat = s * onehot
    meet = path[int(np.where(stage == "C1")[0][-1])]
    Yhat = info["s"] * np.eye(3)[y]
    assert np.allclose(forward_f64(meet, X, 0.2), Yhat, atol=1e-8)
    assert np.isclose(info["phi_yhat"], 0.5 * min(la, lb))
    # the curve is continuous: neighbouring points are close
    steps = [max(np.abs(W1 - W2).max() for (W1, _), (W2, _) in zip(p, q)) for p, q in zip(path, path[1:])]
    assert max(steps) < 0.5 * max(np.abs(W).max() for p in path for W, _ in p)


def test_sublevel_path_min_sv_and_default_is_list():
    X, y, pa, pb = small_problem(5)
    path, info = LS.sublevel_path_with_info(pa, pb, X, y, 0.2, 4)
    expect = min(np.linalg.svd((1 - t) * Wa + t * Wb, compute_uv=False)[-1]
                 for t in np.linspace(0, 1, 4) for (Wa, _), (Wb, _) in zip(pa[1:], pb[1:]))
    assert np.isclose(info["min_sv"], expect)
    plain = LS.sublevel_path(pa, pb, X, y, 0.2, 4)
    assert isinstance(plain, list) and len(plain) == len(path)
    assert all(np.allclose(W, V_) for p, q in zip(plain, path) for (W, _), (V_, _) in zip(p, q))


def test_sublevel_path_errors_say_which_assumption():
    X, y, pa, pb = small_problem(6)
    with pytest.raises(ValueError, match="alpha"):
        LS.sublevel_path(pa, pb, X, y, alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        LS.sublevel_path(pa, pb, X, y, alpha=-0.1)
    flat = LS.init_net([12, 5, 5, 3], 0)
    with pytest.raises(ValueError, match="strictly decreasing"):
        LS.sublevel_path(flat, flat, X, y)
    Xbig = LS.gaussian_points(14, 12, seed=0)
    with pytest.raises(ValueError, match=r"rank X = 12 < N = 14"):
        LS.sublevel_path(pa, pb, Xbig, np.zeros(14, int))
    deficient = [pa[0], (np.vstack([pa[1][0][:4], pa[1][0][:1]]), pa[1][1]), pa[2]]
    with pytest.raises(ValueError, match="params_b: W_2 is rank deficient"):
        LS.sublevel_path(pa, deficient, X, y)
    with pytest.raises(ValueError, match="same layer shapes"):
        LS.sublevel_path(pa, LS.init_net([12, 9, 5, 3], 0), X, y)
    with pytest.raises(ValueError, match="points_per_stage"):
        LS.sublevel_path(pa, pb, X, y, 0.2, 1)
    with pytest.raises(ValueError, match="y"):
        LS.sublevel_path(pa, pb, X, y[:-1])


# ------------------------------------------------------------------ Lemma 3.4.14, Thm 3.4.17

def test_rank_repair_path_keeps_output_and_reaches_rank_n():
    rng = np.random.default_rng(0)
    X = LS.gaussian_points(10, 3, seed=1)
    W0, b0 = rng.standard_normal((5, 3)), rng.standard_normal(5)
    W, b = np.vstack([W0, W0, W0]), np.concatenate([b0, b0, b0])  # 15 units, rank 5 < 10
    Vout = rng.standard_normal((2, 15))
    path = LS.rank_repair_path(X, W, b, Vout, 0.2, seed=3, points_per_stage=5)
    F = lambda W_, b_: np.where(X @ W_.T + b_ >= 0, X @ W_.T + b_, 0.2 * (X @ W_.T + b_))
    Z0 = F(W, b) @ Vout.T
    assert np.array_equal(path[0][0], W) and np.array_equal(path[0][2], Vout)
    assert np.linalg.matrix_rank(F(W, b)) == 5
    assert np.linalg.matrix_rank(F(path[-1][0], path[-1][1])) == 10
    assert max(np.abs(F(W_, b_) @ V_.T - Z0).max() for W_, b_, V_ in path) < 1e-10
    # the read-out move comes first (points_per_stage points), then one move per missing rank
    assert len(path) == 5 + 5 * 4
    assert all(np.array_equal(p[0], W) for p in path[:5])
    moved = [j for j in range(15) if np.any(path[-1][0][j] != W[j])]
    assert len(moved) == 5 and np.all(path[-1][2][:, moved] == 0)  # units moved only once unused


def test_rank_repair_path_full_rank_input_and_errors():
    X = LS.gaussian_points(4, 2, seed=0)
    rng = np.random.default_rng(1)
    W, b, Vout = rng.standard_normal((6, 2)), rng.standard_normal(6), rng.standard_normal((1, 6))
    assert len(LS.rank_repair_path(X, W, b, Vout)) == 1
    with pytest.raises(ValueError, match="fewer than N"):
        LS.rank_repair_path(X, W[:3], b[:3], Vout[:, :3])
    with pytest.raises(ValueError, match="distinct"):
        LS.rank_repair_path(np.vstack([X, X[:1]]), W, b, Vout)
    with pytest.raises(ValueError, match="Vout"):
        LS.rank_repair_path(X, W, b, Vout[:, :5])


def test_descent_path_is_monotone_and_reaches_yhat():
    X = LS.gaussian_points(12, 4, seed=3)
    y = np.random.default_rng(4).integers(0, 3, 12)
    net = LS.init_net([4, 20, 15, 3], seed=5)
    path, s = LS.descent_path(net, X, y, 0.2, target=1e-3, n_points=21)
    losses = np.array([ce_independent(p, X, y, 0.2) for p in path])
    assert np.all(np.diff(losses) <= 1e-12)
    assert np.isclose(losses[-1], math.log1p(2 * math.exp(-s)), rtol=1e-6)
    assert s >= LS.yhat_scale(3, 1e-3) and s >= 2 * np.abs(forward_f64(net, X, 0.2)).max()
    assert s == max(LS.yhat_scale(3, 1e-3), 2 * np.abs(forward_f64(net, X, 0.2)).max())  # the larger of the two
    assert all(np.array_equal(W, W0) for p in path for (W, _), (W0, _) in zip(p[:-1], net[:-1]))
    assert np.array_equal(path[0][-1][0], net[-1][0])
    with pytest.raises(ValueError, match="rank F_"):
        LS.descent_path(LS.init_net([4, 20, 8, 3], seed=5), X, y)
    with pytest.raises(ValueError, match="target"):
        LS.descent_path(net, X, y, target=0.0)


def test_paper_shapes_one_training_step():
    """Table 2.2's input shape (28x28 MNIST-like images, T_1 = 10 filters: n_1 = 26*26*10 = 6760) trains one
    step on synthetic data, so the paper-scale path of the CNN cannot rot unseen."""
    rng = np.random.default_rng(0)
    X = rng.random((8, 28 * 28))
    net = LS.tiny_cnn(10, seed=0, side=28)
    hist = LS.train_square(net, X, np.eye(10)[rng.integers(0, 10, 8)], 1, lr=1e-3)
    assert len(hist) == 1 and np.isfinite(hist[0])
    ranks = LS.cnn_feature_ranks(net, X)
    assert ranks["F1"]["size"] == 6760 and ranks["F1"]["rank"] == 8
    assert ranks["F3"]["size"] == 20 * 12 * 12


def test_sublevel_path_moves_smoothly_within_every_stage():
    """No jumps: inside each stage every step moves and none carries half the stage's travel (a dropped
    kernel term in stage A or A' would put the whole stage at one point and jump there)."""
    X, y, pa, pb = small_problem(7)
    path, info = LS.sublevel_path_with_info(pa, pb, X, y, 0.2, 15)
    stage = np.array(info["stage"])
    flat = [np.concatenate([np.concatenate([W.ravel(), b]) for W, b in p]) for p in path]
    steps = np.array([np.linalg.norm(b - a) for a, b in zip(flat, flat[1:])])
    for name in ("A", "B", "C1", "C2", "A'"):
        idx = np.where(stage == name)[0]
        idx = idx[idx > 0] - 1  # steps that end inside this stage
        s = steps[idx]
        assert np.all(s > 0) and s.max() <= 0.5 * s.sum(), (name, s)  # no single jump carries the stage


def test_grad_sandwich_bounds_independently():
    rng = np.random.default_rng(8)
    X, Y = rng.standard_normal((6, 4)), rng.standard_normal((6, 2))
    params = [(rng.standard_normal((o, i)), rng.standard_normal(o)) for i, o in [(4, 9), (9, 5), (5, 3), (3, 2)]]
    lower, grad, upper = LS.grad_sandwich(params, X, Y, 1)
    F, G = [X], []
    for W, b in params[:-1]:
        G.append(F[-1] @ W.T + b)
        F.append(sig(G[-1]))
    r = np.linalg.norm(F[-1] @ params[-1][0].T + params[-1][1] - Y)
    lo, up = np.linalg.svd(F[1], compute_uv=False)[5], np.linalg.svd(F[1], compute_uv=False)[0]
    for l in (2, 3):  # hidden layers above k = 1, with the weights of the layer after each
        d = sig(G[l - 1]) * (1 - sig(G[l - 1]))
        sw = np.linalg.svd(params[l][0], compute_uv=False)
        lo *= sw[-1] * d.min()
        up *= sw[0] * d.max()
    assert np.isclose(lower, lo * r) and np.isclose(upper, up * r)


@pytest.mark.parametrize("call, name", [
    (lambda: LS.random_features(np.ones((3, 2)), 2, "relu", alpha=0.0), "alpha"),
    (lambda: LS.random_features(np.ones(3), 2, "relu"), "X"),
    (lambda: LS.random_features(np.ones((3, 2)), 2, "tanhh"), "activation"),
    (lambda: LS.random_features(np.ones((3, 2)), 2, "relu", seed=-1), "seed"),
    (lambda: LS.exact_fit(np.ones(3), np.ones((3, 1))), "F"),
    (lambda: LS.gaussian_points(3, 0), "d"),
    (lambda: LS.random_labels(0, 3), "N"),
    (lambda: LS.triangular_features(np.ones((2, 2)), np.ones(2), float("nan")), "scale"),
    (lambda: LS.triangular_features(np.eye(2), np.array([1.0, 2.0]), 1.0, beta=float("inf")), "beta"),
    (lambda: LS.grad_sandwich([(np.ones((3, 2)), np.ones(3)), (np.ones((1, 3)), np.ones(1))], np.ones((2, 2)), np.ones((2, 2)), 1), "Y"),
    (lambda: LS.backprop_gradient([(np.ones((3, 2)), np.ones(3))], np.ones((2, 3)), np.ones((2, 3)), 0), "X"),
    (lambda: LS.tiny_cnn(2, T3=0), "T3"),
    (lambda: LS.tiny_cnn(2, n_out=0), "n_out"),
    (lambda: LS.tiny_cnn(2, side=5), "side"),
    (lambda: LS.cnn_feature_ranks("net", np.ones((2, 64))), "model"),
    (lambda: LS.train_square(LS.tiny_cnn(1), np.ones((2, 64)), np.ones((3, 10)), 1), "Y"),
    (lambda: LS.train_square(LS.tiny_cnn(1), np.ones((2, 64)), np.ones((2, 10)), 1, lr=0.0), "lr"),
    (lambda: LS.cross_entropy_loss([(np.ones((2, 2)), np.ones(2))], np.ones((3, 2)), [0, 1, 0], alpha=1.0), "alpha"),
    (lambda: LS.cross_entropy_loss([(np.ones((2, 2)), np.ones(2))], np.ones((3, 3)), [0, 1, 0]), "X"),
    (lambda: LS.init_net([3], seed=0), "widths"),
    (lambda: LS.init_net([3, 0], seed=0), "widths"),
    (lambda: LS.train_ce_gd([(np.ones((2, 2)), np.ones(2))], np.ones((3, 2)), [0, 1, 0], steps=0), "steps"),
    (lambda: LS.train_ce_gd([(np.ones((2, 2)), np.ones(2))], np.ones((3, 2)), [0, 1, 0], alpha=1.5), "alpha"),
    (lambda: LS.gradient_norm([(np.ones((2, 2)), np.ones(2))], np.ones((3, 2)), [0, 1, 2]), "y"),
    (lambda: LS.gradient_norm([(np.ones((2, 2)), np.ones(2))], np.ones((3, 2)), [0, 1, 1], alpha=2.0), "alpha"),
    (lambda: LS.layer_outputs([(np.ones((2, 2)), np.ones(2))], np.ones((3, 2)), alpha=-1.0), "alpha"),
    (lambda: LS.straight_line_losses([(np.ones((2, 2)), np.ones(2))], [(np.ones((2, 2)), np.ones(2))], np.ones((3, 2)), [0, 1, 0], n_points=1), "n_points"),
    (lambda: LS.rank_repair_path(np.ones((2, 2)), np.ones((3, 2)), np.ones(2), np.ones((1, 3))), "b"),
    (lambda: LS.rank_repair_path(np.eye(2), np.ones((3, 2)), np.ones(3), np.ones((1, 3)), points_per_stage=1), "points_per_stage"),
    (lambda: LS.rank_repair_path(np.eye(2), np.ones((3, 2)), np.ones(3), np.ones((1, 3)), alpha=1.5), "alpha"),
    (lambda: LS.descent_path(LS.init_net([4, 20, 3], 0), np.ones((2, 4)), [0, 1], n_points=1), "n_points"),
    (lambda: LS.descent_path(LS.init_net([4, 20, 1], 0), np.eye(4)[:2], [0, 0]), "at least 2 classes"),
])
def test_errors_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("call", [
    lambda y: LS.cross_entropy_loss(LS.init_net([2, 3, 2], 0), np.eye(2)[[0, 1, 0]], y),
    lambda y: LS.gradient_norm(LS.init_net([2, 3, 2], 0), np.eye(2)[[0, 1, 0]], y),
    lambda y: LS.train_ce_gd(LS.init_net([2, 3, 2], 0), np.eye(2)[[0, 1, 0]], y, steps=1),
    lambda y: LS.straight_line_losses(LS.init_net([2, 3, 2], 0), LS.init_net([2, 3, 2], 1), np.eye(2)[[0, 1, 0]], y),
])
def test_labels_must_be_one_dimensional(call):
    """y of shape (1, 1, N) passes lib.validate.labels (it checks the last axis): refused here by name."""
    with pytest.raises(ValueError, match=r"y must be a 1-D array of 3 labels, got shape \(1, 1, 3\)"):
        call(np.array([[[0, 1, 1]]]))
    call(np.array([0, 1, 1]))  # the same labels as a 1-D vector are accepted


# ------------------------------------------------------------------ every message word for word

_X3, _y3 = np.eye(3, 5), np.array([0, 1, 1])
_net = LS.init_net([5, 4, 3, 2], 0)


@pytest.mark.parametrize("call, message", [
    (lambda: LS.nr_rank(np.ones(3)),
     'A must be an array with 2 dimensions (2-D), got array of shape (3,) and dtype float64'),
    (lambda: LS.digits_data(1798),
     'n must be an int >= 1 and <= 1797, got 1798'),
    (lambda: LS.digits_data(0),
     'n must be an int >= 1 and <= 1797, got 0'),
    (lambda: LS.digits_data(5, noise_std=-1.0),
     'noise_std must be a finite number >= 0, got -1.0'),
    (lambda: LS.digits_data(5, seed=-1),
     'seed must be an int >= 0, got -1'),
    (lambda: LS.gaussian_points(0, 2),
     'N must be an int >= 1, got 0'),
    (lambda: LS.gaussian_points(2, 0),
     'd must be an int >= 1, got 0'),
    (lambda: LS.gaussian_points(2, 2, -1),
     'seed must be an int >= 0, got -1'),
    (lambda: LS.random_labels(0, 2),
     'N must be an int >= 1, got 0'),
    (lambda: LS.random_labels(2, 0),
     'm must be an int >= 1, got 0'),
    (lambda: LS.random_labels(2, 2, -1),
     'seed must be an int >= 0, got -1'),
    (lambda: LS.activate("x", "relu"),
     "Z must be a numeric array, got str 'x'"),
    (lambda: LS.activate(np.ones(2), "elu"),
     "activation must be one of ('sigmoid', 'tanh', 'softplus', 'leaky_relu', 'relu', 'linear'), got str 'elu'"),
    (lambda: LS.activate(np.ones(2), "relu", 1.0),
     'alpha must be a finite number > 0 and < 1, got 1.0'),
    (lambda: LS.activate(np.ones(2), "relu", 0.0),
     'alpha must be a finite number > 0 and < 1, got 0.0'),
    (lambda: LS.random_features(np.ones(3), 2, "relu"),
     'X must be an array with 2 dimensions (2-D), got array of shape (3,) and dtype float64'),
    (lambda: LS.random_features(_X3, 0, "relu"),
     'width must be an int >= 1, got 0'),
    (lambda: LS.random_features(_X3, 2, "elu"),
     "activation must be one of ('sigmoid', 'tanh', 'softplus', 'leaky_relu', 'relu', 'linear'), got str 'elu'"),
    (lambda: LS.random_features(_X3, 2, "relu", alpha=0.0),
     'alpha must be a finite number > 0 and < 1, got 0.0'),
    (lambda: LS.random_features(_X3, 2, "relu", alpha=1.0),
     'alpha must be a finite number > 0 and < 1, got 1.0'),
    (lambda: LS.random_features(_X3, 2, "relu", seed=-1),
     'seed must be an int >= 0, got -1'),
    (lambda: LS.exact_fit(np.ones(3), np.ones((3, 1))),
     'F must be an array with 2 dimensions (2-D), got array of shape (3,) and dtype float64'),
    (lambda: LS.exact_fit(np.ones((3, 2)), np.ones((2, 1))),
     'Y must be an array of shape (3, n) to agree with F, got array of shape (2, 1) and dtype float64'),
    (lambda: LS.triangular_features(np.ones(3), np.ones(3), 1.0),
     'X must be an array with 2 dimensions (2-D), got array of shape (3,) and dtype float64'),
    (lambda: LS.triangular_features(_X3, np.ones(4), 1.0),
     'a must be an array of shape (5,) to agree with X, got array of shape (4,) and dtype float64'),
    (lambda: LS.triangular_features(_X3, np.arange(5.0), "x"),
     "scale must be a real number, got str 'x'"),
    (lambda: LS.triangular_features(_X3, np.arange(5.0), 1.0, None),
     'beta must be a real number, got None'),
    (lambda: LS.triangular_features(_X3, np.arange(5.0), 1.0, 1.0, "tanh"),
     "activation must be one of ('relu', 'sigmoid', 'softplus'), got str 'tanh'"),
    (lambda: LS.triangular_features(_X3, np.zeros(5), 1.0),
     'a: the projections <a, x_i> must be pairwise distinct (pick another direction)'),
    (lambda: LS.grad_sandwich(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 2), np.ones((3, 2)), 0),
     'k must be an int >= 1 and <= 2, got 0'),
    (lambda: LS.grad_sandwich(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 2), np.ones((3, 2)), 3),
     'k must be an int >= 1 and <= 2, got 3'),
    (lambda: LS.grad_sandwich(LS.init_net([2, 4, 3, 2], 0), np.eye(4, 2), np.ones((4, 2)), 2),
     'k: layer 2 has 3 units, fewer than N = 4 (Lemma 2.4.9 needs n_k >= N)'),
    (lambda: LS.grad_sandwich(LS.init_net([2, 4, 3, 5, 2], 0), np.eye(3, 2), np.ones((3, 2)), 1),
     'params: the widths above layer 1 must be non-increasing, got [4, 3, 5, 2]'),
    (lambda: LS.grad_sandwich(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 3), np.ones((3, 2)), 1),
     'X must be an array of shape (n, 2), got array of shape (3, 3) and dtype float64'),
    (lambda: LS.grad_sandwich(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 2), np.ones((3, 3)), 1),
     'Y must be an array of shape (3, 2) to agree with X and params, got array of shape (3, 3) and dtype float64'),
    (lambda: LS.grad_sandwich("net", np.eye(3, 2), np.ones((3, 2)), 1),
     "params must be a list or tuple, got str 'net'"),
    (lambda: LS.backprop_gradient(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 2), np.ones((3, 2)), 3),
     'k must be an int >= 0 and <= 2, got 3'),
    (lambda: LS.backprop_gradient(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 2), np.ones((3, 2)), -1),
     'k must be an int >= 0 and <= 2, got -1'),
    (lambda: LS.backprop_gradient(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 3), np.ones((3, 2)), 1),
     'X must be an array of shape (n, 2), got array of shape (3, 3) and dtype float64'),
    (lambda: LS.backprop_gradient(LS.init_net([2, 4, 3, 2], 0), np.eye(3, 2), np.ones((3, 3)), 1),
     'Y must be an array of shape (3, 2) to agree with X and params, got array of shape (3, 3) and dtype float64'),
    (lambda: LS.tiny_cnn(0),
     'T1 must be an int >= 1, got 0'),
    (lambda: LS.tiny_cnn(1, T3=0),
     'T3 must be an int >= 1, got 0'),
    (lambda: LS.tiny_cnn(1, n_out=0),
     'n_out must be an int >= 1, got 0'),
    (lambda: LS.tiny_cnn(1, side=5),
     'side must be an int >= 6, got 5'),
    (lambda: LS.tiny_cnn(1, seed=-1),
     'seed must be an int >= 0, got -1'),
    (lambda: LS.cnn_feature_ranks("m", np.ones((2, 64))),
     "model must be a Sequential, got str 'm'"),
    (lambda: LS.cnn_feature_ranks(LS.tiny_cnn(1), np.ones(64)),
     'X must be an array with 2 dimensions (2-D), got array of shape (64,) and dtype float64'),
    (lambda: LS.cnn_feature_ranks(LS.tiny_cnn(1), np.ones((2, 63))),
     'X: rows must be square images, got 63 pixels'),
    (lambda: LS.train_square("m", np.ones((2, 64)), np.ones((2, 10)), 1),
     "model must be a Module, got str 'm'"),
    (lambda: LS.train_square(LS.tiny_cnn(1), np.ones(64), np.ones((2, 10)), 1),
     'X must be an array with 2 dimensions (2-D), got array of shape (64,) and dtype float64'),
    (lambda: LS.train_square(LS.tiny_cnn(1), np.ones((2, 64)), np.ones((3, 10)), 1),
     'Y must be an array of shape (2, n) to agree with X, got array of shape (3, 10) and dtype float64'),
    (lambda: LS.train_square(LS.tiny_cnn(1), np.ones((2, 64)), np.ones((2, 10)), 0),
     'steps must be an int >= 1, got 0'),
    (lambda: LS.train_square(LS.tiny_cnn(1), np.ones((2, 64)), np.ones((2, 10)), 1, lr=0),
     'lr must be a finite number > 0, got 0.0'),
    (lambda: LS.layer_outputs(_net, _X3, -0.5),
     'alpha (leaky-ReLU slope) must be a finite number >= 0 and < 1, got -0.5'),
    (lambda: LS.layer_outputs(_net, _X3, 1.0),
     'alpha (leaky-ReLU slope) must be a finite number >= 0 and < 1, got 1.0'),
    (lambda: LS.layer_outputs(_net, np.ones((3, 4))),
     'X must be an array of shape (n, 5), got array of shape (3, 4) and dtype float64'),
    (lambda: LS.layer_outputs("net", _X3),
     "params must be a list or tuple, got str 'net'"),
    (lambda: LS.cross_entropy_loss(_net, _X3, [0, 1, 2]),
     'y must be class indices >= 0 and < 2 (the number of classes); it holds 0..2, as, got list [0, 1, 2]'),
    (lambda: LS.cross_entropy_loss(_net, _X3, [[[0, 1, 1]]]),
     'y must be a 1-D array of 3 labels, got shape (1, 1, 3)'),
    (lambda: LS.cross_entropy_loss(_net, _X3, [0, 1]),
     'y must be one label per row of X (3 rows), got list [0, 1]'),
    (lambda: LS.cross_entropy_loss(_net, np.ones((3, 4)), _y3),
     'X must be an array of shape (n, 5), got array of shape (3, 4) and dtype float64'),
    (lambda: LS.cross_entropy_loss(_net, _X3, _y3, -0.5),
     'alpha (leaky-ReLU slope) must be a finite number >= 0 and < 1, got -0.5'),
    (lambda: LS.init_net([3]),
     'widths must be a sequence of at least 2 item(s), got list [3]'),
    (lambda: LS.init_net([3, 0]),
     'widths must be an int >= 1, got 0'),
    (lambda: LS.init_net([3, 2], -1),
     'seed must be an int >= 0, got -1'),
    (lambda: LS.train_ce_gd(_net, _X3, _y3, lr=0),
     'lr must be a finite number > 0, got 0.0'),
    (lambda: LS.train_ce_gd(_net, _X3, _y3, steps=0),
     'steps must be an int >= 1, got 0'),
    (lambda: LS.train_ce_gd(_net, _X3, _y3, alpha=-0.5),
     'alpha (leaky-ReLU slope) must be a finite number >= 0 and < 1, got -0.5'),
    (lambda: LS.train_ce_gd(_net, _X3, [0, 1, 2]),
     'y must be class indices >= 0 and < 2 (the number of classes); it holds 0..2, as, got list [0, 1, 2]'),
    (lambda: LS.train_ce_gd(_net, np.ones((3, 4)), _y3),
     'X must be an array of shape (n, 5), got array of shape (3, 4) and dtype float64'),
    (lambda: LS.gradient_norm(_net, _X3, _y3, alpha=1.0),
     'alpha (leaky-ReLU slope) must be a finite number >= 0 and < 1, got 1.0'),
    (lambda: LS.gradient_norm(_net, _X3, [0, 1, 2]),
     'y must be class indices >= 0 and < 2 (the number of classes); it holds 0..2, as, got list [0, 1, 2]'),
    (lambda: LS.gradient_norm(_net, np.ones((3, 4)), _y3),
     'X must be an array of shape (n, 5), got array of shape (3, 4) and dtype float64'),
    (lambda: LS.straight_line_losses(_net, _net, _X3, _y3, n_points=1),
     'n_points must be an int >= 2, got 1'),
    (lambda: LS.straight_line_losses(_net, LS.init_net([5, 4, 2], 0), _X3, _y3),
     'params_b must have the same layer shapes as params_a: [(4, 5), (3, 4), (2, 3)] vs [(4, 5), (2, 4)]'),
    (lambda: LS.straight_line_losses("a", _net, _X3, _y3),
     "params_a must be a list or tuple, got str 'a'"),
    (lambda: LS.straight_line_losses(_net, "b", _X3, _y3),
     "params_b must be a list or tuple, got str 'b'"),
    (lambda: LS.yhat_scale(1, 0.1),
     'm must be an int >= 2, got 1'),
    (lambda: LS.yhat_scale(3, 0.0),
     'target must be a finite number > 0, got 0.0'),
    (lambda: LS.sublevel_path(LS.init_net([5, 3, 3, 2], 0), LS.init_net([5, 3, 3, 2], 1), _X3, _y3),
     'params_a: the widths n_1 > n_2 > ... > n_L must be strictly decreasing (Thm 3.4.9), got [3, 3, 2]'),
    (lambda: LS.sublevel_path(_net, LS.init_net([5, 4, 3, 2], 1), np.ones((3, 5)), _y3),
     'X: rank X = 1 < N = 3; Thm 3.4.9 needs linearly independent samples (N <= d)'),
    (lambda: LS.sublevel_path(_net, [_net[0], (np.zeros((3, 4)), np.zeros(3)), _net[2]], _X3, _y3),
     'params_b: W_2 is rank deficient (Property 3.4.5 fails); repair it first (Lemma 3.4.7)'),
    (lambda: LS.sublevel_path([_net[0], (np.zeros((3, 4)), np.zeros(3)), _net[2]], _net, _X3, _y3),
     'params_a: W_2 is rank deficient (Property 3.4.5 fails); repair it first (Lemma 3.4.7)'),
    (lambda: LS.sublevel_path(_net, [_net[0], _net[1], (np.zeros((2, 3)), np.zeros(2))], _X3, _y3),
     'params_b: W_3 is rank deficient (Property 3.4.5 fails); repair it first (Lemma 3.4.7)'),
    (lambda: LS.sublevel_path(_net, LS.init_net([5, 4, 3, 2], 1), _X3, _y3, points_per_stage=1),
     'points_per_stage must be an int >= 2, got 1'),
    (lambda: LS.sublevel_path(_net, LS.init_net([5, 4, 3, 2], 1), _X3, _y3, alpha=0.0),
     'alpha (leaky-ReLU slope) must be a finite number > 0 and < 1, got 0.0'),
    (lambda: LS.sublevel_path(_net, LS.init_net([5, 4, 3, 2], 1), _X3, [0, 1, 2]),
     'y must be class indices >= 0 and < 2 (the number of classes); it holds 0..2, as, got list [0, 1, 2]'),
    (lambda: LS.sublevel_path(_net, LS.init_net([5, 4, 2], 1), _X3, _y3),
     'params_b must have the same layer shapes as params_a: [(4, 5), (3, 4), (2, 3)] vs [(4, 5), (2, 4)]'),
    (lambda: LS.sublevel_path(LS.init_net([5, 2], 0), LS.init_net([5, 2], 1), _X3, _y3),
     'params_a: the widths n_1 > n_2 > ... > n_L must be strictly decreasing (Thm 3.4.9), got [2]'),
    (lambda: LS.sublevel_path_with_info(_net, LS.init_net([5, 4, 3, 2], 1), _X3, _y3, points_per_stage=1),
     'points_per_stage must be an int >= 2, got 1'),
    (lambda: LS.rank_repair_path(np.eye(3, 5), np.ones((2, 5)), np.ones(2), np.ones((1, 2))),
     'W: the layer has 2 units, fewer than N = 3 (Lemma 3.4.14 needs n >= N)'),
    (lambda: LS.rank_repair_path(np.ones((3, 5)), np.ones((4, 5)), np.ones(4), np.ones((1, 4))),
     'X: the samples must be distinct (Assumption 3.4.4)'),
    (lambda: LS.rank_repair_path(_X3, np.ones((4, 4)), np.ones(4), np.ones((1, 4))),
     'W must be an array of shape (n, 5) to agree with X, got array of shape (4, 4) and dtype float64'),
    (lambda: LS.rank_repair_path(_X3, np.ones((4, 5)), np.ones(3), np.ones((1, 4))),
     'b must be an array of shape (4,) to agree with W, got array of shape (3,) and dtype float64'),
    (lambda: LS.rank_repair_path(_X3, np.ones((4, 5)), np.ones(4), np.ones((1, 3))),
     'Vout must be an array of shape (n, 4) to agree with W, got array of shape (1, 3) and dtype float64'),
    (lambda: LS.rank_repair_path(_X3, np.ones((4, 5)), np.ones(4), np.ones((1, 4)), seed=-1),
     'seed must be an int >= 0, got -1'),
    (lambda: LS.rank_repair_path(_X3, np.ones((4, 5)), np.ones(4), np.ones((1, 4)), alpha=1.0),
     'alpha (leaky-ReLU slope) must be a finite number >= 0 and < 1, got 1.0'),
    (lambda: LS.rank_repair_path(_X3, np.ones((4, 5)), np.ones(4), np.ones((1, 4)), points_per_stage=1),
     'points_per_stage must be an int >= 2, got 1'),
    (lambda: LS.rank_repair_path(np.ones(3), np.ones((4, 5)), np.ones(4), np.ones((1, 4))),
     'X must be an array with 2 dimensions (2-D), got array of shape (3,) and dtype float64'),
    (lambda: LS.descent_path(LS.init_net([5, 8, 1], 0), _X3, [0, 0, 0]),
     'params: the output layer needs at least 2 classes'),
    (lambda: LS.descent_path(LS.init_net([5, 2, 2], 0), _X3, _y3),
     'params: rank F_(L-1) = 2 < N = 3; repair it first (rank_repair_path, Lemma 3.4.14)'),
    (lambda: LS.descent_path(LS.init_net([5, 8, 2], 0), _X3, _y3, target=0),
     'target must be a finite number > 0, got 0.0'),
    (lambda: LS.descent_path(LS.init_net([5, 8, 2], 0), _X3, _y3, n_points=1),
     'n_points must be an int >= 2, got 1'),
    (lambda: LS.descent_path(LS.init_net([5, 8, 2], 0), _X3, _y3, alpha=-0.5),
     'alpha (leaky-ReLU slope) must be a finite number >= 0 and < 1, got -0.5'),
    (lambda: LS.descent_path(LS.init_net([5, 8, 2], 0), np.ones((3, 4)), _y3),
     'X must be an array of shape (n, 5), got array of shape (3, 4) and dtype float64'),
    (lambda: LS.descent_path(LS.init_net([5, 8, 2], 0), _X3, [0, 1, 2]),
     'y must be class indices >= 0 and < 2 (the number of classes); it holds 0..2, as, got list [0, 1, 2]'),])
def test_error_messages_word_for_word(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


# ------------------------------------------------------------------ defaults

def _same_nets(a, b):
    return len(a) == len(b) and all(np.array_equal(W, V) and np.array_equal(c, d) for (W, c), (V, d) in zip(a, b))


def test_part_b_defaults():
    """alpha = 0.2 everywhere in part B; lr 0.5 and 300 steps; 101 line points; 50 points per stage."""
    X, y, pa, pb = small_problem(3, N=4, d=8, widths=(6, 4, 3))
    assert LS.cross_entropy_loss(pa, X, y) == LS.cross_entropy_loss(pa, X, y, 0.2) != LS.cross_entropy_loss(pa, X, y, 0.3)
    assert all(np.array_equal(u, v) for u, v in zip(LS.layer_outputs(pa, X), LS.layer_outputs(pa, X, 0.2)))
    assert LS.gradient_norm(pa, X, y) == LS.gradient_norm(pa, X, y, 0.2)
    line = LS.straight_line_losses(pa, pb, X, y)
    assert len(line) == 101 and np.array_equal(line, LS.straight_line_losses(pa, pb, X, y, 0.2, 101))
    trained, hist = LS.train_ce_gd(pa, X, y)
    trained2, hist2 = LS.train_ce_gd(pa, X, y, 0.2, 0.5, 300)
    assert len(hist) == 300 and hist == hist2 and _same_nets(trained, trained2)
    ta, _ = LS.train_ce_gd(pa, X, y, steps=40)
    tb, _ = LS.train_ce_gd(pb, X, y, steps=40)
    path = LS.sublevel_path(ta, tb, X, y)
    ref = LS.sublevel_path(ta, tb, X, y, 0.2, 50)
    assert len(path) == 5 * 49 + 1 and all(_same_nets(p, q) for p, q in zip(path, ref))
    path, info = LS.sublevel_path_with_info(ta, tb, X, y)
    assert len(path) == 246 and info["stage"].count("A") == 50 and info["stage"].count("B") == 49


def test_part_a_defaults():
    assert np.array_equal(LS.gaussian_points(3, 2), LS.gaussian_points(3, 2, 0))
    assert np.array_equal(LS.random_labels(5, 3)[0], LS.random_labels(5, 3, 0)[0])
    Xd, yd = LS.digits_data(300)
    X2, y2 = LS.digits_data(300, math.sqrt(1e-5), 0)
    assert np.array_equal(Xd, X2) and np.array_equal(yd, y2)
    clean, _ = LS.digits_data(300, noise_std=0.0)
    assert np.std(Xd - clean) == pytest.approx(math.sqrt(1e-5), rel=0.05)
    Z = np.array([[-1.0, 2.0]])
    assert LS.activate(Z, "leaky_relu").tolist() == [[-0.1, 2.0]]
    G = LS.gaussian_points(6, 3, 1)
    assert np.array_equal(LS.random_features(G, 4, "leaky_relu"), LS.random_features(G, 4, "leaky_relu", 0, 0.1))
    a = np.array([1.0, 0.4, -0.2])
    A1, o1 = LS.triangular_features(G, a, 2.0)
    A2, o2 = LS.triangular_features(G, a, 2.0, 1.0, "relu")
    assert np.array_equal(A1, A2) and np.array_equal(o1, o2)
    assert _same_nets(LS.init_net([3, 2]), LS.init_net([3, 2], 0))
    c1, c2 = LS.tiny_cnn(1), LS.tiny_cnn(1, 0, 20, 10, 8)
    assert all(torch.equal(u, v) for u, v in zip(c1.state_dict().values(), c2.state_dict().values()))
    Xi = np.random.default_rng(0).random((4, 64))
    h1 = LS.train_square(LS.tiny_cnn(1), Xi, np.ones((4, 10)), 3)
    h2 = LS.train_square(LS.tiny_cnn(1), Xi, np.ones((4, 10)), 3, lr=3e-3)
    assert h1 == h2 != LS.train_square(LS.tiny_cnn(1), Xi, np.ones((4, 10)), 3, lr=4e-3)


def test_rank_repair_and_descent_defaults():
    rng = np.random.default_rng(0)
    Xr = LS.gaussian_points(6, 3, 2)
    W0 = rng.standard_normal((3, 3))
    W, b = np.vstack([W0, W0, W0]), np.tile(rng.standard_normal(3), 3)
    Vo = rng.standard_normal((2, 9))
    p1 = LS.rank_repair_path(Xr, W, b, Vo)
    p2 = LS.rank_repair_path(Xr, W, b, Vo, 0.2, 0, 20)
    assert len(p1) == len(p2) and all(all(np.array_equal(u, v) for u, v in zip(s, t)) for s, t in zip(p1, p2))
    assert (len(p1) - 1) % 19 == 0 and len(p1) > 20
    Xd = LS.gaussian_points(4, 5, 3)
    net = LS.init_net([5, 12, 3], 4)
    yd = np.array([0, 1, 2, 1])
    nets, s = LS.descent_path(net, Xd, yd)
    nets2, s2 = LS.descent_path(net, Xd, yd, 0.2, 1e-3, 51)
    assert len(nets) == 51 and s == s2 and all(_same_nets(u, v) for u, v in zip(nets, nets2))
    assert s >= LS.yhat_scale(3, 1e-3)


# ---------------------------------------------------------------------------------------------
# issue 34: the NR threshold's one home, the sigmoid MLP helpers, global minima, Table 2.1 arithmetic,
# ReLU dead units, the copy step and the paths of Thms 3.4.13, 3.4.16, 3.4.17(2)

def test_nr_threshold_by_the_formula_and_in_nr_rank():
    s = np.array([4.0, 1.0, 1e-20])
    assert LS.nr_threshold(s, (3, 5)) == pytest.approx(0.5 * 3.0 * 4.0 * np.finfo(float).eps, rel=1e-15)
    assert LS.nr_threshold(s[::-1], (3, 5)) == LS.nr_threshold(s, (3, 5))  # the largest value, in any order
    assert LS.nr_threshold(np.zeros(0), (1, 1)) == 0.0
    A = np.diag([1.0, 1e-15, 1e-17])
    assert LS.nr_rank(A)[0] == 2  # threshold 0.5 * sqrt(7) * eps = 2.9e-16
    for bad, match in (((s, (3,)), "shape"), ((s, (0, 3)), "shape"), ((-s, (3, 5)), "svals"), ((np.ones((2, 2)), (2, 2)), "svals")):
        with pytest.raises(ValueError, match=match):
            LS.nr_threshold(*bad)


def test_leaky_inverse_inverts_the_leaky_relu():
    Z = np.linspace(-3, 3, 13)
    assert np.allclose(LS.leaky_inverse(np.where(Z >= 0, Z, 0.3 * Z), 0.3), Z)
    assert LS.leaky_inverse(np.array([-0.6]), 0.2)[0] == pytest.approx(-3.0)
    with pytest.raises(ValueError, match="alpha"):
        LS.leaky_inverse(Z, 0.0)


def test_sigmoid_mlp_params_outputs_and_gradients():
    X = np.random.default_rng(0).standard_normal((7, 4))
    Y = np.random.default_rng(1).standard_normal((7, 3))
    model = LS.sigmoid_mlp([4, 6, 5, 3], seed=2)
    assert sum(isinstance(m, torch.nn.Sigmoid) for m in model) == 2 and model[0].weight.dtype == torch.float64
    P = LS.mlp_params(model)
    assert [W.shape for W, _ in P] == [(6, 4), (5, 6), (3, 5)]
    assert np.array_equal(P[0][0], LS.mlp_params(LS.sigmoid_mlp([4, 6, 5, 3], seed=2))[0][0])
    with torch.no_grad():
        ref = model(torch.tensor(X)).numpy()
    out = LS.sigmoid_outputs(P, X)
    assert len(out) == 3 and np.allclose(out[-1], ref, atol=1e-14)
    assert np.allclose(out[0], 1 / (1 + np.exp(-(X @ P[0][0].T + P[0][1]))), atol=1e-15)
    for k in range(3):  # autograd against central finite differences, and backprop (Lemma 2.6.2) entrywise
        g = LS.autograd_gradient(P, X, Y, k)
        assert np.allclose(LS.backprop_gradient(P, X, Y, k), g, atol=1e-12)
        i, j, h = 1, 2, 1e-6
        def loss(delta):
            Q = [(W.copy(), b.copy()) for W, b in P]
            Q[k][0][i, j] += delta
            return 0.5 * np.sum((LS.sigmoid_outputs(Q, X)[-1] - Y) ** 2)
        assert g[i, j] == pytest.approx((loss(h) - loss(-h)) / (2 * h), rel=1e-6, abs=1e-9)
    with pytest.raises(ValueError, match="model"):
        LS.mlp_params(torch.nn.Sequential(torch.nn.Sigmoid()))
    with pytest.raises(ValueError, match="widths"):
        LS.sigmoid_mlp([4])


@pytest.mark.parametrize("widths", [[6, 24, 3], [6, 24, 4, 3]])
def test_global_minimum_fits_the_labels_and_differs_between_seeds(widths):
    X = np.random.default_rng(3).standard_normal((12, 6))
    y = np.arange(12) % 3
    nets = [LS.global_minimum(widths, X, y, seed=s) for s in (0, 1)]
    for P in nets:
        assert [W.shape for W, _ in P] == [(b, a) for a, b in zip(widths, widths[1:])]
        out = LS.sigmoid_outputs(P, X)[-1]
        assert np.abs(out - np.eye(3)[y]).max() < 1e-8
        assert all(np.abs(LS.autograd_gradient(P, X, np.eye(3)[y], k)).max() < 1e-6 for k in range(len(P)))
    assert np.abs(nets[0][1][0] - nets[1][1][0]).max() > 0.1
    if len(widths) == 4:  # Case 2: every sample of class j has F_2 = E_j (rows identical within a class)
        F2 = LS.sigmoid_outputs(nets[0], X)[1]
        assert np.allclose(F2[0], F2[3]) and not np.allclose(F2[0], F2[1])


def test_global_minimum_errors():
    X, y = np.random.default_rng(3).standard_normal((12, 6)), np.arange(12) % 3
    with pytest.raises(ValueError, match="rank F_1 < N"):
        LS.global_minimum([6, 5, 3], X, y)
    with pytest.raises(ValueError, match="n_2 >= m"):
        LS.global_minimum([6, 24, 2, 3], X, y)
    with pytest.raises(ValueError, match="Cases 1 and 2"):
        LS.global_minimum([6, 24, 4, 4, 3], X, y)


def test_relu_layer_draws_ranks_and_live_units():
    X = np.abs(np.random.default_rng(4).standard_normal((10, 3)))
    ranks, live = LS.relu_layer_draws(X, 15, 6, seed=2)
    for i in range(6):
        F = LS.random_features(X, 15, "relu", seed=20_000 + i)
        assert ranks[i] == LS.nr_rank(F)[0] and live[i] == np.sum(np.any(F != 0, axis=0))
    assert np.all(ranks <= np.minimum(live, 10))
    with pytest.raises(ValueError, match="n_draws"):
        LS.relu_layer_draws(X, 15, 0)


def test_conv_widths_of_table_21_and_figure_21():
    assert LS.conv_widths((224, 224, 3), [("conv", 3, 1, 1, 64)]) == [(224, 224, 64)]
    assert LS.conv_widths((299, 299, 3), [("conv", 3, 2, 0, 32), ("conv", 3, 1, 0, 32), ("conv", 3, 1, 1, 64)])[-1] == (147, 147, 64)
    assert LS.conv_widths((224, 224, 3), [("conv", 7, 2, 3, 64)]) == [(112, 112, 64)]
    assert LS.conv_widths((28, 28, 1), [("conv", 3, 1, 0, 100), ("pool", 2, 2), ("conv", 2, 1, 0, 20), ("pool", 2, 2)]) == \
        [(26, 26, 100), (13, 13, 100), (12, 12, 20), (6, 6, 20)]
    assert LS.conv_widths((5, 7, 2), [("pool", 3, 1)]) == [(3, 5, 2)]
    for bad, match in (((28, 28), "in_shape"), ([("conv", 3, 1, 0)], "layers"), ([("fc", 10)], "layers"),
                       ([("conv", 40, 1, 0, 3)], "does not fit")):
        args = (bad, [("pool", 2, 2)]) if match == "in_shape" else ((28, 28, 1), bad)
        with pytest.raises(ValueError, match=match):
            LS.conv_widths(*args)


def test_conv_matrix_1d_is_the_worked_example_and_torch_conv1d():
    W = np.array([[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
    assert np.array_equal(LS.conv_matrix_1d(W, 5).T, np.array(
        [[1, 2, 3, 0, 0], [4, 5, 6, 0, 0], [0, 1, 2, 3, 0], [0, 4, 5, 6, 0], [0, 0, 1, 2, 3], [0, 0, 4, 5, 6]]))
    rng = np.random.default_rng(5)
    F, x = rng.standard_normal((3, 4)), rng.standard_normal((2, 11))
    U = LS.conv_matrix_1d(F, 11, stride=2)
    ref = torch.nn.functional.conv1d(torch.tensor(x)[:, None, :], torch.tensor(F.T)[:, None, :], stride=2).numpy()
    assert U.shape == (11, 5 * 4) and np.allclose(x @ U, ref.transpose(0, 2, 1).reshape(2, -1))
    with pytest.raises(ValueError, match="do not fit"):
        LS.conv_matrix_1d(np.ones((6, 2)), 5)


def _leaky_net_pair(widths, N, d, seeds=(0, 1), steps=60, alpha=0.2, lr=0.1):
    X = LS.gaussian_points(N, d, seed=7)
    y = np.arange(N) % widths[-1]
    nets = [LS.train_ce_gd(LS.init_net([d, *widths], s), X, y, alpha, lr, steps)[0] for s in seeds]
    return X, y, nets


def test_path_steps_by_hand_and_errors():
    a, b = [(np.zeros((1, 1)), np.zeros(1))], [(np.ones((1, 1)), np.ones(1))]
    assert np.allclose(LS.path_steps([a, b, a]), [math.sqrt(2), math.sqrt(2)])
    with pytest.raises(ValueError, match="same layer shapes"):
        LS.path_steps([a, [(np.ones((1, 2)), np.ones(1))]])
    with pytest.raises(ValueError, match="path"):
        LS.path_steps([a])


def test_sublevel_path_is_continuous_from_theta():
    X, y, (a, b) = _leaky_net_pair([8, 5, 3], 6, 10)
    coarse = LS.path_steps(LS.sublevel_path(a, b, X, y, 0.2, 41))
    fine = LS.path_steps(LS.sublevel_path(a, b, X, y, 0.2, 81))
    assert fine.max() <= 0.6 * coarse.max()
    assert coarse[0] <= 2 * np.median(coarse[:40])  # the first step out of theta is an ordinary step of stage A


def test_copy_step_path_keeps_the_output_and_ends_at_the_target():
    rng = np.random.default_rng(8)
    X = np.hstack([rng.standard_normal((5, 3)), np.ones((5, 1))])
    W, Wt, V = rng.standard_normal((10, 4)), rng.standard_normal((10, 4)), rng.standard_normal((2, 10))
    path = LS.copy_step_path(X, W, V, Wt, 0.3, points_per_stage=4)
    Z0 = np.where(X @ W.T >= 0, X @ W.T, 0.3 * X @ W.T) @ V.T
    for Wp, Vp in path:
        U = X @ Wp.T
        assert np.abs(np.where(U >= 0, U, 0.3 * U) @ Vp.T - Z0).max() < 1e-9
    assert np.array_equal(path[0][0], W) and np.array_equal(path[-1][0], Wt)
    assert len(path) == 1 + 6 * 3
    with pytest.raises(ValueError, match="2N"):
        LS.copy_step_path(X, W[:9], V[:, :9], Wt[:9])
    with pytest.raises(ValueError, match="W_target: its features have rank"):
        LS.copy_step_path(X, W, V, np.ones((10, 4)))


def test_rank_repair_path_with_the_relu():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((6, 3))
    W0, b0 = rng.standard_normal((3, 3)), rng.standard_normal(3)
    W, b = np.vstack([W0] * 3), np.concatenate([b0] * 3)
    V = rng.standard_normal((2, 9))
    path = LS.rank_repair_path(X, W, b, V, alpha=0.0, seed=1, points_per_stage=3)
    Z0 = np.maximum(X @ W.T + b, 0) @ V.T
    for Wp, bp, Vp in path:
        assert np.abs(np.maximum(X @ Wp.T + bp, 0) @ Vp.T - Z0).max() < 1e-9
    assert LS.nr_rank(np.maximum(X @ path[-1][0].T + path[-1][1], 0))[0] == 6


def test_valley_descent_path_goes_down_from_a_rank_deficient_start():
    X = LS.gaussian_points(12, 3, seed=1)  # N > d
    y = np.arange(12) % 3
    net = LS.init_net([3, 12, 6, 3], 2)
    net[0][0][6:], net[0][1][6:] = net[0][0][:6], net[0][1][:6]
    path, info = LS.valley_descent_path(net, X, y, 0.2, k=1, target=1e-2, seed=0, points_per_stage=6)
    losses = np.array([LS.cross_entropy_loss(p, X, y, 0.2) for p in path])
    assert np.diff(losses).max() <= 1e-12 * losses[0] and losses[-1] == pytest.approx(1e-2, rel=1e-6)
    assert set(info["stage"]) == {"repair", "A", "C"} and len(info["stage"]) == len(path)
    assert np.abs(losses[np.array(info["stage"]) != "C"] - losses[0]).max() < 1e-9
    assert all(np.array_equal(W, W0) for (W, _), (W0, _) in zip(path[0], net))
    for bad, match in ((dict(k=3), "k"), (dict(alpha=0.0), "invertible"), (dict(k=2), "n_k >= N")):
        with pytest.raises(ValueError, match=match):
            LS.valley_descent_path(net, X, y, **{"alpha": 0.2, **bad})


@pytest.mark.parametrize("make, widths, alpha", [(LS.wide_first_layer_path, [12, 5, 3], 0.2),
                                                 (LS.wide_relu_path, [12, 12, 3], 0.0)])
def test_wide_paths_stay_in_the_sublevel_set(make, widths, alpha):
    X, y, (a, b) = _leaky_net_pair(widths, 6, 2, alpha=alpha)
    path, info = make(a, b, X, y, alpha, points_per_stage=4)
    losses = np.array([LS.cross_entropy_loss(p, X, y, alpha) for p in path])
    ends = max(losses[0], losses[-1])
    assert losses.max() <= ends + 1e-9 and len(info["stage"]) == len(path)
    assert all(np.array_equal(W, Wa) for (W, _), (Wa, _) in zip(path[0], a))
    assert all(np.allclose(W, Wb) for (W, _), (Wb, _) in zip(path[-1], b))
    stage = np.array(info["stage"])
    assert "copy" in stage and np.abs(losses[stage == "copy"] - losses[0]).max() < 1e-9
    fine, _ = make(a, b, X, y, alpha, points_per_stage=7)
    assert LS.path_steps(fine).max() <= 0.6 * LS.path_steps(path).max()
    with pytest.raises(ValueError, match="2 N"):
        make([(W[:5], b_[:5]) if l == 0 else (W[:, :5] if l == 1 else W, b_) for l, (W, b_) in enumerate(a)],
             [(W[:5], b_[:5]) if l == 0 else (W[:, :5] if l == 1 else W, b_) for l, (W, b_) in enumerate(b)], X, y, alpha)


def test_defaults_of_the_new_helpers():
    X = np.abs(np.random.default_rng(4).standard_normal((10, 3)))
    assert all(np.array_equal(a, b) for a, b in zip(LS.relu_layer_draws(X, 15, 3), LS.relu_layer_draws(X, 15, 3, seed=0)))
    assert np.array_equal(LS.mlp_params(LS.sigmoid_mlp([3, 4, 2]))[0][0], LS.mlp_params(LS.sigmoid_mlp([3, 4, 2], 0))[0][0])
    W = np.random.default_rng(1).standard_normal((2, 3))
    assert np.array_equal(LS.conv_matrix_1d(W, 7), LS.conv_matrix_1d(W, 7, stride=1))
    Xg = np.random.default_rng(3).standard_normal((12, 6))
    y = np.arange(12) % 3
    P = LS.global_minimum([6, 24, 4, 3], Xg, y)
    assert all(np.array_equal(a, b) for (a, _), (b, _) in zip(P, LS.global_minimum([6, 24, 4, 3], Xg, y, seed=0)))
    F2 = LS.sigmoid_outputs(P, Xg)[1]
    assert F2.min() > 0.1 - 1e-9 and F2.max() < 0.9 + 1e-9  # the class code E is drawn in (0.1, 0.9)
    assert np.all(P[1][1] == 0) and np.all(P[2][1] == 0)  # zero biases above the first layer


def test_copy_step_path_defaults_and_stage_lengths():
    rng = np.random.default_rng(8)
    X = np.hstack([rng.standard_normal((5, 3)), np.ones((5, 1))])
    W, Wt, V = rng.standard_normal((10, 4)), rng.standard_normal((10, 4)), rng.standard_normal((2, 10))
    path = LS.copy_step_path(X, W, V, Wt)
    assert len(path) == 1 + 6 * 9
    same = LS.copy_step_path(X, W, V, Wt, 0.2, 10)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(path, same))
    assert np.abs(path[-1][1] - same[-1][1]).max() == 0.0


def test_valley_and_wide_paths_defaults():
    X = LS.gaussian_points(12, 3, seed=1)
    y = np.arange(12) % 3
    net = LS.init_net([3, 12, 6, 3], 2)
    path, info = LS.valley_descent_path(net, X, y)
    assert len(path) == 1 + 2 * 49 and info["s"] == pytest.approx(LS.yhat_scale(3, 1e-3))
    assert LS.cross_entropy_loss(path[-1], X, y, 0.2) == pytest.approx(1e-3, rel=1e-6)
    Xw, yw, (a, b) = _leaky_net_pair([12, 5, 3], 6, 2)
    p1, i1 = LS.wide_first_layer_path(a, b, Xw, yw)
    p2, _ = LS.wide_first_layer_path(a, b, Xw, yw, 0.2, 0, 20)
    assert len(p1) == len(p2) and all(np.array_equal(u[0][0], v[0][0]) for u, v in zip(p1, p2))
    assert i1["stage"].count("A") == 19
    Xr, yr, (ra, rb) = _leaky_net_pair([12, 12, 3], 6, 2, alpha=0.0)
    q1, j1 = LS.wide_relu_path(ra, rb, Xr, yr)
    q2, _ = LS.wide_relu_path(ra, rb, Xr, yr, 0.0, 0, 10)
    assert len(q1) == len(q2) and j1["stage"].count("segment") == 9
    losses = [LS.cross_entropy_loss(p, Xr, yr, 0.0) for p in q1]
    assert max(losses) <= max(losses[0], losses[-1]) + 1e-9


@pytest.mark.parametrize("call, message", [
    (lambda: LS.nr_threshold([1.0, 2.0], (2, 2, 2)), "shape must be (m, n), got [2, 2, 2]"),
    (lambda: LS.nr_threshold([-1.0], (2, 2)), "svals: singular values are non-negative"),
    (lambda: LS.conv_widths((28, 28, 1), [("conv", 3, 1, 0)]),
     "layers: expected ('conv', kernel, stride, padding, channels) or ('pool', kernel, stride), got ('conv', 3, 1, 0)"),
    (lambda: LS.conv_widths((4, 4, 1), [("conv", 5, 1, 0, 2)]), "layers: ('conv', 5, 1, 0, 2) does not fit its 4 x 4 input"),
    (lambda: LS.conv_widths((4, 4), [("pool", 2, 2)]), "in_shape must be a sequence of at least 3 item(s), got list [4, 4]"),
    (lambda: LS.conv_widths((4, 4, 1, 1), [("pool", 2, 2)]), "in_shape must be (H, W, C), got (4, 4, 1, 1)"),
    (lambda: LS.conv_matrix_1d(np.ones((6, 2)), 5), "W: filters of length 6 do not fit an input of 5"),
    (lambda: LS.global_minimum([6, 24, 4, 4, 3], np.ones((3, 6)), [0, 1, 2]),
     "widths must be [d, n_1, m] or [d, n_1, n_2, m] (Cases 1 and 2), got [6, 24, 4, 4, 3]"),
    (lambda: LS.global_minimum([6, 24, 2, 3], np.ones((3, 6)), [0, 1, 2]), "widths: Case 2 needs n_2 >= m = 3, got [6, 24, 2, 3]"),
    (lambda: LS.mlp_params(torch.nn.Sequential(torch.nn.Sigmoid())), "model: no torch.nn.Linear layer in it"),
    (lambda: LS.path_steps([[(np.ones((1, 1)), np.ones(1))], [(np.ones((1, 2)), np.ones(1))]]),
     "path: every network must have the same layer shapes"),
    (lambda: LS.copy_step_path(np.eye(3), np.ones((5, 3)), np.ones((1, 5)), np.ones((5, 3))),
     "W: the layer has 5 units, fewer than 2N = 6 (Lemma 3.4.15)"),
    (lambda: LS.copy_step_path(np.eye(2), np.ones((4, 2)), np.ones((1, 4)), np.eye(4)[:, :2]),
     "W: its features have rank < N = 2; repair them first (rank_repair_path, Lemma 3.4.14)"),
    (lambda: LS.valley_descent_path(LS.init_net([3, 12, 6, 3], 0), np.ones((4, 3)), [0, 1, 2, 0]),
     "X: the samples must be distinct (Assumption 3.4.4)"),
    (lambda: LS.valley_descent_path(LS.init_net([3, 12, 6, 3], 0), np.eye(3), [0, 1, 2], alpha=0.0),
     "alpha (leaky-ReLU slope) must be > 0: Thm 3.4.13 needs an invertible activation"),
    (lambda: LS.valley_descent_path(LS.init_net([3, 2, 6, 3], 0), np.eye(3), [0, 1, 2]),
     "params: Thm 3.4.13 needs n_k >= N = 3 and n_(k+1) > ... > n_L, got widths [2, 6, 3] with k = 1"),
    (lambda: LS.wide_first_layer_path(LS.init_net([3, 5, 2], 0), LS.init_net([3, 5, 2], 1), np.eye(3), [0, 1, 0]),
     "params: Thm 3.4.16 needs at least 2 N = 6 units in hidden layer(s) [1], got widths [5, 2]"),
    (lambda: LS.wide_first_layer_path(LS.init_net([3, 6, 2], 0), LS.init_net([3, 6, 2], 1), np.eye(3), [0, 1, 0], alpha=0.0),
     "alpha (leaky-ReLU slope) must be > 0: Thm 3.4.16 needs an invertible activation"),
    (lambda: LS.wide_relu_path(LS.init_net([3, 6, 5, 2], 0), LS.init_net([3, 6, 5, 2], 1), np.eye(3), [0, 1, 0]),
     "params: Thm 3.4.17(2) needs at least 2 N = 6 units in hidden layer(s) [1, 2], got widths [6, 5, 2]"),
    (lambda: LS.wide_relu_path(LS.init_net([3, 6, 2], 0), LS.init_net([3, 7, 2], 1), np.eye(3), [0, 1, 0]),
     "params_b must have the same layer shapes as params_a: [(6, 3), (2, 6)] vs [(7, 3), (2, 7)]"),
])
def test_new_error_messages_word_for_word(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_valley_descent_refuses_a_rank_deficient_layer_above():
    net = LS.init_net([3, 12, 6, 3], 2)
    net[2][0][:] = np.outer(np.ones(3), net[2][0][0])  # W_3 of rank 1
    X, y = LS.gaussian_points(12, 3, seed=1), np.arange(12) % 3
    with pytest.raises(ValueError, match=r"W_3 is rank deficient \(Property 3.4.5\)"):
        LS.valley_descent_path(net, X, y)


def test_wide_relu_path_says_when_a_repair_stays_short(monkeypatch):
    X, y, (a, b) = _leaky_net_pair([12, 12, 3], 6, 2, alpha=0.0)
    monkeypatch.setattr(LS, "_repair_layer", lambda params, X_, l, alpha, seed, n: [params])
    a[0][0][:] = -np.abs(a[0][0]) * 0  # every first-layer unit dead (weights 0, biases negative)
    a[0][1][:] = -1.0
    with pytest.raises(ValueError, match="the repair of hidden layer 1 did not reach rank N"):
        LS.wide_relu_path(a, b, X, y, 0.0)


# ---- bad inputs found by scripts/bad_input_sweep.py once these functions had a valid call there

def test_valley_descent_path_refuses_k_without_a_sub_network_above():
    X, y = LS.gaussian_points(3, 5, seed=0), np.array([0, 1, 1])
    with pytest.raises(ValueError, match=r"^k \(the wide layer\) must be <= L - 2 = 0"):
        LS.valley_descent_path(LS.init_net([5, 4, 2], 0), X, y, k=1)  # was an IndexError in stage A
    path, _ = LS.valley_descent_path(LS.init_net([5, 4, 3, 2], 0), X, y, k=1, points_per_stage=2)
    assert len(path) > 1


def test_wide_first_layer_path_needs_three_layers():
    X, y = LS.gaussian_points(3, 5, seed=0), np.array([0, 1, 1])
    with pytest.raises(ValueError, match=r"^params_a: Thm 3\.4\.9's path on layers 2\.\.L needs L >= 3 layers, got 2"):
        LS.wide_first_layer_path(LS.init_net([5, 6, 2], 0), LS.init_net([5, 6, 2], 1), X, y)


@pytest.mark.parametrize("make, widths, alpha", [(LS.wide_first_layer_path, [5, 6, 3, 2], 0.2),
                                                 (LS.wide_relu_path, [5, 6, 2], 0.0)])
@pytest.mark.parametrize("seed", ["x", -1, 2.5])
def test_wide_paths_check_the_seed_before_using_it(make, widths, alpha, seed):
    X, y = LS.gaussian_points(3, 5, seed=0), np.array([0, 1, 1])
    a, b = LS.init_net(widths, 0), LS.init_net(widths, 1)
    with pytest.raises(ValueError, match="^seed"):  # 'x' was a TypeError from seed + 1 not naming seed
        make(a, b, X, y, alpha, seed=seed, points_per_stage=2)


def test_train_square_compares_Y_with_the_model_outputs():
    """Y of 10 columns for a net of 10 outputs trains; 1 or 3 columns (which torch would broadcast) are refused."""
    X = np.random.default_rng(0).standard_normal((6, 64))
    for cols in (1, 3):
        with pytest.raises(ValueError, match=r"^Y must have the shape of the model's outputs on X, \(6, 10\), got \(6, " + str(cols)):
            LS.train_square(LS.tiny_cnn(2, seed=0), X, np.ones((6, cols)), 2)
    assert len(LS.train_square(LS.tiny_cnn(2, seed=0), X, np.ones((6, 10)), 2)) == 2


def test_exact_fit_of_zero_targets_is_exact():
    """Y = 0: lam = 0 and the relative residual is defined as 0 (not 0/0 = NaN)."""
    F = np.random.default_rng(0).standard_normal((4, 3))
    lam, res = LS.exact_fit(F, np.zeros((4, 2)))
    assert res == 0.0 and (lam == 0).all() and lam.shape == (3, 2)
    Y = np.random.default_rng(1).standard_normal((4, 2))
    lam, res = LS.exact_fit(F, Y)  # the ordinary case, against an independent lstsq
    want = np.linalg.lstsq(F, Y, rcond=None)[0]
    assert res == pytest.approx(np.linalg.norm(F @ want - Y) / np.linalg.norm(Y), rel=1e-12) and res > 0.01


def test_train_square_names_X_when_its_rows_are_not_square_images():
    with pytest.raises(ValueError, match=r"^X must hold flattened square images \(side \* side columns\) for a CNN, got 63"):
        LS.train_square(LS.tiny_cnn(2, seed=0), np.ones((6, 63)), np.ones((6, 10)), 2)
