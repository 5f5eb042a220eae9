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


# ---- error messages name the argument (what a user reads); values against hand computations -------

def _np_net():
    return [(np.array([[1.0, -1.0], [0.5, 2.0], [0.0, 1.0]]), np.array([0.0, -1.0, 0.5])),
            (np.array([[1.0, 2.0, -1.0]]), np.array([0.25]))]


_T = nets.init_mlp([2, 3, 1], seed=0)
_BAD_CALLS = [  # (call, expected message regex)
    (lambda: nets.init_mlp([2, "a"], 0), r"^widths must list at least two positive ints"),
    (lambda: nets.init_mlp(None, 0), r"^widths must be"),
    (lambda: nets.init_mlp([2, 1], 0, scale=-1.0), r"^scale must be"),
    (lambda: nets.init_mlp([2, 1], -1), r"^seed must be"),
    (lambda: nets.init_mlp([2, 1], 0, scheme="x"), r"^scheme \(the init scheme\) must be one of"),
    (lambda: nets.activate([1.0], "relu"), r"^z must be a torch.Tensor"),
    (lambda: nets.activate(torch.tensor([1, 2]), "relu"), r"^z must be a floating-point tensor"),
    (lambda: nets.activate(torch.zeros(2), "tanh"), r"^activation must be one of"),
    (lambda: nets.activate(torch.zeros(2), "leaky_relu", 1.5), r"^negative_slope must be"),
    (lambda: nets._activate(torch.zeros(2), "tanh", 0.0), r"^activation must be one of \('relu', 'leaky_relu', 'linear'\), got 'tanh'$"),
    (lambda: nets._init_std(3, "x"), r"^init scheme must be one of \('he', 'lecun', 'normal'\), got 'x'$"),
    (lambda: nets.mlp_forward(None, torch.zeros(1, 2)), r"^params must be"),
    (lambda: nets.mlp_forward([], torch.zeros(1, 2)), r"^params must be"),
    (lambda: nets.mlp_forward([_T[0], 3], torch.zeros(1, 2)), r"^params\[1\] must be a \(W, b\) pair, got 3$"),
    (lambda: nets.mlp_forward([(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3))], torch.zeros(1, 2)),
     r"^params\[0\] W must be a floating-point tensor"),
    (lambda: nets.mlp_forward([(torch.zeros(3, 2), torch.zeros(3, dtype=torch.long))], torch.zeros(1, 2)),
     r"^params\[0\] b must be a floating-point tensor"),
    (lambda: nets.mlp_forward([(torch.zeros(3, 2), [0.0, 0.0, 0.0])], torch.zeros(1, 2)), r"^params\[0\] b must be a torch"),
    (lambda: nets.mlp_forward([(torch.zeros(3, 2), torch.zeros(2))], torch.zeros(1, 2)),
     r"^params: layer 0: expected W \(d_out, d_in\) and b \(d_out,\), got \(3, 2\) and \(2,\)$"),
    (lambda: nets.mlp_forward([(torch.zeros(3, 2, 1), torch.zeros(3))], torch.zeros(1, 2)),
     r"^params: layer 0: expected W \(d_out, d_in\) and b \(d_out,\), got \(3, 2, 1\) and \(3,\)$"),
    (lambda: nets.mlp_forward([(torch.zeros(3, 2), torch.zeros(3, 1))], torch.zeros(1, 2)),
     r"^params: layer 0: expected W .* got \(3, 2\) and \(3, 1\)$"),
    (lambda: nets.mlp_forward([_T[0], _T[1], (torch.zeros(1, 2), torch.zeros(1))], torch.zeros(1, 2)),
     r"^params: layer 2: W expects 2 inputs but layer 1 has 1 outputs$"),
    (lambda: nets.mlp_forward(_T, "abc"), r"^X must be a torch.Tensor"),
    (lambda: nets.mlp_forward(_T, torch.tensor([[0.0, float("nan")]])), r"^X must be finite"),
    (lambda: nets.mlp_forward(_T, torch.zeros(1, 2), activation="tanh"), r"^activation must be one of"),
    (lambda: nets.mlp_forward(_T, torch.zeros(1, 2), negative_slope=-1.0), r"^negative_slope must be"),
    (lambda: nets.permute_hidden(_T, "0", [0, 1, 2]), r"^layer must be"),
    (lambda: nets.permute_hidden(_T, 0, "abc"), r"^perm must be"),
    (lambda: nets.permute_hidden(_T, 0, [[0, 1, 2]]), r"^perm must be an array with 1 dimensions"),
    (lambda: nets.rescale_hidden(_T, 0, "abc"), r"^scales must be"),
    (lambda: nets.rescale_hidden(_T, 0, [[1.0, 1.0, 1.0]]), r"^scales must be an array with 1 dimensions"),
    (lambda: nets.rescale_hidden(_T, 0, [1.0, float("inf"), 1.0]), r"^scales must be 3 finite positive numbers, got \[1.0, inf, 1.0\]$"),
    (lambda: nets.rescale_hidden(_T, 0, [1.0, 0.0, 1.0]), r"^scales must be 3 finite positive numbers, got \[1.0, 0.0, 1.0\]$"),
    (lambda: nets.rescale_hidden(nets.init_mlp([2, 3, 4, 1], 0), 1, [1.0, 1.0, 1.0]),
     r"^scales must be 4 finite positive numbers"),
    (lambda: nets.BatchedMLP([2, 1], n_models="2"), r"^n_models must be"),
    (lambda: nets.BatchedMLP([2, 1], seeds=[0, -1]), r"^seeds\[i\] must be"),
    (lambda: nets.BatchedMLP([2, 1], seeds="ab"), r"^seeds must be"),
    (lambda: nets.BatchedMLP([2, 1], seeds=3), r"^seeds must be"),
    (lambda: nets.BatchedMLP([2, 1], seeds=[]), r"^need one seed per model: n_models=None, got 0 seeds$"),
    (lambda: nets.BatchedMLP([2, 1], 2, activation="tanh"), r"^activation must be"),
    (lambda: nets.BatchedMLP([2, 1], 2, scheme="x"), r"^scheme \(the init scheme\) must be"),
    (lambda: nets.BatchedMLP([2, 1], 2, negative_slope=2.0), r"^negative_slope must be"),
    (lambda: nets.BatchedMLP([2, 1], 2, scale=-1.0), r"^scale must be"),
    (lambda: nets.BatchedMLP([2, 3, 1], 2)(torch.zeros(4, 3)),
     r"^X must have shape \(n, 2\) or \(2, n, 2\), got \(2, 4, 3\)$"),
    (lambda: nets.BatchedMLP([2, 3, 1], 2)("abc"), r"^X must be a torch.Tensor"),
    (lambda: nets.BatchedMLP([2, 3, 1], 2)(torch.ones(4, 2, dtype=torch.long)), r"^X must be a floating-point tensor"),
    (lambda: nets.BatchedMLP([2, 3, 1], 2)(torch.tensor([[0.0, float("nan")]])), r"^X must be finite"),
    (lambda: nets.BatchedMLP([2, 1], 2).model_params("1"), r"^m \(the model index\) must be"),
    (lambda: nets.BatchedMLP([2, 1], 2).model_params(-1), r"^m \(the model index\) must be in \[0, 2\), got -1$"),
    (lambda: nets.as_float64_params("abc"), r"^params must be"),
    (lambda: nets.as_float64_params([]), r"^params must be"),
    (lambda: nets.as_float64_params([], "params_a"), r"^params_a must be"),
    (lambda: nets.as_float64_params([(np.ones((1, 2)), np.zeros(1)), 3], "net"),
     r"^net: layer 2 must be a \(W, b\) pair, got 3$"),
    (lambda: nets.as_float64_params([(np.ones((1, 2)), np.zeros(2))]), r"^params: layer 1 b must be an array of shape \(1,\)"),
    (lambda: nets.as_float64_params([(np.ones(2), np.zeros(1))]), r"^params: layer 1 W must be an array with 2 dimensions"),
    (lambda: nets.as_float64_params(_np_net()[:1] + [(np.ones((1, 2)), np.zeros(1))]),
     r"^params: layer 2: W has 2 columns but layer 1 has 3 units$"),
    (lambda: nets.forward_f64(_np_net(), np.zeros((1, 3))), r"^X must be an array of shape \(n, 2\)"),
    (lambda: nets.preactivations_f64(_np_net(), np.zeros((1, 3))), r"^X must be an array of shape \(n, 2\)"),
    (lambda: nets.activation_patterns([(np.ones((1, 2)), np.zeros(1))], np.zeros((1, 3))), r"^X must be an array of shape \(n, 2\)"),
    (lambda: nets.check_leak(1.0), r"^alpha \(leaky-ReLU slope\) must be"),
    (lambda: nets.forward_f64(_np_net(), np.zeros((1, 2)), alpha=-0.5), r"^alpha \(leaky-ReLU slope\) must be"),
]


