"""Unit tests of lib.multiexit (Chapter 5: distillation-based training of multi-exit networks)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lib import multiexit as me


def _logits(M=4, n=6, K=5, seed=0, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, K, generator=g, requires_grad=requires_grad) for _ in range(M)]


# ---- distillation_loss (eq. 6.4) -----------------------------------------------------------------

def test_distillation_loss_matches_formula():
    z = _logits()
    tau = 2.5
    teacher = F.softmax(z[-1] / tau, -1)
    expected = sum(-(teacher * F.log_softmax(z[m] / tau, -1)).sum(-1).mean() for m in range(3)) * tau ** 2 / 4
    assert torch.allclose(me.distillation_loss(z, tau), expected, atol=1e-6)


def test_distillation_loss_later_teachers():
    z = _logits(M=3)
    soft = lambda t, s: -(F.softmax(z[t], -1) * F.log_softmax(z[s], -1)).sum(-1).mean()  # noqa: E731
    expected = ((soft(1, 0) + soft(2, 0)) / 2 + soft(2, 1)) / 3
    assert torch.allclose(me.distillation_loss(z, 1.0, teachers="later"), expected, atol=1e-6)


def test_distillation_at_tau_one_with_teacher_equal_student_is_entropy():
    z0 = _logits(M=1)[0]
    z = [z0, z0.clone()]
    p = F.softmax(z0, -1)
    entropy = -(p * F.log_softmax(z0, -1)).sum(-1).mean()
    assert abs(me.distillation_loss(z, 1.0).item() - entropy.item() / 2) < 1e-6  # 1/M normaliser, M = 2


def test_distillation_gives_zero_gradient_to_last_head():
    torch.manual_seed(0)
    model = me.MultiExitCNN(seeds=[0])
    x = torch.randn(8, 1, 8, 8)
    logits = model(x)
    me.distillation_loss([z[0] for z in logits], 3.0).backward()
    zero = lambda p: p.grad is None or torch.count_nonzero(p.grad) == 0  # noqa: E731
    assert zero(model.head_w[-1]) and zero(model.head_b[-1])      # the teacher's head: exactly nothing
    assert zero(model.blocks[-1][0].weight)                        # nor the block only the teacher uses
    assert not zero(model.head_w[0])                               # the student head learns
    assert not zero(model.blocks[1][0].weight)                     # ... and so does the trunk below it


def test_distillation_loss_per_model_taus():
    z = [torch.stack([a, b]) for a, b in zip(_logits(seed=1), _logits(seed=2))]
    out = me.distillation_loss(z, torch.tensor([1.0, 3.0]))
    assert out.shape == (2,)
    assert torch.allclose(out[1], me.distillation_loss([t[1] for t in z], 3.0))


def test_distillation_loss_bad_input():
    z = _logits()
    for bad in ([], [z[0], z[1][:, :3]], [z[0], torch.full_like(z[1], float("nan"))], [z[0].long()], z[0]):
        with pytest.raises(ValueError):
            me.distillation_loss(bad, 1.0)
    for tau in (0.0, -1.0, float("nan"), torch.ones(3)):
        with pytest.raises(ValueError):
            me.distillation_loss(z, tau)
    with pytest.raises(ValueError):
        me.distillation_loss(z, 1.0, teachers="first")


def test_distillation_loss_weights_give_the_weighted_mean_over_points():
    z = _logits(n=4)
    w = torch.tensor([0.1, 0.2, 0.3, 0.4])
    per_point = torch.stack([me.distillation_loss([t[i:i + 1] for t in z], 2.0) for i in range(4)])
    assert torch.allclose(me.distillation_loss(z, 2.0, weights=w), (w * per_point).sum())
    assert torch.allclose(me.distillation_loss(z, 2.0, weights=torch.full((4,), 0.25)), me.distillation_loss(z, 2.0))
    for bad in (torch.ones(4), torch.tensor([0.5, 0.5, 0.5, -0.5]), torch.full((3,), 1 / 3), [0.25] * 4):
        with pytest.raises(ValueError):
            me.distillation_loss(z, 2.0, weights=bad)


# ---- objective and annealing ---------------------------------------------------------------------

def test_objective_ew_and_semi_supervised():
    z = _logits(n=4)
    y = torch.tensor([0, 1, 2, 3])
    ew = me.multiexit_objective(z, y, 0)
    assert torch.allclose(ew, sum(F.cross_entropy(t, y) for t in z) / 4)
    y_semi = torch.tensor([0, 1, -100, -100])
    d = me.multiexit_objective(z, y_semi, 1, 2.0)
    ce = sum(F.cross_entropy(t[:2], y_semi[:2]) for t in z) / 4
    assert torch.allclose(d, ce + me.distillation_loss(z, 2.0))
    w = torch.tensor([0.05, 0.05, 0.45, 0.45])  # eq. (6.6) with 90% unlabelled points
    dw = me.multiexit_objective(z, y_semi, 1, 2.0, dist_weights=w)
    assert torch.allclose(dw, ce + me.distillation_loss(z, 2.0, weights=w)) and not torch.allclose(dw, d)
    with pytest.raises(ValueError):
        me.multiexit_objective(z, torch.tensor([0, 1, 2, 7]), 0)
    with pytest.raises(ValueError):
        me.multiexit_objective(z, torch.full((4,), -100), 0)
    with pytest.raises(ValueError):
        me.multiexit_objective(z, y.float(), 0)


def test_annealer_is_monotone_and_stops_below_mu():
    ann = me.TemperatureAnnealer(mu=0.5, mult=1.05)
    z = torch.tensor([[6.0, 0.0, 0.0, 0.0]]).repeat(3, 1)   # confident teacher
    taus = [ann.step(z).item() for _ in range(200)]
    assert all(b >= a for a, b in zip(taus, taus[1:])) and taus[-1] > 2
    h = ann.history()
    assert h["conf"][-1, 0] > 0.9 and h["adj_conf"][-1, 0] <= 0.5 + 0.05
    frozen = me.TemperatureAnnealer(mu=0.5, n_models=2, active=[True, False], tau0=[1.0, 4.0])
    frozen.step(z[None].repeat(2, 1, 1))
    assert frozen.tau.tolist() == pytest.approx([1.05, 4.0])
    for kwargs in ({"mu": 1.5}, {"mult": 0.9}, {"tau0": 0.0}):
        with pytest.raises(ValueError):
            me.TemperatureAnnealer(**kwargs)
    with pytest.raises(ValueError):
        ann.step(torch.randn(2, 3, 4))


# ---- network and data ----------------------------------------------------------------------------

def test_grouped_models_equal_single_models():
    x = torch.randn(5, 1, 8, 8)
    both = me.MultiExitCNN(seeds=[3, 7]).eval()
    single = me.MultiExitCNN(seeds=[7]).eval()
    out_both, out_single = both(x), single(x)
    assert len(out_both) == 4 and out_both[0].shape == (2, 5, 10)
    for a, b in zip(out_both, out_single):
        assert torch.allclose(a[1], b[0], atol=1e-5)
    budget = both.forward_until(x, 2, heads="last")
    assert len(budget) == 1 and torch.allclose(budget[0], out_both[1])
    for bad in (torch.randn(5, 3, 8, 8), torch.randn(3, 5, 1, 8, 8), torch.full((2, 1, 8, 8), float("nan"))):
        with pytest.raises(ValueError):
            both(bad)
    with pytest.raises(ValueError):
        both.forward_until(x, 5)
    with pytest.raises(ValueError):
        me.MultiExitCNN(widths=(8, 8), strides=(1,))


def test_digits_protocol():
    d = me.digits_protocol(15, 5, seed=0)
    assert d["train"][0].shape == (100, 1, 8, 8) and d["val"][0].shape == (50, 1, 8, 8)
    assert d["unl"].shape == (850, 1, 8, 8) and d["test"][0].shape == (797, 1, 8, 8)
    assert abs(d["train"][0].mean().item()) < 1e-5
    assert torch.equal(d["test"][1], me.digits_protocol(30, 5, seed=1)["test"][1])  # fixed test set
    assert np.bincount(d["train"][1].numpy()).tolist() == [10] * 10
    with pytest.raises(ValueError):
        me.digits_protocol(5, 5, seed=0)
    with pytest.raises(ValueError):
        me.digits_protocol(200, 5, seed=0, pool_per_class=200)


# ---- budget and anytime modes --------------------------------------------------------------------

def test_budget_mode_accuracy():
    val = np.array([[50.0, 70.0, 70.0, 60.0], [80.0, 60.0, 90.0, 90.0]])
    test = np.array([[51.0, 72.0, 99.0, 10.0], [81.0, 62.0, 88.0, 95.0]])
    out = me.budget_mode_accuracy(val, test)
    assert out.tolist() == [[51.0, 72.0, 72.0, 72.0], [81.0, 81.0, 88.0, 88.0]]  # ties: earliest exit
    with pytest.raises(ValueError):
        me.budget_mode_accuracy(val, test[:, :3])
    with pytest.raises(ValueError):
        me.budget_mode_accuracy([np.nan, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        me.budget_mode_accuracy([], [])


def test_anytime_mode_accuracy():
    # exit 1 right on point 0, exit 2 right on point 1 and very confident on point 0 (wrong)
    probs = np.array([[[0.6, 0.4], [0.6, 0.4]],
                      [[0.1, 0.9], [0.1, 0.9]]])
    y = np.array([0, 1])
    assert me.per_exit_accuracy(probs, y).tolist() == [50.0, 50.0]
    assert me.anytime_mode_accuracy(probs, y).tolist() == [50.0, 50.0]
    assert me.anytime_mode_accuracy(probs, y, topk=2).tolist() == [100.0, 100.0]
    probs3 = np.array([[[0.9, 0.1], [0.6, 0.4]], [[0.4, 0.6], [0.2, 0.8]]])
    assert me.anytime_mode_accuracy(probs3, y).tolist() == [50.0, 100.0]
    with pytest.raises(ValueError):
        me.anytime_mode_accuracy(probs, np.array([0, 2]))
    with pytest.raises(ValueError):
        me.anytime_mode_accuracy(probs, np.array([0.0, 1.0]))
    with pytest.raises(ValueError):
        me.anytime_mode_accuracy(probs, y, topk=3)
    with pytest.raises(ValueError):
        me.per_exit_accuracy(probs[0, 0], y)


def test_mean_ci95():
    m, ci = me.mean_ci95(np.array([[1.0, 2.0], [3.0, 2.0]]))
    assert m.tolist() == [2.0, 2.0] and ci[1] == 0 and ci[0] == pytest.approx(1.96 * np.sqrt(2) / np.sqrt(2))
    with pytest.raises(ValueError):
        me.mean_ci95(np.array([1.0]))


def test_time_inference():
    model = me.MultiExitCNN(seeds=[0])
    x = torch.randn(1, 1, 8, 8)
    mean, std, median = me.time_inference(model, x, "anytime", 4, n_runs=5)
    assert mean > 0 and median > 0 and std >= 0
    with pytest.raises(ValueError):
        me.time_inference(model, x, "fast", 1)


@pytest.mark.parametrize("mode,heads", [("budget", "last"), ("anytime", None)])
def test_time_inference_drops_the_warm_up_and_summarises_each_call(monkeypatch, mode, heads):
    # A fake clock: call i takes durations[i] seconds; the first (warm-up) must not count. The model's
    # forward_until is spied on: budget mode asks for exit k only, anytime mode for exits 1..k.
    durations = [100.0, 1.0, 2.0, 3.0, 4.0, 10.0]
    ticks = iter(np.cumsum([[50.0, d] for d in durations]).tolist())
    monkeypatch.setattr(me.time, "perf_counter", lambda: next(ticks))
    model = me.MultiExitCNN(seeds=[0])
    calls = []

    def forward_until(x, k, heads=None):
        calls.append((k, heads))
        return [torch.zeros(1, 2, 10)] * (1 if heads == "last" else k)

    monkeypatch.setattr(model, "forward_until", forward_until)
    mean, std, median = me.time_inference(model, torch.zeros(2, 1, 8, 8), mode, 3, n_runs=5)
    assert (mean, std, median) == pytest.approx((4.0, np.std([1, 2, 3, 4, 10]), 3.0))
    assert calls == [(3, heads)] * 6


# ---- training ------------------------------------------------------------------------------------

def test_training_runs_and_learns_quick_config():
    cfg = me.CONFIGS.quick
    d = me.digits_protocol(cfg.n_per_class, cfg.n_val_per_class, seed=0)
    from dataclasses import replace
    short = replace(cfg, epochs=15)
    model = me.MultiExitCNN(seeds=[0, 0])
    X, y = d["train"][0][None].repeat(2, 1, 1, 1, 1), d["train"][1][None].repeat(2, 1)
    ann = me.train_multiexit(model, X, y, [False, True], short, X_unl=d["unl"][None].repeat(2, 1, 1, 1, 1),
                             progress=False)
    acc = me.per_exit_accuracy(me.exit_probs(model, d["test"][0]), d["test"][1].numpy())
    assert acc.shape == (2, 4) and acc.min() > 20 and acc[:, -1].min() > 70  # chance: 10%
    tau = ann.history()["tau"]
    assert tau.shape == (30, 2) and (np.diff(tau, axis=0) >= 0).all()
    own = me.exit_probs(model, torch.stack([d["test"][0], 2 * d["test"][0]]))  # each model its own images
    assert np.allclose(own[0], me.exit_probs(model, d["test"][0])[0], atol=1e-6)
    assert np.allclose(own[1], me.exit_probs(model, 2 * d["test"][0])[1], atol=1e-6)
    with pytest.raises(ValueError):
        me.exit_probs(model, d["test"][0][0])
    with pytest.raises(ValueError):
        me.train_multiexit(model, X[0], y[0], [False, True], short)
    with pytest.raises(ValueError):
        me.train_multiexit(model, X, y, [False, True], short, const_tau=[1.0])


def test_paper_scale_one_step():
    """One SGD step of the paper-scale configuration with the paper's shapes (CIFAR-100 32x32x3,
    100 classes, top-5), on synthetic data, with the semi-supervised batch."""
    from dataclasses import replace

    cfg = me.CONFIGS.paper
    assert cfg.data == "cifar100" and cfg.n_classes == 100 and cfg.topk == 5 and cfg.n_val_per_class == 50
    model = me.MultiExitCNN(cfg.in_ch, cfg.widths, cfg.strides, cfg.n_classes, seeds=[0, 0])
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2, cfg.batch_size, 3, 32, 32, generator=g)
    y = torch.randint(0, 100, (2, cfg.batch_size), generator=g)
    before = [p.detach().clone() for p in model.parameters()]
    ann = me.train_multiexit(model, X, y, [False, True], replace(cfg, epochs=1),
                             X_unl=torch.randn(2, 16, 3, 32, 32, generator=g), progress=False)
    assert len(ann.history()["tau"]) == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    probs = me.exit_probs(model, X[0, :8])
    assert probs.shape == (2, len(cfg.widths), 8, 100) and np.isfinite(probs).all()
    assert me.anytime_mode_accuracy(probs, y[0, :8].numpy(), topk=cfg.topk).shape == (2, len(cfg.widths))


def test_annealer_stops_at_the_closed_form_temperature():
    # Teacher logits (6, 0, 0, 0): the tempered confidence e^(6/tau) / (e^(6/tau) + 3) falls to mu = 0.5
    # exactly when tau >= 6 / ln 3, so Algorithm 6.1 multiplies tau by 1.05 until the first power of 1.05
    # at or above 6 / ln 3 and never again (an annealer that read the raw confidence would grow forever).
    ann = me.TemperatureAnnealer(mu=0.5, mult=1.05)
    z = torch.tensor([[6.0, 0.0, 0.0, 0.0]]).repeat(3, 1)
    taus = [ann.step(z).item() for _ in range(200)]
    k = int(np.ceil(np.log(6 / np.log(3)) / np.log(1.05)))
    assert taus[-1] == pytest.approx(1.05 ** k, rel=1e-5), f"tau ends at {taus[-1]}, expected 1.05^{k}"
    assert sum(b > a for a, b in zip(taus, taus[1:])) == k - 1 and taus[k - 1] == taus[-1]
    h = ann.history()
    raw = np.exp(6) / (np.exp(6) + 3)
    assert h["conf"][:, 0] == pytest.approx(np.full(200, raw), rel=1e-5)  # the logged raw confidence (tau = 1)
    tempered = np.exp(6 / np.array([1.0] + taus[:-1]))
    assert h["adj_conf"][:, 0] == pytest.approx(tempered / (tempered + 3), rel=1e-4)


def test_semi_supervised_training_weights_follow_eq_6_6(monkeypatch):
    # Each batch holds b labelled and b unlabelled points; eq. (6.6) averages the distillation term over all
    # N' = n + n_u points, so the labelled points share n/N' of its weight and the unlabelled ones n_u/N'.
    from dataclasses import replace
    seen = []
    orig = me.multiexit_objective

    def spy(logits, y, distill, tau=1.0, teachers="last", dist_weights=None):
        seen.append((y.clone(), None if dist_weights is None else dist_weights.clone()))
        return orig(logits, y, distill, tau, teachers, dist_weights)

    monkeypatch.setattr(me, "multiexit_objective", spy)
    g = torch.Generator().manual_seed(0)
    n, n_u = 12, 36
    X, y = torch.randn(2, n, 1, 8, 8, generator=g), torch.randint(0, 10, (2, n), generator=g)
    cfg = replace(me.CONFIGS.quick, epochs=1, batch_size=8)
    me.train_multiexit(me.MultiExitCNN(seeds=[0, 1]), X, y, [True, True], cfg,
                       X_unl=torch.randn(2, n_u, 1, 8, 8, generator=g), progress=False)
    assert len(seen) == 2  # batches of 8 and 4 labelled points
    for yb, w in seen:
        lab = yb != -100
        assert torch.allclose(w.sum(-1), torch.ones(2))
        assert torch.allclose((w * lab).sum(-1), torch.full((2,), n / (n + n_u)))
        assert torch.allclose(w[lab], w[lab][0].expand(int(lab.sum()))) and torch.allclose(w[~lab], w[~lab][0].expand(int((~lab).sum())))
    seen.clear()
    me.train_multiexit(me.MultiExitCNN(seeds=[0, 1]), X, y, [True, True], cfg, progress=False)
    assert all(w is None for _, w in seen)  # fully supervised: the plain mean over the batch


def test_training_moves_the_model_to_repro_device_and_back(monkeypatch):
    """Issue 22: train_multiexit trains on lib.scale.as_device() (REPRO_DEVICE) and hands the model back
    where it was; on this CPU REPRO_DEVICE=cpu and auto train bit-identical models."""
    from dataclasses import replace

    cfg = replace(me.CONFIGS.quick, epochs=1)
    d = me.digits_protocol(cfg.n_per_class, cfg.n_val_per_class, seed=0)
    X, y = d["train"][0][None].repeat(2, 1, 1, 1, 1), d["train"][1][None].repeat(2, 1)
    params = {}
    for env in ("auto", "cpu"):
        monkeypatch.setenv("REPRO_DEVICE", env)
        model = me.MultiExitCNN(seeds=[0, 1])
        me.train_multiexit(model, X, y, [False, True], cfg, progress=False)
        params[env] = [p.detach().clone() for p in model.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(params["auto"], params["cpu"]))
    calls = []
    monkeypatch.setattr(me, "as_device", lambda device: calls.append(device) or torch.device("cpu"))
    moves = []
    model = me.MultiExitCNN(seeds=[0, 1])
    original = model.to
    model.to = lambda *a, **kw: moves.append(torch.device(a[0])) or original(*a, **kw)
    me.train_multiexit(model, X, y, [False, True], cfg, progress=False)
    assert calls == [None] and moves == [torch.device("cpu"), torch.device("cpu")] and not model.training
