"""The image networks of Sattelberg's §6.1 (Table 6.1) at digits scale, and their exact local maps.

Sattelberg (2026), *Local Linearity of ReLU Neural Networks*, §6.1 (= §7.1), §6.3 and §6.4; used by
the sections ``08_local_linearity_image_networks`` (Chapter 6) and the network comparisons of
Chapter 7. The thesis trains seven architectures on MNIST/CIFAR-10 (3x32x32 inputs); the four it
trains from scratch are rebuilt here for scikit-learn's 8x8 digits (inputs ``(N, 64)``, values in
[0, 1], :func:`lib.data.load_digits_split`), returning ``(N, 10)`` logits:

* ``linear``  — a linear classifier ``Linear(64, 10)``;
* ``dense``   — one hidden layer of 128 ReLU: ``Linear(64, 128) -> ReLU -> Linear(128, 10)``;
* ``simple``  — ``[conv(C, 3x3) -> maxpool(2x2) -> ReLU] x 2 -> Linear(C*2*2, 10)`` (ReLU *after*
  pooling, two conv layers, as the thesis);
* ``complex`` — ``[conv(C, 3x3) -> ReLU -> maxpool(2x2)] x 3 -> Linear(C, 10)`` (ReLU *before*
  pooling, three conv layers, as the thesis; 8 -> 4 -> 2 -> 1 pixels).

Choices the thesis leaves unstated (ours): ``C = 32`` channels (the thesis' 32 filters), 3x3 kernels
with padding 1 and stride 1 (the spatial size is kept, only pooling halves it), non-overlapping 2x2
max pooling, biases everywhere, PyTorch's default initialisation, float32 training (the thesis used
16-bit floats), one input channel (digits are grey; the thesis repeated MNIST to 3 channels).

At ``REPRO_SCALE=paper`` the same four families are built for the thesis' 3x32x32 inputs
(:data:`PAPER_SHAPE`, ``make_net(arch, seed, PAPER_SHAPE)``) and trained on MNIST (bilinearly
resized to 32x32, repeated to three channels) and CIFAR-10, both normalised per channel
(:func:`paper_images`, :func:`standardise_channels`, :func:`paper_split`, :func:`paper_zoo`); their
cross-sections are keyed by :func:`plane_keys` and their spectra come from :func:`gradient_spectrum`.

Every net is piecewise affine (ReLU and max pooling are), so at each input ``x`` it equals
``J(x) x + y(x)`` exactly on ``x``'s linear region (eq. 5.25): :func:`local_coefficients` computes
``(J, y)`` by ``torch.func.vmap(jacrev)`` in float64. Further tools of §6.3/§6.4:

* :func:`activation_pattern` — the bits of every ReLU (and, with pooling, the arg-max of every pool
  window, the thesis' "max pooling choices") of a torch net;
* :func:`closest_triple`, :func:`plane_through` (eq. 6.2), :func:`plane_points` — the cross-section
  plane through three images and its points;
* :func:`region_labels` — grid regions by raster-neighbour merging (Fig. 6.12), keyed by pattern or
  by coefficients within a tolerance;
* :func:`dense_plane_params` — a 1-hidden-layer net restricted to a plane, as a 2-input ReLU MLP
  (``(W, b)`` list) whose regions :func:`lib.linear_regions.regions_2d` finds exactly;
* :func:`gradient_covariance` — the active-subspace spectra of §6.4.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from torch import nn

from lib import validate as V

__all__ = ["ARCHS", "OPTIMISERS", "N_PIXELS", "N_CLASSES", "standardise", "make_net", "make_optimiser", "train_net", "train_zoo",
           "zoo_names", "DIGITS_SHAPE", "PAPER_SHAPE", "PAPER_DATASETS", "input_width", "paper_images",
           "standardise_channels", "paper_split", "paper_zoo", "plane_keys", "gradient_spectrum", "anchor_plane",
           "local_coefficients", "accuracy", "activation_pattern", "closest_triple", "plane_through",
           "plane_points", "region_labels", "dense_plane_params", "gradient_covariance"]

ARCHS = ("linear", "dense", "simple", "complex")
OPTIMISERS = ("sgd", "adamw")
_OPT_LABEL = {"sgd": "SGD", "adamw": "AdamW"}
N_PIXELS, N_CLASSES, SIDE = 64, 10, 8
CHANNELS = 32     # filters per conv layer (thesis: 32)
_DIST_CHUNK = 1 << 24  # closest_triple: at most this many pixel differences in memory at once
HIDDEN = 128      # ReLUs of the dense net (thesis: 128)


DIGITS_SHAPE = (1, SIDE, SIDE)   # scikit-learn's 8x8 grey digits: the quick and full scales
PAPER_SHAPE = (3, 32, 32)        # thesis §6.1: "All non-pretrained networks are structured to accept three channel 32x32 images"
PAPER_DATASETS = ("mnist", "cifar10")


class _Image(nn.Module):
    """Reshape flat ``(N, C*H*W)`` rows to ``(N, C, H, W)`` images (the conv nets' first layer);
    ``shape`` ``(C, H, W)`` is :data:`DIGITS_SHAPE` (``(N, 64)`` -> ``(N, 1, 8, 8)``) by default."""

    def __init__(self, shape=DIGITS_SHAPE):
        super().__init__()
        self.shape = tuple(shape)

    def forward(self, x):
        return x.reshape(-1, *self.shape)


def _conv_block(c_in: int, relu_after_pool: bool) -> list:
    conv = nn.Conv2d(c_in, CHANNELS, 3, padding=1)
    pool = nn.MaxPool2d(2)
    return [conv, pool, nn.ReLU()] if relu_after_pool else [conv, nn.ReLU(), pool]


def standardise(split):
    """``split`` with its pixels centred and scaled by the training set's mean and standard deviation
    (one channel, so one mean and one std). The thesis normalises MNIST and CIFAR "centered at zero by
    channel" (§6.1; the std is unstated, unit std assumed). Test pixels use the training statistics."""
    from lib.data import DataSplit

    split = _check_split(split)
    mean, std = split.X_train.mean(), split.X_train.std()
    if not float(std) > 0:
        raise V.ArgumentValueError("split.X_train must not be constant (its standard deviation is 0)")
    return DataSplit((split.X_train - mean) / std, split.y_train, (split.X_test - mean) / std, split.y_test,
                     getattr(split, "name", ""))


def _check_shape(shape) -> tuple[int, int, int]:
    """``shape`` as ``(C, H, W)``: three positive ints, ``H`` and ``W`` multiples of 8 (three 2x2 pools)."""
    if (not isinstance(shape, (tuple, list)) or len(shape) != 3 or not all(V.is_int(v) and v > 0 for v in shape)
            or shape[1] % 8 or shape[2] % 8):
        raise V.ArgumentValueError(f"shape must be (C, H, W): three positive ints with H and W multiples of 8, "
                                   f"got {shape!r}")
    return tuple(int(v) for v in shape)


def make_net(arch: str, seed: int = 0, shape=DIGITS_SHAPE) -> nn.Module:
    """A fresh float32 network of family ``arch`` (one of :data:`ARCHS`), initialised from ``seed``,
    for flat inputs of images of ``shape`` ``(C, H, W)``.

    Input ``(N, C*H*W)``, output ``(N, 10)`` logits; the layer lists are in the module docstring. With
    the default :data:`DIGITS_SHAPE` these are the digits nets of the quick and full scales (inputs
    ``(N, 64)``); with :data:`PAPER_SHAPE` the thesis' nets of Table 6.1 (inputs ``(N, 3072)``, §6.1):
    ``dense`` is ``Linear(3072, 128)``, ``simple`` pools 32 -> 16 -> 8 pixels into ``Linear(32*8*8, 10)``,
    ``complex`` 32 -> 16 -> 8 -> 4 into ``Linear(32*4*4, 10)``. The global torch RNG is left as it was.
    """
    V.choice(arch, "arch", ARCHS)
    seed = V.seed(seed)
    c, h, w = _check_shape(shape)
    d = c * h * w
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if arch == "linear":
            layers = [nn.Linear(d, N_CLASSES)]
        elif arch == "dense":
            layers = [nn.Linear(d, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, N_CLASSES)]
        elif arch == "simple":
            layers = [_Image((c, h, w)), *_conv_block(c, True), *_conv_block(CHANNELS, True), nn.Flatten(),
                      nn.Linear(CHANNELS * (h // 4) * (w // 4), N_CLASSES)]
        else:
            layers = [_Image((c, h, w)), *_conv_block(c, False), *_conv_block(CHANNELS, False),
                      *_conv_block(CHANNELS, False), nn.Flatten(), nn.Linear(CHANNELS * (h // 8) * (w // 8), N_CLASSES)]
        return nn.Sequential(*layers)


def input_width(net: nn.Module) -> int:
    """The width ``d`` of the flat input rows ``(N, d)`` that ``net`` takes: ``C*H*W`` of its image
    reshape (a conv net of :func:`make_net`), else its first ``Linear``'s ``in_features``; nets with
    neither (no parameters a row meets first) take :data:`N_PIXELS`."""
    net = _check_net(net)
    for m in net.modules():
        if isinstance(m, _Image):
            return int(np.prod(m.shape))
        if isinstance(m, nn.Linear):
            return int(m.in_features)
    return N_PIXELS


def _check_net(net) -> nn.Module:
    return V.instance(net, "net", nn.Module, "a torch.nn.Module")


def _check_split(split, width: int = N_PIXELS):
    for field in ("X_train", "y_train", "X_test", "y_test"):
        if not hasattr(split, field):
            raise V.ArgumentTypeError(f"split must be a lib.data.DataSplit (with X_train, y_train, X_test, "
                                      f"y_test), got {V.describe(split)}")
    V.tensor(split.X_train, "split.X_train", ndim=2, shape=(None, width), floating=True)
    V.labels(split.y_train, "split.y_train", N_CLASSES, n=split.X_train.shape[0], rows_of="split.X_train")
    return split


def make_optimiser(net: nn.Module, optimiser: str) -> torch.optim.Optimizer:
    """The thesis' optimisers (§6.1) over ``net``'s parameters: ``"sgd"`` is SGD with lr 0.01, momentum
    0.5 and weight decay 0.01 (an L2 term added to the gradient); ``"adamw"`` is AdamW with PyTorch's
    defaults (lr 1e-3, betas (0.9, 0.999), weight decay 0.01, decoupled: each step shrinks a weight by
    lr * wd). Chapter 08's comparisons measure what each does to a weight per step (§7.2's weight-decay
    remark)."""
    net = _check_net(net)
    V.choice(optimiser, "optimiser", OPTIMISERS)
    return _optimizer(net, optimiser)


def _optimizer(net: nn.Module, optimiser: str) -> torch.optim.Optimizer:
    """:func:`make_optimiser` without the argument checks (``train_net`` has checked them)."""
    if optimiser == "sgd":
        return torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.5, weight_decay=0.01)
    return torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)


def _cross_entropy(out, y):
    return nn.functional.cross_entropy(out, y)


def train_net(net: nn.Module, split, optimiser: str = "sgd", epochs: int = 15, batch_size: int = 32,
              seed: int = 0, progress: bool = True) -> nn.Module:
    """Train ``net`` in place on ``split``'s training set with the thesis' protocol (§6.1): softmax
    cross-entropy, minibatches of ``batch_size`` (32) in a fresh order each epoch drawn from ``seed``,
    ``epochs`` epochs (15), ``optimiser`` ``"sgd"`` or ``"adamw"`` (hyper-parameters in
    :func:`_optimizer`). Returns ``net`` (in eval mode). A NaN loss stops with
    :class:`lib.validate.TrainingDivergedError`; a progress bar shows the epochs.
    """
    from lib.scale import on_device
    from lib.train import _minibatch_loop

    net = _check_net(net)
    split = _check_split(split, input_width(net))
    V.choice(optimiser, "optimiser", OPTIMISERS)
    epochs, batch_size = V.positive_int(epochs, "epochs"), V.positive_int(batch_size, "batch_size")
    seed = V.seed(seed)
    net.train()
    # on REPRO_DEVICE (the CPU at quick and full scale, where this is the plain loop; CUDA at paper scale
    # where there is one); the net comes back to the CPU
    with on_device(net) as dev:
        _minibatch_loop(net, split.X_train.to(dev), split.y_train.to(dev), _cross_entropy, epochs, batch_size,
                        0.01 if optimiser == "sgd" else 1e-3, seed, _optimizer(net, optimiser), progress,
                        f"train {optimiser}", None)
    return net.eval()


def zoo_names(archs=ARCHS, copies: int = 2, optimisers=OPTIMISERS) -> list[tuple[str, str, str]]:
    """The zoo's ``(name, arch, optimiser)`` in its fixed order: all SGD nets, then all AdamW nets
    (of those in ``optimisers``); within an optimiser the families in the order of ``archs``, one
    ``linear`` (its copies would be the same convex problem) and ``copies`` independently initialised
    copies of every other family, named ``dense1-SGD``, ``dense2-SGD``, ... (Table 6.1's rows)."""
    optimisers = V.sequence(optimisers, "optimisers", min_len=1)
    for o in optimisers:
        V.choice(o, "optimisers entry", OPTIMISERS)
    if len(set(optimisers)) != len(optimisers):
        raise V.ArgumentValueError(f"optimisers must not repeat one, got {optimisers!r}")
    archs = V.sequence(archs, "archs", min_len=1)
    for a in archs:
        V.choice(a, "archs entry", ARCHS)
    if len(set(archs)) != len(archs):
        raise V.ArgumentValueError(f"archs must not repeat a family, got {archs!r}")
    copies = V.positive_int(copies, "copies")
    names = []
    for opt in (o for o in OPTIMISERS if o in optimisers):
        for arch in archs:
            if arch == "linear":
                names.append((f"linear-{_OPT_LABEL[opt]}", arch, opt))
            else:
                names += [(f"{arch}{k}-{_OPT_LABEL[opt]}", arch, opt) for k in range(1, copies + 1)]
    return names


def train_zoo(split, epochs: int = 15, seed: int = 0, archs=ARCHS, copies: int = 2,
              progress: bool = True, optimisers=OPTIMISERS, shape=DIGITS_SHAPE) -> dict[str, nn.Module]:
    """Train the zoo of :func:`zoo_names` on ``split``: net ``i`` of that order is initialised and
    shuffled from ``seed + i`` (so every copy is independent). Returns ``{name: trained net}`` in
    that order. ``optimisers`` (default both) selects a part of the zoo: chapter 08 trains SGD conv
    nets for longer as a control at the AdamW nets' accuracy. ``shape`` is the images' ``(C, H, W)``
    (:func:`make_net`): the digits' by default, :data:`PAPER_SHAPE` for :func:`paper_split`'s data."""
    names = zoo_names(archs, copies, optimisers)
    shape = _check_shape(shape)
    split, seed = _check_split(split, int(np.prod(shape))), V.seed(seed)
    epochs = V.positive_int(epochs, "epochs")
    zoo = {}
    for i, (name, arch, opt) in enumerate(names):
        zoo[name] = train_net(make_net(arch, seed + i, shape), split, opt, epochs, 32, seed + i, progress)
    return zoo


def paper_images(X) -> torch.Tensor:
    """Images as the thesis feeds them to its nets (§6.1), ``(N, 3, 32, 32)`` float32: MNIST's grey
    ``(N, 28, 28)`` (or ``(N, 1, 28, 28)``) are "scaled to 32x32 using bilinear interpolation, then
    repeated three times to match the number of channels expected"; CIFAR-10's ``(N, 3, 32, 32)`` pass
    as they are. The interpolation is ``torch.nn.functional.interpolate(mode="bilinear",
    align_corners=False)``, what torchvision's ``Resize`` does to a tensor when it enlarges (the
    thesis names no library for it; ours)."""
    X = V.tensor(X, "X", floating=True)
    if X.ndim == 3:
        X = X[:, None]
    if X.ndim != 4 or X.shape[1] not in (1, 3) or (X.shape[1] == 3 and tuple(X.shape[2:]) != PAPER_SHAPE[1:]):
        raise V.ArgumentValueError(f"X must be grey images (N, H, W) or (N, 1, H, W), or colour images (N, 3, 32, 32), "
                                   f"got shape {tuple(X.shape)}")
    X = X.float()
    if X.shape[1] == 1:
        X = nn.functional.interpolate(X, size=PAPER_SHAPE[1:], mode="bilinear", align_corners=False)
        X = X.repeat(1, 3, 1, 1)
    return X


def standardise_channels(split, shape=PAPER_SHAPE):
    """``split`` (images ``(N, *shape)`` or flat rows ``(N, C*H*W)``) with every channel centred and
    scaled by its mean and standard deviation over the training images (the thesis normalises
    "centered at zero by channel", §6.1; the std is unstated, unit std assumed, as :func:`standardise`
    assumes for the digits), as flat rows ``(N, C*H*W)`` float32; the test images use the training
    statistics. Chapter 08's paper path (Table 6.1 on MNIST and CIFAR-10)."""
    from lib.data import DataSplit

    c, h, w = _check_shape(shape)
    for field in ("X_train", "y_train", "X_test", "y_test"):
        if not hasattr(split, field):
            raise V.ArgumentTypeError(f"split must be a lib.data.DataSplit (with X_train, y_train, X_test, "
                                      f"y_test), got {V.describe(split)}")
    parts = []
    for name in ("X_train", "X_test"):
        X = V.tensor(getattr(split, name), f"split.{name}", floating=True)
        if X[0].numel() != c * h * w:
            raise V.ArgumentValueError(f"split.{name} must hold images of shape {(c, h, w)}, got rows of "
                                       f"{X[0].numel()} values")
        y = name.replace("X", "y")
        V.labels(getattr(split, y), f"split.{y}", N_CLASSES, n=X.shape[0], rows_of=f"split.{name}")
        parts.append(X.reshape(-1, c, h * w).double())
    mean = parts[0].mean((0, 2), keepdim=True)
    std = parts[0].std((0, 2), keepdim=True)
    if not bool((std > 0).all()):
        raise V.ArgumentValueError("split.X_train must not have a constant channel (its standard deviation is 0)")
    X_train, X_test = (((X - mean) / std).reshape(X.shape[0], -1).float() for X in parts)
    return DataSplit(X_train, split.y_train, X_test, split.y_test, getattr(split, "name", ""))


def paper_split(dataset: str):
    """The thesis' data of Table 6.1 (§6.1), ready for :func:`train_zoo` with ``shape=PAPER_SHAPE``:
    ``dataset`` ``"mnist"`` or ``"cifar10"`` from :func:`lib.data.load_online` (so only at
    ``REPRO_SCALE=paper``; a smoke run gets its stand-ins), through :func:`paper_images` and
    :func:`standardise_channels`: flat rows ``(N, 3072)``, 60,000/10,000 (MNIST) or 50,000/10,000
    (CIFAR-10) images."""
    from lib.data import DataSplit, load_online

    V.choice(dataset, "dataset", PAPER_DATASETS)
    raw = load_online(dataset)
    images = DataSplit(paper_images(raw.X_train), raw.y_train, paper_images(raw.X_test), raw.y_test, raw.name)
    return standardise_channels(images, PAPER_SHAPE)


def paper_zoo(dataset: str, epochs: int = 15, seed: int = 0, copies: int = 2, progress: bool = True):
    """Table 6.1's seven trained rows on ``dataset`` (``"mnist"`` or ``"cifar10"``): ``(split, zoo)``
    with ``split`` = :func:`paper_split` ``(dataset)`` and ``zoo`` = :func:`train_zoo` on it with the
    thesis' protocol (§6.1: batch 32, ``epochs`` 15, SGD and AdamW) for 3x32x32 inputs. Chapter 08's
    paper path (both of its image-network sections call it)."""
    # the arguments are checked before the download and the resizing (review s6-08, finding 9a)
    V.choice(dataset, "dataset", PAPER_DATASETS)
    epochs, seed, copies = V.positive_int(epochs, "epochs"), V.seed(seed), V.positive_int(copies, "copies")
    split = paper_split(dataset)
    return split, train_zoo(split, epochs, seed, copies=copies, progress=progress, shape=PAPER_SHAPE)


def _inputs(X, name: str = "X", width: int = N_PIXELS) -> torch.Tensor:
    """``X`` (array or tensor, ``(N, width)``) as a float64 tensor."""
    return torch.as_tensor(V.array(X, name, ndim=2, shape=(None, width)), dtype=torch.float64)


def local_coefficients(net: nn.Module, X, chunk: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """The exact local affine maps of ``net`` at the rows of ``X`` (eq. 5.25, §6.1):
    ``J`` ``(N, 10, d)`` (``d`` = 64 pixels of a digit, 3,072 at paper scale; row ``j`` = gradient of
    output ``j``; ``J[out, in]``, pitfall P6) and
    ``y`` ``(N, 10)`` with ``net(x) = J x + y`` on ``x``'s linear region.

    Computed in float64 on a double copy of ``net`` (the float32 weights are exact in float64) by
    ``torch.func.vmap(jacrev)``, ``chunk`` rows at a time; ``y = net(x) - J x`` (not ``net(x)``,
    pitfall P2). At a max-pool tie or a ReLU exactly at 0, autograd's choice picks one adjacent region.
    """
    net = _check_net(net)
    X = _inputs(X, width=input_width(net))
    chunk = V.positive_int(chunk, "chunk")
    net64 = copy.deepcopy(net).double().eval()

    def f(x):
        return net64(x[None])[0]

    jac = torch.func.vmap(torch.func.jacrev(f))
    Js, ys = [], []
    for i in range(0, X.shape[0], chunk):
        xb = X[i:i + chunk]
        J = jac(xb).detach()
        with torch.no_grad():
            out = net64(xb)
        Js.append(J)
        ys.append(out - torch.einsum("noi,ni->no", J, xb))
    return torch.cat(Js).numpy(), torch.cat(ys).numpy()


def accuracy(net: nn.Module, X, y) -> float:
    """The fraction of rows of ``X`` (``(N, d)``, ``d`` = :func:`input_width` of ``net``) whose arg-max
    logit is the label ``y``."""
    net = _check_net(net)
    X = torch.as_tensor(V.array(X, "X", ndim=2, shape=(None, input_width(net))), dtype=torch.float32)
    V.labels(y, "y", N_CLASSES, n=X.shape[0], rows_of="X")
    y = V.array(y, "y", ndim=1, integer=True)
    with torch.no_grad():
        pred = net.eval()(X).argmax(1).numpy()
    return float((pred == y).mean())


def activation_pattern(net: nn.Module, X) -> np.ndarray:
    """The activation pattern of ``net`` at each row of ``X``: a bool array ``(N, n_bits)`` holding,
    in forward order, one bit per ReLU unit (its *pre-activation* ``>= 0``) and, for every
    ``MaxPool2d``, the one-hot arg-max of each pool window (pitfall P7: without it a pattern map
    undercounts). Computed in float64; two inputs with equal patterns lie in the same linear region.

    A pre-activation of exactly 0 counts as active, the convention of :func:`lib.nets.activation_patterns`
    and :func:`lib.linear_regions.local_affine` (one convention for the whole chapter; autograd's
    ``relu'(0) = 0``, which :func:`local_coefficients` inherits, takes the other side). A pool tie
    goes to the first window entry, as ``max_pool2d`` reports it.
    """
    net = _check_net(net)
    X = _inputs(X, width=input_width(net))
    net64 = copy.deepcopy(net).double().eval()
    bits, hooks = [], []

    def relu_hook(module, inp, out):
        bits.append((inp[0] >= 0).flatten(1))

    def pool_hook(module, inp, out):
        x = inp[0]
        k = module.kernel_size if isinstance(module.kernel_size, int) else module.kernel_size[0]
        _, idx = nn.functional.max_pool2d(x, k, return_indices=True)
        onehot = torch.zeros(x.shape[0], x.shape[1], x.shape[2] * x.shape[3], dtype=torch.bool)
        onehot.scatter_(2, idx.flatten(2), True)
        bits.append(onehot.flatten(1))

    for m in net64.modules():
        if isinstance(m, nn.ReLU):
            hooks.append(m.register_forward_hook(relu_hook))
        elif isinstance(m, nn.MaxPool2d):
            hooks.append(m.register_forward_hook(pool_hook))
    try:
        with torch.no_grad():
            net64(X)
    finally:
        for h in hooks:
            h.remove()
    if not bits:
        return np.zeros((X.shape[0], 0), dtype=bool)
    return torch.cat(bits, 1).numpy()


def closest_triple(X) -> np.ndarray:
    """Indices ``(a, b, c)`` of three rows of ``X`` that are mutually close (§6.3, Figs. 6.8/6.9):
    for every row, its two nearest neighbours; the triple with the smallest sum of its three pairwise
    Euclidean distances wins (ties: the lowest row). ``a`` is that row, ``b`` its nearer neighbour."""
    X = V.array(X, "X", ndim=2)
    if X.shape[0] < 3:
        raise V.ArgumentValueError(f"X must have at least 3 rows, got {X.shape[0]}")
    n = X.shape[0]
    D = np.empty((n, n))
    step = max(1, _DIST_CHUNK // (n * X.shape[1]))  # rows per block: 3,072-pixel images need blocks (paper scale)
    for i in range(0, n, step):
        D[i:i + step] = ((X[i:i + step, None, :] - X[None, :, :]) ** 2).sum(-1)
    D = np.sqrt(np.maximum(D, 0.0))
    np.fill_diagonal(D, np.inf)
    nn2 = np.argsort(D, axis=1, kind="stable")[:, :2]
    b, c = nn2[:, 0], nn2[:, 1]
    rows = np.arange(X.shape[0])
    total = D[rows, b] + D[rows, c] + D[b, c]
    a = int(np.argmin(total))
    return np.array([a, b[a], c[a]])


def plane_through(A, B, C) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cross-section plane of eq. (6.2) through the points ``A, B, C``: ``(origin, e1, e2)`` with
    ``origin = A``, ``e1 = u1/|u1|``, ``u1 = B - A``, and ``e2 = u2/|u2|`` where ``u2`` is ``C - A``
    minus its projection on ``u1`` (Gram-Schmidt). ``B`` lies on the x-axis. The three points must not
    be collinear."""
    A = V.array(A, "A", ndim=1)
    B = V.array(B, "B", shape=A.shape, agree="A")
    C = V.array(C, "C", shape=A.shape, agree="A")
    u1 = B - A
    n1 = float(u1 @ u1)
    if n1 == 0.0:
        raise V.ArgumentValueError("A and B must differ (u1 = B - A is zero)")
    u2 = C - A - ((C - A) @ u1) / n1 * u1
    n2 = float(np.linalg.norm(u2))
    if n2 <= 1e-12 * np.sqrt(n1):
        raise V.ArgumentValueError("A, B and C must not be collinear (u2 of eq. 6.2 is zero)")
    return A.copy(), u1 / np.sqrt(n1), u2 / n2


def anchor_plane(X, margin: float = 0.15) -> dict:
    """The cross-section of §6.3 through three mutually close rows of ``X`` (Figs. 6.8/6.9): their
    indices ``tri`` (:func:`closest_triple`), the plane ``origin, e1, e2`` through them (eq. 6.2,
    :func:`plane_through`), their plane coordinates ``coords`` ``(3, 2)`` (``A`` at the origin, ``B`` on
    the x-axis) and the window ``box`` ``(xmin, xmax, ymin, ymax)``: the anchors' bounding box widened
    by ``margin`` of its size on each side (chapter 08's choice; the thesis' scaling is unstated)."""
    X = V.array(X, "X", ndim=2)
    margin = V.nonnegative(margin, "margin")
    tri = closest_triple(X)
    origin, e1, e2 = plane_through(*X[tri])
    coords = np.array([[(P - origin) @ e1, (P - origin) @ e2] for P in X[tri]])
    lo, hi = coords.min(0), coords.max(0)
    pad = margin * (hi - lo)
    box = (lo[0] - pad[0], hi[0] + pad[0], lo[1] - pad[1], hi[1] + pad[1])
    return dict(tri=tri, origin=origin, e1=e1, e2=e2, coords=coords, box=box)


def plane_points(origin, e1, e2, coords) -> np.ndarray:
    """The points ``origin + s e1 + t e2`` for the rows ``(s, t)`` of ``coords`` ``(M, 2)``."""
    origin = V.array(origin, "origin", ndim=1)
    e1 = V.array(e1, "e1", shape=origin.shape, agree="origin")
    e2 = V.array(e2, "e2", shape=origin.shape, agree="origin")
    coords = V.array(coords, "coords", ndim=2, shape=(None, 2))
    return origin[None, :] + coords[:, :1] * e1[None, :] + coords[:, 1:] * e2[None, :]


def region_labels(keys, p: int, tol: float = 0.0) -> np.ndarray:
    """Regions of a ``p x p`` grid (rows of ``keys`` in raster order, ``(p*p, k)``) by raster-neighbour
    merging: each point joins the region of its left neighbour and of its neighbours above-left, above
    and above-right whose keys agree, i.e. ``max|key_a - key_b| <= tol * scale`` with ``scale`` the
    largest ``|key|`` of the grid (``tol = 0``: exact equality, for activation patterns). Regions that
    meet later are one region (the connected components of the graph of agreeing neighbours, what
    union-find over the links gives; computed with ``scipy.sparse.csgraph``). Returns labels ``(p, p)`` numbered 0.. in raster order;
    the count is ``labels.max() + 1``.

    This is *not* the thesis' scheme (§6.3, Fig. 6.12), which compares a point with its left neighbour
    and with the whole rest of the row above, from above-left to the row's end, and says nothing of
    merging labels afterwards. Both count *connected pieces of grid points*, not patterns: a thin
    region whose grid points are not 8-connected counts several times, so a labelled count can exceed
    the number of distinct keys on the grid and even the exact number of regions (chapter 08
    measures both)."""
    p = V.positive_int(p, "p")
    keys = V.array(keys, "keys", ndim=2, shape=(p * p, None), nonempty=False, dtype=None)
    tol = V.nonnegative(tol, "tol")
    if tol == 0.0:  # exact equality: one integer id per distinct key (bit patterns stay compact)
        packed = np.packbits(keys, axis=1) if keys.dtype == bool else keys
        keys = np.unique(packed, axis=0, return_inverse=True)[1].reshape(-1, 1).astype(np.float64)
    keys = keys.astype(np.float64, copy=False)
    K = keys.reshape(p, p, -1)
    bound = tol * float(np.abs(keys).max()) if keys.size else 0.0

    def same(a, b):
        return np.abs(a - b).max(-1) <= bound if a.shape[-1] else np.ones(a.shape[:-1], bool)

    links = []  # pairs (point, already-visited neighbour: left, above-left, above, above-right) with agreeing keys
    for dr, dc in ((0, -1), (-1, -1), (-1, 0), (-1, 1)):
        r0, r1 = max(0, -dr), p
        c0, c1 = max(0, -dc), p - max(0, dc)
        ok = same(K[r0:r1, c0:c1], K[r0 + dr:r1 + dr, c0 + dc:c1 + dc])
        rr, cc = np.nonzero(ok)
        links.append(np.stack([(rr + r0) * p + cc + c0, (rr + r0 + dr) * p + cc + c0 + dc], 1))
    links = np.concatenate(links)
    # the regions are the connected components of the graph of agreeing neighbours (what union-find over the links
    # gives), numbered in raster order of their first point
    graph = coo_matrix((np.ones(len(links)), (links[:, 0], links[:, 1])), shape=(p * p, p * p))
    comp = connected_components(graph, directed=False)[1]
    _, first = np.unique(comp, return_index=True)
    order = np.empty(len(first), dtype=np.int64)
    order[np.argsort(first)] = np.arange(len(first))
    return order[comp].reshape(p, p)


def dense_plane_params(net: nn.Module, origin, e1, e2) -> list:
    """A ``dense`` net restricted to the plane ``x = origin + s e1 + t e2`` as a 2-input ReLU MLP
    ``[(W1 [e1 e2], W1 origin + b1), (W2, b2)]`` (float64), so that its regions in the ``(s, t)`` plane
    are found exactly by :func:`lib.linear_regions.regions_2d` (the composition of an affine map with
    the first layer is again an affine first layer)."""
    net = _check_net(net)
    lin = [m for m in net.modules() if isinstance(m, nn.Linear)]
    others = [m for m in net.modules() if not isinstance(m, (nn.Linear, nn.ReLU, nn.Sequential))]
    if len(lin) != 2 or others:
        raise V.ArgumentValueError(f"net must be a 'dense' net (Linear(d, h) -> ReLU -> Linear), got {net}")
    d = lin[0].in_features
    origin = V.array(origin, "origin", shape=(d,))
    e1 = V.array(e1, "e1", shape=(d,))
    e2 = V.array(e2, "e2", shape=(d,))
    W1, b1 = (t.detach().double().numpy() for t in (lin[0].weight, lin[0].bias))
    W2, b2 = (t.detach().double().numpy() for t in (lin[1].weight, lin[1].bias))
    return [(W1 @ np.stack([e1, e2], 1), W1 @ origin + b1), (W2, b2)]


def plane_keys(net: nn.Module, origin, e1, e2, coords, chunk: int = 256) -> np.ndarray:
    """The affine map of ``net`` restricted to the plane ``x = origin + s e1 + t e2`` at the points
    ``(s, t)`` of ``coords`` ``(M, 2)``: rows ``[J e1, J e2, J origin + y]`` ``(M, 3 * 10)``, so that
    ``net(x) = key[:10] s + key[10:20] t + key[20:]`` on the point's linear region.

    Chapter 08's paper path keys its cross-section maps (§6.3, Figs. 6.10-6.13) by these 30 numbers
    instead of the full ``(J, y)``: at 3,072 pixels a grid's full maps (``p^2 x 30,730`` floats) do not
    fit in memory, and two regions that the plane crosses differ in their restriction to it (a
    boundary the plane crosses changes ``J`` along the plane). Computed ``chunk`` points at a time by
    :func:`local_coefficients` (float64)."""
    net = _check_net(net)
    d = input_width(net)
    origin = V.array(origin, "origin", shape=(d,))
    e1 = V.array(e1, "e1", shape=(d,))
    e2 = V.array(e2, "e2", shape=(d,))
    coords = V.array(coords, "coords", ndim=2, shape=(None, 2))
    chunk = V.positive_int(chunk, "chunk")
    keys = []
    for i in range(0, coords.shape[0], chunk):
        X = plane_points(origin, e1, e2, coords[i:i + chunk])
        J, y = local_coefficients(net, X, chunk)
        keys.append(np.concatenate([J @ e1, J @ e2, J @ origin + y], 1))
    return np.concatenate(keys)


def gradient_spectrum(J, n_vectors: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gradient_covariance` for many pixels: the eigenvalues of ``C_j = (1/N) J_j^T J_j`` from the
    singular values of ``J_j / sqrt(N)`` (``J`` ``(N, n_out, d)``), without forming the ``d x d``
    matrices (at 3,072 pixels ten of them take 755 MB, and their ``eigh`` about a minute per net on one core: an
    estimate from 0.73 s for one 1,536 x 1,536 ``eigh`` and n^3 scaling, review s6-08 finding 14).

    Returns the ``min(N, d)`` largest eigenvalues ``(n_out, min(N, d))`` in decreasing order (the others
    are 0) and the eigenvectors of the ``n_vectors`` largest ``(n_out, d, n_vectors)``, signed as
    :func:`gradient_covariance` signs them (largest entry positive). Chapter 08's paper path (§6.4,
    Figs. 6.14-6.19 on MNIST and CIFAR-10)."""
    J = V.array(J, "J", ndim=3)
    n_vectors = V.positive_int(n_vectors, "n_vectors", max=min(J.shape[0], J.shape[2]))
    _, sv, vt = np.linalg.svd(J.transpose(1, 0, 2) / np.sqrt(J.shape[0]), full_matrices=False)
    vecs = vt[:, :n_vectors, :].transpose(0, 2, 1)
    idx = np.abs(vecs).argmax(1)
    signs = np.sign(np.take_along_axis(vecs, idx[:, None, :], 1))
    return sv ** 2, vecs * np.where(signs == 0, 1.0, signs)


def gradient_covariance(J) -> tuple[np.ndarray, np.ndarray]:
    """Active subspaces of each output (§6.4, [116]): ``C_j = (1/N) sum_x grad v_j grad v_j^T`` over the
    rows of ``J`` ``(N, n_out, d)``. Returns the eigenvalues ``(n_out, d)`` in decreasing order
    (clipped at 0; ``C_j`` is positive semi-definite) and the eigenvectors ``(n_out, d, d)`` (column
    ``k`` of ``[j]`` belongs to eigenvalue ``k``; sign fixed so that its largest entry is positive)."""
    J = V.array(J, "J", ndim=3)
    C = np.einsum("noi,nok->oik", J, J) / J.shape[0]
    vals, vecs = np.linalg.eigh(C)
    vals, vecs = np.maximum(vals[:, ::-1], 0.0), vecs[:, :, ::-1]
    idx = np.abs(vecs).argmax(1)
    signs = np.sign(np.take_along_axis(vecs, idx[:, None, :], 1))
    return vals, vecs * np.where(signs == 0, 1.0, signs)
