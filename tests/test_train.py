import numpy as np
import pytest
import torch

from lib import train
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
    with pytest.raises(ValueError, match="targets of shape"):
        train.mse_per_model(torch.zeros(2, 4, 1), torch.zeros(3))


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
