"""Tests of lib.skip_connections against independent computations (chapter 10, part C; thesis Ch. 4)."""

import json
import math

import numpy as np
import pytest
import torch

from lib import skip_connections as SK
from lib import validate as V
from lib.landscape import nr_rank


def data(n=12, d=5, m=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g, dtype=torch.float64), torch.randint(0, m, (n,), generator=g)


def np_act(z, name, gamma=20.0):
    return 1.0 / (1.0 + np.exp(-z)) if name == "sigmoid" else np.log1p(np.exp(gamma * z)) / gamma


def reference_forward(model, X, k):
    """Model k's logits and Psi by a plain numpy loop over the layers."""
    h, hidden = X.numpy(), []
    Ws = [W[k].detach().numpy() for W in model.weights]
    bs = [b[k].detach().numpy() for b in model.biases]
    for W, b in zip(Ws[:-1], bs[:-1]):
        h = np_act(h @ W.T + b, model.act, model.gamma)
        hidden.append(h)
    pool = np.hstack(hidden)
    m = model.n_skip[k]
    psi = pool[:, model.skip_index[k, :m].numpy()]
    return h @ Ws[-1].T + bs[-1] + psi @ model.V[k, :m].detach().numpy(), psi


def randomise_V(model, seed=1):
    with torch.no_grad():
        model.V.copy_(torch.randn(model.V.shape, generator=torch.Generator().manual_seed(seed), dtype=model.V.dtype))
        model.V.mul_(model.skip_mask)


# ------------------------------------------------------------------ activations and initialisation

def test_activations_match_closed_forms():
    z = torch.linspace(-3, 3, 13, dtype=torch.float64)
    assert np.allclose(SK.activation(z, "sigmoid").numpy(), np_act(z.numpy(), "sigmoid"), atol=1e-15)
    for gamma in (1.0, 20.0):
        assert np.allclose(SK.activation(z, "softplus", gamma).numpy(), np_act(z.numpy(), "softplus", gamma), atol=1e-14)
    # far on the right, softplus is the identity (no overflow): 100 -> 100
    assert SK.activation(torch.tensor([100.0], dtype=torch.float64), "softplus").item() == pytest.approx(100.0)


def test_activation_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"^name \(the activation\) must be one of"):
        SK.activation(torch.zeros(2), "relu")
    with pytest.raises(ValueError, match="^gamma must be"):
        SK.activation(torch.zeros(2), "softplus", 0.0)
    with pytest.raises(TypeError, match="^z must be a torch.Tensor"):
        SK.activation(np.zeros(2), "sigmoid")


def test_he_truncated_normal_bounds_and_spread():
    fan_in = 50
    std = math.sqrt(2.0 / fan_in)
    w = SK.he_truncated_normal((200, 300), fan_in, torch.Generator().manual_seed(0), torch.float64)
    assert w.dtype == torch.float64 and w.shape == (200, 300)
    assert w.abs().max() <= 2 * std and w.abs().max() > 1.9 * std
    # a normal truncated at +-2 sd has sd 0.8796 sd (closed form)
    a = 2.0
    phi = math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    Z = math.erf(a / math.sqrt(2))
    assert float(w.std()) == pytest.approx(std * math.sqrt(1 - 2 * a * phi / Z), rel=0.01)
    assert abs(float(w.mean())) < 0.01 * std
    with pytest.raises(ValueError, match="^fan_in must be"):
        SK.he_truncated_normal((2, 2), 0, torch.Generator())


# ------------------------------------------------------------------ the skip MLP

def test_forward_and_psi_match_a_numpy_loop():
    X, _ = data()
    model = SK.SkipMLP([5, 4, 3, 3], [0, 1, 2], [2, 7, 0], "softplus", gamma=3.0, dtype=torch.float64)
    randomise_V(model)
    out, psi = model(X), model.psi(X)
    assert out.shape == (3, 12, 3) and psi.shape == (3, 12, 7)
    for k in range(3):
        ref_out, ref_psi = reference_forward(model, X, k)
        assert np.allclose(out[k].detach().numpy(), ref_out, atol=1e-12)
        m = model.n_skip[k]
        assert np.allclose(psi[k, :, :m].detach().numpy(), ref_psi, atol=1e-14)
        assert np.all(psi[k, :, m:].detach().numpy() == 0.0)  # columns beyond the model's own count are masked


def test_plain_net_and_zero_V_are_the_base_net():
    X, _ = data()
    model = SK.SkipMLP([5, 6, 6, 3], [4, 4], [0, 9], "sigmoid", dtype=torch.float64)
    out = model(X).detach()
    assert torch.equal(out[0], out[1])  # V = 0 at init: the skip net starts as its base net
    randomise_V(model)
    out2 = model(X).detach()
    assert torch.equal(out2[0], out[0]) and not torch.allclose(out2[1], out[1])


def test_models_are_the_single_models_of_their_seeds():
    a = SK.SkipMLP([5, 6, 6, 3], [7], 4)
    b = SK.SkipMLP([5, 6, 6, 3], [2, 7], 4)
    for Wa, Wb in zip(a.weights, b.weights):
        assert torch.equal(Wa[0], Wb[1]) and not torch.equal(Wb[0], Wb[1])
    assert torch.equal(a.skip_index[0], b.skip_index[1])
    assert all(torch.all(bias == 0) for bias in b.biases) and torch.all(b.V == 0)
    for k in range(2):  # distinct neurons from the whole pool of hidden units
        idx = b.skip_index[k].tolist()
        assert len(set(idx)) == 4 and min(idx) >= 0 and max(idx) < 12
    std = math.sqrt(2.0 / 5)
    assert b.weights[0].abs().max() <= 2 * std and b.weights[1].abs().max() <= 2 * math.sqrt(2.0 / 6)


def test_skip_neurons_are_drawn_uniformly_from_all_layers():
    model = SK.SkipMLP([3, 10, 10, 10, 2], list(range(200)), 6)
    counts = np.bincount(model.skip_index.flatten().numpy(), minlength=30)
    assert counts.sum() == 1200 and counts.min() > 15  # expected 40 each
    assert counts[:10].sum() > 300 and counts[20:].sum() > 300


def test_skip_mlp_errors_name_the_argument():
    with pytest.raises(ValueError, match="^widths must be a sequence of at least 3"):
        SK.SkipMLP([5, 3], [0], 1)
    with pytest.raises(ValueError, match=r"^widths\[i\] must be"):
        SK.SkipMLP([5, 0, 3], [0], 1)
    with pytest.raises(ValueError, match="^seeds must be a sequence of at least 1"):
        SK.SkipMLP([5, 4, 3], [], 1)
    with pytest.raises(ValueError, match=r"^n_skip must give one count per model \(2\), each at most the 4 hidden neurons, got 5$"):
        SK.SkipMLP([5, 4, 3], [0, 1], 5)
    with pytest.raises(ValueError, match=r"^n_skip must give one count per model \(2\), each at most the 4 hidden neurons, got \[1\]$"):
        SK.SkipMLP([5, 4, 3], [0, 1], [1])
    with pytest.raises(ValueError, match="^n_skip must be"):
        SK.SkipMLP([5, 4, 3], [0], -1)
    with pytest.raises(ValueError, match="^activation must be one of"):
        SK.SkipMLP([5, 4, 3], [0], 1, "tanh")
    with pytest.raises(ValueError, match="^gamma must be"):
        SK.SkipMLP([5, 4, 3], [0], 1, "softplus", gamma=-1.0)
    model = SK.SkipMLP([5, 4, 3], [0], 4)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 5\), got \(2, 4\)$"):
        model(torch.zeros(2, 4))
    with pytest.raises(TypeError, match="^X must be a floating-point tensor"):
        model(torch.zeros(2, 5, dtype=torch.int64))


# ------------------------------------------------------------------ training

