import numpy as np
import pytest
import torch

from lib import scale, train
from lib.nets import BatchedMLP


def _xor():
    X = torch.tensor([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    return X, torch.tensor([-1.0, 1.0, 1.0, -1.0])


def test_full_batch_decreases_loss_and_logs():
    X, y = _xor()
    model = BatchedMLP([2, 8, 1], seeds=range(5))
    hist = train.train_full_batch(model, X, y, train.logistic_per_model, steps=300, lr=0.5, progress=False)
    losses = hist.losses()
    assert losses.shape == (len(hist.steps), 5) and hist.steps[-1] == 300
    assert np.all(losses[-1] < losses[0])
    assert hist.final_loss.shape == (5,) and hist.wall_time_s > 0


def test_batched_training_equals_separate_training():
    """Each model of a batch gets exactly its own gradient (the sum of per-model losses)."""
    X, y = _xor()
    batch = BatchedMLP([2, 4, 1], seeds=[3, 7])
    train.train_full_batch(batch, X, y, train.logistic_per_model, 50, 0.3, progress=False)
    for m, s in enumerate([3, 7]):
        single = BatchedMLP([2, 4, 1], seeds=[s])
        train.train_full_batch(single, X, y, train.logistic_per_model, 50, 0.3, progress=False)
        assert torch.allclose(single.weights[0][0], batch.weights[0][m], atol=1e-5)


def test_training_is_deterministic():
    X, y = _xor()
    runs = []
    for _ in range(2):
        model = BatchedMLP([2, 4, 1], seeds=[1, 2])
        runs.append(train.train_full_batch(model, X, y, train.mse_per_model, 30, 0.1, optimizer="adam",
                                           progress=False).losses())
    assert np.array_equal(runs[0], runs[1])


def test_scalar_loss_and_minibatch():
    torch.manual_seed(0)
    X = torch.randn(64, 3)
    y = X @ torch.tensor([1.0, -2.0, 0.5])
    model = torch.nn.Linear(3, 1)
    loss = lambda out, t: ((out.squeeze(1) - t) ** 2).mean()  # noqa: E731
    seen = []
    hist = train.train_minibatch(model, X, y, loss, epochs=20, batch_size=16, lr=0.1, seed=0, progress=False,
                                 on_epoch_end=lambda e, m: seen.append(e))
    assert seen == list(range(20)) and hist.steps == list(range(1, 21))
    assert hist.final_loss < 1e-3
    hist = train.train_full_batch(torch.nn.Linear(3, 1), X, y, loss, 200, 0.1, log_every=50, progress=False)
    assert hist.steps == [0, 50, 100, 150, 200] and isinstance(hist.final_loss, float)


def test_cross_entropy_per_model_shapes():
    out = torch.randn(3, 5, 4)
    y = torch.randint(0, 4, (5,))
    per_model = train.cross_entropy_per_model(out, y)
    assert per_model.shape == (3,)
    assert torch.allclose(per_model[1], torch.nn.functional.cross_entropy(out[1], y))


def test_targets_must_match_outputs():
    with pytest.raises(ValueError, match=r"y \(targets\) of shape"):
        train.mse_per_model(torch.zeros(2, 4, 1), torch.zeros(3))


@pytest.mark.parametrize("out_shape, y_shape", [
    ((2, 3, 2), (2, 3)),      # as many entries as one model's outputs, in another arrangement
    ((2, 3, 2), (6,)),
    ((2, 3, 1, 1), (3,)),     # an extra axis on the outputs
    ((2, 3, 1), (1, 3)),
    ((2, 3), (3, 2)),         # as many entries as all outputs, in another arrangement
])
def test_targets_of_the_right_size_in_the_wrong_shape_are_refused(out_shape, y_shape):
    for loss in (train.mse_per_model, train.logistic_per_model):
        with pytest.raises(ValueError, match=r"^y \(targets\) of shape"):
            loss(torch.zeros(out_shape), torch.ones(y_shape))


@pytest.mark.parametrize("out_shape, y_shape", [
    ((2, 3, 1), (3,)), ((2, 3, 1), (3, 1)), ((2, 3, 1), (2, 3)), ((2, 3), (3, 1)), ((2, 3, 2), (3, 2)),
    ((3, 3, 1), (3,)),
    ((1, 1, 1), (1,)), ((2, 1, 1), (1,)), ((2, 1), (1,)), ((2, 1, 1), (2, 1)),   # one point (a minibatch's last)
])
def test_targets_shared_or_per_model_up_to_a_trailing_unit_axis(out_shape, y_shape):
    """The accepted shapes give the loss computed model by model with broadcasting by hand."""
    g = torch.Generator().manual_seed(0)
    out, y = torch.randn(out_shape, generator=g), torch.randn(y_shape, generator=g)
    got = train.mse_per_model(out, y)
    for m in range(out.shape[0]):
        target = y.reshape(-1)[:out[m].numel()] if y.numel() == out[m].numel() else y.reshape(out.shape)[m].reshape(-1)
        assert torch.allclose(got[m], ((out[m].reshape(-1) - target) ** 2).mean())


@pytest.mark.parametrize("X,y,match", [
    (torch.zeros(0, 2), torch.zeros(0), "empty"),
    (torch.tensor([[float("nan"), 0.0]]), torch.zeros(1), "NaN"),
    (torch.zeros(4, 2, dtype=torch.long), torch.zeros(4), "floating"),
    (np.zeros((4, 2)), torch.zeros(4), "torch.Tensor"),
])
def test_bad_data(X, y, match):
    with pytest.raises(ValueError, match=match):
        train.train_full_batch(torch.nn.Linear(2, 1), X, y, train.mse_per_model, 1, 0.1, progress=False)


def test_bad_hyperparameters():
    X, y = _xor()
    model = torch.nn.Linear(2, 1)
    with pytest.raises(ValueError, match="steps"):
        train.train_full_batch(model, X, y, train.mse_per_model, 0, 0.1)
    with pytest.raises(ValueError, match="learning rate"):
        train.train_full_batch(model, X, y, train.mse_per_model, 1, -0.1)
    with pytest.raises(ValueError, match="optimizer"):
        train.train_full_batch(model, X, y, train.mse_per_model, 1, 0.1, optimizer="lbfgs")
    with pytest.raises(ValueError, match="same number of rows"):
        train.train_minibatch(model, X, y[:3], train.mse_per_model, 1, 2, 0.1)
    with pytest.raises(ValueError, match="empty"):
        train.History().final_loss


# ---- values against independent computations (mutation testing found these unpinned) --------------

def test_losses_match_their_closed_forms():
    rng = np.random.default_rng(0)
    out, y = rng.normal(size=(2, 5)), rng.choice([-1.0, 1.0], size=5)
    t = lambda a: torch.tensor(a)
    assert train.mse_per_model(t(out), t(y)).numpy() == pytest.approx(((out - y) ** 2).mean(1))
    assert train.mse_per_model(t(out), t(out[::-1].copy())).numpy() == pytest.approx(((out - out[::-1]) ** 2).mean(1))
    assert train.logistic_per_model(t(out), t(y)).numpy() == pytest.approx(np.log1p(np.exp(-y * out)).mean(1))
    logits, labels = rng.normal(size=(2, 4, 3)), np.array([[0, 2, 1, 1], [2, 2, 0, 1]])
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(logp, labels[..., None], -1)[..., 0].mean(1)
    assert train.cross_entropy_per_model(t(logits), t(labels)).numpy() == pytest.approx(expected)
    shared = -logp[:, np.arange(4), labels[0]].mean(1)  # labels (n,) shared by both models
    assert train.cross_entropy_per_model(t(logits), t(labels[0])).numpy() == pytest.approx(shared)


class _Linear(torch.nn.Module):
    """f(X) = X w as one model's outputs (1, n): least squares with a hand-computable gradient."""

    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(w, dtype=torch.float64))

    def forward(self, X):
        return (X @ self.w)[None]


def _numpy_gd(X, y, w, lr, steps, momentum=0.0, wd=0.0):
    """Losses before each step and after the last of heavy-ball GD on mean (Xw - y)^2 (torch's SGD rule)."""
    losses, buf = [], np.zeros_like(w)
    for _ in range(steps):
        r = X @ w - y
        losses.append(np.mean(r ** 2))
        g = 2 * X.T @ r / len(y) + wd * w
        buf = momentum * buf + g if momentum else g
        w = w - lr * buf
    losses.append(np.mean((X @ w - y) ** 2))
    return np.array(losses), w


@pytest.mark.parametrize("momentum,wd", [(0.0, 0.0), (0.5, 0.1)])
def test_full_batch_gd_follows_the_hand_computed_iterates(momentum, wd):
    rng = np.random.default_rng(1)
    X, y, w0 = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    model = _Linear(w0)
    hist = train.train_full_batch(model, torch.tensor(X), torch.tensor(y), train.mse_per_model, 7, lr=0.1,
                                  momentum=momentum, weight_decay=wd, log_every=3, progress=False)
    losses, w = _numpy_gd(X, y, w0, 0.1, 7, momentum, wd)
    assert hist.steps == [0, 3, 6, 7]
    assert hist.losses()[:, 0] == pytest.approx(losses[[0, 3, 6, 7]], rel=1e-10)
    assert model.w.detach().numpy() == pytest.approx(w, rel=1e-10)
    assert hist.final_loss == pytest.approx([losses[-1]], rel=1e-10)
    assert 0 <= hist.wall_time_s < 60


def test_default_log_every_is_a_hundredth_of_the_steps():
    X, y = torch.zeros(4, 2, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    assert train.train_full_batch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 50, 0.1, progress=False).steps \
        == list(range(51))
    assert train.train_full_batch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 250, 0.1, progress=False).steps \
        == list(range(0, 250, 2)) + [250]


