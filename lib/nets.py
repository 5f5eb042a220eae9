"""Explicit ReLU MLPs, their symmetries, and batched ensembles of small nets.

A network is a list of ``(W, b)`` pairs with ``W`` of shape ``(d_out, d_in)`` (the convention of
Phuong 2021, §1.2): ``x -> W_L relu(... relu(W_1 x + b_1) ...) + b_L``. The two symmetries that keep
the function fixed (permuting and positively rescaling the hidden units of a layer; Chapter 1) are
:func:`permute_hidden` and :func:`rescale_hidden`. :class:`BatchedMLP` trains many independent small
nets (seeds, widths padded, data sets) as one tensor computation (Chapters 0 and 6); its forward pass,
:func:`stacked_forward` (any activation, with the hidden layers), also serves the skip-connection nets of
chapter 10 (:mod:`lib.skip_connections`).

Beside the torch path, the float64 numpy path for exact geometry (chapters 01 and 08):
:func:`forward_f64`, :func:`preactivations_f64`, :func:`activation_patterns` on ``(W, b)`` lists of
numpy arrays, validated by :func:`as_float64_params`; linear regions and local affine maps built on
them are in :mod:`lib.linear_regions`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from lib import validate as V

ACTIVATIONS = ("relu", "leaky_relu", "linear")
INIT_SCHEMES = ("he", "lecun", "normal")


def _check_widths(widths) -> list[int]:
    widths = V.sequence(widths, "widths")
    if len(widths) < 2 or any(not isinstance(w, int) or isinstance(w, bool) or w < 1 for w in widths):
        raise ValueError(f"widths must list at least two positive ints (input, ..., output), got {widths!r}")
    return widths


def activate(z: torch.Tensor, activation: str = "relu", negative_slope: float = 0.01) -> torch.Tensor:
    """The hidden-layer nonlinearity by name (``z``: a finite floating-point tensor, any shape;
    ``negative_slope`` in [0, 1) for ``leaky_relu``)."""
    V.tensor(z, "z", floating=True, nonempty=False)
    V.choice(activation, "activation", ACTIVATIONS)
    V.slope(negative_slope, "negative_slope")
    return _activate(z, activation, negative_slope)


def _activate(z: torch.Tensor, activation: str, negative_slope: float) -> torch.Tensor:
    """:func:`activate` without the argument checks (the per-step path of the forward passes)."""
    if activation == "relu":
        return torch.relu(z)
    if activation == "leaky_relu":
        return torch.nn.functional.leaky_relu(z, negative_slope)
    if activation == "linear":
        return z
    raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")


def _init_std(fan_in: int, scheme: str) -> float:
    if scheme == "he":
        return math.sqrt(2.0 / fan_in)
    if scheme == "lecun":
        return math.sqrt(1.0 / fan_in)
    if scheme == "normal":
        return 1.0
    raise ValueError(f"init scheme must be one of {INIT_SCHEMES}, got {scheme!r}")


def init_mlp(widths: Sequence[int], seed: int, scheme: str = "he", scale: float = 1.0,
             bias: bool = True, dtype=torch.float32, requires_grad: bool = False):
    """A random MLP as a list of ``(W, b)``: Gaussian weights with the ``scheme``'s std times ``scale``.

    Biases start at zero (``bias=False`` keeps them zero and without gradient).
    """
    widths = _check_widths(widths)
    scale = V.nonnegative(scale, "scale")
    seed = V.seed(seed)
    V.choice(scheme, "scheme (the init scheme)", INIT_SCHEMES)
    gen = torch.Generator().manual_seed(int(seed))
    params = []
    for d_in, d_out in zip(widths[:-1], widths[1:]):
        W = torch.randn(d_out, d_in, generator=gen, dtype=dtype) * (_init_std(d_in, scheme) * scale)
        b = torch.zeros(d_out, dtype=dtype)
        W.requires_grad_(requires_grad)
        b.requires_grad_(requires_grad and bias)
        params.append((W, b))
    return params


def _check_params(params) -> None:
    """A non-empty list of finite ``(W, b)`` tensor pairs with chaining shapes (one pass per call)."""
    V.sequence(params, "params", min_len=1)
    for i, pair in enumerate(params):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise V.ArgumentTypeError(f"params[{i}] must be a (W, b) pair, got {V.describe(pair)}")
        W = V.tensor(pair[0], f"params[{i}] W", floating=True)
        b = V.tensor(pair[1], f"params[{i}] b", floating=True)
        if W.ndim != 2 or b.ndim != 1 or b.shape[0] != W.shape[0]:
            raise ValueError(f"params: layer {i}: expected W (d_out, d_in) and b (d_out,), got {tuple(W.shape)} "
                             f"and {tuple(b.shape)}")
        if i and W.shape[1] != params[i - 1][0].shape[0]:
            raise ValueError(f"params: layer {i}: W expects {W.shape[1]} inputs but layer {i-1} has "
                             f"{params[i - 1][0].shape[0]} outputs")


def mlp_forward(params, X: torch.Tensor, activation: str = "relu", negative_slope: float = 0.01,
                return_preactivations: bool = False):
    """Evaluate the MLP on the rows of ``X`` (shape ``(n, d_0)``); returns ``(n, d_L)``.

    With ``return_preactivations`` also returns the list of hidden pre-activations (for activation
    patterns and linear regions).
    """
    _check_params(params)
    X = V.tensor(X, "X", convert=True, nonempty=False)
    if X.ndim != 2 or X.shape[1] != params[0][0].shape[1]:
        raise ValueError(f"X must have shape (n, {params[0][0].shape[1]}), got {tuple(X.shape)}")
    if not X.is_floating_point():
        raise ValueError(f"X must be a floating-point tensor, got dtype {X.dtype}")
    V.choice(activation, "activation", ACTIVATIONS)
    V.slope(negative_slope, "negative_slope")
    h, pre = X.to(params[0][0].dtype), []
    for i, (W, b) in enumerate(params):
        z = h @ W.T + b
        if i == len(params) - 1:
            return (z, pre) if return_preactivations else z
        pre.append(z)
        h = _activate(z, activation, negative_slope)


def _check_hidden(params, layer: int) -> None:
    _check_params(params)
    layer = V.integer(layer, "layer")
    if not 0 <= layer < len(params) - 1:
        raise ValueError(f"layer must index a hidden layer in [0, {len(params) - 1}), got {layer}")


def permute_hidden(params, layer: int, perm) -> list:
    """Permute the units of hidden ``layer`` (0-based); the function is unchanged (Ch. 1, eq. 2.1)."""
    _check_hidden(params, layer)
    perm = torch.as_tensor(V.array(perm, "perm", ndim=1, integer=True))
    width = params[layer][0].shape[0]
    if perm.shape != (width,) or not torch.equal(torch.sort(perm).values, torch.arange(width)):
        raise ValueError(f"perm must be a permutation of range({width}), got {perm.tolist()}")
    out = [(W.clone(), b.clone()) for W, b in params]
    W, b = out[layer]
    out[layer] = (W[perm], b[perm])
    out[layer + 1] = (out[layer + 1][0][:, perm], out[layer + 1][1])
    return out


def rescale_hidden(params, layer: int, scales) -> list:
    """Multiply unit ``j`` of hidden ``layer`` by ``scales[j] > 0`` and divide its outgoing weights.

    ReLU is positively homogeneous, so the function is unchanged (Ch. 1, eq. 2.2).
    """
    _check_hidden(params, layer)
    W, b = params[layer]
    scales = torch.as_tensor(V.array(scales, "scales", ndim=1, dtype=None, finite=False), dtype=W.dtype)
    if scales.shape != (W.shape[0],) or not bool(torch.all(scales > 0)) or not bool(torch.isfinite(scales).all()):
        raise ValueError(f"scales must be {W.shape[0]} finite positive numbers, got {scales.tolist()}")
    out = [(Wl.clone(), bl.clone()) for Wl, bl in params]
    out[layer] = (W * scales[:, None], b * scales)
    out[layer + 1] = (out[layer + 1][0] / scales[None, :], out[layer + 1][1])
    return out


def stacked_forward(weights, biases, X: torch.Tensor, activation) -> tuple[list, torch.Tensor]:
    """The forward pass of ``S`` stacked MLPs as batched matrix products, with every hidden layer.

    ``weights``: tensors ``(S, d_l, d_{l-1})``, ``biases``: ``(S, d_l)``, one pair per layer
    (``W`` in the book's ``(d_out, d_in)`` convention); ``X``: ``(n, d_0)`` (shared by the ``S`` nets)
    or ``(S, n, d_0)`` (one batch per net); ``activation``: a callable applied to every hidden
    pre-activation (the output layer is linear). Returns ``(hidden, out)``: the list of the hidden
    layers' outputs, each ``(S, n, d_l)``, and the output ``(S, n, d_L)``. The one home of the loop that
    :class:`BatchedMLP` (chapters 00, 06-08) and :class:`lib.skip_connections.SkipMLP` (chapter 10,
    sigmoid and softplus, which need the hidden layers for Psi, eq. 4.1) evaluate."""
    weights = V.sequence(weights, "weights", min_len=1)
    biases = V.sequence(biases, "biases")
    if len(biases) != len(weights):
        raise V.ArgumentValueError(f"biases must hold one tensor per layer ({len(weights)}), got {len(biases)}")
    V.callable_(activation, "activation")
    W0 = V.tensor(weights[0], "weights[0]", floating=True, ndim=3)
    S, prev = W0.shape[0], W0.shape[2]
    for l, (W, b) in enumerate(zip(weights, biases)):
        W = V.tensor(W, f"weights[{l}]", floating=True, ndim=3)
        b = V.tensor(b, f"biases[{l}]", floating=True, ndim=2)
        for name, t in ((f"weights[{l}]", W), (f"biases[{l}]", b)):
            _same_dtype(name, t, W0)
        if W.shape[0] != S or W.shape[2] != prev or tuple(b.shape) != (S, W.shape[1]):
            raise V.ArgumentValueError(f"layer {l}: expected weights ({S}, d_out, {prev}) and biases ({S}, d_out), "
                                       f"got {tuple(W.shape)} and {tuple(b.shape)}")
        prev = W.shape[1]
    X = V.tensor(X, "X", floating=True, nonempty=False)
    if X.ndim not in (2, 3) or X.shape[-1] != W0.shape[2] or (X.ndim == 3 and X.shape[0] != S):
        raise V.ArgumentValueError(f"X must have shape (n, {W0.shape[2]}) or ({S}, n, {W0.shape[2]}), "
                                   f"got {tuple(X.shape)}")
    _same_dtype("X", X, W0)
    return _stacked_forward(list(weights), list(biases), X, activation)


def _same_dtype(name: str, t: torch.Tensor, W0: torch.Tensor) -> None:
    if t.dtype != W0.dtype:
        raise V.ArgumentValueError(f"{name} must have the dtype of weights[0] ({W0.dtype}), got {t.dtype}")


def _stacked_forward(weights, biases, X, activation, keep_hidden: bool = True):
    """:func:`stacked_forward` without the argument checks (the per-step path of the models' forward
    passes). ``keep_hidden=False`` returns an empty list instead of the hidden layers (and so holds only
    one layer's output at a time outside autograd)."""
    h, hidden = (X.unsqueeze(0).expand(weights[0].shape[0], -1, -1) if X.ndim == 2 else X), []
    for W, b in zip(weights[:-1], biases[:-1]):
        h = activation(torch.baddbmm(b.unsqueeze(1), h, W.transpose(1, 2)))
        if keep_hidden:
            hidden.append(h)
    return hidden, torch.baddbmm(biases[-1].unsqueeze(1), h, weights[-1].transpose(1, 2))


class BatchedMLP(torch.nn.Module):
    """``n_models`` independent MLPs of one shape, evaluated as batched matrix products.

    Weights have shape ``(n_models, d_out, d_in)``. ``forward`` takes inputs of shape ``(n, d_0)``
    (shared by all models) or ``(n_models, n, d_0)`` (one data set per model) and returns
    ``(n_models, n, d_L)``. Model ``m`` is initialised exactly like ``init_mlp(widths, seeds[m])``,
    so a batched run and a loop of single runs start from the same weights.
    """

    def __init__(self, widths: Sequence[int], n_models: int | None = None, seeds=None,
                 scheme: str = "he", scale: float = 1.0, activation: str = "relu",
                 negative_slope: float = 0.01, dtype=torch.float32):
        super().__init__()
        widths = _check_widths(widths)
        if seeds is None:
            n_models = V.positive_int(n_models, "n_models")
            seeds = list(range(n_models))
        seeds = [V.seed(s, "seeds[i]") for s in V.sequence(seeds, "seeds")]
        if not seeds or (n_models is not None and len(seeds) != n_models):
            raise ValueError(f"need one seed per model: n_models={n_models}, got {len(seeds)} seeds")
        V.choice(activation, "activation", ACTIVATIONS)
        V.choice(scheme, "scheme (the init scheme)", INIT_SCHEMES)
        negative_slope = V.slope(negative_slope, "negative_slope")
        scale = V.nonnegative(scale, "scale")
        self.widths, self.activation, self.negative_slope = widths, activation, negative_slope
        nets = [init_mlp(widths, s, scheme, scale, dtype=dtype) for s in seeds]
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([net[l][0] for net in nets])) for l in range(len(widths) - 1))
        self.biases = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([net[l][1] for net in nets])) for l in range(len(widths) - 1))

    @property
    def n_models(self) -> int:
        return self.weights[0].shape[0]

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """``X``: a finite floating-point tensor ``(n, d_0)`` or ``(n_models, n, d_0)``; an empty batch
        (``n = 0``) gives an empty output."""
        V.tensor(X, "X", floating=True, nonempty=False)
        if X.ndim == 2:
            X = X.unsqueeze(0).expand(self.n_models, -1, -1)
        if X.ndim != 3 or X.shape[0] != self.n_models or X.shape[2] != self.widths[0]:
            raise ValueError(f"X must have shape (n, {self.widths[0]}) or ({self.n_models}, n, "
                             f"{self.widths[0]}), got {tuple(X.shape)}")
        act = lambda z: _activate(z, self.activation, self.negative_slope)  # noqa: E731
        return _stacked_forward(list(self.weights), list(self.biases), X, act, keep_hidden=False)[1]

    def model_params(self, m: int) -> list:
        """Model ``m`` as an explicit ``[(W, b), ...]`` list (detached copies)."""
        m = V.integer(m, "m (the model index)")
        if not 0 <= m < self.n_models:
            raise ValueError(f"m (the model index) must be in [0, {self.n_models}), got {m}")
        return [(W[m].detach().clone(), b[m].detach().clone()) for W, b in zip(self.weights, self.biases)]



