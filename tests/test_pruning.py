"""Tests for lib.pruning (Chapter 6, section "Pruning") and the pruning options of lib.boolean."""

import math

import numpy as np
import pytest
import torch

from lib import boolean as B
from lib import pruning as P


def test_wilson_interval():
    lo, hi = P.wilson_interval(13, 20)
    assert 0.4 < lo < 0.65 < hi < 0.85
    assert P.wilson_interval(0, 10)[0] == 0.0 and P.wilson_interval(10, 10)[1] == 1.0
    with pytest.raises(ValueError):
        P.wilson_interval(3, 0)
    with pytest.raises(ValueError):
        P.wilson_interval(5, 4)


def test_prune_and_finetune_stop_at_first_without_curves():
    res = B.prune_and_finetune(B.parity_table(2), 4, 0.1, parents=3, epochs=300, seed=0, max_width=4,
                               progress=False, finetune_epochs=100, record=False, stop_at_first=True)
    used = res["parents_used"]
    assert len(used) >= 1 and res["smallest"].shape == (len(used),)
    assert (res["smallest"] >= 2).all()  # one unit cannot compute XOR, all four units can
    for j, p in enumerate(res["smallest"]):
        assert res["solved"][p][j].any() and not any(res["solved"][k][j].any() for k in range(1, p))
        assert all(not res["tried"][k][j] for k in res["tried"] if k > p)
    assert res["curves"][1] is None
    with pytest.raises(ValueError):
        B.prune_and_finetune(B.parity_table(2), 4, 0.1, parents=2, epochs=10, finetune_epochs=0)


def test_wide_pruning_cell_and_table():
    cell = P.wide_pruning_cell(2, 3, parents=2, epochs=300, finetune_epochs=100, seed=1)
    assert cell["parents"] == 2 and len(cell["per_parent"]) == cell["solved_parents"] >= 1
    for p, r, C in cell["per_parent"]:
        assert 2 <= p <= 3 and 1 <= r <= C == math.comb(3, p)
    assert P.best_cell_entry(cell) == min(cell["per_parent"], key=lambda e: (e[0], -e[1]))
    assert P.best_cell_entry({"per_parent": []}) is None
    table = P.wide_pruning_table([2], [1], 1, 200, 50, seed_of=lambda w, n: 7, progress=False)
    assert list(table) == [(2, 1)] and table[(2, 1)]["per_parent"][0][0] == 1
    with pytest.raises(ValueError):
        P.wide_pruning_cell(0, 3, 1, 10, 10)
    with pytest.raises(ValueError):
        P.wide_pruning_table([2], [5], 1, 10, 10, seed_of=lambda w, n: 0)


def test_masked_mlp_matches_stacked_mlp_when_unmasked():
    X = torch.tensor(B.cube(3), dtype=torch.float32)
    ref = B.StackedMLP([3, 4, 4, 1], 5, 0.1, seed=3)
    m = P.MaskedMLP(3, 4, 2, 5, 0.1, seed=3)
    assert torch.allclose(m.forward(X), ref.forward(X))
    dout = torch.randn(8, 5)
    for net in (m, ref):
        _, zs = net.forward(X, keep=True)
        net.backward(X, zs, dout)
    assert torch.allclose(m.grad, ref.grad, atol=1e-6)


def test_masked_mlp_gradient_and_masks():
    torch.manual_seed(0)
    X = torch.tensor(B.cube(2), dtype=torch.float64)
    m = P.MaskedMLP(2, 3, 2, 2, 0.1, seed=1)
    m.theta = m.theta.double()
    m.grad = m.grad.double()
    sizes = [p.numel() for p in m.params]
    m.params = [v.view(p.shape) for v, p in zip(m.theta.split(sizes), m.params)]
    m.grads = [v.view(p.shape) for v, p in zip(m.grad.split(sizes), m.params)]
    m.mask[0, 1, 0] = 0.0   # net 0 loses unit 1 of layer 0
    m.linear[1, 1] = True   # net 1's second layer is linear
    dout = torch.randn(4, 2, dtype=torch.float64)
    _, zs = m.forward(X, keep=True)
    m.backward(X, zs, dout)
    analytic = m.grad.clone()
    eps = 1e-6
    for i in range(0, m.theta.numel(), 3):  # finite differences on every third parameter
        old = float(m.theta[i])
        m.theta[i] = old + eps
        up = float((m.forward(X) * dout).sum())
        m.theta[i] = old - eps
        down = float((m.forward(X) * dout).sum())
        m.theta[i] = old
        assert abs((up - down) / (2 * eps) - float(analytic[i])) < 1e-6, i
    W0 = m.grads[0]  # (2, 3, 2): the removed unit's incoming weights get no gradient in net 0
    assert torch.all(W0[:, 1, 0] == 0)


def test_pruned_network_is_the_same_function():
    X = B.cube(3)
    m = P.MaskedMLP(3, 4, 3, 3, 0.1, seed=2)
    m.mask[0, 2, 0] = 0.0
    m.mask[1, 0, 1] = 0.0
    m.linear[1, 1] = True
    m.linear[0, 2] = True
    out = m.forward(torch.tensor(X, dtype=torch.float32)).numpy()
    for net in range(3):
        params = P.pruned_network(m, net)
        arch = P.architecture(m.mask[..., net], m.linear[:, net], 3)
        assert tuple([params[0][0].shape[1]] + [W.shape[0] for W, _ in params]) == arch
        assert np.allclose(B.network_output(params, X, 0.1), out[:, net], atol=1e-5)
    assert P.architecture(m.mask[..., 1], m.linear[:, 1], 3) == (3, 4, 4, 1)
    assert P.architecture(m.mask[..., 2], m.linear[:, 2], 3) == (3, 4, 4, 1)
    with pytest.raises(ValueError):
        P.pruned_network(m, 3)


def test_removal_candidates_and_bounds():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    linear = torch.tensor([False, False])
    cands = P.removal_candidates(mask, linear)
    assert ("node", 0, 0) in cands and ("node", 0, 1) in cands and ("layer", 0) in cands and ("layer", 1) in cands
    assert not any(c[:2] == ("node", 1) for c in cands)  # a layer's last unit goes only with its layer
    assert P.removal_candidates(mask, torch.tensor([True, False])) == []
    assert P.parity_bound_ok((4, 2, 2, 1)) and not P.parity_bound_ok((5, 2, 2, 1)) and P.parity_bound_ok((6, 2, 3, 1))
    assert P.architecture_size((4, 2, 2, 1)) == (4, 2)


def test_deep_prune_small():
    res = P.deep_prune(2, 4, 2, trainings=1, prunings=2, epochs=400, finetune_epochs=20, seed=0, progress=False)
    assert res["trained_solved"].shape == (1,)
    for run in res["runs"]:
        assert run["solves"] and run["max_deviation"] < 1e-3 and run["architecture"][0] == 2 and run["architecture"][-1] == 1
        assert P.architecture_size(run["architecture"])[0] >= 2
    with pytest.raises(ValueError):
        P.deep_prune(2, 4, 2, trainings=0, prunings=1, epochs=10, finetune_epochs=5)
    with pytest.raises(ValueError):
        P.MaskedMLP(2, 4, 0, 1, 0.1, 0)


def test_cnn_masks_and_magnitude_pruning():
    net = P.PrunableCNN(1, 8, channels=4, seed=0)
    x = torch.rand(5, 1, 8, 8)
    assert net(x).shape == (5, 10)
    total = net.total_weights()
    assert total == 4 * 9 + 2 * 4 * 4 * 9 + 4 * 10 and net.remaining_weights() == total
    net.channel_mask1[2] = 0.0
    assert net.channels() == (4, 3, 4)
    assert net.remaining_weights() == total - 4 * 9 - 4 * 9  # its kernels in and out
    pruned = P.magnitude_prune(net, 0.5)
    live = sum(int(m.sum()) for m in pruned.weight_masks)
    assert live == total - round(0.5 * total)
    assert torch.equal(P.PrunableCNN(1, 8, 4, seed=0).fc.weight, P.PrunableCNN(1, 8, 4, seed=0).fc.weight)
    with pytest.raises(ValueError):
        P.magnitude_prune(net, 1.0)
    with pytest.raises(ValueError):
        P.PrunableCNN(1, 4)


def test_as_images():
    assert P.as_images(torch.zeros(3, 64)).shape == (3, 1, 8, 8)
    assert P.as_images(torch.zeros(3, 28, 28)).shape == (3, 1, 28, 28)
    assert P.as_images(torch.zeros(3, 3, 32, 32)).shape == (3, 3, 32, 32)
    with pytest.raises(ValueError):
        P.as_images(torch.zeros(3, 10))
    with pytest.raises(ValueError):
        P.as_images(torch.zeros(3))