def manual_sgd(model, X, y, lrs, momentum=0.0):
    """Full-batch SGD by hand (torch autograd on the plain cross-entropy), one lr per epoch."""
    params = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
    names = [n for n, _ in model.named_parameters()]
    bufs = [None] * len(params)
    for lr in lrs:
        loss = 0
        W = {n: p for n, p in zip(names, params)}
        L = len(model.weights)
        for k in range(model.V.shape[0]):
            h, hidden = X, []
            for l in range(L - 1):
                h = SK.activation(h @ W[f"weights.{l}"][k].T + W[f"biases.{l}"][k], model.act)
                hidden.append(h)
            psi = torch.cat(hidden, 1)[:, model.skip_index[k, :model.n_skip[k]]]
            out = h @ W[f"weights.{L - 1}"][k].T + W[f"biases.{L - 1}"][k] + psi @ W["V"][k, :model.n_skip[k]]
            loss = loss + torch.nn.functional.cross_entropy(out, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for i, (p, g) in enumerate(zip(params, grads)):
                bufs[i] = g.clone() if bufs[i] is None else momentum * bufs[i] + g
                p -= lr * ((g + momentum * bufs[i]) if momentum else g)  # Nesterov
    return params


def test_train_sgd_full_batch_with_the_lr_schedule_equals_manual_sgd():
    X, y = data()
    model = SK.SkipMLP([5, 4, 4, 3], [0, 1], [0, 6], "sigmoid", dtype=torch.float64)
    randomise_V(model)
    expected = manual_sgd(model, X, y, [0.5, 0.5, 0.05, 0.005])  # /10 at 50 % and at 75 % of 4 epochs
    hist = SK.train_sgd(model, X, y, 4, 12, 0.5, momentum=0.0)
    for p, q in zip(model.parameters(), expected):
        assert torch.allclose(p, q, atol=1e-12)
    assert hist.steps == [1, 2, 3, 4] and np.asarray(hist.loss).shape == (4, 2)


def test_train_sgd_nesterov_momentum_equals_manual():
    X, y = data(seed=3)
    model = SK.SkipMLP([5, 4, 3], [2], 3, "softplus", dtype=torch.float64)
    randomise_V(model)
    expected = manual_sgd(model, X, y, [0.1, 0.1, 0.1], momentum=0.9)
    SK.train_sgd(model, X, y, 3, 12, 0.1, milestones=(), momentum=0.9)
    for p, q in zip(model.parameters(), expected):
        assert torch.allclose(p, q, atol=1e-12)
    model2 = SK.SkipMLP([5, 4, 3], [2], 3, "softplus", dtype=torch.float64)
    randomise_V(model2)
    SK.train_sgd(model2, X, y, 3, 12, 0.1, milestones=(), momentum=0.9, nesterov=False)
    assert not torch.allclose(model2.V, model.V)  # heavy-ball momentum is another algorithm


def test_train_sgd_logs_the_epoch_mean_loss_and_accuracy():
    X, y = data(n=10)
    model = SK.SkipMLP([5, 4, 3], [0, 1], 3, dtype=torch.float64)
    with torch.no_grad():
        start = [float(torch.nn.functional.cross_entropy(model(X)[k], y)) for k in range(2)]
    hist = SK.train_sgd(model, X, y, 2, 10, 0.3, track_accuracy=True)
    assert np.allclose(hist.loss[0], start, atol=1e-12)  # one full batch: the loss before the step
    assert len(hist.train_acc) == 2 and np.array_equal(hist.train_acc[-1], SK.accuracy(model, X, y))
    # minibatches of 4, 4, 2 rows: the epoch's loss is their size-weighted mean
    model = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
    with torch.no_grad():
        first = torch.nn.functional.cross_entropy(model(X)[0], y, reduction="none")
    hist = SK.train_sgd(model, X, y, 1, 4, 1e-12)  # steps too small to move the loss
    assert hist.loss[0][0] == pytest.approx(float(first.mean()), abs=1e-9)
    assert hist.train_acc == []


def test_train_readout_only_moves_the_weights_into_the_outputs():
    X, y = data()
    model = SK.SkipMLP([5, 4, 4, 3], [0], 5, dtype=torch.float64)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    SK.train_sgd(model, X, y, 2, 4, 0.1, train="readout")
    moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert moved == {"V", "weights.2", "biases.2"}


def test_train_sgd_is_seeded():
    X, y = data()
    runs = []
    for s in (0, 0, 1):
        model = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
        SK.train_sgd(model, X, y, 2, 5, 0.1, seed=s)
        runs.append(model.V.detach().clone())
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


def test_train_sgd_errors_name_the_argument():
    X, y = data()
    model = SK.SkipMLP([5, 4, 3], [0], 3)
    X = X.float()
    with pytest.raises(TypeError, match="^model must be a SkipMLP or SkipCNN"):
        SK.train_sgd("net", X, y, 1, 4, 0.1)
    with pytest.raises(ValueError, match=r"^y must hold one label per row of X \(12\), got shape \(5,\)$"):
        SK.train_sgd(model, X, y[:5], 1, 4, 0.1)
    with pytest.raises(ValueError, match="^y must be class indices >= 0 and < 3"):
        SK.train_sgd(model, X, y + 3, 1, 4, 0.1)
    with pytest.raises(ValueError, match="^epochs must be"):
        SK.train_sgd(model, X, y, 0, 4, 0.1)
    with pytest.raises(ValueError, match="^batch_size must be"):
        SK.train_sgd(model, X, y, 1, 0, 0.1)
    with pytest.raises(ValueError, match=r"^lr \(the learning rate\) must be"):
        SK.train_sgd(model, X, y, 1, 4, -0.1)
    with pytest.raises(ValueError, match="^momentum must be"):
        SK.train_sgd(model, X, y, 1, 4, 0.1, momentum=1.0)
    with pytest.raises(ValueError, match=r"^milestones\[i\] must be"):
        SK.train_sgd(model, X, y, 1, 4, 0.1, milestones=(0.0,))
    with pytest.raises(ValueError, match="^train must be one of"):
        SK.train_sgd(model, X, y, 1, 4, 0.1, train="hidden")
    with pytest.raises(ValueError, match="^seed must be"):
        SK.train_sgd(model, X, y, 1, 4, 0.1, seed=-1)
    with pytest.raises(FloatingPointError, match=r"^the training loss became NaN or infinite by step 2 \(epoch\) with lr=1e\+30: "):
        SK.train_sgd(SK.SkipMLP([5, 4, 3], [0], 3, "softplus"), X * 1e30, y, 3, 12, 1e30)


def test_accuracy_is_the_argmax_hit_rate():
    X, y = data(n=20)
    model = SK.SkipMLP([5, 4, 3], [0, 1], 3, dtype=torch.float64)
    randomise_V(model)
    logits = model(X).detach().numpy()
    expected = (logits.argmax(2) == y.numpy()[None]).mean(1)
    assert np.array_equal(SK.accuracy(model, X, y), expected)
    with pytest.raises(ValueError, match=r"^y must have one label per row of X \(20\), got 3$"):
        SK.accuracy(model, X, y[:3])
    with pytest.raises(TypeError, match="^model must be a SkipMLP or SkipCNN"):
        SK.accuracy(None, X, y)


# ------------------------------------------------------------------ Lemma 4.3.2 and the rand algorithm

def test_psi_rank_is_N_with_enough_skip_neurons_and_the_count_without():
    X, _ = data(n=20, d=6)
    model = SK.SkipMLP([6, 30, 30, 3], [0, 1, 2], [25, 8, 0], "sigmoid", dtype=torch.float64)
    ranks = SK.psi_ranks(model, X)
    assert [r for r, _ in ranks] == [20, 8, 0]
    psi = model.psi(X).detach().numpy()
    assert ranks[0][0] == np.linalg.matrix_rank(psi[0, :, :25])
    assert np.allclose(ranks[0][1], np.linalg.svd(psi[0, :, :25], compute_uv=False))
    assert len(ranks[2][1]) == 0


def test_psi_rank_sees_duplicate_samples():
    X, _ = data(n=10, d=6)
    X = torch.cat([X, X[:3]])  # three repeated samples: rank <= 10 whatever the width
    model = SK.SkipMLP([6, 30, 30, 3], [0], 20, dtype=torch.float64)
    assert SK.psi_ranks(model, X)[0][0] == 10 == nr_rank(model.psi(X)[0].detach().numpy())[0]


def test_exact_readout_interpolates_when_psi_has_rank_N():
    X, y = data(n=15, d=6)
    model = SK.SkipMLP([6, 20, 20, 3], [0, 1], [25, 6], "softplus", dtype=torch.float64)
    G0 = model(X).detach().clone()
    res = SK.exact_readout(model, X, y)
    Y = torch.nn.functional.one_hot(y, 3).double()
    assert res[0] < 1e-10 and torch.allclose(model(X)[0], Y, atol=1e-8)
    assert SK.accuracy(model, X, y)[0] == 1.0
    # 6 skip neurons < N = 15: the least-squares residual of an independent numpy solve
    psi = model.psi(X)[1, :, :6].detach().numpy()
    R = Y.numpy() - G0[1].numpy()
    sol = np.linalg.lstsq(psi, R, rcond=None)[0]
    assert res[1] == pytest.approx(np.linalg.norm(psi @ sol - R) / np.linalg.norm(R), rel=1e-8)
    assert res[1] > 0.05
    assert torch.allclose(model.V[1, :6], torch.tensor(sol), atol=1e-8)
    with pytest.raises(ValueError, match=r"^y must hold one label per row of X \(15\), got 4$"):
        SK.exact_readout(model, X, y[:4])


def test_exact_readout_keeps_a_nonzero_V_out_of_the_residual():
    X, y = data(n=8, d=4)
    model = SK.SkipMLP([4, 12, 3], [0], 12, "sigmoid", dtype=torch.float64)
    randomise_V(model)
    SK.exact_readout(model, X, y)
    assert torch.allclose(model(X)[0], torch.nn.functional.one_hot(y, 3).double(), atol=1e-8)


# ------------------------------------------------------------------ the loss on a plane (Fig. 4.4)

def test_filter_normalised_direction_matches_row_norms():
    params = [torch.randn(4, 3, dtype=torch.float64), torch.randn(4, dtype=torch.float64), torch.zeros(2, 5)]
    d1 = SK.filter_normalised_direction(params, torch.Generator().manual_seed(0))
    d2 = SK.filter_normalised_direction(params, torch.Generator().manual_seed(0))
    assert all(torch.equal(a, b) for a, b in zip(d1, d2))
    assert torch.allclose(d1[0].norm(dim=1), params[0].norm(dim=1))
    assert torch.all(d1[1] == 0) and torch.all(d1[2] == 0)
    with pytest.raises(ValueError, match=r"^params\[i\] must be finite"):
        SK.filter_normalised_direction([torch.tensor([float("nan")])], torch.Generator())


def test_plane_losses_centre_and_a_corner_equal_direct_evaluations():
    X, y = data(n=16, d=5)
    model = SK.SkipMLP([5, 6, 6, 3], [0, 1], [4, 9], "sigmoid", dtype=torch.float64)
    randomise_V(model)
    grid, L = SK.plane_losses(model, X, y, span=0.5, resolution=5, seed=3, k=1)
    assert L.shape == (5, 5) and np.allclose(grid, np.linspace(-0.5, 0.5, 5))
    with torch.no_grad():
        centre = float(torch.nn.functional.cross_entropy(model(X)[1], y))
    assert L[2, 2] == pytest.approx(centre, abs=1e-12)
    # rebuild the plane's directions independently and evaluate (a, b) = (-0.5, 0.25) by the reference loop
    gen = torch.Generator().manual_seed(3)
    theta = [W[1].detach() for W in model.weights] + [b[1].detach() for b in model.biases] + [model.V[1, :9].detach().T]
    d1 = SK.filter_normalised_direction(theta, gen)
    d2 = SK.filter_normalised_direction(theta, gen)
    moved = [t - 0.5 * u + 0.25 * w for t, u, w in zip(theta, d1, d2)]
    with torch.no_grad():
        for l in range(3):
            model.weights[l][1] = moved[l]
            model.biases[l][1] = moved[3 + l]
        model.V[1, :9] = moved[-1].T
    out, _ = reference_forward(model, X, 1)
    expected = float(torch.nn.functional.cross_entropy(torch.tensor(out), y))
    assert L[0, 3] == pytest.approx(expected, abs=1e-12)
    # the plain model (no skip neurons): a plane in the base net's weights only
    plain = SK.SkipMLP([5, 6, 3], [0], 0, "softplus", dtype=torch.float64)
    grid, L0 = SK.plane_losses(plain, X, y, span=0.5, resolution=3, seed=4)
    gen = torch.Generator().manual_seed(4)
    th = [plain.weights[0][0], plain.weights[1][0], plain.biases[0][0], plain.biases[1][0]]
    th = [t.detach() for t in th]
    e1, e2 = SK.filter_normalised_direction(th, gen), SK.filter_normalised_direction(th, gen)
    W1, W2 = (th[i] + 0.5 * e1[i] - 0.5 * e2[i] for i in range(2))
    h = np_act(X.numpy() @ W1.numpy().T + th[2].numpy(), "softplus")
    expected = float(torch.nn.functional.cross_entropy(torch.tensor(h @ W2.numpy().T + th[3].numpy()), y))
    assert L0[2, 0] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match=r"^k \(the model index\) must be"):
        SK.plane_losses(model, X, y, k=2)
    with pytest.raises(ValueError, match="^span must be"):
        SK.plane_losses(model, X, y, span=0.0)
    with pytest.raises(ValueError, match="^resolution must be"):
        SK.plane_losses(model, X, y, resolution=0)
    with pytest.raises(TypeError, match="^model must be a SkipMLP"):
        SK.plane_losses(SK.SkipCNN([("fc", 3)], (1, 2, 2), 2, 0, 1), X, y)


# ------------------------------------------------------------------ CNNs and the paper configurations

def test_table_4_1_cnn13_neuron_count():
    model = SK.SkipCNN(SK.CNN13, (1, 28, 28), 10, 0, 5)
    table_4_1 = [50176, 50176, 12544, 25088, 25088, 6272, 12544, 12544, 4096, 4096, 1024, 1024, 256]
    assert model.n_hidden == sum(table_4_1) == 204928  # the caption's 179,840 is 25,088 short of its own rows
    hidden, out = model._hidden_and_output(torch.zeros(1, 1, 28, 28))
    assert [h.shape[2] for h in hidden] == table_4_1 and out.shape == (1, 1, 10)


