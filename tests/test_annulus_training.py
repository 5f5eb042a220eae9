"""lib.annulus_training against independent computations: radius laws, a per-net loop forward."""

import math

import numpy as np
import pytest
import torch

import lib.annulus_training as AT
from lib.annulus_training import LeakEnsemble, ball_vs_shell
from lib.nets import init_mlp


@pytest.mark.parametrize("n_dim", [1, 2, 5])
def test_ball_vs_shell_labels_radii_and_volume_law(n_dim):
    rng = np.random.default_rng(0)
    X, y = ball_vs_shell(n_dim, 4001, 0.5, 0.8, 1.1, rng, n_sets=3)
    assert X.shape == (4001, 3, n_dim) and y.shape == (4001, 3)
    half = 4001 // 2
    assert (y[:half] == 1).all() and (y[half:] == -1).all()
    r = np.linalg.norm(X, axis=2)
    assert (r[:half] <= 0.5).all() and (r[half:] >= 0.8 - 1e-12).all() and (r[half:] <= 1.1 + 1e-12).all()
    # uniform in volume: r^n is uniform on [a^n, b^n]; its mean is the interval's midpoint (4 standard errors)
    for lo, hi, rr in ((0.0, 0.5, r[:half]), (0.8, 1.1, r[half:])):
        u = (rr ** n_dim - lo ** n_dim) / (hi ** n_dim - lo ** n_dim)
        assert abs(u.mean() - 0.5) < 4 * math.sqrt(1 / 12 / u.size)
        assert abs((u < 0.25).mean() - 0.25) < 4 * math.sqrt(0.25 * 0.75 / u.size)
    # directions uniform: the mean unit vector is near zero
    d = X[:half] / np.maximum(r[:half, :, None], 1e-300)
    assert np.abs(d.mean(axis=(0, 1))).max() < 4 / math.sqrt(d.shape[0] * d.shape[1])
    # the sets are independent draws, not copies
    assert not np.allclose(X[:, 0], X[:, 1])