@pytest.mark.parametrize("i", range(len(_BAD_CALLS)))
def test_error_messages_name_the_argument(i):
    call, pattern = _BAD_CALLS[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


def test_one_layer_net_is_affine_and_dtypes_follow_the_weights():
    W, b = torch.tensor([[1.0, -2.0]], dtype=torch.float64), torch.tensor([0.5], dtype=torch.float64)
    X = [[1.0, 1.0], [0.0, 2.0]]  # a nested list is converted
    out = nets.mlp_forward([(W, b)], X)
    assert out.dtype == torch.float64 and out[:, 0].tolist() == [-0.5, -3.5]
    # float32 input into a float64 net is evaluated in float64, and vice versa
    X32 = torch.tensor([[0.1, 0.2]], dtype=torch.float32)
    assert nets.mlp_forward([(W, b)], X32).dtype == torch.float64
    assert nets.mlp_forward([(W.float(), b.float())], X32.double()).dtype == torch.float32
    assert nets.mlp_forward(nets.init_mlp([2, 3, 1], 0, dtype=torch.float64), X32).dtype == torch.float64
    assert nets.mlp_forward(_T, torch.zeros(0, 2)).shape == (0, 1)  # an empty batch: an empty result


def test_init_dtype_bias_flags_and_batched_scale():
    p = nets.init_mlp([2, 3, 1], seed=0, dtype=torch.float64, requires_grad=True)
    assert all(W.dtype == b.dtype == torch.float64 for W, b in p)
    assert all(W.requires_grad and b.requires_grad for W, b in p)
    p = nets.init_mlp([2, 3, 1], seed=0, requires_grad=True, bias=False)
    assert all(W.requires_grad and not b.requires_grad for W, b in p)
    m = nets.BatchedMLP([2, 3, 1], n_models=2, scale=0.5, dtype=torch.float64)
    ref = nets.init_mlp([2, 3, 1], 1, scale=0.5, dtype=torch.float64)
    W, b = m.model_params(1)[0]
    assert W.dtype == torch.float64 and torch.equal(W, ref[0][0]) and torch.equal(m.model_params(1)[1][0], ref[1][0])


def test_batched_leaky_and_linear_by_hand():
    for act, slope in (("leaky_relu", 0.2), ("linear", 0.0), ("relu", 0.0)):
        m = nets.BatchedMLP([1, 2, 1], seeds=[0], activation=act, negative_slope=slope, dtype=torch.float64)
        with torch.no_grad():
            m.weights[0].copy_(torch.tensor([[[1.0], [-1.0]]]))
            m.biases[0].zero_()
            m.weights[1].copy_(torch.tensor([[[1.0, 1.0]]]))
            m.biases[1].fill_(0.5)
        x = torch.tensor([[2.0]], dtype=torch.float64)
        # units 2 and -2: relu 2 + 0; leaky 2 - 0.4; linear 2 - 2; plus the bias 0.5
        want = {"leaky_relu": 2.1, "linear": 0.5, "relu": 2.5}[act]
        assert float(m(x).detach()[0, 0, 0]) == pytest.approx(want)
        assert m(torch.zeros(0, 1, dtype=torch.float64)).shape == (1, 0, 1)


def test_permute_and_rescale_by_hand():
    W1, b1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), torch.tensor([1.0, 2.0, 3.0])
    W2, b2 = torch.tensor([[10.0, 20.0, 30.0]]), torch.tensor([0.5])
    p = nets.permute_hidden([(W1, b1), (W2, b2)], 0, np.array([2, 0, 1]))  # numpy perm works
    assert p[0][1].tolist() == [3.0, 1.0, 2.0] and p[1][0].tolist() == [[30.0, 10.0, 20.0]]
    assert p[0][0].tolist() == [[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]] and p[1][1].tolist() == [0.5]
    W1d = W1.double()
    r = nets.rescale_hidden([(W1d, b1.double()), (W2.double(), b2.double())], 0, [2.0, 0.5, 1.0])
    assert r[0][0].dtype == torch.float64 and r[0][1].tolist() == [2.0, 1.0, 3.0]
    assert r[1][0].tolist() == [[5.0, 40.0, 30.0]]
    # a hidden layer whose width differs from its input width: the permutation's length is the width
    p3 = nets.permute_hidden(nets.init_mlp([2, 3, 1], 0), 0, [1, 2, 0])
    assert p3[0][0].shape == (3, 2)