@pytest.mark.parametrize("shape", [(1, 28), (3, 32)], ids=["mnist", "cifar10"])
def test_paper_configuration_one_sgd_step(shape):
    """One SGD step of the thesis' §3.4.5 setting (32 channels, lr 0.001, batch 40, momentum 0.9,
    weight decay 1e-4) with MNIST / CIFAR-10 shapes on synthetic images."""
    c, side = shape
    net = P.PrunableCNN(c, side, channels=32, seed=0)
    X, y = torch.rand(40, c, side, side), torch.randint(0, 10, (40,))
    before = net.fc.weight.detach().clone()
    losses = P.train_cnn(net, X, y, epochs=1, batch_size=40, lr=0.001, momentum=0.9, weight_decay=1e-4)
    assert len(losses) == 1 and np.isfinite(losses[0]) and not torch.equal(before, net.fc.weight)
    assert net.fc.in_features == 32 * (side // 8) ** 2
    with pytest.raises(ValueError):
        P.train_cnn(net, X[:, 0], y, epochs=1)


def test_channel_prune_history():
    gen = torch.Generator().manual_seed(0)
    X, y = torch.rand(60, 1, 8, 8, generator=gen), torch.randint(0, 3, (60,), generator=gen)
    net = P.PrunableCNN(1, 8, channels=2, classes=3, seed=0)
    hist = P.channel_prune(net, X, y, X, y, finetune_epochs=1, score_samples=20, progress=False, lr=0.01)
    assert hist[0]["channels"] == (2, 2, 2) and hist[-1]["channels"] == (1, 1, 1) and len(hist) == 4
    fractions = [h["fraction"] for h in hist]
    assert fractions[0] == 1.0 and all(a > b for a, b in zip(fractions, fractions[1:]))
    assert net.channels() == (2, 2, 2)  # the input model is not modified
    with pytest.raises(ValueError):
        P.channel_prune(net, X, y, X, y, finetune_epochs=-1)


# ---- every error message names its argument (what a user reads) --------------------------------

_Xb = torch.tensor(B.cube(2), dtype=torch.float32)
_cnn = lambda: P.PrunableCNN(1, 8, channels=2, classes=3, seed=0)  # noqa: E731
_img = torch.zeros(3, 1, 8, 8)
_lab = torch.tensor([0, 1, 2])
_P_BAD = [
    (lambda: P.wilson_interval(1, 0), r"^trials must be"),
    (lambda: P.wilson_interval(-1, 3), r"^successes must be"),
    (lambda: P.wilson_interval(1, 3, z=0.0), r"^z must be"),
    (lambda: P.wilson_interval(4, 3), r"^need 0 <= successes <= trials, got 4 of 3$"),
    (lambda: P.wide_pruning_cell(13, 3, 2, 2, 1), r"^n must be an int in 1..12, got 13$"),
    (lambda: P.wide_pruning_cell(0, 3, 2, 2, 1), r"^n must be an int in 1..12, got 0$"),
    (lambda: P.wide_pruning_cell(2.0, 3, 2, 2, 1), r"^n must be an int in 1..12, got 2.0$"),
    (lambda: P.wide_pruning_cell(2, 3, 2, 2, 0), r"^finetune_epochs must be"),
    (lambda: P.wide_pruning_table("ab", [2], 2, 2, 1, lambda n, w: 0), r"^widths must be"),
    (lambda: P.wide_pruning_table([0], [2], 2, 2, 1, lambda n, w: 0), r"^widths\[i\] must be"),
    (lambda: P.wide_pruning_table([3], "ab", 2, 2, 1, lambda n, w: 0), r"^ns must be"),
    (lambda: P.wide_pruning_table([3], [0], 2, 2, 1, lambda n, w: 0), r"^ns\[i\] must be"),
    (lambda: P.wide_pruning_table([3], [2], 2, 2, 1, 3), r"^seed_of must be"),
    (lambda: P.wide_pruning_table([3], [2], 2, 2, 0, lambda n, w: 0), r"^finetune_epochs must be"),
    (lambda: P.wide_pruning_table([3], [2], 2, 2, 1, lambda n, w: 0, lr=0.0), r"^lr must be"),
    (lambda: P.wide_pruning_table([2], [4], 2, 2, 1, lambda n, w: 0),
     r"^no cell with n <= width \+ 1 in widths \[2\], ns \[4\]$"),
    (lambda: P.MaskedMLP(2, 3, 0, 2, 0.1, 0), r"^depth must be"),
    (lambda: P.MaskedMLP(0, 3, 1, 2, 0.1, 0), r"^n_in must be"),
    (lambda: P.MaskedMLP(2, 0, 1, 2, 0.1, 0), r"^width must be"),
    (lambda: P.MaskedMLP(2, 3, 1, 2, 0.1, 0).forward(torch.zeros(4, 3)), r"^X must be an array of shape \(n, 2\)"),
    (lambda: P.MaskedMLP(2, 3, 1, 2, 0.1, 0).select([2]), r"^index must hold net indices in \[0, 2\), got \[2\]$"),
    (lambda: P.MaskedMLP(2, 3, 1, 2, 0.1, 0).select([-1]), r"^index must hold net indices in \[0, 2\), got \[-1\]$"),
    (lambda: P.MaskedMLP(2, 3, 1, 2, 0.1, 0).select([]), r"^index must be non-empty"),
    (lambda: P.MaskedMLP(2, 3, 1, 2, 0.1, 0).assign([3], P.MaskedMLP(2, 3, 1, 1, 0.1, 0)),
     r"^rows must hold net indices in \[0, 2\), got \[3\]$"),
    (lambda: P.MaskedMLP(2, 3, 1, 2, 0.1, 0).assign([1], "m"), r"^other must be a MaskedMLP"),
    (lambda: P.fit_masked("m", _Xb, torch.zeros(4), 2), r"^model must be a MaskedMLP"),
    (lambda: P.fit_masked(P.MaskedMLP(2, 3, 1, 2, 0.1, 0), _Xb[:, :1], torch.zeros(4), 2), r"^X must be an array of shape \(n, 2\)"),
    (lambda: P.fit_masked(P.MaskedMLP(2, 3, 1, 2, 0.1, 0), _Xb, torch.zeros(4, dtype=torch.long), 2), r"^y must be a floating-point"),
    (lambda: P.fit_masked(P.MaskedMLP(2, 3, 1, 2, 0.1, 0), _Xb, torch.zeros(3), 2),
     r"^y must hold one label per row of X \(4\), got"),
    (lambda: P.fit_masked(P.MaskedMLP(2, 3, 1, 2, 0.1, 0), _Xb, torch.zeros(4), 0), r"^epochs must be"),
    (lambda: P.fit_masked(P.MaskedMLP(2, 3, 1, 2, 0.1, 0), _Xb, torch.zeros(4), 2, lr=0.0), r"^lr must be"),
    (lambda: P.architecture(torch.ones(3), torch.zeros(1, dtype=torch.bool), 2), r"^mask must be an array with 2 dimensions"),
    (lambda: P.architecture(torch.ones(2, 3), torch.zeros(3, dtype=torch.bool), 2), r"^mask \(depth, w\) and linear \(depth,\) must agree in depth .*, got \(2,\) and \(3,\)"),
    (lambda: P.architecture(torch.full((2, 3), 2.0), torch.zeros(2, dtype=torch.bool), 2), r"^mask must hold only 0 and 1, got"),
    (lambda: P.architecture(torch.ones(2, 3), torch.zeros(2, dtype=torch.bool), 0), r"^n_in must be"),
    (lambda: P.removal_candidates(torch.full((2, 3), 0.5), torch.zeros(2, dtype=torch.bool)), r"^mask must hold only 0 and 1"),
    (lambda: P.pruned_network("m", 0), r"^model must be a MaskedMLP"),
    (lambda: P.pruned_network(P.MaskedMLP(2, 3, 1, 2, 0.1, 0), 2), r"^net \(index\) must be"),
    (lambda: P.deep_prune(13, 3, 1, 2, 1, 2, 1), r"^n must be an int in 1..12, got 13$"),
    (lambda: P.deep_prune(2, 3, 1, 2, 1, 2, 1, lr=0.0), r"^lr must be"),
    (lambda: P.deep_prune(2, 3, 1, 2, 1, 2, 1, seed=-1), r"^seed must be"),
    (lambda: P.deep_prune(2, 3, 1, 0, 1, 2, 1), r"^trainings must be a positive int, got 0$"),
    (lambda: P.deep_prune(2, 3, 1, 2, 0, 2, 1), r"^prunings must be a positive int, got 0$"),
    (lambda: P.deep_prune(2, 3, 1, 2, 1, 0, 1), r"^epochs must be a positive int, got 0$"),
    (lambda: P.deep_prune(2, 3, 1, 2, 1, 2, 0), r"^finetune_epochs must be a positive int, got 0$"),
    (lambda: P.architecture_size([2]), r"^arch \(widths input, ..., output\) must be"),
    (lambda: P.architecture_size([2, 0, 1]), r"^arch\[i\] must be"),
    (lambda: P.parity_bound_ok("ab"), r"^arch \(widths input, ..., output\) must be"),
    (lambda: P.PrunableCNN(0, 8), r"^in_channels must be a positive int, got 0$"),
    (lambda: P.PrunableCNN(1, 8.0), r"^image_size must be a positive int, got 8.0$"),
    (lambda: P.PrunableCNN(1, 8, channels=0), r"^channels must be a positive int, got 0$"),
    (lambda: P.PrunableCNN(1, 8, classes=0), r"^classes must be a positive int, got 0$"),
    (lambda: P.PrunableCNN(1, 7), r"^image_size must be >= 8 \(three 2x2 pools\), got 7$"),
    (lambda: P.PrunableCNN(1, 8, seed=-1), r"^seed must be"),
    (lambda: _cnn()(torch.zeros(2, 2, 8, 8)), r"^x must be an array of shape \(n, 1, n, n\)"),
    (lambda: P.as_images(torch.zeros(5)), r"^X must be an array with 2 or 3 or 4 dimensions"),
    (lambda: P.as_images(torch.zeros(2, 10)), r"^X: cannot read rows of 10 features as square images$"),
    (lambda: P.as_images(torch.zeros(2, 64), image_size=0), r"^image_size must be"),
    (lambda: P.as_images(torch.zeros(2, 64), image_size=7), r"^X: cannot read rows of 64 features as square images$"),
    (lambda: P.train_cnn("m", _img, _lab, 1), r"^model must be a torch.nn.Module"),
    (lambda: P.train_cnn(_cnn(), _img[0], _lab, 1), r"^X must be an array with 4 dimensions"),
    (lambda: P.train_cnn(_cnn(), _img, _lab.float(), 1), r"^y must be an integer tensor"),
    (lambda: P.train_cnn(_cnn(), _img, _lab[:2], 1), r"^y must hold one label per image of X \(3\), got"),
    (lambda: P.train_cnn(_cnn(), _img, torch.tensor([0, 1, 3]), 1), r"^y must be class indices >= 0 and < 3"),
    (lambda: P.evaluate("m", _img, _lab), r"^model must be a torch.nn.Module"),
    (lambda: P.evaluate(_cnn(), "x", _lab), r"^X must be a torch.Tensor"),
    (lambda: P.evaluate(_cnn(), _img, _lab[:2]), r"^y must hold one label per row of X \(3\), got"),
    (lambda: P.evaluate(_cnn(), _img, torch.tensor([0, 1, 5])), r"^y must be class indices >= 0 and < 3"),
    (lambda: P.evaluate(_cnn(), _img, _lab, batch_size=0), r"^batch_size must be"),
    (lambda: P.magnitude_prune("m", 0.5), r"^model must be a PrunableCNN"),
    (lambda: P.magnitude_prune(_cnn(), 1.5), r"^fraction_removed must be"),
    (lambda: P.channel_prune(_cnn(), _img, _lab, _img, _lab, finetune_epochs=-1), r"^finetune_epochs must be"),
    (lambda: P.channel_prune("m", _img, _lab, _img, _lab), r"^model must be a PrunableCNN"),
    (lambda: P.channel_prune(_cnn(), _img, _lab, _img[0], _lab), r"^X_test must be an array with 4 dimensions"),
    (lambda: P.channel_prune(_cnn(), _img, _lab, _img, _lab[:2]), r"^y_test must hold one label per image of X_test \(3\)"),
    (lambda: P.channel_prune(_cnn(), _img, _lab, _img, _lab, min_accuracy=1.5), r"^min_accuracy must be"),
    (lambda: P.channel_prune(_cnn(), _img, _lab, _img, _lab, seed=-1), r"^seed must be"),
    (lambda: P.loss_plateaus(np.ones((2, 50)), 5, 0.01, 10), r"^curve must be an array with 1 dimension"),
    (lambda: P.loss_plateaus(np.ones(50), 0, 0.01, 10), r"^window must be an int >= 1, got 0$"),
    (lambda: P.loss_plateaus(np.ones(50), 5, 0.0, 10), r"^rel_tol must be"),
    (lambda: P.loss_plateaus(np.ones(50), 5, 0.01, 0), r"^min_length must be an int >= 1, got 0$"),
    (lambda: P.loss_plateaus(np.ones(50), 5, 0.01, 10, floor=np.nan), r"^floor must be"),
    (lambda: P.loss_plateaus(np.ones(5), 5, 0.01, 1), r"^curve must be longer than window \(5 epochs\), got 5 epochs$"),
    (lambda: P.loss_plateaus(np.array([1.0, np.nan] * 10), 2, 0.01, 1), r"^curve must be finite"),
]


@pytest.mark.parametrize("i", range(len(_P_BAD)))
def test_error_messages_name_the_argument(i):
    call, pattern = _P_BAD[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


@pytest.mark.parametrize("k, n, z", [(13, 20, 1.96), (0, 10, 1.96), (10, 10, 1.0), (1, 3, 2.5), (7, 50, 1.64)])
def test_wilson_interval_solves_its_quadratic(k, n, z):
    # the Wilson interval is {p : (k/n - p)^2 <= z^2 p (1 - p) / n}: the roots of a quadratic in p
    ph = k / n
    roots = np.sort(np.roots([1 + z * z / n, -(2 * ph + z * z / n), ph * ph]).real)
    lo, hi = P.wilson_interval(k, n, z=z)
    assert lo == pytest.approx(max(0.0, roots[0]), abs=1e-12) and hi == pytest.approx(min(1.0, roots[1]), abs=1e-12)


def test_architecture_candidates_and_best_entry_by_hand():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    linear = torch.tensor([False, True, False])
    assert P.architecture(mask, linear, 4) == (4, 2, 1, 1)  # the linear middle layer merges away
    assert P.architecture(mask, torch.tensor([False, False, False]), 3) == (3, 2, 2, 1, 1)
    assert P.removal_candidates(mask, linear) == [("node", 0, 0), ("node", 0, 1), ("layer", 0), ("layer", 2)]
    assert P.removal_candidates(mask[:1], torch.tensor([False])) == [("node", 0, 0), ("node", 0, 1)]
    assert P.architecture_size((3, 4, 2, 1)) == (6, 2) and P.architecture_size([2, 1]) == (0, 0)
    assert P.parity_bound_ok((4, 4, 1)) and not P.parity_bound_ok((5, 4, 1)) and P.parity_bound_ok((1, 1))
    cell = {"per_parent": [(3, 1, 10), (2, 1, 10), (2, 4, 10), (4, 9, 5)]}
    assert P.best_cell_entry(cell) == (2, 4, 10) and P.best_cell_entry({"per_parent": []}) is None


# ---- issue 16: values against brute force and second computations ------------------------------------

def test_select_and_assign_copy_nets_with_their_masks():
    m = P.MaskedMLP(3, 4, 2, 3, 0.1, seed=5)
    m.mask[0, 1, 2] = 0.0
    m.linear[1, 0] = True
    X = torch.tensor(B.cube(3), dtype=torch.float32)
    out = m.forward(X)
    sub = m.select([2, 0])
    assert sub.B == 2 and torch.allclose(sub.forward(X), out[:, [2, 0]])
    assert sub.mask[0, 1].tolist() == [0.0, 1.0] and sub.linear[1].tolist() == [False, True]
    assert sub.alpha == m.alpha and sub.widths == m.widths
    other = P.MaskedMLP(3, 4, 2, 1, 0.1, seed=9)
    other.mask[1, 3, 0] = 0.0
    m.assign([1], other)
    out2 = m.forward(X)
    assert torch.allclose(out2[:, 1], other.forward(X)[:, 0]) and torch.equal(out2[:, [0, 2]], out[:, [0, 2]])
    assert m.mask[1, 3].tolist() == [1.0, 0.0, 1.0] and m.linear[:, 1].tolist() == [False, False]
    m.assign([0, 2], m.select([1, 1]))
    assert torch.allclose(m.forward(X), out2[:, [1, 1, 1]])


def test_masked_forward_by_hand():
    # one hidden layer of width 2, leaky slope 0.5: a masked unit contributes nothing, a linear layer has slope 1
    m = P.MaskedMLP(1, 2, 1, 3, 0.5, seed=0)
    with torch.no_grad():
        m.params[0].copy_(torch.tensor([1.0, -1.0]).reshape(m.params[0].shape[:-1] + (1,)).expand_as(m.params[0]))
        m.params[1].zero_()
        m.params[2].copy_(torch.tensor([2.0, 3.0]).reshape(m.params[2].shape[:-1] + (1,)).expand_as(m.params[2]))
        m.params[3].fill_(0.25)
    m.mask[0, 1, 1] = 0.0
    m.linear[0, 2] = True
    X = torch.tensor([[2.0], [-1.0]])
    # net 0: 2 relu_.5(x) + 3 relu_.5(-x); net 1: 2 relu_.5(x); net 2: 2x - 3x; all + 0.25
    want = torch.tensor([[2 * 2 + 3 * (-1.0), 2 * 2, 4 - 6], [2 * (-0.5) + 3 * 1, 2 * (-0.5), -2 + 3]]) + 0.25
    assert torch.allclose(m.forward(X), want)
    assert m.forward(torch.empty(0, 1)).shape == (0, 3)


def test_fit_masked_reports_its_final_outputs():
    m = P.MaskedMLP(2, 4, 1, 3, 0.1, seed=0)
    X, y = torch.tensor(B.cube(2), dtype=torch.float32), torch.tensor(B.parity_table(2), dtype=torch.float32)
    solved, loss = P.fit_masked(m, X, y, epochs=150, lr=0.05)
    out = m.forward(X)
    Y = y[:, None].expand_as(out)
    want = (torch.clamp(out, min=0) - out * Y + torch.log1p(torch.exp(-out.abs()))).mean(0)  # BCE with logits
    assert torch.allclose(loss, want, atol=1e-6) and loss.shape == (3,)
    assert solved.tolist() == ((out > 0) == (Y > 0.5)).all(0).tolist()


def test_cnn_masks_act_like_zeroed_weights():
    net = P.PrunableCNN(1, 8, channels=3, classes=4, seed=1)
    x = torch.randn(2, 1, 8, 8)
    ref = P.PrunableCNN(1, 8, channels=3, classes=4, seed=1)
    with torch.no_grad():
        net.channel_mask0[1] = 0.0
        ref.convs[0].weight[1] = 0.0
        ref.convs[0].bias[1] = 0.0
        net.weight_masks[3][2, 1] = 0.0
        ref.fc.weight[2, 1] = 0.0
        net.weight_masks[1][0, 2, 1, 1] = 0.0
        ref.convs[1].weight[0, 2, 1, 1] = 0.0
    assert torch.allclose(net(x), ref(x), atol=1e-6)
    net.channel_mask0[1] = 1.0
    assert not torch.allclose(net(x), ref(x), atol=1e-6)
    assert net(torch.empty(0, 1, 8, 8)).shape == (0, 4)


def test_cnn_weight_masks_move_and_cast_with_the_net():
    """The masks follow ``.to`` / ``.double()`` / ``.cpu()`` like buffers (issue 22: a net trained on CUDA
    must not multiply a CUDA weight by a CPU mask); the meta device stands in for CUDA here."""
    net = P.PrunableCNN(1, 8, channels=3, classes=4, seed=1)
    with torch.no_grad():
        net.weight_masks[3][2, 1] = 0.0
    x = torch.randn(2, 1, 8, 8, dtype=torch.float64)
    assert net.double() is net
    assert [m.dtype for m in net.weight_masks] == [torch.float64] * 4
    assert net(x).dtype == torch.float64 and net.weight_masks[3][2, 1] == 0 and net.weight_masks[3].sum() == 4 * 3 - 1
    net.to("meta")
    assert [m.device.type for m in net.weight_masks] == ["meta"] * 4
    assert [m.shape for m in net.weight_masks] == [p.shape for p in net.prunable()]
    net.to_empty(device="cpu")
    assert [m.device.type for m in net.weight_masks] == ["cpu"] * 4


def test_remaining_weights_by_counting():
    net = P.PrunableCNN(2, 16, channels=3, classes=5, seed=0)  # side 2: fc has 3 * 2 * 2 inputs
    total = 2 * 3 * 9 + 3 * 3 * 9 * 2 + 12 * 5
    assert net.total_weights() == total and net.remaining_weights() == total
    net.channel_mask2[0] = 0.0  # its kernel (3 x 9) and its 4 fc inputs for 5 classes
    assert net.remaining_weights() == total - 27 - 4 * 5
    net.channel_mask0[2] = 0.0  # its kernel (2 x 9) and its inputs to conv 1 (3 x 9)
    assert net.remaining_weights() == total - 27 - 20 - 18 - 27
    net.weight_masks[3][0, 0] = 0.0  # an fc weight of the dead channel 0: already not counted
    net.weight_masks[3][0, 4] = 0.0  # an fc weight of live channel 1
    net.weight_masks[0][0, 0, 0, 0] = 0.0
    assert net.remaining_weights() == total - 27 - 20 - 18 - 27 - 2
    assert net.channels() == (2, 3, 2)


def test_magnitude_prune_removes_the_smallest_weights():
    net = P.PrunableCNN(1, 8, channels=2, classes=3, seed=4)
    allw = torch.cat([p.detach().abs().flatten() for p in net.prunable()])
    for frac in (0.0, 0.3, 0.75):
        pruned = P.magnitude_prune(net, frac)
        keep = torch.cat([m.flatten() for m in pruned.weight_masks]).bool()
        k = round(frac * allw.numel())
        order = torch.argsort(allw)
        assert not keep[order[:k]].any() and keep[order[k:]].all(), frac
        assert all((m == 1).all() for m in net.weight_masks)  # the input model is untouched
    # pruning again counts the already-pruned (zero) weights among the smallest
    twice = P.magnitude_prune(P.magnitude_prune(net, 0.5), 0.75)
    assert sum(int(m.sum()) for m in twice.weight_masks) == allw.numel() - round(0.75 * allw.numel())
    x = torch.randn(3, 1, 8, 8)
    assert torch.allclose(P.magnitude_prune(net, 0.0)(x), net(x))


def test_evaluate_and_train_cnn_pass_their_settings(monkeypatch):
    net = P.PrunableCNN(1, 8, channels=2, classes=3, seed=0)
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(7, 1, 8, 8, generator=g), torch.tensor([0, 1, 2, 0, 1, 2, 0])
    with torch.no_grad():
        out = net(X)
    loss, acc = P.evaluate(net, X, y, batch_size=3)
    assert loss == pytest.approx(torch.nn.functional.cross_entropy(out, y).item(), rel=1e-6)
    assert acc == pytest.approx((out.argmax(1) == y).double().mean().item())
    assert P.evaluate(net, X, y) == pytest.approx((loss, acc))
    seen = {}

    def fake(model, X_, y_, loss_fn, epochs, batch_size, lr, **kw):
        seen.update(kw, epochs=epochs, batch_size=batch_size, lr=lr, loss_fn=loss_fn)
        return type("H", (), {"loss": [1.5]})()

    monkeypatch.setattr(P, "train_minibatch", fake)
    assert P.train_cnn(net, X, y, 3) == [1.5]
    assert (seen["epochs"], seen["batch_size"], seen["lr"], seen["momentum"], seen["weight_decay"], seen["seed"],
            seen["optimizer"]) == (3, 40, 0.001, 0.9, 1e-4, 0, "sgd")
    assert seen["loss_fn"] is torch.nn.functional.cross_entropy
    P.train_cnn(net, X, y, 2, batch_size=5, lr=0.1, momentum=0.5, weight_decay=0.0, seed=7)
    assert (seen["batch_size"], seen["lr"], seen["momentum"], seen["weight_decay"], seen["seed"]) == (5, 0.1, 0.5, 0.0, 7)


def test_channel_prune_removes_the_channel_of_least_loss():
    gen = torch.Generator().manual_seed(1)
    X, y = torch.rand(30, 1, 8, 8, generator=gen), torch.randint(0, 3, (30,), generator=gen)
    Xt, yt = torch.rand(20, 1, 8, 8, generator=gen), torch.randint(0, 3, (20,), generator=gen)
    net = P.PrunableCNN(1, 8, channels=3, classes=3, seed=2)
    hist = P.channel_prune(net, X, y, Xt, yt, finetune_epochs=0, progress=False)
    assert len(hist) == 1 + 6 and hist[-1]["channels"] == (1, 1, 1)
    # step by step, by brute force: try every live channel, keep the removal of least training loss
    work = P.PrunableCNN(1, 8, channels=3, classes=3, seed=2)
    for h in hist[1:]:
        best = None
        for l, cm in enumerate(work.channel_masks()):
            for c in range(3):
                if cm[c] == 0 or cm.sum() <= 1:
                    continue
                trial = __import__("copy").deepcopy(work)
                trial.channel_masks()[l][c] = 0.0
                loss = torch.nn.functional.cross_entropy(trial(X), y).item()
                best = min(best, (loss, l, c)) if best else (loss, l, c)
        work.channel_masks()[best[1]][best[2]] = 0.0
        assert h["channels"] == work.channels()
        assert h["fraction"] == pytest.approx(work.remaining_weights() / work.total_weights())
        assert h["accuracy"] == pytest.approx((work(Xt).argmax(1) == yt).double().mean().item())
    assert hist[0] == {"channels": (3, 3, 3), "fraction": 1.0,
                       "accuracy": pytest.approx((net(Xt).argmax(1) == yt).double().mean().item())}
    # stop as soon as the test accuracy falls below min_accuracy (the record that fell is kept)
    short = P.channel_prune(net, X, y, Xt, yt, finetune_epochs=0, min_accuracy=hist[1]["accuracy"] + 1e-9,
                            progress=False)
    assert len(short) == 2 and short[1] == hist[1]
    # scoring on a subset: the first removal follows the subset's loss
    sub = P.channel_prune(net, X, y, Xt, yt, finetune_epochs=0, score_samples=10, seed=3, progress=False)
    pick = torch.randperm(30, generator=torch.Generator().manual_seed(3))[:10]
    losses = {}
    for l in range(3):
        for c in range(3):
            trial = __import__("copy").deepcopy(net)
            trial.channel_masks()[l][c] = 0.0
            losses[(l, c)] = torch.nn.functional.cross_entropy(trial(X[pick]), y[pick]).item()
    l, c = min(losses, key=losses.get)
    want = [3, 3, 3]
    want[l] -= 1
    assert sub[1]["channels"] == tuple(want)
    assert P.channel_prune(net, X, y, Xt, yt, finetune_epochs=0, score_samples=30, progress=False) == hist


def test_channel_prune_fine_tunes_with_its_seed(monkeypatch):
    calls = []
    monkeypatch.setattr(P, "train_cnn", lambda model, X, y, epochs, seed=0, **kw: calls.append((epochs, seed, kw)))
    gen = torch.Generator().manual_seed(0)
    X, y = torch.rand(12, 1, 8, 8, generator=gen), torch.randint(0, 3, (12,), generator=gen)
    P.channel_prune(P.PrunableCNN(1, 8, channels=2, classes=3, seed=0), X, y, X, y, finetune_epochs=2, seed=5,
                    progress=False, lr=0.3)
    assert calls == [(2, 6, {"lr": 0.3}), (2, 7, {"lr": 0.3}), (2, 8, {"lr": 0.3})]


def test_as_images_with_a_given_size():
    X = torch.arange(2 * 36, dtype=torch.float32).reshape(2, 36)
    img = P.as_images(X, image_size=6)
    assert img.shape == (2, 1, 6, 6) and torch.equal(img[1, 0, 2], X[1, 12:18])
    assert torch.equal(P.as_images(torch.zeros(2, 5, 5)), torch.zeros(2, 1, 5, 5))


def test_deep_prune_without_solved_parents_and_step_limit():
    # 1 epoch cannot solve 3-parity: no run is started
    res = P.deep_prune(3, 4, 2, trainings=2, prunings=2, epochs=1, finetune_epochs=1, seed=0, progress=False)
    assert res["runs"] == [] and res["trained_solved"].tolist() == [False, False]
    res = P.deep_prune(2, 4, 2, trainings=1, prunings=3, epochs=400, finetune_epochs=20, seed=0, max_steps=1,
                       progress=False)
    assert len(res["runs"]) == 3 * int(res["trained_solved"].sum())
    for run in res["runs"]:
        assert run["steps"] <= 1 and run["training"] == 0
        assert P.architecture_size(run["architecture"]) in ((7, 2), (4, 1))  # one node or one layer removed


# ---- documented defaults (a call without the argument equals the call with the documented value) --------

def test_defaults():
    assert P.wilson_interval(13, 20) == P.wilson_interval(13, 20, z=1.96) != P.wilson_interval(13, 20, z=2.0)
    cell = P.wide_pruning_cell(2, 3, parents=2, epochs=200, finetune_epochs=50)
    assert cell == P.wide_pruning_cell(2, 3, parents=2, epochs=200, finetune_epochs=50, alpha=0.1, lr=0.025, seed=0,
                                       progress=False)
    table = P.wide_pruning_table([2], [2], 1, 200, 50, seed_of=lambda w, n: 3, progress=False)
    assert table == P.wide_pruning_table([2], [2], 1, 200, 50, seed_of=lambda w, n: 3, alpha=0.1, lr=0.025,
                                         progress=False)
    X, y = torch.tensor(B.cube(2), dtype=torch.float32), torch.tensor(B.parity_table(2), dtype=torch.float32)
    fits = []
    for kwargs in ({}, {"lr": 0.025}):
        m = P.MaskedMLP(2, 3, 1, 2, 0.1, seed=0)
        fits.append((P.fit_masked(m, X, y, 20, **kwargs), m.theta.clone()))
    assert torch.equal(fits[0][1], fits[1][1]) and torch.equal(fits[0][0][1], fits[1][0][1])
    a = P.deep_prune(2, 3, 1, trainings=1, prunings=1, epochs=300, finetune_epochs=10, progress=False)
    b = P.deep_prune(2, 3, 1, trainings=1, prunings=1, epochs=300, finetune_epochs=10, alpha=0.1, lr=0.025, seed=0,
                     progress=False, max_steps=None)
    assert a["trained_solved"].tolist() == b["trained_solved"].tolist()
    assert [(r["steps"], r["architecture"], r["max_deviation"]) for r in a["runs"]] == \
        [(r["steps"], r["architecture"], r["max_deviation"]) for r in b["runs"]]
    net = P.PrunableCNN(1, 8)
    assert net.fc.out_features == 10 and net.convs[0].out_channels == 32 and net.channels() == (32, 32, 32)
    assert torch.equal(net.fc.weight, P.PrunableCNN(1, 8, channels=32, classes=10, seed=0).fc.weight)


def test_channel_prune_defaults():
    gen = torch.Generator().manual_seed(2)
    X, y = torch.rand(16, 1, 8, 8, generator=gen), torch.randint(0, 3, (16,), generator=gen)
    net = P.PrunableCNN(1, 8, channels=2, classes=3, seed=0)
    hist = P.channel_prune(net, X, y, X, y, progress=False)
    assert hist == P.channel_prune(net, X, y, X, y, finetune_epochs=1, min_accuracy=0.0, score_samples=None, seed=0,
                                   progress=False)
    assert len(hist) == 4  # min_accuracy 0 never stops early


def test_channel_prune_fine_tunes_one_epoch_by_default(monkeypatch):
    calls = []
    monkeypatch.setattr(P, "train_cnn", lambda model, X, y, epochs, seed=0, **kw: calls.append((epochs, seed, kw)))
    gen = torch.Generator().manual_seed(0)
    X, y = torch.rand(12, 1, 8, 8, generator=gen), torch.randint(0, 3, (12,), generator=gen)
    P.channel_prune(P.PrunableCNN(1, 8, channels=2, classes=3, seed=0), X, y, X, y, progress=False)
    assert calls == [(1, 1, {}), (1, 2, {}), (1, 3, {})]  # seed 0: step s fine-tunes with seed 1 + s


# ---- the deep-pruning heuristic step by step; gradients against autograd ------------------------------

def test_deep_prune_draws_removals_in_proportion_to_inverse_loss(monkeypatch):
    # fine-tuning is spied on and the random draw replaced by "take the likeliest": each step must offer,
    # per run, exactly the removals that kept 100% accuracy, with probabilities (1/loss) / sum(1/loss), and
    # keep the drawn one (its fine-tuned weights included)
    fits, draws = [], []
    real_fit = P.fit_masked

    def spy_fit(model, X, y, epochs, lr=0.025, desc="fine-tune", progress=False):
        ok, loss = real_fit(model, X, y, epochs, lr, desc, progress)
        fits.append((model.mask.clone(), model.linear.clone(), ok.clone(), loss.clone(), model.select(range(model.B))))
        return ok, loss

    class Likeliest:
        def choice(self, k, p):
            draws.append((k, np.asarray(p)))
            return int(np.argmax(p))

    monkeypatch.setattr(P, "fit_masked", spy_fit)
    monkeypatch.setattr(P.np.random, "default_rng", lambda seed: Likeliest())
    res = P.deep_prune(2, 3, 2, trainings=1, prunings=2, epochs=400, finetune_epochs=30, seed=0, progress=False,
                       max_steps=2)
    assert res["trained_solved"].tolist() == [True] and len(res["runs"]) == 2
    assert len(fits) == 3 and len(draws) == 4  # training, then 2 steps x 2 runs
    for step in (1, 2):
        mask, linear, ok, loss, trial = fits[step]
        half = trial.B // 2  # both runs are copies of one parent and stay equal: the same candidates
        assert trial.B == 2 * half
        for r in range(2):
            part = slice(r * half, (r + 1) * half)
            k, p = draws[2 * (step - 1) + r]
            inv = 1 / np.maximum(loss[part][ok[part]].numpy(), 1e-12)
            assert k == int(ok[part].sum()) and np.allclose(p, inv / inv.sum())
            chosen = np.flatnonzero(ok[part].numpy())[int(np.argmax(p))] + r * half
            if step == 2:  # the final nets are the chosen trials, weights included
                assert res["runs"][r]["architecture"] == P.architecture(mask[..., chosen], linear[:, chosen], 2)
                X = torch.tensor(B.cube(2), dtype=torch.float32)
                assert torch.allclose(torch.tensor(B.network_output(res["runs"][r]["network"], B.cube(2), 0.1)).float(),
                                      trial.forward(X)[:, chosen], atol=1e-5)
    assert all(run["steps"] == 2 and run["training"] == 0 for run in res["runs"])


def test_deep_prune_runs_stop_when_no_removal_keeps_accuracy(monkeypatch):
    # fine-tuning that never succeeds: every run stops at its first step, having taken none
    monkeypatch.setattr(P, "fit_masked", lambda model, X, y, epochs, lr=0.025, desc="", progress=False:
                        (torch.ones(model.B, dtype=torch.bool) if epochs == 50 else torch.zeros(model.B, dtype=torch.bool),
                         torch.ones(model.B)))
    res = P.deep_prune(2, 3, 2, trainings=2, prunings=2, epochs=50, finetune_epochs=5, progress=False)
    assert [r["steps"] for r in res["runs"]] == [0] * 4 and [r["architecture"] for r in res["runs"]] == [(2, 3, 3, 1)] * 4
    assert [r["training"] for r in res["runs"]] == [0, 0, 1, 1]


def test_deep_prune_offers_each_removal_applied_to_a_copy_of_its_run(monkeypatch):
    # the first step's trials, spied on: trial j is its run's net with exactly candidate j applied (a node's
    # mask entry set to 0, or a layer made linear), all runs' candidates in run order
    trials = []

    def spy_fit(model, X, y, epochs, lr=0.025, desc="fine-tune", progress=False):
        if epochs == 5:
            trials.append((model.mask.clone(), model.linear.clone()))
        return torch.ones(model.B, dtype=torch.bool) if epochs == 50 else torch.zeros(model.B, dtype=torch.bool), \
            torch.ones(model.B)

    monkeypatch.setattr(P, "fit_masked", spy_fit)
    P.deep_prune(2, 3, 2, trainings=2, prunings=1, epochs=50, finetune_epochs=5, progress=False)
    assert len(trials) == 1  # no removal keeps accuracy: every run stops after its first step
    mask, linear = trials[0]
    expected = [c for _ in range(2) for c in P.removal_candidates(torch.ones(2, 3), torch.zeros(2, dtype=torch.bool))]
    assert mask.shape[-1] == len(expected) == 2 * (6 + 2)
    for j, c in enumerate(expected):
        want_mask, want_linear = torch.ones(2, 3), torch.zeros(2, dtype=torch.bool)
        if c[0] == "node":
            want_mask[c[1], c[2]] = 0.0
        else:
            want_linear[c[1]] = True
        assert torch.equal(mask[..., j], want_mask) and torch.equal(linear[:, j], want_linear), c


def test_deep_prune_steps_each_run_on_its_own_candidates(monkeypatch):
    # run 0's removals never keep accuracy, run 1's always do (loss = the trial's position + 1): run 0 stops
    # at once, run 1 still takes a step in that same step and in every later one, drawing among its own
    # candidates only (the recorder always takes the first: a node of layer 0)
    draws, trials, per_run = [], [], []
    real_candidates = P.removal_candidates

    def counting_candidates(mask, linear):
        out = real_candidates(mask, linear)
        per_run.append(len(out))
        return out

    def fake_fit(model, X, y, epochs, lr=0.025, desc="fine-tune", progress=False):
        if epochs == 50:
            return torch.ones(model.B, dtype=torch.bool), torch.ones(model.B)
        trials.append(model.B)
        ok = torch.zeros(model.B, dtype=torch.bool)
        ok[model.B - per_run[-1]:] = True  # trials are laid out run by run; the last run asked for is run 1
        return ok, torch.arange(1, model.B + 1, dtype=torch.float32)

    class Recorder:
        def choice(self, k, p):
            draws.append((k, np.asarray(p)))
            return 0

    monkeypatch.setattr(P, "fit_masked", fake_fit)
    monkeypatch.setattr(P, "removal_candidates", counting_candidates)
    monkeypatch.setattr(P.np.random, "default_rng", lambda seed: Recorder())
    res = P.deep_prune(2, 3, 2, trainings=2, prunings=1, epochs=50, finetune_epochs=5, progress=False, max_steps=3)
    assert [run["steps"] for run in res["runs"]] == [0, 3]
    # 2 x (6 nodes + 2 layers); then run 1 alone: 5 nodes + 2 layers, then 3 nodes (layer 0 keeps one) + 2 layers
    assert trials == [16, 7, 5] and len(draws) == 3
    k, p = draws[0]
    inv = 1 / np.arange(9, 17, dtype=float)  # run 1's trials are 9..16 of step 1
    assert k == 8 and np.allclose(p, inv / inv.sum())
    assert res["runs"][1]["architecture"] == (2, 3, 1)  # two nodes of layer 0 gone, then layer 0 itself


def test_deep_prune_takes_several_steps_and_accepts_n_from_1_to_12():
    res = P.deep_prune(2, 4, 2, trainings=1, prunings=2, epochs=400, finetune_epochs=20, seed=0, max_steps=2,
                       progress=False)
    for run in res["runs"]:  # two removals from (8 nodes, 2 layers): two nodes, or a node and a layer
        assert run["steps"] == 2 and P.architecture_size(run["architecture"]) in ((6, 2), (3, 1), (4, 1))
    one = P.deep_prune(1, 2, 1, trainings=1, prunings=1, epochs=200, finetune_epochs=10, seed=0, progress=False)
    assert one["trained_solved"].shape == (1,)
    big = P.deep_prune(12, 1, 1, trainings=1, prunings=1, epochs=1, finetune_epochs=1, progress=False)
    assert big["trained_solved"].tolist() == [False] and big["runs"] == []


def test_masked_backward_matches_autograd():
    X = torch.tensor(np.r_[B.cube(2), [[0.5, 0.25], [0.0, 0.0]]], dtype=torch.float64)
    m = P.MaskedMLP(2, 3, 3, 3, 0.2, seed=4)
    sizes = [p.numel() for p in m.params]
    shapes = [p.shape for p in m.params]
    m.theta = m.theta.double()
    m.grad = m.grad.double()
    m.params = [v.view(s) for v, s in zip(m.theta.split(sizes), shapes)]
    m.mask[1, 2, 0] = 0.0
    m.linear[0, 1] = True
    m.linear[2, 2] = True
    m.params[1].zero_()  # zero first-layer biases: the input (0, 0) puts those units exactly at z = 0
    theta = m.theta.clone().requires_grad_(True)
    m.params = [v.view(s) for v, s in zip(theta.split(sizes), shapes)]
    dout = torch.randn(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    want = torch.autograd.grad((m.forward(X) * dout).sum(), theta)[0]
    m.params = [v.view(s) for v, s in zip(m.theta.split(sizes), shapes)]
    m.grads = [v.view(s) for v, s in zip(m.grad.split(sizes), shapes)]
    _, zs = m.forward(X, keep=True)
    m.backward(X, zs, dout)
    assert torch.allclose(m.grad, want, atol=1e-12)
    assert len(zs) == 4 and zs[0].shape == (6, 3, 3) and zs[-1].shape == (6, 1, 3)


def test_masked_forward_slope_threshold_and_table_cells():
    # a pre-activation of 0.5 is positive: slope 1, not alpha
    m = P.MaskedMLP(1, 1, 1, 1, 0.5, seed=0)
    with torch.no_grad():
        m.params[0].fill_(1.0)
        m.params[1].zero_()
        m.params[2].fill_(1.0)
        m.params[3].zero_()
    assert m.forward(torch.tensor([[0.5], [-0.5], [3.0]])).tolist() == [[0.5], [-0.25], [3.0]]
    assert sorted(dict(P.PrunableCNN(1, 8, channels=2).named_buffers())) == ["channel_mask0", "channel_mask1", "channel_mask2"]
    # the table runs each cell (n <= width + 1) as wide_pruning_cell would, with its own seed
    table = P.wide_pruning_table([2], [1, 2, 3], 2, 150, 30, seed_of=lambda w, n: 10 * w + n, alpha=0.2, lr=0.05,
                                 progress=False)
    assert list(table) == [(2, 1), (2, 2), (2, 3)]
    for (w, n), cell in table.items():
        assert cell == P.wide_pruning_cell(n, w, 2, 150, 30, alpha=0.2, lr=0.05, seed=10 * w + n)


def test_channel_prune_ties_go_to_the_first_channel():
    # a constant classifier (fc weights 0): every removal gives the same loss, so the first live channel of
    # the first layer that can lose one is removed each time
    gen = torch.Generator().manual_seed(0)
    X, y = torch.rand(8, 1, 8, 8, generator=gen), torch.randint(0, 3, (8,), generator=gen)
    net = P.PrunableCNN(1, 8, channels=3, classes=3, seed=0)
    with torch.no_grad():
        net.fc.weight.zero_()
    hist = P.channel_prune(net, X, y, X, y, finetune_epochs=0, progress=False)
    assert [h["channels"] for h in hist] == [(3, 3, 3), (2, 3, 3), (1, 3, 3), (1, 2, 3), (1, 1, 3), (1, 1, 2), (1, 1, 1)]
    work = P.PrunableCNN(1, 8, channels=3, classes=3, seed=0)
    work.channel_mask0[:2] = 0.0
    work.channel_mask1[:2] = 0.0
    work.channel_mask2[:2] = 0.0
    assert hist[-1]["fraction"] == pytest.approx(work.remaining_weights() / work.total_weights())


# (these were appended to _P_BAD after test_error_messages_name_the_argument had read its length, so they never
# ran: a list of their own, with its own test)
_M = lambda: P.MaskedMLP(2, 3, 1, 2, 0.1, 0)  # noqa: E731
_P_BAD_MORE = [
    (lambda: P.deep_prune(2, 3, 1, 1.5, 1, 2, 1), r"^trainings must be a positive int, got 1.5$"),
    (lambda: P.deep_prune(2, 3, 1, 1, 1, 2, 2.0), r"^finetune_epochs must be a positive int, got 2.0$"),
    (lambda: P.as_images(torch.zeros(2, 64, dtype=torch.long)), r"^X must be a floating-point tensor"),
    (lambda: P.wide_pruning_table([2], [1], 1, 2, 1, lambda w, n: 0, lr="x"), r"^lr must be"),
    # integer inputs are named by the function called, not by torch or a later check (mutation survivors, issue 37)
    (lambda: _M().forward(torch.zeros(4, 2, dtype=torch.long)), r"^X must be a floating-point tensor"),
    (lambda: _cnn()(torch.zeros(2, 1, 8, 8, dtype=torch.long)), r"^x must be a floating-point tensor"),
    (lambda: P.train_cnn(_cnn(), _img.long(), _lab, 1), r"^X must be a floating-point tensor"),
    (lambda: P.channel_prune(_cnn(), _img, _lab, _img.long(), _lab), r"^X_test must be a floating-point tensor"),
    # fit_masked checks X before y and epochs: a bad X is named even when a later argument is bad too
    (lambda: P.fit_masked(_M(), _Xb.long(), torch.zeros(4), 0), r"^X must be a floating-point tensor"),
    (lambda: P.fit_masked(_M(), torch.tensor(1.0), torch.zeros(4), 2), r"^X must be an array of shape \(n, 2\)"),
    # the messages end by describing the value refused
    (lambda: P.fit_masked(_M(), _Xb, torch.zeros(3), 2),
     r"^y must hold one label per row of X \(4\), got tensor of shape \(3,\) and dtype torch.float32$"),
    (lambda: P.architecture(torch.full((2, 3), 2.0), torch.zeros(2, dtype=torch.bool), 2),
     r"^mask must hold only 0 and 1, got tensor of shape \(2, 3\) and dtype torch.float32$"),
    (lambda: _cnn()(torch.zeros(2, 1, 8, 7)), r"got tensor of shape \(2, 1, 8, 7\) and dtype torch.float32$"),
    (lambda: P.train_cnn(_cnn(), _img, _lab[:2], 1),
     r"^y must hold one label per image of X \(3\), got tensor of shape \(2,\) and dtype torch.int64$"),
    # labels of the wrong rank; an empty linear beside a mask of depth 2 is a depth mismatch, named as one
    (lambda: P.train_cnn(_cnn(), _img, _lab[:, None], 1), r"^y must be an array with 1 dimensions"),
    (lambda: P.architecture(torch.ones(2, 3), torch.zeros(0, dtype=torch.bool), 2),
     r"^mask \(depth, w\) and linear \(depth,\) must agree in depth .*, got \(2,\) and \(0,\)"),
    (lambda: P.channel_prune(_cnn(), _img, _lab, _img, _lab, score_samples=0), r"^score_samples must be an int >= 1, got 0$"),
]


@pytest.mark.parametrize("i", range(len(_P_BAD_MORE)))
def test_more_error_messages_name_the_argument(i):
    call, pattern = _P_BAD_MORE[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


def test_magnitude_prune_returns_an_independent_copy_and_prunes_single_weights():
    net = P.PrunableCNN(1, 8, channels=2, classes=3, seed=4)
    n = net.total_weights()
    one = P.magnitude_prune(net, 1 / n)  # round(fraction * n) = 1: exactly the smallest weight goes
    assert sum(int(m.sum()) for m in one.weight_masks) == n - 1
    before = net.fc.weight.detach().clone()
    P.train_cnn(one, torch.rand(4, 1, 8, 8), torch.tensor([0, 1, 2, 0]), 1, lr=0.5)
    assert torch.equal(net.fc.weight, before) and not torch.equal(one.fc.weight, before)


def test_wide_pruning_cell_accepts_twelve_bit_parity():
    cell = P.wide_pruning_cell(12, 1, parents=1, epochs=1, finetune_epochs=1)
    assert cell["parents"] == 1 and cell["solved_parents"] == len(cell["per_parent"]) == 0


# ---- device (issue 22) ----------------------------------------------------------------------------

def test_deep_prune_gives_identical_numbers_for_every_cpu_choice(monkeypatch):
    """Issue 22: REPRO_DEVICE=cpu and auto, and an explicit CPU device, give the same deep pruning runs on
    a CPU-only machine."""
    runs = []
    for env, arg in (("auto", None), ("cpu", None), ("auto", "cpu"), ("cpu", torch.device("cpu"))):
        monkeypatch.setenv("REPRO_DEVICE", env)
        res = P.deep_prune(2, 3, 2, trainings=2, prunings=2, epochs=300, finetune_epochs=10, seed=0,
                           progress=False, device=arg)
        runs.append(res)
    assert sum(run["steps"] for run in runs[0]["runs"]) > 0  # the runs compared did prune
    for res in runs[1:]:
        assert np.array_equal(res["trained_solved"], runs[0]["trained_solved"])
        for mine, first in zip(res["runs"], runs[0]["runs"]):
            assert {k: v for k, v in mine.items() if k != "network"} == {k: v for k, v in first.items() if k != "network"}
            assert all(np.array_equal(W, W0) and np.array_equal(b, b0)
                       for (W, b), (W0, b0) in zip(mine["network"], first["network"]))


def test_deep_prune_trains_on_the_resolved_device_and_reports_on_the_cpu(monkeypatch):
    """deep_prune resolves ``device`` once (None: REPRO_DEVICE) and builds its nets on the answer;
    ``cpu:0`` stands in for a second device (a distinct torch.device that a CPU-only machine has).
    The last nets it builds are the CPU copy its report reads."""
    calls = []

    def spy(device=None, name="device"):
        calls.append(device)
        return torch.device("cpu", 0) if device is None else torch.device(device)

    monkeypatch.setattr(P, "as_device", spy)
    monkeypatch.setattr(B, "as_device", spy)
    P.deep_prune(2, 3, 1, trainings=1, prunings=1, epochs=300, finetune_epochs=5, seed=0, progress=False)
    assert calls[:2] == [None, torch.device("cpu", 0)] and calls[-1] == "cpu"


def test_masked_nets_keep_their_device(monkeypatch):
    """Masks and layer flags live with the weights; select and assign stay on the model's device unless
    asked (the meta device stands in for a GPU: a CPU tensor mixed with it fails)."""
    with pytest.raises(ValueError, match="^device must be one of"):
        P.MaskedMLP(2, 3, 2, 4, 0.1, 0, device="gpu")
    monkeypatch.setattr(B, "as_device", lambda device=None, name="device": torch.device(device))  # admit meta
    m = P.MaskedMLP(2, 3, 2, 4, 0.1, 0, device="meta")
    assert {t.device.type for t in (m.theta, m.grad, m.mask, m.linear)} == {"meta"}
    sub = m.select([3, 1])
    assert {t.device.type for t in (sub.theta, sub.mask, sub.linear)} == {"meta"} and sub.B == 2
    m.assign([0, 2], sub)
    cpu = P.MaskedMLP(2, 3, 2, 4, 0.1, 0)
    cpu.mask[1, 2, 3] = 0.0
    moved = cpu.select([3, 0], device="meta")
    assert {t.device.type for t in (moved.theta, moved.mask, moved.linear)} == {"meta"}
    back = cpu.select([3, 0])
    assert back.device.type == "cpu" and back.mask[1, 2].tolist() == [0.0, 1.0]


def test_bad_device_is_refused_before_any_training(monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("trained before the device was checked")

    monkeypatch.setattr(P, "fit_masked", no_training)
    with pytest.raises(ValueError, match="^device must be one of"):
        P.deep_prune(2, 3, 1, 1, 1, 2, 1, progress=False, device="gpu")


def _numbered_images_and_evaluate_spy(monkeypatch):
    """12 one-channel 8x8 images, image i filled with the value i, their labels, and the list that
    ``P.evaluate`` (spied on) appends each scored batch's image numbers to."""
    seen, real = [], P.evaluate

    def spy(model, X, y, *args, **kwargs):
        seen.append(X[:, 0, 0, 0].tolist())
        return real(model, X, y, *args, **kwargs)

    monkeypatch.setattr(P, "evaluate", spy)
    X = torch.arange(12.0)[:, None, None, None].expand(12, 1, 8, 8).contiguous()
    return X, torch.arange(12) % 3, seen


def test_channel_prune_scores_on_a_subset_drawn_from_its_own_seed(monkeypatch):
    """``score_samples`` picks its subset with ``seed``, whatever the global RNG's state: the same seed
    scores on the same images, another seed on others."""
    X, y, seen = _numbered_images_and_evaluate_spy(monkeypatch)
    subsets = []
    for global_seed, seed in ((1, 0), (2, 0), (1, 5)):
        torch.manual_seed(global_seed)
        seen.clear()
        P.channel_prune(P.PrunableCNN(1, 8, channels=2, classes=3, seed=0), X, y, X[:3], y[:3], finetune_epochs=0,
                        score_samples=5, seed=seed, progress=False)
        scored = [s for s in seen if len(s) == 5]
        assert scored and all(s == scored[0] for s in scored)
        subsets.append(scored[0])
    assert subsets[0] == subsets[1] != subsets[2] and len(set(subsets[0])) == 5



def _staircase(levels, lengths, ramp=20):
    # a loss curve that sits at each level for the given number of epochs, with linear ramps between
    parts = []
    for i, (level, length) in enumerate(zip(levels, lengths)):
        if i:
            parts.append(np.linspace(levels[i - 1], level, ramp + 2)[1:-1])
        parts.append(np.full(length, float(level)))
    return np.concatenate(parts)


def test_loss_plateaus_finds_the_steps_of_a_staircase():
    # Fig. 3.10's story by hand: start high, two saddles, then the solution (loss 0.001, below the floor)
    curve = _staircase([0.9, 0.6, 0.35, 0.001], [50, 300, 400, 250])
    found = P.loss_plateaus(curve, window=10, rel_tol=0.02, min_length=100, floor=0.05)
    assert [round(level, 6) for _, _, level in found] == [0.6, 0.35]
    # the flat epochs of the 0.6 step: t with |L(t + 10) - L(t)| < 0.02 L(t) = 0.012, from its first epoch (70) to
    # epoch 360, whose window reaches the first ramp value 0.6 - 0.25 / 21 (a change of 0.0119); the 0.35 step
    # ends at 779, ten epochs before its steeper ramp (a first change of 0.349 / 21 > 0.007)
    assert found[0][:2] == (70, 360) and found[1][:2] == (390, 779)
    # the 50 epochs at 0.9 are too short a plateau for min_length 100, long enough for 40
    assert len(P.loss_plateaus(curve, window=10, rel_tol=0.02, min_length=40, floor=0.05)) == 3
    # a floor above 0.6 leaves nothing; one between the two saddles keeps the upper one only
    assert P.loss_plateaus(curve, 10, 0.02, 100, floor=0.95) == []
    assert [round(lv, 6) for _, _, lv in P.loss_plateaus(curve, 10, 0.02, 100, floor=0.5)] == [0.6]


def test_loss_plateaus_skip_start_drops_the_starting_level_not_the_saddles():
    # the review's curve: the loss sits at its starting level 0.69 for 400 epochs, then on saddles at 0.45
    # (500 epochs) and 0.30 (600 epochs), then decays to zero. Counted with the start, three plateaus; the
    # thesis' "two saddle points" are the last two, which skip_start keeps.
    curve = np.concatenate([np.full(400, 0.69), np.full(500, 0.45), np.full(600, 0.30),
                            0.30 * 0.98 ** np.arange(1, 501)])
    every = P.loss_plateaus(curve, window=20, rel_tol=0.02, min_length=100)
    assert [(a, lv) for a, _, lv in every] == [(0, 0.69), (400, 0.45), (900, 0.30)]
    saddles = P.loss_plateaus(curve, window=20, rel_tol=0.02, min_length=100, skip_start=True)
    assert saddles == every[1:] and [lv for _, _, lv in saddles] == [0.45, 0.30]
    # a curve that falls from its first epoch has no starting plateau: skip_start keeps both saddles
    falling = np.concatenate([np.linspace(0.9, 0.46, 50), curve[400:]])
    assert [lv for _, _, lv in P.loss_plateaus(falling, 20, 0.02, 100, skip_start=True)] == [0.45, 0.30]
    # a flat start merged with a first saddle of the same level is one plateau from epoch 0: dropped whole
    assert P.loss_plateaus(np.full(300, 0.5), 4, 0.02, 100, skip_start=True) == []
    with pytest.raises(ValueError, match=r"^skip_start must be a bool, got 1$"):
        P.loss_plateaus(curve, 20, 0.02, 100, skip_start=1)


def test_loss_plateaus_ignores_the_approach_to_zero_and_merges_a_wobble():
    # after solving, the loss shrinks by a steady fraction: 1% per epoch is 9.6% per window of 10, not flat at
    # rel_tol 0.05, however small the absolute change; at rel_tol 0.1 it is
    tail = 0.5 * 0.99 ** np.arange(1000)
    assert P.loss_plateaus(tail, window=10, rel_tol=0.05, min_length=50, floor=0.0) == []
    assert len(P.loss_plateaus(tail, window=10, rel_tol=0.1, min_length=50, floor=0.0)) == 1
    # one saddle at 0.5 with a short blip in the middle is one plateau, spanning both halves
    wobble = np.full(600, 0.5)
    wobble[300:306] = 0.55
    found = P.loss_plateaus(wobble, window=4, rel_tol=0.02, min_length=100)
    assert len(found) == 1 and found[0][0] == 0 and found[0][1] == 595 and found[0][2] == 0.5
    # two saddles farther apart than rel_tol stay two
    two = np.concatenate([np.full(300, 0.5), np.full(300, 0.3)])
    assert [lv for _, _, lv in P.loss_plateaus(two, 4, 0.02, 100)] == [0.5, 0.3]
    # the default floor (0.05) drops a converged tail
    assert P.loss_plateaus(np.full(300, 0.01), 4, 0.02, 100) == []
    assert len(P.loss_plateaus(np.full(300, 0.01), 4, 0.02, 100, floor=0.0)) == 1


def test_loss_plateaus_boundaries_are_strict():
    # exact binary numbers, so that each comparison sits on its boundary
    halving = 2.0 ** -np.arange(60.0)  # falls by exactly half of itself every epoch
    assert P.loss_plateaus(halving, window=1, rel_tol=0.5, min_length=10, floor=0.0) == []  # 0.5 < 0.5: not flat
    assert P.loss_plateaus(halving, window=1, rel_tol=0.75, min_length=10, floor=0.0) == [(0, 58, 2.0 ** -29)]  # the median of 59 values
    at_floor = np.full(300, 0.25)
    assert P.loss_plateaus(at_floor, 4, 0.01, 100, floor=0.25) == []  # flat, but not above the floor
    assert len(P.loss_plateaus(at_floor, 4, 0.01, 100, floor=0.125)) == 1
    # two saddles exactly rel_tol (of the larger) apart stay two: the merge needs a difference below it
    two = np.concatenate([np.full(300, 0.5), np.full(300, 0.25)])
    assert P.loss_plateaus(two, window=4, rel_tol=0.5, min_length=100) == [(0, 295, 0.5), (300, 595, 0.25)]
    assert len(P.loss_plateaus(two, window=4, rel_tol=0.75, min_length=100)) == 1  # the step itself is flat here
    # 100 epochs exactly make a plateau (min_length is inclusive)
    assert len(P.loss_plateaus(np.full(104, 0.5), window=4, rel_tol=0.01, min_length=100)) == 1
    assert P.loss_plateaus(np.full(104, 0.5), window=4, rel_tol=0.01, min_length=101) == []


def test_mask_and_linear_of_another_depth_name_both():
    """architecture / removal_candidates: ``linear`` has one flag per layer of ``mask``; a mismatch names both."""
    mask, linear = torch.ones(2, 3, dtype=torch.bool), torch.zeros(2, dtype=torch.bool)
    assert P.architecture(mask, linear, 3) == (3, 3, 3, 1)
    for m, lin in [(torch.ones(3, 3, dtype=torch.bool), linear), (mask, torch.zeros(3, dtype=torch.bool))]:
        for fn in (lambda a, b: P.architecture(a, b, 3), P.removal_candidates):
            with pytest.raises(ValueError, match=r"^mask \(depth, w\) and linear \(depth,\) must agree in depth"):
                fn(m, lin)
    with pytest.raises(ValueError, match=r"^linear must be an array with 1 dimensions"):
        P.removal_candidates(mask, torch.zeros(2, 1, dtype=torch.bool))


def test_cnn_forward_names_x_on_images_of_another_size():
    cnn = P.PrunableCNN(1, 8, channels=4, classes=3, seed=0)
    assert cnn(torch.zeros(2, 1, 8, 8)).shape == (2, 3) and cnn(torch.zeros(2, 1, 9, 15)).shape == (2, 3)  # 9 // 8 = 1
    with pytest.raises(ValueError, match=r"^x must hold images of the model's size \(H // 8 = W // 8 = 1\)"):
        cnn(torch.zeros(2, 1, 8, 7))


# --- bugs of the kinds the mutation record left alive (issue 37) -------------------------------------------

def test_prunable_cnn_forward_equals_its_layers_called_as_modules_biases_included():
    """With every mask 1 the forward is the plain CNN: torch's own modules (which add their biases), ReLU and
    2x2 max-pooling, then the linear layer; a forward that dropped a bias would differ (biases set non-zero)."""
    torch.manual_seed(0)
    net = P.PrunableCNN(1, 16, channels=4, classes=3, seed=0)
    with torch.no_grad():
        for layer in (*net.convs, net.fc):
            layer.bias.uniform_(0.5, 1.0)
    x = torch.rand(5, 1, 16, 16)
    h = x
    for conv in net.convs:
        h = torch.nn.functional.max_pool2d(torch.relu(conv(h)), 2)
    assert torch.allclose(net(x), net.fc(h.flatten(1)), atol=1e-6)


def test_prunable_cnn_refuses_images_of_another_width():
    net = P.PrunableCNN(1, 16, channels=4, classes=3, seed=0)
    for shape in [(2, 1, 16, 24), (2, 1, 24, 16)]:  # either side wrong
        with pytest.raises(ValueError, match=r"^x must hold images of the model's size"):
            net(torch.rand(*shape))


def test_wilson_interval_at_the_ends():
    """Wilson's bounds at 0 and n successes (the clip to [0, 1] only guards rounding: analytically they lie inside)."""
    lo, hi = P.wilson_interval(10, 10)
    assert hi == 1.0 and 0.6 < lo < 0.75  # Wilson's lower bound for 10 of 10 at z = 1.96: 0.722
    lo, hi = P.wilson_interval(0, 10)
    assert lo == 0.0 and 0.25 < hi < 0.3


# --- the survivors of the mutation record of 8d97eb9 (issue 37), each against a value worked out by hand ----------

def test_wilson_upper_bound_is_exactly_one_at_all_successes():
    # at k = n the upper bound is (1 + z^2/2n + z^2/2n) / (1 + z^2/n) = 1 exactly; 5 of 5 at z = 1.96 rounds to
    # 1 + 2^-52 before the clip, and other (n, z) likewise: the bound must still be a probability
    for n, z in [(5, 1.96), (12, 1.0), (18, 1.64)]:
        assert P.wilson_interval(n, n, z=z)[1] == 1.0


def test_loss_plateaus_merged_level_is_the_median_of_the_whole_span():
    # saddles at 0.5 (epochs 0-199) and 0.505 (206-403) with a blip at 0.6 between: merged (0.505 - 0.5 < 0.02 x
    # 0.505) into one plateau from 0 to 399, the last epoch whose window (4) stays on the step. Its 400 epochs hold
    # 200 at 0.5, 6 at 0.6 and 194 at 0.505, so the median is the mean of the 200th and 201st: (0.5 + 0.505) / 2
    curve = np.concatenate([np.full(200, 0.5), np.full(6, 0.6), np.full(198, 0.505), np.full(50, 0.01)])
    assert P.loss_plateaus(curve, window=4, rel_tol=0.02, min_length=100) == [(0, 399, 0.5025)]


def test_wide_pruning_cell_fine_tunes_for_finetune_epochs_and_stops_at_the_first_width(monkeypatch):
    """The thesis' stopping rule: the width-k sub-networks of a parent are fine-tuned (for ``finetune_epochs``,
    no loss curves kept) only while none narrower succeeded; the parents train for ``epochs``."""
    calls, real = [], B._fit

    def spy(model, X, Y, epochs, lr, desc, progress=True, compact_every=None, record=False, best_accuracy=None):
        calls.append((model.B, epochs, record))
        return real(model, X, Y, epochs, lr, desc, progress, compact_every, record, best_accuracy)

    monkeypatch.setattr(B, "_fit", spy)
    cell = P.wide_pruning_cell(2, 4, parents=3, epochs=300, finetune_epochs=60, seed=1)
    smallest = [p for p, _, _ in cell["per_parent"]]
    assert smallest and min(smallest) < 4  # some parent prunes, so the rule has something to stop
    expected = [(3, 300, False)] + [(sum(p >= k for p in smallest) * math.comb(4, k), 60, False)
                                    for k in range(1, max(smallest) + 1)]
    assert [(b, e, bool(r)) for b, e, r in calls] == expected


def test_wide_pruning_table_uses_the_thesis_learning_rate_by_default(monkeypatch):
    seen = []
    monkeypatch.setattr(P, "wide_pruning_cell", lambda n, w, parents, epochs, ft, alpha, lr, seed: seen.append(lr) or {})
    P.wide_pruning_table([2], [1, 2], 1, 10, 5, seed_of=lambda w, n: 0, progress=False)
    assert seen == [0.025, 0.025]  # Adam's lr of thesis §3.4.4


def _one_unit_net(v: float, c: float) -> P.MaskedMLP:
    """One net 1 -> 1 -> 1 with z = x (w = 1, b = 0) and logit v * leaky(z) + c."""
    m = P.MaskedMLP(1, 1, 1, 1, 0.1, seed=0)
    for p, value in zip(m.params, (1.0, 0.0, v, c)):
        p.fill_(value)
    return m


def test_fit_masked_counts_a_zero_logit_as_class_0_and_label_one_half_as_class_0():
    """fit_masked's "solved" is logit > 0 <=> label > 0.5 (lib.boolean._fit's rule). An lr of 1e-12 moves no weight
    of size >= 0.1 in float32, so the logits are those worked out by hand: at x = -1, 1 they are
    v * (-0.1) + c and v + c."""
    X = torch.tensor([[-1.0], [1.0]])
    # logits -1.1 and 0 (exactly): both class 0
    ok, loss = P.fit_masked(_one_unit_net(1.0, -1.0), X, torch.tensor([0.0, 0.0]), epochs=1, lr=1e-12)
    assert ok.tolist() == [True]
    assert loss.item() == pytest.approx((math.log1p(math.exp(-1.1)) + math.log(2.0)) / 2, rel=1e-6)
    # logits -0.6 and 0.5: labels 0 and 1 are right (0.5 > 0)
    assert P.fit_masked(_one_unit_net(1.0, -0.5), X, torch.tensor([0.0, 1.0]), 1, lr=1e-12)[0].tolist() == [True]
    # a label of exactly 0.5 is class 0: a negative logit gets it right
    assert P.fit_masked(_one_unit_net(1.0, -2.0), X, torch.tensor([0.5, 0.0]), 1, lr=1e-12)[0].tolist() == [True]


def test_deep_prune_step_without_candidates_tries_nothing_and_says_so():
    m = P.MaskedMLP(2, 2, 1, 1, 0.1, seed=0)
    m.mask[0, 1, 0] = 0.0  # one layer, one live unit: no removal is allowed
    before = m.theta.clone()
    active, runs = np.array([True]), [{"steps": 0}]
    X, y = torch.tensor(B.cube(2), dtype=torch.float32), torch.tensor(B.parity_table(2), dtype=torch.float32)[None]
    assert P._deep_prune_step(m, active, runs, X, y, 5, 0.025, np.random.default_rng(0)) is False
    assert runs == [{"steps": 0}] and active.tolist() == [True] and torch.equal(m.theta, before)


def test_deep_prune_step_fine_tunes_with_the_given_lr(monkeypatch):
    seen, real = [], P.fit_masked

    def spy(model, X, y, epochs, lr=0.025, *args, **kwargs):
        seen.append((model.B, epochs, lr))
        return real(model, X, y, epochs, lr, *args, **kwargs)

    monkeypatch.setattr(P, "fit_masked", spy)
    m = P.MaskedMLP(2, 2, 1, 1, 0.1, seed=0)  # one layer of two units: two node removals
    X, y = torch.tensor(B.cube(2), dtype=torch.float32), torch.tensor(B.parity_table(2), dtype=torch.float32)[None]
    P._deep_prune_step(m, np.array([True]), [{"steps": 0}], X, y, 3, 0.5, np.random.default_rng(0))
    assert seen == [(2, 3, 0.5)]


def test_deep_prune_reads_a_zero_logit_as_class_0(monkeypatch):
    """run["solves"]: every corner's logit > 0 exactly where the parity is 1 (a logit of 0 is class 0, as in
    training). Pruned nets that output exactly 1 on odd corners and 0 on even ones solve it."""
    monkeypatch.setattr(B, "network_output", lambda net, X, alpha: np.where(B.parity_table(2) == 1, 1.0, 0.0))
    res = P.deep_prune(2, 3, 1, trainings=2, prunings=1, epochs=300, finetune_epochs=5, seed=0, progress=False)
    assert res["runs"] and all(run["solves"] for run in res["runs"])
    monkeypatch.setattr(B, "network_output", lambda net, X, alpha: np.where(B.parity_table(2) == 1, 0.0, -1.0))
    res = P.deep_prune(2, 3, 1, trainings=2, prunings=1, epochs=300, finetune_epochs=5, seed=0, progress=False)
    assert res["runs"] and not any(run["solves"] for run in res["runs"])


def test_prunable_cnn_apply_passes_torchs_arguments_on():
    """_apply(fn, recurse=False) (Module.to_empty's call) touches this module's own tensors only, as torch's does;
    the weight masks (this module's) follow fn."""
    for call in (lambda net, fn: net._apply(fn, recurse=False), lambda net, fn: net._apply(fn, False)):
        net = P.PrunableCNN(1, 8, channels=2, classes=3, seed=0)
        w = net.convs[0].weight.detach().clone()
        call(net, lambda t: t + 1)
        assert torch.equal(net.convs[0].weight, w)  # a child's parameter: untouched
        assert torch.equal(net.channel_mask0, torch.full((2,), 2.0)) and bool((net.weight_masks[0] == 2.0).all())


def test_train_cnn_takes_a_model_without_fc():
    """A model without ``fc`` (no class count to check labels against) trains: one epoch's mean loss."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 3))
    losses = P.train_cnn(model, torch.rand(6, 1, 8, 8), torch.tensor([0, 1, 2, 0, 1, 2]), epochs=1, batch_size=6)
    assert len(losses) == 1 and 0.0 < losses[0] < 5.0


def test_channel_prune_scores_on_every_image_in_order_when_score_samples_covers_them(monkeypatch):
    X, y, seen = _numbered_images_and_evaluate_spy(monkeypatch)
    P.channel_prune(P.PrunableCNN(1, 8, channels=2, classes=3, seed=0), X, y, X[:3], y[:3], finetune_epochs=0,
                    score_samples=12, progress=False)
    scored = [s for s in seen if len(s) == 12]
    assert scored and all(s == [float(i) for i in range(12)] for s in scored)


def test_channel_prune_stops_at_the_first_record_below_min_accuracy(monkeypatch):
    """Test accuracies scripted per record: 1.0 (unpruned), 0.6 (= min_accuracy: kept going), 0.9, then 0.5:
    the history ends with the 0.5 record, four records of the seven a full run makes (3 + 3 + 3 channels)."""
    accuracies, real = iter([1.0, 0.6, 0.9, 0.5, 0.9, 0.9, 0.9]), P.evaluate
    gen = torch.Generator().manual_seed(0)
    X, y = torch.rand(6, 1, 8, 8, generator=gen), torch.tensor([0, 1, 2, 0, 1, 2])
    X_test = X.clone()

    def scripted(model, Xe, ye, *args, **kwargs):
        return (0.0, next(accuracies)) if Xe is X_test else real(model, Xe, ye, *args, **kwargs)

    monkeypatch.setattr(P, "evaluate", scripted)
    hist = P.channel_prune(P.PrunableCNN(1, 8, channels=3, classes=3, seed=0), X, y, X_test, y, finetune_epochs=0,
                           min_accuracy=0.6, progress=False)
    assert [h["accuracy"] for h in hist] == [1.0, 0.6, 0.9, 0.5]


def test_deep_prune_with_its_progress_bar_gives_the_same_runs():
    """progress=True (the default) only shows a bar: the same runs as without it, pruning steps included."""
    kw = dict(trainings=2, prunings=2, epochs=300, finetune_epochs=10, seed=0)
    shown, hidden = P.deep_prune(2, 3, 2, **kw), P.deep_prune(2, 3, 2, progress=False, **kw)
    assert sum(run["steps"] for run in hidden["runs"]) > 0
    assert [{k: v for k, v in run.items() if k != "network"} for run in shown["runs"]] == \
        [{k: v for k, v in run.items() if k != "network"} for run in hidden["runs"]]