def test_ball_vs_shell_is_reproducible_from_the_generator():
    a = ball_vs_shell(3, 10, 1.0, 2.0, 3.0, np.random.default_rng(7))
    b = ball_vs_shell(3, 10, 1.0, 2.0, 3.0, np.random.default_rng(7))
    np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(r1=2.0, r2=1.0, r3=3.0), "r1 <= r2 < r3"),
    (dict(r1=1.0, r2=3.0, r3=3.0), "r1 <= r2 < r3"),
    (dict(r1=-1.0), "r1"),
    (dict(n_points=1), "n_points"),
    (dict(n_dim=0), "n_dim"),
    (dict(n_sets=0), "n_sets"),
    (dict(rng=0), "rng"),
])
def test_ball_vs_shell_errors(kwargs, match):
    args = dict(n_dim=2, n_points=10, r1=1.0, r2=2.0, r3=3.0, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ball_vs_shell(**args)


def test_leak_ensemble_matches_a_loop_of_single_nets():
    seeds, slopes = [3, 4, 5], [0.0, 0.01, 0.3]
    model = LeakEnsemble([2, 3, 1], seeds=seeds, slopes=slopes)
    X = torch.randn(6, 3, 2, generator=torch.Generator().manual_seed(0))
    out = model(X)
    assert out.shape == (3, 6)
    for m, (s, a) in enumerate(zip(seeds, slopes)):
        (W1, b1), (W2, b2) = init_mlp([2, 3, 1], s)                   # the same start as a single net
        h = X[:, m] @ W1.T + b1
        h = torch.where(h > 0, h, a * h)
        torch.testing.assert_close(out[m], (h @ W2.T + b2)[:, 0], rtol=1e-6, atol=1e-6)


def test_leak_ensemble_several_outputs_keep_their_axis():
    model = LeakEnsemble([2, 4, 3], seeds=[0, 1], slopes=[0.0, 0.1])
    assert model(torch.zeros(5, 2, 2)).shape == (2, 5, 3)


@pytest.mark.parametrize("slopes, match", [([0.0, 1.0], r"\[0, 1\)"), ([-0.1, 0.0], r"\[0, 1\)"),
                                           ([0.0], "slopes"), ([0.0, float("nan")], "slopes")])
def test_leak_ensemble_rejects_bad_slopes(slopes, match):
    with pytest.raises(ValueError, match=match):
        LeakEnsemble([2, 3, 1], seeds=[0, 1], slopes=slopes)


def test_leak_ensemble_rejects_inputs_of_the_wrong_shape():
    model = LeakEnsemble([2, 3, 1], seeds=[0, 1], slopes=[0.0, 0.0])
    with pytest.raises(ValueError, match=r"\(n, 2 nets, 2 inputs\)"):
        model(torch.zeros(5, 3, 2))
    with pytest.raises(ValueError, match="X"):
        model(torch.zeros(5, 2))


def test_train_ball_vs_shell_trains_each_net_as_if_alone_with_its_own_loss():
    """Two nets trained together (one BCE, one MSE) end exactly where each ends when trained alone
    by a hand-written Adam loop on its own loss (Adam is elementwise, the losses are summed)."""
    from lib.annulus_training import train_ball_vs_shell
    rng = np.random.default_rng(1)
    X, y = ball_vs_shell(2, 40, 0.5, 0.8, 1.1, rng, n_sets=2)
    Xt, yt = torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    model = train_ball_vs_shell(Xt.float(), yt.float(), [0.0, 0.1], [True, False], epochs=3, batch_size=40,
                                lr=0.01, seed=0, net_seeds=[11, 12])
    for m, (leak, is_bce, s) in enumerate(((0.0, True, 11), (0.1, False, 12))):
        params = [p.clone().requires_grad_(True) for layer in init_mlp([2, 3, 1], s) for p in layer]
        opt = torch.optim.Adam(params, lr=0.01)
        for _ in range(3):                                          # full batch: the order does not matter
            W1, b1, W2, b2 = params
            h = Xt[:, m].float() @ W1.T + b1
            f = (torch.where(h > 0, h, leak * h) @ W2.T + b2)[:, 0]
            t = yt[:, m].float()
            loss = torch.nn.functional.softplus(-t * f).mean() if is_bce else ((f - t) ** 2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
        for got, want in zip([p for layer in model.model_params(m) for p in layer], params):
            torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-6)


def test_sign_accuracy_counts_correct_signs_and_zero_as_wrong():
    from lib.annulus_training import sign_accuracy
    model = LeakEnsemble([1, 2, 1], seeds=[0, 1], slopes=[0.0, 0.0])
    with torch.no_grad():
        for W in model.weights:
            W.zero_()
        model.weights[0][:, 0, 0] = 1.0                              # hidden unit 1 = relu(x)
        model.weights[1][:, 0, 0] = torch.tensor([1.0, -1.0])        # net 0: f = relu(x), net 1: f = -relu(x)
        for b in model.biases:
            b.zero_()
    X = torch.tensor([[[-1.0], [-1.0]], [[1.0], [1.0]], [[2.0], [2.0]], [[3.0], [3.0]]])
    y = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]])
    # net 0: f = 0, 1, 2, 3 -> signs 0, +, +, + vs labels +, +, +, - -> 2 of 4
    # net 1: f = 0, -1, -2, -3 -> signs 0, -, -, - vs labels +, +, -, - -> 2 of 4
    np.testing.assert_allclose(sign_accuracy(model, X, y), [0.5, 0.5])


def test_train_ball_vs_shell_trains_and_computes_its_loss_on_the_resolved_device(monkeypatch):
    """Issue 22: at paper scale the trainer runs on CUDA, so the per-net loss choice must live with the
    outputs (a CPU mask meeting CUDA outputs failed the first GPU smoke run). The device is resolved once
    (REPRO_DEVICE), the mask is made there and the trainer is told to train there; the meta device stands
    in for CUDA."""
    seen = {}

    def fake_train_minibatch(model, X, y, loss_fn, **kwargs):
        dev = kwargs["device"]
        out = torch.tensor([[0.5, -1.0], [2.0, 0.0]], dtype=X.dtype, device=dev)       # (nets, batch)
        yb = torch.tensor([[1.0, -1.0], [-1.0, -1.0]], dtype=X.dtype, device=dev)      # (batch, nets)
        seen[dev.type] = loss_fn(out, yb)

    monkeypatch.setattr(AT, "train_minibatch", fake_train_minibatch)
    X = torch.zeros(2, 2, 1, dtype=torch.float64)
    for dev in ("cpu", "meta"):
        monkeypatch.setattr(AT, "as_device", lambda device=None, dev=dev: torch.device(dev))
        AT.train_ball_vs_shell(X, torch.ones(2, 2, dtype=torch.float64), [0.0, 0.0], [True, False], epochs=1,
                               batch_size=2, lr=0.1, seed=0, net_seeds=[0, 1])
    assert seen["meta"].device.type == "meta" and seen["meta"].shape == (2,)
    bce0 = (math.log1p(math.exp(-0.5)) + math.log1p(math.exp(-1.0))) / 2  # net 0: BCE, labels (1, -1)
    mse1 = ((2.0 + 1.0) ** 2 + (0.0 + 1.0) ** 2) / 2                       # net 1: MSE, labels (-1, -1)
    assert torch.allclose(seen["cpu"], torch.tensor([bce0, mse1], dtype=torch.float64))