def _nan_after(calls):
    """A loss that is finite for its first ``calls`` evaluations, then NaN."""
    seen = []

    def loss(out, y):
        seen.append(1)
        value = ((out - y) ** 2).mean(1)
        return value * float("nan") if len(seen) > calls else value

    return loss


def test_divergence_names_the_step_and_the_learning_rate():
    X, y = torch.ones(3, 2, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    from lib.validate import TrainingDivergedError

    with pytest.raises(TrainingDivergedError, match=r"became NaN or infinite by step 4 with lr=0\.1:"):
        train.train_full_batch(_Linear([0.0, 0.0]), X, y, _nan_after(4), 10, 0.1, log_every=2, progress=False)
    with pytest.raises(TrainingDivergedError, match=r"by step 3 with lr=0\.1:"):  # only the final evaluation is NaN
        train.train_full_batch(_Linear([0.0, 0.0]), X, y, _nan_after(3), 3, 0.1, log_every=1, progress=False)
    with pytest.raises(TrainingDivergedError, match=r"by step 3 \(epoch\) with lr=0\.1:"):  # one batch per epoch
        train.train_minibatch(_Linear([0.0, 0.0]), X, y, _nan_after(2), 5, 3, 0.1, progress=False)


def test_minibatch_epochs_follow_the_seeded_permutation_and_average_exactly():
    X = torch.ones(10, 2, dtype=torch.float64)
    y = torch.arange(10, dtype=torch.float64)  # the targets name the rows each batch holds
    seen = []

    def loss(out, target):
        seen.append((target.numpy().copy(), float(((out - target) ** 2).mean().detach())))
        return ((out - target) ** 2).mean(1)

    ends = []
    hist = train.train_minibatch(_Linear([0.0, 0.0]), X, y, loss, 2, 4, 1e-3, progress=False,
                                 on_epoch_end=lambda e, m: ends.append((e, m)))
    gen = torch.Generator().manual_seed(0)  # the default seed
    for epoch in range(2):
        order = torch.randperm(10, generator=gen).numpy()
        batches = seen[3 * epoch:3 * epoch + 3]
        assert [b[0].tolist() for b in batches] == [order[i:i + 4].tolist() for i in (0, 4, 8)]
        assert hist.loss[epoch] == pytest.approx(sum(l * len(rows) for rows, l in batches) / 10, rel=1e-12)
    assert hist.steps == [1, 2] and [e for e, _ in ends] == [0, 1] and all(isinstance(m, _Linear) for _, m in ends)
    assert 0 <= hist.wall_time_s < 60
    again = []
    train.train_minibatch(_Linear([0.0, 0.0]), X, y, lambda o, t: (again.append(t.tolist()), ((o - t) ** 2).mean(1))[1],
                          1, 4, 1e-3, seed=1, progress=False)
    assert again[0] != seen[0][0].tolist()  # another seed, another order


def test_optimizer_settings_reach_torch():
    p = [torch.nn.Parameter(torch.zeros(2))]
    group = train.make_optimizer(p).param_groups[0]
    assert (group["lr"], group["momentum"], group["weight_decay"]) == (0.1, 0.0, 0.0)
    group = train.make_optimizer(p, "sgd", 0.2, momentum=0.9, weight_decay=0.01).param_groups[0]
    assert (group["lr"], group["momentum"], group["weight_decay"]) == (0.2, 0.9, 0.01)
    opt = train.make_optimizer(p, "adam", 0.003, weight_decay=0.02)
    assert isinstance(opt, torch.optim.Adam) and (opt.param_groups[0]["lr"], opt.param_groups[0]["weight_decay"]) == (0.003, 0.02)


@pytest.mark.parametrize("call,match", [
    (lambda: train.make_optimizer([], "sgd"), r"^params must be a non-empty iterable of tensors, got "),
    (lambda: train.make_optimizer(torch.zeros(2)), r"^params must be an iterable of tensors, got tensor"),
    (lambda: train.make_optimizer([torch.zeros(1)], lr=-1.0), r"^lr \(the learning rate\) "),
    (lambda: train.make_optimizer([torch.zeros(1)], momentum=1.5), r"^momentum "),
    (lambda: train.make_optimizer([torch.zeros(1)], weight_decay=-1.0), r"^weight_decay "),
    (lambda: train.make_optimizer([torch.zeros(1)], "lbfgs"), r"^optimizer "),
    (lambda: train.train_full_batch("net", torch.zeros(2, 1), torch.zeros(2), train.mse_per_model, 1, 0.1),
     r"^model must be a torch.nn.Module, got str 'net'$"),
    (lambda: train.train_full_batch(_Linear([0.0]), torch.zeros(2, 1, dtype=torch.long), torch.zeros(2),
                                    train.mse_per_model, 1, 0.1), r"^X "),
    (lambda: train.train_full_batch(_Linear([0.0]), torch.zeros(2, 1), [0, 1], train.mse_per_model, 1, 0.1), r"^y "),
    (lambda: train.train_full_batch(_Linear([0.0]), torch.zeros(2, 1), torch.zeros(2), 3, 1, 0.1), r"^loss_fn "),
    (lambda: train.train_full_batch(_Linear([0.0]), torch.zeros(2, 1), torch.zeros(2), train.mse_per_model, 0, 0.1),
     r"^steps "),
    (lambda: train.train_full_batch(_Linear([0.0]), torch.zeros(2, 1), torch.zeros(2), train.mse_per_model, 2, 0.1,
                                    log_every=0), r"^log_every "),
    (lambda: train.train_minibatch(_Linear([0.0]), torch.zeros(2, 1), torch.zeros(2), train.mse_per_model, 0, 1, 0.1),
     r"^epochs "),
    (lambda: train.train_minibatch(_Linear([0.0]), torch.zeros(2, 1), torch.zeros(2), train.mse_per_model, 1, 0, 0.1),
     r"^batch_size "),
    (lambda: train.train_minibatch(_Linear([0.0]), torch.zeros(2, 1), torch.zeros(2), train.mse_per_model, 1, 1, 0.1,
                                   on_epoch_end=3), r"^on_epoch_end "),
    (lambda: train.train_minibatch(_Linear([0.0]), torch.zeros(2, 1), torch.zeros(()), train.mse_per_model, 1, 1, 0.1),
     r"^X and y must have the same number of rows"),
    (lambda: train.mse_per_model(torch.zeros(3), torch.zeros(3)), r"^out must have shape \(n_models, n, \.\.\.\), got tensor"),
    (lambda: train.mse_per_model(torch.zeros(1, 3, dtype=torch.long), torch.zeros(3)), r"^out "),
    (lambda: train.mse_per_model(torch.zeros(1, 3), torch.zeros(3, dtype=torch.long)), r"^y "),
    (lambda: train.mse_per_model(torch.zeros(2, 3), torch.zeros(4)),
     r"^y \(targets\) of shape \(4,\) matches neither out \(the outputs\) of shape \(2, 3\) nor one model's outputs \(3,\)$"),
    (lambda: train.cross_entropy_per_model(torch.zeros(1, 3, 1), torch.zeros(3, dtype=torch.long)),
     r"^out must be logits of shape \(n_models, n, K >= 2\), got tensor"),
    (lambda: train.cross_entropy_per_model(torch.zeros(1, 3, 2, 2), torch.zeros(3, dtype=torch.long)),
     r"^out must be logits"),
    (lambda: train.cross_entropy_per_model(torch.zeros(1, 3, 2), torch.zeros(3)), r"^y "),
    (lambda: train.cross_entropy_per_model(torch.zeros(2, 3, 2), torch.zeros(2, 2, dtype=torch.long)),
     r"^y must have shape \(3,\) or \(2, 3\) \(from out \(n_models, n, K\)\), got tensor"),
    (lambda: train.cross_entropy_per_model(torch.zeros(1, 3, 2), torch.full((3,), 2)), r"^y "),
])
def test_error_messages_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cross_entropy_accepts_per_model_label_tables_of_its_shape():
    logits = torch.zeros(2, 3, 4)
    assert train.cross_entropy_per_model(logits, torch.zeros(2, 3, dtype=torch.long)).numpy() == pytest.approx([np.log(4)] * 2)


def test_history_losses_are_float64_and_the_bar_follows_progress(capsys):
    assert train.History(loss=[np.float32(0.1), np.float32(0.2)]).losses().dtype == np.float64
    X, y = torch.zeros(4, 2, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    train.train_full_batch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 3, 0.1, progress=False)
    train.train_minibatch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 2, 2, 0.1, progress=False)
    assert capsys.readouterr().err == ""
    train.train_full_batch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 3, 0.1)  # progress on by default
    assert "train" in capsys.readouterr().err
    train.train_minibatch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 2, 2, 0.1, desc="fitting")
    assert "fitting" in capsys.readouterr().err