def test_float64_path_by_hand():
    net = _np_net()
    X = np.array([[1.0, 1.0], [2.0, -1.0]])
    # hidden pre-activations: x1 - x2, 0.5 x1 + 2 x2 - 1, x2 + 0.5
    pre = nets.preactivations_f64(net, X)
    assert np.allclose(pre[0], [[0.0, 1.5, 1.5], [3.0, -2.0, -0.5]])
    out = nets.forward_f64(net, X, alpha=0.5)
    h = np.where(pre[0] >= 0, pre[0], 0.5 * pre[0])
    assert np.allclose(out[:, 0], h @ [1.0, 2.0, -1.0] + 0.25)
    assert np.allclose(nets.forward_f64(net, X)[:, 0], [0 + 3.0 - 1.5 + 0.25, 3.0 + 0 - 0 + 0.25])
    assert nets.activation_patterns(net, X).tolist() == [[True, True, True], [True, False, False]]
    tnet = [(torch.from_numpy(W), torch.from_numpy(b)) for W, b in net]
    got = nets.as_float64_params(tnet)
    assert all(isinstance(W, np.ndarray) and W.dtype == np.float64 for W, _ in got)
    assert nets.leaky_np(np.array([-2.0, 0.0, 3.0]), 0.25).tolist() == [-0.5, 0.0, 3.0]
    assert nets.check_leak(0) == 0.0 and nets.check_leak(0.3) == 0.3