# ----------------------------------------------------------------------------------------------
# The float64 numpy path: exact geometry of a ReLU net (chapters 01 and 08; lib.linear_regions)
# ----------------------------------------------------------------------------------------------
# Beside the torch path above, the same network as a list of (W, b) numpy float64 arrays, evaluated
# exactly (no autograd, no float32): forward pass, hidden pre-activations and activation patterns.
# ``alpha > 0`` gives leaky ReLU; a unit is *active* where its pre-activation is >= 0.

def as_float64_params(params, name: str = "params") -> list:
    """Validate a network and return it as float64 numpy copies (numpy or torch layers); a
    ValueError/TypeError naming ``name`` (e.g. ``params_a``) and the layer if bad."""
    layers = V.sequence(params, name, min_len=1)
    out, prev = [], None
    for l, layer in enumerate(layers, start=1):
        if not isinstance(layer, (list, tuple)) or len(layer) != 2:
            raise V.ArgumentTypeError(f"{name}: layer {l} must be a (W, b) pair, got {V.describe(layer)}")
        W = np.array(V.array(layer[0], f"{name}: layer {l} W", ndim=2))
        b = np.array(V.array(layer[1], f"{name}: layer {l} b", shape=(W.shape[0],)))
        if prev is not None and W.shape[1] != prev:
            raise V.ArgumentValueError(f"{name}: layer {l}: W has {W.shape[1]} columns but layer {l - 1} "
                                       f"has {prev} units")
        out.append((W, b))
        prev = W.shape[0]
    return out