def test_scalar_losses_are_logged_as_floats_and_one_dimensional_inputs_train():
    X, y = torch.arange(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)

    class Scale(torch.nn.Module):  # X of shape (n,): one weight times the input
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones((), dtype=torch.float64))

        def forward(self, X):
            return (self.w * X)[None]

    scalar = lambda out, t: ((out - t) ** 2).mean()
    full = train.train_full_batch(Scale(), X, y, scalar, 2, 0.01, progress=False)
    mini = train.train_minibatch(Scale(), X, y, scalar, 2, 2, 0.01, progress=False)
    assert all(type(l) is float for l in full.loss + mini.loss)
    assert full.loss[0] == pytest.approx(float(np.mean(np.arange(4.0) ** 2)))


def test_log_interval_and_bar_label_details(capsys):
    X, y = torch.zeros(4, 2, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    assert train.train_full_batch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 200, 0.1, progress=False).steps \
        == list(range(0, 200, 2)) + [200]  # 200 // 100 = 2
    import re

    train.train_full_batch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 3, 0.1)
    assert re.search(r"(^|\r)train: ", capsys.readouterr().err)
    train.train_minibatch(_Linear([0.0, 0.0]), X, y, train.mse_per_model, 1, 2, 0.1)
    assert re.search(r"(^|\r)train: ", capsys.readouterr().err)
    with pytest.raises(ValueError, match=r"^params must be a non-empty iterable of tensors, got list \[\]$"):
        train.make_optimizer([])


