"""Unit tests of lib.image_nets (chapter 08, section on the image networks of §6.1, §6.3, §6.4).

Values are checked against independent computations: parameter counts worked out by hand, the exact
float64 local maps of lib.linear_regions (no autograd), a hand-written SGD/AdamW step, finite
differences inside a linear region, scipy's connected-component labelling, brute-force searches and
explicit loops for the covariance.
"""

import itertools

import numpy as np
import pytest
import torch
from scipy import ndimage

from lib import image_nets as I
from lib import linear_regions as LR
from lib.data import DataSplit, load_digits_split
from lib.nets import activation_patterns as np_patterns


@pytest.fixture(scope="module")
def digits():
    return I.standardise(load_digits_split(standardize=False))


def small_split(n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 64, generator=g)
    y = torch.arange(n) % 10
    return DataSplit(X, y, X[:12].clone(), y[:12].clone(), "toy")


def dense_params(net):
    lin = [m for m in net if isinstance(m, torch.nn.Linear)]
    return [(m.weight.detach().double().numpy(), m.bias.detach().double().numpy()) for m in lin]


# ---------------------------------------------------------------------------------------------- nets
@pytest.mark.parametrize("arch, n_params", [
    ("linear", 64 * 10 + 10),
    ("dense", 64 * 128 + 128 + 128 * 10 + 10),
    ("simple", (9 * 32 + 32) + (32 * 32 * 9 + 32) + (32 * 4 * 10 + 10)),
    ("complex", (9 * 32 + 32) + 2 * (32 * 32 * 9 + 32) + (32 * 10 + 10)),
])
def test_make_net_shapes_and_sizes(arch, n_params):
    net = I.make_net(arch, seed=3)
    assert sum(p.numel() for p in net.parameters()) == n_params
    out = net(torch.randn(5, 64))
    assert out.shape == (5, 10) and out.dtype == torch.float32


def test_make_net_layer_order():
    kinds = lambda net: [type(m).__name__ for m in net]  # noqa: E731
    assert kinds(I.make_net("linear")) == ["Linear"]
    assert kinds(I.make_net("dense")) == ["Linear", "ReLU", "Linear"]
    assert kinds(I.make_net("simple")) == ["_Image", "Conv2d", "MaxPool2d", "ReLU", "Conv2d", "MaxPool2d", "ReLU",
                                           "Flatten", "Linear"]
    assert kinds(I.make_net("complex")) == ["_Image"] + ["Conv2d", "ReLU", "MaxPool2d"] * 3 + ["Flatten", "Linear"]
    for m in I.make_net("complex"):
        if isinstance(m, torch.nn.Conv2d):
            assert m.kernel_size == (3, 3) and m.padding == (1, 1) and m.stride == (1, 1) and m.out_channels == 32
        if isinstance(m, torch.nn.MaxPool2d):
            assert m.kernel_size == 2 and m.stride == 2
    assert I.make_net("dense")[0].out_features == 128


def test_conv_nets_read_pixels_as_8x8_images():
    """Pixel (r, c) of the row is image pixel (r, c): a conv net's first-layer output at (r, c) sees it."""
    net = I.make_net("simple", 0)
    conv = net[1]
    x = torch.zeros(1, 64)
    x[0, 2 * 8 + 5] = 1.0
    with torch.no_grad():
        got = conv(net[0](x))[0, 0]
        want = conv.bias[0] + torch.zeros(8, 8)
        want[1:4, 4:7] += conv.weight[0, 0].flip(0).flip(1)
    torch.testing.assert_close(got, want)


def test_make_net_seeding():
    a, b, c = I.make_net("dense", 1), I.make_net("dense", 1), I.make_net("dense", 2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a[0].weight, c[0].weight)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    I.make_net("simple", 5)
    assert torch.equal(torch.rand(1), before)  # the global RNG is untouched


def test_standardise(digits):
    raw = load_digits_split(standardize=False)
    s = I.standardise(raw)
    assert abs(float(s.X_train.mean())) < 1e-5 and abs(float(s.X_train.std()) - 1) < 1e-5
    m, sd = raw.X_train.double().mean(), raw.X_train.double().std()
    torch.testing.assert_close(s.X_test.double(), (raw.X_test.double() - m) / sd, atol=1e-5, rtol=0)
    assert torch.equal(s.y_test, raw.y_test) and s.name == raw.name
    flat = DataSplit(torch.ones(20, 64), torch.arange(20) % 10, torch.ones(3, 64), torch.arange(3), "x")
    with pytest.raises(ValueError, match="constant"):
        I.standardise(flat)


# ---------------------------------------------------------------------------------------------- training
def manual_epoch(net, split, optimiser, seed, batch=32):
    """One epoch by hand (thesis hyper-parameters): SGD lr 0.01, momentum 0.5, wd 0.01 (coupled);
    AdamW lr 1e-3, betas (0.9, 0.999), eps 1e-8, decoupled wd 0.01."""
    params = list(net.parameters())
    state = [dict(v=torch.zeros_like(p), m=torch.zeros_like(p), s=torch.zeros_like(p)) for p in params]
    order = torch.randperm(split.X_train.shape[0], generator=torch.Generator().manual_seed(seed))
    t = 0
    for i in range(0, len(order), batch):
        idx = order[i:i + batch]
        net.zero_grad()
        torch.nn.functional.cross_entropy(net(split.X_train[idx]), split.y_train[idx]).backward()
        t += 1
        with torch.no_grad():
            for p, st in zip(params, state):
                if optimiser == "sgd":
                    g = p.grad + 0.01 * p
                    st["v"] = g if t == 1 else 0.5 * st["v"] + g
                    p -= 0.01 * st["v"]
                else:
                    p *= 1 - 1e-3 * 0.01
                    st["m"] = 0.9 * st["m"] + 0.1 * p.grad
                    st["s"] = 0.999 * st["s"] + 0.001 * p.grad ** 2
                    mhat, shat = st["m"] / (1 - 0.9 ** t), st["s"] / (1 - 0.999 ** t)
                    p -= 1e-3 * mhat / (shat.sqrt() + 1e-8)
    return net


@pytest.mark.parametrize("optimiser", ["sgd", "adamw"])
def test_train_net_matches_hand_written_optimiser(optimiser):
    split = small_split(70)
    got = I.train_net(I.make_net("dense", 0), split, optimiser, epochs=1, seed=4, progress=False)
    want = manual_epoch(I.make_net("dense", 0), split, optimiser, seed=4)
    for p, q in zip(got.parameters(), want.parameters()):
        torch.testing.assert_close(p, q, atol=2e-6, rtol=1e-5)
    assert not got.training


def test_train_net_batch_size_and_epochs_matter():
    split = small_split(70)
    a = I.train_net(I.make_net("linear", 0), split, "sgd", epochs=2, batch_size=32, progress=False)
    b = I.train_net(I.make_net("linear", 0), split, "sgd", epochs=2, batch_size=16, progress=False)
    c = I.train_net(I.make_net("linear", 0), split, "sgd", epochs=1, batch_size=32, progress=False)
    d = I.train_net(I.make_net("linear", 0), split, "sgd", epochs=2, batch_size=32, progress=False)
    assert not torch.equal(a[0].weight, b[0].weight) and not torch.equal(a[0].weight, c[0].weight)
    assert torch.equal(a[0].weight, d[0].weight)