def test_vgg_layers_and_mp2conv():
    vgg11 = SK.vgg_layers(11)
    assert sum(s[0] == "conv" for s in vgg11) == 8 and sum(s[0] == "pool" for s in vgg11) == 5
    assert vgg11[-2:] == (("fc", 128), ("fc", 128))
    mp = SK.vgg_layers(11, mp2conv=True)
    assert ("pool",) not in mp and mp[1] == ("conv", 64, 2, 2) and mp[3] == ("conv", 128, 2, 2)
    assert sum(s[0] == "conv" for s in SK.vgg_layers(16)) == 13 and len(SK.vgg_layers(13, fc=7)) == 17
    assert SK.vgg_layers(13, fc=7)[-1] == ("fc", 7)
    model = SK.SkipCNN(vgg11, (3, 32, 32), 10, 0, 3)
    hidden, _ = model._hidden_and_output(torch.zeros(1, 3, 32, 32))
    assert [h.shape[2] for h in hidden] == [65536, 32768, 16384, 16384, 8192, 8192, 2048, 2048, 128, 128]
    model = SK.SkipCNN(mp, (3, 32, 32), 10, 0, 3)
    # every max-pool becomes a 2x2 conv of stride 2, whose outputs join the pool of hidden neurons
    assert model.n_hidden == 65536 + 16384 + 32768 + 8192 + 2 * 16384 + 4096 + 2 * 8192 + 2048 + 2 * 2048 + 512 + 2 * 128
    with pytest.raises(ValueError, match="^depth must be one of"):
        SK.vgg_layers(19)
    with pytest.raises(ValueError, match="^fc must be"):
        SK.vgg_layers(11, fc=0)


def test_skip_cnn_forward_matches_functional_ops():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(3, 2, 6, 6, generator=g, dtype=torch.float64)
    layers = (("conv", 3, 3, 1), ("pool",), ("conv", 4, 2, 2), ("fc", 5))
    model = SK.SkipCNN(layers, (2, 6, 6), 3, 4, 7, "softplus", gamma=2.0, dtype=torch.float64)
    randomise_V(model)
    c1, c2, fc = model.layers[0], model.layers[2], model.layers[3][1]
    a = lambda z: np.log1p(np.exp(2.0 * z.detach().numpy())) / 2.0  # noqa: E731
    h1 = torch.tensor(a(torch.nn.functional.conv2d(X, c1.weight, c1.bias, padding=1)))
    h2 = torch.tensor(a(torch.nn.functional.conv2d(torch.nn.functional.max_pool2d(h1, 2), c2.weight, c2.bias, stride=2)))
    h3 = torch.tensor(a(h2.flatten(1) @ fc.weight.T + fc.bias))
    pool = torch.cat([h1.flatten(1), h2.flatten(1), h3], 1).detach()
    assert model.n_hidden == pool.shape[1] == 3 * 36 + 4 * 1 + 5  # 6x6 -> pool 3x3 -> 2x2 conv, stride 2: 1x1
    psi = pool[:, model.skip_index[0]]
    out = (h3 @ model.head.weight.T + model.head.bias + psi @ model.V[0]).detach()
    assert torch.allclose(model.psi(X)[0], psi, atol=1e-12) and torch.allclose(model(X)[0], out, atol=1e-12)
    std = math.sqrt(2.0 / (2 * 9))
    assert c1.weight.abs().max() <= 2 * std and torch.all(c1.bias == 0) and torch.all(model.head.bias == 0)
    assert model.head.weight.abs().max() <= 2 * math.sqrt(2.0 / 5)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 2, 6, 6\), got \(1, 2, 5, 6\)$"):
        model(torch.zeros(1, 2, 5, 6, dtype=torch.float64))
    SK.train_sgd(model, X, torch.tensor([0, 1, 2]), 1, 3, 0.1, train="readout")  # trains like a SkipMLP


def test_skip_cnn_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"^layers: unknown layer \('dense', 3\) \(conv, pool or fc\)$"):
        SK.SkipCNN((("dense", 3),), (1, 4, 4), 2, 0, 1)
    with pytest.raises(ValueError, match=r"^in_shape must be \(channels, height, width\), got \(1, 4, 4, 4\)$"):
        SK.SkipCNN((("fc", 3),), (1, 4, 4, 4), 2, 0, 1)
    with pytest.raises(ValueError, match=r"^in_shape\[i\] must be"):
        SK.SkipCNN((("fc", 3),), (1, 0, 4), 2, 0, 1)
    with pytest.raises(ValueError, match=r"^n_skip must give one count per model \(1\), each at most the 3 hidden neurons, got 4$"):
        SK.SkipCNN((("fc", 3),), (1, 4, 4), 2, 0, 4)
    with pytest.raises(ValueError, match="^n_out must be"):
        SK.SkipCNN((("fc", 3),), (1, 4, 4), 0, 0, 1)
    with pytest.raises(ValueError, match="^seed must be"):
        SK.SkipCNN((("fc", 3),), (1, 4, 4), 2, -1, 1)
    with pytest.raises(ValueError, match="^activation must be one of"):
        SK.SkipCNN((("fc", 3),), (1, 4, 4), 2, 0, 1, "relu")


@pytest.mark.parametrize("layers, in_shape, n_skip", [
    (SK.CNN13, (1, 28, 28), 55000),                     # Table 4.2: MNIST, N = 55,000 skip neurons
    (SK.vgg_layers(11), (3, 32, 32), 50000),            # Table 4.3: CIFAR-10, N = 50,000
    (SK.vgg_layers(11, mp2conv=True), (3, 32, 32), 50000),  # Table 4.5
])
def test_one_training_step_of_the_paper_configurations(layers, in_shape, n_skip):
    loss = SK.check_paper_config_step(layers, in_shape, 10, n_skip, batch=2)
    assert math.isfinite(loss) and loss > 0


def test_random_shift_is_a_padded_crop_of_each_image():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 2, 5, 4, generator=g, dtype=torch.float64) + 1.0
    assert torch.equal(SK.random_shift(X, 0, g), X)
    out = SK.random_shift(X, 1, g)
    assert out.shape == X.shape
    P = np.pad(X.numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)))
    seen = set()
    for i in range(40):  # brute force: which of the 9 windows of the padded image is it?
        hits = [(dy, dx) for dy in range(3) for dx in range(3) if np.array_equal(out[i].numpy(), P[i, :, dy:dy + 5, dx:dx + 4])]
        assert len(hits) == 1
        seen.add(hits[0])
    assert len(seen) == 9
    with pytest.raises(ValueError, match="^max_shift must be"):
        SK.random_shift(X, -1, g)
    with pytest.raises(ValueError, match="^X must be an array with 4 dimensions"):
        SK.random_shift(X[0], 1, g)


def test_train_sgd_applies_the_augmentation_to_each_batch():
    X, y = data(n=6)
    sizes = []

    def augment(Xb, gen):
        sizes.append(len(Xb))
        return Xb * 0.0

    model = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
    hist = SK.train_sgd(model, X, y, 2, 4, 1e-12, augment=augment, momentum=0.0)
    assert sizes == [4, 2, 4, 2]
    # zeroed inputs: the hidden layer sees only its bias, so the first epoch's loss is that of X = 0
    with torch.no_grad():
        ref = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
        expected = float(torch.nn.functional.cross_entropy(ref(torch.zeros(6, 5, dtype=torch.float64))[0], y))
    assert hist.loss[0][0] == pytest.approx(expected, abs=1e-9)
    with pytest.raises(TypeError, match="^augment must be callable"):
        SK.train_sgd(model, X, y, 1, 4, 0.1, augment=3)


def test_accuracy_in_chunks_equals_one_pass():
    X, y = data(n=23)
    model = SK.SkipMLP([5, 4, 3], [0, 1, 2], 3, dtype=torch.float64)
    randomise_V(model, seed=5)
    one = SK.accuracy(model, X, y)
    assert np.array_equal(SK.accuracy(model, X, y, chunk=4), one) and np.array_equal(SK.accuracy(model, X, y, chunk=1), one)
    with pytest.raises(ValueError, match="^chunk must be"):
        SK.accuracy(model, X, y, chunk=0)
    with pytest.raises(ValueError, match="^X must be non-empty"):
        SK.accuracy(model, X[:0], y)


def test_hidden_returns_every_layer():
    X, _ = data()
    model = SK.SkipMLP([5, 4, 6, 3], [0, 1], 5, "sigmoid", dtype=torch.float64)
    hidden = model.hidden(X)
    assert [h.shape for h in hidden] == [(2, 12, 4), (2, 12, 6)]
    pool = torch.cat(hidden, 2)
    assert torch.equal(model.psi(X)[1], pool[1][:, model.skip_index[1]])
    h1 = 1 / (1 + torch.exp(-(X @ model.weights[0][0].T + model.biases[0][0])))
    assert torch.allclose(hidden[0][0], h1, atol=1e-14)


def test_empty_inputs_and_labels_beyond_the_outputs_are_refused():
    X, y = data(n=6)
    model = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
    for fn in (SK.psi_ranks, lambda m, X: SK.exact_readout(m, X, y), lambda m, X: SK.plane_losses(m, X, y)):
        with pytest.raises(ValueError, match="^X must be non-empty"):
            fn(model, X[:0])
    with pytest.raises(ValueError, match="^y must be class indices >= 0 and < 3"):
        SK.accuracy(model, X, y + 3)
    with pytest.raises(ValueError, match="^y must be an array with 1 dimensions"):
        SK.plane_losses(model, X, y[None])


# ------------------------------------------------------------------ defaults and edge cases, by value

def test_softplus_is_exact_below_its_linear_switch_and_gamma_defaults_to_20():
    z = torch.linspace(-3, 3, 49, dtype=torch.float64)      # steps of 1/8: gamma z = 22.5, 25, 27.5 lie below 30
    ref = np.log1p(np.exp(20.0 * z.numpy())) / 20.0
    assert np.allclose(SK.activation(z, "softplus").numpy(), ref, rtol=0, atol=1e-15)
    model = SK.SkipMLP([5, 4, 3], [0], 2, "softplus")
    assert model.gamma == 20.0 and model.act == "softplus"
    X = torch.linspace(-1.5, 1.5, 10, dtype=torch.float32).reshape(2, 5)
    h = np_act(X.double().numpy() @ model.weights[0][0].detach().double().numpy().T, "softplus", 20.0)
    assert np.allclose(model.hidden(X)[0][0].detach().double().numpy(), h, atol=1e-6)