def as_float64_inputs(X, d0: int) -> np.ndarray:
    """Validate an input batch of shape ``(n, d0)`` (n >= 1, finite) and return it as float64."""
    return V.array(X, "X", shape=(None, V.positive_int(d0, "d0")))


def check_leak(alpha) -> float:
    """The leaky-ReLU slope ``alpha`` in [0, 1) (0: plain ReLU)."""
    return V.slope(alpha, "alpha (leaky-ReLU slope)")


def leaky_np(U: np.ndarray, alpha: float) -> np.ndarray:
    """ReLU (``alpha = 0``) or leaky ReLU of a finite numpy array of any shape (empty gives empty),
    as float64; ``alpha`` in [0, 1)."""
    return _leaky(V.array(U, "U", nonempty=False), check_leak(alpha))


def _leaky(U: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`leaky_np` without the argument checks (the forward passes below have checked them)."""
    return np.maximum(U, 0.0) if alpha == 0.0 else np.where(U >= 0, U, alpha * U)


def preactivations_f64(params, X, alpha: float = 0.0) -> list:
    """Float64 pre-activations of every hidden layer ``l = 1..L-1``, each of shape ``(n, d_l)``."""
    params, alpha = as_float64_params(params), check_leak(alpha)
    Z, out = as_float64_inputs(X, params[0][0].shape[1]), []
    for W, b in params[:-1]:
        U = Z @ W.T + b
        out.append(U)
        Z = _leaky(U, alpha)
    return out


def forward_f64(params, X, alpha: float = 0.0) -> np.ndarray:
    """The network function in float64, shape ``(n, d_L)``; ``alpha > 0``: leaky ReLU."""
    params, alpha = as_float64_params(params), check_leak(alpha)
    Z = as_float64_inputs(X, params[0][0].shape[1])
    for W, b in params[:-1]:
        Z = _leaky(Z @ W.T + b, alpha)
    W, b = params[-1]
    return Z @ W.T + b


def activation_patterns(params, X, alpha: float = 0.0) -> np.ndarray:
    """Activation bits (pre-activation >= 0) of all hidden units, layers in order: bool ``(n, sum d_l)``.

    ``alpha`` is the leaky slope the network uses: it changes the inputs of deeper layers, hence their bits.
    """
    pre = preactivations_f64(params, X, alpha)
    if not pre:
        return np.zeros((as_float64_inputs(X, as_float64_params(params)[0][0].shape[1]).shape[0], 0), bool)
    return np.hstack([U >= 0 for U in pre])