def test_dtypes_follow_the_first_weight_matrix():
    # a float32 net rescaled stays float32 (scales are cast to W's dtype, not left float64)
    p32 = nets.init_mlp([2, 3, 1], seed=0)
    r = nets.rescale_hidden(p32, 0, [2.0, 0.5, 1.0])
    assert all(W.dtype == b.dtype == torch.float32 for W, b in r)
    # the input is cast to W's dtype (here float64 W with a float32 bias: the result is float64)
    W, b = torch.tensor([[1.0, 2.0]], dtype=torch.float64), torch.tensor([0.5], dtype=torch.float32)
    out = nets.mlp_forward([(W, b)], torch.tensor([[1.0, 1.0]], dtype=torch.float32))
    assert out.dtype == torch.float64 and out.tolist() == [[3.5]]


def _stack(widths, S, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    Ws = [torch.randn(S, o, i, generator=gen, dtype=dtype) for i, o in zip(widths[:-1], widths[1:])]
    bs = [torch.randn(S, o, generator=gen, dtype=dtype) for o in widths[1:]]
    return Ws, bs


def test_stacked_forward_against_numpy_loops():
    """Every hidden layer and the output of each stacked net against a plain numpy loop per net, for a
    shared input and for one input batch per net, with an activation the module does not name (tanh)."""
    widths, S = [3, 5, 4, 2], 3
    Ws, bs = _stack(widths, S, 0)
    gen = torch.Generator().manual_seed(1)
    for X in (torch.randn(6, 3, generator=gen, dtype=torch.float64), torch.randn(S, 6, 3, generator=gen, dtype=torch.float64)):
        hidden, out = nets.stacked_forward(Ws, bs, X, torch.tanh)
        assert len(hidden) == 2 and out.shape == (S, 6, 2)
        for s in range(S):
            h = (X if X.ndim == 2 else X[s]).numpy()
            for l in range(3):
                z = h @ Ws[l][s].numpy().T + bs[l][s].numpy()
                h = np.tanh(z) if l < 2 else z
                got = hidden[l][s] if l < 2 else out[s]
                np.testing.assert_allclose(got.numpy(), h, rtol=1e-12, atol=1e-12)


def test_stacked_forward_is_the_batched_mlp_forward_and_keeps_autograd():
    model = nets.BatchedMLP([3, 6, 6, 2], seeds=[2, 5], activation="leaky_relu", negative_slope=0.2)
    X = torch.randn(7, 3, generator=torch.Generator().manual_seed(3))
    hidden, out = nets.stacked_forward(list(model.weights), list(model.biases), X,
                                       lambda z: torch.nn.functional.leaky_relu(z, 0.2))
    with torch.no_grad():  # an independent computation: one net at a time, torch's linear layers
        for k in range(2):
            h = X
            for l in range(2):
                h = torch.nn.functional.leaky_relu(torch.nn.functional.linear(h, model.weights[l][k], model.biases[l][k]), 0.2)
            ref = torch.nn.functional.linear(h, model.weights[2][k], model.biases[2][k])
            assert torch.allclose(out[k], ref, atol=1e-6)
    assert torch.equal(out, model(X)) and len(hidden) == 2  # and BatchedMLP's forward is this function
    first = torch.nn.functional.leaky_relu(X @ model.weights[0].transpose(1, 2) + model.biases[0][:, None], 0.2)
    assert torch.allclose(hidden[0], first, atol=1e-6)
    out.sum().backward()
    assert model.weights[0].grad is not None and model.weights[0].grad.abs().sum() > 0
    none, out2 = nets._stacked_forward(list(model.weights), list(model.biases), X, torch.relu, keep_hidden=False)
    assert none == [] and out2.shape == (2, 7, 2)


@pytest.mark.parametrize("call, match", [
    (lambda W, b, X: nets.stacked_forward(W, b[:-1], X, torch.tanh), r"^biases must hold one tensor per layer \(2\), got 1$"),
    (lambda W, b, X: nets.stacked_forward(W, b, X, "tanh"), r"^activation must be"),
    (lambda W, b, X: nets.stacked_forward([], [], X, torch.tanh), r"^weights must"),
    (lambda W, b, X: nets.stacked_forward([W[0][0]] + W[1:], b, X, torch.tanh), r"^weights\[0\] must"),
    (lambda W, b, X: nets.stacked_forward(W, [b[0], b[0]], X, torch.tanh), r"^layer 1: expected weights \(2, d_out, 4\)"),
    (lambda W, b, X: nets.stacked_forward([W[0], W[0]], b, X, torch.tanh), r"^layer 1: expected"),
    (lambda W, b, X: nets.stacked_forward([W[0], W[1][:1]], b, X, torch.tanh), r"^layer 1: expected"),
    (lambda W, b, X: nets.stacked_forward(W, b, X[:, :2], torch.tanh), r"^X must have shape \(n, 3\) or \(2, n, 3\), got \(5, 2\)$"),
    (lambda W, b, X: nets.stacked_forward(W, b, X.double(), torch.tanh), r"^X must have the dtype of weights\[0\] \(torch.float32\), got torch.float64$"),
    (lambda W, b, X: nets.stacked_forward(W, [b[0], b[1].double()], X, torch.tanh), r"^biases\[1\] must have the dtype"),
    (lambda W, b, X: nets.stacked_forward(W, b, X.expand(3, -1, -1), torch.tanh), r"^X must have shape"),
    (lambda W, b, X: nets.stacked_forward(W, b, X[0], torch.tanh), r"^X must have shape"),
    (lambda W, b, X: nets.stacked_forward(W, b, X.long(), torch.tanh), r"^X must"),
])
def test_stacked_forward_bad_input(call, match):
    Ws, bs = _stack([3, 4, 2], 2, 0, dtype=torch.float32)
    X = torch.randn(5, 3)
    with pytest.raises((ValueError, TypeError), match=match):
        call(Ws, bs, X)


def test_stacked_forward_of_one_layer_and_of_no_inputs():
    """A single linear layer is a stack too (X W^T + b per net, checked by numpy), and an empty batch gives
    an empty output of the right shape, for a shared input and for one batch per net."""
    (W,), (b,) = _stack([3, 2], 4, 7)
    X = torch.randn(5, 3, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    hidden, out = nets.stacked_forward([W], [b], X, torch.tanh)
    assert hidden == [] and out.shape == (4, 5, 2)
    for s in range(4):
        np.testing.assert_allclose(out[s].numpy(), X.numpy() @ W[s].numpy().T + b[s].numpy(), rtol=1e-12, atol=1e-12)
    Ws, bs = _stack([3, 4, 2], 4, 9)
    for X0 in (torch.zeros(0, 3, dtype=torch.float64), torch.zeros(4, 0, 3, dtype=torch.float64)):
        hidden, out = nets.stacked_forward(Ws, bs, X0, torch.tanh)
        assert out.shape == (4, 0, 2) and hidden[0].shape == (4, 0, 4)


@pytest.mark.parametrize("make, match", [
    (lambda W, b: (W, 5), r"^biases must be a list or tuple"),
    (lambda W, b: ([W[0], W[1][0]], b), r"^weights\[1\] must"),
    (lambda W, b: (W, [b[0], b[1][0]]), r"^biases\[1\] must"),
])
def test_stacked_forward_names_the_bad_layer(make, match):
    """A layer's tensor of the wrong rank is refused with its own name (not by a later shape error)."""
    W, b = make(*_stack([3, 4, 2], 2, 0, dtype=torch.float32))
    with pytest.raises((ValueError, TypeError), match=match):
        nets.stacked_forward(W, b, torch.randn(5, 3), torch.tanh)


def test_leaky_np_of_an_empty_array_and_its_argument_names():
    assert nets.leaky_np(np.zeros((0, 3)), 0.1).shape == (0, 3)
    with pytest.raises((ValueError, TypeError), match=r"^U must"):
        nets.leaky_np("x", 0.1)
    with pytest.raises((ValueError, TypeError), match=r"^d0 must"):
        nets.as_float64_inputs(np.ones((2, 3)), 0)