def test_default_model_is_a_float32_sigmoid_net():
    model = SK.SkipMLP([5, 4, 3], [0], 2)
    assert model.act == "sigmoid" and model.V.dtype == torch.float32 and model.weights[0].dtype == torch.float32
    assert SK.he_truncated_normal((3, 3), 4, torch.Generator()).dtype == torch.float32
    X64 = torch.rand(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    out = model(X64)
    assert out.dtype == torch.float32 and torch.equal(out, model(X64.float()))
    h = 1 / (1 + np.exp(-(X64.numpy() @ model.weights[0][0].detach().double().numpy().T)))
    assert np.allclose(model.hidden(X64)[0][0].detach().double().numpy(), h, atol=1e-6)
    cnn = SK.SkipCNN((("fc", 3),), (1, 2, 2), 2, 0, 1)
    assert cnn.act == "sigmoid" and cnn.gamma == 20.0 and cnn.V.dtype == torch.float32 and cnn.head.weight.dtype == torch.float32
    assert cnn(torch.zeros(1, 1, 2, 2, dtype=torch.float64)).dtype == torch.float32
    soft = SK.SkipCNN((("fc", 3),), (1, 2, 2), 2, 0, 1, "softplus")
    assert soft.gamma == 20.0


def test_skip_counts_up_to_the_whole_pool():
    X, _ = data(n=7)
    model = SK.SkipMLP([5, 4, 3, 2], [0, 1], [7, 0])    # all 7 hidden neurons of model 0
    assert model.n_skip == [7, 0] and sorted(model.skip_index[0].tolist()) == list(range(7))
    pool = torch.cat(model.hidden(X.float()), 2)
    assert torch.allclose(model.psi(X.float())[0], pool[0][:, model.skip_index[0]])
    assert SK.SkipMLP([5, 4, 3], [0, 1], 4).n_skip == [4, 4]
    with pytest.raises(ValueError, match=r"^n_skip\[i\] must be an int >= 0"):
        SK.SkipMLP([5, 4, 3], [0, 1], [1, -1])
    with pytest.raises(ValueError, match=r"^n_skip must give one count per model \(2\), each at most the 4 hidden neurons, got \[5, 0\]$"):
        SK.SkipMLP([5, 4, 3], [0, 1], [5, 0])
    with pytest.raises(ValueError, match=r"^seeds\[i\] must be"):
        SK.SkipMLP([5, 4, 3], [0, -1], 1)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 5\), got \(1, 2, 5\)$"):
        model(torch.zeros(1, 2, 5))


def test_skip_cnn_shapes_and_forward_on_odd_non_square_images():
    """Hand-worked shapes: 7x5 -> same conv 3x3 -> 7x5 -> 2x2 max-pool (ceil) -> 4x3 -> conv 2x2 (no
    padding) -> 3x2 -> conv 3x3 stride 2 (padding 1) -> 2x1 -> conv 1x1 -> 2x1 -> fc 5."""
    layers = (("conv", 3, 3, 1), ("pool",), ("conv", 4, 2, 1), ("conv", 3, 3, 2), ("conv", 2, 1, 1), ("fc", 5))
    model = SK.SkipCNN(layers, (2, 7, 5), 3, 1, 20, "softplus", gamma=2.0, dtype=torch.float64)
    randomise_V(model)
    sizes = [3 * 7 * 5, 4 * 3 * 2, 3 * 2 * 1, 2 * 2 * 1, 5]
    assert model.n_hidden == sum(sizes) == 144
    X = torch.rand(3, 2, 7, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    hidden = model.hidden(X)
    assert [h.shape[2] for h in hidden] == sizes
    F = torch.nn.functional
    a = lambda t: torch.tensor(np.log1p(np.exp(2.0 * t.detach().numpy())) / 2.0)  # noqa: E731
    c = [model.layers[i] for i in (0, 2, 3, 4)]
    h1 = a(F.conv2d(X, c[0].weight, c[0].bias, padding=1))
    h2 = a(F.conv2d(F.max_pool2d(h1, 2, ceil_mode=True), c[1].weight, c[1].bias))
    h3 = a(F.conv2d(h2, c[2].weight, c[2].bias, stride=2, padding=1))
    h4 = a(F.conv2d(h3, c[3].weight, c[3].bias))
    fc = model.layers[5][1]
    h5 = a(h4.flatten(1) @ fc.weight.T + fc.bias)
    ref = [h1, h2, h3, h4, h5]
    assert all(torch.allclose(h[0], r.flatten(1), atol=1e-12) for h, r in zip(hidden, ref))
    pool = torch.cat([r.flatten(1) for r in ref], 1)
    out = h5 @ model.head.weight.T + model.head.bias + pool[:, model.skip_index[0]] @ model.V[0]
    assert torch.allclose(model(X)[0], out.detach(), atol=1e-12)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 2, 7, 5\), got \(2, 7, 5\)$"):
        model(X[0])


def test_skip_cnn_initialisation_spread_per_layer():
    """He truncated normal with each layer's own fan-in: conv 8 x 3 x 3 = 72, fc 64 x 4 x 4 = 1024, head 100."""
    model = SK.SkipCNN((("conv", 64, 3, 1), ("fc", 100)), (8, 4, 4), 50, 0, 1)
    trunc = math.sqrt(1 - 2 * 2.0 * math.exp(-2.0) / math.sqrt(2 * math.pi) / math.erf(2.0 / math.sqrt(2)))
    for w, fan_in in ((model.layers[0].weight, 72), (model.layers[1][1].weight, 1024), (model.head.weight, 100)):
        w = w.detach()
        std = math.sqrt(2.0 / fan_in)
        assert float(w.std()) == pytest.approx(std * trunc, rel=0.05)
        assert 1.8 * std < float(w.abs().max()) <= 2 * std
    assert torch.all(model.layers[0].bias == 0) and torch.all(model.layers[1][1].bias == 0)


def test_train_sgd_defaults_are_seed_0_nesterov_0_9_and_the_thesis_schedule():
    X, y = data()
    model = SK.SkipMLP([5, 4, 3], [0], 3, "sigmoid", dtype=torch.float64)
    randomise_V(model)
    expected = manual_sgd(model, X, y, [0.2, 0.2, 0.02, 0.002], momentum=0.9)
    SK.train_sgd(model, X, y, 4, 12, 0.2)
    for p, q in zip(model.parameters(), expected):
        assert torch.allclose(p, q, atol=1e-12)
    runs = []
    for kw in ({}, {"seed": 0}):
        m = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
        SK.train_sgd(m, X, y, 1, 5, 0.1, **kw)
        runs.append(m.weights[0].detach().clone())
    assert torch.equal(runs[0], runs[1])


@pytest.mark.parametrize("milestones, epochs, lrs", [
    ((0.1,), 3, [0.5, 0.05, 0.05]),           # round(0.3) = 0: the first drop comes after epoch 1 at the earliest
    ((0.5, 0.5), 4, [0.5, 0.5, 0.05, 0.05]),  # a repeated milestone divides once
    ((0.6,), 5, [0.5, 0.5, 0.5, 0.05, 0.05]),
])
def test_lr_milestones_by_value(milestones, epochs, lrs):
    X, y = data(n=8)
    model = SK.SkipMLP([5, 3, 3], [0], 2, dtype=torch.float64)
    randomise_V(model)
    expected = manual_sgd(model, X, y, lrs)
    SK.train_sgd(model, X, y, epochs, 8, 0.5, momentum=0.0, milestones=milestones)
    for p, q in zip(model.parameters(), expected):
        assert torch.allclose(p, q, atol=1e-12)


def test_train_sgd_more_errors_name_the_argument():
    X, y = data()
    model = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^y must hold one label per row of X \(12\), got shape \(12, 1\)$"):
        SK.train_sgd(model, X, y[:, None], 1, 4, 0.1)
    with pytest.raises(ValueError, match=r"^milestones\[i\] must be"):
        SK.train_sgd(model, X, y, 1, 4, 0.1, milestones=(1.0,))
    with pytest.raises(ValueError, match="^milestones must be a list or tuple"):
        SK.train_sgd(model, X, y, 1, 4, 0.1, milestones=0.5)
    with pytest.raises(TypeError, match=r"^X must be a floating-point tensor, got tensor of shape \(12, 5\)"):
        SK.train_sgd(model, (X * 10).long(), y, 1, 4, 0.1)                # named with the whole X, not a batch
    with pytest.raises(TypeError, match="^y must be an integer tensor"):
        SK.train_sgd(model, X, y.double(), 1, 4, 0.1)


def test_filter_normalisation_of_narrow_rows_and_higher_tensors():
    g = torch.Generator().manual_seed(0)
    params = [torch.rand(60, 1, dtype=torch.float64, generator=g) + 0.5, torch.randn(3, 4, 5, dtype=torch.float64, generator=g)]
    d = SK.filter_normalised_direction(params, torch.Generator().manual_seed(1))
    assert torch.allclose(d[0].abs(), params[0], atol=1e-14)           # one-entry rows: |d| is the entry's size
    assert torch.allclose(d[1].norm(dim=-1), params[1].norm(dim=-1), atol=1e-13)
    zero = SK.filter_normalised_direction([torch.zeros(3, 4)], torch.Generator())
    assert torch.equal(zero[0], torch.zeros(3, 4))
    with pytest.raises(ValueError, match="^params must be a sequence of at least 1"):
        SK.filter_normalised_direction([], torch.Generator())


def test_plane_losses_defaults():
    X, y = data(n=10, d=5)
    model = SK.SkipMLP([5, 4, 3], [0, 1], [3, 2], "sigmoid", dtype=torch.float64)
    randomise_V(model)
    grid, L = SK.plane_losses(model, X, y)
    assert np.allclose(grid, np.linspace(-1, 1, 21)) and L.shape == (21, 21)
    g2, L2 = SK.plane_losses(model, X, y, span=1.0, resolution=21, seed=0, k=0)
    assert np.array_equal(L, L2)
    with torch.no_grad():
        centre = float(torch.nn.functional.cross_entropy(model(X)[0], y))
    assert L[10, 10] == pytest.approx(centre, abs=1e-12)
    assert not np.array_equal(L, SK.plane_losses(model, X, y, seed=1)[1])
    with pytest.raises(ValueError, match=r"^k \(the model index\) must be"):
        SK.plane_losses(model, X, y, k=-1)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 5\)"):
        SK.plane_losses(model, X[:, :4], y)
    with pytest.raises(ValueError, match=r"^y must be one label per row of X \(10 rows\)"):
        SK.plane_losses(model, X, y[:4])


def test_paper_config_step_returns_the_loss_before_the_step():
    layers, in_shape = (("conv", 3, 3, 1), ("fc", 4)), (1, 5, 4)
    for kw, seed, batch in (({}, 0, 2), ({"batch": 3, "seed": 7}, 7, 3)):
        loss = SK.check_paper_config_step(layers, in_shape, 3, 5, **kw)
        model = SK.SkipCNN(layers, in_shape, 3, seed, 5)
        gen = torch.Generator().manual_seed(seed)
        X = torch.rand((batch, *in_shape), generator=gen)
        y = torch.randint(0, 3, (batch,), generator=gen)
        with torch.no_grad():
            assert loss == pytest.approx(float(torch.nn.functional.cross_entropy(model(X)[0], y)), rel=1e-6)
    with pytest.raises(ValueError, match="^batch must be"):
        SK.check_paper_config_step(layers, in_shape, 3, 5, batch=0)


