import pytest
import torch

from lib import nets


def test_init_is_seeded_and_shaped():
    a, b = nets.init_mlp([3, 5, 2], seed=1), nets.init_mlp([3, 5, 2], seed=1)
    assert [tuple(W.shape) for W, _ in a] == [(5, 3), (2, 5)]
    assert all(torch.equal(Wa, Wb) for (Wa, _), (Wb, _) in zip(a, b))
    assert not torch.equal(a[0][0], nets.init_mlp([3, 5, 2], seed=2)[0][0])
    big = nets.init_mlp([400, 400], seed=0, scheme="he")[0][0]
    assert abs(big.std().item() - (2 / 400) ** 0.5) < 0.01


def test_symmetries_keep_the_function():
    params = nets.init_mlp([3, 6, 4, 2], seed=0, dtype=torch.float64)
    for W, b in params:
        b.normal_()
    X = torch.randn(50, 3, dtype=torch.float64)
    y = nets.mlp_forward(params, X)
    p1 = nets.permute_hidden(params, 0, torch.randperm(6))
    p2 = nets.rescale_hidden(p1, 1, torch.rand(4, dtype=torch.float64) + 0.1)
    assert torch.allclose(nets.mlp_forward(p2, X), y, atol=1e-12)
    assert not torch.allclose(p2[0][0], params[0][0])


def test_negative_rescale_changes_the_function_and_is_rejected():
    params = nets.init_mlp([2, 3, 1], seed=0)
    with pytest.raises(ValueError, match="positive"):
        nets.rescale_hidden(params, 0, [1.0, -1.0, 1.0])


@pytest.mark.parametrize("perm", [[0, 0, 1], [0, 1], [0, 1, 3]])
def test_bad_permutation(perm):
    with pytest.raises(ValueError, match="permutation"):
        nets.permute_hidden(nets.init_mlp([2, 3, 1], seed=0), 0, perm)


def test_bad_layer_and_widths():
    with pytest.raises(ValueError, match="hidden layer"):
        nets.permute_hidden(nets.init_mlp([2, 3, 1], seed=0), 1, [0])
    for widths in ([3], [3, 0], [3, 2.5]):
        with pytest.raises(ValueError, match="widths"):
            nets.init_mlp(widths, seed=0)
    with pytest.raises(ValueError, match="init scheme"):
        nets.init_mlp([2, 2], seed=0, scheme="xavier")


def test_forward_validates_input():
    params = nets.init_mlp([3, 4, 1], seed=0)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        nets.mlp_forward(params, torch.zeros(5, 2))
    with pytest.raises(ValueError, match="floating"):
        nets.mlp_forward(params, torch.zeros(5, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="activation"):
        nets.mlp_forward(params, torch.zeros(5, 3), activation="tanh")
    with pytest.raises(ValueError, match="layer 1"):
        nets.mlp_forward([params[0], (torch.zeros(1, 5), torch.zeros(1))], torch.zeros(5, 3))


def test_preactivations_and_leaky():
    params = nets.init_mlp([2, 4, 1], seed=3)
    X = torch.randn(7, 2)
    out, pre = nets.mlp_forward(params, X, activation="leaky_relu", negative_slope=0.1, return_preactivations=True)
    manual = torch.nn.functional.leaky_relu(pre[0], 0.1) @ params[1][0].T + params[1][1]
    assert torch.allclose(out, manual)


def test_batched_mlp_matches_single_nets():
    model = nets.BatchedMLP([3, 8, 2], seeds=[4, 9])
    X = torch.randn(10, 3)
    out = model(X)
    assert out.shape == (2, 10, 2)
    for m, s in enumerate([4, 9]):
        assert torch.allclose(out[m], nets.mlp_forward(nets.init_mlp([3, 8, 2], s), X), atol=1e-6)
        assert torch.allclose(out[m], nets.mlp_forward(model.model_params(m), X), atol=1e-6)
    per_model_X = torch.randn(2, 10, 3)
    assert torch.allclose(model(per_model_X)[1], nets.mlp_forward(model.model_params(1), per_model_X[1]), atol=1e-6)


def test_batched_mlp_bad_input():
    model = nets.BatchedMLP([3, 4, 1], n_models=2)
    with pytest.raises(ValueError, match="X must have shape"):
        model(torch.zeros(3, 5, 3))
    with pytest.raises(ValueError, match="model index"):
        model.model_params(2)
    with pytest.raises(ValueError, match="n_models"):
        nets.BatchedMLP([3, 1], n_models=0)
    with pytest.raises(ValueError, match="one seed per model"):
        nets.BatchedMLP([3, 1], n_models=2, seeds=[1])



# ---- values against independent computations (mutation testing found these unpinned) --------------

import numpy as np  # noqa: E402


@pytest.mark.parametrize("scheme,std", [("he", np.sqrt(2 / 400)), ("lecun", np.sqrt(1 / 400)), ("normal", 1.0)])
def test_init_schemes_have_their_standard_deviations(scheme, std):
    (W1, b1), _ = nets.init_mlp([400, 300, 1], seed=0, scheme=scheme, scale=2.0)
    assert float(W1.std()) == pytest.approx(2.0 * std, rel=0.02) and float(b1.abs().max()) == 0.0


def test_activations_by_hand():
    z = torch.tensor([-2.0, 0.0, 3.0])
    assert nets.activate(z, "relu").tolist() == [0.0, 0.0, 3.0]
    assert nets.activate(z, "leaky_relu", 0.1).tolist() == pytest.approx([-0.2, 0.0, 3.0])
    assert nets.activate(z, "linear").tolist() == [-2.0, 0.0, 3.0]
    with pytest.raises(ValueError, match="activation"):
        nets.activate(z, "tanh")


def test_activation_patterns_by_hand_and_without_hidden_layers():
    # one hidden layer: units x1 and -x1 + 1; the pattern is (x1 >= 0, x1 <= 1)
    params = [(np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([0.0, 1.0])), (np.ones((1, 2)), np.zeros(1))]
    X = np.array([[-1.0, 5.0], [0.5, 0.0], [2.0, -3.0], [0.0, 0.0]])
    assert nets.activation_patterns(params, X).tolist() == [[False, True], [True, True], [True, False], [True, True]]
    linear = [(np.ones((1, 2)), np.zeros(1))]
    assert nets.activation_patterns(linear, X).shape == (4, 0) and nets.activation_patterns(linear, X).dtype == bool


def test_hidden_layer_bounds_in_the_message():
    params = nets.init_mlp([2, 3, 3, 1], seed=0)
    nets.permute_hidden(params, 1, [2, 0, 1])  # the last hidden layer is allowed
    with pytest.raises(ValueError, match=r"^layer must index a hidden layer in \[0, 2\), got 2$"):
        nets.permute_hidden(params, 2, [0])