# --- REPRO_DEVICE (issue 22) ----------------------------------------------------------------------

def _train_both(monkeypatch, device_env, device_arg):
    """Train the same BatchedMLP with both trainers under REPRO_DEVICE=device_env, passing device_arg."""
    if device_env is None:
        monkeypatch.delenv("REPRO_DEVICE", raising=False)
    else:
        monkeypatch.setenv("REPRO_DEVICE", device_env)
    X = torch.randn(40, 2, generator=torch.Generator().manual_seed(3))
    y = (X[:, :1] * X[:, 1:] > 0).float() * 2 - 1
    out = []
    for kind in ("full", "mini"):
        model = BatchedMLP([2, 6, 1], seeds=[1, 2, 3])
        if kind == "full":
            h = train.train_full_batch(model, X, y, train.logistic_per_model, 30, 0.3, momentum=0.5,
                                       progress=False, device=device_arg)
        else:
            h = train.train_minibatch(model, X, y, train.mse_per_model, 3, 7, 0.05, seed=4, optimizer="adam",
                                      progress=False, device=device_arg)
        out.append((h.losses(), [p.detach().clone() for p in model.parameters()]))
    return out


def test_repro_device_cpu_and_auto_give_identical_quick_numbers(monkeypatch):
    # "REPRO_DEVICE=cpu and auto give identical quick-scale numbers": bit for bit, for both trainers
    ref = _train_both(monkeypatch, None, None)
    for env, arg in (("auto", None), ("cpu", None), ("", None), ("auto", "cpu"), ("cpu", torch.device("cpu"))):
        got = _train_both(monkeypatch, env, arg)
        for (l0, p0), (l1, p1) in zip(ref, got):
            assert np.array_equal(l0, l1)
            assert all(torch.equal(a, b) for a, b in zip(p0, p1))
    assert not np.array_equal(ref[0][0], ref[1][0])  # the two trainers did train (different losses)