def test_integer_inputs_and_float_labels_are_refused_by_name():
    X, y = data(n=20)
    model = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
    Xi = (X * 10).long()
    with pytest.raises(TypeError, match="^z must be a floating-point tensor"):
        SK.activation(torch.arange(3), "sigmoid")
    assert SK.activation(torch.zeros(0), "sigmoid").shape == (0,)          # an empty tensor is fine
    with pytest.raises(TypeError, match=r"^X must be a floating-point tensor, got tensor of shape \(20, 5\)"):
        SK.accuracy(model, Xi, y, chunk=4)                                 # named with the whole X, not a chunk
    with pytest.raises(TypeError, match=r"^X must be a floating-point tensor, got tensor of shape \(2, 1, 3, 3\)"):
        SK.random_shift(torch.zeros(2, 1, 3, 3, dtype=torch.int64), 1, torch.Generator())
    with pytest.raises(TypeError, match=r"^params\[i\] must be a floating-point tensor"):
        SK.filter_normalised_direction([torch.zeros(2, 2, dtype=torch.int64)], torch.Generator())
    for fn in (SK.psi_ranks, lambda m, X: SK.exact_readout(m, X, y), lambda m, X: SK.plane_losses(m, X, y)):
        with pytest.raises(TypeError, match=r"^X must be a floating-point tensor, got tensor of shape \(0, 5\)"):
            fn(model, Xi[:0])                              # the dtype is refused before the emptiness
    for fn in (SK.accuracy, SK.exact_readout, SK.plane_losses):
        with pytest.raises(TypeError, match=r"^y must be an integer tensor, got tensor of shape \(20,\)"):
            fn(model, X, y.double())
        with pytest.raises(ValueError, match=r"^y must be class indices >= 0 and < 3 \(the number of classes\)"):
            fn(model, X, y + 1)


def test_exact_readout_with_a_class_that_no_sample_has():
    X, y = data(n=6, d=4)
    y = torch.tensor([0, 1, 0, 1, 1, 0])          # class 2 of 3 never occurs: its target column is 0
    model = SK.SkipMLP([4, 10, 3], [0], 10, "sigmoid", dtype=torch.float64)
    assert SK.exact_readout(model, X, y)[0] < 1e-10
    assert torch.allclose(model(X)[0], torch.nn.functional.one_hot(y, 3).double(), atol=1e-8)


def test_random_shift_uses_only_the_given_generator():
    X = torch.rand(6, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    state = torch.random.get_rng_state()
    a = SK.random_shift(X, 2, torch.Generator().manual_seed(3))
    b = SK.random_shift(X, 2, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and torch.equal(state, torch.random.get_rng_state())


def test_filter_normalised_direction_draws_in_the_parameters_dtype():
    for dtype in (torch.float64, torch.float32):
        p = torch.rand(3, 4, dtype=dtype, generator=torch.Generator().manual_seed(0)) + 0.1
        d = SK.filter_normalised_direction([p], torch.Generator().manual_seed(5))[0]
        g = torch.randn((3, 4), generator=torch.Generator().manual_seed(5), dtype=dtype)   # the Gaussian rows
        assert d.dtype == dtype
        rtol = 1e-12 if dtype == torch.float64 else 1e-5                                   # float64 draws, not float32 ones
        assert torch.allclose(d, g / g.norm(dim=1, keepdim=True) * p.norm(dim=1, keepdim=True), rtol=rtol, atol=0)


def test_plane_losses_grid_dtype_and_no_warnings():
    import warnings
    X, y = data(n=6)
    for dtype in (torch.float64, torch.float32):
        model = SK.SkipMLP([5, 3, 3], [0], 2, dtype=dtype)
        warn_always = torch.is_warn_always_enabled()
        try:
            torch.set_warn_always(True)                    # torch's warn-once warnings too, whatever ran before
            with warnings.catch_warnings():
                warnings.simplefilter("error")             # e.g. torch.meshgrid without indexing= warns
                grid, L = SK.plane_losses(model, X.to(dtype), y, span=0.3, resolution=3)
        finally:
            torch.set_warn_always(warn_always)
        assert grid.dtype == (np.float64 if dtype == torch.float64 else np.float32)
        assert grid[0] == np.asarray(-0.3, dtype=grid.dtype)


def test_the_augmentation_gets_the_seeded_generator():
    X, y = data(n=6)
    gens = []

    def augment(Xb, gen):
        gens.append(gen)
        return SK.random_shift(Xb.reshape(-1, 1, 1, 5), 0, gen).reshape(-1, 5)

    SK.train_sgd(SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64), X, y, 1, 3, 0.1, augment=augment)
    assert len(gens) == 2 and all(isinstance(g, torch.Generator) for g in gens)


def test_skip_cnn_is_seeded_by_its_own_generator_in_its_dtype():
    layers = (("conv", 4, 3, 1), ("fc", 6))
    with torch.random.fork_rng():                   # whatever state the global generator is in
        torch.manual_seed(1)
        a = SK.SkipCNN(layers, (2, 5, 5), 3, 7, 4, dtype=torch.float64)
        torch.manual_seed(2)
        b = SK.SkipCNN(layers, (2, 5, 5), 3, 7, 4, dtype=torch.float64)
    c = SK.SkipCNN(layers, (2, 5, 5), 3, 8, 4, dtype=torch.float64)
    for w in (a.layers[0].weight, a.layers[1][1].weight, a.head.weight):
        assert w.dtype == torch.float64 and bool((w.float().double() != w).any())   # drawn in float64, not float32
    for wa, wb, wc in zip(a.parameters(), b.parameters(), c.parameters()):
        assert torch.equal(wa, wb)
    assert not torch.equal(a.layers[0].weight, c.layers[0].weight) and not torch.equal(a.head.weight, c.head.weight)
    assert not torch.equal(a.layers[1][1].weight, c.layers[1][1].weight)


def test_sigmoid_cnn_forward_and_empty_batches():
    model = SK.SkipCNN((("conv", 3, 3, 1), ("fc", 4)), (1, 4, 3), 2, 0, 5, dtype=torch.float64)
    X = torch.rand(2, 1, 4, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    c, fc = model.layers[0], model.layers[1][1]
    h1 = 1 / (1 + torch.exp(-torch.nn.functional.conv2d(X, c.weight, c.bias, padding=1)))
    h2 = 1 / (1 + torch.exp(-(h1.flatten(1) @ fc.weight.T + fc.bias)))
    assert torch.allclose(model.hidden(X)[0][0], h1.flatten(1), atol=1e-14)
    assert torch.allclose(model.hidden(X)[1][0], h2, atol=1e-14)
    assert model(torch.zeros(0, 1, 4, 3, dtype=torch.float64)).shape == (1, 0, 2)
    assert SK.SkipMLP([5, 4, 3], [0, 1], 2)(torch.zeros(0, 5)).shape == (2, 0, 3)
    with pytest.raises(TypeError, match=r"^X must be a floating-point tensor"):
        model(torch.zeros(2, 1, 4, 3, dtype=torch.int64))


def test_skip_cnn_more_errors_name_the_argument():
    with pytest.raises(ValueError, match="^layers must be a sequence of at least 1"):
        SK.SkipCNN((), (1, 4, 4), 2, 0, 0)
    with pytest.raises(ValueError, match="^in_shape must be a sequence of at least 3"):
        SK.SkipCNN((("fc", 3),), (1, 4), 2, 0, 1)
    with pytest.raises(TypeError, match="^in_shape must be a list or tuple"):
        SK.SkipCNN((("fc", 3),), 4, 2, 0, 1)
    with pytest.raises(ValueError, match="^gamma must be"):
        SK.SkipCNN((("fc", 3),), (1, 4, 4), 2, 0, 1, "softplus", gamma=0.0)


def test_skip_mask_is_a_0_1_matrix_in_the_models_dtype():
    model = SK.SkipMLP([5, 4, 3], [0, 1], [2, 4], dtype=torch.float64)
    expected = torch.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)[..., None]
    assert model.skip_mask.dtype == torch.float64 and torch.equal(model.skip_mask, expected)


def test_psi_ranks_refuses_an_integer_X_for_its_dtype_before_its_emptiness():
    model = SK.SkipMLP([5, 4, 3], [0], 3, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"^X must be a floating-point tensor, got tensor of shape \(0, 5\)"):
        SK.psi_ranks(model, torch.zeros(0, 5, dtype=torch.int64))


# ------------------------------------------------------------------ issue 34: the interpolation peak, Thm 4.3.4 (2), (4)

def test_readout_sweep_against_direct_solves():
    X, y = data(n=12, d=5)
    Xt, yt = data(n=9, d=5, seed=1)
    model = SK.SkipMLP([5, 20, 20, 3], [0, 1], 36, "sigmoid", dtype=torch.float64)
    randomise_V(model)
    V_before = model.V.detach().clone()
    out = SK.readout_sweep(model, X, y, Xt, yt, [6, 12, 30], k=1)
    assert torch.equal(model.V, V_before)  # the model's own read-out is not touched
    with torch.no_grad():
        psi, psi_t = model.psi(X)[1].numpy(), model.psi(Xt)[1].numpy()
        base, base_t = model(X)[1].numpy() - psi @ model.V[1].numpy(), model(Xt)[1].numpy() - psi_t @ model.V[1].numpy()
    Y = np.eye(3)[y.numpy()]
    for i, M in enumerate([6, 12, 30]):
        sol = np.linalg.pinv(psi[:, :M]) @ (Y - base)  # the minimum-norm least-squares read-out
        assert out["v_norm"][i] == pytest.approx(np.linalg.norm(sol), rel=1e-6)
        assert out["train_acc"][i] == np.mean((base + psi[:, :M] @ sol).argmax(1) == y.numpy())
        assert out["test_acc"][i] == np.mean((base_t + psi_t[:, :M] @ sol).argmax(1) == yt.numpy())
        assert out["sigma_min"][i] == pytest.approx(np.linalg.svd(psi[:, :M], compute_uv=False)[min(12, M) - 1], rel=1e-10)
    assert list(out["M"]) == [6, 12, 30] and out["train_acc"][1] == 1.0 == out["train_acc"][2]
    with pytest.raises(ValueError, match="sizes"):
        SK.readout_sweep(model, X, y, Xt, yt, [37], k=1)
    with pytest.raises(ValueError, match="y_test"):
        SK.readout_sweep(model, X, y, Xt, yt[:3], [6])


def test_readout_descent_is_a_convex_descent_to_the_target():
    X, y = data(n=10, d=5)
    model = SK.SkipMLP([5, 16, 16, 3], [0], 24, "softplus", dtype=torch.float64)
    randomise_V(model)
    out = SK.readout_descent(model, X, y, target=1e-2, n_points=11, seed=3)
    G0 = model(X)[0].detach().numpy()
    logits = G0 - G0.max(1, keepdims=True)
    start = np.mean(np.log(np.exp(logits).sum(1)) - logits[np.arange(10), y.numpy()])
    assert out["losses"][0] == pytest.approx(start, rel=1e-12)
    assert np.diff(out["losses"]).max() <= 1e-12 and out["losses"][-1] == pytest.approx(1e-2, rel=1e-8)
    assert out["rank"] == 10 and out["s"] == pytest.approx(math.log(2 / math.expm1(1e-2)))
    # the curvature: second difference of the loss along the same random direction of V
    D = np.random.default_rng(3).standard_normal((24, 3))
    with torch.no_grad():
        psi = model.psi(X)[0].numpy()

    def loss(t):
        G = G0 + t * psi @ D
        G = G - G.max(1, keepdims=True)
        return np.mean(np.log(np.exp(G).sum(1)) - G[np.arange(10), y.numpy()])
    h = 1e-4
    assert out["curvature"] == pytest.approx((loss(h) - 2 * loss(0) + loss(-h)) / h ** 2, rel=1e-4)
    assert out["curvature"] > 0
    few = SK.SkipMLP([5, 16, 16, 3], [0], 6, "softplus", dtype=torch.float64)
    with pytest.raises(ValueError, match="rank Psi = 6 < N = 10"):
        SK.readout_descent(few, X, y)
    with pytest.raises(ValueError, match="target"):
        SK.readout_descent(model, X, y, target=0)


def np_margins(model, X, y, k):
    """Each sample's margin (its label's logit minus the largest other one) from the numpy reference pass."""
    G, _ = reference_forward(model, X, k)
    own = G[np.arange(len(y)), y.numpy()]
    G[np.arange(len(y)), y.numpy()] = -np.inf
    return own - G.max(1)


def test_fit_readout_fits_every_sample_with_the_margin_and_moves_only_the_readout():
    X, y = data(n=30, d=5)
    model = SK.SkipMLP([5, 20, 20, 3], [0, 1], [30, 36], "sigmoid")  # float32, M >= N: Psi has rank N
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    Xf = X.float()
    start = [np_margins(model, Xf, y, k).min() for k in range(2)]
    out = SK.fit_readout(model, Xf, y, margin=0.5)
    assert min(start) < 0 and out["iterations"] > 0 and out["iterations"] % 20 == 0
    for k in range(2):
        m = np_margins(model, Xf, y, k)
        assert m.min() >= 0.5 - 1e-2 and out["margin"][k] == pytest.approx(m.min(), abs=1e-2)  # float32 logits up to ~500
    assert np.all(SK.accuracy(model, Xf, y) == 1.0)
    # U (every hidden layer) and the skip index stay; V, W_L and b_L move; V's masked rows stay 0
    now = dict(model.named_parameters())
    assert sorted(n for n in now if not torch.equal(before[n], now[n])) == ["V", "biases.2", "weights.2"]
    assert torch.all(model.V[0, 30:] == 0) and model.V[0, :30].abs().sum() > 0
    # fitted already: no iteration, nothing changes (float32 -> float64 -> float32 is exact)
    V1 = model.V.detach().clone()
    again = SK.fit_readout(model, Xf, y, margin=0.5)
    assert again["iterations"] == 0 and torch.equal(V1, model.V)


def test_fit_readout_stops_at_max_iter_and_refuses_bad_input():
    X, y = data(n=30, d=5)
    model = SK.SkipMLP([5, 20, 20, 3], [0], 36, "sigmoid", dtype=torch.float64)
    out = SK.fit_readout(model, X, y, max_iter=1, chunk=1)
    assert out["iterations"] == 1 and out["margin"][0] < 1.0
    assert out["margin"][0] == pytest.approx(np_margins(model, X, y, 0).min(), rel=1e-10)
    d = SK.fit_readout(SK.SkipMLP([5, 20, 20, 3], [0], 36, "sigmoid", dtype=torch.float64), X, y)
    assert d["margin"][0] >= 1.0  # the default margin
    cnn = SK.SkipCNN((("conv", 2, 3, 1), ("fc", 3)), (1, 4, 4), 3, 0, 4)
    with pytest.raises(TypeError, match="^model must be a SkipMLP"):
        SK.fit_readout(cnn, torch.rand(2, 1, 4, 4), [0, 1])
    with pytest.raises(ValueError, match="^margin must be"):
        SK.fit_readout(model, X, y, margin=0.0)
    with pytest.raises(ValueError, match="^max_iter must be"):
        SK.fit_readout(model, X, y, max_iter=0)
    with pytest.raises(ValueError, match="^chunk must be"):
        SK.fit_readout(model, X, y, chunk=0)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 5\)"):
        SK.fit_readout(model, X[:, :4], y)
    with pytest.raises(ValueError, match="^y"):
        SK.fit_readout(model, X, y[:4])


