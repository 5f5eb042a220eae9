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
    (lambda: P.architecture(torch.ones(2, 3), torch.zeros(3, dtype=torch.bool), 2), r"^linear must be an array of shape \(2,\)"),
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
    (lambda: P.as_images(torch.zeros(2, 10)), r"^cannot read rows of 10 features as square images$"),
    (lambda: P.as_images(torch.zeros(2, 64), image_size=0), r"^image_size must be"),
    (lambda: P.as_images(torch.zeros(2, 64), image_size=7), r"^cannot read rows of 64 features as square images$"),
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