class _SpyMLP(BatchedMLP):
    """Records every device it is moved to (``Module.to``)."""

    def to(self, *args, **kwargs):
        self.moves.append(torch.device(args[0]) if args else kwargs.get("device"))
        return super().to(*args, **kwargs)


@pytest.mark.parametrize("kind", ["full", "mini"])
def test_trainers_move_the_model_to_the_device_and_back(monkeypatch, kind):
    model = _SpyMLP([2, 3, 1], seeds=[0])
    model.moves = []
    X, y = torch.randn(5, 2), torch.randn(5, 1)
    cpu = torch.device("cpu")
    run = (lambda **kw: train.train_full_batch(model, X, y, train.mse_per_model, 2, 0.1, progress=False, **kw)) \
        if kind == "full" else \
        (lambda **kw: train.train_minibatch(model, X, y, train.mse_per_model, 2, 2, 0.1, progress=False, **kw))
    run(device="cpu")
    assert model.moves == [cpu, cpu]                  # to the training device, then home
    model.moves = []
    with pytest.raises(ValueError, match="^lr \\(the learning rate\\) must be"):
        (train.train_full_batch(model, X, y, train.mse_per_model, 2, -1.0, progress=False) if kind == "full" else
         train.train_minibatch(model, X, y, train.mse_per_model, 2, 2, -1.0, progress=False))
    assert model.moves == [cpu, cpu]                  # home again after a failure too
    model.moves = []
    with pytest.raises(ValueError, match="^device must be one of \\('cpu', 'cuda', 'mps'\\)"):
        run(device="gpu")
    with pytest.raises(TypeError, match="^device must be None, a str or a torch.device, got"):
        run(device=0)
    assert model.moves == []                          # a bad device is refused before anything moves
    monkeypatch.setenv("REPRO_DEVICE", "gpu")
    with pytest.raises(ValueError, match="^REPRO_DEVICE must be one of"):
        run()
    monkeypatch.setattr(scale, "as_device", lambda device: torch.device("meta"))
    with pytest.raises(Exception):
        run()  # the data and the model went to the (meta) device: nothing real can be trained there
    assert model.moves == [torch.device("meta"), cpu]  # (a meta tensor has no values to copy home)