def test_readout_helpers_defaults():
    X, y = data(n=10, d=5)
    model = SK.SkipMLP([5, 16, 16, 3], [0, 1], 24, "softplus", dtype=torch.float64)
    a = SK.readout_sweep(model, X, y, X, y, [5, 10])
    b = SK.readout_sweep(model, X, y, X, y, [5, 10], k=0)
    c = SK.readout_sweep(model, X, y, X, y, [5, 10], k=1)
    assert np.array_equal(a["v_norm"], b["v_norm"]) and not np.array_equal(a["v_norm"], c["v_norm"])
    d = SK.readout_descent(model, X, y)
    e = SK.readout_descent(model, X, y, k=0, target=1e-3, n_points=21, seed=0)
    assert len(d["lambdas"]) == 21 and np.array_equal(d["losses"], e["losses"]) and d["curvature"] == e["curvature"]
    assert d["losses"][-1] == pytest.approx(1e-3, rel=1e-8)
    f = SK.readout_descent(model, X, y, k=1)
    assert f["losses"][0] != d["losses"][0] or f["curvature"] != d["curvature"]
    G = np.array([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    assert SK._ce_np(G, np.array([0, 2])) == pytest.approx(np.mean([math.log(1 + math.exp(-2) + math.exp(-3)), math.log(3)]))


def test_readout_helpers_check_the_input_shape_before_counting_rows():
    X, y = data(n=10, d=5)
    model = SK.SkipMLP([5, 16, 16, 3], [0], 24, "softplus", dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 5\), got \(50,\)"):
        SK.readout_sweep(model, X.reshape(-1), y, X, y, [5])  # was a message about y's rows
    with pytest.raises(ValueError, match=r"^X_test must have shape \(n, 5\), got \(10, 4\)"):
        SK.readout_sweep(model, X, y, X[:, :4], y, [5])
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 5\), got \(50,\)"):
        SK.readout_descent(model, X.reshape(-1), y)
    cnn = SK.SkipCNN((("conv", 2, 3, 1), ("fc", 3)), (1, 4, 4), 3, 0, 4)
    with pytest.raises(ValueError, match=r"^X_test must have shape \(n, 1, 4, 4\), got \(2, 16\)"):
        SK.readout_sweep(cnn, torch.rand(2, 1, 4, 4), [0, 1], torch.rand(2, 16), [0, 1], [2])


def test_labels_of_shape_n_by_1_are_refused():
    """y (n, 1) would broadcast against the (n_models, n, K) logits into a wrong residual / accuracy."""
    X, y = data(n=8, d=4)
    model = SK.SkipMLP([4, 12, 3], [0], 12, "sigmoid", dtype=torch.float64)
    for fn in (SK.exact_readout, SK.accuracy):
        with pytest.raises(ValueError, match=r"^y must be an array with 1 dimensions"):
            fn(model, X, y[:, None])


# ------------------------------------------------------------------ the paper path: Tables 4.2-4.5

def _densenet_params_by_hand(c_in, n_out, growth, blocks):
    """DenseNet parameters counted layer by layer from the architecture's description (Huang et al. 2017)."""
    ch, n = 2 * growth, c_in * 2 * growth * 9                       # stem: 3x3 conv, no bias
    for b, layers in enumerate(blocks):
        for _ in range(layers):
            n += 2 * ch + ch * 4 * growth + 2 * 4 * growth + 4 * growth * growth * 9  # BN, 1x1, BN, 3x3
            ch += growth
        if b < len(blocks) - 1:
            n += 2 * ch + ch * (ch // 2)                             # BN, 1x1 conv halving the channels
            ch //= 2
    return n + 2 * ch + ch * n_out + n_out                         # final BN, linear head


def test_densenet121_parameter_count_and_first_block_pool():
    model = SK.SkipDenseNet((3, 32, 32), 10, 0, 5)
    n = sum(p.numel() for name, p in model.named_parameters() if name != "V")
    # 6,956,298: the CIFAR-10 DenseNet-121 (growth 32, blocks 6-12-24-16, 3x3 stem) as commonly reported
    assert n == _densenet_params_by_hand(3, 10, 32, (6, 12, 24, 16)) == 6_956_298
    # first dense block at 32 x 32: layer i's two activations have 64 + 32 i and 128 channels
    assert model.n_hidden == sum(64 + 32 * i + 128 for i in range(6)) * 1024 == 1_671_168
    small = SK.SkipDenseNet((2, 8, 8), 3, 0, 4, growth=4, blocks=(2, 3, 1))
    assert sum(p.numel() for name, p in small.named_parameters() if name != "V") == _densenet_params_by_hand(2, 3, 4, (2, 3, 1))
    hidden, out = small._hidden_and_output(torch.zeros(5, 2, 8, 8))
    assert [h.shape[2] for h in hidden] == [8 * 64, 16 * 64, 12 * 64, 16 * 64] and out.shape == (1, 5, 3)


def test_densenet_forward_matches_functional_ops_in_eval_mode():
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)
    X = torch.rand(3, 2, 8, 8, generator=g, dtype=torch.float64)
    model = SK.SkipDenseNet((2, 8, 8), 3, 1, 9, "softplus", gamma=2.0, growth=2, blocks=(2, 1), dtype=torch.float64)
    randomise_V(model)
    with torch.no_grad():  # batch norms with statistics and affine maps of their own
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                for t in (m.running_mean, m.weight, m.bias):
                    t.copy_(torch.randn(t.shape, generator=g, dtype=t.dtype))
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g, dtype=torch.float64) + 0.5)
    model.eval()
    act = lambda z: torch.log1p(torch.exp(2.0 * z)) / 2.0  # noqa: E731
    bn = lambda z, m: (z - m.running_mean[:, None, None]) / torch.sqrt(m.running_var[:, None, None] + m.eps) \
        * m.weight[:, None, None] + m.bias[:, None, None]  # noqa: E731
    with torch.no_grad():
        h, pool = F.conv2d(X, model.stem.weight, padding=1), []
        for b, layers in enumerate(model.blocks):
            for bn1, c1, bn2, c2 in layers:
                a1 = act(bn(h, bn1))
                a2 = act(bn(F.conv2d(a1, c1.weight), bn2))
                pool += [a1.flatten(1), a2.flatten(1)] if b == 0 else []
                h = torch.cat([h, F.conv2d(a2, c2.weight, padding=1)], 1)
            if b == 0:
                bt, ct = model.transitions[0]
                h = F.avg_pool2d(F.conv2d(act(bn(h, bt)), ct.weight), 2)
        h = act(bn(h, model.final_bn)).mean((2, 3))
        pool = torch.cat(pool, 1)
        psi = pool[:, model.skip_index[0]]
        out = h @ model.head.weight.T + model.head.bias + psi @ model.V[0]
    assert model.n_hidden == pool.shape[1] == (4 + 8 + 6 + 8) * 64
    assert torch.allclose(model.psi(X)[0], psi, atol=1e-12) and torch.allclose(model(X)[0], out, atol=1e-12)
    std = math.sqrt(2.0 / (2 * 9))
    assert 1.9 * std < model.stem.weight.abs().max() <= 2 * std and torch.all(model.head.bias == 0)
    assert model.head.weight.abs().max() <= 2 * math.sqrt(2.0 / model.head.in_features)