def test_train_net_learns_digits(digits):
    net = I.train_net(I.make_net("dense", 0), digits, "adamw", epochs=3, progress=False)
    assert I.accuracy(net, digits.X_test, digits.y_test) > 0.85


def test_zoo_names_order():
    names = [n for n, _, _ in I.zoo_names()]
    assert names == ["linear-SGD", "dense1-SGD", "dense2-SGD", "simple1-SGD", "simple2-SGD", "complex1-SGD",
                     "complex2-SGD", "linear-AdamW", "dense1-AdamW", "dense2-AdamW", "simple1-AdamW",
                     "simple2-AdamW", "complex1-AdamW", "complex2-AdamW"]
    assert I.zoo_names(("dense", "linear"), copies=1) == [
        ("dense1-SGD", "dense", "sgd"), ("linear-SGD", "linear", "sgd"),
        ("dense1-AdamW", "dense", "adamw"), ("linear-AdamW", "linear", "adamw")]
    with pytest.raises(ValueError, match="archs"):
        I.zoo_names(("dense", "dense"))
    with pytest.raises(ValueError, match="archs"):
        I.zoo_names(("dense", "resnet18"))


def test_train_zoo_seeds_and_order():
    split = small_split(40)
    zoo = I.train_zoo(split, epochs=1, seed=7, archs=("linear", "dense"), copies=2, progress=False)
    assert list(zoo) == ["linear-SGD", "dense1-SGD", "dense2-SGD", "linear-AdamW", "dense1-AdamW", "dense2-AdamW"]
    # net i is initialised and shuffled from seed + i
    want = I.train_net(I.make_net("dense", 9), split, "sgd", epochs=1, seed=9, progress=False)
    assert all(torch.equal(p, q) for p, q in zip(zoo["dense2-SGD"].parameters(), want.parameters()))
    want = I.train_net(I.make_net("dense", 12), split, "adamw", epochs=1, seed=12, progress=False)
    assert all(torch.equal(p, q) for p, q in zip(zoo["dense2-AdamW"].parameters(), want.parameters()))


# ---------------------------------------------------------------------------------------------- local maps
def test_local_coefficients_dense_equals_exact_local_affine():
    net = I.make_net("dense", 2)
    X = torch.randn(30, 64, generator=torch.Generator().manual_seed(0)).numpy()
    J, y = I.local_coefficients(net, X, chunk=7)
    A, c = LR.local_affine(dense_params(net), X)
    assert J.dtype == np.float64 and J.shape == (30, 10, 64) and y.shape == (30, 10)
    np.testing.assert_allclose(J, A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(y, c, rtol=0, atol=1e-12)


def test_local_coefficients_linear_net_is_its_weights():
    net = I.make_net("linear", 1)
    J, y = I.local_coefficients(net, np.random.default_rng(0).normal(size=(4, 64)))
    for k in range(4):
        np.testing.assert_array_equal(J[k], net[0].weight.detach().double().numpy())
        np.testing.assert_allclose(y[k], net[0].bias.detach().double().numpy(), atol=1e-13)


@pytest.mark.parametrize("arch", ["simple", "complex"])
def test_local_coefficients_conv_exact_inside_region(arch):
    net = I.make_net(arch, 0)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 64))
    J, y = I.local_coefficients(net, X)
    net64 = net.double()
    with torch.no_grad():
        out = net64(torch.tensor(X)).numpy()
    np.testing.assert_allclose(np.einsum("noi,ni->no", J, X) + y, out, atol=1e-12, rtol=0)
    # a small step that keeps the activation pattern keeps the map (finite differences, not autograd)
    D = 1e-7 * rng.normal(size=X.shape)
    same = (I.activation_pattern(net, X) == I.activation_pattern(net, X + D)).all(1)
    assert same.sum() >= 4
    with torch.no_grad():
        out2 = net64(torch.tensor(X + D)).numpy()
    np.testing.assert_allclose((np.einsum("noi,ni->no", J, X + D) + y)[same], out2[same], atol=1e-12, rtol=0)
    assert np.abs(J).max() > 0 and np.abs(y).max() > 0


def test_local_coefficients_leaves_net_float32():
    net = I.make_net("simple", 0)
    I.local_coefficients(net, np.zeros((2, 64)))
    assert all(p.dtype == torch.float32 for p in net.parameters())


def test_accuracy_by_hand():
    net = I.make_net("linear", 0)
    with torch.no_grad():
        net[0].weight.zero_()
        net[0].bias.zero_()
        net[0].weight[:, :10] = torch.eye(10)
    X = np.zeros((5, 64))
    X[np.arange(5), [3, 1, 4, 1, 5]] = 1.0
    assert I.accuracy(net, X, np.array([3, 1, 4, 0, 0])) == pytest.approx(3 / 5)
    assert I.accuracy(net, torch.tensor(X), torch.tensor([3, 1, 4, 1, 5])) == 1.0


# ---------------------------------------------------------------------------------------------- patterns
def test_activation_pattern_dense_equals_numpy():
    net = I.make_net("dense", 0)
    X = np.random.default_rng(2).normal(size=(9, 64))
    np.testing.assert_array_equal(I.activation_pattern(net, X), np_patterns(dense_params(net), X))
    assert I.activation_pattern(I.make_net("linear"), X).shape == (9, 0)


@pytest.mark.parametrize("arch, n_bits", [
    ("simple", 32 * 64 + 32 * 16 + 32 * 16 + 32 * 4),          # pool1 one-hot, relu1, pool2 one-hot, relu2
    ("complex", 32 * 64 * 2 + 32 * 16 * 2 + 32 * 4 * 2),       # relu then pool one-hot, 3 blocks
])
def test_activation_pattern_conv_bits(arch, n_bits):
    net = I.make_net(arch, 0)
    X = np.random.default_rng(3).normal(size=(4, 64))
    P = I.activation_pattern(net, X)
    assert P.shape == (4, n_bits) and P.dtype == bool
    # the first pool's one-hot block (simple: bits 0..2047) marks exactly one cell per 2x2 window
    if arch == "simple":
        hot = P[:, :32 * 64].reshape(4, 32, 4, 2, 4, 2).sum((3, 5))
        assert (hot == 1).all()
        with torch.no_grad():
            z = net[1](net[0](torch.tensor(X, dtype=torch.float32)))
        win = z.reshape(4, 32, 4, 2, 4, 2).permute(0, 1, 2, 4, 3, 5).reshape(4, 32, 4, 4, 4).argmax(-1)
        onehot = P[:, :32 * 64].reshape(4, 32, 4, 2, 4, 2).transpose(0, 1, 2, 4, 3, 5).reshape(4, 32, 4, 4, 4)
        assert (onehot.argmax(-1) == win.numpy()).all()
        relu1 = P[:, 32 * 64:32 * 64 + 32 * 16]
        assert (relu1 == (torch.nn.functional.max_pool2d(z, 2) > 0).flatten(1).numpy()).all()