def test_the_model_goes_home_to_where_it_was(monkeypatch):
    model = _SpyMLP([2, 3, 1], seeds=[0])
    model.moves = []
    model.to("meta")
    monkeypatch.setattr(scale, "as_device", lambda device: torch.device("cpu"))
    with pytest.raises(Exception):
        train.train_full_batch(model, torch.randn(4, 2), torch.randn(4, 1), train.mse_per_model, 1, 0.1,
                               progress=False)
    assert model.moves[-1] == torch.device("meta")
    assert scale.model_device(torch.nn.ReLU()) == torch.device("cpu")  # no parameters: the CPU


@pytest.mark.parametrize("kind", ["full", "mini"])
def test_the_data_reach_the_loop_on_the_training_device(monkeypatch, kind):
    # (on this CPU-only machine a meta device stands in for a GPU: only where the tensors are is checked)
    seen = {}

    def loop(model, X, y, *rest):
        seen.update(X=X.device, y=y.device, model=scale.model_device(model))
        return train.History()

    monkeypatch.setattr(train, "_full_batch_loop" if kind == "full" else "_minibatch_loop", loop)
    monkeypatch.setattr(scale, "as_device", lambda device: torch.device("meta"))
    model, X, y = BatchedMLP([2, 3, 1], seeds=[0]).to("meta"), torch.randn(5, 2), torch.randn(5, 1)
    if kind == "full":
        train.train_full_batch(model, X, y, train.mse_per_model, 2, 0.1, progress=False)
    else:
        train.train_minibatch(model, X, y, train.mse_per_model, 2, 2, 0.1, progress=False)
    meta = torch.device("meta")
    assert seen == {"X": meta, "y": meta, "model": meta}