def test_densenet_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"^in_shape must be \(channels, height, width\), got \(1, 8, 8, 8\)$"):
        SK.SkipDenseNet((1, 8, 8, 8), 2, 0, 1, growth=2, blocks=(1,))
    with pytest.raises(ValueError, match="^growth must be"):
        SK.SkipDenseNet((1, 8, 8), 2, 0, 1, growth=0, blocks=(1,))
    with pytest.raises(ValueError, match=r"^blocks\[i\] must be"):
        SK.SkipDenseNet((1, 8, 8), 2, 0, 1, growth=2, blocks=(1, 0))
    with pytest.raises(ValueError, match=r"^n_skip must give one count per model \(1\), each at most the 768 hidden"):
        SK.SkipDenseNet((1, 8, 8), 2, 0, 769, growth=2, blocks=(1,))  # (4 + 8) x 64
    with pytest.raises(ValueError, match="^activation must be one of"):
        SK.SkipDenseNet((1, 8, 8), 2, 0, 1, "tanh", growth=2, blocks=(1,))
    # three transitions halve the image three times: 8 x 8 is the least, 4 x 4 failed only in the forward
    with pytest.raises(ValueError, match=r"^in_shape must be at least 2\*\*\(len\(blocks\) - 1\) = 8 pixels high and "
                                         r"wide \(each of the 3 transitions halves them\), got \(3, 8, 4\)$"):
        SK.SkipDenseNet((3, 8, 4), 10, 0, 1, growth=2, blocks=(1, 1, 1, 1))
    m = SK.SkipDenseNet((3, 8, 8), 10, 0, 1, growth=2, blocks=(1, 1, 1, 1)).eval()
    assert m(torch.zeros(2, 3, 8, 8)).shape == (1, 2, 10)  # the least size runs
    SK.SkipDenseNet((1, 1, 1), 2, 0, 1, growth=2, blocks=(1,))  # one block: no transition, any size


def test_paper_model_builds_each_architecture():
    assert SK.paper_model("cnn13", (1, 28, 28), 10, 0, 3).kinds == ["conv"] * 13
    for arch in ("vgg11", "vgg13", "vgg16", "vgg11-mp2conv", "vgg13-mp2conv", "vgg16-mp2conv"):
        m = SK.paper_model(arch, (3, 32, 32), 10, 0, 3, "softplus")
        layers = SK.vgg_layers(int(arch[3:5]), mp2conv="mp2conv" in arch)
        assert m.kinds == [s[0] for s in layers] and m.act == "softplus" and m.n_skip == [3]
        convs = [(c.out_channels, c.kernel_size[0], c.stride[0]) for c in m.layers if isinstance(c, torch.nn.Conv2d)]
        assert convs == [s[1:] for s in layers if s[0] == "conv"]
    assert SK.paper_model("vgg13-mp2conv", (3, 32, 32), 10, 0, 0).layers[2].stride == (2, 2)
    d = SK.paper_model("densenet121", (3, 32, 32), 10, 0, 0)
    assert isinstance(d, SK.SkipDenseNet) and [len(b) for b in d.blocks] == [6, 12, 24, 16] and d.n_skip == [0]
    with pytest.raises(ValueError, match="^arch must be one of"):
        SK.paper_model("resnet18", (3, 32, 32), 10, 0, 0)


def test_flip_crop_is_a_padded_crop_mirrored_with_probability_p():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(300, 1, 10, 12, generator=g, dtype=torch.float64) + 1.0  # wide enough that no mirrored crop of a
    assert torch.equal(SK.flip_crop(X, g, pad=0, p_flip=1.0), X.flip(3))      # reflected image is an unmirrored one
    assert torch.equal(SK.flip_crop(X, g, pad=0, p_flip=0.0), X)
    # p_flip = 0: exactly random_shift with the same generator state
    state = g.get_state()
    a = SK.flip_crop(X, g, pad=2, p_flip=0.0)
    g.set_state(state)
    assert torch.equal(a, SK.random_shift(X, 2, g, fill="reflect"))
    out = SK.flip_crop(X, g)  # the thesis' C-10+: pad 4 (reflections, as Zagoruyko & Komodakis), flip with p = 0.5
    P = np.pad(X.numpy(), ((0, 0), (0, 0), (4, 4), (4, 4)), mode="reflect")  # the edge pixel not repeated
    flips = 0
    for i in range(len(X)):
        crops = [(P[i, :, r:r + 10, c:c + 12], f) for r in range(9) for c in range(9) for f in (False, True)]
        hits = [f for crop, f in crops if np.array_equal(out[i].numpy(), crop[..., ::-1] if f else crop)]
        assert hits, i  # each output is one crop of its padded image, mirrored or not
        flips += hits[0] and not (False in hits)
    assert 120 <= flips <= 180  # about half mirrored (binomial 300, 1/2: sd 8.7)
    with pytest.raises(ValueError, match="^p_flip must be"):
        SK.flip_crop(X, g, p_flip=1.5)
    with pytest.raises(ValueError, match="^pad must be"):
        SK.flip_crop(X, g, pad=-1)
    with pytest.raises(ValueError, match=r"^pad must be smaller than the images' height and width \(5, 6\) "
                                         r"\(reflection padding\), got 5$"):
        SK.flip_crop(X[:, :, :5, :6], g, pad=5)
    assert SK.flip_crop(X[:, :, :5, :6], g, pad=4).shape == (300, 1, 5, 6)  # the largest pad
    for bad in (None, 3):  # None would draw from torch's global generator: not reproducible
        with pytest.raises(TypeError, match="^gen must be a torch.Generator"):
            SK.flip_crop(X, bad)


def test_random_shift_reflect_fills_with_reflections():
    X = torch.arange(9.0).reshape(1, 1, 3, 3)
    g = torch.Generator().manual_seed(0)
    outs = {tuple(SK.random_shift(X, 1, g, fill="reflect").flatten().tolist()) for _ in range(200)}
    P = np.array([[4, 3, 4, 5, 4], [1, 0, 1, 2, 1], [4, 3, 4, 5, 4], [7, 6, 7, 8, 7], [4, 3, 4, 5, 4]], dtype=float)
    assert outs == {tuple(P[r:r + 3, c:c + 3].flatten()) for r in range(3) for c in range(3)}  # by hand
    zeros = {tuple(SK.random_shift(X, 1, g).flatten().tolist()) for _ in range(200)}
    assert (0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 3.0, 4.0) in zeros  # the default still pads with zeros
    with pytest.raises(ValueError, match="^fill must be one of"):
        SK.random_shift(X, 1, g, fill="edge")
    with pytest.raises(ValueError, match=r"^max_shift must be smaller than the images' height and width \(3, 3\) "
                                         r"for fill='reflect', got 3$"):
        SK.random_shift(X, 3, g, fill="reflect")
    with pytest.raises(TypeError, match="^gen must be a torch.Generator"):
        SK.random_shift(X, 1, None)


def test_run_table_row_trains_each_seed_as_its_variant(monkeypatch):
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(12, 1, 28, 28, generator=g), torch.arange(12) % 10
    Xt, yt = torch.rand(7, 1, 28, 28, generator=g), torch.arange(7) % 10
    seen, train = [], SK.train_sgd

    def spy(model, *args, **kw):  # what run_table_row hands the trainer
        seen.append(dict(n_skip=model.n_skip, training=model.training, frozen=[n for n, p in model.named_parameters()
                                                                                if not p.requires_grad], **kw))
        return train(model, *args, **kw)

    monkeypatch.setattr(SK, "train_sgd", spy)
    orig = SK.run_table_row("cnn13", "softplus", "orig", X, y, Xt, yt, [3, 4], 2, 0.01, 5)
    assert orig["seeds"].tolist() == [3] and seen[0]["n_skip"] == [0] and seen[0]["train"] == "all" and seen[0]["augment"] is None
    sgd = SK.run_table_row("cnn13", "sigmoid", "skip-SGD", X, y, Xt, yt, [3, 4], 2, 0.01, 5, augment=True, momentum=0.5)
    assert [s["n_skip"] for s in seen[1:]] == [[12], [12]] and seen[1]["augment"] is SK.flip_crop and seen[1]["momentum"] == 0.5
    assert seen[1]["training"] and seen[1]["frozen"] == [] and [s["seed"] for s in seen[1:]] == [3, 4]
    rand = SK.run_table_row("cnn13", "sigmoid", "skip-rand", X, y, Xt, yt, [3], 2, 0.01, 5)
    assert seen[3]["train"] == "readout" and not seen[3]["training"]
    assert set(seen[3]["frozen"]) == {f"layers.{i}.{w}" for i in range(13) for w in ("weight", "bias")}
    # the accuracies are those of the same model trained and evaluated by hand
    for r, variant, act, kw in ((sgd, "skip-SGD", "sigmoid", dict(augment=SK.flip_crop, momentum=0.5)),
                                (rand, "skip-rand", "sigmoid", dict(train="readout")), (orig, "orig", "softplus", {})):
        for k, s in enumerate(r["seeds"]):
            m = SK.paper_model("cnn13", (1, 28, 28), 10, int(s), 0 if variant == "orig" else 12, act)
            train(m, X, y, 2, 5, 0.01, seed=int(s), **kw)
            assert r["train"][k] == SK.accuracy(m, X, y)[0] and r["test"][k] == SK.accuracy(m, Xt, yt)[0]
    assert orig["diverged"].tolist() == [False] and sgd["diverged"].tolist() == [False, False]
    # a seed that diverges is recorded as NaN and the next one still runs
    monkeypatch.setattr(SK, "train_sgd", lambda model, *a, **kw: (_ for _ in ()).throw(
        V.TrainingDivergedError("nan")) if kw["seed"] == 3 else train(model, *a, **kw))
    mixed = SK.run_table_row("cnn13", "softplus", "skip-SGD", X, y, Xt, yt, [3, 4], 1, 0.01, 5)
    assert mixed["diverged"].tolist() == [True, False] and np.isnan(mixed["test"][0]) and np.isfinite(mixed["test"][1])
    with pytest.raises(ValueError, match="^variant must be one of"):
        SK.run_table_row("cnn13", "sigmoid", "skip", X, y, Xt, yt, [0], 1, 0.01, 5)
    with pytest.raises(ValueError, match="^seeds must"):
        SK.run_table_row("cnn13", "sigmoid", "orig", X, y, Xt, yt, [], 1, 0.01, 5)