def test_activation_pattern_changes_only_across_a_boundary():
    net = I.make_net("complex", 1)
    x = np.random.default_rng(0).normal(size=(1, 64))
    assert (I.activation_pattern(net, x) == I.activation_pattern(net, x * (1 + 1e-12))).all()
    assert (I.activation_pattern(net, x) != I.activation_pattern(net, -x)).any()


# ---------------------------------------------------------------------------------------------- planes
def brute_closest_triple(X):
    D = np.linalg.norm(X[:, None] - X[None], axis=-1)
    best = None
    for a in range(len(X)):
        d = D[a].copy()
        d[a] = np.inf
        b, c = np.argsort(d, kind="stable")[:2]
        tot = D[a, b] + D[a, c] + D[b, c]
        if best is None or tot < best[0]:
            best = (tot, [a, b, c])
    return best[1]


def test_closest_triple_hand_case_and_brute_force():
    X = np.array([[0.0, 0], [10, 0], [10.1, 0], [10, 0.3], [-5, 5], [20, 20]])
    assert list(I.closest_triple(X)) == [1, 2, 3]
    assert list(I.closest_triple(X[[5, 4, 3, 2, 1, 0]])) == [2, 4, 3]  # ties: the lowest row
    for seed in range(5):
        Y = np.random.default_rng(seed).normal(size=(25, 6))
        assert list(I.closest_triple(Y)) == brute_closest_triple(Y)
    with pytest.raises(ValueError, match="3 rows"):
        I.closest_triple(np.zeros((2, 4)))


def test_plane_through():
    rng = np.random.default_rng(0)
    A, B, C = rng.normal(size=(3, 64))
    o, e1, e2 = I.plane_through(A, B, C)
    np.testing.assert_array_equal(o, A)
    assert abs(e1 @ e1 - 1) < 1e-12 and abs(e2 @ e2 - 1) < 1e-12 and abs(e1 @ e2) < 1e-12
    coords = lambda P: np.array([(P - o) @ e1, (P - o) @ e2])  # noqa: E731
    np.testing.assert_allclose(coords(B), [np.linalg.norm(B - A), 0], atol=1e-12)
    np.testing.assert_allclose(I.plane_points(o, e1, e2, np.stack([coords(A), coords(B), coords(C)])), np.stack([A, B, C]),
                               atol=1e-12)
    o2, f1, f2 = I.plane_through(np.zeros(3), np.array([2.0, 0, 0]), np.array([1.0, 3, 0]))
    np.testing.assert_allclose(f1, [1, 0, 0]) and np.testing.assert_allclose(f2, [0, 1, 0])
    with pytest.raises(ValueError, match="collinear"):
        I.plane_through(np.zeros(3), np.ones(3), 2 * np.ones(3))
    with pytest.raises(ValueError, match="differ"):
        I.plane_through(np.ones(3), np.ones(3), np.zeros(3))


def test_plane_points_values():
    P = I.plane_points(np.array([1.0, 2, 3]), np.array([1.0, 0, 0]), np.array([0.0, 0, 2]), np.array([[0.5, 1.0], [-1, 0]]))
    np.testing.assert_array_equal(P, [[1.5, 2, 5], [0, 2, 3]])


def scipy_count(keys, p):
    K = keys.reshape(p, p, -1)
    total = 0
    for v in np.unique(keys, axis=0):
        mask = (K == v).all(-1)
        total += ndimage.label(mask, structure=np.ones((3, 3)))[1]
    return total


@pytest.mark.parametrize("seed", range(6))
def test_region_labels_equals_8_connected_components(seed):
    rng = np.random.default_rng(seed)
    p = 9
    keys = rng.integers(0, 3, size=(p * p, 2)).astype(float)
    labels = I.region_labels(keys, p)
    assert labels.max() + 1 == scipy_count(keys, p)
    assert labels[0, 0] == 0
    first = [np.argmax(labels.ravel() == k) for k in range(labels.max() + 1)]
    assert first == sorted(first)  # numbered in raster order
    # points of one label share a key
    for k in range(labels.max() + 1):
        assert len(np.unique(keys[labels.ravel() == k], axis=0)) == 1


def test_region_labels_tolerance():
    p = 4
    base = np.repeat([[0.0], [1.0]], 8, axis=0)           # top two rows 0, bottom two rows 1
    noisy = base + 1e-12 * np.arange(16)[:, None]
    assert I.region_labels(noisy, p).max() + 1 == 16        # exact comparison: every point differs
    assert I.region_labels(noisy, p, tol=1e-9).max() + 1 == 2
    assert I.region_labels(base, p, tol=2.0).max() + 1 == 1  # tol is relative to the largest |key| (1)
    assert I.region_labels(base, p, tol=0.99).max() + 1 == 2
    U = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 0]], float).reshape(9, 1)  # a U merges at the bottom
    np.testing.assert_array_equal(I.region_labels(U, 3), [[0, 1, 0], [0, 1, 0], [0, 0, 0]])
    assert I.region_labels(np.zeros((9, 0)), 3).max() == 0   # no key: one region


def test_dense_plane_params_is_the_restricted_net():
    net = I.make_net("dense", 4)
    rng = np.random.default_rng(0)
    o, e1, e2 = I.plane_through(*rng.normal(size=(3, 64)))
    params = I.dense_plane_params(net, o, e1, e2)
    st = rng.uniform(-2, 2, size=(50, 2))
    X = I.plane_points(o, e1, e2, st)
    with torch.no_grad():
        want = net.double()(torch.tensor(X)).numpy()
    from lib.nets import forward_f64
    np.testing.assert_allclose(forward_f64(params, st), want, atol=1e-12, rtol=0)
    np.testing.assert_array_equal(np_patterns(params, st), I.activation_pattern(net, X))
    box = (-2, 2, -2, 2)
    assert len(LR.regions_2d(params, box)) >= LR.grid_pattern_count(params, box, 40)
    with pytest.raises(ValueError, match="dense"):
        I.dense_plane_params(I.make_net("simple"), o, e1, e2)


# ---------------------------------------------------------------------------------------------- sensitivity
def test_gradient_covariance_against_loop():
    rng = np.random.default_rng(0)
    J = rng.normal(size=(7, 3, 5))
    vals, vecs = I.gradient_covariance(J)
    for j in range(3):
        C = sum(np.outer(J[n, j], J[n, j]) for n in range(7)) / 7
        np.testing.assert_allclose(vals[j], np.sort(np.linalg.eigvalsh(C))[::-1], atol=1e-12)
        np.testing.assert_allclose(C @ vecs[j], vecs[j] * vals[j], atol=1e-12)
        np.testing.assert_allclose(vecs[j].T @ vecs[j], np.eye(5), atol=1e-12)
        assert (vecs[j][np.abs(vecs[j]).argmax(0), range(5)] > 0).all()
    assert (np.diff(vals, axis=1) <= 0).all()