def test_minibatch_indices_follow_the_data_to_its_device(monkeypatch):
    got = []
    real_loss = train._mse_per_model

    def loss(out, y):
        got.append(out.device)
        return real_loss(out, y)

    class Index(torch.Tensor):  # a CPU index that records where it is sent
        pass

    perm = torch.randperm
    monkeypatch.setattr(torch, "randperm", lambda n, generator=None: perm(n, generator=generator).as_subclass(Index))
    sent = []
    monkeypatch.setattr(Index, "to", lambda self, *a, **kw: sent.append(a[0]) or torch.Tensor.to(self, *a, **kw),
                        raising=False)
    train.train_minibatch(BatchedMLP([2, 3, 1], seeds=[0]), torch.randn(6, 2), torch.randn(6, 1), loss, 1, 3, 0.1,
                          progress=False)
    assert sent == [torch.device("cpu")] * 2 and got == [torch.device("cpu")] * 2


@pytest.mark.parametrize("loss", [train.mse_per_model, train.logistic_per_model])
def test_outputs_with_an_extra_axis_name_out_and_y(loss):
    out, y = torch.randn(2, 5, 1), torch.ones(5)
    assert loss(out, y).shape == (2,)
    for bad in (out[..., None], out[None], out.reshape(10, 1)):
        with pytest.raises(ValueError, match=r"^y \(targets\) of shape \(5,\) matches neither out \(the outputs\)"):
            loss(bad, y)


def test_cross_entropy_names_out_as_the_source_of_the_class_count():
    """A label >= K is refused naming out, whose last axis gives the number of classes K."""
    with pytest.raises(ValueError, match=r"^y must be class indices >= 0 and < 3 \(the number of classes, of out\)"):
        train.cross_entropy_per_model(torch.zeros(2, 4, 3), torch.tensor([0, 1, 2, 3]))