def test_run_table_row_checks_every_argument_before_training(monkeypatch):
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(4, 3, 32, 32, generator=g), torch.arange(4)
    ok = dict(arch="vgg11", activation="sigmoid", variant="skip-SGD", X=X, y=y, X_test=X, y_test=y, seeds=[0],
              epochs=1, lr=0.01, batch_size=2)

    def no_training(*a, **kw):
        raise AssertionError("trained before the bad argument was found")

    monkeypatch.setattr(SK, "train_sgd", no_training)
    for bad, err, msg in (
            (dict(X_test=torch.rand(4, 3, 28, 28)), ValueError,
             r"^X_test must hold images of X's shape \(3, 32, 32\), got \(3, 28, 28\)$"),
            (dict(X_test=torch.rand(4, 3, 32)), ValueError, "^X_test must"),
            (dict(y_test=y[:2]), ValueError, r"^y_test must be one label per row of X_test \(4 rows\)"),
            (dict(y_test=y + 8), ValueError, r"^y_test must be class indices >= 0 and < 10"),
            (dict(y=y[:3]), ValueError, r"^y must be one label per row of X \(4 rows\)"),
            (dict(y=-y), ValueError, "^y must be class indices"),
            (dict(y_test=y.reshape(2, 2)), ValueError, "^y_test must"),
            (dict(chunk=0), ValueError, "^chunk must be"),
            (dict(augment="yes"), TypeError, "^augment must be a bool"),
            (dict(augment=1), TypeError, "^augment must be a bool"),
            (dict(epochs=0), ValueError, "^epochs must be"),
            (dict(batch_size=0), ValueError, "^batch_size must be"),
            (dict(lr=0.0), ValueError, r"^lr \(the learning rate\) must be"),
            (dict(momentum=1.0), ValueError, "^momentum must be"),
            (dict(arch="resnet"), ValueError, "^arch must be one of"),
            (dict(activation="relu"), ValueError, "^activation must be one of"),
            (dict(save_dir=3), TypeError, "^save_dir must be a folder")):
        with pytest.raises(err, match=msg):
            SK.run_table_row(**{**ok, **bad})


def test_run_table_row_saves_each_row_and_a_rerun_loads_it(monkeypatch, tmp_path):
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(6, 1, 28, 28, generator=g), torch.arange(6) % 10
    Xt, yt = torch.rand(5, 1, 28, 28, generator=g), torch.arange(5) % 10
    args = ("cnn13", "softplus", "skip-SGD", X, y, Xt, yt, [3, 4], 1, 0.01, 3)
    first = SK.run_table_row(*args, augment=True, save_dir=tmp_path)
    path = tmp_path / "cnn13_skip-SGD_softplus_c10plus.json"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # the row, nothing half-written beside it
    rec = json.loads(path.read_text())
    assert rec["settings"]["seeds"] == [3, 4] and rec["settings"]["n_train"] == 6 and rec["settings"]["augment"] is True
    assert rec["provenance"]["seeds"] == [3, 4] and "git_commit" in rec["provenance"]
    assert first["test"].tolist() == SK.run_table_row(*args, augment=True)["test"].tolist()  # saving changes nothing

    monkeypatch.setattr(SK, "train_sgd", lambda *a, **kw: (_ for _ in ()).throw(AssertionError("trained again")))
    again = SK.run_table_row(*args, augment=True, save_dir=str(tmp_path))  # loaded, not trained
    assert set(again) == set(first)
    for k in first:
        assert again[k].dtype == first[k].dtype and again[k].tolist() == first[k].tolist(), k
    with pytest.raises(AssertionError, match="trained again"):  # another row (no augmentation): trained
        SK.run_table_row(*args, save_dir=tmp_path)
    with pytest.raises(ValueError, match=r"^save_dir holds cnn13_skip-SGD_softplus_c10plus.json, a row saved with "
                                         r"other settings .*delete it to run the row again$"):
        SK.run_table_row(*args[:8], 2, *args[9:], augment=True, save_dir=tmp_path)  # 2 epochs, not 1
    # a diverged seed is saved as NaN (JSON null) and loaded as NaN
    rec["row"]["test"], rec["row"]["diverged"] = [None, 0.4], [True, False]
    path.write_text(json.dumps(rec))
    back = SK.run_table_row(*args, augment=True, save_dir=tmp_path)
    assert np.isnan(back["test"][0]) and back["test"][1] == 0.4 and back["diverged"].tolist() == [True, False]


def test_paper_rows_dir_only_keeps_rows_of_a_real_paper_run(monkeypatch):
    from lib.results import RESULTS_DIR

    chapter = "optimization_landscape_skip_connections"
    monkeypatch.delenv("REPRO_PAPER_SMOKE", raising=False)
    for scale in ("quick", "full"):
        monkeypatch.setenv("REPRO_SCALE", scale)
        assert SK.paper_rows_dir(chapter) is None
    monkeypatch.setenv("REPRO_SCALE", "paper")
    assert SK.paper_rows_dir(chapter) == RESULTS_DIR / chapter / "paper_rows"
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")
    smoke = SK.paper_rows_dir(chapter)
    assert smoke.is_dir() and not list(smoke.iterdir()) and RESULTS_DIR not in smoke.parents
    with pytest.raises(ValueError, match="^chapter must be one of"):
        SK.paper_rows_dir("no_such_chapter")


def test_run_table_row_freezes_densenet_batch_norm_for_rand():
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(2, 3, 32, 32, generator=g), torch.tensor([0, 1])
    seen = []
    orig_train = SK.train_sgd
    try:
        SK.train_sgd = lambda model, *a, **kw: (seen.append(model), orig_train(model, *a, **kw))[1]
        SK.run_table_row("densenet121", "sigmoid", "skip-rand", X, y, X, y, [0], 1, 0.1, 2)
    finally:
        SK.train_sgd = orig_train
    bn = seen[0].final_bn
    assert torch.all(bn.running_mean == 0) and torch.all(bn.running_var == 1) and int(bn.num_batches_tracked) == 0


def test_thesis_tables_are_consistent_and_runs_are_the_cells_it_ran():
    T = SK.THESIS_TABLES
    for line, vals in T["4.4"]["lines"].items():  # Table 4.4's C-10 columns repeat Table 4.3's test columns
        assert (vals[0], vals[2]) == (T["4.3"]["lines"][line][0], T["4.3"]["lines"][line][2])
    for (arch, variant), vals in T["4.5"]["lines"].items():  # mp2conv lines of the VGGs, the same variants
        assert (arch.replace("-mp2conv", ""), variant) in T["4.3"]["lines"] and len(vals) == 4
    runs = {t: SK.table_runs(t, SK.PAPER_ARCHS) for t in T}
    assert [len(runs[t]) for t in T] == [6, 24, 40, 30]  # 3 lines x 2; 12 x 2; 12 x 2 + 8 x 2 C-10+; 9 x 2 + 6 x 2
    assert not [r for t in T for r in runs[t] if r[1] == "skip-rand" and r[3]]  # the thesis ran no rand on C-10+
    assert set(runs["4.3"]) < set(runs["4.4"]) and len(set(runs["4.4"]) - set(runs["4.3"])) == 16
    assert SK.table_runs("4.5", ["vgg11"]) == [] and len(SK.table_runs("4.3", ["vgg11"])) == 6
    assert SK.table_runs("4.4", ["vgg11"], ["softplus"]) == [
        ("vgg11", "orig", "softplus", False), ("vgg11", "orig", "softplus", True), ("vgg11", "skip-rand", "softplus", False),
        ("vgg11", "skip-SGD", "softplus", False), ("vgg11", "skip-SGD", "softplus", True)]
    with pytest.raises(ValueError, match=r"^activations\[i\] must be one of"):
        SK.table_runs("4.2", ["cnn13"], ["relu"])
    with pytest.raises(ValueError, match="^table must be one of"):
        SK.table_runs("4.6", SK.PAPER_ARCHS)
    with pytest.raises(ValueError, match=r"^archs\[i\] must be one of"):
        SK.table_runs("4.2", ["cnn12"])


def test_table_markdown_sets_ours_beside_the_thesis():
    res = {("cnn13", "skip-SGD", "sigmoid", False): {"test": np.array([0.5, 0.7]), "train": np.array([1.0, 1.0])},
           ("cnn13", "orig", "softplus", False): {"test": np.array([0.99]), "train": np.array([1.0])}}
    header, rows = SK.table_markdown("4.2", res, ["cnn13"])
    assert header == ["model", "sigmoid test % (ours / thesis)", "softplus test % (ours / thesis)"]
    assert rows == [["cnn13 orig", "not run / 11.35", "99.00 / 99.20"],
                    ["cnn13 skip-rand", "not run / —", "not run / —"],
                    ["cnn13 skip-SGD", "60.00 ± 14.14 / 98.40 ± 0.07", "not run / 99.14 ± 0.04"]]  # sample sd
    res = {("vgg11", "skip-rand", "softplus", False): {"test": np.array([0.25]), "train": np.array([0.75])}}
    header, rows = SK.table_markdown("4.3", res, ["vgg11"])
    assert header[1:3] == ["sigmoid test % (ours / thesis)", "sigmoid train % (ours / thesis)"]
    assert rows[1] == ["vgg11 skip-rand", "not run / 62.81 ± 0.39", "not run / 100", "25.00 / 64.49 ± 0.38", "75.00 / 100"]
    assert SK.table_markdown("4.4", {}, ["vgg11"])[1][1][2] == "— / —"  # rand on C-10+: not in the thesis
    assert SK.table_markdown("4.4", {}, ["vgg11"])[0][2] == "sigmoid C-10+ test % (ours / thesis)"
    res = {("cnn13", "skip-SGD", "softplus", False): {"test": np.array([0.5, np.nan, 0.7])},
           ("cnn13", "orig", "softplus", False): {"test": np.array([np.nan])}}
    rows = SK.table_markdown("4.2", res, ["cnn13"])[1]
    assert rows[2][2] == "60.00 ± 14.14 (1 of 3 diverged) / 99.14 ± 0.04" and rows[0][2] == "diverged / 99.20"
    with pytest.raises(ValueError, match="^results must be"):
        SK.table_markdown("4.2", [], ["cnn13"])
    key = ("vgg11", "orig", "softplus", False)  # Table 4.3 prints train accuracies too: a bare KeyError before
    with pytest.raises(ValueError, match=r"^results\[\('vgg11', 'orig', 'softplus', False\)\] must have the keys "
                                         r"\['test', 'train'\] for Table 4.3 \(a run_table_row result\), got \['test'\]$"):
        SK.table_markdown("4.3", {key: {"test": np.array([0.9])}}, ["vgg11"])
    with pytest.raises(TypeError, match=r"^results\[\('vgg11', 'orig', 'softplus', False\)\] must be a dict"):
        SK.table_markdown("4.3", {key: [0.9]}, ["vgg11"])