def test_gradient_covariance_linear_net_rank_one():
    net = I.make_net("linear", 0)
    J, _ = I.local_coefficients(net, np.random.default_rng(0).normal(size=(20, 64)))
    vals, vecs = I.gradient_covariance(J)
    W = net[0].weight.detach().double().numpy()
    np.testing.assert_allclose(vals[:, 0], (W ** 2).sum(1), rtol=1e-12)
    assert (vals[:, 1] / vals[:, 0] < 1e-12).all()
    np.testing.assert_allclose(np.abs(np.einsum("ji,ji->j", vecs[:, :, 0], W)), np.linalg.norm(W, axis=1), rtol=1e-10)


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, match", [
    (lambda: I.make_net("resnet18"), "arch"),
    (lambda: I.make_net("dense", seed=-1), "seed"),
    (lambda: I.train_net("net", small_split()), "net"),
    (lambda: I.train_net(I.make_net("dense"), "split"), "split"),
    (lambda: I.train_net(I.make_net("dense"), small_split(), "adam"), "optimiser"),
    (lambda: I.train_net(I.make_net("dense"), small_split(), epochs=0), "epochs"),
    (lambda: I.train_net(I.make_net("dense"), small_split(), batch_size=0), "batch_size"),
    (lambda: I.train_zoo(small_split(), copies=0), "copies"),
    (lambda: I.local_coefficients(I.make_net("dense"), np.zeros((3, 63))), "X"),
    (lambda: I.local_coefficients(I.make_net("dense"), np.zeros((3, 64)), chunk=0), "chunk"),
    (lambda: I.accuracy(I.make_net("dense"), np.zeros((3, 64)), np.array([0, 1])), "y"),
    (lambda: I.accuracy(I.make_net("dense"), np.zeros((3, 64)), np.array([0, 1, 10])), "y"),
    (lambda: I.region_labels(np.zeros((8, 1)), 3), "keys"),
    (lambda: I.region_labels(np.zeros((9, 1)), 3, tol=-1), "tol"),
    (lambda: I.gradient_covariance(np.zeros((3, 4))), "J"),
    (lambda: I.plane_through(np.zeros(3), np.ones(4), np.ones(3)), "B"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------------- edge cases (mutation testing)
def test_standardise_small_std_and_records_without_a_name():
    from types import SimpleNamespace
    g = torch.Generator().manual_seed(0)
    X = 0.3 * torch.randn(30, 64, generator=g) + 2.0
    y = torch.arange(30) % 10
    s = I.standardise(SimpleNamespace(X_train=X, y_train=y, X_test=X[:5], y_test=y[:5]))
    assert s.name == "" and torch.equal(s.y_train, y) and torch.equal(s.y_test, y[:5])
    torch.testing.assert_close(s.X_train, (X - X.mean()) / X.std())
    flat = DataSplit(torch.ones(20, 64), torch.arange(20) % 10, torch.ones(3, 64), torch.arange(3), "x")
    with pytest.raises(ValueError, match=r"^split\.X_train must not be constant"):
        I.standardise(flat)


def test_closest_triple_three_rows_and_ties():
    X = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    assert sorted(I.closest_triple(X)) == [0, 1, 2]
    assert list(I.closest_triple(X)) == [0, 1, 2]
    # a lattice: many equal distances; ties go to the lowest row, as in the brute force (stable sort)
    L = np.array([[i, j] for i in range(6) for j in range(6)], float)
    assert list(I.closest_triple(L)) == brute_closest_triple(L) == [0, 1, 6]
    Y = np.random.default_rng(5).integers(0, 4, size=(40, 2)).astype(float)   # repeated points: an unstable sort
    assert list(I.closest_triple(Y)) == brute_closest_triple(Y) == [1, 9, 14]   # would order 9 and 14 differently
    with pytest.raises(ValueError, match=r"^X must have at least 3 rows, got 2"):
        I.closest_triple(np.zeros((2, 5)))


def test_region_labels_bool_keys_equal_float_keys():
    rng = np.random.default_rng(0)
    p = 8
    B = rng.integers(0, 2, size=(p * p, 11)).astype(bool)
    B[:, 3:] = False                                     # few distinct patterns: real regions
    got = I.region_labels(B, p)
    np.testing.assert_array_equal(got, I.region_labels(B.astype(float), p))
    assert got.max() + 1 == scipy_count(B.astype(float), p)


def test_region_labels_tolerance_with_many_columns():
    p = 5
    rng = np.random.default_rng(1)
    base = np.repeat([[1.0, -0.5, 0.2, 0.0], [1.5, -0.5, 0.2, 0.3]], [10, 15], axis=0)  # two row bands, 4 coefficients
    noisy = base + 1e-13 * rng.normal(size=base.shape)
    assert I.region_labels(noisy, p, tol=1e-9).max() + 1 == 2
    assert I.region_labels(noisy, p, tol=1.0).max() + 1 == 1   # the bands differ by 0.5 <= 1.0 * max |key| = 1.5
    assert I.region_labels(np.zeros((9, 0)), 3, tol=1e-9).max() == 0


@pytest.mark.parametrize("call, match", [
    (lambda: I.region_labels(np.zeros((8, 1)), 3), r"^keys must"),
    (lambda: I.region_labels(np.zeros((9, 1)), 0), r"^p must"),
    (lambda: I.region_labels(np.zeros((9, 1)), 3, tol=-1), r"^tol must"),
    (lambda: I.gradient_covariance(np.zeros((3, 4))), r"^J must"),
    (lambda: I.closest_triple(np.zeros(4)), r"^X must"),
])
def test_error_messages_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _split_with(**changes):
    from dataclasses import replace
    return replace(small_split(), **changes)


@pytest.mark.parametrize("call, match", [
    (lambda: I.make_net("resnet18"), r"^arch must be one of"),
    (lambda: I.local_coefficients("abc", np.zeros((2, 64))), r"^net must be a torch\.nn\.Module, got str 'abc'"),
    (lambda: I.train_net(I.make_net("linear"), "abc"), r"^split must be a lib\.data\.DataSplit .*got str 'abc'"),
    (lambda: I.train_net(I.make_net("linear"), _split_with(X_train=torch.zeros(40, 63))), r"^split\.X_train must"),
    (lambda: I.train_net(I.make_net("linear"), _split_with(X_train=torch.zeros(40, 64, dtype=torch.int64))),
     r"^split\.X_train must be a floating"),
    (lambda: I.train_net(I.make_net("linear"), _split_with(y_train=torch.arange(40) % 11)), r"^split\.y_train must"),
    (lambda: I.train_net(I.make_net("linear"), _split_with(y_train=torch.arange(39) % 10)), r"^split\.y_train must"),
    (lambda: I.train_net(I.make_net("linear"), small_split(), "adam"), r"^optimiser must be one of"),
    (lambda: I.train_net(I.make_net("linear"), small_split(), epochs=0), r"^epochs must"),
    (lambda: I.train_net(I.make_net("linear"), small_split(), batch_size=0), r"^batch_size must"),
    (lambda: I.zoo_names(()), r"^archs must"),
    (lambda: I.zoo_names(3), r"^archs must"),
    (lambda: I.zoo_names(("resnet",)), r"^archs entry must"),
    (lambda: I.zoo_names(copies=0), r"^copies must"),
    (lambda: I.train_zoo(small_split(), epochs=0), r"^epochs must"),
    (lambda: I.local_coefficients(I.make_net("linear"), np.zeros((2, 63))), r"^X must"),
    (lambda: I.local_coefficients(I.make_net("linear"), np.zeros((2, 64)), chunk=0), r"^chunk must"),
    (lambda: I.accuracy(I.make_net("linear"), np.zeros((3, 63)), np.zeros(3)), r"^X must"),
    (lambda: I.accuracy(I.make_net("linear"), np.zeros((3, 64)), None), r"^y must"),
    (lambda: I.accuracy(I.make_net("linear"), np.zeros((3, 64)), np.zeros((1, 1, 3))), r"^y must"),
    (lambda: I.activation_pattern(I.make_net("linear"), np.zeros((2, 63))), r"^X must"),
    (lambda: I.plane_through(np.zeros((2, 2)), np.ones(4), np.ones(4)), r"^A must"),
    (lambda: I.plane_through(np.zeros(4), np.ones(3), np.ones(4)), r"^B must"),
    (lambda: I.plane_through(np.zeros(4), np.ones(4), np.ones(3)), r"^C must"),
    (lambda: I.plane_through(np.ones(3), np.ones(3), np.zeros(3)), r"^A and B must differ \(u1 = B - A is zero\)"),
    (lambda: I.plane_through(np.zeros(3), np.ones(3), 2 * np.ones(3)), r"^A, B and C must not be collinear"),
    # nearly collinear at a large scale: |u2| = 1e-9 <= 1e-12 |u1| = 1e-6
    (lambda: I.plane_through(np.zeros(3), np.array([1e6, 0, 0]), np.array([5e5, 1e-9, 0])), r"collinear"),
    (lambda: I.plane_points(np.zeros((2, 2)), np.ones(4), np.ones(4), np.ones((1, 2))), r"^origin must"),
    (lambda: I.plane_points(np.zeros(4), np.ones(3), np.ones(4), np.ones((1, 2))), r"^e1 must"),
    (lambda: I.plane_points(np.zeros(4), np.ones(4), np.ones(3), np.ones((1, 2))), r"^e2 must"),
    (lambda: I.plane_points(np.zeros(4), np.ones(4), np.ones(4), np.ones((3, 3))), r"^coords must"),
    (lambda: I.dense_plane_params(I.make_net("dense"), np.zeros(63), np.ones(64), np.ones(64)), r"^origin must"),
    (lambda: I.dense_plane_params(I.make_net("dense"), np.zeros(64), np.ones(63), np.ones(64)), r"^e1 must"),
    (lambda: I.dense_plane_params(I.make_net("dense"), np.zeros(64), np.ones(64), np.ones(63)), r"^e2 must"),
    (lambda: I.dense_plane_params(torch.nn.Sequential(torch.nn.Linear(64, 5), torch.nn.Tanh(), torch.nn.Linear(5, 10)),
                                  np.zeros(64), np.ones(64), np.ones(64)), r"^net must be a 'dense' net"),
    # a dense net of any input width is one; the plane must have its width
    (lambda: I.dense_plane_params(torch.nn.Sequential(torch.nn.Linear(63, 5), torch.nn.ReLU(), torch.nn.Linear(5, 10)),
                                  np.zeros(64), np.ones(64), np.ones(64)), r"^origin must"),
])
def test_bad_input_messages_start_with_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_documented_defaults():
    """The thesis' protocol is the default (§6.1): 15 epochs, batch 32, two copies; seed 0."""
    import inspect
    sig = lambda f: {k: p.default for k, p in inspect.signature(f).parameters.items()}  # noqa: E731
    assert sig(I.train_net)["epochs"] == 15 and sig(I.train_net)["batch_size"] == 32 and sig(I.train_net)["seed"] == 0
    assert sig(I.train_zoo)["epochs"] == 15 and sig(I.train_zoo)["copies"] == 2 and sig(I.train_zoo)["seed"] == 0
    a, b = I.make_net("dense"), I.make_net("dense", 0)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    split = small_split(40)
    a = I.train_net(I.make_net("linear", 3), split, "adamw", epochs=1, progress=False)
    b = I.train_net(I.make_net("linear", 3), split, "adamw", epochs=1, seed=0, progress=False)
    assert torch.equal(a[0].weight, b[0].weight)


@pytest.mark.parametrize("optimiser, lr", [("sgd", "0.01"), ("adamw", "0.001")])
def test_divergence_names_the_learning_rate(optimiser, lr):
    from lib.validate import TrainingDivergedError
    split = _split_with(X_train=torch.full((40, 64), 3e38))
    with pytest.raises(TrainingDivergedError, match=rf"lr={lr}\b"):
        I.train_net(I.make_net("linear"), split, optimiser, epochs=1, progress=False)


def test_activation_pattern_of_a_net_without_units_is_an_empty_bool_array():
    P = I.activation_pattern(I.make_net("linear"), np.zeros((3, 64)))
    assert P.shape == (3, 0) and P.dtype == bool


def test_default_protocol_is_used_when_arguments_are_left_out():
    """Calling without epochs / seed / copies gives exactly the explicit thesis protocol (15 epochs, seed 0, 2 copies)."""
    split = small_split(40)
    a = I.train_net(I.make_net("linear", 1), split, "sgd", progress=False)
    b = I.train_net(I.make_net("linear", 1), split, "sgd", epochs=15, seed=0, progress=False)
    assert torch.equal(a[0].weight, b[0].weight)
    za = I.train_zoo(split, archs=("linear", "dense"), progress=False)
    zb = I.train_zoo(split, epochs=15, seed=0, archs=("linear", "dense"), copies=2, progress=False)
    assert list(za) == list(zb) and len(za) == 6
    assert all(torch.equal(p, q) for n in za for p, q in zip(za[n].parameters(), zb[n].parameters()))


def test_region_labels_tolerance_one_keeps_keys_further_apart_than_the_largest_key():
    keys = np.repeat([[-1.0], [1.0]], [6, 10], axis=0)   # 4 x 4 grid: two bands 2 apart, largest |key| 1
    assert I.region_labels(keys, 4, tol=1.0).max() + 1 == 2
    assert I.region_labels(keys, 4, tol=2.0).max() + 1 == 1


def test_activation_pattern_counts_a_pre_activation_of_zero_as_active():
    # one convention with lib.nets.activation_patterns (pre-activation >= 0): zero biases, input 0
    net = I.make_net("dense", 3)
    with torch.no_grad():
        net[0].bias.zero_()
    X = np.zeros((2, 64))
    X[1, 0] = 1.0
    P = I.activation_pattern(net, X)
    assert P[0].all()                                                   # every pre-activation is exactly 0
    np.testing.assert_array_equal(P, np_patterns(dense_params(net), X))
    # simple net: the ReLU after the pool sees the pooled value; at input 0 with zero conv biases it is 0
    simple = I.make_net("simple", 0)
    with torch.no_grad():
        for m in simple.modules():
            if isinstance(m, torch.nn.Conv2d):
                m.bias.zero_()
    relu1 = I.activation_pattern(simple, np.zeros((1, 64)))[0, 32 * 64:32 * 64 + 32 * 16]
    assert relu1.all()


def test_zoo_of_one_optimiser():
    assert I.zoo_names(("simple",), copies=2, optimisers=("sgd",)) == [("simple1-SGD", "simple", "sgd"),
                                                                       ("simple2-SGD", "simple", "sgd")]
    assert [n for n, _, _ in I.zoo_names(("linear",), optimisers=("adamw", "sgd"))] == ["linear-SGD", "linear-AdamW"]
    split = small_split(40)
    zoo = I.train_zoo(split, epochs=1, seed=5, archs=("dense",), copies=2, progress=False, optimisers=("adamw",))
    assert list(zoo) == ["dense1-AdamW", "dense2-AdamW"]
    want = I.train_net(I.make_net("dense", 6), split, "adamw", epochs=1, seed=6, progress=False)
    assert all(torch.equal(p, q) for p, q in zip(zoo["dense2-AdamW"].parameters(), want.parameters()))
    with pytest.raises(ValueError, match=r"^optimisers must not repeat one, got \['sgd', 'sgd'\]$"):
        I.zoo_names(optimisers=("sgd", "sgd"))
    with pytest.raises(ValueError, match=r"^optimisers entry must be one of"):
        I.zoo_names(optimisers=("adam",))
    with pytest.raises(ValueError, match=r"^optimisers must"):
        I.zoo_names(optimisers=())


def test_make_optimiser_has_the_thesis_settings_and_decays_as_stated():
    net = I.make_net("linear", 0)
    sgd, adamw = I.make_optimiser(net, "sgd"), I.make_optimiser(net, "adamw")
    assert isinstance(sgd, torch.optim.SGD) and isinstance(adamw, torch.optim.AdamW)
    g = sgd.param_groups[0]
    assert (g["lr"], g["momentum"], g["weight_decay"]) == (0.01, 0.5, 0.01)
    g = adamw.param_groups[0]
    assert (g["lr"], g["betas"], g["weight_decay"]) == (1e-3, (0.9, 0.999), 0.01)
    # with a zero loss gradient, one AdamW step shrinks every weight by exactly lr * wd (decoupled decay)
    w0 = net[0].weight.detach().clone()
    adamw.zero_grad()
    (0 * net(torch.zeros(1, 64)).sum()).backward()
    adamw.step()
    torch.testing.assert_close(net[0].weight.detach(), w0 * (1 - 1e-5))
    with pytest.raises(ValueError, match="^optimiser must be one of"):
        I.make_optimiser(net, "adam")
    with pytest.raises(ValueError, match="^net must be"):
        I.make_optimiser("net", "sgd")



# ------------------------------------------------------------------------- the paper path (3x32x32, §6.1)
@pytest.mark.parametrize("arch, n_params", [
    ("linear", 3072 * 10 + 10),
    ("dense", 3072 * 128 + 128 + 128 * 10 + 10),
    ("simple", (27 * 32 + 32) + (32 * 32 * 9 + 32) + (32 * 8 * 8 * 10 + 10)),        # 32 -> 16 -> 8 pixels
    ("complex", (27 * 32 + 32) + 2 * (32 * 32 * 9 + 32) + (32 * 4 * 4 * 10 + 10)),   # 32 -> 16 -> 8 -> 4
])
def test_paper_nets_shapes_and_sizes(arch, n_params):
    net = I.make_net(arch, 0, I.PAPER_SHAPE)
    assert sum(p.numel() for p in net.parameters()) == n_params
    assert net(torch.randn(5, 3072)).shape == (5, 10)
    assert I.input_width(net) == 3072 and I.input_width(I.make_net(arch)) == 64


def test_paper_nets_layer_order():
    """ReLU after pooling in simple, before it in complex (the forward cannot tell: max and ReLU commute; the
    activation pattern's bits can), three input channels, 32 filters of 3x3."""
    kinds = lambda net: [type(m).__name__ for m in net]  # noqa: E731
    simple, complex_ = I.make_net("simple", 0, I.PAPER_SHAPE), I.make_net("complex", 0, I.PAPER_SHAPE)
    assert kinds(simple) == ["_Image", "Conv2d", "MaxPool2d", "ReLU", "Conv2d", "MaxPool2d", "ReLU", "Flatten", "Linear"]
    assert kinds(complex_) == ["_Image"] + ["Conv2d", "ReLU", "MaxPool2d"] * 3 + ["Flatten", "Linear"]
    assert simple[0].shape == (3, 32, 32) and simple[1].in_channels == 3 and complex_[1].in_channels == 3
    assert all(m.out_channels == 32 and m.kernel_size == (3, 3) for m in complex_ if isinstance(m, torch.nn.Conv2d))


def test_paper_conv_nets_equal_their_layers_called_one_by_one():
    """simple: conv -> pool -> ReLU twice, then Linear; complex: conv -> ReLU -> pool three times (the thesis' order)."""
    F = torch.nn.functional
    x = torch.randn(4, 3072)
    img = x.reshape(4, 3, 32, 32)
    s = I.make_net("simple", 1, I.PAPER_SHAPE)
    c1, c2 = [m for m in s if isinstance(m, torch.nn.Conv2d)]
    fc = [m for m in s if isinstance(m, torch.nn.Linear)][0]
    h = F.relu(F.max_pool2d(F.conv2d(img, c1.weight, c1.bias, padding=1), 2))
    h = F.relu(F.max_pool2d(F.conv2d(h, c2.weight, c2.bias, padding=1), 2))
    assert torch.allclose(s(x), h.flatten(1) @ fc.weight.T + fc.bias, atol=1e-5)
    c = I.make_net("complex", 2, I.PAPER_SHAPE)
    convs = [m for m in c if isinstance(m, torch.nn.Conv2d)]
    fc = [m for m in c if isinstance(m, torch.nn.Linear)][0]
    h = img
    for conv in convs:
        h = F.max_pool2d(F.relu(F.conv2d(h, conv.weight, conv.bias, padding=1)), 2)
    assert h.shape == (4, 32, 4, 4)
    assert torch.allclose(c(x), h.flatten(1) @ fc.weight.T + fc.bias, atol=1e-5)


def test_digits_nets_are_unchanged_by_the_shape_argument():
    for arch in I.ARCHS:
        a, b = I.make_net(arch, 7), I.make_net(arch, 7, (1, 8, 8))
        assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def _bilinear_numpy(img, size):
    """Bilinear resize with half-pixel centres (align_corners=False), written out: an independent check."""
    h, w = img.shape
    def axis(n_out, n_in):
        src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
        return i0, np.minimum(i0 + 1, n_in - 1), src - i0
    r0, r1, wr = axis(size, h)
    c0, c1, wc = axis(size, w)
    top = img[r0][:, c0] * (1 - wc) + img[r0][:, c1] * wc
    bottom = img[r1][:, c0] * (1 - wc) + img[r1][:, c1] * wc
    return top * (1 - wr[:, None]) + bottom * wr[:, None]


def test_paper_images_resize_mnist_and_repeat_channels():
    X = torch.rand(3, 28, 28, generator=torch.Generator().manual_seed(0))
    out = I.paper_images(X)
    assert out.shape == (3, 3, 32, 32) and out.dtype == torch.float32
    assert torch.equal(out[:, 0], out[:, 1]) and torch.equal(out[:, 0], out[:, 2])
    for k in range(3):
        assert np.abs(out[k, 0].numpy() - _bilinear_numpy(X[k].numpy().astype(np.float64), 32)).max() < 1e-6
    assert torch.equal(I.paper_images(X[:, None]), out)                  # (N, 1, 28, 28) too
    cifar = torch.rand(2, 3, 32, 32)
    assert torch.equal(I.paper_images(cifar), cifar)                     # CIFAR-10 passes as it is


def test_standardise_channels_against_numpy():
    g = np.random.default_rng(1)
    Xtr = g.normal(size=(50, 3, 32, 32)) * np.array([1.0, 2.0, 3.0])[None, :, None, None] + np.array([5, -1, 0])[None, :, None, None]
    Xte = g.normal(size=(7, 3, 32, 32))
    split = DataSplit(torch.tensor(Xtr, dtype=torch.float32), torch.arange(50) % 10, torch.tensor(Xte, dtype=torch.float32),
                      torch.arange(7), "toy")
    out = I.standardise_channels(split)
    tr32 = Xtr.astype(np.float32).astype(np.float64)
    mean = tr32.mean(axis=(0, 2, 3))
    std = tr32.std(axis=(0, 2, 3), ddof=1)
    want_tr = ((tr32 - mean[None, :, None, None]) / std[None, :, None, None]).reshape(50, -1)
    want_te = ((Xte.astype(np.float32).astype(np.float64) - mean[None, :, None, None]) / std[None, :, None, None]).reshape(7, -1)
    assert out.X_train.shape == (50, 3072) and out.X_train.dtype == torch.float32
    assert np.abs(out.X_train.numpy() - want_tr).max() < 1e-5 and np.abs(out.X_test.numpy() - want_te).max() < 1e-5
    assert torch.equal(out.y_train, split.y_train) and out.name == "toy"
    flat = DataSplit(split.X_train.reshape(50, -1), split.y_train, split.X_test.reshape(7, -1), split.y_test, "toy")
    assert torch.equal(I.standardise_channels(flat).X_test, out.X_test)   # flat rows in, the same rows out


@pytest.fixture
def paper_smoke_env(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "paper")
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")


def test_paper_split_and_zoo_on_the_stand_ins(paper_smoke_env):
    from lib.data import smoke_online

    mnist = I.paper_split("mnist")
    raw = smoke_online("mnist")
    assert mnist.X_train.shape == (len(raw.y_train), 3072) and torch.equal(mnist.y_test, raw.y_test)
    ch = mnist.X_train.reshape(-1, 3, 1024).double()
    assert torch.allclose(ch.mean((0, 2)), torch.zeros(3, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(ch.std((0, 2)), torch.ones(3, dtype=torch.float64), atol=1e-4)
    split, zoo = I.paper_zoo("cifar10", epochs=1, seed=3, copies=1, progress=False)
    assert list(zoo) == [n for n, _, _ in I.zoo_names(copies=1)] and split.X_test.shape[1] == 3072
    assert all(I.input_width(net) == 3072 and 0 <= I.accuracy(net, split.X_test, split.y_test) <= 1 for net in zoo.values())


def test_paper_split_is_for_the_paper_scale_only(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "quick")
    with pytest.raises(ValueError, match="paper"):
        I.paper_split("mnist")


@pytest.mark.parametrize("arch", ["dense", "simple"])
def test_plane_keys_reproduce_the_net_on_the_plane(arch):
    net = I.make_net(arch, 4, (3, 8, 8))
    rng = np.random.default_rng(0)
    o, e1, e2 = I.plane_through(*rng.normal(size=(3, 192)))
    G = rng.uniform(-2, 2, size=(37, 2))
    keys = I.plane_keys(net, o, e1, e2, G, chunk=5)
    X = I.plane_points(o, e1, e2, G)
    with torch.no_grad():
        v = net.double()(torch.tensor(X)).numpy()
    assert keys.shape == (37, 30)
    assert np.abs(keys[:, :10] * G[:, :1] + keys[:, 10:20] * G[:, 1:] + keys[:, 20:] - v).max() < 1e-10
    # the key is the directional derivative along e1 (finite difference inside the region)
    h = 1e-7
    with torch.no_grad():
        vh = net(torch.tensor(I.plane_points(o, e1, e2, G + [h, 0.0]))).numpy()
    assert np.abs((vh - v) / h - keys[:, :10]).max() < 1e-4


def test_gradient_spectrum_equals_gradient_covariance():
    rng = np.random.default_rng(2)
    for n, d in ((30, 12), (8, 20)):                   # more images than pixels, and fewer
        J = rng.normal(size=(n, 4, d))
        vals, vecs = I.gradient_spectrum(J, n_vectors=2)
        cvals, cvecs = I.gradient_covariance(J)
        k = min(n, d)
        assert vals.shape == (4, k) and vecs.shape == (4, d, 2)
        assert np.abs(vals - cvals[:, :k]).max() < 1e-10 and np.abs(cvals[:, k:]).sum() < 1e-9
        assert np.abs(vecs - cvecs[:, :, :2]).max() < 1e-8


def test_anchor_plane_passes_through_the_closest_triple():
    X = np.random.default_rng(3).normal(size=(25, 40))
    pl = I.anchor_plane(X, margin=0.25)
    assert (pl["tri"] == I.closest_triple(X)).all()
    assert np.abs(I.plane_points(pl["origin"], pl["e1"], pl["e2"], pl["coords"]) - X[pl["tri"]]).max() < 1e-12
    lo, hi = pl["coords"].min(0), pl["coords"].max(0)
    assert np.allclose(pl["box"], (lo[0] - 0.25 * (hi[0] - lo[0]), hi[0] + 0.25 * (hi[0] - lo[0]),
                                   lo[1] - 0.25 * (hi[1] - lo[1]), hi[1] + 0.25 * (hi[1] - lo[1])))


def test_closest_triple_in_blocks_equals_one_block(monkeypatch):
    rng = np.random.default_rng(4)
    Xs = [rng.normal(size=(n, 30)) for n in (5, 17, 40)]
    whole = [I.closest_triple(X) for X in Xs]
    monkeypatch.setattr(I, "_DIST_CHUNK", 1)           # one row per block
    assert all((I.closest_triple(X) == w).all() for X, w in zip(Xs, whole))


@pytest.mark.parametrize("call, match", [
    (lambda: I.make_net("dense", 0, (3, 30, 32)), r"^shape must"),
    (lambda: I.make_net("dense", 0, (3, 32)), r"^shape must"),
    (lambda: I.make_net("dense", 0, (0, 8, 8)), r"^shape must"),
    (lambda: I.train_net(I.make_net("linear", 0, I.PAPER_SHAPE), small_split()), r"^split\.X_train must"),
    (lambda: I.train_zoo(small_split(), shape=I.PAPER_SHAPE), r"^split\.X_train must"),
    (lambda: I.paper_images(torch.zeros(2, 2, 28, 28)), r"^X must"),
    (lambda: I.paper_images(torch.zeros(2, 3, 28, 28)), r"^X must"),
    (lambda: I.paper_images(np.zeros((2, 28, 28), dtype=np.int64)), r"^X must"),
    (lambda: I.standardise_channels("abc"), r"^split must"),
    (lambda: I.standardise_channels(small_split()), r"^split\.X_train must hold images"),
    (lambda: I.standardise_channels(DataSplit(torch.ones(4, 3072), torch.arange(4), torch.ones(2, 3072), torch.arange(2), "c")),
     r"^split\.X_train must not have a constant channel"),
    (lambda: I.paper_split("cifar100"), r"^dataset must be one of"),
    (lambda: I.plane_keys(I.make_net("dense"), np.zeros(63), np.ones(64), np.ones(64), np.zeros((1, 2))), r"^origin must"),
    (lambda: I.plane_keys(I.make_net("dense"), np.zeros(64), np.ones(64), np.ones(64), np.zeros((1, 3))), r"^coords must"),
    (lambda: I.plane_keys(I.make_net("dense"), np.zeros(64), np.ones(64), np.ones(64), np.zeros((1, 2)), chunk=0), r"^chunk must"),
    (lambda: I.gradient_spectrum(np.zeros((3, 4))), r"^J must"),
    (lambda: I.gradient_spectrum(np.zeros((3, 2, 5)), n_vectors=4), r"^n_vectors must"),
    (lambda: I.anchor_plane(np.zeros((2, 5))), r"^X must have at least 3 rows"),
    (lambda: I.anchor_plane(np.eye(4), margin=-1), r"^margin must"),
    (lambda: I.local_coefficients(I.make_net("simple", 0, I.PAPER_SHAPE), np.zeros((1, 64))), r"^X must"),
])
def test_paper_path_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- review s6-08, findings 2, 3 and 13: identities of the paper path that test the Jacobians themselves, at the
# paper's shapes (3x32x32 inputs) on small random nets. The notebooks' exactness asserts compare J x + y with
# v(x) at the point that defined y = v(x) - J x, which holds for any J; these compare each map away from its point.

def _paper_net64(net):
    import copy

    return copy.deepcopy(net).double().eval()


@pytest.mark.parametrize("arch", ["dense", "simple", "complex"])
def test_paper_local_maps_reproduce_the_net_at_a_nearby_point_of_the_same_region(arch):
    net = I.make_net(arch, 5, I.PAPER_SHAPE)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4, 3072))
    J, y = I.local_coefficients(net, X)
    d = rng.normal(size=X.shape)
    Xh = X + 1e-3 * d / np.linalg.norm(d, axis=1, keepdims=True)
    same = (I.activation_pattern(net, X) == I.activation_pattern(net, Xh)).all(1)
    assert same.sum() >= 2                                    # the check below is not vacuous
    with torch.no_grad():
        vh = _paper_net64(net)(torch.tensor(Xh)).numpy()
    pred = np.einsum("noi,ni->no", J, Xh) + y
    assert np.abs(pred - vh)[same].max() < 1e-10 * max(1.0, np.abs(vh).max())


@pytest.mark.parametrize("arch", ["dense", "simple", "complex"])
def test_paper_plane_keys_agree_between_same_region_neighbours(arch):
    # the reviewer's check for cross_section: key_i evaluated at a horizontally adjacent grid point j with
    # the same activation pattern must give v(x_j) (the same affine map); a wrong J fails by ~1e-4
    net = I.make_net(arch, 6, I.PAPER_SHAPE)
    rng = np.random.default_rng(3)
    o, e1, e2 = I.plane_through(*rng.normal(size=(3, 3072)))
    p = 6
    # the conv nets' max-pool bits change within much shorter steps than the dense nets' ReLUs
    s = np.linspace(-0.3, 0.3, p) * (1.0 if arch == "dense" else 1e-3)
    G = np.stack(np.meshgrid(s, s, indexing="ij"), -1).reshape(-1, 2)
    keys = I.plane_keys(net, o, e1, e2, G)
    Xg = I.plane_points(o, e1, e2, G)
    P = I.activation_pattern(net, Xg)
    with torch.no_grad():
        v = _paper_net64(net)(torch.tensor(Xg)).numpy()
    Pg, Kg, Gg, vg = P.reshape(p, p, -1), keys.reshape(p, p, -1), G.reshape(p, p, 2), v.reshape(p, p, -1)
    same = (Pg[:, 1:] == Pg[:, :-1]).all(-1)
    assert same.sum() >= 5
    pred = Kg[:, :-1, :10] * Gg[:, 1:, :1] + Kg[:, :-1, 10:20] * Gg[:, 1:, 1:] + Kg[:, :-1, 20:]
    assert np.abs(pred - vg[:, 1:])[same].max() < 1e-10 * max(1.0, np.abs(v).max())


def test_paper_dense_gradient_covariance_has_at_most_128_nonzero_values_and_linear_one():
    # §6.4: "they only have 128 nonzero singular values [because] they only have 128 ReLU nonlinearities":
    # every gradient of a dense net lies in the row space of W1 (rank <= 128); a linear net's are all equal
    rng = np.random.default_rng(4)
    X = rng.normal(size=(160, 3072))
    vals, _ = I.gradient_spectrum(I.local_coefficients(I.make_net("dense", 8, I.PAPER_SHAPE), X)[0])
    assert vals.shape == (10, 160)
    assert (vals[:, 128:] <= 1e-10 * vals[:, :1]).all()
    assert (vals[:, 100] > 1e-10 * vals[:, 0]).all()          # the bound is reached, not trivially met
    lin, _ = I.gradient_spectrum(I.local_coefficients(I.make_net("linear", 8, I.PAPER_SHAPE), X[:20])[0])
    assert (lin[:, 1:] <= 1e-10 * lin[:, :1]).all() and (lin[:, 0] > 0).all()


def test_paper_zoo_checks_its_arguments_before_the_download(monkeypatch):
    def no_download(dataset):
        raise AssertionError("paper_split was called")

    monkeypatch.setattr(I, "paper_split", no_download)
    for kwargs, match in [({"epochs": 0}, r"^epochs must"), ({"copies": -1}, r"^copies must"), ({"seed": -1}, r"^seed must"),
                          ({"dataset": "svhn"}, r"^dataset must")]:
        with pytest.raises(ValueError, match=match):
            I.paper_zoo(**{"dataset": "mnist", **kwargs})


def test_standardise_channels_checks_the_labels():
    X = torch.rand(10, 3072)
    with pytest.raises(ValueError, match=r"^split\.y_train must"):
        I.standardise_channels(DataSplit(X, torch.arange(7), X[:4], torch.arange(4), "toy"))
    with pytest.raises(ValueError, match=r"^split\.y_test must"):
        I.standardise_channels(DataSplit(X, torch.arange(10), X[:4], torch.arange(3), "toy"))