@pytest.mark.parametrize("kwargs, match", [
    (dict(y=torch.zeros(10, 2)), r"\+1 and -1"),
    (dict(bce=[1, 0]), "bools"),
    (dict(bce=[True]), "bce"),
    (dict(width=0), "width"),
])
def test_train_ball_vs_shell_errors(kwargs, match):
    from lib.annulus_training import train_ball_vs_shell
    args = dict(X=torch.zeros(10, 2, 2), y=torch.ones(10, 2), slopes=[0.0, 0.0], bce=[True, False], epochs=1,
                batch_size=5, lr=0.01, seed=0, net_seeds=[0, 1])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        train_ball_vs_shell(**args)


@pytest.mark.parametrize("n_dim, nets, n_points, batch", [
    (2, 12 * 100, 1000, 10),       # chapter 07, paper scale: 12 (loss, leak, normalise) configs x 100 nets, batch 10
    (8, 2 * 100, 10000, 100),      # its higher-dimensions section, paper scale: n = 8, 100 nets per leak
])
def test_paper_scale_shapes_train_one_epoch(n_dim, nets, n_points, batch):
    """One epoch at the paper configuration's largest ensemble: the shapes go through and the loss falls."""
    from lib.annulus_training import sign_accuracy, train_ball_vs_shell
    X, y = ball_vs_shell(n_dim, n_points, 0.5, 0.5 * math.sqrt(n_dim), 0.5 * math.sqrt(2 * n_dim),
                         np.random.default_rng(0), n_sets=nets)
    Xt, yt = torch.tensor(X / X.std(), dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    slopes = np.tile([0.0, 0.01], nets // 2)
    model = train_ball_vs_shell(Xt, yt, slopes, np.ones(nets, bool), epochs=1, batch_size=batch, lr=0.01,
                                seed=0, net_seeds=list(range(nets)))
    acc = sign_accuracy(model, Xt, yt)
    assert acc.shape == (nets,) and np.isfinite(acc).all()
    assert acc.mean() > 0.5                      # one epoch of Adam already beats chance on average


# --- messages word for word (what a reader sees) and the defaults ----------------------------------------

_RNG = np.random.default_rng


@pytest.mark.parametrize("args, message", [
    ((0, 10, 1.0, 2.0, 3.0), r"^n_dim must be an int >= 1, got 0$"),
    ((2, 1, 1.0, 2.0, 3.0), r"^n_points must be an int >= 2, got 1$"),
    ((2, 10, -1.0, 2.0, 3.0), r"^r1 \(the ball's radius\) must be a finite number > 0, got -1\.0$"),
    ((2, 10, 1.0, -2.0, 3.0), r"^r2 \(the shell's inner radius\) must be a finite number > 0, got -2\.0$"),
    ((2, 10, 1.0, 2.0, -3.0), r"^r3 \(the shell's outer radius\) must be a finite number > 0, got -3\.0$"),
])
def test_ball_vs_shell_messages(args, message):
    with pytest.raises(ValueError, match=message):
        ball_vs_shell(*args, _RNG(0))


def test_ball_vs_shell_message_names_sets_and_rng():
    with pytest.raises(ValueError, match=r"^n_sets must be an int >= 1, got 0$"):
        ball_vs_shell(2, 10, 1.0, 2.0, 3.0, _RNG(0), n_sets=0)
    with pytest.raises(ValueError, match=r"^rng must be a numpy\.random\.Generator \(np\.random\.default_rng\(seed\)\), got 5$"):
        ball_vs_shell(2, 10, 1.0, 2.0, 3.0, 5)


def test_ball_vs_shell_smallest_cases_and_default_one_set():
    X, y = ball_vs_shell(3, 2, 1.0, 1.0, 2.0, _RNG(0))        # two points; no gap (r1 = r2) is allowed
    assert X.shape == (2, 1, 3) and y.ravel().tolist() == [1.0, -1.0]


def _train_args(**kw):
    args = dict(X=torch.zeros(10, 2, 2), y=torch.ones(10, 2), slopes=[0.0, 0.0], bce=[True, False], epochs=1,
                batch_size=5, lr=0.01, seed=0, net_seeds=[0, 1])
    args.update(kw)
    return args


@pytest.mark.parametrize("kw, message", [
    (dict(X=torch.zeros(10, 2)), r"^X must be an array with 3 dimensions \(3-D\), got tensor of shape \(10, 2\)"),
    (dict(X=torch.zeros(10, 2, 2, dtype=torch.int64)), r"^X must be a floating-point tensor, got tensor"),
    (dict(y=torch.ones(10, 3)), r"^y must be an array of shape \(10, 2\) to agree with X, got tensor of shape \(10, 3\)"),
    (dict(y=torch.ones(10, 2, dtype=torch.int64)), r"^y must be a floating-point tensor, got tensor"),
    (dict(y=torch.zeros(10, 2)), r"^y \(the labels\) must hold only \+1 and -1$"),
    (dict(width=0), r"^width must be an int >= 1, got 0$"),
    (dict(bce=[[True, False]]), r"^bce \(one bool per net: BCE or MSE\) must be an array with 1 dimensions \(1-D\)"),
    (dict(bce=[1, 0]), r"^bce \(one bool per net: BCE or MSE\) must be an array of bools, got dtype int64$"),
])
def test_train_ball_vs_shell_messages(kw, message):
    from lib.annulus_training import train_ball_vs_shell
    with pytest.raises(ValueError, match=message):
        train_ball_vs_shell(**_train_args(**kw))


def test_train_ball_vs_shell_seed_orders_batches_silently_and_width_is_used(capsys):
    """The same seed gives the same nets, another seed another batch order (so other nets); no progress
    bar is printed; an explicit width builds that many hidden units."""
    from lib.annulus_training import train_ball_vs_shell
    X, y = ball_vs_shell(2, 40, 0.5, 0.8, 1.1, _RNG(3), n_sets=2)
    X, y = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    run = lambda s, **kw: [p for layer in train_ball_vs_shell(**_train_args(X=X, y=y, seed=s, epochs=2, **kw))
                           .model_params(0) for p in layer]
    a, b, c = run(1), run(1), run(2)
    assert all(torch.equal(u, v) for u, v in zip(a, b)) and not all(torch.equal(u, v) for u, v in zip(a, c))
    assert run(0, width=5)[0].shape == (5, 2)
    out = capsys.readouterr()
    assert out.err == "" and out.out == ""


def test_leak_ensemble_messages_attributes_and_empty_batch():
    with pytest.raises(ValueError, match=r"^slopes must be an array with 1 dimensions \(1-D\), got array of shape \(1, 2\)"):
        LeakEnsemble([2, 3, 1], seeds=[0, 1], slopes=[[0.0, 0.0]])
    model = LeakEnsemble([2, 3, 1], seeds=[0, 1], slopes=[0.0, 0.2])
    assert model.activation == "leaky_relu" and model.slopes.dtype == model.weights[0].dtype
    with pytest.raises(ValueError, match=r"^X must be a floating-point tensor, got tensor"):
        model(torch.zeros(4, 2, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"^X must be an array with 3 dimensions"):
        model(torch.zeros(4, 2))
    assert model(torch.zeros(0, 2, 2)).shape == (2, 0)       # an empty batch gives an empty output


def test_float64_inputs_name_X_and_the_nets_dtype():
    """The nets are float32: a float64 X is refused with its name (it was torch's dtype error in baddbmm)."""
    X = torch.zeros(10, 2, 2, dtype=torch.float64)
    y = torch.ones(10, 2, dtype=torch.float64)
    y[::2] = -1
    model = LeakEnsemble([2, 3, 1], [0, 1], [0.0, 0.1])
    for call in (lambda: model(X), lambda: AT.sign_accuracy(model, X, y),
                 lambda: AT.train_ball_vs_shell(X, y, [0.0, 0.0], [True, False], epochs=1, batch_size=5, lr=0.01,
                                                seed=0, net_seeds=[0, 1])):
        with pytest.raises(TypeError, match=r"^X must have the nets' dtype \(torch.float32\)"):
            call()
    assert AT.sign_accuracy(model, X.float(), y.float()).shape == (2,)
